"""ReplicaRows: the columnar (topic, partition, replica) rows agree with the loops over tuples they replace."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from controller.context import ControllerContext
from statemachines.replica_rows import ReplicaRows

_rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5), st.integers(0, 4)), max_size=40)


def _columns(rows):
    names = sorted({t for t, _, _ in rows}) or ["a"]
    return ReplicaRows(names, np.array([names.index(t) for t, _, _ in rows], dtype=np.int32),
                       np.array([p for _, p, _ in rows], dtype=np.int64), np.array([r for _, _, r in rows]))


@settings(max_examples=200, deadline=None)
@given(_rows)
def test_grouping_and_runs_match_the_loops(rows):
    rr = _columns(rows)
    assert list(rr) == rows and rr == rows and len(rr) == len(rows)
    expected: dict = {}
    for rep in rows:
        expected.setdefault(rep[2], []).append(rep)
    got = rr.by_replica()
    assert list(got) == list(expected)
    assert {b: list(g) for b, g in got.items()} == expected
    runs = []
    for i, (t, _, _) in enumerate(rows):
        if runs and runs[-1][0] == t:
            runs[-1][2] = i + 1
        else:
            runs.append([t, i, i + 1])
    assert rr.topic_runs() == [tuple(r) for r in runs]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True), min_size=1, max_size=5),
                min_size=1, max_size=3),
       st.sets(st.integers(0, 6)), st.sets(st.integers(0, 6)))
def test_online_and_offline_replicas_as_columns(topics, live, shutting_down):
    ctx = ControllerContext()
    ctx.add_live_brokers({b: b + 100 for b in live})
    ctx.shutting_down_broker_ids = set(shutting_down)
    for i, assignment in enumerate(topics):
        ctx.add_topic(f"t{i}", [tuple(r) for r in assignment])
    online, offline = ctx.online_and_offline_replicas()
    is_online = ctx.online_replica_filter()
    every = [(f"t{i}", p, r) for i, a in enumerate(topics) for p, rs in enumerate(a) for r in rs]
    assert list(online) == [x for x in every if is_online(x[2], x[:2])]
    assert list(offline) == [x for x in every if not is_online(x[2], x[:2])]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True), min_size=1, max_size=40),
                min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_replicas_for_partition_as_columns(topics, rnd):
    ctx = ControllerContext()
    for i, assignment in enumerate(topics):
        ctx.add_topic(f"t{i}", [tuple(r) for r in assignment])
    partitions = [(f"t{i}", p) for i, a in enumerate(topics) for p in range(len(a))]
    if rnd.random() < 0.5:
        rnd.shuffle(partitions)   # topics in several runs: the per-partition form
    partitions = partitions * (1 + 70 // len(partitions))   # enough for the array form, partitions repeated
    expected = [(t, p, r) for t, p in partitions for r in topics[int(t[1:])][p]]
    assert list(ctx.replicas_for_partition(partitions)) == expected
    distinct = sorted(set(partitions))
    assert list(ctx.replicas_for_partition(distinct)) == [(t, p, r) for t, p in distinct for r in topics[int(t[1:])][p]]
