"""The all-brokers array passes of the controller agree with the per-partition reference path.

A few deterministic runs on clusters big enough that every batch path is taken at its default size
(``partition_batch.BATCH_MIN``): topic creation (NewReplica / OnlineReplica for every broker of a topic
in one pass), a broker coming back (UpdateMetadata for every partition as columns, its replicas back
online), a controller failover (OnlineReplica for every replica of the cluster), each also with a log
directory offline somewhere (where the columnar paths give way to the per-partition ones). Each run is
done on the batch path and on the reference path; both must write the same records (msgpack bytes, in
order), leave the same store and fold to the same view. ``tests/test_batch_differential.py`` holds the
paths to each other on random programs; these pin the large-cluster shapes it rarely reaches.
"""
from __future__ import annotations

from contextlib import contextmanager

import msgpack
import pytest
from hypothesis import given, settings, strategies as st

from controller.embedding.cluster import Cluster
from events.records import RequestSent, ReplicaTransition, UpdateMetadataPartition
from statemachines.partition_state_machine import PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine

SESSION_TIMEOUT_MS = 18_000


pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


@contextmanager
def path(batch: bool):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReplicaStateMachine, "batch_path", batch)
        mp.setattr(PartitionStateMachine, "batch_path", batch)
        yield


def both(program) -> tuple[Cluster, Cluster]:
    """``program(cluster)`` on the batch path and on the reference path; the two runs must agree."""
    runs = []
    for batch in (True, False):
        with path(batch):
            cluster = Cluster(seed=11, configs={"log.dirs": "/d1,/d2"})
            program(cluster)
            runs.append(cluster)
    a, b = runs
    ra, rb = list(a.records), list(b.records)
    for i, (x, y) in enumerate(zip(ra, rb)):
        assert msgpack.packb(x) == msgpack.packb(y), f"record {i} differs:\n batch     {x}\n reference {y}"
    assert len(ra) == len(rb)
    assert a.zk.dump() == b.zk.dump()
    assert a.view.digest() == b.view.digest()
    return a, b


def create(cluster: Cluster, topics: int = 3, partitions: int = 120, brokers: int = 6) -> None:
    cluster.start_brokers(range(brokers))
    for i in range(topics):
        cluster.create_topic(f"t{i}", partitions, 3)


def test_creation_passes_agree():
    a, _ = both(create)
    moves = [r for r in a.records if type(r) is ReplicaTransition]
    assert len(moves) == 2 * 3 * 120 * 3


def test_creation_with_an_explicit_assignment_on_a_dead_broker_agrees():
    def program(cluster):
        cluster.start_brokers(range(5))
        assignment = [((p % 6), (p + 1) % 6, (p + 3) % 6) for p in range(150)]   # broker 5 never started
        cluster.create_topic("x", assignment=assignment)
        cluster.create_topic("y", 90, 2)
    both(program)


def test_broker_restart_agrees_and_sends_every_partition():
    def program(cluster):
        create(cluster)
        cluster.kill_broker(2, at=cluster.now + 1)
        cluster.advance_to(cluster.now + SESSION_TIMEOUT_MS + 2)
        cluster.start_broker(2)
    a, _ = both(program)
    # The restarted broker's UpdateMetadata carries every partition with leadership info.
    last_um = [r for r in a.records if type(r) is RequestSent and r.api == 6 and r.broker_id == 2]
    assert last_um and max(r.partition_count for r in last_um) == 3 * 120
    assert any(type(r) is UpdateMetadataPartition for r in a.records)


def test_broker_restart_with_an_offline_log_dir_elsewhere_agrees():
    def program(cluster):
        create(cluster)
        cluster.fail_log_dir(4, at=cluster.now + 1)
        cluster.advance(100)
        cluster.kill_broker(2, at=cluster.now + 1)
        cluster.advance_to(cluster.now + SESSION_TIMEOUT_MS + 2)
        cluster.start_broker(2)
    both(program)


def test_controller_failover_agrees():
    def program(cluster):
        create(cluster)
        cluster.kill_broker(4, at=cluster.now + 1)
        cluster.advance_to(cluster.now + SESSION_TIMEOUT_MS + 2)
        old = cluster.controller_id
        cluster.kill_broker(old, at=cluster.now + 1)
        cluster.advance_to(cluster.now + SESSION_TIMEOUT_MS + 2)
        assert cluster.controller_id not in (None, old)
    both(program)


def test_controller_failover_with_an_offline_log_dir_agrees():
    def program(cluster):
        create(cluster)
        cluster.fail_log_dir(3, at=cluster.now + 1)
        cluster.advance(100)
        old = cluster.controller_id
        cluster.kill_broker(old, at=cluster.now + 1)
        cluster.advance_to(cluster.now + SESSION_TIMEOUT_MS + 2)
    both(program)


# --- the array pieces, against the loops they replace ---------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 5)), max_size=60), st.integers(0, 3))
def test_ensure_replica_states_for_many_replicas_is_the_loop(pairs, existing):
    """``ensure_replica_states`` with one replica per row appends the missing ones in row order, as
    ``replica_states_or_init`` over the same rows does (the order of each partition's replica states)."""
    from controller.context import ControllerContext
    from statemachines.states import NON_EXISTENT_REPLICA, ONLINE_REPLICA
    import numpy as np
    pairs = list(dict.fromkeys(pairs))   # each (partition, replica) once, as the batch path requires
    contexts = []
    for _ in range(2):
        ctx = ControllerContext()
        ctx.add_topic("t", [(0, 1, 2)] * 8)
        for p in range(8):   # some replicas already have a state
            for r in range(existing % 3):
                ctx.put_replica_state(("t", p, (p + r) % 6), ONLINE_REPLICA)
        contexts.append(ctx)
    a, b = contexts
    expected = b.replica_states_or_init([("t", p, r) for p, r in pairs], NON_EXISTENT_REPLICA)
    ts = a.topics["t"]
    parts = np.array([p for p, _ in pairs], dtype=np.int64)
    reps = np.array([r for _, r in pairs], dtype=np.int32)
    cols, states = a.ensure_replica_states(ts, parts, reps, NON_EXISTENT_REPLICA)
    assert states.tolist() == expected
    for p in range(8):
        assert a.partition_replica_states(("t", p)) == b.partition_replica_states(("t", p))
    for (p, r), c in zip(pairs, cols.tolist()):
        assert a.pool.tuples[ts.ridcode[p]][c] == r


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=80))
def test_group_positions_list_the_rows_as_by_replica_groups_them(replicas):
    import numpy as np
    from statemachines.replica_batch import group_positions
    from statemachines.replica_rows import ReplicaRows
    n = len(replicas)
    rows = ReplicaRows(["t"], np.zeros(n, dtype=np.int32), np.arange(n), np.array(replicas, dtype=np.int32))
    expected = [i for group in rows.by_replica().values() for i in group.partition.tolist()]
    position = group_positions(rows.replica)
    if not n:
        assert position is None
        return
    order = np.empty(n, dtype=np.int64)
    order[position] = np.arange(n)
    assert order.tolist() == expected
