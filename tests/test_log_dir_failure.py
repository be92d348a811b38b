"""A broker's log directory fails: the controller's handling, as Kafka 3.7 does it (ZooKeeper mode).

The broker (ReplicaManager.handleLogDirFailure) takes the replicas of the failed directory offline and
writes ``/log_dir_event_notification/log_dir_event_<seq>``; the controller (LogDirEventNotification)
sends LeaderAndIsr for every replica on that broker, deletes the notification, and from the answers
(LeaderAndIsrResponseReceived: KAFKA_STORAGE_ERROR per offline replica) records the replicas in
``replicasOnOfflineDirs`` and runs onReplicasBecomeOffline (elections, ISR shrinks, OfflineReplica).
A broker left without a log directory halts, and is then handled as a broker failure when its session
expires. A new controller deletes pending notifications at failover and learns the offline replicas
from the answers to the LeaderAndIsr requests its startup sends.

Ported from Kafka 3.7 (core/src/test/scala/unit/kafka):

* controller/ControllerIntegrationTest.testPartitionReassignmentToBrokerWithOfflineLogDir
  -> test_partition_reassignment_to_broker_with_offline_log_dir
* server/LogDirFailureTest.testProduceAfterLogDirFailureOnLeader (its ZooKeeper branch; also run by
  testIOExceptionDuringLogRoll / testIOExceptionDuringCheckpoint, which differ only in how the disk
  fails) -> test_produce_after_log_dir_failure_on_leader
* server/LogDirFailureTest.testZkBrokerWithOldInterBrokerProtocolShouldHaltOnLogDirFailure
  -> test_zk_broker_with_old_inter_broker_protocol_should_halt_on_log_dir_failure
* controller/ControllerChannelManagerTest.testLeaderAndIsrRequestSent (the response callback)
  -> test_every_leader_and_isr_response_reaches_the_callback
"""
from __future__ import annotations

import json

import pytest

from controller.embedding.cluster import Cluster, ClusterError
from controller.embedding.cluster_snapshot import cluster_state, restore_cluster
from controller.context import ControllerContext
from controller.controller_events import KAFKA_STORAGE_ERROR, NONE, STALE_CONTROLLER_EPOCH, LeaderAndIsrResponseReceived
from controller.embedding.replay import replay_log, replay_records
from controller.request_batch import BrokerRequest, BrokerResponse, ControllerBrokerRequestBatch, ControllerChannel
from events.journal import Journal
from events.log import LogWriter
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, ELECTION_NONE, ELECTION_OFFLINE, UPDATE_OFFLINE_REPLICA,
    LeaderAndIsrPartition, LeaderAndIsrUpdated, LogDirFailed, PartitionTransition, ReplicaTransition, RequestSent,
    StopReplicaPartition, TopicDeletionCompleted, UpdateMetadataPartition,
)
from statemachines.cluster_view import fold
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.states import (
    NEW_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE,
)

SESSION_TIMEOUT_MS = 18_000
NOTIFICATIONS = "/log_dir_event_notification"
# Leaders 0, 1, 2, 0, 1, 2; each broker hosts every partition, the even ones in /d1, the odd ones in /d2.
ASSIGNMENT = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2], [1, 2, 0], [2, 0, 1]]
D1 = [("t", 0), ("t", 2), ("t", 4)]
D2 = [("t", 1), ("t", 3), ("t", 5)]


def make_cluster(log_dirs: str = "/d1,/d2", **configs) -> Cluster:
    cluster = Cluster(seed=7, configs={"log.dirs": log_dirs, **configs})
    cluster.start_brokers([0, 1, 2])
    cluster.create_topic("t", assignment=ASSIGNMENT)
    return cluster


def since(cluster: Cluster, cls, offset: int) -> list:
    return [r for r in cluster.records if type(r) is cls and r.offset > offset]


def mark(cluster: Cluster) -> int:
    return cluster.records[-1].offset


def leader_isr(cluster: Cluster, tp: tuple) -> tuple:
    lai = cluster.controller.context.partition_leadership_info(tp).leader_and_isr
    return lai.leader, tuple(lai.isr)


def replica_states(cluster: Cluster, broker: int) -> dict:
    ctx = cluster.controller.context
    return {tp: ctx.replica_state((*tp, broker)) for tp in sorted(ctx.all_partitions())}


