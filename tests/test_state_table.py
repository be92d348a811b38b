"""The /state table of the ZooKeeper model and its batch operations: nothing about them is observable.

The ``/brokers/topics/<t>/partitions/<p>/state`` znodes live as columns (controller/store/state_table.py)
and the KafkaZkClient's column methods and ``/state`` creates go through ``ZooKeeper.get_state_rows``,
``set_state_rows`` and ``create_state_rows``. The differential test runs the same random operations on
three models:

* ``fast``: the table, and the client's batch forms;
* ``ref``: the table, and the per-partition requests (``PartitionStateColumnsMixin``, ``iter_multi``, the
  topic znode from a dict of replicas, creation columns sent as the dict of ``create_partition_states``);
* ``bytes``: no table at all (every znode a tuple of bytes, as before the table), the per-partition requests;

(the partitions' parents are rows of the table too, and are worked on directly: data set, children
created, deleted, watched, multis rolled back), and asserts after every operation that the three agree
on what each call returned or raised, the watch events delivered (to a handler of the client and to
another session), and ``dump()``, ``to_dict(per_znode=True)``, every Stat and the zxid. Handlers may act
from inside a batch (bump the controller epoch, expire the writer's session, write bytes of another form
to a later partition, create or delete one, re-arm their watch).
"""
from __future__ import annotations

import copy
import logging
import random

import msgpack
import numpy as np
import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.store.kafka_zk_client import KafkaZkClient
from controller.store.state_columns import PartitionStateColumnsMixin
from controller.store.state_table import (
    MAX_ISR, MIN_ROWS, encode_state, parse_state, state_key,
)
from controller.store.zk_data import encode_leader_and_isr, encode_topic, parse_json, topic_path
from controller.store.zookeeper import CheckOp, CreateOp, DeleteOp, KeeperError, SetDataOp, ZooKeeper
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment

T0 = 1_700_000_000_000
TOPICS = ("a", "b")
PARTITIONS = (0, 1, 2, 3, 4, 5, 6, 7, MIN_ROWS + 4)   # the last one is kept as bytes (beyond a small table)


class Clock:
    def __init__(self, now: int = T0):
        self.now = now

    def __call__(self) -> int:
        return self.now


class BytesZooKeeper(ZooKeeper):
    """The model without the table: every /state znode a tuple with its bytes."""

    def _put(self, path, node):
        self._nodes[path] = node

    def _load_state_tables(self):
        pass


class ReferenceClient(KafkaZkClient):
    """The client with the per-partition requests only (the mixin's column methods, iter_multi creates)."""
    read_partition_state_columns = PartitionStateColumnsMixin.read_partition_state_columns
    write_leader_and_isr_columns = PartitionStateColumnsMixin.write_leader_and_isr_columns

    def _update_leader_and_isr_rows(self, states, controller_epoch, expected):
        return None

    def _create_state_znodes(self, states, expected):
        return None

    def _create_parents_in_bulk(self, runs, expected):
        return False

    def create_partition_states_columns(self, segments, controller_epoch, expected):
        return self._create_columns_by_dict(segments, controller_epoch, expected)

    def create_topic_with_replica_matrix(self, topic, configs, replicas, topic_id=None, *, validate=True,
                                         uses_topic_id=True):
        assignment = {p: tuple(r) for p, r in enumerate(np.asarray(replicas).tolist())}
        if validate:
            self.validate_topic_create(topic, assignment)
        return self._create_topic(topic, dict(configs or {}), assignment, topic_id, uses_topic_id)

    def create_topic_assignment(self, topic, topic_id, assignment):
        self._create_recursive(topic_path(topic), encode_topic(topic_id, {
            p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()}))

    def get_replica_assignment_columns(self, topics):
        """The topics' assignments as TopicZNode.decode reads them (a JSON parse), as (topic id, [(partition,
        replicas, adding, removing)])."""
        out = {}
        for topic in sorted(set(topics)):
            r = self._get_data(topic_path(topic))
            if r is None:
                continue
            js = parse_json(r[0])
            if not isinstance(js, dict):
                out[topic] = (None, [])
                continue
            parts, adding, removing = (js.get(k) or {} for k in ("partitions", "adding_replicas", "removing_replicas"))
            out[topic] = (js.get("topic_id"), [(int(p), tuple(parts[p]), tuple(adding.get(p, ())),
                                                tuple(removing.get(p, ()))) for p in sorted(parts, key=int)])
        return out


def state(topic, p):
    return f"/brokers/topics/{topic}/partitions/{p}/state"


def canonical(leader=1, epoch=0, isr=(1, 2), recovery=0, ce=1) -> bytes:
    return encode_leader_and_isr(LeaderAndIsr(leader, epoch, tuple(isr), recovery), ce)


OTHER_FORMS = (
    b"garbage", b"", None,
    b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":3,"isr":[2, 1]}',             # a space
    b'{"controller_epoch":1,"leader":2,"version":1,"leader_recovery_state":0,"leader_epoch":3,"isr":[2]}',
    b'{"leader":2,"controller_epoch":1,"version":1,"leader_epoch":3,"isr":[2]}',                 # key order
    b'{"controller_epoch":1,"leader":02,"version":1,"leader_epoch":3,"isr":[2]}',                # leading zero
    b'{"controller_epoch":99999999999,"leader":2,"version":1,"leader_epoch":3,"isr":[2]}',       # beyond int32
    b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":3,"isr":[' + b",".join(b"%d" % i for i in range(
        MAX_ISR + 1)) + b"]}",                                                                  # a long ISR
    canonical(3, 7, (3, 1)), canonical(-1, 2, (), 1, 4),                                       # the canonical form
)


