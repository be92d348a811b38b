"""Replica assignment for new topics, as Kafka's ``AdminUtils.assignReplicasToBrokers`` does it: rack-unaware
and rack-aware.

Rack-unaware, the first replica of partition p goes to broker ``(p + start) % n``; the followers are spread
with a shift that grows every n partitions. Rack-aware, the same walk goes over the rack-alternated broker
list and skips brokers on racks that already hold a replica (while one is left). ``start`` and the initial
shift come from the injected random source, unless fixed.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import numpy as np


class InvalidReplicationFactorError(ValueError):
    """Kafka's InvalidReplicationFactorException."""


class AdminOperationError(ValueError):
    """Kafka's AdminOperationException (e.g. racks on some brokers only, with rack-aware assignment enforced)."""


def assign_replicas(brokers: Mapping[int, str | None], partitions: int, replication_factor: int, *,
                    rng: random.Random, start_partition_id: int = 0) -> list[tuple[int, ...]]:
    """AdminUtils.assignReplicasToBrokers over ``{broker id: rack or None}`` (RackAwareMode.Enforced, what topic
    creation and kafka-reassign-partitions.sh use): rack-unaware when no broker has a rack (brokers in id order),
    rack-aware when all have one; AdminOperationError when only some do."""
    if not any(r is not None for r in brokers.values()):
        return assign_replicas_to_brokers(sorted(brokers), partitions, replication_factor, rng=rng,
                                          start_partition_id=start_partition_id)
    if any(r is None for r in brokers.values()):
        raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
    return assign_replicas_rack_aware(brokers, partitions, replication_factor, rng=rng,
                                      start_partition_id=start_partition_id)


def assign_replicas_to_brokers(brokers: Sequence[int], partitions: int, replication_factor: int, *,
                               rng: random.Random | None = None, fixed_start_index: int = -1,
                               start_partition_id: int = 0) -> list[tuple[int, ...]]:
    """Replicas per partition (index = partition id - start_partition_id)."""
    return list(map(tuple, assign_replica_matrix(brokers, partitions, replication_factor, rng=rng,
                                                 fixed_start_index=fixed_start_index,
                                                 start_partition_id=start_partition_id).tolist()))


def assign_replica_matrix(brokers: Sequence[int], partitions: int, replication_factor: int, *,
                          rng: random.Random | None = None, fixed_start_index: int = -1,
                          start_partition_id: int = 0) -> np.ndarray:
    """``assign_replicas_to_brokers`` as a (partitions, replication_factor) int64 matrix."""
    _check_arguments(partitions, replication_factor, len(brokers))
    ordered = sorted(brokers)
    start, shift = _start_and_shift(len(ordered), rng, fixed_start_index)
    return _placement(ordered, partitions, replication_factor, start, shift, max(0, start_partition_id))


def _placement(ordered: list[int], partitions: int, rf: int, start: int, shift: int, first_pid: int) -> np.ndarray:
    """The (partitions, rf) matrix of replicas: Kafka's loop (the shift grows by one at every partition id > 0
    that is a multiple of n) as array arithmetic."""
    n = len(ordered)
    brokers = np.asarray(ordered, dtype=np.int64)
    pid = np.arange(first_pid, first_pid + partitions, dtype=np.int64)
    shifts = shift + np.maximum(0, pid // n - (max(first_pid, 1) - 1) // n)
    first = (pid + start) % n
    out = np.empty((partitions, rf), dtype=np.int64)
    out[:, 0] = brokers[first]
    for j in range(rf - 1):
        out[:, j + 1] = brokers[(first + 1 + (shifts + j) % (n - 1)) % n]
    return out


def _start_and_shift(n: int, rng: random.Random | None, fixed_start_index: int) -> tuple[int, int]:
    """Kafka's two draws: the first broker's index and the followers' initial shift (both fixed if asked)."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    if rng is None:
        raise ValueError("pass rng (a seeded random.Random) or fixed_start_index")
    start = rng.randrange(n)
    return start, rng.randrange(n)


def _check_arguments(partitions: int, replication_factor: int, brokers: int) -> None:
    if partitions <= 0:
        raise ValueError(f"Number of partitions must be larger than 0, got {partitions}.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > brokers:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {brokers}.")


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """AdminUtils.getRackAlternatedBrokerList: racks in name order, each rack's brokers in id order, one broker
    of each rack in turn."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(broker_racks):
        by_rack.setdefault(broker_racks[b], []).append(b)
    queues = [iter(by_rack[r]) for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(broker_racks):
        b = next(queues[i], None)
        if b is not None:
            out.append(b)
        i = (i + 1) % len(queues)
    return out


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_replicas_rack_aware(broker_racks: Mapping[int, str], partitions: int, replication_factor: int, *,
                               rng: random.Random | None = None, fixed_start_index: int = -1,
                               start_partition_id: int = 0) -> list[tuple[int, ...]]:
    """AdminUtils.assignReplicasToBrokersRackAware: replicas per partition (index = partition id -
    start_partition_id). The leaders go round the rack-alternated list; each follower is the next broker of the
    shifted walk on a rack without a replica yet (while there is one) and without a replica itself."""
    _check_arguments(partitions, replication_factor, len(broker_racks))
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    racks = len(set(broker_racks.values()))
    start, shift = _start_and_shift(n, rng, fixed_start_index)
    out = []
    pid = max(0, start_partition_id)
    for _ in range(partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with = {broker_racks[leader]}
        brokers_with = {leader}
        k = 0
        for _j in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                if ((rack not in racks_with or len(racks_with) == racks)
                        and (broker not in brokers_with or len(brokers_with) == n)):
                    replicas.append(broker)
                    racks_with.add(rack)
                    brokers_with.add(broker)
                    break
        out.append(tuple(replicas))
        pid += 1
    return out