def assert_view_matches_controller(cluster: Cluster) -> None:
    """The fold of the records says what the active controller's context holds."""
    ctx = cluster.controller.context
    view = fold(cluster.records)
    for tp in ctx.all_partitions():
        pv = view.topics[tp[0]][tp[1]]
        lai = ctx.partition_leadership_info(tp).leader_and_isr
        assert (pv.state, pv.leader, pv.leader_epoch, tuple(pv.isr)) == (
            ctx.partition_state(tp), lai.leader, lai.leader_epoch, tuple(lai.isr)), tp
        assert view.partition_replica_states(*tp) == {r: ctx.replica_state((*tp, r)) for r in pv.replicas}, tp


# --- placement ------------------------------------------------------------------------------------------

def test_log_dirs_default_to_log_dir_and_replicas_go_to_the_dir_with_fewest_partitions():
    assert Cluster(seed=1).config.log_dirs == ("/tmp/kafka-logs",)   # Kafka's log.dir default
    cluster = make_cluster(log_dirs="/d1, /d2")
    for b in (0, 1, 2):
        server = cluster.brokers[b]
        assert server.log_dirs == ("/d1", "/d2")
        assert server.replica_dirs == {**dict.fromkeys(D1, "/d1"), **dict.fromkeys(D2, "/d2")}
    # /d1 and /d2 hold 3 each: the tie goes to /d1 (log.dirs order); then /d2 has fewer.
    cluster.create_topic("u", assignment=[[0], [0]])
    assert [cluster.brokers[0].replica_dirs[("u", p)] for p in (0, 1)] == ["/d1", "/d2"]
    # A topic's deletion deletes its logs: the counts go down again.
    cluster.delete_topic("u")
    assert ("u", 0) not in cluster.brokers[0].replica_dirs
    assert cluster.brokers[0].dir_counts == {"/d1": 3, "/d2": 3}


# --- one directory fails ---------------------------------------------------------------------------------

def test_failing_one_dir_moves_leadership_off_its_replicas_and_leaves_the_others_online():
    cluster = make_cluster()
    before = mark(cluster)
    cluster.fail_log_dir(1, "/d1", at=1_000)
    ctx = cluster.controller.context

    [failed] = since(cluster, LogDirFailed, before)
    assert (failed.broker_id, failed.log_dir, failed.timestamp_ms) == (1, "/d1", 1_000)
    assert cluster.brokers[1].alive
    assert cluster.brokers[1].offline_partitions == set(D1)
    assert cluster.admin.get_children(NOTIFICATIONS) == []              # processed, then deleted

    # onBrokerLogDirFailure: every replica of broker 1 goes OnlineReplica -> OnlineReplica, one LeaderAndIsr.
    first = since(cluster, ReplicaTransition, before)[:6]
    assert [(r.partition, r.replica, r.from_state, r.to_state) for r in first] == [
        (p, 1, ONLINE_REPLICA, ONLINE_REPLICA) for p in range(6)]
    [probe] = [r for r in since(cluster, RequestSent, before) if r.api == API_LEADER_AND_ISR][:1]
    assert (probe.broker_id, probe.partition_count) == (1, 6)

    # The KAFKA_STORAGE_ERROR answers: the replicas in /d1 are on an offline dir.
    assert ctx.replicas_on_offline_dirs == {1: set(D1)}
    assert [tp for tp in sorted(ctx.all_partitions()) if not ctx.is_replica_online(1, tp)] == D1
    states = replica_states(cluster, 1)
    assert {tp for tp, s in states.items() if s == OFFLINE_REPLICA} == set(D1)
    assert {tp for tp, s in states.items() if s == ONLINE_REPLICA} == set(D2)

    # t-4 was led by broker 1 from /d1: offline election; t-0 and t-2 drop broker 1 from their ISRs.
    elections = [(r.partition, r.from_state, r.to_state, r.leader, r.election)
                 for r in since(cluster, PartitionTransition, before)]
    assert elections == [(4, ONLINE_PARTITION, OFFLINE_PARTITION, 1, ELECTION_NONE),
                         (4, OFFLINE_PARTITION, ONLINE_PARTITION, 2, ELECTION_OFFLINE)]
    shrinks = [(r.partition, r.isr, r.replica) for r in since(cluster, LeaderAndIsrUpdated, before)
               if r.reason == UPDATE_OFFLINE_REPLICA]
    assert shrinks == [(0, (0, 2), 1), (2, (2, 0), 1)]
    assert [leader_isr(cluster, tp) for tp in sorted(ctx.all_partitions())] == [
        (0, (0, 2)), (1, (1, 2, 0)), (2, (2, 0)), (0, (0, 1, 2)), (2, (2, 0)), (2, (2, 0, 1))]
    # Broker 1 still leads t-1 from /d2, and the metadata names it offline only where it is.
    offline = {(r.topic, r.partition): r.offline_replicas for r in since(cluster, UpdateMetadataPartition, before)}
    assert offline[("t", 4)] == (1,) and offline[("t", 0)] == (1,)
    assert all(offline[tp] == () for tp in D2 if tp in offline)
    # OfflineReplica sends StopReplica (delete=false); the broker answers KAFKA_STORAGE_ERROR (ignored).
    assert {(r.broker_id, r.partition, r.delete_partition) for r in since(cluster, StopReplicaPartition, before)} == {
        (1, 0, False), (1, 2, False), (1, 4, False)}
    assert_view_matches_controller(cluster)


