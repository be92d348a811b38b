"""ControllerContext.codes_of_row_sets: the pool codes that codes_of_rows gives called set after set."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.context import ControllerContext

_row = st.lists(st.integers(0, 40), max_size=4, unique=True)
_set = st.integers(1, 4).flatmap(lambda w: st.lists(_row.map(lambda r: r[:w]), max_size=90).map(
    lambda rows: np.array([r + [-1] * (w - len(r)) for r in rows], dtype=np.int32).reshape(len(rows), w)))


@settings(max_examples=200, deadline=None)
@given(st.lists(_row, max_size=5), st.lists(_set, max_size=6))
def test_codes_of_row_sets_are_the_one_by_one_codes(interned, sets):
    one, many = ControllerContext(), ControllerContext()
    for ctx in (one, many):
        for t in interned:   # tuples the pool holds already
            ctx.pool.code(tuple(t))
    expected = [one.codes_of_rows(m) for m in sets]
    got = many.codes_of_row_sets(sets)
    assert [e.tolist() for e in expected] == [g.tolist() for g in got]
    assert one.pool.tuples == many.pool.tuples
