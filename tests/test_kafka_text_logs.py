"""Kafka's own state-change.log / controller.log (0.8 to 4.x) read into audit rows.

Three parts: small literal lines per template and era; a round trip through our own renderer
(statemachines.kafka_log_format, Kafka 3.7 format) at TRACE and INFO; and the 61 real files of
../shared/real-logs, each read without error, with the facts INDEX.md says they show.
"""
from __future__ import annotations

import functools
import gzip
import itertools
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from audit.kafka_line_patterns import parse_leadership, parse_tp, split_request_line
from audit.kafka_text_logs import (
    ERA_0_8, ERA_1_0, ERA_2_6, ERA_KRAFT, KafkaLogError, KafkaLogReader, open_kafka_log, read_kafka_lines,
    read_kafka_log, run_id_for,
)
from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_CREATED, TOPIC_DELETION_COMPLETED, TOPIC_DELETION_REQUESTED, TRANSITION_FAILED,
)
from statemachines.states import PartitionState as P
from statemachines.states import ReplicaState as R

NEW, ONLINE, OFFLINE, GONE = P.NewPartition.byte, P.OnlinePartition.byte, P.OfflinePartition.byte, \
    P.NonExistentPartition.byte
R_NEW, R_ONLINE, R_OFFLINE = R.NewReplica.byte, R.OnlineReplica.byte, R.OfflineReplica.byte
R_DEL_STARTED, R_DEL_OK, R_DEL_INELIGIBLE, R_GONE = (R.ReplicaDeletionStarted.byte, R.ReplicaDeletionSuccessful.byte,
                                                     R.ReplicaDeletionIneligible.byte, R.NonExistentReplica.byte)
TS = "[2024-04-29 12:13:51,142]"
SELECTOR = "kafka.controller.OfflinePartitionLeaderSelector"


def read(*lines: str):
    return read_kafka_lines(list(lines), source="t.log")


def logged(reading) -> list:
    """The rows read from lines, without the ``topic_created`` rows the reader infers (position 0)."""
    return [x for x in reading.rows if x.position]


def trace(message: str, logger: str = "state.change.logger", level: str = "TRACE") -> str:
    return f"{TS} {level} {message} ({logger})"


def of_kind(reading, kind: str) -> list:
    return [r for r in reading.rows if r.kind == kind]


