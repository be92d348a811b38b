"""The columnar ClusterView: folding columnar batches as arrays gives the record-by-record result (hypothesis).

Random record sequences (topics created, added to, reassigned, queued for deletion and deleted; partition
transitions incl. NonExistentPartition, leader/ISR updates, replica transitions incl. NonExistentReplica;
failovers; zombie-epoch writers) are folded three ways: record by record into a ClusterView, as
ColumnBatches (runs of same-kind records with one header, through the log's encoding) into a ClusterView,
and record by record into ``Reference``, the dict-of-tuples view this module had before its storage went
columnar. All three must write the same ViewSnapshot bytes (the same state, iteration orders included),
and the two views the same JSON, digest and describe lines.
"""
from __future__ import annotations

import hashlib
import json

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.columns import ColumnBatch, DictColumn
from events.records import (
    NO_LEADER, BrokerStarted, ControllerElected, LeaderAndIsrUpdated, LiveBrokersChanged, PartitionsAdded,
    PartitionTransition, ReplicaAssignmentChanged, ReplicaTransition, TopicCreated, TopicDeletionCompleted,
    TopicQueuedForDeletion,
)
from statemachines.cluster_view import MAX_PARTITIONS, ClusterView
from statemachines.states import (
    NEW_PARTITION, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE,
)

TOPICS = ("a", "b", "c")
BROKERS = range(5)
_STATE_KINDS = frozenset({PartitionTransition.KIND, LeaderAndIsrUpdated.KIND, ReplicaTransition.KIND,
                          LiveBrokersChanged.KIND, ReplicaAssignmentChanged.KIND, TopicQueuedForDeletion.KIND,
                          TopicDeletionCompleted.KIND})


