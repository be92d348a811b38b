"""The audit's checks in process as array operations over the rows' columns (numpy over Arrow), no object per row.

Gives exactly the report of :mod:`audit.local_engine` (the reference: ``tests/test_audit_engines.py`` holds
every engine to it) for a ``pyarrow.Table`` of :func:`audit.rows.arrow_schema` rows, at a fraction of its
time: the local engine reads the rows once, in order, with a dict per scope; here each scope is a stable
sort of row numbers by an integer key, and "the previous row of the same key", "the highest value so
far" and "the first row of the key" are shifts, running maxima and segment starts over that order.

- Rows are ordered as the local engine orders them: by run, then ``(seq, source, position)``, nulls
  first, ties in input order (every sort here is stable).
- Strings (run, source, kind, entity, topic, error) become dictionary codes once; a null is a code of its
  own, so a null key matches a null key as a ``None`` dict key does.
- Eras come from the controller-epoch pass (its resets), and every scope's key starts with the era.
- A topic's incarnation at a row is the count of its ``topic_created`` / ``topic_deletion_completed``
  rows before it in the era.
- Only the violations listed (at most ``limit`` of each list, in report order) become
  :class:`audit.checks.Violation` objects, from their rows taken out of the table; counts are exact.

The KRaft-era checks are not here: the runner runs :func:`audit.local_engine.audit_kraft` beside any engine.
"""
from __future__ import annotations

import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from audit.checks import (
    ALL_FINDING_KINDS, CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, DELETED_TOPIC_HAS_STATE, DELETION_STUCK,
    DISCONTINUITY, DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION,
    ISR_NOT_IN_REPLICAS, LEADER_EPOCH_DECREASED, LEADER_NOT_IN_ISR, LEGAL_TRANSITIONS, NON_EXISTENT, REFUSED_TRANSITION,
    UNCLEAN_ELECTION, ZOMBIE_WRITE, Report, build_report, violation,
)
from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_CREATED, TOPIC_DELETION_COMPLETED, TRANSITION_FAILED, AuditRow, arrow_table,
)
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE

__all__ = ["audit", "transition_times"]

_NULL = -(1 << 40)   # an integer column's null, below every value a reader writes
_PAD = -(1 << 41)    # a list's null element (equal only to another null element)
_PARALLEL_ROWS = 200_000   # fewer rows than this are checked on the calling thread alone
_WIDE_LISTS = 16     # lists longer than this are matched by sorting (element, row) pairs, not column by column


def audit(rows, *, limit: int | None = None, threads: int | None = None) -> Report:
    """Run every ZooKeeper-era check over ``rows`` (a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``
    with the columns of :func:`audit.rows.arrow_schema`, plain or dictionary-encoded strings); list at most
    ``limit`` violations and at most ``limit`` findings (the counts are always exact). ``threads`` (default: the
    cores) check runs, and the parts of a run, side by side: numpy lets go of the interpreter in its loops."""
    table = arrow_table(rows)
    workers = max(1, threads if threads is not None else (os.cpu_count() or 1))
    if workers == 1 or table.num_rows < _PARALLEL_ROWS:
        return _Audit(table, None).report(limit)
    with ThreadPoolExecutor(workers, thread_name_prefix="columnar-audit") as pool:
        return _Audit(table, pool).report(limit)


def transition_times(table):
    """The times (ms, numpy int64) of the table's transition rows that have one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from audit.rows import PARTITION_TRANSITION, REPLICA_TRANSITION
    kind = table["kind"]
    if pa.types.is_dictionary(kind.type):
        kind = kind.cast(pa.string())
    timed = pc.and_(pc.is_in(kind, value_set=pa.array([REPLICA_TRANSITION, PARTITION_TRANSITION])),
                    pc.is_valid(table["time_ms"]))
    return table["time_ms"].filter(timed).to_numpy()


# --- columns as numpy ---------------------------------------------------------------------------------------

def _codes(column) -> tuple[np.ndarray, list]:
    """A string column's (plain or dictionary-encoded) codes as int32, a null as the code ``len(values)``, and its
    distinct values (``None`` last when there are nulls)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    encoded = pa.table({"c": column}).unify_dictionaries().column("c")
    values = encoded.chunks[0].dictionary.to_pylist() if encoded.num_chunks else []
    null = len(values)
    codes = np.empty(len(encoded), np.int32)
    at = 0
    for chunk in encoded.chunks:
        indices = chunk.indices
        n = len(indices)
        codes[at:at + n] = np.asarray(indices.fill_null(null) if indices.null_count else indices)
        at += n
    if column.null_count:
        values.append(None)
    return codes, values


