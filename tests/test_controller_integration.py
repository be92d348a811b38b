"""Kafka's ControllerIntegrationTest (core/src/test/scala/unit/kafka/controller), ported to the in-process cluster.

Every test names the Kafka test it ports. Kafka's servers are real brokers on a real ZooKeeper;
here they are ``controller.embedding.cluster.Cluster`` brokers on the embedded store, with simulated time.
Translations used throughout:

* ``server.shutdown()`` -> :func:`stop` (kill -9, then let the session time out: the cluster models
  no clean shutdown, and a killed broker's registration only goes when its session expires);
* ``server.startup()`` -> ``cluster.start_broker(b)`` (a new process: new session, new broker epoch);
* ``waitForPartitionState`` / ``waitUntilControllerEpoch`` -> an assertion right after the action
  (every action settles the cluster before returning);
* ``zkClient`` -> ``cluster.admin``; ``controllerContext`` -> ``cluster.controller.context``;
* a broker's metadata cache -> ``BrokerServer.metadata`` / ``.live_brokers`` / ``.leader_and_isr`` and the
  UpdateMetadataPartition records it accepted;
* ``AlterPartitionReceived`` on the controller's event manager -> ``cluster.alter_partition`` (or the event
  itself, put on the controller, for a broker that is not running).

Scenarios of later work (controlled shutdown, reassignment, topic deletion, preferred elections,
log dir failures, feature versioning, topic ids, KRaft migration) are not ported here (the log dir
failure ones are in test_log_dir_failure.py).

The last test runs random histories (kills, restarts, session expiries, clock advances, topic
creations, partition additions, topic config changes, AlterPartition requests) and checks the
controller's invariants after every action.
"""
from __future__ import annotations

import logging
import random

import pytest
import structlog

from controller.embedding.cluster import Cluster, ClusterError
from controller.controller_events import (
    FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA, INVALID_REQUEST, INVALID_UPDATE_VERSION, NOT_CONTROLLER,
    STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, AlterPartitionReceived, BrokerChange,
    TopicChange,
)
from controller.store.kafka_zk_client import KafkaZkClient, TopicExistsError
from controller.embedding.replay import replay_records
from controller.request_batch import BrokerRequest
from events.records import (
    API_LEADER_AND_ISR, API_UPDATE_METADATA, ELECTION_NEW_PARTITION, ELECTION_OFFLINE, ELECTION_OFFLINE_UNCLEAN,
    NO_LEADER, RECOVERED, RECOVERING, UPDATE_ALTER_PARTITION, UPDATE_OFFLINE_REPLICA, ControllerElected,
    ControllerResigned, LeaderAndIsrPartition, LeaderAndIsrUpdated, LiveBrokersChanged, PartitionTransition,
    ReplicaTransition, RequestSent, TransitionFailed, UpdateMetadataPartition,
)
from statemachines.cluster_view import ClusterView, fold
from statemachines.leader_and_isr import LeaderAndIsr
from statemachines.states import NEW_PARTITION, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA

SESSION_TIMEOUT_MS = 18_000          # zookeeper.session.timeout.ms, Kafka's default
FIRST_CONTROLLER_EPOCH = 1           # KafkaController.InitialControllerEpoch + 1
FIRST_CONTROLLER_EPOCH_ZK_VERSION = 1  # KafkaController.InitialControllerEpochZkVersion + 1
INITIAL_LEADER_EPOCH = 0             # LeaderAndIsr.InitialLeaderEpoch
UNCLEAN = "unclean.leader.election.enable"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"


# --- helpers -----------------------------------------------------------------------------------

def make_cluster(n: int = 0, *, seed: int = 0, **configs) -> Cluster:
    """Kafka's makeServers(n): brokers 0..n-1 started in order, so broker 0 wins /controller."""
    cluster = Cluster(configs=configs, seed=seed)
    cluster.start_brokers(range(n))
    return cluster


def metadata_of(partition_state) -> tuple:
    """(leader, leader_epoch, isr) of an UpdateMetadata partition state a broker cached."""
    return (partition_state.leader, partition_state.leader_epoch, partition_state.isr)


def stop(cluster: Cluster, broker_id: int) -> None:
    """Kafka's ``server.shutdown(); server.awaitShutdown()``: the process goes, and (kill -9 being the only way
    a process stops here) its store session times out, so the controller sees the broker leave."""
    cluster.kill_broker(broker_id)
    cluster.advance(SESSION_TIMEOUT_MS + 1)
    assert str(broker_id) not in cluster.admin.get_children("/brokers/ids")


def partition_state(cluster: Cluster, tp: tuple):
    """``zkClient.getTopicPartitionStates(Seq(tp))(tp)``: the stored LeaderIsrAndControllerEpoch."""
    states = cluster.admin.get_topic_partition_states([tp])
    assert tp in states, f"{tp} has no /state znode"
    return states[tp]


def assert_partition_state(cluster: Cluster, tp: tuple, controller_epoch: int, leader: int, leader_epoch: int) -> None:
    """Kafka's waitForPartitionState / isExpectedPartitionState."""
    info = partition_state(cluster, tp)
    assert (info.controller_epoch, info.leader_and_isr.leader, info.leader_and_isr.leader_epoch) == \
        (controller_epoch, leader, leader_epoch), info


def assert_controller_epoch(cluster: Cluster, epoch: int) -> None:
    """Kafka's waitUntilControllerEpoch: ``/controller_epoch`` holds ``epoch``."""
    stored = cluster.admin.get_controller_epoch()
    assert stored is not None and stored[0] == epoch, stored
    assert f"/controller_epoch = {epoch}" in cluster.zk.dump().splitlines()


def records(cluster: Cluster, cls=None, since: int = 0) -> list:
    return [r for r in cluster.journal.records[since:] if cls is None or type(r) is cls]


def elected_epochs(cluster: Cluster) -> list[tuple[int, int]]:
    return [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerElected)]


def accepted_metadata(cluster: Cluster, broker_id: int, tp: tuple) -> UpdateMetadataPartition:
    """The partition state of the last UpdateMetadata that reached ``broker_id`` for ``tp``, checked against
    what the broker's metadata cache holds (Kafka's ``metadataCache.getPartitionInfo``)."""
    sent = [r for r in records(cluster, UpdateMetadataPartition)
            if broker_id in r.brokers and (r.topic, r.partition) == tp]
    assert sent, f"broker {broker_id} never got metadata for {tp}"
    last = sent[-1]
    assert metadata_of(cluster.brokers[broker_id].metadata[tp]) == (last.leader, last.leader_epoch, last.isr)
    return last


def assert_metadata_propagated(cluster: Cluster, broker_ids) -> None:
    """TestUtils.waitUntilBrokerMetadataIsPropagated: every broker's metadata lists exactly these live brokers."""
    ids = tuple(sorted(broker_ids))
    for b in ids:
        assert cluster.brokers[b].live_brokers == ids, (b, cluster.brokers[b].live_brokers)


def alter(cluster: Cluster, broker_id: int, tp: tuple, *, leader_epoch: int, partition_epoch: int, isr,
          recovery_state: int = RECOVERED, broker_epoch: int | None = None):
    """An AlterPartition request from ``broker_id`` (Kafka's alterPartitionFuture). A running broker sends it
    through the cluster (a journaled input); for another id the request is put on the controller directly."""
    server = cluster.brokers.get(broker_id)
    if server is not None and server.alive:
        return cluster.alter_partition(broker_id, {tp: (leader_epoch, tuple(isr), recovery_state, partition_epoch)},
                                       broker_epoch=broker_epoch)
    responses: list = []
    cluster.controller.event_manager.put(AlterPartitionReceived(
        broker_id, broker_epoch, {tp: LeaderAndIsr(broker_id, leader_epoch, tuple(isr), recovery_state,
                                                   partition_epoch)}, responses.append))
    cluster.settle()
    assert len(responses) == 1
    return responses[0]


def assert_fold_agrees(cluster: Cluster) -> None:
    """statemachines.cluster_view.fold of the records says what the active controller's context says."""
    check_fold_agrees(fold(cluster.journal.records), cluster.controller)


def partition_error(response, tp: tuple) -> str:
    assert response is not None and response.error == "NONE", response
    return response.partitions[tp]


# --- controller election and epochs --------------------------------------------------------------

def test_empty_cluster():
    # Kafka: testEmptyCluster
    cluster = make_cluster(1)
    assert cluster.admin.get_controller_id() == 0
    assert_controller_epoch(cluster, FIRST_CONTROLLER_EPOCH)
    assert cluster.admin.get_controller_epoch() == (FIRST_CONTROLLER_EPOCH, FIRST_CONTROLLER_EPOCH_ZK_VERSION)
    assert cluster.controller.epoch == FIRST_CONTROLLER_EPOCH
    assert cluster.controller.context.epoch_zk_version == FIRST_CONTROLLER_EPOCH_ZK_VERSION
    assert elected_epochs(cluster) == [(0, FIRST_CONTROLLER_EPOCH)]
    assert records(cluster, ControllerElected)[0].epoch_zk_version == FIRST_CONTROLLER_EPOCH_ZK_VERSION
    # The new controller told the (only) broker about itself and the live brokers.
    assert cluster.brokers[0].controller_epoch == FIRST_CONTROLLER_EPOCH
    assert_metadata_propagated(cluster, [0])


def test_controller_epoch_persists_when_all_brokers_down():
    # Kafka: testControllerEpochPersistsWhenAllBrokersDown
    cluster = make_cluster(1)
    assert_controller_epoch(cluster, FIRST_CONTROLLER_EPOCH)
    cluster.kill_broker(0)
    assert cluster.admin.get_controller_id() == 0          # the session lives on until it times out
    cluster.advance(SESSION_TIMEOUT_MS)
    assert cluster.admin.get_controller_id() is None
    assert cluster.controller is None
    assert_controller_epoch(cluster, FIRST_CONTROLLER_EPOCH)
    assert "/controller = " not in cluster.zk.dump()
    assert elected_epochs(cluster) == [(0, FIRST_CONTROLLER_EPOCH)]


