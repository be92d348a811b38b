"""One segment file of the event log: byte layout, checksums, errors and a streaming batch scanner.

The layout is specified in docs/event-log-format.md. This module knows a single segment at a
time; :mod:`events.log` strings segments together into a log and does the writing.
"""
from __future__ import annotations

import os
import re
import struct
from operator import itemgetter
from typing import Iterator, NamedTuple

import google_crc32c

from events import codec

MAGIC = b"KCLG"
FORMAT_VERSION = 1
SEGMENT_SUFFIX = ".kclog"

# magic, format version, flags, base offset | header crc
SEGMENT_HEADER = struct.Struct(">4sHHQI")
SEGMENT_HEADER_SIZE = SEGMENT_HEADER.size  # 20
_SEGMENT_PREFIX = struct.Struct(">4sHHQ")

# base offset, record count, payload length, first/last timestamp, payload crc | header crc
BATCH_HEADER = struct.Struct(">QIIqqII")
BATCH_HEADER_SIZE = BATCH_HEADER.size  # 40
_BATCH_PREFIX = struct.Struct(">QIIqqI")
_BATCH_CRC_SPAN = _BATCH_PREFIX.size  # 36
_U32 = struct.Struct(">I")

_SEGMENT_NAME = re.compile(r"([0-9]{20})\.kclog", re.ASCII)
_READ_BUFFER = 1 << 18

crc32c = google_crc32c.value
crc32c_extend = google_crc32c.extend


class LogError(Exception):
    """Base class of all event-log errors."""


class LogNotFoundError(LogError):
    """The log directory does not exist (or is not a directory)."""