def _ints(column) -> np.ndarray:
    """An integer column as int64, a null as ``_NULL``: each chunk's buffer copied (and widened) once into the
    result, no Arrow kernel per chunk."""
    out = np.empty(len(column), np.int64)
    at = 0
    for chunk in column.chunks:
        n, offset = len(chunk), chunk.offset
        if not n:
            continue
        part = out[at:at + n]
        part[:] = np.frombuffer(chunk.buffers()[1], dtype=chunk.type.to_pandas_dtype(), count=offset + n)[offset:]
        if chunk.null_count:
            bits = np.frombuffer(chunk.buffers()[0], np.uint8)
            part[~np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].view(bool)] = _NULL
        at += n
    return out


def _ranks(values: list) -> np.ndarray:
    """For each code, its place in the values' order (``None`` first, as Spark orders nulls)."""
    order = sorted(range(len(values)), key=lambda i: (values[i] is not None, values[i] or ""))
    ranks = np.empty(len(values), np.int64)
    ranks[order] = np.arange(len(values))
    return ranks


def _lists(column, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list column as (valid per row, offsets, flat values with null elements as ``_PAD``)."""
    import pyarrow as pa
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    valid = np.asarray(arr.is_valid(), dtype=bool) if arr.null_count else np.ones(n, bool)
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    flat = arr.values.slice(offsets[0], offsets[-1] - offsets[0]) if n else arr.values
    flat = _ints(pa.chunked_array([flat], flat.type)) if len(flat) else np.zeros(0, np.int64)
    if len(flat):
        flat[flat == _NULL] = _PAD
    return valid, offsets - offsets[0], flat


# --- sorts and scopes ---------------------------------------------------------------------------------------

def _key(*columns: np.ndarray) -> np.ndarray:
    """One int64 per row that orders as the columns do, left to right (a column with negative values is shifted
    to start at 0 first); columns whose ranges together overflow 63 bits are first renumbered densely."""
    key = None
    for col in columns:
        if not len(col):
            return np.zeros(0, np.int64)
        lo = int(col.min())
        if lo < 0:
            col = col - lo
        span = int(col.max()) + 1
        if key is None:
            key = col.astype(np.int64)
            continue
        top = int(key.max()) + 1
        if top * span >= 1 << 63:
            _, key = np.unique(key, return_inverse=True)
            top = int(key.max()) + 1
            if top * span >= 1 << 63:
                _, col = np.unique(col, return_inverse=True)
                span = int(col.max()) + 1
        key *= span
        key += col
    return key if key is not None else np.zeros(0, np.int64)


def _sort(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable sort of ``key`` (>= 0): the order (row numbers) and the sorted keys. Rows usually arrive
    nearly in order (checked first); otherwise each key is packed with its row number into one int64 and the
    values sorted, which numpy does with SIMD about ten times faster than an argsort."""
    n = len(key)
    if n < 2 or bool(np.all(key[1:] >= key[:-1])):
        return np.arange(n), key
    bits = n.bit_length()
    if int(key.max()) >= 1 << (63 - bits):
        distinct = np.unique(key)
        key = np.searchsorted(distinct, key)
    packed = np.sort(key << bits | np.arange(n))
    return packed & ((1 << bits) - 1), packed >> bits


def _same_as_previous(sorted_key: np.ndarray) -> np.ndarray:
    """Per position of a sorted key: whether the previous position has the same key."""
    out = np.zeros(len(sorted_key), bool)
    out[1:] = sorted_key[1:] == sorted_key[:-1]
    return out


def _running_max_before(sorted_key: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position of a key-sorted sequence: the highest value at earlier positions of the same key, and
    whether there is one. ``values`` must be >= 0 and < 2**31."""
    n = len(values)
    if not n:
        return values, np.zeros(0, bool)
    group = np.cumsum(~_same_as_previous(sorted_key))
    running = np.maximum.accumulate(group.astype(np.int64) << 32 | values)
    before = np.empty(n, np.int64)
    before[0] = -1
    before[1:] = running[:-1]
    has = np.zeros(n, bool)
    has[1:] = (before[1:] >> 32) == group[1:]
    return before & 0xFFFFFFFF, has


class _Columns:
    """The table's columns as numpy arrays in the table's row order, each made once, when first asked for."""

    def __init__(self, table):
        self.table = table
        self.n = table.num_rows
        self._cache: dict = {}

    def codes(self, name: str) -> tuple[np.ndarray, list]:
        if name not in self._cache:
            self._cache[name] = _codes(self.table.column(name))
        return self._cache[name]

    def ints(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = _ints(self.table.column(name))
        return self._cache[name]

    def lists(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if name not in self._cache:
            self._cache[name] = _lists(self.table.column(name), self.n)
        return self._cache[name]

    def flags(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A boolean column: (true, known)."""
        if name not in self._cache:
            import pyarrow.compute as pc
            column = self.table.column(name)
            true = np.asarray(pc.fill_null(column, False), dtype=bool) if self.n else np.zeros(0, bool)
            known = np.asarray(column.is_valid(), dtype=bool) if column.null_count else np.ones(self.n, bool)
            self._cache[name] = (true, known)
        return self._cache[name]


class _Found:
    """The violations found: per kind, the sorted positions of their rows (over all runs) and the values ``a``
    and ``b`` (made only for listed ones: callables from such a position to the value)."""

    def __init__(self):
        self.parts: list[tuple[str, np.ndarray, object, object]] = []

    def add(self, kind: str, positions: np.ndarray, a=None, b=None) -> None:
        if len(positions):
            self.parts.append((kind, np.asarray(positions, np.int64), a, b))


class _Audit:
    """Every check over the whole table: the rows ordered once, then each run checked on its own (its arrays are
    a slice of the order: small enough to stay in the processor's caches, and eras never span runs)."""

    def __init__(self, table, pool: ThreadPoolExecutor | None):
        self.table = table
        self.lock = threading.Lock()
        self.cols = cols = _Columns(table)
        if pool is not None:    # every column the checks read, side by side
            loads = [(cols.codes, c) for c in ("run_id", "source", "kind", "entity", "topic")]
            loads += [(cols.ints, c) for c in ("seq", "controller_epoch", "partition", "replica", "from_state",
                                                "to_state", "leader", "leader_epoch")]
            loads += [(cols.lists, "isr"), (cols.lists, "replicas"), (cols.flags, "unclean")]
            for done in [pool.submit(load, name) for load, name in loads]:
                done.result()
        self.n = n = table.num_rows
        run, self.run_values = cols.codes("run_id")
        source, self.source_values = cols.codes("source")
        kind, self.kind_values = cols.codes("kind")
        seq = cols.ints("seq")
        # The order of the rows: run (by its id), seq, source, position; nulls first; stable.
        run_rank = _ranks(self.run_values)[run]
        order, ordered = _sort(_key(run_rank, seq))
        tied = np.flatnonzero(_same_as_previous(ordered))
        if len(tied):
            # Rows sharing a seq (the partitions of one TopicCreated record) keep the order they came in, as in
            # the local engine's stable sort, unless their source or position tells them apart.
            position = cols.ints("position")
            a, b = order[tied], order[tied - 1]
            if (source[a] != source[b]).any() or (position[a] != position[b]).any():
                source_rank = _ranks(self.source_values)[source]
                order = np.lexsort((position, source_rank, seq, run_rank))
        self.order = order
        self.kind_counts = np.bincount(kind, minlength=len(self.kind_values))
        self.run_counts = np.bincount(run, minlength=len(self.run_values))
        self.found = _Found()
        self.failures: Counter = Counter()
        if not n:
            return
        sorted_runs = run_rank[order]
        bounds = np.flatnonzero(~_same_as_previous(sorted_runs)).tolist() + [n]
        runs = [_Run(self, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        if pool is None or len(runs) == 1:
            for run in runs:
                run.check(pool)
        else:
            for done in [pool.submit(run.check, None) for run in runs]:
                done.result()

    def report(self, limit: int | None) -> Report:
        run, _ = self.cols.codes("run_id")
        source, _ = self.cols.codes("source")
        sources = len(self.source_values) + 1
        counts: Counter = Counter()
        for kind, positions, _, _ in self.found.parts:
            original = self.order[positions]
            pairs = run[original].astype(np.int64) * sources + source[original]
            for pair, count in zip(*np.unique(pairs, return_counts=True)):
                r, s = divmod(int(pair), sources)
                counts[(kind, self.run_values[r], self.source_values[s])] += int(count)
        listed = []
        for findings in (False, True):
            chosen = [part for part in self.found.parts if (part[0] in ALL_FINDING_KINDS) == findings]
            if not chosen:
                continue
            positions = np.concatenate([p for _, p, _, _ in chosen])
            which = np.concatenate([np.full(len(p), j) for j, (_, p, _, _) in enumerate(chosen)])
            names = np.array([kind for kind, *_ in chosen])
            pick = np.lexsort((names[which], positions))       # report order: the row's, then the kind's
            if limit is not None:
                pick = pick[:limit]
            listed += [(chosen[which[j]], int(positions[j])) for j in pick.tolist()]
        rows = self.table.take(self.order[[p for _, p in listed]]).to_pylist() if listed else []
        found = [violation(kind, AuditRow(**row), a(position) if a else None, b(position) if b else None)
                 for ((kind, _, a, b), position), row in zip(listed, rows)]
        rows_by_kind = {k: int(c) for k, c in zip(self.kind_values, self.kind_counts)}
        rows_by_run = {r: int(c) for r, c in zip(self.run_values, self.run_counts)}
        return build_report(found, counts, rows_by_kind, self.failures, len(rows_by_run), limit, rows_by_run)


class _Run:
    """The checks of one run: its rows are positions ``lo``..``hi`` of the audit's order."""

    def __init__(self, audit: _Audit, lo: int, hi: int):
        self.audit = audit
        self.cols = audit.cols
        self.lo = lo
        self.rows = audit.order[lo:hi]          # the run's rows (table row numbers), in order
        self.n = hi - lo
        kind, self.kind_values = self.cols.codes("kind")
        self.kind = kind[self.rows]
        self._kind_code = {k: i for i, k in enumerate(self.kind_values)}
        self.seq = self.ints("seq")

    def ints(self, name: str) -> np.ndarray:
        return self.cols.ints(name)[self.rows]

    def codes(self, name: str) -> tuple[np.ndarray, list]:
        codes, values = self.cols.codes(name)
        return codes[self.rows], values

    def is_kind(self, *kinds: str) -> np.ndarray:
        codes = [self._kind_code[k] for k in kinds if k in self._kind_code]
        if len(codes) == 1:
            return self.kind == codes[0]
        wanted = np.zeros(len(self.kind_values) + 1, bool)
        wanted[codes] = True
        return wanted[self.kind]

    def value(self, array: np.ndarray):
        """A run position's value of a run's int column, as the local engine holds it (``None`` for a null)."""
        return lambda p: None if array[p] == _NULL else int(array[p])

    def add(self, kind: str, positions: np.ndarray, a=None, b=None) -> None:
        """Found at these run positions; ``a`` and ``b`` take a run position."""
        lo = self.lo
        self.audit.found.add(kind, np.asarray(positions, np.int64) + lo,
                             (lambda p: a(p - lo)) if a else None, (lambda p: b(p - lo)) if b else None)

    def check(self, pool: ThreadPoolExecutor | None) -> None:
        """Every check of the run; with ``pool``, the transitions' and the leaders' side by side."""
        self.epoch = self.ints("controller_epoch")
        self._controller_epochs()
        self.entity, self.entity_values = self.codes("entity")
        self.topic, self.topic_values = self.codes("topic")
        self.partition = self.ints("partition")
        self.from_state = self.ints("from_state")
        self.to_state = self.ints("to_state")
        transitions = self.is_kind(REPLICA_TRANSITION, PARTITION_TRANSITION)
        leaders = self.is_kind(PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED)
        self._incarnations(transitions | leaders)
        if pool is None:
            self._transitions(np.flatnonzero(transitions))
            self._leaders(np.flatnonzero(leaders))
        else:
            side = pool.submit(self._leaders, np.flatnonzero(leaders))
            self._transitions(np.flatnonzero(transitions))
            side.result()
        self._failures()

    def _controller_epochs(self) -> None:
        """Resets (which cut the run into eras), decreases and zombie writes, over the rows that carry a
        controller epoch (>= 0), in order. Worked out per stretch of rows with one epoch (an election is a
        stretch of its own): within a stretch, only its first row can be a reset, and the others are lower
        than the era's highest epoch exactly when the first is."""
        at = np.flatnonzero(self.is_kind(*EPOCH_KINDS) & (self.epoch >= 0))
        if not len(at):
            self.era = np.zeros(self.n, np.int64)
            return
        ep_rows = self.epoch[at]
        elected_rows = self.kind[at] == self._kind_code.get(CONTROLLER_ELECTED, -1)
        starts = np.ones(len(at), bool)
        starts[1:] = (ep_rows[1:] != ep_rows[:-1]) | elected_rows[1:] | elected_rows[:-1]
        heads = np.flatnonzero(starts)
        lengths = np.diff(np.append(heads, len(at)))
        ep, elected = ep_rows[heads], elected_rows[heads]
        m = len(heads)
        has_prev = np.arange(m) > 0
        prev_epoch = np.zeros(m, np.int64)
        prev_epoch[1:] = ep[:-1]
        last_elected = np.maximum.accumulate(np.where(elected, np.arange(m), -1))
        prev_el_at = np.full(m, -1, np.int64)
        prev_el_at[1:] = last_elected[:-1]
        has_prev_el = prev_el_at >= 0
        prev_elected = np.where(has_prev_el, ep[np.maximum(prev_el_at, 0)], 0)
        first = FIRST_CONTROLLER_EPOCH
        reset = (ep == first) & np.where(elected, has_prev_el & (prev_elected > first),
                                         (not elected.any()) & has_prev & (prev_epoch > first))
        zeros = np.zeros(m, np.int64)
        run_max, has_run_max = _running_max_before(zeros, ep)
        era = np.cumsum(reset)
        era_max, has_era_max = _running_max_before(era, ep)
        lower = ~reset & has_era_max & (ep < era_max)
        before = np.where(elected, prev_elected, prev_epoch)
        r = np.flatnonzero(reset)
        reset_at = dict(zip(at[heads[r]].tolist(), r.tolist()))
        self.add(CONTROLLER_EPOCH_RESET, at[heads[r]], lambda p: int(before[reset_at[p]]),
                 lambda p: int(run_max[reset_at[p]]) if has_run_max[reset_at[p]] else None)
        stretch = np.repeat(np.arange(m), lengths)               # each epoch row's stretch
        for kind, which in ((CONTROLLER_EPOCH_DECREASED, lower & elected), (ZOMBIE_WRITE, lower & ~elected)):
            rows = np.flatnonzero(which[stretch])
            self.add(kind, at[rows], lambda p, index=dict(zip(at[rows].tolist(), stretch[rows].tolist())):
                     int(era_max[index[p]]))
        # Every row's era: the run's resets up to and including it (a reset row opens the new era).
        marks = np.zeros(self.n, np.int64)
        marks[at[heads[r]]] = 1
        self.era = np.cumsum(marks)

    def _incarnations(self, needed: np.ndarray) -> None:
        """Per row: its topic's count of topic_created / topic_deletion_completed rows earlier in its era."""
        boundary = self.is_kind(TOPIC_CREATED, TOPIC_DELETION_COMPLETED)
        scope = np.flatnonzero(needed | boundary)
        order, key = _sort(_key(self.era[scope], self.topic[scope]))
        at = scope[order]
        counted = boundary[at].astype(np.int64)
        total = np.cumsum(counted)
        new_group = ~_same_as_previous(key)
        group_base = np.maximum.accumulate(np.where(new_group, total - counted, 0))
        self.incarnation = np.zeros(self.n, np.int64)
        self.incarnation[at] = total - counted - group_base
        self.boundary = boundary
        # Each (era, topic)'s last boundary row: a deleted topic's entities are judged against it.
        marks = boundary[at]
        keys, rows = key[marks], at[marks]
        last = np.ones(len(rows), bool)
        last[:-1] = keys[1:] != keys[:-1]
        topics = len(self.topic_values) + 1
        self.last_boundary_key = self.era[rows[last]] * topics + self.topic[rows[last]]   # ascending
        self.last_boundary_row = rows[last]

    def _transitions(self, at: np.ndarray) -> None:
        """Legality, continuity, and each entity's last transition of an era (stuck deletions, state left
        behind by deleted topics)."""
        entity = self.entity[at]
        entity_values = self.entity_values
        machine = np.full(len(entity_values) + 1, 2, np.int64)
        for name, code in ((ENTITY_REPLICA, 0), (ENTITY_PARTITION, 1)):
            if name in entity_values:
                machine[entity_values.index(name)] = code
        states = max([f for _, f, _ in LEGAL_TRANSITIONS] + [t for _, _, t in LEGAL_TRANSITIONS]) + 1
        legal = np.zeros((3, states, states), bool)
        for name, f, t in LEGAL_TRANSITIONS:
            legal[0 if name == ENTITY_REPLICA else 1, f, t] = True
        frm, to = self.from_state[at], self.to_state[at]
        known = (frm != _NULL) & (to != _NULL)
        inside = known & (frm >= 0) & (frm < states) & (to >= 0) & (to < states)
        ok = np.zeros(len(at), bool)
        ok[inside] = legal[machine[entity[inside]], frm[inside], to[inside]]
        self.add(ILLEGAL_TRANSITION, at[known & ~ok])

        replica = self.ints("replica")[at]
        era, topic, partition = self.era[at], self.topic[at], self.partition[at]
        # Continuity: per (era, entity, topic, partition, replica, controller epoch, incarnation), in order;
        # and each (era, entity, topic, partition, replica)'s last transition, from the same sort.
        entity_key = _key(era, entity, topic, partition, replica)
        order, key = _sort(_key(entity_key, self.epoch[at], self.incarnation[at]))
        rows = at[order]
        same = _same_as_previous(key)
        prev = np.empty(len(rows), np.int64)
        prev[1:] = rows[:-1]
        prev_to = np.empty(len(rows), np.int64)
        prev_to[1:] = self.to_state[rows[:-1]]
        frm_sorted = self.from_state[rows]
        broken = same & (frm_sorted != _NULL) & (prev_to != _NULL) & (frm_sorted != prev_to)
        b = np.flatnonzero(broken)
        before = dict(zip(rows[b].tolist(), prev[b].tolist()))
        to_of, seq_of = self.value(self.to_state), self.value(self.seq)
        self.add(DISCONTINUITY, rows[b], lambda p: to_of(before[p]), lambda p: seq_of(before[p]))

        starts = np.flatnonzero(~_same_as_previous(entity_key[order]))
        ends = np.maximum.reduceat(rows, starts) if len(rows) else rows
        replica_code = entity_values.index(ENTITY_REPLICA) if ENTITY_REPLICA in entity_values else -1
        stuck = ends[(self.entity[ends] == replica_code) & (self.to_state[ends] == REPLICA_DELETION_INELIGIBLE)]
        self.add(DELETION_STUCK, stuck)
        # A deleted topic's entities end NonExistent: the end of each entity whose topic's last boundary row
        # of the era is a topic_deletion_completed.
        topics = len(self.topic_values) + 1
        keys = self.last_boundary_key
        found = np.searchsorted(keys, self.era[ends] * topics + self.topic[ends]) if len(keys) else ends * 0
        boundary = self.last_boundary_row[np.minimum(found, len(keys) - 1)] if len(keys) else ends * 0
        has = (found < len(keys)) & (keys[np.minimum(found, len(keys) - 1)] == self.era[ends] * topics
                                     + self.topic[ends]) if len(keys) else np.zeros(len(ends), bool)
        completed = self._kind_code.get(TOPIC_DELETION_COMPLETED, -1)
        gone = np.full(len(entity_values) + 1, _NULL, np.int64)
        for code, name in enumerate(entity_values):
            if NON_EXISTENT.get(name) is not None:
                gone[code] = NON_EXISTENT[name]
        to_state = self.to_state[ends]
        topic_null = len(self.topic_values) - 1 if self.topic_values and self.topic_values[-1] is None else -1
        left = (has & (self.kind[boundary] == completed) & (self.topic[ends] != topic_null)
                & (gone[self.entity[ends]] != _NULL) & (to_state != _NULL) & (to_state != gone[self.entity[ends]]))
        deleted_at = dict(zip(ends[left].tolist(), boundary[left].tolist()))
        self.add(DELETED_TOPIC_HAS_STATE, ends[left], lambda p: seq_of(deleted_at[p]))

    def _leaders(self, at: np.ndarray) -> None:
        """Unclean elections, leader epochs, one leader per leader epoch, the leader in its ISR, the ISR
        within the replicas, over partition_transition and leader_and_isr_updated rows."""
        true, known = self.cols.flags("unclean")
        unclean = true[self.rows[at]]
        unclean_known = known[self.rows[at]]
        self.add(UNCLEAN_ELECTION, at[unclean])
        leader = self.ints("leader")[at]
        epoch = self.ints("leader_epoch")[at]
        era, topic, inc, partition = self.era[at], self.topic[at], self.incarnation[at], self.partition[at]

        # Leader epochs never decrease per (era, topic, incarnation, partition).
        has_epoch = epoch >= 0
        e = np.flatnonzero(has_epoch)
        order, key = _sort(_key(era[e], topic[e], inc[e], partition[e]))
        highest, has = _running_max_before(key, epoch[e][order])
        lower = has & (epoch[e][order] < highest)
        w = np.flatnonzero(lower)
        index = dict(zip(at[e][order][w].tolist(), highest[w].tolist()))
        self.add(LEADER_EPOCH_DECREASED, at[e][order][w], lambda p: index[p])

        # One leader per (era, topic, incarnation, partition, leader epoch): the first row's.
        d = np.flatnonzero(has_epoch & (leader >= 0))
        order, key = _sort(_key(era[d], topic[d], inc[d], partition[d], epoch[d]))
        new_group = ~_same_as_previous(key)
        first_at = np.maximum.accumulate(np.where(new_group, np.arange(len(order)), 0))
        rows = at[d][order]
        first_rows = rows[first_at]
        other = leader[d][order] != leader[d][order][first_at]
        w = np.flatnonzero(other)
        firsts = dict(zip(rows[w].tolist(), first_rows[w].tolist()))
        leader_of, seq_of = self.value(self.ints("leader")), self.value(self.seq)
        self.add(DUPLICATE_LEADER, rows[w], lambda p: leader_of(firsts[p]), lambda p: seq_of(firsts[p]))

        # The ISR: the leader in it, and no broker joining it from outside the replicas.
        isr_valid, isr_offsets, isr_flat = self.cols.lists("isr")
        rep_valid, rep_offsets, rep_flat = self.cols.lists("replicas")
        original = self.rows[at]
        has_isr = isr_valid[original]
        in_isr = _contains(isr_offsets, isr_flat, original, self.ints("leader")[at])
        not_in = has_isr & (leader >= 0) & ~in_isr & ~(unclean & unclean_known)
        self.add(LEADER_NOT_IN_ISR, at[not_in])

        i = np.flatnonzero(has_isr)
        order, key = _sort(_key(era[i], topic[i], inc[i], partition[i]))
        same = _same_as_previous(key)
        rows = original[i][order]                   # table row numbers, in key order
        positions = at[i][order]                    # the same rows' run positions
        prev = np.full(len(rows), -1, np.int64)
        prev[1:] = rows[:-1]
        prev[~same] = -1
        c = np.flatnonzero(rep_valid[rows])
        suspects = c[_elements_outside(isr_offsets, isr_flat, rep_offsets, rep_flat, rows[c])]
        joined, previous_isr = [], {}
        for k in suspects.tolist():
            row, before = int(rows[k]), int(prev[k])
            ids = isr_flat[isr_offsets[row]:isr_offsets[row + 1]].tolist()
            reps = set(rep_flat[rep_offsets[row]:rep_offsets[row + 1]].tolist())
            prior = set(isr_flat[isr_offsets[before]:isr_offsets[before + 1]].tolist()) if before >= 0 else set()
            if any(x not in reps and x not in prior for x in ids):
                joined.append(int(positions[k]))
                previous_isr[int(positions[k])] = before
        isr_col = self.cols.table.column("isr")
        self.add(ISR_NOT_IN_REPLICAS, np.array(sorted(joined), np.int64),
                 lambda p: None if previous_isr[p] < 0 else isr_col[previous_isr[p]].as_py())

    def _failures(self) -> None:
        failed = np.flatnonzero(self.is_kind(TRANSITION_FAILED))
        if not len(failed):
            return
        errors, error_values = self.cols.codes("error")
        for code, count in zip(*np.unique(errors[self.rows[failed]], return_counts=True)):
            with self.audit.lock:
                self.audit.failures[error_values[code]] += int(count)
        partition = self.entity_values.index(ENTITY_PARTITION) if ENTITY_PARTITION in self.entity_values else -1
        election = (self.entity[failed] == partition) & (self.to_state[failed] == ONLINE_PARTITION)
        self.add(FAILED_ELECTION, failed[election])
        self.add(REFUSED_TRANSITION, failed[~election])


def _row_of_elements(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the lists of ``rows``: each element's index into the flat values, and the index (into ``rows``) of
    its row."""
    lengths = offsets[rows + 1] - offsets[rows]
    owner = np.repeat(np.arange(len(rows)), lengths)
    starts = np.repeat(offsets[rows] - np.cumsum(lengths) + lengths, lengths)
    return starts + np.arange(len(owner)), owner


def _contains(offsets: np.ndarray, flat: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: whether its list holds the row's value in ``values``."""
    element, owner = _row_of_elements(offsets, rows)
    hit = flat[element] == values[owner]
    return np.bincount(owner[hit], minlength=len(rows)) > 0


def _elements_outside(a_offsets, a_flat, b_offsets, b_flat, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: whether its list in ``a`` holds an element that its list in ``b`` lacks (a null element
    is a value of its own, as ``None`` is in a Python list)."""
    element, owner = _row_of_elements(a_offsets, rows)
    values = a_flat[element]
    b_lengths = b_offsets[rows + 1] - b_offsets[rows]
    width = int(b_lengths.max()) if len(rows) else 0
    found = np.zeros(len(values), bool)
    if width <= _WIDE_LISTS:
        starts = b_offsets[rows][owner]
        lengths = b_lengths[owner]
        for k in range(width):
            inside = k < lengths
            found[inside] |= b_flat[starts[inside] + k] == values[inside]
    else:
        b_element, b_owner = _row_of_elements(b_offsets, rows)
        pairs = b_owner.astype(np.int64) * (1 << 42) + (b_flat[b_element] - _PAD)
        found = np.isin(owner.astype(np.int64) * (1 << 42) + (values - _PAD), pairs)
    return np.bincount(owner[~found], minlength=len(rows)) > 0
