"""Tests of the controller event manager, its events, states and metrics."""
from __future__ import annotations

import itertools
import sys
import threading
import time
from collections import Counter

import pytest
import structlog
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controller.controller_events import SHUTDOWN_EVENT_THREAD, ControllerEvent, ShutdownEventThread
from controller.controller_state import ControllerState
from controller.event_manager import (
    CONTROLLER_STATS_PREFIX,
    EVENT_QUEUE_SIZE_METRIC,
    EVENT_QUEUE_TIME_METRIC,
    ControllerEventManager,
    QueuedEvent,
)
from controller.metrics import WINDOW_SIZE, Histogram, Timer

WAIT = 10.0  # seconds; only a bound on waits for things that do happen, never a pacing sleep


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Ev(ControllerEvent):
    """A test event: a tag, a state and an optional action run while being processed."""

    __slots__ = ("tag", "state", "action")

    def __init__(self, tag, state=ControllerState.TopicChange, action=None):
        self.tag = tag
        self.state = state
        self.action = action

    def __repr__(self) -> str:
        return f"Ev({self.tag!r})"


class Recorder:
    """A processor that records what it was given and runs the events' actions."""

    def __init__(self) -> None:
        self.processed: list[ControllerEvent] = []
        self.preempted: list[ControllerEvent] = []

    def process(self, event) -> None:
        self.processed.append(event)
        if event.action is not None:
            event.action()

    def preempt(self, event) -> None:
        self.preempted.append(event)


def tags(events):
    return [e.tag for e in events]


def stepped(clock=None, **kwargs):
    recorder = Recorder()
    manager = ControllerEventManager(1, recorder, clock or FakeClock(), **kwargs)
    return manager, recorder


@pytest.fixture
def threaded():
    recorder = Recorder()
    manager = ControllerEventManager(1, recorder, lambda: time.monotonic() * 1000)
    manager.start()
    yield manager, recorder
    manager.close()


# -- ControllerState and events ------------------------------------------------------------

def test_controller_state_values_and_metric_names():
    assert len(ControllerState) == 18
    assert [s.value for s in ControllerState] == list(range(18))
    assert ControllerState.UpdateFeatures == 17
    assert ControllerState.Idle.rate_and_time_metric_name is None
    assert ControllerState.UpdateMetadataResponseReceived.rate_and_time_metric_name is None
    assert ControllerState.BrokerChange.rate_and_time_metric_name == "LeaderElectionRateAndTimeMs"
    assert (ControllerState.AlterPartitionReassignment.rate_and_time_metric_name
            == "PartitionReassignmentRateAndTimeMs")
    assert ControllerState.TopicChange.rate_and_time_metric_name == "TopicChangeRateAndTimeMs"
    assert (ControllerState.ControllerShutdown.rate_and_time_metric_name
            == "ControllerShutdownRateAndTimeMs")


def test_events_and_queued_event_repr():
    assert SHUTDOWN_EVENT_THREAD.state is ControllerState.ControllerShutdown
    assert SHUTDOWN_EVENT_THREAD.preempt() is None
    assert repr(SHUTDOWN_EVENT_THREAD) == "ShutdownEventThread"
    assert repr(QueuedEvent(Ev("a"), 12.5)) == "QueuedEvent(event=Ev('a'), enqueueTimeMs=12.5)"


# -- ordering --------------------------------------------------------------------------------

def test_stepped_mode_is_fifo():
    manager, recorder = stepped()
    assert manager.step() is False
    for i in range(5):
        manager.put(Ev(i))
    assert manager.queue_size == 5 and not manager.is_empty
    assert manager.step() is True
    assert tags(recorder.processed) == [0]
    assert manager.run_until_empty(max_events=2) == 2
    assert tags(recorder.processed) == [0, 1, 2]
    assert manager.run_until_empty() == 2
    assert tags(recorder.processed) == [0, 1, 2, 3, 4]
    assert manager.is_empty and manager.run_until_empty() == 0


def test_run_until_empty_includes_events_put_while_processing():
    manager, recorder = stepped()
    manager.put(Ev("first", action=lambda: manager.put(Ev("second"))))
    assert manager.run_until_empty() == 2
    assert tags(recorder.processed) == ["first", "second"]


def test_thread_mode_is_fifo(threaded):
    manager, recorder = threaded
    queued = [manager.put(Ev(i)) for i in range(200)]
    assert queued[-1].await_processing(WAIT)
    manager.close()
    assert tags(recorder.processed) == list(range(200))
    assert recorder.preempted == []


