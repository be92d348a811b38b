"""The controller's event manager (Kafka's ``ControllerEventManager``): a FIFO queue of
controller events and the single consumer that hands them, one at a time, to the processor.

Producers (ZooKeeper watchers, request handlers, schedulers) ``put`` events from any thread;
``clear_and_put`` preempts everything queued and then puts, atomically with respect to other
puts. The consumer is either the daemon ``controller-event-thread`` (``start``/``close``) or,
for deterministic simulations, the caller itself (``step``/``run_until_empty``); both hand
each dequeued event to the same ``_handle``. Time only comes from the injected clock (ms).

Deviations from Kafka, all so that no event is silently lost: a ``preempt`` callback that
raises is logged and the drain goes on; ``await_processing`` also returns (False) when the
event is preempted instead of blocking forever; and ``close`` preempts the events that were
put behind the shutdown marker, and ``put`` after ``close`` preempts the event at once.
"""
from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

import structlog

from controller.controller_events import SHUTDOWN_EVENT_THREAD, ControllerEvent, ShutdownEventThread
from controller.controller_state import ControllerState
from controller.metrics import Clock, Histogram, Timer

EVENT_QUEUE_TIME_METRIC = "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs"
EVENT_QUEUE_SIZE_METRIC = "kafka.controller:type=ControllerEventManager,name=EventQueueSize"
CONTROLLER_STATS_PREFIX = "kafka.controller:type=ControllerStats,name="

_IDLE = ControllerState.Idle
_CONTROLLER_SHUTDOWN = ControllerState.ControllerShutdown

# QueuedEvent outcomes.
_PENDING, _STARTED, _PREEMPTED = 0, 1, 2

# Serialises the (rare) lazy creation of QueuedEvent latches.
_latch_lock = threading.Lock()


class EventProcessor(Protocol):
    """What the event manager drives: in production, the controller."""

    def process(self, event: ControllerEvent) -> None: ...

    def preempt(self, event: ControllerEvent) -> None: ...


class QueuedEvent:
    """An event with its enqueue time; it is processed or preempted at most once."""

    __slots__ = ("event", "enqueue_time_ms", "_unspent", "_outcome", "_latch")

    def __init__(self, event: ControllerEvent, enqueue_time_ms: float) -> None:
        self.event = event
        self.enqueue_time_ms = enqueue_time_ms
        self._unspent = True
        self._outcome = _PENDING
        self._latch: threading.Event | None = None

    # Claiming (marking spent) is ``del self._unspent``: deleting a slot is a test-and-clear
    # that runs in C under the GIL and raises if the slot is already empty, so of racing
    # process/preempt calls exactly one proceeds, with no lock or allocation per event.

    @property
    def spent(self) -> bool:
        return not hasattr(self, "_unspent")

    def process(self, processor: EventProcessor) -> None:
        try:
            del self._unspent
        except AttributeError:
            return
        # Set the outcome before reading the latch; await_processing() does the reverse.
        self._outcome = _STARTED
        if self._latch is not None:
            self._latch.set()
        processor.process(self.event)

    def preempt(self, processor: EventProcessor) -> None:
        try:
            del self._unspent
        except AttributeError:
            return
        self._outcome = _PREEMPTED
        if self._latch is not None:
            self._latch.set()
        processor.preempt(self.event)

    def await_processing(self, timeout: float | None = None) -> bool:
        """Block until processing has started (True); False on timeout or if preempted."""
        if self._outcome == _PENDING:
            with _latch_lock:
                latch = self._latch
                if latch is None:
                    latch = self._latch = threading.Event()
            if self._outcome == _PENDING:
                latch.wait(timeout)
        return self._outcome == _STARTED

    def __repr__(self) -> str:
        return f"QueuedEvent(event={self.event!r}, enqueueTimeMs={self.enqueue_time_ms})"


