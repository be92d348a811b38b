"""ReplicaStateMachine (statemachines/replica_state_machine.py).

Ports Kafka's ReplicaStateMachineTest (core/src/test/scala/unit/kafka/controller/, 3.7): Kafka mocks the
ZooKeeper client and the request batch; we give the state machine a scripted /state store (see conftest.py)
and check the context, the journal records and the requests that reach the channel instead. Kafka's test
setup: controller (and replica) broker id 5, controller epoch 50, partition t-0.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, ENTITY_REPLICA, EPOCH_DURING_DELETE, NO_LEADER,
    UPDATE_OFFLINE_REPLICA, LeaderAndIsrPartition, LeaderAndIsrUpdated, ReplicaTransition, RequestSent,
    StopReplicaPartition, TransitionFailed, UpdateMetadataPartition,
)
from statemachines.errors import ControllerMovedError, StoreError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.ports import UpdateLeaderAndIsrResult
from statemachines.states import (
    NEW_REPLICA, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
)

BROKER = 5
EPOCH = 50
TP = ("t", 0)
REPLICA = ("t", 0, BROKER)

NAMES = {
    "NewReplica": NEW_REPLICA, "OnlineReplica": ONLINE_REPLICA, "OfflineReplica": OFFLINE_REPLICA,
    "ReplicaDeletionStarted": REPLICA_DELETION_STARTED, "ReplicaDeletionSuccessful": REPLICA_DELETION_SUCCESSFUL,
    "ReplicaDeletionIneligible": REPLICA_DELETION_INELIGIBLE, "NonExistentReplica": NON_EXISTENT_REPLICA,
}


def lai_by_broker(h) -> dict:
    """(broker, topic, partition) -> the LeaderAndIsrPartition record sent."""
    return {(r.broker_id, r.topic, r.partition): r for r in h.records(LeaderAndIsrPartition)}


def stop_by_broker(h) -> dict:
    return {(r.broker_id, r.topic, r.partition): r for r in h.records(StopReplicaPartition)}


def only_failure(h) -> TransitionFailed:
    [f] = h.failures()
    return f


# --- startup ------------------------------------------------------------------------------------------


def test_startup_online_partition(harness):
    # Kafka: testStartupOnlinePartition
    h = harness
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    assert h.ctx.replica_state(REPLICA) is None
    h.rsm.startup()
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    assert h.failures() == []


def test_startup_offline_partition(harness):
    # Kafka: testStartupOfflinePartition
    h = harness
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    assert h.ctx.replica_state(REPLICA) is None
    h.rsm.startup()
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA
    # ReplicaDeletionIneligible (initial put, no record) -> OfflineReplica
    [tr] = h.records(ReplicaTransition)
    assert (tr.from_state, tr.to_state) == (REPLICA_DELETION_INELIGIBLE, OFFLINE_REPLICA)


def test_startup_with_replica_without_leader(harness):
    # Kafka: testStartupWithReplicaWithoutLeader
    h = harness
    shutdown_broker = 100
    offline_replica = ("t", 0, shutdown_broker)
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((shutdown_broker,)))
    assert h.ctx.replica_state(offline_replica) is None
    h.rsm.startup()
    assert h.ctx.replica_state(offline_replica) == OFFLINE_REPLICA
    # No leadership info: an UpdateMetadata (with no partition states) goes to the live brokers.
    [um] = h.requests(API_UPDATE_METADATA)
    assert um.broker_id == BROKER and um.partitions == ()


# --- valid transitions --------------------------------------------------------------------------------


def test_nonexistent_replica_to_new_replica_transition(harness):
    # Kafka: testNonexistentReplicaToNewReplicaTransition
    harness.rsm.handle_state_changes([REPLICA], NEW_REPLICA)
    assert harness.ctx.replica_state(REPLICA) == NEW_REPLICA
    [tr] = harness.records(ReplicaTransition)
    assert (tr.topic, tr.partition, tr.replica, tr.from_state, tr.to_state) == \
        ("t", 0, BROKER, NON_EXISTENT_REPLICA, NEW_REPLICA)
    assert harness.channel.sent == []  # no leadership info: nothing to send


def test_new_replica_to_online_replica_transition(harness):
    # Kafka: testNewReplicaToOnlineReplicaTransition
    h = harness
    h.ctx.put_replica_state(REPLICA, NEW_REPLICA)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    assert h.channel.sent == []


def test_new_replica_to_offline_replica_transition(harness):
    # Kafka: testNewReplicaToOfflineReplicaTransition
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, NEW_REPLICA)
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA
    # addStopReplicaRequestForBrokers(Seq(5), t-0, deletePartition = false)
    stops = stop_by_broker(h)
    assert list(stops) == [(BROKER, "t", 0)]
    assert stops[(BROKER, "t", 0)].delete_partition is False
    # addUpdateMetadataRequestForBrokers(Seq(5), Set(t-0)); no leadership, so no partition state in it.
    [um] = h.requests(API_UPDATE_METADATA)
    assert um.broker_id == BROKER and um.partitions == ()
    # sendRequestsToBrokers(controllerEpoch)
    assert {r.controller_epoch for r in h.channel.sent} == {EPOCH}
    assert h.store.calls == []  # no leadership info: no ISR removal


def test_online_replica_to_online_replica_transition(harness):
    # Kafka: testOnlineReplicaToOnlineReplicaTransition
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, ONLINE_REPLICA)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.leadership(TP, BROKER, (BROKER,), store=False)
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    rec = lai_by_broker(h)[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.replicas, rec.is_new) == (BROKER, 0, (BROKER,), (BROKER,), False)
    assert rec.state_controller_epoch == EPOCH
    [req] = h.requests(API_LEADER_AND_ISR)
    assert (req.broker_id, req.controller_epoch, req.broker_epoch) == (BROKER, EPOCH, 100 + BROKER)
    assert req.partitions == (rec,)
    # Every LeaderAndIsr add also adds the partition to UpdateMetadata for the live brokers.
    [um] = h.records(UpdateMetadataPartition)
    assert (um.brokers, um.topic, um.partition, um.leader) == ((BROKER,), "t", 0, BROKER)


def test_online_replica_to_offline_replica_transition(harness):
    # Kafka: testOnlineReplicaToOfflineReplicaTransition
    h = harness
    other = BROKER + 1
    h.live(BROKER, other)
    h.ctx.put_replica_state(REPLICA, ONLINE_REPLICA)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER, other)))
    h.leadership(TP, BROKER, (BROKER, other))
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)

    updated = LeaderIsrAndControllerEpoch(LeaderAndIsr(NO_LEADER, 1, (other,), 0, 1), EPOCH)
    assert h.ctx.partition_leadership_info(TP) == updated
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA
    assert h.store.ops() == ["get", "update"]
    assert h.store.calls[1][1] == {TP: LeaderAndIsr(NO_LEADER, 1, (other,), 0, 0)}  # newLeaderAndIsr(NoLeader, [6])
    # StopReplica(delete=false) to the offline replica, with the epoch known when it was added.
    stops = stop_by_broker(h)
    assert list(stops) == [(BROKER, "t", 0)]
    assert (stops[(BROKER, "t", 0)].delete_partition, stops[(BROKER, "t", 0)].leader_epoch) == (False, 0)
    # LeaderAndIsr with the shrunk ISR to the other replica only.
    lais = lai_by_broker(h)
    assert list(lais) == [(other, "t", 0)]
    rec = lais[(other, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new) == \
        (NO_LEADER, 1, (other,), 1, (BROKER, other), False)
    [upd] = h.records(LeaderAndIsrUpdated)
    assert (upd.topic, upd.partition, upd.leader, upd.leader_epoch, upd.isr, upd.partition_epoch, upd.recovery_state,
            upd.reason) == ("t", 0, NO_LEADER, 1, (other,), 1, 0, UPDATE_OFFLINE_REPLICA)


def test_offline_replica_to_online_replica_transition(harness):
    # Kafka: testOfflineReplicaToOnlineReplicaTransition
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, OFFLINE_REPLICA)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.leadership(TP, BROKER, (BROKER,), store=False)
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    rec = lai_by_broker(h)[(BROKER, "t", 0)]
    assert (rec.leader, rec.isr, rec.replicas, rec.is_new) == (BROKER, (BROKER,), (BROKER,), False)


def test_offline_replica_to_replica_deletion_started_transition(harness):
    # Kafka: testOfflineReplicaToReplicaDeletionStartedTransition
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, OFFLINE_REPLICA)
    h.rsm.handle_state_changes([REPLICA], REPLICA_DELETION_STARTED)
    assert h.ctx.replica_state(REPLICA) == REPLICA_DELETION_STARTED
    [stop] = h.records(StopReplicaPartition)
    assert (stop.broker_id, stop.topic, stop.partition, stop.delete_partition) == (BROKER, "t", 0, True)
    [req] = h.requests(API_STOP_REPLICA)
    assert req.controller_epoch == EPOCH
    [sent] = [r for r in h.records(RequestSent) if r.api == API_STOP_REPLICA]
    assert sent.delete_count == 1


def test_offline_replica_to_replica_deletion_ineligible_transition(harness):
    # Kafka: testOfflineReplicaToReplicaDeletionIneligibleTransition
    harness.ctx.put_replica_state(REPLICA, OFFLINE_REPLICA)
    harness.rsm.handle_state_changes([REPLICA], REPLICA_DELETION_INELIGIBLE)
    assert harness.ctx.replica_state(REPLICA) == REPLICA_DELETION_INELIGIBLE
    assert harness.channel.sent == []


def test_replica_deletion_started_to_replica_deletion_ineligible_transition(harness):
    # Kafka: testReplicaDeletionStartedToReplicaDeletionIneligibleTransition
    harness.ctx.put_replica_state(REPLICA, REPLICA_DELETION_STARTED)
    harness.rsm.handle_state_changes([REPLICA], REPLICA_DELETION_INELIGIBLE)
    assert harness.ctx.replica_state(REPLICA) == REPLICA_DELETION_INELIGIBLE


def test_replica_deletion_started_to_replica_deletion_successful_transition(harness):
    # Kafka: testReplicaDeletionStartedToReplicaDeletionSuccessfulTransition
    harness.ctx.put_replica_state(REPLICA, REPLICA_DELETION_STARTED)
    harness.rsm.handle_state_changes([REPLICA], REPLICA_DELETION_SUCCESSFUL)
    assert harness.ctx.replica_state(REPLICA) == REPLICA_DELETION_SUCCESSFUL


def test_replica_deletion_successful_to_nonexistent_replica_transition(harness):
    # Kafka: testReplicaDeletionSuccessfulToNonexistentReplicaTransition
    h = harness
    h.ctx.put_replica_state(REPLICA, REPLICA_DELETION_SUCCESSFUL)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.rsm.handle_state_changes([REPLICA], NON_EXISTENT_REPLICA)
    assert h.ctx.partition_replica_assignment(TP) == ()
    assert h.ctx.replica_state(REPLICA) is None
    [tr] = h.records(ReplicaTransition)
    assert (tr.from_state, tr.to_state) == (REPLICA_DELETION_SUCCESSFUL, NON_EXISTENT_REPLICA)


def test_replica_deletion_ineligible_to_online_replica_transition(harness):
    # Kafka: testReplicaDeletionIneligibleToOnlineReplicaTransition
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, REPLICA_DELETION_INELIGIBLE)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.leadership(TP, BROKER, (BROKER,), store=False)
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    rec = lai_by_broker(h)[(BROKER, "t", 0)]
    assert (rec.leader, rec.isr, rec.replicas, rec.is_new) == (BROKER, (BROKER,), (BROKER,), False)


# --- invalid transitions (Kafka's testInvalid*Transition, all 30) --------------------------------------------

INVALID = [
    # (Kafka test name, from (None: no state put, as in Kafka's testInvalidNonexistent* tests), to)
    ("testInvalidNonexistentReplicaToOnlineReplicaTransition", None, "OnlineReplica"),
    ("testInvalidNonexistentReplicaToOfflineReplicaTransition", None, "OfflineReplica"),
    ("testInvalidNonexistentReplicaToReplicaDeletionStartedTransition", None, "ReplicaDeletionStarted"),
    ("testInvalidNonexistentReplicaToReplicaDeletionIneligibleTransition", None, "ReplicaDeletionIneligible"),
    ("testInvalidNonexistentReplicaToReplicaDeletionSuccessfulTransition", None, "ReplicaDeletionSuccessful"),
    ("testInvalidNewReplicaToNonexistentReplicaTransition", "NewReplica", "NonExistentReplica"),
    ("testInvalidNewReplicaToReplicaDeletionStartedTransition", "NewReplica", "ReplicaDeletionStarted"),
    ("testInvalidNewReplicaToReplicaDeletionIneligibleTransition", "NewReplica", "ReplicaDeletionIneligible"),
    ("testInvalidNewReplicaToReplicaDeletionSuccessfulTransition", "NewReplica", "ReplicaDeletionSuccessful"),
    ("testInvalidOnlineReplicaToNonexistentReplicaTransition", "OnlineReplica", "NonExistentReplica"),
    ("testInvalidOnlineReplicaToNewReplicaTransition", "OnlineReplica", "NewReplica"),
    ("testInvalidOnlineReplicaToReplicaDeletionStartedTransition", "OnlineReplica", "ReplicaDeletionStarted"),
    ("testInvalidOnlineReplicaToReplicaDeletionIneligibleTransition", "OnlineReplica", "ReplicaDeletionIneligible"),
    ("testInvalidOnlineReplicaToReplicaDeletionSuccessfulTransition", "OnlineReplica", "ReplicaDeletionSuccessful"),
    ("testInvalidOfflineReplicaToNonexistentReplicaTransition", "OfflineReplica", "NonExistentReplica"),
    ("testInvalidOfflineReplicaToNewReplicaTransition", "OfflineReplica", "NewReplica"),
    ("testInvalidOfflineReplicaToReplicaDeletionSuccessfulTransition", "OfflineReplica", "ReplicaDeletionSuccessful"),
    ("testInvalidReplicaDeletionStartedToNonexistentReplicaTransition", "ReplicaDeletionStarted", "NonExistentReplica"),
    ("testInvalidReplicaDeletionStartedToNewReplicaTransition", "ReplicaDeletionStarted", "NewReplica"),
    ("testInvalidReplicaDeletionStartedToOnlineReplicaTransition", "ReplicaDeletionStarted", "OnlineReplica"),
    ("testInvalidReplicaDeletionStartedToOfflineReplicaTransition", "ReplicaDeletionStarted", "OfflineReplica"),
    ("testInvalidReplicaDeletionSuccessfulToNewReplicaTransition", "ReplicaDeletionSuccessful", "NewReplica"),
    ("testInvalidReplicaDeletionSuccessfulToOnlineReplicaTransition", "ReplicaDeletionSuccessful", "OnlineReplica"),
    ("testInvalidReplicaDeletionSuccessfulToOfflineReplicaTransition", "ReplicaDeletionSuccessful", "OfflineReplica"),
    ("testInvalidReplicaDeletionSuccessfulToReplicaDeletionStartedTransition",
     "ReplicaDeletionSuccessful", "ReplicaDeletionStarted"),
    ("testInvalidReplicaDeletionSuccessfulToReplicaDeletionIneligibleTransition",
     "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible"),
    ("testInvalidReplicaDeletionIneligibleToNonexistentReplicaTransition",
     "ReplicaDeletionIneligible", "NonExistentReplica"),
    ("testInvalidReplicaDeletionIneligibleToNewReplicaTransition", "ReplicaDeletionIneligible", "NewReplica"),
    ("testInvalidReplicaDeletionIneligibleToReplicaDeletionStartedTransition",
     "ReplicaDeletionIneligible", "ReplicaDeletionStarted"),
    ("testInvalidReplicaDeletionIneligibleToReplicaDeletionSuccessfulTransition",
     "ReplicaDeletionIneligible", "ReplicaDeletionSuccessful"),
]


@pytest.mark.parametrize("kafka_test, frm, to", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_transition(make_harness, kafka_test, frm, to):
    # Kafka's testInvalidTransition(from, to): the state is unchanged. We also check the refusal record.
    h = make_harness()
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.leadership(TP, BROKER, (BROKER,))
    if frm is not None:
        h.ctx.put_replica_state(REPLICA, NAMES[frm])
    h.rsm.handle_state_changes([REPLICA], NAMES[to])
    effective_from = frm or "NonExistentReplica"
    assert h.ctx.replica_state(REPLICA) == NAMES[effective_from]
    assert h.records(ReplicaTransition) == []
    assert h.channel.sent == []
    assert h.store.calls == []
    f = only_failure(h)
    assert (f.entity, f.topic, f.partition, f.replica, f.from_state, f.to_state) == \
        (ENTITY_REPLICA, "t", 0, BROKER, NAMES[effective_from], NAMES[to])
    assert f.error == "IllegalStateException"
    assert f.message.startswith("Replica [Topic=t,Partition=0,Replica=5] should be in the ")
    assert f.message.endswith(f" states before moving to {to} state. Instead it is in {effective_from} state")


def test_invalid_transition_message_lists_previous_states_in_kafka_order(harness):
    harness.ctx.put_replica_state(REPLICA, REPLICA_DELETION_STARTED)
    harness.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert only_failure(harness).message == (
        "Replica [Topic=t,Partition=0,Replica=5] should be in the NewReplica,OnlineReplica,OfflineReplica,"
        "ReplicaDeletionIneligible states before moving to OnlineReplica state. "
        "Instead it is in ReplicaDeletionStarted state")


def test_invalid_and_valid_replicas_in_one_call(harness):
    h = harness
    ok, bad = ("t", 0, 1), ("t", 0, 2)
    h.ctx.put_replica_state(ok, OFFLINE_REPLICA)
    h.ctx.put_replica_state(bad, ONLINE_REPLICA)
    h.rsm.handle_state_changes([ok, bad], REPLICA_DELETION_INELIGIBLE)
    assert h.ctx.replica_state(ok) == REPLICA_DELETION_INELIGIBLE
    assert h.ctx.replica_state(bad) == ONLINE_REPLICA
    assert [f.replica for f in h.failures()] == [2]
    assert [t.replica for t in h.records(ReplicaTransition)] == [1]


# --- NewReplica / OnlineReplica details (ZkReplicaStateMachine.doHandleStateChanges) --------------------------


def test_new_replica_with_leadership_gets_leader_and_isr_is_new(harness):
    h = harness
    h.live(1, 2, BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2, BROKER), adding_replicas=(BROKER,)))
    h.leadership(TP, 1, (1, 2), leader_epoch=3, partition_epoch=7)
    h.rsm.handle_state_changes([REPLICA], NEW_REPLICA)
    assert h.ctx.replica_state(REPLICA) == NEW_REPLICA
    lais = lai_by_broker(h)
    assert list(lais) == [(BROKER, "t", 0)]
    rec = lais[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.is_new) == (1, 3, (1, 2), 7, True)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((1, 2, BROKER), (BROKER,), ())
    [um] = h.records(UpdateMetadataPartition)
    assert um.brokers == (1, 2, BROKER)


def test_new_replica_refused_when_it_is_the_leader(harness):
    # Kafka: StateChangeFailedException, logged with OfflineReplica as the target (sic); state unchanged.
    h = harness
    h.live(BROKER)
    h.leadership(TP, BROKER, (BROKER,))
    h.rsm.handle_state_changes([REPLICA], NEW_REPLICA)
    assert h.ctx.replica_state(REPLICA) == NON_EXISTENT_REPLICA
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == (NON_EXISTENT_REPLICA, OFFLINE_REPLICA, "StateChangeFailedException")
    assert f.message == ("Replica 5 for partition t-0 cannot be moved to NewReplica state as it is being "
                         "requested to become leader")
    assert h.channel.sent == []


def test_new_replica_to_online_adds_missing_replica_to_assignment(harness):
    h = harness
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2)))
    h.leadership(TP, 1, (1, 2), store=False)
    h.ctx.put_replica_state(REPLICA, NEW_REPLICA)
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    assert h.ctx.partition_replica_assignment(TP) == (1, 2, BROKER)
    assert h.records(LeaderAndIsrPartition) == []  # NewReplica -> OnlineReplica sends nothing


def test_online_replica_without_leadership_sends_nothing(harness):
    h = harness
    h.live(BROKER)
    h.ctx.put_replica_state(REPLICA, OFFLINE_REPLICA)
    h.rsm.handle_state_changes([REPLICA], ONLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    assert h.channel.sent == []


# --- OfflineReplica: ISR removal against the store (removeReplicasFromIsr) -----------------------------------


def _online_pair(h, leader=BROKER, isr=(BROKER, 6), **kw):
    h.live(BROKER, 6)
    h.ctx.put_replica_state(REPLICA, ONLINE_REPLICA)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER, 6)))
    return h.leadership(TP, leader, isr, **kw)


def test_offline_follower_shrinks_isr_keeps_leader(harness):
    h = harness
    _online_pair(h, leader=6, isr=(6, BROKER), leader_epoch=4, partition_epoch=9)
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    lai = h.ctx.partition_leadership_info(TP).leader_and_isr
    assert lai == LeaderAndIsr(6, 5, (6,), 0, 10)  # leaderEpoch + 1 even though only the ISR shrank
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA


def test_offline_last_isr_member_keeps_isr(harness):
    # "ISR unchanged if size 1": the leader is removed, the ISR is not.
    h = harness
    _online_pair(h, leader=BROKER, isr=(BROKER,))
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == LeaderAndIsr(NO_LEADER, 1, (BROKER,), 0, 1)
    rec = lai_by_broker(h)[(6, "t", 0)]
    assert (rec.leader, rec.isr) == (NO_LEADER, (BROKER,))


def test_offline_replica_not_in_stored_isr_writes_nothing(harness):
    h = harness
    _online_pair(h, leader=6, isr=(6,), controller_epoch=EPOCH - 3)
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.store.ops() == ["get"]
    assert h.records(LeaderAndIsrUpdated) == []
    # Cached again under the current controller epoch, and sent to the other replicas.
    info = h.ctx.partition_leadership_info(TP)
    assert info.controller_epoch == EPOCH and info.leader_and_isr == LeaderAndIsr(6, 0, (6,), 0, 0)
    assert list(lai_by_broker(h)) == [(6, "t", 0)]
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA


def test_offline_retries_bad_version(harness):
    # A concurrent ISR change by the leader bumps the znode version: the write fails with BADVERSION, the
    # state is read again and the removal retried on the new state.
    h = harness
    _online_pair(h, leader=6, isr=(6, BROKER))
    concurrent = LeaderIsrAndControllerEpoch(LeaderAndIsr(6, 0, (6, BROKER, 7), 0, 1), EPOCH)

    def leader_expands_isr_first(states):
        if len(h.store.calls) == 2:  # first write
            h.store.states[TP] = concurrent
    h.store.on_update = leader_expands_isr_first
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.store.ops() == ["get", "update", "get", "update"]
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == LeaderAndIsr(6, 1, (6, 7), 0, 2)
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA
    assert h.failures() == []
    assert len(h.records(ReplicaTransition)) == 1


def test_offline_no_state_znode_fails(harness):
    # NONODE for the /state znode (topic not being deleted): StateChangeFailedException, state unchanged.
    h = harness
    _online_pair(h, store=False)
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == (ONLINE_REPLICA, OFFLINE_REPLICA, "StateChangeFailedException")
    assert f.message == ("Failed to change state of replica 5 for partition t-0 since the leader and isr path "
                         "in zookeeper is empty")
    # The StopReplica was added before the ISR removal and is still sent.
    assert list(stop_by_broker(h)) == [(BROKER, "t", 0)]
    assert h.records(LeaderAndIsrPartition) == []


def test_offline_no_state_znode_for_topic_queued_for_deletion_is_dropped(harness):
    # Kafka drops such partitions silently: no failure, no transition; StopReplica carries epoch -2.
    h = harness
    _online_pair(h, store=False)
    h.ctx.queue_topic_deletion(["t"])
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.failures() == []
    assert h.records(ReplicaTransition) == []
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    assert stop_by_broker(h)[(BROKER, "t", 0)].leader_epoch == EPOCH_DURING_DELETE


def test_offline_topic_queued_for_deletion_sends_no_leader_and_isr(harness):
    h = harness
    _online_pair(h)
    h.ctx.queue_topic_deletion(["t"])
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == OFFLINE_REPLICA
    assert h.records(LeaderAndIsrPartition) == []
    assert h.store.ops() == ["get", "update"]


def test_offline_stale_controller_epoch_aborts(harness):
    # The /state znode was written by a newer controller: abort, no write, state unchanged.
    h = harness
    _online_pair(h, controller_epoch=EPOCH + 1)
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.store.ops() == ["get"]
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    f = only_failure(h)
    assert f.error == "StateChangeFailedException"
    assert f.message == ("Leader and isr path written by another controller. This probably means the current "
                         "controller with epoch 50 went through a soft failure and another controller was elected "
                         "with epoch 51. Aborting state change by this controller")


def test_offline_state_read_throws(harness):
    class ZooKeeperClientException(Exception):
        pass

    def boom(partitions):
        raise ZooKeeperClientException("test")
    h = harness
    _online_pair(h)
    h.store.on_get = boom
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    f = only_failure(h)
    assert (f.error, f.message, f.to_state) == ("ZooKeeperClientException", "test", OFFLINE_REPLICA)


def test_offline_write_error_for_partition(harness):
    h = harness
    _online_pair(h)
    h.store.on_update = lambda states: UpdateLeaderAndIsrResult({TP: StoreError("NONODE")}, [])
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA
    f = only_failure(h)
    assert f.error == "org.apache.zookeeper.KeeperException$NoNodeException"
    assert h.ctx.partition_leadership_info(TP).leader_and_isr.leader_epoch == 0  # cache untouched


def test_controller_moved_is_rethrown(harness):
    h = harness
    _online_pair(h)
    h.store.controller_epoch_zk_version = 1  # another controller bumped /controller_epoch
    with pytest.raises(ControllerMovedError):
        h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA


def test_other_errors_are_swallowed(harness):
    # Kafka: "Error while moving some replicas to ... state", not rethrown.
    h = harness
    _online_pair(h)

    def boom(states):
        raise RuntimeError("unexpected")
    h.store.on_update = boom
    h.rsm.handle_state_changes([REPLICA], OFFLINE_REPLICA)  # does not raise
    assert h.ctx.replica_state(REPLICA) == ONLINE_REPLICA


def test_requests_grouped_per_broker(harness):
    # handleStateChanges groups by broker and sends one request per broker and API.
    h = harness
    h.live(1, 2, 3)
    h.ctx.add_topic("t", [(1, 2, 3), (2, 3, 1)])
    replicas = h.ctx.replicas_for_topic("t")
    for r in replicas:
        h.ctx.put_replica_state(r, OFFLINE_REPLICA)
    h.rsm.handle_state_changes(replicas, REPLICA_DELETION_STARTED)
    stops = h.requests(API_STOP_REPLICA)
    assert [r.broker_id for r in stops] == [1, 2, 3]
    assert all(len(r.partitions) == 2 and all(p.delete_partition for p in r.partitions) for r in stops)
    assert {r.correlation_id for r in stops} == {0}


def test_later_leader_and_isr_for_same_broker_and_partition_overwrites(harness):
    # All replicas of a partition go offline in one call (one batch): each broker's ISR removal writes a new
    # state, and a broker that is sent the partition twice gets only the latest entry.
    h = harness
    h.live(1, 2, 3)
    h.ctx.add_topic("t", [(1, 2, 3)])
    h.leadership(TP, 1, (1, 2, 3))
    replicas = h.ctx.replicas_for_topic("t")
    for r in replicas:
        h.ctx.put_replica_state(r, ONLINE_REPLICA)
    h.rsm.handle_state_changes(replicas, OFFLINE_REPLICA)
    assert all(h.ctx.replica_state(r) == OFFLINE_REPLICA for r in replicas)
    final = h.ctx.partition_leadership_info(TP).leader_and_isr
    assert (final.leader, final.leader_epoch, final.isr) == (NO_LEADER, 3, (3,))  # last ISR member is kept
    assert len(h.records(LeaderAndIsrUpdated)) == 3
    lais = h.records(LeaderAndIsrPartition)
    assert sorted(r.broker_id for r in lais) == [1, 2, 3]  # one entry per broker
    for r in lais:
        assert r.leader_epoch >= 2 and r.leader == NO_LEADER
    [um] = h.records(UpdateMetadataPartition)
    assert (um.leader_epoch, um.isr) == (3, (3,))
    assert sorted(r.broker_id for r in h.records(StopReplicaPartition)) == [1, 2, 3]


# --- property: only legal transitions, refusals change nothing ----------------------------------------------

# Literal copy of Kafka 3.7's legal (from, to) pairs, by state byte.
LEGAL = {
    (7, 1),
    (1, 2), (2, 2), (3, 2), (6, 2),
    (1, 3), (2, 3), (3, 3), (6, 3),
    (3, 4),
    (4, 5),
    (3, 6), (4, 6),
    (5, 7),
}
CLUSTER_REPLICAS = [("t", p, b) for p in range(2) for b in (1, 2, 3)] + [("u", 0, b) for b in (1, 2)]
steps = st.lists(
    st.tuples(st.lists(st.sampled_from(CLUSTER_REPLICAS), min_size=1, max_size=5, unique=True),
              st.integers(min_value=1, max_value=7)),
    min_size=1, max_size=25)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps, queued=st.booleans())
def test_random_transitions_are_always_legal(make_harness, steps, queued):
    h = make_harness()
    h.live(1, 2, 3)
    h.ctx.add_topic("t", [(1, 2, 3), (2, 3, 1)])
    h.ctx.add_topic("u", [(1, 2)])
    h.leadership(("t", 0), 1, (1, 2, 3))
    h.leadership(("t", 1), 2, (2, 3, 1))
    h.leadership(("u", 0), 1, (1, 2), store=False)  # no /state znode: OfflineReplica fails or is dropped
    if queued:
        h.ctx.queue_topic_deletion(["u"])
    universe = CLUSTER_REPLICAS
    for replicas, target in steps:
        before = {r: h.ctx.replica_state(r) for r in universe}
        n = len(h.journal.records)
        h.rsm.handle_state_changes(replicas, target)
        new = h.journal.records[n:]
        transitions = {}
        for rec in new:
            if isinstance(rec, ReplicaTransition):
                rep = (rec.topic, rec.partition, rec.replica)
                assert rep not in transitions, "one transition per replica and call"
                transitions[rep] = rec
                prev = before[rep] if before[rep] is not None else NON_EXISTENT_REPLICA
                assert rec.from_state == prev
                assert rec.to_state == target
                assert (rec.from_state, rec.to_state) in LEGAL
        illegal = {(f.topic, f.partition, f.replica) for f in new
                   if isinstance(f, TransitionFailed) and f.error == "IllegalStateException"}
        assert not (illegal & transitions.keys())
        for rep in universe:
            after = h.ctx.replica_state(rep)
            if rep in transitions:
                assert after == (None if target == NON_EXISTENT_REPLICA else target)
            elif rep in replicas:
                # refused or failed: unchanged (an absent state becomes an explicit NonExistentReplica)
                assert after == (before[rep] if before[rep] is not None else NON_EXISTENT_REPLICA)
                prev = after
                assert (prev, target) not in LEGAL or rep not in illegal
                if (prev, target) not in LEGAL:
                    assert rep in illegal
            else:
                assert after == before[rep]