# -- clear_and_put and close -------------------------------------------------------------------

def test_clear_and_put_preempts_queued_events_in_order():
    manager, recorder = stepped()
    queued = [manager.put(Ev(i)) for i in range(3)]
    manager.clear_and_put(Ev("new"))
    assert tags(recorder.preempted) == [0, 1, 2]
    assert all(q.spent for q in queued)
    assert manager.queue_size == 1
    manager.run_until_empty()
    assert tags(recorder.processed) == ["new"]
    queued[0].process(recorder)  # spent: neither processed nor preempted again
    queued[0].preempt(recorder)
    assert tags(recorder.processed) == ["new"] and len(recorder.preempted) == 3


def test_preempt_callback_may_put_and_may_raise():
    class Fussy(Recorder):
        def preempt(self, event):
            super().preempt(event)
            if event.tag == "raise":
                raise ValueError("boom")
            if event.tag == "reput":
                manager.put(Ev("from-preempt"))  # re-enters the put lock

    fussy = Fussy()
    manager = ControllerEventManager(1, fussy, FakeClock())
    for tag in ("raise", "reput", "last"):
        manager.put(Ev(tag))
    with structlog.testing.capture_logs() as logs:
        manager.clear_and_put(Ev("new"))
    assert tags(fussy.preempted) == ["raise", "reput", "last"]
    assert [e["event"] for e in logs] == ["Uncaught error preempting event"]
    manager.run_until_empty()
    assert tags(fussy.processed) == ["from-preempt", "new"]


def test_close_preempts_pending_events_and_stops_the_thread(threaded):
    manager, recorder = threaded
    release = threading.Event()
    blocker = manager.put(Ev("blocker", action=lambda: release.wait(WAIT)))
    pending = [manager.put(Ev(i)) for i in range(3)]
    assert blocker.await_processing(WAIT)
    closer = threading.Thread(target=manager.close)
    closer.start()
    # close() preempts the pending events before waiting for the thread.
    assert all(q.await_processing(WAIT) is False for q in pending)
    release.set()
    closer.join(WAIT)
    assert not closer.is_alive()
    assert tags(recorder.processed) == ["blocker"]
    assert tags(recorder.preempted) == [0, 1, 2]
    assert not any(isinstance(e, ShutdownEventThread) for e in recorder.processed + recorder.preempted)
    assert not any(t.name == manager.thread_name for t in threading.enumerate())
    assert manager.state is ControllerState.Idle


def test_put_after_close_is_preempted_at_once():
    manager, recorder = stepped()
    manager.put(Ev("pending"))
    manager.close()
    manager.close()  # idempotent
    late = manager.put(Ev("late"))
    assert late.spent and late.await_processing(0) is False
    manager.clear_and_put(Ev("late-clear"))
    assert tags(recorder.preempted) == ["pending", "late", "late-clear"]
    assert manager.step() is False and recorder.processed == []
    with pytest.raises(RuntimeError):
        manager.start()


def test_shutdown_event_thread_never_reaches_process():
    manager, recorder = stepped()
    manager.put(SHUTDOWN_EVENT_THREAD)
    manager.put(Ev("after"))
    manager.run_until_empty()
    assert tags(recorder.processed) == ["after"]
    assert manager.metrics()[EVENT_QUEUE_TIME_METRIC]["count"] == 1


def test_step_while_thread_runs_raises_and_start_twice_raises(threaded):
    manager, _ = threaded
    with pytest.raises(RuntimeError):
        manager.step()
    with pytest.raises(RuntimeError):
        manager.run_until_empty()
    with pytest.raises(RuntimeError):
        manager.start()
    manager.close()
    assert manager.step() is False  # allowed again once the thread has stopped


# -- errors and state --------------------------------------------------------------------------

def fail():
    raise RuntimeError("boom")


def test_exception_in_processing_is_logged_and_swallowed_stepped():
    manager, recorder = stepped()
    manager.put(Ev("bad", action=fail))
    manager.put(Ev("good"))
    with structlog.testing.capture_logs() as logs:
        assert manager.run_until_empty() == 2
    assert tags(recorder.processed) == ["bad", "good"]
    (entry,) = logs
    assert entry["event"] == "Uncaught error processing event"
    assert entry["log_level"] == "error"
    assert entry["controller_event"] == "Ev('bad')"
    assert entry["controller_id"] == 1
    assert manager.state is ControllerState.Idle


