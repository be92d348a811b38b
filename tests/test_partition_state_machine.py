"""PartitionStateMachine (statemachines/partition_state_machine.py).

Ports Kafka's PartitionStateMachineTest (core/src/test/scala/unit/kafka/controller/, 3.7, plus the older
variants of a few cases): where Kafka mocks KafkaZkClient and ControllerBrokerRequestBatch, we script the /state
store (conftest.ScriptedStore) and check the context, the journal records and the requests sent. Kafka's test
setup: controller/broker id 5, controller epoch 50, partition t-0.
"""
from __future__ import annotations

import pytest

from events.records import (
    API_LEADER_AND_ISR, ELECTION_CONTROLLED_SHUTDOWN, ELECTION_NEW_PARTITION, ELECTION_NONE, ELECTION_OFFLINE,
    ELECTION_OFFLINE_UNCLEAN, ELECTION_PREFERRED, ELECTION_REASSIGN, ENTITY_PARTITION, NO_LEADER, RECOVERED, RECOVERING,
    LeaderAndIsrPartition, PartitionTransition, UpdateMetadataPartition,
)
from statemachines.errors import ControllerMovedError, StoreError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.partition_state_machine import (
    ControlledShutdownPartitionLeaderElectionStrategy, OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy, ReassignPartitionLeaderElectionStrategy,
)
from statemachines.ports import UpdateLeaderAndIsrResult
from statemachines.states import NEW_PARTITION, NON_EXISTENT_PARTITION, OFFLINE_PARTITION, ONLINE_PARTITION

BROKER = 5
EPOCH = 50
TP = ("t", 0)
OFFLINE_CLEAN = OfflinePartitionLeaderElectionStrategy(False)


class ZooKeeperClientException(Exception):
    """Stands in for kafka.zookeeper.ZooKeeperClientException thrown by the mocked client."""


def raise_zk(*_):
    raise ZooKeeperClientException("test")


def lai_by_broker(h) -> dict:
    return {(r.broker_id, r.topic, r.partition): r for r in h.records(LeaderAndIsrPartition)}


def only_failure(h):
    [f] = h.failures()
    return f


def only_transition(h) -> PartitionTransition:
    [t] = h.records(PartitionTransition)
    return t


def written_epoch(epoch: int):
    """An update hook answering like Kafka's mocks: the write succeeds with the given new zkVersion."""
    def hook(states):
        return UpdateLeaderAndIsrResult({tp: lai.with_partition_epoch(epoch) for tp, lai in states.items()}, [])
    return hook


def single_broker_partition(h, state):
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER,)))
    h.ctx.put_partition_state(TP, state)


# --- NonExistentPartition / NewPartition -----------------------------------------------------------------


def test_nonexistent_partition_to_new_partition_transition(harness):
    # Kafka: testNonexistentPartitionToNewPartitionTransition
    h = harness
    result = h.psm.handle_state_changes([TP], NEW_PARTITION)
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    t = only_transition(h)
    assert (t.from_state, t.to_state, t.election, t.leader) == (NON_EXISTENT_PARTITION, NEW_PARTITION, ELECTION_NONE,
                                                                NO_LEADER)
    assert result == {TP: None}
    assert h.store.calls == [] and h.channel.sent == []


def test_invalid_nonexistent_partition_to_online_partition_transition(harness):
    # Kafka: testInvalidNonexistentPartitionToOnlinePartitionTransition
    h = harness
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == NON_EXISTENT_PARTITION
    f = only_failure(h)
    assert (f.entity, f.from_state, f.to_state, f.error) == \
        (ENTITY_PARTITION, NON_EXISTENT_PARTITION, ONLINE_PARTITION, "IllegalStateException")
    assert f.message == ("Partition t-0 should be in one of NewPartition,OnlinePartition,OfflinePartition states "
                         "before moving to OnlinePartition state. Instead it is in NonExistentPartition state")
    assert h.store.calls == []


def test_invalid_nonexistent_partition_to_offline_partition_transition(harness):
    # Kafka: testInvalidNonexistentPartitionToOfflinePartitionTransition
    h = harness
    h.psm.handle_state_changes([TP], OFFLINE_PARTITION)
    assert h.ctx.partition_state(TP) == NON_EXISTENT_PARTITION
    assert only_failure(h).error == "IllegalStateException"
    assert h.ctx.offline_partition_count == 0


