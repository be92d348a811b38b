"""The batch forms of the election algorithms (statemachines/election_arrays.py) against the scalar ones.

Every array function must equal its scalar counterpart in statemachines/election.py (or, for
remove_replica_from_isrs, ReplicaStateMachine._do_remove_replicas_from_isr's rule) applied row by row:
hypothesis draws batches of partitions with assignments of RF 1..5 over brokers 0..9 (and empty rows),
ISRs in any order that may hold brokers outside the assignment or be empty, broker-indexed live and
shutting-down flags of any length (ids past the end are not set), and per-row unclean flags; padding
columns beyond the longest row are drawn too. Each check also holds the outputs' dtype and shape, that the
inputs are left untouched and that outputs share no memory with them.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from statemachines import election
from statemachines.election_arrays import (
    broker_mask, compact_rows, controlled_shutdown_leaders, controlled_shutdown_new_isrs, first_where,
    member_mask, offline_new_isrs, offline_partition_leaders, preferred_replica_leaders,
    reassign_partition_leaders, remove_replica_from_isrs, rows_to_tuples, tuples_to_rows,
)

EXAMPLES = 400
BROKER_IDS = st.integers(min_value=0, max_value=9)


# --- drawing batches ------------------------------------------------------------------------------------


def _matrix(rows: list[list[int]], extra: int) -> np.ndarray:
    """Rows left-aligned in an int32 matrix padded with -1, ``extra`` columns wider than the longest row."""
    width = max((len(r) for r in rows), default=0) + extra
    out = np.full((len(rows), width), -1, dtype=np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def _row(values, width: int) -> list[int]:
    """A scalar result as the padded row the batch form must produce."""
    values = list(values)
    return values + [-1] * (width - len(values))


# A row is drawn as one integer (hypothesis spends per draw; one per row keeps 400 examples quick) and
# decoded, low bits first: the unclean flag (1 bit); the replication factor (3 bits, one of RF_BY_CODE:
# mostly 3, sometimes 0 for an empty row); 5 broker ids (4 bits each, mod 10; repeats dropped, so the RF
# may come out lower); the ISR's length (3 bits, 0..6); 6 ISR entries (4 bits each): an entry below 6 names
# the replica at that position in the assignment (if there is one), any other names broker (entry - 6), in
# the assignment or not. So ISRs are mostly assignment members in any order, with outsiders, or empty.
# Shrinking a row towards 0 leads to an empty assignment and an empty ISR.
RF_BY_CODE = (0, 1, 2, 3, 3, 3, 4, 5)
ROW_BITS = 1 + 3 + 5 * 4 + 3 + 6 * 4


def _take(code: int, bits: int) -> tuple[int, int]:
    return code & ((1 << bits) - 1), code >> bits


def _decode_row(code: int) -> tuple[list[int], list[int], bool]:
    unclean, code = _take(code, 1)
    rf, code = _take(code, 3)
    assignment: list[int] = []
    for k in range(5):
        b, code = _take(code, 4)
        if k < RF_BY_CODE[rf] and b % 10 not in assignment:
            assignment.append(b % 10)
    isr_len, code = _take(code, 3)
    isr: list[int] = []
    for k in range(6):
        e, code = _take(code, 4)
        b = (assignment[e] if e < len(assignment) else None) if e < 6 else e - 6
        if k < isr_len and b is not None and b not in isr:
            isr.append(b)
    return assignment, isr, bool(unclean)


def _decode_flags(code: int) -> list[bool]:
    """By broker id: 0..12 flags (4 bits, mod 13), then the flags; ids past the end are not set."""
    size, bits = _take(code, 4)
    return [bool(bits >> b & 1) for b in range(size % 13)]


ROWS = st.lists(st.integers(0, (1 << ROW_BITS) - 1), max_size=10)
FLAGS = st.integers(0, (1 << 16) - 1)


@st.composite
def batches(draw) -> dict:
    rows = [_decode_row(code) for code in draw(ROWS)]
    live, down = _decode_flags(draw(FLAGS)), _decode_flags(draw(FLAGS))
    pads = draw(st.integers(0, 127))
    if pads >> 4 == 0:
        live = [False] * len(live)  # all dead
    assignments = [a for a, _, _ in rows]
    isrs = [i for _, i, _ in rows]
    unclean = [u for _, _, u in rows]
    note(f"assignments={assignments} isrs={isrs} live={live} down={down} unclean={unclean}")
    return {
        "assignments": assignments, "isrs": isrs,
        "assignment": _matrix(assignments, (pads & 3) % 3), "isr": _matrix(isrs, (pads >> 2 & 3) % 3),
        "live": np.array(live, dtype=bool), "live_set": {b for b, f in enumerate(live) if f},
        "down": np.array(down, dtype=bool), "down_set": {b for b, f in enumerate(down) if f},
        "unclean": np.array(unclean, dtype=bool).reshape(len(rows)),
    }


def test_row_decoding_covers_the_cases():
    # The decoder reaches every replication factor 0..5, ISRs of 0..6 members, members outside the
    # assignment, ISR orders other than the assignment's, and live-flag arrays of 0..12 brokers.
    seen_rf, seen_isr, outsider, reordered = set(), set(), False, False
    rng = np.random.default_rng(0)
    for code in rng.integers(0, 1 << 62, 3000).tolist():
        a, isr, _ = _decode_row(code & ((1 << ROW_BITS) - 1))
        seen_rf.add(len(a))
        seen_isr.add(len(isr))
        outsider |= any(r not in a for r in isr)
        inside = [r for r in isr if r in a]
        reordered |= inside != [r for r in a if r in inside]
    assert seen_rf == set(range(6)) and seen_isr == set(range(7)) and outsider and reordered
    assert _decode_row(0) == ([], [], False)
    assert {len(_decode_flags(c)) for c in range(1 << 8)} == set(range(13))


def _call(fn, *args):
    """fn(*args), checking that the array arguments are neither changed nor shared with the results."""
    before = [a.copy() for a in args if isinstance(a, np.ndarray)]
    result = fn(*args)
    after = [a for a in args if isinstance(a, np.ndarray)]
    for b, a in zip(before, after):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{fn.__name__} changed an input"
    for out in result if isinstance(result, tuple) else (result,):
        for a in after:
            assert not np.shares_memory(out, a), f"{fn.__name__} returned a view of an input"
    return result


def _leader(scalar: int | None) -> int:
    return -1 if scalar is None else scalar


# --- building blocks -------------------------------------------------------------------------------------


CELL_BITS = 5  # a cell: value (4 bits: -1..14) and a mask bit


def _decode_cells(codes: list[int], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows drawn as one integer each: per cell, a value in -1..14 (ids past the flags' ends included)
    and a mask bit. Returns (int32 values, bool mask), both (len(codes), width)."""
    values = np.full((len(codes), width), -1, dtype=np.int32)
    mask = np.zeros((len(codes), width), dtype=bool)
    for i, code in enumerate(codes):
        for j in range(width):
            cell, code = _take(code, CELL_BITS)
            values[i, j], mask[i, j] = (cell & 15) - 1, bool(cell >> 4)
    return values, mask


