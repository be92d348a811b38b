"""Kafka's replica and partition states and their legal transitions — defined once, here.

Each state machine kind is one ``transitions.Machine`` built from the ``*_GRAPH`` literal
below (target state -> the states it may be entered from, exactly as ``validPreviousStates``
in Kafka 3.7's ReplicaStateMachine.scala / PartitionStateMachine.scala). Everything else —
the enums' ``valid_previous_states``, the byte-indexed tables the engine checks against,
the legal-transition tables the audit joins with, and the diagrams in docs/ — is derived
from those two Machines. No Machine is ever created per replica or partition: states of
individual replicas live as bytes in the controller context.
"""
from __future__ import annotations

import enum

from transitions import Machine


class ReplicaState(str, enum.Enum):
    """The seven ReplicaStateMachine states; values are Kafka's names, ``byte`` is Kafka's ``state`` byte."""

    NewReplica = "NewReplica"
    OnlineReplica = "OnlineReplica"
    OfflineReplica = "OfflineReplica"
    ReplicaDeletionStarted = "ReplicaDeletionStarted"
    ReplicaDeletionSuccessful = "ReplicaDeletionSuccessful"
    ReplicaDeletionIneligible = "ReplicaDeletionIneligible"
    NonExistentReplica = "NonExistentReplica"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def from_byte(cls, b: int) -> ReplicaState:
        return REPLICA_BY_BYTE[b]


class PartitionState(str, enum.Enum):
    """The four PartitionStateMachine states; values are Kafka's names, ``byte`` is Kafka's ``state`` byte."""

    NewPartition = "NewPartition"
    OnlinePartition = "OnlinePartition"
    OfflinePartition = "OfflinePartition"
    NonExistentPartition = "NonExistentPartition"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def from_byte(cls, b: int) -> PartitionState:
        return PARTITION_BY_BYTE[b]


_REPLICA_BYTES = {
    "NewReplica": 1, "OnlineReplica": 2, "OfflineReplica": 3, "ReplicaDeletionStarted": 4,
    "ReplicaDeletionSuccessful": 5, "ReplicaDeletionIneligible": 6, "NonExistentReplica": 7,
}
_PARTITION_BYTES = {"NewPartition": 0, "OnlinePartition": 1, "OfflinePartition": 2, "NonExistentPartition": 3}

# The one definition: target -> valid previous states (Kafka 3.7, identical in 2.5).
REPLICA_GRAPH: dict[str, tuple[str, ...]] = {
    "NewReplica": ("NonExistentReplica",),
    "OnlineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "OfflineReplica": ("NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"),
    "ReplicaDeletionStarted": ("OfflineReplica",),
    "ReplicaDeletionSuccessful": ("ReplicaDeletionStarted",),
    "ReplicaDeletionIneligible": ("OfflineReplica", "ReplicaDeletionStarted"),
    "NonExistentReplica": ("ReplicaDeletionSuccessful",),
}
PARTITION_GRAPH: dict[str, tuple[str, ...]] = {
    "NewPartition": ("NonExistentPartition",),
    "OnlinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "OfflinePartition": ("NewPartition", "OnlinePartition", "OfflinePartition"),
    "NonExistentPartition": ("OfflinePartition",),
}


def _build_machine(name: str, graph: dict[str, tuple[str, ...]], initial: str) -> Machine:
    # The machine's model is a throwaway object: it exists to hold and validate the graph
    # (and to draw it), never to track the state of a real replica or partition.
    transitions = [{"trigger": f"to_{target}", "source": list(sources), "dest": target}
                   for target, sources in graph.items()]
    return Machine(model=None, states=list(graph), transitions=transitions, initial=initial,
                   auto_transitions=False, name=name)


REPLICA_MACHINE = _build_machine("ReplicaStateMachine", REPLICA_GRAPH, "NonExistentReplica")
PARTITION_MACHINE = _build_machine("PartitionStateMachine", PARTITION_GRAPH, "NonExistentPartition")


def legal_pairs(machine: Machine) -> frozenset[tuple[str, str]]:
    """All (from, to) name pairs the machine allows, read back from the Machine itself."""
    pairs = set()
    for event in machine.events.values():
        for source, transitions in event.transitions.items():
            for t in transitions:
                pairs.add((source, t.dest))
    return frozenset(pairs)


REPLICA_LEGAL = legal_pairs(REPLICA_MACHINE)
PARTITION_LEGAL = legal_pairs(PARTITION_MACHINE)


def _attach(enum_cls, machine: Machine, legal: frozenset, byte_of: dict[str, int]) -> None:
    if set(machine.states) != {m.value for m in enum_cls}:
        raise AssertionError(f"{machine.name}: states differ from {enum_cls.__name__}")
    for member in enum_cls:
        member.byte = byte_of[member.value]
        member.valid_previous_states = frozenset(enum_cls(f) for f, t in legal if t == member.value)
        # Declaration order, which is also Scala's iteration order for these small Sets
        # (it shows in Kafka's "should be in the ... states" messages).
        sources = machine.events[f"to_{member.value}"].transitions
        member.valid_previous_ordered = tuple(enum_cls(s) for s in sources)


_attach(ReplicaState, REPLICA_MACHINE, REPLICA_LEGAL, _REPLICA_BYTES)
_attach(PartitionState, PARTITION_MACHINE, PARTITION_LEGAL, _PARTITION_BYTES)

REPLICA_BY_BYTE: dict[int, ReplicaState] = {m.byte: m for m in ReplicaState}
PARTITION_BY_BYTE: dict[int, PartitionState] = {m.byte: m for m in PartitionState}

# Byte-level tables for hot loops: VALID_PREVIOUS_*[target_byte] is a frozenset of source bytes.
VALID_PREVIOUS_REPLICA_BYTES: dict[int, frozenset[int]] = {
    m.byte: frozenset(s.byte for s in m.valid_previous_states) for m in ReplicaState}
VALID_PREVIOUS_PARTITION_BYTES: dict[int, frozenset[int]] = {
    m.byte: frozenset(s.byte for s in m.valid_previous_states) for m in PartitionState}

# Byte constants, so engine code reads like Kafka's without enum lookups in loops.
NEW_REPLICA = ReplicaState.NewReplica.byte
ONLINE_REPLICA = ReplicaState.OnlineReplica.byte
OFFLINE_REPLICA = ReplicaState.OfflineReplica.byte
REPLICA_DELETION_STARTED = ReplicaState.ReplicaDeletionStarted.byte
REPLICA_DELETION_SUCCESSFUL = ReplicaState.ReplicaDeletionSuccessful.byte
REPLICA_DELETION_INELIGIBLE = ReplicaState.ReplicaDeletionIneligible.byte
NON_EXISTENT_REPLICA = ReplicaState.NonExistentReplica.byte

NEW_PARTITION = PartitionState.NewPartition.byte
ONLINE_PARTITION = PartitionState.OnlinePartition.byte
OFFLINE_PARTITION = PartitionState.OfflinePartition.byte
NON_EXISTENT_PARTITION = PartitionState.NonExistentPartition.byte


def legal_transition_rows() -> list[tuple[str, str, str, int, int]]:
    """(machine, from, to, from_byte, to_byte) for every legal transition: the audit's join table."""
    rows = []
    for kind, enum_cls, legal in (("replica", ReplicaState, REPLICA_LEGAL),
                                  ("partition", PartitionState, PARTITION_LEGAL)):
        for f, t in sorted(legal):
            rows.append((kind, f, t, enum_cls(f).byte, enum_cls(t).byte))
    return rows