# --- identifiers and printed leadership ------------------------------------------------------------
@pytest.mark.parametrize("token, expected", [
    ("t-0", ("t", 0)), ("my-topic-2024-17", ("my-topic-2024", 17)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("[t,0]", ("t", 0)), ("[my-topic-2024,3]", ("my-topic-2024", 3)), ("[t-1,12]", ("t-1", 12)),
])
def test_partitions_print_as_bracket_pairs_or_topic_dash_partition(token, expected):
    assert parse_tp(token) == expected


@pytest.mark.parametrize("text, expected", [
    ("(Leader:1,ISR:1,2,LeaderEpoch:5,ControllerEpoch:3)", (1, 5, [1, 2])),                        # 0.8–3.1
    ("(Leader:-1,ISR:,LeaderEpoch:9,ControllerEpoch:3)", (-1, 9, [])),
    ("(Leader:1,ISR:1,2,LeaderRecoveryState:RECOVERED,LeaderEpoch:5,ZkVersion:7,ControllerEpoch:3)", (1, 5, [1, 2])),
    ("LeaderAndIsr(leader=1, leaderEpoch=5, isr=List(1, 2), zkVersion=7)", (1, 5, [1, 2])),       # 1.1–3.1
    ("LeaderAndIsr(leader=1, leaderEpoch=5, isr=List(1, 2), leaderRecoveryState=RECOVERED, zkVersion=7)",
     (1, 5, [1, 2])),                                                                               # 3.2
    ("LeaderAndIsr(leader=1, leaderEpoch=5, isr=List(1, 2), leaderRecoveryState=RECOVERED, partitionEpoch=7)",
     (1, 5, [1, 2])),                                                                               # 3.3–3.4
    ("LeaderAndIsr(leader=2, leaderEpoch=6, isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1), "
     "BrokerState(brokerId=3, brokerEpoch=41)), leaderRecoveryState=RECOVERING, partitionEpoch=9)",
     (2, 6, [2, 3])),                                                                               # 3.5+
    ('{"leader":-1,"leader_epoch":2,"isr":[1,2]}', (-1, 2, [1, 2])),                               # JSON 0.8–1.0
    ("PartitionState(controllerEpoch=1, leader=0, leaderEpoch=1, isr=0,2, zkVersion=1, replicas=1,0,2, isNew=false)",
     (0, 1, [0, 2])),                                                                               # 1.0–2.3 requests
    ("UpdateMetadataPartitionState(topicName='t-1', partitionIndex=0, controllerEpoch=3, leader=1, leaderEpoch=5, "
     "isr=[1, 2], zkVersion=7, replicas=[1, 2], offlineReplicas=[])", (1, 5, [1, 2])),               # 2.4+ requests
])
def test_every_printed_form_of_a_partitions_leadership(text, expected):
    assert tuple(parse_leadership(text)) == expected


def test_request_lines_split_into_state_and_partition():
    assert split_request_line(
        "sending become-leader LeaderAndIsr request (Leader:0,ISR:0,LeaderEpoch:0,ControllerEpoch:2) with "
        "correlationId 9 to broker 0 for partition [test,0]") == ("(Leader:0,ISR:0,LeaderEpoch:0,ControllerEpoch:2)",
                                                                   "[test,0]")
    assert split_request_line("Sending UpdateMetadata request to brokers HashSet(0, 1) for 27 partitions") is None


# --- 0.8 ---------------------------------------------------------------------------------------------
def test_kafka_0_8_0_replica_lines_without_from_state_and_short_partition_state_names():
    r = read(trace("Controller 0 epoch 2 changed partition [test,0] state from NotExists to New with assigned "
                   "replicas 0,1"),
             trace("Controller 0 epoch 2 changed state of replica 0 for partition [test,0] to NewReplica"),
             # 0.8.0 printed the state after the change as the old one: the from-state is not known.
             trace("Controller 0 epoch 2 changed partition [test,0] from OnlinePartition to OnlinePartition with "
                   "leader 0"),
             trace("Controller 0 epoch 2 changed partition [test,0] state from Online to Offline"))
    assert [(x.kind, x.from_state, x.to_state, x.replicas, x.leader) for x in logged(r)] == [
        (PARTITION_TRANSITION, GONE, NEW, [0, 1], None),
        (REPLICA_TRANSITION, None, R_NEW, None, None),
        (PARTITION_TRANSITION, None, ONLINE, None, 0),
        (PARTITION_TRANSITION, ONLINE, OFFLINE, None, None)]
    assert {(x.controller_id, x.controller_epoch) for x in logged(r)} == {(0, 2)}
    assert r.era == ERA_0_8 and "0.8.0" in r.version_hints
    assert [x.position for x in logged(r)] == [1, 2, 3, 4] and [x.seq for x in logged(r)] == [1, 2, 3, 4]


def test_kafka_0_8_replica_failure_without_from_state():
    r = read(trace("Controller 0 epoch 3 initiated state change of replica 1 for partition [t,0] to OfflineReplica "
                   "failed", level="ERROR"),
             "kafka.common.StateChangeFailedException: Leader and isr path written by another controller")
    assert [(x.kind, x.entity, x.replica, x.from_state, x.to_state, x.error) for x in logged(r)] == [
        (TRANSITION_FAILED, ENTITY_REPLICA, 1, None, R_OFFLINE, "StateChangeFailedException")]


# --- 0.10 / 0.11 ----------------------------------------------------------------------------------------
def test_kafka_0_10_failed_election_with_its_stack_trace():
    r = read(trace("Controller 0 epoch 26 started leader election for partition [test,0]"),
             trace("Controller 0 epoch 26 initiated state change for partition [test,0] from OfflinePartition to "
                   "OnlinePartition failed", level="ERROR"),
             "kafka.common.NoReplicaOnlineException: No replica for partition [test,0] is alive. Live brokers are: "
             "[Set()], Assigned replicas are: [List(0)]",
             "\tat kafka.controller.OfflinePartitionLeaderSelector.selectLeader(PartitionLeaderSelector.scala:75)",
             "\tat kafka.utils.ZkUtils$.readDataMaybeNull(ZkUtils.scala:100)",
             trace("Controller 0 epoch 26 changed state of replica 0 for partition [test,0] from "
                   "ReplicaDeletionIneligible to OnlineReplica"))
    failed, replica = r.rows
    assert (failed.kind, failed.entity, failed.topic, failed.partition, failed.from_state, failed.to_state,
            failed.error, failed.position) == (TRANSITION_FAILED, ENTITY_PARTITION, "test", 0, OFFLINE, ONLINE,
                                               "NoReplicaOnlineException", 2)
    assert (replica.from_state, replica.to_state, replica.position) == (R_DEL_INELIGIBLE, R_ONLINE, 6)
    assert (r.counts.rows, r.counts.other, r.counts.continuation, r.counts.not_understood) == (2, 1, 3, 0)


def test_kafka_0_10_election_is_unclean_when_the_leader_was_not_in_the_last_known_isr():
    r = read(trace("Controller 1 epoch 58 sending become-follower LeaderAndIsr request (Leader:1010,ISR:1010,"
                   "LeaderEpoch:0,ControllerEpoch:56) to broker 1 for partition [dns_kafka_topic,1]"),
             trace("Controller 1 epoch 58 sending UpdateMetadata request (Leader:1,ISR:1,2,3,LeaderEpoch:0,"
                   "ControllerEpoch:1) to brokers Set(1, 2, 3) for partition [test-2,1]"),
             trace("Controller 1 epoch 58 elected leader 1 for Offline partition [dns_kafka_topic,1]"),
             trace("Controller 1 epoch 58 changed partition [dns_kafka_topic,1] from OfflinePartition to "
                   "OnlinePartition with leader 1"),
             trace("Controller 1 epoch 58 changed partition [test-2,1] from OfflinePartition to OnlinePartition with "
                   "leader 3"),
             trace("Controller 1 epoch 58 changed partition [other,0] from OfflinePartition to OnlinePartition with "
                   "leader 3"))
    assert [(x.topic, x.leader, x.unclean) for x in logged(r)] == [
        ("dns_kafka_topic", 1, True), ("test-2", 3, False), ("other", 3, None)]   # other: ISR never seen


def test_kafka_0_10_controller_log_unclean_warning_and_selector_result():
    r = read(trace("[Controller 1]: Controller 1 incremented epoch to 58", "kafka.controller.KafkaController", "INFO"),
             trace("[OfflinePartitionLeaderSelector]: No broker in ISR is alive for [t,1]. Elect leader 1 from live "
                   "brokers 1. There's potential data loss.", SELECTOR, "WARN"),
             trace('[OfflinePartitionLeaderSelector]: Selected new leader and ISR {"leader":1,"leader_epoch":4,'
                   '"isr":[1]} for offline partition [t,1]', SELECTOR, "INFO"),
             trace('[OfflinePartitionLeaderSelector]: Selected new leader and ISR {"leader":2,"leader_epoch":3,'
                   '"isr":[2,3]} for offline partition [t,2]', SELECTOR, "INFO"))
    elected, unclean, clean = r.rows
    assert (elected.kind, elected.controller_id, elected.controller_epoch) == (CONTROLLER_ELECTED, 1, 58)
    assert (unclean.partition, unclean.from_state, unclean.to_state, unclean.leader, unclean.leader_epoch,
            unclean.isr, unclean.unclean, unclean.position) == (1, OFFLINE, ONLINE, 1, 4, [1], True, 2)
    assert (clean.partition, clean.leader, clean.isr, clean.unclean) == (2, 2, [2, 3], False)
    # The selector's lines carry no controller id: they are the active controller's.
    assert {(x.controller_id, x.controller_epoch) for x in logged(r)} == {(1, 58)}


def test_kafka_0_11_lines_and_broker_side_lines():
    r = read(trace("Controller 1 epoch 1 changed partition [__CruiseControlMetrics,0] state from NonExistentPartition "
                   "to NewPartition with assigned replicas 2,1,3"),
             trace("Controller 1 epoch 1 changed partition [__CruiseControlMetrics,0] from NewPartition to "
                   "OnlinePartition with leader 2"),
             trace("Broker 2 received LeaderAndIsr request PartitionState(controllerEpoch=1, leader=2, leaderEpoch=0, "
                   "isr=2, zkVersion=0, replicas=2) correlation id 1 from controller 1 epoch 1 for partition "
                   "[__CruiseControlMetrics,0]"))
    assert [(x.from_state, x.to_state, x.replicas, x.leader, x.unclean) for x in logged(r)] == [
        (GONE, NEW, [2, 1, 3], None, None), (NEW, ONLINE, None, 2, False)]
    assert (r.counts.rows, r.counts.other) == (2, 1) and r.era == ERA_0_8


def test_kafka_0_8_server_log_election_has_no_epoch():
    r = read(trace("0 successfully elected as leader", "kafka.server.ZookeeperLeaderElector", "INFO"),
             trace("New leader is 0", "kafka.server.ZookeeperLeaderElector$LeaderChangeListener", "INFO"))
    assert [(x.kind, x.controller_id, x.controller_epoch) for x in logged(r)] == [(CONTROLLER_ELECTED, 0, -1)]


# --- 1.0 ---------------------------------------------------------------------------------------------
def test_kafka_1_0_prefixed_lines():
    r = read(trace("[Controller id=3 epoch=4] Changed partition t-0 state from NonExistentPartition to NewPartition "
                   "with assigned replicas 1,2"),
             trace("[Controller id=3 epoch=4] Changed state of replica 1 for partition t-0 from NonExistentReplica to "
                   "NewReplica"),
             trace("[Controller id=3 epoch=4] Changed partition t-0 from NewPartition to OnlinePartition with "
                   "leader 1"),
             trace("[Controller id=3 epoch=4] Initiated state change for partition t-0 from OnlinePartition to "
                   "OnlinePartition failed", level="ERROR"),
             "kafka.common.StateChangeFailedException: [Controller id=3 epoch=4] Encountered error while electing "
             "leader",
             "Caused by: kafka.common.StateChangeFailedException: Preferred replica 1 for partition t-0 is either not "
             "alive or not in the isr.",
             trace("[Controller id=3 epoch=4] Initiated state change of replica 2 for partition t-0 from OnlineReplica "
                   "to OfflineReplica failed", level="ERROR"))
    assert [(x.kind, x.from_state, x.to_state, x.error) for x in logged(r)] == [
        (PARTITION_TRANSITION, GONE, NEW, None), (REPLICA_TRANSITION, R.NonExistentReplica.byte, R_NEW, None),
        (PARTITION_TRANSITION, NEW, ONLINE, None), (TRANSITION_FAILED, ONLINE, ONLINE, "StateChangeFailedException"),
        (TRANSITION_FAILED, R_ONLINE, R_OFFLINE, None)]     # no exception follows the last failure
    assert r.era == ERA_1_0 and "1.0" in r.version_hints


def test_kafka_1_0_controller_log_election_isr_removal_and_deletions():
    r = read(trace("[Controller id=3] 3 successfully elected as the controller", "kafka.controller.KafkaController",
                   "INFO"),
             trace("[Controller id=3] Incremented epoch to 4", "kafka.controller.KafkaController", "INFO"),
             trace('[Controller id=3] New leader and ISR for partition pollution-0 is {"leader":-1,"leader_epoch":1,'
                   '"isr":[1]}', "kafka.controller.KafkaController", "INFO"),
             trace("[Controller id=3] Starting topic deletion for topics temperature,humidity",
                   "kafka.controller.KafkaController", "INFO"),
             trace("[Topic Deletion Manager 3], Deletion of topic humidity successfully completed",
                   "kafka.controller.TopicDeletionManager", "INFO"))
    assert [(x.kind, x.topic, x.leader, x.leader_epoch, x.isr, x.controller_epoch) for x in logged(r)] == [
        (CONTROLLER_ELECTED, None, None, None, None, 4),
        (LEADER_AND_ISR_UPDATED, "pollution", -1, 1, [1], 4),
        (TOPIC_DELETION_REQUESTED, "temperature", None, None, None, 4),
        (TOPIC_DELETION_REQUESTED, "humidity", None, None, None, 4),
        (TOPIC_DELETION_COMPLETED, "humidity", None, None, None, 4)]
    assert {x.controller_id for x in logged(r)} == {3}


# --- 1.1 – 2.5 ---------------------------------------------------------------------------------------------
def test_kafka_1_1_leader_and_isr_and_failure_template():
    r = read(trace("[Controller id=0 epoch=1] Changed partition my-replicated-topic-0 from NewPartition to "
                   "OnlinePartition with state LeaderAndIsr(leader=2, leaderEpoch=0, isr=List(2, 0, 1), zkVersion=0)"),
             trace("[Controller id=2 epoch=5] Controller 2 epoch 5 failed to change state for partition test-0 from "
                   "OfflinePartition to OnlinePartition", level="ERROR"),
             "kafka.common.StateChangeFailedException: Failed to elect leader for partition test-0 under strategy "
             "OfflinePartitionLeaderElectionStrategy",
             "\tat kafka.controller.PartitionStateMachine.doElectLeaderForPartitions(PartitionStateMachine.scala:328)")
    online, failed = r.rows
    assert (online.topic, online.partition, online.leader, online.leader_epoch, online.isr, online.unclean) == \
        ("my-replicated-topic", 0, 2, 0, [2, 0, 1], False)
    assert (failed.controller_id, failed.controller_epoch, failed.error) == (2, 5, "StateChangeFailedException")
    assert r.version_hints == ("1.1-3.1",)


def test_kafka_2_5_trace_level_deletion_and_requests_with_set_and_hashset():
    r = read(trace("[Controller id=0 epoch=1] Sending UpdateMetadata request UpdateMetadataPartitionState("
                   "topicName='t-9', partitionIndex=0, controllerEpoch=1, leader=0, leaderEpoch=0, isr=[0, 1], "
                   "zkVersion=0, replicas=[0, 1], offlineReplicas=[]) to brokers HashSet(0, 1) for partition t-9-0"),
             trace("[Controller id=0 epoch=1] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState("
                   "topicName='u', partitionIndex=0, controllerEpoch=1, leader=0, leaderEpoch=0, isr=[0], zkVersion=0, "
                   "replicas=[0], addingReplicas=[], removingReplicas=[], isNew=true) to broker 0 for partition u-0"),
             trace("[Controller id=0 epoch=1] Changed state of replica 0 for partition u-0 from ReplicaDeletionStarted "
                   "to ReplicaDeletionIneligible"),
             trace("[Controller id=0 epoch=1] Changed partition t-9-0 from OfflinePartition to OnlinePartition with "
                   "state LeaderAndIsr(leader=2, leaderEpoch=1, isr=List(2), zkVersion=1)"))
    replica, election = r.rows
    assert (replica.from_state, replica.to_state) == (R_DEL_STARTED, R_DEL_INELIGIBLE)
    assert (election.topic, election.partition, election.leader, election.unclean) == ("t-9", 0, 2, True)
    assert (r.counts.rows, r.counts.other, r.era) == (2, 2, ERA_1_0)


def test_kafka_2_3_request_partition_state_and_set():
    r = read(trace("[Controller id=0 epoch=4] Sending become-leader LeaderAndIsr request PartitionState("
                   "controllerEpoch=1, leader=0, leaderEpoch=1, isr=0,2, zkVersion=1, replicas=1,0,2, isNew=false) to "
                   "broker 0 for partition a-1-0"),
             trace("[Controller id=0 epoch=4] Sending UpdateMetadata request PartitionState(controllerEpoch=1, "
                   "leader=0, leaderEpoch=1, isr=[0, 2], zkVersion=1, replicas=[1, 0, 2], offlineReplicas=[]) to "
                   "brokers Set(0, 2) for partition a-1-0"),
             trace("[Controller id=0 epoch=4] Changed partition a-1-0 from OfflinePartition to OnlinePartition with "
                   "state LeaderAndIsr(leader=2, leaderEpoch=2, isr=List(2), zkVersion=2)"))
    assert [(x.topic, x.partition, x.leader, x.unclean) for x in logged(r)] == [("a-1", 0, 2, False)]


# --- 2.6+ (INFO level) ----------------------------------------------------------------------------------------
def test_kafka_2_8_isr_removal_and_info_level_summaries():
    r = read(trace("[Controller id=1 epoch=6] Sending UpdateMetadata request to brokers HashSet(0, 1) for 2 partitions",
                   level="INFO"),
             trace("[Controller id=1 epoch=6] Sending LeaderAndIsr request to broker 1 with 0 become-leader and 2 "
                   "become-follower partitions", level="INFO"),
             trace("[Controller id=1 epoch=6] Partition erstesTopic-0 state changed to (Leader:1,ISR:1,LeaderEpoch:5,"
                   "ControllerEpoch:6) after removing replica 0 from the ISR as part of transition to OfflineReplica",
                   level="INFO"),
             trace("[Controller id=1 epoch=6] Changed partition erstesTopic-0 from OnlinePartition to OnlinePartition "
                   "with state LeaderAndIsr(leader=0, leaderEpoch=6, isr=List(0), zkVersion=8)", level="INFO"),
             trace("[Broker id=1] Handling LeaderAndIsr request correlationId 9 from controller 1 for 2 partitions",
                   level="INFO"))
    removal, election = r.rows
    assert (removal.kind, removal.entity, removal.topic, removal.leader, removal.leader_epoch, removal.isr,
            removal.controller_epoch) == (LEADER_AND_ISR_UPDATED, None, "erstesTopic", 1, 5, [1], 6)
    assert (election.leader, election.unclean) == (0, True)    # 0 was removed from the ISR just before
    assert r.era == ERA_2_6 and (r.counts.rows, r.counts.other) == (2, 3)
    assert any("per-replica transitions are not in this file" in n for n in r.notes)


def test_kafka_3_2_and_3_3_formats():
    r = read(trace("[Controller id=2 epoch=4] Partition p-0 state changed to (Leader:-1,ISR:0,LeaderRecoveryState:"
                   "RECOVERED,LeaderEpoch:1,ZkVersion:1,ControllerEpoch:4) after removing replica 0 from the ISR as "
                   "part of transition to OfflineReplica", level="INFO"),
             trace("[Controller id=2 epoch=4] Changed partition p-0 from OfflinePartition to OnlinePartition with "
                   "state LeaderAndIsr(leader=0, leaderEpoch=2, isr=List(0), leaderRecoveryState=RECOVERED, "
                   "zkVersion=2)", level="INFO"),
             trace("[Controller id=0 epoch=1] Changed partition test-topic-2 from NewPartition to OnlinePartition with "
                   "state LeaderAndIsr(leader=0, leaderEpoch=0, isr=List(0), leaderRecoveryState=RECOVERED, "
                   "partitionEpoch=0)", level="INFO"))
    assert [(x.kind, x.topic, x.partition, x.leader, x.leader_epoch, x.isr, x.unclean) for x in logged(r)] == [
        (LEADER_AND_ISR_UPDATED, "p", 0, -1, 1, [0], None), (PARTITION_TRANSITION, "p", 0, 0, 2, [0], False),
        (PARTITION_TRANSITION, "test-topic", 2, 0, 0, [0], False)]
    assert set(r.version_hints) == {"3.2", "3.2+", "3.3-3.4"}


def test_kafka_3_7_invalid_transition_is_refused_with_illegal_state_exception():
    r = read(trace("[Controller id=0 epoch=2] Controller 0 epoch 2 initiated state change of replica 1 for partition "
                   "t-0 from OnlineReplica to ReplicaDeletionSuccessful failed", level="ERROR"),
             "java.lang.IllegalStateException: Replica [Topic=t,Partition=0,Replica=1] should be in the "
             "ReplicaDeletionStarted states before moving to ReplicaDeletionSuccessful state. Instead it is in "
             "OnlineReplica state",
             trace("[Controller id=0 epoch=2] Controller 0 epoch 2 failed to change state for partition t-0 from "
                   "NonExistentPartition to OnlinePartition", level="ERROR"),
             "java.lang.IllegalStateException: Partition t-0 should be in one of NewPartition,OnlinePartition,"
             "OfflinePartition states before moving to OnlinePartition state. Instead it is in NonExistentPartition "
             "state")
    assert [(x.entity, x.replica, x.from_state, x.to_state, x.error) for x in logged(r)] == [
        (ENTITY_REPLICA, 1, R_ONLINE, R_DEL_OK, "IllegalStateException"),
        (ENTITY_PARTITION, -1, GONE, ONLINE, "IllegalStateException")]


def test_kafka_3_5_isr_with_broker_epochs():
    r = read(trace("[Controller id=0 epoch=2] Changed partition btcusd-0 from NewPartition to OnlinePartition with "
                   "state LeaderAndIsr(leader=0, leaderEpoch=0, isrWithBrokerEpoch=List(BrokerState(brokerId=0, "
                   "brokerEpoch=-1), BrokerState(brokerId=1, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, "
                   "partitionEpoch=0)", level="INFO"))
    assert [(x.leader, x.leader_epoch, x.isr) for x in logged(r)] == [(0, 0, [0, 1])] and r.version_hints == ("3.5+",)


def test_kafka_2_7_alter_isr_accepted_by_the_controller():
    r = read(trace("[Controller id=2] ISR for partition p-1 updated to [2,0] and zkVersion updated to [13]",
                   "kafka.controller.KafkaController", "DEBUG"))
    assert [(x.kind, x.topic, x.partition, x.leader, x.isr, x.controller_id) for x in logged(r)] == [
        (LEADER_AND_ISR_UPDATED, "p", 1, None, [2, 0], 2)]


def test_controller_elections_of_each_era():
    r = read(trace("[Controller 0]: Controller 0 incremented epoch to 3", "kafka.controller.KafkaController", "INFO"),
             trace("[Controller id=1] Epoch incremented to 5", "kafka.controller.KafkaController", "INFO"),
             trace("[Controller id=2] 2 successfully elected as the controller. Epoch incremented to 6 and epoch zk "
                   "version is now 6", "kafka.controller.KafkaController", "INFO"))
    assert [(x.kind, x.controller_id, x.controller_epoch) for x in logged(r)] == [
        (CONTROLLER_ELECTED, 0, 3), (CONTROLLER_ELECTED, 1, 5), (CONTROLLER_ELECTED, 2, 6)]


# --- epochs, interleaved brokers ---------------------------------------------------------------------------------
def test_each_line_names_its_controller_and_lines_without_epoch_use_the_last_one_of_that_controller():
    r = read(trace("[Controller id=0] Starting topic deletion for topics early", "kafka.controller.KafkaController",
                   "INFO"),
             trace("[Controller id=1 epoch=4] Changed partition a-0 state from OnlinePartition to OfflinePartition"),
             trace("[Controller id=0 epoch=3] Changed partition a-0 state from OnlinePartition to OfflinePartition"),
             trace("[Broker id=2] Handling LeaderAndIsr request correlationId 1 from controller 1 for 1 partitions",
                   level="INFO"),
             trace("[Controller id=1] Starting topic deletion for topics late-1", "kafka.controller.KafkaController",
                   "INFO"),
             trace("[Controller id=0] Starting topic deletion for topics late-0", "kafka.controller.KafkaController",
                   "INFO"))
    assert [(x.topic, x.controller_id, x.controller_epoch) for x in logged(r)] == [
        ("early", 0, -1), ("a", 1, 4), ("a", 0, 3), ("late-1", 1, 4), ("late-0", 0, 3)]
    assert {x.run_id for x in logged(r)} == {"kafka-log:t.log"}


# --- KRaft ----------------------------------------------------------------------------------------------------
def test_kraft_lines_are_recognised_and_make_kraft_rows_not_audit_rows():
    r = read(trace("[QuorumController id=10] Fencing broker 1 at epoch 7 because its session has timed out.",
                   "org.apache.kafka.controller.ReplicationControlManager", "INFO"),
             trace("[Broker id=0] Creating new partition t-0 with topic id yAKEixxUT1yJzTyrH9xg3A.", level="INFO"),
             trace("[Broker id=0] Transitioning 51 partition(s) to local followers.", level="INFO"))
    assert r.rows == [] and r.kraft and r.era == ERA_KRAFT
    assert [x.kind for x in r.kraft_rows] == ["kraft_broker_fenced", "kraft_partition_created"]
    assert (r.counts.rows, r.counts.other, r.counts.not_understood) == (2, 1, 0)
    assert any("no controller state machines" in n for n in r.notes)


# --- bad input ------------------------------------------------------------------------------------------------
def test_lines_not_understood_are_counted_and_sampled_never_raised():
    r = read("# header",
             "",
             trace("[Controller id=0 epoch=1] Changed state of replica 1 for partition t-0 from Bogus to "
                   "OnlineReplica"),
             trace("[Controller id=0 epoch=1] Something no Kafka version ever logged"),
             "free text in the middle",
             trace("[Controller id=0 epoch=1] Changed state of replica 1 for partition t-0 from NewReplica to "
                   "OnlineReplica"))
    assert [x.position for x in logged(r)] == [6]
    assert (r.counts.header, r.counts.not_understood, r.counts.rows, r.counts.total) == (2, 3, 1, 6)
    assert [no for no, _ in r.not_understood_sample] == [3, 4, 5]
    assert "from Bogus" in r.not_understood_sample[0][1]


OLD_FORMAT_LINES = (
    trace("Controller 0 epoch 26 initiated state change for partition [test,0] from OfflinePartition to "
          "OnlinePartition failed", level="ERROR"),
    "kafka.common.NoReplicaOnlineException: No replica for partition [test,0] is alive.",
    trace("[OfflinePartitionLeaderSelector]: No broker in ISR is alive for [t,1]. Elect leader 1 from live brokers 1. "
          "There's potential data loss.", SELECTOR, "WARN"),
    trace('[OfflinePartitionLeaderSelector]: Selected new leader and ISR {"leader":1,"leader_epoch":4,"isr":[1]} for '
          'offline partition [t,1]', SELECTOR, "INFO"),
    trace("Controller 1 epoch 58 sending UpdateMetadata request (Leader:1,ISR:1,2,3,LeaderEpoch:0,ControllerEpoch:1) "
          "to brokers Set(1, 2, 3) for partition [test-2,1]"),
)


def test_mangled_lines_never_raise():
    from statemachines.kafka_log_format import format_records
    pool = list(format_records(engine_records())) + list(OLD_FORMAT_LINES)
    rnd = random.Random(5)
    for _ in range(300):
        lines = []
        for line in rnd.sample(pool, 12):
            cut = rnd.randrange(len(line))
            line = rnd.choice((line[:cut], line[:cut] + rnd.choice("[](){},:-9 \t\"") + line[cut + 1:], line))
            lines.append(line)
        assert read(*lines).counts.total == 12


def test_sample_keeps_the_first_ten():
    r = read(*[f"noise {i}" for i in range(25)])
    assert r.counts.not_understood == 25 and [no for no, _ in r.not_understood_sample] == list(range(1, 11))


def test_unreadable_files_raise_an_error_naming_the_file(tmp_path):
    with pytest.raises(KafkaLogError, match="no such file") as e:
        read_kafka_log(tmp_path / "missing.log")
    assert e.value.path == str(tmp_path / "missing.log")
    with pytest.raises(KafkaLogError, match="is a directory"):
        read_kafka_log(tmp_path)
    binary = tmp_path / "segment.log"
    binary.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(KafkaLogError, match=str(binary)):
        read_kafka_log(binary)


def test_gzip_and_latin_1_text_are_read(tmp_path):
    lines = [trace("[Controller id=0 epoch=1] Changed partition caf\u00e9-0 state from OnlinePartition to "
                   "OfflinePartition"), "\tat caf\u00e9"]
    gz = tmp_path / "state-change.log.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    latin = tmp_path / "state-change.log"
    latin.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    for path in (gz, latin):
        r = read_kafka_log(path)
        assert [(x.topic, x.to_state, x.source, x.run_id) for x in logged(r)] == [
            ("caf\u00e9", OFFLINE, str(path), run_id_for(path))]
        assert r.counts.continuation == 1


def test_a_file_is_checked_when_opened_and_streamed_when_read(tmp_path):
    with pytest.raises(KafkaLogError, match="no such file"):
        open_kafka_log(tmp_path / "missing.log")           # before any row is asked for
    log = tmp_path / "state-change.log"
    log.write_text("\n".join(trace(f"[Controller id=0 epoch=1] Changed partition t-{i} state from OnlinePartition to "
                                   f"OfflinePartition") for i in range(5)) + "\n")
    reader = open_kafka_log(log)
    first = next(reader.rows())
    assert (first.partition, first.position) == (0, 1) and reader.counts.total == 1


def test_rows_stream_before_the_input_ends():
    def endless():
        for i in itertools.count():
            yield trace(f"[Controller id=0 epoch=1] Changed partition t-{i} state from OnlinePartition to "
                        f"OfflinePartition")
    first = list(itertools.islice(KafkaLogReader("t.log", endless(), run_id="r").rows(), 3))
    assert [x.topic for x in first] == ["t", "t", "t"] and [x.partition for x in first] == [0, 1, 2]


# --- round trip through our own Kafka 3.7 renderer -------------------------------------------------------------
def _engine_run():
    from controller.embedding.cluster import Cluster
    cluster = Cluster(configs={"unclean.leader.election.enable": True}, seed=7, start_time_ms=1_714_392_831_142)
    cluster.start_brokers(range(3))
    cluster.create_topic("t-1", assignment=[[1, 2], [2, 1]])
    cluster.create_topic("orders", partitions=3, replication_factor=2)
    for broker in (1, 2):                      # the ISR shrinks to the last replica, then it goes too
        cluster.kill_broker(broker)
        cluster.advance(18_001)
    cluster.start_broker(1)                    # not in the ISR: an unclean election
    cluster.start_broker(2)
    cluster.delete_topic("orders")
    cluster.kill_broker(0)                     # the controller moves: another id and epoch
    cluster.advance(18_001)
    cluster.start_broker(0)
    return cluster.journal.records


@functools.lru_cache(maxsize=None)
def engine_records():
    return tuple(_engine_run())


def _expected_partition_row(rec):
    from events.records import ELECTION_OFFLINE_UNCLEAN
    base = (rec.controller_id, rec.controller_epoch, rec.timestamp_ms, rec.topic, rec.partition, rec.from_state,
            rec.to_state)
    if rec.to_state == ONLINE:
        return base + (rec.leader, rec.leader_epoch, list(rec.isr), None, rec.election == ELECTION_OFFLINE_UNCLEAN)
    if rec.to_state == NEW:
        return base + (None, None, None, list(rec.replicas), None)
    return base + (None, None, None, None, None)


def _row_shape(x):
    return (x.controller_id, x.controller_epoch, x.time_ms, x.topic, x.partition, x.from_state, x.to_state, x.leader,
            x.leader_epoch, x.isr, x.replicas, x.unclean)


@pytest.mark.parametrize("level", ["TRACE", "INFO"])
def test_round_trip_of_an_engine_run_rendered_as_kafka_3_7_lines(level):
    from events.records import LeaderAndIsrUpdated, PartitionTransition, ReplicaTransition, TransitionFailed
    from statemachines.kafka_log_format import format_records
    records = engine_records()
    reading = read_kafka_lines(list(format_records(records, min_level=level)), source=f"engine-{level}.log")
    assert reading.counts.not_understood == 0 and reading.era == ERA_2_6

    partitions = [r for r in records if type(r) is PartitionTransition]
    if level == "INFO":                        # Kafka 2.6+ logs only these at INFO
        partitions = [r for r in partitions if r.to_state in (NEW, ONLINE)]
    assert [_row_shape(x) for x in of_kind(reading, PARTITION_TRANSITION)] == \
        [_expected_partition_row(r) for r in partitions]

    replicas = [(r.controller_id, r.controller_epoch, r.topic, r.partition, r.replica, r.from_state, r.to_state)
                for r in records if type(r) is ReplicaTransition] if level == "TRACE" else []
    assert [(x.controller_id, x.controller_epoch, x.topic, x.partition, x.replica, x.from_state, x.to_state)
            for x in of_kind(reading, REPLICA_TRANSITION)] == replicas

    failures = [(r.controller_epoch, r.topic, r.partition, r.replica, r.from_state, r.to_state, r.error)
                for r in records if type(r) is TransitionFailed]
    assert [(x.controller_epoch, x.topic, x.partition, x.replica, x.from_state, x.to_state, x.error)
            for x in of_kind(reading, TRANSITION_FAILED)] == failures
    removals = [(r.topic, r.partition, r.leader, r.leader_epoch, list(r.isr)) for r in records
                if type(r) is LeaderAndIsrUpdated and r.reason == 1]
    assert [(x.topic, x.partition, x.leader, x.leader_epoch, x.isr) for x in of_kind(reading, LEADER_AND_ISR_UPDATED)] \
        == removals

    # The run really has what makes the comparison meaningful.
    assert (len(replicas), len(partitions)) == ((64, 28) if level == "TRACE" else (0, 16))
    assert len(failures) == 3 and len(removals) > 0
    assert [x.unclean for x in of_kind(reading, PARTITION_TRANSITION)].count(True) == 3
    # Controller 1 took over at epoch 2; what it did is logged at TRACE only (replica transitions).
    assert {(x.controller_id, x.controller_epoch) for x in reading.rows} == (
        {(0, 1), (1, 2)} if level == "TRACE" else {(0, 1)})
    assert {x.topic for x in reading.rows} == {"t-1", "orders"}


# --- the real logs --------------------------------------------------------------------------------------------
REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or Path(__file__).parents[1].parent / "shared" / "real-logs")
REAL_FILES = sorted(p.name for p in REAL_LOGS.glob("*") if p.name != "INDEX.md") if REAL_LOGS.is_dir() else []
needs_real_logs = pytest.mark.skipif(not REAL_FILES, reason=f"no real logs at {REAL_LOGS}")
# Tool outputs and notes kept with the logs: kafka-topics --describe output, a reassignment plan.
NOT_LOGS = {"confluentinc-examples-multiregion-describe-liveobservers.txt",
            "confluentinc-examples-multiregion-describe.txt",
            "ghshu-kafka-notes-describe-leader-none-broker-id-change.txt",
            "yunanjeong-kafka-test-consumer-offsets-reassignment.json"}
