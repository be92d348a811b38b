"""Partition reassignment and topic deletion, end to end on the in-process cluster.

Ported from Kafka's ControllerIntegrationTest (core/src/test/scala/unit/kafka/controller) and DeleteTopicTest
(core/src/test/scala/unit/kafka/admin), ZooKeeper mode; every test names the Kafka test it ports, or the
behaviour of KafkaController.scala / TopicDeletionManager.scala it checks (../shared/kafka-notes/
controller-reference.md §4.8 and §5). The translations of test_controller_integration.py's docstring apply
(helpers are imported from there), plus:

* ``makeServers(n)`` -> :func:`make_servers`: Kafka's test harness turns ``auto.leader.rebalance.enable`` off
  (its makeServers default), so that no preferred election interferes with the expected leader epochs;
* ``server.shutdown()`` -> :func:`shutdown` (``cluster.stop_broker``: controlled shutdown when enabled, then a clean
  stop) now that the cluster has one; ``stop`` (a crash: kill -9, then the session timeout) where a broker dies;
* ``zkClient.createPartitionReassignment`` -> ``cluster.reassign_partitions(..., via="zk")`` (the same znode
  write, journaled, after the checks kafka-reassign-partitions.sh made); where Kafka writes the znode past those
  checks (a target broker that is down), the test writes it with ``cluster.admin`` and settles, and has no replay;
* ``adminClient.alterPartitionReassignments`` -> ``cluster.reassign_partitions(..., via="api")``;
* ``adminZkClient.deleteTopic`` / ``admin.deleteTopics`` -> ``cluster.delete_topic`` (``/admin/delete_topics/<t>``);
* a follower catching up (the data plane) -> ``cluster.catch_up_followers()`` (its leader's AlterPartition);
* ``broker.replicaManager.onlinePartition(tp)`` / ``logManager.getLog(tp)`` -> ``BrokerServer.leader_and_isr``
  (LeaderAndIsr adds the partition, StopReplica with deletePartition=true removes it).

Requests reach the brokers and their responses come back within the action that sent them, so a topic whose
replicas are all live is deleted before ``delete_topic`` returns; Kafka's "mid-deletion" races are reproduced by
writing to the store directly and settling once, as ControllerIntegrationTest.testControllerMove does.
Tests of journaled actions end by replaying the log: same records, byte for byte, and the same state digest.

Not ported: testPartitionReassignmentToBrokerWithOfflineLogDir (the cluster has no log directory failures),
the topic-id and feature-znode tests, testDeleteTopicWithCleaner (no log cleaner).
"""
from __future__ import annotations

import json

import pytest
import structlog

from test_controller_integration import (
    FIRST_CONTROLLER_EPOCH, INITIAL_LEADER_EPOCH, SESSION_TIMEOUT_MS, assert_fold_agrees, assert_partition_state,
    make_cluster, partition_state, records, stop,
)

from controller.embedding.cluster import Cluster, ClusterError
from controller.controller_events import (
    INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS, NONE, NOT_CONTROLLER, UNKNOWN_TOPIC_OR_PARTITION,
    ApiPartitionReassignment, ListPartitionReassignments,
)
from controller.embedding.replay import replay_records
from events.records import (
    API_STOP_REPLICA, ELECTION_REASSIGN, EPOCH_DURING_DELETE, LEADER_DURING_DELETE, UPDATE_OFFLINE_REPLICA,
    UPDATE_REASSIGNMENT_EPOCH, ControllerElected, ControllerResigned, LeaderAndIsrPartition, LeaderAndIsrUpdated,
    PartitionTransition, ReplicaTransition, RequestSent, StopReplicaPartition, TopicDeletionRequested,
    TransitionFailed, UpdateMetadataPartition,
)
from statemachines.cluster_view import fold
from statemachines.leader_and_isr import ReplicaAssignment
from statemachines.states import (
    NEW_REPLICA, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA,
    ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
)

REASSIGNMENT_TIMER = "kafka.controller:type=ControllerStats,name=PartitionReassignmentRateAndTimeMs"
REASSIGN_PATH = "/admin/reassign_partitions"
# A replica leaving through a completed reassignment, or through topic deletion (ReplicaStateMachine).
REMOVED = [(ONLINE_REPLICA, OFFLINE_REPLICA), (OFFLINE_REPLICA, REPLICA_DELETION_STARTED),
           (REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL),
           (REPLICA_DELETION_SUCCESSFUL, NON_EXISTENT_REPLICA)]


# --- helpers -----------------------------------------------------------------------------------------

def make_servers(n: int, **configs) -> Cluster:
    """Kafka's makeServers(n) (ControllerIntegrationTest) / createTestTopicAndCluster's brokers (DeleteTopicTest):
    brokers 0..n-1, broker 0 the controller, automatic preferred elections off."""
    return make_cluster(n, **{"auto.leader.rebalance.enable": False, **configs})


def shutdown(cluster: Cluster, broker_id: int) -> None:
    """Kafka's ``server.shutdown()``: the controlled shutdown (when ``controlled.shutdown.enable``), then the clean
    stop, whose closed session makes the controller see the broker leave at once. (``stop`` is a crash instead:
    kill -9 and the session's timeout.)"""
    cluster.stop_broker(broker_id)
    assert str(broker_id) not in cluster.admin.get_children("/brokers/ids")


def assert_replays(cluster: Cluster) -> None:
    """The log replays on a fresh cluster to the same records, byte for byte, and the same state digest."""
    result = replay_records(cluster.journal.records)
    assert result.ok, result.divergence
    assert result.digest == cluster.digest()


def topic_znode(cluster: Cluster, topic: str) -> dict:
    """The JSON of ``/brokers/topics/<topic>`` (partitions, adding_replicas, removing_replicas)."""
    data, _ = cluster.admin.get_data_and_stat(f"/brokers/topics/{topic}")
    assert data is not None, f"/brokers/topics/{topic} does not exist"
    return json.loads(data)


def stored_assignment(cluster: Cluster, tp: tuple) -> ReplicaAssignment:
    """``zkClient.getFullReplicaAssignmentForTopics(Set(topic))(tp)``."""
    return cluster.admin.get_full_replica_assignment_for_topics([tp[0]])[tp]


def reassignment_timer_count(cluster: Cluster) -> int:
    """The count of Kafka's ``ControllerStats`` PartitionReassignmentRateAndTimeMs timer on the controller."""
    return cluster.controller.event_manager.metrics()[REASSIGNMENT_TIMER]["count"]


def replica_moves(cluster: Cluster, tp: tuple, replica: int, since: int = 0) -> list[tuple]:
    return [(r.from_state, r.to_state) for r in records(cluster, ReplicaTransition, since)
            if (r.topic, r.partition, r.replica) == (*tp, replica)]


def partition_moves(cluster: Cluster, tp: tuple, since: int = 0) -> list[tuple]:
    return [(r.from_state, r.to_state) for r in records(cluster, PartitionTransition, since)
            if (r.topic, r.partition) == tp]


def stop_replicas(cluster: Cluster, tp: tuple, since: int = 0) -> list[tuple]:
    """(broker, deletePartition, leader epoch) of the StopReplica partitions sent for ``tp``."""
    return [(r.broker_id, r.delete_partition, r.leader_epoch) for r in records(cluster, StopReplicaPartition, since)
            if (r.topic, r.partition) == tp]


def reassigning(cluster: Cluster) -> set:
    return set(cluster.controller.context.partitions_being_reassigned)


def catch_up(cluster: Cluster) -> None:
    """Every live follower joins its ISR; each leader's AlterPartition is accepted."""
    for leader, response in cluster.catch_up_followers().items():
        assert response is not None and response.error == NONE, (leader, response)
        assert all(not isinstance(r, str) for r in response.partitions.values()), (leader, response)


def assert_context_forgot(cluster: Cluster, topic: str) -> None:
    """The active controller keeps nothing of ``topic``: no partition, replica or deletion bookkeeping."""
    ctx = cluster.controller.context
    assert topic not in ctx.all_topics
    assert not [tp for tp in ctx.all_partitions() if tp[0] == topic]
    assert not ctx.replicas_for_topic(topic)
    assert topic not in ctx.topics_to_be_deleted | ctx.topics_with_deletion_started | ctx.topics_ineligible_for_deletion
    # (Not partitions_being_reassigned: Kafka leaves it alone, see
    # test_a_partition_deleted_during_its_reassignment_stays_in_partitions_being_reassigned.)