def test_exception_in_processing_does_not_stop_the_thread(threaded):
    manager, recorder = threaded
    with structlog.testing.capture_logs() as logs:
        manager.put(Ev("bad", action=fail))
        assert manager.put(Ev("good")).await_processing(WAIT)
        manager.close()
    assert tags(recorder.processed) == ["bad", "good"]
    assert "Uncaught error processing event" in [e["event"] for e in logs]


def test_state_is_the_event_state_while_processing_stepped():
    manager, recorder = stepped()
    seen = []
    manager.put(Ev("a", ControllerState.BrokerChange, action=lambda: seen.append(manager.state)))
    manager.put(Ev("b", ControllerState.Idle, action=lambda: seen.append(manager.state)))
    assert manager.state is ControllerState.Idle
    manager.step()
    assert manager.state is ControllerState.Idle
    manager.step()
    assert seen == [ControllerState.BrokerChange, ControllerState.Idle]


def test_state_is_the_event_state_while_processing_threaded(threaded):
    manager, _ = threaded
    release = threading.Event()
    queued = manager.put(Ev("a", ControllerState.IsrChange, action=lambda: release.wait(WAIT)))
    assert queued.await_processing(WAIT)
    assert manager.state is ControllerState.IsrChange
    release.set()
    manager.close()
    assert manager.state is ControllerState.Idle


# -- await_processing and QueuedEvent --------------------------------------------------------

def test_await_processing():
    manager, _ = stepped()
    first = manager.put(Ev("first"))
    assert first.await_processing(timeout=0.01) is False  # nobody steps
    started = []
    waiter = threading.Thread(target=lambda: started.append(first.await_processing(WAIT)))
    waiter.start()
    manager.step()
    waiter.join(WAIT)
    assert started == [True]
    assert first.await_processing() is True  # already started: returns at once
    second = manager.put(Ev("second"))
    manager.clear_and_put(Ev("third"))
    assert second.await_processing() is False  # preempted: returns at once


def test_await_processing_returns_when_processing_starts_not_ends():
    manager, _ = stepped()
    release = threading.Event()
    queued = manager.put(Ev("slow", action=lambda: release.wait(WAIT)))
    stepper = threading.Thread(target=manager.step)
    stepper.start()
    assert queued.await_processing(WAIT) is True
    assert stepper.is_alive()
    release.set()
    stepper.join(WAIT)


def test_queued_event_is_spent_exactly_once_under_races():
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(100):
            recorder = Recorder()
            queued = QueuedEvent(Ev("x"), 0.0)
            barrier = threading.Barrier(4)

            def race(method):
                barrier.wait()
                method(recorder)

            threads = [threading.Thread(target=race, args=(m,))
                       for m in (queued.process, queued.preempt) * 2]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(recorder.processed) + len(recorder.preempted) == 1
            assert queued.spent
    finally:
        sys.setswitchinterval(old_interval)


# -- metrics --------------------------------------------------------------------------------

def test_queue_time_histogram_with_fake_clock():
    clock = FakeClock(100.0)
    manager, _ = stepped(clock)
    manager.put(Ev("a"))
    clock.now = 105.0
    manager.put(Ev("b"))
    assert manager.metrics()[EVENT_QUEUE_SIZE_METRIC] == 2
    clock.now = 110.0
    manager.step()  # waited 10 ms
    clock.now = 125.0
    manager.step()  # waited 20 ms
    metrics = manager.metrics()
    hist = metrics[EVENT_QUEUE_TIME_METRIC]
    assert metrics[EVENT_QUEUE_SIZE_METRIC] == 0
    assert (hist["count"], hist["sum"], hist["min"], hist["max"], hist["mean"]) == (2, 30, 10, 20, 15)
    assert hist["p50"] == 15.0  # Yammer interpolation between the two samples
    assert hist["p99"] == 20.0


