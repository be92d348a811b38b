"""The msgpack codec: a batch of records <-> one msgpack array of positional arrays and columnar batches.

A batch payload is ``msgpack(array of elements)``. An element is either one record, the array
of its fields in declaration order (see :mod:`events.records`), or (schema version 2) a
columnar batch of many records of one kind: a msgpack ext of type
:data:`events.columns.EXT_COLUMNS` (see :mod:`events.columns`). Positional arrays, not maps:
they decode several times faster and are what the Spark reader turns into columns.

``decode_batch`` and ``decode_raw`` expand columnar batches into their records, so their
callers see one record per offset whatever the writer chose; ``decode_elements`` keeps them
as :class:`events.columns.ColumnBatch` objects. numpy (and :mod:`events.columns`) is imported
only when a payload holds a columnar batch.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import msgpack

from events.records import HEADER_LEN, KINDS, READABLE_VERSIONS, SCHEMA_VERSION

EXT_COLUMNS = 1  # = events.columns.EXT_COLUMNS (not imported from there: that would import numpy)


class RecordDecodeError(ValueError):
    """A payload or record that does not match the schema; ``index`` is the record's position in its batch."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


# kind -> (class, field count)
_TABLE = {code: (cls, len(cls._fields)) for code, cls in KINDS.items()}
_new = tuple.__new__


def _columns():
    from events import columns
    return columns


def _encode_element(obj):
    columns = _columns()
    if type(obj) is columns.ColumnBatch:
        return obj.encode()
    raise TypeError(f"cannot encode {type(obj).__name__} in a batch payload: expected record tuples or ColumnBatch")


def encode_batch(records: Sequence) -> bytes:
    """Encode elements — records (any tuples laid out as in events.records) and
    :class:`events.columns.ColumnBatch` objects — as one msgpack payload."""
    return msgpack.packb(records if isinstance(records, list) else list(records), use_bin_type=True,
                         default=_encode_element)


def encode_batch_pieces(elements: Sequence) -> list:
    """The bytes of ``encode_batch(elements)`` in pieces (for a vectored write): columnar batches'
    column buffers as they are, not copied into one payload."""
    columns = _columns()
    batch_type = columns.ColumnBatch
    pieces = [columns._array_header(len(elements))]
    run = 0   # start of the current run of row records
    for i, e in enumerate(elements):
        if type(e) is batch_type:
            if run < i:
                pieces.append(_strip_array_header(i - run, encode_batch(elements[run:i])))
            pieces += e.encode_pieces()
            run = i + 1
    if run < len(elements):
        pieces.append(_strip_array_header(len(elements) - run, encode_batch(elements[run:])))
    return pieces


def _strip_array_header(n: int, packed: bytes) -> bytes:
    return packed[1 if n <= 0x0F else 3 if n <= 0xFFFF else 5:]


class _BadElement:
    """What the ext hook returns for an ext that is not a valid columnar batch (reported with its index)."""
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class _ExtHook:
    """Decodes columnar batches as msgpack meets them and counts them (0: the payload has none)."""
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0

    def __call__(self, code: int, data: bytes):
        self.count += 1
        columns = _columns()
        if code != EXT_COLUMNS:
            return _BadElement(f"msgpack ext type {code} is not a columnar batch (ext type {EXT_COLUMNS})")
        try:
            return columns.ColumnBatch.decode(data)
        except columns.ColumnBatchError as exc:
            return _BadElement(str(exc))


_U16, _U32 = struct.Struct(">H"), struct.Struct(">I")


def _columnar_spans(payload: bytes) -> list | None:
    """(ext code, start, end) of each element of a payload whose elements are all msgpack exts
    (columnar batches, as a batch that holds nothing else has), found from the ext headers alone;
    None for any other payload (msgpack decodes those)."""
    size = len(payload)
    if not size:
        return None
    b = payload[0]
    if 0x91 <= b <= 0x9F:
        n, pos = b & 0x0F, 1
    elif b == 0xDC and size >= 3:
        n, pos = _U16.unpack_from(payload, 1)[0], 3
    elif b == 0xDD and size >= 5:
        n, pos = _U32.unpack_from(payload, 1)[0], 5
    else:
        return None
    spans = []
    for _ in range(n):
        if pos + 6 > size:
            return None
        b = payload[pos]
        if 0xD4 <= b <= 0xD8:
            length, code, start = 1 << (b - 0xD4), payload[pos + 1], pos + 2
        elif b == 0xC7:
            length, code, start = payload[pos + 1], payload[pos + 2], pos + 3
        elif b == 0xC8:
            length, code, start = _U16.unpack_from(payload, pos + 1)[0], payload[pos + 3], pos + 4
        elif b == 0xC9:
            length, code, start = _U32.unpack_from(payload, pos + 1)[0], payload[pos + 5], pos + 6
        else:
            return None
        pos = start + length
        spans.append((code - 256 if code > 127 else code, start, pos))
    return spans if pos == size else None


