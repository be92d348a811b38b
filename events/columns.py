"""Columnar batches: many records of one kind, sharing a header, stored as columns.

A :class:`ColumnBatch` holds ``n`` records of ONE kind that share the header fields
``controller_id``, ``controller_epoch``, ``timestamp_ms`` and ``cause_offset`` and carry the
consecutive offsets ``first_offset .. first_offset + n - 1``: the records the controller emits
for one input (a ReplicaTransition per replica, a LeaderAndIsrPartition per partition, ...).
Its body fields are columns; nothing holds a Python object per record until
:meth:`ColumnBatch.records` is asked for them.

In memory (and on disk, byte for byte) a column is one of

- an **int** field: a 1-D numpy array of dtype ``uint8`` when every value is in 0..255,
  ``int32`` when every value fits one, ``int64`` otherwise (chosen per column and batch);
- a **bool** field: a numpy ``bool_`` array (stored as uint8 0/1);
- a **str** field: a :class:`DictColumn` — the list of strings and an ``int32`` code per record;
- an **int tuple** field (replicas, isr, brokers, ...): a :class:`ListColumn` — Arrow-style
  ``int32`` offsets (``n + 1`` of them, from 0) into one values array (dtype chosen as for an
  int column); record ``i`` holds ``values[offsets[i]:offsets[i + 1]]``.

The arrays a batch holds are its own (copied on construction, read-only), so a caller may reuse
its buffers once :meth:`ColumnBatch.from_columns` returns. The log stores a batch as one
element of a payload: a msgpack ext (type :data:`EXT_COLUMNS`) whose data is the msgpack array
described in docs/event-log-format.md ("Columnar batches"); :meth:`encode` and :meth:`decode`
produce and parse it.

Only kinds whose body fields are all ints, bools, strings or flat tuples of ints can be
columnar (:data:`COLUMN_KINDS`); a str-or-None, bytes or nested-tuple field has no column form.
"""
from __future__ import annotations

import operator
import struct
from collections.abc import Sequence
from functools import partial
from itertools import chain, repeat
from typing import Any, NamedTuple

import msgpack
import numpy as np

from events.records import HEADER_FIELDS, HEADER_LEN, KINDS, SCHEMA_VERSION

__all__ = [
    "COLUMN_KINDS", "EXT_COLUMNS", "ColumnBatch", "ColumnBatchError", "DictColumn", "ListColumn",
    "arrow_schema", "field_types", "records_to_arrow", "STORED_INT_DTYPES", "stored_int_widths", "stored_array",
]

EXT_COLUMNS = 1
"""msgpack ext type code of a columnar batch element in a batch payload."""

# Field types of a columnar kind's body fields.
INT, BOOL, STR, INTS = "int", "bool", "str", "ints"

# Column tags on disk (the first element of each column array).
_TAG = {INT: "int", BOOL: "bool", STR: "str", INTS: "ints"}

# Body fields annotated ``tuple`` that are flat tuples of ints (broker ids); other tuple fields
# (assignments, config pairs, (id, epoch) pairs, per-partition results) have no column form.
_INT_TUPLE_FIELDS = {
    ("PartitionTransition", "replicas"), ("PartitionTransition", "isr"),
    ("LeaderAndIsrPartition", "isr"), ("LeaderAndIsrPartition", "replicas"),
    ("LeaderAndIsrPartition", "adding_replicas"), ("LeaderAndIsrPartition", "removing_replicas"),
    ("UpdateMetadataPartition", "brokers"), ("UpdateMetadataPartition", "isr"),
    ("UpdateMetadataPartition", "replicas"), ("UpdateMetadataPartition", "offline_replicas"),
    ("RequestSent", "live_brokers"), ("LeaderAndIsrUpdated", "isr"),
    ("ReplicaAssignmentChanged", "replicas"), ("ReplicaAssignmentChanged", "adding_replicas"),
    ("ReplicaAssignmentChanged", "removing_replicas"),
}
_BY_ANNOTATION = {"int": INT, "bool": BOOL, "str": STR}

# Stored integer dtypes: name on disk -> numpy dtype (little-endian).
_DTYPES = {"u1": np.dtype("<u1"), "i4": np.dtype("<i4"), "i8": np.dtype("<i8")}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_RECORDS = 2**32 - 1   # a batch header's record_count is a u32


class ColumnBatchError(ValueError):
    """Columns that do not make a columnar batch of their kind, or an element that does not decode."""


