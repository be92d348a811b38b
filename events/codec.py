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

``decode_batch`` and ``decode_elements`` check every record against its schema: kind, version,
field count and the type of every field (its annotation in :mod:`events.records`: int, str,
bytes, bool, tuple, optionally None); an ext value anywhere but as a whole columnar batch is an
error. (The contents of tuple fields are not checked.) ``decode_raw`` checks none of that.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import chain, repeat
from operator import itemgetter

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

_TYPE_NAMES = {"int": int, "str": str, "bytes": bytes, "bool": bool, "tuple": tuple, "None": type(None)}
# Types a field of each annotation accepts besides its own (bool is written for some int fields, and ints
# for bool fields, by Python code that computes them).
_ALSO = {int: (bool,), bool: (int,)}


def _field_types(cls) -> tuple[tuple[type, ...], ...]:
    hints = getattr(cls, "__annotations__", {})
    out = []
    for name in cls._fields:
        hint = hints.get(name, "object")
        hint = hint if isinstance(hint, str) else getattr(hint, "__forward_arg__", None) or getattr(
            hint, "__name__", "object")
        names = [h.strip() for h in hint.split("#")[0].split("|")]
        if not all(n in _TYPE_NAMES for n in names):
            out.append((object,))
            continue
        types = tuple(_TYPE_NAMES[n] for n in names)
        out.append(types + tuple(t for base in types for t in _ALSO.get(base, ()) if t not in types))
    return tuple(out)


# kind -> (the field types of the usual record, the types each field accepts)
_TYPES = {}
for _code, _cls in KINDS.items():
    _accepted = _field_types(_cls)
    _TYPES[_code] = (tuple(t[0] for t in _accepted), _accepted)
# (kind, field types) found valid so far: most batches hold only signatures seen before
_VALID = {(code, usual) for code, (usual, _) in _TYPES.items()}
_USUAL = {code: usual for code, (usual, _) in _TYPES.items()}
_kind_of = itemgetter(0)
_version_of = itemgetter(1)


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
    if hook.count:
        _check_no_nested_ext(arrays, hook.count)
    return arrays, hook.count


def _check_no_nested_ext(arrays: tuple, count: int) -> None:
    """RecordDecodeError if some of the ``count`` ext values decoded are not whole elements of the payload."""
    ext_types = (_columns().ColumnBatch, _BadElement)
    if sum(1 for a in arrays if type(a) in ext_types) == count:
        return
    index = 0
    for a in arrays:
        if type(a) in ext_types:
            index += len(a) if type(a) is ext_types[0] else 1
            continue
        if _holds(a, ext_types):
            kind = _TABLE.get(a[0], (None,))[0] if isinstance(a, tuple) and a and type(a[0]) is int else None
            name = f" ({kind.__name__})" if kind is not None else ""
            raise RecordDecodeError(f"record #{index}{name} holds a msgpack ext value in a field; ext types are "
                                    "only whole columnar batches", index)
        index += 1


def _holds(value, types: tuple) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) in types:
            return True
        if type(v) is tuple:
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
    return False


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
    same = _one_kind(arrays)
    if same is not None:   # the usual batch: records of one kind, checked as sets, built by one map
        out = list(map(partial(_new, same), arrays))
        _check_types(arrays, 0)
        return out
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
    _check_types(arrays, 0)
    return out


def decode_elements(payload: bytes) -> list:
    """Decode a payload into its elements: record objects (checked as by :func:`decode_batch`) and
    :class:`events.columns.ColumnBatch` objects, not expanded. A RecordDecodeError's ``index`` is
    the record index (columnar batches count all their records)."""
    arrays, columnar = _unpack(payload)
    if not columnar:
        out = [_checked(a, i) for i, a in enumerate(arrays)]
        _check_types(arrays, 0)
        return out
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
            _check_types((a,), index)
            index += 1
    return out