def test_the_broker_answers_kafka_storage_error_for_replicas_on_an_offline_dir():
    cluster = make_cluster()
    cluster.fail_log_dir(1, "/d1")
    server = cluster.brokers[1]
    assert set(server.leader_and_isr) == set(D2)        # it neither leads nor follows the offline ones
    recs = [LeaderAndIsrPartition.make(broker_id=1, topic="t", partition=p, state_controller_epoch=1, leader=0,
                                       leader_epoch=99 if p < 2 else 0, isr=(0,), partition_epoch=9,
                                       replicas=(0, 1, 2), adding_replicas=(), removing_replicas=(), is_new=False,
                                       recovery_state=0)
            for p in range(4)]
    request = BrokerRequest(API_LEADER_AND_ISR, 1, server.broker_epoch, 0, 1, 99, tuple(recs), ())
    assert server.answer(request) == (NONE, {
        ("t", 0): KAFKA_STORAGE_ERROR, ("t", 1): NONE, ("t", 2): KAFKA_STORAGE_ERROR,
        ("t", 3): STALE_CONTROLLER_EPOCH})   # not a newer leader epoch: ignored, as Kafka answers
    # LogManager.getOrCreateLog: a log the broker does not have is created while a dir is offline only
    # for a new replica (isNew); otherwise KAFKA_STORAGE_ERROR, and the partition is offline from then on.
    new, old = (rec._replace(topic="x", is_new=is_new) for rec, is_new in ((recs[0], True), (recs[1], False)))
    request = BrokerRequest(API_LEADER_AND_ISR, 1, server.broker_epoch, 0, 1, 100, (new, old), ())
    assert server.answer(request) == (NONE, {("x", 0): NONE, ("x", 1): KAFKA_STORAGE_ERROR})
    assert server.replica_dirs[("x", 0)] == "/d2" and ("x", 1) in server.offline_partitions
    # StopReplica: not stopped, not deleted.
    stop = StopReplicaPartition.make(broker_id=1, topic="t", partition=0, leader_epoch=0, delete_partition=True)
    request = BrokerRequest(API_STOP_REPLICA, 1, server.broker_epoch, 0, 1, 101, (stop,), ())
    assert server.answer(request) == (NONE, {("t", 0): KAFKA_STORAGE_ERROR})


def test_failing_the_last_dir_halts_the_broker_then_its_session_expires():
    cluster = make_cluster()
    cluster.fail_log_dir(1, "/d1", at=1_000)
    before = mark(cluster)
    cluster.fail_log_dir(1, at=2_000)                   # the first dir still online: /d2
    assert since(cluster, LogDirFailed, before)[0].log_dir == "/d2"
    assert not cluster.brokers[1].alive                 # LogManager: Exit.halt(1), no notification
    assert cluster.admin.get_children(NOTIFICATIONS) == []
    assert since(cluster, ReplicaTransition, before) == []      # nothing until the session expires
    assert "1" in cluster.admin.get_children("/brokers/ids")

    cluster.advance_to(2_000 + SESSION_TIMEOUT_MS)
    ctx = cluster.controller.context
    assert ctx.live_broker_ids == {0, 2}
    assert 1 not in ctx.replicas_on_offline_dirs         # onBrokerFailure forgets them
    assert set(replica_states(cluster, 1).values()) == {OFFLINE_REPLICA}
    assert [leader_isr(cluster, tp) for tp in sorted(ctx.all_partitions())] == [
        (0, (0, 2)), (2, (2, 0)), (2, (2, 0)), (0, (0, 2)), (2, (2, 0)), (2, (2, 0))]
    assert_view_matches_controller(cluster)


