"""Tests of sim.quorum: Kafka's LeaderState replica tracking (LeaderStateTest ports, 3.7 and 3.9),
observer expiry as the seed blog post tells it, and kafka-metadata-quorum.sh's exact text."""
from __future__ import annotations

import base64

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.quorum import (
    OBSERVER_SESSION_TIMEOUT_MS, ZERO_UUID, DescribeToolError, Endpoint, MetadataQuorum, QuorumStateError,
    ReplicaDescription, Voter, canonical_directory_id, format_replication, format_status,
)

BOTH = pytest.mark.parametrize("version", ["3.7", "3.9"])
LOCAL = 0
EPOCH = 5


def uuid(n: int) -> str:
    """A fixed directory id (Kafka's base64 Uuid text) per n."""
    return base64.urlsafe_b64encode(bytes([n + 1]) * 16).rstrip(b"=").decode()


def leader_state(voters, epoch_start_offset: int, version: str = "3.7", **kw) -> MetadataQuorum:
    return MetadataQuorum(voters, LOCAL, EPOCH, "cluster", version=version, epoch_start_offset=epoch_start_offset, **kw)


def find(replicas, replica_id: int) -> ReplicaDescription:
    matches = [r for r in replicas if r.replica_id == replica_id]
    assert matches, f"Failed to find expected replica state for replica {replica_id}"
    return matches[0]


def voter_state(state: MetadataQuorum, replica_id: int, now_ms: int) -> ReplicaDescription:
    return find(state.describe(now_ms).voters, replica_id)


def observer_state(state: MetadataQuorum, replica_id: int, now_ms: int) -> ReplicaDescription:
    return find(state.describe(now_ms).observers, replica_id)


# --- LeaderStateTest (3.7.0; the same cases in 3.9.0 where they still exist) --------------------------

@BOTH
def test_update_high_watermark_quorum_size_one(version):
    state = leader_state([LOCAL], 15, version)
    assert state.high_watermark is None
    assert not state.append(15)
    assert state.non_acknowledging_voters() == frozenset()
    assert state.high_watermark is None
    assert state.append(16)
    assert state.high_watermark == 16
    assert state.append(20)
    assert state.high_watermark == 20


@BOTH
def test_non_monotonic_local_end_offset_update(version):
    state = leader_state([LOCAL], 15, version)
    assert state.append(16)
    assert state.high_watermark == 16
    with pytest.raises(QuorumStateError, match="non-monotonic update of local end offset: 16 -> 15"):
        state.append(15)


@BOTH
def test_idempotent_end_offset_update(version):
    state = leader_state([LOCAL], 15, version)
    assert state.append(16)
    assert not state.append(16)
    assert state.high_watermark == 16


@BOTH
def test_update_high_watermark_quorum_size_two(version):
    state = leader_state([LOCAL, 1], 10, version)
    assert not state.append(13)
    assert state.non_acknowledging_voters() == {1}
    assert state.high_watermark is None
    assert not state.fetch(1, 10, 0)
    assert state.non_acknowledging_voters() == frozenset()
    assert state.high_watermark is None  # 10 is not past the epoch start offset
    assert state.fetch(1, 11, 0)
    assert state.high_watermark == 11
    assert state.fetch(1, 13, 0)
    assert state.high_watermark == 13


@BOTH
def test_update_high_watermark_quorum_size_three(version):
    state = leader_state([LOCAL, 1, 2], 10, version)
    assert not state.append(15)
    assert state.non_acknowledging_voters() == {1, 2}
    assert not state.fetch(1, 10, 0)
    assert state.non_acknowledging_voters() == {2}
    assert not state.fetch(2, 10, 0)
    assert state.non_acknowledging_voters() == frozenset()
    assert state.high_watermark is None
    assert state.fetch(2, 15, 0)
    assert state.high_watermark == 15
    assert not state.append(20)
    assert state.high_watermark == 15
    assert state.fetch(1, 20, 0)
    assert state.high_watermark == 20
    assert not state.fetch(2, 20, 0)
    assert state.high_watermark == 20


@BOTH
def test_non_monotonic_high_watermark_update(version):
    state = leader_state([LOCAL, 1], 0, version)
    state.append(10)
    state.fetch(1, 10, 0)
    assert state.high_watermark == 10
    # The follower lost its disk and fetches from an earlier offset: logged, taken, and the HW stays.
    with structlog.testing.capture_logs() as logs:
        assert not state.fetch(1, 5, 0)
    assert voter_state(state, 1, 0).log_end_offset == 5
    assert state.high_watermark == 10
    who = "1" if version == "3.7" else "ReplicaKey(id=1, directoryId=Optional.empty)"
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [e["event"] for e in warnings] == [
        f"Detected non-monotonic update of fetch offset from nodeId {who}: 10 -> 5"]
    if version == "3.7":  # 3.9 logs the same finding at INFO, with a voter-change explanation
        errors = [e["event"] for e in logs if e["log_level"] == "error"]
        assert len(errors) == 1 and errors[0].startswith(
            "The latest computed high watermark 5 is smaller than the current value 10, which suggests")