def _one_kind(arrays) -> type | None:
    """The record class when ``arrays`` are all tuples of one known kind, of its field count and of readable
    versions (what the per-record checks would find, as a few C-level passes); else None."""
    try:
        if not arrays or set(map(type, arrays)) != {tuple} or len(kinds := set(map(_kind_of, arrays))) != 1:
            return None
        cls, n = _TABLE[next(iter(kinds))]
        if set(map(len, arrays)) == {n} and set(map(_version_of, arrays)) <= READABLE_VERSIONS:
            return cls
    except (KeyError, TypeError, IndexError):
        pass
    return None


def _checked(a, index: int):
    try:
        cls, n = _TABLE[a[0]]
        ok = len(a) == n and a[1] in READABLE_VERSIONS
    except (KeyError, TypeError, IndexError):
        ok = False
    if not ok:
        _raise_bad_record(a, index)
    return _new(cls, a)


def _signatures(records) -> set:
    """{(kind, field types)} of records of checked shape: C-level iteration, no Python code per record."""
    return set(zip(map(_kind_of, records), map(tuple, map(map, repeat(type), records))))


def check_record_types(records, first_index: int = 0) -> None:
    """RecordDecodeError for the first of ``records`` (plain tuples of a known kind and the right length, as
    :func:`decode_raw` gives them) with a field its schema does not accept; for readers that decode
    payloads themselves."""
    _check_types(records, first_index)


def _check_types(records, first_index: int) -> None:
    """RecordDecodeError for the first record (of checked shape) a field of which has a type its schema does
    not accept; ``first_index`` is the index of ``records[0]`` in its batch."""
    # The usual case in two C-level passes: the types of all fields against the usual types of their kinds
    # (one kind: its usual types repeated).
    kind = records[0][0] if records else None
    usual = _USUAL.get(kind) if type(kind) is int else None
    if (usual is not None and tuple(map(type, chain.from_iterable(records))) == usual * len(records)
            and len(set(map(_kind_of, records))) == 1):
        return
    if list(map(type, chain.from_iterable(records))) == list(
            chain.from_iterable(map(_USUAL.__getitem__, map(_kind_of, records)))):
        return
    signatures = _signatures(records)
    if signatures <= _VALID:
        return
    for kind, signature in signatures - _VALID:
        accepted = _TYPES[kind][1]
        if all(t in ok for t, ok in zip(signature, accepted)) or accepted[0][0] is object:
            _VALID.add((kind, signature))
    if signatures <= _VALID:
        return
    for i, a in enumerate(records):
        if (a[0], tuple(map(type, a))) not in _VALID:
            _check_field_types(_TABLE[a[0]][0], a, _TYPES[a[0]][1], first_index + i)


def _check_field_types(cls, a: tuple, accepted: tuple, index: int) -> None:
    for name, value, types in zip(cls._fields, a, accepted):
        if type(value) in (_BadElement, _columns_type()):
            raise RecordDecodeError(f"record #{index} ({cls.__name__}) field {name} is a msgpack ext value; "
                                    f"ext types are only whole columnar batches", index)
        if types[0] is not object and type(value) not in types:
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise RecordDecodeError(f"record #{index} ({cls.__name__}) field {name} is {type(value).__name__} "
                                    f"{value!r:.60}, expected {expected}", index)


def _columns_type():
    """ColumnBatch if events.columns is loaded (an ext value was decoded), else a type no value has."""
    import sys
    module = sys.modules.get("events.columns")
    return module.ColumnBatch if module is not None else _BadElement


def _decode_mixed(arrays: tuple) -> list:
    batch_type = _columns().ColumnBatch
    out = []
    for a in arrays:
        if type(a) is batch_type:
            out.extend(a.records())
        elif type(a) is _BadElement:
            raise _bad_columnar(a, len(out))
        else:
            record = _checked(a, len(out))
            _check_types((record,), len(out))
            out.append(record)
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
