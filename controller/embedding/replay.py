"""Replay: re-execute a log's inputs on a fresh cluster and check that it writes the same log.

The log's first record (ClusterCreated) rebuilds the cluster; then every input record is
applied in order and every record the cluster writes is compared, as encoded bytes, with the
record at the same offset in the original log. Columnar batches are compared as batches — header,
offsets and column values, no object per record — when the replay writes one where the log holds
one with the same bounds, and record by record otherwise (a log written before a path became
columnar replays the same). A ViewSnapshot or ClusterSnapshot written by an earlier version in an
earlier format is the same record when it reads back as the state the replay wrote. StateDigest records are recomputed where the
original has them, so the cluster state is compared too (in the original's digest format: a log written before
digest format 2 is compared with ``Cluster.legacy_digest``). The first difference stops the
replay and is reported with its offset, the expected record and the record produced.
``resume_log`` replays a log the same way and then lets the rebuilt cluster continue it.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import msgpack

import numpy as np

from controller.embedding.cluster import Cluster, ClusterError
from controller.embedding.cluster_snapshot import restore_cluster
from controller.embedding.snapshot_state import cluster_state
from events.columns import ColumnBatch, DictColumn, ListColumn
from events.log import LogReader
from events.records import ClusterCreated, ClusterSnapshot, StateDigest, ViewSnapshot
from statemachines.cluster_view import ClusterView

_CHECKPOINT = (ViewSnapshot, StateDigest, ClusterSnapshot)


@dataclass
class Divergence:
    offset: int
    expected: tuple | None   # None: the replay wrote more records than the log has
    got: tuple | None        # None: the log has a record the replay did not write

    def __str__(self) -> str:
        def show(r):
            return "nothing" if r is None else f"{type(r).__name__}{tuple(r)}"
        return f"offset {self.offset}: expected {show(self.expected)}, got {show(self.got)}"


@dataclass
class ReplayResult:
    records: int
    inputs: int
    divergence: Divergence | None
    digest: str | None          # the replayed cluster's final state digest

    @property
    def ok(self) -> bool:
        return self.divergence is None


class _Diverged(BaseException):
    """Raised from the sink. A BaseException, so that the engine's own error handling (which,
    like Kafka's, logs and swallows exceptions in state changes) cannot hide it."""

    def __init__(self, divergence: Divergence):
        super().__init__(str(divergence))
        self.divergence = divergence


def _same(a: tuple, b: tuple) -> bool:
    return type(a) is type(b) and (msgpack.packb(a) == msgpack.packb(b) or _same_snapshot(a, b))


def _same_snapshot(expected: tuple, got: tuple) -> bool:
    """A snapshot record of the log written in an earlier format: the same when it reads back as the state
    the replay wrote (re-encoded by this version: the snapshot formats change, what they hold does not)."""
    t = type(got)
    if t not in (ViewSnapshot, ClusterSnapshot) or tuple(expected[:-1]) != tuple(got[:-1]):
        return False
    try:
        if t is ViewSnapshot:
            again = ClusterView.from_snapshot(expected.state).to_snapshot()
            if again == got.state:
                return True
            # A snapshot of before the 16th field (the reassignments in progress) holds what the first 15 hold.
            old, new = (msgpack.unpackb(x, raw=False, strict_map_key=False) for x in (expected.state, got.state))
            return len(old) == 15 and len(new) == 16 and msgpack.packb(new[:15]) == again
        return cluster_state(restore_cluster(expected.state, sink=_Discard())) == got.state
    except Exception:   # an unreadable snapshot is a difference, reported as such
        return False


class _Discard:
    """The sink of a cluster restored only to be snapshotted again: it writes nothing."""

    def __call__(self, record) -> None:
        pass

    def append_columns(self, batch) -> None:
        pass