def test_new_partition_to_online_partition_transition(harness):
    # Kafka: testNewPartitionToOnlinePartitionTransition
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)

    expected = LeaderIsrAndControllerEpoch(LeaderAndIsr(BROKER, 0, (BROKER,), RECOVERED, 0), EPOCH)
    assert h.store.calls == [("create", {TP: expected})]  # createTopicPartitionStatesRaw(Map(t-0 -> ...))
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert h.ctx.partition_leadership_info(TP) == expected
    assert result[TP] == expected.leader_and_isr
    # addLeaderAndIsrRequestForBrokers(Seq(5), t-0, ..., isNew = true)
    lais = lai_by_broker(h)
    assert list(lais) == [(BROKER, "t", 0)]
    rec = lais[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new,
            rec.state_controller_epoch) == (BROKER, 0, (BROKER,), 0, (BROKER,), True, EPOCH)
    [req] = h.requests(API_LEADER_AND_ISR)
    assert req.controller_epoch == EPOCH
    t = only_transition(h)
    assert (t.from_state, t.to_state, t.leader, t.isr, t.election) == \
        (NEW_PARTITION, ONLINE_PARTITION, BROKER, (BROKER,), ELECTION_NEW_PARTITION)


def test_new_partition_to_online_zookeeper_client_exception_from_create_states(harness):
    # Kafka: testNewPartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromCreateStates
    # (called ...ZkUtilsExceptionFromCreateStates in older versions)
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    h.store.on_create = raise_zk
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["create"]
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    assert h.ctx.partition_leadership_info(TP) is None
    f = only_failure(h)
    # Kafka logs this one with NewPartition as the target (sic).
    assert (f.from_state, f.to_state, f.error, f.message) == \
        (NEW_PARTITION, NEW_PARTITION, "ZooKeeperClientException", "test")
    assert isinstance(result[TP], ZooKeeperClientException)
    assert h.records(LeaderAndIsrPartition) == []
    assert h.batch.is_empty()  # sendRequestsToBrokers was still called


def test_new_partition_to_online_error_code_from_create_states(harness):
    # Kafka: testNewPartitionToOnlinePartitionTransitionErrorCodeFromCreateStates (NODEEXISTS)
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    h.store.on_create = lambda states: {tp: StoreError("NODEEXISTS") for tp in states}
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["create"]
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == \
        (NEW_PARTITION, ONLINE_PARTITION, "org.apache.zookeeper.KeeperException$NodeExistsException")
    assert h.records(LeaderAndIsrPartition) == []
    assert h.batch.is_empty()


def test_new_partition_error_code_message_is_zookeepers(harness):
    # Kafka: logFailedStateChange(partition, NewPartition, OnlinePartition, KeeperException.create(NODEEXISTS))
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    h.store.on_create = lambda states: {tp: StoreError("NODEEXISTS") for tp in states}
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert only_failure(h).message == "KeeperErrorCode = NodeExists"


def test_new_partition_existing_znode_message_matches_kafka(harness):
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    h.leadership(TP, BROKER, (BROKER,), context=False)  # the /state znode already exists
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    assert only_failure(h).message == "KeeperErrorCode = NodeExists"


def test_new_partition_to_offline_partition_transition(harness):
    # Kafka: testNewPartitionToOfflinePartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, NEW_PARTITION)
    h.psm.handle_state_changes([TP], OFFLINE_PARTITION)
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert h.ctx.offline_partition_count == 1


def test_invalid_new_partition_to_nonexistent_partition_transition(harness):
    # Kafka: testInvalidNewPartitionToNonexistentPartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, NEW_PARTITION)
    h.psm.handle_state_changes([TP], NON_EXISTENT_PARTITION)
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    assert only_failure(h).message == ("Partition t-0 should be in one of OfflinePartition states before moving to "
                                       "NonExistentPartition state. Instead it is in NewPartition state")


