"""sim.replica_log: a replica's log as offsets and a leader-epoch cache, checked against a brute-force model.

The model of a log is the list of the leader epochs of its records (index = offset) plus the latest
epoch its cache holds (a leader that has not written in its epoch yet). Random histories of leader
changes, appends, partial replication and truncations across 2-4 replicas drive both.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from sim.replica_log import ReplicaLog


# --- the brute-force model --------------------------------------------------------------------------

def epoch_map(log: ReplicaLog) -> list[int]:
    """The epoch of every record, offset by offset (what the cache says)."""
    return [log.epoch_at(o) for o in range(log.leo)]


def check_cache_shape(log: ReplicaLog) -> None:
    """Epochs and start offsets strictly ascending, within the log; only the last entry may be empty."""
    starts = [s for _, s in log.epochs]
    epochs = [e for e, _ in log.epochs]
    assert epochs == sorted(set(epochs)), log
    assert starts == sorted(set(starts)), log
    assert all(0 <= s <= log.leo for s in starts), log
    assert all(s < log.leo for s in starts[:-1]), log
    if log.leo:
        assert log.epochs and log.epochs[0][1] == 0, log
    assert 0 <= log.hw <= log.leo


def model_end_offset(records: list[int], latest: int, leo: int, requested: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor, from the records' epochs (Kafka 3.7)."""
    if requested < 0:
        return -1, -1
    if requested == latest:
        return requested, leo
    known = set(records) | ({latest} if latest >= 0 else set())
    higher = [e for e in known if e > requested]
    if not higher:
        return -1, -1
    nxt = min(higher)
    start_of_next = records.index(nxt) if nxt in records else leo
    floor = [e for e in known if e <= requested]
    if not floor:
        return requested, start_of_next
    return max(floor), start_of_next


def model_divergence(a: list[int], b: list[int]) -> int:
    end = min(len(a), len(b))
    return next((o for o in range(end) if a[o] != b[o]), end)


def sync(follower: ReplicaLog, leader: ReplicaLog, upto: int | None = None) -> None:
    """What a follower does: truncate where the logs part, then copy the leader's records."""
    follower.truncate_to(follower.divergence_with(leader))
    upto = leader.leo if upto is None else max(follower.leo, min(upto, leader.leo))
    follower.copy_from(leader.epochs_between(follower.leo, upto), upto)


# --- random histories -------------------------------------------------------------------------------

op = st.one_of(
    st.tuples(st.just("elect"), st.integers(0, 3)),
    st.tuples(st.just("append"), st.integers(1, 5)),
    st.tuples(st.just("fetch"), st.integers(0, 3), st.integers(0, 12)),
    st.tuples(st.just("truncate"), st.integers(0, 3), st.integers(0, 30)),
)


def play(n: int, ops: list[tuple]) -> tuple[list[ReplicaLog], int, int]:
    """Run a history on ``n`` logs; returns the logs, the current leader (-1: none yet) and its epoch.
    Every step is checked against the model as it goes."""
    logs = [ReplicaLog() for _ in range(n)]
    leader, epoch = -1, -1
    for o in ops:
        if o[0] == "elect":
            leader, epoch = o[1] % n, epoch + 1
            before = epoch_map(logs[leader])
            logs[leader].assign_epoch_start(epoch)
            assert epoch_map(logs[leader]) == before     # a new epoch moves no record
            assert logs[leader].latest_epoch == epoch
        elif o[0] == "append" and leader >= 0:
            log = logs[leader]
            before = epoch_map(log)
            first = log.append(o[1], epoch)
            assert first == len(before)
            assert epoch_map(log) == before + [epoch] * o[1]
        elif o[0] == "fetch" and leader >= 0 and o[1] % n != leader:
            f = logs[o[1] % n]
            mine, theirs = epoch_map(f), epoch_map(logs[leader])
            d = model_divergence(mine, theirs)
            assert f.divergence_with(logs[leader]) == d
            f.truncate_to(d)
            upto = max(f.leo, min(f.leo + o[2], logs[leader].leo))
            f.copy_from(logs[leader].epochs_between(f.leo, upto), upto)
            assert epoch_map(f) == theirs[:upto]
        elif o[0] == "truncate" and o[1] % n != leader:
            log = logs[o[1] % n]
            before = epoch_map(log)
            removed = log.truncate_to(o[2])
            assert removed == max(0, len(before) - o[2])
            assert epoch_map(log) == before[:o[2]]
            assert log.leo == min(len(before), o[2])
        for log in logs:
            check_cache_shape(log)
    return logs, leader, epoch


histories = st.tuples(st.integers(2, 4), st.lists(op, max_size=40))


