"""Columnar tables of the request batch's entries, with Kafka's merge rule for the same partition.

Kafka's ``ControllerBrokerRequestBatch`` keeps, per broker, a hash map from partition to the state to
send; adding a partition that is already there replaces its state and keeps its place (our order is
the order partitions were first added, which Kafka's hash maps do not define), and a few flags are
sticky (``isNew`` of LeaderAndIsr, ``deletePartition`` of StopReplica: once true, true). An
:class:`EntryTable` holds those entries as columns — appended one at a time by the per-partition
callers or as arrays by the batch paths — and applies the merge rule only when the batch is sent
(:meth:`EntryTable.merged`), with one sort over all entries instead of a dict operation per entry.

Every field is an integer column: topics are codes into the table's own topic list, tuples of broker
ids are codes of the controller context's ``TuplePool``.
"""
from __future__ import annotations

import numpy as np

_BROKER_BITS, _TOPIC_BITS = 11, 20   # a packed sort key: broker code | topic code | partition (31 bits)


class Merged:
    """The merged entries, one row per distinct (group, topic, partition), rows grouped by ascending group,
    in order of first addition within a group; ``groups`` the distinct group ids with their ``[start, stop)``
    row ranges. The key fields (group, topic, partition and the sticky flags) are columns of their own
    (``keys``); the other fields are the table's value rows (``values``, each column shared by every entry
    added with it), row ``i`` holding ``values[f][row[i]]`` — :meth:`column` gathers one."""

    __slots__ = ("fields", "keys", "row", "values", "groups", "_gathered")

    def __init__(self, fields: tuple, keys: dict, row: np.ndarray, values: dict, groups: list):
        self.fields = fields
        self.keys = keys
        self.row = row
        self.values = values
        self.groups = groups
        self._gathered: dict = {}

    def __len__(self) -> int:
        return len(self.row)

    def column(self, f: str) -> np.ndarray:
        """Field ``f`` of every merged row (ints)."""
        c = self.keys.get(f)
        if c is None:
            c = self._gathered.get(f)
            if c is None:
                c = self._gathered[f] = self.values[f][self.row]
        return c

    @property
    def columns(self) -> dict:
        """Every field of every merged row, by name."""
        return {f: self.column(f) for f in self.fields}


_KEY_FIELDS = ("group", "topic", "partition")


