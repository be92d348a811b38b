"""Kafka's replica and partition state machines, their legal transitions and leader elections.

``states`` is the single source of truth for legal transitions; ``election`` holds Kafka's four
leader-election algorithms as pure functions; the state machines apply transitions to a
controller context (passed in, see ``ports``) and emit transition records and broker requests.
Imports only ``events`` of ours.
"""
from statemachines.states import PartitionState, ReplicaState

__all__ = ["PartitionState", "ReplicaState"]
