"""Replica placement: the array form of Kafka's rack-unaware assignReplicasToBrokers against its loop."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from controller.assignment import InvalidReplicationFactorError, assign_replicas_to_brokers


def kafka_loop(brokers, partitions, rf, start, shift, start_partition_id):
    """AdminUtils.assignReplicasToBrokersRackUnaware, as Kafka writes it."""
    ordered = sorted(brokers)
    n = len(ordered)
    out = []
    for pid in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [ordered[first]]
        for j in range(rf - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(tuple(replicas))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True), st.data())
def test_placement_is_kafkas_loop(brokers, data):
    n = len(brokers)
    rf = data.draw(st.integers(1, n))
    partitions = data.draw(st.integers(1, 80))
    first = data.draw(st.integers(0, 50))
    fixed = data.draw(st.integers(0, n - 1))
    assert assign_replicas_to_brokers(brokers, partitions, rf, fixed_start_index=fixed, start_partition_id=first) \
        == kafka_loop(brokers, partitions, rf, fixed, fixed, first)
    seed = data.draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    start, shift = rng.randrange(n), rng.randrange(n)
    assert assign_replicas_to_brokers(brokers, partitions, rf, rng=random.Random(seed), start_partition_id=first) \
        == kafka_loop(brokers, partitions, rf, start, shift, first)


def test_refusals():
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers([1, 2], 3, 3, fixed_start_index=0)
    with pytest.raises(ValueError):
        assign_replicas_to_brokers([1, 2], 0, 1, fixed_start_index=0)