KRAFT = {"ammar-kafka-4.0-controller-fencing.log", "ammar-kafka-4.0-state-change.log",
         "betrajj-kafka-kraft-3.9-controller-2025-02-07-11.log", "betrajj-kafka-kraft-3.9-controller-2025-02-11-14.log",
         "betrajj-kafka-kraft-3.9-controller-2025-02-11-15.log", "betrajj-kafka-kraft-3.9-state-change.log",
         "graphlogistics-kafka-4.1.1-controller-elr.log", "graphlogistics-kafka-4.1.1-state-change.log"}


@functools.lru_cache(maxsize=None)
def real(name: str):
    if name in NOT_LOGS:                 # read_kafka_log refuses them (see test_every_real_file_is_read_whole)
        reader = open_kafka_log(REAL_LOGS / name)
        return reader.reading(list(reader.rows()))
    return read_kafka_log(REAL_LOGS / name)


def rows(name: str, kind: str | None = None, **where) -> list:
    return [x for x in real(name).rows
            if (kind is None or x.kind == kind) and all(getattr(x, k) == v for k, v in where.items())]


def epochs_in_order(name: str) -> list[tuple[int, int]]:
    out = []
    for x in real(name).rows:
        if not out or out[-1] != (x.controller_id, x.controller_epoch):
            out.append((x.controller_id, x.controller_epoch))
    return out


