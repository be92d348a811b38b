"""Benchmark: the controller's broker-failure handling, and replay, on a Cluster.

Builds a cluster (default 30 brokers, topics of 10,000 partitions, RF 3), kills one broker and
lets its session time out; reports the wall time of the controller's reaction (elections,
ISR shrinks, requests, records) per affected partition, and how much of it the cyclic GC took.
Then snapshots a cluster, restores it and kills its controller (failover: the new controller
rebuilds its context from the store).
Then writes a run to an event log and replays it, reporting records per second.

    .venv/bin/python bench/bench_controller.py [--partitions 1000000] [--brokers 30] [--skip-replay]
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from controller.embedding.cluster import Cluster  # noqa: E402
from controller.embedding.replay import replay_log  # noqa: E402
from events.log import FsyncPolicy, LogWriter  # noqa: E402
from gc_watch import GcWatch  # noqa: E402  (bench/, the script's own folder)


def build(partitions: int, brokers: int, sink) -> tuple[Cluster, float]:
    t0 = time.perf_counter()
    cluster = Cluster(seed=1, sink=sink)
    cluster.start_brokers(range(brokers))
    per_topic = min(10_000, partitions)
    for i in range(partitions // per_topic):
        cluster.create_topic(f"topic-{i:03d}", per_topic, 3)
    return cluster, time.perf_counter() - t0


def bench_broker_failure(partitions: int, brokers: int, victim: int) -> None:
    cluster, setup = build(partitions, brokers, lambda rec: None)
    ctx = cluster.controller.context
    led = sum(1 for tp in ctx.all_partitions() if ctx.partition_leader(tp) == victim)
    hosted = len(ctx.partitions_on_broker(victim))
    print(f"setup: {partitions:,} partitions x RF 3 on {brokers} brokers in {setup:.1f} s "
          f"(RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB)")
    # At 10 s: after the controller's first automatic leader-rebalance check (5 s after its failover),
    # so that the timed window holds the failure handling only (the next check is at 305 s).
    cluster.kill_broker(victim, at=10_000)
    timeout = cluster.config.get_int("zookeeper.session.timeout.ms")
    with GcWatch() as collector:
        t0 = time.perf_counter()
        cluster.advance_to(10_000 + timeout)
        elapsed = time.perf_counter() - t0
    after = cluster.controller.context
    moved = sum(1 for tp in after.all_partitions() if after.partition_leader(tp) not in (victim, -1))
    print(f"broker {victim} fails: {led:,} leaders and {hosted:,} replicas on it; controller done in "
          f"{elapsed:.2f} s = {elapsed / led * 1e6:,.1f} us per led partition, "
          f"{elapsed / hosted * 1e6:,.1f} us per hosted partition ({moved:,} partitions led elsewhere after)")
    print(f"  of which cyclic GC: {collector.seconds:.2f} s ({collector.full} full collections, "
          f"{len(gc.get_objects()):,} objects tracked after)")


def bench_failover(partitions: int, brokers: int) -> None:
    """Snapshot a cluster, restore it, and time the controller failover that rebuilds the context."""
    from controller.embedding.cluster_snapshot import cluster_state, restore_cluster
    cluster, _ = build(partitions, brokers, lambda rec: None)
    t0 = time.perf_counter()
    state = cluster_state(cluster)
    t1 = time.perf_counter()
    restored = restore_cluster(state, sink=lambda rec: None)
    t2 = time.perf_counter()
    old = restored.controller_id
    restored.kill_broker(old, at=restored.now + 1)
    timeout = restored.config.get_int("zookeeper.session.timeout.ms")
    t3 = time.perf_counter()
    restored.advance_to(restored.now + timeout + 1)
    t4 = time.perf_counter()
    new = restored.controller
    assert new is not None and new.broker_id != old
    print(f"snapshot of {partitions:,} partitions: {len(state) / 2**20:,.0f} MB in {t1 - t0:.1f} s, restored in "
          f"{t2 - t1:.1f} s; controller {old} killed, broker {new.broker_id} took over (epoch {new.epoch}) and "
          f"rebuilt its context and elected leaders in {t4 - t3:.1f} s "
          f"(RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB)")


def bench_replay(partitions: int, brokers: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        with LogWriter(d, fsync=FsyncPolicy.none()) as writer:
            cluster, _ = build(partitions, brokers, writer.append)
            cluster.kill_broker(1, at=1_000)
            cluster.advance_to(30_000)
            cluster.start_broker(1, at=40_000)
            cluster.checkpoint()
            records = cluster.journal.next_offset
        t0 = time.perf_counter()
        result = replay_log(d)
        elapsed = time.perf_counter() - t0
        assert result.ok, result.divergence
        print(f"replay: {records:,} records ({result.inputs} inputs) re-executed and compared in {elapsed:.2f} s "
              f"= {records / elapsed:,.0f} records/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--victim", type=int, default=5)
    ap.add_argument("--replay-partitions", type=int, default=50_000)
    ap.add_argument("--skip-replay", action="store_true")
    ap.add_argument("--failover-partitions", type=int, default=100_000)
    ap.add_argument("--skip-failover", action="store_true")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus")
    bench_broker_failure(args.partitions, args.brokers, args.victim)
    if not args.skip_failover:
        bench_failover(args.failover_partitions, args.brokers)
    if not args.skip_replay:
        bench_replay(args.replay_partitions, args.brokers)


if __name__ == "__main__":
    main()