@settings(max_examples=300, deadline=None)
@given(histories)
def test_a_follower_that_truncates_to_the_divergence_and_copies_matches_its_leader(h):
    n, ops = h
    logs, leader, _ = play(n, ops)
    if leader < 0:
        return
    lead = logs[leader]
    theirs = epoch_map(lead)
    for i, f in enumerate(logs):
        if i == leader:
            continue
        sync(f, lead)
        assert f.leo == lead.leo
        assert epoch_map(f) == theirs
        assert f.divergence_with(lead) == lead.leo
        # Already in sync: nothing more to truncate or copy.
        assert f.truncate_to(f.divergence_with(lead)) == 0
        assert f.copy_from(lead.epochs_between(f.leo, lead.leo), lead.leo) == 0
        check_cache_shape(f)


@settings(max_examples=300, deadline=None)
@given(histories, st.integers(-1, 12))
def test_end_offset_for_epoch_is_kafkas_answer(h, requested):
    n, ops = h
    logs, _, _ = play(n, ops)
    for log in logs:
        expected = model_end_offset(epoch_map(log), log.latest_epoch, log.leo, requested)
        assert log.end_offset_for_epoch(requested) == expected, (log, requested)


@settings(max_examples=300, deadline=None)
@given(histories, st.integers(0, 12), st.integers(0, 40), st.integers(0, 40))
def test_holds_counts_the_records_of_that_epoch_in_the_range(h, epoch, a, b):
    n, ops = h
    logs, _, _ = play(n, ops)
    start, end = min(a, b), max(a, b)
    for log in logs:
        records = epoch_map(log)
        expected = sum(1 for o in range(start, min(end, len(records))) if records[o] == epoch)
        assert log.holds(epoch, start, end) == expected


@settings(max_examples=200, deadline=None)
@given(histories, st.integers(0, 40), st.integers(0, 40))
def test_epochs_between_describes_exactly_the_records_in_the_range(h, a, b):
    n, ops = h
    logs, _, _ = play(n, ops)
    start, end = min(a, b), max(a, b)
    for log in logs:
        records = epoch_map(log)
        entries = log.epochs_between(start, end)
        # Expanded over [start, min(end, leo)), the entries give each record's epoch.
        expanded = []
        for k, (e, first) in enumerate(entries):
            stop = entries[k + 1][1] if k + 1 < len(entries) else min(end, log.leo)
            expanded += [e] * max(0, stop - first)
        if start < min(end, log.leo):
            assert entries and entries[0][1] == start
        assert expanded == records[start:min(end, log.leo)]


# --- examples ---------------------------------------------------------------------------------------

def test_kip_101_leader_change_with_divergent_tails():
    # A leads epoch 0 and writes 0-9; B copies 0-7. A dies; B leads epoch 1 and writes 8-11 (four
    # records). A comes back as a follower: its 8-9 (epoch 0) are not B's 8-9 (epoch 1).
    a, b = ReplicaLog(), ReplicaLog()
    a.assign_epoch_start(0)
    a.append(10, 0)
    b.copy_from(a.epochs_between(0, 8), 8)
    b.assign_epoch_start(1)
    assert b.append(4, 1) == 8
    assert b.epochs == [(0, 0), (1, 8)]
    assert b.end_offset_for_epoch(0) == (0, 8)       # what A asks with its last epoch 0
    assert a.divergence_with(b) == 8
    assert a.truncate_to(8) == 2
    assert a.holds(0, 0, 10) == 8
    a.copy_from(b.epochs_between(8, 12), 12)
    assert a.epochs == [(0, 0), (1, 8)] and a.leo == 12
    assert epoch_map(a) == [0] * 8 + [1] * 4


def test_kip_101_follower_with_the_longer_log_keeps_the_common_prefix_only():
    # B has more records in epoch 0 than A, which became leader (epoch 1) with a shorter log.
    a, b = ReplicaLog(), ReplicaLog()
    b.assign_epoch_start(0)
    b.append(6, 0)
    a.copy_from(b.epochs_between(0, 3), 3)
    a.assign_epoch_start(1)
    a.append(1, 1)
    assert a.end_offset_for_epoch(0) == (0, 3)
    assert b.divergence_with(a) == 3
    assert b.truncate_to(3) == 3
    b.copy_from(a.epochs_between(3, 4), 4)
    assert epoch_map(b) == [0, 0, 0, 1]