@needs_real_logs
def test_the_corpus_is_all_there():
    assert len(REAL_FILES) == 61
    assert NOT_LOGS | KRAFT <= set(REAL_FILES)


@needs_real_logs
@pytest.mark.parametrize("name", REAL_FILES)
def test_every_real_file_is_read_whole(name):
    reading = real(name)
    with open(REAL_LOGS / name, "rb") as f:
        assert reading.counts.total == sum(1 for _ in f)
    assert reading.run_id == f"kafka-log:{name}"
    assert all(x.position == x.seq or (x.position == 0 and x.kind == TOPIC_CREATED) for x in reading.rows)
    assert [x.seq for x in reading.rows] == sorted(x.seq for x in reading.rows)
    if name in NOT_LOGS:
        # Not logs at all: every content line is "not understood", and the reading says why. (They do
        # show partitions' leaders and ISRs, but as tool output, not as the controller's state changes.)
        assert not reading.is_log4j and reading.rows == [] and reading.era is None
        assert reading.counts.not_understood == reading.counts.total - reading.counts.header
        assert any("not a Kafka log file" in n for n in reading.notes) and not reading.understood
        with pytest.raises(KafkaLogError, match="not a Kafka log: none of its .* is a log line in a known layout"):
            read_kafka_log(REAL_LOGS / name)
    else:
        # Every line of every log is understood: its template is known (row or no row), it continues
        # an entry, or it is a header. There is no not-understood line left to justify.
        assert reading.is_log4j and reading.counts.not_understood == 0, reading.not_understood_sample
    if name in KRAFT:
        assert reading.kraft and reading.era == ERA_KRAFT and reading.rows == [] and reading.kraft_rows
    else:
        assert not reading.kraft and reading.kraft_rows == []