# --- the bodies ---------------------------------------------------------------------------------------
ints32 = st.integers(-(1 << 31), (1 << 31) - 1)


@settings(max_examples=300, deadline=None)
@given(ce=ints32, leader=ints32, epoch=ints32, recovery=st.integers(0, 255),
       isr=st.lists(ints32, max_size=MAX_ISR).map(tuple))
def test_encode_state_is_encode_leader_and_isr_and_parses_back(ce, leader, epoch, recovery, isr):
    data = encode_leader_and_isr(LeaderAndIsr(leader, epoch, isr, recovery), ce)
    assert encode_state(ce, leader, epoch, recovery, isr) == data
    assert parse_state(data) == (ce, leader, epoch, recovery, isr)


def test_bodies_in_another_form_are_not_parsed():
    for data in OTHER_FORMS[:-2] + (bytearray(canonical()),):
        assert parse_state(data) is None, data
    assert parse_state(canonical(3, 7, (3, 1))) == (1, 3, 7, 0, (3, 1))


def test_state_key_takes_only_kafkas_paths():
    assert state_key("/brokers/topics/t/partitions/12/state") == ("t", 12)
    for path in ("/brokers/topics/t/partitions/012/state", "/brokers/topics/t/partitions/-1/state",
                 "/brokers/topics/t/partitions/1/state/x", "/brokers/topics/t/partitions/x/state",
                 "/brokers/topics/t/x/1/state", "/brokers/topics/t/partitions/99999999999/state",
                 "/brokers/topics/t/partitions/\u0661/state", "/other/topics/t/partitions/1/state"):
        assert state_key(path) is None, path


# --- the layout ---------------------------------------------------------------------------------------
@pytest.fixture
def clock():
    return Clock()


def test_canonical_bodies_live_in_the_table_and_others_stay_bytes(clock):
    zk = ZooKeeper(clock)
    s = zk.connect(10_000)
    zk.create_recursive(s, "/brokers/topics/t/partitions/0", None)
    zk.create(s, "/brokers/topics/t/partitions/1", None)
    zk.create(s, state("t", 0), canonical())
    assert zk._nodes[state("t", 0)] == 0 and zk._tables["t"].count == 1
    assert zk.get_data(s, state("t", 0))[0] == canonical()
    zk.set_data(s, state("t", 0), OTHER_FORMS[3])                       # another form: kept verbatim
    assert type(zk._nodes[state("t", 0)]) is tuple and not zk._tables["t"].count    # the parents stay rows
    assert zk._nodes["/brokers/topics/t/partitions/0"] == ~0 and zk._tables["t"].pcount == 2
    assert zk.get_data(s, state("t", 0))[0] == OTHER_FORMS[3]
    zk.set_data(s, state("t", 0), canonical(2))                          # and back
    assert zk._nodes[state("t", 0)] == 0
    zk.create(s, state("t", 1), canonical(), ephemeral=True)            # ephemeral: a tuple
    assert type(zk._nodes[state("t", 1)]) is tuple
    zk.create(s, state("t", 0) + "/x", b"")                              # a /state with a child: a tuple
    assert type(zk._nodes[state("t", 0)]) is tuple
    zk.delete(s, state("t", 0) + "/x")
    zk.set_data(s, state("t", 0), canonical(3))                          # cversion 1 now: still a tuple
    assert type(zk._nodes[state("t", 0)]) is tuple
    assert zk.get_data(s, state("t", 0))[1].cversion == 2


def test_deleting_one_bulk_created_parent_keeps_the_others(clock):
    """A topic's /partitions whose children are its parent rows (bulk creation): deleting one parent (a
    previous controller's partial topic deletion) leaves the other partitions its children."""
    for n, gone in ((2, 0), (2, 1), (3, 1)):
        zk = ZooKeeper(clock)
        client = KafkaZkClient(zk, session_timeout_ms=10_000, clock=clock, rng=random.Random(1))
        client.create_top_level_paths()
        replicas = np.array([[0, 1]] * n)
        client.create_topic_with_replica_matrix("t", {}, replicas)
        zk.create_recursive(client.session_id, "/controller_epoch", b"1")
        assert client.create_partition_states_columns([("t", np.arange(n), np.zeros(n, dtype=np.int32), replicas)],
                                                      1, 0) == [{}]
        s = client.session_id
        client._delete_recursive(f"/brokers/topics/t/partitions/{gone}")     # zkClient.deleteRecursive
        left = [p for p in range(n) if p != gone]
        assert sorted(zk.get_children(s, "/brokers/topics/t/partitions"), key=int) == [str(p) for p in left]
        assert all(zk.get_data(s, state("t", p))[0] is not None for p in left)