def test_controller_move_increments_controller_epoch():
    # Kafka: testControllerMoveIncrementsControllerEpoch
    cluster = make_cluster(1)
    assert_controller_epoch(cluster, FIRST_CONTROLLER_EPOCH)
    stop(cluster, 0)
    cluster.start_broker(0)
    assert cluster.admin.get_controller_id() == 0
    assert_controller_epoch(cluster, FIRST_CONTROLLER_EPOCH + 1)
    assert cluster.admin.get_controller_epoch() == (2, 2)
    assert cluster.controller.epoch == 2
    assert elected_epochs(cluster) == [(0, 1), (0, 2)]
    assert cluster.brokers[0].controller_epoch == 2


def test_controller_failover_when_the_controller_is_killed():
    # Kafka: controller re-election as in testTopicIdPersistsThroughControllerReelection (without topic ids):
    # the controller's broker goes away, another broker takes over with the next epoch and the same partitions.
    cluster = make_cluster(3)
    cluster.create_topic("t", assignment=[[0, 1, 2], [1, 2, 0]])
    assert cluster.controller_id == 0
    cluster.kill_broker(0, at=1_000)
    cluster.advance_to(1_000 + SESSION_TIMEOUT_MS - 1)
    assert cluster.controller_id == 0 and cluster.controller is None   # the dead controller still holds the znode
    cluster.advance(1)
    assert cluster.controller_id == 1
    controller = cluster.controller
    assert controller.epoch == 2 and controller.context.epoch_zk_version == 2
    assert_controller_epoch(cluster, 2)
    assert cluster.admin.get_controller_epoch() == (2, 2)
    assert cluster.admin.get_controller_registration()[0] == 1
    assert '/controller = {"version":2,"brokerid":1,' in cluster.zk.dump()
    assert elected_epochs(cluster) == [(0, 1), (1, 2)]
    # The new controller saw the dead broker at once: its replica state machine starts first and takes replica 0
    # out of t-0's ISR (leader -1, epoch 1), then its partition state machine elects 1 from the ISR (epoch 2).
    elected = records(cluster, ControllerElected)[-1]
    shrink = records(cluster, LeaderAndIsrUpdated, since=elected.offset)
    assert [(r.topic, r.partition, r.leader, r.leader_epoch, r.isr, r.reason) for r in shrink] == [
        ("t", 0, NO_LEADER, 1, (1, 2), UPDATE_OFFLINE_REPLICA), ("t", 1, 1, 1, (1, 2), UPDATE_OFFLINE_REPLICA)]
    election = [r for r in records(cluster, PartitionTransition, since=elected.offset)
                if r.to_state == ONLINE_PARTITION]
    assert [(r.partition, r.from_state, r.leader, r.leader_epoch, r.election) for r in election] == \
        [(0, OFFLINE_PARTITION, 1, 2, ELECTION_OFFLINE)]
    assert_partition_state(cluster, ("t", 0), 2, 1, 2)
    assert partition_state(cluster, ("t", 0)).leader_and_isr.isr == (1, 2)
    assert_partition_state(cluster, ("t", 1), 2, 1, 1)
    assert sorted(controller.context.live_broker_ids) == [1, 2]
    # Every live broker accepted the new controller's epoch and heard about both partitions from it.
    for b in (1, 2):
        server = cluster.brokers[b]
        assert server.controller_epoch == 2 and not server.rejected
        assert server.leader_and_isr[("t", 0)][:3] == (1, 2, (1, 2))
        assert server.leader_and_isr[("t", 1)][:3] == (1, 1, (1, 2))
        assert accepted_metadata(cluster, b, ("t", 0)).state_controller_epoch == 2
        assert accepted_metadata(cluster, b, ("t", 1)).leader == 1
    assert_metadata_propagated(cluster, [1, 2])
    # onControllerFailover sends UpdateMetadata (live brokers, no partitions) to every live broker before the
    # state machines start and send LeaderAndIsr.
    sent = records(cluster, RequestSent, since=elected.offset)
    assert [(r.api, r.broker_id, r.partition_count, r.live_brokers) for r in sent[:2]] == \
        [(API_UPDATE_METADATA, 1, 0, (1, 2)), (API_UPDATE_METADATA, 2, 0, (1, 2))]
    assert all(r.controller_epoch == 2 for r in sent)
    # Only the new controller writes from now on.
    assert all(r.controller_epoch == 2 for r in records(cluster, PartitionTransition, since=elected.offset))
    assert_fold_agrees(cluster)


@pytest.mark.parametrize("requested, negotiated", [(1_000, 4_000), (60_000, 40_000)])
def test_a_killed_controller_times_out_after_the_negotiated_session_timeout(requested, negotiated):
    # ZooKeeper clamps zookeeper.session.timeout.ms to [2, 20] x tickTime (2000 ms): 1 s becomes 4 s, 60 s 40 s.
    cluster = make_cluster(2, **{"zookeeper.session.timeout.ms": requested})
    assert cluster.session_timeout_ms == negotiated
    assert [cluster.zk.session_timeout(s.zk.session_id) for s in cluster.brokers.values()] == [negotiated] * 2
    assert cluster.brokers[0].zk.session_timeout_ms == requested
    assert cluster.brokers[0].zk.negotiated_session_timeout_ms == negotiated
    cluster.kill_broker(0, at=1_000)
    cluster.advance_to(1_000 + negotiated - 1)
    assert cluster.controller_id == 0 and cluster.controller is None
    cluster.advance(1)
    assert cluster.controller_id == 1 and elected_epochs(cluster) == [(0, 1), (1, 2)]


def test_controller_failover_when_the_controller_session_expires():
    # Kafka: re-election after the controller's session expires (Expire -> resign, RegisterBrokerAndReelect).
    cluster = make_cluster(3)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    old_epoch = cluster.brokers[0].broker_epoch
    before = len(cluster.journal.records)
    cluster.expire_session(0, at=100)
    # Broker 0 resigned (it is the one that held /controller), registered again and won the new election.
    resigned = records(cluster, ControllerResigned, since=before)
    assert [(r.controller_id, r.controller_epoch) for r in resigned] == [(0, 1)]
    assert elected_epochs(cluster) == [(0, 1), (0, 2)]
    assert resigned[0].offset < records(cluster, ControllerElected)[-1].offset
    assert_controller_epoch(cluster, 2)
    assert [b for b, s in cluster.brokers.items() if s.controller.is_active] == [0]
    assert cluster.brokers[0].broker_epoch > old_epoch
    assert cluster.controller.context.live_broker_epochs[0] == cluster.brokers[0].broker_epoch
    for server in cluster.brokers.values():
        assert server.controller_epoch == 2
    # Nothing needed an election: the leader came back before anyone noticed it was gone.
    assert_partition_state(cluster, ("t", 0), 1, 0, 0)
    assert_fold_agrees(cluster)


def test_non_controller_session_expiry_keeps_the_controller():
    # Kafka: a broker's session expiry re-registers it; /controller and /controller_epoch do not move.
    cluster = make_cluster(3)
    cluster.expire_session(2, at=100)
    assert cluster.controller_id == 0 and cluster.controller.epoch == 1
    assert_controller_epoch(cluster, 1)
    assert elected_epochs(cluster) == [(0, 1)]
    assert sorted(cluster.controller.context.live_broker_ids) == [0, 1, 2]


# --- broker lifecycle and metadata propagation -----------------------------------------------------

def test_metadata_propagation_on_broker_change():
    # Kafka: testMetadataPropagationOnBrokerChange
    cluster = make_cluster(3)
    assert_metadata_propagated(cluster, [0, 1, 2])
    controller_id = cluster.controller_id
    test_broker = next(b for b in (0, 1, 2) if b != controller_id)
    remaining = [b for b in (0, 1, 2) if b != test_broker]
    assignment = {0: (remaining[0], test_broker), 1: tuple(remaining)}
    cluster.create_topic("topic1", assignment=[assignment[0], assignment[1]])

    stop(cluster, test_broker)
    assert_metadata_propagated(cluster, remaining)
    for b in remaining:
        offline = accepted_metadata(cluster, b, ("topic1", 0))
        assert offline.offline_replicas == (test_broker,)
        assert offline.replicas == assignment[0]
        assert offline.isr == (remaining[0],)
        online = accepted_metadata(cluster, b, ("topic1", 1))
        assert online.replicas == assignment[1]
        assert online.offline_replicas == ()

    cluster.start_broker(test_broker)
    for b in (0, 1, 2):
        for p, replicas in assignment.items():
            info = accepted_metadata(cluster, b, ("topic1", p))
            assert info.offline_replicas == () and info.replicas == replicas, (b, p, info)


def test_metadata_propagation_for_offline_replicas():
    # Kafka: testMetadataPropagationForOfflineReplicas
    cluster = make_cluster(3)
    controller_id = cluster.controller_id
    replica_broker = next(b for b in (0, 1, 2) if b != controller_id)
    other_broker = next(b for b in (0, 1, 2) if b not in (controller_id, replica_broker))
    cluster.create_topic("topic1", assignment=[[replica_broker]])
    tp = ("topic1", 0)
    stop(cluster, other_broker)
    stop(cluster, replica_broker)
    stop(cluster, controller_id)
    assert cluster.controller is None

    def verify_metadata(broker_id: int) -> None:
        cluster.start_broker(broker_id)
        info = accepted_metadata(cluster, broker_id, tp)
        assert info.offline_replicas and info.leader == NO_LEADER and info.replicas and info.isr, info

    verify_metadata(controller_id)
    verify_metadata(other_broker)
    assert_fold_agrees(cluster)