def verify_topic_deletion(cluster: Cluster, topic: str, num_partitions: int, *, brokers: bool = True,
                          view: bool = True) -> None:
    """Kafka's TestUtils.verifyTopicDeletion: ``/admin/delete_topics/<t>`` and ``/brokers/topics/<t>`` gone and
    (``brokers``) no broker hosts a partition of the topic any more; plus ``/config/topics/<t>`` gone, and nothing
    of the topic left in the controller's context or (``view``) in the cluster view folded from the records."""
    assert not cluster.admin.is_topic_marked_for_deletion(topic)
    assert not cluster.admin.topic_exists(topic)
    dump = cluster.zk.dump().splitlines()
    for prefix in (f"/brokers/topics/{topic}", f"/config/topics/{topic}", f"/admin/delete_topics/{topic}"):
        assert not [line for line in dump if line == prefix or line.startswith((prefix + " ", prefix + "/"))], prefix
    if brokers:
        for b, server in sorted(cluster.brokers.items()):
            assert not [tp for tp in server.leader_and_isr if tp[0] == topic and tp[1] < num_partitions], b
    assert_context_forgot(cluster, topic)
    if view:
        folded = cluster.view
        assert not folded.topics.get(topic) and topic not in folded.replica_states
        assert topic not in folded.topic_configs


# --- partition reassignment: ControllerIntegrationTest -----------------------------------------------------

def test_partition_reassignment():
    # Kafka: testPartitionReassignment. The leader leaves for the other broker: epoch +1 when the reassignment
    # starts (phase A), +1 for the reassign election and +1 for the ISR shrink of the removed replica (phase B).
    cluster = make_servers(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    tp = ("t", 0)
    timer_count = reassignment_timer_count(cluster)
    cluster.create_topic("t", assignment=[[controller_id]])
    cluster.reassign_partitions({tp: [other]}, via="zk")
    # Phase A: waiting for the new replica to join the ISR.
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH + 1)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((other, controller_id), (other,), (controller_id,))
    assert cluster.admin.reassign_partitions_in_progress()
    catch_up(cluster)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, other, INITIAL_LEADER_EPOCH + 3)
    assert cluster.admin.get_full_replica_assignment_for_topics(["t"]) == {tp: ReplicaAssignment((other,))}
    assert not cluster.admin.reassign_partitions_in_progress()
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    assert reassignment_timer_count(cluster) > timer_count
    assert_replays(cluster)


def test_partition_reassignment_with_offline_replica_halting_progress():
    # Kafka: testPartitionReassignmentWithOfflineReplicaHaltingProgress. The target broker is down; Kafka's test
    # writes the znode itself (kafka-reassign-partitions.sh would refuse a broker that is not registered).
    cluster = make_servers(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[controller_id]])
    shutdown(cluster, other)
    cluster.admin.set_or_create_partition_reassignment({tp: [other]}, cluster.controller.context.epoch_zk_version)
    cluster.settle()
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH + 1)
    assert cluster.admin.reassign_partitions_in_progress()
    assert stored_assignment(cluster, tp) == ReplicaAssignment((other, controller_id), (other,), (controller_id,))
    assert reassigning(cluster) == {tp}
    # The new replica on the dead broker is NewReplica (the LeaderAndIsr to it went nowhere).
    assert cluster.controller.context.replica_state(("t", 0, other)) == NEW_REPLICA


def test_partition_reassignment_resumes_after_replica_comes_online():
    # Kafka: testPartitionReassignmentResumesAfterReplicaComesOnline. onBrokerStartup resumes the reassignments
    # whose target includes the new broker (phase A again: epoch 2); the replica catches up and phase B runs.
    cluster = make_servers(2)
    controller_id = cluster.controller_id
    other = 1 - controller_id
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[controller_id]])
    shutdown(cluster, other)
    cluster.admin.create_partition_reassignment({tp: [other]})
    cluster.settle()
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH + 1)
    cluster.start_broker(other)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, controller_id, INITIAL_LEADER_EPOCH + 2)
    assert cluster.brokers[other].leader_and_isr[tp][:2] == (controller_id, INITIAL_LEADER_EPOCH + 2)
    catch_up(cluster)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, other, INITIAL_LEADER_EPOCH + 4)
    assert cluster.admin.get_full_replica_assignment_for_topics(["t"]) == {tp: ReplicaAssignment((other,))}
    assert not cluster.admin.reassign_partitions_in_progress()


def test_controller_move_on_partition_reassignment():
    # Kafka: testControllerMoveOnPartitionReassignment (testControllerMove): /admin/reassign_partitions is created,
    # then /controller moves to another broker with the next epoch before the controller processes the
    # ZkPartitionReassignment; its fenced write (the leader epoch bump) fails with ControllerMovedException,
    # logged at INFO, and it resigns.
    cluster = make_servers(1)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    controller = cluster.controller
    before = len(cluster.journal.records)
    stored = partition_state(cluster, tp)
    cluster.admin.create_partition_reassignment({tp: [0]})          # not settled
    cluster.admin.delete_controller(controller.context.epoch_zk_version)
    assert cluster.admin.register_controller_and_increment_controller_epoch(1) == (2, 2)
    controller._log = log = structlog.testing.CapturingLogger()
    assert controller.event_manager.step()                          # the ZkPartitionReassignment
    assert not controller.is_active and controller.active_controller_id == 1
    moved = [c for c in log.calls if c.method_name == "info"
             and c.args[0] == "Controller moved to another broker when processing ZkPartitionReassignment."]
    assert moved, log.calls
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerResigned, since=before)] == \
        [(0, 1)]
    assert partition_state(cluster, tp) == stored                   # nothing was written
    assert cluster.admin.reassign_partitions_in_progress()


def test_controller_move_on_topic_deletion():
    # Kafka: testControllerMoveOnTopicDeletion (testControllerMove): /admin/delete_topics/t is created, /controller
    # moves; processing the TopicDeletion, the controller's first fenced write (the ISR shrink of OfflineReplica)
    # fails with ControllerMovedException and it resigns. The topic stays in the store, marked for deletion.
    cluster = make_servers(1)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    controller = cluster.controller
    before = len(cluster.journal.records)
    stored = partition_state(cluster, tp)
    cluster.admin.create_delete_topic_path("t")                     # AdminZkClient.deleteTopic, not settled
    cluster.admin.delete_controller(controller.context.epoch_zk_version)
    assert cluster.admin.register_controller_and_increment_controller_epoch(1) == (2, 2)
    controller._log = log = structlog.testing.CapturingLogger()
    assert controller.event_manager.step()                          # the TopicDeletion
    assert not controller.is_active and controller.active_controller_id == 1
    moved = [c for c in log.calls if c.method_name == "info"
             and c.args[0] == "Controller moved to another broker when processing TopicDeletion."]
    assert moved, log.calls
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerResigned, since=before)] == \
        [(0, 1)]
    assert partition_state(cluster, tp) == stored
    assert cluster.admin.topic_exists("t") and cluster.admin.is_topic_marked_for_deletion("t")


def test_reassignment_to_the_current_replicas_bumps_the_leader_epoch():
    # Kafka: testTopicIdUpgradeAfterReassigningPartitions, its reassignment step (ApiPartitionReassignment of t-0
    # to Seq(0) on a one-broker cluster; waitForPartitionState(tp, _, 0, 1)). The target is the current assignment:
    # nothing to move, the reassignment is complete at once and phase B bumps the epoch of the leader, which stays.
    cluster = make_servers(1)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    before = len(cluster.journal.records)
    assert cluster.reassign_partitions({tp: [0]}) == (NONE, {tp: NONE})
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH + 1)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((0,))
    assert not reassigning(cluster) and cluster.list_reassignments() == {}
    updates = records(cluster, LeaderAndIsrUpdated, since=before)
    assert [(r.leader, r.leader_epoch, r.reason) for r in updates] == [(0, 1, UPDATE_REASSIGNMENT_EPOCH)]
    assert cluster.brokers[0].leader_and_isr[tp][:2] == (0, 1)
    assert_replays(cluster)