def test_restart_brings_the_replicas_back():
    cluster = make_cluster()
    cluster.fail_log_dir(1, "/d1", at=1_000)
    cluster.kill_broker(1, at=2_000)
    cluster.advance_to(2_000 + SESSION_TIMEOUT_MS)
    before = mark(cluster)
    cluster.start_broker(1, at=30_000)                   # the disk was replaced
    ctx = cluster.controller.context
    assert 1 not in ctx.replicas_on_offline_dirs
    assert set(replica_states(cluster, 1).values()) == {ONLINE_REPLICA}
    server = cluster.brokers[1]
    assert server.offline_dirs == set() and server.offline_partitions == set()
    assert sorted(server.replica_dirs.items()) == [(("t", p), "/d1" if p % 2 == 0 else "/d2") for p in range(6)]
    assert [r.to_state for r in since(cluster, ReplicaTransition, before) if r.replica == 1] == [ONLINE_REPLICA] * 6

    cluster.catch_up_followers(at=31_000)
    cluster.elect_leaders("preferred", at=32_000)
    assert [leader_isr(cluster, tp)[0] for tp in sorted(ctx.all_partitions())] == [0, 1, 2, 0, 1, 2]
    assert all(1 in leader_isr(cluster, tp)[1] for tp in ctx.all_partitions())
    assert_view_matches_controller(cluster)


def test_a_bounced_broker_is_asked_again_and_answers_again():
    """A session expiry of a running broker is a bounce (new broker epoch): onBrokerFailure and onBrokerStartup
    forget its offline replicas, the startup's LeaderAndIsr finds them offline again (same process)."""
    cluster = make_cluster()
    cluster.fail_log_dir(2, "/d2", at=1_000)
    ctx = cluster.controller.context
    assert ctx.replicas_on_offline_dirs == {2: set(D2)}
    before = mark(cluster)
    cluster.expire_session(2, at=2_000)
    assert ctx.replicas_on_offline_dirs == {2: set(D2)}
    assert [(r.partition, r.from_state, r.to_state) for r in since(cluster, ReplicaTransition, before)
            if r.replica == 2 and r.partition % 2] == [
        (1, OFFLINE_REPLICA, OFFLINE_REPLICA), (3, OFFLINE_REPLICA, OFFLINE_REPLICA),
        (5, OFFLINE_REPLICA, OFFLINE_REPLICA),                         # onBrokerFailure
        (1, OFFLINE_REPLICA, ONLINE_REPLICA), (3, OFFLINE_REPLICA, ONLINE_REPLICA),
        (5, OFFLINE_REPLICA, ONLINE_REPLICA),                          # onBrokerStartup
        (1, ONLINE_REPLICA, OFFLINE_REPLICA), (3, ONLINE_REPLICA, OFFLINE_REPLICA),
        (5, ONLINE_REPLICA, OFFLINE_REPLICA)]                          # KAFKA_STORAGE_ERROR again
    assert_view_matches_controller(cluster)


# --- failover ---------------------------------------------------------------------------------------------

def test_pending_notifications_are_deleted_at_failover_and_the_new_controller_finds_the_offline_replicas():
    cluster = make_cluster()
    cluster.kill_broker(0, at=1_000)                      # the controller dies; /controller stays for 18 s
    before = mark(cluster)
    cluster.fail_log_dir(2, "/d1", at=2_000)
    # Nobody handles it: broker 0's controller is dead and still holds /controller.
    [name] = cluster.admin.get_children(NOTIFICATIONS)
    assert name == "log_dir_event_0000000000"
    data, _ = cluster.admin.get_data_and_stat(f"{NOTIFICATIONS}/{name}")
    assert json.loads(data) == {"version": 1, "broker": 2, "event": 1}   # LogDirEventNotificationSequenceZNode
    assert since(cluster, ReplicaTransition, before) == []

    cluster.advance_to(1_000 + SESSION_TIMEOUT_MS)
    controller = cluster.controller
    assert controller.broker_id == 1 and controller.epoch == 2
    assert cluster.admin.get_children(NOTIFICATIONS) == []              # deleted at failover, unread
    ctx = controller.context
    # replicaStateMachine.startup() sent LeaderAndIsr to broker 2 for its replicas; it answered
    # KAFKA_STORAGE_ERROR for the ones in /d1, which went OfflineReplica.
    assert ctx.replicas_on_offline_dirs == {2: set(D1)}
    assert {tp for tp, s in replica_states(cluster, 2).items() if s == OFFLINE_REPLICA} == set(D1)
    assert {tp for tp, s in replica_states(cluster, 2).items() if s == ONLINE_REPLICA} == set(D2)
    # Broker 0 is gone too: t-0 and t-3 moved to 1; so did t-2, led by 2 from /d1.
    assert [leader_isr(cluster, tp) for tp in sorted(ctx.all_partitions())] == [
        (1, (1,)), (1, (1, 2)), (1, (1,)), (1, (1, 2)), (1, (1,)), (2, (2, 1))]
    assert_view_matches_controller(cluster)