def test_snapshots_have_the_same_form_and_old_ones_load_into_the_table(clock):
    zk = ZooKeeper(clock)
    old = BytesZooKeeper(clock)                                          # as a snapshot from before the table
    for z in (zk, old):
        s = z.connect(10_000)
        z.create_recursive(s, "/brokers/topics/t/partitions/0", None)
        z.create(s, "/brokers/topics/t/partitions/1", None)
        z.create(s, state("t", 0), canonical())
        z.create(s, state("t", 1), b"garbage")
        z.exists(s, state("t", 0), watch=True)
        z.set_data(s, state("t", 1), canonical(5))
    d = old.to_dict(per_znode=True)
    assert zk.to_dict(per_znode=True) == d and all(type(n) is tuple for n in old._nodes.values())
    restored = ZooKeeper.from_dict(copy.deepcopy(d), clock)                # an old snapshot
    assert restored.to_dict(per_znode=True) == d and restored.dump() == old.dump()
    assert restored._nodes[state("t", 0)] == 0 and restored._nodes[state("t", 1)] == 1
    assert restored._state_watched == {"t": {0}}
    assert list(restored.nodes()) == list(old.nodes())
    columns = zk.to_dict()                                                 # the rows as columns
    assert not any(p.startswith("/brokers/topics/t/partitions/") for p, *_ in columns["nodes"])
    assert [t for t, _ in columns["tables"]] == ["t"] and isinstance(columns["times"], dict)
    again = ZooKeeper.from_dict(msgpack.unpackb(msgpack.packb(columns), raw=False), clock)
    assert again.to_dict() == columns and again.to_dict(per_znode=True) == d and again.dump() == old.dump()
    assert again._state_watched == {"t": {0}} and list(again.nodes()) == list(old.nodes())
    earlier = ZooKeeper.from_dict(fixed_width_form(columns), clock)        # the columns as written before
    assert earlier.to_dict() == columns and earlier.to_dict(per_znode=True) == d