@st.composite
def cells(draw, rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    width = draw(st.integers(0, 6))
    cell_codes = st.integers(0, (1 << CELL_BITS * width) - 1)
    size = {"max_size": 8} if rows is None else {"min_size": rows, "max_size": rows}
    return _decode_cells(draw(st.lists(cell_codes, **size)), width)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.data())
def test_member_mask(data):
    values, _ = data.draw(cells())
    of, _ = data.draw(cells(rows=values.shape[0]))  # same rows, its own width
    out = _call(member_mask, values, of)
    assert out.dtype == bool and out.shape == values.shape
    expected = [[x != -1 and x in set(o) for x in row] for row, o in zip(values.tolist(), of.tolist())]
    assert out.tolist() == expected


@settings(max_examples=EXAMPLES, deadline=None)
@given(cells(), FLAGS)
def test_broker_mask(values_and_mask, flags_code):
    values, _ = values_and_mask
    flags = _decode_flags(flags_code)
    out = _call(broker_mask, values, np.array(flags, dtype=bool))
    assert out.dtype == bool and out.shape == values.shape
    expected = [[0 <= x < len(flags) and flags[x] for x in row] for row in values.tolist()]
    assert out.tolist() == expected


@settings(max_examples=EXAMPLES, deadline=None)
@given(cells())
def test_first_where_and_compact_rows(values_and_mask):
    values, mask = values_and_mask
    n, w = values.shape
    first = _call(first_where, values, mask)
    assert first.dtype == np.int32 and first.shape == (n,)
    assert first.tolist() == [next((x for x, m in zip(r, k) if m), -1) for r, k in zip(values.tolist(), mask.tolist())]
    compact = _call(compact_rows, values, mask)
    assert compact.dtype == np.int32 and compact.shape == (n, w)
    assert compact.tolist() == [_row((x for x, m in zip(r, k) if m), w)
                                for r, k in zip(values.tolist(), mask.tolist())]