@BOTH
def test_last_caught_up_time_voters(version):
    current_time, fetch_time, caught_up_time = 1000, 0, -1
    state = leader_state([LOCAL, 1, 2], 10, version)
    assert not state.append(10)
    assert state.high_watermark is None

    # Node 1 falls behind
    assert not state.append(11)
    fetch_time += 1
    assert not state.fetch(1, 10, fetch_time)
    assert voter_state(state, LOCAL, current_time).last_caught_up_timestamp == current_time
    assert voter_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 catches up to the leader
    fetch_time += 1
    assert state.fetch(1, 11, fetch_time)
    caught_up_time = fetch_time
    assert voter_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 falls behind
    assert not state.append(100)
    fetch_time += 1
    assert state.fetch(1, 50, fetch_time)
    assert voter_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 catches up to the leader's end offset as of its previous fetch: caught up at that fetch's time
    prev_fetch_time = fetch_time
    assert not state.append(200)
    fetch_time += 1
    assert state.fetch(1, 100, fetch_time)
    caught_up_time = prev_fetch_time
    assert voter_state(state, LOCAL, current_time).last_caught_up_timestamp == current_time
    assert voter_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 2 has never caught up to the leader
    assert voter_state(state, 2, current_time).last_caught_up_timestamp == -1
    assert not state.append(300)
    fetch_time += 1
    assert state.fetch(2, 200, fetch_time)
    assert voter_state(state, 2, current_time).last_caught_up_timestamp == -1
    fetch_time += 1
    assert state.fetch(2, 250, fetch_time)
    assert voter_state(state, 2, current_time).last_caught_up_timestamp == -1


@BOTH
def test_last_caught_up_time_observer(version):
    current_time, fetch_time, caught_up_time = 1000, 0, -1
    state = leader_state([LOCAL], 5, version)
    assert state.non_acknowledging_voters() == frozenset()

    # Node 1 falls behind
    assert state.append(11)
    fetch_time += 1
    assert not state.fetch(1, 10, fetch_time)
    assert voter_state(state, LOCAL, current_time).last_caught_up_timestamp == current_time
    assert observer_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 catches up to the leader
    fetch_time += 1
    assert not state.fetch(1, 11, fetch_time)
    caught_up_time = fetch_time
    assert observer_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 falls behind
    assert state.append(100)
    fetch_time += 1
    assert not state.fetch(1, 50, fetch_time)
    assert observer_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 catches up to the last fetch offset
    prev_fetch_time = fetch_time
    assert state.append(200)
    fetch_time += 1
    assert not state.fetch(1, 102, fetch_time)
    caught_up_time = prev_fetch_time
    assert observer_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time

    # Node 1 catches up to the leader
    fetch_time += 1
    assert not state.fetch(1, 200, fetch_time)
    caught_up_time = fetch_time
    assert voter_state(state, LOCAL, current_time).last_caught_up_timestamp == current_time
    assert observer_state(state, 1, current_time).last_caught_up_timestamp == caught_up_time


@BOTH
def test_a_fetch_before_the_leader_knows_its_end_offset_never_counts_as_caught_up(version):
    state = leader_state([LOCAL], 0, version)
    state.fetch(1, 0, 10)  # the leader has no end offset yet: neither caught up nor a reference point
    state.append(20)
    state.fetch(1, 5, 30)
    assert state.replica(1).last_caught_up_timestamp == -1
    state.fetch(1, 20, 40)
    assert state.replica(1).last_caught_up_timestamp == 40


def test_describe_quorum_with_single_voter():
    state = leader_state([LOCAL], 10)
    # Until we have updated local state, the high watermark is uninitialized
    result = state.describe(0)
    assert (result.high_watermark, result.leader_id, result.leader_epoch) == (-1, LOCAL, EPOCH)
    assert result.observers == ()
    assert result.voters == (ReplicaDescription(LOCAL, None, -1, 0, 0),)

    assert state.append(15)
    assert state.high_watermark == 15
    result = state.describe(500)
    assert result.high_watermark == 15
    assert result.observers == ()
    assert result.voters == (ReplicaDescription(LOCAL, None, 15, 500, 500),)


def test_describe_quorum_with_multiple_voters():
    active, inactive = 1, 2
    state = leader_state([LOCAL, active, inactive], 10)
    assert not state.append(15)
    assert state.fetch(active, 15, 0)
    assert state.high_watermark == 15
    result = state.describe(500)
    assert result.high_watermark == 15
    assert result.observers == ()
    assert len(result.voters) == 3
    assert find(result.voters, LOCAL) == ReplicaDescription(LOCAL, None, 15, 500, 500)
    assert find(result.voters, active) == ReplicaDescription(active, None, 15, 0, 0)
    assert find(result.voters, inactive) == ReplicaDescription(inactive, None, -1, -1, -1)