class ControllerEventManager:
    """Queue plus single consumer of controller events; see the module docstring."""

    # Kafka 3.7's eventQueueTimeTimeoutMs: after this long idle, EventQueueTimeMs is cleared.
    EVENT_QUEUE_TIME_TIMEOUT_S = 300.0

    def __init__(self, controller_id: int, processor: EventProcessor, clock: Clock, *,
                 rate_and_time_metrics: bool = True,
                 thread_name: str = "controller-event-thread") -> None:
        self.controller_id = controller_id
        self.thread_name = thread_name
        self._processor = processor
        self._clock = clock
        # Lazy proxy: structlog's configuration is resolved when logging, not now.
        self._log = structlog.get_logger("kcontroller.event_manager", controller_id=controller_id)

        self._queue: deque[QueuedEvent] = deque()
        # Kafka's putLock: serialises put and clear_and_put; reentrant so that a preempt
        # callback may put. The consumer pops without it (deque.popleft is atomic) and only
        # takes it to wait, announcing that in _consumer_waiting so puts notify only then.
        self._lock = threading.RLock()
        self._not_empty = threading.Condition(self._lock)
        self._consumer_waiting = False

        self._state = _IDLE
        self._queue_time_hist = Histogram()
        self._timers: dict[ControllerState, Timer] = {}
        if rate_and_time_metrics:
            self._timers = {state: Timer(clock) for state in ControllerState
                            if state.rate_and_time_metric_name is not None}
        # Indexed by state value, for the hot path.
        self._timer_by_state = [self._timers.get(state) for state in ControllerState]

        # Called after every event put on the queue (a driver that steps the queue itself, like a simulation
        # of many brokers, learns there is work without looking at every queue after every event).
        self.on_put: Callable[[], object] | None = None
        self._thread: threading.Thread | None = None
        self._thread_running = False
        self._shutdown_initiated = False
        self._closed = False

    # -- producers -------------------------------------------------------------------------

    def put(self, event: ControllerEvent) -> QueuedEvent:
        # acquire/try/finally/release: half the cost of a with statement, on the hot path.
        lock = self._lock
        lock.acquire()
        try:
            # Time is read under the lock, so enqueue times follow queue order.
            queued = QueuedEvent(event, self._clock())
            if self._closed:
                queued.preempt(self._processor)
            else:
                self._queue.append(queued)
                if self._consumer_waiting:
                    self._consumer_waiting = False
                    self._not_empty.notify()
                if self.on_put is not None:
                    self.on_put()
            return queued
        finally:
            lock.release()

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        """Preempt every queued event (FIFO), then put ``event``; no put can come between."""
        with self._lock:
            self._preempt_all(self._drain())
            return self.put(event)

    def _drain(self) -> list[QueuedEvent]:
        # One popleft at a time rather than copy-and-clear, because the consumer pops
        # without the lock: each event ends up either drained or dequeued, never both.
        drained = []
        popleft = self._queue.popleft
        try:
            while True:
                drained.append(popleft())
        except IndexError:
            return drained

    def _preempt_all(self, drained: list[QueuedEvent]) -> None:
        processor = self._processor
        for queued in drained:
            if isinstance(queued.event, ShutdownEventThread):
                continue
            try:
                queued.preempt(processor)
            except Exception:
                self._log.exception("Uncaught error preempting event",
                                    controller_event=repr(queued.event))

    # -- state and metrics -----------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return not self._queue

    @property
    def queue_size(self) -> int:
        return len(self._queue)

    @property
    def state(self) -> ControllerState:
        """State of the event being processed; Idle between events."""
        return self._state

    def metrics(self) -> dict[str, object]:
        """Snapshot keyed by Kafka's MBean names."""
        snapshot: dict[str, object] = {
            EVENT_QUEUE_TIME_METRIC: self._queue_time_hist.snapshot(),
            EVENT_QUEUE_SIZE_METRIC: len(self._queue),
        }
        for state, timer in self._timers.items():
            snapshot[CONTROLLER_STATS_PREFIX + state.rate_and_time_metric_name] = timer.snapshot()
        return snapshot

    # -- the consumer ----------------------------------------------------------------------

    def _handle(self, queued: QueuedEvent) -> None:
        """Process one dequeued event: the only handling path, thread or stepped."""
        event = queued.event
        state = event.state
        if state is _CONTROLLER_SHUTDOWN and isinstance(event, ShutdownEventThread):
            return
        self._state = state
        clock = self._clock
        now = clock()
        self._queue_time_hist.update(now - queued.enqueue_time_ms)
        timer = self._timer_by_state[state]
        try:
            if timer is None:
                queued.process(self._processor)
            else:
                try:
                    queued.process(self._processor)
                finally:
                    timer.update(clock() - now)
        except Exception:
            self._log.exception("Uncaught error processing event", controller_event=repr(event))
        finally:
            self._state = _IDLE

    # stepped mode

    def step(self) -> bool:
        """Handle the oldest queued event in this thread; False if the queue was empty."""
        self._check_not_threaded()
        try:
            queued = self._queue.popleft()
        except IndexError:
            return False
        self._handle(queued)
        return True

    def run_until_empty(self, max_events: int | None = None) -> int:
        """Step until the queue is empty (or ``max_events``); returns the number handled."""
        self._check_not_threaded()
        limit = sys.maxsize if max_events is None else max_events
        popleft = self._queue.popleft
        handle = self._handle
        handled = 0
        while handled < limit:
            try:
                queued = popleft()
            except IndexError:
                break
            handle(queued)
            handled += 1
        return handled

    def _check_not_threaded(self) -> None:
        if self._thread_running:
            raise RuntimeError(f"{self.thread_name} is running; cannot step the event manager")

    # thread mode

    def start(self) -> None:
        with self._lock:
            if self._shutdown_initiated:
                raise RuntimeError("event manager is closed")
            if self._thread is not None:
                raise RuntimeError("event manager already started")
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread_running = True
        try:
            self._thread.start()
        except BaseException:
            self._thread_running = False
            raise

    def _run(self) -> None:
        self._log.info("Starting", thread=self.thread_name)
        try:
            handle = self._handle
            poll = self._poll
            while not self._shutdown_initiated:
                handle(poll())
        finally:
            self._thread_running = False
            self._log.info("Stopped", thread=self.thread_name)

    def _poll(self) -> QueuedEvent:
        queue = self._queue
        try:
            return queue.popleft()
        except IndexError:
            pass
        with self._lock:
            while not queue:
                self._consumer_waiting = True
                if self._queue_time_hist.count:
                    notified = self._not_empty.wait(self.EVENT_QUEUE_TIME_TIMEOUT_S)
                    if not notified and not queue:
                        # Kafka 3.7 (pollFromEventQueue): stale queue times of an idle
                        # controller should not linger in the histogram.
                        self._queue_time_hist.clear()
                else:
                    self._not_empty.wait()
            self._consumer_waiting = False
            return queue.popleft()

    def close(self) -> None:
        """Stop the event thread (if any), preempting every pending event; idempotent.

        Events put while closing are preempted too, and so is any event put afterwards.
        """
        with self._lock:
            first_close = not self._shutdown_initiated
            self._shutdown_initiated = True
        if first_close:
            self.clear_and_put(SHUTDOWN_EVENT_THREAD)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if first_close:
            with self._lock:
                self._preempt_all(self._drain())
                self._closed = True