def test_new_partition_with_no_live_replica(harness):
    # initializeLeaderAndIsrForPartitions: "No assigned replica is alive."; the partition stays NewPartition.
    h = harness
    h.live(1, 2)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((3, 4)))
    h.ctx.put_partition_state(TP, NEW_PARTITION)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == NEW_PARTITION
    assert h.store.calls == []
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == (NEW_PARTITION, ONLINE_PARTITION, "StateChangeFailedException")
    assert f.message.startswith("Controller 5 epoch 50 encountered error during state change of partition t-0 "
                                "from New to Online, assigned replicas are [3,4], live brokers are [")
    # Scala prints the live-broker set as Set(1, 2) or HashSet(1, 2) depending on the collection.
    assert f.message.endswith("Set(1, 2)]. No assigned replica is alive.")


def test_new_partition_leader_is_first_live_replica_isr_all_live(harness):
    h = harness
    h.live(1, 3, 4)
    h.ctx.shutting_down_broker_ids.add(4)  # not "online" for initialization
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((2, 3, 4, 1)))
    h.ctx.put_partition_state(TP, NEW_PARTITION)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == LeaderAndIsr(3, 0, (3, 1), RECOVERED, 0)
    # LeaderAndIsr (isNew) goes to the ISR only; UpdateMetadata to every live-or-shutting-down broker.
    assert sorted(b for b, _, _ in lai_by_broker(h)) == [1, 3]
    assert all(r.is_new for r in h.records(LeaderAndIsrPartition))
    [um] = h.records(UpdateMetadataPartition)
    assert um.brokers == (1, 3, 4) and um.offline_replicas == (2, 4)


def test_new_partition_controller_moved_is_rethrown(harness):
    h = harness
    single_broker_partition(h, NEW_PARTITION)
    h.store.controller_epoch_zk_version = 7
    with pytest.raises(ControllerMovedError):
        h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == NEW_PARTITION


# --- OnlinePartition ------------------------------------------------------------------------------------


def test_online_partition_to_online_transition(harness):
    # Kafka: testOnlinePartitionToOnlineTransition (preferred replica election)
    h = harness
    single_broker_partition(h, ONLINE_PARTITION)
    h.leadership(TP, BROKER, (BROKER,))
    h.store.on_update = written_epoch(2)  # the mock answers with zkVersion 2
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, PreferredReplicaPartitionLeaderElectionStrategy())

    assert h.store.ops() == ["get", "update"]
    assert h.store.calls[1][1] == {TP: LeaderAndIsr(BROKER, 1, (BROKER,), RECOVERED, 0)}  # newLeader(5)
    updated = LeaderAndIsr(BROKER, 1, (BROKER,), RECOVERED, 2)
    assert result[TP] == updated
    assert h.ctx.partition_leadership_info(TP) == LeaderIsrAndControllerEpoch(updated, EPOCH)
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    rec = lai_by_broker(h)[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new) == \
        (BROKER, 1, (BROKER,), 2, (BROKER,), False)
    t = only_transition(h)
    assert (t.from_state, t.to_state, t.election, t.partition_epoch) == \
        (ONLINE_PARTITION, ONLINE_PARTITION, ELECTION_PREFERRED, 2)


def test_online_partition_to_online_transition_for_controlled_shutdown(harness):
    # Kafka: testOnlinePartitionToOnlineTransitionForControlledShutdown
    h = harness
    other = BROKER + 1
    h.live(BROKER, other)
    h.ctx.shutting_down_broker_ids.add(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER, other)))
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.leadership(TP, BROKER, (BROKER, other))
    h.store.on_update = written_epoch(2)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, ControlledShutdownPartitionLeaderElectionStrategy())

    assert h.store.calls[1][1] == {TP: LeaderAndIsr(other, 1, (other,), RECOVERED, 0)}  # newLeaderAndIsr(6, [6])
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    # The LeaderAndIsr goes to both brokers, including the shutting-down one.
    lais = lai_by_broker(h)
    assert sorted(lais) == [(BROKER, "t", 0), (other, "t", 0)]
    for rec in lais.values():
        assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new) == \
            (other, 1, (other,), 2, (BROKER, other), False)
    assert only_transition(h).election == ELECTION_CONTROLLED_SHUTDOWN


