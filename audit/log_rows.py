"""Audit rows from our own msgpack event logs: the in-process reader, shared with the Spark reader.

``iter_log_rows(log_dir)`` streams :class:`audit.rows.AuditRow` rows from one log directory in
log order; ``read_log_rows(paths)`` does it for many directories and globs of directories.
``discover_segments(paths)`` lists the segment files behind those paths, one
:class:`SegmentRef` each, for :mod:`audit.spark_source` (one Spark input partition per segment).

How a log is read
- Segments and batches are read and checksum-verified by :func:`events.segment.scan_segment`,
  the same scanner :class:`events.log.LogReader` uses, so the same damage raises the same
  ``LogCorruptError(path, position)``. A segment also checks that the next segment's base
  offset (from its file name) continues its own end offset, so a missing or truncated segment
  is caught even when each segment is read on its own (by a separate Spark task).
- Payloads are decoded with a msgpack ``Unpacker`` straight to plain tuples (no record
  classes); every record's byte position is taken on the way. A payload's columnar batches are
  decoded where they lie in it (its top-level array walked here, the records between them read by an
  Unpacker over their own bytes), not copied through the Unpacker's buffer. A batch's records are checked
  for kind, schema version, field count and offsets with whole-batch operations; a batch that
  fails is decoded again with :meth:`events.segment.Batch.records`, which raises the precise
  ``LogRecordError`` (segment, batch position, record offset).
- Kinds that no audit row needs are dropped right after that check, before any per-record
  work; a batch holding none of the mapped kinds costs only the decode and the check.
- A columnar batch (``events.columns.ColumnBatch``, one payload element holding many records
  of one kind as arrays) is checked as a whole (its first offset continues the records before
  it) and never expanded into records: its rows' columns are built from its arrays (numpy
  arrays, dictionary-encoded strings, offset/value lists; :class:`Masked` where a value is
  None), so the Spark reader turns them into Arrow arrays with no Python object per record.
  All of its rows share one ``position``: the byte where the columnar batch's element starts
  (``record_at(source, position, seq)`` finds the record). A columnar batch longer than a
  chunk gives several column sets of at most ``chunk_records`` rows each.
- Row batches go through the vectorised decoder of :mod:`audit.row_columns` (numpy over the payload's
  bytes, with the checks above made on the columns; no tuple per record), many batches at a time; a
  batch it leaves aside (records with nested values, such as TopicCreated's assignment, or anything
  outside its fast path or failing a check) is decoded into tuples as described above, which raises
  the precise error for a bad one. Both give the same rows (tests/test_row_columns.py).
- Rows are built column by column per kind over chunks of records (:func:`chunk_columns`;
  8k records here, 64k records for the Spark reader); the same columns become
  AuditRow tuples here and Arrow record batches in the Spark reader, so both readers produce
  the same rows by construction.
- A record whose fields decode but cannot be a row (a TransitionFailed entity other than
  replica/partition, a malformed assignment; on Spark also a value outside its column's type)
  raises :class:`RowError`, a ``LogRecordError`` naming the segment and the record's byte.
- A torn tail (an incomplete last batch of the last segment: a crash mid-write, or a writer
  still appending) ends the log cleanly, as in ``LogReader``: the rows before it are produced,
  the tail is ignored and recorded in :attr:`ReadStats.torn_tails`. Nothing is modified.

Mapping (record kind -> row kind)
- ReplicaTransition -> replica_transition; PartitionTransition -> partition_transition, with
  ``unclean`` = (election == ELECTION_OFFLINE_UNCLEAN), None when there was no election
  (ELECTION_NONE), and leader / leader_epoch / isr None while the partition has no leadership
  information (``leader_epoch == -1``: NewPartition); TransitionFailed -> transition_failed
  (``error`` = Kafka's exception class, the message is not carried); LeaderAndIsrUpdated ->
  leader_and_isr_updated (``replica`` = the replica removed from the ISR, -1 unless the update
  removed one); ControllerElected -> controller_elected; TopicDeletionRequested /
  TopicDeletionCompleted -> topic_deletion_requested / _completed (partition -1).
- TopicCreated and PartitionsAdded -> topic_created, **one row per partition** with its
  assigned replicas in ``replicas`` (a topic created with no partition gives one row with
  partition -1), so the checks can tell which partitions exist and hold which replicas. The rows
  are built as arrays (the replica lists from the assignment's msgpack bytes with numpy, no Python
  object per partition); an assignment of another form goes record by record, which raises the
  RowError for a malformed one (tests/test_topics_created_columns.py holds the two to each other).
- ``run_id`` = the log directory as given, normalised (``os.path.normpath``); ``source`` =
  ``os.path.join(run_id, segment file name)``; ``position`` = the byte offset in the segment
  file where the record's msgpack array starts, or its columnar batch's element (records are
  framed and checksummed per batch; :func:`record_at` finds and verifies the batch around a
  position); ``seq`` = the record's
  log offset; ``time_ms`` = its timestamp.
- ``controller_epoch`` is -1 ("not known") when the record names no controller
  (``controller_id == -1``; the log writes epoch 0 there).
"""
from __future__ import annotations

import gc
import glob as _glob
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from typing import NamedTuple

import msgpack
import numpy as np

from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_CREATED, TOPIC_DELETION_COMPLETED, TOPIC_DELETION_REQUESTED, TRANSITION_FAILED,
    AuditRow,
)
from audit.row_columns import RowGroup, decode_row_batches, element_count
from events import records as R
from events.codec import check_record_types
from events.columns import COLUMN_KINDS, EXT_COLUMNS, ColumnBatch, ColumnBatchError, DictColumn, ListColumn
from events.log import list_segments
from events.segment import (
    BATCH_HEADER, BATCH_HEADER_SIZE, SEGMENT_HEADER_SIZE, Batch, LogCorruptError, LogError, LogNotFoundError,
    LogRecordError, TornTail, crc32c, scan_segment,
)

__all__ = [
    "CHUNK_RECORDS", "LOCAL_CHUNK_RECORDS", "MAPPED_KINDS", "Chunk", "Const", "Masked", "ReadStats", "RowError",
    "SegmentChunks", "SegmentRef", "chunk_columns", "chunk_rows", "column_values", "discover_segments", "gc_paused",
    "iter_log_rows",
    "iter_segment_chunks", "read_log_rows", "record_at", "resolve_log_dirs", "segment_row_lists", "segment_rows",
]

CHUNK_RECORDS = 65536
"""Records decoded before their rows are built into one Arrow batch per kind (the Spark reader)."""
LOCAL_CHUNK_RECORDS = 8192
"""The same for AuditRow tuples in process: several batches at a time, so that the vectorised decoder's
numpy work is per many records (measured: 2.3 s for 2 M records of row batches, against 3.3 s a batch at
a time and 3.5 s with record tuples a batch at a time, the reader before the decoder)."""

