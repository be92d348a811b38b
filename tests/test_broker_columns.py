"""The in-process brokers' columnar request handling (controller/embedding/broker_columns.py,
``BrokerServer.answer``): a request given as a columnar batch leaves a broker in the same state, with
the same response, as the same request given as a tuple of records, and both agree with a plain-dict
model of Kafka's broker (ReplicaManager.becomeLeaderOrFollower's newer-leader-epoch rule,
ZkMetadataCache.updateMetadata, StopReplica's delete); the brokers' caches survive a snapshot."""
from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.controller_events import KAFKA_STORAGE_ERROR, NONE, STALE_CONTROLLER_EPOCH
from controller.embedding.broker_columns import image_from_state, image_state, table_from_state, table_state
from controller.embedding.cluster import BrokerServer, Cluster
from controller.embedding.cluster_snapshot import restore_cluster
from controller.partition_errors import PartitionErrors
from controller.request_batch import BrokerRequest
from events.codec import encode_batch
from events.columns import ColumnBatch, DictColumn
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, LEADER_DURING_DELETE, ClusterSnapshot,
    LeaderAndIsrPartition, StopReplicaPartition, UpdateMetadataPartition,
)

TOPICS = ("a", "b", "topic-c")
BROKERS = st.integers(0, 4)
TUPLES = st.lists(BROKERS, max_size=4, unique=True).map(tuple)


class DictBroker:
    """The broker as plain dicts, one record at a time."""

    def __init__(self):
        self.leader_and_isr: dict = {}
        self.metadata: dict = {}
        self.controller_epoch = 0

    def answer(self, api: int, controller_epoch: int, records) -> tuple[str, dict]:
        if controller_epoch < self.controller_epoch:
            return STALE_CONTROLLER_EPOCH, {}
        self.controller_epoch = controller_epoch
        errors: dict = {}
        for r in records:
            tp = (r.topic, r.partition)
            if api == API_LEADER_AND_ISR:
                cur = self.leader_and_isr.get(tp)
                if cur is None or r.leader_epoch > cur[1]:
                    self.leader_and_isr[tp] = (r.leader, r.leader_epoch, r.isr, r.partition_epoch)
                    errors[tp] = NONE
                else:
                    errors[tp] = STALE_CONTROLLER_EPOCH
            elif api == API_UPDATE_METADATA:
                if r.leader == LEADER_DURING_DELETE:
                    self.metadata.pop(tp, None)
                else:
                    self.metadata[tp] = r
            else:
                if r.delete_partition:
                    self.leader_and_isr.pop(tp, None)
                errors[tp] = NONE
        return NONE, errors


@st.composite
def requests(draw):
    """(api, controller epoch, records) with one shared header and consecutive offsets."""
    api = draw(st.sampled_from((API_LEADER_AND_ISR, API_UPDATE_METADATA, API_STOP_REPLICA)))
    tps = draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 7)), min_size=1, max_size=12,
                        unique=True))
    if draw(st.integers(0, 9)) == 0 and len(tps) > 1:
        tps.append(tps[0])   # a partition named twice: the records go one by one
    epoch = draw(st.integers(1, 3))
    header = dict(controller_id=1, controller_epoch=epoch, timestamp_ms=draw(st.integers(0, 10**12)),
                  cause_offset=draw(st.integers(-1, 100)))
    first = draw(st.integers(0, 10**6))
    records = []
    for i, (t, p) in enumerate(tps):
        if api == API_LEADER_AND_ISR:
            body = dict(broker_id=0, state_controller_epoch=epoch, leader=draw(st.integers(-1, 4)),
                        leader_epoch=draw(st.integers(0, 4)), isr=draw(TUPLES), partition_epoch=draw(st.integers(0, 9)),
                        replicas=draw(TUPLES), adding_replicas=(), removing_replicas=(), is_new=draw(st.booleans()),
                        recovery_state=0)
            cls = LeaderAndIsrPartition
        elif api == API_UPDATE_METADATA:
            body = dict(brokers=(0, 1, 2), state_controller_epoch=epoch,
                        leader=draw(st.sampled_from((LEADER_DURING_DELETE, -1, 0, 1, 2, 3))),
                        leader_epoch=draw(st.integers(0, 4)), isr=draw(TUPLES), partition_epoch=draw(st.integers(0, 9)),
                        replicas=draw(TUPLES), offline_replicas=draw(TUPLES))
            cls = UpdateMetadataPartition
        else:
            body = dict(broker_id=0, leader_epoch=draw(st.integers(-2, 4)), delete_partition=draw(st.booleans()))
            cls = StopReplicaPartition
        records.append(cls.make(offset=first + i, topic=t, partition=p, **header, **body))
    return api, epoch, tuple(records)