def fixed_width_form(d: dict) -> dict:
    """A snapshot as ``to_dict`` wrote it before its columns were narrowed: fixed dtypes, absolute zxids, the
    transaction times as one int64 buffer."""
    from controller.store import zookeeper as z
    d = copy.deepcopy(d)
    runs = d["times"]
    d["times"] = z._from_time_runs(runs).tobytes()
    for _, cols in d["tables"]:
        n = {"p": len(cols["p"]) // 4, "pp": len(cols["pp"]) // 4}
        for name, dtype in z._STATE_COLUMNS + z._PARENT_COLUMNS:
            rows = n["p"] if (name, dtype) in z._STATE_COLUMNS else n["pp"]
            cols[name] = z._table_column(cols, name, rows, name).astype(dtype).tobytes()
        cols["isr"] = z._table_column(cols, "isr", n["p"] * cols["width"], "isr").astype("<i4").tobytes()
        del cols["zxid_base"]
    return d


def test_a_snapshot_with_broken_columns_is_refused(clock):
    zk = ZooKeeper(clock)
    s = zk.connect(10_000)
    zk.create_recursive(s, "/brokers/topics/t/partitions/0", None)
    zk.create(s, state("t", 0), canonical())
    good = zk.to_dict()
    for column, value, message in (("p", b"\x00", "not a buffer"), ("ce", b"", "ce: 0 bytes are not 1 ints"),
                                   ("pp", (-1).to_bytes(4, "little", signed=True), "negative partition"),
                                   ("isr_len", bytes([9]), "longer than its width")):
        d = copy.deepcopy(good)
        d["tables"][0][1][column] = value
        with pytest.raises(ValueError, match=message):
            ZooKeeper.from_dict(d, clock)
    d = copy.deepcopy(good)
    cols = d["tables"][0][1]
    cols["pp"] = cols["pp"] * 2
    for name in ("pczxid", "pcversion", "ppzxid", "pchild"):
        cols[name] = cols[name] * 2
    with pytest.raises(ValueError, match="a partition twice"):
        ZooKeeper.from_dict(d, clock)
    d = copy.deepcopy(good)
    del d["tables"][0][1]["leader"]
    with pytest.raises(ValueError, match="no column 'leader'"):
        ZooKeeper.from_dict(d, clock)


def test_rows_past_twice_the_table_are_kept_as_bytes_until_they_fit(clock):
    zk = ZooKeeper(clock)
    s = zk.connect(10_000)
    far = MIN_ROWS + 10
    for p in (far, 0):
        zk.create_recursive(s, f"/brokers/topics/t/partitions/{p}", None)
        zk.create(s, state("t", p), canonical())
    assert type(zk._nodes[state("t", far)]) is tuple and zk._nodes[state("t", 0)] == 0
    t = zk._tables["t"]
    t.grow(MIN_ROWS)                                                     # now it fits (twice the rows)
    zk.set_data(s, state("t", far), canonical(4))
    assert zk._nodes[state("t", far)] == far and zk.get_data(s, state("t", far))[0] == canonical(4)


def test_table_rows_are_not_tracked_by_the_gc(clock):
    import gc
    zk = ZooKeeper(clock)
    s = zk.connect(10_000)
    zk.create_recursive(s, "/brokers/topics/t/partitions/0", None)
    zk.create(s, state("t", 0), canonical())
    gc.collect()
    assert not gc.is_tracked(zk._nodes[state("t", 0)])


def test_a_failed_multi_restores_table_rows(clock):
    zk, ref = ZooKeeper(clock), BytesZooKeeper(clock)
    for z in (zk, ref):
        s = z.connect(10_000)
        z.create_recursive(s, "/brokers/topics/t/partitions/0", None)
        z.create(s, state("t", 0), canonical())
        with pytest.raises(KeeperError):
            z.multi(s, [SetDataOp(state("t", 0), canonical(9)), SetDataOp(state("t", 0), b"x"),
                        CheckOp("/nope")])
        with pytest.raises(KeeperError):
            z.multi(s, [SetDataOp(state("t", 0), b"x"), SetDataOp(state("t", 0), canonical(8), 1),
                        CheckOp("/nope")])
        with pytest.raises(KeeperError):
            z.multi(s, [CheckOp(state("t", 0), 0), DeleteOp(state("t", 0)), CheckOp("/nope")])
    assert zk.to_dict(per_znode=True) == ref.to_dict(per_znode=True) and zk._nodes[state("t", 0)] == 0


# --- the differential test ----------------------------------------------------------------------------
class Handler:
    """A znode handler of the writer's client: records its calls, and may act on the model."""

    def __init__(self, world, path, action):
        self.world, self.path, self.action = world, path, action

    def _record(self, method):
        self.world.log.append(("handler", self.path, method))
        if self.action is not None:
            try:
                self.world.act(self.action, self.path)
            except KeeperError as e:
                self.world.log.append(("action failed", type(e).__name__, str(e)))

    def handle_creation(self):
        self._record("creation")

    def handle_deletion(self):
        self._record("deletion")

    def handle_data_change(self):
        self._record("data_change")


class World:
    """One model with a writer (a controller's client), another session (observer) and what they saw."""

    def __init__(self, zk_cls, client_cls, clock):
        self.zk_cls, self.client_cls, self.clock = zk_cls, client_cls, clock
        self.zk = zk_cls(clock)
        self.log: list = []
        self.handlers: dict[str, Handler] = {}
        self.writer = client_cls(self.zk, clock=clock, rng=random.Random(0))
        self.writer.create_top_level_paths()
        self.epoch, _ = self.writer.register_controller_and_increment_controller_epoch(1)
        self.obs = self.zk.connect(30_000, self._watched, self._obs_expired)
        for topic in TOPICS:
            self.zk.create(self.obs, f"/brokers/topics/{topic}", b"{}")

    @property
    def zkv(self) -> int:
        """The zkVersion of /controller_epoch now (0 if it is gone)."""
        stat = self.zk.exists(self.obs, "/controller_epoch") if self.zk.is_alive(self.obs) else None
        return stat.version if stat is not None else 0

    def _watched(self, event):
        self.log.append(("obs", str(event.type), event.path))

    def _obs_expired(self):
        self.log.append(("obs expired",))

    def reconnect_observer(self):
        if not self.zk.is_alive(self.obs):
            self.obs = self.zk.connect(30_000, self._watched, self._obs_expired)

    def act(self, action, path):
        """What a handler does when called (from inside whatever fired its watch)."""
        zk = self.zk
        kind, arg = action
        topic, p = state_key(path)
        if kind == "bump_epoch":
            zk.set_data(self.obs, "/controller_epoch", b"7")
        elif kind == "expire_writer":
            if zk.is_alive(self.writer.session_id):
                zk.expire_session(self.writer.session_id)
        elif kind == "other_form":
            zk.set_data(self.obs, state(topic, p + 1), OTHER_FORMS[arg % len(OTHER_FORMS)])
        elif kind == "create_next":
            zk.create(self.obs, state(topic, p + 1), canonical(arg))
        elif kind == "delete_next":
            zk.delete(self.obs, state(topic, p + 1))
        elif kind == "rearm":
            self.log.append(("rearm", repr(self.writer.get_partition_states([(topic, p)]))))
        elif kind == "watch_next":
            zk.exists(self.obs, state(topic, p + 1), watch=True)

    def restore(self):
        """Snapshot and restore: the model from ``to_dict``, the clients and handlers attached again."""
        d = copy.deepcopy(self.zk.to_dict())
        self.zk = self.zk_cls.from_dict(d, self.clock)
        sid = self.writer.session_id
        self.writer = self.client_cls(self.zk, clock=self.clock, rng=random.Random(0), session_id=sid)
        if self.writer._closed:   # the writer's session had gone: a new client
            self.writer = self.client_cls(self.zk, clock=self.clock, rng=random.Random(0))
        for h in self.handlers.values():
            self.writer.register_znode_change_handler(h)
        if self.zk.is_alive(self.obs):
            self.zk.attach(self.obs, self._watched, self._obs_expired)

    def view(self):
        zk = self.zk
        return zk.dump(), zk.to_dict(per_znode=True), list(zk.nodes()), zk.last_zxid, list(self.log)


def _norm(value):
    """A comparable form of a call's result or error."""
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__, str(value), getattr(value, "code", None),
                getattr(value, "path", None))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tolist())
    if isinstance(value, dict):
        return ("dict", [(_norm(k), _norm(v)) for k, v in value.items()])
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_norm(v) for v in value])
    return value


def _columns_form(c):
    """A topic's assignment columns as the reference client gives them."""
    def strip(row):
        return tuple(x for x in row if x >= 0)
    return (c.topic_id, [(p, strip(r), strip(a), strip(d)) for p, r, a, d in zip(
        c.partitions.tolist(), c.replicas.tolist(), c.adding.tolist(), c.removing.tolist())])


def _call(fn):
    try:
        return _norm(fn())
    except Exception as e:   # KeeperError, ControllerMovedError, ValueError, ...
        return _norm(e)


isrs = st.lists(st.sampled_from([1, 2, 3, 4, -1]), max_size=4)


