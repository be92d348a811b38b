"""Kafka's four partition leader-election algorithms and the new ISR each strategy produces.

Pure functions, as in PartitionLeaderElectionAlgorithms.scala and Election.scala: lists keep
their order (the assignment order decides who wins), sets may be any iterable. Each leader
function returns the new leader's broker id, or None when no replica qualifies.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence


def _as_set(xs: Iterable[int]) -> Collection[int]:
    return xs if isinstance(xs, (set, frozenset)) else set(xs)


def offline_partition_leader(assignment: Sequence[int], isr: Iterable[int], live_replicas: Iterable[int],
                             unclean_enabled: bool) -> int | None:
    """First replica in assignment order that is live and in the ISR; failing that, when unclean
    election is enabled, the first live replica (an unclean election: it may lose acknowledged writes)."""
    live = _as_set(live_replicas)
    in_isr = _as_set(isr)
    for r in assignment:
        if r in live and r in in_isr:
            return r
    if unclean_enabled:
        for r in assignment:
            if r in live:
                return r
    return None


def reassign_partition_leader(target_replicas: Sequence[int], isr: Iterable[int],
                              live_replicas: Iterable[int]) -> int | None:
    """First target replica (TRS order) that is live and in the ISR."""
    live = _as_set(live_replicas)
    in_isr = _as_set(isr)
    for r in target_replicas:
        if r in live and r in in_isr:
            return r
    return None


def preferred_replica_leader(assignment: Sequence[int], isr: Iterable[int],
                             live_replicas: Iterable[int]) -> int | None:
    """The preferred replica (head of the assignment), if it is live and in the ISR."""
    if not assignment:
        return None
    head = assignment[0]
    return head if head in _as_set(live_replicas) and head in _as_set(isr) else None


def controlled_shutdown_leader(assignment: Sequence[int], isr: Iterable[int], live_replicas: Iterable[int],
                               shutting_down: Iterable[int]) -> int | None:
    """First replica in assignment order that is live (shutting-down brokers count as live here),
    in the ISR and not shutting down."""
    live = _as_set(live_replicas)
    in_isr = _as_set(isr)
    down = _as_set(shutting_down)
    for r in assignment:
        if r in live and r in in_isr and r not in down:
            return r
    return None


# --- New ISR per strategy (Election.scala) ----------------------------------------------------

def offline_new_isr(leader: int, isr: Sequence[int], online_replicas: Iterable[int]) -> tuple[int, ...]:
    """Offline election: the old ISR without offline members if the leader came from it;
    otherwise (unclean) just the new leader."""
    if leader in isr:
        online = _as_set(online_replicas)
        return tuple(r for r in isr if r in online)
    return (leader,)


def reassign_new_isr(isr: Sequence[int]) -> tuple[int, ...]:
    """Reassign election keeps the ISR unchanged (LeaderAndIsr.newLeader)."""
    return tuple(isr)


def preferred_new_isr(isr: Sequence[int]) -> tuple[int, ...]:
    """Preferred-replica election keeps the ISR unchanged (LeaderAndIsr.newLeader)."""
    return tuple(isr)


def controlled_shutdown_new_isr(isr: Sequence[int], shutting_down: Iterable[int]) -> tuple[int, ...]:
    """Controlled-shutdown election drops every shutting-down broker from the ISR."""
    down = _as_set(shutting_down)
    return tuple(r for r in isr if r not in down)