def test_metadata_propagation_on_broker_shutdown_with_no_replicas():
    # Kafka: testMetadataPropagationOnBrokerShutdownWithNoReplicas
    cluster = make_cluster(3)
    controller_id = cluster.controller_id
    replica_broker = next(b for b in (0, 1, 2) if b != controller_id)
    other_broker = next(b for b in (0, 1, 2) if b not in (controller_id, replica_broker))
    cluster.create_topic("topic1", assignment=[[replica_broker]])
    stop(cluster, replica_broker)
    stop(cluster, other_broker)
    # The controller is the only live broker, and its own metadata says so (3.7 sends an UpdateMetadata
    # even when the dead broker hosts no replica).
    assert_metadata_propagated(cluster, [controller_id])


def test_leader_and_isr_and_update_metadata_reach_the_right_brokers():
    # Kafka: metadata propagation (TestUtils.createTopic waits for the partition on every broker): the
    # LeaderAndIsr of a new partition goes to its replicas only, the UpdateMetadata to every live broker,
    # both with the controller's epoch and each broker's current broker epoch.
    cluster = make_cluster(4)
    before = len(cluster.journal.records)
    cluster.create_topic("t", assignment=[[1, 2]])
    lai = [r for r in records(cluster, RequestSent, since=before) if r.api == API_LEADER_AND_ISR]
    assert sorted(r.broker_id for r in lai) == [1, 2]
    assert all(r.controller_epoch == 1 and r.broker_epoch == cluster.brokers[r.broker_id].broker_epoch for r in lai)
    parts = records(cluster, LeaderAndIsrPartition, since=before)
    assert {(r.broker_id, r.leader, r.leader_epoch, r.isr, r.is_new) for r in parts} == {
        (1, 1, 0, (1, 2), True), (2, 1, 0, (1, 2), True)}
    um = [r for r in records(cluster, RequestSent, since=before) if r.api == API_UPDATE_METADATA]
    assert sorted(r.broker_id for r in um) == [0, 1, 2, 3]
    for b in (0, 1, 2, 3):
        assert metadata_of(cluster.brokers[b].metadata[("t", 0)]) == (1, 0, (1, 2))
        assert cluster.brokers[b].controller_epoch == 1
    assert set(cluster.brokers[1].leader_and_isr) == set(cluster.brokers[2].leader_and_isr) == {("t", 0)}
    assert not cluster.brokers[0].leader_and_isr and not cluster.brokers[3].leader_and_isr


def test_controller_detects_bounced_brokers():
    # Kafka: testControllerDetectsBouncedBrokers. Kafka blocks the controller's event thread while the other
    # broker restarts; here broker 1 is the controller and broker 0's session expires: broker 0 registers
    # again (steps are round-robin by broker id) before the controller reads /brokers/ids, so the controller
    # sees the same id with a higher broker epoch: a bounced broker.
    cluster = Cluster(seed=0)
    cluster.start_brokers([1, 0])
    assert cluster.controller_id == 1
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 0]])
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, INITIAL_LEADER_EPOCH)
    old_epoch = cluster.brokers[0].broker_epoch
    before = len(cluster.journal.records)
    cluster.expire_session(0, at=100)
    new_epoch = cluster.brokers[0].broker_epoch
    assert new_epoch > old_epoch
    ctx = cluster.controller.context
    assert ctx.live_broker_epochs == {0: new_epoch, 1: cluster.brokers[1].broker_epoch}
    # One BrokerChange handled it as failure + startup: the replica went offline (ISR shrink) and online again.
    changes = records(cluster, LiveBrokersChanged, since=before)
    assert [dict(r.live_brokers)[0] for r in changes] == [new_epoch]
    replica_moves = [(r.from_state, r.to_state) for r in records(cluster, ReplicaTransition, since=before)
                     if r.replica == 0]
    assert replica_moves == [(ONLINE_REPLICA, OFFLINE_REPLICA), (OFFLINE_REPLICA, ONLINE_REPLICA)]
    shrink = records(cluster, LeaderAndIsrUpdated, since=before)
    assert [(r.leader, r.leader_epoch, r.isr, r.reason, r.replica) for r in shrink] == \
        [(1, 1, (1,), UPDATE_OFFLINE_REPLICA, 0)]
    # The bounced broker gets the partition again (partitionCount == 1), addressed to its new broker epoch,
    # and metadata listing both live brokers.
    to_broker_0 = [r for r in records(cluster, RequestSent, since=before) if r.broker_id == 0]
    assert to_broker_0 and all(r.broker_epoch == new_epoch for r in to_broker_0)
    assert any(r.api == API_LEADER_AND_ISR for r in to_broker_0)
    server = cluster.brokers[0]
    assert list(server.leader_and_isr) == [tp] and server.leader_and_isr[tp][:3] == (1, 1, (1,))
    assert {t for t, _ in server.metadata} == {"t"}
    assert server.live_brokers == (0, 1)
    assert not server.rejected
    assert_fold_agrees(cluster)


def test_restarted_broker_gets_a_new_broker_epoch_and_its_replicas_back():
    # Kafka: broker failure and restart (the steps of testAutoPreferredReplicaLeaderElection before the
    # preferred election): the leader goes, the follower leads at epoch + 1; the restarted broker registers
    # with a new broker epoch and rejoins as a follower.
    cluster = make_cluster(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 0]])
    old_epoch = cluster.brokers[1].broker_epoch
    stop(cluster, 1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH + 1)
    assert partition_state(cluster, tp).leader_and_isr.isr == (0,)
    before = len(cluster.journal.records)
    cluster.start_broker(1)
    new_epoch = cluster.brokers[1].broker_epoch
    assert new_epoch > old_epoch
    assert cluster.controller.context.live_broker_epochs[1] == new_epoch
    # onBrokerStartup: UpdateMetadata without partitions to the existing brokers, with every partition to the
    # new one; then LeaderAndIsr for its replicas.
    sent = records(cluster, RequestSent, since=before)
    assert [(r.api, r.broker_id, r.partition_count) for r in sent][:2] == \
        [(API_UPDATE_METADATA, 0, 0), (API_UPDATE_METADATA, 1, 1)]
    # No election: leader and epoch unchanged until the follower catches up (an AlterPartition from the leader).
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH + 1)
    assert cluster.brokers[1].leader_and_isr[tp][:3] == (0, 1, (0,))
    sent = [r for r in records(cluster, RequestSent) if r.broker_id == 1 and r.api == API_LEADER_AND_ISR]
    assert sent[-1].broker_epoch == new_epoch
    assert_fold_agrees(cluster)


# --- topic creation and partition expansion ---------------------------------------------------------

def test_topic_creation():
    # Kafka: testTopicCreation
    cluster = make_cluster(1)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH)
    online = [r for r in records(cluster, PartitionTransition) if r.to_state == ONLINE_PARTITION]
    assert [(r.from_state, r.leader, r.leader_epoch, r.isr, r.election) for r in online] == \
        [(NEW_PARTITION, 0, 0, (0,), ELECTION_NEW_PARTITION)]
    assert cluster.brokers[0].leader_and_isr[tp] == (0, 0, (0,), 0)
    assert metadata_of(cluster.brokers[0].metadata[tp]) == (0, 0, (0,))


def test_topic_creation_with_offline_replica():
    # Kafka: testTopicCreationWithOfflineReplica
    cluster = make_cluster(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    stop(cluster, other)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[other, controller_id]])
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH)
    assert partition_state(cluster, tp).leader_and_isr.isr == (controller_id,)
    assert accepted_metadata(cluster, controller_id, tp).offline_replicas == (other,)


def test_topic_partition_expansion():
    # Kafka: testTopicPartitionExpansion
    cluster = make_cluster(1)
    cluster.create_topic("t", assignment=[[0]])
    cluster.add_partitions("t", assignment={1: [0]})
    assert_partition_state(cluster, ("t", 1), FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH)
    # TestUtils.waitForPartitionMetadata
    assert metadata_of(cluster.brokers[0].metadata[("t", 1)]) == (0, 0, (0,))
    assert_partition_state(cluster, ("t", 0), FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH)


def test_topic_partition_expansion_with_offline_replica():
    # Kafka: testTopicPartitionExpansionWithOfflineReplica
    cluster = make_cluster(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    cluster.create_topic("t", assignment=[[other, controller_id]])
    stop(cluster, other)
    cluster.add_partitions("t", assignment={1: [other, controller_id]})
    assert_partition_state(cluster, ("t", 1), FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH)
    assert metadata_of(cluster.brokers[controller_id].metadata[("t", 1)]) == (controller_id, 0, (controller_id,))


def test_topic_creation_with_no_live_replica_waits_for_one():
    # Kafka: initializeLeaderAndIsrForPartitions when no replica is alive ("No assigned replica is alive.");
    # the partition stays NewPartition and gets its leader when a replica's broker starts.
    cluster = make_cluster(2)
    stop(cluster, 1)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1]])
    assert cluster.admin.get_topic_partition_states([tp]) == {}
    assert cluster.controller.context.partition_state(tp) == NEW_PARTITION
    failed = records(cluster, TransitionFailed)
    assert failed and failed[-1].message.endswith("No assigned replica is alive.")
    cluster.start_broker(1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, INITIAL_LEADER_EPOCH)
    assert cluster.controller.context.partition_state(tp) == ONLINE_PARTITION


# --- rejected actions ------------------------------------------------------------------------------------

def test_a_rejected_topic_creation_leaves_the_log_replayable():
    # Kafka: AdminZkClient.createTopicWithAssignment validates (TopicExistsException) before writing anything;
    # the request fails and the cluster is as before. The log must still replay.
    cluster = make_cluster(2)
    cluster.create_topic("t", assignment=[[1]])
    with pytest.raises(TopicExistsError):
        cluster.create_topic("t", assignment=[[1], [1], [1]])
    cluster.create_topic("u", assignment=[[0]])
    result = replay_records(cluster.journal.records)
    assert result.ok and result.digest == cluster.digest(), result


def test_a_rejected_broker_action_leaves_the_log_replayable():
    cluster = make_cluster(2)
    cluster.kill_broker(1, at=5)
    with pytest.raises(ClusterError):
        cluster.kill_broker(1)                                         # not running
    with pytest.raises(ClusterError):
        cluster.start_broker(0)                                        # already running
    result = replay_records(cluster.journal.records)
    assert result.ok and result.digest == cluster.digest(), result


