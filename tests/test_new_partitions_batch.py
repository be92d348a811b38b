"""Creation's columnar pass (``partition_batch.new_partitions_batch``) agrees with the per-partition path.

NewPartition and NewPartition -> OnlinePartition of new topics run as one columnar pass over the topics'
partitions, results built only when read. These runs hold it to the reference path where the differential
test rarely goes: topics of hundreds of partitions, partitions added to a topic whose ``/state`` znodes
already exist for some of them (the store refuses those creations: TransitionFailed records amid a
columnar batch), new partitions with no live replica (the pass gives way to the per-partition path), and
the results themselves.
"""
from __future__ import annotations

from contextlib import contextmanager

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from controller.embedding.cluster import Cluster
from events.records import PartitionTransition, TransitionFailed
from statemachines import partition_batch
from statemachines.partition_state_machine import PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine
from statemachines.states import NEW_PARTITION, ONLINE_PARTITION


pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


@contextmanager
def path(batch: bool):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReplicaStateMachine, "batch_path", batch)
        mp.setattr(PartitionStateMachine, "batch_path", batch)
        yield


def both(program) -> Cluster:
    runs = []
    for batch in (True, False):
        with path(batch):
            cluster = Cluster(seed=5)
            program(cluster)
            runs.append(cluster)
    a, b = runs
    ra, rb = list(a.records), list(b.records)
    for i, (x, y) in enumerate(zip(ra, rb)):
        assert msgpack.packb(x) == msgpack.packb(y), f"record {i} differs:\n batch     {x}\n reference {y}"
    assert len(ra) == len(rb)
    assert a.zk.dump() == b.zk.dump()
    assert a.digest() == b.digest()
    assert a.view.digest() == b.view.digest()
    return a


def _existing_states(cluster: Cluster, topic: str, partitions) -> None:
    """``/state`` znodes written beforehand for ``partitions`` of ``topic`` (as a stale controller might)."""
    zk = cluster.zk
    sid = zk.connect(60_000)
    for p in partitions:
        base = f"/brokers/topics/{topic}/partitions/{p}"
        zk.create(sid, base, None)
        zk.create(sid, base + "/state",
                  b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}')


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.integers(64, 160), added=st.integers(1, 120), brokers=st.integers(4, 8),
       taken=st.lists(st.integers(0, 199), max_size=6, unique=True), kill=st.booleans())
def test_creation_and_addition_agree(first, added, brokers, taken, kill):
    def program(cluster: Cluster) -> None:
        cluster.start_brokers(range(brokers))
        cluster.create_topic("a", first, 3)
        cluster.create_topic("b", max(1, first // 3), min(3, brokers))
        if kill:
            cluster.kill_broker(1, at=1_000)
            cluster.advance_to(1_000 + cluster.session_timeout_ms)
        _existing_states(cluster, "a", sorted(first + t for t in taken if t < added))
        cluster.add_partitions("a", first + added)
    both(program)


def test_existing_state_znodes_fail_amid_a_columnar_batch():
    def program(cluster: Cluster) -> None:
        cluster.start_brokers(range(6))
        cluster.create_topic("a", 100, 3)
        _existing_states(cluster, "a", [101, 150, 199])
        cluster.add_partitions("a", 200)
    cluster = both(program)
    failed = [(r.topic, r.partition) for r in cluster.records if type(r) is TransitionFailed]
    assert failed == [("a", 101), ("a", 150), ("a", 199)]
    online = [r for r in cluster.records if type(r) is PartitionTransition and r.partition >= 100
              and r.to_state == ONLINE_PARTITION]
    assert len(online) == 97


def test_no_live_replica_takes_the_reference_path():
    def program(cluster: Cluster) -> None:
        cluster.start_brokers(range(4))
        cluster.create_topic("a", 100, 2)
        cluster.kill_broker(2, at=1_000)
        cluster.kill_broker(3, at=1_000)
        cluster.advance_to(1_000 + cluster.session_timeout_ms)
        cluster.add_partitions("a", assignment={p: (3, 2) if p % 7 == 0 else (3, p % 2) for p in range(100, 180)})
    both(program)


def _results(batch: bool) -> tuple[dict, dict, list]:
    """NewPartition then OnlinePartition of 100 partitions of a topic the store has no znode of (every /state
    creation fails), straight on the partition state machine."""
    with path(batch):
        cluster = Cluster(seed=3)
        cluster.start_brokers(range(4))
        psm = cluster.controller.partition_state_machine
        cluster.controller.context.add_topic("n", [(0, 1, 2)] * 100)
        tps = [("n", p) for p in range(100)]
        first = len(cluster.records)
        new = psm.handle_state_changes(tps, NEW_PARTITION)
        online = psm.handle_state_changes(tps, ONLINE_PARTITION, None)
        assert isinstance(new, partition_batch.LazyResults) == batch
        assert isinstance(online, partition_batch.LazyResults) == batch
        return new, online, cluster.records[first:]


def test_lazy_results_read_as_the_dict():
    new, online, records = _results(True)
    ref_new, ref_online, ref_records = _results(False)
    assert [msgpack.packb(r) for r in records] == [msgpack.packb(r) for r in ref_records]
    assert dict(new) == ref_new and list(new) == list(ref_new) and len(new) == 100 and ("n", 99) in new
    assert list(online) == list(ref_online)
    assert {tp: (type(e).__name__, str(e)) for tp, e in online.items()} == {
        tp: (type(e).__name__, str(e)) for tp, e in ref_online.items()}
    assert ("n", 7) in online and ("n", 100) not in online and online.get(("n", 100)) is None
