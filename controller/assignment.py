"""Replica assignment for new topics, as Kafka's rack-unaware ``assignReplicasToBrokers`` does it.

The first replica of partition p goes to broker ``(p + start) % n``; the followers are spread
with a shift that grows every n partitions. ``start`` and the initial shift come from the
injected random source, unless fixed.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np


class InvalidReplicationFactorError(ValueError):
    """Kafka's InvalidReplicationFactorException."""


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
    if partitions <= 0:
        raise ValueError(f"Number of partitions must be larger than 0, got {partitions}.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    ordered = sorted(brokers)
    n = len(ordered)
    if fixed_start_index >= 0:
        start = shift = fixed_start_index
    else:
        if rng is None:
            raise ValueError("pass rng (a seeded random.Random) or fixed_start_index")
        start = rng.randrange(n)
        shift = rng.randrange(n)
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
