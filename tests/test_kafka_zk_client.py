"""KafkaZkClient over the embedded ZooKeeper: Kafka 3.7's znode bodies byte for byte, controller election and
epoch fencing, the PartitionStateStore semantics, handlers and session re-initialization, notifications, the
admin writes, and determinism.

The expected JSON strings are written out literally. Their key order is the iteration order of the Scala 2.13 /
Java maps ZkData.scala builds; the broker, topic and /state bodies match ``zkCli.sh get`` output of real Kafka
3.x clusters built for Scala 2.13.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.context import ControllerContext
from controller.store.kafka_zk_client import (
    InvalidReplicaAssignmentError, InvalidTopicError, KafkaZkClient, TopicExistsError, UnknownTopicOrPartitionError,
)
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel
from controller.store.zk_data import (
    PERSISTENT_ZK_PATHS, BrokerInfo, EndPoint, decode_broker_info, decode_partition_reassignment, decode_topic,
    encode_isr_change_notification, encode_partition_reassignment, java_properties_order, random_uuid,
)
from controller.store.zookeeper import KeeperError, NodeExistsError, NoNodeError, ZooKeeper
from events.journal import Journal
from statemachines.errors import ControllerMovedError, StoreError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.partition_state_machine import OfflinePartitionLeaderElectionStrategy, PartitionStateMachine
from statemachines.states import NEW_PARTITION, ONLINE_PARTITION

T0 = 1_700_000_000_000


class Clock:
    def __init__(self, now: int = T0):
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def zk(clock):
    return ZooKeeper(clock)


@pytest.fixture
def client_factory(zk, clock):
    def make(seed: int = 0, **kw) -> KafkaZkClient:
        return KafkaZkClient(zk, clock=clock, rng=random.Random(seed), **kw)
    return make


@pytest.fixture
def admin(client_factory):
    c = client_factory(99)
    c.create_top_level_paths()
    return c


def data(zk, path: str) -> bytes | None:
    sid = zk.connect(60_000)
    try:
        return zk.get_data(sid, path)[0]
    finally:
        zk.close_session(sid)


def lice(leader, isr, leader_epoch=0, controller_epoch=1, recovery=0):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, tuple(isr), recovery), controller_epoch)


class Handler:
    """A znode/child handler recording its calls."""

    def __init__(self, path: str):
        self.path = path
        self.calls: list[str] = []

    def handle_creation(self):
        self.calls.append("created")

    def handle_deletion(self):
        self.calls.append("deleted")

    def handle_data_change(self):
        self.calls.append("changed")

    def handle_child_change(self):
        self.calls.append("children")

    def take(self) -> list[str]:
        out, self.calls = self.calls, []
        return out


class StateHandler:
    def __init__(self, name: str, log: list):
        self.name = name
        self.log = log

    def before_initializing_session(self):
        self.log.append((self.name, "before"))

    def after_initializing_session(self):
        self.log.append((self.name, "after"))


# --- JSON bodies, byte for byte -------------------------------------------------------------------------------
def test_top_level_paths(admin, zk):
    assert PERSISTENT_ZK_PATHS == (
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics", "/brokers/seqid",
        "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification", "/config/topics",
        "/config/clients", "/config/users", "/config/brokers", "/config/ips")
    for path in PERSISTENT_ZK_PATHS:
        assert path in zk and data(zk, path) is None
    before = zk.dump()
    admin.create_top_level_paths()                            # every broker does it at startup
    assert zk.dump() == before


def test_controller_and_controller_epoch_bodies(admin, zk):
    assert admin.register_controller_and_increment_controller_epoch(3) == (1, 1)
    assert data(zk, "/controller") == \
        b'{"version":2,"brokerid":3,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
    assert data(zk, "/controller_epoch") == b"1"
    assert zk.exists(admin.session_id, "/controller").ephemeral_owner == admin.session_id
    assert admin.get_controller_id() == 3 and admin.get_controller_epoch() == (1, 1)


def test_broker_registration_body(admin, zk, clock):
    epoch = admin.register_broker(1, "h1", 9092)
    assert data(zk, "/brokers/ids/1") == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h1:9092"],"jmx_port":-1,"port":9092,"host":"h1","version":5,'
        b'"timestamp":"1700000000000"}')
    stat = zk.exists(admin.session_id, "/brokers/ids/1")
    assert epoch == stat.czxid and stat.version == 1          # created empty, then set in the same multi
    assert stat.ephemeral_owner == admin.session_id
    clock.now += 5
    other = KafkaZkClient(zk, clock=clock, rng=random.Random(1))
    other.register_broker(2, "h2", 9093, "rack-2", endpoints=[EndPoint("h2", 9093), EndPoint("h2", 9094, "SSL", "SSL")])
    assert data(zk, "/brokers/ids/2") == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
        b'"endpoints":["PLAINTEXT://h2:9093","SSL://h2:9094"],"rack":"rack-2","jmx_port":-1,"port":9093,'
        b'"host":"h2","version":5,"timestamp":"1700000000005"}')
    info = admin.get_broker(2)
    assert info == BrokerInfo(2, (EndPoint("h2", 9093), EndPoint("h2", 9094, "SSL", "SSL")), "rack-2")
    assert (info.host, info.port) == ("h2", 9093)
    brokers = admin.get_all_broker_and_epochs_in_cluster()
    assert list(brokers) == [1, 2] and brokers[1] == (BrokerInfo(1, (EndPoint("h1", 9092),)), epoch)
    assert brokers[2][1] > epoch


def test_broker_registration_of_an_existing_id_fails(client_factory):
    a, b = client_factory(1), client_factory(2)
    a.create_top_level_paths()
    a.register_broker(1, "h1", 9092)
    with pytest.raises(NodeExistsError):
        b.register_broker(1, "h1", 9092)


def test_topic_assignment_body(admin, zk):
    admin.create_topic_with_assignment("t", {}, {0: [1, 2], 1: [2, 1]}, topic_id="cMr3GpVESX2L3byPGf93lQ")
    assert data(zk, "/brokers/topics/t") == (
        b'{"partitions":{"0":[1,2],"1":[2,1]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}')
    # From 12 partitions Scala's HashMap has 32 buckets: "11" lands in bucket 0, "10" in the last one.
    admin.create_topic_with_assignment("many", {}, {p: [p % 3] for p in range(12)}, uses_topic_id=False)
    assert data(zk, "/brokers/topics/many") == (
        b'{"partitions":{"11":[2],"0":[0],"1":[1],"2":[2],"3":[0],"4":[1],"5":[2],"6":[0],"7":[1],"8":[2],'
        b'"9":[0],"10":[1]},"adding_replicas":{},"removing_replicas":{},"version":3}')
    admin.set_topic_assignment("t", "cMr3GpVESX2L3byPGf93lQ",
                               {("t", 0): ReplicaAssignment((1, 2, 3), (3,), ()),
                                ("t", 1): ReplicaAssignment((3, 2, 1), (3,), (1,))})
    body = data(zk, "/brokers/topics/t")
    assert body == (b'{"partitions":{"0":[1,2,3],"1":[3,2,1]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",'
                    b'"adding_replicas":{"0":[3],"1":[3]},"removing_replicas":{"1":[1]},"version":3}')
    assert decode_topic("t", body).assignment == {("t", 0): ReplicaAssignment((1, 2, 3), (3,), ()),
                                                  ("t", 1): ReplicaAssignment((3, 2, 1), (3,), (1,))}


def test_partition_state_bodies(admin, zk):
    epoch, version = admin.register_controller_and_increment_controller_epoch(1)
    admin.create_topic_with_assignment("t", {}, {0: [1, 2], 1: [1, 2]})
    assert admin.create_partition_states({("t", 0): lice(1, (1, 2), controller_epoch=epoch),
                                          ("t", 1): lice(1, (1,), 4, epoch, recovery=1)}, version) == \
        {("t", 0): None, ("t", 1): None}
    assert data(zk, "/brokers/topics/t/partitions/0/state") == \
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    assert data(zk, "/brokers/topics/t/partitions/1/state") == \
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_recovery_state":1,"leader_epoch":4,"isr":[1]}'
    assert data(zk, "/brokers/topics/t/partitions") is None and data(zk, "/brokers/topics/t/partitions/0") is None
    states = admin.get_partition_states([("t", 0), ("t", 1), ("t", 2)])
    assert states == {("t", 0): lice(1, (1, 2), controller_epoch=epoch),
                      ("t", 1): lice(1, (1,), 4, epoch, recovery=1), ("t", 2): None}
    assert admin.get_topic_partition_states([("t", 2), ("t", 0)]) == {("t", 0): states[("t", 0)]}


def test_config_bodies(admin, zk):
    admin.create_topic_with_assignment("t", {"retention.ms": "1000", "cleanup.policy": "compact"}, {0: [1]})
    # java.util.Properties is a ConcurrentHashMap (Java 9+): bucket order, not insertion order.
    assert data(zk, "/config/topics/t") == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    assert admin.get_entity_configs("topics", "t") == {"cleanup.policy": "compact", "retention.ms": "1000"}
    assert admin.get_entity_configs("topics", "nope") == {}
    admin.change_topic_config("t", {"unclean.leader.election.enable": "true"})
    assert data(zk, "/config/topics/t") == b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    assert zk.get_children(admin.session_id, "/config/changes") == ["config_change_0000000000"]
    assert data(zk, "/config/changes/config_change_0000000000") == b'{"version":2,"entity_path":"topics/t"}'
    assert admin.get_log_configs(["t"], {"retention.ms": "5"}) == (
        {"t": {"retention.ms": "5", "unclean.leader.election.enable": "true"}}, {})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.change_topic_config("nope", {})


def test_properties_order_follows_concurrent_hash_map_resizes():
    keys = [f"k{i}" for i in range(14)]
    order = java_properties_order(keys)
    assert sorted(order) == sorted(keys) and order != keys
    assert java_properties_order(["b", "a", "b"]) == ["a", "b"]


def test_notification_and_admin_bodies(admin, zk):
    assert admin.propagate_isr_changes([("t", 0)]) == "/isr_change_notification/isr_change_0000000000"
    assert data(zk, "/isr_change_notification/isr_change_0000000000") == \
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert admin.propagate_log_dir_event(2) == "/log_dir_event_notification/log_dir_event_0000000000"
    assert data(zk, "/log_dir_event_notification/log_dir_event_0000000000") == b'{"version":1,"broker":2,"event":1}'
    admin.create_delete_topic_path("t")
    assert data(zk, "/admin/delete_topics/t") is None
    admin.create_preferred_replica_election([("t", 1), ("t", 0)])
    assert data(zk, "/admin/preferred_replica_election") == \
        b'{"version":1,"partitions":[{"topic":"t","partition":1},{"topic":"t","partition":0}]}'
    admin.create_partition_reassignment({("t", 0): [1, 2]})
    assert data(zk, "/admin/reassign_partitions") == \
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert admin.get_or_generate_cluster_id() == admin.get_cluster_id()
    cluster_id = admin.get_cluster_id()
    assert data(zk, "/cluster/id") == b'{"version":"1","id":"%s"}' % cluster_id.encode()
    assert admin.create_or_get_cluster_id("other") == cluster_id
    admin.create_feature_znode()
    assert data(zk, "/feature") == b'{"features":{},"version":2,"status":1}'


def test_isr_change_notification_set_order():
    # The broker's mutable.HashSet of java Maps orders by the maps' hash codes, not by insertion.
    assert encode_isr_change_notification([("t", 0), ("t", 1)]) == \
        b'{"version":1,"partitions":[{"topic":"t","partition":1},{"topic":"t","partition":0}]}'


def test_topic_ids_are_kafka_uuids_from_the_rng():
    a, b = random_uuid(random.Random(7)), random_uuid(random.Random(7))
    assert a == b and len(a) == 22 and not a.startswith("-")
    assert set(a) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_broker_info_decodes_older_versions():
    v4 = (b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://h:9092"],'
          b'"jmx_port":-1,"host":"h","timestamp":"1","port":9092,"version":4}')
    assert decode_broker_info(3, v4) == BrokerInfo(3, (EndPoint("h", 9092),), None, (), 4, -1)
    v1 = b'{"version":1,"host":"h","port":9092,"jmx_port":9999,"timestamp":"1"}'
    assert decode_broker_info(3, v1).endpoints == (EndPoint("h", 9092),)


# --- controller election and fencing ---------------------------------------------------------------------
def test_election_race_only_one_wins(client_factory, zk):
    a, b = client_factory(1), client_factory(2)
    a.create_top_level_paths()
    assert a.get_controller_id() is None and b.get_controller_id() is None
    assert a.register_controller_and_increment_controller_epoch(1) == (1, 1)
    with pytest.raises(ControllerMovedError) as e:
        b.register_controller_and_increment_controller_epoch(2)
    assert str(e.value) == "Controller moved to another broker. Aborting controller startup procedure"
    assert a.get_controller_id() == 1 and a.get_controller_epoch() == (1, 1)


def test_election_race_with_a_stale_epoch_read(client_factory, monkeypatch):
    # Both brokers read /controller_epoch before either writes; the loser's multi fails on /controller.
    a, b = client_factory(1), client_factory(2)
    a.create_top_level_paths()
    a.register_controller_and_increment_controller_epoch(1)
    monkeypatch.setattr(b, "get_controller_epoch", lambda: (0, 0))
    with pytest.raises(ControllerMovedError):
        b.register_controller_and_increment_controller_epoch(2)
    monkeypatch.undo()
    assert b.get_controller_epoch() == (1, 1) and b.get_controller_id() == 1


def test_election_multi_is_atomic_when_the_epoch_moved(client_factory, zk, monkeypatch):
    # /controller is free but /controller_epoch moved since we read it: nothing is created.
    a, b = client_factory(1), client_factory(2)
    a.create_top_level_paths()
    a.register_controller_and_increment_controller_epoch(1)
    zk.expire_session(a.session_id)                           # /controller goes away with A's session
    monkeypatch.setattr(b, "get_controller_epoch", lambda: (0, 0))
    with pytest.raises(ControllerMovedError) as e:
        b.register_controller_and_increment_controller_epoch(2)
    assert "went away" in str(e.value)
    monkeypatch.undo()
    assert b.get_controller_id() is None and b.get_controller_epoch() == (1, 1)
    assert b.register_controller_and_increment_controller_epoch(2) == (2, 2)


def test_zombie_controller_is_fenced(client_factory, zk):
    a, b = client_factory(1), client_factory(2)
    a.create_top_level_paths()
    epoch_a, version_a = a.register_controller_and_increment_controller_epoch(1)
    a.create_topic_with_assignment("t", {}, {0: [1, 2]})
    a.create_partition_states({("t", 0): lice(1, (1, 2), controller_epoch=epoch_a)}, version_a)
    zk.expire_session(a.session_id)                           # A pauses; its client gets a new session
    assert a.is_connected and a.get_controller_id() is None
    assert b.register_controller_and_increment_controller_epoch(2) == (2, 2)
    b.propagate_isr_changes([("t", 0)])
    before = zk.dump()
    with pytest.raises(ControllerMovedError) as e:
        a.update_leader_and_isr({("t", 0): LeaderAndIsr(1, 1, (1,), partition_epoch=0)}, epoch_a, version_a)
    assert str(e.value) == "Controller epoch zkVersion check fails. Expected zkVersion = 1"
    with pytest.raises(ControllerMovedError):
        a.create_partition_states({("t", 1): lice(1, (1,), controller_epoch=epoch_a)}, version_a)
    for fenced in (lambda: a.delete_topic_znode("t", version_a), lambda: a.delete_controller(version_a),
                   lambda: a.delete_isr_change_notifications(None, version_a),
                   lambda: a.set_topic_assignment("t", None, {0: [1]}, version_a)):
        with pytest.raises(ControllerMovedError):
            fenced()
    assert zk.dump() == before                                # nothing changed
    result = b.update_leader_and_isr({("t", 0): LeaderAndIsr(2, 1, (2,), partition_epoch=0)}, 2, 2)
    assert result.finished == {("t", 0): LeaderAndIsr(2, 1, (2,), partition_epoch=1)}


def test_delete_controller_fenced_by_own_epoch(admin):
    epoch, version = admin.register_controller_and_increment_controller_epoch(1)
    admin.delete_controller(version)
    assert admin.get_controller_id() is None


# --- PartitionStateStore semantics -------------------------------------------------------------------------
@pytest.fixture
def controller(admin):
    epoch, version = admin.register_controller_and_increment_controller_epoch(1)
    admin.create_topic_with_assignment("t", {}, {0: [1, 2], 1: [1, 2], 2: [1, 2]})
    admin.create_partition_states({("t", 0): lice(1, (1, 2)), ("t", 1): lice(1, (1, 2))}, version)
    return admin, epoch, version


def test_update_leader_and_isr_success_retry_and_nonode(controller):
    c, epoch, version = controller
    # The partition leader moves t-1's /state on (ISR shrink), so the controller's write hits BADVERSION.
    c.update_partition_state_as_leader(("t", 1), LeaderAndIsr(1, 0, (1,), partition_epoch=0), 1)
    result = c.update_leader_and_isr({("t", 0): LeaderAndIsr(2, 1, (2,), partition_epoch=0),
                                      ("t", 1): LeaderAndIsr(2, 1, (2,), partition_epoch=0),
                                      ("t", 2): LeaderAndIsr(2, 1, (2,), partition_epoch=0)}, epoch, version)
    assert result.finished[("t", 0)] == LeaderAndIsr(2, 1, (2,), partition_epoch=1)
    assert result.to_retry == [("t", 1)]
    err = result.finished[("t", 2)]
    assert isinstance(err, StoreError) and isinstance(err, NoNodeError)
    assert (err.code, err.path) == ("NONODE", "/brokers/topics/t/partitions/2/state")
    assert set(result.finished) == {("t", 0), ("t", 2)}
    assert c.get_partition_states([("t", 1)])[("t", 1)].leader_and_isr == LeaderAndIsr(1, 0, (1,), partition_epoch=1)


def test_update_leader_and_isr_fails_all_if_the_epoch_znode_is_missing(controller, zk):
    c, epoch, version = controller
    zk.delete(c.session_id, "/controller_epoch")
    result = c.update_leader_and_isr({("t", 0): LeaderAndIsr(2, 1, (2,)), ("t", 1): LeaderAndIsr(2, 1, (2,))},
                                     epoch, version)
    assert result.to_retry == [] and set(result.finished) == {("t", 0), ("t", 1)}
    assert all(isinstance(e, NoNodeError) and e.path == "/controller_epoch" for e in result.finished.values())


def test_create_partition_states_nodeexists_is_a_store_error(controller):
    c, epoch, version = controller
    out = c.create_partition_states({("t", 0): lice(2, (2,)), ("t", 2): lice(2, (2,))}, version)
    assert out[("t", 2)] is None
    assert isinstance(out[("t", 0)], StoreError) and out[("t", 0)].code == "NODEEXISTS"
    assert str(out[("t", 0)]) == "KeeperErrorCode = NodeExists"
    assert c.get_partition_states([("t", 0)])[("t", 0)] == lice(1, (1, 2))


def test_update_as_leader_succeeds_on_badversion_if_already_written(controller):
    c, _, _ = controller
    lai = LeaderAndIsr(1, 0, (1,), partition_epoch=0)
    assert c.update_partition_state_as_leader(("t", 0), lai, 1) == (True, 1)
    assert c.update_partition_state_as_leader(("t", 0), lai, 1) == (True, 1)      # a retry after a lost reply
    assert c.update_partition_state_as_leader(("t", 0), lai._replace(isr=(1, 2)), 1) == (False, -1)
    assert c.update_partition_state_as_leader(("t", 9), lai, 1) == (False, -2)


def test_state_machine_runs_on_the_client(controller, zk):
    c, epoch, version = controller
    ctx = ControllerContext()
    ctx.epoch, ctx.epoch_zk_version = epoch, version
    ctx.add_live_brokers({1: 101, 2: 102})
    ctx.update_partition_full_replica_assignment(("t", 2), ReplicaAssignment((2, 1)))
    journal = Journal()
    journal.set_writer(1, epoch)
    batch = ControllerBrokerRequestBatch(1, ctx, journal, ControllerChannel())
    psm = PartitionStateMachine(1, ctx, c, batch, journal)
    psm.handle_state_changes([("t", 2)], NEW_PARTITION)
    psm.handle_state_changes([("t", 2)], ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(False))
    assert ctx.partition_state(("t", 2)) == ONLINE_PARTITION
    assert data(zk, "/brokers/topics/t/partitions/2/state") == \
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'


# --- handlers and sessions -------------------------------------------------------------------------------
def test_znode_handler_fires_once_per_armed_watch(client_factory, admin):
    c = client_factory(1)
    h = Handler("/controller")
    assert c.register_znode_change_handler_and_check_existence(h) is False
    admin.register_controller_and_increment_controller_epoch(5)
    admin.delete_controller(1)
    assert h.take() == ["created"]                            # the deletion found no watch
    assert c.register_znode_change_handler_and_check_existence(h) is False
    admin.register_controller_and_increment_controller_epoch(5)
    assert h.take() == ["created"]
    assert c.get_controller_id() == 5                         # a read of a handled path re-arms
    admin.delete_controller(2)
    assert h.take() == ["deleted"]
    c.unregister_znode_change_handler("/controller")
    c.get_controller_id()                                     # no handler: no watch
    admin.register_controller_and_increment_controller_epoch(5)
    assert h.take() == []


def test_data_change_handler_rearmed_by_get_data(client_factory, admin):
    c = client_factory(1)
    admin.create_topic_with_assignment("t", {}, {0: [1]})
    h = Handler("/brokers/topics/t")
    c.register_znode_change_handler(h)
    admin.add_partitions("t", None, {1: [1]})
    assert h.take() == []                                     # registering alone arms nothing
    c.get_full_replica_assignment_for_topics(["t"])
    admin.add_partitions("t", None, {2: [1]})
    admin.add_partitions("t", None, {3: [1]})
    assert h.take() == ["changed"]
    c.get_full_replica_assignment_for_topics(["t"])
    admin.add_partitions("t", None, {4: [1]})
    assert h.take() == ["changed"]


def test_child_handler_armed_by_get_children_with_register_watch(client_factory, admin):
    c = client_factory(1)
    h = Handler("/brokers/topics")
    c.register_znode_child_change_handler(h)
    c.get_all_topics_in_cluster()                             # register_watch=False
    admin.create_topic_with_assignment("a", {}, {0: [1]})
    assert h.take() == []
    assert c.get_all_topics_in_cluster(register_watch=True) == {"a"}
    admin.create_topic_with_assignment("b", {}, {0: [1]})
    admin.create_topic_with_assignment("c", {}, {0: [1]})
    assert h.take() == ["children"]


def test_the_session_timeout_is_the_negotiated_one_and_asked_for_again_on_expiry(client_factory, zk):
    c = client_factory(1, session_timeout_ms=1_000)
    assert (c.session_timeout_ms, c.negotiated_session_timeout_ms) == (1_000, 4_000)
    assert zk.session_timeout(c.session_id) == 4_000
    old = c.session_id
    zk.expire_session(old)
    assert c.session_id != old and zk.session_timeout(c.session_id) == 4_000
    c.abandon()
    zk.expire_session(c.session_id)
    assert not c.is_connected and c.negotiated_session_timeout_ms == 4_000    # what asking again would get
    assert client_factory(2, session_timeout_ms=90_000).negotiated_session_timeout_ms == 40_000


def test_session_expiry_reinitializes_the_session(client_factory, zk):
    log = []
    c = client_factory(1)
    c.create_top_level_paths()
    c.register_broker(1, "h1", 9092)
    c.register_state_change_handler(StateHandler("controller-state-change-handler", log))
    c.register_state_change_handler(StateHandler("other", log))
    old = c.session_id
    zk.expire_session(old)
    assert log == [("controller-state-change-handler", "before"), ("other", "before"),
                   ("controller-state-change-handler", "after"), ("other", "after")]
    assert c.session_id != old and c.is_connected and zk.session_timeout(c.session_id) == 18000
    assert c.get_broker(1) is None                            # the registration went with the old session
    epoch = c.register_broker(1, "h1", 9092)
    assert c.get_all_broker_and_epochs_in_cluster()[1][1] == epoch
    c.unregister_state_change_handler("other")
    log.clear()
    zk.expire_session(c.session_id)
    assert log == [("controller-state-change-handler", "before"), ("controller-state-change-handler", "after")]


def test_tick_expiry_and_handlers_on_the_new_session(client_factory, zk, clock):
    c = client_factory(1)
    c.create_top_level_paths()
    h = Handler("/brokers/ids")
    c.register_znode_child_change_handler(h)
    log = []
    c.register_state_change_handler(StateHandler("s", log))
    clock.now += 18_000
    assert zk.tick() != [] and log == [("s", "before"), ("s", "after")]
    c.get_sorted_broker_list()                                # re-arm on the new session
    other = client_factory(2)
    other.register_broker(7, "h", 1)
    assert h.take() == ["children"]


def test_no_reinitialization_after_close_or_abandon(client_factory, zk, clock):
    log = []
    closed = client_factory(1)
    closed.create_top_level_paths()
    closed.register_broker(1, "h", 1)
    closed.register_state_change_handler(StateHandler("s", log))
    sid = closed.session_id
    closed.close()
    assert not closed.is_connected and not zk.is_alive(sid)
    assert "/brokers/ids/1" not in zk                         # a clean close removes ephemerals at once

    killed = client_factory(2)
    killed.register_broker(2, "h", 2)
    killed.register_state_change_handler(StateHandler("k", log))
    killed.abandon()                                          # kill -9: the session lingers
    killed.heartbeat()
    assert "/brokers/ids/2" in zk and not killed.is_connected
    clock.now += 18_000
    assert killed.session_id in zk.tick()
    assert "/brokers/ids/2" not in zk and log == []


# --- notifications and deletions ------------------------------------------------------------------------------
def test_isr_change_notifications_round_trip(controller, client_factory, zk):
    c, epoch, version = controller
    h = Handler("/isr_change_notification")
    c.register_znode_child_change_handler(h)
    assert c.get_all_isr_change_notifications() == []         # arms the child watch
    broker = client_factory(5)
    broker.propagate_isr_changes([("t", 0), ("t", 1)])
    broker.propagate_isr_changes([("t", 2)])
    assert h.take() == ["children"]
    names = c.get_all_isr_change_notifications()
    assert names == ["0000000000", "0000000001"]
    assert sorted(c.get_partitions_from_isr_change_notifications(names)) == [("t", 0), ("t", 1), ("t", 2)]
    c.delete_isr_change_notifications(names, version)
    assert c.get_all_isr_change_notifications() == []
    assert h.take() == ["children"]


def test_log_dir_event_notifications_round_trip(controller, client_factory):
    c, _, version = controller
    client_factory(3).propagate_log_dir_event(3)
    client_factory(4).propagate_log_dir_event(4)
    names = c.get_all_log_dir_event_notifications()
    assert names == ["0000000000", "0000000001"]
    assert c.get_broker_ids_from_log_dir_events(names) == [3, 4]
    c.delete_log_dir_event_notifications(None, version)
    assert c.get_all_log_dir_event_notifications() == []


def test_topic_deletion_paths(controller, zk):
    c, _, version = controller
    c.create_delete_topic_path("t")
    with pytest.raises(NodeExistsError):
        c.create_delete_topic_path("t")
    assert c.get_topic_deletions() == ["t"] and c.is_topic_marked_for_deletion("t")
    c.delete_topic_znode("t", version)
    c.delete_topic_configs(["t"], version)
    c.delete_topic_deletions(["t"], version)
    assert not any(p.startswith(("/brokers/topics/t", "/config/topics/t", "/admin/delete_topics/t"))
                   for p, _, _ in zk.nodes())
    assert c.get_topic_deletions() == []


def test_reassignment_and_preferred_election_znodes(controller):
    c, _, version = controller
    assert c.get_partition_reassignment() == {} and not c.reassign_partitions_in_progress()
    c.set_or_create_partition_reassignment({("t", 0): [2, 1], ("t", 1): [2]}, version)
    assert c.get_partition_reassignment() == {("t", 0): [2, 1], ("t", 1): [2]}
    c.set_or_create_partition_reassignment({("t", 1): [1]}, version)
    assert c.get_partition_reassignment() == {("t", 1): [1]}
    c.delete_partition_reassignment(version)
    assert not c.reassign_partitions_in_progress()
    c.create_preferred_replica_election([("t", 0), ("t", 1)])
    assert c.get_preferred_replica_election() == [("t", 0), ("t", 1)]
    c.delete_preferred_replica_election(version)
    assert c.get_preferred_replica_election() == []


def test_reassignment_read_and_rewritten_keeps_kafkas_order():
    # Kafka decodes into an immutable Map (a hash trie past four entries) and re-encodes that map.
    body = encode_partition_reassignment({("t", p): [1, p] for p in range(6)})
    assert encode_partition_reassignment(decode_partition_reassignment(body)) == body


# --- admin -------------------------------------------------------------------------------------------------
def test_created_topic_is_visible(admin, client_factory):
    c = client_factory(1)
    topic_id = admin.create_topic_with_assignment("orders", {}, {0: [1, 2], 1: [2, 3]})
    assert c.get_all_topics_in_cluster() == {"orders"}
    assert c.get_full_replica_assignment_for_topics(["orders", "missing"]) == {
        ("orders", 0): ReplicaAssignment((1, 2)), ("orders", 1): ReplicaAssignment((2, 3))}
    assert c.get_topic_ids(["orders", "missing"]) == {"orders": topic_id}
    combined = admin.add_partitions("orders", None, {2: [3, 1]})
    assert sorted(combined) == [0, 1, 2] and c.get_topic_ids(["orders"]) == {"orders": topic_id}
    assert c.get_full_replica_assignment_for_topics(["orders"])[("orders", 2)] == ReplicaAssignment((3, 1))
    existing = c.get_full_replica_assignment_for_topics(["orders"])
    admin.add_partitions("orders", existing, {3: [1, 2]})
    assert len(c.get_full_replica_assignment_for_topics(["orders"])) == 4


@pytest.mark.parametrize("topic, assignment, error", [
    ("", {0: [1]}, InvalidTopicError), ("bad name", {0: [1]}, InvalidTopicError), ("t", {0: [1], 1: [1, 2]},
                                                                                      InvalidReplicaAssignmentError),
    ("t", {0: [1, 1]}, InvalidReplicaAssignmentError), ("t", {1: [1]}, InvalidReplicaAssignmentError),
])
def test_topic_creation_validation(admin, topic, assignment, error):
    with pytest.raises(error):
        admin.create_topic_with_assignment(topic, {}, assignment)


def test_topic_creation_conflicts(admin):
    admin.create_topic_with_assignment("a.b", {}, {0: [1]})
    with pytest.raises(TopicExistsError, match="Topic 'a.b' already exists."):
        admin.create_topic_with_assignment("a.b", {}, {0: [1]})
    with pytest.raises(InvalidTopicError, match="collides"):
        admin.create_topic_with_assignment("a_b", {}, {0: [1]})
    with pytest.raises(InvalidReplicaAssignmentError, match="Inconsistent replication factor"):
        admin.add_partitions("a.b", None, {1: [1, 2]})


def test_entity_config_controller_check_of_kafka_3_7_1(client_factory):
    c = client_factory(1, enable_entity_config_controller_check=True)
    c.create_top_level_paths()
    with pytest.raises(ControllerMovedError, match="when there is no controller"):
        c.create_topic_with_assignment("t", {}, {0: [1]})
    c.register_controller_and_increment_controller_epoch(1)
    c.create_topic_with_assignment("t", {"retention.ms": "1"}, {0: [1]})
    assert c.get_entity_configs("topics", "t") == {"retention.ms": "1"}


# --- determinism --------------------------------------------------------------------------------------------
def scenario(seed: int) -> ZooKeeper:
    clock = Clock()
    zk = ZooKeeper(clock)
    admin = KafkaZkClient(zk, clock=clock, rng=random.Random(seed))
    brokers = [KafkaZkClient(zk, clock=clock, rng=random.Random(seed + b)) for b in (1, 2, 3)]
    admin.create_top_level_paths()
    admin.get_or_generate_cluster_id()
    for b, client in enumerate(brokers, 1):
        clock.now += 7
        client.create_top_level_paths()
        client.register_broker(b, f"broker-{b}", 9092, f"r{b % 2}")
    epoch, version = brokers[0].register_controller_and_increment_controller_epoch(1)
    for name in ("x", "y"):
        admin.create_topic_with_assignment(name, {"retention.ms": "60000"}, {p: [1 + p % 3, 1 + (p + 1) % 3]
                                                                            for p in range(5)})
    ctl = brokers[0]
    ctl.create_partition_states({("x", p): lice(1 + p % 3, (1 + p % 3, 1 + (p + 1) % 3), controller_epoch=epoch)
                                 for p in range(5)}, version)
    clock.now += 100
    ctl.update_leader_and_isr({("x", 0): LeaderAndIsr(2, 1, (2,), partition_epoch=0)}, epoch, version)
    brokers[1].propagate_isr_changes([("x", 1)])
    zk.expire_session(brokers[2].session_id)
    brokers[2].register_broker(3, "broker-3", 9092, "r1")
    return zk


def test_same_calls_same_store():
    a, b = scenario(42), scenario(42)
    assert a.dump() == b.dump()
    assert a.to_dict() == b.to_dict()
    assert scenario(43).dump() != a.dump()                    # the seed chooses topic and cluster ids


# --- pipelined /state requests: the same transactions as one request at a time --------------------------------
class OneAtATimeZooKeeper(ZooKeeper):
    """A store whose batched calls are the single calls, one after the other (what the client sent before)."""

    def iter_multi(self, session_id, batches):
        for ops in batches:
            try:
                yield self.multi(session_id, ops)
            except KeeperError as e:
                yield e

    def get_data_and_version_many(self, session_id, paths, watch=()):
        out = []
        for path in paths:
            try:
                out.append(self.get_data_and_version(session_id, path, path in watch))
            except NoNodeError:
                out.append(None)
        return out


def _summary(value):
    """Results with errors as (type, code, path, message): comparable across two stores."""
    if isinstance(value, Exception):
        return (type(value).__name__, getattr(value, "code", None), getattr(value, "path", None), str(value))
    if isinstance(value, dict):
        return {k: _summary(v) for k, v in value.items()}
    if hasattr(value, "finished"):
        return (_summary(value.finished), list(value.to_retry))
    return value


def _run_state_requests(zk_cls) -> tuple[list, dict, list]:
    clock = Clock()
    zk = zk_cls(clock)
    a = KafkaZkClient(zk, clock=clock, rng=random.Random(1))
    a.create_top_level_paths()
    epoch, version = a.register_controller_and_increment_controller_epoch(1)
    a.create_topic_with_assignment("t", {}, {p: [1, 2] for p in range(6)})
    a.create_topic_with_assignment("u", {}, {0: [2, 1]})
    handler = Handler("/brokers/topics/t/partitions/1/state")
    a.register_znode_change_handler(handler)
    out = []

    def call(fn):
        try:
            out.append(("ok", _summary(fn())))
        except Exception as e:  # noqa: BLE001 - compared, not handled
            out.append(("raised", _summary(e)))
        clock.now += 3

    call(lambda: a.create_partition_states({("t", p): lice(1, (1, 2), controller_epoch=epoch) for p in range(4)},
                                           version))
    call(lambda: a.create_partition_states({("t", 3): lice(2, (2,), controller_epoch=epoch),      # NODEEXISTS
                                            ("t", 4): lice(2, (2, 1), controller_epoch=epoch),
                                            ("u", 0): lice(2, (2, 1), controller_epoch=epoch)}, version))
    call(lambda: a.get_partition_states([("t", p) for p in range(7)] + [("u", 0), ("v", 0)]))   # arms t-1's watch
    call(lambda: a.update_partition_state_as_leader(("t", 2), LeaderAndIsr(1, 0, (1,), partition_epoch=0), epoch))
    call(lambda: a.update_leader_and_isr({("t", 0): LeaderAndIsr(2, 1, (2, 1), partition_epoch=0),
                                          ("t", 1): LeaderAndIsr(2, 1, (2,), partition_epoch=0),
                                          ("t", 2): LeaderAndIsr(2, 1, (2,), partition_epoch=0),      # BADVERSION
                                          ("t", 5): LeaderAndIsr(2, 1, (2,), partition_epoch=0),      # NONODE
                                          ("u", 0): LeaderAndIsr(1, 1, (1,), partition_epoch=0)}, epoch, version))
    call(lambda: a.update_leader_and_isr({}, epoch, version))
    call(lambda: a.update_leader_and_isr({("t", 0): LeaderAndIsr(2, 1, (2,))}, epoch, -5))             # ValueError
    call(lambda: a.get_partition_states(iter([("t", 1), ("t", 0)])))
    b = KafkaZkClient(zk, clock=clock, rng=random.Random(2))
    zk.expire_session(a.session_id)                                   # A's controller is deposed
    call(lambda: b.register_controller_and_increment_controller_epoch(2))
    call(lambda: a.update_leader_and_isr({("t", 0): LeaderAndIsr(1, 2, (1,), partition_epoch=1),
                                          ("t", 4): LeaderAndIsr(1, 2, (1,), partition_epoch=0)}, epoch, version))
    call(lambda: a.create_partition_states({("t", 5): lice(1, (1,), controller_epoch=epoch)}, version))
    zk.delete(b.session_id, "/controller_epoch", -1)
    call(lambda: b.update_leader_and_isr({("t", 0): LeaderAndIsr(1, 2, (1,), partition_epoch=1)}, 2, 1))
    a.abandon()                                                       # A's process is gone, then its session
    zk.expire_session(a.session_id)
    call(lambda: a.update_leader_and_isr({("t", 0): LeaderAndIsr(1, 2, (1,), partition_epoch=1)}, epoch, 0))
    call(lambda: a.create_partition_states({("t", 5): lice(1, (1,), controller_epoch=epoch)}, 0))
    call(lambda: a.get_partition_states([("t", 0)]))
    return out, zk.to_dict(per_znode=True), handler.take()


def test_pipelined_state_requests_are_the_requests_one_at_a_time():
    pipelined, sequential = _run_state_requests(ZooKeeper), _run_state_requests(OneAtATimeZooKeeper)
    assert pipelined[0] == sequential[0]
    assert pipelined[1] == sequential[1]           # same transactions: tree, versions, zxids, times, watches
    assert pipelined[2] == sequential[2] == ["changed"]
    raised = [o[1][0] for o in pipelined[0] if o[0] == "raised"]
    assert raised == ["ValueError", "ControllerMovedError", "ControllerMovedError", "SessionExpiredError",
                      "SessionExpiredError"]
    assert pipelined[0][-3][1][0][("t", 0)][0] == "SessionExpiredError"   # update_leader_and_isr fails them all


def test_decoded_partition_states_are_shared_and_equal_to_fresh_decodes():
    from controller.store.zk_data import _decode_partition_state, decode_partition_state, encode_partition_state
    body = encode_partition_state(lice(3, (3, 1, 2), leader_epoch=4, controller_epoch=7, recovery=1))
    first = decode_partition_state(body, 5)
    assert first == _decode_partition_state(body, 5) == lice(3, (3, 1, 2), 4, 7, 1)._replace(
        leader_and_isr=LeaderAndIsr(3, 4, (3, 1, 2), 1, 5))
    assert decode_partition_state(bytes(body), 5) is first                   # equal bytes, one decoded value
    assert decode_partition_state(body, 6).leader_and_isr.partition_epoch == 6
    assert decode_partition_state(bytearray(body), 5) == first               # unhashable data: no memo
    assert decode_partition_state(None, 0) is None and decode_partition_state(b"junk", 0) is None


def _encode_topic_reference(topic_id, assignment):
    """TopicZNode.encode through plain dicts and to_json (what encode_topic must equal, byte for byte)."""
    from controller.store.zk_data import _mutable_key_order, _ordered, _scala_presized_table, java_hash, \
        scala_mutable_order, to_json
    partitions, adding, removing = {}, {}, {}
    for p, a in assignment.items():
        partitions[str(p)] = [int(x) for x in a.replicas]
        if a.adding_replicas:
            adding[str(p)] = [int(x) for x in a.adding_replicas]
        if a.removing_replicas:
            removing[str(p)] = [int(x) for x in a.removing_replicas]
    body = {"version": 3,
            "partitions": _ordered(partitions, scala_mutable_order(partitions, java_hash)),
            "adding_replicas": _ordered(adding, scala_mutable_order(adding, java_hash)),
            "removing_replicas": _ordered(removing, scala_mutable_order(removing, java_hash))}
    if topic_id is not None:
        body["topic_id"] = topic_id
    return to_json(_ordered(body, _mutable_key_order(tuple(body), _scala_presized_table(4))))


@settings(max_examples=200)
@given(st.dictionaries(st.integers(0, 300), st.tuples(st.lists(st.integers(0, 2000), min_size=1, max_size=5),
                                                      st.lists(st.integers(0, 2000), max_size=2),
                                                      st.lists(st.integers(0, 2000), max_size=2)), max_size=40),
       st.one_of(st.none(), st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                                    min_size=22, max_size=22)))
def test_encode_topic_matches_the_plain_json_encoding(by_partition, topic_id):
    from controller.store.zk_data import encode_topic
    from statemachines.leader_and_isr import ReplicaAssignment
    assignment = {p: ReplicaAssignment(tuple(r), tuple(a), tuple(rm)) for p, (r, a, rm) in by_partition.items()}
    assert encode_topic(topic_id, assignment) == _encode_topic_reference(topic_id, assignment)


def test_an_assignment_becomes_a_matrix_only_in_its_usual_form():
    from controller.store.kafka_zk_client import _assignment_matrix
    assert _assignment_matrix({0: [1, 2], 1: (2, 3)}).tolist() == [[1, 2], [2, 3]]
    assert _assignment_matrix({0: [-1, 5]}).tolist() == [[-1, 5]]
    for other in ({}, {1: [1]}, {1: [1], 0: [2]}, {"0": [1]}, {True: [1]}, {0: [True, 1]}, {0: [1.0, 2]},
                  {0: [1], 1: [1, 2]}, {0: []}, {0: [2 ** 70]}, {0: "12"}):
        assert _assignment_matrix(other) is None, other
