"""The request batch's columnar records, built in their stored form for every broker at once, are the
batches ``ColumnBatch.from_columns`` builds from the same values: same records, same bytes."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import request_batch
from controller.context import ControllerContext
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel
from events.columns import ColumnBatch, DictColumn
from events.journal import Journal
from events.records import HEADER_LEN
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment

BROKERS = (0, 1, 2, 7, 300, 70_000)
TOPICS = ("a", "b", "c", "d")

ints = st.sampled_from([0, 1, 5, 255, 256, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**40])
replica_lists = st.lists(st.sampled_from(BROKERS), max_size=4, unique=True).map(tuple)
entry = st.tuples(
    st.sampled_from(TOPICS), st.integers(0, 40), st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3),
    ints, st.sampled_from([-1, 0, 1, 300, 70_000]), ints, replica_lists, ints, replica_lists, replica_lists,
    st.booleans(), st.sampled_from([0, 1]))


def _reference(batch: ColumnBatch, topic_order: list) -> ColumnBatch:
    """The batch as from_columns builds it from its records' values (the topic dictionary in the order
    its entry table first saw the topics)."""
    recs = batch.records()
    columns = {}
    for i, f in enumerate(batch.fields):
        values = [r[HEADER_LEN + i] for r in recs]
        if f == "topic":
            present = set(values)
            dictionary = tuple(t for t in topic_order if t in present)
            values = DictColumn(dictionary, np.array([dictionary.index(t) for t in values], dtype=np.int32))
        columns[f] = values
    return ColumnBatch.from_columns(batch.cls, batch.first_offset, batch.header, **columns)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry, min_size=1, max_size=300), st.lists(st.sampled_from(BROKERS), max_size=2), st.booleans())
def test_stored_request_batches_are_from_columns_batches(monkeypatch_entries, dead, delete):
    request_batch.COLUMN_MIN, saved = 2, request_batch.COLUMN_MIN
    try:
        ctx = ControllerContext()
        ctx.epoch = 3
        ctx.add_live_brokers({b: 10 + i for i, b in enumerate(BROKERS) if b not in dead})
        batches: list = []
        journal = Journal(column_sink=batches.append)
        journal.set_writer(0, 3)
        batch = ControllerBrokerRequestBatch(0, ctx, journal, ControllerChannel())
        for topic, p, brokers, ce, leader, le, isr, pe, replicas, adding, new, rs in monkeypatch_entries:
            if topic not in ctx.all_topics:
                ctx.add_topic(topic, [(0, 1)] * 41)
            info = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, le, isr, partition_epoch=pe, recovery_state=rs), ce)
            if all(-(2**31) <= v < 2**31 for v in (ce, leader, le, pe)):   # what the context's columns hold
                ctx.put_partition_leadership_info((topic, p), info)
            batch.add_leader_and_isr_request_for_brokers(brokers, (topic, p), info,
                                                         ReplicaAssignment(replicas, adding, ()), new)
            batch.add_stop_replica_request_for_brokers(brokers, (topic, p), delete and new)
        if delete:
            ctx.queue_topic_deletion(["b"])
        orders = {"LeaderAndIsrPartition": list(batch._lai.topic_names),
                  "UpdateMetadataPartition": list(batch._um.topic_names),
                  "StopReplicaPartition": list(batch._sr.topic_names)}
        batch.send_requests_to_brokers(3)
        for b in batches:
            ref = _reference(b, orders[b.cls.__name__])
            assert b.records() == ref.records()
            assert [getattr(c, "dtype", None) for c in b.columns] == [getattr(c, "dtype", None) for c in ref.columns]
            assert b.encode() == ref.encode()
    finally:
        request_batch.COLUMN_MIN = saved
