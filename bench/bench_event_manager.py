"""Benchmark of the controller event manager's hot path (a script, not a test).

(a) Stepped mode: put no-op events and ``run_until_empty`` in the caller's thread, with a
    simulated clock; prints ns per event for put, for processing and for both. Goal:
    <= 1 µs per no-op event. Measured in batches of 1,000 (the queue stays short, as in a
    simulation; best and median batch) and as one batch of all events at once (also with
    the cyclic GC disabled, to show what the GC's rescans of a deep backlog cost).
(b) Thread mode: the event thread runs, two producer threads put no-op events, with a real
    clock; prints events per second from the first put to the last processed event.
    Goal: >= 200,000 events/s.

    .venv/bin/python bench/bench_event_manager.py [--events 200000] [--thread-events 400000]
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from controller.controller_events import ControllerEvent  # noqa: E402
from controller.controller_state import ControllerState  # noqa: E402
from controller.event_manager import EVENT_QUEUE_TIME_METRIC, ControllerEventManager  # noqa: E402

BATCH = 1_000


class TimedNoOp(ControllerEvent):
    """A no-op event whose state has a rate-and-time timer (like most controller events)."""

    __slots__ = ()
    state = ControllerState.TopicChange


class UntimedNoOp(ControllerEvent):
    """A no-op event whose state has no timer (like AllocateProducerIds)."""

    __slots__ = ()
    state = ControllerState.Idle


class NoOpProcessor:
    def process(self, event: ControllerEvent) -> None:
        pass

    def preempt(self, event: ControllerEvent) -> None:
        pass


class CountingProcessor:
    """Counts processed events and signals when ``expected`` have been processed."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.processed = 0
        self.done = threading.Event()

    def process(self, event: ControllerEvent) -> None:
        self.processed += 1  # only the event thread writes it
        if self.processed == self.expected:
            self.done.set()

    def preempt(self, event: ControllerEvent) -> None:
        pass


class SimulatedClock:
    def __init__(self) -> None:
        self.now_ms = 0.0


def real_clock() -> float:
    return time.monotonic() * 1000.0


def stepped_batches(event: ControllerEvent, clock, n_events: int) -> dict[str, list[float]]:
    """Per-batch ns/event of put, run_until_empty and both."""
    manager = ControllerEventManager(0, NoOpProcessor(), clock)
    put = manager.put
    run_until_empty = manager.run_until_empty
    samples: dict[str, list[float]] = {"put": [], "process": [], "total": []}
    for _ in range(n_events // BATCH):
        t0 = time.perf_counter_ns()
        for _ in range(BATCH):
            put(event)
        t1 = time.perf_counter_ns()
        assert run_until_empty() == BATCH
        t2 = time.perf_counter_ns()
        samples["put"].append((t1 - t0) / BATCH)
        samples["process"].append((t2 - t1) / BATCH)
        samples["total"].append((t2 - t0) / BATCH)
    return samples


def stepped_all_at_once(event: ControllerEvent, clock, n_events: int,
                        collect_garbage: bool = True) -> tuple[float, float]:
    """ns/event of putting all events, then of run_until_empty.

    ``collect_garbage=False`` disables the cyclic GC during the run, to show its share: every
    queued event is a GC-tracked object, and collections rescan the growing backlog.
    """
    manager = ControllerEventManager(0, NoOpProcessor(), clock)
    put = manager.put
    gc.collect()
    if not collect_garbage:
        gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for _ in range(n_events):
            put(event)
        t1 = time.perf_counter_ns()
        assert manager.run_until_empty() == n_events
        t2 = time.perf_counter_ns()
    finally:
        gc.enable()
    return (t1 - t0) / n_events, (t2 - t1) / n_events


def threaded(n_events: int, n_producers: int = 2) -> tuple[float, dict]:
    """Events/s with the event thread running and ``n_producers`` producer threads."""
    processor = CountingProcessor(n_events)
    manager = ControllerEventManager(0, processor, real_clock)
    manager.start()
    event = TimedNoOp()
    per_producer = n_events // n_producers
    barrier = threading.Barrier(n_producers + 1)

    def produce() -> None:
        put = manager.put
        barrier.wait()
        for _ in range(per_producer):
            put(event)

    producers = [threading.Thread(target=produce) for _ in range(n_producers)]
    for t in producers:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    processor.done.wait()
    elapsed = time.perf_counter() - t0
    for t in producers:
        t.join()
    queue_time = manager.metrics()[EVENT_QUEUE_TIME_METRIC]
    manager.close()
    return n_events / elapsed, queue_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events per stepped run")
    parser.add_argument("--thread-events", type=int, default=400_000,
                        help="events per threaded run")
    parser.add_argument("--thread-runs", type=int, default=3)
    args = parser.parse_args()
    # A script may configure logging: drop the event thread's info lines from the output.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))

    sim = SimulatedClock()
    simulated_clock = lambda: sim.now_ms  # noqa: E731 - an attribute read, as a simulation does

    print(f"(a) stepped mode, {args.events:,} no-op events, ns/event "
          f"(batches of {BATCH:,}: best / median)")
    for label, event, clock in (
        ("timed state, simulated clock  ", TimedNoOp(), simulated_clock),
        ("untimed state, simulated clock", UntimedNoOp(), simulated_clock),
        ("timed state, real clock       ", TimedNoOp(), real_clock),
    ):
        samples = stepped_batches(event, clock, args.events)
        cells = "  ".join(f"{key} {min(v):4.0f} / {statistics.median(v):4.0f}"
                          for key, v in samples.items())
        print(f"    {label}  {cells}")
    for collect_garbage in (True, False):
        put_ns, process_ns = min(
            (stepped_all_at_once(TimedNoOp(), simulated_clock, args.events, collect_garbage)
             for _ in range(3)), key=sum)
        print(f"    all put at once, then run (best of 3), timed state, simulated clock"
              f"{'' if collect_garbage else ', GC off':8s}  put {put_ns:4.0f}  "
              f"process {process_ns:4.0f}  total {put_ns + process_ns:4.0f}")

    print(f"(b) thread mode, 2 producer threads, {args.thread_events:,} no-op events "
          f"(timed state, real clock)")
    rates = []
    for run in range(args.thread_runs):
        rate, queue_time = threaded(args.thread_events)
        rates.append(rate)
        print(f"    run {run + 1}: {rate:11,.0f} events/s   queue time ms: "
              f"mean {queue_time['mean']:.1f}  p99 of last 1,024 {queue_time['p99']:.1f}  "
              f"max {queue_time['max']:.1f}")
    print(f"    best {max(rates):,.0f} events/s, median {statistics.median(rates):,.0f} events/s")


if __name__ == "__main__":
    main()