def test_describe_quorum_with_observers():
    observer_id, epoch_start = 10, 10
    state = leader_state([LOCAL], epoch_start)
    assert state.append(epoch_start + 1)
    assert state.high_watermark == epoch_start + 1
    assert not state.fetch(observer_id, epoch_start + 1, 500)
    result = state.describe(1000)
    assert result.high_watermark == epoch_start + 1
    assert [v.replica_id for v in result.voters] == [LOCAL]
    assert result.observers == (ReplicaDescription(observer_id, None, epoch_start + 1, 500, 500),)


@BOTH
def test_no_op_for_negative_remote_node_id(version):
    state = leader_state([LOCAL], 10, version)
    assert not state.fetch(-1, 10, 0)
    assert state.tracked_observers() == ()
    assert state.describe(0).observers == ()


@BOTH
def test_observer_state_expiration(version):
    observer_id, epoch_start = 10, 10
    state = leader_state([LOCAL], epoch_start, version)
    state.fetch(observer_id, epoch_start, 0)
    observers = state.describe(0).observers
    assert [o.replica_id for o in observers] == [observer_id]
    assert state.describe(OBSERVER_SESSION_TIMEOUT_MS).observers == ()


@BOTH
def test_fetch_from_the_leader_itself_is_a_bug(version):
    state = leader_state([LOCAL, 1], 0, version)
    with pytest.raises(QuorumStateError, match="matches the local leader ID"):
        state.fetch(LOCAL, 0, 0)


def test_observer_lag_and_caught_up_as_kafka_raft_client_describes_it():
    """KafkaRaftClientTest.testDescribeQuorumWithObserver (3.9): a 3.9 observer has its directory id."""
    observer_dir = uuid(7)
    state = leader_state([Voter(LOCAL, uuid(0)), Voter(1, uuid(1))], 0, "3.9")
    state.append(3)
    assert state.fetch(1, 3, 100, directory_id=uuid(1))
    assert not state.fetch(2, 0, 200, directory_id=observer_dir)
    assert state.describe(300).observers == (ReplicaDescription(2, observer_dir, 0, 200, -1),)
    assert not state.fetch(2, 3, 400, directory_id=observer_dir)
    assert state.describe(500).observers == (ReplicaDescription(2, observer_dir, 3, 400, 400),)
    state.append(5)  # the observer falls behind: nothing of it changes until it fetches
    assert state.describe(600).observers == (ReplicaDescription(2, observer_dir, 3, 400, 400),)
    assert state.describe(400 + OBSERVER_SESSION_TIMEOUT_MS).observers == ()


# --- LeaderStateTest, 3.9 only: voter changes (KIP-853) ------------------------------------------

def voters39(*ids_dirs) -> list[Voter]:
    return [Voter(i, d) for i, d in ids_dirs]


def test_high_watermark_does_increase_from_new_voter():
    k1, k2 = (1, uuid(1)), (2, uuid(2))
    original = voters39((LOCAL, uuid(0)), k1)
    state = leader_state(original, 5, "3.9")
    assert not state.append(15)
    assert state.fetch(1, 10, 0, uuid(1))
    assert state.high_watermark == 10
    # node 2 fetching before it joins the voter set does not move the HW
    assert not state.fetch(2, 15, 0, uuid(2))
    assert state.high_watermark == 10
    assert state.append(15, voters=original + voters39(k2))
    assert state.high_watermark == 15
    assert not state.append(16)
    assert state.high_watermark == 15
    assert state.fetch(2, 16, 0, uuid(2))
    assert state.high_watermark == 16


def test_high_watermark_does_not_decrease_from_new_voter():
    original = voters39((LOCAL, uuid(0)), (1, uuid(1)), (2, uuid(2)))
    state = leader_state(original, 5, "3.9")
    assert not state.append(15)
    assert state.fetch(1, 15, 0, uuid(1))
    assert state.high_watermark == 15
    assert not state.fetch(2, 10, 0, uuid(2))
    assert not state.fetch(3, 10, 0, uuid(3))  # before joining
    assert not state.append(16, voters=original + voters39((3, uuid(3))))
    assert state.high_watermark == 15
    assert not state.fetch(2, 13, 0, uuid(2))
    assert not state.fetch(3, 13, 0, uuid(3))
    assert not state.fetch(1, 16, 0, uuid(1))
    assert state.high_watermark == 15
    assert state.fetch(3, 16, 0, uuid(3))
    assert state.high_watermark == 16


def test_update_high_watermark_removing_follower_from_voter_states():
    original = voters39((LOCAL, uuid(0)), (1, uuid(1)), (2, uuid(2)))
    state = leader_state(original, 10, "3.9")
    assert not state.append(15)
    assert state.fetch(1, 15, 0, uuid(1))
    assert not state.fetch(2, 10, 0, uuid(2))
    assert state.high_watermark == 15
    without_1 = voters39((LOCAL, uuid(0)), (2, uuid(2)))
    assert not state.append(17, voters=without_1)
    assert state.high_watermark == 15
    assert state.tracked_observers() == ((1, uuid(1)),)  # the removed voter is now an observer
    assert not state.fetch(2, 14, 0, uuid(2))
    assert not state.append(18)
    assert not state.fetch(1, 18, 0, uuid(1))
    assert not state.fetch(2, 15, 0, uuid(2))
    assert state.high_watermark == 15
    assert state.fetch(2, 16, 0, uuid(2))
    assert state.high_watermark == 16