def test_preempted_reassignment_requests_are_answered_not_controller():
    # Kafka: testPreemptionWithCallbacks, its ApiPartitionReassignment and ListPartitionReassignments events: a
    # controller shutting down preempts them and their callbacks get NOT_CONTROLLER.
    cluster = make_servers(1)
    controller = cluster.controller
    answers: list = []
    partitions = {("t", 0): None, ("t", 1): None}
    controller.event_manager.put(ApiPartitionReassignment(partitions, lambda error, results: answers.append(
        ("reassign", error, results))))
    controller.event_manager.put(ListPartitionReassignments(sorted(partitions), lambda error, results: answers.append(
        ("list", error, results))))
    controller.shutdown()
    assert answers == [("reassign", NOT_CONTROLLER, {}), ("list", NOT_CONTROLLER, {})]


# --- partition reassignment: KafkaController.onPartitionReassignment (reference §4.8) ---------------------------

def test_reassignment_phases_a_and_b_with_a_leader_leaving_the_target():
    cluster = make_servers(5)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    before = len(cluster.journal.records)
    timer_count = reassignment_timer_count(cluster)
    assert cluster.reassign_partitions({tp: [3, 4, 1]}) == (NONE, {tp: NONE})
    assert reassignment_timer_count(cluster) == timer_count + 1
    # U: RS = (TRS ++ ORS).distinct, AR = RS - ORS, RR = RS - TRS, written to the topic znode, then to memory.
    expected = ReplicaAssignment((3, 4, 1, 0, 2), (3, 4), (0, 2))
    znode = topic_znode(cluster, "t")
    assert (znode["partitions"], znode["adding_replicas"], znode["removing_replicas"]) == \
        ({"0": [3, 4, 1, 0, 2]}, {"0": [3, 4]}, {"0": [0, 2]})
    ctx = cluster.controller.context
    assert ctx.partition_full_replica_assignment(tp) == expected and reassigning(cluster) == {tp}
    assert cluster.list_reassignments() == {tp: expected}
    assert cluster.list_reassignments([tp, ("t", 1)]) == {tp: expected}
    # A1: the leader epoch is bumped (same leader and ISR) and LeaderAndIsr goes to ORS (isNew=false) and AR
    # (isNew=true) with the new assignment; A2: AR -> NewReplica.
    assert [(r.leader, r.leader_epoch, r.isr, r.reason) for r in records(cluster, LeaderAndIsrUpdated, before)] == \
        [(0, 1, (0, 1, 2), UPDATE_REASSIGNMENT_EPOCH)]
    lai = [(r.broker_id, r.leader_epoch, r.replicas, r.adding_replicas, r.removing_replicas, r.is_new)
           for r in records(cluster, LeaderAndIsrPartition, before)]
    assert sorted(lai[:5]) == [(b, 1, (3, 4, 1, 0, 2), (3, 4), (0, 2), b in (3, 4)) for b in (0, 1, 2, 3, 4)]
    assert [(r.replica, r.from_state, r.to_state) for r in records(cluster, ReplicaTransition, before)] == \
        [(3, NON_EXISTENT_REPLICA, NEW_REPLICA), (4, NON_EXISTENT_REPLICA, NEW_REPLICA)]
    for b in (3, 4):
        assert cluster.brokers[b].leader_and_isr[tp][:2] == (0, 1)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, 1)

    before = len(cluster.journal.records)
    catch_up(cluster)                                               # ISR (0, 1, 2, 3, 4): TRS is in sync
    # B1 AR -> OnlineReplica; B3 the leader (0) is not in TRS: reassign election (first live TRS member in the ISR).
    for b in (3, 4):
        assert replica_moves(cluster, tp, b, before)[0] == (NEW_REPLICA, ONLINE_REPLICA)
    elections = [r for r in records(cluster, PartitionTransition, before) if r.to_state == ONLINE_PARTITION]
    assert [(r.from_state, r.leader, r.leader_epoch, r.replicas, r.election) for r in elections] == \
        [(ONLINE_PARTITION, 3, 2, (3, 4, 1), ELECTION_REASSIGN)]
    # B4/B5: RR -> Offline (StopReplica, ISR shrink) -> DeletionStarted (StopReplica deletePartition=true)
    # -> DeletionSuccessful -> NonExistent, without waiting for the responses.
    for b in (0, 2):
        assert replica_moves(cluster, tp, b, before) == REMOVED
        assert (b, False) in [s[:2] for s in stop_replicas(cluster, tp, before)]
        assert (b, True) in [s[:2] for s in stop_replicas(cluster, tp, before)]
    # The removed follower's log is gone (the removed leader's too, but for the cluster's late write-back of its
    # AlterPartition response: test_a_leader_removed_by_a_reassignment_it_completed_no_longer_hosts_the_partition).
    assert tp not in cluster.brokers[2].leader_and_isr
    shrinks = [(r.replica, r.leader, r.leader_epoch, r.isr) for r in records(cluster, LeaderAndIsrUpdated, before)
               if r.reason == UPDATE_OFFLINE_REPLICA]
    assert shrinks == [(0, 3, 3, (1, 2, 3, 4)), (2, 3, 4, (1, 3, 4))]
    # B6 RS = TRS in the store, B7 the partition is no longer being reassigned, B8 UpdateMetadata to every broker.
    znode = topic_znode(cluster, "t")
    assert (znode["partitions"], znode["adding_replicas"], znode["removing_replicas"]) == ({"0": [3, 4, 1]}, {}, {})
    assert ctx.partition_full_replica_assignment(tp) == ReplicaAssignment((3, 4, 1))
    assert not reassigning(cluster) and cluster.list_reassignments() == {}
    last_metadata = records(cluster, UpdateMetadataPartition, before)[-1]
    assert (last_metadata.brokers, last_metadata.replicas, last_metadata.leader) == ((0, 1, 2, 3, 4), (3, 4, 1), 3)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 3, 4)
    assert partition_state(cluster, tp).leader_and_isr.isr == (1, 3, 4)
    assert sorted(ctx.replicas_for_topic("t")) == [("t", 0, 1), ("t", 0, 3), ("t", 0, 4)]
    assert_replays(cluster)


def test_reassignment_keeps_a_leader_that_stays_in_the_target():
    # moveReassignedPartitionLeaderIfRequired: leader in TRS and alive -> no election, an epoch bump and
    # LeaderAndIsr with the final assignment.
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]])
    assert cluster.reassign_partitions({tp: [1, 3]}) == (NONE, {tp: NONE})
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, 1)
    before = len(cluster.journal.records)
    catch_up(cluster)
    assert not [r for r in records(cluster, PartitionTransition, before) if r.election == ELECTION_REASSIGN]
    updates = [(r.leader, r.leader_epoch, r.isr, r.reason) for r in records(cluster, LeaderAndIsrUpdated, before)]
    assert updates[1:] == [(1, 2, (1, 2, 3), UPDATE_REASSIGNMENT_EPOCH), (1, 3, (1, 3), UPDATE_OFFLINE_REPLICA)]
    sent = [(r.broker_id, r.leader_epoch, r.replicas) for r in records(cluster, LeaderAndIsrPartition, before)]
    assert (3, 2, (1, 3)) in sent and (1, 2, (1, 3)) in sent
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1, 3))
    assert replica_moves(cluster, tp, 2, before) == REMOVED
    assert_replays(cluster)