class Reference:
    """ClusterView's fold as it was with dicts of tuples (partition fields as a tuple, replica states as a dict
    per partition), and its ViewSnapshot (format 2) writer: the semantics and orders the columns must keep."""

    def __init__(self) -> None:
        self.controller, self.latest_epoch, self.pending = None, 0, None
        self.known, self.registered, self.shutting_down = set(), {}, frozenset()
        self.partitions: dict = {}
        self.replica_states: dict = {}
        self.configs: dict = {}
        self.assignments: dict = {}
        self.deleting: set = set()
        self.deleted: dict = {}
        self.offset, self.timestamp_ms = -1, None

    def apply(self, rec) -> None:
        handler = getattr(self, "_" + type(rec).__name__, None)
        if handler is not None and not (rec.kind in _STATE_KINDS and rec.controller_id >= 0
                                        and rec.controller_epoch < self.latest_epoch):
            handler(rec)
        self.offset, self.timestamp_ms = rec.offset, rec.timestamp_ms

    def _ControllerElected(self, rec) -> None:
        self.controller = (rec.controller_id, rec.controller_epoch)
        self.latest_epoch = max(self.latest_epoch, rec.controller_epoch)
        self.pending = self.controller

    def _BrokerStarted(self, rec) -> None:
        self.known.add(rec.broker_id)

    def _LiveBrokersChanged(self, rec) -> None:
        self.registered = dict(rec.live_brokers)
        self.shutting_down = frozenset(rec.shutting_down)
        self.known.update(self.registered)
        if self.pending == (rec.controller_id, rec.controller_epoch):
            self.pending = None
            live = {b for b in self.registered if b not in self.shutting_down}
            for topic, assignment in self.assignments.items():
                deleted = self.deleted.pop(topic, {})
                for p, replicas in assignment.items():
                    if p not in self.partitions.get(topic, {}):
                        row = deleted.get(p) or (NEW_PARTITION, replicas, NO_LEADER, -1, (), 0, 0)
                        self.partitions.setdefault(topic, {})[p] = row
            for topic, parts in self.partitions.items():
                states = self.replica_states.setdefault(topic, {})
                for p, pv in parts.items():
                    state = NEW_PARTITION if pv[3] < 0 else ONLINE_PARTITION if pv[2] in live else OFFLINE_PARTITION
                    parts[p] = (state,) + pv[1:]
                    states[p] = {r: ONLINE_REPLICA if r in live else REPLICA_DELETION_INELIGIBLE for r in pv[1]}

    def _TopicCreated(self, rec) -> None:
        self.configs[rec.topic] = dict(rec.configs)
        self.assignments[rec.topic] = {p: tuple(r) for p, r in enumerate(rec.assignment)}

    def _PartitionsAdded(self, rec) -> None:
        if rec.topic not in self.deleting:
            self.assignments.setdefault(rec.topic, {}).update((p, tuple(r)) for p, r in rec.assignment)

    def _ReplicaAssignmentChanged(self, rec) -> None:
        if rec.topic in self.assignments:
            self.assignments[rec.topic][rec.partition] = tuple(rec.replicas)
        pv = self.partitions.get(rec.topic, {}).get(rec.partition)
        if pv is not None:
            self.partitions[rec.topic][rec.partition] = (pv[0], tuple(rec.replicas)) + pv[2:]

    def _TopicQueuedForDeletion(self, rec) -> None:
        self.deleting.add(rec.topic)

    def _TopicDeletionCompleted(self, rec) -> None:
        self.deleting.discard(rec.topic)
        for table in (self.partitions, self.deleted, self.assignments, self.configs, self.replica_states):
            table.pop(rec.topic, None)

    def _PartitionTransition(self, rec) -> None:
        parts = self.partitions.get(rec.topic)
        if rec.to_state == NON_EXISTENT_PARTITION:
            if parts is not None:
                row = parts.pop(rec.partition, None)
                if row is not None:
                    self.deleted.setdefault(rec.topic, {})[rec.partition] = row
                if not parts:
                    del self.partitions[rec.topic]
            return
        self.partitions.setdefault(rec.topic, {})[rec.partition] = (
            rec.to_state, tuple(rec.replicas), rec.leader, rec.leader_epoch, tuple(rec.isr), rec.partition_epoch,
            rec.recovery_state)

    def _LeaderAndIsrUpdated(self, rec) -> None:
        for table in (self.partitions, self.deleted):
            pv = table.get(rec.topic, {}).get(rec.partition)
            if pv is not None:
                table[rec.topic][rec.partition] = (pv[0], pv[1], rec.leader, rec.leader_epoch, tuple(rec.isr),
                                                   rec.partition_epoch, rec.recovery_state)
                return

    def _ReplicaTransition(self, rec) -> None:
        if rec.to_state != NON_EXISTENT_REPLICA:
            self.replica_states.setdefault(rec.topic, {}).setdefault(rec.partition, {})[rec.replica] = rec.to_state
            return
        parts = self.replica_states.get(rec.topic)
        replicas = parts.get(rec.partition) if parts else None
        if replicas is not None:
            replicas.pop(rec.replica, None)
            if not replicas:
                del parts[rec.partition]
                if not parts:
                    del self.replica_states[rec.topic]

    def to_snapshot(self) -> bytes:
        return msgpack.packb([
            2, self.offset, self.timestamp_ms, None if self.controller is None else list(self.controller),
            self.latest_epoch, sorted(self.known), [[b, e] for b, e in self.registered.items()],
            sorted(self.shutting_down), None if self.pending is None else list(self.pending),
            [[t, [[p, *pv] for p, pv in parts.items()]] for t, parts in self.partitions.items()],
            [[t, [[p, [[r, s] for r, s in rs.items()]] for p, rs in parts.items()]]
             for t, parts in self.replica_states.items()],
            [[t, [[k, v] for k, v in c.items()]] for t, c in self.configs.items()],
            [[t, [[p, r] for p, r in parts.items()]] for t, parts in self.assignments.items()],
            sorted(self.deleting),
            [[t, [[p, *pv] for p, pv in parts.items()]] for t, parts in self.deleted.items()],
        ], use_bin_type=True)