def test_the_log_dir_notification_handler_moves_with_the_controller():
    cluster = make_cluster()
    handlers = lambda b: cluster.brokers[b].zk.handler_paths()[1]   # noqa: E731
    assert NOTIFICATIONS in handlers(0) and NOTIFICATIONS not in handlers(1)
    cluster.stop_broker(0, at=1_000)
    assert cluster.controller.broker_id == 1 and NOTIFICATIONS in handlers(1)
    cluster.fail_log_dir(2, "/d2", at=2_000)
    assert cluster.controller.context.replicas_on_offline_dirs == {2: set(D2)}
    assert cluster.admin.get_children(NOTIFICATIONS) == []


# --- Kafka's quirks, kept -------------------------------------------------------------------------------------

def test_a_second_failed_dir_puts_the_first_dirs_replicas_back_in_online_replica():
    """onBrokerLogDirFailure moves every replica of the broker to OnlineReplica, those already known offline
    included; their KAFKA_STORAGE_ERROR answers are not news (not in newOfflineReplicas), so they stay
    OnlineReplica in the state machine while isReplicaOnline (replicasOnOfflineDirs) still says offline."""
    cluster = make_cluster(log_dirs="/d1,/d2,/d3")
    placed = cluster.brokers[1].replica_dirs
    d1 = sorted(tp for tp, d in placed.items() if d == "/d1")
    d2 = sorted(tp for tp, d in placed.items() if d == "/d2")
    cluster.fail_log_dir(1, "/d1", at=1_000)
    before = mark(cluster)
    cluster.fail_log_dir(1, "/d2", at=2_000)
    ctx = cluster.controller.context
    assert ctx.replicas_on_offline_dirs == {1: set(d1) | set(d2)}
    assert [(r.partition, r.from_state, r.to_state) for r in since(cluster, ReplicaTransition, before)
            if (r.topic, r.partition) in d1] == [(p, OFFLINE_REPLICA, ONLINE_REPLICA) for _, p in d1]
    states = replica_states(cluster, 1)
    assert {tp for tp, s in states.items() if s == OFFLINE_REPLICA} == set(d2)
    assert all(states[tp] == ONLINE_REPLICA and not ctx.is_replica_online(1, tp) for tp in d1)
    assert_view_matches_controller(cluster)


def test_an_adding_replica_in_new_replica_state_is_not_asked_about():
    """OnlineReplica from NewReplica sends no LeaderAndIsr: a reassignment's adding replica (NewReplica until the
    reassignment completes) in the failed dir moves to OnlineReplica unasked, so the controller never learns it
    is offline; it cannot catch up, and the reassignment stays in progress (Kafka 3.7 does the same)."""
    cluster = make_cluster()
    cluster.create_topic("r", assignment=[[0, 1]])
    assert cluster.reassign_partitions({("r", 0): [0, 1, 2]})[0] == NONE
    assert cluster.brokers[2].replica_dirs[("r", 0)] == "/d1"
    ctx = cluster.controller.context
    assert ctx.replica_state(("r", 0, 2)) == NEW_REPLICA
    before = mark(cluster)
    cluster.fail_log_dir(2, "/d1", at=1_000)
    assert ("r", 0) in cluster.brokers[2].offline_partitions
    assert ctx.replicas_on_offline_dirs == {2: set(D1)}                  # not r-0
    assert ctx.replica_state(("r", 0, 2)) == ONLINE_REPLICA
    probed = {(r.topic, r.partition) for r in since(cluster, LeaderAndIsrPartition, before) if r.broker_id == 2}
    assert ("r", 0) not in probed and set(D1) | set(D2) <= probed
    cluster.catch_up_followers(at=2_000)
    assert cluster.list_reassignments()[("r", 0)].adding_replicas == (2,)


