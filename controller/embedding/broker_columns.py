"""What the in-process brokers know from controllers, as columns (``BrokerServer`` in ``cluster``).

Two structures, no Python object per partition:

* :class:`LeaderAndIsrTable` — one broker's LeaderAndIsr state, (topic, partition) -> (leader,
  leader_epoch, isr, partition_epoch): a sorted int64 key per partition (topic id << 32 | partition)
  and an int32 row (leader, leader_epoch, partition_epoch, ISR length, the ISR -1 padded). A broker holds
  the partitions it
hosts, a tenth of the cluster at RF 3 on 30 brokers: sparse, so sorted keys rather than a slot per
  partition. The topic ids of a cluster are given in the order the brokers first see the topics, so
  a new topic's keys come after every key a table holds and its partitions are appended.
* :class:`MetadataImage` — an UpdateMetadata cache (every partition of the cluster, on every broker):
  per topic an int32 matrix with a row per partition id (header code, brokers, state_controller_epoch,
  leader, leader_epoch, isr, partition_epoch, replicas, offline_replicas; the tuples as codes) and the
  record offsets. An image is never changed once built: applying a request builds the next image,
  copying only the topics it touches. All brokers get the same UpdateMetadata requests, so
  :meth:`BrokerColumns.apply_metadata` builds the next image once and hands the same object to every
  broker whose cache was the same image.

The tuples (ISRs, replica lists, the recipients of an UpdateMetadata) and record headers live in
pools shared by the brokers of a cluster (:class:`BrokerColumns`); their codes never leave this
module. Both structures read as Mappings (:class:`MetadataView` builds the UpdateMetadataPartition
records on access) and iterate in (topic, partition) order, whatever the order of the requests.
"""
from __future__ import annotations

import weakref
from collections.abc import ItemsView, Iterator, Mapping, MutableMapping, ValuesView

import numpy as np

from events.arrays import distinct, factorize, from_narrow_bytes, narrow_bytes, unique
from events.columns import ColumnBatch, ColumnBatchError, ListColumn
from events.records import LEADER_DURING_DELETE, UpdateMetadataPartition

__all__ = ["BrokerColumns", "LeaderAndIsrTable", "MetadataImage", "MetadataView"]

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_PART_BITS = 32
_PART_MASK = (1 << _PART_BITS) - 1
# Int tuple packing (BrokerColumns.tuple_codes): length in 2 bits, then up to 3 values of 20 bits.
_LEN_BITS, _SLOT_BITS, _PACKED_WIDTH = 2, 20, 3
_LEN_MASK, _SLOT_MASK = (1 << _LEN_BITS) - 1, (1 << _SLOT_BITS) - 1

# MetadataImage row columns.
HDR, BROKERS, SCE, LEADER, LEADER_EPOCH, ISR, PARTITION_EPOCH, REPLICAS, OFFLINE = range(9)
META_WIDTH = 9
TUPLE_COLUMNS = (BROKERS, ISR, REPLICAS, OFFLINE)
# LeaderAndIsrTable row columns: then the ISR's brokers, -1 padded to the table's width.
L_LEADER, L_EPOCH, L_PARTITION_EPOCH, L_ISR_LEN = range(4)
L_ISR = 4

_UMP_KIND = UpdateMetadataPartition.KIND
_new = tuple.__new__


def int32s(name: str, values) -> np.ndarray:
    """``values`` as int32, or a ValueError naming the field when one does not fit (Kafka's fields are int32)."""
    a = np.asarray(values)
    if a.dtype != np.int32:
        if a.dtype.kind in "iu" and a.dtype.itemsize < 4 or a.dtype == np.uint8:
            return a.astype(np.int32)
        if a.size and a.dtype.kind in "iu" and (int(a.min()) < _I32_MIN or int(a.max()) > _I32_MAX):
            raise ValueError(f"{name}: values outside the int32 range (min {int(a.min())}, max {int(a.max())})")
        if a.size and a.dtype.kind not in "iu":
            raise ValueError(f"{name}: expected ints, got dtype {a.dtype}")
        a = a.astype(np.int32)
    return a


def _partitions(values) -> np.ndarray:
    a = np.asarray(values)
    if a.size and (a.dtype.kind not in "iu" or int(a.min()) < 0 or int(a.max()) > _I32_MAX):
        raise ValueError(f"partition ids must be ints in 0..{_I32_MAX}")
    return a.astype(np.int64)


class _Pool:
    """Distinct hashable values under dense int codes, in the order they were first given."""

    __slots__ = ("items", "codes")

    def __init__(self, first=None):
        self.items: list = []
        self.codes: dict = {}
        if first is not None:
            self.code(first)

    def code(self, item) -> int:
        c = self.codes.get(item)
        if c is None:
            c = self.codes[item] = len(self.items)
            self.items.append(item)
        return c