def test_online_partition_to_offline_transition(harness):
    # Kafka: testOnlinePartitionToOfflineTransition
    h = harness
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.psm.handle_state_changes([TP], OFFLINE_PARTITION)
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert h.channel.sent == [] and h.store.calls == []


def test_invalid_online_partition_to_nonexistent_partition_transition(harness):
    # Kafka: testInvalidOnlinePartitionToNonexistentPartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.psm.handle_state_changes([TP], NON_EXISTENT_PARTITION)
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert only_failure(h).error == "IllegalStateException"


def test_invalid_online_partition_to_new_partition_transition(harness):
    # Kafka: testInvalidOnlinePartitionToNewPartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.psm.handle_state_changes([TP], NEW_PARTITION)
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert only_failure(h).message == ("Partition t-0 should be in one of NonExistentPartition states before moving "
                                       "to NewPartition state. Instead it is in OnlinePartition state")


def test_preferred_leader_election_with_in_flight_isr_shrink(harness):
    # Kafka: testPreferredLeaderElectionWithInFlightIsrShrink (in a variant of PartitionStateMachineTest):
    # the leader shrinks the ISR while the controller elects the preferred leader; the write fails with
    # BADVERSION, the new state is read and the election retried on the shrunk ISR.
    h = harness
    other, preferred = BROKER + 1, BROKER + 2
    replicas = (preferred, BROKER, other)
    h.live(BROKER, other, preferred)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment(replicas))
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.leadership(TP, BROKER, (BROKER, other, preferred), leader_epoch=1, partition_epoch=1)
    shrunk = LeaderIsrAndControllerEpoch(LeaderAndIsr(BROKER, 1, (BROKER, preferred), RECOVERED, 2), EPOCH)

    def leader_shrinks_isr_first(states):
        if h.store.ops().count("update") == 1:
            h.store.states[TP] = shrunk
    h.store.on_update = leader_shrinks_isr_first
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, PreferredReplicaPartitionLeaderElectionStrategy())

    assert h.store.ops() == ["get", "update", "get", "update"]
    assert h.store.calls[1][1] == {TP: LeaderAndIsr(preferred, 2, (BROKER, other, preferred), RECOVERED, 1)}
    preferred_lai = LeaderAndIsr(preferred, 2, (BROKER, preferred), RECOVERED, 3)
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == preferred_lai
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert h.failures() == []
    # Recipients: the whole assignment.
    lais = lai_by_broker(h)
    assert sorted(b for b, _, _ in lais) == sorted(replicas)
    assert {(r.leader, r.isr, r.partition_epoch) for r in lais.values()} == {(preferred, (BROKER, preferred), 3)}


def test_preferred_election_fails_when_preferred_not_in_isr(harness):
    h = harness
    h.live(1, 2)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2)))
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.leadership(TP, 2, (2,))
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, PreferredReplicaPartitionLeaderElectionStrategy())
    assert h.store.ops() == ["get"]  # no write, no epoch bump
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == (ONLINE_PARTITION, ONLINE_PARTITION, "StateChangeFailedException")
    assert f.message == ("Failed to elect leader for partition t-0 under strategy "
                         "PreferredReplicaPartitionLeaderElectionStrategy")
    assert result[TP] is not None and str(result[TP]) == f.message
    assert h.ctx.partition_leadership_info(TP).leader_and_isr.leader_epoch == 0
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION  # an election failure leaves the state as it was


@pytest.mark.parametrize("isr, shutting_down", [((2,), {2}), ((2, 4), {2, 4})],
                         ids=["LastIsrShuttingDown", "AllIsrSimultaneouslyShutdown"])
def test_controlled_shutdown_election_without_eligible_leader(harness, isr, shutting_down):
    # PartitionLeaderElectionAlgorithmsTest testControlledShutdownPartitionLeaderElection{LastIsrShuttingDown,
    # AllIsrSimultaneouslyShutdown}, through the state machine: no write, Online stays Online.
    h = harness
    h.live(2, 4)
    h.ctx.shutting_down_broker_ids.update(shutting_down)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((2, 4)))
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.leadership(TP, 2, isr)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, ControlledShutdownPartitionLeaderElectionStrategy())
    assert h.store.ops() == ["get"]
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert only_failure(h).message == ("Failed to elect leader for partition t-0 under strategy "
                                       "ControlledShutdownPartitionLeaderElectionStrategy")


