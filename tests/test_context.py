"""ControllerContext: Kafka's predicates and the incremental counters."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.context import ControllerContext
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.states import (
    NEW_PARTITION, NON_EXISTENT_PARTITION, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_STARTED,
)


def lice(leader, isr, epoch=0):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, epoch, tuple(isr)), 1)


def make():
    ctx = ControllerContext()
    ctx.add_live_brokers({1: 10, 2: 20, 3: 30})
    ctx.add_topic("t", [(1, 2, 3), (2, 3, 1)])
    return ctx


def test_is_replica_online_honours_shutdown_and_offline_dirs():
    ctx = make()
    assert ctx.is_replica_online(1, ("t", 0))
    ctx.shutting_down_broker_ids.add(1)
    assert not ctx.is_replica_online(1, ("t", 0))
    assert ctx.is_replica_online(1, ("t", 0), include_shutting_down_brokers=True)
    assert ctx.live_broker_ids == {2, 3} and ctx.live_or_shutting_down_broker_ids == {1, 2, 3}
    ctx.replicas_on_offline_dirs[2] = {("t", 1)}
    assert not ctx.is_replica_online(2, ("t", 1)) and ctx.is_replica_online(2, ("t", 0))
    assert not ctx.is_replica_online(9, ("t", 0))
    f = ctx.online_replica_filter()
    assert [f(b, ("t", 1)) for b in (1, 2, 3, 9)] == [False, False, True, False]


def test_assignments_and_replica_queries():
    ctx = make()
    assert ctx.partition_replica_assignment(("t", 1)) == (2, 3, 1)
    assert ctx.partition_replica_assignment(("nope", 0)) == ()
    assert ctx.partitions_on_broker(1) == [("t", 0), ("t", 1)]
    assert ctx.replicas_on_brokers([3]) == [("t", 0, 3), ("t", 1, 3)]
    ctx.update_partition_full_replica_assignment(("t", 0), ReplicaAssignment((1, 2, 3, 4), (4,), (1,)))
    full = ctx.partition_full_replica_assignment(("t", 0))
    assert full.origin_replicas == (1, 2, 3) and full.target_replicas == (2, 3, 4)
    # assignments are interned: equal tuples are one object
    ctx.add_topic("u", [(2, 3, 1)])
    assert ctx.partition_replica_assignment(("u", 0)) is ctx.partition_replica_assignment(("t", 1))


def test_replica_states_put_get_remove():
    ctx = make()
    assert ctx.replica_state(("t", 0, 1)) is None
    ctx.put_replica_state(("t", 0, 1), ONLINE_REPLICA)
    ctx.put_replica_state(("t", 0, 2), OFFLINE_REPLICA)
    assert ctx.replica_states_or_init([("t", 0, 1), ("t", 0, 3)], 7) == [ONLINE_REPLICA, 7]
    ctx.put_replica_states([("t", 0, 3)], REPLICA_DELETION_STARTED)
    assert ctx.replicas_in_state("t", REPLICA_DELETION_STARTED) == [("t", 0, 3)]
    ctx.remove_replica_state(("t", 0, 2))
    assert ctx.replica_state(("t", 0, 2)) is None and ctx.replica_state(("t", 0, 3)) == REPLICA_DELETION_STARTED
    assert ctx.is_any_replica_in_state("t", ONLINE_REPLICA)
    assert not ctx.are_all_replicas_in_state("t", ONLINE_REPLICA)


def test_offline_partition_count_is_incremental():
    ctx = make()
    ctx.put_partition_state(("t", 0), NEW_PARTITION)
    ctx.put_partition_state(("t", 0), OFFLINE_PARTITION)
    ctx.put_partition_state(("t", 1), OFFLINE_PARTITION)
    assert ctx.offline_partition_count == 2
    ctx.put_partition_state(("t", 0), ONLINE_PARTITION)
    assert ctx.offline_partition_count == 1
    ctx.queue_topic_deletion(["t"])
    ctx.put_partition_state(("t", 1), NON_EXISTENT_PARTITION)   # Kafka's order: NonExistent, then begin
    ctx.begin_topic_deletion(["t"])
    assert ctx.offline_partition_count == 0
    ctx.put_partition_state(("t", 0), OFFLINE_PARTITION)       # deleted topics no longer count
    assert ctx.offline_partition_count == 0


def test_leadership_info_and_leader_epoch_during_delete():
    ctx = make()
    assert ctx.partition_leadership_info(("t", 0)) is None and ctx.leader_epoch(("t", 0)) == -1
    ctx.put_partition_leadership_info(("t", 0), lice(2, (2, 3), epoch=4))
    assert ctx.partition_leadership_info(("t", 0)) == lice(2, (2, 3), epoch=4)
    assert ctx.leader_epoch(("t", 0)) == 4
    assert ctx.partition_leaders_on_broker(2) == [("t", 0)]
    ctx.remove_live_brokers([2])
    assert ctx.partitions_with_offline_leader() == [("t", 0)]
    ctx.queue_topic_deletion(["t"])
    assert ctx.leader_epoch(("t", 0)) == -2
    assert ctx.partitions_with_offline_leader() == []


def test_remove_topic_forgets_the_topic_as_kafka_does():
    ctx = make()
    ctx.put_partition_leadership_info(("t", 0), lice(1, (1, 2)))
    ctx.put_partition_state(("t", 0), OFFLINE_PARTITION)
    ctx.partitions_being_reassigned.add(("t", 0))
    ctx.queue_topic_deletion(["t"])
    ctx.topics_ineligible_for_deletion.add("t")
    ctx.remove_topic("t")
    assert "t" not in ctx.topics and "t" not in ctx.topics_to_be_deleted
    assert ctx.offline_partition_count == 0 and ctx.preferred_replica_imbalance_count == 0
    # Kafka 3.7's removeTopic leaves these as they were.
    assert ctx.partitions_being_reassigned == {("t", 0)} and ctx.topics_ineligible_for_deletion == {"t"}


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from([1, 2, 3, -1])), max_size=30),
       st.lists(st.integers(0, 1), max_size=3))
def test_preferred_replica_imbalance_count_matches_a_full_recount(leader_changes, deleted_partitions):
    """Kafka 3.7 keeps the imbalance count incrementally; it must always equal a recount."""
    ctx = make()
    for p, leader in leader_changes:
        ctx.put_partition_leadership_info(("t", p), lice(leader, (1, 2, 3)))
        expected = sum(1 for q in (0, 1) if ctx.partition_leadership_info(("t", q)) is not None
                       and ctx.partition_leadership_info(("t", q)).leader_and_isr.leader
                       != ctx.partition_replica_assignment(("t", q))[0])
        assert ctx.preferred_replica_imbalance_count == expected
    if deleted_partitions:
        ctx.queue_topic_deletion(["t"])
        assert ctx.preferred_replica_imbalance_count == 0


def _sample_context() -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch, ctx.epoch_zk_version = 3, 2
    ctx.add_live_brokers({1: 10, 2: 20, 3: 30})
    ctx.add_topic("a", [(1, 2, 3), (2, 3, 1), (3, 1)])
    ctx.add_topic("b", [(2,)])
    ctx.put_partition_leadership_info(("a", 0), LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 2),
                                                                                         partition_epoch=7), 2))
    ctx.put_partition_leadership_info(("a", 2), LeaderIsrAndControllerEpoch(LeaderAndIsr(3, 1, (3,)), 3))
    for rep in [("a", 0, 1), ("a", 0, 2), ("a", 2, 1), ("b", 0, 2)]:
        ctx.put_replica_state(rep, ONLINE_REPLICA)
    ctx.put_partition_state(("a", 0), ONLINE_PARTITION)
    ctx.update_partition_full_replica_assignment(("a", 1), ReplicaAssignment((2, 3, 1), (1,), ()))
    return ctx


def _facts(ctx: ControllerContext) -> list:
    return [(t, p, ctx.partition_full_replica_assignment((t, p)), ctx.partition_leadership_info((t, p)),
             ctx.partition_state((t, p)), ctx.partition_replica_states((t, p)))
            for t in sorted(ctx.topics) for p in range(len(ctx.topics[t].rcode))]


def test_snapshot_state_round_trips_as_columns():
    ctx = _sample_context()
    state = ctx.to_state()
    assert state[0] == ControllerContext.STATE_FORMAT
    other = ControllerContext()
    other.pool.code((9, 9))   # a pool with other codes already: the snapshot's codes are remapped
    other.load_state(state)
    assert _facts(other) == _facts(ctx)
    assert _facts(ControllerContext()) == [] and other.epoch == ctx.epoch


def test_snapshot_state_of_the_int32_column_format_is_read():
    """Format 2 held the int columns as int32 buffers (format 3: the narrowest width)."""
    import numpy as np
    from events.arrays import from_narrow_bytes
    ctx = _sample_context()
    state = ctx.to_state()
    old = [2, *state[1:]]
    old[7] = []
    for row in state[7]:
        n = len(row[4])
        wide = [from_narrow_bytes(v, n, "c").astype("<i4").tobytes() if i in (1, 5, 6, 7, 8, 9, 11) else v
                for i, v in enumerate(row)]
        old[7].append(wide)
    assert old[7] != state[7] and any(len(np.frombuffer(r[5], "<i4")) for r in old[7])
    other = ControllerContext()
    other.load_state(old)
    assert _facts(other) == _facts(ctx) and other.to_state() == state


def test_snapshot_state_of_the_list_format_is_read():
    """Snapshots written before the columnar form held per-partition lists."""
    ctx = _sample_context()
    tuples = ctx.pool.tuples
    topics = []
    for name, ts in ctx.topics.items():
        w = ts.rwidth
        rids = [tuples[c] for c in ts.ridcode]
        topics.append([name, [tuples[c] for c in ts.rcode], sorted(ts.adding.items()), sorted(ts.removing.items()),
                       bytes(ts.pstate), ts.leader.tolist(), ts.leader_epoch.tolist(), [tuples[c] for c in ts.icode],
                       ts.partition_epoch.tolist(), ts.state_controller_epoch.tolist(), bytes(ts.recovery), rids,
                       [bytes(ts.rstates[p * w:p * w + len(r)]) for p, r in enumerate(rids)]])
    old = [ctx.epoch, ctx.epoch_zk_version, sorted(ctx.live_broker_epochs.items()), [], [], topics, [], [], [], [],
           [], ctx.offline_partition_count, ctx.preferred_replica_imbalance_count, ctx.unclean_leader_elections]
    other = ControllerContext()
    other.load_state(old)
    assert _facts(other) == _facts(ctx)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-1, 40), min_size=3, max_size=3), max_size=30), st.booleans())
def test_codes_of_rows_are_the_rows_without_padding(rows, wide):
    """Rows with padding anywhere (a masked replica list) or at the end; packed keys or, too wide, np.unique."""
    import numpy as np
    ctx = ControllerContext()
    m = np.array(rows, dtype=np.int32).reshape(len(rows), 3)
    if wide:
        m = np.concatenate([m] * 8, axis=1)   # 24 ids of up to 6 bits each: too wide to pack in an int64
    codes = ctx.codes_of_rows(m)
    assert [ctx.pool.tuples[c] for c in codes.tolist()] == [tuple(x for x in r if x >= 0) for r in m.tolist()]
