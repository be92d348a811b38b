"""Replica assignment for new topics, as Kafka's rack-unaware ``assignReplicasToBrokers`` does it.

The first replica of partition p goes to broker ``(p + start) % n``; the followers are spread
with a shift that grows every n partitions. ``start`` and the initial shift come from the
injected random source, unless fixed.
"""
from __future__ import annotations

import random
from collections.abc import Sequence


class InvalidReplicationFactorError(ValueError):
    """Kafka's InvalidReplicationFactorException."""


def assign_replicas_to_brokers(brokers: Sequence[int], partitions: int, replication_factor: int, *,
                               rng: random.Random | None = None, fixed_start_index: int = -1,
                               start_partition_id: int = 0) -> list[tuple[int, ...]]:
    """Replicas per partition (index = partition id - start_partition_id)."""
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
    out = []
    for pid in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(tuple(replicas))
    return out