def _field_types(cls) -> tuple[str, ...] | None:
    out = []
    for name in cls._fields[HEADER_LEN:]:
        a = cls.__annotations__[name]
        a = getattr(a, "__forward_arg__", a)
        if a == "tuple" and (cls.__name__, name) in _INT_TUPLE_FIELDS:
            out.append(INTS)
        elif a in _BY_ANNOTATION:
            out.append(_BY_ANNOTATION[a])
        else:
            return None
    return tuple(out)


COLUMN_KINDS: dict[int, tuple[str, ...]] = {
    code: types for code, cls in KINDS.items() if (types := _field_types(cls)) is not None}
"""Kind code -> the field type of each body field, for every kind that has a columnar form."""


def field_types(cls) -> tuple[str, ...]:
    """The column type ("int", "bool", "str", "ints") of each body field of ``cls``."""
    try:
        return COLUMN_KINDS[cls.KIND]
    except (KeyError, AttributeError):
        raise TypeError(f"{getattr(cls, '__name__', cls)!s} has no columnar form (its body fields must be ints, "
                        "bools, strings or flat tuples of ints)") from None


# ---------------------------------------------------------------------------------------------
# Column types
# ---------------------------------------------------------------------------------------------

class DictColumn(NamedTuple):
    """A str column: ``dictionary[codes[i]]`` is record i's string (codes: int32)."""
    dictionary: tuple
    codes: np.ndarray

    def values(self) -> list:
        """The strings, one per record (the dictionary's objects, shared)."""
        if not self.dictionary:
            return []
        return _object_array(self.dictionary)[self.codes].tolist()


class ListColumn(NamedTuple):
    """An int tuple column: record i holds ``values[offsets[i]:offsets[i + 1]]`` (offsets: int32, n + 1)."""
    offsets: np.ndarray
    values: np.ndarray

    def tuples(self) -> list:
        """The tuples of ints, one per record."""
        flat = tuple(self.values.tolist())
        offsets = self.offsets.tolist()
        return list(map(flat.__getitem__, map(slice, offsets[:-1], offsets[1:])))


def _object_array(items) -> np.ndarray:
    a = np.empty(len(items), dtype=object)
    a[:] = items
    return a


def _owned(a, dtype) -> np.ndarray:
    """``a`` as a new read-only array of ``dtype`` over a bytes object of its own (which
    :meth:`ColumnBatch.encode_pieces` then writes as it is, without another copy)."""
    return np.frombuffer(np.ascontiguousarray(a, dtype=dtype).tobytes(), dtype=dtype)


STORED_INT_DTYPES = (_DTYPES["u1"], _DTYPES["i4"], _DTYPES["i8"])
"""The dtypes an int column (or an int tuple column's values) is stored in, narrowest first."""