@needs_real_logs
def test_0_10_1_failed_offline_to_online_then_recovery():
    name = "1316591029-kafka-0.10.1-state-change.log"
    failed, = rows(name, TRANSITION_FAILED)
    assert (failed.topic, failed.partition, failed.from_state, failed.to_state, failed.error, failed.controller_epoch) \
        == ("test", 0, OFFLINE, ONLINE, "NoReplicaOnlineException", 26)
    recovered, = rows(name, PARTITION_TRANSITION)
    assert (recovered.from_state, recovered.to_state, recovered.leader, recovered.unclean) == \
        (OFFLINE, ONLINE, 0, False)
    assert recovered.position > failed.position and real(name).era == ERA_0_8


@needs_real_logs
def test_2_7_single_broker_creations_around_the_lair_error():
    name = "6democratickim9-multi-work-kafka-2.7-state-change-lair-error.log"
    online = rows(name, PARTITION_TRANSITION, to_state=ONLINE, topic="Minju_exam_topicusers")
    assert [(x.from_state, x.leader, x.leader_epoch, x.isr) for x in online] == [(NEW, 0, 0, [0])]
    assert rows(name, REPLICA_TRANSITION) == [] and real(name).era == ERA_2_6


@needs_real_logs
def test_2_8_controller_log_elections_with_the_epoch_reset():
    assert [(x.controller_id, x.controller_epoch) for x in
            rows("andreastraut-kafka-2.8.0-controller-2021-04-28.log", CONTROLLER_ELECTED)] == [(0, 9), (0, 1), (1, 2)]