def _same_column(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is DictColumn:
        if a.dictionary == b.dictionary:
            return np.array_equal(a.codes, b.codes)
        da, db = np.array(a.dictionary, dtype=object), np.array(b.dictionary, dtype=object)
        return len(a.codes) == len(b.codes) and bool((da[a.codes] == db[b.codes]).all())
    if type(a) is ListColumn:
        return np.array_equal(a.offsets, b.offsets) and np.array_equal(a.values, b.values)
    return np.array_equal(a, b)


def _same_batch(a: ColumnBatch, b: ColumnBatch) -> bool:
    """Same records: kind, version, offsets, header and every column's values."""
    return (a.cls is b.cls and a.v == b.v and a.first_offset == b.first_offset and a.n == b.n
            and a.header == b.header and all(map(_same_column, a.columns, b.columns)))


class _Comparator:
    """The replaying cluster's sink: each record written must equal the log's next record.

    ``expected`` yields the log's elements as stored (records and ColumnBatches, in offset order).
    A ColumnBatch of the log is kept whole until something must look inside it; ``_ahead`` then holds
    its records."""

    def __init__(self, expected: Iterator):
        self._expected = expected
        self._ahead: deque = deque()
        self.compared = 0
        self.forward = None  # once set, records go here instead of being compared
        self.cluster: Cluster | None = None   # the replaying cluster, once built (digests of older formats)

    def _pull(self):
        item = next(self._expected, None)
        self._ahead.append(item)
        return item

    def _expand_head(self) -> None:
        head = self._ahead[0]
        if type(head) is ColumnBatch:
            self._ahead.popleft()
            self._ahead.extendleft(reversed(head.records()))

    def peek(self):
        if not self._ahead:
            self._pull()
        self._expand_head()
        return self._ahead[0]

    def next_driver(self):
        """The next record the replay must act on (an input, or a checkpoint's ViewSnapshot or
        StateDigest), reading ahead over the outputs before it: those are written while that
        input is carried out (e.g. session expiries while its time passes). Columnar batches are
        outputs."""
        for rec in self._ahead:
            if rec is None or (type(rec) is not ColumnBatch and (rec.is_input or type(rec) in _CHECKPOINT)):
                return rec
        while True:
            rec = self._pull()
            if rec is None or (type(rec) is not ColumnBatch and (rec.is_input or type(rec) in _CHECKPOINT)):
                return rec

    def __call__(self, rec) -> None:
        if self.forward is not None:
            self.forward(rec)
            return
        exp = self.peek()
        self._ahead.popleft()
        if (type(rec) is StateDigest and type(exp) is StateDigest and self.cluster is not None
                and exp.digest[:2] != rec.digest[:2]):   # a digest of an older format: recomputed in it
            rec = rec._replace(digest=self.cluster.digest_like(exp.digest))
        if exp is None or not _same(exp, rec):
            raise _Diverged(Divergence(rec.offset, exp, rec))
        self.compared += 1

    def append_columns(self, batch: ColumnBatch) -> None:
        """A columnar batch the replay wrote: compared whole with the log's batch at the same offsets, else
        record by record."""
        if self.forward is not None:
            forward_columns = getattr(self.forward, "append_columns", None)
            if forward_columns is not None:
                forward_columns(batch)
            else:
                for rec in batch.records():
                    self.forward(rec)
            return
        if not self._ahead:
            self._pull()
        head = self._ahead[0]
        if type(head) is ColumnBatch and head.first_offset == batch.first_offset and head.n == batch.n:
            if _same_batch(head, batch):
                self._ahead.popleft()
                self.compared += batch.n
                return
        for rec in batch.records():
            self(rec)


def replay_records(records: Iterable[tuple]) -> ReplayResult:
    """Replay a sequence of records: a whole log from its ClusterCreated record, or its tail from a
    ClusterSnapshot record (the cluster restarts from the snapshot)."""
    return _replay(_Comparator(iter(records)))[0]


def _replay(cmp: _Comparator) -> tuple[ReplayResult, Cluster | None]:
    first = cmp.peek()
    if type(first) not in (ClusterCreated, ClusterSnapshot):
        raise ClusterError("a replay starts at a ClusterCreated record (the log's first) or at a ClusterSnapshot")
    inputs = 0
    try:
        if type(first) is ClusterSnapshot:
            cmp(first)  # the snapshot itself is where we start, not something to reproduce
            cluster = restore_cluster(first.state, sink=cmp)
        else:
            cluster = Cluster(configs=dict(first.configs), seed=first.seed, sink=cmp,
                              start_time_ms=first.timestamp_ms)
            inputs = 1
        cmp.cluster = cluster
        while True:
            driver = cmp.next_driver()
            if driver is None:
                leftover = cmp.peek()
                if leftover is not None:  # outputs after the last input that nothing wrote
                    return ReplayResult(cmp.compared, inputs, Divergence(leftover.offset, leftover, None), None), None
                break
            if driver.is_input:
                cluster.apply(driver)
                inputs += 1
            elif type(driver) is ClusterSnapshot:
                cluster.snapshot()
            else:
                cluster.checkpoint(snapshot=type(driver) is ViewSnapshot)
            if cmp.peek() is driver:  # the driver itself was not written where the log has it
                return ReplayResult(cmp.compared, inputs, Divergence(driver.offset, driver, None), None), None
    except _Diverged as d:
        return ReplayResult(cmp.compared, inputs, d.divergence, None), None
    return ReplayResult(cmp.compared, inputs, None, cluster.digest()), cluster


def latest_cluster_snapshot(log_dir: str, at_or_before: int | None = None) -> int | None:
    """Offset of the last ClusterSnapshot record (at or before an offset), found without building records."""
    found = None
    for rec in LogReader(log_dir).raw_records():
        if at_or_before is not None and rec[2] > at_or_before:
            break
        if rec[0] == ClusterSnapshot.KIND:
            found = rec[2]
    return found


def replay_log(log_dir: str, *, from_snapshot: bool = False) -> ReplayResult:
    """Replay the log in ``log_dir`` (streamed, never loaded whole); with ``from_snapshot``, only its tail
    after the latest ClusterSnapshot (the whole log when there is none)."""
    start = latest_cluster_snapshot(log_dir) if from_snapshot else None
    return replay_records(LogReader(log_dir).column_batches(start or 0))


class ResumeError(RuntimeError):
    """The log cannot be continued: its replay diverged, so the cluster it describes cannot be rebuilt."""


def resume_log(log_dir: str, sink: Callable[[tuple], object]) -> Cluster:
    """Rebuild the cluster a log describes (from its latest ClusterSnapshot, else from the start),
    checking every record on the way as ``replay`` does, and return it with its records going to
    ``sink`` from now on (e.g. a ``LogWriter`` opened on the same directory, to continue the log)."""
    start = latest_cluster_snapshot(log_dir)
    cmp = _Comparator(iter(LogReader(log_dir).column_batches(start or 0)))
    result, cluster = _replay(cmp)
    if cluster is None:
        raise ResumeError(f"{log_dir}: cannot continue this log: its replay diverged at {result.divergence}")
    cmp.forward = sink
    return cluster