def stored_int_widths(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For runs of int64 values with minima ``lo`` and maxima ``hi``: the index into
    :data:`STORED_INT_DTYPES` of the dtype :meth:`ColumnBatch.from_columns` would store each run in
    (for callers that build the stored form of many batches at once, by one reduce per column)."""
    return np.where((lo >= 0) & (hi <= 255), 0, np.where((lo >= _INT32_MIN) & (hi <= _INT32_MAX), 1, 2))


def stored_array(a, dtype) -> np.ndarray:
    """``a`` as a new read-only array of ``dtype``, in the form a batch holds its columns."""
    return _owned(a, dtype)


def _bytes_of(a: np.ndarray) -> bytes:
    """The array's bytes: its own buffer when it is a whole bytes object (built or decoded here)."""
    base = a.base
    if type(base) is bytes and len(base) == a.nbytes:
        return base
    return a.tobytes()


def _as_numpy(name: str, values) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    to_numpy = getattr(values, "to_numpy", None)   # a pyarrow Array or ChunkedArray
    if to_numpy is not None and not isinstance(values, (list, tuple)):
        return to_numpy(zero_copy_only=False)
    try:
        return np.asarray(values)
    except (OverflowError, ValueError) as exc:
        raise ColumnBatchError(f"column {name}: {exc}") from None


def _narrow_ints(name: str, values) -> np.ndarray:
    """Integers as a fresh read-only array of the narrowest stored dtype that holds them all."""
    a = _as_numpy(name, values)
    if a.ndim != 1:
        raise ColumnBatchError(f"column {name}: expected a 1-D sequence of ints, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        if a.size == 0:
            return _owned((), _DTYPES["u1"])
        if a.dtype == object and all(type(v) is int for v in a.tolist()):
            raise ColumnBatchError(f"column {name}: values outside the int64 range")
        raise ColumnBatchError(f"column {name}: expected ints, got dtype {a.dtype}")
    if a.size == 0:
        return _owned((), _DTYPES["u1"])
    lo, hi = int(a.min()), int(a.max())
    if lo >= 0 and hi <= 255:
        dtype = _DTYPES["u1"]
    elif lo >= _INT32_MIN and hi <= _INT32_MAX:
        dtype = _DTYPES["i4"]
    elif lo >= _INT64_MIN and hi <= _INT64_MAX:
        dtype = _DTYPES["i8"]
    else:
        raise ColumnBatchError(f"column {name}: values outside the int64 range (min {lo}, max {hi})")
    return _owned(a, dtype)


def _bools(name: str, values) -> np.ndarray:
    a = _as_numpy(name, values)
    if a.ndim != 1:
        raise ColumnBatchError(f"column {name}: expected a 1-D sequence of bools, got shape {a.shape}")
    if a.dtype != np.bool_:
        if a.size == 0:
            return _owned((), np.bool_)
        raise ColumnBatchError(f"column {name}: expected bools, got dtype {a.dtype}")
    return _owned(a, np.bool_)


def _strings(name: str, values) -> DictColumn:
    if isinstance(values, DictColumn):
        dictionary, codes = tuple(values.dictionary), _as_numpy(name, values.codes)
        if codes.ndim != 1 or (codes.size and codes.dtype.kind not in "iu"):
            raise ColumnBatchError(f"column {name}: dictionary codes must be a 1-D int array")
    elif hasattr(values, "dictionary") and hasattr(values, "indices"):   # a pyarrow DictionaryArray
        dictionary, codes = tuple(values.dictionary.to_pylist()), values.indices.to_numpy(zero_copy_only=False)
    else:
        if hasattr(values, "to_pylist"):   # a pyarrow string Array
            values = values.to_pylist()
        elif isinstance(values, np.ndarray):
            values = values.tolist()
        index: dict = {}
        setdefault = index.setdefault
        try:
            codes = np.fromiter(map(setdefault, values, map(len, repeat(index))), dtype=np.int32)
        except TypeError:
            bad = next((v for v in values if type(v) is not str), None)
            raise ColumnBatchError(f"column {name}: expected strings, got {bad!r:.100}") from None
        dictionary = tuple(index)
    if not all(type(s) is str for s in dictionary):
        bad = next(s for s in dictionary if type(s) is not str)
        raise ColumnBatchError(f"column {name}: expected strings, got {bad!r:.100}")
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= len(dictionary)):
        raise ColumnBatchError(f"column {name}: dictionary codes outside 0..{len(dictionary) - 1}")
    return DictColumn(dictionary, _owned(codes, _DTYPES["i4"]))


def _int_tuples(name: str, values) -> ListColumn:
    if isinstance(values, ListColumn) or (hasattr(values, "offsets") and hasattr(values, "values")
                                          and not isinstance(values, (list, tuple))):
        offsets = _as_numpy(name, values.offsets).astype(np.int64)
        flat = _as_numpy(name, values.values)
        if offsets.ndim != 1 or offsets.size < 1 or np.any(offsets[1:] < offsets[:-1]) \
                or offsets[0] < 0 or offsets[-1] > flat.size:
            raise ColumnBatchError(f"column {name}: list offsets must be non-decreasing indexes into the values")
        flat = flat[int(offsets[0]):int(offsets[-1])]
        offsets = offsets - offsets[0]
    else:
        if isinstance(values, np.ndarray):
            values = values.tolist()
        if not isinstance(values, (list, tuple)):
            values = list(values)
        try:
            lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
            flat = np.fromiter(chain.from_iterable(values), dtype=np.int64, count=int(lengths.sum()))
        except (TypeError, ValueError, OverflowError):
            bad = next((v for v in values if not isinstance(v, (tuple, list))
                        or not all(type(x) is int for x in v)), values)
            raise ColumnBatchError(f"column {name}: expected tuples of int64 values, got {bad!r:.100}") from None
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _INT32_MAX:
        raise ColumnBatchError(f"column {name}: more than 2**31 - 1 values in one batch")
    return ListColumn(_owned(offsets, _DTYPES["i4"]), _narrow_ints(name, flat))


_BUILD = {INT: _narrow_ints, BOOL: _bools, STR: _strings, INTS: _int_tuples}


def _index(x) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError
    return operator.index(x)


def _length(column) -> int:
    if isinstance(column, DictColumn):
        return len(column.codes)
    if isinstance(column, ListColumn):
        return len(column.offsets) - 1
    return len(column)


def _dtype_name(a: np.ndarray) -> str:
    for name, dtype in _DTYPES.items():
        if a.dtype == dtype:
            return name
    raise ColumnBatchError(f"unexpected column dtype {a.dtype}")  # pragma: no cover - built above


# ---------------------------------------------------------------------------------------------
# The batch
# ---------------------------------------------------------------------------------------------

_new = tuple.__new__


class ColumnBatch:
    """``n`` records of kind ``cls`` with offsets ``first_offset..`` and one shared header, as columns.

    Build one with :meth:`from_columns` (or :meth:`from_records`); ``columns`` holds a column
    per body field, in field order (see the module docstring for the column types);
    :meth:`column` looks one up by name.
    """

    __slots__ = ("cls", "v", "first_offset", "controller_id", "controller_epoch", "timestamp_ms", "cause_offset",
                 "n", "columns", "_records")

    def __init__(self, cls, first_offset: int, header: Sequence[int], n: int, columns: tuple, *,
                 v: int = SCHEMA_VERSION):
        """Internal: columns already in their stored form. Use :meth:`from_columns`."""
        self.cls = cls
        self.v = v
        self.first_offset = first_offset
        self.controller_id, self.controller_epoch, self.timestamp_ms, self.cause_offset = header
        self.n = n
        self.columns = columns
        self._records = None   # what records() built, kept: a batch is immutable

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def from_columns(cls_, cls, first_offset: int, header: Sequence[int], n: int | None = None,
                     **columns: Any) -> ColumnBatch:
        """A batch of ``cls`` records from one value sequence per body field, by name.

        ``header`` is ``(controller_id, controller_epoch, timestamp_ms, cause_offset)``. A
        column may be a numpy array, a list, a pyarrow array, or (str fields) a
        :class:`DictColumn`, (int tuple fields) a :class:`ListColumn` or a sequence of tuples.
        Every column must have the same length; ``n`` is needed only for kinds with no body
        field. The values are copied. Raises ColumnBatchError (a ValueError) on a missing or
        unknown field, unequal lengths or values that do not fit the field; TypeError for a
        kind with no columnar form.
        """
        types = field_types(cls)
        names = cls._fields[HEADER_LEN:]
        missing = [f for f in names if f not in columns]
        extra = sorted(set(columns) - set(names))
        if missing or extra:
            raise ColumnBatchError(f"{cls.__name__} columns: missing fields {missing}, unknown fields {extra}")
        try:   # (numpy integers are taken as ints; bools, floats and None are not)
            header = tuple(map(_index, header))
            first_offset = _index(first_offset)
            n = None if n is None else _index(n)
        except TypeError:
            raise ColumnBatchError(f"header must be 4 ints (controller_id, controller_epoch, timestamp_ms, "
                                   f"cause_offset) and first_offset and n ints, got {header!r}, "
                                   f"{first_offset!r}, {n!r}") from None
        if len(header) != 4:
            raise ColumnBatchError(f"header must be 4 ints (controller_id, controller_epoch, timestamp_ms, "
                                   f"cause_offset), got {header!r}")
        if not 0 <= first_offset <= 2**64 - 1:
            raise ColumnBatchError(f"first_offset must be an int in 0..2**64-1, got {first_offset!r}")
        built = tuple(_BUILD[t](name, columns[name]) for name, t in zip(names, types))
        lengths = {name: _length(c) for name, c in zip(names, built)}
        if n is None:
            if not built:
                raise ColumnBatchError(f"{cls.__name__} has no body field: give the record count n")
            n = next(iter(lengths.values()))
        if any(length != n for length in lengths.values()):
            raise ColumnBatchError(f"{cls.__name__} columns differ in length (n={n}): {lengths}")
        if not 0 <= n <= _MAX_RECORDS or first_offset + n - 1 > 2**64 - 1:
            raise ColumnBatchError(f"a columnar batch holds 0..2**32-1 records with offsets below 2**64, got {n}")
        return cls_(cls, first_offset, header, n, built)

    @classmethod
    def from_stored(cls_, cls, first_offset: int, header: tuple, n: int, columns: tuple) -> ColumnBatch:
        """Internal, for the engine's own columns: a batch of ``n`` records from columns already in
        their stored form, in field order, NOT checked — each int column of the narrowest dtype of
        :data:`STORED_INT_DTYPES` that holds its values (``stored_int_widths``), bools ``np.bool_``,
        strings a :class:`DictColumn` with int32 codes, int tuples a :class:`ListColumn` of int32
        offsets from 0 and narrowest values, every array read-only and of length ``n``; the header
        4 ints. Anything else must go through :meth:`from_columns`, which checks and converts."""
        return cls_(cls, first_offset, header, n, columns)

    @classmethod
    def from_records(cls_, records: Sequence[tuple]) -> ColumnBatch:
        """The records (at least one, one kind, one shared header, consecutive offsets) as a batch."""
        if not records:
            raise ColumnBatchError("from_records needs at least one record")
        first = records[0]
        cls = type(first)
        head = tuple(first[3:HEADER_LEN])
        for i, r in enumerate(records):
            if type(r) is not cls or tuple(r[3:HEADER_LEN]) != head or r[2] != first[2] + i \
                    or r[1] != SCHEMA_VERSION:
                raise ColumnBatchError(f"record #{i} does not continue the batch (same kind, version {SCHEMA_VERSION}, "
                                       f"controller, epoch, time and cause; consecutive offsets): {r!r:.200}")
        body = list(zip(*records))[HEADER_LEN:]
        return cls_.from_columns(cls, first[2], head, n=len(records), **dict(zip(cls._fields[HEADER_LEN:], body)))

    # -- access ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        """The records, as :meth:`records` gives them: a batch reads as a sequence of records."""
        return iter(self.records())

    def __getitem__(self, i):
        """Record ``i`` (or a list of records for a slice), as :meth:`records` gives them."""
        return self.records()[i]

    @property
    def kind(self) -> int:
        return self.cls.KIND

    @property
    def header(self) -> tuple[int, int, int, int]:
        """(controller_id, controller_epoch, timestamp_ms, cause_offset)."""
        return self.controller_id, self.controller_epoch, self.timestamp_ms, self.cause_offset

    @property
    def end_offset(self) -> int:
        return self.first_offset + self.n

    @property
    def fields(self) -> tuple[str, ...]:
        """The body field names, in the order of :attr:`columns`."""
        return self.cls._fields[HEADER_LEN:]

    def column(self, name: str):
        """The column of body field ``name``."""
        try:
            return self.columns[self.fields.index(name)]
        except ValueError:
            raise KeyError(f"{self.cls.__name__} has no body field {name!r}") from None

    def slice(self, start: int, stop: int | None = None) -> ColumnBatch:
        """Records ``start..stop-1`` (indexes within the batch) as a batch of their own."""
        start, stop, _ = slice(start, stop).indices(self.n)
        stop = max(start, stop)
        if start == 0 and stop == self.n:
            return self
        columns = []
        for c in self.columns:
            if isinstance(c, DictColumn):
                columns.append(DictColumn(c.dictionary, c.codes[start:stop]))
            elif isinstance(c, ListColumn):
                lo, hi = int(c.offsets[start]), int(c.offsets[stop])
                columns.append(ListColumn(_owned(c.offsets[start:stop + 1] - np.int32(lo), _DTYPES["i4"]),
                                          c.values[lo:hi]))
            else:
                columns.append(c[start:stop])
        return ColumnBatch(self.cls, self.first_offset + start, self.header, stop - start, tuple(columns), v=self.v)

    def _value_lists(self) -> list:
        out = []
        for c in self.columns:
            if isinstance(c, DictColumn):
                out.append(c.values())
            elif isinstance(c, ListColumn):
                out.append(c.tuples())
            else:
                out.append(c.tolist())
        return out

    def _rows(self):
        n, first = self.n, self.first_offset
        head = [repeat(self.cls.KIND, n), repeat(self.v, n), range(first, first + n), repeat(self.controller_id, n),
                repeat(self.controller_epoch, n), repeat(self.timestamp_ms, n), repeat(self.cause_offset, n)]
        return zip(*head, *self._value_lists())

    def records(self) -> list:
        """The records as ``events.records`` objects, exactly as the row form decodes them (built once; the
        list is shared by every caller: do not change it)."""
        if self._records is None:
            self._records = list(map(partial(_new, self.cls), self._rows()))
        return self._records

    def raw_records(self) -> list:
        """The records as plain tuples (what ``codec.decode_raw`` gives for the row form)."""
        return list(self._rows())

    def __eq__(self, other) -> bool:
        if type(other) is not ColumnBatch:
            return NotImplemented
        return (self.cls is other.cls and self.v == other.v and self.first_offset == other.first_offset
                and self.header == other.header and self.n == other.n
                and self._value_lists() == other._value_lists())

    __hash__ = None

    def __repr__(self) -> str:
        return (f"ColumnBatch({self.cls.__name__}, first_offset={self.first_offset}, n={self.n}, "
                f"header={self.header})")

    # -- the stored form ---------------------------------------------------------------------

    def encode(self) -> msgpack.ExtType:
        """The msgpack element of a batch payload: ext type EXT_COLUMNS around the batch's array."""
        return msgpack.ExtType(EXT_COLUMNS, b"".join(self._inner_pieces()))

    def encode_pieces(self) -> list[bytes]:
        """The element's msgpack bytes (those ``msgpack.packb(self.encode())`` gives) in pieces:
        the columns' buffers as they are, framing in between; for vectored writes."""
        inner = self._inner_pieces()
        return [_ext_header(EXT_COLUMNS, sum(map(len, inner))), *inner]

    def _inner_pieces(self) -> list[bytes]:
        pack = _pack
        head = (self.cls.KIND, self.v, self.first_offset, self.controller_id, self.controller_epoch,
                self.timestamp_ms, self.cause_offset, self.n)
        pieces = [_array_header(9) + pack(head)[1:] + _array_header(len(self.columns))]
        for c in self.columns:
            if isinstance(c, DictColumn):
                codes = _bytes_of(c.codes)
                pieces += [_array_header(3) + pack(_TAG[STR]) + pack(list(c.dictionary)) + _bin_header(len(codes)),
                           codes]
            elif isinstance(c, ListColumn):
                offsets, values = _bytes_of(c.offsets), _bytes_of(c.values)
                pieces += [_array_header(4) + pack(_TAG[INTS]) + pack(_dtype_name(c.values))
                           + _bin_header(len(offsets)), offsets, _bin_header(len(values)), values]
            elif c.dtype == np.bool_:
                data = _bytes_of(c)
                pieces += [_array_header(2) + pack(_TAG[BOOL]) + _bin_header(len(data)), data]
            else:
                data = _bytes_of(c)
                pieces += [_array_header(3) + pack(_TAG[INT]) + pack(_dtype_name(c)) + _bin_header(len(data)), data]
        return pieces

    @classmethod
    def decode(cls_, data: bytes | memoryview | msgpack.ExtType, start: int = 0, end: int | None = None) -> ColumnBatch:
        """Parse an element's ext data (``data[start:end]``, or the ExtType itself); ColumnBatchError
        if it breaks the format. The columns are views of ``data`` (no copy of the column bytes)."""
        if isinstance(data, msgpack.ExtType):
            if data.code != EXT_COLUMNS:
                raise ColumnBatchError(f"msgpack ext type {data.code} is not a columnar batch ({EXT_COLUMNS})")
            data = data.data
        inner = _parse(data, start, len(data) if end is None else end)
        if type(inner) is not tuple or len(inner) != 9:
            raise ColumnBatchError(f"columnar batch is not an array of 9 elements: {inner!r:.200}")
        kind, v, first, cid, epoch, ts, cause, n, cols = inner
        try:
            cls = KINDS[kind]
            types = COLUMN_KINDS[kind]
        except (KeyError, TypeError):
            raise ColumnBatchError(f"columnar batch of unknown or non-columnar kind {kind!r:.50}") from None
        name = cls.__name__
        if v != SCHEMA_VERSION or type(v) is not int:
            raise ColumnBatchError(f"columnar batch of {name} has schema version {v!r}; columnar batches are "
                                   f"version {SCHEMA_VERSION}")
        if not all(type(x) is int for x in (first, cid, epoch, ts, cause, n)) or n < 1 or first < 0:
            raise ColumnBatchError(f"columnar batch of {name} has a malformed header (first_offset, controller_id, "
                                   f"controller_epoch, timestamp_ms, cause_offset, n): {inner[2:8]!r:.200}")
        if type(cols) is not tuple or len(cols) != len(types):
            raise ColumnBatchError(f"columnar batch of {name} has {len(cols) if type(cols) is tuple else cols!r:.50} "
                                   f"columns, expected {len(types)}")
        fields = cls._fields[HEADER_LEN:]
        columns = tuple(_decode_column(name, f, t, c, n) for f, t, c in zip(fields, types, cols))
        return cls_(cls, first, (cid, epoch, ts, cause), n, columns, v=v)

    # -- Arrow -------------------------------------------------------------------------------

    def to_arrow(self):
        """A ``pyarrow.RecordBatch`` in :func:`arrow_schema` of the kind: a column per field, header included.

        Built from the arrays (no Python object per record): ints as int64, bools as bool,
        strings dictionary-encoded (int32 codes), int tuples as list<int64>.
        """
        import pyarrow as pa
        import pyarrow.compute as pc
        n, first = self.n, self.first_offset
        int64 = pa.int64()
        nulls = pa.nulls(n, int64)   # constant columns are filled in Arrow's memory pool (no numpy buffer)
        arrays = [pc.fill_null(nulls, value) for value in (self.cls.KIND, self.v)]
        arrays.append(pa.array(np.arange(first, first + n, dtype=np.int64)))
        arrays += [pc.fill_null(nulls, value) for value in self.header]
        for c in self.columns:
            if isinstance(c, DictColumn):
                arrays.append(pa.DictionaryArray.from_arrays(pa.array(c.codes), pa.array(c.dictionary, pa.string())))
            elif isinstance(c, ListColumn):
                arrays.append(pa.ListArray.from_arrays(pa.array(c.offsets), pa.array(c.values).cast(int64)))
            elif c.dtype == np.bool_:
                arrays.append(pa.array(c))
            else:
                arrays.append(pa.array(c).cast(int64))
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(self.cls))


