"""The batch forms of election.py: Kafka's leader-election algorithms and new-ISR rules on many partitions
at once, equal to the scalar functions partition by partition (tests/test_election_arrays.py checks it).

Representation (the controller's columnar context uses the same):

- A batch of n partitions is a set of int32 matrices, one row per partition. ``assignment`` (n, R): each
  row the replica list in assignment order, padded on the right with -1. ``isr`` (n, I): each row the ISR
  in its stored order, padded with -1; I need not equal R.
- Per-broker flags (``live``, ``shutting_down``) are bool arrays indexed by broker id. Ids past the array's
  end are not set; -1 padding is never set. The scalar code's per-partition ``live_replicas`` come from a
  per-(broker, partition) filter; its rare per-partition exceptions (offline log dirs) are the caller's to
  apply outside these functions.
- "No leader" is -1 (the scalar functions' None).

Every function is vectorised (loops run over the few columns, never over rows), returns int32 / bool
arrays and leaves its inputs untouched; outputs never share memory with inputs. ``rows_to_tuples`` and
``tuples_to_rows`` convert at the boundary with the scalar code.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

NONE = -1  # padding, and "no leader"

__all__ = [
    "NONE", "member_mask", "broker_mask", "first_where", "compact_rows",
    "offline_partition_leaders", "offline_new_isrs", "reassign_partition_leaders", "preferred_replica_leaders",
    "controlled_shutdown_leaders", "controlled_shutdown_new_isrs", "remove_replica_from_isrs",
    "rows_to_tuples", "tuples_to_rows",
]


def _rows(values) -> np.ndarray:
    a = np.asarray(values, dtype=np.int32)
    if a.ndim != 2:
        raise ValueError(f"expected a (n, width) matrix, got shape {a.shape}")
    return a


def _col(values) -> np.ndarray:
    a = np.asarray(values, dtype=np.int32)
    if a.ndim != 1:
        raise ValueError(f"expected an (n,) vector, got shape {a.shape}")
    return a


def _flags(by_broker) -> np.ndarray:
    a = np.asarray(by_broker, dtype=bool)
    if a.ndim != 1:
        raise ValueError(f"expected a bool vector indexed by broker id, got shape {a.shape}")
    return a


# --- column helpers ----------------------------------------------------------------------------------
# Rows are short (a replication factor) and many, so numpy's per-row reductions along axis 1 (any, sum,
# argmax, cumsum) and its masked selects (where, copyto(where=)) are slow here; the work is done on one
# contiguous vector per column with plain arithmetic instead.


def _columns(a: np.ndarray) -> list[np.ndarray]:
    """The columns of a (n, W) matrix as W contiguous vectors (copies)."""
    return list(np.ascontiguousarray(a.T))


def _matrix(columns: list[np.ndarray], n: int, dtype) -> np.ndarray:
    out = np.empty((n, len(columns)), dtype=dtype)
    for j, c in enumerate(columns):
        out[:, j] = c
    return out


def _select(mask: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """int32 vector: x where mask else y (branch-free: y ^ ((x ^ y) & -mask))."""
    t = mask.astype(np.int32)
    np.negative(t, out=t)
    t &= x ^ y
    t ^= y
    return t


def _any(columns: list[np.ndarray], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for c in columns:
        out |= c
    return out


def _broker_columns(columns: list[np.ndarray], by_broker: np.ndarray) -> list[np.ndarray]:
    size = by_broker.shape[0]
    if size == 0:
        return [np.zeros(c.shape, dtype=bool) for c in columns]
    out = []
    for c in columns:
        m = by_broker.take(c, mode="clip")
        m &= c.view(np.uint32) < size  # -1 and other negatives are huge as unsigned
        out.append(m)
    return out


def _member_columns(columns: list[np.ndarray], of: list[np.ndarray], n: int) -> list[np.ndarray]:
    out = []
    for c in columns:
        m = np.zeros(n, dtype=bool)
        for o in of:
            m |= c == o
        m &= c != NONE
        out.append(m)
    return out


def _first(columns: list[np.ndarray], masks: list[np.ndarray], n: int) -> np.ndarray:
    out = np.full(n, NONE, dtype=np.int32)
    for c, m in zip(reversed(columns), reversed(masks)):  # right to left: the leftmost hit is written last
        out = _select(m, c, out)
    return out


_FLAT_COMPACT_WIDTH = 12  # wider rows: one scatter instead of O(W^2) column passes


def _compact_columns(columns: list[np.ndarray], keep: list[np.ndarray], n: int) -> list[np.ndarray]:
    w = len(columns)
    rank = np.zeros(n, dtype=np.int16)  # how many cells of the row were kept before column j
    out = [np.full(n, NONE, dtype=np.int32) for _ in range(w)]
    for j in range(w):
        k = keep[j]
        for p in range(j + 1):  # cell j can only move left
            out[p] = _select(k & (rank == p), columns[j], out[p])
        rank += k
    return out


def _compact_flat(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    n, w = values.shape
    out = np.full((n, w), NONE, dtype=np.int32)
    dest = np.cumsum(keep, axis=1, dtype=np.intp)
    dest += np.arange(-1, n * w - 1, w, dtype=np.intp)[:, None]
    out.ravel()[dest[keep]] = values[keep]  # boolean indexing walks row-major: order is kept
    return out


# --- building blocks ---------------------------------------------------------------------------------


def member_mask(values, of) -> np.ndarray:
    """bool (n, W): values[i, j] != -1 and values[i, j] is in row i of ``of`` (n, V)."""
    values, of = _rows(values), _rows(of)
    n = values.shape[0]
    if of.shape[0] != n:
        raise ValueError(f"row counts differ: {n} and {of.shape[0]}")
    return _matrix(_member_columns(_columns(values), _columns(of), n), n, bool)


def broker_mask(values, by_broker) -> np.ndarray:
    """bool (n, W): values != -1 and by_broker[values]; ids past by_broker's end (or negative) are False."""
    values, by_broker = _rows(values), _flags(by_broker)
    size = by_broker.shape[0]
    if size == 0:
        return np.zeros(values.shape, dtype=bool)
    out = by_broker.take(values, mode="clip")
    out &= values.view(np.uint32) < size
    return out


