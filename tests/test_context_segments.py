"""ControllerContext.topic_segments (checks over all runs at once) against the run-by-run reference."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.context import ControllerContext
from statemachines.replica_rows import ReplicaRows

TOPICS = {"a": 5, "b": 3, "c": 1, "e": 0}


def reference(ctx, rows):
    out, seen = [], set()
    n = len(rows)
    parts = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
    bounds = [i for i in range(1, n) if rows[i][0] != rows[i - 1][0]]
    for start, end in zip([0] + bounds, bounds + [n]):
        if start >= n:
            break
        topic = rows[start][0]
        ts = ctx.topics.get(topic)
        seg = parts[start:end]
        if (ts is None or topic in seen or int(seg.min()) < 0 or int(seg.max()) >= len(ts)
                or int(np.bincount(seg).max()) > 1):
            return None
        seen.add(topic)
        out.append((ts.name, seg.tolist(), start, end))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(-1, 6)), max_size=30),
       st.booleans())
def test_topic_segments_are_the_run_by_run_segments(rows, as_columns):
    ctx = ControllerContext()
    for t, n in TOPICS.items():
        ctx.add_topic(t, [(0,)] * n)
    if as_columns:
        names = sorted({t for t, _ in rows} | set(TOPICS))
        rows_in = ReplicaRows(names, np.array([names.index(t) for t, _ in rows]), np.array([p for _, p in rows]),
                              np.zeros(len(rows)))
    else:
        rows_in = rows
    got = ctx.topic_segments(rows_in)
    want = reference(ctx, rows)
    assert (None if got is None else [(ts.name, p.tolist(), s, e) for ts, p, s, e in got]) == want