def test_update_high_watermark_quorum_removing_leader_from_voter_states():
    original = voters39((LOCAL, uuid(0)), (1, uuid(1)), (2, uuid(2)))
    state = leader_state(original, 10, "3.9")
    assert not state.append(15)
    assert state.fetch(1, 15, 0, uuid(1))
    assert not state.fetch(2, 10, 0, uuid(2))
    assert state.high_watermark == 15
    without_leader = voters39((1, uuid(1)), (2, uuid(2)))
    assert not state.append(17, voters=without_leader)
    assert state.high_watermark == 15
    assert not state.fetch(1, 16, 0, uuid(1))
    assert not state.append(18)
    assert not state.fetch(2, 14, 0, uuid(2))
    assert not state.fetch(2, 15, 0, uuid(2))
    assert state.high_watermark == 15
    assert state.fetch(2, 16, 0, uuid(2))
    assert state.high_watermark == 16
    # The leader is now an observer of its own quorum, never expired ...
    result = state.describe(10 * OBSERVER_SESSION_TIMEOUT_MS)
    assert [(o.replica_id, o.log_end_offset) for o in result.observers] == [(LOCAL, 18)]
    # ... and kafka-metadata-quorum.sh dies looking for the leader among the voters.
    with pytest.raises(DescribeToolError, match="NoSuchElementException"):
        format_status(result)


def test_update_voters_from_no_directory_id_to_directory_id():
    before = [Voter(LOCAL), Voter(1), Voter(2)]
    state = leader_state(before, 0, "3.9", leader_directory_id=uuid(0))
    assert not state.append(10)
    assert state.fetch(1, 10, 0, uuid(1))  # a voter set without directory ids matches any directory
    assert state.high_watermark == 10
    after = voters39((LOCAL, uuid(0)), (1, uuid(1)), (2, uuid(2)))
    assert not state.append(15, voters=after)
    assert state.fetch(2, 13, 0, uuid(2))
    assert state.high_watermark == 13
    assert state.tracked_observers() == ()


def test_set_voters_moves_observers_and_voters_as_kafka_does():
    state = leader_state(voters39((LOCAL, uuid(0)), (1, uuid(1))), 0, "3.9")
    state.append(10)
    state.fetch(1, 10, 100, uuid(1))
    state.fetch(3, 7, 200, uuid(3))
    # A new voter leaves the observers with the fetch state the leader had for it.
    assert not state.set_voters(voters39((LOCAL, uuid(0)), (1, uuid(1)), (3, uuid(3))))
    assert state.tracked_observers() == ()
    assert state.replica(3, uuid(3)) == ReplicaDescription(3, uuid(3), 7, 200, -1)
    assert state.high_watermark == 10  # unchanged: the majority offset (2 of 3 voters) is still 10
    # A voter that leaves becomes an observer with its state (putIfAbsent, listeners cleared).
    state.set_voters(voters39((LOCAL, uuid(0)), (3, uuid(3))))
    assert state.tracked_observers() == ((1, uuid(1)),)
    assert state.replica(1, uuid(1)) == ReplicaDescription(1, uuid(1), 10, 100, 100)
    # It stays listed until a describe 300 s after its last fetch, like any observer.
    assert [o.replica_id for o in state.describe(100 + OBSERVER_SESSION_TIMEOUT_MS - 1).observers] == [1]
    assert state.describe(100 + OBSERVER_SESSION_TIMEOUT_MS).observers == ()


def test_removed_voter_that_never_fetched_expires_at_the_first_describe_after_299_999_ms():
    state = leader_state(voters39((LOCAL, uuid(0)), (1, uuid(1)), (2, uuid(2))), 0, "3.9")
    state.append(1)
    state.set_voters(voters39((LOCAL, uuid(0)), (1, uuid(1))))
    # lastFetchTimestamp is -1, so "now - (-1) >= 300000" already holds at 299,999 ms.
    result = state.describe(1000)
    assert result.observers == (ReplicaDescription(2, uuid(2), -1, -1, -1),)
    assert "# observer 2 (directoryId " + uuid(2) + "): never fetched" in format_status(result)
    assert state.describe(OBSERVER_SESSION_TIMEOUT_MS - 1).observers == ()


