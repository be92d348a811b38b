"""The append-only segmented event log: LogWriter appends record batches, LogReader streams them back.

A log is a directory of segment files (format, recovery rules and fsync guarantees:
docs/event-log-format.md; one segment's layout: :mod:`events.segment`). This module lists
and chains segments, rolls them, recovers torn tails on open-for-write and applies the
fsync policy.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

from events.codec import encode_batch, encode_batch_pieces
from events.segment import (
    BATCH_HEADER_SIZE, SEGMENT_HEADER_SIZE, SEGMENT_SUFFIX, Batch, LogCorruptError, LogError,
    LogNotFoundError, LogRecordError, TornTail, crc32c_extend, encode_batch_header, encode_batch_header_for,
    encode_segment_header, parse_segment_name, scan_segment, segment_name,
)

__all__ = [
    "Batch", "FsyncPolicy", "LogCorruptError", "LogError", "LogNotFoundError", "LogReader",
    "LogRecordError", "LogWriteError", "LogWriter", "Recovery", "Segment", "TornTail", "read_log",
]

_offset_of = itemgetter(2)
_MAX_OFFSET = 2**64 - 1


class LogWriteError(LogError, OSError):
    """Writing the log failed (disk full, I/O error, no permission): the OS's reason, with the file.
    Also an OSError, as the failure it reports."""


class Segment(NamedTuple):
    path: str
    base_offset: int


def list_segments(directory: str) -> list[Segment]:
    """The directory's segment files sorted by base offset; other files are ignored."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        raise _not_found(directory) from None
    segments = []
    for name in names:
        if not name.endswith(SEGMENT_SUFFIX):
            continue
        base = parse_segment_name(name)
        path = os.path.join(directory, name)
        if base is None:
            raise LogError(f"unexpected file {path} in event log directory: segment files are "
                           f"named <20-digit base offset>{SEGMENT_SUFFIX}")
        segments.append(Segment(path, base))
    segments.sort(key=itemgetter(1))
    return segments


def _not_found(directory: str) -> LogNotFoundError:
    problem = "is not a directory" if os.path.exists(directory) else "does not exist"
    return LogNotFoundError(f"event log directory {directory} {problem}")


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