@needs_real_logs
def test_2_8_part1_isr_removals_failed_elections_and_failover():
    name = "andreastraut-kafka-2.8.0-state-change-2021-04-28-part1.log"
    assert Counter((x.from_state, x.to_state, x.error) for x in rows(name, TRANSITION_FAILED)) == {
        (OFFLINE, ONLINE, "StateChangeFailedException"): 25,      # OfflinePartitionLeaderElectionStrategy(false)
        (ONLINE, ONLINE, "StateChangeFailedException"): 4}        # ControlledShutdownPartitionLeaderElectionStrategy
    assert len(rows(name, LEADER_AND_ISR_UPDATED)) == 55
    assert epochs_in_order(name) == [(1, 6), (0, 7)]


@needs_real_logs
def test_2_8_part2_leader_minus_one_then_broker_1_returns():
    name = "andreastraut-kafka-2.8.0-state-change-2021-04-28-part2.log"
    removals = rows(name, LEADER_AND_ISR_UPDATED)
    assert {(x.leader, tuple(x.isr), x.controller_epoch) for x in removals} == {(-1, (1,), 7)} and len(removals) == 28
    back = rows(name, PARTITION_TRANSITION, from_state=OFFLINE, leader=1)
    assert len(back) == 28 and {x.unclean for x in back} == {False}   # 1 was the last ISR member
    assert all(x.position > max(r.position for r in removals) for x in back)


@needs_real_logs
def test_2_8_part3_leader_moves_then_controlled_shutdown_failures():
    name = "andreastraut-kafka-2.8.0-state-change-2021-04-28-part3.log"
    assert [(x.topic, x.partition, x.from_state, x.to_state, x.leader, x.leader_epoch) for x in
            rows(name, PARTITION_TRANSITION)] == [("erstesTopic", 1, ONLINE, ONLINE, 0, 10),
                                                  ("erstesTopic", 0, ONLINE, ONLINE, 0, 11)]
    assert Counter((x.topic, x.from_state, x.to_state) for x in rows(name, TRANSITION_FAILED)) == {
        ("erstesTopic", ONLINE, ONLINE): 2, ("__consumer_offsets", OFFLINE, ONLINE): 3}


@needs_real_logs
def test_2_8_part4_controller_epoch_reset_to_1_and_topic_recreated():
    name = "andreastraut-kafka-2.8.0-state-change-2021-04-28-part4.log"
    assert epochs_in_order(name) == [(0, 9), (0, 1), (1, 2)]
    recreated = rows(name, PARTITION_TRANSITION, topic="erstesTopic", partition=0, controller_epoch=1)
    assert [(x.from_state, x.to_state) for x in recreated][:2] == [(GONE, NEW), (NEW, ONLINE)]
    assert recreated[0].replicas == [1, 0]


@needs_real_logs
def test_0_10_2_controller_log_startup_and_clean_offline_elections():
    assert [(x.controller_id, x.controller_epoch) for x in rows(
        "andreinedelciu-kafka-brokers-public-controller-2020-10-08-16.log", CONTROLLER_ELECTED)] == [(0, 1)]
    name = "andreinedelciu-kafka-brokers-public-controller-2020-10-28-17.log"
    elections = rows(name, PARTITION_TRANSITION)
    assert len(elections) == 6 and {(x.leader, x.leader_epoch, tuple(x.isr), x.unclean) for x in elections} == {
        (0, 1, (0,), False)}


@needs_real_logs
def test_0_10_2_controller_log_unclean_elections():
    name = "andreinedelciu-kafka-brokers-public-controller.log"
    unclean = rows(name, PARTITION_TRANSITION, unclean=True)
    assert sorted(x.partition for x in unclean) == [0, 1, 2]
    assert {(x.topic, x.from_state, x.to_state, x.leader, tuple(x.isr), x.controller_id, x.controller_epoch)
            for x in unclean} == {("dns_kafka_topic", OFFLINE, ONLINE, 1, (1,), 1, 58)}
    assert [x.controller_epoch for x in rows(name, CONTROLLER_ELECTED)] == [58]


@needs_real_logs
def test_0_10_2_server_log_election_without_epoch():
    assert [(x.controller_id, x.controller_epoch) for x in rows(
        "andreinedelciu-kafka-brokers-public-server-isr.log", CONTROLLER_ELECTED)] == [(1, -1)]


@needs_real_logs
def test_0_10_2_topic_creation():
    name = "andreinedelciu-kafka-brokers-public-state-change-2020-10-08-16.log"
    p = [(x.from_state, x.to_state) for x in rows(name, PARTITION_TRANSITION, topic="netflow_kafka_topic", partition=0)]
    r = [(x.from_state, x.to_state) for x in rows(name, REPLICA_TRANSITION, topic="netflow_kafka_topic", partition=0)]
    assert p == [(GONE, NEW), (NEW, ONLINE)] and r == [(R_GONE, R_NEW), (R_NEW, R_ONLINE)]


@needs_real_logs
def test_0_10_2_restart_failed_then_elected():
    name = "andreinedelciu-kafka-brokers-public-state-change-2020-10-28-15.log"
    assert Counter(x.error for x in rows(name, TRANSITION_FAILED)) == {"NoReplicaOnlineException": 6}
    assert len(rows(name, PARTITION_TRANSITION, from_state=OFFLINE, to_state=ONLINE, unclean=False)) == 6
    assert rows(name, REPLICA_TRANSITION, from_state=R_DEL_INELIGIBLE, to_state=R_ONLINE)


@needs_real_logs
def test_0_10_2_epoch_58_startup_failures():
    name = "andreinedelciu-kafka-brokers-public-state-change-part1.log"
    assert {(x.from_state, x.to_state, x.error, x.controller_epoch) for x in real(name).rows} == {
        (OFFLINE, ONLINE, "NoReplicaOnlineException", 58)} and len(real(name).rows) == 6