def draw_op(data, first=False):
    kind = "create" if first else data.draw(st.sampled_from(
        ["create"] * 3 + ["write"] * 6 + ["read"] * 3 + ["watch"] * 2 + ["handler"] * 3 + [
            "per_partition", "other_form", "child", "unhandler", "expire_writer", "expire_obs", "delete_topic",
            "bump_epoch", "delete_epoch", "snapshot", "tick", "as_leader"] + ["create_columns"] * 3 + ["parent"] * 4
        + ["topic_matrix", "read_topics"] + ["update_many"] * 3), label="op")
    topic = data.draw(st.sampled_from(TOPICS), label="topic")
    if kind == "create_columns":
        segments = []
        for t in data.draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=2, unique=True)):
            parts = data.draw(st.lists(st.sampled_from(PARTITIONS + (8, 9)), max_size=10, unique=True))
            n = len(parts)
            rows = [data.draw(isrs) for _ in range(n)]
            width = data.draw(st.integers(max((len(r) for r in rows), default=0), 4))
            isr = np.full((n, width), -1, dtype=np.int32)
            for i, r in enumerate(rows):
                isr[i, :len(r)] = r
            seg = (t, np.array(parts, dtype=data.draw(st.sampled_from([np.int32, np.int64]))),
                   np.array([data.draw(st.integers(-1, 4)) for _ in parts], dtype=np.int32), isr)
            if data.draw(st.booleans()):
                seg += (np.array([data.draw(st.integers(0, 3)) for _ in parts], dtype=np.int32),
                        np.array([data.draw(st.sampled_from([0, 0, 1])) for _ in parts], dtype=np.uint8))
            segments.append(seg)
        return kind, (segments, data.draw(st.integers(0, 3)),
                      data.draw(st.sampled_from(["current", "current", "current", "stale"])),
                      data.draw(st.sampled_from([True, True, False])))
    if kind == "parent":
        return kind, (topic, data.draw(st.sampled_from(PARTITIONS + (8,))), data.draw(st.sampled_from(
            ["set_data", "set_none", "delete", "seq_child", "watch_exists", "watch_children", "watch_partitions",
             "failed_multi", "multi_delete", "create", "read"])))
    if kind == "topic_matrix":
        n = data.draw(st.integers(0, 14))
        rf = data.draw(st.integers(1, 3))
        m = np.array([[data.draw(st.integers(0, 4)) for _ in range(rf)] for _ in range(n)], dtype=np.int32)
        return kind, (data.draw(st.sampled_from(["x", "y", "a"])), m.reshape(n, rf))
    if kind == "read_topics":
        return kind, data.draw(st.lists(st.sampled_from(["a", "b", "x", "y", "nope"]), max_size=4))
    if kind == "create":
        n = data.draw(st.integers(1, 12))
        rows = []
        cells = [(t, p) for p in PARTITIONS for t in TOPICS if data.draw(st.integers(0, 4), label="skip")] if first \
            else [(data.draw(st.sampled_from(TOPICS)), data.draw(st.sampled_from(PARTITIONS))) for _ in range(n)]
        for t, p in cells:
            info = LeaderIsrAndControllerEpoch(LeaderAndIsr(data.draw(st.integers(-1, 4)), data.draw(
                st.integers(0, 3)), tuple(data.draw(st.lists(st.integers(0, 4), max_size=3))), data.draw(
                st.sampled_from([0, 0, 1])), data.draw(st.integers(0, 2))), data.draw(st.integers(0, 3)))
            rows.append(((t, p), info))
        return kind, (rows, data.draw(st.sampled_from(["current", "current", "current", "stale"])),
                      data.draw(st.sampled_from([True, True, False])))
    if kind == "write":
        parts = data.draw(st.lists(st.sampled_from(PARTITIONS + (8,)), min_size=0, max_size=9, unique=True))
        n = len(parts)
        rows = [data.draw(isrs) for _ in range(n)]
        width = data.draw(st.integers(max((len(r) for r in rows), default=0), 5))
        isr = np.full((n, width), -1, dtype=np.int32)
        for i, r in enumerate(rows):
            isr[i, :len(r)] = r
        return kind, (topic, parts, [data.draw(st.integers(-1, 4)) for _ in parts],
                      [data.draw(st.integers(0, 5)) for _ in parts], isr,
                      [data.draw(st.sampled_from([0, 0, 1])) for _ in parts],
                      [data.draw(st.sampled_from(["right", "right", "right", "wrong", "any"])) for _ in parts],
                      data.draw(st.integers(0, 3)),
                      data.draw(st.sampled_from(["current", "current", "current", "current", "stale"])))
    if kind == "update_many":     # update_leader_and_isr of partitions of both topics, interleaved
        cells = data.draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(PARTITIONS + (8,))),
                                   max_size=10, unique=True))
        rows = [(tp, data.draw(st.integers(-1, 4)), data.draw(st.integers(0, 5)),
                 tuple(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 4] * 4 + [-1]), max_size=4))),
                 data.draw(st.sampled_from([0, 0, 1])), data.draw(st.sampled_from(["right"] * 4 + ["wrong", "any"])))
                for tp in cells]
        return kind, (rows, data.draw(st.integers(0, 3)),
                      data.draw(st.sampled_from(["current", "current", "current", "current", "stale"])))
    if kind == "read":
        return kind, (topic, data.draw(st.lists(st.sampled_from(PARTITIONS + (8, -1)), max_size=8)))
    if kind == "per_partition":
        return kind, (topic, data.draw(st.lists(st.sampled_from(PARTITIONS), max_size=4, unique=True)))
    if kind in ("other_form", "child", "watch", "handler", "unhandler", "as_leader"):
        p = data.draw(st.sampled_from(PARTITIONS))
        if kind == "other_form":
            return kind, (topic, p, data.draw(st.integers(0, len(OTHER_FORMS) - 1)))
        if kind == "watch":
            return kind, (topic, p, data.draw(st.sampled_from(["exists", "get", "children", "writer_read"])))
        if kind == "handler":
            action = data.draw(st.sampled_from([None, ("bump_epoch", 0), ("expire_writer", 0), ("expire_writer", 1),
                                                ("other_form", data.draw(st.integers(0, 20))),
                                                ("create_next", 1), ("delete_next", 0), ("rearm", 0),
                                                ("watch_next", 0)]))
            return kind, (topic, p, action)
        return kind, (topic, p)
    if kind == "delete_topic":
        return kind, (topic, data.draw(st.booleans()))
    if kind == "tick":
        return kind, data.draw(st.sampled_from([0, 1_000, 19_000, 40_000]))
    return kind, topic