def test_cancelling_a_reassignment_restores_the_original_replicas():
    # maybeBuildReassignment with no target: reassignTo(originReplicas). ORS = RS.diff(AR) keeps the order of RS,
    # and RS put the target first: Kafka's cancellation gives back the original replicas as a set, in RS order
    # ((0, 1, 2) -> RS (3, 1, 2, 0) -> (1, 2, 0): the preferred leader changes from 0 to 1).
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    assert cluster.reassign_partitions({tp: None}) == (NONE, {tp: NO_REASSIGNMENT_IN_PROGRESS})
    assert cluster.reassign_partitions({tp: [3, 1, 2]}) == (NONE, {tp: NONE})
    assert stored_assignment(cluster, tp) == ReplicaAssignment((3, 1, 2, 0), (3,), (0,))
    assert cluster.brokers[3].leader_and_isr[tp][:2] == (0, 1)
    before = len(cluster.journal.records)
    assert cluster.reassign_partitions({tp: None}) == (NONE, {tp: NONE})
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1, 2, 0))
    assert cluster.controller.context.partition_full_replica_assignment(tp) == ReplicaAssignment((1, 2, 0))
    assert not reassigning(cluster) and cluster.list_reassignments() == {}
    # The adding replica is stopped and deleted (U3); the leader stays, its epoch bumped (B3).
    assert replica_moves(cluster, tp, 3, before) == [(NEW_REPLICA, OFFLINE_REPLICA)] + REMOVED[1:]
    assert [s[:2] for s in stop_replicas(cluster, tp, before)] == [(3, False), (3, True)]
    assert tp not in cluster.brokers[3].leader_and_isr
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, 2)
    assert partition_state(cluster, tp).leader_and_isr.isr == (0, 1, 2)
    assert cluster.reassign_partitions({tp: None}) == (NONE, {tp: NO_REASSIGNMENT_IN_PROGRESS})
    assert_replays(cluster)


def test_a_new_reassignment_supersedes_an_ongoing_one():
    # reassignTo from the current ORS: the replicas the first reassignment added and the second does not want are
    # stopped and deleted at once (updateCurrentReassignment, U3).
    cluster = make_servers(5)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    assert cluster.reassign_partitions({tp: [3, 1, 2]}) == (NONE, {tp: NONE})
    before = len(cluster.journal.records)
    assert cluster.reassign_partitions({tp: [4, 1]}) == (NONE, {tp: NONE})
    assert stored_assignment(cluster, tp) == ReplicaAssignment((4, 1, 2, 0), (4,), (2, 0))
    assert cluster.list_reassignments() == {tp: ReplicaAssignment((4, 1, 2, 0), (4,), (2, 0))}
    assert replica_moves(cluster, tp, 3, before) == [(NEW_REPLICA, OFFLINE_REPLICA)] + REMOVED[1:]
    assert replica_moves(cluster, tp, 4, before) == [(NON_EXISTENT_REPLICA, NEW_REPLICA)]
    assert tp not in cluster.brokers[3].leader_and_isr
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, 2)
    catch_up(cluster)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((4, 1))
    ctx = cluster.controller.context
    assert sorted(ctx.replicas_for_topic("t")) == [("t", 0, 1), ("t", 0, 4)]
    assert ctx.partition_leader(tp) == 4                           # 0 left TRS: the first TRS member in the ISR
    assert_replays(cluster)


def test_reassignment_resumes_after_controller_failover():
    # onControllerFailover: the new controller reads RS/AR/RR from the topic znodes (partitionsBeingReassigned)
    # and resumes every reassignment (initializePartitionReassignments): phase A again. The adding replicas are
    # already OnlineReplica after the replica state machine's startup, so A2's NewReplica transition is refused,
    # as Kafka's is ("should be in the NonExistentReplica states before moving to NewReplica state").
    cluster = make_servers(5)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    assert cluster.reassign_partitions({tp: [3, 4, 1]}) == (NONE, {tp: NONE})
    cluster.kill_broker(0, at=100)                                  # the controller, and a removing replica
    cluster.advance_to(100 + SESSION_TIMEOUT_MS)
    assert cluster.controller_id == 1
    ctx = cluster.controller.context
    assert ctx.partitions_being_reassigned == {tp}
    assert ctx.partition_full_replica_assignment(tp) == ReplicaAssignment((3, 4, 1, 0, 2), (3, 4), (0, 2))
    # Leader 0 died: 1 is elected from the ISR (offline election), then the resumed reassignment bumps the epoch.
    assert_partition_state(cluster, tp, 2, 1, 4)
    refused = [(r.replica, r.message) for r in records(cluster, TransitionFailed) if r.controller_id == 1]
    assert [b for b, _ in refused] == [3, 4]
    assert all("should be in the NonExistentReplica states before moving to NewReplica state" in m for _, m in refused)
    catch_up(cluster)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((3, 4, 1))
    assert not ctx.partitions_being_reassigned
    assert_partition_state(cluster, tp, 2, 1, 6)
    assert partition_state(cluster, tp).leader_and_isr.isr == (1, 3, 4)
    assert_replays(cluster)


def test_zk_reassignment_resumes_at_failover_from_the_znode():
    # initializePartitionReassignments: /admin/reassign_partitions is read first (processZkPartitionReassignment),
    # then the reassignments found only in the topic znodes resume.
    cluster = make_servers(4)
    cluster.create_topic("t", assignment=[[0, 1], [1, 2]])
    cluster.reassign_partitions({("t", 0): [2, 3], ("t", 1): [3, 2]}, via="zk")
    assert cluster.admin.get_partition_reassignment() == {("t", 0): [2, 3], ("t", 1): [3, 2]}
    stop(cluster, 0)
    assert cluster.controller_id == 1
    assert reassigning(cluster) == {("t", 0), ("t", 1)}
    catch_up(cluster)
    assert cluster.admin.get_full_replica_assignment_for_topics(["t"]) == {
        ("t", 0): ReplicaAssignment((2, 3)), ("t", 1): ReplicaAssignment((3, 2))}
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    assert_replays(cluster)


def test_refused_reassignments_change_nothing():
    # processApiPartitionReassignment/validateReplicas/maybeTriggerPartitionReassignment: per-partition errors;
    # neither the store nor the controller's context changes.
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    stop(cluster, 3)
    cluster.controlled_shutdown(2)                                 # 2 is shutting down: not a live broker
    dump, digest = cluster.zk.dump(), cluster.digest()
    cases = [
        ({("u", 0): [0, 1]}, UNKNOWN_TOPIC_OR_PARTITION),           # unknown topic
        ({("t", 1): [0, 1]}, UNKNOWN_TOPIC_OR_PARTITION),           # unknown partition
        ({tp: [0, 3]}, INVALID_REPLICA_ASSIGNMENT),                 # a dead broker
        ({tp: [0, 2, 1]}, NONE),                                    # a shutting-down replica that stays: fine
        ({tp: [1, 1]}, INVALID_REPLICA_ASSIGNMENT),                 # duplicates
        ({tp: []}, INVALID_REPLICA_ASSIGNMENT),                     # empty
        ({tp: [0, -1]}, INVALID_REPLICA_ASSIGNMENT),                # a negative id
        ({tp: None}, NO_REASSIGNMENT_IN_PROGRESS),                  # nothing to cancel
        ({("u", 0): None}, NO_REASSIGNMENT_IN_PROGRESS),
        ({tp: [0, 9]}, INVALID_REPLICA_ASSIGNMENT),                 # a broker that never existed
    ]
    for request, error in cases:
        assert cluster.reassign_partitions(request) == (NONE, {next(iter(request)): error}), request
        if error != NONE:
            assert cluster.zk.dump() == dump and cluster.digest() == digest, request
        dump, digest = cluster.zk.dump(), cluster.digest()
    # A shutting-down broker cannot be added either (Kafka's liveBrokerIds leaves it out).
    cluster.create_topic("v", assignment=[[0, 1]])
    dump, digest = cluster.zk.dump(), cluster.digest()
    assert cluster.reassign_partitions({("v", 0): [0, 2]}) == (NONE, {("v", 0): INVALID_REPLICA_ASSIGNMENT})
    assert cluster.zk.dump() == dump and cluster.digest() == digest
    # The tool's own checks (kafka-reassign-partitions.sh with --zookeeper) refuse before writing anything, so
    # nothing is journaled.
    journaled = len(cluster.journal.records)
    for request in ({}, {("u", 0): [0]}, {tp: [0, 3]}, {tp: [1, 1]}, {tp: []}, {tp: None}):
        with pytest.raises(ClusterError):
            cluster.reassign_partitions(request, via="zk")
    assert len(cluster.journal.records) == journaled and cluster.zk.dump() == dump
    assert_replays(cluster)