# Record kind code -> row kind.
MAPPED_KINDS: dict[int, str] = {
    R.ReplicaTransition.KIND: REPLICA_TRANSITION,
    R.PartitionTransition.KIND: PARTITION_TRANSITION,
    R.TransitionFailed.KIND: TRANSITION_FAILED,
    R.LeaderAndIsrUpdated.KIND: LEADER_AND_ISR_UPDATED,
    R.ControllerElected.KIND: CONTROLLER_ELECTED,
    R.TopicCreated.KIND: TOPIC_CREATED,
    R.PartitionsAdded.KIND: TOPIC_CREATED,
    R.TopicDeletionRequested.KIND: TOPIC_DELETION_REQUESTED,
    R.TopicDeletionCompleted.KIND: TOPIC_DELETION_COMPLETED,
}

# Every valid (kind, schema version, field count) of a record.
_SHAPES = frozenset((code, v, len(cls._fields)) for code, cls in R.KINDS.items() for v in R.READABLE_VERSIONS)
_ENTITY_NAMES = {R.ENTITY_REPLICA: ENTITY_REPLICA, R.ENTITY_PARTITION: ENTITY_PARTITION}
_LIST_COLUMNS = (AuditRow._fields.index("isr"), AuditRow._fields.index("replicas"))
GLOB_MAGIC = re.compile(r"[*?[]")

_kind_of = itemgetter(0)
_version_of = itemgetter(1)
_offset_of = itemgetter(2)
_seq_of = itemgetter(3)
_new_row = partial(tuple.__new__, AuditRow)


class RowError(LogRecordError):
    """A record that decodes but cannot become an audit row; ``position`` is the record's byte."""

    def __init__(self, path: str, position: int, offset: int | None, reason: str):
        super().__init__(path, position, offset, reason)
        where = f" (record offset {offset})" if offset is not None else ""
        self.args = (f"event log segment {path}, record at byte {position}{where}: {reason}",)

    def __str__(self) -> str:
        return self.args[0]

    def __reduce__(self):
        return type(self), (self.path, self.position, self.offset, self.reason)


# ---------------------------------------------------------------------------------------------
# Finding logs and segments
# ---------------------------------------------------------------------------------------------

class SegmentRef(NamedTuple):
    """One segment file of one log, as a unit of reading (a Spark input partition)."""
    run_id: str                  # the log directory as given, normalised
    path: str                    # run_id joined with the file name: the rows' ``source``
    base_offset: int             # from the file name
    next_base_offset: int | None  # base offset of the directory's next segment; None for the last one
    file: str                    # absolute path, for opening (readers may run in another working directory)