def apply(world: World, op) -> object:
    kind, arg = op
    zk, w = world.zk, world.writer
    if kind == "create":
        rows, which, make_parents = arg
        if make_parents and zk.is_alive(world.obs):
            for (t, _), _ in rows:
                if f"/brokers/topics/{t}" not in zk:
                    zk.create(world.obs, f"/brokers/topics/{t}", b"{}")
        zkv = world.zkv if which == "current" else world.zkv + 1
        return _call(lambda: w.create_partition_states(dict(rows), zkv))
    if kind == "write":
        topic, parts, leaders, epochs, isr, recovery, expectations, ce, which = arg
        versions = []
        for p, e in zip(parts, expectations):
            stat = zk.exists(world.obs, state(topic, p)) if zk.is_alive(world.obs) else None
            v = stat.version if stat is not None else 0
            versions.append(v if e == "right" else -1 if e == "any" else v + 1)
        zkv = world.zkv if which == "current" else world.zkv + 1
        return _call(lambda: w.write_leader_and_isr_columns(
            topic, np.array(parts, dtype=np.int32), np.array(leaders, dtype=np.int32),
            np.array(epochs, dtype=np.int32), isr.copy(), np.array(recovery, dtype=np.uint8),
            np.array(versions, dtype=np.int32), ce, zkv))
    if kind == "update_many":
        rows, ce, which = arg
        states = {}
        for tp, leader, epoch, isr, recovery, expectation in rows:
            stat = zk.exists(world.obs, state(*tp)) if zk.is_alive(world.obs) else None
            v = stat.version if stat is not None else 0
            states[tp] = LeaderAndIsr(leader, epoch, isr, recovery,
                                      v if expectation == "right" else -1 if expectation == "any" else v + 1)
        zkv = world.zkv if which == "current" else world.zkv + 1
        return _call(lambda: w.update_leader_and_isr(states, ce, zkv))
    if kind == "read":
        topic, parts = arg
        return _call(lambda: w.read_partition_state_columns(topic, np.array(parts, dtype=np.int64)))
    if kind == "per_partition":
        topic, parts = arg
        got = w.get_partition_states([(topic, p) for p in parts])
        updates = {tp: s.leader_and_isr.new_epoch() for tp, s in got.items() if s is not None}
        return _norm(got), _call(lambda: w.update_leader_and_isr(updates, world.epoch, world.zkv))
    if kind == "other_form":
        topic, p, i = arg
        return _call(lambda: zk.set_data(world.obs, state(topic, p), OTHER_FORMS[i]))
    if kind == "child":
        topic, p = arg
        path = state(topic, p) + "/c"
        if path in zk:
            return _call(lambda: zk.delete(world.obs, path))
        return _call(lambda: zk.create(world.obs, path, b"c"))
    if kind == "watch":
        topic, p, how = arg
        path = state(topic, p)
        if how == "exists":
            return _call(lambda: zk.exists(world.obs, path, watch=True))
        if how == "get":
            return _call(lambda: zk.get_data(world.obs, path, watch=True))
        if how == "children":
            return _call(lambda: zk.get_children(world.obs, path[:-len("/state")], watch=True))
        return _call(lambda: w.get_partition_states([(topic, p)]))
    if kind == "handler":
        topic, p, action = arg
        h = world.handlers[state(topic, p)] = Handler(world, state(topic, p), action)
        return _call(lambda: w.register_znode_change_handler_and_check_existence(h))
    if kind == "unhandler":
        world.handlers.pop(state(*arg), None)
        w.unregister_znode_change_handler(state(*arg))
        return None
    if kind == "expire_writer":
        return _call(lambda: zk.expire_session(w.session_id))
    if kind == "expire_obs":
        r = _call(lambda: zk.expire_session(world.obs))
        world.reconnect_observer()
        return r
    if kind == "delete_topic":
        topic, fenced = arg
        if fenced:
            return _call(lambda: w.delete_topic_znode(topic, world.zkv))
        return _call(lambda: zk.delete_recursive(world.obs, f"/brokers/topics/{topic}"))
    if kind == "bump_epoch":
        return _call(lambda: zk.set_data(world.obs, "/controller_epoch", b"3"))
    if kind == "delete_epoch":
        if "/controller_epoch" in zk:
            return _call(lambda: zk.delete(world.obs, "/controller_epoch"))
        return _call(lambda: zk.create(world.obs, "/controller_epoch", b"1"))
    if kind == "snapshot":
        world.restore()
        return None
    if kind == "create_columns":
        segments, ce, which, make_parents = arg
        if make_parents and zk.is_alive(world.obs):
            for seg in segments:
                if f"/brokers/topics/{seg[0]}" not in zk:
                    zk.create(world.obs, f"/brokers/topics/{seg[0]}", b"{}")
        zkv = world.zkv if which == "current" else world.zkv + 1
        return _call(lambda: w.create_partition_states_columns(segments, ce, zkv))
    if kind == "parent":
        topic, p, action = arg
        obs = world.obs
        path = f"/brokers/topics/{topic}/partitions/{p}"
        if action == "set_data":
            return _call(lambda: zk.set_data(obs, path, b"x"))
        if action == "set_none":
            return _call(lambda: zk.set_data(obs, path, None))
        if action == "delete":
            return _call(lambda: zk.delete(obs, path))
        if action == "seq_child":
            return _call(lambda: zk.create(obs, path + "/s-", b"", sequential=True))
        if action == "watch_exists":
            return _call(lambda: zk.exists(obs, path, watch=True))
        if action == "watch_children":
            return _call(lambda: zk.get_children(obs, path, watch=True))
        if action == "watch_partitions":
            return _call(lambda: zk.get_children(obs, f"/brokers/topics/{topic}/partitions", watch=True))
        if action == "failed_multi":
            return _call(lambda: zk.multi(obs, [DeleteOp(path + "/state"), CreateOp(path + "/x", None),
                                                CreateOp(f"/brokers/topics/{topic}/partitions/9", None),
                                                CheckOp("/nope")]))
        if action == "multi_delete":
            return _call(lambda: zk.multi(obs, [DeleteOp(path + "/state"), DeleteOp(path)]))
        if action == "create":
            return _call(lambda: zk.create(obs, path, None))
        return _call(lambda: (zk.get_data(obs, path), zk.get_children(obs, path), zk.exists(obs, path + "/state")))
    if kind == "topic_matrix":
        name, m = arg
        return _call(lambda: w.create_topic_with_replica_matrix(name, {}, m))
    if kind == "read_topics":
        got = w.get_replica_assignment_columns(arg)
        return _norm({t: c if type(c) is tuple else _columns_form(c) for t, c in got.items()})
    if kind == "tick":
        world.clock.now += arg
        r = zk.tick()
        world.reconnect_observer()
        return r
    if kind == "as_leader":
        topic, p = arg
        got = w.get_partition_states([(topic, p)])[(topic, p)]
        if got is None:
            return None
        return _call(lambda: w.update_partition_state_as_leader(
            (topic, p), got.leader_and_isr.new_epoch(), got.controller_epoch))
    raise AssertionError(kind)