def test_reassign_partitions_znode_shrinks_as_partitions_complete_and_goes_when_empty():
    # removePartitionFromReassigningPartitions -> maybeRemoveFromZkReassignment (B7); an API reassignment of a
    # partition listed in the znode takes it out of the znode ("the latest reassignment wins").
    cluster = make_servers(4)
    cluster.create_topic("t", assignment=[[0, 1], [1, 2], [2, 0]])
    cluster.reassign_partitions({("t", 0): [0, 1, 3], ("t", 1): [1], ("t", 2): [3, 0]}, via="zk")
    # t-1 only removes a replica: TRS is in the ISR, it completes at once and leaves the znode.
    assert cluster.admin.get_partition_reassignment() == {("t", 0): [0, 1, 3], ("t", 2): [3, 0]}
    assert stored_assignment(cluster, ("t", 1)) == ReplicaAssignment((1,))
    with pytest.raises(ClusterError, match="existing assignment"):
        cluster.reassign_partitions({("t", 1): [1, 2]}, via="zk")
    assert cluster.reassign_partitions({("t", 2): [2, 0]}) == (NONE, {("t", 2): NONE})   # the API cancels t-2's
    assert cluster.admin.get_partition_reassignment() == {("t", 0): [0, 1, 3]}
    assert stored_assignment(cluster, ("t", 2)) == ReplicaAssignment((2, 0))
    assert reassigning(cluster) == {("t", 0)}
    catch_up(cluster)
    assert stored_assignment(cluster, ("t", 0)) == ReplicaAssignment((0, 1, 3))
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    # The znode watch is armed again: a new zk reassignment is picked up.
    cluster.reassign_partitions({("t", 1): [1, 2]}, via="zk")
    assert reassigning(cluster) == {("t", 1)}
    catch_up(cluster)
    assert stored_assignment(cluster, ("t", 1)) == ReplicaAssignment((1, 2))
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    assert_replays(cluster)


def test_reassignment_through_a_broker_that_dies_before_catching_up():
    # The zk variant of testPartitionReassignmentWithOfflineReplicaHaltingProgress that the tool accepts: the
    # target broker is still registered (killed, its session not yet expired) when the reassignment starts.
    cluster = make_servers(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    cluster.kill_broker(1, at=10)
    cluster.reassign_partitions({tp: [1]}, via="zk", at=20)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, 1)
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    # The adding replica goes offline; it was never in the ISR, so nothing is written for it.
    assert cluster.controller.context.replica_state(("t", 0, 1)) == OFFLINE_REPLICA
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 0, 1)
    assert cluster.admin.reassign_partitions_in_progress() and reassigning(cluster) == {tp}
    cluster.start_broker(1)
    catch_up(cluster)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, 4)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1,))
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    assert_replays(cluster)


def test_reassigning_a_partition_that_never_had_a_leader():
    # A partition created while its only replica's broker is down has no /state znode. onPartitionReassignment
    # writes RS/AR/RR (phase U) and adds it to partitionsBeingReassigned, then updateLeaderEpoch throws
    # IllegalStateException ("leaderAndIsr path is empty"): maybeTriggerPartitionReassignment answers
    # UNKNOWN_SERVER_ERROR and the reassignment stays in the store. When the broker comes back the partition gets
    # its first leader, but onBrokerStartup only resumes reassignments whose *target* has the new broker; the next
    # controller resumes it and, TRS being in the ISR, completes it.
    cluster = make_servers(3)
    tp = ("t", 0)
    stop(cluster, 2)
    cluster.create_topic("t", assignment=[[2]])
    assert cluster.admin.get_topic_partition_states([tp]) == {}
    assert cluster.reassign_partitions({tp: [1]}) == (NONE, {tp: "UNKNOWN_SERVER_ERROR"})
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1, 2), (1,), (2,))
    assert reassigning(cluster) == {tp}
    cluster.start_broker(2)
    assert_partition_state(cluster, tp, FIRST_CONTROLLER_EPOCH, 1, INITIAL_LEADER_EPOCH)
    assert partition_state(cluster, tp).leader_and_isr.isr == (1, 2)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1, 2), (1,), (2,))
    stop(cluster, 0)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1,))
    assert not reassigning(cluster)
    assert cluster.controller.context.partition_leader(tp) == 1
    assert_replays(cluster)


def test_broker_startup_resumes_the_reassignment_of_a_topic_being_deleted():
    # onBrokerStartup -> maybeResumeReassignments resumes every reassignment whose target has a new broker, with
    # no check for topics queued for deletion (Kafka 3.7 has none either): phase A bumps the leader epoch and sends
    # LeaderAndIsr to ORS and AR, including brokers whose replica was already deleted (StopReplica delete=true),
    # so they host the partition again; the deletion then completes without them: a stray partition.
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1]])
    assert cluster.reassign_partitions({tp: [1, 3]}) == (NONE, {tp: NONE})
    stop(cluster, 3)
    cluster.delete_topic("t")                                       # not halted by the reassignment, by broker 3
    assert cluster.controller.context.topics_ineligible_for_deletion == {"t"}
    assert tp not in cluster.brokers[0].leader_and_isr and tp not in cluster.brokers[1].leader_and_isr
    before = len(cluster.journal.records)
    cluster.start_broker(3)
    verify_topic_deletion(cluster, "t", 1, brokers=False)
    updates = records(cluster, LeaderAndIsrUpdated, before)
    assert [(r.leader, r.leader_epoch, r.reason) for r in updates] == [(-1, 4, UPDATE_REASSIGNMENT_EPOCH)]
    resent = sorted(r.broker_id for r in records(cluster, LeaderAndIsrPartition, before) if r.leader_epoch == 4)
    assert resent == [0, 1, 3]
    assert cluster.brokers[0].leader_and_isr[tp][:2] == (-1, 4)
    assert cluster.brokers[1].leader_and_isr[tp][:2] == (-1, 4)
    assert tp not in cluster.brokers[3].leader_and_isr
    assert_replays(cluster)


# --- topic deletion: DeleteTopicTest ------------------------------------------------------------------------

def create_test_topic_and_cluster(n: int = 3, **configs) -> Cluster:
    """DeleteTopicTest.createTestTopicAndCluster: brokers 0..n-1 (``enableControlledShutdown = false``), topic "test"
    with t-0 on [0, 1, 2]."""
    cluster = make_servers(n, **{"controlled.shutdown.enable": False, **configs})
    cluster.create_topic("test", assignment=[[0, 1, 2]], configs={"retention.ms": "1000"})
    for b in (0, 1, 2):
        assert ("test", 0) in cluster.brokers[b].leader_and_isr
    return cluster


def test_delete_topic_with_all_alive_replicas():
    # DeleteTopicTest: testDeleteTopicWithAllAliveReplicas, with the steps of TopicDeletionManager (reference §5).
    cluster = create_test_topic_and_cluster()
    tp = ("test", 0)
    before = len(cluster.journal.records)
    cluster.delete_topic("test")
    verify_topic_deletion(cluster, "test", 1)
    # onTopicDeletion: partitions Online -> Offline -> NonExistent, then UpdateMetadata to every live broker with
    # leader -2 (LeaderDuringDelete) so that they stop serving the topic.
    assert partition_moves(cluster, tp, before) == [(ONLINE_PARTITION, OFFLINE_PARTITION),
                                                   (OFFLINE_PARTITION, NON_EXISTENT_PARTITION)]
    metadata = records(cluster, UpdateMetadataPartition, before)
    assert metadata and all(r.leader == LEADER_DURING_DELETE for r in metadata if r.topic == "test")
    assert metadata[0].brokers == (0, 1, 2) and metadata[0].leader_epoch == 0
    # onPartitionDeletion: each replica OfflineReplica (StopReplica deletePartition=false) then
    # ReplicaDeletionStarted (StopReplica deletePartition=true); the responses make them DeletionSuccessful;
    # completeDeleteTopic makes them NonExistent and deletes the znodes.
    for b in (0, 1, 2):
        assert replica_moves(cluster, tp, b, before) == REMOVED
    assert sorted(stop_replicas(cluster, tp, before)) == sorted(
        [(b, False, EPOCH_DURING_DELETE) for b in (0, 1, 2)] + [(b, True, EPOCH_DURING_DELETE) for b in (0, 1, 2)])
    deletes = [r for r in records(cluster, RequestSent, before) if r.api == API_STOP_REPLICA and r.delete_count]
    assert sorted(r.broker_id for r in deletes) == [0, 1, 2]
    assert_fold_agrees(cluster)
    assert_replays(cluster)


