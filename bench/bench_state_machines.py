"""Benchmark: validated transitions per second through the state machines, and context memory.

Runs each step of Kafka's onNewPartitionCreation for a topic of N partitions (replication
factor 3), then a broker failure (offline partitions, offline election, OfflineReplica with ISR
shrink) and a batch of refused transitions, and reports validated transitions per second of
wall time for each step. Requests and every other record are produced too (they are part of
the work), into a sink that counts them. Then measures the memory a context needs for
--memory-partitions partitions.

    .venv/bin/python bench/bench_state_machines.py [--partitions 200000] [--brokers 12] [--no-gc]
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
from controller.state_machine_harness import StateMachineHarness  # noqa: E402
from events.records import PartitionTransition, ReplicaTransition  # noqa: E402
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch  # noqa: E402
from statemachines.partition_state_machine import OfflinePartitionLeaderElectionStrategy  # noqa: E402
from statemachines.states import (  # noqa: E402
    NEW_PARTITION, NEW_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_SUCCESSFUL,
)


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


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_transitions(partitions: int, brokers: int, repeat: int) -> None:
    """Each step of onNewPartitionCreation and of a broker failure, best of ``repeat`` fresh runs."""
    best: dict[str, tuple[float, int, int]] = {}
    for _ in range(repeat):
        sink = CountingSink()
        engine = StateMachineHarness(0, sink, send=lambda request: None)  # requests leave the controller
        ctx = engine.context
        ctx.epoch = engine.store.controller_epoch_zk_version = ctx.epoch_zk_version = 1
        engine.journal.set_writer(0, 1)
        ctx.add_live_brokers({b: 100 + b for b in range(brokers)})
        ctx.add_topic("bench", assign_replicas_to_brokers(list(range(brokers)), partitions, 3, fixed_start_index=0))
        tps = ctx.partitions_for_topic("bench")
        reps = ctx.replicas_for_partition(tps)
        psm, rsm = engine.partition_state_machine, engine.replica_state_machine
        offline = OfflinePartitionLeaderElectionStrategy(False)
        steps = [
            ("NonExistentPartition -> NewPartition", lambda: psm.handle_state_changes(tps, NEW_PARTITION)),
            ("NonExistentReplica -> NewReplica", lambda: rsm.handle_state_changes(reps, NEW_REPLICA)),
            ("NewPartition -> OnlinePartition (leader init, LeaderAndIsr + UpdateMetadata)",
             lambda: psm.handle_state_changes(tps, ONLINE_PARTITION, offline)),
            ("NewReplica -> OnlineReplica", lambda: rsm.handle_state_changes(reps, ONLINE_REPLICA)),
            ("broker 0 fails: Offline partitions, offline election, OfflineReplica with ISR shrink",
             lambda: (ctx.remove_live_brokers([0]), engine.on_broker_failure([0]))),
            ("refused OnlineReplica -> ReplicaDeletionSuccessful",
             lambda: rsm.handle_state_changes(ctx.replicas_on_brokers([1]), REPLICA_DELETION_SUCCESSFUL)),
        ]
        for name, fn in steps:
            t0, r0 = sink.transitions, sink.records
            elapsed = _timed(fn)
            n = sink.transitions - t0 or len(ctx.replicas_on_brokers([1]))
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, n, sink.records - r0)
    total_t = total_n = 0
    for name, (elapsed, n, records) in best.items():
        print(f"{name:<88} {n:>9,} in {elapsed:5.2f} s = {n / elapsed:>9,.0f}/s  ({records:,} records)")
        total_t += elapsed
        total_n += n
    print(f"{'all steps':<88} {total_n:>9,} in {total_t:5.2f} s = {total_n / total_t:>9,.0f}/s")


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
    ap.add_argument("--repeat", type=int, default=3, help="fresh runs per step; the best is reported")
    ap.add_argument("--no-gc", action="store_true", help="disable Python's cyclic GC while measuring")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))  # silence: refusals are measured, not printed
    print(f"# {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} cpus")
    if args.no_gc:
        gc.disable()
    print(f"# {args.partitions:,} partitions x RF 3 on {args.brokers} brokers; GC {'off' if args.no_gc else 'on'}; "
          f"best of {args.repeat}")
    # Memory first: RSS deltas are only meaningful before other work has grown and freed the heap.
    bench_memory(args.memory_partitions, args.brokers)
    bench_transitions(args.partitions, args.brokers, args.repeat)
    print(f"# peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
