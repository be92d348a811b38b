"""Benchmark of the embedded ZooKeeper and the KafkaZkClient on a million partition ``/state`` znodes.

    .venv/bin/python bench/bench_zookeeper.py                 # 1,000,000 partitions, model and client
    .venv/bin/python bench/bench_zookeeper.py --partitions 200000 --model-only   # or --client-only
    .venv/bin/python bench/bench_zookeeper.py --columns-only  # the /state columns of 100,000 partitions

Prints wall times (best of ``--runs`` for the reads) and the process RSS after each phase. The
model phase creates ``/brokers/topics/t/partitions/<p>`` and ``.../<p>/state`` directly with
``ZooKeeper.create``, reads every ``/state`` back (one call per znode, then one batch), and rewrites
every ``/state`` with a fenced multi (one call per multi, then ``iter_multi``); the client phase
does what a controller does (fenced ``create_partition_states``, ``get_partition_states``, fenced
``update_leader_and_isr``) on a fresh tree. The columns phase (``--columns N``, 100,000 partitions of
one topic by default) compares the batch path's column methods on the model's /state table with the
per-partition requests they stand for: the read (``PartitionStateColumnsMixin``: one
``get_data_and_version_many`` and a decode per partition, vs ``read_partition_state_columns``) and the
fenced conditional write (``update_leader_and_isr``: one multi per partition through ``iter_multi``, vs
``write_leader_and_isr_columns``), each printed with the ratio.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from controller.store.kafka_zk_client import KafkaZkClient  # noqa: E402
from controller.store.state_columns import PartitionStateColumnsMixin  # noqa: E402
from controller.store.zk_data import encode_partition_state  # noqa: E402
from controller.store.zookeeper import CheckOp, SetDataOp, ZooKeeper  # noqa: E402
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(label: str, fn, n: int, runs: int = 1) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    best = min(times)
    others = ", ".join(f"{t:.3f}" for t in times)
    print(f"{label:<46} {best:7.3f} s  {n / best / 1000:8.1f} k/s  (runs: {others})  RSS {rss_mb():7.0f} MB")
    return best


def bench_model(n: int, runs: int) -> None:
    print(f"--- ZooKeeper model: {n:,} partitions ---")
    base = rss_mb()
    zk = ZooKeeper(lambda: 1_700_000_000_000)
    sid = zk.connect(18000)
    zk.create_recursive(sid, "/brokers/topics/t/partitions", None)
    data = encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3)), 1))

    def create():
        c = zk.create
        for p in range(n):
            path = f"/brokers/topics/t/partitions/{p}"
            c(sid, path, None)
            c(sid, path + "/state", data)

    timed("create 2 znodes per partition (/p, /p/state)", create, n)
    print(f"{'':<46} {len(zk):,} znodes, {(rss_mb() - base) * 1024 * 1024 / n:.0f} bytes/partition over the start")

    def read_stat():
        g = zk.get_data
        for p in range(n):
            g(sid, f"/brokers/topics/t/partitions/{p}/state")

    def read_version():
        g = zk.get_data_and_version
        for p in range(n):
            g(sid, f"/brokers/topics/t/partitions/{p}/state")

    timed("get_data (data, Stat)", read_stat, n, runs)
    timed("get_data_and_version", read_version, n, runs)
    paths = [f"/brokers/topics/t/partitions/{p}/state" for p in range(n)]
    timed("get_data_and_version_many (one batch)", lambda: zk.get_data_and_version_many(sid, paths), n, runs)
    zk.create(sid, "/controller_epoch", b"1")
    check = CheckOp("/controller_epoch", 0)

    def fenced_multi():
        m = zk.multi
        for path in paths:
            m(sid, (check, SetDataOp(path, data)))

    def fenced_multi_many():
        for _ in zk.iter_multi(sid, ((check, SetDataOp(path, data)) for path in paths)):
            pass

    timed("multi (check + set_data) per /state", fenced_multi, n)
    timed("iter_multi of the same multis", fenced_multi_many, n)
    children = []
    timed("get_children of /partitions (sorted)",
          lambda: children.append(zk.get_children(sid, "/brokers/topics/t/partitions")), n, 1)
    assert len(children[0]) == n


def bench_client(n: int, runs: int) -> None:
    print(f"--- KafkaZkClient: {n:,} partitions ---")
    zk = ZooKeeper(lambda: 1_700_000_000_000)
    client = KafkaZkClient(zk, clock=lambda: 1_700_000_000_000, rng=random.Random(0))
    client.create_top_level_paths()
    client.register_broker(1, "h1", 9092)
    epoch, version = client.register_controller_and_increment_controller_epoch(1)
    client.create_topic_with_assignment("t", {}, {p: [1, 2, 3] for p in range(n)})
    tps = [("t", p) for p in range(n)]
    states = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3)), epoch) for tp in tps}
    timed("create_partition_states (fenced)", lambda: client.create_partition_states(states, version), n)
    got = {}
    timed("get_partition_states", lambda: got.update(client.get_partition_states(tps)), n, runs)
    assert all(v is not None for v in got.values())
    updates = {tp: LeaderAndIsr(2, 1, (2, 3), partition_epoch=0) for tp in tps}
    result = []
    timed("update_leader_and_isr (fenced)",
          lambda: result.append(client.update_leader_and_isr(updates, epoch, version)), n)
    assert len(result[0].finished) == n and not result[0].to_retry


def bench_columns(n: int, runs: int) -> None:
    print(f"--- /state as columns: {n:,} partitions of one topic ---")
    zk = ZooKeeper(lambda: 1_700_000_000_000)
    client = KafkaZkClient(zk, clock=lambda: 1_700_000_000_000, rng=random.Random(0))
    client.create_top_level_paths()
    epoch, version = client.register_controller_and_increment_controller_epoch(1)
    zk.create(client.session_id, "/brokers/topics/t", b"{}")
    tps = [("t", p) for p in range(n)]
    states = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3)), epoch) for tp in tps}
    timed("create_partition_states (/state on the table)",
          lambda: client.create_partition_states(states, version), n)
    parts = np.arange(n, dtype=np.int32)
    cols = []
    mixin = timed("read: per partition (the mixin)",
                  lambda: cols.append(PartitionStateColumnsMixin.read_partition_state_columns(client, "t", parts)),
                  n, runs)
    table = timed("read: read_partition_state_columns",
                  lambda: cols.append(client.read_partition_state_columns("t", parts)), n, runs)
    assert all((a == b).all() for a, b in zip(cols[0], cols[-1]))
    print(f"{'':<46} read: the table is {mixin / table:,.0f}x faster")

    def per_partition():
        r = client.read_partition_state_columns("t", parts)
        updates = {tp: LeaderAndIsr(2, le + 1, (2, 3), partition_epoch=v)
                   for tp, le, v in zip(tps, r.leader_epoch.tolist(), r.version.tolist())}
        t0 = time.perf_counter()
        result = client.update_leader_and_isr(updates, epoch, version)
        took = time.perf_counter() - t0
        assert len(result.finished) == n and not result.to_retry
        return took

    def columns():
        r = client.read_partition_state_columns("t", parts)
        isr = np.full((n, 2), 2, dtype=np.int32)
        isr[:, 1] = 3
        args = ("t", parts, np.full(n, 3, dtype=np.int32), r.leader_epoch + 1, isr, r.recovery, r.version, epoch,
                version)
        t0 = time.perf_counter()
        result = client.write_leader_and_isr_columns(*args)
        took = time.perf_counter() - t0
        assert result.check_failed is None and not result.errors and (result.version == r.version + 1).all()
        return took

    def best(label, fn):
        times = [fn() for _ in range(runs)]
        b = min(times)
        print(f"{label:<46} {b:7.3f} s  {n / b / 1000:8.1f} k/s  (runs: {', '.join(f'{t:.3f}' for t in times)})"
              f"  RSS {rss_mb():7.0f} MB")
        return b

    one = best("write: update_leader_and_isr (per partition)", per_partition)
    col = best("write: write_leader_and_isr_columns", columns)
    print(f"{'':<46} write: the table is {one / col:,.0f}x faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model-only", action="store_true")
    ap.add_argument("--client-only", action="store_true")
    ap.add_argument("--columns", type=int, default=100_000, help="partitions of the columns phase")
    ap.add_argument("--columns-only", action="store_true")
    ap.add_argument("--no-gc", action="store_true", help="disable the cyclic garbage collector")
    args = ap.parse_args()
    if args.no_gc:
        gc.disable()
    print(f"Python {sys.version.split()[0]}, gc {'off' if args.no_gc else 'on'}, start RSS {rss_mb():.0f} MB")
    if not args.client_only and not args.columns_only:
        bench_model(args.partitions, args.runs)
    gc.collect()
    if not args.model_only and not args.columns_only:
        bench_client(args.partitions, args.runs)
    gc.collect()
    if not args.model_only and not args.client_only:
        bench_columns(args.columns, args.runs)


if __name__ == "__main__":
    main()
