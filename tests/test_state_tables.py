"""The legal-transition tables of both state machines, against a literal copy of Kafka 3.7's.

The expected tables below are written out by hand from ReplicaStateMachine.scala / PartitionStateMachine.scala
(``validPreviousStates``, in Kafka's declaration order, which is also the order Scala prints these small Sets
in the IllegalStateException messages) — never derived from statemachines/states.py. Every ordered pair of
states is then checked twice: against the table our code exposes, and by driving the real state machine.
"""
from __future__ import annotations

import itertools

import pytest

from events.records import ENTITY_PARTITION, ENTITY_REPLICA, PartitionTransition, ReplicaTransition
from statemachines.partition_state_machine import OfflinePartitionLeaderElectionStrategy
from statemachines.states import PartitionState, ReplicaState, legal_transition_rows

# Kafka 3.7 ReplicaStateMachine.scala: state byte and validPreviousStates, in declaration order.
KAFKA_REPLICA_BYTES = {
    "NewReplica": 1,
    "OnlineReplica": 2,
    "OfflineReplica": 3,
    "ReplicaDeletionStarted": 4,
    "ReplicaDeletionSuccessful": 5,
    "ReplicaDeletionIneligible": 6,
    "NonExistentReplica": 7,
}
KAFKA_REPLICA_VALID_PREVIOUS = {
    "NewReplica": ("NonExistentReplica",),
    "OnlineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "OfflineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "ReplicaDeletionStarted": ("OfflineReplica",),
    "ReplicaDeletionSuccessful": ("ReplicaDeletionStarted",),
    "ReplicaDeletionIneligible": ("OfflineReplica", "ReplicaDeletionStarted"),
    "NonExistentReplica": ("ReplicaDeletionSuccessful",),
}

# Kafka 3.7 PartitionStateMachine.scala.
KAFKA_PARTITION_BYTES = {"NewPartition": 0, "OnlinePartition": 1, "OfflinePartition": 2, "NonExistentPartition": 3}
KAFKA_PARTITION_VALID_PREVIOUS = {
    "NewPartition": ("NonExistentPartition",),
    "OnlinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "OfflinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "NonExistentPartition": ("OfflinePartition",),
}

REPLICA_PAIRS = list(itertools.product(KAFKA_REPLICA_BYTES, repeat=2))
PARTITION_PAIRS = list(itertools.product(KAFKA_PARTITION_BYTES, repeat=2))


def _replica_legal(frm, to):
    return frm in KAFKA_REPLICA_VALID_PREVIOUS[to]


def _partition_legal(frm, to):
    return frm in KAFKA_PARTITION_VALID_PREVIOUS[to]


def test_pair_counts():
    assert len(REPLICA_PAIRS) == 49
    assert len(PARTITION_PAIRS) == 16
    assert sum(_replica_legal(f, t) for f, t in REPLICA_PAIRS) == 14
    assert sum(_partition_legal(f, t) for f, t in PARTITION_PAIRS) == 8


# --- the enums -------------------------------------------------------------------------------------


def test_replica_state_enum():
    assert ReplicaState("OnlineReplica") is ReplicaState.OnlineReplica
    assert str(ReplicaState.OnlineReplica) == "OnlineReplica"
    assert {m.value: m.byte for m in ReplicaState} == KAFKA_REPLICA_BYTES
    for name, b in KAFKA_REPLICA_BYTES.items():
        assert ReplicaState.from_byte(b) is ReplicaState(name)
    with pytest.raises(KeyError):
        ReplicaState.from_byte(0)
    with pytest.raises(ValueError):
        ReplicaState("Online")


def test_partition_state_enum():
    assert PartitionState("OnlinePartition") is PartitionState.OnlinePartition
    assert str(PartitionState.OfflinePartition) == "OfflinePartition"
    assert {m.value: m.byte for m in PartitionState} == KAFKA_PARTITION_BYTES
    for name, b in KAFKA_PARTITION_BYTES.items():
        assert PartitionState.from_byte(b) is PartitionState(name)
    with pytest.raises(KeyError):
        PartitionState.from_byte(4)