# --- random record sequences --------------------------------------------------------------------------------

topics = st.sampled_from(TOPICS)
partitions = st.integers(0, 6)
brokers = st.sampled_from(list(BROKERS))
replica_lists = st.lists(brokers, max_size=4, unique=True).map(tuple)
epochs = st.integers(-1, 6)


def partition_transition(to_states=st.sampled_from([NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION,
                                                    NON_EXISTENT_PARTITION])):
    return st.builds(dict, topic=topics, partition=partitions, from_state=st.integers(0, 3), to_state=to_states,
                     replicas=replica_lists, leader=st.integers(-1, 4), leader_epoch=epochs, isr=replica_lists,
                     partition_epoch=st.integers(0, 9), recovery_state=st.integers(0, 1),
                     election=st.integers(0, 3))


def replica_transition(to_states=st.integers(1, 7)):
    return st.builds(dict, topic=topics, partition=partitions, replica=brokers, from_state=st.integers(1, 7),
                     to_state=to_states)


leader_and_isr = st.builds(dict, topic=topics, partition=partitions, leader=st.integers(-1, 4), leader_epoch=epochs,
                           isr=replica_lists, partition_epoch=st.integers(0, 9), recovery_state=st.integers(0, 1),
                           reason=st.integers(1, 3), replica=st.integers(-1, 4))

# (kind, bodies): a run of records of one kind sharing one header (folded as one batch on the columnar side)
RUNS = {
    PartitionTransition: st.one_of(st.lists(partition_transition(), min_size=1, max_size=12),
                                   st.lists(partition_transition(st.just(NON_EXISTENT_PARTITION)), min_size=1,
                                            max_size=12),
                                   st.lists(partition_transition(st.sampled_from([NEW_PARTITION, ONLINE_PARTITION])),
                                            min_size=1, max_size=12)),
    ReplicaTransition: st.one_of(st.lists(replica_transition(), min_size=1, max_size=12),
                                 st.lists(replica_transition(st.just(NON_EXISTENT_REPLICA)), min_size=1, max_size=12),
                                 st.lists(replica_transition(st.integers(1, 6)), min_size=1, max_size=12)),
    LeaderAndIsrUpdated: st.lists(leader_and_isr, min_size=1, max_size=12),
}
SINGLES = {
    TopicCreated: st.builds(dict, topic=topics, assignment=st.lists(replica_lists, min_size=1, max_size=5).map(tuple),
                            configs=st.just(())),
    PartitionsAdded: st.builds(dict, topic=topics, assignment=st.lists(st.tuples(partitions, replica_lists),
                                                                       max_size=3).map(tuple)),
    ReplicaAssignmentChanged: st.builds(dict, topic=topics, partition=partitions, replicas=replica_lists,
                                        adding_replicas=st.just(()), removing_replicas=st.just(())),
    TopicQueuedForDeletion: st.builds(dict, topic=topics),
    TopicDeletionCompleted: st.builds(dict, topic=topics),
    LiveBrokersChanged: st.builds(dict, live_brokers=st.lists(brokers, unique=True).map(
        lambda bs: tuple((b, 100 + b) for b in sorted(bs))), shutting_down=st.lists(brokers, max_size=1).map(tuple)),
    BrokerStarted: st.builds(dict, broker_id=brokers, host=st.just("h"), port=st.just(9092), rack=st.none()),
}

step = st.one_of(
    st.tuples(st.just("elect"), brokers),
    st.tuples(st.sampled_from(list(SINGLES)), st.data()),
    st.tuples(st.sampled_from(list(RUNS)), st.data()),
    st.tuples(st.sampled_from(list(RUNS)), st.data()),
)