def test_a_broker_restarted_while_its_killed_session_lives_exits_and_the_log_replays():
    # Not a Kafka test: KafkaServer.startup fails with the NodeExistsException of KafkaZkClient.registerBroker
    # (its KAFKA-7165 re-creation covers only the client's own earlier session) and the process exits.
    cluster = make_cluster(2)
    cluster.kill_broker(1, at=1_000)
    assert not cluster.start_broker(1, at=2_000).alive
    assert cluster.controller.context.live_broker_ids == {0, 1}      # the old session still holds /brokers/ids/1
    cluster.advance_to(1_000 + SESSION_TIMEOUT_MS + 1)
    assert cluster.controller.context.live_broker_ids == {0}
    assert cluster.start_broker(1).alive
    assert cluster.controller.context.live_broker_ids == {0, 1}
    result = replay_records(cluster.journal.records)
    assert result.ok and result.digest == cluster.digest(), result


def test_a_rejected_topic_creation_changes_nothing_in_the_fold():
    cluster = make_cluster(2)
    cluster.create_topic("t", assignment=[[1]])
    with pytest.raises(TopicExistsError):
        cluster.create_topic("t", assignment=[[1], [1], [1]], configs={UNCLEAN: True})
    assert cluster.admin.get_entity_configs("topics", "t") == {}       # the store is untouched
    stop(cluster, 0)                                                   # broker 1 takes over
    assert sorted(cluster.controller.context.all_partitions()) == [("t", 0)]
    view = fold(cluster.journal.records)
    assert view.topic_configs["t"] == {}
    assert sorted(view.topics["t"]) == [0]


# --- leader election with the whole ISR offline -------------------------------------------------------

def test_leader_and_isr_when_entire_isr_offline_and_unclean_leader_election_disabled():
    # Kafka: testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionDisabled
    cluster = make_cluster(2)
    other = 1 - cluster.controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[other]])
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, other, INITIAL_LEADER_EPOCH)
    stop(cluster, other)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, INITIAL_LEADER_EPOCH + 1)
    assert partition_state(cluster, tp).leader_and_isr.isr == (other,)
    assert cluster.controller.context.partition_state(tp) == OFFLINE_PARTITION


def test_leader_and_isr_when_entire_isr_offline_and_unclean_leader_election_enabled():
    # Kafka: testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled
    cluster = make_cluster(2, **{UNCLEAN: True})
    other = 1 - cluster.controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[other]])
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, other, INITIAL_LEADER_EPOCH)
    stop(cluster, other)
    # No other replica to elect, unclean or not.
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, INITIAL_LEADER_EPOCH + 1)
    assert partition_state(cluster, tp).leader_and_isr.isr == (other,)
    assert not [r for r in records(cluster, PartitionTransition) if r.election == ELECTION_OFFLINE_UNCLEAN]


def _isr_offline_then_out_of_sync_replica_back(cluster: Cluster) -> tuple:
    """Brokers 0 (controller), 1, 2; t-0 on [1, 2]. Broker 1 goes (ISR [2]), broker 2 goes (no leader, ISR [2]),
    broker 1 comes back: not in the ISR."""
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]])
    stop(cluster, 1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 2, 1)
    assert partition_state(cluster, tp).leader_and_isr.isr == (2,)
    stop(cluster, 2)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, 2)
    assert partition_state(cluster, tp).leader_and_isr.isr == (2,)
    cluster.start_broker(1)
    return tp


def test_unclean_leader_election_enabled_later_on_the_topic():
    # Kafka: TopicUncleanLeaderElectionEnable (a topic config change; processTopicUncleanLeaderElectionEnable).
    cluster = make_cluster(3)
    tp = _isr_offline_then_out_of_sync_replica_back(cluster)
    # Clean election only: broker 1 is live but not in the ISR, the partition stays offline.
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, 2)
    ctx = cluster.controller.context
    assert ctx.partition_state(tp) == OFFLINE_PARTITION
    unclean_before = ctx.unclean_leader_elections
    before = len(cluster.journal.records)

    cluster.set_config("topic", "t", UNCLEAN, True)
    assert cluster.admin.get_entity_configs("topics", "t") == {UNCLEAN: "true"}
    info = partition_state(cluster, tp)
    assert info.leader_and_isr == LeaderAndIsr(1, 3, (1,), RECOVERING, info.leader_and_isr.partition_epoch)
    assert info.controller_epoch == FIRST_CONTROLLER_EPOCH
    elections = [r for r in records(cluster, PartitionTransition, since=before) if r.to_state == ONLINE_PARTITION]
    assert [(r.from_state, r.leader, r.leader_epoch, r.isr, r.recovery_state, r.election) for r in elections] == \
        [(OFFLINE_PARTITION, 1, 3, (1,), RECOVERING, ELECTION_OFFLINE_UNCLEAN)]
    assert ctx.partition_state(tp) == ONLINE_PARTITION
    assert ctx.unclean_leader_elections == unclean_before + 1
    metrics = cluster.controller.metrics()
    assert metrics["kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec"] == unclean_before + 1
    assert metrics["kafka.controller:type=KafkaController,name=OfflinePartitionsCount"] == 0
    # The new leader heard about it, with the controller's epoch.
    assert cluster.brokers[1].leader_and_isr[tp][:3] == (1, 3, (1,))
    assert cluster.brokers[1].controller_epoch == FIRST_CONTROLLER_EPOCH
    lai = [r for r in records(cluster, LeaderAndIsrPartition, since=before) if r.broker_id == 1]
    assert lai[-1].recovery_state == RECOVERING
    assert_fold_agrees(cluster)


def test_unclean_leader_election_not_triggered_by_disabling_it_on_the_topic():
    # Kafka: only a change to "true" enqueues TopicUncleanLeaderElectionEnable.
    cluster = make_cluster(3)
    tp = _isr_offline_then_out_of_sync_replica_back(cluster)
    cluster.set_config("topic", "t", UNCLEAN, False)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, 2)


def test_unclean_leader_election_enabled_later_as_the_broker_default():
    # Kafka: UncleanLeaderElectionEnable (the dynamic broker default turned on).
    cluster = make_cluster(3)
    tp = _isr_offline_then_out_of_sync_replica_back(cluster)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, 2)
    cluster.set_config("broker", "", UNCLEAN, True)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, 3)
    assert partition_state(cluster, tp).leader_and_isr.recovery_state == RECOVERING
    assert [r.election for r in records(cluster, PartitionTransition) if r.to_state == ONLINE_PARTITION][-1] == \
        ELECTION_OFFLINE_UNCLEAN


def test_last_isr_member_coming_back_is_elected_cleanly():
    # Kafka: OfflinePartitionLeaderElectionStrategy with a live ISR member: a clean election, whatever the config.
    cluster = make_cluster(3)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]])
    stop(cluster, 1)
    stop(cluster, 2)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, NO_LEADER, 2)
    before = len(cluster.journal.records)
    cluster.start_broker(2)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 2, 3)
    assert partition_state(cluster, tp).leader_and_isr.isr == (2,)
    assert partition_state(cluster, tp).leader_and_isr.recovery_state == RECOVERED
    elections = [r for r in records(cluster, PartitionTransition, since=before) if r.to_state == ONLINE_PARTITION]
    assert [(r.from_state, r.leader, r.election) for r in elections] == [(OFFLINE_PARTITION, 2, ELECTION_OFFLINE)]
    # The out-of-sync replica coming back later changes nothing.
    cluster.start_broker(1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 2, 3)
    assert_fold_agrees(cluster)


def test_topic_unclean_config_at_creation_elects_an_out_of_sync_replica_on_restart():
    # Kafka: the topic override is read at election time (PartitionStateMachine.collectUncleanLeaderElectionState).
    cluster = make_cluster(3)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]], configs={UNCLEAN: True})
    stop(cluster, 1)
    stop(cluster, 2)
    cluster.start_broker(1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, 3)
    assert partition_state(cluster, tp).leader_and_isr.isr == (1,)


# --- AlterPartition ------------------------------------------------------------------------------------

def test_alter_partition():
    # Kafka: testAlterPartition (one version: topic names, IBP 3.7): re-sending the current state is answered
    # with the current state.
    cluster = make_cluster(1)
    controller_id = cluster.controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[controller_id]])
    lai = partition_state(cluster, tp).leader_and_isr
    broker_epoch = cluster.controller.context.live_broker_epochs[controller_id]
    response = alter(cluster, controller_id, tp, leader_epoch=lai.leader_epoch, partition_epoch=lai.partition_epoch,
                     isr=lai.isr, recovery_state=lai.recovery_state, broker_epoch=broker_epoch)
    assert partition_error(response, tp) == LeaderAndIsr(controller_id, lai.leader_epoch, lai.isr,
                                                         lai.recovery_state, lai.partition_epoch)
    assert partition_state(cluster, tp).leader_and_isr == lai


def test_idempotent_alter_partition():
    # Kafka: testIdempotentAlterPartition
    cluster = make_cluster(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[other, controller_id]])
    old = partition_state(cluster, tp).leader_and_isr
    assert old.leader == other
    new_isr = (old.leader,)
    new_partition_epoch = old.partition_epoch + 1
    broker_epoch = cluster.controller.context.live_broker_epochs[other]
    expected = LeaderAndIsr(other, old.leader_epoch, new_isr, old.recovery_state, new_partition_epoch)

    def send_and_verify(request_partition_epoch: int) -> None:
        response = alter(cluster, other, tp, leader_epoch=old.leader_epoch, partition_epoch=request_partition_epoch,
                         isr=new_isr, recovery_state=old.recovery_state, broker_epoch=broker_epoch)
        assert partition_error(response, tp) == expected

    before = len(cluster.journal.records)
    send_and_verify(old.partition_epoch)          # the partition epoch is incremented
    send_and_verify(old.partition_epoch)          # re-sent with a stale partition epoch: same answer
    send_and_verify(new_partition_epoch)          # re-sent with the current one: same answer
    assert partition_state(cluster, tp).leader_and_isr == expected
    updates = records(cluster, LeaderAndIsrUpdated, since=before)
    assert [(r.isr, r.partition_epoch, r.reason) for r in updates] == \
        [(new_isr, new_partition_epoch, UPDATE_ALTER_PARTITION)]
    for b in (0, 1):
        assert metadata_of(cluster.brokers[b].metadata[tp]) == (other, old.leader_epoch, new_isr)
    assert_fold_agrees(cluster)