def test_topic_deletion_stalls_on_a_replica_in_an_offline_dir_until_the_broker_restarts():
    cluster = make_cluster()
    cluster.create_topic("gone", assignment=[[0, 1]])     # broker 1 places it in /d1 (3 vs 3: first dir)
    assert cluster.brokers[1].replica_dirs[("gone", 0)] == "/d1"
    cluster.fail_log_dir(1, "/d1", at=1_000)
    before = mark(cluster)
    cluster.delete_topic("gone", at=2_000)
    ctx = cluster.controller.context
    # The replica is not online (replicasOnOfflineDirs): onPartitionDeletion moves it straight to
    # ReplicaDeletionIneligible and halts the deletion ("offline replicas"); the retry after broker 0's
    # replica is deleted puts it back to OfflineReplica (StopReplica delete=false: KAFKA_STORAGE_ERROR).
    assert [(r.from_state, r.to_state) for r in since(cluster, ReplicaTransition, before)
            if (r.topic, r.replica) == ("gone", 1)] == [
        (OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE), (REPLICA_DELETION_INELIGIBLE, OFFLINE_REPLICA)]
    assert ("gone", 0, 1, True) not in {(r.topic, r.partition, r.broker_id, r.delete_partition)
                                        for r in since(cluster, StopReplicaPartition, before)}
    assert "gone" in ctx.topics_ineligible_for_deletion
    assert "gone" in ctx.topics_to_be_deleted and since(cluster, TopicDeletionCompleted, before) == []
    cluster.stop_broker(1, at=3_000)
    cluster.start_broker(1, at=4_000)                      # resumeDeletionForTopics on startup
    assert "gone" not in cluster.controller.context.all_topics
    assert [r.topic for r in since(cluster, TopicDeletionCompleted, before)] == ["gone"]


def test_leader_and_isr_response_handling():
    """processLeaderAndIsrResponseReceived, driven directly: a request-level error is only logged; NONE takes
    a replica out of replicasOnOfflineDirs, KAFKA_STORAGE_ERROR puts it in; topics the controller no longer
    knows are dropped (v5+ responses carry topic ids)."""
    cluster = make_cluster()
    controller = cluster.controller
    ctx = controller.context

    def respond(error, errors):
        controller.event_manager.put(LeaderAndIsrResponseReceived(2, error, errors))
        cluster.settle()

    respond(STALE_CONTROLLER_EPOCH, {("t", 0): KAFKA_STORAGE_ERROR})
    assert ctx.replicas_on_offline_dirs == {}
    respond(NONE, {("nope", 0): KAFKA_STORAGE_ERROR})
    assert ctx.replicas_on_offline_dirs == {}
    before = mark(cluster)
    respond(NONE, {("t", 0): KAFKA_STORAGE_ERROR, ("t", 1): NONE})
    assert ctx.replicas_on_offline_dirs == {2: {("t", 0)}}
    assert [(r.partition, r.to_state) for r in since(cluster, ReplicaTransition, before)] == [(0, OFFLINE_REPLICA)]
    before = mark(cluster)
    respond(NONE, {("t", 0): KAFKA_STORAGE_ERROR, ("t", 2): KAFKA_STORAGE_ERROR})   # only t-2 is news
    assert ctx.replicas_on_offline_dirs == {2: {("t", 0), ("t", 2)}}
    assert [(r.partition, r.to_state) for r in since(cluster, ReplicaTransition, before)] == [(2, OFFLINE_REPLICA)]
    assert leader_isr(cluster, ("t", 2))[0] == 0           # it led t-2: offline election
    respond(NONE, {("t", 0): NONE, ("t", 2): STALE_CONTROLLER_EPOCH})
    assert ctx.replicas_on_offline_dirs == {2: {("t", 2)}}
    assert ctx.is_replica_online(2, ("t", 0)) and not ctx.is_replica_online(2, ("t", 2))