def test_a_voter_id_with_another_directory_is_an_observer_in_3_9_and_the_voter_in_3_7():
    voters = [Voter(LOCAL, uuid(0), ("CONTROLLER://c0:9093",)), Voter(1, uuid(1), ("CONTROLLER://c1:9093",))]
    q39 = leader_state(voters, 0, "3.9")
    q39.append(5)
    assert not q39.fetch(1, 5, 10, directory_id=uuid(9))  # e.g. a replaced disk, not yet a voter
    assert q39.high_watermark is None
    result = q39.describe(20)
    assert result.observers == (ReplicaDescription(1, uuid(9), 5, 10, 10),)
    # MetadataQuorumCommand looks endpoints up by node id, so the observer shows the voter's listener.
    assert format_status(result, observer_ages=False).splitlines()[-1] == (
        'CurrentObservers:       [{"id": 1, "directoryId": "' + uuid(9) + '", "endpoints": ["CONTROLLER://c1:9093"]}]')

    q37 = leader_state(voters, 0, "3.7")
    q37.append(5)
    assert q37.fetch(1, 5, 10, directory_id=uuid(9))  # 3.7's Fetch carries no directory id
    assert q37.high_watermark == 5
    assert q37.describe(20).observers == ()


def test_voter_changes_need_3_9():
    state = leader_state([LOCAL, 1], 0, "3.7")
    with pytest.raises(ValueError, match="KIP-853"):
        state.set_voters([LOCAL])
    with pytest.raises(ValueError, match="KIP-853"):
        state.append(1, voters=[LOCAL])


# --- the seed: a broker stops fetching; CurrentObservers keeps it for up to 5 minutes ---------------

SEED_STATUS_3_9 = (
    "ClusterId:              pTAG7hqbRBGQwKg5Hujn8g\n"
    "LeaderId:               0\n"
    "LeaderEpoch:            1\n"
    "HighWatermark:          1036\n"
    "MaxFollowerLag:         0\n"
    "MaxFollowerLagTimeMs:   0\n"
    'CurrentVoters:          [{"id": 0, "directoryId": "3rDv-etwR2e90gwUcBllDg", '
    '"endpoints": ["CONTROLLER://yq01-build-rd2.yq01.baidu.com:15001"]}]\n'
    'CurrentObservers:       [{"id": 2, "directoryId": "JCX-hbVdtxCJl7geeqjNmA"}, '
    '{"id": 1, "directoryId": "9dk70WRte2_p__mZ_O0Bhg"}]\n'
)
# As the blog post shows it (its page collapsed Kafka's column padding to one space).
SEED_SAMPLE_LINES = [
    "ClusterId: pTAG7hqbRBGQwKg5Hujn8g",
    "LeaderId: 0",
    "LeaderEpoch: 1",
    "HighWatermark: 1036",
    "MaxFollowerLag: 0",
    "MaxFollowerLagTimeMs: 0",
    'CurrentVoters: [{"id": 0, "directoryId": "3rDv-etwR2e90gwUcBllDg", '
    '"endpoints": ["CONTROLLER://yq01-build-rd2.yq01.baidu.com:15001"]}]',
    'CurrentObservers: [{"id": 2, "directoryId": "JCX-hbVdtxCJl7geeqjNmA"}, '
    '{"id": 1, "directoryId": "9dk70WRte2_p__mZ_O0Bhg"}]',
]
T0 = 1_763_000_000_000  # an epoch-ms clock, as the real tool's --human-readable needs


def seed_quorum() -> MetadataQuorum:
    """A combined single-controller cluster (3.9, dynamic quorum) with brokers 1 and 2 fetching."""
    controller = Voter(0, "3rDv-etwR2e90gwUcBllDg", ("CONTROLLER://yq01-build-rd2.yq01.baidu.com:15001",))
    q = MetadataQuorum([controller], 0, 1, "pTAG7hqbRBGQwKg5Hujn8g", version="3.9")
    q.append(1036)
    # Broker 1 fetches first; Kafka still lists broker 2 first (HashMap order of their ReplicaKeys).
    q.fetch(1, 1036, T0, directory_id="9dk70WRte2_p__mZ_O0Bhg")
    q.fetch(2, 1036, T0 + 500, directory_id="JCX-hbVdtxCJl7geeqjNmA")
    return q


def test_format_status_matches_the_seed_sample_exactly():
    result = seed_quorum().describe(T0 + 12_500)
    assert format_status(result, observer_ages=False) == SEED_STATUS_3_9
    assert [" ".join(line.split(None, 1)) for line in SEED_STATUS_3_9.splitlines()] == SEED_SAMPLE_LINES


def test_format_status_adds_observer_ages_on_separate_lines():
    text = format_status(seed_quorum().describe(T0 + 12_500))
    assert text.startswith(SEED_STATUS_3_9)
    extra = text[len(SEED_STATUS_3_9):].splitlines()
    assert all(line.startswith("# ") for line in extra)
    assert extra[1:] == [
        "# observer 2 (directoryId JCX-hbVdtxCJl7geeqjNmA): last fetch 12,000 ms ago "
        "(dropped by a describe 288,000 ms or more from now)",
        "# observer 1 (directoryId 9dk70WRte2_p__mZ_O0Bhg): last fetch 12,500 ms ago "
        "(dropped by a describe 287,500 ms or more from now)",
    ]