def test_shutdown_broker_not_added_to_isr():
    # Kafka: testShutdownBrokerNotAddedToIsr (AlterPartition v2+: INELIGIBLE_REPLICA). Kafka's leader then
    # re-adds the restarted follower on its own; here the leader sends that AlterPartition explicitly.
    cluster = make_cluster(2)
    controller_id = cluster.controller_id
    broker_id = 1 - controller_id
    tp = ("t", 0)
    full_isr = (controller_id, broker_id)
    cluster.create_topic("t", assignment=[list(full_isr)])
    stop(cluster, broker_id)
    lai = cluster.controller.context.partition_leadership_info(tp).leader_and_isr
    assert lai.isr == (controller_id,)
    response = alter(cluster, controller_id, tp, leader_epoch=lai.leader_epoch, partition_epoch=lai.partition_epoch,
                     isr=full_isr, recovery_state=lai.recovery_state)
    assert partition_error(response, tp) == INELIGIBLE_REPLICA
    assert cluster.controller.context.partition_leadership_info(tp).leader_and_isr.isr == (controller_id,)

    cluster.start_broker(broker_id)
    response = alter(cluster, controller_id, tp, leader_epoch=lai.leader_epoch, partition_epoch=lai.partition_epoch,
                     isr=full_isr, recovery_state=lai.recovery_state)
    assert partition_error(response, tp).isr == full_isr
    assert partition_state(cluster, tp).leader_and_isr.isr == full_isr


def test_alter_partition_errors():
    # Kafka: testAlterPartitionErrors (UNKNOWN_TOPIC_ID needs topic ids in the request: not modelled;
    # the UNKNOWN_SERVER_ERROR case is test_alter_partition_with_an_invalid_leader_recovery_state).
    cluster = make_cluster(2)
    controller_id = cluster.controller_id
    tp = ("t", 0)
    replicas = (controller_id, 1 - controller_id)
    cluster.create_topic("t", assignment=[list(replicas)])
    state = cluster.controller.context.partition_leadership_info(tp).leader_and_isr
    leader_id = state.leader
    leader_broker_epoch = cluster.brokers[leader_id].broker_epoch
    leader_epoch, partition_epoch = state.leader_epoch, state.partition_epoch

    def assert_alter_partition(top_level_error="NONE", partition_err=None, topic_partition=tp, leader=leader_id,
                               broker_epoch=leader_broker_epoch, leader_epoch=leader_epoch,
                               partition_epoch=partition_epoch, isr=replicas, recovery_state=RECOVERED):
        response = alter(cluster, leader, topic_partition, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                         isr=isr, recovery_state=recovery_state, broker_epoch=broker_epoch)
        assert response is not None
        assert response.error == top_level_error, response
        if top_level_error == "NONE":
            assert response.partitions == {topic_partition: partition_err}, response
        else:
            assert response.partitions == {}

    assert_alter_partition(top_level_error=STALE_BROKER_EPOCH, broker_epoch=leader_broker_epoch - 1)
    assert_alter_partition(top_level_error=STALE_BROKER_EPOCH, leader=99)
    assert_alter_partition(partition_err=UNKNOWN_TOPIC_OR_PARTITION, topic_partition=("unknown", 0))
    assert_alter_partition(partition_err=UNKNOWN_TOPIC_OR_PARTITION, topic_partition=("t", 1))
    assert_alter_partition(partition_err=INVALID_UPDATE_VERSION, isr=(leader_id,), partition_epoch=partition_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, partition_epoch=partition_epoch + 1)
    assert_alter_partition(partition_err=FENCED_LEADER_EPOCH, leader_epoch=leader_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, leader_epoch=leader_epoch + 1)
    assert_alter_partition(partition_err=INVALID_REQUEST, recovery_state=RECOVERING)
    assert_alter_partition(partition_err=INVALID_REQUEST, recovery_state=RECOVERING, isr=(controller_id,))
    # Version/epoch errors take precedence over other validations since the leader may be working with
    # outdated state.
    assert_alter_partition(partition_err=INVALID_UPDATE_VERSION, recovery_state=RECOVERING,
                           partition_epoch=partition_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, recovery_state=RECOVERING,
                           partition_epoch=partition_epoch + 1)
    assert_alter_partition(partition_err=FENCED_LEADER_EPOCH, recovery_state=RECOVERING, leader_epoch=leader_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, recovery_state=RECOVERING, leader_epoch=leader_epoch + 1)
    # None of them changed anything.
    assert partition_state(cluster, tp).leader_and_isr == state
    assert not records(cluster, LeaderAndIsrUpdated)


def test_alter_partition_with_an_invalid_leader_recovery_state():
    # Kafka: testAlterPartitionErrors, last case ("Validate that unexpected exceptions are handled correctly"):
    # LeaderRecoveryState.of(25) throws in tryProcessAlterPartition, processAlterPartition's catch-all answers
    # UNKNOWN_SERVER_ERROR and nothing is written.
    cluster = make_cluster(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1]])
    state = partition_state(cluster, tp).leader_and_isr
    response = alter(cluster, 0, tp, leader_epoch=state.leader_epoch, partition_epoch=state.partition_epoch,
                     isr=(0, 1), recovery_state=25)
    assert partition_state(cluster, tp).leader_and_isr == state
    assert response.error == UNKNOWN_SERVER_ERROR and response.partitions == {}


def test_alter_partition_errors_after_unclean_election():
    # Kafka: testAlterPartitionErrorsAfterUncleanElection
    cluster = make_cluster(3, **{UNCLEAN: True})
    controller_id = cluster.controller_id
    controller = cluster.controller
    tp = ("t", 0)
    replica1, replica2 = [b for b in (0, 1, 2) if b != controller_id][:2]
    replicas = (replica1, replica2)
    cluster.create_topic("t", assignment=[list(replicas)])

    stop(cluster, replica1)
    after_first = controller.context.partition_leadership_info(tp).leader_and_isr
    assert after_first.leader == replica2 and set(after_first.isr) == {replica2}
    stop(cluster, replica2)
    after_second = controller.context.partition_leadership_info(tp).leader_and_isr
    assert after_second.leader == -1 and set(after_second.isr) == {replica2}
    cluster.start_broker(replica1)
    after_restart = controller.context.partition_leadership_info(tp).leader_and_isr
    assert after_restart.leader == replica1 and set(after_restart.isr) == {replica1}
    assert after_restart.recovery_state == RECOVERING
    unclean = [r for r in records(cluster, PartitionTransition) if r.election == ELECTION_OFFLINE_UNCLEAN]
    assert [(r.leader, r.isr, r.recovery_state) for r in unclean] == [(replica1, (replica1,), RECOVERING)]

    leader_broker_epoch = cluster.brokers[replica1].broker_epoch
    leader_epoch, partition_epoch = after_restart.leader_epoch, after_restart.partition_epoch

    def assert_alter_partition(top_level_error="NONE", partition_err=None, leader=replica1,
                               broker_epoch=leader_broker_epoch, leader_epoch=leader_epoch,
                               partition_epoch=partition_epoch, recovery_state=RECOVERED):
        response = alter(cluster, leader, tp, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                         isr=replicas, recovery_state=recovery_state, broker_epoch=broker_epoch)
        assert response is not None and response.error == top_level_error, response
        if top_level_error == "NONE":
            assert response.partitions == {tp: partition_err}, response

    assert_alter_partition(top_level_error=STALE_BROKER_EPOCH, broker_epoch=leader_broker_epoch - 1)
    assert_alter_partition(top_level_error=STALE_BROKER_EPOCH, leader=99)
    assert_alter_partition(partition_err=INVALID_UPDATE_VERSION, partition_epoch=partition_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, partition_epoch=partition_epoch + 1)
    assert_alter_partition(partition_err=FENCED_LEADER_EPOCH, leader_epoch=leader_epoch - 1)
    assert_alter_partition(partition_err=NOT_CONTROLLER, leader_epoch=leader_epoch + 1)
    assert_alter_partition(partition_err=INVALID_REQUEST, recovery_state=RECOVERING)
    assert_alter_partition(partition_err=INVALID_UPDATE_VERSION, partition_epoch=partition_epoch - 1,
                           recovery_state=RECOVERING)
    assert_alter_partition(partition_err=NOT_CONTROLLER, partition_epoch=partition_epoch + 1,
                           recovery_state=RECOVERING)
    assert_alter_partition(partition_err=FENCED_LEADER_EPOCH, leader_epoch=leader_epoch - 1,
                           recovery_state=RECOVERING)
    assert_alter_partition(partition_err=NOT_CONTROLLER, leader_epoch=leader_epoch + 1, recovery_state=RECOVERING)
    assert controller.context.partition_leadership_info(tp).leader_and_isr == after_restart

    # Recovery done: the leader reports RECOVERED with its ISR of one (KIP-704), which is accepted.
    response = alter(cluster, replica1, tp, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                     isr=(replica1,), recovery_state=RECOVERED)
    assert partition_error(response, tp) == LeaderAndIsr(replica1, leader_epoch, (replica1,), RECOVERED,
                                                         partition_epoch + 1)
    assert_fold_agrees(cluster)