@needs_real_logs
def test_0_10_2_part2_unclean_election_after_broker_ids_changed():
    name = "andreinedelciu-kafka-brokers-public-state-change-part2.log"
    # The last ISR known for these partitions is [1010] (a broker id that no longer exists).
    assert [(x.topic, x.partition, x.leader, x.unclean) for x in rows(name, PARTITION_TRANSITION)] == [
        ("dns_kafka_topic", 1, 1, True), ("dns_kafka_topic", 2, 1, True), ("dns_kafka_topic", 0, 1, True)]
    assert len(rows(name, TRANSITION_FAILED, error="NoReplicaOnlineException")) == 20


@needs_real_logs
def test_0_10_2_part3_broker_2_joins():
    name = "andreinedelciu-kafka-brokers-public-state-change-part3.log"
    assert {(x.replica, x.from_state, x.to_state) for x in rows(name, REPLICA_TRANSITION)} == {
        (2, R_DEL_INELIGIBLE, R_ONLINE)}


@needs_real_logs
def test_2_1_1_broker_failure():
    name = "artificial-ridiculous-kafka-2.1.1-state-change-broker-failure.log"
    topic = rows(name, PARTITION_TRANSITION, topic="my-replicated-topic")
    assert [(x.from_state, x.to_state, x.leader, x.isr) for x in topic] == [
        (ONLINE, OFFLINE, None, None), (OFFLINE, ONLINE, 0, [0, 2]), (ONLINE, ONLINE, 1, [0, 2, 1])]
    assert [(x.from_state, x.to_state) for x in rows(name, REPLICA_TRANSITION, topic="my-replicated-topic",
                                                     replica=1)] == [(R_ONLINE, R_OFFLINE), (R_OFFLINE, R_ONLINE)]
    assert rows("artificial-ridiculous-kafka-2.1.1-controller-broker-failure.log") == []


@needs_real_logs
def test_3_1_topic_deleted_seven_times():
    kinds = [(x.kind, x.topic) for x in real("aryan-jadon-kafka-3.1-controller-topic-deletion.log").rows]
    assert kinds == [(TOPIC_DELETION_REQUESTED, "design"), (TOPIC_DELETION_COMPLETED, "design")] * 7
    name = "aryan-jadon-kafka-3.1-state-change-topic-churn.log"
    assert len(rows(name, PARTITION_TRANSITION, to_state=NEW, topic="design")) == 21
    assert {x.leader for x in rows(name, LEADER_AND_ISR_UPDATED)} == {-1}
    assert rows(name, REPLICA_TRANSITION) == [] and real(name).era == ERA_2_6


@needs_real_logs
def test_2_3_deletion_retried_across_controller_restarts():
    name = "bitterdone-k2.3.1-state-change-deletion-retry.log"
    assert epochs_in_order(name) == [(0, 38), (0, 39), (0, 1)]
    assert rows(name, REPLICA_TRANSITION, from_state=R_DEL_STARTED, to_state=R_DEL_INELIGIBLE, controller_epoch=38)
    assert rows(name, PARTITION_TRANSITION, from_state=OFFLINE, to_state=OFFLINE, controller_epoch=39)
    assert rows(name, REPLICA_TRANSITION, from_state=R_DEL_INELIGIBLE, to_state=R_OFFLINE)


@needs_real_logs
def test_2_3_log_dir_failure_takes_every_partition_offline():
    name = "bitterdone-k2.3.1-state-change-logdir-failure.log"
    assert Counter((x.kind, x.from_state, x.to_state) for x in real(name).rows) == {
        (REPLICA_TRANSITION, R_ONLINE, R_ONLINE): 51, (PARTITION_TRANSITION, ONLINE, OFFLINE): 51}


@needs_real_logs
def test_2_3_restart_replays_online_replicas():
    # INDEX.md describes this cut as the first start; what it holds is a controller at epoch 5
    # re-sending states written at epoch 1, with OnlineReplica -> OnlineReplica for every replica.
    name = "bitterdone-k2.3.1-state-change-topic-creation.log"
    assert Counter((x.kind, x.from_state, x.to_state, x.controller_epoch) for x in real(name).rows) == {
        (REPLICA_TRANSITION, R_ONLINE, R_ONLINE, 5): 51}


@needs_real_logs
def test_2_4_controller_side_and_broker_side_state_change_logs():
    name = "chadmcintire-kafka-2.4-state-change-2020-03-10-13.log"
    online = rows(name, PARTITION_TRANSITION, to_state=ONLINE)
    assert len(online) == 51 and len({x.topic for x in online if x.topic == "__consumer_offsets"}) == 1
    assert [(x.leader, x.isr) for x in online if x.topic == "my-replicated-topic"] == [(2, [2, 0, 1])]
    assert real("chadmcintire-kafka-2.4-state-change.log").rows == []       # broker side only
    assert rows("chadmcintire-kafka-2.4-controller.log") == []


@needs_real_logs
def test_1_1_failed_elections_for_dead_single_replica_partitions():
    name = "choopong-kafka-1.1-state-change.log"
    failed = rows(name, TRANSITION_FAILED)
    assert len(failed) == 51 and {(x.from_state, x.to_state, x.error, x.controller_id, x.controller_epoch)
                                  for x in failed} == {(OFFLINE, ONLINE, "StateChangeFailedException", 2, 5)}


@needs_real_logs
def test_1_0_controller_log():
    name = "citypulse-kafka-1.0-controller.log"
    assert [(x.controller_id, x.controller_epoch) for x in rows(name, CONTROLLER_ELECTED)] == [(3, 4)]
    assert len(rows(name, LEADER_AND_ISR_UPDATED, leader=-1)) == 14
    assert len(rows(name, PARTITION_TRANSITION, unclean=False)) == 50
    assert {x.topic for x in rows(name, TOPIC_DELETION_COMPLETED)} == {
        "pollution", "temperature", "humidity", "electricity", "water"}


@needs_real_logs
def test_1_0_startup_failures_and_a_trace_cut_by_the_excerpt():
    name = "citypulse-kafka-1.0-state-change-part1.log"
    errors = [x.error for x in rows(name, TRANSITION_FAILED)]
    assert errors == ["NoReplicaOnlineException"] * 15 + [None]   # the last ERROR is the excerpt's last line


@needs_real_logs
def test_1_0_topic_deletion_across_three_brokers():
    name = "citypulse-kafka-1.0-state-change-part2.log"
    seen = Counter((x.from_state, x.to_state) for x in rows(name, REPLICA_TRANSITION))
    assert seen == {(R_ONLINE, R_OFFLINE): 10, (R_OFFLINE, R_DEL_STARTED): 10, (R_DEL_STARTED, R_DEL_OK): 7,
                    (R_DEL_OK, R_GONE): 2}
    assert {x.replica for x in rows(name, REPLICA_TRANSITION)} == {1, 2, 3}
    assert {(x.from_state, x.to_state, x.error) for x in rows(name, TRANSITION_FAILED)} == {
        (ONLINE, ONLINE, "StateChangeFailedException")}


@needs_real_logs
def test_0_8_1_controller_elections_with_zookeeper_wiped():
    assert [x.controller_epoch for x in rows("darrendao-kafka-0.8.1-controller-2014-02-02-01.log",
                                             CONTROLLER_ELECTED)] == [3, 4, 5, 6, 7, 1]
    name = "darrendao-kafka-0.8.1-controller-2014-02-02-02.log"
    assert [x.controller_epoch for x in rows(name, CONTROLLER_ELECTED)] == [2, 3]
    assert [(x.leader, x.unclean) for x in rows(name, PARTITION_TRANSITION)] == [(0, False)]
    assert [(x.controller_id, x.controller_epoch) for x in rows("darrendao-kafka-0.8.1-server-controller-znode.log",
                                                                 CONTROLLER_ELECTED)] == [(0, -1)]


@needs_real_logs
def test_0_8_state_change_dialect():
    name = "darrendao-kafka-0.8.1-state-change-2014-02-02-02.log"
    assert [(x.kind, x.from_state, x.to_state, x.controller_epoch) for x in real(name).rows] == [
        (TOPIC_CREATED, None, None, 2), (PARTITION_TRANSITION, GONE, NEW, 2), (REPLICA_TRANSITION, None, R_NEW, 2),
        (PARTITION_TRANSITION, None, ONLINE, 2),
        (REPLICA_TRANSITION, None, R_ONLINE, 2), (TRANSITION_FAILED, OFFLINE, ONLINE, 3),
        (REPLICA_TRANSITION, None, R_ONLINE, 3), (PARTITION_TRANSITION, None, ONLINE, 3)]
    assert "0.8.0" in real(name).version_hints
    failed, = rows("darrendao-kafka-0.8.1-state-change.log", TRANSITION_FAILED)
    assert (failed.controller_epoch, failed.error) == (4, "NoReplicaOnlineException")


