"""Benchmark: folding the controller's columnar batches into statemachines.cluster_view.ClusterView.

Builds the batches the controller emits for a topic creation (per topic: PartitionTransition
NonExistent -> New, ReplicaTransition NonExistent -> NewReplica per broker, PartitionTransition
New -> Online, ReplicaTransition -> OnlineReplica per broker; the shapes of
statemachines/partition_batch.py emit_partition_transitions and statemachines/replica_batch.py
succeed_columns) and for a broker failure (PartitionTransition Online -> Offline -> Online for the
partitions it led, ReplicaTransition -> OfflineReplica for its replicas, LeaderAndIsrUpdated ISR
shrinks for the others), folds them with ``apply_columns`` and reports the time of each, the
gc-tracked objects the view adds, and the time and size of a ViewSnapshot, a digest and a restore.

Only the public API is used, so the same script measures an older checkout:

    .venv/bin/python bench/bench_view.py [--partitions 1000000] [--failure 100000] [--skip-snapshot]
                                         [--snapshot-format 2]   # the earlier ViewSnapshot format
    PYTHONPATH=/tmp/view-before .venv/bin/python bench/bench_view.py   # the code at another commit
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from events.columns import ColumnBatch, DictColumn, ListColumn  # noqa: E402
from events.records import (  # noqa: E402
    ELECTION_NEW_PARTITION, ELECTION_NONE, ELECTION_OFFLINE, UPDATE_OFFLINE_REPLICA, BrokerStarted,
    ControllerElected, LeaderAndIsrUpdated, LiveBrokersChanged, PartitionTransition, ReplicaTransition, TopicCreated,
)
from statemachines.cluster_view import ClusterView  # noqa: E402
from statemachines.states import (  # noqa: E402
    NEW_PARTITION, NEW_REPLICA, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA,
    ONLINE_PARTITION, ONLINE_REPLICA,
)

RF = 3
PER_TOPIC = 10_000


class Emitter:
    """Consecutive offsets and one header (controller 0, epoch 1) for the batches built."""

    def __init__(self) -> None:
        self.offset = 0

    def batch(self, cls, **columns) -> ColumnBatch:
        b = ColumnBatch.from_columns(cls, self.offset, (0, 1, 1000, self.offset), **columns)
        self.offset += b.n
        return b

    def record(self, cls, **body):
        rec = cls.make(offset=self.offset, controller_id=0, controller_epoch=1, timestamp_ms=1000,
                       cause_offset=self.offset, **body)
        self.offset += 1
        return rec


def list_column(matrix: np.ndarray) -> ListColumn:
    keep = matrix >= 0
    offsets = np.zeros(len(matrix) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return ListColumn(offsets, matrix[keep])


def assignment(topic_index: int, n: int, brokers: int) -> np.ndarray:
    """Round-robin replicas with a shift per replica, as Kafka's assignReplicasToBrokers places them."""
    first = (np.arange(n) + topic_index) % brokers
    return np.stack([(first + 1 + k) % brokers if k else first for k in range(RF)], axis=1).astype(np.int32)


