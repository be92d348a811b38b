"""Many (topic, partition, replica) rows as columns, read as a sequence of tuples.

The controller hands the ReplicaStateMachine every replica of a cluster at a failover (and every
replica of a broker when it fails or returns). Kafka passes a ``Seq[PartitionAndReplica]``; here a
:class:`ReplicaRows` carries the same rows as numpy columns, so that grouping them by broker and
splitting them into runs of one topic are array operations. Anything that iterates or indexes it
gets the tuples (built once, on first use), so per-replica code paths work on it unchanged.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def key_topic_runs(keys: Sequence[tuple]) -> list[tuple[object, int, int]]:
    """(topic, start, end) of each run of consecutive ``(topic, partition, ...)`` keys of one topic, in order
    (a topic may make several runs)."""
    runs = []
    i = 0
    n = len(keys)
    while i < n:
        topic = keys[i][0]
        j = i + 1
        while j < n and keys[j][0] == topic:
            j += 1
        runs.append((topic, i, j))
        i = j
    return runs


class _ColumnRows(Sequence):
    """Rows of columns (``names[topic[i]]`` and the row's other columns), read as tuples built on first use."""

    __slots__ = ()

    def _value_columns(self) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.partition)

    def tuples(self) -> list[tuple]:
        if self._tuples is None:
            names = np.empty(len(self.names), dtype=object)
            names[:] = self.names
            self._tuples = list(zip(names[self.topic].tolist(), *(c.tolist() for c in self._value_columns())))
        return self._tuples

    def __getitem__(self, i):
        return self.tuples()[i]

    def __iter__(self):
        return iter(self.tuples())

    def __eq__(self, other) -> bool:
        if isinstance(other, (type(self), list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows, {len(self.names)} topics)"

    def topic_runs(self) -> list[tuple[str, int, int]]:
        """(topic, start, end) of each run of consecutive rows of one topic, in row order."""
        n = len(self)
        if not n:
            return []
        bounds = (np.flatnonzero(self.topic[1:] != self.topic[:-1]) + 1).tolist()
        starts = [0] + bounds
        ends = bounds + [n]
        codes = self.topic[starts].tolist()
        return [(self.names[c], s, e) for c, s, e in zip(codes, starts, ends)]


class ReplicaRows(_ColumnRows):
    """Rows ``(names[topic[i]], partition[i], replica[i])``, in row order."""

    __slots__ = ("names", "topic", "partition", "replica", "_tuples")

    def __init__(self, names: Sequence[str], topic: np.ndarray, partition: np.ndarray, replica: np.ndarray):
        self.names = list(names)
        self.topic = np.asarray(topic, dtype=np.int32)
        self.partition = np.asarray(partition, dtype=np.int64)
        self.replica = np.asarray(replica, dtype=np.int32)
        self._tuples: list | None = None

    def _value_columns(self) -> tuple[np.ndarray, ...]:
        return self.partition, self.replica

    def take(self, index: np.ndarray) -> ReplicaRows:
        """The rows at ``index`` (in that order)."""
        return ReplicaRows(self.names, self.topic[index], self.partition[index], self.replica[index])

    def by_replica(self) -> dict[int, ReplicaRows]:
        """Rows grouped by replica (broker) id, the groups in order of each id's first row and each group in
        row order: what a loop appending each row to its broker's list builds."""
        if not len(self):
            return {}
        ids, first = np.unique(self.replica, return_index=True)
        order = np.argsort(self.replica, kind="stable")
        bounds = np.searchsorted(self.replica[order], ids)
        ends = np.append(bounds[1:], len(order))
        groups = {int(b): self.take(order[s:e]) for b, s, e in zip(ids.tolist(), bounds.tolist(), ends.tolist())}
        return {int(b): groups[int(b)] for b in ids[np.argsort(first, kind="stable")].tolist()}


class PartitionRows(_ColumnRows):
    """Rows ``(names[topic[i]], partition[i])``, in row order: many partitions (a creation's) as columns, read as
    a sequence of (topic, partition) tuples built on first use."""

    __slots__ = ("names", "topic", "partition", "_tuples")

    def __init__(self, names: Sequence[str], topic: np.ndarray, partition: np.ndarray):
        self.names = list(names)
        self.topic = np.asarray(topic, dtype=np.int32)
        self.partition = np.asarray(partition, dtype=np.int64)
        self._tuples: list | None = None

    def _value_columns(self) -> tuple[np.ndarray, ...]:
        return (self.partition,)