@pytest.mark.parametrize("width", [13, 20])
def test_compact_rows_wide(width):
    # Rows wider than the column-pass limit take the scatter path; same answer.
    rng = np.random.default_rng(width)
    values = rng.integers(-1, 50, (300, width)).astype(np.int32)
    keep = rng.random((300, width)) < 0.5
    out = compact_rows(values, keep)
    assert out.tolist() == [_row((x for x, m in zip(r, k) if m), width) for r, k in zip(values.tolist(), keep.tolist())]


# --- elections and ISR updates (one drawn batch checks several functions) --------------------------------


def _check_offline(b) -> None:
    leaders, is_unclean = _call(offline_partition_leaders, b["assignment"], b["isr"], b["live"], b["unclean"])
    n = len(b["assignments"])
    assert leaders.dtype == np.int32 and leaders.shape == (n,)
    assert is_unclean.dtype == bool and is_unclean.shape == (n,)
    new_isrs = _call(offline_new_isrs, leaders, b["isr"], b["live"])
    width = max(b["isr"].shape[1], 1)
    assert new_isrs.dtype == np.int32 and new_isrs.shape == (n, width)
    for i, (assignment, isr) in enumerate(zip(b["assignments"], b["isrs"])):
        live_replicas = [r for r in assignment if r in b["live_set"]]
        leader = election.offline_partition_leader(assignment, isr, live_replicas, bool(b["unclean"][i]))
        assert leaders[i] == _leader(leader)
        assert is_unclean[i] == (leader is not None and leader not in isr)
        if leader is not None:
            # PartitionStateMachine passes the ISR's online members as online_replicas
            online_isr = [r for r in isr if r in b["live_set"]]
            assert new_isrs[i].tolist() == _row(election.offline_new_isr(leader, isr, online_isr), width)


def _check_reassign(b) -> None:
    # The drawn assignment serves as the target replicas (TRS order).
    leaders = _call(reassign_partition_leaders, b["assignment"], b["isr"], b["live"])
    assert leaders.dtype == np.int32 and leaders.shape == (len(b["assignments"]),)
    for i, (target, isr) in enumerate(zip(b["assignments"], b["isrs"])):
        live_replicas = [r for r in target if r in b["live_set"]]
        assert leaders[i] == _leader(election.reassign_partition_leader(target, isr, live_replicas))


def _check_preferred(b) -> None:
    leaders = _call(preferred_replica_leaders, b["assignment"], b["isr"], b["live"])
    assert leaders.dtype == np.int32 and leaders.shape == (len(b["assignments"]),)
    for i, (assignment, isr) in enumerate(zip(b["assignments"], b["isrs"])):
        live_replicas = [r for r in assignment if r in b["live_set"]]
        assert leaders[i] == _leader(election.preferred_replica_leader(assignment, isr, live_replicas))