def test_format_replication_3_9_exact_text():
    result = seed_quorum().describe(T0 + 12_500)
    assert format_replication(result, observer_ages=False) == (
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
        "0     \t3rDv-etwR2e90gwUcBllDg\t1036        \t0  \t1763000012500     \t1763000012500        \tLeader  \t\n"
        "2     \tJCX-hbVdtxCJl7geeqjNmA\t1036        \t0  \t1763000000500     \t1763000000500        \tObserver\t\n"
        "1     \t9dk70WRte2_p__mZ_O0Bhg\t1036        \t0  \t1763000000000     \t1763000000000        \tObserver\t\n"
    )
    assert format_replication(result, human_readable=True, now_ms=T0 + 13_000, observer_ages=False) == (
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
        "0     \t3rDv-etwR2e90gwUcBllDg\t1036        \t0  \t500 ms ago        \t500 ms ago           \tLeader  \t\n"
        "2     \tJCX-hbVdtxCJl7geeqjNmA\t1036        \t0  \t12500 ms ago      \t12500 ms ago         \tObserver\t\n"
        "1     \t9dk70WRte2_p__mZ_O0Bhg\t1036        \t0  \t13000 ms ago      \t13000 ms ago         \tObserver\t\n"
    )


def test_format_3_7_exact_text():
    q = MetadataQuorum([1, 2, 3], 1, 7, "MkU3OEVBNTcwNTJENDM2Qk", version="3.7", epoch_start_offset=100)
    q.append(120)
    q.fetch(2, 120, T0)
    q.fetch(3, 110, T0 + 10)
    q.fetch(5, 90, T0 + 20)
    q.fetch(4, 120, T0 + 30, directory_id=uuid(4))  # ignored by 3.7
    result = q.describe(T0 + 1000)
    assert format_status(result, observer_ages=False) == (
        "ClusterId:              MkU3OEVBNTcwNTJENDM2Qk\n"
        "LeaderId:               1\n"
        "LeaderEpoch:            7\n"
        "HighWatermark:          120\n"
        "MaxFollowerLag:         10\n"
        "MaxFollowerLagTimeMs:   -1\n"  # voter 3 never caught up

        "CurrentVoters:          [1,2,3]\n"
        "CurrentObservers:       [4,5]\n"
    )
    assert format_replication(result, observer_ages=False) == (
        "NodeId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
        "1     \t120         \t0  \t1763000001000     \t1763000001000        \tLeader  \t\n"
        "2     \t120         \t0  \t1763000000000     \t1763000000000        \tFollower\t\n"
        "3     \t110         \t10 \t1763000000010     \t-1                   \tFollower\t\n"
        "4     \t120         \t0  \t1763000000030     \t1763000000030        \tObserver\t\n"
        "5     \t90          \t30 \t1763000000020     \t-1                   \tObserver\t\n"
    )
    assert format_replication(result).endswith(
        "# observer 4: last fetch 970 ms ago (dropped by a describe 299,030 ms or more from now)\n"
        "# observer 5: last fetch 980 ms ago (dropped by a describe 299,020 ms or more from now)\n")


def test_max_follower_lag_time_takes_the_first_voter_at_the_minimum_even_when_nobody_lags():
    # Stream.min keeps the first of equal end offsets: with voter 0 listed before leader 2, the lag
    # time is the leader's "now" minus voter 0's last catch-up, though every lag is 0.
    q = MetadataQuorum([0, 1, 2], 2, 1, "c", version="3.7")
    q.append(50)
    q.fetch(0, 50, 1000)
    q.fetch(1, 50, 1500)
    lines = format_status(q.describe(4000)).splitlines()
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   3000"]
    q = MetadataQuorum([0, 1, 2], 0, 1, "c", version="3.7")
    q.append(50)
    q.fetch(1, 50, 1000)
    q.fetch(2, 50, 1500)
    assert format_status(q.describe(4000)).splitlines()[5] == "MaxFollowerLagTimeMs:   0"


def test_human_readable_fails_as_kafka_does_on_a_timestamp_not_after_the_epoch():
    q = MetadataQuorum([0, 1], 0, 1, "c")
    q.append(5)
    q.fetch(1, 5, 0)
    result = q.describe(100)
    with pytest.raises(DescribeToolError, match="possible drift in system clock"):
        format_replication(result, human_readable=True)
    assert "\t0                 \t" in format_replication(result)


def test_seed_story_dead_broker_listed_until_a_describe_300_s_after_its_last_fetch():
    q = seed_quorum()
    last_fetch_of_2 = T0 + 500
    # Broker 1 keeps fetching every 500 ms; broker 2 is shut down after its fetch at T0 + 500.
    now = T0
    while now < last_fetch_of_2 + OBSERVER_SESSION_TIMEOUT_MS + 5_000:
        now += 500
        q.fetch(1, 1036, now, directory_id="9dk70WRte2_p__mZ_O0Bhg")

    def listed(at: int) -> list[int]:
        return [o.replica_id for o in q.describe(at).observers]

    assert listed(last_fetch_of_2 + 1_000) == [2, 1]  # right after the shutdown: still there
    assert listed(last_fetch_of_2 + OBSERVER_SESSION_TIMEOUT_MS - 1) == [2, 1]  # 299,999 ms: kept
    assert listed(last_fetch_of_2 + OBSERVER_SESSION_TIMEOUT_MS) == [1]  # 300,000 ms: dropped
    assert q.tracked_observers() == ((1, "9dk70WRte2_p__mZ_O0Bhg"),)