def _worlds():
    return [World(ZooKeeper, KafkaZkClient, Clock()), World(ZooKeeper, ReferenceClient, Clock()),
            World(BytesZooKeeper, ReferenceClient, Clock())]


def _assert_same(worlds, results, step):
    names = ("fast", "ref", "bytes")
    for name, world, result in zip(names[1:], worlds[1:], results[1:]):
        assert result == results[0], f"step {step}: {name} returned {result!r}, fast {results[0]!r}"
    views = [w.view() for w in worlds]
    labels = ("dump", "to_dict", "nodes/Stats", "zxid", "events")
    for name, view in zip(names[1:], views[1:]):
        for label, a, b in zip(labels, views[0], view):
            assert a == b, f"step {step}: {label} differs between fast and {name}"


@pytest.fixture(autouse=True)
def _quiet_logs():
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    yield
    structlog.reset_defaults()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_batch_operations_are_the_per_partition_requests(data):
    worlds = _worlds()
    _assert_same(worlds, [None] * 3, "setup")
    for step in range(data.draw(st.integers(1, 25), label="steps")):
        op = draw_op(data, first=step == 0)
        results = [apply(w, op) for w in worlds]
        _assert_same(worlds, results, f"{step} {op[0]}")


def test_a_large_batch_with_watched_rows_and_acting_handlers():
    """Hundreds of partitions: writes fenced right and wrong, handlers on some rows that write another form
    to the next row, expire nothing, bump the epoch in the last round; the models agree throughout."""
    worlds = _worlds()
    n = 400
    rows = [(("t", p), LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3)), 1)) for p in range(n)]
    for w in worlds:
        w.zk.create(w.obs, "/brokers/topics/t", b"{}")
    ops = [("create", (rows, "current", False))]
    for p in (10, 11, 200):
        ops.append(("handler", ("t", p, ("other_form", p))))
    ops.append(("handler", ("t", 300, ("rearm", 0))))
    parts = list(range(n))
    for rnd in range(3):
        isr = np.full((n, 3), -1, dtype=np.int32)
        isr[:, 0] = 2
        isr[::3, 1] = 3
        ops.append(("read", ("t", parts[:-1] if rnd % 2 else parts)))
        ops.append(("write", ("t", parts, [2] * n, [rnd + 1] * n, isr, [0] * n,
                              ["right"] * (n - 5) + ["wrong", "any", "right", "wrong", "right"], 1, "current")))
    ops.append(("handler", ("t", 50, ("bump_epoch", 0))))
    ops.append(("write", ("t", parts, [3] * n, [9] * n, np.full((n, 1), 3, dtype=np.int32), [1] * n, ["any"] * n, 1,
                          "current")))
    ops.append(("snapshot", "t"))
    ops.append(("read", ("t", parts)))
    ops.append(("unhandler", ("t", 50)))
    ops.append(("handler", ("t", 120, ("expire_writer", 0))))          # the write stops at row 121
    ops.append(("write", ("t", parts, [1] * n, [20] * n, np.full((n, 1), 1, dtype=np.int32), [0] * n, ["any"] * n,
                          1, "current")))
    ops.append(("read", ("t", parts)))
    more = [(("u", p), LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 1)) for p in range(50)]
    ops.append(("handler", ("u", 30, ("expire_writer", 0))))           # the create stops at row 31
    ops.append(("handler", ("u", 10, ("create_next", 4))))             # row 11 exists when it is reached
    ops.append(("create", (more, "current", True)))
    ops.append(("create", (more, "current", True)))
    ops.append(("read", ("u", list(range(60)))))
    for step, op in enumerate(ops):
        results = [apply(w, op) for w in worlds]
        _assert_same(worlds, results, f"{step} {op[0]}")



