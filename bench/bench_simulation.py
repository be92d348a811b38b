"""Benchmark: simulated seconds per wall second of the cluster simulator (issue 5, §9).

A cluster of ``--brokers`` (30) brokers and ``--partitions`` (100,000) partitions, RF 3, in topics
of 10,000 partitions, with a produce workload (``--rate`` messages/s, acks=all, 1 KiB messages,
min.insync.replicas 2) and, every simulated minute, a broker failure (kill -9) and its recovery
(restart 30 s later). Reports the wall time of the set-up (the brokers starting, the topics being
created and every replica becoming leader or follower) apart from the steady part, and the
simulated seconds per wall second of the whole run and of the part after the set-up.
Records go to a sink that only counts them, columnar batches to a column sink that counts their
records (as ``kcontroller simulate`` hands them to the log writer's ``append_columns``; the log writer is
measured in bench_log.py).

    .venv/bin/python bench/bench_simulation.py [--partitions 100000] [--brokers 30] [--minutes 5]
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from bench.sim_baseline import aggregate_run  # noqa: E402
from sim.scenario import parse_scenario  # noqa: E402
from sim.simulation import Simulation  # noqa: E402


def scenario_text(brokers: int, partitions: int, minutes: int, rate: int, faults: bool = True) -> str:
    per_topic = min(partitions, 10_000)
    topics = [f"  - {{name: t{i}, partitions: {min(per_topic, partitions - i * per_topic)}, "
              f"replication_factor: 3, configs: {{min.insync.replicas: 2}}}}"
              for i in range((partitions + per_topic - 1) // per_topic)]
    steps = []
    for m in range(minutes if faults else 0):
        victim = m % brokers
        steps.append(f"  - {{at: {m * 60 + 10}s, action: kill_broker, broker: {victim}}}")
        steps.append(f"  - {{at: {m * 60 + 40}s, action: start_broker, broker: {victim}}}")
    names = ", ".join(f"t{i}" for i in range(len(topics)))
    return f"""name: bench-{brokers}x{partitions}
seed: 1
duration: {minutes * 60}s
cluster:
  brokers: [{", ".join(str(b) for b in range(brokers))}]
  configs: {{auto.leader.rebalance.enable: true}}
topics:
{chr(10).join(topics)}
workload:
  producers:
    - {{topics: [{names}], rate_per_s: {rate}, acks: all, message_bytes: 1024}}
steps:{"" if steps else " []"}
{chr(10).join(steps)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--minutes", type=int, default=5)
    ap.add_argument("--rate", type=int, default=10_000, help="messages per second (default: %(default)s)")
    ap.add_argument("--no-faults", action="store_true", help="no broker failures: the steady state alone")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    scenario = parse_scenario(scenario_text(args.brokers, args.partitions, args.minutes, args.rate,
                                           not args.no_faults), "<bench>")
    count = [0]

    def sink(rec) -> None:
        count[0] += 1

    def column_sink(batch) -> None:
        count[0] += batch.n

    sim = Simulation(scenario, sink=sink, column_sink=column_sink)
    t0 = time.perf_counter()
    setup_until = 5_000
    marks = {}

    def progress(now_ms: int, duration_ms: int) -> None:
        if "setup" not in marks and now_ms >= setup_until:
            marks["setup"] = (time.perf_counter(), now_ms)

    sim.run(progress)
    t1 = time.perf_counter()
    summary = sim.finish()
    total = t1 - t0
    simulated = scenario.duration_ms / 1000
    print(f"# {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} cores; {args.brokers} brokers, {args.partitions:,} partitions (RF 3), "
          f"{args.rate:,} msg/s acks=all, " + ("no faults" if args.no_faults else
                                               "a broker killed and restarted every simulated minute"))
    print(f"whole run: {simulated:,.0f} simulated s in {total:,.1f} wall s = {simulated / total:,.1f} simulated s "
          f"per wall s; {sim.loop.events_run:,} events, {count[0]:,} records")
    if "setup" in marks:
        ts, now_ms = marks["setup"]
        rest = t1 - ts
        print(f"set-up (first {now_ms / 1000:.1f} simulated s: brokers, topics, every replica's first "
              f"LeaderAndIsr): {ts - t0:,.1f} wall s")
        print(f"after set-up: {simulated - now_ms / 1000:,.0f} simulated s in {rest:,.1f} wall s = "
              f"{(simulated - now_ms / 1000) / rest:,.1f} simulated s per wall s")
    p = summary["produce"]
    print(f"produced {p['sent_messages']:,}, acknowledged {p['acknowledged_messages']:,}, errors {p['errors']}; "
          f"offline partition-s {summary['offline_partition_seconds']:,.0f}, unavailable to clients "
          f"{summary['unavailable_partition_seconds']:,.0f}, elections {summary['elections']}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    base = aggregate_run(args.brokers, args.partitions, args.minutes, args.rate, faults=not args.no_faults)
    rate = base["simulated_s"] / base["wall_s"]
    print(f"baseline (aggregate numpy model, bench/sim_baseline.py): {base['simulated_s']:,.0f} simulated s in "
          f"{base['wall_s']:,.2f} wall s = {rate:,.0f} simulated s per wall s (set-up {base['setup_s']:.2f} s); "
          f"sent {base['sent']:,}, acknowledged {base['acknowledged']:,}, elections {base['elections']:,}")
    print(f"ratio: the simulator runs at 1/{rate / (simulated / total):,.0f} of the baseline's speed")


if __name__ == "__main__":
    main()