def test_every_leader_and_isr_response_reaches_the_callback():
    """ControllerChannelManagerTest.testLeaderAndIsrRequestSent (its response half): the batch sends LeaderAndIsr
    with a callback that hands the response, per broker, to the controller (LeaderAndIsrResponseReceived)."""
    ctx = ControllerContext()
    ctx.epoch = 1
    ctx.add_live_brokers({1: 11, 2: 22, 3: 33})
    ctx.add_topic("foo", [(1, 2, 3)])
    ctx.add_topic("bar", [(1, 2, 3)])
    answered = []

    def broker(request):
        return BrokerResponse(request.api, request.broker_id, request.correlation_id, NONE,
                              {(p.topic, p.partition): NONE for p in request.partitions})

    batch = ControllerBrokerRequestBatch(0, ctx, Journal(), ControllerChannel(broker),
                                         on_leader_and_isr_response=lambda *a: answered.append(a))
    batch.new_batch()
    for tp, leader in ((("foo", 0), 2), (("bar", 0), 3)):
        info = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, (1, 2, 3)), 1)
        ctx.put_partition_leadership_info(tp, info)
        batch.add_leader_and_isr_request_for_brokers([2], tp, info, ReplicaAssignment((1, 2, 3)), False)
    batch.send_requests_to_brokers(1)
    assert answered == [(2, NONE, {("foo", 0): NONE, ("bar", 0): NONE})]   # UpdateMetadata: no callback


def test_a_log_dir_failure_that_cannot_happen_is_refused_and_not_recorded():
    cluster = make_cluster()
    count = len(cluster.records)
    with pytest.raises(ClusterError, match="not a log directory of broker 1"):
        cluster.fail_log_dir(1, "/d3")
    with pytest.raises(ClusterError, match="broker 7 is not running"):
        cluster.fail_log_dir(7)
    assert len(cluster.records) == count
    cluster.fail_log_dir(1, "/d1")
    count = len(cluster.records)
    with pytest.raises(ClusterError, match="already offline"):
        cluster.fail_log_dir(1, "/d1")
    with pytest.raises(ClusterError, match="read-only|Cannot update"):
        cluster.set_config("broker", "", "log.dirs", "/d1,/d2,/d3")
    assert len(cluster.records) == count


# --- replay and snapshots ---------------------------------------------------------------------------------------

def run_with_log_dir_failures(cluster: Cluster) -> None:
    cluster.fail_log_dir(1, "/d1", at=1_000)
    cluster.kill_broker(0, at=2_000)
    cluster.fail_log_dir(2, "/d2", at=3_000)             # pending until the failover
    cluster.advance_to(2_000 + SESSION_TIMEOUT_MS)
    cluster.create_topic("later", assignment=[[1, 2], [2, 1]], at=21_000)
    cluster.fail_log_dir(1, at=22_000)                    # its last dir: halts
    cluster.advance_to(22_000 + SESSION_TIMEOUT_MS)
    cluster.start_broker(0, at=45_000)
    cluster.start_broker(1, at=46_000)
    cluster.catch_up_followers(at=47_000)
    cluster.checkpoint()


def test_a_run_with_log_dir_failures_replays_byte_for_byte():
    cluster = make_cluster()
    run_with_log_dir_failures(cluster)
    assert [(r.broker_id, r.log_dir) for r in cluster.records if type(r) is LogDirFailed] == [
        (1, "/d1"), (2, "/d2"), (1, "/d2")]
    assert cluster.admin.get_children(NOTIFICATIONS) == []
    result = replay_records(cluster.records)
    assert result.ok, result.divergence
    assert result.digest == cluster.digest()
    assert_view_matches_controller(cluster)


def test_a_run_continued_after_a_snapshot_replays_from_the_snapshot(tmp_path):
    path = str(tmp_path / "log")
    with LogWriter(path) as writer:
        cluster = Cluster(seed=7, configs={"log.dirs": "/d1,/d2"}, sink=writer.append)
        cluster.start_brokers([0, 1, 2])
        cluster.create_topic("t", assignment=ASSIGNMENT)
        cluster.fail_log_dir(1, "/d1", at=1_000)
        cluster.create_topic("u", assignment=[[2], [2], [2]], at=1_500)   # unbalances broker 2's dirs
        cluster.snapshot()
        # After the snapshot: placement, the failures and the restart depend on the state it saved.
        cluster.create_topic("v", assignment=[[1, 2], [2, 1]], at=2_000)
        cluster.fail_log_dir(1, at=3_000)
        cluster.fail_log_dir(2, "/d2", at=4_000)
        cluster.advance_to(3_000 + SESSION_TIMEOUT_MS)
        cluster.start_broker(1, at=25_000)
        cluster.checkpoint()
    assert replay_log(path).ok
    result = replay_log(path, from_snapshot=True)
    assert result.ok, result.divergence
    assert result.inputs == 5