# msgpack framing, as msgpack-python writes it (the smallest form), so that the pieces joined are
# the bytes msgpack.packb gives for the same element.
_pack = msgpack.Packer(use_bin_type=True).pack
_U8, _U16, _U32 = struct.Struct(">B"), struct.Struct(">H"), struct.Struct(">I")
_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


def _array_header(n: int) -> bytes:
    if n <= 0x0F:
        return bytes((0x90 | n,))
    return b"\xdc" + _U16.pack(n) if n <= 0xFFFF else b"\xdd" + _U32.pack(n)


def _bin_header(n: int) -> bytes:
    if n <= 0xFF:
        return b"\xc4" + _U8.pack(n)
    return b"\xc5" + _U16.pack(n) if n <= 0xFFFF else b"\xc6" + _U32.pack(n)


def _ext_header(code: int, n: int) -> bytes:
    if n in _FIXEXT:
        return bytes((_FIXEXT[n], code))
    if n <= 0xFF:
        return bytes((0xC7, n, code))
    return (b"\xc8" + _U16.pack(n) if n <= 0xFFFF else b"\xc9" + _U32.pack(n)) + bytes((code,))


def _decode_column(kind_name: str, field: str, type_: str, column, n: int):
    where = f"columnar batch of {kind_name}, column {field}"
    if type(column) is not tuple or not column or column[0] != _TAG[type_]:
        raise ColumnBatchError(f"{where}: expected a {_TAG[type_]!r} column, got {column!r:.100}")
    try:
        if type_ == INT:
            _, dtype, data = column
            return _array(where, data, dtype, n)
        if type_ == BOOL:
            _, data = column
            a = _array(where, data, "u1", n)
            if n and int(a.max()) > 1:
                raise ColumnBatchError(f"{where}: bool values must be 0 or 1")
            return a.view(np.bool_)
        if type_ == STR:
            _, dictionary, data = column
            codes = _array(where, data, "i4", n)
            if type(dictionary) is not tuple or not all(type(s) is str for s in dictionary):
                raise ColumnBatchError(f"{where}: the dictionary must be an array of strings")
            if n and (int(codes.min()) < 0 or int(codes.max()) >= len(dictionary)):
                raise ColumnBatchError(f"{where}: dictionary codes outside 0..{len(dictionary) - 1}")
            return DictColumn(dictionary, codes)
        _, dtype, offsets, values = column
        offsets = _array(where, offsets, "i4", n + 1)
        values = _array(where, values, dtype, None)
        if offsets[0] != 0 or offsets[-1] != len(values) or np.any(offsets[1:] < offsets[:-1]):
            raise ColumnBatchError(f"{where}: list offsets must rise from 0 to the number of values ({len(values)})")
        return ListColumn(offsets, values)
    except ValueError as exc:   # a column array of the wrong length
        if isinstance(exc, ColumnBatchError):
            raise
        raise ColumnBatchError(f"{where}: malformed column {column!r:.100}") from None


