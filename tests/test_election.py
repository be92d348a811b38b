"""Leader election algorithms and new-ISR rules (statemachines/election.py).

Ports Kafka's PartitionLeaderElectionAlgorithmsTest (core/src/test/scala/unit/kafka/controller/) case by
case, adds the new-ISR rules of Election.scala, and checks the algorithms' invariants with hypothesis.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemachines.election import (
    controlled_shutdown_leader, controlled_shutdown_new_isr, offline_new_isr, offline_partition_leader,
    preferred_new_isr, preferred_replica_leader, reassign_new_isr, reassign_partition_leader,
)

# --- PartitionLeaderElectionAlgorithmsTest ports ------------------------------------------------------


def test_offline_partition_leader_election():
    # Kafka: testOfflinePartitionLeaderElection
    assert offline_partition_leader([2, 4], [2, 4], {4}, False) == 4


def test_offline_partition_leader_election_last_isr_offline_unclean_disabled():
    # Kafka: testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled
    # (the uncleanLeaderElectionRate meter assertion is ported in test_partition_state_machine.py,
    # where our meter lives: ControllerContext.unclean_leader_elections)
    assert offline_partition_leader([2, 4], [2], {4}, False) is None


def test_offline_partition_leader_election_last_isr_offline_unclean_enabled():
    # Kafka: testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled
    assert offline_partition_leader([2, 4], [2], {4}, True) == 4


def test_reassign_partition_leader_election():
    # Kafka: testReassignPartitionLeaderElection
    assert reassign_partition_leader([2, 4], [2, 4], {4}) == 4


def test_reassign_partition_leader_election_with_no_live_isr():
    # Kafka: testReassignPartitionLeaderElectionWithNoLiveIsr
    assert reassign_partition_leader([2, 4], [2], set()) is None


def test_reassign_partition_leader_election_with_empty_isr():
    # Kafka: testReassignPartitionLeaderElectionWithEmptyIsr
    assert reassign_partition_leader([2, 4], [], {2}) is None


def test_preferred_replica_partition_leader_election():
    # Kafka: testPreferredReplicaPartitionLeaderElection
    assert preferred_replica_leader([2, 4], [2, 4], {2, 4}) == 2


def test_preferred_replica_leader_election_preferred_in_isr_not_live():
    # Kafka: testPreferredReplicaPartitionLeaderElectionPreferredReplicaInIsrNotLive
    assert preferred_replica_leader([2, 4], [2], set()) is None


def test_preferred_replica_leader_election_preferred_not_in_isr_live():
    # Kafka: testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrLive
    assert preferred_replica_leader([2, 4], [4], {2, 4}) is None


def test_preferred_replica_leader_election_preferred_not_in_isr_not_live():
    # Kafka: testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrNotLive
    assert preferred_replica_leader([2, 4], [], set()) is None


def test_controlled_shutdown_partition_leader_election():
    # Kafka: testControlledShutdownPartitionLeaderElection
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2}) == 4


def test_controlled_shutdown_leader_election_last_isr_shutting_down():
    # Kafka: testControlledShutdownPartitionLeaderElectionLastIsrShuttingDown
    assert controlled_shutdown_leader([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_leader_election_all_isr_simultaneously_shutdown():
    # Kafka: testControlledShutdownPartitionLeaderElectionAllIsrSimultaneouslyShutdown
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2, 4}) is None


# --- further fixed cases ---------------------------------------------------------------------------


def test_offline_prefers_isr_member_over_earlier_live_non_isr_replica():
    # Assignment order decides among *qualifying* replicas: 1 is live but not in the ISR, so with unclean
    # enabled the clean candidate 3 still wins over it.
    assert offline_partition_leader([1, 2, 3], [2, 3], {1, 3}, True) == 3
    assert offline_partition_leader([1, 2, 3], [2, 3], {1, 3}, False) == 3


def test_offline_unclean_picks_first_live_in_assignment_order():
    assert offline_partition_leader([3, 1, 2], [5], {1, 2}, True) == 1


def test_offline_nothing_live():
    assert offline_partition_leader([1, 2], [1, 2], set(), True) is None


def test_reassign_uses_target_replica_order():
    assert reassign_partition_leader([4, 2], [2, 4], {2, 4}) == 4
    # A live ISR member outside the target replicas is never chosen.
    assert reassign_partition_leader([4], [2], {2}) is None


def test_preferred_empty_assignment():
    assert preferred_replica_leader([], [1], {1}) is None


def test_controlled_shutdown_picks_first_eligible_in_assignment_order():
    assert controlled_shutdown_leader([1, 2, 3], [3, 2, 1], {1, 2, 3}, {1}) == 2
    # A replica outside the ISR is never chosen, even if it is the only one not shutting down.
    assert controlled_shutdown_leader([1, 2], [1], {1, 2}, {1}) is None


# --- new ISR per strategy (Election.scala) -------------------------------------------------------------


def test_offline_new_isr_clean_drops_offline_members_keeping_order():
    # leaderForOffline: leader from the ISR -> isr.filter(isReplicaOnline)
    assert offline_new_isr(3, [1, 3, 2], {2, 3}) == (3, 2)


def test_offline_new_isr_unclean_is_leader_alone():
    # leaderForOffline: leader not in the ISR (unclean) -> List(leader)
    assert offline_new_isr(4, [2], {4}) == (4,)


def test_reassign_and_preferred_keep_isr():
    # leaderForReassign / leaderForPreferredReplica use LeaderAndIsr.newLeader: ISR unchanged.
    assert reassign_new_isr([3, 1, 2]) == (3, 1, 2)
    assert preferred_new_isr([3, 1, 2]) == (3, 1, 2)


def test_controlled_shutdown_new_isr_drops_shutting_down_brokers():
    # leaderForControlledShutdown: isr.filter(!shuttingDownBrokerIds.contains(_))
    assert controlled_shutdown_new_isr([2, 4, 6], {2, 6}) == (4,)
    assert controlled_shutdown_new_isr([2, 4], set()) == (2, 4)


# --- properties ---------------------------------------------------------------------------------------

BROKERS = st.integers(min_value=0, max_value=7)
assignments = st.lists(BROKERS, min_size=0, max_size=6, unique=True)
broker_sets = st.sets(BROKERS, max_size=8)


def _containers(s):
    """The same set of ids as list, tuple, set, frozenset and (sorted-reversed) list."""
    return [list(s), tuple(s), set(s), frozenset(s), sorted(s, reverse=True)]


@settings(max_examples=300, deadline=None)
@given(assignments, broker_sets, broker_sets, st.booleans())
def test_offline_leader_properties(assignment, isr_set, live, unclean):
    isr = sorted(isr_set)
    leader = offline_partition_leader(assignment, isr, live, unclean)
    clean = [r for r in assignment if r in live and r in isr_set]
    if clean:
        expected = clean[0]
    elif unclean:
        expected = next((r for r in assignment if r in live), None)
    else:
        expected = None
    assert leader == expected
    if leader is not None:
        assert leader in assignment and leader in live
        if not unclean:
            assert leader in isr_set
        # the FIRST qualifying replica in assignment order
        qualifying = [r for r in assignment if r in live and (r in isr_set or (unclean and not clean))]
        assert leader == qualifying[0]
    for i in _containers(isr_set):
        for lv in _containers(live):
            assert offline_partition_leader(assignment, i, lv, unclean) == leader


@settings(max_examples=300, deadline=None)
@given(assignments, broker_sets, broker_sets)
def test_reassign_leader_properties(target, isr_set, live):
    leader = reassign_partition_leader(target, sorted(isr_set), live)
    expected = next((r for r in target if r in live and r in isr_set), None)
    assert leader == expected
    if leader is not None:
        assert leader in target and leader in live and leader in isr_set
    for i in _containers(isr_set):
        for lv in _containers(live):
            assert reassign_partition_leader(target, i, lv) == leader


@settings(max_examples=300, deadline=None)
@given(assignments, broker_sets, broker_sets)
def test_preferred_leader_properties(assignment, isr_set, live):
    leader = preferred_replica_leader(assignment, sorted(isr_set), live)
    assert leader is None or leader == assignment[0]
    if leader is not None:
        assert leader in live and leader in isr_set
    if assignment and assignment[0] in live and assignment[0] in isr_set:
        assert leader == assignment[0]
    for i in _containers(isr_set):
        for lv in _containers(live):
            assert preferred_replica_leader(assignment, i, lv) == leader


@settings(max_examples=300, deadline=None)
@given(assignments, broker_sets, broker_sets, broker_sets)
def test_controlled_shutdown_leader_properties(assignment, isr_set, live, down):
    leader = controlled_shutdown_leader(assignment, sorted(isr_set), live, down)
    expected = next((r for r in assignment if r in live and r in isr_set and r not in down), None)
    assert leader == expected
    if leader is not None:
        assert leader not in down
        assert leader in assignment and leader in live and leader in isr_set
    for i in _containers(isr_set):
        for lv in _containers(live):
            for d in _containers(down):
                assert controlled_shutdown_leader(assignment, i, lv, d) == leader


@settings(max_examples=200, deadline=None)
@given(st.lists(BROKERS, max_size=6, unique=True), broker_sets, BROKERS)
def test_new_isr_properties(isr, online, leader):
    new = offline_new_isr(leader, isr, online)
    if leader in isr:
        assert new == tuple(r for r in isr if r in online)
    else:
        assert new == (leader,)
    for o in _containers(online):
        assert offline_new_isr(leader, isr, o) == new
        shrunk = controlled_shutdown_new_isr(isr, o)
        assert shrunk == tuple(r for r in isr if r not in online)
        assert set(shrunk).isdisjoint(online)
    assert reassign_new_isr(isr) == tuple(isr) == preferred_new_isr(isr)


@pytest.mark.parametrize("fn, args", [
    (offline_partition_leader, ([1, 2], iter([2]), iter([2]), False)),
    (reassign_partition_leader, ([1, 2], iter([2]), iter([2]))),
    (preferred_replica_leader, ([2, 1], iter([2]), iter([2]))),
    (controlled_shutdown_leader, ([1, 2], iter([1, 2]), iter([1, 2]), iter([1]))),
])
def test_one_shot_iterables_are_accepted(fn, args):
    # "sets may be any iterable": a one-shot iterator must give the same answer as a set.
    assert fn(*args) == 2