def test_without_a_describe_the_observer_map_never_shrinks():
    q = seed_quorum()
    for hour in range(1, 25):
        q.fetch(1, 1036, T0 + hour * 3_600_000, directory_id="9dk70WRte2_p__mZ_O0Bhg")
        assert len(q.tracked_observers()) == 2
    # One describe, a day later, drops broker 2 at last.
    assert [o.replica_id for o in q.describe(T0 + 24 * 3_600_000).observers] == [1]


def test_a_pruned_observer_that_returns_starts_afresh():
    q = MetadataQuorum([0], 0, 1, "c", version="3.7")
    q.append(100)
    q.fetch(7, 100, 1_000)
    assert observer_state(q, 7, 2_000).last_caught_up_timestamp == 1_000
    q.describe(1_000 + OBSERVER_SESSION_TIMEOUT_MS)
    q.append(200)
    q.fetch(7, 150, 1_000 + OBSERVER_SESSION_TIMEOUT_MS + 1)  # behind: its old catch-up time is forgotten
    assert observer_state(q, 7, 1_000 + OBSERVER_SESSION_TIMEOUT_MS + 2).last_caught_up_timestamp == -1


def test_a_broker_restarted_with_a_new_metadata_directory_is_listed_twice_until_the_old_entry_expires():
    q = seed_quorum()
    q.fetch(2, 1036, T0 + 60_000, directory_id=uuid(42))  # broker 2 back with a fresh disk
    result = q.describe(T0 + 61_000)
    assert sorted((o.replica_id, o.directory_id) for o in result.observers) == sorted(
        [(1, "9dk70WRte2_p__mZ_O0Bhg"), (2, "JCX-hbVdtxCJl7geeqjNmA"), (2, uuid(42))])
    q.fetch(1, 1036, T0 + 300_500, directory_id="9dk70WRte2_p__mZ_O0Bhg")
    q.fetch(2, 1036, T0 + 300_500, directory_id=uuid(42))
    assert sorted(o.directory_id for o in q.describe(T0 + 300_500).observers) == sorted(
        ["9dk70WRte2_p__mZ_O0Bhg", uuid(42)])


# --- Java HashMap order, directory ids, endpoints ----------------------------------------------------

def test_observers_come_out_in_java_hash_map_order():
    q = MetadataQuorum([0], 0, 1, "c", version="3.7")
    q.append(1)
    for broker, t in ((17, 1), (3, 2), (1, 3), (16, 4)):
        q.fetch(broker, 1, t)
    # Integer keys: bucket id & 15, a bucket keeps insertion order
    assert [o for o, _ in q.tracked_observers()] == [16, 17, 1, 3]
    for broker in range(4, 13):  # 13 entries > 12: the table doubles to 32 buckets
        q.fetch(broker, 1, 5)
    assert [o for o, _ in q.tracked_observers()] == [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]


def test_voter_endpoints_in_java_order_and_ipv6_brackets():
    voter = Voter(0, uuid(0), ("SSL://[::1]:9094", "controller://c0:9093"))
    assert voter.endpoints == (Endpoint("SSL", "::1", 9094), Endpoint("CONTROLLER", "c0", 9093))
    q = MetadataQuorum([voter], 0, 1, "c", version="3.9")
    assert format_status(q.describe(0)).splitlines()[6] == (
        'CurrentVoters:          [{"id": 0, "directoryId": "' + uuid(0) + '", '
        '"endpoints": ["CONTROLLER://c0:9093", "SSL://[::1]:9094"]}]')


def test_directory_ids():
    assert canonical_directory_id(ZERO_UUID) is None
    assert canonical_directory_id("9dk70WRte2_p__mZ_O0Bhg") == "9dk70WRte2_p__mZ_O0Bhg"
    with pytest.raises(ValueError):
        canonical_directory_id("not-a-uuid")
    q = MetadataQuorum([Voter(0)], 0, 1, "c", version="3.9")
    q.fetch(1, 0, 1)
    result = q.describe(2)
    assert format_status(result, observer_ages=False).splitlines()[6:] == [
        'CurrentVoters:          [{"id": 0, "directoryId": null}]',
        'CurrentObservers:       [{"id": 1, "directoryId": null}]',
    ]
    assert format_replication(result).splitlines()[1].startswith("0     \t" + ZERO_UUID + "\t")


# --- properties ---------------------------------------------------------------------------------------

VOTER_POOL = [0, 1, 2, 3, 4]
OBSERVER_POOL = [5, 6, 7, 8]