def _array(where: str, data, dtype: str, n: int | None) -> np.ndarray:
    if type(data) is not memoryview:
        raise ColumnBatchError(f"{where}: expected a bin buffer, got {type(data).__name__}")
    try:
        dt = _DTYPES[dtype]
    except (KeyError, TypeError):
        raise ColumnBatchError(f"{where}: unknown dtype {dtype!r:.20} (expected one of {', '.join(_DTYPES)})") from None
    if len(data) % dt.itemsize or (n is not None and len(data) != n * dt.itemsize):
        raise ColumnBatchError(f"{where}: {len(data)} bytes of {dtype}, expected {n} values")
    return np.frombuffer(data, dtype=dt)


# ---------------------------------------------------------------------------------------------
# Parsing an element without copying its buffers
# ---------------------------------------------------------------------------------------------

_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_U64, _F32, _F64 = struct.Struct(">Q"), struct.Struct(">f"), struct.Struct(">d")
# first byte -> (struct of the value or length, what it is) for the fixed-width forms
_WIDTH = {0xCC: (_U8, "int"), 0xCD: (_U16, "int"), 0xCE: (_U32, "int"), 0xCF: (_U64, "int"),
          0xD0: (_I8, "int"), 0xD1: (_I16, "int"), 0xD2: (_I32, "int"), 0xD3: (_I64, "int"),
          0xCA: (_F32, "float"), 0xCB: (_F64, "float"),
          0xD9: (_U8, "str"), 0xDA: (_U16, "str"), 0xDB: (_U32, "str"),
          0xC4: (_U8, "bin"), 0xC5: (_U16, "bin"), 0xC6: (_U32, "bin"),
          0xDC: (_U16, "array"), 0xDD: (_U32, "array"), 0xDE: (_U16, "map"), 0xDF: (_U32, "map")}