def creation(em: Emitter, partitions: int, brokers: int) -> tuple[list, dict]:
    """Inputs and batches of creating ``partitions`` partitions, topic by topic; and the assignments."""
    out, assignments = [], {}
    for t in range(max(1, partitions // PER_TOPIC)):
        name, n = f"topic-{t:03d}", min(PER_TOPIC, partitions)
        reps = assignment(t, n, brokers)
        assignments[name] = reps
        out.append(em.record(TopicCreated, topic=name, assignment=tuple(map(tuple, reps.tolist())), configs=()))
        parts = np.arange(n, dtype=np.int32)
        topic = DictColumn((name,), np.zeros(n, dtype=np.int32))
        empty = ListColumn(np.zeros(n + 1, dtype=np.int32), np.zeros(0, dtype=np.int32))
        minus = np.full(n, -1, dtype=np.int32)
        zero = np.zeros(n, dtype=np.int32)
        out.append(em.batch(PartitionTransition, topic=topic, partition=parts,
                            from_state=np.full(n, NON_EXISTENT_PARTITION, np.uint8),
                            to_state=np.full(n, NEW_PARTITION, np.uint8), replicas=list_column(reps), leader=minus,
                            leader_epoch=minus, isr=empty, partition_epoch=zero, recovery_state=zero,
                            election=np.full(n, ELECTION_NONE, np.uint8)))
        for frm, to in ((NON_EXISTENT_REPLICA, NEW_REPLICA), (NEW_REPLICA, ONLINE_REPLICA)):
            if to == ONLINE_REPLICA:
                out.append(em.batch(PartitionTransition, topic=topic, partition=parts,
                                    from_state=np.full(n, NEW_PARTITION, np.uint8),
                                    to_state=np.full(n, ONLINE_PARTITION, np.uint8), replicas=list_column(reps),
                                    leader=reps[:, 0], leader_epoch=zero, isr=list_column(reps), partition_epoch=zero,
                                    recovery_state=zero, election=np.full(n, ELECTION_NEW_PARTITION, np.uint8)))
            for b in range(brokers):
                on = np.flatnonzero((reps == b).any(axis=1)).astype(np.int32)
                if len(on):
                    out.append(em.batch(ReplicaTransition, topic=DictColumn((name,), np.zeros(len(on), np.int32)),
                                        partition=on, replica=np.full(len(on), b, np.int32),
                                        from_state=np.full(len(on), frm, np.uint8),
                                        to_state=np.full(len(on), to, np.uint8)))
    return out, assignments


def failure(em: Emitter, assignments: dict, victim: int, brokers: int) -> list:
    """The batches of broker ``victim`` failing (every partition created with leader = first replica)."""
    out = [em.record(LiveBrokersChanged, live_brokers=tuple((b, 100 + b) for b in range(brokers) if b != victim),
                     shutting_down=())]
    for state_from, state_to in ((ONLINE_PARTITION, OFFLINE_PARTITION), (OFFLINE_PARTITION, ONLINE_PARTITION)):
        for name, reps in assignments.items():
            led = np.flatnonzero(reps[:, 0] == victim).astype(np.int32)
            n = len(led)
            if not n:
                continue
            r = reps[led]
            online = state_to == ONLINE_PARTITION
            isr = r[:, 1:] if online else r
            out.append(em.batch(PartitionTransition, topic=DictColumn((name,), np.zeros(n, np.int32)), partition=led,
                                from_state=np.full(n, state_from, np.uint8), to_state=np.full(n, state_to, np.uint8),
                                replicas=list_column(r), leader=r[:, 1] if online else r[:, 0],
                                leader_epoch=np.full(n, 1 if online else 0, np.int32), isr=list_column(isr),
                                partition_epoch=np.full(n, 1 if online else 0, np.int32),
                                recovery_state=np.zeros(n, np.int32),
                                election=np.full(n, ELECTION_OFFLINE if online else ELECTION_NONE, np.uint8)))
    for name, reps in assignments.items():
        follows = np.flatnonzero((reps[:, 1:] == victim).any(axis=1)).astype(np.int32)
        n = len(follows)
        if n:
            r = reps[follows]
            isr = np.where(r == victim, -1, r)
            out.append(em.batch(LeaderAndIsrUpdated, topic=DictColumn((name,), np.zeros(n, np.int32)),
                                partition=follows, leader=r[:, 0], leader_epoch=np.ones(n, np.int32),
                                isr=list_column(isr), partition_epoch=np.ones(n, np.int32),
                                recovery_state=np.zeros(n, np.int32),
                                reason=np.full(n, UPDATE_OFFLINE_REPLICA, np.uint8),
                                replica=np.full(n, victim, np.int32)))
    for name, reps in assignments.items():
        on = np.flatnonzero((reps == victim).any(axis=1)).astype(np.int32)
        n = len(on)
        if n:
            out.append(em.batch(ReplicaTransition, topic=DictColumn((name,), np.zeros(n, np.int32)), partition=on,
                                replica=np.full(n, victim, np.int32), from_state=np.full(n, ONLINE_REPLICA, np.uint8),
                                to_state=np.full(n, OFFLINE_REPLICA, np.uint8)))
    return out


def fold_all(view: ClusterView, items: list) -> float:
    t0 = time.perf_counter()
    for item in items:
        if isinstance(item, ColumnBatch):
            view.apply_columns(item)
        else:
            view.apply(item)
    return time.perf_counter() - t0


def start(em: Emitter, view: ClusterView, brokers: int) -> None:
    for b in range(brokers):
        view.apply(em.record(BrokerStarted, broker_id=b, host=f"b{b}", port=9092, rack=None))
    view.apply(em.record(ControllerElected, epoch_zk_version=1))
    view.apply(em.record(LiveBrokersChanged, live_brokers=tuple((b, 100 + b) for b in range(brokers)),
                         shutting_down=()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--failure", type=int, default=100_000, help="partitions of the broker-failure run")
    parser.add_argument("--brokers", type=int, default=6)
    parser.add_argument("--skip-snapshot", action="store_true")
    parser.add_argument("--snapshot-format", type=int, default=None,
                        help="ViewSnapshot format to write (default: to_snapshot's own)")
    args = parser.parse_args()

    # 1. creation of --partitions partitions
    em = Emitter()
    view = ClusterView()
    start(em, view, args.brokers)
    gc.collect()
    tracked = len(gc.get_objects())
    items, assignments = creation(em, args.partitions, args.brokers)
    del assignments
    records = sum(len(i) if isinstance(i, ColumnBatch) else 1 for i in items)
    elapsed = fold_all(view, items)
    del items
    gc.collect()
    added = len(gc.get_objects()) - tracked
    print(f"creation: {args.partitions:,} partitions x RF {RF} ({records:,} records) folded in {elapsed:.2f} s; "
          f"the view adds {added:,} gc-tracked objects "
          f"(RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB)")
    if not args.skip_snapshot:
        t0 = time.perf_counter()
        snap = view.to_snapshot() if args.snapshot_format is None else view.to_snapshot(format=args.snapshot_format)
        t1 = time.perf_counter()
        ClusterView.from_snapshot(snap)
        t2 = time.perf_counter()
        digest = view.digest()
        t3 = time.perf_counter()
        fmt = snap[1] if snap[:1] == b"\x9f" else "?"   # element 0 of the 15-element array
        print(f"snapshot (format {fmt}): {len(snap) / 2**20:,.1f} MiB written in {t1 - t0:.2f} s, "
              f"read in {t2 - t1:.2f} s; digest in {t3 - t2:.2f} s ({digest[:12]})")
        del snap
    del view
    gc.collect()

    # 2. a broker failure on a view of --failure partitions
    em = Emitter()
    view = ClusterView()
    start(em, view, args.brokers)
    items, assignments = creation(em, args.failure, args.brokers)
    fold_all(view, items)
    del items
    items = failure(em, assignments, 0, args.brokers)
    records = sum(len(i) if isinstance(i, ColumnBatch) else 1 for i in items)
    elapsed = fold_all(view, items)
    print(f"failure: broker 0 of {args.brokers} on {args.failure:,} partitions ({records:,} records) "
          f"folded in {elapsed * 1000:.0f} ms; digest {view.digest()[:12]}")

    # 3. a controller failover on that view: every partition and replica state set at once
    elected = ControllerElected.make(offset=em.offset, controller_id=1, controller_epoch=2, timestamp_ms=2000,
                                     cause_offset=em.offset, epoch_zk_version=2)
    survivors = tuple((b, 100 + b) for b in range(1, args.brokers))
    live = LiveBrokersChanged.make(offset=em.offset + 1, controller_id=1, controller_epoch=2, timestamp_ms=2000,
                                   cause_offset=em.offset, live_brokers=survivors, shutting_down=())
    elapsed = fold_all(view, [elected, live])
    print(f"failover: {args.failure:,} partitions' states initialised in {elapsed * 1000:.0f} ms; "
          f"digest {view.digest()[:12]}")


if __name__ == "__main__":
    main()
