"""ControllerContext.codes_of_row_sets (and codes_of_rows, which uses it): the pool codes that the reference
codes_of_rows gives called set after set."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import context as context_module
from controller.context import ControllerContext

_row = st.lists(st.integers(0, 40), max_size=4, unique=True)
_set = st.integers(1, 4).flatmap(lambda w: st.lists(_row.map(lambda r: r[:w]), max_size=90).map(
    lambda rows: np.array([r + [-1] * (w - len(r)) for r in rows], dtype=np.int32).reshape(len(rows), w)))


@settings(max_examples=200, deadline=None)
@given(st.lists(_row, max_size=5), st.lists(_set, max_size=6), st.sampled_from(["sort", "hash", "direct"]))
def test_codes_of_row_sets_are_the_one_by_one_codes(interned, sets, how):
    saved = context_module._HASH_MIN, context_module._DIRECT_MAX, context_module._DIRECT_SLACK
    # distinct rows by sorting (few rows), hashing (many rows) or a table of every possible row (few ids)
    context_module._HASH_MIN = 0 if how == "hash" else saved[0]
    context_module._DIRECT_MAX, context_module._DIRECT_SLACK = (1 << 24, 1 << 24) if how == "direct" else (0, 0)
    try:
        _check(interned, sets)
    finally:
        context_module._HASH_MIN, context_module._DIRECT_MAX, context_module._DIRECT_SLACK = saved


def _check(interned, sets):
    one, many = ControllerContext(), ControllerContext()
    for ctx in (one, many):
        for t in interned:   # tuples the pool holds already
            ctx.pool.code(tuple(t))
    expected = [one._codes_of_rows(m) for m in sets]   # the one-by-one reference (sorted packed keys)
    got = many.codes_of_row_sets(sets)
    each = ControllerContext()
    for t in interned:
        each.pool.code(tuple(t))
    assert [each.codes_of_rows(m).tolist() for m in sets] == [e.tolist() for e in expected]
    assert each.pool.tuples == one.pool.tuples
    assert [e.tolist() for e in expected] == [g.tolist() for g in got]
    assert one.pool.tuples == many.pool.tuples


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(0, 40), max_size=4), max_size=6), min_size=1, max_size=4),
       st.data())
def test_pool_positions_find_each_id_where_the_matrix_search_does(batches, data):
    """The position table, extended as the pool grows (wider for larger ids), against the matrix search."""
    ctx = ControllerContext()
    pool = ctx.pool
    for batch in batches:
        for t in batch:
            pool.code(tuple(t))
        table = pool.positions()
        m = pool.matrix()
        for code in range(len(pool)):
            for r in range(45):   # (broker ids: never negative)
                hit = np.flatnonzero(m[code] == r)
                want = int(hit[0]) if len(hit) else -1
                got = int(table[code, r]) if 0 <= r < table.shape[1] else -1
                assert got == want


_small_row = st.lists(st.integers(0, 5), max_size=3, unique=True)
_small_set = st.integers(1, 3).flatmap(lambda w: st.lists(_small_row.map(lambda r: r[:w]), min_size=1,
                                                          max_size=120).map(
    lambda rows: np.array([r + [-1] * (w - len(r)) for r in rows], dtype=np.int32).reshape(len(rows), w)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_small_set, min_size=1, max_size=4), min_size=1, max_size=4))
def test_rows_the_pool_holds_already_keep_their_codes(calls):
    """Calls one after the other over few distinct rows (most of each call's rows interned by the calls
    before, found by the pool's packed keys): the codes and the pool's order of the one-by-one reference."""
    saved = context_module._ARRAY_MIN
    context_module._ARRAY_MIN = 1     # every call takes the array way, however few its rows
    try:
        one, many = ControllerContext(), ControllerContext()
        for sets in calls:
            expected = [one._codes_of_rows(m) for m in sets]
            got = many.codes_of_row_sets(sets)
            assert [e.tolist() for e in expected] == [g.tolist() for g in got]
            assert one.pool.tuples == many.pool.tuples
    finally:
        context_module._ARRAY_MIN = saved
