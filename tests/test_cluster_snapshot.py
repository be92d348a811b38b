"""Cluster snapshots: a restored cluster carries on exactly as the original, and replay can start there."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.embedding.cluster import Cluster
from controller.embedding.cluster_snapshot import restore_cluster
from controller.embedding.replay import latest_cluster_snapshot, replay_log, replay_records
from events.codec import encode_batch
from events.log import LogWriter
from events.records import ClusterSnapshot


def first_half(c: Cluster) -> None:
    c.start_brokers([0, 1, 2, 3])
    c.create_topic("a", 6, 3)
    c.create_topic("b", 3, 1, configs={"retention.ms": 1000})
    c.kill_broker(1, at=1_000)
    c.advance_to(5_000)                     # broker 1's session is still alive here


def second_half(c: Cluster) -> None:
    c.advance_to(30_000)                    # ... and expires on the way
    c.start_broker(1, at=31_000)
    c.expire_session(0, at=32_000)          # the controller's session: a new epoch
    c.create_topic("c", 4, 2, at=33_000)
    c.kill_broker(c.controller_id, at=34_000)
    c.advance_to(60_000)
    c.add_partitions("a", 8, at=61_000)
    c.set_config("topic", "b", "unclean.leader.election.enable", True, at=62_000)
    c.notify_isr_change(2, {("a", 2): (2,)}, at=63_000)
    c.checkpoint()


def test_a_restored_cluster_writes_what_the_original_writes():
    original = Cluster(seed=5)
    first_half(original)
    original.snapshot()
    snap = original.journal.records[-1]
    assert type(snap) is ClusterSnapshot
    mark = len(original.journal.records)
    second_half(original)
    expected = original.journal.records[mark:]

    restored = restore_cluster(snap.state)
    assert restored.digest() == original.digest() or True  # (original has moved on; compared below)
    for rec in expected:
        if rec.is_input:
            restored.apply(rec)
    restored.checkpoint()
    got = restored.journal.records
    assert len(got) == len(expected) > 100
    assert [encode_batch([r]) for r in got] == [encode_batch([r]) for r in expected]
    assert restored.digest() == original.digest()


def test_snapshot_right_after_restore_is_the_same_snapshot():
    c = Cluster(seed=9)
    first_half(c)
    c.snapshot()
    snap = c.journal.records[-1]
    again = restore_cluster(snap.state)
    again.journal.next_offset -= 1          # re-take it at the same offset
    again.snapshot()
    assert again.journal.records[-1].state == snap.state


def test_replay_from_the_latest_snapshot(tmp_path):
    with LogWriter(tmp_path) as w:
        c = Cluster(seed=5, sink=w.append)
        first_half(c)
        c.snapshot()
        at = c.journal.next_offset - 1
        second_half(c)
    assert latest_cluster_snapshot(str(tmp_path)) == at
    full, tail = replay_log(str(tmp_path)), replay_log(str(tmp_path), from_snapshot=True)
    assert full.ok and tail.ok and tail.digest == full.digest
    assert tail.records < full.records


def test_replay_from_a_snapshot_reports_a_divergence_after_it():
    c = Cluster(seed=5)
    first_half(c)
    c.snapshot()
    start = len(c.journal.records) - 1
    second_half(c)
    records = c.journal.records[start:]
    i = len(records) // 2
    records[i] = records[i]._replace(timestamp_ms=records[i].timestamp_ms + 1)
    result = replay_records(records)
    assert not result.ok and result.divergence.offset == records[i].offset


def test_a_snapshot_needs_a_settled_cluster():
    c = Cluster(seed=1)
    c.start_brokers([0, 1])
    c.brokers[1].controller.event_manager.put(c.brokers[1].controller._dispatch and __import__(
        "controller.controller_events", fromlist=["BrokerChange"]).BrokerChange())
    c.snapshot()  # settles first: the queued event is processed, then the snapshot is taken
    assert type(c.journal.records[-1]) is ClusterSnapshot


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6))
def test_restore_anywhere_in_a_random_history(seed, cut):
    """Snapshot after ``cut`` actions of a scripted history; the restored cluster must write the rest
    of the history exactly as the original did."""
    actions = [
        lambda c: c.start_brokers([0, 1, 2]),
        lambda c: c.create_topic("t", 4, 2),
        lambda c: c.kill_broker(2, at=c.now + 100),
        lambda c: c.advance(20_000),
        lambda c: c.start_broker(2, at=c.now + 100),
        lambda c: c.expire_session(c.controller_id, at=c.now + 100),
        lambda c: c.create_topic("u", 2, 3, at=c.now + 100),
        lambda c: c.advance(30_000),
    ]
    original = Cluster(seed=seed)
    for act in actions[:cut]:
        act(original)
    original.snapshot()
    snap = original.journal.records[-1]
    mark = len(original.journal.records)
    for act in actions[cut:]:
        act(original)
    restored = restore_cluster(snap.state)
    for rec in original.journal.records[mark:]:
        if rec.is_input:
            restored.apply(rec)
    assert [encode_batch([r]) for r in restored.journal.records] == \
        [encode_batch([r]) for r in original.journal.records[mark:]]


def test_unknown_snapshot_format_is_refused():
    import msgpack
    with pytest.raises(ValueError, match="format"):
        restore_cluster(msgpack.packb({"format": 99}))


def test_restore_mid_reassignment_mid_deletion_and_with_a_rebalance_pending():
    """A snapshot taken while a reassignment waits for its new replica, a topic deletion is halted on a
    dead broker and the auto rebalance is scheduled: the restored cluster finishes all three as the original."""
    original = Cluster(seed=11)
    original.start_brokers([0, 1, 2, 3])
    original.create_topic("r", assignment=[[0, 1, 2], [1, 2, 3]])
    original.create_topic("d", assignment=[[2, 3], [3, 0]])
    original.reassign_partitions({("r", 0): [3, 2, 1]}, at=100)
    original.kill_broker(3, at=200)
    original.advance_to(30_000)
    original.delete_topic("d", at=31_000)
    original.snapshot()
    snap = original.journal.records[-1]
    mark = len(original.journal.records)
    ctx = original.controller.context
    assert ctx.partitions_being_reassigned == {("r", 0)} and ctx.topics_ineligible_for_deletion == {"d"}

    original.start_broker(3, at=40_000)         # the deletion resumes
    original.catch_up_followers(at=41_000)      # the reassignment completes
    original.advance_to(400_000)                # the rebalance runs
    original.checkpoint()
    expected = original.journal.records[mark:]
    assert not original.admin.topic_exists("d")
    assert original.controller.context.partition_replica_assignment(("r", 0)) == (3, 2, 1)

    restored = restore_cluster(snap.state)
    for rec in expected:
        if rec.is_input:
            restored.apply(rec)
    restored.checkpoint()
    assert [encode_batch([r]) for r in restored.journal.records] == [encode_batch([r]) for r in expected]
    assert restored.digest() == original.digest()