def build(data, steps) -> list:
    """The steps as a list of items: a record, or a list of records of one kind with one header (a run)."""
    items, offset, controller, epoch = [], 0, -1, 0

    def header():
        # mostly the active controller; sometimes a deposed one (a zombie's writes) or no controller
        choice = data.draw(st.sampled_from(["active"] * 6 + ["zombie", "none"]))
        if choice == "zombie" and epoch > 0:
            return (controller + 1) % 5, epoch - 1
        if choice == "none":
            return -1, 0
        return controller, epoch

    for what, arg in steps:
        if what == "elect":
            controller, epoch = arg, epoch + 1
            items.append(ControllerElected.make(offset=offset, controller_id=controller, controller_epoch=epoch,
                                                timestamp_ms=offset, cause_offset=offset, epoch_zk_version=epoch))
            offset += 1
        elif what in SINGLES:
            cid, ep = header() if what is LiveBrokersChanged else (-1, 0)
            items.append(what.make(offset=offset, controller_id=cid, controller_epoch=ep, timestamp_ms=offset,
                                   cause_offset=offset, **arg.draw(SINGLES[what])))
            offset += 1
        else:
            cid, ep = header()
            bodies = arg.draw(RUNS[what])
            items.append([what.make(offset=offset + i, controller_id=cid, controller_epoch=ep, timestamp_ms=offset,
                                    cause_offset=offset, **body) for i, body in enumerate(bodies)])
            offset += len(bodies)
    return items


def fold_both(items) -> tuple[ClusterView, ClusterView, Reference]:
    by_record, by_batch, reference = ClusterView(), ClusterView(), Reference()
    for item in items:
        records = item if isinstance(item, list) else [item]
        for rec in records:
            by_record.apply(rec)
            reference.apply(rec)
        if isinstance(item, list):
            batch = ColumnBatch.decode(ColumnBatch.from_records(item).encode())   # read-only columns, as logged
            by_batch.apply_columns(batch)
        else:
            by_batch.apply(item)
        snap = reference.to_snapshot()
        assert by_record.to_snapshot(format=2) == snap, records[-1]
        assert by_batch.to_snapshot(format=2) == snap, records[-1]
    return by_record, by_batch, reference