def test_resume_delete_topic_with_recovered_follower():
    # DeleteTopicTest: testResumeDeleteTopicWithRecoveredFollower (and testDeleteTopicAlreadyMarkedAsDeleted
    # while the deletion is halted).
    cluster = create_test_topic_and_cluster()
    tp = ("test", 0)
    leader = partition_state(cluster, tp).leader_and_isr.leader
    follower = [b for b in (0, 1, 2) if b != leader][-1]
    shutdown(cluster, follower)
    before = len(cluster.journal.records)
    cluster.delete_topic("test")
    # The live replicas are deleted; the dead one is ReplicaDeletionIneligible, halting the deletion, and goes
    # back to OfflineReplica once the StopReplica responses are in (retryDeletionForIneligibleReplicas).
    for b in (0, 1, 2):
        if b != follower:
            assert tp not in cluster.brokers[b].leader_and_isr
            assert cluster.controller.context.replica_state(("test", 0, b)) == REPLICA_DELETION_SUCCESSFUL
    assert replica_moves(cluster, tp, follower, before) == [(OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE),
                                                            (REPLICA_DELETION_INELIGIBLE, OFFLINE_REPLICA)]
    ctx = cluster.controller.context
    assert ctx.topics_to_be_deleted == {"test"} and ctx.topics_ineligible_for_deletion == {"test"}
    assert cluster.admin.is_topic_marked_for_deletion("test") and cluster.admin.topic_exists("test")
    with pytest.raises(ClusterError, match="already marked for deletion"):
        cluster.delete_topic("test")
    cluster.start_broker(follower)
    verify_topic_deletion(cluster, "test", 1)
    assert replica_moves(cluster, tp, follower, before)[2:] == [(OFFLINE_REPLICA, ONLINE_REPLICA)] + REMOVED
    with pytest.raises(ClusterError, match="does not exist"):
        cluster.delete_topic("test")
    assert_replays(cluster)


def test_resume_delete_topic_on_controller_failover():
    # DeleteTopicTest: testResumeDeleteTopicOnControllerFailover. The new controller finds /admin/delete_topics/test
    # and a replica on a dead broker: the topic is queued and ineligible (initializeTopicDeletionManager).
    cluster = create_test_topic_and_cluster()
    tp = ("test", 0)
    controller_id = cluster.controller_id
    leader = partition_state(cluster, tp).leader_and_isr.leader
    follower = [b for b in (0, 1, 2) if b not in (leader, controller_id)][-1]
    shutdown(cluster, follower)
    cluster.delete_topic("test")
    shutdown(cluster, controller_id)
    assert cluster.controller_id not in (controller_id, -1)
    assert cluster.admin.is_topic_marked_for_deletion("test")
    ctx = cluster.controller.context
    assert ctx.topics_to_be_deleted == {"test"} and ctx.topics_ineligible_for_deletion == {"test"}
    cluster.start_broker(controller_id)
    assert cluster.admin.is_topic_marked_for_deletion("test")
    cluster.start_broker(follower)
    verify_topic_deletion(cluster, "test", 1)
    assert_replays(cluster)


def test_partition_reassignment_during_delete_topic():
    # DeleteTopicTest: testPartitionReassignmentDuringDeleteTopic: a partition of a topic queued for deletion
    # cannot be reassigned (UNKNOWN_TOPIC_OR_PARTITION, "Skipping reassignment of ... being deleted").
    cluster = create_test_topic_and_cluster(4)
    tp = ("test", 0)
    leader = partition_state(cluster, tp).leader_and_isr.leader
    follower = [b for b in (0, 1, 2) if b != leader][-1]
    shutdown(cluster, follower)
    cluster.delete_topic("test")
    dump = cluster.zk.dump()
    assert cluster.reassign_partitions({tp: [1, 2, 3]}) == (NONE, {tp: UNKNOWN_TOPIC_OR_PARTITION})
    assert cluster.zk.dump() == dump
    cluster.start_broker(follower)
    verify_topic_deletion(cluster, "test", 1)
    assert_replays(cluster)


def test_increase_partition_count_during_delete_topic():
    # DeleteTopicTest: testIncreasePartitionCountDuringDeleteTopic. The added partition is taken out of the topic
    # znode again (processPartitionModifications: "Skipping adding partitions ... being deleted"); a controller
    # switch and the brokers' return then finish the deletion.
    cluster = create_test_topic_and_cluster(4)
    tp = ("test", 0)
    leader = partition_state(cluster, tp).leader_and_isr.leader
    follower = [b for b in (0, 1, 2) if b != leader][-1]
    shutdown(cluster, follower)
    cluster.delete_topic("test")
    ctx = cluster.controller.context
    replicas = {("test", 0, b) for b in (0, 1, 2)}
    assert replicas == set(ctx.replicas_in_state("test", REPLICA_DELETION_SUCCESSFUL)) | \
        set(ctx.replicas_in_state("test", OFFLINE_REPLICA))
    cluster.add_partitions("test", assignment={1: [0, 1, 2]})
    assert list(cluster.admin.get_full_replica_assignment_for_topics(["test"])) == [tp]
    assert ("test", 1) not in set(ctx.all_partitions())
    controller_id = cluster.controller_id
    shutdown(cluster, controller_id)
    assert cluster.controller_id not in (controller_id, -1)
    cluster.start_broker(follower)
    cluster.start_broker(controller_id)
    # (The view still has the reverted partition: test_view_drops_partitions_taken_out_of_a_topic_being_deleted.)
    verify_topic_deletion(cluster, "test", 2, view=False)
    assert_replays(cluster)


def test_delete_topic_during_add_partition():
    # DeleteTopicTest: testDeleteTopicDuringAddPartition: partitions added while a follower is down (its broker
    # gone from the store), then the deletion; it resumes when the follower comes back.
    cluster = create_test_topic_and_cluster()
    leader = partition_state(cluster, ("test", 0)).leader_and_isr.leader
    follower = [b for b in (0, 1, 2) if b != leader][-1]
    shutdown(cluster, follower)
    cluster.add_partitions("test", assignment={1: [0, 1, 2], 2: [0, 1, 2]})
    assert {("test", 1), ("test", 2)} <= set(cluster.controller.context.all_partitions())
    cluster.delete_topic("test")
    assert cluster.admin.is_topic_marked_for_deletion("test")
    cluster.start_broker(follower)
    verify_topic_deletion(cluster, "test", 3)
    assert_replays(cluster)


def test_add_partition_during_delete_topic():
    # DeleteTopicTest: testAddPartitionDuringDeleteTopic. Kafka's deletion is asynchronous: the partitions are
    # added while it runs. Here both store writes come before the controller processes either: the TopicDeletion
    # runs first and sends StopReplica(delete), the PartitionModifications finds the topic queued for deletion and
    # takes the new partitions out, then the StopReplica responses finish the deletion.
    cluster = create_test_topic_and_cluster()
    existing = cluster.admin.get_full_replica_assignment_for_topics(["test"])
    cluster.admin.create_delete_topic_path("test")
    cluster.admin.add_partitions("test", existing, {1: [0, 1, 2], 2: [0, 1, 2]})
    cluster.settle()
    verify_topic_deletion(cluster, "test", 3)
    for server in cluster.brokers.values():
        assert ("test", 1) not in server.leader_and_isr
    assert not [r for r in records(cluster, PartitionTransition) if (r.topic, r.partition) == ("test", 1)]


def test_recreate_topic_after_deletion():
    # DeleteTopicTest: testRecreateTopicAfterDeletion: the same name on the same replicas is a new topic (leader
    # epoch 0 again) and every replica hosts it.
    cluster = create_test_topic_and_cluster()
    cluster.delete_topic("test")
    verify_topic_deletion(cluster, "test", 1)
    cluster.create_topic("test", assignment=[[0, 1, 2]])
    assert_partition_state(cluster, ("test", 0), FIRST_CONTROLLER_EPOCH, 0, INITIAL_LEADER_EPOCH)
    for b in (0, 1, 2):
        assert cluster.brokers[b].leader_and_isr[("test", 0)][:2] == (0, 0)
    assert cluster.admin.get_entity_configs("topics", "test") == {}
    assert_fold_agrees(cluster)
    assert_replays(cluster)


