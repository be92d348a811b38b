"""Benchmark of the store's share of topic creation: the store calls a cluster and its controller make to
create ``--topics`` topics of ``--partitions`` partitions each (RF ``--rf`` on ``--brokers`` brokers).

    .venv/bin/python bench/bench_store_create.py                       # 100 topics x 10,000: 1,000,000
    .venv/bin/python bench/bench_store_create.py --topics 10 --api dict    # the per-partition forms only
    .venv/bin/python bench/bench_store_create.py --topics 2 --partitions 500 --digest   # a digest of the tree

Per topic, as ``Cluster`` and ``KafkaController`` make them: the admin's ``validate_topic_create`` and
``create_topic_with_assignment``; the controller's ``get_all_topics_in_cluster`` (watch), the partition
modifications handler's ``exists`` and the topic's assignment read; then the fenced creation of the
partitions' ``/partitions/<p>`` and ``/state`` znodes. ``--api dict`` makes the calls of today's controller
(dicts of per-partition objects: ``get_full_replica_assignment_for_topics``, ``create_partition_states``);
``--api columns`` the column forms (``validate_topic_create`` of a matrix, ``create_topic_with_replica_matrix``,
``get_replica_assignment_columns``, ``create_partition_states_columns``). The arguments (dicts, matrices) are built
outside the timed calls. Prints the seconds and microseconds per partition of each kind of call, their
total (wall time; ``--cpu``: the process's CPU time), the process RSS, and with ``--digest`` a hash of
the tree (``dump``, every Stat and the zxid counter) and the times of a snapshot round trip (``to_dict``,
msgpack, ``from_dict``), to compare two versions of the store.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import msgpack  # noqa: E402
import numpy as np  # noqa: E402
import structlog  # noqa: E402

from controller.store.kafka_zk_client import KafkaZkClient  # noqa: E402
from controller.store.zk_data import topic_path  # noqa: E402
from controller.store.zookeeper import ZooKeeper  # noqa: E402
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def replicas(topic_index: int, n: int, rf: int, brokers: int) -> np.ndarray:
    """(n, rf) int32: distinct brokers per partition, spread as the admin's assignment spreads them."""
    p = np.arange(n, dtype=np.int64)
    first = (p + topic_index) % brokers
    shift = 1 + (p // brokers) % max(1, (brokers - 1) // max(1, rf - 1))
    cols = [(first + k * shift) % brokers for k in range(rf)]
    return np.stack(cols, axis=1).astype(np.int32)


class _Handler:
    def __init__(self, path: str):
        self.path = path


def run(args) -> None:
    clock = time.process_time if args.cpu else time.perf_counter
    now = [1_700_000_000_000]
    zk = ZooKeeper(lambda: now[0])
    rng = random.Random(7)
    admin = KafkaZkClient(zk, clock=lambda: now[0], rng=rng)
    admin.create_top_level_paths()
    brokers = [KafkaZkClient(zk, clock=lambda: now[0], rng=random.Random(b)) for b in range(args.brokers)]
    for b, c in enumerate(brokers):
        c.register_broker(b, "localhost", 9092 + b)
    ctl = brokers[0]
    epoch, epoch_zk_version = ctl.register_controller_and_increment_controller_epoch(0)
    columns = args.api == "columns"
    if columns and not hasattr(ctl, "create_partition_states_columns"):
        sys.exit("this store has no column forms of creation (--api dict)")
    spent = {k: 0.0 for k in ("validate", "create topic", "read assignment", "create states")}
    total_n = args.topics * args.partitions
    base = rss_mb()
    gc_before = gc.get_stats()
    for i in range(args.topics):
        topic = f"topic-{i:04d}"
        matrix = replicas(i, args.partitions, args.rf, args.brokers)
        rows = [tuple(r) for r in matrix.tolist()]
        as_tuples = dict(enumerate(rows))
        as_lists = {p: list(r) for p, r in enumerate(rows)}
        t0 = clock()
        admin.validate_topic_create(topic, matrix if columns else as_tuples)
        t1 = clock()
        if columns:
            admin.create_topic_with_replica_matrix(topic, {}, matrix)
        else:
            admin.create_topic_with_assignment(topic, {}, as_lists)
        now[0] += 1
        t2 = clock()
        ctl.get_all_topics_in_cluster(register_watch=True)
        ctl.register_znode_change_handler_and_check_existence(_Handler(topic_path(topic)))
        if columns:
            read = ctl.get_replica_assignment_columns([topic])
            assert read[topic].replicas.shape == matrix.shape
        else:
            read = ctl.get_full_replica_assignment_for_topics([topic])
            assert len(read) == args.partitions
        t3 = clock()
        leader = matrix[:, 0].copy()
        if columns:
            segment = (topic, np.arange(args.partitions, dtype=np.int32), leader, matrix)
            t4 = clock()
            ctl.create_partition_states_columns([segment], epoch, epoch_zk_version)
        else:
            new = tuple.__new__
            to_create = {(topic, p): new(LeaderIsrAndControllerEpoch, (new(LeaderAndIsr, (r[0], 0, r, 0, 0)), epoch))
                         for p, r in enumerate(rows)}
            t4 = clock()
            ctl.create_partition_states(to_create, epoch_zk_version)
        t5 = clock()
        now[0] += 1
        spent["validate"] += t1 - t0
        spent["create topic"] += t2 - t1
        spent["read assignment"] += t3 - t2
        spent["create states"] += t5 - t4
    collections = sum(s["collections"] for s in gc.get_stats()) - sum(s["collections"] for s in gc_before)
    print(f"--- store calls of creating {args.topics} topics x {args.partitions:,} partitions "
          f"(RF {args.rf}, {args.brokers} brokers), --api {args.api} ---")
    for k, v in spent.items():
        print(f"{k:<18} {v:8.3f} s  {v / total_n * 1e6:7.3f} us/partition")
    total = sum(spent.values())
    print(f"{'total':<18} {total:8.3f} s  {total / total_n * 1e6:7.3f} us/partition   "
          f"({'CPU' if args.cpu else 'wall'})  RSS +{rss_mb() - base:,.0f} MB, {len(zk):,} znodes, "
          f"{collections} GC collections")
    if args.digest:
        h = hashlib.sha256()
        h.update(zk.dump().encode())
        for path, _, stat in zk.nodes():
            h.update(f"{path} {tuple(stat)}".encode())
        h.update(str(zk.last_zxid).encode())
        t0 = clock()
        snap = zk.to_dict()
        t1 = clock()
        packed = msgpack.packb(snap, use_bin_type=True)
        t2 = clock()
        back = ZooKeeper.from_dict(msgpack.unpackb(packed, raw=False, strict_map_key=False), lambda: now[0])
        t3 = clock()
        assert back.dump() == zk.dump()
        print(f"digest {h.hexdigest()[:16]}  to_dict {t1 - t0:.3f} s, msgpack {t2 - t1:.3f} s "
              f"({len(packed) / 1e6:.1f} MB), from_dict {t3 - t2:.3f} s")


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--api", choices=("dict", "columns"), default="dict")
    ap.add_argument("--digest", action="store_true", help="hash the tree and time a snapshot round trip")
    ap.add_argument("--cpu", action="store_true", help="CPU time of the process instead of wall time (a busy machine)")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