def _check_controlled_shutdown(b, live_includes_down: bool) -> None:
    live, live_set = b["live"], b["live_set"]
    if live_includes_down:  # how the controller calls it: shutting-down brokers count as live
        live = np.zeros(max(len(live), len(b["down"])), dtype=bool)
        live[:len(b["live"])] |= b["live"]
        live[:len(b["down"])] |= b["down"]
        live_set = live_set | b["down_set"]
    leaders = _call(controlled_shutdown_leaders, b["assignment"], b["isr"], live, b["down"])
    new_isrs = _call(controlled_shutdown_new_isrs, b["isr"], b["down"])
    n, width = b["isr"].shape
    assert leaders.dtype == np.int32 and leaders.shape == (n,)
    assert new_isrs.dtype == np.int32 and new_isrs.shape == (n, width)
    for i, (assignment, isr) in enumerate(zip(b["assignments"], b["isrs"])):
        live_replicas = [r for r in assignment if r in live_set]
        expected = election.controlled_shutdown_leader(assignment, isr, live_replicas, b["down_set"])
        assert leaders[i] == _leader(expected)
        assert new_isrs[i].tolist() == _row(election.controlled_shutdown_new_isr(isr, b["down_set"]), width)


@settings(max_examples=EXAMPLES, deadline=None)
@given(batches(), st.booleans())
def test_elections_equal_scalar_row_by_row(b, live_includes_down):
    _check_offline(b)
    _check_reassign(b)
    _check_preferred(b)
    _check_controlled_shutdown(b, live_includes_down)


def _check_offline_new_isrs_any_leader(b, leaders: np.ndarray) -> None:
    # Any leader, not only the elected one: a leader in the ISR keeps its live members, any other is alone.
    n = len(b["assignments"])
    out = _call(offline_new_isrs, leaders, b["isr"], b["live"])
    width = max(b["isr"].shape[1], 1)
    assert out.dtype == np.int32 and out.shape == (n, width)
    for i, isr in enumerate(b["isrs"]):
        if leaders[i] != -1:  # rows without a leader are unspecified
            expected = election.offline_new_isr(int(leaders[i]), isr, b["live_set"])
            assert out[i].tolist() == _row(expected, width)


def _remove_replica_scalar(leader: int, isr: list[int], replica_id: int):
    """ReplicaStateMachine._do_remove_replicas_from_isr's rule for one partition holding the replica."""
    new_leader = -1 if leader == replica_id else leader
    new_isr = tuple(isr) if len(isr) == 1 else tuple(r for r in isr if r != replica_id)
    return new_leader, new_isr


def _check_remove_replica(b, leader: np.ndarray, replica_id, per_row: list[int]) -> None:
    n, width = b["isr"].shape
    new_leader, new_isr, contains = _call(remove_replica_from_isrs, leader, b["isr"], replica_id)
    assert new_leader.dtype == np.int32 and new_leader.shape == (n,)
    assert new_isr.dtype == np.int32 and new_isr.shape == (n, width)
    assert contains.dtype == bool and contains.shape == (n,)
    for i, (isr, rid) in enumerate(zip(b["isrs"], per_row)):
        assert contains[i] == (rid in isr)
        if rid in isr:
            expected_leader, expected_isr = _remove_replica_scalar(int(leader[i]), isr, rid)
            assert new_leader[i] == expected_leader
            assert new_isr[i].tolist() == _row(expected_isr, width)
        else:
            assert new_leader[i] == leader[i]
            assert new_isr[i].tolist() == b["isr"][i].tolist()