class LogReader:
    """Streams a log's batches and records. Never modifies a file.

    Every batch read is checksum-verified. A torn tail in the last segment ends the log
    cleanly (see :attr:`torn_tail`); any other damage raises LogCorruptError.
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = os.fspath(directory)
        if not os.path.isdir(self.directory):
            raise _not_found(self.directory)
        self._end_offset: int | None = None
        self._torn_tail: TornTail | None = None

    def segments(self) -> list[Segment]:
        return list_segments(self.directory)

    def iter_batches(self, start_offset: int = 0) -> Iterator[Batch]:
        """Yield verified batches holding offsets >= ``start_offset``, in order.

        Whole segments before ``start_offset`` are skipped by file name; the batches of the
        remaining segments are all read and verified.
        """
        segments = self.segments()
        first = 0
        for i, (_, base) in enumerate(segments):
            if base <= start_offset:
                first = i
        end_offset, torn = (segments[first].base_offset if segments else 0), None
        for i in range(first, len(segments)):
            path, base = segments[i]
            if i > first and base != end_offset:
                raise LogCorruptError(path, 0, f"segment base offset is {base}, but the previous segment "
                                               f"ends at offset {end_offset} (offsets must be consecutive)")
            end = yield from scan_segment(path, base, is_last=i == len(segments) - 1,
                                          skip_before=start_offset)
            end_offset, torn = end.end_offset, end.torn
        self._end_offset, self._torn_tail = end_offset, torn

    def records(self, start_offset: int = 0) -> Iterator:
        """Yield decoded record objects with offsets >= ``start_offset``."""
        return chain.from_iterable(self._record_lists(start_offset, Batch.records))

    def raw_records(self, start_offset: int = 0) -> Iterator[tuple]:
        """Yield records as plain tuples (the bulk fast path) with offsets >= ``start_offset``."""
        return chain.from_iterable(self._record_lists(start_offset, Batch.raw_records))

    def _record_lists(self, start_offset: int, decode) -> Iterator:
        # Whole batches are handed to chain.from_iterable: no per-record Python code here.
        for batch in self.iter_batches(start_offset):
            records = decode(batch)
            if batch.base_offset < start_offset:
                records = records[start_offset - batch.base_offset:]
            yield records

    def column_batches(self, start_offset: int = 0) -> Iterator:
        """Yield the log's elements with offsets >= ``start_offset`` as they are stored: a
        :class:`events.columns.ColumnBatch` for each columnar batch (not expanded; one that
        straddles ``start_offset`` is sliced to start there) and a record object for each row
        record, in offset order."""
        for batch in self.iter_batches(start_offset):
            elements = batch.elements()
            if batch.base_offset < start_offset:
                elements = _elements_from(elements, start_offset)
            yield from elements

    def iter_arrow(self, kind, start_offset: int = 0) -> Iterator:
        """Yield ``pyarrow.RecordBatch`` objects of the records of ``kind`` (a kind code or a record
        class with a columnar form) with offsets >= ``start_offset``, in offset order, in
        :func:`events.columns.arrow_schema`: one per columnar batch of that kind (built from its
        arrays, no Python object per record) and one per run of row records of that kind in a
        stored batch."""
        from events.columns import ColumnBatch, arrow_schema, records_to_arrow
        from events.records import KINDS
        cls = KINDS[kind] if isinstance(kind, int) else kind
        arrow_schema(cls)  # TypeError now for a kind with no columnar form
        for batch in self.iter_batches(start_offset):
            elements = batch.elements()
            if batch.base_offset < start_offset:
                elements = _elements_from(elements, start_offset)
            rows: list = []
            for e in elements:
                if type(e) is ColumnBatch:
                    if e.cls is cls:
                        if rows:
                            yield records_to_arrow(cls, rows)
                            rows = []
                        yield e.to_arrow()
                elif type(e) is cls:
                    rows.append(e)
            if rows:
                yield records_to_arrow(cls, rows)

    def verify(self) -> int:
        """Read and checksum-verify the whole log without decoding records; return its end offset."""
        for _ in self.iter_batches():
            pass
        return self._end_offset

    @property
    def end_offset(self) -> int:
        """Offset after the last complete record, from the last iteration that reached the end
        of the log (runs :meth:`verify` if none has)."""
        if self._end_offset is None:
            self.verify()
        return self._end_offset

    @property
    def torn_tail(self) -> TornTail | None:
        """The incomplete tail found by the last iteration that reached the end (runs
        :meth:`verify` if none has), or None."""
        if self._end_offset is None:
            self.verify()
        return self._torn_tail


def _elements_from(elements: list, start_offset: int) -> list:
    """The elements at or after ``start_offset`` (a columnar batch that straddles it sliced)."""
    out = []
    for e in elements:
        if isinstance(e, tuple):
            if e[2] >= start_offset:
                out.append(e)
        elif e.end_offset > start_offset:
            out.append(e.slice(start_offset - e.first_offset) if e.first_offset < start_offset else e)
    return out


def read_log(directory: str | os.PathLike) -> list:
    """All records of a log, decoded."""
    return list(LogReader(directory).records())


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

_PER_BATCH, _INTERVAL, _NONE = "per_batch", "interval", "none"


@dataclass(frozen=True)
class FsyncPolicy:
    """When LogWriter calls fsync. Build with :meth:`per_batch`, :meth:`interval` or :meth:`none`."""
    mode: str
    interval_ms: float = 0

    def __post_init__(self):
        if self.mode not in (_PER_BATCH, _INTERVAL, _NONE):
            raise ValueError(f"unknown fsync mode {self.mode!r}")
        if self.interval_ms < 0:
            raise ValueError(f"fsync interval must be >= 0 ms, got {self.interval_ms}")

    @classmethod
    def per_batch(cls) -> FsyncPolicy:
        """fsync after every batch write: a batch is durable when the call that wrote it returns."""
        return cls(_PER_BATCH)

    @classmethod
    def interval(cls, ms: float) -> FsyncPolicy:
        """fsync after a batch write (or flush) once ``ms`` milliseconds have passed since the last fsync."""
        return cls(_INTERVAL, ms)

    @classmethod
    def none(cls) -> FsyncPolicy:
        """Never fsync (except on an explicit :meth:`LogWriter.sync`): durability is up to the OS."""
        return cls(_NONE)


@dataclass(frozen=True)
class Recovery:
    """What opening a log for writing repaired: the torn tail of its last segment."""
    path: str
    truncated_at: int       # the segment's new length before any header rewrite (end of its last complete batch)
    bytes_dropped: int
    header_rewritten: bool  # the segment header itself was torn and has been written again


class LogWriter:
    """Appends records to a log directory in checksummed batches; one writer per log at a time.

    Opening verifies every segment (raising LogCorruptError on damage, without touching any
    file) and truncates a torn tail of the last segment, reported in :attr:`recovery`.
    Records must carry consecutive offsets starting at :attr:`next_offset`; they are buffered
    and written ``batch_records`` at a time, one ``os.write`` per batch. A columnar batch
    (:meth:`append_columns`) is buffered with them as one element and never split: the batch
    it completes may hold more than ``batch_records`` records. If writing a batch fails, the
    writer refuses further use: reopen the log, which recovers the tail.
    """

    def __init__(self, directory: str | os.PathLike, *, fsync: FsyncPolicy = FsyncPolicy.per_batch(),
                 segment_bytes: int = 64 * 2**20, batch_records: int = 1000, start_offset: int = 0,
                 clock: Callable[[], float] = time.monotonic):
        """``start_offset`` is the first offset of a new log; it is ignored when segments exist.
        ``clock`` (seconds) is read only by the interval fsync policy."""
        if not isinstance(fsync, FsyncPolicy):
            raise TypeError(f"fsync must be an FsyncPolicy, got {fsync!r}")
        if segment_bytes < 1:
            raise ValueError(f"segment_bytes must be positive, got {segment_bytes}")
        if batch_records < 1:
            raise ValueError(f"batch_records must be positive, got {batch_records}")
        if not 0 <= start_offset <= _MAX_OFFSET:
            raise ValueError(f"start_offset must be in 0..2**64-1, got {start_offset}")
        self.directory = os.fspath(directory)
        self.fsync_policy = fsync
        self.recovery: Recovery | None = None
        self._syncing = fsync.mode != _NONE
        self._interval_s = fsync.interval_ms / 1000 if fsync.mode == _INTERVAL else None
        self._clock = clock
        self._segment_bytes = segment_bytes
        self._batch_records = batch_records
        self._buffer: list = []
        # len(self._buffer) >= self._limit <=> the buffer holds >= batch_records records (a
        # buffered columnar batch of n records lowers the limit by n - 1).
        self._limit = batch_records
        self._columns_buffered = 0
        self._fd: int | None = None
        self._dir_fd: int | None = None
        self._segment_path = ""
        self._position = 0        # size of the current segment
        self._written_end = 0     # offset after the last record written to disk
        self._next = 0            # offset the next appended record must carry
        self._dirty = False       # bytes written to the current segment since its last fsync
        # Policy none only: what sync() must fsync besides the current segment.
        self._unsynced_segments: list[str] = []
        self._directory_unsynced = False
        self._last_sync = 0.0
        self._usable = False
        self._closed = False
        try:
            self._open(start_offset)
        except BaseException:
            self._release()
            raise
        self._usable = True

    @classmethod
    def open(cls, directory: str | os.PathLike, **options) -> LogWriter:
        """Open (creating or recovering) the log in ``directory``; options as for the constructor."""
        return cls(directory, **options)

    @property
    def next_offset(self) -> int:
        """The offset the next appended record must carry."""
        return self._next

    @property
    def segment_path(self) -> str:
        """The segment currently written to."""
        return self._segment_path

    # -- appending ---------------------------------------------------------------------------

    def append(self, record: tuple) -> None:
        """Buffer one record; a full buffer is written as one batch."""
        if not self._usable:
            self._check_usable()
        if record[2] != self._next:
            raise ValueError(f"record has offset {record[2]!r}, expected {self._next} "
                             "(records must carry consecutive offsets starting at next_offset)")
        self._next += 1
        buffer = self._buffer
        buffer.append(record)
        if len(buffer) >= self._limit:
            self._write_buffer()

    def append_columns(self, batch) -> None:
        """Buffer a :class:`events.columns.ColumnBatch` as one element of the next written batch.

        Its ``first_offset`` must be :attr:`next_offset` (ValueError otherwise, and nothing is
        appended); afterwards :attr:`next_offset` is past its records. It shares a written batch
        with the row records buffered before and after it, and is written (with them) once the
        buffer holds ``batch_records`` records or more. A batch of no records is ignored.
        """
        if not self._usable:
            self._check_usable()
        from events.columns import ColumnBatch
        if type(batch) is not ColumnBatch:
            raise TypeError(f"append_columns() takes a ColumnBatch, got {type(batch).__name__}")
        if batch.first_offset != self._next:
            raise ValueError(f"columnar batch has first offset {batch.first_offset!r}, expected {self._next} "
                             "(records must carry consecutive offsets starting at next_offset)")
        n = batch.n
        if not n:
            return
        self._next += n
        self._buffer.append(batch)
        self._columns_buffered += 1
        self._limit -= n - 1
        if len(self._buffer) >= self._limit:
            self._write_buffer()

    def append_many(self, records: Iterable[tuple]) -> None:
        """Buffer many records, writing full batches; all or none are accepted (ValueError)."""
        self._check_usable()
        records = records if isinstance(records, list) else list(records)
        n = len(records)
        if not n:
            return
        start = self._next
        try:
            ok = list(map(_offset_of, records)) == list(range(start, start + n))
        except (TypeError, IndexError, KeyError):
            ok = False
        if not ok:
            self._raise_bad_offsets(records, start)
        self._next = start + n
        size = self._batch_records
        i = 0
        if self._buffer:
            buffer = self._buffer
            i = min(n, self._limit - len(buffer))
            buffer.extend(records[:i])
            if len(buffer) < self._limit:
                return
            self._write_buffer()
        while n - i >= size:
            self._write_batch(records[i:i + size])
            i += size
        self._buffer = records[i:]

    @staticmethod
    def _raise_bad_offsets(records: list, start: int) -> None:
        for i, record in enumerate(records):
            try:
                found = record[2]
            except (TypeError, IndexError, KeyError):
                raise TypeError(f"record #{i} is not a record tuple: {record!r:.200}") from None
            if found != start + i:
                raise ValueError(f"record #{i} has offset {found!r}, expected {start + i} (records must carry "
                                 f"consecutive offsets starting at next_offset={start}); nothing was appended")

    def flush(self) -> None:
        """Write the buffered records as one batch (if any) and apply the fsync policy."""
        self._check_usable()
        if self._buffer:
            self._write_buffer()
        elif self._dirty and self._interval_s is not None \
                and self._clock() - self._last_sync >= self._interval_s:
            self._fsync()

    def sync(self) -> None:
        """Flush, then fsync everything not yet synced (segments and directory), whatever the policy."""
        self.flush()
        while self._unsynced_segments:
            _fsync_path(self._unsynced_segments[0])
            del self._unsynced_segments[0]
        if self._directory_unsynced:
            os.fsync(self._dir_fd)
            self._directory_unsynced = False
        if self._dirty:
            self._fsync()

    def close(self) -> None:
        """Flush, fsync (unless the policy is none) and release the log. Idempotent."""
        if self._closed:
            return
        try:
            if self._usable:
                self.flush()
                if self._dirty and self._syncing:
                    self._fsync()
        finally:
            self._closed = True
            self._usable = False
            self._release()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise LogError(f"event log writer for {self.directory} is closed")
        if not self._usable:
            raise LogError(f"event log writer for {self.directory} failed writing a batch and cannot "
                           "continue; reopen the log to recover")

    def _open(self, start_offset: int) -> None:
        directory = self.directory
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise LogError(f"event log directory {directory} is not a directory")
        for _ in range(5):
            created = not os.path.exists(directory)
            try:
                os.makedirs(directory, exist_ok=True)
                self._dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as e:
                raise LogWriteError(f"cannot open event log directory {directory}: {e.strerror}") from None
            try:
                fcntl.flock(self._dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LogError(f"event log {directory} is already open for writing") from None
            # The directory may have been replaced (kcontroller new-cluster --overwrite renames a new
            # log into place under this lock) between open and flock: then lock the one there now.
            try:
                st, held = os.stat(directory), os.fstat(self._dir_fd)
            except FileNotFoundError:
                st = held = None
            if st is not None and (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                break
            os.close(self._dir_fd)
            self._dir_fd = None
        else:
            raise LogError(f"event log {directory} kept being replaced while it was opened for writing")
        if created and self._syncing:
            _fsync_path(os.path.dirname(os.path.abspath(directory)))
        reader = LogReader(directory)
        segments = reader.segments()
        if not segments:
            self._create_segment(start_offset)
            self._written_end = self._next = start_offset
            return
        end_offset = reader.verify()
        torn = reader.torn_tail
        path, base = segments[-1]
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._segment_path = path
            if torn is not None:
                self._repair(torn, base)
            self._position = os.fstat(self._fd).st_size
        except OSError as e:
            raise LogWriteError(f"cannot open event log segment {path} for writing: {e.strerror}") from None
        self._written_end = self._next = end_offset
        if self._interval_s is not None:
            self._last_sync = self._clock()

    def _repair(self, torn: TornTail, base: int) -> None:
        os.ftruncate(self._fd, torn.position)
        if torn.position == 0:
            _write_all(self._fd, encode_segment_header(base))
        if self._syncing:
            os.fsync(self._fd)
        else:
            self._dirty = True
        self.recovery = Recovery(torn.path, torn.position, torn.size, header_rewritten=torn.position == 0)

    def _create_segment(self, base_offset: int) -> None:
        path = os.path.join(self.directory, segment_name(base_offset))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LogWriteError(f"cannot create event log segment {path}: {e.strerror}") from None
        try:
            _write_all(fd, encode_segment_header(base_offset))
            if self._syncing:
                os.fsync(fd)
                os.fsync(self._dir_fd)
        except OSError as e:
            # No segment without a header: remove it (a reader would find it torn).
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise LogWriteError(f"cannot write event log segment {path}: {e.strerror}") from None
        self._fd, self._segment_path, self._position = fd, path, SEGMENT_HEADER_SIZE
        if self._syncing:
            self._mark_synced()
        else:
            self._dirty = True
            self._directory_unsynced = True

    def _roll(self) -> None:
        if self._dirty:
            if self._syncing:
                self._fsync()
            else:
                self._unsynced_segments.append(self._segment_path)
        os.close(self._fd)
        self._fd = None
        self._create_segment(self._written_end)

    def _write_buffer(self) -> None:
        """Write the buffered elements as one batch and empty the buffer."""
        buffer, self._buffer = self._buffer, []
        n = len(buffer) + self._batch_records - self._limit
        self._limit = self._batch_records
        columnar, self._columns_buffered = self._columns_buffered, 0
        self._write_batch(buffer, n, columnar > 0)

    def _write_batch(self, records: list, n: int | None = None, columnar: bool = False) -> None:
        """Write elements as a batch: records and (``columnar``) columnar batches, ``n`` records in all
        (default one per element). A payload with columnar batches is written in pieces (os.writev):
        their column buffers are checksummed and written without being copied into one payload."""
        try:
            if n is None:
                n = len(records)
            first, last = records[0], records[-1]
            timestamps = (first[5] if isinstance(first, tuple) else first.timestamp_ms,
                          last[5] if isinstance(last, tuple) else last.timestamp_ms)
            if columnar:
                pieces = encode_batch_pieces(records)
                crc = 0
                for piece in pieces:
                    crc = crc32c_extend(crc, piece)
                length = sum(map(len, pieces))
                pieces.insert(0, encode_batch_header_for(self._written_end, n, length, crc, *timestamps))
                size = BATCH_HEADER_SIZE + length
            else:
                payload = encode_batch(records)
                data = encode_batch_header(self._written_end, n, payload, *timestamps) + payload
                size = len(data)
            if self._position > SEGMENT_HEADER_SIZE and self._position + size > self._segment_bytes:
                self._roll()
            try:
                if columnar:
                    _write_pieces(self._fd, pieces, size)
                else:
                    _write_all(self._fd, data)
            except OSError as e:
                # A partial batch stays as a torn tail: readers end before it, reopening cuts it.
                raise LogWriteError(f"cannot write event log segment {self._segment_path}: {e.strerror}; "
                                    f"the log ends at offset {self._written_end}") from None
            self._position += size
            self._written_end += n
            self._dirty = True
            if self._syncing and (self._interval_s is None
                                  or self._clock() - self._last_sync >= self._interval_s):
                self._fsync()
        except BaseException:
            self._usable = False
            raise

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)
        except BaseException as exc:
            # After a failed fsync the page cache can no longer be trusted (it may have dropped
            # the dirty pages): stop writing rather than pretend later fsyncs cover them.
            self._usable = False
            if isinstance(exc, OSError):
                raise LogWriteError(f"cannot fsync event log segment {self._segment_path}: {exc.strerror}") from None
            raise
        self._mark_synced()

    def _mark_synced(self) -> None:
        self._dirty = False
        if self._interval_s is not None:
            self._last_sync = self._clock()

    def _release(self) -> None:
        for name in ("_fd", "_dir_fd"):  # closing the directory fd releases the flock
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written != len(data):  # a short write: rare on regular files (e.g. disk nearly full)
        view = memoryview(data)
        while written < len(data):
            written += os.write(fd, view[written:])


_MAX_PIECES = 512   # well below IOV_MAX (1024 on Linux)


def _write_pieces(fd: int, pieces: list, size: int) -> None:
    """Write the pieces back to back with as few system calls as possible (one os.writev, usually)."""
    if len(pieces) > _MAX_PIECES:
        pieces = [b"".join(pieces)]
    written = os.writev(fd, pieces) if len(pieces) > 1 else os.write(fd, pieces[0])
    if written != size:   # a short write: write the rest from one buffer
        _write_all(fd, memoryview(b"".join(pieces))[written:])


def _fsync_path(path: str) -> None:
    """fsync a file or directory by path (Linux syncs the inode's data, whichever descriptor is used)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