def test_alter_partition_from_a_bounced_broker_with_its_old_broker_epoch():
    # Kafka: AlterPartition STALE_BROKER_EPOCH after a broker registered again (KIP-380 fencing).
    cluster = make_cluster(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 0]])
    old_epoch = cluster.brokers[1].broker_epoch
    cluster.expire_session(1, at=100)
    assert cluster.brokers[1].broker_epoch > old_epoch
    lai = partition_state(cluster, tp).leader_and_isr
    response = alter(cluster, 1, tp, leader_epoch=lai.leader_epoch, partition_epoch=lai.partition_epoch,
                     isr=(1,), broker_epoch=old_epoch)
    assert response.error == STALE_BROKER_EPOCH and response.partitions == {}
    assert partition_state(cluster, tp).leader_and_isr == lai


def test_alter_partition_on_a_broker_that_is_not_the_controller():
    # Kafka: tryProcessAlterPartition's first short-circuit (NOT_CONTROLLER when not active).
    cluster = make_cluster(2)
    cluster.create_topic("t", assignment=[[1, 0]])
    responses: list = []
    follower = cluster.brokers[1].controller
    assert not follower.is_active
    follower.event_manager.put(AlterPartitionReceived(
        1, cluster.brokers[1].broker_epoch, {("t", 0): LeaderAndIsr(1, 0, (1,), RECOVERED, 0)}, responses.append))
    cluster.settle()
    assert [(r.error, r.partitions) for r in responses] == [(NOT_CONTROLLER, {})]


# --- stale controller epochs: fencing in the store and at the brokers --------------------------------------

def test_controller_move_on_topic_creation():
    # Kafka: testControllerMoveOnTopicCreation (testControllerMove): the controller has a TopicChange queued when
    # /controller is deleted and re-created by someone else with the next epoch; processing it, the controller's
    # fenced writes fail with ControllerMovedException (logged at INFO) and it resigns.
    cluster = make_cluster(1)
    controller = cluster.controller
    before = len(cluster.journal.records)
    cluster.admin.create_topic_with_assignment("t", {}, {0: [0]})     # the AdminZkClient write, not settled
    cluster.admin.delete_controller(controller.context.epoch_zk_version)
    assert cluster.admin.register_controller_and_increment_controller_epoch(1) == (2, 2)   # "broker" servers.size
    assert controller.is_active                                       # it has not noticed yet
    controller._log = log = structlog.testing.CapturingLogger()       # its own logger, whatever the global config
    assert controller.event_manager.step()                            # the TopicChange
    assert not controller.is_active and controller.active_controller_id == 1
    moved = [c for c in log.calls if c.method_name == "info"
             and c.args[0] == "Controller moved to another broker when processing TopicChange."]
    assert moved, log.calls
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerResigned, since=before)] == \
        [(0, 1)]
    # Its writes failed: no partition state was created.
    assert cluster.admin.get_topic_partition_states([("t", 0)]) == {}
    assert "/brokers/topics/t/partitions" not in cluster.zk.dump()
    assert_controller_epoch(cluster, 2)
    cluster.settle()
    assert not controller.is_active and cluster.controller is None
    assert elected_epochs(cluster) == [(0, 1)]


def _depose_controller_0(cluster: Cluster):
    """/controller goes (as when broker 0's znode is deleted); broker 1 processes its Reelect first and becomes
    controller with the next epoch while broker 0 has not yet processed its own: broker 0 is a zombie that
    still believes it is active. Returns (zombie, new controller)."""
    zombie = cluster.brokers[0].controller
    assert zombie.is_active
    cluster.admin.delete_controller(-1)
    new = cluster.brokers[1].controller
    assert new.event_manager.step()                                   # its Reelect: elected, failover
    assert new.is_active and new.epoch == 2 and zombie.is_active and zombie.epoch == 1
    return zombie, new


def test_brokers_reject_requests_from_a_zombie_controller():
    # Kafka: brokers fence controllers by epoch (a request with an older controller epoch gets
    # STALE_CONTROLLER_EPOCH and changes nothing). The zombie processes a BrokerChange before its
    # ControllerChange and sends UpdateMetadata with epoch 1 to brokers that already follow epoch 2.
    cluster = make_cluster(3)
    cluster.create_topic("t", assignment=[[1, 2, 0]])
    zombie, new = _depose_controller_0(cluster)
    for server in cluster.brokers.values():
        assert server.controller_epoch == 2
    metadata_before = {b: dict(s.metadata) for b, s in cluster.brokers.items()}
    raw = KafkaZkClient(cluster.zk, session_timeout_ms=SESSION_TIMEOUT_MS, clock=cluster.clock,
                        rng=random.Random(0))
    raw.register_broker(3, "broker-3", 9092)                          # a new broker registers
    zombie.process(BrokerChange())                                    # in flight before its ControllerChange
    for b, server in cluster.brokers.items():
        assert (API_UPDATE_METADATA, 0, 1, STALE_CONTROLLER_EPOCH) in server.rejected, (b, server.rejected)
        assert server.controller_epoch == 2
        assert server.live_brokers == (0, 1, 2)
        assert server.metadata == metadata_before[b]
    cluster.settle()
    # The zombie resigned on its queued Reelect; the real controller handled the new broker.
    assert [b for b, s in cluster.brokers.items() if s.controller.is_active] == [1]
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerResigned)] == [(0, 1)]
    assert sorted(new.context.live_broker_ids) == [0, 1, 2, 3]
    for server in cluster.brokers.values():
        assert server.live_brokers == (0, 1, 2, 3) and server.controller_epoch == 2
    assert_fold_agrees(cluster)


def test_broker_rejects_a_request_with_an_older_controller_epoch():
    # Kafka: the broker side of the fencing (ReplicaManager / MetadataCache: STALE_CONTROLLER_EPOCH).
    cluster = make_cluster(2)
    cluster.create_topic("t", assignment=[[1, 0]])
    stop(cluster, 0)                                                  # broker 1 takes over with epoch 2
    server = cluster.brokers[1]
    assert server.controller_epoch == 2
    before = dict(server.leader_and_isr)
    stale = BrokerRequest(API_LEADER_AND_ISR, 1, server.broker_epoch, 0, 1, 99,
                          (LeaderAndIsrPartition.make(broker_id=1, topic="t", partition=0, state_controller_epoch=1,
                                                      leader=0, leader_epoch=99, isr=(0,), partition_epoch=99,
                                                      replicas=(1, 0), adding_replicas=(), removing_replicas=(),
                                                      is_new=False, recovery_state=RECOVERED),), ())
    assert server.handle_request(stale) == STALE_CONTROLLER_EPOCH
    assert server.rejected == [(API_LEADER_AND_ISR, 0, 1, STALE_CONTROLLER_EPOCH)]
    assert server.leader_and_isr == before and server.controller_epoch == 2


def test_zombie_controller_topic_creation_fails_and_the_new_controller_creates_the_topic():
    # Kafka: testControllerMoveOnTopicCreation with a real successor: the zombie's fenced /state creation fails
    # (ControllerMovedException), it resigns; the new controller creates the partition under its own epoch.
    cluster = make_cluster(3)
    zombie, new = _depose_controller_0(cluster)
    cluster.admin.create_topic_with_assignment("t", {}, {0: [1, 2]})
    zombie.process(TopicChange())
    assert not zombie.is_active
    assert cluster.admin.get_topic_partition_states([("t", 0)]) == {}
    resigned = records(cluster, ControllerResigned)
    assert [(r.controller_id, r.controller_epoch) for r in resigned] == [(0, 1)]
    cluster.settle()
    assert [b for b, s in cluster.brokers.items() if s.controller.is_active] == [1]
    assert_partition_state(cluster, ("t", 0), 2, 1, INITIAL_LEADER_EPOCH)
    for b in (1, 2):
        assert cluster.brokers[b].leader_and_isr[("t", 0)] == (1, 0, (1, 2), 0)
    assert elected_epochs(cluster) == [(0, 1), (1, 2)]
    assert_fold_agrees(cluster)


def test_zombie_controller_election_is_aborted_by_the_newer_partition_state():
    # Kafka: doElectLeaderForPartitions/doRemoveReplicasFromIsr refuse to touch a /state written by a newer
    # controller ("already written by another controller"); nothing the zombie does reaches the store.
    cluster = make_cluster(3)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[2, 1]])
    cluster.kill_broker(2, at=10)
    zombie, new = _depose_controller_0(cluster)
    cluster.zk.expire_session(cluster.brokers[2].zk.session_id)        # broker 2's session times out
    new.event_manager.run_until_empty()
    assert_partition_state(cluster, tp, 2, 1, 1)
    stored = partition_state(cluster, tp)
    zombie.process(BrokerChange())
    failures = [(r.entity, r.replica, r.message) for r in records(cluster, TransitionFailed) if r.controller_id == 0]
    assert len(failures) == 2
    assert failures[0][2].startswith("Aborted leader election for partition t-0 since the LeaderAndIsr path was "
                                     "already written by another controller.")
    assert failures[1][1] == 2 and failures[1][2].startswith("Leader and isr path written by another controller.")
    assert partition_state(cluster, tp) == stored
    cluster.settle()
    assert [b for b, s in cluster.brokers.items() if s.alive and s.controller.is_active] == [1]
    assert partition_state(cluster, tp) == stored
    assert_fold_agrees(cluster)


def test_zombie_controller_answers_alter_partition_with_unknown_server_error():
    # Kafka: processAlterPartition wraps tryProcessAlterPartition in `catch { case e: Throwable => ...
    # callback(UNKNOWN_SERVER_ERROR) }`, so the ControllerMovedException of the fenced /state write becomes an
    # UNKNOWN_SERVER_ERROR answer (the leader retries against the new controller); the zombie resigns when it
    # processes its queued ControllerChange/Reelect.
    cluster = make_cluster(3)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2, 0]])
    zombie, new = _depose_controller_0(cluster)
    stored = partition_state(cluster, tp)
    responses: list = []
    zombie.process(AlterPartitionReceived(1, cluster.brokers[1].broker_epoch,
                                          {tp: LeaderAndIsr(1, 0, (1, 2), RECOVERED, 0)}, responses.append))
    assert partition_state(cluster, tp) == stored                     # the fenced write failed
    assert [(r.error, r.partitions) for r in responses] == [(UNKNOWN_SERVER_ERROR, {})]
    assert zombie.is_active                                           # the error was swallowed: no resignation yet
    cluster.settle()
    assert [b for b, s in cluster.brokers.items() if s.controller.is_active] == [1]
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerResigned)] == [(0, 1)]
    assert_fold_agrees(cluster)


