"""The msgpack codec: a batch of records <-> one msgpack array of positional arrays.

A batch payload is ``msgpack(array of records)``; each record is the array of its fields in
declaration order (see :mod:`events.records`). Positional arrays, not maps: they decode
several times faster and are what the Spark reader turns into columns.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgpack

from events.records import HEADER_LEN, KINDS, SCHEMA_VERSION


class RecordDecodeError(ValueError):
    """A payload or record that does not match the schema; ``index`` is the record's position in its batch."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


# kind -> (class, field count)
_TABLE = {code: (cls, len(cls._fields)) for code, cls in KINDS.items()}
_new = tuple.__new__


def encode_batch(records: Sequence[tuple]) -> bytes:
    """Encode records (any tuples laid out as in events.records) as one msgpack payload."""
    return msgpack.packb(records if isinstance(records, list) else list(records), use_bin_type=True)


def decode_raw(payload: bytes) -> tuple:
    """Decode a payload to plain tuples (no record classes, no validation): the fast path for bulk readers."""
    try:
        arrays = msgpack.unpackb(payload, use_list=False, raw=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise RecordDecodeError(f"payload is not valid msgpack: {exc}") from exc
    if not isinstance(arrays, tuple):
        raise RecordDecodeError(f"payload is a msgpack {type(arrays).__name__}, expected an array of records")
    return arrays


def decode_batch(payload: bytes) -> list:
    """Decode a payload into record objects, checking kind, schema version and field count."""
    arrays = decode_raw(payload)
    table = _TABLE
    out = []
    append = out.append
    for i, a in enumerate(arrays):
        try:
            cls, n = table[a[0]]
            ok = len(a) == n and a[1] == SCHEMA_VERSION
        except (KeyError, TypeError, IndexError):
            ok = False
        if not ok:
            _raise_bad_record(a, i)
        append(_new(cls, a))
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
    if version != SCHEMA_VERSION:
        raise RecordDecodeError(
            f"record #{index} ({cls.__name__}) has schema version {version!r}; this reader knows version {SCHEMA_VERSION}",
            index)
    raise RecordDecodeError(f"record #{index} ({cls.__name__}) has {len(a)} fields, expected {n}", index)


def iter_decode(payloads: Iterable[bytes]):
    """Decode many payloads lazily, record by record."""
    for payload in payloads:
        yield from decode_batch(payload)