def test_reassign_election_uses_target_replicas(harness):
    # leaderForReassign: leader = first target replica live and in the ISR, ISR unchanged, epoch + 1,
    # LeaderAndIsr to every target replica (not to the removing one).
    h = harness
    h.live(1, 2, 3, 4)
    h.ctx.update_partition_full_replica_assignment(
        TP, ReplicaAssignment((1, 2, 3, 4), adding_replicas=(4,), removing_replicas=(1,)))
    h.ctx.put_partition_state(TP, ONLINE_PARTITION)
    h.leadership(TP, 1, (1, 2, 3), leader_epoch=6, partition_epoch=4)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, ReassignPartitionLeaderElectionStrategy())
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == LeaderAndIsr(2, 7, (1, 2, 3), RECOVERED, 5)
    lais = lai_by_broker(h)
    assert sorted(b for b, _, _ in lais) == [2, 3, 4]
    rec = lais[(4, "t", 0)]
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas) == ((1, 2, 3, 4), (4,), (1,))
    assert only_transition(h).election == ELECTION_REASSIGN


def test_election_without_strategy_fails_every_partition(harness):
    # Kafka: IllegalArgumentException("Election strategy is a required field ...") caught by handleStateChanges,
    # every partition gets Left(e), nothing changes.
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION)
    assert isinstance(result[TP], Exception)
    assert "Election strategy is a required field" in str(result[TP])
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION


def test_election_aborted_when_state_written_by_newer_controller(harness):
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,), controller_epoch=EPOCH + 2)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["get"]
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    f = only_failure(h)
    assert f.error == "StateChangeFailedException"
    assert f.message == ("Aborted leader election for partition t-0 since the LeaderAndIsr path was already written "
                         "by another controller. This probably means that the current controller 5 went through a "
                         "soft failure and another controller was elected with epoch 52.")


def test_election_overwrites_state_from_older_controller(harness):
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,), controller_epoch=EPOCH - 10)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert h.store.states[TP].controller_epoch == EPOCH
    assert lai_by_broker(h)[(BROKER, "t", 0)].state_controller_epoch == EPOCH


def test_election_controller_moved_is_rethrown(harness):
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))
    h.store.controller_epoch_zk_version = 3
    with pytest.raises(ControllerMovedError):
        h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION


# --- OfflinePartition ------------------------------------------------------------------------------------


def test_offline_partition_to_online_partition_transition(harness):
    # Kafka: testOfflinePartitionToOnlinePartitionTransition
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))
    h.store.on_update = written_epoch(2)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["get", "update"]
    assert h.store.calls[1][1] == {TP: LeaderAndIsr(BROKER, 1, (BROKER,), RECOVERED, 0)}  # newLeader(5)
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert h.ctx.offline_partition_count == 0
    rec = lai_by_broker(h)[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new) == \
        (BROKER, 1, (BROKER,), 2, (BROKER,), False)
    t = only_transition(h)
    assert (t.from_state, t.to_state, t.election) == (OFFLINE_PARTITION, ONLINE_PARTITION, ELECTION_OFFLINE)
    assert h.ctx.unclean_leader_elections == 0


