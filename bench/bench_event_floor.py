"""Benchmark: the floor of any exact event-level simulator in CPython, for issue 14's workload.

The simulator's data plane is exact: each produce request, fetch, fetch response, purgatory expiry and produce
response is an event, as in Kafka. This script measures how fast a simulator could be if each of those events
did *nothing* but what every event must do, on the simulator's own loop (``sim.event_loop.EventLoop``, stepped
as ``Simulation._run_until`` steps it): be taken off the heap, set the clock, call its function, and post the
next message (a heap push at now + latency). Two handlers are timed:

- ``empty``: the function posts its successor and returns;
- ``minimal``: also what the least of the simulator's handlers does — look its session up in a dict, update two
  fields, make the closure of its successor.

The events per simulated second are counted from the real simulator on the same workload (``--count``: a short
run of ``bench_simulation``'s scenario at ``--partitions``, no faults, after the set-up), or given (``--events``).
The result is the most simulated seconds per wall second any exact event-level design could reach here, before
it does any of the work of an event (a fetch session's partitions, a log's offsets, the ISR, the controller):

    .venv/bin/python bench/bench_event_floor.py [--events 5000] [--seconds 60]
    .venv/bin/python bench/bench_event_floor.py --count --partitions 100000
"""
from __future__ import annotations

import argparse
import heapq
import logging
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from sim.event_loop import EventLoop  # noqa: E402


def count_events(partitions: int, from_ms: int = 6_000, until_ms: int = 16_000) -> float:
    """Events per simulated second of the simulator's steady state (no faults) on bench_simulation's workload."""
    import structlog

    from bench_simulation import scenario_text
    from sim.scenario import parse_scenario
    from sim.simulation import Simulation
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    minutes = -(-until_ms // 60_000)
    sim = Simulation(parse_scenario(scenario_text(30, partitions, minutes, 10_000, False), "<bench>"),
                     sink=lambda rec: None, column_sink=lambda batch: None)
    sim.start()
    sim.run_until(from_ms)
    before = sim.loop.events_run
    sim.run_until(until_ms)
    return (sim.loop.events_run - before) / ((until_ms - from_ms) / 1000)


def floor(events_per_s: float, seconds: int, handler: str) -> tuple[float, int]:
    """(wall seconds, events) for ``seconds`` simulated seconds of ``events_per_s`` events, each ``handler``; the
    loop is Simulation._run_until's (heap pop, clock set, call) without its checks (cancelled timers, the
    controllers' queues, progress), so the floor is optimistic; the events are spread evenly over the chains that
    carry them."""
    loop = EventLoop()
    heap, heappop, heappush = loop._heap, heapq.heappop, heapq.heappush
    latency = 1                                   # ms: each event posts its successor 1 ms later
    chains = max(1, int(events_per_s * latency / 1000))     # events in flight at once
    sessions = {k: [0, 0] for k in range(chains)}
    end = seconds * 1000
    seq = [0]

    def post(at, fn):
        seq[0] += 1
        heappush(heap, (at, seq[0], None, fn))

    def make(k):
        if handler == "empty":
            def fire():
                post(loop.now + latency, fire)
            return fire

        def fire():
            s = sessions[k]                       # the session the message is for
            s[0] += 1
            s[1] = loop.now
            post(loop.now + latency, make(k))     # a new closure: the next message carries its own state
        return fire

    for k in range(chains):
        post(k * latency // chains, make(k))
    t0 = time.perf_counter()
    n = 0
    while heap and heap[0][0] <= end:
        now, _, _, fn = heappop(heap)
        loop.now = now
        n += 1
        fn()
    return time.perf_counter() - t0, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=float, default=5_000, help="events per simulated second (default: %(default)s)")
    ap.add_argument("--count", action="store_true", help="count them from the simulator first (see --partitions)")
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--seconds", type=int, default=60, help="simulated seconds timed (default: %(default)s)")
    args = ap.parse_args()
    rate = args.events
    if args.count:
        rate = count_events(args.partitions)
        print(f"the simulator, {args.partitions:,} partitions, no faults: {rate:,.0f} events per simulated second")
    for handler in ("empty", "minimal"):
        best = min((floor(rate, args.seconds, handler) for _ in range(3)), key=lambda r: r[0])
        wall, n = best
        print(f"floor ({handler} handler): {n:,} events for {args.seconds} simulated s in {wall:.3f} wall s = "
              f"{wall / n * 1e6:.2f} us per event, {args.seconds / wall:,.0f} simulated s per wall s at most")


if __name__ == "__main__":
    main()