def test_fold_ignores_the_transitions_of_a_zombie_controller():
    # The zombie's in-memory transitions (Online -> Offline of a partition the new controller already moved)
    # are recorded after the new controller's; the fold must still agree with the active controller.
    cluster = make_cluster(3)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[2, 1]])
    cluster.kill_broker(2, at=10)
    zombie, new = _depose_controller_0(cluster)
    cluster.zk.expire_session(cluster.brokers[2].zk.session_id)
    new.event_manager.run_until_empty()
    zombie.process(BrokerChange())
    cluster.settle()
    ctx = cluster.controller.context
    assert (ctx.partition_leader(tp), ctx.partition_state(tp)) == (1, ONLINE_PARTITION)
    view = fold(cluster.journal.records)
    assert view.controller == (1, 2)
    pv = view.topics["t"][0]
    assert (pv.leader, pv.leader_epoch, pv.isr, pv.state) == (1, 1, (1,), ONLINE_PARTITION)
    assert_fold_agrees(cluster)


def test_fold_has_the_new_partitions_a_new_controller_finds_in_the_store():
    # A partition created while no controller runs, whose replicas are all down when a controller takes over:
    # Kafka's initializePartitionState puts it in NewPartition (no /state), and its election fails ("No assigned
    # replica is alive."), so no controller record carries the partition: the fold must know it from the admin's
    # input (TopicCreated), as the new controller knows it from the store.
    cluster = make_cluster(2)
    cluster.kill_broker(0, at=10)                                      # the controller goes; its session lingers
    cluster.create_topic("t", assignment=[[0]], at=20)                 # nobody acts on it
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)                        # broker 1 takes over
    ctx = cluster.controller.context
    assert cluster.controller_id == 1 and ctx.partition_state(("t", 0)) == NEW_PARTITION
    view = fold(cluster.journal.records)
    assert view.partition_replica_states("t", 0) == {0: OFFLINE_REPLICA}
    assert "t" in view.topics and view.topics["t"][0].state == NEW_PARTITION
    assert_fold_agrees(cluster)


def test_fold_has_the_isr_a_new_controller_loads_from_the_store():
    # The pre-AlterPartition path (IsrChangeNotified): a leader writes a smaller ISR to /state itself while no
    # controller is running; the next controller deletes the pending notification (onControllerFailover) and
    # loads the ISR from /state (updateLeaderAndIsrCache) without a record of its own: the fold must still agree.
    cluster = make_cluster(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 0]])
    cluster.kill_broker(0, at=10)
    cluster.notify_isr_change(1, {tp: (1,)}, at=20)
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    assert cluster.controller_id == 1
    assert cluster.controller.context.partition_leadership_info(tp).leader_and_isr.isr == (1,)
    assert fold(cluster.journal.records).topics["t"][0].isr == (1,)
    assert_fold_agrees(cluster)


# --- random histories ---------------------------------------------------------------------------------

@pytest.fixture
def quiet_logs():
    """The engine logs every step; the random histories run thousands of them. Log nothing below CRITICAL
    while they run (without caching loggers), then put structlog back as it was."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
                        cache_logger_on_first_use=False)
    try:
        yield
    finally:
        structlog.configure(**saved)


class InvariantError(AssertionError):
    pass


class Invariants:
    """The checks run after every action of a random history; records are consumed incrementally."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.view = ClusterView()
        self.seen = 0
        self.elected: tuple[int, int] | None = None       # (id, epoch) of the last ControllerElected
        self.leader_epochs: dict[tuple, int] = {}
        self.unclean: set[tuple] = set()                  # partitions whose last election was unclean

    def check(self) -> None:
        self._consume_records()
        active = self._check_single_active_controller()
        if active is not None:
            self._check_leaders(active)
            self._check_fold(active)
            self._check_brokers(active)

    def _consume_records(self) -> None:
        recs = self.cluster.journal.records
        for rec in recs[self.seen:]:
            self.view.apply(rec)
            t = type(rec)
            if t is ControllerElected:
                # (2) controller epochs strictly increase.
                if self.elected is not None and rec.controller_epoch <= self.elected[1]:
                    raise InvariantError(f"controller epoch did not increase: {self.elected} then {rec}")
                self.elected = (rec.controller_id, rec.controller_epoch)
            elif t is PartitionTransition or t is LeaderAndIsrUpdated:
                # (5) only the latest elected controller changes partitions (a record without a controller,
                # id -1, is a broker's own /state write on the pre-AlterPartition path: not a controller's).
                if rec.controller_id != -1 and (self.elected is None
                                                or (rec.controller_id, rec.controller_epoch) != self.elected):
                    raise InvariantError(f"{rec} written by controller {rec.controller_id} epoch "
                                         f"{rec.controller_epoch}; last elected {self.elected}")
                # (4) leader epochs never decrease.
                tp = (rec.topic, rec.partition)
                last = self.leader_epochs.get(tp)
                if last is not None and rec.leader_epoch < last:
                    raise InvariantError(f"leader epoch of {tp} went from {last} back to {rec.leader_epoch}: {rec}")
                self.leader_epochs[tp] = rec.leader_epoch
                if t is PartitionTransition and rec.to_state == ONLINE_PARTITION:
                    if rec.election == ELECTION_OFFLINE_UNCLEAN:
                        self.unclean.add(tp)
                    elif rec.election in (ELECTION_NEW_PARTITION, ELECTION_OFFLINE):
                        self.unclean.discard(tp)
        self.seen = len(recs)

    def _check_single_active_controller(self):
        # (1) at most one broker believes it is the controller, and its epoch is the stored one.
        cluster = self.cluster
        active = [b for b, s in sorted(cluster.brokers.items()) if s.alive and s.controller.is_active]
        if len(active) > 1:
            raise InvariantError(f"brokers {active} all believe they are the active controller")
        if not active:
            return None
        controller = cluster.brokers[active[0]].controller
        stored = cluster.admin.get_controller_epoch()
        if stored is None or controller.epoch != stored[0] or controller.context.epoch_zk_version != stored[1]:
            raise InvariantError(f"active controller {active[0]} has epoch {controller.epoch} "
                                 f"(zkVersion {controller.context.epoch_zk_version}), /controller_epoch is {stored}")
        if cluster.controller_id != active[0]:
            raise InvariantError(f"broker {active[0]} is active but /controller names {cluster.controller_id}")
        if self.elected != (active[0], controller.epoch):
            raise InvariantError(f"active controller {active[0]} epoch {controller.epoch}, last ControllerElected "
                                 f"{self.elected}")
        return controller

    def _check_leaders(self, controller) -> None:
        # (3) leaders are live and in the ISR (unless -1, or elected uncleanly since the last clean election).
        ctx = controller.context
        live = ctx.live_broker_ids
        for tp in ctx.all_partitions():
            info = ctx.partition_leadership_info(tp)
            if info is None or info.leader_and_isr.leader == NO_LEADER or tp in self.unclean:
                continue
            lai = info.leader_and_isr
            if lai.leader not in live or lai.leader not in lai.isr:
                raise InvariantError(f"{tp}: leader {lai.leader} not live ({sorted(live)}) or not in ISR {lai.isr}")

    def _check_brokers(self, controller) -> None:
        # (8) every running broker follows the active controller: its epoch, its live brokers, its partitions.
        ctx = controller.context
        live = tuple(sorted(ctx.live_broker_epochs))
        for b, server in sorted(self.cluster.brokers.items()):
            if not server.alive:
                continue
            stale = [r for r in server.rejected if r[3] == STALE_CONTROLLER_EPOCH]
            if server.controller_epoch != ctx.epoch or stale:
                raise InvariantError(f"broker {b} follows controller epoch {server.controller_epoch} (active: "
                                     f"{ctx.epoch}); rejected as stale: {stale}")
            if server.live_brokers != live:
                raise InvariantError(f"broker {b} believes brokers {server.live_brokers} are live, the controller "
                                     f"{live}")
            for tp in ctx.all_partitions():
                info = ctx.partition_leadership_info(tp)
                if info is None or not self._broker_metadata_checked(ctx, tp):
                    continue
                lai = info.leader_and_isr
                cached = server.metadata.get(tp)
                if cached is None or metadata_of(cached) != (lai.leader, lai.leader_epoch, tuple(lai.isr)):
                    raise InvariantError(f"broker {b} has metadata {server.metadata.get(tp)} for {tp}, the "
                                         f"controller {lai}")
                # A replica knows its partition's leader and leader epoch (the ISR it learns from UpdateMetadata
                # after an AlterPartition, which sends no LeaderAndIsr).
                if b in ctx.partition_replica_assignment(tp):
                    known = server.leader_and_isr.get(tp)
                    if known is not None and self._replica_state_excused(tp, known, lai):
                        continue
                    if known is None or known[:2] != (lai.leader, lai.leader_epoch):
                        raise InvariantError(f"replica {b} of {tp} has LeaderAndIsr {known}, the controller {lai}")

    def _broker_metadata_checked(self, ctx, tp: tuple) -> bool:
        """Whether (8) checks the brokers' state of ``tp`` (subclasses exclude what their actions excuse)."""
        return True

    def _replica_state_excused(self, tp: tuple, known: tuple, lai) -> bool:
        """Whether a replica's LeaderAndIsr ``known`` that differs from the controller's ``lai`` is excused."""
        return False

    def _check_fold(self, controller) -> None:
        # (6) the records, folded, say what the controller's context says.
        check_fold_agrees(self.view, controller)