@pytest.mark.parametrize("leader_recovery_supported", [True, False])
def test_offline_partition_to_unclean_online_partition_transition(make_harness, leader_recovery_supported):
    # Kafka: testOfflinePartitionToUncleanOnlinePartitionTransition(isLeaderRecoverySupported)
    # Leader X, ISR [X], replicas [X, Y], live [Y] -> leader Y, ISR [Y] (RECOVERING with IBP >= 3.2).
    h = make_harness(leader_recovery_supported=leader_recovery_supported)
    leader_broker = BROKER + 1
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((leader_broker, BROKER)))
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.leadership(TP, leader_broker, (leader_broker,))
    h.store.on_update = written_epoch(2)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(True))

    recovery = RECOVERING if leader_recovery_supported else RECOVERED
    assert h.store.calls[1][1] == {TP: LeaderAndIsr(BROKER, 1, (BROKER,), recovery, 0)}
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    lais = lai_by_broker(h)
    assert list(lais) == [(BROKER, "t", 0)]  # the live replicas only
    rec = lais[(BROKER, "t", 0)]
    assert (rec.leader, rec.leader_epoch, rec.isr, rec.partition_epoch, rec.replicas, rec.is_new,
            rec.recovery_state) == (BROKER, 1, (BROKER,), 2, (leader_broker, BROKER), False, recovery)
    assert only_transition(h).election == ELECTION_OFFLINE_UNCLEAN
    # PartitionLeaderElectionAlgorithmsTest: the unclean meter is marked once.
    assert h.ctx.unclean_leader_elections == 1


@pytest.mark.parametrize("topic_config, broker_config, unclean", [
    (None, None, False),
    ("true", None, True),
    (None, "true", True),
    ("false", "true", False),
])
def test_offline_election_unclean_from_configs(make_harness, topic_config, broker_config, unclean):
    # PartitionLeaderElectionAlgorithmsTest ...UncleanLeaderElectionDisabled / ...Enabled, driven through the
    # state machine: with no live ISR member, OfflinePartitionLeaderElectionStrategy(false) reads the topic
    # override on top of the broker default.
    h = make_harness(broker_config=None if broker_config is None else
                     {"unclean.leader.election.enable": broker_config})
    h.live(4)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((2, 4)))
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.leadership(TP, 2, (2,))
    if topic_config is not None:
        h.ctx.topic_configs["t"] = {"unclean.leader.election.enable": topic_config}
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    if unclean:
        assert h.ctx.partition_state(TP) == ONLINE_PARTITION
        assert h.ctx.partition_leadership_info(TP).leader_and_isr.leader == 4
        assert h.ctx.unclean_leader_elections == 1
    else:
        assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
        assert h.ctx.unclean_leader_elections == 0
        assert only_failure(h).message == ("Failed to elect leader for partition t-0 under strategy "
                                           "OfflinePartitionLeaderElectionStrategy(false)")


def test_offline_clean_election_drops_offline_isr_members(harness):
    h = harness
    h.live(2, 3)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((1, 2, 3)))
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.leadership(TP, 1, (1, 3, 2), leader_epoch=2, recovery_state=RECOVERING)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    # Leader: first in assignment order that is live and in the ISR; ISR keeps order, recovery state kept.
    assert h.ctx.partition_leadership_info(TP).leader_and_isr == LeaderAndIsr(2, 3, (3, 2), RECOVERING, 1)
    assert sorted(b for b, _, _ in lai_by_broker(h)) == [2, 3]


def test_offline_to_online_zookeeper_client_exception_from_state_lookup(harness):
    # Kafka: testOfflinePartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromStateLookup
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))
    h.store.on_get = raise_zk
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["get"]
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert isinstance(result[TP], ZooKeeperClientException)
    f = only_failure(h)
    assert (f.from_state, f.to_state, f.error) == (OFFLINE_PARTITION, ONLINE_PARTITION, "ZooKeeperClientException")
    assert h.channel.sent == [] and h.batch.is_empty()


def test_offline_to_online_exception_from_state_update(harness):
    # Kafka: the 2.x variant of ...ZooKeeperClientExceptionFromStateLookup, where updateLeaderAndIsr answers
    # Left(exception) for the partition: the result is that exception, the state stays OfflinePartition.
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))
    exc = ZooKeeperClientException("")
    h.store.on_update = lambda states: UpdateLeaderAndIsrResult({TP: exc}, [])
    result = h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert result[TP] is exc
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert h.ctx.partition_leadership_info(TP).leader_and_isr.leader == NO_LEADER
    assert h.records(LeaderAndIsrPartition) == []


def test_offline_to_online_error_code_from_state_lookup(harness):
    # Kafka: testOfflinePartitionToOnlinePartitionTransitionErrorCodeFromStateLookup (NONODE)
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,), store=False)
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["get"]
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    f = only_failure(h)
    assert f.error == "StateChangeFailedException"
    assert f.message == "LeaderAndIsr information doesn't exist for partition t-0 in OfflinePartition state"


