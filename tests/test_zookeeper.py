"""The embedded ZooKeeper: znodes with versions and stats, error codes, sessions and ephemerals, sequential
names, multi atomicity, one-shot watches, dump and snapshots; a hypothesis model check against a dict."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.store.zookeeper import (
    FIRST_SESSION_ID, ZXID_BASE, BadVersionError, CheckOp, CheckResult, CreateOp, CreateResult, DeleteOp,
    DeleteResult, ErrorResult, EventType, KeeperError, MultiError, NoChildrenForEphemeralsError, NodeExistsError,
    NoNodeError, NotEmptyError, SessionExpiredError, SetDataOp, SetDataResult, WatchedEvent, ZooKeeper,
)
from statemachines.errors import StoreError, kafka_name


class Clock:
    def __init__(self, now: int = 1000):
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def zk(clock):
    return ZooKeeper(clock)


class Recorder:
    """A session watcher that records its events."""

    def __init__(self):
        self.events: list[WatchedEvent] = []

    def __call__(self, event):
        self.events.append(event)

    def take(self) -> list[tuple[str, str]]:
        out = [(str(e.type), e.path) for e in self.events]
        self.events.clear()
        return out


# --- znodes, versions, stats, errors ---------------------------------------------------------------------
def test_create_get_and_stat(zk, clock):
    s = zk.connect(10_000)
    clock.now = 5000
    assert zk.create(s, "/a", b"hello") == "/a"
    data, stat = zk.get_data(s, "/a")
    assert data == b"hello"
    assert stat.czxid == stat.mzxid == stat.pzxid == zk.last_zxid
    assert (stat.ctime, stat.mtime, stat.version, stat.cversion, stat.aversion) == (5000, 5000, 0, 0, 0)
    assert (stat.ephemeral_owner, stat.data_length, stat.num_children) == (0, 5, 0)
    assert zk.exists(s, "/a") == stat
    assert zk.exists(s, "/nope") is None


def test_zxids_one_per_transaction_and_failed_writes_consume_one(zk):
    s = zk.connect(10_000)                       # createSession is a transaction too
    assert zk.last_zxid == ZXID_BASE + 1
    zk.create(s, "/a")
    assert zk.get_data(s, "/a")[1].czxid == ZXID_BASE + 2
    with pytest.raises(NodeExistsError):
        zk.create(s, "/a")                       # an error transaction
    zk.multi(s, [CreateOp("/b"), CreateOp("/c"), SetDataOp("/a", b"x")])
    assert zk.last_zxid == ZXID_BASE + 4
    assert {zk.exists(s, p).czxid for p in ("/b", "/c")} == {ZXID_BASE + 4}
    assert zk.exists(s, "/a").mzxid == ZXID_BASE + 4
    zk.get_data(s, "/a")                         # reads are not transactions
    assert zk.last_zxid == ZXID_BASE + 4


def test_set_data_versions(zk, clock):
    s = zk.connect(10_000)
    zk.create(s, "/a", b"0")
    clock.now = 2000
    stat = zk.set_data(s, "/a", b"1", version=0)
    assert (stat.version, stat.mtime, stat.ctime) == (1, 2000, 1000)
    with pytest.raises(BadVersionError) as e:
        zk.set_data(s, "/a", b"2", version=0)
    assert e.value.code == "BADVERSION"
    assert str(e.value) == "KeeperErrorCode = BadVersion for /a"
    assert zk.set_data(s, "/a", b"2").version == 2      # -1 matches any version
    assert zk.get_data(s, "/a")[0] == b"2"
    with pytest.raises(NoNodeError) as e:
        zk.set_data(s, "/missing", b"x")
    assert (e.value.code, str(e.value)) == ("NONODE", "KeeperErrorCode = NoNode for /missing")


def test_create_errors_in_zookeepers_order(zk):
    s = zk.connect(10_000)
    with pytest.raises(NoNodeError) as e:
        zk.create(s, "/a/b")
    assert e.value.path == "/a/b"
    zk.create(s, "/a")
    with pytest.raises(NodeExistsError) as e:
        zk.create(s, "/a")
    assert str(e.value) == "KeeperErrorCode = NodeExists for /a"
    zk.create(s, "/e", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError) as e:
        zk.create(s, "/e/child")
    assert e.value.code == "NOCHILDRENFOREPHEMERALS"
    with pytest.raises(NodeExistsError):          # NODEEXISTS is checked before the ephemeral parent
        zk.create(s, "/e")


def test_delete_errors_and_parent_stats(zk):
    s = zk.connect(10_000)
    zk.create(s, "/p")
    zk.create(s, "/p/c", b"x")
    parent = zk.exists(s, "/p")
    assert (parent.cversion, parent.num_children, parent.pzxid) == (1, 1, zk.exists(s, "/p/c").czxid)
    with pytest.raises(NotEmptyError) as e:
        zk.delete(s, "/p")
    assert str(e.value) == "KeeperErrorCode = Directory not empty for /p"
    with pytest.raises(BadVersionError):          # the version is checked before emptiness
        zk.delete(s, "/p", version=3)
    with pytest.raises(BadVersionError):
        zk.delete(s, "/p/c", version=1)
    zk.delete(s, "/p/c", version=0)
    parent = zk.exists(s, "/p")
    assert (parent.cversion, parent.num_children) == (2, 0)     # a deletion is a child change too
    assert parent.pzxid == zk.last_zxid                         # and moves pzxid
    with pytest.raises(NoNodeError):
        zk.delete(s, "/p/c")
    zk.delete(s, "/p")
    assert zk.get_children(s, "/") == []


def test_keeper_errors_are_store_errors_with_kafka_names():
    e = KeeperError.create("NONODE", "/x")
    assert isinstance(e, NoNodeError) and isinstance(e, StoreError)
    assert kafka_name(e) == "org.apache.zookeeper.KeeperException$NoNodeException"
    assert kafka_name(SessionExpiredError()) == "org.apache.zookeeper.KeeperException$SessionExpiredException"
    assert str(SessionExpiredError()) == "KeeperErrorCode = Session expired"


@pytest.mark.parametrize("path", ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/..", "/a\0b"])
def test_invalid_paths_are_rejected_before_the_server(zk, path):
    s = zk.connect(10_000)
    before = zk.last_zxid
    with pytest.raises(ValueError):
        zk.create(s, path)
    assert zk.last_zxid == before


def test_children_sorted_and_recursive_helpers(zk):
    s = zk.connect(10_000)
    zk.create_recursive(s, "/x/y/z", b"leaf")
    for name in ("b", "a", "c"):
        zk.create(s, f"/x/{name}")
    assert zk.get_children(s, "/x") == ["a", "b", "c", "y"]
    assert zk.get_data(s, "/x/y")[0] is None                  # parents are created without data
    assert zk.delete_recursive(s, "/x") == 6
    assert "/x" not in zk and zk.get_children(s, "/") == []


# --- sessions and ephemerals -------------------------------------------------------------------------
def test_session_ids_are_deterministic(zk):
    assert [zk.connect(10_000) for _ in range(3)] == [FIRST_SESSION_ID, FIRST_SESSION_ID + 1, FIRST_SESSION_ID + 2]


def test_close_session_deletes_ephemerals_without_expiry_callback(zk):
    expired = []
    s = zk.connect(10_000, on_expired=lambda: expired.append(1))
    other = zk.connect(10_000)
    zk.create(s, "/e", b"x", ephemeral=True)
    assert zk.exists(other, "/e").ephemeral_owner == s
    zk.close_session(s)
    assert zk.exists(other, "/e") is None
    assert not zk.is_alive(s) and expired == []
    with pytest.raises(SessionExpiredError):
        zk.get_data(s, "/")
    zk.close_session(s)                                        # closing twice is harmless


def test_expire_session_deletes_ephemerals_then_calls_back(zk):
    order = []
    s = zk.connect(10_000, on_expired=lambda: order.append("expired"))
    other = zk.connect(10_000, watcher=lambda e: order.append(str(e.type)))
    zk.create(s, "/e", ephemeral=True)
    zk.exists(other, "/e", watch=True)
    zk.expire_session(s)
    assert order == ["NodeDeleted", "expired"]
    with pytest.raises(SessionExpiredError):
        zk.create(s, "/x")
    with pytest.raises(SessionExpiredError):
        zk.expire_session(s)


def test_tick_expires_after_timeout_and_heartbeats_keep_alive(zk, clock):
    a = zk.connect(5_000)
    b = zk.connect(5_000)
    zk.create(a, "/a", ephemeral=True)
    zk.create(b, "/b", ephemeral=True)
    clock.now += 4_000
    zk.heartbeat(b)
    assert zk.next_session_deadline() == 1000 + 5_000
    clock.now += 999
    assert zk.tick() == []
    clock.now += 1
    assert zk.tick() == [a]                                    # last heartbeat + timeout <= now
    assert not zk.is_alive(a) and zk.is_alive(b)
    assert zk.exists(b, "/a") is None and zk.exists(b, "/b") is not None
    clock.now += 4_000
    zk.get_children(b, "/")                                    # any request counts as a heartbeat
    clock.now += 4_000
    assert zk.tick() == []
    clock.now += 1_000
    assert zk.tick() == [b]
    assert zk.next_session_deadline() is None


@pytest.mark.parametrize("requested, negotiated", [
    (1, 4_000), (1_000, 4_000), (3_999, 4_000), (4_000, 4_000), (6_000, 6_000), (18_000, 18_000),
    (40_000, 40_000), (40_001, 40_000), (60_000, 40_000)])
def test_session_timeout_is_negotiated_within_2_and_20_ticks(zk, requested, negotiated):
    """ZooKeeperServer.processConnectRequest clamps to [minSessionTimeout, maxSessionTimeout], by default
    [2, 20] x tickTime (2000 ms)."""
    assert (zk.tick_time_ms, zk.min_session_timeout_ms, zk.max_session_timeout_ms) == (2_000, 4_000, 40_000)
    assert zk.negotiated_session_timeout(requested) == negotiated
    s = zk.connect(requested)
    assert zk.session_timeout(s) == negotiated


def test_expiry_uses_the_negotiated_timeout(zk, clock):
    short = zk.connect(1_000)                                  # asks for 1 s, gets 4 s
    long = zk.connect(100_000)                                 # asks for 100 s, gets 40 s
    zk.create(short, "/e", ephemeral=True)
    assert zk.next_session_deadline() == 1_000 + 4_000
    clock.now += 1_000
    assert zk.tick() == []
    clock.now += 2_999
    assert zk.tick() == [] and "/e" in zk
    clock.now += 1
    assert zk.tick() == [short] and "/e" not in zk
    assert zk.next_session_deadline() == 1_000 + 40_000
    clock.now = 1_000 + 39_999
    assert zk.tick() == []
    clock.now += 1
    assert zk.tick() == [long]


def test_session_timeout_bounds_are_configurable(clock):
    zk = ZooKeeper(clock, tick_time_ms=3_000)                  # ZooKeeperServer.DEFAULT_TICK_TIME
    assert (zk.min_session_timeout_ms, zk.max_session_timeout_ms) == (6_000, 60_000)
    assert [zk.session_timeout(zk.connect(t)) for t in (1_000, 18_000, 90_000)] == [6_000, 18_000, 60_000]
    zk = ZooKeeper(clock, min_session_timeout_ms=1_000, max_session_timeout_ms=-1)   # -1: the default, 20 ticks
    assert (zk.tick_time_ms, zk.min_session_timeout_ms, zk.max_session_timeout_ms) == (2_000, 1_000, 40_000)
    assert zk.session_timeout(zk.connect(1_000)) == 1_000
    zk = ZooKeeper(clock, max_session_timeout_ms=10_000)
    assert zk.session_timeout(zk.connect(18_000)) == 10_000
    with pytest.raises(ValueError, match="minSessionTimeout must not be larger than maxSessionTimeout"):
        ZooKeeper(clock, min_session_timeout_ms=5_000, max_session_timeout_ms=4_000)
    with pytest.raises(ValueError, match="tickTime"):
        ZooKeeper(clock, tick_time_ms=0)


def test_snapshots_carry_the_session_timeout_bounds(clock):
    zk = ZooKeeper(clock, tick_time_ms=500, min_session_timeout_ms=200)
    s = zk.connect(50)
    d = zk.to_dict()
    assert (d["tick_time_ms"], d["min_session_timeout_ms"], d["max_session_timeout_ms"]) == (500, 200, 10_000)
    twin = ZooKeeper.from_dict(copy.deepcopy(d), clock)
    assert twin.to_dict() == d and twin.session_timeout(s) == 200
    assert [z.session_timeout(z.connect(60_000)) for z in (zk, twin)] == [10_000, 10_000]
    assert [z.session_timeout(z.connect(50)) for z in (zk, twin)] == [200, 200]
    old = {k: v for k, v in d.items() if not k.endswith("_ms")}            # a snapshot from before the bounds
    restored = ZooKeeper.from_dict(old, clock)
    assert (restored.min_session_timeout_ms, restored.max_session_timeout_ms) == (4_000, 40_000)
    assert restored.session_timeout(s) == 200                              # a session keeps what it was granted


def test_tick_returns_expired_sessions_in_id_order(zk, clock):
    ids = [zk.connect(t) for t in (3_000, 1_000, 2_000)]
    clock.now += 10_000
    assert zk.tick() == sorted(ids)


# --- sequential nodes ------------------------------------------------------------------------------------
def test_sequential_names_use_the_parents_cversion(zk):
    s = zk.connect(10_000)
    zk.create(s, "/q")
    assert zk.create(s, "/q/n-", sequential=True) == "/q/n-0000000000"
    assert zk.create(s, "/q/n-", sequential=True) == "/q/n-0000000001"
    zk.create(s, "/q/plain")
    zk.delete(s, "/q/n-0000000000")
    assert zk.create(s, "/q/n-", b"d", sequential=True) == "/q/n-0000000003"
    assert zk.create(s, "/q/", sequential=True) == "/q/0000000004"
    assert zk.get_children(s, "/q") == ["0000000004", "n-0000000001", "n-0000000003", "plain"]


def test_cversion_counts_creations_and_deletions(zk):
    """DataNode.copyStat reports 2 * (stored creations) - children: every child change counts."""
    s = zk.connect(10_000)
    zk.create(s, "/p")
    for c in ("a", "b", "c"):
        zk.create(s, f"/p/{c}")
    assert zk.exists(s, "/p").cversion == 3
    zk.delete(s, "/p/b")
    assert (zk.exists(s, "/p").cversion, zk.exists(s, "/p").num_children) == (4, 2)
    zk.multi(s, [DeleteOp("/p/a"), CreateOp("/p/d"), DeleteOp("/p/d")])        # three changes in one multi
    assert zk.exists(s, "/p").cversion == 7
    with pytest.raises(MultiError):                                           # a rolled-back multi changes nothing
        zk.multi(s, [DeleteOp("/p/c"), CreateOp("/p/e"), CheckOp("/p", 5)])
    assert zk.exists(s, "/p").cversion == 7
    zk.create(s, "/p/e", ephemeral=True)
    zk.close_session(s)                                                       # the ephemeral's deletion counts
    other = zk.connect(10_000)
    stat = zk.exists(other, "/p")
    assert (stat.cversion, stat.num_children) == (9, 1)
    assert zk.get_data(other, "/p")[1] == stat and [st for p, _, st in zk.nodes() if p == "/p"] == [stat]
    zk.delete(other, "/p/c")
    assert zk.exists(other, "/p").cversion == 10


def test_sequential_names_after_deletions_count_creations_only(zk):
    """The suffix is the parent's stored cversion (PrepRequestProcessor: creations only), not what Stat reports."""
    s = zk.connect(10_000)
    zk.create(s, "/q")
    names = [zk.create(s, "/q/n-", sequential=True) for _ in range(3)]
    assert names == ["/q/n-0000000000", "/q/n-0000000001", "/q/n-0000000002"]
    zk.delete(s, "/q/n-0000000002")                                           # the newest one goes: no reuse
    assert zk.exists(s, "/q").cversion == 4
    assert zk.create(s, "/q/n-", sequential=True) == "/q/n-0000000003"
    for name in zk.get_children(s, "/q"):
        zk.delete(s, f"/q/{name}")
    stat = zk.exists(s, "/q")
    assert (stat.cversion, stat.num_children) == (8, 0)
    assert zk.create(s, "/q/n-", sequential=True) == "/q/n-0000000004"     # not 8, the reported cversion
    results = zk.multi(s, [CreateOp("/q/n-", sequential=True), DeleteOp("/q/n-0000000005"),
                           CreateOp("/q/n-", sequential=True)])
    assert results == [CreateResult("/q/n-0000000005"), DeleteResult(), CreateResult("/q/n-0000000006")]
    assert zk.get_children(s, "/q") == ["n-0000000004", "n-0000000006"]
    assert zk.exists(s, "/q").cversion == 2 * 7 - 2