@needs_real_logs
def test_3_6_zk_mode_restarts_and_3_5_leader_and_isr():
    assert [x.controller_epoch for x in rows("fenik2305-kafka-3.6.0-controller.log", CONTROLLER_ELECTED)] == [
        1, 2, 3, 4, 5]
    name = "fenik2305-kafka-3.6.0-state-change.log"
    btcusd = [x for x in rows(name, topic="btcusd") if x.kind != TOPIC_CREATED]
    assert [(x.from_state, x.to_state, x.leader, x.leader_epoch, x.isr, x.replicas) for x in btcusd] == [
        (GONE, NEW, None, None, None, [0]), (NEW, ONLINE, 0, 0, [0], None)]
    assert real(name).version_hints == ("3.5+",)


@needs_real_logs
def test_3_3_zk_mode_topic_creation():
    name = "hessahswe-kafka-3.3.1-state-change.log"
    assert [(x.from_state, x.to_state) for x in rows(name, topic="test-topic", partition=2)] == [
        (GONE, NEW), (NEW, ONLINE)]
    assert real(name).version_hints == ("3.3-3.4",) and len(rows(name, PARTITION_TRANSITION)) == 116


@needs_real_logs
def test_2_1_four_broker_cluster():
    assert [x.controller_epoch for x in rows("leesangshin-kafka-2.1-controller-2019-04-01-10.log")] == [31]
    assert [x.controller_epoch for x in rows("leesangshin-kafka-2.1-controller-2019-04-01-15.log")] == [35]
    assert real("leesangshin-kafka-2.1-state-change-2019-04-02-17.log").rows == []      # a non-controller broker


@needs_real_logs
def test_0_11_multi_broker_topic_creation():
    assert [x.controller_epoch for x in rows("oridonner-kafka-0.11-controller.log", CONTROLLER_ELECTED)] == [1]
    name = "oridonner-kafka-0.11-state-change.log"
    assert Counter((x.kind, x.from_state, x.to_state) for x in real(name).rows) == {
        (TOPIC_CREATED, None, None): 4, (PARTITION_TRANSITION, GONE, NEW): 75, (PARTITION_TRANSITION, NEW, ONLINE): 29,
        (REPLICA_TRANSITION, R_GONE, R_NEW): 35, (REPLICA_TRANSITION, R_NEW, R_ONLINE): 35}
    metrics = rows(name, PARTITION_TRANSITION, topic="__CruiseControlMetrics", partition=0)
    assert [(x.to_state, x.replicas, x.leader) for x in metrics] == [(NEW, [2], None), (ONLINE, None, 2)]


@needs_real_logs
def test_2_5_deletion_stuck_in_replica_deletion_ineligible():
    name = "parasmani300-kafka-2.5-state-change-deletion-ineligible.log"
    last = {}
    for x in rows(name, REPLICA_TRANSITION, topic="second_topic"):
        last[x.partition] = x.to_state
    assert last == {p: R_DEL_INELIGIBLE for p in range(6)}
    assert sorted(x.partition for x in rows(name, PARTITION_TRANSITION, topic="second_topic", to_state=GONE)) == \
        list(range(6))


@needs_real_logs
def test_3_2_controller_logs_of_brokers_sharing_one_file():
    assert [(x.controller_id, x.controller_epoch) for x in rows("vishalbb27-kafka-3.2.1-controller-part1.log")] == [
        (0, 1), (0, 1), (0, 2), (1, 1)]
    name = "vishalbb27-kafka-3.2.1-controller-part2.log"
    assert [(x.kind, x.controller_epoch) for x in rows(name, CONTROLLER_ELECTED)] == [(CONTROLLER_ELECTED, 4)]
    assert [x.isr for x in rows(name, LEADER_AND_ISR_UPDATED, partition=1)] == [[2, 0], [2, 0, 1]]


@needs_real_logs
def test_3_2_state_change_of_brokers_sharing_one_file():
    name = "vishalbb27-kafka-3.2.1-state-change-part1.log"
    assert epochs_in_order(name) == [(2, 3), (1, 4), (2, 5), (1, 6), (2, 7)]
    assert [(x.partition, x.leader, x.isr) for x in rows(name, PARTITION_TRANSITION, to_state=ONLINE)] == [
        (0, 0, [0]), (1, 2, [2]), (2, 1, [1])]
    assert {x.leader for x in rows(name, LEADER_AND_ISR_UPDATED)} == {-1}
    name = "vishalbb27-kafka-3.2.1-state-change-part2.log"
    created = rows(name, PARTITION_TRANSITION, topic="product-created-events-topics")
    assert [x.replicas for x in created if x.to_state == NEW] == [[1, 2, 0], [0, 1, 2], [2, 0, 1]]
    assert rows(name, LEADER_AND_ISR_UPDATED, controller_epoch=4)


@needs_real_logs
def test_3_2_restart_with_failed_elections_then_leader_2():
    name = "vishalbb27-kafka-3.2.1-state-change-part3.log"
    assert len(rows(name, TRANSITION_FAILED, error="StateChangeFailedException")) == 34
    assert [(x.partition, x.leader, x.isr, x.unclean) for x in rows(name, PARTITION_TRANSITION)] == [
        (1, 2, [2], False), (2, 2, [2], False), (0, 2, [2], False)]


# --- topic creations the reader infers ---------------------------------------------------------------
def _created(reading) -> list:
    return [(x.seq, x.topic) for x in reading.rows if x.kind == TOPIC_CREATED]


def test_a_topic_created_row_precedes_the_first_creation_of_a_topic_and_no_partition_addition():
    new = "[Controller id=0 epoch=5] Changed partition {tp} state from NonExistentPartition to NewPartition with " \
          "assigned replicas 0"
    r = read(trace(new.format(tp="t-0"), level="INFO"), trace(new.format(tp="t-1"), level="INFO"),
             trace(new.format(tp="u-0"), level="INFO"),
             trace(new.format(tp="t-2"), level="INFO"))       # partitions added to t: the same incarnation
    assert _created(r) == [(1, "t"), (3, "u")]
    first = r.rows[0]
    assert (first.position, first.partition, first.controller_epoch) == (0, -1, 5)


def test_a_recreation_whose_deletion_the_log_does_not_show_starts_a_new_incarnation():
    # At INFO level (2.6+) a deletion's transitions are TRACE: the log goes from OnlinePartition straight
    # to a new NonExistentPartition -> NewPartition. That is a new topic, not a discontinuity, and its
    # leader epochs start over.
    new = "[Controller id=0 epoch=5] Changed partition t-0 state from NonExistentPartition to NewPartition with " \
          "assigned replicas 0"
    online = "[Controller id=0 epoch=5] Changed partition t-0 from NewPartition to OnlinePartition with state " \
             "LeaderAndIsr(leader=0, leaderEpoch={e}, isr=List(0), zkVersion=0)"
    bump = "[Controller id=0 epoch=5] Partition t-0 state changed to (Leader:-1,ISR:0,LeaderEpoch:1,ZkVersion:1," \
           "ControllerEpoch:5) after removing replica 0 from the ISR as part of transition to OfflineReplica"
    lines = [new, online.format(e=0), bump, new, online.format(e=0)]
    r = read(*(trace(x, level="INFO") for x in lines))
    assert _created(r) == [(1, "t"), (4, "t")]
    from audit.local_engine import audit
    assert audit(r.rows).summary["violations"] == 0


def test_a_recreation_after_a_logged_deletion_starts_a_new_incarnation_once():
    lines = ["[Controller id=0 epoch=1] Changed partition t-{p} state from NonExistentPartition to NewPartition "
             "with assigned replicas 0",
             "[Controller id=0 epoch=1] Changed partition t-{p} state from NewPartition to OfflinePartition",
             "[Controller id=0 epoch=1] Changed partition t-{p} state from OfflinePartition to NonExistentPartition"]
    r = read(*(trace(x.format(p=p)) for x in lines for p in (0, 1)), *(trace(lines[0].format(p=p)) for p in (0, 1)))
    assert _created(r) == [(1, "t"), (7, "t")]