def _unpack(payload: bytes) -> tuple[tuple, int]:
    spans = _columnar_spans(payload)
    if spans is not None:   # only columnar batches: their arrays are views of the payload
        columns = _columns()
        out = []
        for code, start, end in spans:
            if code != EXT_COLUMNS:
                out.append(_BadElement(f"msgpack ext type {code} is not a columnar batch (ext type {EXT_COLUMNS})"))
                continue
            try:
                out.append(columns.ColumnBatch.decode(payload, start, end))
            except columns.ColumnBatchError as exc:
                out.append(_BadElement(str(exc)))
        return tuple(out), len(out)
    hook = _ExtHook()
    try:
        arrays = msgpack.unpackb(payload, use_list=False, raw=False, ext_hook=hook)
    except Exception as exc:  # msgpack raises several unrelated types
        raise RecordDecodeError(f"payload is not valid msgpack: {exc}") from exc
    if not isinstance(arrays, tuple):
        raise RecordDecodeError(f"payload is a msgpack {type(arrays).__name__}, expected an array of records")
    return arrays, hook.count


def _bad_columnar(element: _BadElement, index: int) -> RecordDecodeError:
    return RecordDecodeError(f"record #{index} starts a columnar batch that does not decode: {element.reason}", index)


def decode_raw(payload: bytes) -> tuple:
    """Decode a payload to plain tuples (no record classes, no validation of row records; columnar
    batches are validated and expanded): the fast path for bulk readers."""
    arrays, columnar = _unpack(payload)
    if not columnar:
        return arrays
    batch_type = _columns().ColumnBatch
    out = []
    for a in arrays:
        if type(a) is batch_type:
            out.extend(a.raw_records())
        elif type(a) is _BadElement:
            raise _bad_columnar(a, len(out))
        else:
            out.append(a)
    return tuple(out)


def decode_batch(payload: bytes) -> list:
    """Decode a payload into record objects, checking kind, schema version and field count;
    columnar batches are expanded into their records."""
    arrays, columnar = _unpack(payload)
    if columnar:
        return _decode_mixed(arrays)
    table = _TABLE
    versions = READABLE_VERSIONS
    out = []
    append = out.append
    for i, a in enumerate(arrays):
        try:
            cls, n = table[a[0]]
            ok = len(a) == n and a[1] in versions
        except (KeyError, TypeError, IndexError):
            ok = False
        if not ok:
            _raise_bad_record(a, i)
        append(_new(cls, a))
    return out


def decode_elements(payload: bytes) -> list:
    """Decode a payload into its elements: record objects (checked as by :func:`decode_batch`) and
    :class:`events.columns.ColumnBatch` objects, not expanded. A RecordDecodeError's ``index`` is
    the record index (columnar batches count all their records)."""
    arrays, columnar = _unpack(payload)
    if not columnar:
        return [_checked(a, i) for i, a in enumerate(arrays)]
    batch_type = _columns().ColumnBatch
    out = []
    index = 0
    for a in arrays:
        if type(a) is batch_type:
            out.append(a)
            index += len(a)
        elif type(a) is _BadElement:
            raise _bad_columnar(a, index)
        else:
            out.append(_checked(a, index))
            index += 1
    return out


def _checked(a, index: int):
    try:
        cls, n = _TABLE[a[0]]
        ok = len(a) == n and a[1] in READABLE_VERSIONS
    except (KeyError, TypeError, IndexError):
        ok = False
    if not ok:
        _raise_bad_record(a, index)
    return _new(cls, a)


def _decode_mixed(arrays: tuple) -> list:
    batch_type = _columns().ColumnBatch
    out = []
    for a in arrays:
        if type(a) is batch_type:
            out.extend(a.records())
        elif type(a) is _BadElement:
            raise _bad_columnar(a, len(out))
        else:
            out.append(_checked(a, len(out)))
    return out


def _raise_bad_record(a, index: int) -> None:
    if not isinstance(a, tuple) or len(a) < HEADER_LEN:
        raise RecordDecodeError(f"record #{index} is not an array of at least {HEADER_LEN} fields: {a!r:.200}", index)
    kind, version = a[0], a[1]
    try:
        known = kind in _TABLE
    except TypeError:  # an unhashable kind, e.g. a msgpack map
        known = False
    if not known:
        raise RecordDecodeError(f"record #{index} has unknown kind {kind!r}", index)
    cls, n = _TABLE[kind]
    try:
        readable = version in READABLE_VERSIONS
    except TypeError:
        readable = False
    if not readable:
        raise RecordDecodeError(
            f"record #{index} ({cls.__name__}) has schema version {version!r}; this reader knows versions "
            f"{', '.join(map(str, sorted(READABLE_VERSIONS)))} (writes {SCHEMA_VERSION})", index)
    raise RecordDecodeError(f"record #{index} ({cls.__name__}) has {len(a)} fields, expected {n}", index)


def iter_decode(payloads: Iterable[bytes]):
    """Decode many payloads lazily, record by record."""
    for payload in payloads:
        yield from decode_batch(payload)