# --- multi ---------------------------------------------------------------------------------------------
def test_multi_success_results(zk):
    s = zk.connect(10_000)
    zk.create(s, "/a", b"0")
    results = zk.multi(s, [CheckOp("/a", 0), CreateOp("/a/s-", b"x", sequential=True), SetDataOp("/a", b"1", 0),
                           CreateOp("/b"), DeleteOp("/b")])
    assert results[0] == CheckResult()
    assert results[1] == CreateResult("/a/s-0000000000")
    assert type(results[2]) is SetDataResult and results[2].stat.version == 1
    assert results[3] == CreateResult("/b") and results[4] == DeleteResult()
    assert zk.get_children(s, "/") == ["a"]


def test_failed_multi_changes_nothing(zk):
    s = zk.connect(10_000)
    zk.create(s, "/a", b"0")
    zk.create(s, "/a/c")
    before = zk.to_dict()["nodes"]
    ops = [SetDataOp("/a", b"1"), CreateOp("/new", b"n", ephemeral=True), DeleteOp("/a/c"),
           CreateOp("/a/s-", sequential=True), CheckOp("/a", 0), CreateOp("/x")]
    with pytest.raises(MultiError) as e:
        zk.multi(s, ops)
    err = e.value
    assert (err.code, err.failed_index, err.path) == ("BADVERSION", 4, "/a")   # /a is at version 1 inside the multi
    assert err.results == [ErrorResult("OK")] * 4 + [ErrorResult("BADVERSION"), ErrorResult("RUNTIMEINCONSISTENCY")]
    assert zk.to_dict()["nodes"] == before
    zk.close_session(s)                          # the rolled-back ephemeral is not the session's
    assert zk.to_dict()["nodes"] == before


