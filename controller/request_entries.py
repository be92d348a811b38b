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

from typing import NamedTuple

import numpy as np

_BROKER_BITS, _TOPIC_BITS = 11, 20   # a packed sort key: broker code | topic code | partition (31 bits)


class Merged(NamedTuple):
    """The merged entries: ``columns`` by field name (one row per distinct (group, topic, partition), rows
    grouped by ascending group, in order of first addition within a group); ``groups`` the distinct group
    ids with their ``[start, stop)`` row ranges."""
    columns: dict
    groups: list


class EntryTable:
    """Entries keyed by (group, topic, partition) — ``group`` the destination broker, or 0 where there is
    one map for all — each with the integer ``fields``; ``sticky`` fields merge by OR."""

    __slots__ = ("fields", "sticky", "topics", "topic_names", "_rows", "_chunks", "_n")

    def __init__(self, fields: tuple[str, ...], sticky: tuple[str, ...] = ()):
        self.fields = ("group", "topic", "partition") + fields
        self.sticky = sticky
        self.topics: dict[str, int] = {}
        self.topic_names: list[str] = []
        self._rows: list[tuple] = []
        self._chunks: list[tuple] = []
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
        self._flush()
        n = max((len(c) for c in columns if isinstance(c, np.ndarray) and c.ndim), default=0)
        if not n:
            return
        self._chunks.append(tuple(np.broadcast_to(np.asarray(c, dtype=np.int64), (n,)) for c in columns))
        self._n += n

    def _flush(self) -> None:
        if self._rows:
            a = np.array(self._rows, dtype=np.int64).reshape(len(self._rows), len(self.fields))
            self._chunks.append(tuple(a.T))
            self._rows.clear()

    def merged(self) -> Merged:
        """The entries with the merge rule applied (see the module docstring)."""
        self._flush()
        if not self._chunks:
            return Merged({f: np.zeros(0, dtype=np.int64) for f in self.fields}, [])
        chunks = self._chunks
        if len(chunks) == 1:
            cols = [np.ascontiguousarray(c) for c in chunks[0]]
        else:
            cols = [np.concatenate([c[i] for c in chunks]) for i in range(len(self.fields))]
        group, topic, partition = cols[0], cols[1], cols[2]
        n = len(partition)
        groups, gcode = group_codes(group)
        if _distinct_entries(gcode, len(groups), topic, partition, len(self.topic_names)):
            # No partition added twice for one group: insertion order within each group.
            if n > 1 and bool((gcode[1:] < gcode[:-1]).any()):
                out = np.argsort(gcode.astype(np.int16) if len(groups) < 1 << 15 else gcode, kind="stable")
                merged = {f: c[out] for f, c in zip(self.fields, cols)}
            else:
                merged = dict(zip(self.fields, cols))
            return _merged(merged)
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
            out = np.argsort(gcode, kind="stable")
            merged = {f: c[out] for f, c in zip(self.fields, cols)}
        else:
            ends = np.concatenate((starts[1:], [n])) - 1
            first, last = order[starts], order[ends]
            out = np.lexsort((first, gcode[first]))
            take = last[out]
            merged = {f: c[take] for f, c in zip(self.fields, cols)}
            for f in self.sticky:
                i = self.fields.index(f)
                merged[f] = np.logical_or.reduceat(cols[i][order] != 0, starts)[out].astype(np.int64)
        return _merged(merged)


def _merged(merged: dict) -> Merged:
    g = merged["group"]
    bounds = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1], [True])))
    ranges = [(int(g[s]), int(s), int(e)) for s, e in zip(bounds[:-1], bounds[1:])]
    return Merged(merged, ranges)


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
    if int(partition.min()) < 0 or size > max(_BITMAP_MAX, 4 * n):
        return False
    seen = np.zeros(size, dtype=bool)
    seen[(gcode * max(topics, 1) + topic) * span + partition] = True
    return int(np.count_nonzero(seen)) == n