def first_where(values, mask) -> np.ndarray:
    """int32 (n,): values[i, j] for the first j with mask[i, j], or -1 when the row has none."""
    values, mask = _rows(values), np.asarray(mask, dtype=bool)
    if mask.shape != values.shape:
        raise ValueError(f"mask shape {mask.shape} differs from values shape {values.shape}")
    return _first(_columns(values), _columns(mask), values.shape[0])


def compact_rows(values, keep) -> np.ndarray:
    """int32 (n, W): each row's kept values in their order, left-aligned, padded with -1."""
    values, keep = _rows(values), np.asarray(keep, dtype=bool)
    if keep.shape != values.shape:
        raise ValueError(f"keep shape {keep.shape} differs from values shape {values.shape}")
    n, w = values.shape
    if w > _FLAT_COMPACT_WIDTH:
        return _compact_flat(values, keep)
    return _matrix(_compact_columns(_columns(values), _columns(keep), n), n, np.int32)


# --- leader elections (PartitionLeaderElectionAlgorithms.scala) --------------------------------------


def _candidates(assignment: np.ndarray, isr: np.ndarray, live) -> tuple[list, list, list]:
    """The assignment's columns, and per column: live, live and in the ISR."""
    n = assignment.shape[0]
    if isr.shape[0] != n:
        raise ValueError(f"row counts differ: {n} and {isr.shape[0]}")
    a = _columns(assignment)
    alive = _broker_columns(a, _flags(live))
    eligible = [m & i for m, i in zip(alive, _member_columns(a, _columns(isr), n))]
    return a, alive, eligible


def offline_partition_leaders(assignment, isr, live, unclean) -> tuple[np.ndarray, np.ndarray]:
    """election.offline_partition_leader per row, live replicas = the assignment's live brokers.

    ``unclean``: bool (n,), whether unclean election is allowed for the row. Returns (leader int32 (n,), -1
    for none; is_unclean bool (n,): the leader was taken outside the ISR)."""
    assignment, isr = _rows(assignment), _rows(isr)
    n = assignment.shape[0]
    unclean = np.asarray(unclean, dtype=bool)
    if unclean.shape != (n,):
        raise ValueError(f"unclean must have shape ({n},), got {unclean.shape}")
    a, alive, eligible = _candidates(assignment, isr, live)
    clean = _first(a, eligible, n)
    any_live = _first(a, alive, n)
    is_unclean = (clean == NONE) & unclean & (any_live != NONE)
    return _select(is_unclean, any_live, clean), is_unclean


def reassign_partition_leaders(target, isr, live) -> np.ndarray:
    """election.reassign_partition_leader per row: first target replica (TRS order) live and in the ISR."""
    target, isr = _rows(target), _rows(isr)
    t, _, eligible = _candidates(target, isr, live)
    return _first(t, eligible, target.shape[0])


def preferred_replica_leaders(assignment, isr, live) -> np.ndarray:
    """election.preferred_replica_leader per row: the head of the assignment if live and in the ISR."""
    assignment, isr = _rows(assignment), _rows(isr)
    n = assignment.shape[0]
    if assignment.shape[1] == 0:
        if isr.shape[0] != n:
            raise ValueError(f"row counts differ: {n} and {isr.shape[0]}")
        return np.full(n, NONE, dtype=np.int32)
    head, _, eligible = _candidates(assignment[:, :1], isr, live)
    return _first(head, eligible, n)


def controlled_shutdown_leaders(assignment, isr, live, shutting_down) -> np.ndarray:
    """election.controlled_shutdown_leader per row: first replica live, in the ISR and not shutting down.

    As in Kafka, shutting-down brokers count as live here: the caller's ``live`` includes them."""
    assignment, isr = _rows(assignment), _rows(isr)
    a, _, eligible = _candidates(assignment, isr, live)
    down = _broker_columns(a, _flags(shutting_down))
    return _first(a, [e & ~d for e, d in zip(eligible, down)], assignment.shape[0])


