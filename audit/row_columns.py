"""A vectorised decoder of row batches: the records of a batch payload as numpy columns, no Python object per record.

Logs written before the controller wrote columnar batches (and records the controller still writes one by
one) hold *row batches*: a msgpack array of records, each a msgpack array of fields. The audit's readers
(:mod:`audit.log_rows`) decode those with msgpack into one tuple per record; :func:`decode_row_batch` does
it with numpy instead, over the payload's bytes:

1. the records' byte ranges come from msgpack's ``Unpacker.skip`` (C, no object made);
2. the fields are then read column-wise: for field ``j`` of every record at once, its type byte is
   classified through 256-entry tables and its value read (ints of every msgpack width, nil, booleans,
   strings as byte ranges, arrays of ints as offsets and values);
3. the reader's checks are made on the columns: every record an array of its kind's field count, of a
   known kind and a readable schema version, offsets consecutive from the batch's base offset, each
   field of a type its schema accepts (the table of :mod:`events.codec`), the fields filling each record
   exactly, strings valid UTF-8.

It is a fast path only. A batch holding a record it does not handle — a columnar batch element, a
float, bytes, a map, a nested array or an array holding something other than ints, a record of a kind
the caller names as slow — is left to the existing way of decoding (the indices of such batches are
returned, and the caller decodes the others here); anything else it does not handle (an integer beyond
int64, a boolean or nil where an audit row column wants an int) and anything that fails a check gives
``None``, and the caller decodes all the batches the existing way, which accepts the same batches and
raises the precise error for a bad one. So both paths give the same rows and the same
errors (``tests/test_row_columns.py`` holds them to each other).

The result, per record kind present, is a :class:`RowGroup`: the records' header fields as arrays and
``column(name)`` for the body fields in the column types of :mod:`events.columns` (numpy ints,
:class:`~events.columns.DictColumn` strings, :class:`~events.columns.ListColumn` int lists), so the
columnar builders of :mod:`audit.log_rows` turn it into audit rows as they turn a ColumnBatch.
"""
from __future__ import annotations

import msgpack
import numpy as np

from events import records as R
from events.codec import _TYPES
from events.columns import DictColumn, ListColumn

__all__ = ["RowGroup", "decode_row_batches", "element_count"]

# Token categories.
_OTHER, _INT, _NIL, _BOOL, _STR, _ARRAY = range(6)

_CAT = np.full(256, _OTHER, np.int8)
_HEAD = np.zeros(256, np.int64)     # bytes of the token before its payload (type byte, length bytes)
_WIDTH = np.zeros(256, np.int64)    # int: bytes of the value after the type byte; str/array: bytes of the length
_SIGNED = np.zeros(256, bool)
_CAT[0x00:0x80] = _INT
_HEAD[0x00:0x80] = 1
_CAT[0xe0:0x100] = _INT
_HEAD[0xe0:0x100] = 1
for _b, _w, _s in ((0xcc, 1, False), (0xcd, 2, False), (0xce, 4, False), (0xcf, 8, False),
                   (0xd0, 1, True), (0xd1, 2, True), (0xd2, 4, True), (0xd3, 8, True)):
    _CAT[_b], _HEAD[_b], _WIDTH[_b], _SIGNED[_b] = _INT, 1 + _w, _w, _s
_CAT[0xc0] = _NIL
_CAT[0xc2] = _CAT[0xc3] = _BOOL
_HEAD[[0xc0, 0xc2, 0xc3]] = 1
_CAT[0xa0:0xc0] = _STR
_HEAD[0xa0:0xc0] = 1
for _b, _w in ((0xd9, 1), (0xda, 2), (0xdb, 4)):
    _CAT[_b], _HEAD[_b], _WIDTH[_b] = _STR, 1 + _w, _w
_CAT[0x90:0xa0] = _ARRAY
_HEAD[0x90:0xa0] = 1
for _b, _w in ((0xdc, 2), (0xdd, 4)):
    _CAT[_b], _HEAD[_b], _WIDTH[_b] = _ARRAY, 1 + _w, _w