def op_lists(version: str, voter_changes: bool):
    fetch = st.tuples(st.just("fetch"), st.sampled_from(VOTER_POOL[1:] + OBSERVER_POOL), st.integers(0, 1),
                      st.integers(0, 1000), st.integers(0, 200_000))
    ops = [st.tuples(st.just("append"), st.integers(0, 5)), fetch, fetch,
           st.tuples(st.just("describe"), st.integers(0, 400_000))]
    if voter_changes:
        ops.append(st.tuples(st.just("voters"), st.sets(st.sampled_from(VOTER_POOL), min_size=1)))
    return st.lists(st.one_of(ops), max_size=60)


def majority_offset(offsets: list[int]) -> int | None:
    """The largest offset that at least n//2 + 1 voters have reached (-1: nothing known)."""
    need = len(offsets) // 2 + 1
    reached = [o for o in offsets if o >= 0 and sum(p >= o for p in offsets) >= need]
    return max(reached) if reached else None


class Run:
    """Drives a quorum with generated ops and checks the invariants after every op."""

    def __init__(self, version: str, n_voters: int, epoch_start: int):
        self.version = version
        self.voters = {i: Voter(i, uuid(i) if version == "3.9" else None) for i in VOTER_POOL}
        self.current = [self.voters[i] for i in range(n_voters)]
        self.q = MetadataQuorum(self.current, 0, 1, "c", version=version, epoch_start_offset=epoch_start)
        self.epoch_start = epoch_start
        self.now = 0
        self.leo = 0
        self.q.append(0)
        self.last_fetch: dict[tuple, int] = {}  # observer key -> time of its latest fetch
        self.hw_trace: list = []
        self.voters_changed = False  # former voters become observers the reference does not track

    def is_voter_key(self, key) -> bool:
        return any(v.id == key[0] and (self.version == "3.7" or v.directory_id == key[1]) for v in self.current)

    def voter_offsets(self) -> list[int]:
        return [self.q.replica(v.id, v.directory_id).log_end_offset for v in self.current]

    def step(self, op) -> None:
        before = self.q.high_watermark
        kind = op[0]
        moves_hw = True
        if kind == "append":
            self.leo += op[1]
            self.q.append(self.leo)
        elif kind == "voters":
            self.current = [self.voters[i] for i in sorted(op[1])]
            self.voters_changed = True
            self.q.set_voters(self.current)
        elif kind == "fetch":
            _, replica, other_dir, offset, dt = op
            self.now += dt
            directory = uuid(replica + 10 * other_dir) if self.version == "3.9" else None
            key = (replica, directory)
            observer = not self.is_voter_key(key)
            moved = self.q.fetch(replica, offset % (self.leo + 1), self.now, directory)
            if observer:
                self.last_fetch[key] = self.now
                assert not moved and self.q.high_watermark == before, "an observer moved the high watermark"
                moves_hw = False
        else:
            self.now += op[1]
            listed = {(o.replica_id, o.directory_id) for o in self.q.describe(self.now).observers}
            if self.version == "3.7":
                listed = {(i, None) for i, _ in listed}
            expected = {k for k, t in self.last_fetch.items() if self.now - t < OBSERVER_SESSION_TIMEOUT_MS}
            assert self.voters_changed or listed == expected
            moves_hw = False
        after = self.q.high_watermark
        assert before is None or (after is not None and after >= before), "the high watermark went back"
        if moves_hw:
            candidate = majority_offset(self.voter_offsets())
            grows = candidate is not None and candidate > self.epoch_start and (before is None or candidate > before)
            assert after == (candidate if grows else before)
        if after is not None:
            assert after <= self.leo
        self.hw_trace.append(after)


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(["3.7", "3.9"]), n_voters=st.integers(1, 5), epoch_start=st.integers(0, 3),
       ops=st.data())
def test_property_high_watermark_and_observer_listing(version, n_voters, epoch_start, ops):
    run = Run(version, n_voters, epoch_start)
    for op in ops.draw(op_lists(version, voter_changes=False)):
        tracked = set(run.q.tracked_observers())
        run.step(op)
        if op[0] != "describe":  # only a describe ever drops an observer
            assert tracked <= set(run.q.tracked_observers())


@settings(max_examples=200, deadline=None)
@given(n_voters=st.integers(1, 5), epoch_start=st.integers(0, 3), ops=st.data())
def test_property_high_watermark_never_decreases_across_voter_changes(n_voters, epoch_start, ops):
    run = Run("3.9", n_voters, epoch_start)
    for op in ops.draw(op_lists("3.9", voter_changes=True)):
        run.step(op)


@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from(["3.7", "3.9"]), n_voters=st.integers(1, 5), ops=st.data())
def test_property_observers_never_affect_the_high_watermark(version, n_voters, ops):
    ops = ops.draw(op_lists(version, voter_changes=False))
    with_observers, without = Run(version, n_voters, 0), Run(version, n_voters, 0)
    kept = []
    for op in ops:
        with_observers.step(op)
        key = (op[1], uuid(op[1] + 10 * op[2]) if version == "3.9" else None) if op[0] == "fetch" else None
        if key is None or with_observers.is_voter_key(key):
            without.step(op)
            kept.append(with_observers.hw_trace[-1])
    assert without.hw_trace == kept