def _server(cluster: Cluster, broker_id: int = 0) -> BrokerServer:
    return BrokerServer(cluster, broker_id, f"broker-{broker_id}", 9092, None)


def _request(api: int, epoch: int, partitions, broker_id: int = 0) -> BrokerRequest:
    return BrokerRequest(api, broker_id, -1, 1, epoch, 0, partitions, (0, 1, 2))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(requests(), min_size=1, max_size=12))
def test_columnar_requests_do_what_record_requests_do(sequence):
    rows, cols = Cluster(seed=0, record_creation=False), Cluster(seed=0, record_creation=False)
    by_records, by_columns, twin = _server(rows), _server(cols), _server(cols, 1)
    model = DictBroker()
    for api, epoch, records in sequence:
        batch = ColumnBatch.from_records(records)
        expected = model.answer(api, epoch, records)
        got_rows = by_records.answer(_request(api, epoch, records))
        got_cols = by_columns.answer(_request(api, epoch, batch))
        twin.answer(_request(api, epoch, batch, 1))
        assert got_rows == expected and got_cols == expected
        assert dict(got_cols[1]) == expected[1] and len(got_cols[1]) == len(expected[1])
        assert (KAFKA_STORAGE_ERROR in got_cols[1].values()) is False
        assert (STALE_CONTROLLER_EPOCH in got_cols[1].values()) == (STALE_CONTROLLER_EPOCH in expected[1].values())
        for server in (by_records, by_columns):
            assert server.leader_and_isr == model.leader_and_isr
            assert dict(server.leader_and_isr.items()) == model.leader_and_isr
            assert len(server.leader_and_isr) == len(model.leader_and_isr)
            assert server.metadata == model.metadata and len(server.metadata) == len(model.metadata)
            assert list(server.metadata) == sorted(model.metadata)
            assert list(server.leader_and_isr) == sorted(model.leader_and_isr)
            for tp in [(t, p) for t in TOPICS for p in range(9)]:
                assert server.metadata.get(tp) == model.metadata.get(tp)
                assert (tp in server.leader_and_isr) == (tp in model.leader_and_isr)
        assert twin._metadata_image is by_columns._metadata_image   # one cache object for brokers sent the same
    # The caches as a snapshot writes and reads them.
    again = Cluster(seed=0, record_creation=False)
    shared = _server(again)._columns
    assert table_from_state(shared, table_state(by_columns.leader_and_isr)) == model.leader_and_isr
    image = image_from_state(shared, image_state(by_columns._columns, by_columns._metadata_image))
    restored = _server(again)
    restored._metadata_image = image
    assert restored.metadata == model.metadata
    assert image_state(shared, image) == image_state(by_columns._columns, by_columns._metadata_image)


def test_leader_and_isr_table_is_a_mutable_mapping():
    server = _server(Cluster(seed=0, record_creation=False))
    table = server.leader_and_isr
    table[("t", 3)] = (1, 0, (1, 2), 0)
    table[("t", 1)] = (2, 0, [2], 0)
    table[("a", 9)] = (0, 5, (), 1)
    assert list(table) == [("a", 9), ("t", 1), ("t", 3)]
    assert table[("t", 1)] == (2, 0, (2,), 0) and table.get(("t", 2)) is None and ("x", 0) not in table
    table[("t", 1)] = (2, 1, (2, 1), 1)
    assert table.pop(("a", 9)) == (0, 5, (), 1) and len(table) == 2
    assert dict(table) == {("t", 1): (2, 1, (2, 1), 1), ("t", 3): (1, 0, (1, 2), 0)}
    with pytest.raises(KeyError):
        del table[("a", 9)]
    with pytest.raises(ValueError, match="int32"):
        table[("t", 0)] = (1, 2**31, (), 0)


def test_out_of_range_fields_are_refused_with_the_field_named():
    server = _server(Cluster(seed=0, record_creation=False))
    rec = LeaderAndIsrPartition.make(offset=0, broker_id=0, topic="t", partition=0, state_controller_epoch=1, leader=1,
                                     leader_epoch=2**40, isr=(1,), partition_epoch=0, replicas=(1,),
                                     adding_replicas=(), removing_replicas=(), is_new=True, recovery_state=0)
    with pytest.raises(ValueError, match="leader_epoch"):
        server.answer(_request(API_LEADER_AND_ISR, 1, ColumnBatch.from_records([rec])))


