"""Benchmark: the batch path against the per-partition reference path, in one checkout.

Builds a cluster (30 brokers, topics of 10,000 partitions, RF 3, records to a LogWriter), freezes the
garbage collector's view of the set-up (gc.freeze), kills broker 5 and lets its session expire; prints
the process CPU time of creating the partitions and of the controller's reaction to the failure, per
partition. Run it once per path: both paths write the same records (tests/test_batch_differential.py).

    .venv/bin/python bench/bench_batch_paths.py --partitions 200000 --path batch
    .venv/bin/python bench/bench_batch_paths.py --partitions 200000 --path reference
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from controller.embedding.cluster import Cluster  # noqa: E402
from events.log import FsyncPolicy, LogWriter  # noqa: E402
from statemachines.partition_state_machine import PartitionStateMachine  # noqa: E402
from statemachines.replica_state_machine import ReplicaStateMachine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--victim", type=int, default=5)
    ap.add_argument("--path", choices=("batch", "reference"), default="batch")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    ReplicaStateMachine.batch_path = PartitionStateMachine.batch_path = args.path == "batch"
    with tempfile.TemporaryDirectory() as d, LogWriter(d, fsync=FsyncPolicy.none()) as writer:
        cluster = Cluster(seed=1, sink=writer.append)
        cluster.start_brokers(range(args.brokers))
        t0 = time.process_time()
        for i in range(args.partitions // 10_000):
            cluster.create_topic(f"topic-{i:03d}", 10_000, 3)
        create = time.process_time() - t0
        gc.collect()
        gc.freeze()
        cluster.kill_broker(args.victim, at=10_000)
        t0 = time.process_time()
        cluster.advance_to(10_000 + cluster.session_timeout_ms)
        failure = time.process_time() - t0
        hosted = len(cluster.controller.context.partitions_on_broker(args.victim))
    print(f"{args.partitions:,} partitions, {args.path} path: create {create:.2f} s CPU "
          f"({create / args.partitions * 1e6:.0f} us per partition); broker {args.victim} fails: {failure:.2f} s CPU "
          f"({failure / hosted * 1e6:.0f} us per hosted partition, {hosted:,} hosted)")


if __name__ == "__main__":
    main()