def test_valid_previous_order_matches_kafka():
    # The order shows in the "should be in the X,Y states" messages.
    for target, prev in KAFKA_REPLICA_VALID_PREVIOUS.items():
        assert tuple(s.value for s in ReplicaState(target).valid_previous_ordered) == prev
    for target, prev in KAFKA_PARTITION_VALID_PREVIOUS.items():
        assert tuple(s.value for s in PartitionState(target).valid_previous_ordered) == prev


@pytest.mark.parametrize("frm, to", REPLICA_PAIRS)
def test_replica_table(frm, to):
    assert (ReplicaState(frm) in ReplicaState(to).valid_previous_states) == _replica_legal(frm, to)


@pytest.mark.parametrize("frm, to", PARTITION_PAIRS)
def test_partition_table(frm, to):
    assert (PartitionState(frm) in PartitionState(to).valid_previous_states) == _partition_legal(frm, to)


def test_legal_transition_rows():
    expected = set()
    for to, prevs in KAFKA_REPLICA_VALID_PREVIOUS.items():
        for frm in prevs:
            expected.add(("replica", frm, to, KAFKA_REPLICA_BYTES[frm], KAFKA_REPLICA_BYTES[to]))
    for to, prevs in KAFKA_PARTITION_VALID_PREVIOUS.items():
        for frm in prevs:
            expected.add(("partition", frm, to, KAFKA_PARTITION_BYTES[frm], KAFKA_PARTITION_BYTES[to]))
    rows = legal_transition_rows()
    assert len(rows) == len(set(rows)) == 22
    assert set(rows) == expected


# --- driving the real state machines -------------------------------------------------------------------

TP = ("t", 0)


@pytest.mark.parametrize("frm, to", REPLICA_PAIRS)
def test_replica_state_machine_pair(make_harness, frm, to):
    h = make_harness()
    h.live(1, 2, 3)
    h.ctx.add_topic("t", [(1, 2, 3)])
    # Broker 2 leads, so replica 1 may become NewReplica; the store holds the same /state for OfflineReplica.
    h.leadership(TP, 2, (1, 2, 3))
    rep = ("t", 0, 1)
    h.ctx.put_replica_state(rep, KAFKA_REPLICA_BYTES[frm])

    h.rsm.handle_state_changes([rep], KAFKA_REPLICA_BYTES[to])

    failures = h.failures()
    if _replica_legal(frm, to):
        assert failures == []
        expected_state = None if to == "NonExistentReplica" else KAFKA_REPLICA_BYTES[to]
        assert h.ctx.replica_state(rep) == expected_state
        [tr] = h.records(ReplicaTransition)
        assert (tr.topic, tr.partition, tr.replica, tr.from_state, tr.to_state) == \
            ("t", 0, 1, KAFKA_REPLICA_BYTES[frm], KAFKA_REPLICA_BYTES[to])
    else:
        assert h.ctx.replica_state(rep) == KAFKA_REPLICA_BYTES[frm]
        assert h.records(ReplicaTransition) == []
        assert h.channel.sent == []
        [f] = failures
        assert (f.entity, f.topic, f.partition, f.replica) == (ENTITY_REPLICA, "t", 0, 1)
        assert (f.from_state, f.to_state) == (KAFKA_REPLICA_BYTES[frm], KAFKA_REPLICA_BYTES[to])
        assert f.error == "IllegalStateException"
        assert f.message == (
            f"Replica [Topic=t,Partition=0,Replica=1] should be in the "
            f"{','.join(KAFKA_REPLICA_VALID_PREVIOUS[to])} states before moving to {to} state. "
            f"Instead it is in {frm} state")