def test_restore_cluster_round_trips_the_log_dir_state():
    cluster = make_cluster()
    cluster.fail_log_dir(1, "/d1", at=1_000)
    cluster.create_topic("u", assignment=[[2], [2], [2]], at=1_500)
    restored = restore_cluster(cluster_state(cluster))
    for b in (0, 1, 2):
        a, r = cluster.brokers[b], restored.brokers[b]
        assert (r.log_dirs, r.offline_dirs, r.replica_dirs, r.dir_counts, r.offline_partitions) == (
            a.log_dirs, a.offline_dirs, a.replica_dirs, a.dir_counts, a.offline_partitions)
    assert restored.digest() == cluster.digest()


# --- ported from Kafka -----------------------------------------------------------------------------------------

def test_produce_after_log_dir_failure_on_leader():
    """LogDirFailureTest.testProduceAfterLogDirFailureOnLeader (ZooKeeper): two brokers with three log dirs,
    a 12-partition topic of replication factor 2; the log dir of partition 0 fails on its leader. A new
    leader takes over, no LogDirEventNotification znode remains, and the controller has the replica on
    the original leader in OfflineReplica."""
    cluster = Cluster(seed=3, configs={"log.dirs": "/k0,/k1,/k2"})
    cluster.start_brokers([0, 1])
    cluster.create_topic("topic", 12, 2)
    ctx = cluster.controller.context
    original = ctx.partition_leader(("topic", 0))
    failed = cluster.brokers[original].replica_dirs[("topic", 0)]
    cluster.fail_log_dir(original, failed, at=1_000)
    assert ctx.partition_leader(("topic", 0)) not in (original, -1)
    assert cluster.admin.get_children(NOTIFICATIONS) == []
    assert ctx.replica_state(("topic", 0, original)) == OFFLINE_REPLICA
    # The other replicas in that dir went offline too; the rest of the broker's replicas did not.
    in_dir = {tp for tp, d in cluster.brokers[original].replica_dirs.items() if d == failed}
    assert not in_dir and ctx.replicas_on_offline_dirs == {original: cluster.brokers[original].offline_partitions}
    assert len(cluster.brokers[original].offline_partitions) == 4      # its 12 replicas over 3 dirs


def test_partition_reassignment_to_broker_with_offline_log_dir():
    """ControllerIntegrationTest.testPartitionReassignmentToBrokerWithOfflineLogDir: the target broker of a
    reassignment has an offline log dir; its new replica is created in a live one (the LeaderAndIsr that
    starts it is_new), so the reassignment completes, at leader epoch InitialLeaderEpoch + 3."""
    cluster = Cluster(seed=0, configs={"log.dirs": "/k0,/k1"})
    cluster.start_brokers([0, 1])
    controller_id, other = 0, 1
    cluster.create_topic("filler", assignment=[[other]])
    cluster.fail_log_dir(other, cluster.brokers[other].replica_dirs[("filler", 0)])
    assert cluster.brokers[other].offline_dirs == {"/k0"}
    tp = ("t", 0)
    cluster.create_topic("t", assignment=[[controller_id]])
    cluster.reassign_partitions({tp: [other]}, via="zk")
    cluster.catch_up_followers()
    ctx = cluster.controller.context
    info = ctx.partition_leadership_info(tp)
    assert (info.leader_and_isr.leader, info.leader_and_isr.leader_epoch, info.controller_epoch) == (other, 3, 1)
    assert cluster.admin.get_full_replica_assignment_for_topics(["t"])[tp].replicas == (other,)
    assert not cluster.admin.reassign_partitions_in_progress()
    assert cluster.brokers[other].replica_dirs[tp] == "/k1"


def test_zk_broker_with_old_inter_broker_protocol_should_halt_on_log_dir_failure():
    """LogDirFailureTest.testZkBrokerWithOldInterBrokerProtocolShouldHaltOnLogDirFailure: before IBP 1.0 a broker
    halts on any log dir failure (ReplicaManager's LogDirFailureHandler), even with log dirs left."""
    cluster = Cluster(seed=1, configs={"log.dirs": "/k0,/k1,/k2", "inter.broker.protocol.version": "0.11.0"})
    cluster.start_brokers([0, 1])
    cluster.fail_log_dir(1, "/k0", at=1_000)
    assert not cluster.brokers[1].alive
    assert cluster.admin.get_children(NOTIFICATIONS) == []
    cluster.advance_to(1_000 + SESSION_TIMEOUT_MS)
    assert cluster.controller.context.live_broker_ids == {0}