def test_delete_non_existing_topic():
    # DeleteTopicTest: testDeleteNonExistingTopic. The admin refuses (Kafka: UnknownTopicOrPartitionException),
    # nothing is journaled; a /admin/delete_topics entry for a topic that does not exist (written to the store
    # directly) is removed by the controller ("Ignoring request to delete non-existing topics"). "test" stays.
    cluster = create_test_topic_and_cluster()
    journaled = len(cluster.journal.records)
    with pytest.raises(ClusterError, match="does not exist"):
        cluster.delete_topic("test2")
    assert len(cluster.journal.records) == journaled
    cluster.admin.create_delete_topic_path("test2")
    cluster.settle()
    assert not cluster.admin.is_topic_marked_for_deletion("test2")
    assert cluster.admin.topic_exists("test")
    for b in (0, 1, 2):
        assert ("test", 0) in cluster.brokers[b].leader_and_isr
    assert partition_state(cluster, ("test", 0)).leader_and_isr.leader == 0


def test_disable_delete_topic():
    # DeleteTopicTest: testDisableDeleteTopic. With delete.topic.enable=false the controller removes the
    # /admin/delete_topics entry ("Removing ... since delete topic is disabled") and the topic is untouched.
    # (Kafka 3.7's DeleteTopics API refuses earlier with TopicDeletionDisabledException; the cluster writes the
    # znode as AdminZkClient.deleteTopic does, so the controller's path is the one exercised.)
    cluster = create_test_topic_and_cluster(**{"delete.topic.enable": False})
    before = len(cluster.journal.records)
    cluster.delete_topic("test")
    assert [type(r) for r in records(cluster, since=before)] == [TopicDeletionRequested]
    assert not cluster.admin.is_topic_marked_for_deletion("test")
    assert cluster.admin.topic_exists("test")
    assert partition_state(cluster, ("test", 0)).leader_and_isr.leader == 0
    for b in (0, 1, 2):
        assert ("test", 0) in cluster.brokers[b].leader_and_isr
    assert not cluster.controller.context.topics_to_be_deleted
    assert_replays(cluster)


def test_disable_delete_topic_at_failover():
    # TopicDeletionManager.init with delete.topic.enable=false: the entries a new controller finds are removed.
    cluster = create_test_topic_and_cluster(**{"delete.topic.enable": False})
    cluster.kill_broker(0, at=10)
    cluster.delete_topic("test", at=20)                             # no controller acts on it
    assert cluster.admin.is_topic_marked_for_deletion("test")
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    assert cluster.controller_id == 1
    assert not cluster.admin.is_topic_marked_for_deletion("test") and cluster.admin.topic_exists("test")
    assert not cluster.controller.context.topics_to_be_deleted
    assert_replays(cluster)


def test_deleting_partially_deleted_topic():
    # DeleteTopicTest: testDeletingPartiallyDeletedTopic: a previous controller deleted partition 0's znode and
    # crashed; the next controller finishes the deletion of both partitions.
    cluster = make_servers(3)
    cluster.create_topic("test", assignment=[[0, 1, 2], [0, 1, 2]])
    for b in (0, 1, 2):
        cluster.kill_broker(b)
    cluster.advance(SESSION_TIMEOUT_MS + 1)
    assert cluster.controller is None
    cluster.admin._delete_recursive("/brokers/topics/test/partitions/0")   # zkClient.deleteRecursive
    cluster.admin.create_delete_topic_path("test")
    for b in (0, 1, 2):
        cluster.start_broker(b)
    assert cluster.controller is not None
    verify_topic_deletion(cluster, "test", 2)


# --- topic deletion: TopicDeletionManager and the controller (reference §5) ------------------------------------

def test_deletion_halted_by_a_dead_replica_broadcasts_leader_during_delete():
    # Brokers stop serving the topic at once (UpdateMetadata, leader -2) although its deletion waits for the dead
    # replica; the StopReplica(delete=true) goes to the live replicas only.
    cluster = create_test_topic_and_cluster(4)
    tp = ("test", 0)
    stop(cluster, 2)
    before = len(cluster.journal.records)
    cluster.delete_topic("test")
    metadata = [r for r in records(cluster, UpdateMetadataPartition, before) if r.topic == "test"]
    assert metadata[0].brokers == (0, 1, 3)
    assert {(r.leader, r.leader_epoch) for r in metadata} == {(LEADER_DURING_DELETE, 0)}
    assert metadata[0].offline_replicas == (2,)
    assert sorted(s for s in stop_replicas(cluster, tp, before) if s[1]) == [(0, True, -2), (1, True, -2)]
    assert cluster.controller.context.replica_state(("test", 0, 2)) == OFFLINE_REPLICA
    assert cluster.controller.context.topics_ineligible_for_deletion == {"test"}
    # Nothing elects a leader for a topic queued for deletion, and its partitions left the partition count.
    metrics = cluster.controller.metrics()
    assert metrics["kafka.controller:type=KafkaController,name=OfflinePartitionsCount"] == 0
    assert metrics["kafka.controller:type=KafkaController,name=TopicsToDeleteCount"] == 1
    cluster.start_broker(2)
    verify_topic_deletion(cluster, "test", 1)
    assert cluster.controller.metrics()["kafka.controller:type=KafkaController,name=TopicsToDeleteCount"] == 0
    assert_replays(cluster)


def test_deletion_requested_while_no_controller_is_active_completes_at_failover():
    # initializeTopicDeletionManager + tryTopicDeletion: the new controller finds the request and deletes the topic.
    cluster = create_test_topic_and_cluster(4)
    cluster.kill_broker(0, at=10)
    cluster.delete_topic("test", at=20)
    assert cluster.admin.topic_exists("test")
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    assert cluster.controller_id == 1
    # Replica 0 is on the dead broker: the deletion is halted until it comes back.
    assert cluster.controller.context.topics_ineligible_for_deletion == {"test"}
    cluster.start_broker(0)
    verify_topic_deletion(cluster, "test", 1)
    assert_replays(cluster)


def test_deletion_halted_during_a_reassignment_resumes_when_it_completes():
    # At failover a topic with a partition being reassigned is ineligible for deletion
    # (fetchTopicDeletionsInProgress); the reassignment resumes and, once complete (phase B), resumeDeletionForTopics
    # lets the deletion run.
    cluster = make_servers(5)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2, 3]])
    assert cluster.reassign_partitions({tp: [4, 1, 2]}) == (NONE, {tp: NONE})
    cluster.kill_broker(0, at=10)                                   # the controller, not a replica
    cluster.delete_topic("t", at=20)
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    assert cluster.controller_id == 1
    ctx = cluster.controller.context
    assert ctx.topics_to_be_deleted == {"t"} and ctx.topics_ineligible_for_deletion == {"t"}
    assert ctx.partitions_being_reassigned == {tp}
    assert cluster.admin.topic_exists("t") and cluster.controller.context.partition_state(tp) == ONLINE_PARTITION
    catch_up(cluster)
    # (The leader hosts the partition again afterwards: test_a_leader_whose_alter_partition_resumed_a_deletion_...)
    verify_topic_deletion(cluster, "t", 1, brokers=False)
    for b in (2, 3, 4):
        assert tp not in cluster.brokers[b].leader_and_isr
    assert_replays(cluster)


def test_deletion_requested_during_a_reassignment_is_not_halted():
    # Kafka 3.7's processTopicDeletion calls markTopicIneligibleForDeletion(topic, "topic reassignment in progress")
    # *before* enqueueTopicsForDeletion, and markTopicIneligibleForDeletion only marks topics already queued: the
    # mark is a no-op and the deletion of a topic being reassigned runs at once (adding and removing replicas
    # alike are deleted).
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    assert cluster.reassign_partitions({tp: [3, 1, 2]}) == (NONE, {tp: NONE})
    before = len(cluster.journal.records)
    cluster.delete_topic("t")
    verify_topic_deletion(cluster, "t", 1)
    for b in (0, 1, 2, 3):
        assert replica_moves(cluster, tp, b, before)[-3:] == REMOVED[1:]
    assert cluster.reassign_partitions({tp: None}) == (NONE, {tp: NO_REASSIGNMENT_IN_PROGRESS})
    assert_replays(cluster)