@pytest.mark.parametrize("frm, to", PARTITION_PAIRS)
def test_partition_state_machine_pair(make_harness, frm, to):
    h = make_harness()
    h.live(1, 2, 3)
    h.ctx.add_topic("t", [(1, 2, 3)])
    if frm in ("OnlinePartition", "OfflinePartition"):
        # An elected partition: leader 1 (live, in the ISR) so the offline election succeeds.
        h.leadership(TP, 1, (1, 2, 3))
    h.ctx.put_partition_state(TP, KAFKA_PARTITION_BYTES[frm])

    result = h.psm.handle_state_changes([TP], KAFKA_PARTITION_BYTES[to], OfflinePartitionLeaderElectionStrategy(False))

    failures = h.failures()
    if _partition_legal(frm, to):
        assert failures == []
        assert not isinstance(result[TP], Exception)
        assert h.ctx.partition_state(TP) == KAFKA_PARTITION_BYTES[to]
        [tr] = h.records(PartitionTransition)
        assert (tr.topic, tr.partition, tr.from_state, tr.to_state) == \
            ("t", 0, KAFKA_PARTITION_BYTES[frm], KAFKA_PARTITION_BYTES[to])
        if to == "OnlinePartition":
            assert tr.leader == 1
    else:
        assert h.ctx.partition_state(TP) == KAFKA_PARTITION_BYTES[frm]
        assert h.records(PartitionTransition) == []
        assert h.channel.sent == []
        assert h.store.calls == []
        [f] = failures
        assert (f.entity, f.topic, f.partition, f.replica) == (ENTITY_PARTITION, "t", 0, -1)
        assert (f.from_state, f.to_state) == (KAFKA_PARTITION_BYTES[frm], KAFKA_PARTITION_BYTES[to])
        assert f.error == "IllegalStateException"
        assert f.message == (
            f"Partition t-0 should be in one of {','.join(KAFKA_PARTITION_VALID_PREVIOUS[to])} states before "
            f"moving to {to} state. Instead it is in {frm} state")


@pytest.mark.parametrize("frm", ["OnlinePartition", "OfflinePartition"])
def test_partition_online_election_failure_is_not_an_illegal_state(make_harness, frm):
    # A legal pair whose election legitimately fails (no live ISR member, unclean disabled) reports the
    # election failure, not an IllegalStateException, and leaves the state unchanged.
    h = make_harness()
    h.live(3)
    h.ctx.add_topic("t", [(1, 2, 3)])
    h.leadership(TP, 1, (1, 2))
    h.ctx.put_partition_state(TP, KAFKA_PARTITION_BYTES[frm])
    h.psm.handle_state_changes([TP], KAFKA_PARTITION_BYTES["OnlinePartition"],
                               OfflinePartitionLeaderElectionStrategy(False))
    assert h.ctx.partition_state(TP) == KAFKA_PARTITION_BYTES[frm]
    [f] = h.failures()
    assert f.error == "StateChangeFailedException"
    assert f.message == ("Failed to elect leader for partition t-0 under strategy "
                         "OfflinePartitionLeaderElectionStrategy(false)")


@pytest.mark.parametrize("to", list(KAFKA_REPLICA_BYTES))
def test_replica_without_any_state_counts_as_non_existent(make_harness, to):
    # putReplicaStateIfNotExists(replica, NonExistentReplica) before the check.
    h = make_harness()
    rep = ("t", 0, 1)
    h.rsm.handle_state_changes([rep], KAFKA_REPLICA_BYTES[to])
    if _replica_legal("NonExistentReplica", to):
        assert h.ctx.replica_state(rep) == KAFKA_REPLICA_BYTES[to]
    else:
        assert h.ctx.replica_state(rep) == KAFKA_REPLICA_BYTES["NonExistentReplica"]
        [f] = h.failures()
        assert f.error == "IllegalStateException"
        assert f.message.endswith("Instead it is in NonExistentReplica state")