@settings(max_examples=EXAMPLES, deadline=None)
@given(batches(), st.data())
def test_isr_updates_with_any_leader_equal_scalar_row_by_row(b, data):
    n = len(b["assignments"])
    # leaders: -1, or any broker (in the ISR or not)
    leaders = np.array(data.draw(st.lists(st.integers(-1, 9), min_size=n, max_size=n)), dtype=np.int32)
    _check_offline_new_isrs_any_leader(b, leaders)
    if data.draw(st.booleans()):  # one replica for the whole batch, as the controller calls it
        replica_id = data.draw(BROKER_IDS)
        per_row = [replica_id] * n
    else:  # one per row
        per_row = data.draw(st.lists(BROKER_IDS, min_size=n, max_size=n))
        replica_id = np.array(per_row, dtype=np.int32)
    _check_remove_replica(b, leaders, replica_id, per_row)


# --- fixed edge cases ------------------------------------------------------------------------------------


def test_kafka_cases_as_one_batch():
    # The PartitionLeaderElectionAlgorithmsTest cases of tests/test_election.py, as rows of one batch.
    assignment = tuples_to_rows([(2, 4), (2, 4), (2, 4)])
    isr = tuples_to_rows([(2, 4), (2,), (2,)])
    live = np.array([False, False, False, False, True])
    leaders, is_unclean = offline_partition_leaders(assignment, isr, live, np.array([False, False, True]))
    assert leaders.tolist() == [4, -1, 4] and is_unclean.tolist() == [False, False, True]
    assert rows_to_tuples(offline_new_isrs(leaders, isr, live))[0::2] == [(4,), (4,)]
    assert reassign_partition_leaders(assignment[:1], isr[:1], live).tolist() == [4]
    assert preferred_replica_leaders(assignment, tuples_to_rows([(2, 4), (2,), (4,)]),
                                     np.array([False, False, True, False, True])).tolist() == [2, 2, -1]
    everyone = np.ones(5, dtype=bool)
    down = np.array([False, False, True, False, False])
    assert controlled_shutdown_leaders(assignment, isr, everyone, down).tolist() == [4, -1, -1]
    assert rows_to_tuples(controlled_shutdown_new_isrs(isr, down)) == [(4,), (), ()]


def test_empty_rows_empty_batches_and_all_dead():
    assignment = tuples_to_rows([(), (1, 2), ()], width=2)
    isr = tuples_to_rows([(1,), (2, 1), ()], width=2)
    dead = np.zeros(3, dtype=bool)
    unclean = np.ones(3, dtype=bool)
    assert offline_partition_leaders(assignment, isr, dead, unclean)[0].tolist() == [-1, -1, -1]
    assert offline_partition_leaders(assignment, isr, np.ones(3, dtype=bool), unclean)[0].tolist() == [-1, 1, -1]
    assert reassign_partition_leaders(assignment, isr, np.array([], dtype=bool)).tolist() == [-1, -1, -1]
    assert preferred_replica_leaders(assignment, isr, np.ones(3, dtype=bool)).tolist() == [-1, 1, -1]
    assert controlled_shutdown_leaders(assignment, isr, dead, dead).tolist() == [-1, -1, -1]
    # zero rows and zero columns
    for n, r, i in [(0, 0, 0), (0, 3, 2), (2, 0, 0), (2, 3, 0), (2, 0, 2)]:
        a = np.full((n, r), -1, dtype=np.int32)
        s = np.full((n, i), -1, dtype=np.int32)
        live = np.ones(4, dtype=bool)
        leaders, is_unclean = offline_partition_leaders(a, s, live, np.ones(n, dtype=bool))
        assert leaders.tolist() == [-1] * n and is_unclean.tolist() == [False] * n
        assert offline_new_isrs(np.full(n, 3, dtype=np.int32), s, live).tolist() == [[3] + [-1] * (max(i, 1) - 1)] * n
        assert reassign_partition_leaders(a, s, live).tolist() == [-1] * n
        assert preferred_replica_leaders(a, s, live).tolist() == [-1] * n
        assert controlled_shutdown_leaders(a, s, live, live).tolist() == [-1] * n
        assert controlled_shutdown_new_isrs(s, live).shape == (n, i)
        nl, ni, c = remove_replica_from_isrs(np.zeros(n, dtype=np.int32), s, 0)
        assert nl.tolist() == [0] * n and ni.shape == (n, i) and c.tolist() == [False] * n
        assert member_mask(a, s).shape == (n, r) and broker_mask(a, live).shape == (n, r)
        assert first_where(a, np.ones((n, r), dtype=bool)).tolist() == [-1] * n
        assert rows_to_tuples(a) == [()] * n


