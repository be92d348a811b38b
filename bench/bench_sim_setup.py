"""Benchmark: the simulator's set-up alone — brokers starting, topics created, every replica's first LeaderAndIsr
and first fetches — at production size (issue 14: "a set-up of 1,000,000 partitions takes seconds").

Run: .venv/bin/python bench/bench_sim_setup.py [--partitions 1000000] [--until-ms 5000]

The workload of bench_simulation.py (30 brokers, RF 3, topics of 10,000 partitions, 10,000 msg/s acks=all); the
run goes from 0 to --until-ms (bench_simulation.py's set-up mark) and reports wall and process CPU seconds, the
events run, and the peak RSS, beside the set-up of the aggregate numpy baseline (bench/sim_baseline.py) in the same
run and the ratio. Compare versions by CPU seconds or interleaved runs: the machine is shared.
"""
from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--until-ms", type=int, default=5_000)
    args = ap.parse_args()
    import structlog

    from bench_simulation import scenario_text
    from sim_baseline import aggregate_run
    from sim.scenario import parse_scenario
    from sim.simulation import Simulation
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    scenario = parse_scenario(scenario_text(args.brokers, args.partitions, 1, 10_000), "<bench>")
    wall, cpu = time.perf_counter(), time.process_time()
    sim = Simulation(scenario, sink=lambda rec: None, column_sink=lambda batch: None)
    sim.start()
    sim.run_until(args.until_ms)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"set-up, {args.brokers} brokers, {args.partitions:,} partitions: {args.until_ms / 1000:.1f} simulated s in "
          f"{wall:.2f} wall s (CPU {cpu:.2f} s); {sim.loop.events_run:,} events; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB; load {os.getloadavg()[0]:.1f}")
    base = aggregate_run(args.brokers, args.partitions, 1, 10_000)["setup_s"]
    print(f"baseline (aggregate numpy model) set-up: {base:.3f} wall s; the simulator takes {wall / base:,.0f}x as long")


if __name__ == "__main__":
    main()