def test_zk_reassignment_of_a_topic_queued_for_deletion_is_dropped_from_the_znode():
    # processZkPartitionReassignment: UNKNOWN_TOPIC_OR_PARTITION for a topic being deleted; failed partitions are
    # removed from /admin/reassign_partitions (here the only one: the znode goes).
    cluster = create_test_topic_and_cluster(4)
    stop(cluster, 2)
    cluster.delete_topic("test")
    cluster.reassign_partitions({("test", 0): [0, 1, 3]}, via="zk")
    assert not cluster.admin.path_exists(REASSIGN_PATH)
    assert stored_assignment(cluster, ("test", 0)) == ReplicaAssignment((0, 1, 2))
    cluster.start_broker(2)
    verify_topic_deletion(cluster, "test", 1)
    assert_replays(cluster)


# --- engine bugs (strict xfail: they pass once fixed) --------------------------------------------------------

def test_brokers_forget_the_metadata_of_a_deleted_topic():
    cluster = create_test_topic_and_cluster()
    cluster.delete_topic("test")
    verify_topic_deletion(cluster, "test", 1)
    for b, server in sorted(cluster.brokers.items()):
        assert ("test", 0) not in server.metadata, (b, server.metadata.get(("test", 0)))


def test_view_does_not_resurrect_a_deleted_topic_at_failover():
    cluster = create_test_topic_and_cluster()
    cluster.delete_topic("test")
    verify_topic_deletion(cluster, "test", 1)
    stop(cluster, 0)
    assert cluster.controller_id == 1
    view = fold(cluster.journal.records)
    assert "test" not in view.topics and "test" not in view.replica_states
    assert not [line for line in view.describe_lines() if "test" in line]


def test_view_follows_the_replicas_of_a_completed_reassignment():
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]])
    assert cluster.reassign_partitions({tp: [1, 3]}) == (NONE, {tp: NONE})
    catch_up(cluster)
    assert cluster.controller.context.partition_replica_assignment(tp) == (1, 3)
    assert fold(cluster.journal.records).topics["t"][0].replicas == (1, 3)


def test_view_keeps_the_partitions_of_a_halted_deletion_across_failover():
    cluster = create_test_topic_and_cluster(4)
    stop(cluster, 2)
    cluster.delete_topic("test")
    stop(cluster, 0)
    ctx = cluster.controller.context
    assert ctx.partition_state(("test", 0)) == OFFLINE_PARTITION and ctx.topics_to_be_deleted == {"test"}
    assert 0 in fold(cluster.journal.records).topics.get("test", {})


def test_view_drops_partitions_taken_out_of_a_topic_being_deleted():
    cluster = create_test_topic_and_cluster(4)
    stop(cluster, 2)
    cluster.delete_topic("test")
    cluster.add_partitions("test", assignment={1: [0, 1, 2]})
    stop(cluster, 0)
    assert ("test", 1) not in set(cluster.controller.context.all_partitions())
    assert 1 not in fold(cluster.journal.records).topics.get("test", {})


def test_view_forgets_the_configs_of_a_deleted_topic():
    cluster = create_test_topic_and_cluster(4)
    stop(cluster, 2)
    cluster.delete_topic("test")
    cluster.set_config("topic", "test", "retention.ms", "2000")
    assert cluster.admin.get_entity_configs("topics", "test") == {"retention.ms": "2000"}
    cluster.start_broker(2)
    verify_topic_deletion(cluster, "test", 1, view=False)
    assert "test" not in cluster.view.topic_configs


ALTER_PARTITION_WRITE_BACK = (
    "controller/embedding/cluster.py Cluster._alter_partition applies the AlterPartition response to the leader's "
    "leader_and_isr after settle(), i.e. after everything the controller did next; Kafka's controller answers "
    "before maybeCompleteReassignment, so the leader handles the response before the LeaderAndIsr/StopReplica "
    "requests that follow (and a Partition removed by StopReplica(delete=true) is gone from its ReplicaManager). ")


def test_a_leader_that_completes_a_reassignment_knows_the_new_leader_epoch():
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2]])
    assert cluster.reassign_partitions({tp: [1, 3]}) == (NONE, {tp: NONE})
    catch_up(cluster)
    lai = partition_state(cluster, tp).leader_and_isr
    assert (lai.leader, lai.leader_epoch) == (1, 3)
    assert cluster.brokers[3].leader_and_isr[tp][:2] == (1, 3)
    assert cluster.brokers[1].leader_and_isr[tp][:2] == (1, 3)


def test_a_leader_removed_by_a_reassignment_it_completed_no_longer_hosts_the_partition():
    cluster = make_servers(2)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0]])
    cluster.reassign_partitions({tp: [1]}, via="zk")
    catch_up(cluster)
    assert stored_assignment(cluster, tp) == ReplicaAssignment((1,))
    assert (0, True) in [s[:2] for s in stop_replicas(cluster, tp)]
    assert tp not in cluster.brokers[0].leader_and_isr


def test_a_leader_whose_alter_partition_resumed_a_deletion_no_longer_hosts_the_partition():
    cluster = make_servers(5)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[1, 2, 3]])
    assert cluster.reassign_partitions({tp: [4, 1, 2]}) == (NONE, {tp: NONE})
    cluster.kill_broker(0, at=10)
    cluster.delete_topic("t", at=20)
    cluster.advance_to(10 + SESSION_TIMEOUT_MS)
    catch_up(cluster)
    verify_topic_deletion(cluster, "t", 1)


def test_a_failover_that_throws_moves_the_controller_on():
    # elect(): any exception from onControllerFailover -> triggerControllerMove. Kafka reaches it e.g. when a
    # resumed reassignment's updateLeaderEpoch throws for a partition without /state
    # (test_reassigning_a_partition_that_never_had_a_leader, followed by a failover before the broker returns);
    # here broker 1's failover throws once, by injection, so that the next election succeeds.
    cluster = make_servers(2)
    follower = cluster.brokers[1].controller
    resume = follower._initialize_partition_reassignments
    calls: list = []

    def throws_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Cannot update leader epoch for partition t-0 as leaderAndIsr path is empty")
        resume()

    follower._initialize_partition_reassignments = throws_once
    stop(cluster, 0)
    assert cluster.controller is not None and cluster.controller.epoch == cluster.admin.get_controller_epoch()[0]
    assert [(r.controller_id, r.controller_epoch) for r in records(cluster, ControllerElected)] == \
        [(0, 1), (1, 2), (1, 3)]
    assert len(calls) == 2


def test_a_partition_deleted_during_its_reassignment_stays_in_partitions_being_reassigned():
    cluster = make_servers(4)
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[0, 1, 2]])
    assert cluster.reassign_partitions({tp: [3, 1, 2]}) == (NONE, {tp: NONE})
    cluster.delete_topic("t")                                       # not halted (see the test of that name)
    verify_topic_deletion(cluster, "t", 1)
    cluster.create_topic("t", assignment=[[0, 1]])
    before = len(cluster.journal.records)
    response = cluster.alter_partition(0, {tp: (0, (0,), 0, 0)})   # the leader shrinks the ISR
    assert response.partitions[tp].isr == (0,)
    assert [(r.leader, r.leader_epoch, r.reason) for r in records(cluster, LeaderAndIsrUpdated, before)][-1] == \
        (0, 1, UPDATE_REASSIGNMENT_EPOCH)


def test_read_only_broker_configs_cannot_change_at_runtime():
    """delete.topic.enable (like the other start-up configs) is read-only in Kafka: kafka-configs.sh refuses it."""
    cluster = Cluster(seed=1)
    cluster.start_brokers([0])
    with pytest.raises(ClusterError, match=r"Cannot update these configs dynamically: Set\(delete.topic.enable\)"):
        cluster.set_config("broker", "", "delete.topic.enable", False)
    assert replay_records(cluster.records).ok