def test_a_watcher_that_expires_the_session_mid_batch_fails_every_partition():
    """A write's watcher expires the writer's session between two topics' runs of one update_leader_and_isr: the
    client's next session must not carry the second run (found by the hypothesis test above)."""
    worlds = _worlds()
    empty = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, ()), 0)
    ops = [("create", ([(("a", 1), empty), (("b", 3), empty)], "current", True)),
           ("handler", ("a", 1, ("expire_writer", 0))),
           ("update_many", ([(("a", 1), 0, 0, (), 0, "right"), (("b", 0), 0, 0, (), 0, "right")], 0, "current"))]
    for step, op in enumerate(ops):
        results = [apply(w, op) for w in worlds]
        _assert_same(worlds, results, f"{step} {op[0]}")

# --- the fast path is taken -----------------------------------------------------------------------------
def test_unwatched_rows_are_written_as_arrays_and_watched_ones_one_by_one(clock, monkeypatch):
    zk = ZooKeeper(clock)
    client = KafkaZkClient(zk, clock=clock, rng=random.Random(0))
    client.create_top_level_paths()
    epoch, zkv = client.register_controller_and_increment_controller_epoch(1)
    zk.create(client.session_id, "/brokers/topics/t", b"{}")
    n = 1000
    sent_alone = []
    real = ZooKeeper._fenced_one
    monkeypatch.setattr(ZooKeeper, "_fenced_one", lambda self, sess, check, op: (
        sent_alone.append(op.path), real(self, sess, check, op))[1])
    states = {("t", p): LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2)), epoch) for p in range(n)}
    assert set(client.create_partition_states(states, zkv).values()) == {None}
    assert sent_alone == [] and zk._tables["t"].count == n
    seen = []
    other = zk.connect(10_000, watcher=seen.append)
    zk.exists(other, state("t", 7), watch=True)
    ps = np.arange(n, dtype=np.int32)
    cols = client.read_partition_state_columns("t", ps)
    assert cols.exists.all() and (cols.isr[:, :2] == [1, 2]).all() and (cols.version == 0).all()
    before = zk.last_zxid
    res = client.write_leader_and_isr_columns("t", ps, np.full(n, 2, np.int32), cols.leader_epoch + 1,
                                              cols.isr, cols.recovery, cols.version, epoch, zkv)
    assert res.check_failed is None and not res.errors and (res.version == 1).all()
    assert sent_alone == [state("t", 7)] and [e.path for e in seen] == [state("t", 7)]
    assert zk.last_zxid == before + n
    assert [zk.get_data(other, state("t", p))[1].mzxid for p in (0, 7, n - 1)] == [before + 1, before + 8,
                                                                                      before + n]


def test_column_write_of_odd_input_takes_the_mixins_way(clock):
    """Duplicates, long ISRs, values beyond int32, an unfenced write: the mixin's result exactly."""
    worlds = [World(ZooKeeper, KafkaZkClient, clock), World(ZooKeeper, ReferenceClient, Clock())]
    for w in worlds:
        w.zk.create(w.obs, "/brokers/topics/t", b"{}")
        w.writer.create_partition_states({("t", p): LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 1)
                                          for p in range(4)}, w.zkv)
    long_isr = np.arange(MAX_ISR + 2, dtype=np.int32)[None, :].repeat(2, axis=0)
    cases = [
        (np.array([1, 1], np.int32), np.array([2, 3], np.int32), np.array([[1], [2]], np.int32), 0),
        (np.array([0, 1], np.int32), np.array([2, 3], np.int32), long_isr, 0),
        (np.array([2, 3], np.int64), np.array([2, 1 << 40], np.int64), np.array([[1], [2]], np.int32), 0),
        (np.array([0, 1], np.int32), np.array([2, 3], np.int32), np.array([[-5, 1], [2, -1]], np.int32), -1),
    ]
    for ps, leader, isr, zkv in cases:
        out = []
        for w in worlds:
            out.append(_call(lambda: w.writer.write_leader_and_isr_columns(
                "t", ps, leader, np.zeros(2, np.int32), isr, np.zeros(2, np.uint8), np.full(2, -1, np.int32), 1,
                zkv)))
        assert out[0] == out[1]
        assert worlds[0].view() == worlds[1].view()