def test_offline_to_online_bad_version_then_state_gone(harness):
    # Kafka: the 2.x variant of ...ErrorCodeFromStateLookup: the write hits BADVERSION, and the state read
    # for the retry finds nothing.
    h = harness
    single_broker_partition(h, OFFLINE_PARTITION)
    h.leadership(TP, NO_LEADER, (BROKER,))

    def znode_vanishes(states):
        h.store.states.pop(TP, None)
        return UpdateLeaderAndIsrResult({}, [TP])
    h.store.on_update = znode_vanishes
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.store.ops() == ["get", "update", "get"]
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert only_failure(h).message == \
        "LeaderAndIsr information doesn't exist for partition t-0 in OfflinePartition state"


def test_unclean_meter_marked_per_election_attempt(harness):
    h = harness
    h.live(BROKER)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment((BROKER + 1, BROKER)))
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.leadership(TP, BROKER + 1, (BROKER + 1,))

    def bad_version_once(states):
        if h.store.ops().count("update") == 1:
            return UpdateLeaderAndIsrResult({}, list(states))
    h.store.on_update = bad_version_once
    h.psm.handle_state_changes([TP], ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(True))
    assert h.ctx.partition_state(TP) == ONLINE_PARTITION
    assert h.ctx.unclean_leader_elections == 2


def test_offline_partition_to_nonexistent_partition_transition(harness):
    # Kafka: testOfflinePartitionToNonexistentPartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.psm.handle_state_changes([TP], NON_EXISTENT_PARTITION)
    assert h.ctx.partition_state(TP) == NON_EXISTENT_PARTITION
    assert h.ctx.offline_partition_count == 0


def test_invalid_offline_partition_to_new_partition_transition(harness):
    # Kafka: testInvalidOfflinePartitionToNewPartitionTransition
    h = harness
    h.ctx.put_partition_state(TP, OFFLINE_PARTITION)
    h.psm.handle_state_changes([TP], NEW_PARTITION)
    assert h.ctx.partition_state(TP) == OFFLINE_PARTITION
    assert only_failure(h).error == "IllegalStateException"


# --- offlinePartitionCount ---------------------------------------------------------------------------------

PARTITIONS = [("test", p) for p in range(4)]


def test_updating_offline_partitions_count(harness):
    # Kafka: testUpdatingOfflinePartitionsCount
    h = harness
    h.live(BROKER)
    for tp in PARTITIONS:
        h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((BROKER,)))
        h.leadership(tp, BROKER, (BROKER,), context=False)
    h.psm.handle_state_changes(PARTITIONS, NEW_PARTITION)
    h.psm.handle_state_changes(PARTITIONS, OFFLINE_PARTITION)
    assert h.ctx.offline_partition_count == len(PARTITIONS)
    h.psm.handle_state_changes(PARTITIONS, ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.offline_partition_count == 0
    assert all(h.ctx.partition_state(tp) == ONLINE_PARTITION for tp in PARTITIONS)


def test_no_offline_partitions_change_for_topics_being_deleted(harness):
    # Kafka: testNoOfflinePartitionsChangeForTopicsBeingDeleted
    h = harness
    h.ctx.topics_to_be_deleted.add("test")
    h.ctx.topics_with_deletion_started.add("test")
    h.psm.handle_state_changes(PARTITIONS, NEW_PARTITION)
    h.psm.handle_state_changes(PARTITIONS, OFFLINE_PARTITION)
    assert h.ctx.offline_partition_count == 0


def test_updating_offline_partitions_count_during_topic_deletion(harness):
    # Kafka: testUpdatingOfflinePartitionsCountDuringTopicDeletion. Kafka drives it through
    # TopicDeletionManager.enqueueTopicsForDeletion; we have no deletion manager here, so we replay what it does
    # (queueTopicDeletion, then onTopicDeletion: Offline -> NonExistent, then beginTopicDeletion).
    h = harness
    for tp in PARTITIONS:
        h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((BROKER,)))
    h.psm.handle_state_changes(PARTITIONS, NEW_PARTITION)
    h.psm.handle_state_changes(PARTITIONS, OFFLINE_PARTITION)
    assert h.ctx.offline_partition_count == len(PARTITIONS)
    h.ctx.queue_topic_deletion(["test"])
    h.psm.handle_state_changes(PARTITIONS, OFFLINE_PARTITION)
    h.psm.handle_state_changes(PARTITIONS, NON_EXISTENT_PARTITION)
    h.ctx.begin_topic_deletion(["test"])
    assert h.ctx.offline_partition_count == 0
    # Further moves of a topic being deleted do not count.
    h.psm.handle_state_changes(PARTITIONS, NEW_PARTITION)
    h.psm.handle_state_changes(PARTITIONS, OFFLINE_PARTITION)
    assert h.ctx.offline_partition_count == 0


