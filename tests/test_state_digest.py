"""The cluster state digest (``Cluster.digest``, format 2): a function of what the store holds and what the
active controller knows, not of how either holds it; it changes when any of that changes; and logs whose
StateDigest records were written in format 1 still replay."""
from __future__ import annotations

import hashlib

import pytest

from controller.embedding.cluster import DIGEST_FORMAT_PREFIX, Cluster
from controller.embedding.cluster_snapshot import restore_cluster
from controller.embedding.replay import replay_records
from controller.store.state_table import StateTable
from controller.store.zookeeper import ZooKeeper
from events.records import StateDigest


def scenario(c: Cluster) -> None:
    c.start_brokers([0, 1, 2, 3])
    c.create_topic("a", 40, 3)
    c.create_topic("b", 5, 2)
    c.kill_broker(1, at=1_000)
    c.advance_to(40_000)
    c.reassign_partitions({("a", 0): (0, 2, 3)}, at=41_000)
    c.start_broker(1, at=42_000)
    c.stop_broker(2, at=43_000)


def store_digest(zk: ZooKeeper) -> str:
    h = hashlib.sha256()
    zk.digest_into(h)
    return h.hexdigest()


def test_the_digest_is_format_2_and_the_same_for_the_same_run():
    a, b = Cluster(seed=3), Cluster(seed=3)
    scenario(a)
    scenario(b)
    assert a.digest().startswith(DIGEST_FORMAT_PREFIX) and len(a.digest()) == 2 + 64
    assert a.digest() == b.digest()


def test_the_store_digest_does_not_depend_on_whether_state_znodes_are_table_rows(monkeypatch):
    """The same run with every /state znode and partition parent held as a node tuple (no table row fits):
    the same dump, so the same store digest."""
    rows = Cluster(seed=3)
    scenario(rows)
    assert any(t.count for t in rows.zk._tables.values())
    monkeypatch.setattr(StateTable, "fits", lambda self, p: False)
    monkeypatch.setattr("controller.store.zookeeper.MIN_ROWS", 0)
    monkeypatch.setattr(ZooKeeper, "_bulk_ready", lambda *args: None)
    tuples = Cluster(seed=3)
    scenario(tuples)
    assert not any(t.count or t.pcount for t in tuples.zk._tables.values())
    assert tuples.zk.dump() == rows.zk.dump()
    assert store_digest(tuples.zk) == store_digest(rows.zk)
    assert tuples.digest() == rows.digest()


def test_a_restored_cluster_digests_as_the_original():
    c = Cluster(seed=4)
    scenario(c)
    c.snapshot()
    restored = restore_cluster(c.journal.records[-1].state)
    assert restored.digest() == c.digest()


@pytest.mark.parametrize("change", ["isr", "leader", "replica_state", "partition_state", "znode", "assignment"])
def test_the_digest_changes_with_any_part_of_the_state(change):
    c = Cluster(seed=3)
    scenario(c)
    before = c.digest()
    ctx = c.controller.context
    ts = ctx.topics["a"]
    if change == "isr":
        ts.icode[7] = ctx.pool.code((0,))
    elif change == "leader":
        ts.leader[7] += 1
    elif change == "replica_state":
        ts.rstates[7 * ts.rwidth] ^= 1
    elif change == "partition_state":
        ts.pstate[7] ^= 1
    elif change == "assignment":
        ts.rcode[7] = ctx.pool.code((3, 2, 0))
    else:
        path = "/brokers/topics/a/partitions/7/state"
        sid = c.admin.session_id
        data, stat = c.zk.get_data(sid, path)
        c.zk.set_data(sid, path, data.replace(b'"leader_epoch":', b'"leader_epoch":1'), stat.version)
    assert c.digest() != before


def test_a_log_with_format_1_digests_replays_with_them():
    """A StateDigest of format 1 (no prefix) is recomputed in format 1; a wrong one is still a divergence."""
    c = Cluster(seed=3)
    scenario(c)
    c.checkpoint()
    records = list(c.journal.records)
    i = max(k for k, r in enumerate(records) if type(r) is StateDigest)
    legacy = c.legacy_digest()
    assert len(legacy) == 64 and legacy != c.digest()
    old = records[:i] + [records[i]._replace(digest=legacy)] + records[i + 1:]
    assert replay_records(old).ok
    wrong = records[:i] + [records[i]._replace(digest="0" * 64)] + records[i + 1:]
    result = replay_records(wrong)
    assert not result.ok and result.divergence.offset == records[i].offset