def test_sole_isr_member_is_kept_but_loses_leadership():
    # removeReplicasFromIsr: the last ISR member stays in the ISR; the partition becomes leaderless.
    leader, isr, contains = remove_replica_from_isrs(np.array([3, 3, 1], dtype=np.int32),
                                                     tuples_to_rows([(3,), (1, 3, 2), (1, 2)]), 3)
    assert leader.tolist() == [-1, -1, 1]
    assert rows_to_tuples(isr) == [(3,), (1, 2), (1, 2)]
    assert contains.tolist() == [True, True, False]


def test_large_random_batch_equals_scalar():
    # One batch of thousands of rows (widths up to 5 plus padding), against the scalar functions.
    rng = np.random.default_rng(7)
    n = 3000
    assignments = [rng.permutation(10)[:rng.integers(0, 6)].tolist() for _ in range(n)]
    isrs = [rng.permutation(10)[:rng.integers(0, 7)].tolist() for _ in range(n)]
    assignment, isr = _matrix(assignments, 1), _matrix(isrs, 0)
    live, down, unclean = rng.random(8) < 0.6, rng.random(10) < 0.3, rng.random(n) < 0.5
    live_set = {int(b) for b in np.flatnonzero(live)}
    down_set = {int(b) for b in np.flatnonzero(down)}
    leaders, _ = offline_partition_leaders(assignment, isr, live, unclean)
    new_isrs = rows_to_tuples(offline_new_isrs(leaders, isr, live))
    cs = controlled_shutdown_leaders(assignment, isr, live, down)
    for i, (a, s) in enumerate(zip(assignments, isrs)):
        lr = [r for r in a if r in live_set]
        leader = election.offline_partition_leader(a, s, lr, bool(unclean[i]))
        assert leaders[i] == _leader(leader)
        if leader is not None:
            assert new_isrs[i] == election.offline_new_isr(leader, s, live_set)
        assert cs[i] == _leader(election.controlled_shutdown_leader(a, s, lr, down_set))


# --- conversions -----------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=6), max_size=8), st.integers(0, 3))
def test_tuples_rows_round_trip(rows, extra):
    tuples = [tuple(r) for r in rows]
    longest = max((len(r) for r in rows), default=0)
    m = tuples_to_rows(tuples)
    assert m.dtype == np.int32 and m.shape == (len(rows), longest)
    assert m.tolist() == [_row(r, longest) for r in rows]
    wide = tuples_to_rows(rows, width=longest + extra)  # lists are sequences too
    assert wide.shape == (len(rows), longest + extra)
    assert rows_to_tuples(wide) == rows_to_tuples(m) == tuples
    assert all(type(t) is tuple and all(type(x) is int for x in t) for t in rows_to_tuples(m))
    if longest:
        with pytest.raises(ValueError):
            tuples_to_rows(tuples, width=longest - 1)


def test_rows_to_tuples_drops_padding_anywhere():
    assert rows_to_tuples(np.array([[-1, 3, -1, 4], [5, -1, -1, -1], [-1, -1, -1, -1]])) == [(3, 4), (5,), ()]
    assert rows_to_tuples(np.array([[1, 2], [3, 4]], dtype=np.int64)) == [(1, 2), (3, 4)]
    assert tuples_to_rows([]).shape == (0, 0) and tuples_to_rows([], width=3).shape == (0, 3)
    assert tuples_to_rows([(), ()]).shape == (2, 0)