def resolve_log_dirs(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    """Log directories named by ``paths`` (directories, or globs matching directories), normalised.

    A path without glob characters must be an existing directory (``LogNotFoundError``
    otherwise); a glob must match at least one directory (files it matches are ignored; ``**``
    matches any depth). Matches are sorted per glob; a directory named twice is kept once, at
    its first place.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[str] = []
    seen: set[str] = set()
    for p in paths:
        p = os.fspath(p)
        if GLOB_MAGIC.search(p):
            found = sorted(m for m in _glob.glob(p, recursive=True) if os.path.isdir(m))
            if not found:
                raise LogNotFoundError(f"no event log directory matches {p}")
        elif os.path.isdir(p):
            found = [p]
        else:
            problem = "is not a directory" if os.path.exists(p) else "does not exist"
            raise LogNotFoundError(f"event log directory {p} {problem}")
        for d in found:
            d = os.path.normpath(d)
            key = os.path.realpath(d)
            if key not in seen:
                seen.add(key)
                out.append(d)
    return out


def _log_segments(run_id: str) -> list[SegmentRef]:
    segments = list_segments(run_id)
    absolute = os.path.abspath(run_id)
    refs = []
    for i, (path, base) in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        name = os.path.basename(path)
        refs.append(SegmentRef(run_id, os.path.join(run_id, name), base, next_base, os.path.join(absolute, name)))
    return refs


def discover_segments(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[SegmentRef]:
    """Every segment of every log directory named by ``paths`` (see :func:`resolve_log_dirs`),
    in directory order then offset order. An empty directory contributes none."""
    return [ref for run_id in resolve_log_dirs(paths) for ref in _log_segments(run_id)]


# ---------------------------------------------------------------------------------------------
# Reading statistics
# ---------------------------------------------------------------------------------------------

@dataclass
class ReadStats:
    """What a reading saw. Pass one to the readers to have it filled in (it accumulates)."""
    logs: int = 0
    segments: int = 0
    batches: int = 0
    bytes: int = 0                # batch bytes read (headers and payloads)
    records: int = 0
    rows: int = 0
    records_by_kind: Counter = field(default_factory=Counter)   # record class name -> records read
    torn_tails: list[TornTail] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Records of kinds that give no audit row."""
        names = {R.KINDS[k].__name__ for k in MAPPED_KINDS}
        return sum(n for name, n in self.records_by_kind.items() if name not in names)


# ---------------------------------------------------------------------------------------------
# Decoding a segment into chunks of mapped records
# ---------------------------------------------------------------------------------------------

class Chunk(NamedTuple):
    """Mapped records of up to ~CHUNK_RECORDS consecutive records of one segment."""
    ref: SegmentRef
    groups: dict      # kind code -> (positions list, records list), each in log order
    records: int      # records decoded (mapped or not)
    columnar: tuple = ()  # (position, ColumnBatch) of the mapped kinds' columnar batches, in log order
    row_groups: tuple = ()  # audit.row_columns.RowGroup: mapped records of row batches decoded as columns
    raw: dict | None = None  # TopicCreated's position -> the payload from its record on (its assignment's bytes)


class _ExtHook:
    """msgpack ext hook: columnar batches decoded as they are met, counted; anything bad marked."""
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0

    def __call__(self, code: int, data: bytes):
        self.count += 1
        if code != EXT_COLUMNS:
            return _BAD
        try:
            return ColumnBatch.decode(data)
        except ColumnBatchError:
            return _BAD


_BAD = object()


def _decode_batch(batch: Batch) -> tuple[list, list]:
    """(positions, elements) of a verified batch: records as plain tuples (and columnar batches as
    ColumnBatch objects), positions as byte offsets in the segment. Checks every record's shape
    and offset, and that the records (columnar batches counting all of theirs) fill the batch
    (LogRecordError)."""
    payload = batch.payload
    hook = _ExtHook()
    try:
        # Fewer elements than records: columnar batches among them, decoded where they lie.
        walked = _walk_elements(payload, hook) if element_count(payload) < batch.record_count else None
        if walked is None:
            hook = _ExtHook()
            walked = _unpack_elements(payload, hook)
        start, ends, recs = walked
        count = len(recs)
        if ends[-1] != len(payload):
            raise ValueError
        if hook.count:
            _check_mixed(batch, recs)
        else:
            n, base = batch.record_count, batch.base_offset
            if count != n or list(map(_offset_of, recs)) != list(range(base, base + n)) \
                    or not set(zip(map(_kind_of, recs), map(_version_of, recs), map(len, recs))) <= _SHAPES:
                raise ValueError
            check_record_types(recs)
    except Exception:  # msgpack errors, a record that is not an array, a bad shape: say exactly what
        batch.records()  # raises LogRecordError naming the batch and the record
        raise LogRecordError(batch.path, batch.position, None,
                             "payload is not one msgpack array of record arrays") from None
    ends.pop()
    ends.insert(0, start)
    return list(map((batch.position + BATCH_HEADER_SIZE).__add__, ends)), recs


def _unpack_elements(payload: bytes, hook: _ExtHook) -> tuple[int, list[int], list]:
    """(where the first element starts, where each ends, the elements) of a payload, by msgpack's Unpacker."""
    recs: list = []
    unpacker = msgpack.Unpacker(use_list=False, raw=False, max_buffer_size=max(len(payload), 1 << 20),
                                ext_hook=hook)
    unpacker.feed(payload)
    count = unpacker.read_array_header()
    tell, unpack, keep = unpacker.tell, unpacker.unpack, recs.append
    start = tell()
    # Each record's end position (tell() runs after the unpack in the condition); no
    # per-record tuple is allocated.
    return start, [tell() for _ in range(count) if keep(unpack()) is None], recs


class _Reader:
    """A file over ``payload`` from ``pos`` on, for an Unpacker that reads only as far as it needs."""
    __slots__ = ("payload", "pos")

    def __init__(self, payload: bytes, pos: int):
        self.payload, self.pos = payload, pos

    def read(self, n: int) -> bytes:
        at = self.pos
        self.pos = at + n
        return self.payload[at:at + n]


_FIXEXT = {0xd4: 1, 0xd5: 2, 0xd6: 4, 0xd7: 8, 0xd8: 16}
_ROW_READ = 16384


def _walk_elements(payload: bytes, hook: _ExtHook) -> tuple[int, list[int], list] | None:
    """What _unpack_elements gives, without copying the columnar batches: the payload's top-level array is
    walked here, each ext element decoded where it lies (``ColumnBatch.decode`` of a view of the payload, as
    the hook does), the records between them read by an Unpacker over their bytes alone (the same hook
    for any ext inside them). None if the payload starts otherwise or an ext runs past its end (the
    Unpacker then reads the payload, and fails as it fails)."""
    size = len(payload)
    b = payload[0] if size else -1
    if 0x90 <= b <= 0x9f:
        count, pos = b & 0x0f, 1
    elif b == 0xdc and size >= 3:
        count, pos = int.from_bytes(payload[1:3], "big"), 3
    elif b == 0xdd and size >= 5:
        count, pos = int.from_bytes(payload[1:5], "big"), 5
    else:
        return None
    view = None
    start = pos
    ends: list[int] = []
    elements: list = []
    rows = base = None   # an Unpacker over the records since the last ext element, and where it started
    for _ in range(count):
        if pos >= size:
            return None
        b = payload[pos]
        if 0xc7 <= b <= 0xc9 or 0xd4 <= b <= 0xd8:
            if b >= 0xd4:
                length, head = _FIXEXT[b], 1
            else:
                width = 1 << (b - 0xc7)
                length, head = int.from_bytes(payload[pos + 1:pos + 1 + width], "big"), 1 + width
            data = pos + head + 1
            end = data + length
            if end > size:
                return None
            hook.count += 1
            element = _BAD
            if payload[pos + head] == EXT_COLUMNS:
                if view is None:
                    view = memoryview(payload)
                try:
                    element = ColumnBatch.decode(view, data, end)
                except ColumnBatchError:
                    pass
            rows = None
        else:
            if rows is None:
                rows = msgpack.Unpacker(_Reader(payload, pos), use_list=False, raw=False, read_size=_ROW_READ,
                                        max_buffer_size=max(size, 1 << 20), ext_hook=hook)
                base = pos
            try:
                element = rows.unpack()
            except msgpack.OutOfData:
                return None
            end = base + rows.tell()
        elements.append(element)
        ends.append(end)
        pos = end
    return start, ends, elements


def _check_mixed(batch: Batch, elements: list) -> None:
    """The checks of _decode_batch for a payload holding columnar batches (ValueError)."""
    rows = []
    expected = batch.base_offset
    for e in elements:
        if type(e) is ColumnBatch:
            if e.first_offset != expected:
                raise ValueError
            expected += e.n
        else:
            if e is _BAD or type(e) is not tuple or len(e) < R.HEADER_LEN or e[2] != expected:
                raise ValueError
            rows.append(e)
            expected += 1
    if expected != batch.end_offset \
            or not set(zip(map(_kind_of, rows), map(_version_of, rows), map(len, rows))) <= _SHAPES:
        raise ValueError
    check_record_types(rows)


class _Scan:
    """The state of reading one segment: its batch scanner, counts and, at the end, its SegmentEnd."""
    __slots__ = ("batches", "end", "error", "kinds", "nbytes", "scan", "vectorised")

    def __init__(self, scan, vectorised: bool = True):
        self.scan = scan
        self.vectorised = vectorised
        self.batches = self.nbytes = 0
        self.kinds = Counter()
        self.end = None
        self.error: LogError | None = None   # damage found after a chunk's first batches: raised next


def _vector_runs(batches: list[Batch]) -> list[tuple[list[Batch], tuple | None]]:
    """The batches in order as runs: (batches, (row groups, kind counts)) for a run the vectorised decoder
    took (audit.row_columns), (batches, None) for batches to decode into records (those holding records
    the decoder leaves to that path, or a run it did not take)."""
    decoded = _row_groups(batches)
    if type(decoded) is not list:
        return [(batches, decoded)]
    runs: list = []
    slow = set(decoded)
    i = 0
    while i < len(batches):
        if i in slow:
            runs.append(([batches[i]], None))
            i += 1
            continue
        j = i
        while j < len(batches) and j not in slow:
            j += 1
        runs += _vector_runs(batches[i:j])
        i = j
    return runs


def _row_groups(batches: list[Batch]) -> tuple[list, dict] | list[int] | None:
    """The batches' mapped records as columns (audit.row_columns), when they are row batches the vectorised
    decoder takes; the indices of the batches holding a mapped kind without a columnar builder; or None."""
    decoded = decode_row_batches([(b.payload, b.base_offset, b.record_count, b.position + BATCH_HEADER_SIZE)
                                  for b in batches], _VECTOR_KINDS, _NO_VECTOR_KINDS)
    if decoded is None or type(decoded) is list:
        return decoded
    groups, counts = decoded
    failed = groups.get(R.TransitionFailed.KIND)
    if failed is not None:
        entity = failed.column("entity")
        if ((entity < 0) | (entity >= len(_ENTITY_DICTIONARY))).any():
            return None   # the existing path raises the RowError naming the record
    return list(groups.values()), counts


def _next_chunk(state: _Scan, ref: SegmentRef, chunk_records: int) -> Chunk | None:
    scan, kinds = state.scan, state.kinds
    if state.error is not None:
        raise state.error
    batches: list[Batch] = []
    pending = 0
    while pending < chunk_records:
        try:
            batch = next(scan)
        except StopIteration as stop:
            state.end = stop.value
            break
        except LogError as exc:
            if not batches:
                raise
            state.error = exc  # hand out the rows before the damage first, as LogReader does
            break
        batches.append(batch)
        pending += batch.record_count
    if not batches:
        return None
    runs = _vector_runs(batches) if state.vectorised else [(batches, None)]
    groups: dict = {}
    columnar: list = []
    row_groups: list = []
    raw: dict = {}
    done = 0
    for run, fast in runs:
        if fast is not None:
            state.batches += len(run)
            state.nbytes += sum(BATCH_HEADER_SIZE + len(b.payload) for b in run)
            done += sum(b.record_count for b in run)
            row_groups += fast[0]
            kinds.update(fast[1])
            continue
        for batch in run:
            try:
                positions, recs = _decode_batch(batch)
            except LogError as exc:
                if not done:
                    raise
                state.error = exc   # an earlier damage than any the scan found after it
                return Chunk(ref, groups, done, tuple(columnar), tuple(row_groups), raw)
            state.batches += 1
            state.nbytes += BATCH_HEADER_SIZE + len(batch.payload)
            done += batch.record_count
            if len(recs) != batch.record_count:   # columnar batches: their columns, not their records
                recs = _take_columnar(positions, recs, columnar, kinds, chunk_records)
                positions = [positions[i] for i, r in enumerate(recs) if r is not None]
                recs = [r for r in recs if r is not None]
            present = Counter(map(_kind_of, recs))
            kinds.update(present)
            if R.TopicCreated.KIND in present:
                view = memoryview(batch.payload)
                base = batch.position + BATCH_HEADER_SIZE
                raw.update((p, view[p - base:]) for p, r in zip(positions, recs) if r[0] == R.TopicCreated.KIND)
            wanted = [k for k in present if k in MAPPED_KINDS]
            if len(wanted) == 1 and len(present) == 1:
                _extend(groups, wanted[0], positions, recs)
            else:
                for k in wanted:
                    picked = [i for i, r in enumerate(recs) if r[0] == k]
                    _extend(groups, k, map(positions.__getitem__, picked), map(recs.__getitem__, picked))
    return Chunk(ref, groups, done, tuple(columnar), tuple(row_groups), raw)


def _take_columnar(positions: list, elements: list, columnar: list, kinds: Counter, chunk_records: int) -> list:
    """Move the columnar batches out of ``elements`` (left None there): those of mapped kinds
    into ``columnar`` as (position, batch) in slices of at most ``chunk_records`` records."""
    out = list(elements)
    for i, e in enumerate(elements):
        if type(e) is ColumnBatch:
            out[i] = None
            kinds[e.kind] += e.n
            if e.kind in MAPPED_KINDS:
                columnar.extend((positions[i], e.slice(s, s + chunk_records)) for s in range(0, e.n, chunk_records))
    return out


class SegmentChunks:
    """Iterator over the chunks of one segment's mapped records, after checksum and shape checks.

    Raises LogCorruptError / LogRecordError at the first damage (after the chunks before it).
    A torn tail ends the segment if it is the log's last one (then recorded in ``stats``); the
    next segment's base offset must continue this one's end offset. It keeps no reference to
    a chunk it has returned, so a caller that drops the chunk frees its records at once.
    """

    def __init__(self, ref: SegmentRef, chunk_records: int = CHUNK_RECORDS, stats: ReadStats | None = None,
                 vectorised: bool = True):
        self.ref = ref
        self.chunk_records = chunk_records
        self.stats = stats
        self._state = _Scan(scan_segment(ref.file, ref.base_offset, is_last=ref.next_base_offset is None),
                            vectorised)
        self._finished = False

    def __iter__(self) -> SegmentChunks:
        return self

    def __next__(self) -> Chunk:
        if self._finished:
            raise StopIteration
        state = self._state
        if state.end is None or state.error is not None:  # a stored error: _next_chunk raises it
            chunk = _next_chunk(state, self.ref, self.chunk_records)
            if chunk is not None:
                return chunk
        self._finished = True
        self._finish()
        raise StopIteration

    def _finish(self) -> None:
        ref, state, stats = self.ref, self._state, self.stats
        end = state.end
        if stats is not None:
            stats.segments += 1
            stats.batches += state.batches
            stats.bytes += state.nbytes
            stats.records += sum(state.kinds.values())
            stats.records_by_kind.update({R.KINDS[k].__name__: n for k, n in state.kinds.items()})
            if end.torn is not None:
                stats.torn_tails.append(end.torn)
        if ref.next_base_offset is not None and end.end_offset != ref.next_base_offset:
            following = os.path.join(os.path.dirname(ref.file), f"{ref.next_base_offset:020d}.kclog")
            raise LogCorruptError(following, 0, f"segment base offset is {ref.next_base_offset}, but the previous "
                                                f"segment ends at offset {end.end_offset} (offsets must be "
                                                "consecutive)")


def iter_segment_chunks(ref: SegmentRef, chunk_records: int = CHUNK_RECORDS,
                        stats: ReadStats | None = None, vectorised: bool = True) -> SegmentChunks:
    """The chunks of a segment (see :class:`SegmentChunks`); ``vectorised=False`` decodes every row batch
    into record tuples (the reference path of the vectorised decoder)."""
    return SegmentChunks(ref, chunk_records, stats, vectorised)


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector for a bounded stretch of decoding.

    Decoding allocates many thousands of tuples that stay alive until their rows are built;
    each automatic collection would traverse them again (measured: reading took ~1.7x as long).
    They hold only ints, strings and tuples, so no cycle can form. Callers decode a chunk,
    build its rows and drop the records inside the pause, so the collector, re-enabled (if it
    was enabled) on the way out, never sees them; no caller code runs while it is paused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _extend(groups: dict, kind: int, positions, recs) -> None:
    group = groups.get(kind)
    if group is None:
        groups[kind] = (list(positions), list(recs))
    else:
        group[0].extend(positions)
        group[1].extend(recs)


# ---------------------------------------------------------------------------------------------
# Columns: one mapping for both row tuples and Arrow batches
# ---------------------------------------------------------------------------------------------

class Const(NamedTuple):
    """A column whose every row holds ``value``."""
    value: object


_NONE = Const(None)
_MINUS_ONE = Const(-1)


def _epochs(cids, epochs):
    if -1 not in cids:
        return epochs
    return [-1 if c == -1 else e for c, e in zip(cids, epochs)]


def _header(ref: SegmentRef, kind: str, positions, c) -> list:
    """run_id .. time_ms: columns 0..7."""
    return [Const(ref.run_id), Const(ref.path), positions, c[2], Const(kind), c[3], _epochs(c[3], c[4]), c[5]]


def _replica_transitions(ref, positions, recs):
    c = list(zip(*recs))
    return _header(ref, REPLICA_TRANSITION, positions, c) + [
        Const(ENTITY_REPLICA), c[7], c[8], c[9], c[10], c[11], _NONE, _NONE, _NONE, _NONE, _NONE, _NONE]


def _partition_transitions(ref, positions, recs):
    c = list(zip(*recs))
    leader, leader_epoch, isr = c[12], c[13], c[14]
    if -1 in leader_epoch:  # no leadership information yet: not known, rather than NoLeader
        known = [e != -1 for e in leader_epoch]
        leader = [x if k else None for x, k in zip(leader, known)]
        isr = [x if k else None for x, k in zip(isr, known)]
        leader_epoch = [x if k else None for x, k in zip(leader_epoch, known)]
    unclean = [None if e == R.ELECTION_NONE else e == R.ELECTION_OFFLINE_UNCLEAN for e in c[17]]
    return _header(ref, PARTITION_TRANSITION, positions, c) + [
        Const(ENTITY_PARTITION), c[7], c[8], _MINUS_ONE, c[9], c[10], leader, leader_epoch, isr, c[11],
        unclean, _NONE]


def _transition_failures(ref, positions, recs):
    c = list(zip(*recs))
    try:
        entity = list(map(_ENTITY_NAMES.__getitem__, c[7]))
    except (KeyError, TypeError):
        i = next(i for i, e in enumerate(c[7]) if e not in _ENTITY_NAMES)
        raise RowError(ref.file, positions[i], recs[i][2],
                       f"TransitionFailed names entity {recs[i][7]!r}, expected "
                       f"{R.ENTITY_REPLICA} (replica) or {R.ENTITY_PARTITION} (partition)") from None
    return _header(ref, TRANSITION_FAILED, positions, c) + [
        entity, c[8], c[9], c[10], c[11], c[12], _NONE, _NONE, _NONE, _NONE, _NONE, c[13]]


def _leader_and_isr_updates(ref, positions, recs):
    c = list(zip(*recs))
    return _header(ref, LEADER_AND_ISR_UPDATED, positions, c) + [
        _NONE, c[7], c[8], c[15], _NONE, _NONE, c[9], c[10], c[11], _NONE, _NONE, _NONE]


def _topic_level(kind: str, has_topic: bool = True):
    def build(ref, positions, recs):
        c = list(zip(*recs))
        topic = c[7] if has_topic else _NONE
        return _header(ref, kind, positions, c) + [
            _NONE, topic, _MINUS_ONE, _MINUS_ONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE]
    return build


def _topics_created(ref, positions, recs, raw: dict | None = None):
    """topic_created rows, one per partition: as arrays when every assignment is of its usual form (tuples of
    ints), else record by record (which raises the RowError for a malformed one). ``raw``: TopicCreated's
    position -> the bytes from its record on (Chunk.raw), where a large assignment is read from."""
    columns = _topics_created_columns(ref, positions, recs, raw)
    if columns is None:
        return _topics_created_by_record(ref, positions, recs)
    return columns


_TUPLE_ONLY = frozenset((tuple,))
_INT_ONLY = frozenset((int,))
_PAIRS_ONLY = frozenset((2,))


def _assignment_of(kind: int, assignment) -> tuple | None:
    """(partitions, replica tuples) of an assignment of the usual form, partitions None for 0..n-1
    (TopicCreated); None for any other form (the record-by-record path decides what it makes of it)."""
    if type(assignment) is not tuple or not set(map(type, assignment)) <= _TUPLE_ONLY:
        return None
    if kind == R.TopicCreated.KIND:
        return None, assignment
    if not assignment:
        return (), ()
    if set(map(len, assignment)) != _PAIRS_ONLY:
        return None
    partitions, replicas = zip(*assignment)
    if set(map(type, partitions)) != _INT_ONLY or set(map(type, replicas)) != _TUPLE_ONLY:
        return None
    return partitions, replicas


def _topics_created_columns(ref, positions, recs, raw: dict | None = None) -> list | None:
    """The columns of _topics_created_by_record from C-level passes over the assignments and numpy (no
    Python code per partition); None when an assignment or a value is outside that form (not a tuple of
    int tuples, or of (int, int tuple) pairs; an int beyond int64)."""
    rows_per: list[int] = []
    pieces: list = []         # per record: its replica tuples, or its ListColumn read from its bytes
    partitions: list = []     # per record: partition numbers, or how many (0..n-1)
    empty: list[int] = []     # the rows of empty assignments (partition -1, replicas None)
    rows = 0
    for pos, r in zip(positions, recs):
        n = len(r[8]) if type(r[8]) is tuple else 0
        column = None
        if raw is not None and n >= _FROM_BYTES and r[0] == R.TopicCreated.KIND and pos in raw:
            column = _topic_assignment_bytes(raw[pos], n)
        if column is not None:
            numbers, replicas = None, column
        else:
            found = _assignment_of(r[0], r[8])
            if found is None:
                return None
            numbers, replicas = found
            n = len(replicas)
            if n == 0:
                empty.append(rows)
                n, numbers, replicas = 1, (-1,), ((),)
        rows_per.append(n)
        pieces.append(replicas)
        partitions.append(n if numbers is None else numbers)
        rows += n
    replicas = _replica_column(pieces)
    if replicas is None:
        return None
    try:
        partition = np.concatenate([np.arange(p, dtype=np.int64) if type(p) is int else np.array(p, np.int64)
                                    for p in partitions])
        header = np.array([r[2:6] for r in recs], np.int64).reshape(len(recs), 4)
        position = np.array(positions, np.int64)
    except OverflowError:
        return None
    repeat = np.array(rows_per, np.int64)
    header[:, 2] = np.where(header[:, 1] == -1, -1, header[:, 2])   # controller_epoch -1 where no controller

    def per_row(values: np.ndarray, bound: int = 2**63):
        # A value every record shares (in the column's range) is a Const: no array of a million equal rows.
        # (position stays an array: chunk_columns counts a part's rows by it.)
        first = int(values[0])
        if -bound <= first < bound and (len(values) == 1 or (values == first).all()):
            return Const(first)
        return np.repeat(values, repeat)
    topics: dict = {}
    codes = np.array([topics.setdefault(r[7], len(topics)) for r in recs], np.int32)
    if empty:
        valid = np.ones(rows, bool)
        valid[empty] = False
        replicas = Masked(replicas, valid)
    return [Const(ref.run_id), Const(ref.path), np.repeat(position, repeat), per_row(header[:, 0]),
            Const(TOPIC_CREATED), per_row(header[:, 1], 2**31), per_row(header[:, 2], 2**31), per_row(header[:, 3]),
            _NONE,
            Const(recs[0][7]) if len(topics) == 1 else DictColumn(tuple(topics), np.repeat(codes, repeat)),
            partition, _MINUS_ONE, _NONE, _NONE, _NONE, _NONE, _NONE, replicas, _NONE, _NONE]


_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack


def _small_int_lists(lists: tuple) -> ListColumn | None:
    """``lists`` (a tuple of tuples) as a ListColumn when every inner tuple has at most 15 values, each
    in -32..127: their msgpack form (packed in C) is then one byte per array header (0x90 | length)
    and per value, read with numpy. None otherwise (anything else, of any type, packs differently)."""
    n = len(lists)
    if n == 0:
        return None
    try:
        data = np.frombuffer(_packb(lists), np.uint8)
    except (OverflowError, TypeError, ValueError):
        return None
    body = data[1 if n <= 0x0f else 3 if n <= 0xffff else 5:]
    head = (body & 0xf0) == 0x90
    if not (head | (body < 0x80) | (body >= 0xe0)).all():
        return None
    heads = np.flatnonzero(head)
    if len(heads) != n or heads[0] != 0:
        return None
    counts = (body[heads] & 0x0f).astype(np.int64)
    # each header followed by exactly its count of values: the bytes are n arrays of ints and nothing else
    if not np.array_equal(np.diff(heads, append=len(body)) - 1, counts):
        return None
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return ListColumn(offsets, body[~head].view(np.int8).astype(np.int64))


def _int_lists(lists: tuple) -> ListColumn | None:
    """``lists`` (a tuple of tuples) as a ListColumn when every value is an int within int64; else None."""
    flat = list(chain.from_iterable(lists))
    if flat and not set(map(type, flat)) <= _INT_ONLY:
        return None
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(list(map(len, lists)), out=offsets[1:])
    if offsets[-1] >= 2**31:
        return None
    try:
        values = np.array(flat, np.int64)
    except OverflowError:
        return None
    return ListColumn(offsets.astype(np.int32), values)


_FROM_BYTES = 64   # assignments of this many partitions and more are read from their bytes when they are at hand


def _replica_column(pieces: list) -> ListColumn | None:
    """One ListColumn of the records' replica lists: pieces already columns as they are, runs of records'
    replica tuples through _small_int_lists or _int_lists."""
    columns: list[ListColumn] = []
    run: list = []
    for piece in pieces + [None]:
        if type(piece) is tuple:
            run.append(piece)
            continue
        if run:
            lists = run[0] if len(run) == 1 else tuple(chain.from_iterable(run))
            column = _small_int_lists(lists) or _int_lists(lists)
            if column is None:
                return None
            columns.append(column)
            run = []
        if piece is not None:
            columns.append(piece)
    if len(columns) == 1:
        return columns[0]
    counts = np.concatenate([np.diff(c.offsets) for c in columns])
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    if offsets[-1] >= 2**31:
        return None
    return ListColumn(offsets.astype(np.int32), np.concatenate([c.values for c in columns]))


_INT_WIDTHS = {0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}
_STR_WIDTHS = {0xd9: 1, 0xda: 2, 0xdb: 4}


def _topic_assignment_bytes(data: memoryview, n: int) -> ListColumn | None:
    """The replica lists of the TopicCreated record whose msgpack bytes ``data`` starts with (its assignment
    of ``n`` >= 16 partitions) when they are in the one-byte form of _small_int_lists; else None. The bytes
    are those the record was decoded from, so the lists are the record's, read without the tuples."""
    size = len(data)
    if size < 2 or data[0] != 0x90 + len(R.TopicCreated._fields) or data[1] != R.TopicCreated.KIND:
        return None
    p = 1
    for _ in range(R.HEADER_LEN + 1):   # the header fields (ints) and the topic (a str)
        if p >= size:
            return None
        b = data[p]
        if b < 0x80 or b >= 0xe0:
            p += 1
        elif 0xa0 <= b <= 0xbf:
            p += 1 + (b & 0x1f)
        elif b in _INT_WIDTHS:
            p += 1 + _INT_WIDTHS[b]
        elif b in _STR_WIDTHS:
            width = _STR_WIDTHS[b]
            p += 1 + width + int.from_bytes(data[p + 1:p + 1 + width], "big")
        else:
            return None
    if p + 5 > size or data[p] not in (0xdc, 0xdd):   # (n >= 16: not a fixarray)
        return None
    width = 2 if data[p] == 0xdc else 4
    if int.from_bytes(data[p + 1:p + 1 + width], "big") != n:
        return None
    p += 1 + width
    body = np.frombuffer(data[p:p + 16 * n], np.uint8)   # at most 16 bytes a partition in this form
    head = (body & 0xf0) == 0x90
    other = np.flatnonzero(~(head | (body < 0x80) | (body >= 0xe0)))
    limit = int(other[0]) if other.size else len(body)
    heads = np.flatnonzero(head[:limit])
    if len(heads) < n or heads[0] != 0:
        return None
    counts = (body[heads[:n]] & 0x0f).astype(np.int64)
    end = int(heads[n - 1]) + 1 + int(counts[-1])
    # each header followed by exactly its count of values, the last one's values before anything else
    if end > limit or (len(heads) > n and heads[n] < end) \
            or not np.array_equal(np.diff(heads[:n]) - 1, counts[:-1]):
        return None
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return ListColumn(offsets, body[:end][~head[:end]].view(np.int8).astype(np.int64))


def _topics_created_by_record(ref, positions, recs):
    # One row per partition. TopicCreated: assignment[i] = replicas of partition i;
    # PartitionsAdded: assignment = ((partition, replicas), ...).
    pos_out, rec_out, partitions, replicas = [], [], [], []
    for pos, r in zip(positions, recs):
        assignment = r[8]
        try:
            pairs = enumerate(assignment) if r[0] == R.TopicCreated.KIND else assignment
            pairs = [(p, list(reps)) for p, reps in pairs]
            if not all(type(p) is int for p, _ in pairs):
                raise TypeError
        except (TypeError, ValueError):
            raise RowError(ref.file, pos, r[2], f"{R.KINDS[r[0]].__name__} has a malformed "
                                                f"assignment: {assignment!r:.200}") from None
        if not pairs:
            pairs = [(-1, None)]
        for p, reps in pairs:
            pos_out.append(pos)
            rec_out.append(r)
            partitions.append(p)
            replicas.append(reps)
    c = list(zip(*(r[:8] for r in rec_out)))
    return _header(ref, TOPIC_CREATED, pos_out, c) + [
        _NONE, c[7], partitions, _MINUS_ONE, _NONE, _NONE, _NONE, _NONE, _NONE, replicas, _NONE, _NONE]


# -- the same columns from columnar batches: numpy arrays, no Python object per record ----------

class Masked(NamedTuple):
    """A column of ``values`` (a numpy array or a ListColumn) that is None where ``valid`` is False."""
    values: object
    valid: np.ndarray


def column_values(column) -> list:
    """A non-Const column as a list of Python values (lists for int tuples, None where masked)."""
    if isinstance(column, np.ndarray):
        return column.tolist()
    if isinstance(column, DictColumn):
        return column.values()
    if isinstance(column, ListColumn):
        flat = column.values.tolist()
        offsets = column.offsets.tolist()
        return list(map(flat.__getitem__, map(slice, offsets[:-1], offsets[1:])))
    if isinstance(column, Masked):
        return [v if ok else None for v, ok in zip(column_values(column.values), column.valid.tolist())]
    return column


def _masked(values, valid: np.ndarray):
    return values if valid.all() else Masked(values, valid)


def _columnar_header(ref: SegmentRef, kind: str, position: int, b: ColumnBatch) -> list:
    """run_id .. time_ms of a columnar batch's rows: everything but ``seq`` is shared (a RowGroup's:
    every record its own)."""
    if type(b) is RowGroup:
        cids = b.controller_ids
        return [Const(ref.run_id), Const(ref.path), b.positions, b.offsets, Const(kind), cids,
                np.where(cids == -1, -1, b.controller_epochs), b.timestamps]
    epoch = -1 if b.controller_id == -1 else b.controller_epoch
    return [Const(ref.run_id), Const(ref.path), Const(position), np.arange(b.first_offset, b.end_offset, dtype=np.int64),
            Const(kind), Const(b.controller_id), Const(epoch), Const(b.timestamp_ms)]


def _columnar_replica_transitions(ref, position, b):
    c = b.column
    return _columnar_header(ref, REPLICA_TRANSITION, position, b) + [
        Const(ENTITY_REPLICA), c("topic"), c("partition"), c("replica"), c("from_state"), c("to_state"),
        _NONE, _NONE, _NONE, _NONE, _NONE, _NONE]


def _columnar_partition_transitions(ref, position, b):
    c = b.column
    leader, leader_epoch, isr = c("leader"), c("leader_epoch"), c("isr")
    known = leader_epoch != -1   # no leadership information yet: not known, rather than NoLeader
    election = c("election")
    unclean = _masked(election == R.ELECTION_OFFLINE_UNCLEAN, election != R.ELECTION_NONE)
    return _columnar_header(ref, PARTITION_TRANSITION, position, b) + [
        Const(ENTITY_PARTITION), c("topic"), c("partition"), _MINUS_ONE, c("from_state"), c("to_state"),
        _masked(leader, known), _masked(leader_epoch, known), _masked(isr, known), c("replicas"), unclean, _NONE]


_ENTITY_DICTIONARY = tuple(_ENTITY_NAMES[k] for k in sorted(_ENTITY_NAMES))
assert sorted(_ENTITY_NAMES) == list(range(len(_ENTITY_NAMES)))


def _columnar_transition_failures(ref, position, b):
    c = b.column
    entity = c("entity")
    bad = np.flatnonzero((entity < 0) | (entity >= len(_ENTITY_DICTIONARY)))
    if bad.size:
        i = int(bad[0])
        raise RowError(ref.file, position, b.first_offset + i,
                       f"TransitionFailed names entity {int(entity[i])!r}, expected "
                       f"{R.ENTITY_REPLICA} (replica) or {R.ENTITY_PARTITION} (partition)")
    return _columnar_header(ref, TRANSITION_FAILED, position, b) + [
        DictColumn(_ENTITY_DICTIONARY, entity.astype(np.int32)), c("topic"), c("partition"), c("replica"),
        c("from_state"), c("to_state"), _NONE, _NONE, _NONE, _NONE, _NONE, c("error")]


def _columnar_leader_and_isr_updates(ref, position, b):
    c = b.column
    return _columnar_header(ref, LEADER_AND_ISR_UPDATED, position, b) + [
        _NONE, c("topic"), c("partition"), c("replica"), _NONE, _NONE, c("leader"), c("leader_epoch"), c("isr"),
        _NONE, _NONE, _NONE]


def _columnar_topic_level(kind: str, has_topic: bool = True):
    def build(ref, position, b):
        topic = b.column("topic") if has_topic else _NONE
        return _columnar_header(ref, kind, position, b) + [
            _NONE, topic, _MINUS_ONE, _MINUS_ONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE, _NONE]
    return build


_COLUMNAR_BUILDERS = {
    R.ReplicaTransition.KIND: _columnar_replica_transitions,
    R.PartitionTransition.KIND: _columnar_partition_transitions,
    R.TransitionFailed.KIND: _columnar_transition_failures,
    R.LeaderAndIsrUpdated.KIND: _columnar_leader_and_isr_updates,
    R.ControllerElected.KIND: _columnar_topic_level(CONTROLLER_ELECTED, has_topic=False),
    R.TopicDeletionRequested.KIND: _columnar_topic_level(TOPIC_DELETION_REQUESTED),
    R.TopicDeletionCompleted.KIND: _columnar_topic_level(TOPIC_DELETION_COMPLETED),
}
# TopicCreated and PartitionsAdded have no columnar form (nested assignments).
assert set(_COLUMNAR_BUILDERS) == {k for k in MAPPED_KINDS if k in COLUMN_KINDS}


# Mapped kinds whose records of row batches the vectorised decoder reads (audit.row_columns); a row batch
# holding one of the others (nested assignments) is decoded into tuples.
_VECTOR_KINDS = frozenset(_COLUMNAR_BUILDERS)
_NO_VECTOR_KINDS = frozenset(MAPPED_KINDS) - _VECTOR_KINDS

_BUILDERS = {
    R.ReplicaTransition.KIND: _replica_transitions,
    R.PartitionTransition.KIND: _partition_transitions,
    R.TransitionFailed.KIND: _transition_failures,
    R.LeaderAndIsrUpdated.KIND: _leader_and_isr_updates,
    R.ControllerElected.KIND: _topic_level(CONTROLLER_ELECTED, has_topic=False),
    R.TopicCreated.KIND: _topics_created,
    R.PartitionsAdded.KIND: _topics_created,
    R.TopicDeletionRequested.KIND: _topic_level(TOPIC_DELETION_REQUESTED),
    R.TopicDeletionCompleted.KIND: _topic_level(TOPIC_DELETION_COMPLETED),
}
assert set(_BUILDERS) == set(MAPPED_KINDS)


def chunk_columns(chunk: Chunk) -> list[tuple[int, list]]:
    """Per record kind in the chunk, and per columnar batch (slice): (row count, the 20 AuditRow
    columns). A column is a :class:`Const`, a sequence of values (``isr``/``replicas`` values may
    be tuples or lists) or, from a columnar batch, a numpy array, an ``events.columns``
    DictColumn (strings) or ListColumn (int lists), or a :class:`Masked` one of these
    (:func:`column_values` turns any of them into Python values)."""
    out = []
    for kind, (positions, recs) in chunk.groups.items():
        if kind == R.TopicCreated.KIND and chunk.raw:
            columns = _topics_created(chunk.ref, positions, recs, chunk.raw)
        else:
            columns = _BUILDERS[kind](chunk.ref, positions, recs)
        out.append((len(columns[2]), columns))
    for position, batch in chunk.columnar:
        out.append((batch.n, _COLUMNAR_BUILDERS[batch.kind](chunk.ref, position, batch)))
    for group in chunk.row_groups:
        out.append((group.n, _COLUMNAR_BUILDERS[group.kind](chunk.ref, None, group)))
    return out


_SEQUENCES = (list, tuple)


def _rows_of(n: int, columns: list) -> list[AuditRow]:
    seqs = [repeat(c.value, n) if type(c) is Const else c if type(c) in _SEQUENCES else column_values(c)
            for c in columns]
    for i in _LIST_COLUMNS:
        if type(columns[i]) in _SEQUENCES:
            seqs[i] = [v if v is None or type(v) is list else list(v) for v in columns[i]]
    return list(map(_new_row, zip(*seqs)))


def chunk_rows(chunk: Chunk) -> list[AuditRow]:
    """The chunk's rows as AuditRow tuples, in log order."""
    parts = chunk_columns(chunk)
    if len(parts) == 1:
        return _rows_of(*parts[0])
    rows = []
    for n, columns in parts:
        rows.extend(_rows_of(n, columns))
    rows.sort(key=_seq_of)  # stable: the rows of one record keep their order
    return rows


# ---------------------------------------------------------------------------------------------
# The in-process reader
# ---------------------------------------------------------------------------------------------

def segment_rows(ref: SegmentRef, stats: ReadStats | None = None,
                 chunk_records: int = LOCAL_CHUNK_RECORDS) -> Iterator[AuditRow]:
    """AuditRows of one segment, in log order."""
    for rows in segment_row_lists(ref, stats, chunk_records):
        yield from rows


def segment_row_lists(ref: SegmentRef, stats: ReadStats | None = None,
                      chunk_records: int = LOCAL_CHUNK_RECORDS) -> Iterator[list[AuditRow]]:
    """AuditRows of one segment, in log order, a list per chunk (for bulk consumers)."""
    chunks = SegmentChunks(ref, chunk_records, stats)
    while True:
        with gc_paused():
            chunk = next(chunks, None)
            if chunk is None:
                return
            rows = chunk_rows(chunk)
            del chunk
        if stats is not None:
            stats.rows += len(rows)
        if rows:
            yield rows


def iter_log_rows(log_dir: str | os.PathLike, stats: ReadStats | None = None) -> Iterator[AuditRow]:
    """AuditRows of one log directory, in log order (see the module docstring for the mapping).

    Raises LogNotFoundError if ``log_dir`` is not a directory, LogCorruptError / LogRecordError
    at the first damage, after yielding the rows before it.
    """
    run_id = os.fspath(log_dir)
    if not os.path.isdir(run_id):
        problem = "is not a directory" if os.path.exists(run_id) else "does not exist"
        raise LogNotFoundError(f"event log directory {run_id} {problem}")
    refs = _log_segments(os.path.normpath(run_id))
    if stats is not None:
        stats.logs += 1
    for ref in refs:
        yield from segment_rows(ref, stats)


def read_log_rows(paths: str | os.PathLike | Iterable[str | os.PathLike],
                  stats: ReadStats | None = None) -> Iterator[AuditRow]:
    """AuditRows of every log directory named by ``paths`` (directories and globs of
    directories, see :func:`resolve_log_dirs`), one log after the other, each in log order.
    The directories are resolved before the first row is produced."""
    for run_id in resolve_log_dirs(paths):
        yield from iter_log_rows(run_id, stats)


# ---------------------------------------------------------------------------------------------
# Going back to a record
# ---------------------------------------------------------------------------------------------

def record_at(path: str | os.PathLike, position: int, seq: int | None = None):
    """The record (an ``events.records`` object) whose msgpack array starts at byte ``position``
    of segment ``path``: the ``source`` and ``position`` of an AuditRow.

    The records of a columnar batch share the position where the batch's element starts; there
    ``seq`` (the row's ``seq``, the record's offset) picks one (default: the batch's first).
    Walks the segment's batch headers to the batch holding ``position``, verifies its
    checksums and decodes it. Raises LogCorruptError on damage on the way, and LogError if no
    record starts at ``position`` (or ``seq`` is not in the columnar batch there).
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = SEGMENT_HEADER_SIZE
        while pos + BATCH_HEADER_SIZE <= size:
            f.seek(pos)
            header = f.read(BATCH_HEADER_SIZE)
            base, count, length, first_ts, last_ts, payload_crc, header_crc = BATCH_HEADER.unpack(header)
            if crc32c(header[:-4]) != header_crc:
                raise LogCorruptError(path, pos, "batch header checksum mismatch")
            end = pos + BATCH_HEADER_SIZE + length
            if pos < position < end:
                payload = f.read(length)
                if len(payload) != length or crc32c(payload) != payload_crc:
                    raise LogCorruptError(path, pos, "batch payload checksum mismatch or short payload")
                batch = Batch(path, pos, base, count, first_ts, last_ts, payload)
                positions, _ = _decode_batch(batch)
                try:
                    element = batch.elements()[positions.index(position)]
                except ValueError:
                    break
                if type(element) is not ColumnBatch:
                    return element
                i = 0 if seq is None else seq - element.first_offset
                if 0 <= i < element.n:
                    return element.slice(i, i + 1).records()[0]
                raise LogError(f"event log segment {path}: the columnar batch at byte {position} holds offsets "
                               f"{element.first_offset}..{element.end_offset - 1}, not {seq}")
            pos = end
    raise LogError(f"event log segment {path}: no record starts at byte {position}")