# --- new ISRs (Election.scala, ReplicaStateMachine.scala) --------------------------------------------


def offline_new_isrs(leaders, isr, live) -> np.ndarray:
    """election.offline_new_isr per row, online replicas = the live brokers.

    A leader from the ISR keeps the ISR's live members in ISR order; any other leader (unclean) gets the
    ISR (leader,). Rows whose leader is -1 (no election) come back all -1. Width: max(I, 1)."""
    leaders, isr = _col(leaders), _rows(isr)
    n = leaders.shape[0]
    if isr.shape[0] != n:
        raise ValueError(f"row counts differ: {n} and {isr.shape[0]}")
    cols = _columns(isr) or [np.full(n, NONE, dtype=np.int32)]
    has_leader = leaders != NONE
    clean = _any([c == leaders for c in cols], n)
    clean &= has_leader
    keep = [m & clean for m in _broker_columns(cols, _flags(live))]
    out = _compact_columns(cols, keep, n)
    out[0] = _select(has_leader & ~clean, leaders, out[0])  # rows not clean were compacted to all -1
    return _matrix(out, n, np.int32)


def controlled_shutdown_new_isrs(isr, shutting_down) -> np.ndarray:
    """election.controlled_shutdown_new_isr per row: the ISR without shutting-down brokers, order kept."""
    isr = _rows(isr)
    n = isr.shape[0]
    cols = _columns(isr)
    keep = [(c != NONE) & ~d for c, d in zip(cols, _broker_columns(cols, _flags(shutting_down)))]
    return _matrix(_compact_columns(cols, keep, n), n, np.int32)


def remove_replica_from_isrs(leader, isr, replica_id) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kafka's removeReplicasFromIsr (ReplicaStateMachine._do_remove_replicas_from_isr) on every row.

    ``replica_id``: an int, or an int (n,) vector (one per row). For the rows whose ISR holds it: new
    leader = -1 if it was the leader, else the leader; new ISR = the ISR unchanged when it is the only
    member, else the ISR without it (order kept). Other rows come back unchanged. Returns (new_leader int32
    (n,), new_isr int32 (n, I), contains bool (n,))."""
    leader, isr = _col(leader), _rows(isr)
    n = leader.shape[0]
    if isr.shape[0] != n:
        raise ValueError(f"row counts differ: {n} and {isr.shape[0]}")
    rid = np.ascontiguousarray(np.broadcast_to(np.asarray(replica_id, dtype=np.int32), (n,)))
    cols = _columns(isr)
    present = [c != NONE for c in cols]
    is_replica = [(c == rid) & p for c, p in zip(cols, present)]
    contains = _any(is_replica, n)
    size = np.zeros(n, dtype=np.int16)
    for p in present:
        size += p
    several = size > 1
    keep = [p & ~(r & several) for p, r in zip(present, is_replica)]
    compacted = _compact_columns(cols, keep, n)
    new_isr = _matrix([_select(contains, k, c) for k, c in zip(compacted, cols)], n, np.int32)
    new_leader = _select(contains & (leader == rid), np.full(n, NONE, dtype=np.int32), leader)
    return new_leader, new_isr, contains


# --- the boundary with the scalar code ---------------------------------------------------------------


def rows_to_tuples(values) -> list[tuple[int, ...]]:
    """Each row's values other than -1, in order, as a tuple of ints."""
    values = _rows(values)
    n, w = values.shape
    keep = values != NONE
    if w > 1 and (keep[:, 1:] & ~keep[:, :-1]).any():  # padding inside a row: left-align first
        values = compact_rows(values, keep)
        keep = values != NONE
    counts = keep.sum(axis=1)
    lengths = np.flatnonzero(np.bincount(counts, minlength=1))
    if lengths.size == 1:  # every row the same length: no scatter
        return list(map(tuple, values[:, :lengths[0]].tolist()))
    # One group per row length, each converted in one go, scattered back into row order.
    out = np.empty(n, dtype=object)
    for length in lengths.tolist():
        rows = np.flatnonzero(counts == length)
        out[rows] = np.fromiter(map(tuple, values[rows, :length].tolist()), dtype=object, count=rows.size)
    return out.tolist()


def tuples_to_rows(rows: Sequence[Sequence[int]], width: int | None = None) -> np.ndarray:
    """int32 (len(rows), width): each sequence left-aligned, padded with -1. ``width`` defaults to the
    longest row's length; a row longer than ``width`` is a ValueError."""
    n = len(rows)
    lengths = np.fromiter(map(len, rows), dtype=np.intp, count=n)
    longest = int(lengths.max()) if n else 0
    if width is None:
        width = longest
    elif longest > width:
        raise ValueError(f"a row of length {longest} does not fit in width {width}")
    total = int(lengths.sum())
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int32, count=total)
    if total == n * width:  # every row full
        return flat.reshape(n, width)
    out = np.full((n, width), NONE, dtype=np.int32)
    out[np.arange(width) < lengths[:, None]] = flat
    return out