# Categories each (kind, field) accepts, from the codec's table of accepted Python types.
_PY_CATS = {int: (_INT,), bool: (_BOOL,), str: (_STR,), tuple: (_ARRAY,), type(None): (_NIL,), bytes: (_OTHER,)}
_ACCEPTS: dict[int, tuple[frozenset, ...]] = {}
for _code, (_, _accepted) in _TYPES.items():
    _ACCEPTS[_code] = tuple(
        frozenset((_OTHER, _INT, _NIL, _BOOL, _STR, _ARRAY)) if object in types
        else frozenset(c for t in types for c in _PY_CATS.get(t, ())) for types in _accepted)
_NFIELDS = {code: len(cls._fields) for code, cls in R.KINDS.items()}
_MAX_KIND = max(R.KINDS) + 1
_KNOWN = np.zeros(_MAX_KIND, bool)
_KNOWN[list(R.KINDS)] = True
_FIELD_COUNT = np.zeros(_MAX_KIND, np.int64)
_FIELD_COUNT[list(_NFIELDS)] = list(_NFIELDS.values())
_VERSIONS = np.array(sorted(R.READABLE_VERSIONS))
_PAD = 9
_SHIFTS = np.arange(7, -1, -1, dtype=np.uint64) * np.uint64(8)


class _Fallback(Exception):
    """The batch is outside the fast path: decode it the existing way."""


class _Outside(Exception):
    """Some records (``which``: indices into the arrays being walked) hold values outside the fast path: the
    batches holding them are decoded the existing way, the others here."""

    def __init__(self, which: np.ndarray):
        super().__init__()
        self.which = which


class RowGroup:
    """The records of one kind of a row batch, as columns (in log order)."""
    __slots__ = ("kind", "n", "positions", "offsets", "controller_ids", "controller_epochs", "timestamps",
                 "_columns")

    def __init__(self, kind: int, positions, header: list, columns: dict):
        self.kind = kind
        self.n = len(positions)
        self.positions = positions
        self.offsets, self.controller_ids, self.controller_epochs, self.timestamps = header
        self._columns = columns

    def column(self, name: str):
        return self._columns[name]

    @property
    def first_offset(self) -> int:
        return int(self.offsets[0])


