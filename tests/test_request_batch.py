"""ControllerBrokerRequestBatch: Kafka's merge rules, send order and recording."""
from __future__ import annotations

import pytest

from controller.context import ControllerContext
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel, IllegalBatchStateError
from events.journal import Journal
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, LeaderAndIsrPartition, RequestSent,
    StopReplicaPartition, UpdateMetadataPartition,
)
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment


@pytest.fixture
def setup():
    ctx = ControllerContext()
    ctx.epoch = 5
    ctx.add_live_brokers({1: 11, 2: 22, 3: 33})
    ctx.add_topic("t", [(1, 2, 3), (2, 3, 1)])
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 7, (1, 2), partition_epoch=9), 4)
    ctx.put_partition_leadership_info(("t", 0), info)
    journal = Journal()
    journal.set_writer(0, 5)
    channel = ControllerChannel()
    return ctx, ControllerBrokerRequestBatch(0, ctx, journal, channel), journal, channel, info


def of(journal, cls):
    return [r for r in journal.records if isinstance(r, cls)]


def test_leader_and_isr_is_new_is_sticky_and_adds_update_metadata(setup):
    ctx, batch, journal, channel, info = setup
    batch.new_batch()
    batch.add_leader_and_isr_request_for_brokers([3, 1], ("t", 0), info, ReplicaAssignment((1, 2, 3)), True)
    batch.add_leader_and_isr_request_for_brokers([1], ("t", 0), info, ReplicaAssignment((1, 2, 3)), False)
    batch.add_leader_and_isr_request_for_brokers([-1], ("t", 0), info, ReplicaAssignment((1, 2, 3)), False)
    sent = batch.send_requests_to_brokers(5)
    assert [(r.api, r.broker_id) for r in sent] == [
        (API_LEADER_AND_ISR, 1), (API_LEADER_AND_ISR, 3),
        (API_UPDATE_METADATA, 1), (API_UPDATE_METADATA, 2), (API_UPDATE_METADATA, 3)]
    lai = of(journal, LeaderAndIsrPartition)
    assert [(r.broker_id, r.is_new) for r in lai] == [(1, True), (3, True)]
    # the partition state carries the epoch of the controller that wrote /state (4), the header the current (5)
    assert lai[0].state_controller_epoch == 4 and lai[0].controller_epoch == 5
    assert (lai[0].leader, lai[0].leader_epoch, lai[0].isr, lai[0].partition_epoch) == (1, 7, (1, 2), 9)
    first = of(journal, RequestSent)[0]
    assert (first.broker_epoch, first.partition_count, first.leader_count) == (11, 1, 1)
    um = of(journal, UpdateMetadataPartition)
    assert len(um) == 1 and um[0].brokers == (1, 2, 3)
    assert batch.is_empty()


def test_update_metadata_during_delete_uses_leader_minus_two(setup):
    ctx, batch, journal, channel, info = setup
    ctx.queue_topic_deletion(["t"])
    ctx.remove_live_brokers([3])
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([1, 2, 3], [("t", 0), ("t", 1)])
    batch.send_requests_to_brokers(5)
    um = of(journal, UpdateMetadataPartition)
    assert len(um) == 1  # t-1 has no leader yet: skipped, as Kafka does
    assert (um[0].leader, um[0].leader_epoch, um[0].partition_epoch) == (-2, 0, 0)
    assert um[0].offline_replicas == (3,) and um[0].brokers == (1, 2)
    assert [r.broker_id for r in of(journal, RequestSent)] == [1, 2]  # dead broker 3 gets nothing


def test_stop_replica_delete_is_sticky_and_epoch_during_delete(setup):
    ctx, batch, journal, channel, info = setup
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([2], ("t", 0), True)
    batch.add_stop_replica_request_for_brokers([2], ("t", 0), False)
    batch.send_requests_to_brokers(5)
    sr = of(journal, StopReplicaPartition)
    assert [(r.broker_id, r.leader_epoch, r.delete_partition) for r in sr] == [(2, 7, True)]
    assert of(journal, RequestSent)[-1].delete_count == 1
    ctx.queue_topic_deletion(["t"])
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([2], ("t", 0), True)
    batch.send_requests_to_brokers(5)
    assert of(journal, StopReplicaPartition)[-1].leader_epoch == -2


def test_send_order_is_leader_and_isr_then_update_metadata_then_stop_replica(setup):
    ctx, batch, journal, channel, info = setup
    batch.new_batch()
    batch.add_stop_replica_request_for_brokers([1], ("t", 0), False)
    batch.add_leader_and_isr_request_for_brokers([2], ("t", 0), info, ReplicaAssignment((1, 2, 3)), False)
    sent = batch.send_requests_to_brokers(5)
    assert [r.api for r in sent] == [API_LEADER_AND_ISR] + [API_UPDATE_METADATA] * 3 + [API_STOP_REPLICA]
    assert channel.sent == sent
    # correlation ids count per broker
    assert [(r.broker_id, r.correlation_id) for r in sent] == [(2, 0), (1, 0), (2, 1), (3, 0), (1, 1)]
    # each request's partitions are the records just before its RequestSent record
    assert all(p.offset < journal.records[-1].offset for p in sent[-1].partitions)


def test_new_batch_refuses_unsent_requests(setup):
    ctx, batch, journal, channel, info = setup
    batch.add_stop_replica_request_for_brokers([1], ("t", 0), False)
    with pytest.raises(IllegalBatchStateError, match="StopReplica state changes"):
        batch.new_batch()


# --- the columnar entry table against Kafka's per-broker hash maps ---------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402
import numpy as np  # noqa: E402

from controller.request_entries import EntryTable  # noqa: E402

_entry = st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "c"]), st.integers(0, 4), st.integers(-2, 9),
                   st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(_entry, max_size=8)), max_size=6))
def test_entry_table_merges_as_kafkas_maps(chunks):
    """Adds one at a time or as arrays, in any mix: the merged rows are the maps' entries (first place, last
    value, sticky flag ORed), grouped by ascending broker."""
    table = EntryTable(("value", "flag"), sticky=("flag",))
    maps: dict = {}
    for as_arrays, entries in chunks:
        rows = [(b, table.topic_code(t), p, v, int(f)) for b, t, p, v, f in entries]
        if as_arrays and rows:
            table.add_columns(tuple(np.array(c) for c in zip(*rows)))
        else:
            for row in rows:
                table.add(row)
        for b, t, p, v, f in entries:
            per = maps.setdefault(b, {})
            prev = per.get((t, p))
            per[(t, p)] = (v, f or (prev is not None and prev[1]))
    merged = table.merged()
    got = {}
    for b, start, stop in merged.groups:
        c = {k: a[start:stop].tolist() for k, a in merged.columns.items()}
        got[b] = list(zip([table.topic_names[t] for t in c["topic"]], c["partition"], c["value"],
                          [bool(f) for f in c["flag"]]))
    assert [b for b, _, _ in merged.groups] == sorted(maps)
    assert got == {b: [(t, p, v, f) for (t, p), (v, f) in per.items()] for b, per in maps.items()}