def test_kip_279_a_leader_of_an_epoch_without_records_keeps_no_entry_after_following():
    # B led epoch 1 but wrote nothing before C took over with epoch 2 (B did not hear of it).
    # B's cache ends with (1, 5), an epoch with no records; C never had epoch 1.
    b, c = ReplicaLog(), ReplicaLog()
    b.assign_epoch_start(0)
    b.append(5, 0)
    c.copy_from(b.epochs_between(0, 5), 5)
    b.assign_epoch_start(1)
    assert b.epochs == [(0, 0), (1, 5)] and b.latest_epoch == 1
    c.assign_epoch_start(2)
    c.append(3, 2)
    # B fetches with last epoch 1: C answers epoch 0 ending at 5 (Kafka: diverging epoch).
    assert c.end_offset_for_epoch(1) == (0, 5)
    assert b.divergence_with(c) == 5
    # Truncating at the log end removes no record but drops the empty epoch (UnifiedLog.truncateTo).
    assert b.truncate_to(5) == 0
    assert b.epochs == [(0, 0)] and b.latest_epoch == 0
    b.copy_from(c.epochs_between(5, 8), 8)
    assert b.epochs == [(0, 0), (2, 5)]
    assert epoch_map(b) == epoch_map(c)
    # Its next fetch (last epoch 2) finds no divergence.
    assert c.end_offset_for_epoch(b.latest_epoch) == (2, 8)


def test_kip_279_an_empty_epoch_is_superseded_when_the_same_replica_leads_again():
    a = ReplicaLog()
    a.assign_epoch_start(0)
    a.append(2, 0)
    a.assign_epoch_start(3)
    a.assign_epoch_start(5)
    assert a.epochs == [(0, 0), (5, 2)]
    a.assign_epoch_start(4)      # an older epoch changes nothing
    assert a.epochs == [(0, 0), (5, 2)]
    a.append(1, 5)
    assert epoch_map(a) == [0, 0, 5]


def test_copy_replaces_a_stale_empty_epoch_like_the_cache_does():
    # A follower whose cache still ends with an empty epoch newer than the records it now copies
    # (LeaderEpochFileCache.assign removes non-monotonic entries).
    f, leader = ReplicaLog(), ReplicaLog()
    leader.assign_epoch_start(2)
    leader.append(4, 2)
    f.copy_from(leader.epochs_between(0, 2), 2)
    f.assign_epoch_start(3)          # f led epoch 3 without writing (leader never heard of it)
    f.copy_from(leader.epochs_between(2, 4), 4)
    assert f.epochs == [(2, 0)]
    assert epoch_map(f) == [2, 2, 2, 2]


def test_truncation_lowers_the_high_watermark_and_counts_what_it_removed():
    log = ReplicaLog()
    log.assign_epoch_start(0)
    log.append(10, 0)
    log.hw = 9
    assert log.truncate_to(4) == 6
    assert (log.leo, log.hw) == (4, 4)
    assert log.truncate_to(4) == 0 and log.truncate_to(7) == 0
    assert log.truncate_to(0) == 4 and log.epochs == [] and log.latest_epoch == -1


def test_holds_and_end_offsets_on_a_three_epoch_log():
    log = ReplicaLog()
    for epoch, n in ((0, 3), (2, 4), (5, 2)):
        log.assign_epoch_start(epoch)
        log.append(n, epoch)
    assert log.epochs == [(0, 0), (2, 3), (5, 7)]
    assert [log.end_offset_for_epoch(e) for e in range(-1, 7)] == [
        (-1, -1), (0, 3), (0, 3), (2, 7), (2, 7), (2, 7), (5, 9), (-1, -1)]
    # Older than every cached epoch: the requested epoch, ending where the first known one starts.
    younger = ReplicaLog()
    younger.assign_epoch_start(4)
    younger.append(2, 4)
    younger.assign_epoch_start(6)
    younger.append(1, 6)
    assert younger.end_offset_for_epoch(1) == (1, 0) and younger.end_offset_for_epoch(5) == (4, 2)
    assert log.holds(2, 0, 100) == 4 and log.holds(2, 4, 6) == 2 and log.holds(1, 0, 9) == 0
    assert log.holds(5, 8, 20) == 1
    assert log.epoch_at(-1) == -1 and log.epoch_at(9) == -1 and log.epoch_at(6) == 2


@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 20)), min_size=0, max_size=6),
       st.integers(0, 120), st.integers(1, 40))
def test_epochs_between_agrees_with_a_scan_of_every_entry(steps, start, length):
    """The latest-epoch shortcut of ``epochs_between`` against the plain definition: every cached entry
    that starts before the end, clipped to the start, from the last one at or before the start."""
    log = ReplicaLog()
    epoch = 0
    for bump, count in steps:
        epoch += bump
        log.append(count, epoch)
    start = min(start, log.leo)
    end = start + length
    covering = [k for k, (_, first) in enumerate(log.epochs) if first <= start]
    i = covering[-1] if covering else 0
    expected = [(e, max(first, start)) for e, first in log.epochs[i:] if first < end]
    assert log.epochs_between(start, end) == expected