class EntryTable:
    """Entries keyed by (group, topic, partition) — ``group`` the destination broker, or 0 where there is
    one map for all — each with the integer ``fields``; ``sticky`` fields merge by OR. An entry's sticky
    fields are its own; its other fields are a row of the table's values, which several entries (a
    partition's state sent to each of its replicas) may share (:meth:`add_indexed`)."""

    __slots__ = ("fields", "sticky", "key_fields", "value_fields", "topics", "topic_names", "_rows", "_chunks",
                 "_n", "_split")

    def __init__(self, fields: tuple[str, ...], sticky: tuple[str, ...] = ()):
        self.fields = _KEY_FIELDS + fields
        self.sticky = sticky
        self.key_fields = _KEY_FIELDS + tuple(sticky)
        self.value_fields = tuple(f for f in fields if f not in sticky)
        position = {f: i for i, f in enumerate(self.fields)}
        self._split = ([position[f] for f in self.key_fields], [position[f] for f in self.value_fields])
        self.topics: dict[str, int] = {}
        self.topic_names: list[str] = []
        self._rows: list[tuple] = []
        self._chunks: list[tuple] = []   # (key columns, value columns, index into the values or None, n, m)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def clear(self) -> None:
        self.topics.clear()
        self.topic_names.clear()
        self._rows.clear()
        self._chunks.clear()
        self._n = 0

    def topic_code(self, topic: str) -> int:
        code = self.topics.get(topic)
        if code is None:
            code = self.topics[topic] = len(self.topic_names)
            self.topic_names.append(topic)
        return code

    def add(self, row: tuple) -> None:
        """One entry: (group, topic code, partition, *fields)."""
        self._rows.append(row)
        self._n += 1

    def add_columns(self, columns: tuple) -> None:
        """Entries as arrays of equal length, in field order (a scalar is broadcast)."""
        keys, values = self._split
        self.add_indexed(tuple(columns[i] for i in keys), tuple(columns[i] for i in values))

    def add_indexed(self, keys: tuple, values: tuple, index: np.ndarray | None = None) -> None:
        """Entries with the key fields ``keys`` (``key_fields`` order; arrays of one length, or scalars) whose
        other fields are rows ``index`` (an int array aligned with the keys; None: the rows in order) of the
        value columns ``values`` (``value_fields`` order; arrays of one length, or scalars)."""
        self._flush()
        m = _length(values)
        if not m:   # every entry the same values
            index = None
        n = _length(keys) if index is None else len(index)
        if not n:
            return
        if index is None:
            m = n
        self._chunks.append((keys, values, index, n, m))
        self._n += n

    def _flush(self) -> None:
        if self._rows:
            a = np.array(self._rows, dtype=np.int64).reshape(len(self._rows), len(self.fields))
            keys, values = self._split
            self._chunks.append((tuple(a[:, i] for i in keys), tuple(a[:, i] for i in values), None,
                                 len(self._rows), len(self._rows)))
            self._rows.clear()

    def merged(self) -> Merged:
        """The entries with the merge rule applied (see the module docstring)."""
        self._flush()
        if not self._chunks:
            empty = np.zeros(0, dtype=np.int64)
            return Merged(self.fields, {f: empty for f in self.key_fields}, empty,
                          {f: empty for f in self.value_fields}, [])
        chunks = self._chunks
        keys = [_stack([(c[0][i], c[3]) for c in chunks]) for i in range(len(self.key_fields))]
        values = {f: _stack([(c[1][i], c[4]) for c in chunks]) for i, f in enumerate(self.value_fields)}
        if len(chunks) == 1 and chunks[0][2] is None:
            row = np.arange(chunks[0][3], dtype=np.int64)
        else:
            row = np.empty(sum(c[3] for c in chunks), dtype=np.int64)
            at = base = 0
            for _, _, index, n, m in chunks:
                if index is None:
                    row[at:at + n] = np.arange(base, base + n)
                else:
                    np.add(index, base, out=row[at:at + n])
                at += n
                base += m
        group, topic, partition = keys[0], keys[1], keys[2]
        n = len(partition)
        groups, gcode = group_codes(group)
        take = None
        if _distinct_entries(gcode, len(groups), topic, partition, len(self.topic_names)):
            # No partition added twice for one group: insertion order within each group.
            if n > 1 and bool((gcode[1:] < gcode[:-1]).any()):
                take = np.argsort(gcode.astype(np.int16) if len(groups) < 1 << 15 else gcode, kind="stable")
                return self._merged(keys, row, values, take, groups, np.bincount(gcode, minlength=len(groups)))
            return self._merged(keys, row, values, None)
        if len(groups) < 1 << _BROKER_BITS and len(self.topic_names) < 1 << _TOPIC_BITS:
            key = (gcode << (_TOPIC_BITS + 31)) | (topic << 31) | partition
            order = np.argsort(key, kind="stable")
            k = key[order]
            starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        else:
            order = np.lexsort((np.arange(n), partition, topic, gcode))
            g, t, p = gcode[order], topic[order], partition[order]
            starts = np.flatnonzero(np.concatenate(([True], (g[1:] != g[:-1]) | (t[1:] != t[:-1])
                                                    | (p[1:] != p[:-1]))))
        if len(starts) == n:   # no partition added twice for one group: insertion order within each group
            return self._merged(keys, row, values, np.argsort(gcode, kind="stable"), groups,
                                np.bincount(gcode, minlength=len(groups)))
        ends = np.concatenate((starts[1:], [n])) - 1
        first, last = order[starts], order[ends]
        first_group = gcode[first]
        out = np.lexsort((first, first_group))
        merged = self._merged(keys, row, values, last[out], groups, np.bincount(first_group, minlength=len(groups)))
        for i, f in enumerate(self.sticky, 3):
            merged.keys[f] = np.logical_or.reduceat(keys[i][order] != 0, starts)[out].astype(np.int64)
        return merged

    def _merged(self, keys: list, row: np.ndarray, values: dict, take: np.ndarray | None,
                groups: np.ndarray | None = None, counts: np.ndarray | None = None) -> Merged:
        """The merged table of entries ``take`` (None: all, in order) — with ``groups`` and their ``counts``
        among them when known (the group column then rebuilt, not gathered)."""
        if take is not None:
            n = len(take)
            out = []
            for i, k in enumerate(keys):
                if k.strides == (0,):   # the same value in every entry
                    out.append(np.broadcast_to(k[:1], (n,)))
                elif i == 0 and counts is not None:
                    out.append(np.repeat(groups, counts))
                else:
                    out.append(np.take(_narrow(k), take))
            keys = out
            row = np.take(_narrow(row), take)
        if counts is not None:
            bounds = np.concatenate(([0], np.cumsum(counts))).tolist()
            ranges = [(g, s, e) for g, s, e in zip(groups.tolist(), bounds[:-1], bounds[1:]) if e > s]
        else:
            g = keys[0]
            bounds = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1], [True])))
            ranges = [(int(g[s]), int(s), int(e)) for s, e in zip(bounds[:-1], bounds[1:])]
        return Merged(self.fields, dict(zip(self.key_fields, keys)), row, values, ranges)