# --- startup / triggerOnlinePartitionStateChange ----------------------------------------------------------------------


def test_startup_initializes_states_then_elects(harness):
    # initializePartitionState: Online if the cached leader is online, Offline if not, New without leadership
    # info (direct puts, no records); then triggerOnlinePartitionStateChange.
    h = harness
    h.live(1, 2)
    h.ctx.add_topic("t", [(1, 2), (3, 2), (2, 1), (3,)])
    h.leadership(("t", 0), 1, (1, 2))
    h.leadership(("t", 1), 3, (3, 2))
    h.leadership(("t", 3), 3, (3,))
    h.psm.startup()
    assert h.ctx.partition_state(("t", 0)) == ONLINE_PARTITION  # untouched: no election
    assert h.ctx.partition_state(("t", 1)) == ONLINE_PARTITION  # Offline -> Online, leader 2
    assert h.ctx.partition_leadership_info(("t", 1)).leader_and_isr.leader == 2
    assert h.ctx.partition_state(("t", 2)) == ONLINE_PARTITION  # New -> Online
    assert h.ctx.partition_state(("t", 3)) == OFFLINE_PARTITION  # no live replica, unclean disabled
    assert h.ctx.offline_partition_count == 1
    moves = {(t.partition, t.from_state, t.to_state) for t in h.records(PartitionTransition)}
    assert moves == {(1, OFFLINE_PARTITION, ONLINE_PARTITION), (2, NEW_PARTITION, ONLINE_PARTITION)}


def test_trigger_online_partition_state_change_skips_topics_queued_for_deletion(harness):
    h = harness
    h.live(1)
    h.ctx.add_topic("keep", [(1,)])
    h.ctx.add_topic("gone", [(1,)])
    for tp in [("keep", 0), ("gone", 0)]:
        h.ctx.put_partition_state(tp, NEW_PARTITION)
    h.ctx.queue_topic_deletion(["gone"])
    result = h.psm.trigger_online_partition_state_change()
    assert set(result) == {("keep", 0)}
    assert h.ctx.partition_state(("keep", 0)) == ONLINE_PARTITION
    assert h.ctx.partition_state(("gone", 0)) == NEW_PARTITION


def test_batch_of_partitions_mixed_outcomes(harness):
    # New, Offline and NonExistent partitions in one call: each handled on its own, one request per broker.
    h = harness
    h.live(1, 2)
    h.ctx.add_topic("t", [(1, 2), (2, 1), (1, 2)])
    h.ctx.put_partition_state(("t", 0), NEW_PARTITION)
    h.ctx.put_partition_state(("t", 1), OFFLINE_PARTITION)
    h.leadership(("t", 1), NO_LEADER, (2,))
    result = h.psm.handle_state_changes([("t", 0), ("t", 1), ("t", 2)], ONLINE_PARTITION, OFFLINE_CLEAN)
    assert h.ctx.partition_state(("t", 0)) == ONLINE_PARTITION
    assert h.ctx.partition_state(("t", 1)) == ONLINE_PARTITION
    assert h.ctx.partition_state(("t", 2)) == NON_EXISTENT_PARTITION
    assert isinstance(result[("t", 2)], Exception)
    assert [f.partition for f in h.failures()] == [2]
    assert [r.broker_id for r in h.requests(API_LEADER_AND_ISR)] == [1, 2]