def canonical_digest(view: ClusterView) -> str:
    """What ClusterView.digest is: SHA-256 of the canonical JSON of its to_json_dict."""
    return hashlib.sha256(json.dumps(view.to_json_dict(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def assert_same(a: ClusterView, b: ClusterView) -> None:
    assert a.to_json_dict() == b.to_json_dict()
    assert a.digest() == b.digest() == canonical_digest(a)
    assert list(a.describe_lines()) == list(b.describe_lines())
    assert a.to_snapshot() == b.to_snapshot()
    assert {t: dict(ps) for t, ps in a.replica_states.items()} == {t: dict(ps) for t, ps in b.replica_states.items()}
    assert [(t, list(ps.items())) for t, ps in a.topics.items()] == \
        [(t, list(ps.items())) for t, ps in b.topics.items()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.lists(step, min_size=1, max_size=30))
def test_batches_fold_as_their_records_and_as_the_dict_view_did(data, steps):
    items = build(data, steps)
    by_record, by_batch, reference = fold_both(items)
    assert_same(by_record, by_batch)
    restored = ClusterView.from_snapshot(by_batch.to_snapshot())
    assert_same(restored, by_batch)
    assert restored.to_snapshot(format=2) == reference.to_snapshot()
    # a format-2 snapshot (the reference's) reads back as the view: re-encoded, the format-3 bytes
    from_format_2 = ClusterView.from_snapshot(reference.to_snapshot())
    assert_same(from_format_2, by_batch)
    assert from_format_2.to_snapshot() == by_batch.to_snapshot()
    # the replica_states mapping reads as the dicts did
    assert {t: dict(ps) for t, ps in by_batch.replica_states.items()} == reference.replica_states
    assert (by_batch.replica_states == {}) == (reference.replica_states == {})


def test_a_batch_that_sets_a_partition_twice_keeps_the_last_write_and_the_first_position():
    def pt(offset, p, leader):
        return PartitionTransition.make(offset=offset, controller_id=0, controller_epoch=1, topic="t", partition=p,
                                        from_state=NEW_PARTITION, to_state=ONLINE_PARTITION, replicas=(0, 1),
                                        leader=leader, leader_epoch=0, isr=(0, 1), partition_epoch=0,
                                        recovery_state=0, election=0)
    records = [pt(0, 3, 0), pt(1, 1, 0), pt(2, 3, 1)]
    by_batch, by_record = ClusterView(), ClusterView()
    by_batch.apply_columns(ColumnBatch.from_records(records))
    for r in records:
        by_record.apply(r)
    assert list(by_batch.topics["t"]) == [3, 1] and by_batch.topics["t"][3].leader == 1
    assert by_batch.to_snapshot() == by_record.to_snapshot()


def test_the_digest_is_that_of_the_canonical_json_for_any_topic_name_and_replica_ids():
    view = ClusterView()
    for i, name in enumerate(['q"uote\\', "ünï\u2603", "a\nb", "10", "2"]):
        view.apply(PartitionTransition.make(offset=2 * i, controller_id=-1, topic=name, partition=i, from_state=0,
                                            to_state=OFFLINE_PARTITION, replicas=(10, 2, 1, -3), leader=-2,
                                            leader_epoch=3, isr=(2,), partition_epoch=1, recovery_state=0,
                                            election=0))
        view.apply(ReplicaTransition.make(offset=2 * i + 1, topic=name, partition=i, replica=10 if i % 2 else -3,
                                          from_state=1, to_state=2 + i))
    view.apply(BrokerStarted.make(offset=20, broker_id=7, host="h", port=1, rack=None))
    assert view.digest() == canonical_digest(view)
    assert ClusterView().digest() == canonical_digest(ClusterView())


def test_a_topic_under_two_dictionary_codes_is_one_topic():
    batch = ColumnBatch.from_columns(
        ReplicaTransition, 0, (0, 1, 0, 0), topic=DictColumn(("t", "u", "t"), np.array([0, 1, 2, 2], np.int32)),
        partition=[0, 0, 0, 1], replica=[1, 1, 2, 1], from_state=[1, 1, 1, 1], to_state=[2, 2, 2, 2])
    by_batch, by_record = ClusterView(), ClusterView()
    by_batch.apply_columns(batch)
    for r in batch.records():
        by_record.apply(r)
    assert by_batch.partition_replica_states("t", 0) == {1: 2, 2: 2}
    assert by_batch.to_snapshot() == by_record.to_snapshot()


def test_partition_numbers_the_view_cannot_hold_are_errors():
    for p in (-1, MAX_PARTITIONS):
        rec = PartitionTransition.make(offset=0, topic="t", partition=p, from_state=NEW_PARTITION,
                                       to_state=NEW_PARTITION, replicas=(0,), leader=-1, leader_epoch=-1, isr=(),
                                       partition_epoch=0, recovery_state=0, election=0)
        with pytest.raises(ValueError, match="the view holds partitions"):
            ClusterView().apply(rec)
        with pytest.raises(ValueError, match="the view holds partitions"):
            ClusterView().apply_columns(ColumnBatch.from_records([rec]))
    too_big = PartitionTransition.make(offset=0, topic="t", partition=0, from_state=NEW_PARTITION,
                                       to_state=NEW_PARTITION, replicas=(2**31,), leader=-1, leader_epoch=-1, isr=(),
                                       partition_epoch=0, recovery_state=0, election=0)
    with pytest.raises(ValueError, match="2147483648"):
        ClusterView().apply(too_big)
    with pytest.raises(ValueError, match="2147483648"):
        ClusterView().apply_columns(ColumnBatch.from_records([too_big]))