class LogCorruptError(LogError):
    """A segment's bytes break the format. Never repaired automatically: an operator decides."""

    def __init__(self, path: str, position: int, reason: str):
        super().__init__(f"event log segment {path}, byte {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


class LogRecordError(LogError):
    """A checksum-valid batch whose payload does not decode, or whose records carry wrong offsets.

    ``position`` is the batch's byte position in ``path``; ``offset`` is the offending record's
    offset, or None when the payload as a whole is unreadable.
    """

    def __init__(self, path: str, position: int, offset: int | None, reason: str):
        where = f"record offset {offset}" if offset is not None else "payload"
        super().__init__(f"event log segment {path}, batch at byte {position}, {where}: {reason}")
        self.path = path
        self.position = position
        self.offset = offset
        self.reason = reason


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset a segment file name encodes, or None if ``name`` is not a segment name."""
    m = _SEGMENT_NAME.fullmatch(name)
    return int(m.group(1)) if m else None


def encode_segment_header(base_offset: int) -> bytes:
    head = _SEGMENT_PREFIX.pack(MAGIC, FORMAT_VERSION, 0, base_offset)
    return head + _U32.pack(crc32c(head))


def encode_batch_header(base_offset: int, record_count: int, payload: bytes,
                        first_timestamp_ms: int, last_timestamp_ms: int) -> bytes:
    return encode_batch_header_for(base_offset, record_count, len(payload), crc32c(payload),
                                   first_timestamp_ms, last_timestamp_ms)


def encode_batch_header_for(base_offset: int, record_count: int, payload_length: int, payload_crc: int,
                            first_timestamp_ms: int, last_timestamp_ms: int) -> bytes:
    """A batch header from the payload's length and CRC32C (for a payload written in pieces)."""
    head = _BATCH_PREFIX.pack(base_offset, record_count, payload_length,
                              first_timestamp_ms, last_timestamp_ms, payload_crc)
    return head + _U32.pack(crc32c(head))


class TornTail(NamedTuple):
    """An incomplete tail of the last segment (a crash mid-write): the log's data ends at ``position``."""
    path: str
    position: int   # 0 when the segment header itself is incomplete
    size: int       # bytes from ``position`` to the end of the file

    def __str__(self) -> str:
        what = "segment header" if self.position == 0 else "batch"
        return (f"event log segment {self.path} ends in an incomplete {what} (a write cut short by a crash): "
                f"{self.size} bytes from byte {self.position} ignored")


class SegmentEnd(NamedTuple):
    """Where a scanned segment's complete data ends."""
    position: int
    end_offset: int
    torn: TornTail | None


_offset_of = itemgetter(2)


class Batch(NamedTuple):
    """One checksum-verified batch as read from a segment; ``payload`` is still encoded.

    ``record_count`` counts records, those of columnar batches included (a payload element may
    hold many records: see :mod:`events.codec`)."""
    path: str
    position: int
    base_offset: int
    record_count: int
    first_timestamp_ms: int
    last_timestamp_ms: int
    payload: bytes

    @property
    def end_offset(self) -> int:
        return self.base_offset + self.record_count

    def records(self) -> list:
        """The decoded record objects, checked against the header's base offset and count."""
        try:
            records = codec.decode_batch(self.payload)
        except codec.RecordDecodeError as exc:
            raise self._record_error(exc) from exc
        self._check_offsets(records)
        return records

    def raw_records(self) -> tuple:
        """The records as plain tuples (no schema validation), checked like :meth:`records`."""
        try:
            records = codec.decode_raw(self.payload)
        except codec.RecordDecodeError as exc:
            raise self._record_error(exc) from exc
        self._check_offsets(records)
        return records

    def elements(self) -> list:
        """The payload's elements without expanding columnar batches: record objects and
        :class:`events.columns.ColumnBatch` objects, checked like :meth:`records` (a columnar
        batch's first offset continues the records before it; all add up to the header's count)."""
        try:
            elements = codec.decode_elements(self.payload)
        except codec.RecordDecodeError as exc:
            raise self._record_error(exc) from exc
        base, n = self.base_offset, self.record_count
        counts = [1 if isinstance(e, tuple) else len(e) for e in elements]
        if sum(counts) != n:
            raise LogRecordError(self.path, self.position, None,
                                 f"payload holds {sum(counts)} records, batch header says {n}")
        expected = base
        for e, count in zip(elements, counts):
            found = e[2] if isinstance(e, tuple) else e.first_offset
            if found != expected:
                what = "record" if isinstance(e, tuple) else f"columnar batch of {count} records starting at record"
                raise LogRecordError(self.path, self.position, expected,
                                     f"{what} #{expected - base} of the batch has offset {found}, expected {expected}")
            expected += count
        return elements

    def _record_error(self, exc: codec.RecordDecodeError) -> LogRecordError:
        offset = None if exc.index is None else self.base_offset + exc.index
        return LogRecordError(self.path, self.position, offset, str(exc))

    def _check_offsets(self, records) -> None:
        base, n = self.base_offset, self.record_count
        if len(records) != n:
            raise LogRecordError(self.path, self.position, None,
                                 f"payload holds {len(records)} records, batch header says {n}")
        try:
            if list(map(_offset_of, records)) == list(range(base, base + n)):
                return
        except (TypeError, IndexError, KeyError):
            pass  # a raw record that is not an array: found below
        for i, record in enumerate(records):
            try:
                found = record[2]
            except (TypeError, IndexError, KeyError):
                found = "none (not a record array)"
            if found != base + i:
                raise LogRecordError(self.path, self.position, base + i,
                                     f"record #{i} of the batch has offset {found}, expected {base + i}")


def scan_segment(path: str, base_offset: int, *, is_last: bool,
                 skip_before: int = 0) -> Iterator[Batch]:
    """Yield the segment's batches in order, checksum-verifying every one; return a SegmentEnd.

    Batches ending at or before ``skip_before`` are verified but not yielded. A torn tail is
    tolerated (and reported in the returned SegmentEnd) only when ``is_last``; everything else
    that breaks the format raises LogCorruptError. Reads stream through one buffered file.
    """
    with open(path, "rb", buffering=_READ_BUFFER) as f:
        size = os.fstat(f.fileno()).st_size
        torn = _read_segment_header(f, path, base_offset, size, is_last)
        if torn is not None:
            return SegmentEnd(0, base_offset, torn)
        unpack = BATCH_HEADER.unpack
        pos = SEGMENT_HEADER_SIZE
        offset = base_offset
        while pos < size:
            if size - pos < BATCH_HEADER_SIZE:
                if is_last:
                    return SegmentEnd(pos, offset, TornTail(path, pos, size - pos))
                raise LogCorruptError(path, pos, f"segment ends {size - pos} bytes into a {BATCH_HEADER_SIZE}-byte "
                                                 "batch header; only the last segment may end in an incomplete batch")
            header = _read_exactly(f, BATCH_HEADER_SIZE, path, pos)
            batch_base, count, length, first_ts, last_ts, payload_crc, header_crc = unpack(header)
            computed = crc32c(header[:_BATCH_CRC_SPAN])
            if computed != header_crc:
                if is_last and _rest_is_zero(f, header, size - pos - BATCH_HEADER_SIZE):
                    return SegmentEnd(pos, offset, TornTail(path, pos, size - pos))
                raise LogCorruptError(path, pos, f"batch header checksum mismatch "
                                                 f"(stored 0x{header_crc:08x}, computed 0x{computed:08x})")
            if batch_base != offset:
                raise LogCorruptError(path, pos, f"batch base offset is {batch_base}, expected {offset} "
                                                 "(offsets must be consecutive)")
            if count == 0:
                raise LogCorruptError(path, pos, "batch header says 0 records, expected at least 1")
            end = pos + BATCH_HEADER_SIZE + length
            if end > size:
                if is_last:
                    return SegmentEnd(pos, offset, TornTail(path, pos, size - pos))
                raise LogCorruptError(path, pos, f"batch of {BATCH_HEADER_SIZE}+{length} bytes runs past the end "
                                                 f"of the segment ({size} bytes); only the last segment may end "
                                                 "in an incomplete batch")
            payload = _read_exactly(f, length, path, pos)
            computed = crc32c(payload)
            if computed != payload_crc:
                raise LogCorruptError(path, pos, f"batch payload checksum mismatch "
                                                 f"(stored 0x{payload_crc:08x}, computed 0x{computed:08x})")
            offset += count
            if offset > skip_before:
                yield Batch(path, pos, batch_base, count, first_ts, last_ts, payload)
            pos = end
        return SegmentEnd(pos, offset, None)


def _read_segment_header(f, path: str, base_offset: int, size: int, is_last: bool) -> TornTail | None:
    if size < SEGMENT_HEADER_SIZE:
        if is_last:
            return TornTail(path, 0, size)
        raise LogCorruptError(path, 0, f"segment is {size} bytes, shorter than its {SEGMENT_HEADER_SIZE}-byte "
                                       "header; only the last segment may be incomplete")
    header = _read_exactly(f, SEGMENT_HEADER_SIZE, path, 0)
    magic, version, flags, stored_base, header_crc = SEGMENT_HEADER.unpack(header)
    computed = crc32c(header[:-4])
    if (magic != MAGIC or computed != header_crc) and is_last \
            and _rest_is_zero(f, header, size - SEGMENT_HEADER_SIZE):
        return TornTail(path, 0, size)
    if magic != MAGIC:
        raise LogCorruptError(path, 0, f"bad magic {magic!r}, expected {MAGIC!r}")
    if computed != header_crc:
        raise LogCorruptError(path, 0, f"segment header checksum mismatch "
                                       f"(stored 0x{header_crc:08x}, computed 0x{computed:08x})")
    if version != FORMAT_VERSION:
        raise LogCorruptError(path, 0, f"unsupported format version {version}, expected {FORMAT_VERSION}")
    if flags != 0:
        raise LogCorruptError(path, 0, f"unknown segment flags 0x{flags:04x}, expected 0")
    if stored_base != base_offset:
        raise LogCorruptError(path, 0, f"segment header base offset is {stored_base}, "
                                       f"but the file name says {base_offset}")
    return None


def _rest_is_zero(f, head: bytes, remaining: int) -> bool:
    """Whether ``head`` and the next ``remaining`` bytes of ``f`` are all zero (unwritten space)."""
    if head.count(0) != len(head):
        return False
    while remaining > 0:
        chunk = f.read(min(remaining, 1 << 20))
        if not chunk:
            break
        if chunk.count(0) != len(chunk):
            return False
        remaining -= len(chunk)
    return True


def _read_exactly(f, n: int, path: str, position: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise LogError(f"event log segment {path} shrank while being read (at byte {position})")
    return data
