"""Benchmark: the producers' drain (``sim.producer.Producer._drain_rounds``, issue 14) in bench_simulation.py's run.

bench_simulation.py's cluster (``--brokers`` 30, ``--partitions`` 100,000, ``--rate`` 10,000 msg/s acks=all, a
broker killed at second 10 of every minute and restarted at 40) for ``--minutes`` (2). After the set-up (the
first 5 simulated s) every drain is timed (perf_counter around ``_drain_rounds``) and the batches waiting in
the accumulator at its start are counted (what the loop over the whole accumulator, before issue 14's drain,
visited at least once per round). Prints the wall and CPU time after the set-up, the drain's time, calls, the
batches waiting summed over the calls and at most, and the events run (the same for every drain: compare runs
of two checkouts by running this file of each, e.g. from a ``git worktree``).

    .venv/bin/python bench/bench_producer_drain.py [--partitions 100000] [--brokers 30] [--minutes 2]
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import structlog  # noqa: E402

from bench.bench_simulation import scenario_text  # noqa: E402
from sim.producer import Producer  # noqa: E402
from sim.scenario import parse_scenario  # noqa: E402
from sim.simulation import Simulation  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--minutes", type=int, default=2)
    ap.add_argument("--rate", type=int, default=10_000)
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))

    acc = [0.0, 0, 0, 0]      # drain seconds, calls, batches waiting summed over the calls, at most
    drain = Producer._drain_rounds

    def timed(self, now):
        waiting = self.queued if hasattr(self, "queued") else len(self.accumulator)
        acc[1] += 1
        acc[2] += waiting
        acc[3] = max(acc[3], waiting)
        t = time.perf_counter()
        try:
            return drain(self, now)
        finally:
            acc[0] += time.perf_counter() - t

    Producer._drain_rounds = timed
    sim = Simulation(parse_scenario(scenario_text(args.brokers, args.partitions, args.minutes, args.rate), "<bench>"),
                     sink=lambda r: None, column_sink=lambda b: None)
    sim.start()
    sim.run_until(5_000)
    acc[:] = [0.0, 0, 0, 0]
    t0, c0 = time.perf_counter(), time.process_time()
    sim.run_until(args.minutes * 60_000)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{ROOT}: after the set-up {wall:.2f} wall s ({cpu:.2f} CPU s), {sim.loop.events_run:,} events; drain "
          f"{acc[0]:.3f} s in {acc[1]:,} calls, {acc[2]:,} batches waiting summed over the calls, at most {acc[3]:,}")


if __name__ == "__main__":
    main()
