"""Benchmark: validated transitions per second through the state machines, and context memory.

Creates a topic of N partitions (replication factor 3) through Kafka's onNewPartitionCreation
sequence, then fails one broker (offline partitions, offline election, OfflineReplica with ISR
shrink), and counts the transition records emitted per second of wall time. Requests and all
other records are produced too (they are part of the work), into an in-memory journal.
Then measures the memory a context needs for --memory-partitions partitions.

    .venv/bin/python bench/bench_state_machines.py [--partitions 200000] [--brokers 12]
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from controller.assignment import assign_replicas_to_brokers  # noqa: E402
from controller.context import ControllerContext  # noqa: E402
from controller.demo import DemoEngine  # noqa: E402
from events.records import PartitionTransition, ReplicaTransition  # noqa: E402
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch  # noqa: E402
from statemachines.states import ONLINE_PARTITION, ONLINE_REPLICA  # noqa: E402


class CountingSink:
    """Counts records by type and keeps nothing (what a log writer's append costs is measured elsewhere)."""

    def __init__(self) -> None:
        self.transitions = 0
        self.records = 0

    def __call__(self, rec) -> None:
        self.records += 1
        t = type(rec)
        if t is ReplicaTransition or t is PartitionTransition:
            self.transitions += 1


def bench_transitions(partitions: int, brokers: int) -> None:
    sink = CountingSink()
    engine = DemoEngine(0, sink)
    ctx = engine.context
    ctx.epoch = engine.store.controller_epoch_zk_version = ctx.epoch_zk_version = 1
    engine.journal.set_writer(0, 1)
    ctx.add_live_brokers({b: 100 + b for b in range(brokers)})
    assignment = assign_replicas_to_brokers(list(range(brokers)), partitions, 3, fixed_start_index=0)
    ctx.add_topic("bench", assignment)
    tps = ctx.partitions_for_topic("bench")

    t0 = time.perf_counter()
    engine.on_new_partition_creation(tps)
    t1 = time.perf_counter()
    created = sink.transitions
    print(f"create {partitions:,} partitions x RF 3: {created:,} transitions, {sink.records:,} records in "
          f"{t1 - t0:.2f} s -> {created / (t1 - t0):,.0f} transitions/s")

    before_t, before_r = sink.transitions, sink.records
    ctx.remove_live_brokers([0])
    t2 = time.perf_counter()
    engine.on_broker_failure([0])
    t3 = time.perf_counter()
    failed = sink.transitions - before_t
    print(f"broker 0 fails: {failed:,} transitions, {sink.records - before_r:,} records in {t3 - t2:.2f} s -> "
          f"{failed / (t3 - t2):,.0f} transitions/s")

    # Pure replica transitions with no requests: Online -> Offline -> ... style bookkeeping.
    before = sink.transitions
    reps = ctx.replicas_on_brokers([1])
    from statemachines.states import REPLICA_DELETION_INELIGIBLE, OFFLINE_REPLICA
    t4 = time.perf_counter()
    engine.replica_state_machine.handle_state_changes(reps, REPLICA_DELETION_INELIGIBLE)  # refused: Online -> Inelig.
    t5 = time.perf_counter()
    print(f"{len(reps):,} refused transitions (OnlineReplica -> ReplicaDeletionIneligible) in {t5 - t4:.2f} s -> "
          f"{len(reps) / (t5 - t4):,.0f}/s")
    total = sink.transitions - before + created + failed
    total_time = (t1 - t0) + (t3 - t2)
    print(f"overall: {created + failed:,} validated transitions in {total_time:.2f} s -> "
          f"{(created + failed) / total_time:,.0f} transitions/s")
    del total, OFFLINE_REPLICA


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def bench_memory(partitions: int, brokers: int) -> None:
    gc.collect()
    base = rss_mb()
    ctx = ControllerContext()
    ctx.add_live_brokers({b: b for b in range(brokers)})
    topics = 1000
    per_topic = partitions // topics
    for t in range(topics):
        name = f"topic-{t:04d}"
        assignment = assign_replicas_to_brokers(list(range(brokers)), per_topic, 3, fixed_start_index=t % brokers)
        ctx.add_topic(name, assignment)
        for p, replicas in enumerate(assignment):
            tp = (name, p)
            ctx.put_partition_state(tp, ONLINE_PARTITION)
            ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(
                LeaderAndIsr(replicas[0], 3, replicas, 0, 5), 1))
            for r in replicas:
                ctx.put_replica_state((name, p, r), ONLINE_REPLICA)
    gc.collect()
    used = rss_mb() - base
    print(f"context with {topics * per_topic:,} partitions x RF 3 ({topics} topics), states and leadership set: "
          f"{used:,.0f} MB RSS ({used * 2**20 / (topics * per_topic):,.0f} bytes/partition)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--brokers", type=int, default=12)
    ap.add_argument("--memory-partitions", type=int, default=1_000_000)
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))  # silence: refusals are measured, not printed
    print(f"# {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} cpus")
    bench_transitions(args.partitions, args.brokers)
    bench_memory(args.memory_partitions, args.brokers)
    print(f"# peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
