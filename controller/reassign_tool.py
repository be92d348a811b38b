"""What ``kafka-reassign-partitions.sh`` (Kafka 3.7's ReassignPartitionsCommand) computes, apart from its I/O.

* ``--generate``: the proposal of ``AdminUtils.assignReplicasToBrokers`` for every partition of the topics to
  move, over the brokers of ``--broker-list`` that are in the cluster, rack-aware when every one of them has a
  ``broker.rack`` (:func:`assign_replicas`, :func:`propose`). Kafka draws the first broker and the replica shift
  from an unseeded random source; here each topic draws from ``random.Random(f"{seed}/generate/{topic}")``, so
  the same cluster and seed always propose the same assignment.
* ``--execute --throttle``: which replicas are throttled (:func:`move_map`, :func:`leader_throttles`,
  :func:`follower_throttles`) and on which brokers the rates are set (:func:`reassigning_brokers`).
* ``--verify``: the state of each partition of the file and the text Kafka prints for it
  (:func:`partition_states`, :func:`states_text`).
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.assignment import AdminOperationError, assign_replicas

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_LEVEL_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, LOG_DIRS_RATE)
TOPIC_LEVEL_THROTTLES = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this and "
    "create a new partition assignment in addition to the existing one. The --additional flag can also be used "
    "to change the throttle by resubmitting the current reassignment.")
YOU_MUST_RUN_VERIFY_PERIODICALLY_MESSAGE = ("Warning: You must run --verify periodically, until the reassignment "
                                            "completes, to ensure the throttle is removed.")


def tp_text(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def tps_text(tps: Iterable[tuple[str, int]], sep: str = ",") -> str:
    """Partitions as the tool lists them: sorted by topic, then partition."""
    return sep.join(tp_text(tp) for tp in sorted(tps))


def plural(n: int) -> str:
    return "" if n == 1 else "s"


# --- --generate -----------------------------------------------------------------------------------------------
def broker_metadata(live: Mapping[int, str | None], broker_list: Iterable[int],
                    enable_rack_awareness: bool) -> dict[int, str | None]:
    """ReassignPartitionsCommand.getBrokerMetadata: the brokers of ``broker_list`` that the cluster lists (others
    are left out, as Kafka does), with their racks unless rack awareness is off."""
    wanted = set(broker_list)
    out = {b: (rack if enable_rack_awareness else None) for b, rack in sorted(live.items()) if b in wanted}
    rackless = sum(r is None for r in out.values())
    if enable_rack_awareness and rackless not in (0, len(out)):
        raise AdminOperationError("Not all brokers have rack information. Add --disable-rack-aware in command line "
                                  "to make replica assignment without rack information.")
    return out


def propose(current: Mapping[tuple[str, int], tuple[int, ...]], brokers: Mapping[int, str | None],
            seed: int) -> dict[tuple[str, int], tuple[int, ...]]:
    """ReassignPartitionsCommand.calculateAssignment: per topic, as many partitions as it has, with the
    replication factor of its partition 0 (Kafka takes its first listed partition), placed anew."""
    by_topic: dict[str, list[int]] = {}
    for t, p in current:
        by_topic.setdefault(t, []).append(p)
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for topic in sorted(by_topic):
        parts = sorted(by_topic[topic])
        rf = len(current[(topic, parts[0])])
        placed = assign_replicas(brokers, len(parts), rf, rng=random.Random(f"{seed}/generate/{topic}"))
        out.update(((topic, p), r) for p, r in enumerate(placed))
    return out


# --- --execute --throttle --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionMove:
    sources: frozenset[int]
    destinations: frozenset[int]


def move_map(current_reassignments: Mapping[tuple[str, int], tuple[Iterable[int], Iterable[int]]],
             proposed: Mapping[tuple[str, int], Iterable[int]],
             current: Mapping[tuple[str, int], Iterable[int]]) -> dict[str, dict[int, PartitionMove]]:
    """calculateProposedMoveMap: for the ongoing reassignments ``{tp: (replicas, adding replicas)}`` the sources
    are the replicas minus the adding ones and the destinations the adding ones; for each proposed partition the
    sources are those (if it is being reassigned) or its current replicas, and the destinations its target
    replicas that are not sources."""
    moves: dict[str, dict[int, PartitionMove]] = {}
    for (t, p), (replicas, adding) in current_reassignments.items():
        adding = frozenset(adding)
        moves.setdefault(t, {})[p] = PartitionMove(frozenset(replicas) - adding, adding)
    for (t, p), replicas in proposed.items():
        part_moves = moves.setdefault(t, {})
        if p in part_moves:
            sources = part_moves[p].sources
        elif (t, p) in current:
            sources = frozenset(current[(t, p)])
        else:
            raise ValueError(f"Trying to reassign a topic partition {t}-{p} with 0 replicas")
        part_moves[p] = PartitionMove(sources, frozenset(replicas) - sources)
    return moves


def _components(pairs: Iterable[tuple[int, int]]) -> str:
    # Kafka sorts the "partition:broker" strings as strings (a TreeSet<String>): "10:1" before "2:1".
    return ",".join(sorted(f"{p}:{b}" for p, b in set(pairs)))


def leader_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """calculateLeaderThrottles: per topic, ``partition:broker`` of every source replica."""
    return {t: _components((p, b) for p, m in parts.items() for b in m.sources) for t, parts in moves.items()}


def follower_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """calculateFollowerThrottles: per topic, ``partition:broker`` of every destination that is not a source."""
    return {t: _components((p, b) for p, m in parts.items() for b in m.destinations if b not in m.sources)
            for t, parts in moves.items()}


def reassigning_brokers(moves: Mapping[str, Mapping[int, PartitionMove]]) -> list[int]:
    """calculateReassigningBrokers: every source and destination broker, in id order."""
    return sorted({b for parts in moves.values() for m in parts.values() for b in m.sources | m.destinations})


# --- --verify ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionReassignmentState:
    current_replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]
    done: bool


def partition_states(targets: Mapping[tuple[str, int], tuple[int, ...]],
                     ongoing: Mapping[tuple[str, int], Iterable[int]],
                     replicas: Mapping[tuple[str, int], Iterable[int]]) -> dict[tuple, PartitionReassignmentState]:
    """findPartitionReassignmentStates: a partition being reassigned (``ongoing``: its replicas) is not done;
    any other is done, with its replicas (none for a partition that does not exist)."""
    out = {}
    for tp, target in targets.items():
        if tp in ongoing:
            out[tp] = PartitionReassignmentState(tuple(ongoing[tp]), tuple(target), False)
        else:
            out[tp] = PartitionReassignmentState(tuple(replicas.get(tp, ())), tuple(target), True)
    return out


def states_text(states: Mapping[tuple[str, int], PartitionReassignmentState]) -> list[str]:
    """partitionReassignmentStatesToString."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states):
        s = states[tp]
        if not s.done:
            lines.append(f"Reassignment of partition {tp_text(tp)} is still in progress.")
        elif s.current_replicas == s.target_replicas:
            lines.append(f"Reassignment of partition {tp_text(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {tp_text(tp)}, but replica set is "
                         f"{','.join(map(str, s.current_replicas))} rather than "
                         f"{','.join(map(str, s.target_replicas))}.")
    return lines


def reassignments_text(ongoing: Mapping[tuple[str, int], object]) -> list[str]:
    """curReassignmentsToString (``--list``): ``ongoing`` values have replicas, adding_replicas, removing_replicas."""
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        a = ongoing[tp]
        adding = f" adding: {','.join(map(str, a.adding_replicas))}." if a.adding_replicas else ""
        removing = f" removing: {','.join(map(str, a.removing_replicas))}." if a.removing_replicas else ""
        lines.append(f"{tp_text(tp)}: replicas: {','.join(map(str, a.replicas))}.{adding}{removing}")
    return lines