class Parts:
    """A column given as consecutive pieces, each (an array or a scalar, its length): joined only when the
    table is merged (one copy for all of them)."""

    __slots__ = ("pieces", "length")

    def __init__(self, pieces) -> None:
        self.pieces = list(pieces)
        self.length = sum(n for _, n in self.pieces)


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` as int32 when its values fit (a gather of half the bytes), else as it is."""
    if len(a) and a.dtype == np.int64 and int(a.min()) >= -(1 << 31) and int(a.max()) < 1 << 31:
        return a.astype(np.int32)
    return a


def _length(columns: tuple) -> int:
    return max((c.length if isinstance(c, Parts) else len(c) for c in columns
                if isinstance(c, Parts) or (isinstance(c, np.ndarray) and c.ndim)), default=0)


def _stack(parts: list) -> np.ndarray:
    """Columns (or scalars, each standing for ``length`` copies; or ``Parts``) one after the other, as one int64
    array."""
    if any(isinstance(c, Parts) for c, _ in parts):
        parts = [piece for c, length in parts for piece in (c.pieces if isinstance(c, Parts) else [(c, length)])]
    total = sum(length for _, length in parts)
    scalars = [int(c) for c, _ in parts if not (isinstance(c, np.ndarray) and c.ndim)]
    if len(scalars) == len(parts) and len(set(scalars)) == 1:
        return np.broadcast_to(np.int64(scalars[0]), (total,))   # one value for all (read-only)
    if len(parts) == 1:
        return np.ascontiguousarray(parts[0][0], dtype=np.int64)
    out = np.empty(total, dtype=np.int64)
    at = 0
    for c, length in parts:
        out[at:at + length] = c
        at += length
    return out


def group_codes(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(The distinct group ids ascending, each entry's index among them): ``np.unique(return_inverse=True)``,
    by a lookup table for the usual small non-negative broker ids."""
    if len(group) and int(group.min()) >= 0 and int(group.max()) < 1 << 20:
        present = np.zeros(int(group.max()) + 1, dtype=bool)
        present[group] = True
        groups = np.flatnonzero(present)
        lookup = np.cumsum(present, dtype=np.int64) - 1
        return groups, lookup[group]
    groups, gcode = np.unique(group, return_inverse=True)
    return groups, gcode.reshape(-1)


_BITMAP_MAX = 1 << 26   # the largest (group, topic, partition) bitmap the duplicate check allocates


def _distinct_entries(gcode: np.ndarray, groups: int, topic: np.ndarray, partition: np.ndarray, topics: int) -> bool:
    """Is every (group, topic, partition) of the entries distinct? One bitmap pass where it is small enough,
    else (False) the caller's sort decides."""
    n = len(partition)
    if n < 2:
        return True
    span = int(partition.max()) + 1
    size = groups * max(topics, 1) * span
    if int(partition.min()) < 0 or size > min(_BITMAP_MAX, max(1 << 20, 16 * n)):
        return False   # (a bitmap much larger than the entries costs more than the caller's sort)
    seen = np.zeros(size, dtype=bool)
    seen[(gcode * max(topics, 1) + topic) * span + partition] = True
    return int(np.count_nonzero(seen)) == n
