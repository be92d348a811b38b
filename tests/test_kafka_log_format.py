"""Records print as the lines Kafka 3.7 writes to state-change.log (layouts checked against real logs)."""
from __future__ import annotations

from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, ENTITY_PARTITION, ENTITY_REPLICA,
    UPDATE_OFFLINE_REPLICA, BrokerStarted, LeaderAndIsrPartition, LeaderAndIsrUpdated, PartitionTransition,
    ReplicaTransition, RequestSent, StopReplicaPartition, TransitionFailed,
)
from statemachines.kafka_log_format import format_records

H = dict(controller_id=0, controller_epoch=2, timestamp_ms=1714392831142, cause_offset=7)


def lines(*records, **kw):
    return list(format_records(records, **kw))


def test_log4j_layout_and_replica_transition():
    rec = ReplicaTransition.make(offset=8, **H, topic="t", partition=0, replica=1, from_state=2, to_state=3)
    assert lines(rec) == ["[2024-04-29 12:13:51,142] TRACE [Controller id=0 epoch=2] Changed state of replica 1 for "
                          "partition t-0 from OnlineReplica to OfflineReplica (state.change.logger)"]
    assert lines(rec, min_level="INFO") == []


def test_partition_transitions_as_kafka_3_5_plus_prints_them():
    new = PartitionTransition.make(offset=8, **H, topic="btcusd", partition=0, from_state=3, to_state=0,
                                   replicas=(0,), leader=-1, leader_epoch=-1, isr=(), partition_epoch=0,
                                   recovery_state=0, election=0)
    online = new._replace(from_state=0, to_state=1, leader=0, leader_epoch=0, isr=(0,), election=1)
    offline = online._replace(from_state=1, to_state=2)
    assert lines(new, online, offline, layout="message") == [
        # verbatim from real-logs/fenik2305-kafka-3.6.0-state-change.log
        "[Controller id=0 epoch=2] Changed partition btcusd-0 state from NonExistentPartition to NewPartition with "
        "assigned replicas 0",
        "[Controller id=0 epoch=2] Changed partition btcusd-0 from NewPartition to OnlinePartition with state "
        "LeaderAndIsr(leader=0, leaderEpoch=0, isrWithBrokerEpoch=List(BrokerState(brokerId=0, brokerEpoch=-1)), "
        "leaderRecoveryState=RECOVERED, partitionEpoch=0)",
        "[Controller id=0 epoch=2] Changed partition btcusd-0 state from OnlinePartition to OfflinePartition",
    ]


def test_failures_print_error_and_exception_line():
    rep = TransitionFailed.make(offset=8, **H, entity=ENTITY_REPLICA, topic="t", partition=0, replica=1,
                                from_state=2, to_state=5, error="IllegalStateException", message="boom")
    part = TransitionFailed.make(offset=9, **H, entity=ENTITY_PARTITION, topic="t", partition=0, replica=-1,
                                 from_state=2, to_state=1, error="StateChangeFailedException",
                                 message="Failed to elect leader for partition t-0 under strategy "
                                         "OfflinePartitionLeaderElectionStrategy(false)")
    assert lines(rep, part, layout="message") == [
        "[Controller id=0 epoch=2] Controller 0 epoch 2 initiated state change of replica 1 for partition t-0 from "
        "OnlineReplica to ReplicaDeletionSuccessful failed",
        "java.lang.IllegalStateException: boom",
        "[Controller id=0 epoch=2] Controller 0 epoch 2 failed to change state for partition t-0 from "
        "OfflinePartition to OnlinePartition",
        "kafka.common.StateChangeFailedException: Failed to elect leader for partition t-0 under strategy "
        "OfflinePartitionLeaderElectionStrategy(false)",
    ]


def test_isr_shrink_line():
    rec = LeaderAndIsrUpdated.make(offset=8, **H, topic="t", partition=3, leader=-1, leader_epoch=5, isr=(1,),
                                   partition_epoch=7, recovery_state=0, reason=UPDATE_OFFLINE_REPLICA, replica=1)
    assert lines(rec, layout="message") == [
        "[Controller id=0 epoch=2] Partition t-3 state changed to (Leader:-1,ISR:1,LeaderRecoveryState:RECOVERED,"
        "LeaderEpoch:5,ZkVersion:7,ControllerEpoch:2) after removing replica 1 from the ISR as part of transition "
        "to OfflineReplica"]


def test_requests_print_trace_per_partition_and_info_summaries():
    lai = LeaderAndIsrPartition.make(offset=8, **H, broker_id=1, topic="t", partition=0, state_controller_epoch=2,
                                     leader=1, leader_epoch=5, isr=(1, 2), partition_epoch=7, replicas=(1, 2),
                                     adding_replicas=(), removing_replicas=(), is_new=False, recovery_state=0)
    sent = RequestSent.make(offset=9, **H, api=API_LEADER_AND_ISR, broker_id=1, broker_epoch=3, correlation_id=0,
                            partition_count=1, leader_count=1, delete_count=0, live_brokers=())
    um = [RequestSent.make(offset=10 + i, **H, api=API_UPDATE_METADATA, broker_id=b, broker_epoch=3,
                           correlation_id=1, partition_count=2, leader_count=0, delete_count=0, live_brokers=(0, 1, 2))
          for i, b in enumerate((0, 1, 2))]
    sr = StopReplicaPartition.make(offset=13, **H, broker_id=2, topic="t", partition=0, leader_epoch=5,
                                   delete_partition=True)
    sr_sent = RequestSent.make(offset=14, **H, api=API_STOP_REPLICA, broker_id=2, broker_epoch=3, correlation_id=2,
                               partition_count=1, leader_count=0, delete_count=1, live_brokers=())
    assert lines(lai, sent, *um, sr, sr_sent, layout="message") == [
        "[Controller id=0 epoch=2] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState("
        "topicName='t', partitionIndex=0, controllerEpoch=2, leader=1, leaderEpoch=5, isr=[1, 2], partitionEpoch=7, "
        "replicas=[1, 2], addingReplicas=[], removingReplicas=[], isNew=false, leaderRecoveryState=0) to broker 1 "
        "for partition t-0",
        "[Controller id=0 epoch=2] Sending LeaderAndIsr request to broker 1 with 1 become-leader and 0 "
        "become-follower partitions",
        "[Controller id=0 epoch=2] Sending UpdateMetadata request to brokers HashSet(0, 1, 2) for 2 partitions",
        "[Controller id=0 epoch=2] Sending StopReplica request StopReplicaPartitionState(partitionIndex=0, "
        "leaderEpoch=5, deletePartition=true) to broker 2 for partition t-0",
        "[Controller id=0 epoch=2] Sending StopReplica request for 1 replicas to broker 2",
    ]


def test_inputs_belong_to_controller_log_not_state_change_log():
    rec = BrokerStarted.make(offset=0, broker_id=1, host="h", port=9092, rack=None)
    assert lines(rec) == []