def test_rate_and_time_timers_per_state():
    clock = FakeClock()

    def takes(ms):
        def action():
            clock.now += ms
        return action

    manager, _ = stepped(clock)
    manager.put(Ev("a", ControllerState.BrokerChange, action=takes(3)))
    manager.put(Ev("b", ControllerState.BrokerChange, action=takes(7)))
    manager.put(Ev("c", ControllerState.TopicDeletion, action=lambda: (takes(2)(), fail())))
    manager.put(Ev("d", ControllerState.UpdateMetadataResponseReceived, action=takes(50)))
    manager.put(Ev("e", ControllerState.Idle, action=takes(50)))
    with structlog.testing.capture_logs():
        manager.run_until_empty()
    metrics = manager.metrics()
    broker = metrics[CONTROLLER_STATS_PREFIX + "LeaderElectionRateAndTimeMs"]
    assert (broker["count"], broker["total_ms"], broker["max_ms"], broker["mean_ms"]) == (2, 10, 7, 5)
    assert broker["rate_per_sec"] == pytest.approx(2 / 0.112)  # 2 events in 112 simulated ms
    deletion = metrics[CONTROLLER_STATS_PREFIX + "TopicDeletionRateAndTimeMs"]
    assert (deletion["count"], deletion["total_ms"]) == (1, 2)  # timed even when it fails
    stats = {k for k in metrics if k.startswith(CONTROLLER_STATS_PREFIX)}
    assert stats == {CONTROLLER_STATS_PREFIX + s.rate_and_time_metric_name
                     for s in ControllerState if s.rate_and_time_metric_name}
    assert len(stats) == 16


def test_rate_and_time_metrics_can_be_disabled():
    manager, recorder = stepped(rate_and_time_metrics=False)
    manager.put(Ev("a"))
    manager.run_until_empty()
    assert tags(recorder.processed) == ["a"]
    assert set(manager.metrics()) == {EVENT_QUEUE_TIME_METRIC, EVENT_QUEUE_SIZE_METRIC}


def test_idle_event_thread_clears_queue_time_histogram_after_timeout():
    recorder = Recorder()
    manager = ControllerEventManager(1, recorder, lambda: time.monotonic() * 1000)
    manager.EVENT_QUEUE_TIME_TIMEOUT_S = 0.02
    manager.start()
    try:
        assert manager.put(Ev("a")).await_processing(WAIT)
        deadline = time.monotonic() + WAIT
        while manager.metrics()[EVENT_QUEUE_TIME_METRIC]["count"] and time.monotonic() < deadline:
            time.sleep(0.005)
        assert manager.metrics()[EVENT_QUEUE_TIME_METRIC]["count"] == 0
        # Then it blocks without timeout, and still wakes for new events.
        assert manager.put(Ev("b")).await_processing(WAIT)
    finally:
        manager.close()
    assert tags(recorder.processed) == ["a", "b"]


def test_histogram():
    hist = Histogram()
    assert hist.snapshot()["p99"] == 0.0 and hist.min == 0.0 and hist.max == 0.0
    for v in range(1, 101):
        hist.update(float(v))
    snap = hist.snapshot()
    assert (snap["count"], snap["min"], snap["max"], snap["mean"]) == (100, 1, 100, 50.5)
    assert snap["p50"] == pytest.approx(50.5)
    assert snap["p99"] == pytest.approx(99.99)
    hist.clear()
    assert hist.count == 0 and hist.snapshot()["max"] == 0.0
    for v in range(3 * WINDOW_SIZE):  # percentiles cover the most recent WINDOW_SIZE values
        hist.update(float(v))
    assert hist.percentile(0.0) == 2 * WINDOW_SIZE
    assert hist.min == 0.0 and hist.count == 3 * WINDOW_SIZE


def test_timer():
    clock = FakeClock(1000.0)
    timer = Timer(clock)
    assert timer.snapshot() == {"count": 0, "total_ms": 0.0, "mean_ms": 0.0, "max_ms": 0.0,
                                "rate_per_sec": 0.0}
    timer.update(4.0)
    timer.update(2.0)
    clock.now = 3000.0
    assert timer.snapshot() == {"count": 2, "total_ms": 6.0, "mean_ms": 3.0, "max_ms": 4.0,
                                "rate_per_sec": 1.0}