class _Parser:
    """msgpack, as ``msgpack.unpackb(use_list=False, raw=False)`` reads it, except that a bin is a
    memoryview of the input (zero-copy) and an ext is refused (none belongs inside a columnar batch)."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data, start: int, end: int):
        self.data = data if type(data) is memoryview else memoryview(data)
        self.pos, self.end = start, end

    def _take(self, n: int) -> int:
        at = self.pos
        if n < 0 or at + n > self.end:
            raise ValueError("truncated")
        self.pos = at + n
        return at

    def value(self):
        b = self.data[self._take(1)]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self._str(b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return self._array(b & 0x0F)
        if 0x80 <= b <= 0x8F:
            return self._map(b & 0x0F)
        if b == 0xC0:
            return None
        if b in (0xC2, 0xC3):
            return b == 0xC3
        try:
            st, what = _WIDTH[b]
        except KeyError:
            raise ValueError(f"unexpected msgpack type byte 0x{b:02x}") from None
        x = st.unpack_from(self.data, self._take(st.size))[0]
        if what in ("int", "float"):
            return x
        if what == "str":
            return self._str(x)
        if what == "bin":
            at = self._take(x)
            return self.data[at:at + x]
        return self._array(x) if what == "array" else self._map(x)

    def _str(self, n: int) -> str:
        at = self._take(n)
        return str(self.data[at:at + n], "utf-8")

    def _array(self, n: int) -> tuple:
        return tuple(self.value() for _ in range(n))

    def _map(self, n: int) -> dict:
        out = {}
        for _ in range(n):
            key = self.value()
            out[key] = self.value()   # (an unhashable key raises TypeError, reported as invalid)
        return out


def _parse(data, start: int, end: int):
    parser = _Parser(data, start, end)
    try:
        value = parser.value()
    except (ValueError, TypeError, RecursionError) as exc:
        raise ColumnBatchError(f"columnar batch is not valid msgpack: {exc}") from None
    if parser.pos != end:
        raise ColumnBatchError(f"columnar batch is not valid msgpack: {end - parser.pos} bytes after its array")
    return value


# ---------------------------------------------------------------------------------------------
# Arrow schemas and row records as Arrow
# ---------------------------------------------------------------------------------------------

_SCHEMAS: dict = {}


def arrow_schema(cls):
    """The Arrow schema of ``cls`` records as :meth:`ColumnBatch.to_arrow` and :func:`records_to_arrow` give them."""
    schema = _SCHEMAS.get(cls)
    if schema is None:
        import pyarrow as pa
        arrow = {INT: pa.int64(), BOOL: pa.bool_(), STR: pa.dictionary(pa.int32(), pa.string()),
                 INTS: pa.list_(pa.int64())}
        schema = pa.schema([(f, pa.int64()) for f in HEADER_FIELDS]
                           + [(f, arrow[t]) for f, t in zip(cls._fields[HEADER_LEN:], field_types(cls))])
        _SCHEMAS[cls] = schema
    return schema


def records_to_arrow(cls, records: Sequence[tuple]):
    """Row records of kind ``cls`` (any headers and offsets) as a RecordBatch in :func:`arrow_schema`."""
    import pyarrow as pa
    schema = arrow_schema(cls)
    columns = list(zip(*records)) if records else [()] * len(schema)
    arrays = []
    for values, f in zip(columns, schema):
        if pa.types.is_dictionary(f.type):
            arrays.append(pa.array(values, pa.string()).dictionary_encode())
        else:
            arrays.append(pa.array(values, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
