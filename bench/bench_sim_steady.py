"""Benchmark: the simulator's steady state alone — wall µs per event over simulated seconds after the set-up.

Run: .venv/bin/python bench/bench_sim_steady.py [--partitions 100000] [--from-ms 6000] [--until-ms 36000]

The workload of bench_simulation.py without faults (30 brokers, RF 3, 10,000 msg/s acks=all); the run goes to
--from-ms untimed (topics created, every replica's first LeaderAndIsr and fetch), then --from-ms .. --until-ms is
timed: wall and process CPU seconds, events, µs per event. For A/B comparisons of the event path (run the two
versions one after the other on an idle machine, twice each, interleaved).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--from-ms", type=int, default=6_000)
    ap.add_argument("--until-ms", type=int, default=36_000)
    args = ap.parse_args()
    import structlog

    from bench_simulation import scenario_text
    from sim.scenario import parse_scenario
    from sim.simulation import Simulation
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    minutes = -(-args.until_ms // 60_000)
    scenario = parse_scenario(scenario_text(30, args.partitions, minutes, 10_000, False), "<bench>")
    sim = Simulation(scenario, sink=lambda rec: None, column_sink=lambda batch: None)
    sim.start()
    sim.run_until(args.from_ms)
    events = sim.loop.events_run
    wall, cpu = time.perf_counter(), time.process_time()
    sim.run_until(args.until_ms)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = sim.loop.events_run - events
    simulated = (args.until_ms - args.from_ms) / 1000
    print(f"steady state, {args.partitions:,} partitions: {simulated:.0f} simulated s in {wall:.2f} wall s = "
          f"{simulated / wall:.1f}x; {n:,} events, {wall / n * 1e6:.1f} us per event (CPU {cpu:.2f} s), "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