# -- properties ------------------------------------------------------------------------------

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_concurrent_producers_clear_and_close_lose_nothing(data):
    """Each put event is processed or preempted exactly once, in FIFO order, whatever the
    interleaving of producers, clear_and_put and close."""
    n_producers = data.draw(st.integers(1, 3), label="producers")
    # "sync" waits until the producer's last event is processed or preempted, so that the
    # event thread gets to run between puts.
    ops = st.sampled_from(["put"] * 4 + ["clear", "sync"])
    plans = [data.draw(st.lists(ops, max_size=40), label=f"plan{p}") for p in range(n_producers)]
    closer = data.draw(st.integers(0, n_producers - 1), label="closer")
    # Counted from the end, so that the simplest case closes after all the puts.
    close_after = len(plans[closer]) - data.draw(st.integers(0, len(plans[closer])),
                                                 label="close_before_end")

    recorder = Recorder()
    # The clock is read under the put lock, so a counter gives enqueue order.
    manager = ControllerEventManager(1, recorder, itertools.count().__next__)
    manager.start()
    barrier = threading.Barrier(n_producers)
    queued_by_producer: list[list[QueuedEvent]] = [[] for _ in range(n_producers)]

    def produce(p):
        barrier.wait()
        for seq, op in enumerate(plans[p]):
            if p == closer and seq == close_after:
                manager.close()
            if op == "sync":
                if queued_by_producer[p]:
                    queued_by_producer[p][-1].await_processing(WAIT)
            else:
                put = manager.put if op == "put" else manager.clear_and_put
                queued_by_producer[p].append(put(Ev((p, seq))))
        if p == closer and close_after == len(plans[p]):
            manager.close()

    producers = [threading.Thread(target=produce, args=(p,)) for p in range(n_producers)]
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # more thread switches, more interleavings
    try:
        for t in producers:
            t.start()
        for t in producers:
            t.join(WAIT)
    finally:
        sys.setswitchinterval(old_interval)
    assert not any(t.is_alive() for t in producers)
    manager.close()

    all_events = [q.event for qs in queued_by_producer for q in qs]
    event(f"some processed: {bool(recorder.processed)}, some preempted: {bool(recorder.preempted)}")
    handled = recorder.processed + recorder.preempted
    assert Counter(map(id, handled)) == Counter(map(id, all_events))  # exactly once each
    assert all(q.spent for qs in queued_by_producer for q in qs)
    enqueue_time = {id(q.event): q.enqueue_time_ms for qs in queued_by_producer for q in qs}
    processed_times = [enqueue_time[id(e)] for e in recorder.processed]
    assert processed_times == sorted(processed_times)  # processing order == enqueue order
    for p in range(n_producers):
        seqs = [seq for (producer, seq) in tags(recorder.processed) if producer == p]
        assert seqs == sorted(seqs)
    assert manager.state is ControllerState.Idle and manager.is_empty


class SteppedManagerModel(RuleBasedStateMachine):
    """Stepped mode against a list model of the queue."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.recorder = Recorder()
        self.manager = ControllerEventManager(7, self.recorder, self.clock)
        self.pending: list[tuple[Ev, float]] = []
        self.processed: list[Ev] = []
        self.preempted: list[Ev] = []
        self.queue_time_sum = 0.0
        self.closed = False
        self.next_tag = 0

    def _new_event(self) -> Ev:
        self.next_tag += 1
        return Ev(self.next_tag)

    def _model_step(self) -> None:
        event, enqueued = self.pending.pop(0)
        self.processed.append(event)
        self.queue_time_sum += self.clock.now - enqueued

    @rule()
    def put(self):
        event = self._new_event()
        self.manager.put(event)
        if self.closed:
            self.preempted.append(event)
        else:
            self.pending.append((event, self.clock.now))

    @rule()
    def clear_and_put(self):
        event = self._new_event()
        self.manager.clear_and_put(event)
        self.preempted.extend(e for e, _ in self.pending)
        self.pending = []
        if self.closed:
            self.preempted.append(event)
        else:
            self.pending.append((event, self.clock.now))

    @rule(ms=st.integers(0, 1000))
    def advance_clock(self, ms):
        self.clock.now += ms

    @rule()
    def step(self):
        expected = bool(self.pending)
        if expected:
            self._model_step()
        assert self.manager.step() is expected

    @rule(limit=st.none() | st.integers(0, 4))
    def run_until_empty(self, limit):
        expected = len(self.pending) if limit is None else min(limit, len(self.pending))
        for _ in range(expected):
            self._model_step()
        assert self.manager.run_until_empty(limit) == expected

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self):
        self.manager.close()
        self.preempted.extend(e for e, _ in self.pending)
        self.pending = []
        self.closed = True

    @invariant()
    def matches_model(self):
        assert self.recorder.processed == self.processed
        assert self.recorder.preempted == self.preempted
        assert self.manager.queue_size == len(self.pending)
        assert self.manager.is_empty == (not self.pending)
        assert self.manager.state is ControllerState.Idle
        hist = self.manager.metrics()[EVENT_QUEUE_TIME_METRIC]
        assert hist["count"] == len(self.processed)
        assert hist["sum"] == self.queue_time_sum


SteppedManagerModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40,
                                                 deadline=None)
TestSteppedManagerModel = SteppedManagerModel.TestCase
