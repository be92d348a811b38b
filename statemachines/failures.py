"""Kafka's StateChangeFailedException messages of the state machines, worded once for the per-partition
path and the batch path alike (the records carry them: both paths must word them the same)."""
from __future__ import annotations

from collections.abc import Iterable

from statemachines.errors import StateChangeFailedError


def scala_set(ids: Iterable[int]) -> str:
    """How Scala prints an immutable Set of ints: ``Set(1, 2)`` up to 4 elements, ``HashSet(..)`` above."""
    xs = sorted(ids)
    return f"{'Set' if len(xs) <= 4 else 'HashSet'}({', '.join(map(str, xs))})"


def _tp(tp: tuple) -> str:
    return f"{tp[0]}-{tp[1]}"   # TopicPartition.toString


# --- ReplicaStateMachine.removeReplicasFromIsr ------------------------------------------------------
def isr_path_empty(replica_id: int, tp: tuple) -> StateChangeFailedError:
    return StateChangeFailedError(f"Failed to change state of replica {replica_id} for partition {_tp(tp)} since "
                                  f"the leader and isr path in zookeeper is empty")


def isr_path_written_by_newer_controller(epoch: int, stored_epoch: int) -> StateChangeFailedError:
    return StateChangeFailedError(
        f"Leader and isr path written by another controller. This probably means the current controller with "
        f"epoch {epoch} went through a soft failure and another controller was elected with epoch "
        f"{stored_epoch}. Aborting state change by this controller")


# --- PartitionStateMachine elections -----------------------------------------------------------------
def no_leadership_info(tp: tuple, state) -> StateChangeFailedError:
    return StateChangeFailedError(f"LeaderAndIsr information doesn't exist for partition {_tp(tp)} in "
                                  f"{state} state")


def election_aborted_by_newer_controller(tp: tuple, controller_id: int, stored_epoch: int) -> StateChangeFailedError:
    return StateChangeFailedError(
        f"Aborted leader election for partition {_tp(tp)} since the LeaderAndIsr path was already written by "
        f"another controller. This probably means that the current controller {controller_id} went through a "
        f"soft failure and another controller was elected with epoch {stored_epoch}.")


def no_leader_elected(tp: tuple, strategy) -> StateChangeFailedError:
    return StateChangeFailedError(f"Failed to elect leader for partition {_tp(tp)} under strategy {strategy}")


def no_assigned_replica_alive(controller_id: int, epoch: int, tp: tuple, replicas: Iterable[int],
                              live_broker_ids: Iterable[int]) -> StateChangeFailedError:
    return StateChangeFailedError(
        f"Controller {controller_id} epoch {epoch} encountered error during state change of partition {_tp(tp)} "
        f"from New to Online, assigned replicas are [{','.join(map(str, replicas))}], live brokers are "
        f"[{scala_set(live_broker_ids)}]. No assigned replica is alive.")