def test_partition_errors_read_as_a_dict():
    topic = DictColumn(("x", "y"), np.array([0, 1, 0], dtype=np.int32))
    errors = PartitionErrors(topic, np.array([0, 0, 1]), np.array([0, 1, 0], dtype=np.uint8),
                             (NONE, KAFKA_STORAGE_ERROR))
    expected = {("x", 0): NONE, ("y", 0): KAFKA_STORAGE_ERROR, ("x", 1): NONE}
    assert errors == expected and expected == errors and len(errors) == 3
    assert KAFKA_STORAGE_ERROR in errors.values() and STALE_CONTROLLER_EPOCH not in errors.values()
    assert sorted(errors.items()) == sorted(expected.items()) and errors[("y", 0)] == KAFKA_STORAGE_ERROR
    uniform = PartitionErrors.uniform(topic, np.array([0, 0, 1]), NONE)
    assert KAFKA_STORAGE_ERROR not in uniform.values() and set(uniform.values()) == {NONE}
    with pytest.raises(ValueError, match="length"):
        PartitionErrors(topic, np.array([0]), np.array([0], dtype=np.uint8), (NONE,))


def _format_1(data: bytes) -> bytes:
    """A format-2 cluster snapshot rewritten as format 1 wrote it (brokers' states as pairs and records)."""
    state = msgpack.unpackb(data, raw=False, strict_map_key=False)
    cluster = restore_cluster(data)
    records: list = []
    brokers = []
    for entry in state["brokers"]:
        server = cluster.brokers[entry[0]]
        indexes = []
        for rec in server.metadata.values():
            indexes.append(len(records))
            records.append(rec)
        entry[10] = sorted([list(tp), list(v)] for tp, v in server.leader_and_isr.items())
        entry[11] = indexes
        brokers.append(entry)
    state.update(format=1, brokers=brokers, metadata_records=encode_batch(records))
    del state["metadata_caches"]
    return msgpack.packb(state, use_bin_type=True)


def test_format_1_snapshots_are_still_read():
    c = Cluster(seed=3)
    c.start_brokers([0, 1, 2])
    c.create_topic("t", 70, 2)     # requests of 64 partition states and more are columnar
    c.create_topic("u", 3, 3)
    c.kill_broker(1, at=1_000)
    c.advance_to(30_000)
    c.snapshot()
    snap = c.journal.records[-1]
    assert type(snap) is ClusterSnapshot
    mark = len(c.journal.records)
    c.start_broker(1, at=31_000)
    c.delete_topic("u", at=32_000)
    c.advance_to(40_000)
    expected = [encode_batch([r]) for r in c.journal.records[mark:]]
    new, old = restore_cluster(snap.state), restore_cluster(_format_1(snap.state))
    for b in new.brokers:
        assert old.brokers[b].leader_and_isr == new.brokers[b].leader_and_isr
        assert old.brokers[b].metadata == new.brokers[b].metadata and len(new.brokers[b].metadata) == 73
    for restored in (new, old):
        for rec in c.journal.records[mark:]:
            if rec.is_input:
                restored.apply(rec)
        assert [encode_batch([r]) for r in restored.journal.records] == expected
        for b, server in c.brokers.items():
            assert restored.brokers[b].leader_and_isr == server.leader_and_isr
            assert restored.brokers[b].metadata == server.metadata


def test_many_records_in_a_tuple_go_as_columns_with_the_same_result():
    header = dict(controller_id=1, controller_epoch=1, timestamp_ms=5, cause_offset=3)
    lai = tuple(LeaderAndIsrPartition.make(offset=10 + i, topic=f"t{i % 3}", partition=i, broker_id=0,
                                           state_controller_epoch=1, leader=i % 5, leader_epoch=i % 4,
                                           isr=tuple(range(i % 4)), partition_epoch=i, replicas=(0, 1, 2),
                                           adding_replicas=(), removing_replicas=(), is_new=True, recovery_state=0,
                                           **header) for i in range(100))
    um = tuple(UpdateMetadataPartition.make(offset=200 + i, topic=f"t{i % 3}", partition=i, brokers=(0, 1),
                                            state_controller_epoch=1, leader=-2 if i % 7 == 0 else i % 5,
                                            leader_epoch=1, isr=(i % 5,), partition_epoch=2, replicas=(1, i % 5),
                                            offline_replicas=(), **header) for i in range(100))
    cluster = Cluster(seed=0, record_creation=False)
    servers = [_server(cluster, b) for b in (0, 1)]
    model = DictBroker()
    for api, records in ((API_LEADER_AND_ISR, lai), (API_LEADER_AND_ISR, lai[:80]), (API_UPDATE_METADATA, um),
                         (API_STOP_REPLICA, tuple(StopReplicaPartition.make(
                             offset=400 + i, topic=f"t{i % 3}", partition=i, broker_id=0, leader_epoch=1,
                             delete_partition=i % 2 == 0, **header) for i in range(70)))):
        expected = model.answer(api, 1, records)
        for server in servers:
            assert server.answer(_request(api, 1, records, server.broker_id)) == expected
            assert server.leader_and_isr == model.leader_and_isr and server.metadata == model.metadata
    assert servers[0]._metadata_image is servers[1]._metadata_image