class BrokerColumns:
    """What the brokers of one cluster share: topic ids, the tuple and header pools, and the cache of
    UpdateMetadata results (the image each (image, request) pair led to)."""

    def __init__(self):
        self.topic_ids: dict[str, int] = {}
        self.topic_names: list[str] = []
        self.tuples = _Pool(())
        self.headers = _Pool()
        self.empty_image = MetadataImage({}, 0)
        self._rank: np.ndarray | None = None      # topic id -> rank of its name
        self._packed: dict[int, int] = {}         # packed short tuple -> its code (tuple_codes)
        self._applied: dict[tuple, tuple] = {}    # (id(image), id(partitions)) -> (image ref, partitions, result ref)
        self._updates: dict[int, tuple] = {}      # id(batch) -> (batch, normalised update)
        self._batches: dict[int, tuple] = {}      # id(records) -> (records, their ColumnBatch)

    # --- topics -----------------------------------------------------------------------------------
    def topic_id(self, name: str) -> int:
        t = self.topic_ids.get(name)
        if t is None:
            if type(name) is not str:
                raise ValueError(f"topic names are strings, got {name!r:.100}")
            t = self.topic_ids[name] = len(self.topic_names)
            self.topic_names.append(name)
            self._rank = None
        return t

    def key(self, tp: tuple, create: bool = False) -> int | None:
        """The int64 key of (topic, partition); None for a topic never seen (unless ``create``)."""
        topic, p = tp
        t = self.topic_id(topic) if create else self.topic_ids.get(topic)
        if t is None or type(p) is not int or not 0 <= p <= _I32_MAX:
            if create:
                raise ValueError(f"partition ids must be ints in 0..{_I32_MAX}, got {p!r:.50}")
            return None
        return t << _PART_BITS | p

    def batch_keys(self, batch: ColumnBatch) -> np.ndarray:
        """The key of every row of a columnar request."""
        topic = batch.column("topic")
        ids = np.fromiter(map(self.topic_id, topic.dictionary), dtype=np.int64, count=len(topic.dictionary))
        parts = _partitions(batch.column("partition"))
        if not len(parts):
            return parts
        return (ids[topic.codes] << _PART_BITS) | parts

    def name_rank(self) -> np.ndarray:
        """int64 per topic id: the position of its name among all names (iteration order)."""
        if self._rank is None or len(self._rank) != len(self.topic_names):
            order = sorted(range(len(self.topic_names)), key=self.topic_names.__getitem__)
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            self._rank = rank
        return self._rank

    def sort_keys(self, keys: np.ndarray) -> np.ndarray:
        """The order of ``keys`` by (topic name, partition)."""
        if not len(keys):
            return np.zeros(0, dtype=np.int64)
        ranked = (self.name_rank()[keys >> _PART_BITS] << _PART_BITS) | (keys & _PART_MASK)
        if bool(np.all(ranked[1:] > ranked[:-1])):   # (topics made in name order: already in order)
            return np.arange(len(keys))
        return np.argsort(ranked, kind="stable")

    def tps(self, keys: np.ndarray) -> list[tuple]:
        names = self.topic_names
        return list(zip(map(names.__getitem__, (keys >> _PART_BITS).tolist()), (keys & _PART_MASK).tolist()))

    # --- tuples -----------------------------------------------------------------------------------
    def tuple_codes(self, column: ListColumn) -> np.ndarray:
        """int32 pool code of each tuple of an int tuple column; each distinct tuple is interned once."""
        offsets = np.asarray(column.offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n <= 0:
            return np.zeros(0, dtype=np.int32)
        values = np.asarray(column.values)[int(offsets[0]):int(offsets[-1])]
        offsets = offsets - offsets[0]
        lengths = np.diff(offsets)
        code = self.tuples.code
        width = int(lengths.max())
        if width == 0:
            return np.zeros(n, dtype=np.int32)
        lo, hi = int(values.min()), int(values.max())
        if int(lengths.min()) == width:
            m = values.reshape(n, width)
            if width > _PACKED_WIDTH and (m == m[0]).all():   # the recipients of an UpdateMetadata
                return np.full(n, code(tuple(m[0].tolist())), dtype=np.int32)
        else:
            m = np.full((n, width), max(lo, 0), dtype=values.dtype)   # (the lengths tell padding from values)
            rows = np.repeat(np.arange(n), lengths)
            m[rows, np.arange(len(values)) - offsets[:-1][rows]] = values
        if lo >= 0 and hi < 1 << _SLOT_BITS and width <= _PACKED_WIDTH:
            # Short tuples of small ints (replica lists, ISRs): a fixed packing into one int64, whose
            # code the pool remembers, so a request costs one factorize and a dict lookup per distinct tuple.
            m = m.astype(np.int64)
            key = lengths.astype(np.int64)
            for j in range(width):
                key |= m[:, j] << (_LEN_BITS + _SLOT_BITS * j)
            uniq, inverse = factorize(key)
            packed = self._packed
            codes = []
            for k in uniq.tolist():
                c = packed.get(k)
                if c is None:
                    t = tuple((k >> (_LEN_BITS + _SLOT_BITS * j)) & _SLOT_MASK for j in range(k & _LEN_MASK))
                    c = packed[k] = code(t)
                codes.append(c)
            return np.array(codes, dtype=np.int32)[inverse.reshape(-1)]
        if lo < 0:
            m = m.astype(np.int64) - lo
        _, first, inverse = np.unique(np.column_stack([lengths, m]), axis=0, return_index=True, return_inverse=True)
        flat = values.tolist()
        starts = offsets.tolist()
        uniq = np.array([code(tuple(flat[starts[i]:starts[i + 1]])) for i in first.tolist()], dtype=np.int32)
        return uniq[inverse.reshape(-1)]

    def tuple_code(self, t) -> int:
        return self.tuples.code(tuple(t))

    def as_columns(self, partitions, at_least: int):
        """A request's records (at least ``at_least`` of them, as the controller emits them: one header,
        consecutive offsets) as one ColumnBatch, the same object for every broker given the same tuple;
        else the records as they are."""
        if type(partitions) is not tuple or len(partitions) < at_least:
            return partitions
        hit = self._batches.get(id(partitions))
        if hit is not None and hit[0] is partitions:
            return hit[1]
        try:
            batch = ColumnBatch.from_records(partitions)
        except ColumnBatchError:
            batch = partitions
        if len(self._batches) >= 4:
            self._batches.pop(next(iter(self._batches)))
        self._batches[id(partitions)] = (partitions, batch)
        return batch

    # --- UpdateMetadata ---------------------------------------------------------------------------
    def apply_metadata(self, image: MetadataImage, partitions) -> MetadataImage:
        """The image after ``partitions`` (a ColumnBatch or records of an UpdateMetadata request); the same
        object for every broker that applies the same request object to the same image."""
        key = (id(image), id(partitions))
        hit = self._applied.get(key)
        if hit is not None and hit[0]() is image and hit[1] is partitions:
            result = hit[2]()
            if result is not None:
                return result
        if type(partitions) is ColumnBatch:
            update = self._update_of(partitions)
            result = image.with_rows(*update) if update is not None else image.with_records(self, partitions.records())
        else:
            result = image.with_records(self, partitions)
        if len(self._applied) >= 8:
            self._applied.pop(next(iter(self._applied)))
        self._applied[key] = (weakref.ref(image), partitions, weakref.ref(result))
        return result

    def _update_of(self, batch: ColumnBatch):
        """A columnar UpdateMetadata request as (keys, offsets, rows, removed), or None when it names a
        partition twice (then the records are applied one by one)."""
        hit = self._updates.get(id(batch))
        if hit is not None and hit[0] is batch:
            return hit[1]
        keys = self.batch_keys(batch)
        n = len(keys)
        if not distinct(keys):
            update = None
        else:
            rows = np.empty((n, META_WIDTH), dtype=np.int32)
            rows[:, HDR] = self.headers.code((batch.v, *batch.header))
            for c, name in ((BROKERS, "brokers"), (ISR, "isr"), (REPLICAS, "replicas"), (OFFLINE, "offline_replicas")):
                rows[:, c] = self.tuple_codes(batch.column(name))
            for c, name in ((SCE, "state_controller_epoch"), (LEADER, "leader"), (LEADER_EPOCH, "leader_epoch"),
                            (PARTITION_EPOCH, "partition_epoch")):
                rows[:, c] = int32s(name, batch.column(name))
            offsets = np.arange(batch.first_offset, batch.first_offset + n, dtype=np.int64)
            update = (keys, offsets, rows, rows[:, LEADER] == LEADER_DURING_DELETE)
        if len(self._updates) >= 4:
            self._updates.pop(next(iter(self._updates)))
        self._updates[id(batch)] = (batch, update)
        return update


# ---------------------------------------------------------------------------------------------
# LeaderAndIsr state of one broker
# ---------------------------------------------------------------------------------------------

def isr_block(column: ListColumn) -> tuple[np.ndarray, np.ndarray]:
    """An int tuple column as (lengths, an int32 matrix of the tuples, -1 padded)."""
    offsets = np.asarray(column.offsets)
    n = len(offsets) - 1
    values = int32s("isr", np.asarray(column.values)[int(offsets[0]):int(offsets[-1])]) if n > 0 else None
    if n <= 0 or not len(values):
        return np.zeros(max(n, 0), dtype=np.int32), np.zeros((max(n, 0), 0), dtype=np.int32)
    width = int(offsets[1] - offsets[0])
    if len(values) == n * width and width and bool(np.all(np.diff(offsets) == width)):
        return np.full(n, width, dtype=np.int32), values.reshape(n, width)
    lengths = np.diff(offsets).astype(np.int32)
    m = np.full((n, int(lengths.max())), -1, dtype=np.int32)
    rows = np.repeat(np.arange(n), lengths)
    m[rows, np.arange(len(values)) - (offsets[:-1] - offsets[0])[rows]] = values
    return lengths, m


class LeaderAndIsrTable(MutableMapping):
    """One broker's LeaderAndIsr state: (topic, partition) -> (leader, leader_epoch, isr, partition_epoch)."""

    __slots__ = ("_shared", "_keys", "_rows", "_size")

    def __init__(self, shared: BrokerColumns):
        self._shared = shared
        self._keys = np.zeros(0, dtype=np.int64)
        self._rows = np.zeros((0, L_ISR), dtype=np.int32)
        self._size = 0

    @staticmethod
    def rows(leader, leader_epoch, partition_epoch, isr_lengths: np.ndarray, isrs: np.ndarray) -> np.ndarray:
        """Table rows from columns (``isrs``: -1 padded, as ``isr_block`` gives them)."""
        out = np.empty((len(isr_lengths), L_ISR + isrs.shape[1]), dtype=np.int32)
        out[:, L_LEADER] = leader
        out[:, L_EPOCH] = leader_epoch
        out[:, L_PARTITION_EPOCH] = partition_epoch
        out[:, L_ISR_LEN] = isr_lengths
        out[:, L_ISR:] = isrs
        return out

    # --- reading ----------------------------------------------------------------------------------
    def _find(self, key) -> int:
        if key is None:
            return -1
        keys = self._keys[:self._size]
        i = int(np.searchsorted(keys, key))
        return i if i < len(keys) and keys[i] == key else -1

    def _value(self, i: int) -> tuple:
        row = self._rows[i].tolist()
        return row[L_LEADER], row[L_EPOCH], tuple(row[L_ISR:L_ISR + row[L_ISR_LEN]]), row[L_PARTITION_EPOCH]

    def get(self, tp, default=None):
        i = self._find(self._shared.key(tp))
        return default if i < 0 else self._value(i)

    def __getitem__(self, tp) -> tuple:
        i = self._find(self._shared.key(tp))
        if i < 0:
            raise KeyError(tp)
        return self._value(i)

    def __contains__(self, tp) -> bool:
        return self._find(self._shared.key(tp)) >= 0

    def __len__(self) -> int:
        return self._size

    def _order(self) -> np.ndarray:
        return self._shared.sort_keys(self._keys[:self._size])

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._shared.tps(self._keys[:self._size][self._order()]))

    def _pairs(self) -> list[tuple]:
        keys, rows = self.columns()
        values = [(r[L_LEADER], r[L_EPOCH], tuple(r[L_ISR:L_ISR + r[L_ISR_LEN]]), r[L_PARTITION_EPOCH])
                  for r in rows.tolist()]
        return list(zip(self._shared.tps(keys), values))

    def items(self) -> ItemsView:
        return _Items(self)

    def values(self) -> ValuesView:
        return _Values(self)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, rows) in (topic, partition) order, the ISRs only as wide as the longest: copies."""
        order = self._order()
        rows = self._rows[:self._size][order]
        width = int(rows[:, L_ISR_LEN].max()) if len(rows) else 0
        return self._keys[:self._size][order], rows[:, :L_ISR + width]

    # --- writing ----------------------------------------------------------------------------------
    def __setitem__(self, tp, value) -> None:
        self.update({tp: value})

    def __delitem__(self, tp) -> None:
        i = self._find(self._shared.key(tp))
        if i < 0:
            raise KeyError(tp)
        self._delete(np.array([i]))

    def clear(self) -> None:
        self._size = 0

    def update(self, other=(), **kw) -> None:
        """Many states at once (a dict, or (tp, state) pairs; later ones win)."""
        if kw:
            raise TypeError("LeaderAndIsrTable keys are (topic, partition) tuples")
        items = dict(other.items() if isinstance(other, Mapping) else other)
        if not items:
            return
        shared = self._shared
        keys = np.fromiter((shared.key(tp, create=True) for tp in items), dtype=np.int64, count=len(items))
        try:
            states = [(leader, epoch, pe, tuple(isr)) for leader, epoch, isr, pe in items.values()]
            width = max(len(s[3]) for s in states)
            rows = np.array([(leader, epoch, pe, len(isr), *isr, *(-1,) * (width - len(isr)))
                             for leader, epoch, pe, isr in states], dtype=np.int64).reshape(len(states), L_ISR + width)
        except (TypeError, ValueError):
            raise ValueError("a LeaderAndIsr state is (leader, leader_epoch, isr tuple, partition_epoch) of ints")
        self.upsert(keys, int32s("LeaderAndIsr state", rows))

    def _fit(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` as wide as the table (the table widened if they are wider)."""
        have, want = self._rows.shape[1], rows.shape[1]
        if want > have:
            wider = np.full((len(self._rows), want), -1, dtype=np.int32)
            wider[:, :have] = self._rows
            self._rows = wider
        elif want < have:
            wider = np.full((len(rows), have), -1, dtype=np.int32)
            wider[:, :want] = rows
            rows = wider
        return rows

    def upsert(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Set the rows of distinct ``keys``."""
        rows = self._fit(rows)
        if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            order = np.argsort(keys, kind="stable")
            keys, rows = keys[order], rows[order]
        pos, found = self._lookup(keys)
        self._rows[pos[found]] = rows[found]
        self._insert(pos[~found], keys[~found], rows[~found])

    def apply_newer(self, keys: np.ndarray, rows: np.ndarray, in_order: bool = False) -> np.ndarray:
        """LeaderAndIsr partition states, ``keys`` distinct (``in_order``: ascending): each is applied when
        the broker has no state for its partition or its leader epoch is greater than the one held.
        Returns which were applied."""
        n = len(keys)
        rows = self._fit(rows)
        order = None
        if not in_order:
            order = np.argsort(keys, kind="stable")
            keys, rows = keys[order], rows[order]
        pos, found = self._lookup(keys)
        if not found.any():
            self._insert(pos, keys, rows)
            return np.ones(n, dtype=bool)
        applied = ~found
        applied[found] = rows[found, L_EPOCH] > self._rows[pos[found], L_EPOCH]
        update = found & applied
        self._rows[pos[update]] = rows[update]
        self._insert(pos[~found], keys[~found], rows[~found])
        if order is None:
            return applied
        out = np.empty(n, dtype=bool)
        out[order] = applied
        return out

    def remove(self, keys: np.ndarray) -> None:
        """Drop the states of ``keys`` (those it holds)."""
        if not len(keys) or not self._size:
            return
        keys = unique(keys)
        pos, found = self._lookup(keys)
        if found.any():
            self._delete(pos[found])

    def _lookup(self, sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        held = self._keys[:self._size]
        if not len(held) or not len(sorted_keys) or sorted_keys[0] > held[-1]:
            return np.full(len(sorted_keys), len(held)), np.zeros(len(sorted_keys), dtype=bool)
        pos = np.searchsorted(held, sorted_keys)
        found = pos < len(held)
        found[found] = held[pos[found]] == sorted_keys[found]
        return pos, found

    def _insert(self, pos: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> None:
        """Insert sorted new ``keys`` before positions ``pos``; at the end (new topics) in amortised O(new)."""
        m = len(keys)
        if not m:
            return
        size = self._size
        if size == 0 or keys[0] > self._keys[size - 1]:
            if size + m > len(self._keys):
                cap = max(size + m, 2 * len(self._keys), 16)
                grown_keys = np.empty(cap, dtype=np.int64)
                grown_rows = np.empty((cap, self._rows.shape[1]), dtype=np.int32)
                grown_keys[:size], grown_rows[:size] = self._keys[:size], self._rows[:size]
                self._keys, self._rows = grown_keys, grown_rows
            self._keys[size:size + m] = keys
            self._rows[size:size + m] = rows
        else:
            self._keys = np.insert(self._keys[:size], pos, keys)
            self._rows = np.insert(self._rows[:size], pos, rows, axis=0)
        self._size = size + m

    def _delete(self, positions: np.ndarray) -> None:
        keep = np.ones(self._size, dtype=bool)
        keep[positions] = False
        self._keys = self._keys[:self._size][keep]
        self._rows = self._rows[:self._size][keep]
        self._size = len(self._keys)

    def __repr__(self) -> str:
        return f"LeaderAndIsrTable({dict(self._pairs())!r})"


class _Items(ItemsView):
    __slots__ = ()

    def __iter__(self):
        return iter(self._mapping._pairs())


class _Values(ValuesView):
    __slots__ = ()

    def __iter__(self):
        return (v for _, v in self._mapping._pairs())


# ---------------------------------------------------------------------------------------------
# UpdateMetadata caches, shared by the brokers
# ---------------------------------------------------------------------------------------------

class _TopicRows:
    """One topic of an image: ``rows`` (int32, a row per partition id, HDR -1 where absent), ``offsets``."""

    __slots__ = ("rows", "offsets", "count")

    def __init__(self, rows: np.ndarray, offsets: np.ndarray, count: int):
        self.rows, self.offsets, self.count = rows, offsets, count

    def writable(self, width: int) -> _TopicRows:
        """A copy with room for partition ids below ``width``."""
        if width <= len(self.rows):
            return _TopicRows(self.rows.copy(), self.offsets.copy(), self.count)
        cap = max(width, len(self.rows))
        rows = np.full((cap, META_WIDTH), -1, dtype=np.int32)
        offsets = np.zeros(cap, dtype=np.int64)
        rows[:len(self.rows)] = self.rows
        offsets[:len(self.offsets)] = self.offsets
        return _TopicRows(rows, offsets, self.count)


_NO_TOPIC = _TopicRows(np.full((0, META_WIDTH), -1, dtype=np.int32), np.zeros(0, dtype=np.int64), 0)


class MetadataImage:
    """An UpdateMetadata cache: topic id -> :class:`_TopicRows`, and the number of partitions. Never changed
    once built (brokers share images)."""

    __slots__ = ("topics", "size", "__weakref__")

    def __init__(self, topics: dict, size: int):
        self.topics = topics
        self.size = size

    def with_rows(self, keys: np.ndarray, offsets: np.ndarray, rows: np.ndarray, removed: np.ndarray) -> MetadataImage:
        """The image after distinct partitions ``keys`` got ``rows`` (or, where ``removed``, left the cache)."""
        n = len(keys)
        if not n:
            return self
        tids = keys >> _PART_BITS
        if n > 1 and not bool(np.all(tids[1:] >= tids[:-1])):
            order = np.argsort(tids, kind="stable")
            keys, offsets, rows, removed, tids = keys[order], offsets[order], rows[order], removed[order], tids[order]
        parts = keys & _PART_MASK
        bounds = np.flatnonzero(tids[1:] != tids[:-1]) + 1
        starts = [0, *bounds.tolist()]
        stops = [*bounds.tolist(), n]
        topics = dict(self.topics)
        size = self.size
        any_removed = bool(removed.any())
        for start, stop, tid in zip(starts, stops, tids[starts].tolist()):
            p = parts[start:stop]
            old = topics.get(tid, _NO_TOPIC)
            seg = old.writable(int(p.max()) + 1)
            cached_before = int(np.count_nonzero(seg.rows[p, HDR] >= 0))
            if any_removed:
                gone = removed[start:stop]
                keep = ~gone
                seg.rows[p[keep]] = rows[start:stop][keep]
                seg.offsets[p[keep]] = offsets[start:stop][keep]
                seg.rows[p[gone], HDR] = -1
            else:
                seg.rows[p] = rows[start:stop]
                seg.offsets[p] = offsets[start:stop]
            seg.count = old.count + int(np.count_nonzero(seg.rows[p, HDR] >= 0)) - cached_before
            size += seg.count - old.count
            if seg.count:
                topics[tid] = seg
            else:
                topics.pop(tid, None)
        return MetadataImage(topics, size)

    def with_records(self, shared: BrokerColumns, records) -> MetadataImage:
        """The image after UpdateMetadata partition records, one by one, as ZkMetadataCache.updateMetadata
        applies them (LEADER_DURING_DELETE removes the partition)."""
        topics = dict(self.topics)
        copied: set[int] = set()
        size = self.size
        headers, code = shared.headers.code, shared.tuple_code
        for r in records:
            tid = shared.topic_id(r.topic)
            p = r.partition
            if type(p) is not int or not 0 <= p <= _I32_MAX:
                raise ValueError(f"partition ids must be ints in 0..{_I32_MAX}, got {p!r:.50}")
            seg = topics.get(tid, _NO_TOPIC)
            if tid not in copied or p >= len(seg.rows):
                seg = topics[tid] = seg.writable(p + 1)
                copied.add(tid)
            had = seg.rows[p, HDR] >= 0
            if r.leader == LEADER_DURING_DELETE:
                if had:
                    seg.rows[p, HDR] = -1
                    seg.count -= 1
                    size -= 1
                continue
            row = (headers((r.v, r.controller_id, r.controller_epoch, r.timestamp_ms, r.cause_offset)),
                   code(r.brokers), r.state_controller_epoch, r.leader, r.leader_epoch, code(r.isr),
                   r.partition_epoch, code(r.replicas), code(r.offline_replicas))
            seg.rows[p] = int32s(f"UpdateMetadata partition {r.topic}-{p}", np.array(row, dtype=np.int64))
            seg.offsets[p] = r.offset
            if not had:
                seg.count += 1
                size += 1
        for tid in copied:
            if not topics[tid].count:
                del topics[tid]
        return MetadataImage(topics, size)

    def columns(self, shared: BrokerColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, offsets, rows) of every partition, in (topic, partition) order."""
        if not self.topics:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, META_WIDTH), np.int32)
        keys, offsets, rows = [], [], []
        for tid, seg in self.topics.items():
            p = np.flatnonzero(seg.rows[:, HDR] >= 0)
            keys.append((np.int64(tid) << _PART_BITS) | p)
            offsets.append(seg.offsets[p])
            rows.append(seg.rows[p])
        keys, offsets, rows = np.concatenate(keys), np.concatenate(offsets), np.concatenate(rows)
        order = shared.sort_keys(keys)
        return keys[order], offsets[order], rows[order]

    @classmethod
    def from_columns(cls, keys: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> MetadataImage:
        return MetadataImage({}, 0).with_rows(keys, offsets, rows, np.zeros(len(keys), dtype=bool))


class MetadataView(Mapping):
    """A broker's metadata cache as ``(topic, partition) -> UpdateMetadataPartition``; records are built
    when asked for (equal to the records the broker was sent)."""

    __slots__ = ("_shared", "image")

    def __init__(self, shared: BrokerColumns, image: MetadataImage):
        self._shared = shared
        self.image = image

    def _row(self, tp):
        try:
            topic, p = tp
        except (TypeError, ValueError):
            return None
        tid = self._shared.topic_ids.get(topic)
        seg = self.image.topics.get(tid) if tid is not None else None
        if seg is None or type(p) is not int or not 0 <= p < len(seg.rows) or seg.rows[p, HDR] < 0:
            return None
        return seg, p

    def _record(self, topic: str, p: int, row: list, offset: int):
        v, cid, epoch, ts, cause = self._shared.headers.items[row[HDR]]
        t = self._shared.tuples.items
        return _new(UpdateMetadataPartition, (
            _UMP_KIND, v, offset, cid, epoch, ts, cause, t[row[BROKERS]], topic, p, row[SCE], row[LEADER],
            row[LEADER_EPOCH], t[row[ISR]], row[PARTITION_EPOCH], t[row[REPLICAS]], t[row[OFFLINE]]))

    def get(self, tp, default=None):
        found = self._row(tp)
        if found is None:
            return default
        seg, p = found
        return self._record(tp[0], p, seg.rows[p].tolist(), int(seg.offsets[p]))

    def __getitem__(self, tp):
        found = self._row(tp)
        if found is None:
            raise KeyError(tp)
        seg, p = found
        return self._record(tp[0], p, seg.rows[p].tolist(), int(seg.offsets[p]))

    def __contains__(self, tp) -> bool:
        return self._row(tp) is not None

    def __len__(self) -> int:
        return self.image.size

    def leaders(self, topic: str) -> np.ndarray:
        """The leader of every partition id of ``topic`` the cache holds, -1 where it holds none (a
        MetadataResponse's leaders, as one int32 array indexed by partition id)."""
        tid = self._shared.topic_ids.get(topic)
        seg = self.image.topics.get(tid) if tid is not None else None
        if seg is None:
            return np.zeros(0, dtype=np.int32)
        return np.where(seg.rows[:, HDR] >= 0, seg.rows[:, LEADER], -1).astype(np.int32, copy=False)

    def _topics(self) -> list:
        names = self._shared.topic_names
        return sorted((names[tid], seg) for tid, seg in self.image.topics.items())

    def __iter__(self):
        for name, seg in self._topics():
            for p in np.flatnonzero(seg.rows[:, HDR] >= 0).tolist():
                yield name, p

    def _pairs(self):
        for name, seg in self._topics():
            parts = np.flatnonzero(seg.rows[:, HDR] >= 0)
            record = self._record
            for p, row, off in zip(parts.tolist(), seg.rows[parts].tolist(), seg.offsets[parts].tolist()):
                yield (name, p), record(name, p, row, off)

    def items(self) -> ItemsView:
        return _Items(self)

    def values(self) -> ValuesView:
        return _Values(self)

    def __repr__(self) -> str:
        return f"MetadataView({len(self)} partitions)"


# ---------------------------------------------------------------------------------------------
# Snapshots (controller.embedding.cluster_snapshot describes the layout)
# ---------------------------------------------------------------------------------------------

def _first_seen(codes: np.ndarray) -> tuple[list, np.ndarray]:
    """Pool codes -> (the distinct codes in the order they first occur, a local code per element): a
    form that depends only on the values, not on the pools' history."""
    flat = codes.reshape(-1)
    if not len(flat):
        return [], codes.astype(np.int32)
    uniq, local = factorize(flat)
    return uniq.tolist(), local.reshape(codes.shape)


def _topic_columns(shared: BrokerColumns, keys: np.ndarray) -> tuple[list, bytes, bytes]:
    tids, local = _first_seen(keys >> _PART_BITS)
    names = shared.topic_names
    return [names[t] for t in tids], narrow_bytes(local), narrow_bytes(keys & _PART_MASK)


def _ints(data, n: int, what: str, dtype: str | None) -> np.ndarray:
    """``n`` ints of a snapshot column: of fixed ``dtype`` (format 2), or narrowed (``dtype`` None, format 3)."""
    try:
        if dtype is None:
            return from_narrow_bytes(data, n, f"cluster snapshot: broker state {what}").astype(np.int64)
        values = np.frombuffer(data, dtype=dtype) if type(data) is bytes else None
    except ValueError:
        values = None
    if values is None or len(values) != n:
        raise ValueError(f"cluster snapshot: malformed broker state ({what})")
    return values.astype(np.int64)


def _keys_of(shared: BrokerColumns, names: list, topic: bytes, partition: bytes, n: int | None = None) -> np.ndarray:
    """The keys of a state's rows; ``n`` given: format 3 (narrowed columns of ``n`` rows), else format 2 (i4)."""
    ids = np.array([shared.topic_id(name) for name in names], dtype=np.int64)
    if n is None:
        n = len(partition) // 4
        dtype = "<i4"
    else:
        if type(n) is not int or n < 0:
            raise ValueError("cluster snapshot: malformed broker state (row count)")
        dtype = None
    codes = _ints(topic, n, "topic column", dtype)
    parts = _ints(partition, n, "partition column", dtype)
    if len(codes) and (codes.min() < 0 or codes.max() >= len(ids) or parts.min() < 0 or parts.max() > _PART_MASK):
        raise ValueError("cluster snapshot: malformed broker state (topic and partition columns)")
    return (ids[codes] << _PART_BITS) | parts if len(codes) else parts


def _rows_of(data: bytes, n: int, width: int, narrow: bool = False) -> np.ndarray:
    rows = _ints(data, n * width, "rows", None if narrow else "<i4")
    if len(rows) and (int(rows.min()) < -(1 << 31) or int(rows.max()) >= 1 << 31):
        raise ValueError("cluster snapshot: malformed broker state (rows beyond int32)")
    return rows.reshape(n, width).astype(np.int32)


def _global(pool: _Pool, items: list, local: np.ndarray) -> np.ndarray:
    lut = np.array([pool.code(tuple(t)) for t in items], dtype=np.int32)
    if len(local) and (local.min() < 0 or local.max() >= len(lut)):
        raise ValueError("cluster snapshot: malformed broker state (a code outside its table)")
    return lut[local] if len(lut) else local


def table_state(table: LeaderAndIsrTable) -> list:
    """[topic names, rows n, columns w, topic index per row, partition, rows (leader, leader_epoch,
    partition_epoch, ISR length, the ISR -1 padded to the longest: n x w)], rows in (topic, partition) order,
    each column little-endian in its narrowest width (``events.arrays.narrow_bytes``). Format 2 held the
    arrays as i4 without n and w: [names, topic, partition, rows]."""
    keys, rows = table.columns()
    names, topic, partition = _topic_columns(table._shared, keys)
    return [names, len(keys), rows.shape[1], topic, partition, narrow_bytes(rows)]


def table_from_state(shared: BrokerColumns, state: list) -> LeaderAndIsrTable:
    table = LeaderAndIsrTable(shared)
    if len(state) == 6:
        names, n, width, topic, partition, rows = state
        keys = _keys_of(shared, names, topic, partition, n)
        if type(width) is not int or width < L_ISR:
            raise ValueError("cluster snapshot: malformed broker state (LeaderAndIsr rows)")
        if len(keys):
            table.upsert(keys, _rows_of(rows, len(keys), width, narrow=True))
        return table
    names, topic, partition, rows = state
    keys = _keys_of(shared, names, topic, partition)
    if len(keys):
        flat = np.frombuffer(rows, dtype="<i4")
        if len(flat) % len(keys) or len(flat) // len(keys) < L_ISR:
            raise ValueError("cluster snapshot: malformed broker state (LeaderAndIsr rows)")
        table.upsert(keys, flat.reshape(len(keys), -1).astype(np.int32))
    return table


def image_state(shared: BrokerColumns, image: MetadataImage) -> list:
    """[topic names, rows n, topic index per row, partition, offset, rows (n x the MetadataImage columns,
    headers and tuples as indexes into the next two), headers ([v, controller_id, controller_epoch,
    timestamp_ms, cause_offset]), tuples], rows in (topic, partition) order, each array little-endian in its
    narrowest width. Format 2 had no n, and i4 arrays (i8 offsets)."""
    keys, offsets, rows = image.columns(shared)
    rows = rows.copy()
    headers, rows[:, HDR] = _first_seen(rows[:, HDR])
    cols = list(TUPLE_COLUMNS)
    tuples, rows[:, cols] = _first_seen(rows[:, cols])
    names, topic, partition = _topic_columns(shared, keys)
    h, t = shared.headers.items, shared.tuples.items
    return [names, len(keys), topic, partition, narrow_bytes(offsets), narrow_bytes(rows),
            [list(h[c]) for c in headers], [list(t[c]) for c in tuples]]


def image_from_state(shared: BrokerColumns, state: list) -> MetadataImage:
    if len(state) == 8:
        names, n, topic, partition, offsets, rows, headers, tuples = state
        keys = _keys_of(shared, names, topic, partition, n)
        rows = _rows_of(rows, len(keys), META_WIDTH, narrow=True)
        offsets = _ints(offsets, len(keys), "offsets", None)
    else:
        names, topic, partition, offsets, rows, headers, tuples = state
        keys = _keys_of(shared, names, topic, partition)
        rows = _rows_of(rows, len(keys), META_WIDTH)
        offsets = _ints(offsets, len(keys), "offsets", "<i8")
    rows[:, HDR] = _global(shared.headers, headers, rows[:, HDR])
    cols = list(TUPLE_COLUMNS)
    rows[:, cols] = _global(shared.tuples, tuples, rows[:, cols])
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        order = np.argsort(keys, kind="stable")
        keys, offsets, rows = keys[order], offsets[order], rows[order]
    return MetadataImage.from_columns(keys, offsets, rows)