def test_multi_reports_the_first_failing_op(zk):
    s = zk.connect(10_000)
    with pytest.raises(MultiError) as e:
        zk.multi(s, [CreateOp("/a"), CreateOp("/a"), DeleteOp("/zzz")])
    assert e.value.code == "NODEEXISTS" and e.value.failed_index == 1
    assert e.value.results == [ErrorResult("OK"), ErrorResult("NODEEXISTS"), ErrorResult("RUNTIMEINCONSISTENCY")]
    assert "/a" not in zk


# --- watches ---------------------------------------------------------------------------------------------
def test_exists_watch_fires_on_creation_once(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    assert zk.exists(s, "/a", watch=True) is None
    zk.create(s, "/a")
    zk.set_data(s, "/a", b"x")
    assert w.take() == [("NodeCreated", "/a")]


def test_exists_watch_on_existing_node_fires_data_change_then_needs_rearming(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/a")
    zk.exists(s, "/a", watch=True)
    zk.exists(s, "/a", watch=True)                            # one watch per session and path
    zk.set_data(s, "/a", b"1")
    zk.set_data(s, "/a", b"2")
    assert w.take() == [("NodeDataChanged", "/a")]
    zk.exists(s, "/a", watch=True)
    zk.delete(s, "/a")
    assert w.take() == [("NodeDeleted", "/a")]


def test_get_data_watch(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    with pytest.raises(NoNodeError):
        zk.get_data(s, "/a", watch=True)                      # no watch on a missing node
    zk.create(s, "/a")
    assert w.take() == []
    zk.get_data(s, "/a", watch=True)
    zk.set_data(s, "/a", b"1")
    zk.get_data(s, "/a", watch=True)
    zk.delete(s, "/a")
    assert w.take() == [("NodeDataChanged", "/a"), ("NodeDeleted", "/a")]


def test_child_watch(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/p")
    zk.get_children(s, "/p", watch=True)
    zk.create(s, "/p/a")
    zk.create(s, "/p/b")                                      # one-shot
    assert w.take() == [("NodeChildrenChanged", "/p")]
    zk.get_children(s, "/p", watch=True)
    zk.set_data(s, "/p/a", b"x")                              # a child's data is not a child change
    zk.set_data(s, "/p", b"x")                                # nor the node's own data
    assert w.take() == []
    zk.delete(s, "/p/a")
    assert w.take() == [("NodeChildrenChanged", "/p")]
    zk.get_children(s, "/p", watch=True)
    zk.delete(s, "/p/b")
    zk.get_children(s, "/p", watch=True)
    zk.delete(s, "/p")                                        # the watched parent itself goes
    assert w.take() == [("NodeChildrenChanged", "/p"), ("NodeDeleted", "/p")]


def test_data_and_child_watch_on_deleted_node_give_one_event(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/p")
    zk.get_data(s, "/p", watch=True)
    zk.get_children(s, "/p", watch=True)
    zk.delete(s, "/p")
    assert w.take() == [("NodeDeleted", "/p")]


def test_events_ordered_by_session_then_firing_order(zk):
    seen = []
    sessions = [zk.connect(10_000, watcher=lambda e, i=i: seen.append((i, str(e.type), e.path))) for i in range(3)]
    s0, s1, s2 = sessions
    zk.create(s0, "/a")
    zk.create(s0, "/b")
    zk.exists(s2, "/a", watch=True)
    zk.exists(s1, "/b", watch=True)
    zk.exists(s1, "/a", watch=True)
    zk.get_children(s0, "/", watch=True)
    zk.multi(s0, [SetDataOp("/a", b"1"), DeleteOp("/b")])
    # session 1 armed /b before /a, but the server sends the events as the multi's ops fire them
    assert seen == [(0, "NodeChildrenChanged", "/"), (1, "NodeDataChanged", "/a"), (1, "NodeDeleted", "/b"),
                    (2, "NodeDataChanged", "/a")]


def test_a_multis_events_come_in_op_order_not_arming_order(zk):
    """The server sends each op's events down the connection while it applies the op (DataTree.processTxn
    over the multi's txns, WatchManager.triggerWatch), so one session sees them in op order."""
    seen = []
    s, t = (zk.connect(10_000, watcher=lambda e, i=i: seen.append((i, str(e.type), e.path))) for i in range(2))
    zk.create(s, "/p")
    zk.create(s, "/p/c")
    zk.create(s, "/x")
    zk.create(s, "/y")
    # armed in the reverse of the order the multi fires them
    zk.exists(s, "/y", watch=True)
    zk.get_children(s, "/p", watch=True)
    zk.exists(s, "/p/c", watch=True)
    zk.exists(s, "/new", watch=True)
    zk.get_data(s, "/x", watch=True)
    zk.exists(t, "/y", watch=True)
    zk.exists(t, "/x", watch=True)
    zk.multi(t, [SetDataOp("/x", b"1"), CreateOp("/new"), CheckOp("/p"), DeleteOp("/p/c"), DeleteOp("/y")])
    assert seen == [(0, "NodeDataChanged", "/x"), (0, "NodeCreated", "/new"), (0, "NodeDeleted", "/p/c"),
                    (0, "NodeChildrenChanged", "/p"), (0, "NodeDeleted", "/y"),
                    (1, "NodeDataChanged", "/x"), (1, "NodeDeleted", "/y")]
    seen.clear()
    for path in ("/x", "/new"):                                              # the same through multi_many
        zk.exists(s, path, watch=True)
    zk.multi_many(t, [[SetDataOp("/new", b"n"), SetDataOp("/x", b"2")], [DeleteOp("/x")]])
    assert seen == [(0, "NodeDataChanged", "/new"), (0, "NodeDataChanged", "/x")]


def test_session_close_fires_in_the_order_its_ephemerals_are_deleted(zk):
    w = Recorder()
    watcher = zk.connect(10_000, watcher=w)
    s = zk.connect(10_000)
    zk.create(watcher, "/p")
    for path in ("/p/a", "/p/b", "/z"):
        zk.create(s, path, ephemeral=True)
    zk.exists(watcher, "/z", watch=True)
    zk.exists(watcher, "/p/b", watch=True)
    zk.get_children(watcher, "/p", watch=True)
    zk.exists(watcher, "/p/a", watch=True)
    zk.close_session(s)                                  # one transaction deleting /p/a, /p/b, /z in that order
    assert w.take() == [("NodeDeleted", "/p/a"), ("NodeChildrenChanged", "/p"), ("NodeDeleted", "/p/b"),
                        ("NodeDeleted", "/z")]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_multis_events_are_its_ops_events_in_op_order(data):
    """Per session, a successful multi sends what its ops sent one by one (the same one-shot watches)."""
    clock = Clock()
    zk = ZooKeeper(clock)
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    ref = Reference()
    for path in ("/a", "/b", "/a/b", "/b/a"):
        zk.create(s, path, b"x")
        ref.apply(CreateOp(path, b"x"))
    paths = ["/", "/a", "/b", "/a/b", "/b/a", "/a/s-", "/b/b"]
    for path in data.draw(st.permutations(paths), label="data watches")[:data.draw(st.integers(0, len(paths)))]:
        zk.exists(s, path, watch=True)
    for path in data.draw(st.permutations(paths), label="child watches")[:data.draw(st.integers(0, len(paths)))]:
        if path in zk:
            zk.get_children(s, path, watch=True)
    ops = []
    for _ in range(data.draw(st.integers(2, 6), label="ops")):
        op = draw_op(data, ref)
        try:
            ref.apply(op)
        except RefError:
            continue
        ops.append(op)
    twin = ZooKeeper.from_dict(zk.to_dict(), clock)
    tw = Recorder()
    twin.attach(s, watcher=tw)
    zk.multi(s, ops)
    for op in ops:
        twin.multi(s, [op])
    assert w.take() == tw.take()
    assert [p for p, _, _ in zk.nodes()] == [p for p, _, _ in twin.nodes()]


def test_failed_multi_fires_no_watch_and_keeps_it_armed(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/a")
    zk.exists(s, "/a", watch=True)
    with pytest.raises(MultiError):
        zk.multi(s, [SetDataOp("/a", b"1"), CheckOp("/a", 0)])
    assert w.take() == []
    zk.set_data(s, "/a", b"2")
    assert w.take() == [("NodeDataChanged", "/a")]


def test_watcher_may_reread_rearm_and_write(zk):
    log = []

    def watcher(event):
        log.append((str(event.type), event.path))
        if event.type is EventType.NODE_DATA_CHANGED:
            data, _ = zk.get_data(s, event.path, watch=True)  # re-arm from inside the callback
            if data == b"1":
                zk.set_data(s, event.path, b"2")              # a write from inside: delivered after this returns
                log.append(("wrote", "2"))

    s = zk.connect(10_000, watcher=watcher)
    zk.create(s, "/a")
    zk.get_data(s, "/a", watch=True)
    zk.set_data(s, "/a", b"1")
    assert log == [("NodeDataChanged", "/a"), ("wrote", "2"), ("NodeDataChanged", "/a")]
    assert zk.get_data(s, "/a")[0] == b"2"
    zk.set_data(s, "/a", b"3")                               # re-armed by the second callback
    assert log[-1] == ("NodeDataChanged", "/a")


def test_watcher_errors_do_not_break_delivery(zk):
    w = Recorder()
    bad = zk.connect(10_000, watcher=lambda e: 1 / 0)
    good = zk.connect(10_000, watcher=w)
    zk.create(good, "/a")
    zk.exists(bad, "/a", watch=True)
    zk.exists(good, "/a", watch=True)
    zk.set_data(good, "/a", b"x")
    assert w.take() == [("NodeDataChanged", "/a")]


def test_closed_session_watches_are_dropped(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    other = zk.connect(10_000)
    zk.create(other, "/a")
    zk.exists(s, "/a", watch=True)
    zk.get_children(s, "/", watch=True)
    zk.close_session(s)
    zk.set_data(other, "/a", b"x")
    zk.create(other, "/b")
    assert w.take() == []


# --- inspection and snapshots ----------------------------------------------------------------------------
def test_dump_format(zk):
    s = zk.connect(10_000)
    zk.create_recursive(s, "/brokers/ids/1", b'{"x":1}', ephemeral=True)
    zk.create(s, "/controller_epoch", b"7")
    zk.create(s, "/brokers/ids/10", b"ten")
    zk.create(s, "/brokers-x", b"line1\nline2")
    zk.create(s, "/brokers/empty", b"")
    assert zk.dump() == (
        "/\n"
        "/brokers\n"
        "/brokers/empty\n"
        "/brokers/ids\n"
        '/brokers/ids/1 = {"x":1}\n'
        "/brokers/ids/10 = ten\n"
        "/brokers-x = line1\\nline2\n"
        "/controller_epoch = 7\n")
    assert [p for p, _, _ in zk.nodes()] == [line.split(" = ")[0] for line in zk.dump().splitlines()]


def test_to_dict_from_dict_round_trip(zk, clock):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/a", b"1")
    zk.create(s, "/a/e", b"2", ephemeral=True)
    zk.create(s, "/a/q-", sequential=True)
    zk.set_data(s, "/a", b"3")
    zk.exists(s, "/a", watch=True)
    zk.get_children(s, "/a", watch=True)
    clock.now += 500
    d = zk.to_dict()
    twin = ZooKeeper.from_dict(copy.deepcopy(d), clock)
    assert twin.to_dict() == d
    assert twin.dump() == zk.dump()
    assert list(twin.nodes()) == list(zk.nodes())
    w2 = Recorder()
    twin.attach(s, watcher=w2)
    for z in (zk, twin):
        z.create(s, "/a/q-", sequential=True)
        z.expire_session(s)
    assert twin.to_dict() == zk.to_dict()
    assert w.take() == w2.take() == [("NodeChildrenChanged", "/a")]


# --- hypothesis: against a reference model ------------------------------------------------------------------
class RefError(Exception):
    def __init__(self, code):
        self.code = code


class Reference:
    """A dict-of-paths ZooKeeper: path -> [data, version, child creations, child changes]. Sequential names
    count the creations; the cversion a client sees counts the changes (creations and deletions)."""

    def __init__(self):
        self.nodes = {"/": [None, 0, 0, 0]}

    @staticmethod
    def parent(path):
        return path.rsplit("/", 1)[0] or "/"

    def children(self, path):
        return sorted(p.rsplit("/", 1)[1] for p in self.nodes if p != "/" and self.parent(p) == path)

    def apply(self, op):
        n = self.nodes
        if isinstance(op, CreateOp):
            parent = self.parent(op.path)
            if parent not in n:
                raise RefError("NONODE")
            path = op.path + (f"{n[parent][2]:010d}" if op.sequential else "")
            if path in n:
                raise RefError("NODEEXISTS")
            n[path] = [op.data, 0, 0, 0]
            n[parent][2] += 1
            n[parent][3] += 1
            return path
        if op.path not in n:
            raise RefError("NONODE")
        if op.version != -1 and n[op.path][1] != op.version:
            raise RefError("BADVERSION")
        if isinstance(op, SetDataOp):
            n[op.path][0] = op.data
            n[op.path][1] += 1
        elif isinstance(op, DeleteOp):
            if self.children(op.path):
                raise RefError("NOTEMPTY")
            del n[op.path]
            n[self.parent(op.path)][3] += 1

    def multi(self, ops):
        saved = copy.deepcopy(self.nodes)
        try:
            for op in ops:
                self.apply(op)
        except RefError:
            self.nodes = saved
            raise


def draw_op(data, ref: Reference):
    """An op that is likely to succeed: paths near the existing tree, versions mostly right."""
    existing = sorted(p for p in ref.nodes if p != "/")
    kind = data.draw(st.sampled_from(["create", "create", "set", "delete", "delete", "check"]))
    if kind == "create":
        parent = data.draw(st.sampled_from(["/"] + [p for p in existing if p.count("/") < 3]))
        path = ("" if parent == "/" else parent) + "/" + data.draw(st.sampled_from(["a", "b", "s-"]))
        return CreateOp(path, data.draw(st.sampled_from([b"", b"d1"])), False, data.draw(st.booleans()))
    path = data.draw(st.sampled_from(existing + ["/a", "/a/b"]))
    actual = ref.nodes[path][1] if path in ref.nodes else 0
    version = data.draw(st.sampled_from([-1, actual, actual, actual + 1]))
    if kind == "set":
        return SetDataOp(path, data.draw(st.sampled_from([b"v1", b"v2"])), version)
    return DeleteOp(path, version) if kind == "delete" else CheckOp(path, version)


def _single(zk, s, op):
    if isinstance(op, CreateOp):
        return zk.create(s, op.path, op.data, sequential=op.sequential)
    if isinstance(op, SetDataOp):
        return zk.set_data(s, op.path, op.data, op.version)
    if isinstance(op, DeleteOp):
        return zk.delete(s, op.path, op.version)
    return zk.multi(s, [op])


def _assert_same_tree(zk, s, ref):
    assert sorted(p for p, _, _ in zk.nodes()) == sorted(ref.nodes)
    for path, (data, version, _, changes) in ref.nodes.items():
        got, stat = zk.get_data(s, path)
        children = ref.children(path)
        assert (got or None, stat.version, stat.cversion) == (data or None, version, changes), path
        assert zk.get_children(s, path) == children
        assert stat.num_children == len(children)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_operations_match_a_reference_model(data):
    zk = ZooKeeper(Clock())
    s = zk.connect(10_000)
    ref = Reference()
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        n_ops = data.draw(st.sampled_from([1, 1, 2, 3, 4]))
        probe = copy.deepcopy(ref)          # draw each op against the tree the earlier ops of the multi left
        ops = []
        for _ in range(n_ops):
            op = draw_op(data, probe)
            ops.append(op)
            try:
                probe.apply(op)
            except RefError:
                pass
        expected_error = None
        try:
            ref.apply(ops[0]) if n_ops == 1 else ref.multi(ops)
        except RefError as e:
            expected_error = e.code
        before = zk.to_dict()["nodes"] if expected_error else None
        try:
            _single(zk, s, ops[0]) if n_ops == 1 else zk.multi(s, ops)
            error = None
        except KeeperError as e:
            error = e.code
        assert error == expected_error, ops
        if error is not None:
            assert zk.to_dict()["nodes"] == before            # a failed write, or multi, changes nothing
        _assert_same_tree(zk, s, ref)


# --- batches: multi_many, iter_multi, get_data_and_version_many ------------------------------------------------
def _outcome(fn):
    """What a call gives: its result, or the error it raised (type, code, per-op results, index, path)."""
    try:
        return ("ok", fn())
    except MultiError as e:
        return ("MultiError", e.code, e.results, e.failed_index, e.path)
    except KeeperError as e:
        return (type(e).__name__, e.code)


def _entry(r):
    if isinstance(r, MultiError):
        return ("MultiError", r.code, r.results, r.failed_index, r.path)
    if isinstance(r, KeeperError):
        return (type(r).__name__, r.code)
    return ("ok", r)


def _twins(clock):
    """Two stores with the same tree, sessions and armed watches; each session records its events."""
    out = []
    for _ in range(2):
        zk = ZooKeeper(clock)
        w, other = Recorder(), Recorder()
        s, o = zk.connect(10_000, watcher=w), zk.connect(10_000, watcher=other)
        zk.create(s, "/a", b"0")
        for c in ("x", "y", "z"):
            zk.create(s, f"/a/{c}", b"c")
        zk.create(s, "/e", b"", ephemeral=True)
        zk.get_data(o, "/a", watch=True)
        zk.get_children(o, "/a", watch=True)
        zk.exists(s, "/a/x", watch=True)
        zk.exists(o, "/new", watch=True)
        out.append((zk, s, w, other))
    return out


BATCHES = [
    [CheckOp("/a", 0), SetDataOp("/a", b"1", 0)],
    [SetDataOp("/a", b"2"), DeleteOp("/a/x"), CreateOp("/a/s-", b"q", sequential=True), CheckOp("/a", 0)],  # fails
    [CreateOp("/new", b"n"), CreateOp("/a/w", b"w", ephemeral=True)],
    [CheckOp("/controller_epoch", 0), SetDataOp("/a/y", b"y")],                                          # fails
    [DeleteOp("/a/x"), SetDataOp("/a", b"3", 1)],
    [CreateOp("/e/child")],                                                                              # fails
]


def test_multi_many_is_multi_one_after_the_other(clock):
    (zk, s, w, other), (twin, ts, tw, tother) = _twins(clock)
    before = twin.last_zxid
    expected = [_outcome(lambda ops=ops: twin.multi(ts, ops)) for ops in BATCHES]
    got = [_entry(r) for r in zk.multi_many(s, BATCHES)]
    assert got == expected
    assert [g[0] for g in got] == ["ok", "MultiError", "ok", "MultiError", "ok", "MultiError"]
    assert got[1][1:4] == ("BADVERSION", [ErrorResult("OK")] * 3 + [ErrorResult("BADVERSION")], 3)
    assert zk.last_zxid == twin.last_zxid == before + len(BATCHES)          # a failed multi uses its zxid too
    assert zk.to_dict() == twin.to_dict()                                  # tree, stats, times and watches
    assert w.take() == tw.take() and other.take() == tother.take()
    zk.close_session(s)                                                     # ephemerals of rolled-back multis
    twin.close_session(ts)                                                  # are not the session's
    assert zk.to_dict() == twin.to_dict()


def test_multi_many_rolls_back_a_failing_multi_in_the_middle(zk):
    s = zk.connect(10_000)
    zk.create(s, "/p", b"0")
    for c in ("a", "b"):
        zk.create(s, f"/p/{c}")
    zk.create(s, "/q")
    snapshots = []
    out = zk.multi_many(s, [[SetDataOp("/p", b"1")],
                            [SetDataOp("/p", b"2"), DeleteOp("/p/a"), CreateOp("/p/c"), DeleteOp("/q"),
                             DeleteOp("/nope")],
                            [CreateOp("/p/d")]])
    snapshots.append(zk.to_dict()["nodes"])
    assert type(out[0]) is list and type(out[2]) is list
    assert isinstance(out[1], MultiError) and (out[1].code, out[1].failed_index) == ("NONODE", 4)
    assert zk.get_children(s, "/p") == ["a", "b", "d"]
    data, stat = zk.get_data(s, "/p")
    assert (data, stat.version, stat.num_children, stat.cversion) == (b"1", 1, 3, 3)
    assert "/q" in zk


def test_multi_many_delivers_each_multis_events_before_the_next_one(zk):
    log = []

    def watcher(event):
        log.append((str(event.type), event.path))
        if event.path == "/a":
            zk.exists(s, "/a", watch=True)
            if zk.get_data(s, "/a")[0] == b"1":
                zk.set_data(s, "/b", b"from-watcher")        # a write from inside the callback

    s = zk.connect(10_000, watcher=watcher)
    zk.create(s, "/a")
    zk.create(s, "/b")
    zk.exists(s, "/a", watch=True)
    zk.exists(s, "/b", watch=True)
    out = zk.multi_many(s, [[SetDataOp("/a", b"1")], [SetDataOp("/b", b"2", 1)], [SetDataOp("/a", b"3")]])
    # the watcher's write came between the first and the second multi: the second one sees version 1
    assert type(out[1]) is list and out[1][0].stat.version == 2
    assert log == [("NodeDataChanged", "/a"), ("NodeDataChanged", "/b"), ("NodeDataChanged", "/a")]


def test_iter_multi_applies_each_multi_when_reached(zk):
    s = zk.connect(10_000)
    it = zk.iter_multi(s, ([CreateOp(f"/n{i}")] for i in range(3)))
    assert "/n0" not in zk
    assert next(it) == [CreateResult("/n0")] and "/n0" in zk and "/n1" not in zk
    assert list(it) == [[CreateResult("/n1")], [CreateResult("/n2")]]


def test_multi_many_session_errors_and_refused_ops(zk):
    s = zk.connect(10_000)
    with pytest.raises(TypeError):                       # refused before sending, after the multis before it
        zk.multi_many(s, [[CreateOp("/a")], ["not an op"], [CreateOp("/b")]])
    assert "/a" in zk and "/b" not in zk
    with pytest.raises(ValueError):
        zk.multi_many(s, [[CreateOp("/c")], [CheckOp("relative")]])
    assert "/c" in zk
    zxid = zk.last_zxid
    zk.expire_session(s)
    out = zk.multi_many(s, [[CreateOp("/d")], [CheckOp("/a")]])
    assert [type(r) for r in out] == [SessionExpiredError, SessionExpiredError]
    assert zk.last_zxid == zxid + 1                      # the expiry only
    assert zk.multi_many(s, []) == []


def test_get_data_and_version_many_is_get_data_and_version_per_path(zk):
    w = Recorder()
    s = zk.connect(10_000, watcher=w)
    zk.create(s, "/a", b"1")
    zk.set_data(s, "/a", b"2")
    zk.create(s, "/b", None)
    got = zk.get_data_and_version_many(s, ["/a", "/missing", "/b", "/a"], watch={"/a", "/missing"})
    assert got == [(b"2", 1), None, (None, 0), (b"2", 1)]
    zk.create(s, "/missing")                             # no watch was armed on the missing node
    zk.set_data(s, "/b", b"x")                           # nor on /b
    zk.set_data(s, "/a", b"3")
    assert w.take() == [("NodeDataChanged", "/a")]
    assert zk.get_data_and_version_many(s, iter(["/a"])) == [(b"3", 2)]
    zk.expire_session(s)
    with pytest.raises(SessionExpiredError):
        zk.get_data_and_version_many(s, ["/a"])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_multi_many_matches_sequential_multis(data):
    clock = Clock()
    zk, twin = ZooKeeper(clock), ZooKeeper(clock)
    recorders = [Recorder(), Recorder()]
    s = zk.connect(10_000, watcher=recorders[0])
    assert twin.connect(10_000, watcher=recorders[1]) == s
    ref = Reference()
    for _ in range(data.draw(st.integers(1, 6), label="rounds")):
        batches = []
        for _ in range(data.draw(st.integers(0, 5), label="multis")):
            batches.append([draw_op(data, ref) for _ in range(data.draw(st.integers(1, 4)))])
            try:
                ref.multi(batches[-1])
            except RefError:
                pass
        watched = data.draw(st.lists(st.sampled_from(["/", "/a", "/b", "/a/b", "/a/s-"]), max_size=3))
        for z in (zk, twin):                              # arm the same watches on both
            for path in watched:
                z.exists(s, path, watch=True)
                if path in z:
                    z.get_children(s, path, watch=True)
        expected = [_outcome(lambda ops=ops: twin.multi(s, ops)) for ops in batches]
        assert [_entry(r) for r in zk.multi_many(s, batches)] == expected
        assert zk.to_dict() == twin.to_dict()
        assert recorders[0].take() == recorders[1].take()
        _assert_same_tree(zk, s, ref)


def test_znodes_are_plain_tuples_the_gc_does_not_track(zk):
    import gc
    s = zk.connect(10_000)
    zk.create(s, "/p", b"")
    for c in ("a", "b"):
        zk.create(s, f"/p/{c}", b"x")
    zk.set_data(s, "/p/a", b"y")
    gc.collect()
    assert not any(gc.is_tracked(zk._nodes[p]) for p in ("/p/a", "/p/b"))   # leaves (a set of children is tracked)
    assert zk.get_data(s, "/p/a")[1].version == 1 and zk.get_children(s, "/p") == ["a", "b"]