def _ints(buf: np.ndarray, p: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The int tokens at ``p`` (type bytes ``b``) as int64."""
    out = b.astype(np.int64)
    if b.max() < 0x80:        # all positive fixints
        return out
    out[b >= 0xe0] -= 256
    for code in np.flatnonzero(np.bincount(b, minlength=256)[0xcc:0xd4]).tolist():
        code += 0xcc
        at = np.flatnonzero(b == code)
        q = p[at] + 1
        width = int(_WIDTH[code])
        word = buf[q].astype(np.uint64)
        for i in range(1, width):
            word = (word << np.uint64(8)) | buf[q + i]
        if code == 0xcf and (word >= np.uint64(1 << 63)).any():
            raise _Fallback   # beyond int64
        value = word.astype(np.int64)
        if _SIGNED[code] and width < 8:
            value = np.where(value >= (1 << (8 * width - 1)), value - (1 << (8 * width)), value)
        out[at] = value
    return out


def _lengths(buf: np.ndarray, p: np.ndarray, b: np.ndarray, fix_mask: int) -> np.ndarray:
    """The length of str/array tokens at ``p``: in the type byte (fix forms) or the bytes after it."""
    out = (b & fix_mask).astype(np.int64)
    wide = _WIDTH[b] > 0
    if wide.any():
        pw, width = p[wide], _WIDTH[b[wide]]
        raw = buf[(pw + 1)[:, None] + np.arange(4)].astype(np.uint64)
        word = np.bitwise_or.reduce(raw << _SHIFTS[4:], axis=1) >> (np.uint64(8) * (4 - width).astype(np.uint64))
        out[wide] = word.astype(np.int64)
    return out


def _strings(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> DictColumn:
    import pyarrow as pa
    import pyarrow.compute as pc
    offsets = np.zeros(len(start) + 1, np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    index = np.repeat(start - offsets[:-1], length) + np.arange(total)
    data = buf[index]
    array = pa.LargeStringArray.from_buffers(len(start), pa.py_buffer(offsets), pa.py_buffer(data))
    try:
        array.validate(full=True)     # UTF-8, as msgpack's decoding would insist
    except pa.ArrowInvalid:
        raise _Fallback from None
    encoded = pc.dictionary_encode(array)
    return DictColumn(tuple(encoded.dictionary.to_pylist()), encoded.indices.to_numpy().astype(np.int32))


def _int_lists(buf: np.ndarray, p: np.ndarray, b: np.ndarray) -> tuple[ListColumn, np.ndarray]:
    """Arrays of ints at ``p``: the ListColumn and where each array ends."""
    counts = _lengths(buf, p, b, 0x0f)
    q = p + _HEAD[b]
    offsets = np.zeros(len(p) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.zeros(int(offsets[-1]), np.int64)
    k = 0
    live = np.flatnonzero(counts > k)
    while live.size:
        pk = q[live]
        bk = buf[pk]
        if (_CAT[bk] != _INT).any():
            raise _Outside(live[_CAT[bk] != _INT])
        values[offsets[live] + k] = _ints(buf, pk, bk)
        q[live] = pk + _HEAD[bk]
        k += 1
        live = live[counts[live] > k]
    if offsets[-1] >= 2**31:
        raise _Fallback
    return ListColumn(offsets.astype(np.int32), values), q


def decode_row_batches(batches, wanted, slow_kinds=frozenset()) -> tuple[dict, dict] | list[int] | None:
    """Decode row batches together: ``batches`` are (payload, base offset, record count, the payload's byte
    position in its segment). Returns ({kind: RowGroup} for the kinds in ``wanted`` present, {kind:
    records} of every kind present), with ``RowGroup.positions`` the records' byte positions in the
    segment; or, when records of ``slow_kinds`` are present, the indices of the batches holding them (for
    the caller to decode those the existing way, and the others here); or None when a batch is outside
    the fast path or fails a check (see the module docstring). Many batches at a time: the numpy work is
    per call, not per record."""
    try:
        return _decode(batches, wanted, slow_kinds)
    except (_Fallback, msgpack.UnpackException, ValueError, IndexError):
        return None


def _record_ranges(payload: bytes, n: int) -> tuple[int, list[int]] | None:
    """(where the first record starts, where each record ends) in one payload: msgpack skips them (C)."""
    if n == 0:
        return None
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(payload), 1 << 20))
    unpacker.feed(payload)
    if unpacker.read_array_header() != n:
        return None
    tell, skip = unpacker.tell, unpacker.skip
    first = tell()
    ends = [tell() for _ in range(n) if skip() is None]
    if ends[-1] != len(payload):
        return None
    return first, ends


def element_count(payload: bytes) -> int:
    """The number of elements of the payload's top-level array, from its header alone (-1: not an array)."""
    b = payload[0] if payload else -1
    if 0x90 <= b <= 0x9f:
        return b & 0x0f
    if b == 0xdc:
        return int.from_bytes(payload[1:3], "big")
    return int.from_bytes(payload[1:5], "big") if b == 0xdd else -1


def _decode(batches, wanted, slow_kinds) -> tuple[dict, dict] | list[int] | None:
    # Fewer elements than records: a columnar batch among them (or damage), for the existing way, found
    # before any payload is copied into an Unpacker.
    aside = [i for i, (payload, _, n, _) in enumerate(batches) if element_count(payload) != n]
    if aside:
        return aside
    pieces, starts_l, ends_l, shifts, expected = [], [], [], [], []
    base = 0
    for payload, base_offset, n, position in batches:
        ranges = _record_ranges(payload, n)
        if ranges is None:
            return None
        first, ends = ranges
        e = np.array(ends, np.int64) + base
        s = np.empty(n, np.int64)
        s[0] = first + base
        s[1:] = e[:-1]
        starts_l.append(s)
        ends_l.append(e)
        shifts.append(np.full(n, position - base, np.int64))
        expected.append(np.arange(base_offset, base_offset + n, dtype=np.int64))
        pieces.append(payload)
        base += len(payload)
    if not pieces:
        return None
    pieces.append(bytes(_PAD))
    buf = np.frombuffer(b"".join(pieces), np.uint8)
    starts, ends = np.concatenate(starts_l), np.concatenate(ends_l)
    n = len(starts)

    b = buf[starts]
    batch_of = np.repeat(np.arange(len(starts_l)), [len(x) for x in starts_l])
    if (_CAT[b] != _ARRAY).any():   # a columnar batch element (an ext), or not a record: those batches aside
        return np.unique(batch_of[_CAT[b] != _ARRAY]).tolist()
    nfields = _lengths(buf, starts, b, 0x0f)
    p = starts + _HEAD[b]
    # kind and version: positive fixints
    kind = buf[p].astype(np.int64)
    version = buf[p + 1].astype(np.int64)
    if (kind >= 0x80).any() or (version >= 0x80).any():
        return None
    if (kind >= _MAX_KIND).any() or not _KNOWN[kind].all() or (_FIELD_COUNT[kind] != nfields).any() \
            or not np.isin(version, _VERSIONS).all():
        return None
    p = p + 2
    kinds_present = np.unique(kind)
    slow = [k for k in kinds_present.tolist() if k in slow_kinds]
    if slow:
        return np.unique(batch_of[np.isin(kind, slow)]).tolist()
    counts = {}
    groups = {}
    out_groups = {}
    for k in kinds_present.tolist():
        idx = np.flatnonzero(kind == k)
        counts[k] = idx.size
        groups[k] = idx
    # Every field of every record, kind by kind (fields of one kind share types), offsets checked.
    offsets_all = np.empty(n, np.int64)
    for k, idx in groups.items():
        accepts = _ACCEPTS[k]
        q = p[idx]
        values: dict = {}
        want = k in wanted
        for j in range(2, _NFIELDS[k]):
            bj = buf[q]
            cat = _CAT[bj]
            present = np.flatnonzero(np.bincount(cat, minlength=6))
            if not set(present.tolist()) <= accepts[j]:
                return None
            if present[0] == _OTHER:
                return np.unique(batch_of[idx[cat == _OTHER]]).tolist()
            try:
                q = _field(buf, q, bj, cat, present, j, want, values)
            except _Outside as outside:
                return np.unique(batch_of[idx[outside.which]]).tolist()
            if j == 2:
                offsets_all[idx] = values[j]
        if not np.array_equal(q, ends[idx]):
            return None
        if want:
            out_groups[k] = (idx, values)
    if not np.array_equal(offsets_all, np.concatenate(expected)):
        return None
    shift = np.concatenate(shifts)
    result = {}
    for k, (idx, values) in out_groups.items():
        cls = R.KINDS[k]
        columns = {}
        for j, name in enumerate(cls._fields[R.HEADER_LEN:], R.HEADER_LEN):
            v = values.get(j)
            if type(v) is tuple:
                v = _strings(buf, *v)
            columns[name] = v
        header = [values[2], values[3], values[4], values[5]]
        if any(h is None or type(h) is not np.ndarray for h in header):
            return None
        result[k] = RowGroup(k, starts[idx] + shift[idx], header, columns)
    return result, counts


def _field(buf: np.ndarray, q: np.ndarray, bj: np.ndarray, cat: np.ndarray, present: np.ndarray, j: int,
           want: bool, values: dict) -> np.ndarray:
    """Read field ``j`` of the records at ``q`` (type bytes ``bj``, categories ``cat``) into ``values[j]`` when
    wanted (or the offset field); the position after it."""
    if present.size == 1 and present[0] == _INT:
        if j == 2 or want:
            values[j] = _ints(buf, q, bj)
        return q + _HEAD[bj]
    if present.size == 1 and present[0] == _STR:
        length = _lengths(buf, q, bj, 0x1f)
        data = q + _HEAD[bj]
        if want:
            values[j] = (data, length)
        else:
            _check_utf8(buf, data, length)
        return data + length
    if present.size == 1 and present[0] == _ARRAY:
        lists, q = _int_lists(buf, q, bj)
        if want:
            values[j] = lists
        return q
    if want or j == 2:
        raise _Fallback       # mixed or nil/bool values in a kind the audit reads: the existing path
    start = q
    q = q + _HEAD[bj]         # nil / bool / ints of a kind the audit does not read: only their length matters
    strs = cat == _STR
    if strs.any():
        length = _lengths(buf, start[strs], bj[strs], 0x1f)
        _check_utf8(buf, q[strs], length)
        q[strs] += length
    arrays = np.flatnonzero(cat == _ARRAY)
    if arrays.size:
        try:
            _, q[arrays] = _int_lists(buf, start[arrays], bj[arrays])
        except _Outside as outside:
            raise _Outside(arrays[outside.which]) from None
    return q


def _check_utf8(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> None:
    if length.size and (buf[start[:, None] + np.arange(int(length.max()))] >= 0x80).any():
        _strings(buf, start, length)   # non-ASCII: validate as UTF-8 (raises _Fallback)