def check_fold_agrees(view: ClusterView, controller) -> None:
    """The fold of the records agrees with the controller's context: controller, live brokers, and per partition
    state, replicas, leader, leader epoch, ISR and the states of its replicas."""
    ctx = controller.context
    if view.controller != (controller.broker_id, ctx.epoch):
        raise InvariantError(f"fold says controller {view.controller}, active is {(controller.broker_id, ctx.epoch)}")
    if view.registered_brokers != ctx.live_broker_epochs:
        raise InvariantError(f"fold says live brokers {view.registered_brokers}, the controller "
                             f"{ctx.live_broker_epochs}")
    folded = {(t, p): pv for t, parts in view.topics.items() for p, pv in parts.items()}
    partitions = set(ctx.all_partitions())
    if set(folded) != partitions:
        raise InvariantError(f"fold has partitions {sorted(set(folded) - partitions)} the controller has not, "
                             f"and misses {sorted(partitions - set(folded))}")
    for tp in sorted(partitions):
        pv = folded[tp]
        info = ctx.partition_leadership_info(tp)
        isr = () if info is None else tuple(info.leader_and_isr.isr)
        leader_epoch = -1 if info is None else info.leader_and_isr.leader_epoch
        expected = (ctx.partition_state(tp), ctx.partition_replica_assignment(tp), ctx.partition_leader(tp),
                    leader_epoch, isr)
        got = (pv.state, pv.replicas, pv.leader, pv.leader_epoch, pv.isr)
        if expected != got:
            raise InvariantError(f"{tp}: controller has (state, replicas, leader, leader epoch, isr) {expected}, "
                                 f"fold has {got}")
        replica_states = ctx.partition_replica_states(tp)
        if replica_states != view.partition_replica_states(*tp):
            raise InvariantError(f"{tp}: controller replica states {replica_states}, fold has "
                                 f"{view.partition_replica_states(*tp)}")


class RandomHistory:
    """One seeded history of cluster actions on 4-5 brokers; ``history`` lists them as calls."""

    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.n_brokers = self.rng.choice((4, 5))
        self.cluster = Cluster(seed=seed)
        self.history: list[str] = [f"cluster = Cluster(seed={seed})"]
        self.invariants = Invariants(self.cluster)
        self.n_actions = 0
        self.topics: dict[str, int] = {}                  # topic -> replication factor
        self.unclean_topics: set[str] = set()

    # --- bookkeeping ---------------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        steps = "\n".join(f"  {i:3}: {h}" for i, h in enumerate(self.history))
        pytest.fail(f"seed {self.seed}: {message}\n(reproduce: RandomHistory({self.seed}).run({self.n_actions}) in "
                    f"{__name__}; the actions, as calls:)\n{steps}", pytrace=False)

    def do(self, call: str, fn, *args, **kwargs):
        self.history.append(call)
        problem = None
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # an action the cluster could not carry out is a failure too
            problem = f"{call} raised {type(e).__name__}: {e}"
        else:
            try:
                self.invariants.check()
            except InvariantError as e:
                problem = str(e)
        if problem is not None:
            self.fail(problem)
        return result

    def alive(self) -> list[int]:
        return sorted(b for b, s in self.cluster.brokers.items() if s.alive)

    def registered(self) -> set[int]:
        return {int(c) for c in self.cluster.admin.get_children("/brokers/ids")}

    def at(self) -> int:
        return self.cluster.now + self.rng.randint(0, 3_000)

    # --- actions -------------------------------------------------------------------------------------
    def start(self, b: int) -> None:
        t = self.at()
        self.do(f"cluster.start_broker({b}, at={t})", self.cluster.start_broker, b, at=t)

    def kill(self) -> bool:
        alive = self.alive()
        if not alive:
            return False
        b, t = self.rng.choice(alive), self.at()
        self.do(f"cluster.kill_broker({b}, at={t})", self.cluster.kill_broker, b, at=t)
        return True

    def restart(self) -> bool:
        # A broker can start again once its old session has expired (Kafka's registration fails before).
        dead = [b for b in range(self.n_brokers) if b not in self.alive() and b not in self.registered()]
        if not dead:
            return False
        self.start(self.rng.choice(dead))
        return True

    def expire(self) -> bool:
        alive = self.alive()
        if not alive:
            return False
        b, t = self.rng.choice(alive), self.at()
        self.do(f"cluster.expire_session({b}, at={t})", self.cluster.expire_session, b, at=t)
        return True

    def advance(self) -> bool:
        ms = self.rng.choice((self.rng.randint(1, 5_000), SESSION_TIMEOUT_MS + self.rng.randint(0, 5_000)))
        t = self.cluster.now + ms
        self.do(f"cluster.advance_to({t})", self.cluster.advance_to, t)
        return True

    def _assignment(self, partitions: int, rf: int) -> list[tuple]:
        return [tuple(self.rng.sample(range(self.n_brokers), rf)) for _ in range(partitions)]

    def create_topic(self) -> bool:
        name = f"t{len(self.topics)}"
        partitions, rf = self.rng.randint(1, 3), self.rng.randint(1, 3)
        configs = {UNCLEAN: "true"} if self.rng.random() < 0.3 else {}
        t = self.at()
        if rf <= len(self.alive()) and self.rng.random() < 0.6:
            self.do(f"cluster.create_topic({name!r}, {partitions}, {rf}, configs={configs}, at={t})",
                    self.cluster.create_topic, name, partitions, rf, configs=configs, at=t)
        else:  # an explicit assignment, possibly on dead brokers
            assignment = self._assignment(partitions, rf)
            self.do(f"cluster.create_topic({name!r}, assignment={assignment}, configs={configs}, at={t})",
                    self.cluster.create_topic, name, assignment=assignment, configs=configs, at=t)
        self.topics[name] = rf
        if configs:
            self.unclean_topics.add(name)
        return True

    def add_partitions(self) -> bool:
        if not self.topics:
            return False
        name = self.rng.choice(sorted(self.topics))
        rf = self.topics[name]
        current = len(self.cluster.admin.get_full_replica_assignment_for_topics([name]))
        count = current + self.rng.randint(1, 2)
        t = self.at()
        if rf <= len(self.alive()) and self.rng.random() < 0.6:
            self.do(f"cluster.add_partitions({name!r}, {count}, at={t})", self.cluster.add_partitions, name, count,
                    at=t)
        else:
            assignment = {current + i: r for i, r in enumerate(self._assignment(count - current, rf))}
            self.do(f"cluster.add_partitions({name!r}, assignment={assignment}, at={t})", self.cluster.add_partitions,
                    name, assignment=assignment, at=t)
        return True

    def enable_unclean(self) -> bool:
        candidates = sorted(set(self.topics) - self.unclean_topics)
        if not candidates:
            return False
        name, t = self.rng.choice(candidates), self.at()
        self.do(f"cluster.set_config('topic', {name!r}, {UNCLEAN!r}, 'true', at={t})", self.cluster.set_config,
                "topic", name, UNCLEAN, "true", at=t)
        self.unclean_topics.add(name)
        return True

    def alter_partition(self) -> bool:
        """A running leader reports a new ISR: itself plus some of its replicas that are running, with the
        leader and partition epochs it last heard of (possibly stale: the controller then refuses)."""
        candidates = [(b, tp, state) for b in self.alive()
                      for tp, state in sorted(self.cluster.brokers[b].leader_and_isr.items()) if state[0] == b]
        if not candidates:
            return False
        b, tp, (_, leader_epoch, _, partition_epoch) = self.rng.choice(candidates)
        replicas = self.cluster.admin.get_full_replica_assignment_for_topics([tp[0]])[tp].replicas
        followers = [r for r in replicas if r != b and r in self.alive()]
        isr = (b,) + tuple(r for r in followers if self.rng.random() < 0.7)
        partitions = {tp: (leader_epoch, isr, RECOVERED, partition_epoch)}
        t = self.at()
        self.do(f"cluster.alter_partition({b}, {partitions}, at={t})", self.cluster.alter_partition, b, partitions,
                at=t)
        return True

    def run(self, n_actions: int) -> None:
        self.n_actions = n_actions
        for b in range(self.n_brokers):
            if self.rng.random() < 0.85 or b == 0:
                self.start(b)
        actions = [(self.kill, 3), (self.restart, 4), (self.expire, 2), (self.advance, 4), (self.create_topic, 3),
                   (self.add_partitions, 2), (self.enable_unclean, 1), (self.alter_partition, 3)]
        fns, weights = zip(*actions)
        done = 0
        while done < n_actions:
            if self.rng.choices(fns, weights)[0]():
                done += 1
        # (7) the log replays to the same records and the same state.
        result = replay_records(self.cluster.journal.records)
        if not result.ok:
            self.fail(f"replay diverged: {result.divergence}")
        if result.digest != self.cluster.digest():
            self.fail(f"replay reached state {result.digest}, the run {self.cluster.digest()}")


def test_random_histories_keep_the_invariants(quiet_logs):
    """50 seeded histories of 50 actions on 4-5 brokers. After every action: (1) at most one active controller,
    with the stored epoch; (2) ControllerElected epochs strictly increase; (3) leaders are live and in the ISR
    (unless -1 or unclean); (4) per partition, leader epochs in the records never decrease; (5) partition records
    come from the latest elected controller; (6) the fold of the records agrees with the active controller's
    context; (8) every running
    broker follows the active controller (epoch, live brokers, metadata, leaders of its replicas); and at the end
    (7) the log replays to the same records and state digest. A failure names the seed and lists the actions."""
    elections = unclean = alter_partitions = 0
    for seed in range(50):
        run = RandomHistory(seed)
        run.run(50)
        recs = run.cluster.journal.records
        elections += sum(type(r) is ControllerElected for r in recs)
        unclean += sum(type(r) is PartitionTransition and r.election == ELECTION_OFFLINE_UNCLEAN for r in recs)
        alter_partitions += sum(type(r) is LeaderAndIsrUpdated and r.reason == UPDATE_ALTER_PARTITION for r in recs)
    # The histories do reach the interesting paths.
    assert elections > 80 and unclean > 0 and alter_partitions > 0, (elections, unclean, alter_partitions)
