"""The cluster state as an event log's records say it was at an offset or a time, folded from the records alone.

:class:`ClusterView` folds records one by one (no engine, no controller context): the active
controller, the brokers the controller sees as live, and per partition its state, replicas,
leader/ISR and the states of its replicas. :func:`fold` folds a sequence of records up to an
offset and/or time; :func:`fold_log` does the same from a log directory, streaming it one batch
at a time and using the batch headers to stop without decoding anything past the bound. The
audit and ``kcontroller describe`` print a view with :meth:`ClusterView.to_json_dict` or
:meth:`ClusterView.describe_lines`, and compare replays with :meth:`ClusterView.digest`.

The view is columnar: per topic, numpy arrays indexed by partition number hold the partitions
(state, replicas and ISR as -1-padded int32 matrices with lengths, leader, epochs, recovery
state), the partitions of a deletion that went NonExistentPartition, the replica states (a
matrix of (replica, state) pairs per partition, in the order the replicas got them) and the
replica assignment the store holds. A sequence number per row keeps the order rows were added, so
iteration and the ViewSnapshot bytes are those of the dicts the view held before. A view of a
million partitions holds a few objects per topic and nothing per partition;
:attr:`ClusterView.topics`, :attr:`ClusterView.replica_states` and :attr:`ClusterView.assignments`
read the columns as ``PartitionView`` values, dicts and tuples. Its ViewSnapshot (format 3) writes
the same columns per topic as little-endian bins, with no Python work per partition either way.
:meth:`ClusterView.apply_columns` folds the controller's columnar batches of PartitionTransition,
ReplicaTransition and LeaderAndIsrUpdated records as array operations (the last write to a
partition or replica in a batch wins, as record by record); a batch mixing NonExistent and other
target states is folded record by record.
Partition numbers must be below :data:`MAX_PARTITIONS` and broker ids, epochs and versions fit
int32s (Kafka's types): other values are a ValueError.

What each record kind means here:

- ``ControllerElected``: the header's controller and epoch become the active controller.
  ``ControllerResigned`` clears it, unless the resignation is of an older epoch than the
  active controller's.
- ``LiveBrokersChanged``: the registered brokers as the controller sees them. The first one
  after a ``ControllerElected`` marks the new controller's context as built: Kafka then sets
  every partition and replica state directly (no record), and the view does the same —
  partitions Online if their leader is live, Offline if not, New without a leader; replicas
  Online on live brokers, ReplicaDeletionIneligible elsewhere. A broker is
  *live* when it is registered and not in controlled shutdown (Kafka's
  ``ControllerContext.liveBrokerIds``). Brokers seen only in ``BrokerStarted`` (or in an
  earlier live set) are listed as not live; ``BrokerKilled``/``BrokerSessionExpired`` change
  nothing until the controller says so.
- ``PartitionTransition`` sets a partition's state, replicas and leader/ISR (the values after
  the transition); ``NonExistentPartition`` (topic deletion) takes the partition out of the view,
  but the topic stays in the store until ``TopicDeletionCompleted``: a new controller finds a
  halted deletion's partitions there again and the view brings them back at its failover, as
  Kafka's initializePartitionState does. ``LeaderAndIsrUpdated`` changes leader/ISR only;
  ``ReplicaAssignmentChanged`` (a reassignment) changes the replicas.
- ``TopicQueuedForDeletion`` marks a topic as being deleted (partitions added to it afterwards
  are refused by the controller, so the view ignores them); ``TopicDeletionCompleted`` removes
  the topic with its configs, assignment and replica states.
- ``ReplicaTransition`` sets a replica's state; ``NonExistentReplica`` removes it. Replica
  states are kept apart from partitions because topic deletion moves partitions to
  NonExistentPartition *before* their replicas go through deletion; they show only under a
  partition that exists.
- ``TopicCreated`` and topic ``ConfigChanged`` inputs give the topic config overrides printed
  as ``Configs:``. Partitions appear only when the controller transitions them.
- ``ViewSnapshot`` holds the whole view as it was after the records before it
  (:meth:`ClusterView.to_snapshot`); folding one changes nothing but the offset.
  :func:`fold_log` uses the latest one at or before its bound as its starting point.
- Everything else (requests, failures, other inputs) is ignored.

:meth:`ClusterView.describe_lines` prints the layout of Kafka 3.7's ``kafka-topics.sh
--describe`` (``TopicDescription``/``PartitionDescription.printDescription`` in
tools/src/main/java/org/apache/kafka/tools/TopicCommand.java), through :func:`describe_topic_lines`,
which the simulator's ``describe`` step uses too, with TopicCommand's filters (:class:`DescribeOptions`:
``--topic``, ``--under-replicated-partitions``, ``--unavailable-partitions``,
``--under-min-isr-partitions``, ``--at-min-isr-partitions``, ``--topics-with-overrides``):

- During a reassignment (a ``ReplicaAssignmentChanged`` with adding or removing replicas, until the
  one that clears them) ``Replicas:`` is the full replica set, followed by ``Adding Replicas:`` and
  ``Removing Replicas:``, and ``ReplicationFactor:`` is TopicCommand's ``getReplicationFactor``:
  replicas minus adding replicas, the size of the assignment being left, taken from the topic's first
  partition. The under-replicated filter uses the same replication factor.
- A topic queued for deletion keeps its partitions (those that went NonExistentPartition too: their
  znodes stay until the deletion completes) and is printed with ``MarkedForDeletion: true`` on its
  topic line and each partition line, as the ZooKeeper-based tool (Kafka 1.0 to 2.8) printed it from
  ``/admin/delete_topics``; 3.7's code still prints the flag but its admin-client path never sets it.
- The minimum ISR of the min-ISR filters is the topic's ``min.insync.replicas`` override, else the
  cluster's (``ClusterCreated``, broker ``ConfigChanged``), else Kafka's default 1.

And these differences from Kafka 3.7:

- ``TopicId`` is left out: the records carry no topic id, and TopicCommand leaves the field
  out for the unknown id ``Uuid.ZERO_UUID``. (Kafka 3.7.x compares that id by reference and so
  prints ``TopicId: AAAAAAAAAAAAAAAAAAAAAA`` for a zero id from the wire; fixed in 3.8.0.)
- ``Configs:`` lists the topic's overrides only, sorted by name; Kafka also lists broker-level
  values that are not defaults (static or dynamic broker configs), which the records do not
  give per topic.
- ``Leader: none`` when the stored leader is -1 (NoLeader). Kafka's brokers also answer
  "none" for a stored leader whose broker they do not see alive; here such a leader is printed
  and shows in ``Offline:`` (the filters treat it as Kafka does: no leader).
- ``Offline:`` is not a TopicCommand column (Confluent Server prints one; Apache Kafka does not): it
  is kcontroller's addition, printed last, after Kafka's columns, when some replicas' brokers are not
  live in the view; without it a line is Kafka's.
- A first line ``# controller C epoch E, live brokers ...`` (a comment; kafka-topics has none).
- A ``ViewSnapshot`` (format 3) has a 16th field, the reassignments in progress, when there are some;
  snapshots written before that field existed restore views without reassignments. The broker-level
  configs are not in a snapshot: :func:`fold_log` (``broker_configs=True``) takes them from the log's
  first record (ClusterCreated; a broker ``ConfigChanged`` before the snapshot is not seen).
"""
from __future__ import annotations

import hashlib
import json
import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing
from functools import partial
from itertools import chain
from typing import NamedTuple

import msgpack
import numpy as np

from events.arrays import distinct, from_narrow_bytes, narrow_bytes
from events.columns import DictColumn, ListColumn
from events.log import Batch, LogReader
from events.records import (
    NO_LEADER, BrokerStarted, ClusterCreated, ConfigChanged, ControllerElected, ControllerResigned, LeaderAndIsrUpdated,
    LiveBrokersChanged, PartitionsAdded, PartitionTransition, ReplicaAssignmentChanged, ReplicaTransition,
    TopicCreated, TopicDeletionCompleted, TopicQueuedForDeletion, ViewSnapshot,
)
from statemachines.errors import RecordValueError
from statemachines.states import (
    NEW_PARTITION, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, ONLINE_PARTITION, ONLINE_REPLICA,
    PARTITION_BY_BYTE, REPLICA_BY_BYTE, REPLICA_DELETION_INELIGIBLE,
)

__all__ = ["ClusterView", "DescribeOptions", "PartitionDescription", "PartitionView", "describe_topic_lines", "fold",
           "fold_log", "snapshot_record_body"]

SNAPSHOT_FORMAT = 3  # element 0 of the ViewSnapshot state array to_snapshot writes
_new = tuple.__new__


class PartitionView(NamedTuple):
    """One partition as the last state records left it; ``state`` is a PartitionState byte."""
    state: int
    replicas: tuple
    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    recovery_state: int


# Partition numbers the view holds (its columns are indexed by partition number); Kafka's are below
# a topic's partition count, which no cluster takes near this.
MAX_PARTITIONS = 1 << 24
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_EMPTY_I32 = np.zeros(0, dtype=np.int32)


def _partition_number(topic: str, p) -> int:
    """``p`` as a partition number the view can hold; ValueError otherwise."""
    try:
        p = operator.index(p)
    except TypeError:
        raise ValueError(f"partition {p!r:.50} of topic {topic!r:.100} is not an int") from None
    if not 0 <= p < MAX_PARTITIONS:
        raise ValueError(f"partition {p} of topic {topic!r:.100}: the view holds partitions 0..{MAX_PARTITIONS - 1}")
    return p


def _int_column(values, dtype, what: str) -> np.ndarray:
    """Integers (a numpy array or a sequence of ints) as an array of ``dtype``; ValueError if they are not
    ints or do not fit it (Kafka's broker ids, epochs and versions are int32s)."""
    a = values if isinstance(values, np.ndarray) else np.array(values)
    if a.size == 0:
        return np.zeros(a.shape, dtype=dtype)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{what}: expected ints, got {a.dtype} values")
    info = np.iinfo(dtype)
    if a.dtype.itemsize >= np.dtype(dtype).itemsize or a.dtype.kind != np.dtype(dtype).kind:
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise ValueError(f"{what}: value {lo if lo < info.min else hi} outside {info.min}..{info.max}")
    return a.astype(dtype, copy=False)


def _padded(lengths: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(matrix, lengths): row i holds the next ``lengths[i]`` values of ``flat``, then -1s."""
    k = len(lengths)
    w = int(lengths.max()) if k else 0
    if k and int(lengths.min()) == w:
        return flat.reshape(k, w), lengths
    block = np.full((k, w), -1, dtype=np.int32)
    total = len(flat)
    if total:
        starts = np.cumsum(lengths) - lengths
        rows = np.repeat(np.arange(k), lengths)
        block[rows, np.arange(total) - np.repeat(starts, lengths)] = flat
    return block, lengths


def _list_block(column: ListColumn, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An int tuple column as (a -1-padded int32 matrix, the lengths)."""
    lengths = np.diff(column.offsets.astype(np.int64))
    return _padded(lengths, _int_column(column.values, np.int32, what))


def _tuples_block(tuples, what: str) -> tuple[np.ndarray, np.ndarray]:
    """A sequence of int tuples as (a -1-padded int32 matrix, the lengths)."""
    lengths = np.fromiter(map(len, tuples), dtype=np.int64, count=len(tuples))
    return _padded(lengths, _int_column(list(chain.from_iterable(tuples)), np.int32, what))


def _distinct_partitions(ps) -> np.ndarray:
    """Partition numbers (ints) as int64, ValueError unless distinct and in 0..MAX_PARTITIONS - 1."""
    ids = _int_column(ps, np.int64, "partition")
    if len(ids):
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= MAX_PARTITIONS:
            raise ValueError(f"partition {lo if lo < 0 else hi}: the view holds partitions 0..{MAX_PARTITIONS - 1}")
        seen = np.zeros(hi + 1, dtype=bool)
        seen[ids] = True
        if int(np.count_nonzero(seen)) != len(ids):
            raise ValueError("a partition number appears twice")
    return ids


def _tuples(block: np.ndarray, lengths: np.ndarray) -> list[tuple]:
    """The rows of a padded matrix as tuples of their ``lengths`` first values."""
    rows = block.tolist()
    if not len(lengths) or int(lengths.min()) == block.shape[1]:
        return list(map(tuple, rows))
    return [tuple(row[:k]) for row, k in zip(rows, lengths.tolist())]


def _lists(block: np.ndarray, lengths: np.ndarray) -> list[list]:
    """The rows of a padded array as lists of their ``lengths`` first elements (for msgpack)."""
    rows = block.tolist()
    if len(lengths) and int(lengths.min()) != block.shape[1]:
        short = np.flatnonzero(lengths != block.shape[1]).tolist()
        for i, k in zip(short, lengths[short].tolist()):
            rows[i] = rows[i][:k]
    return rows


def _resized(a: np.ndarray, n: int, fill) -> np.ndarray:
    out = np.full((n,) + a.shape[1:], fill, dtype=a.dtype)
    out[:len(a)] = a
    return out


def _widened(m: np.ndarray, w: int, fill: int = -1) -> np.ndarray:
    out = np.full((m.shape[0], w), fill, dtype=m.dtype)
    out[:, :m.shape[1]] = m
    return out


def _in_order(ids: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The present rows ``ids`` in the order they were added (their ``seq``)."""
    s = seq[ids]
    if len(ids) > 1 and not bool(np.all(s[1:] > s[:-1])):
        ids = ids[np.argsort(s, kind="stable")]
    return ids


def _holds(flags: np.ndarray, p) -> bool:
    """Does the boolean column ``flags`` mark row ``p`` (any object: a non-int is not a row)?"""
    try:
        p = operator.index(p)
    except TypeError:
        return False
    return 0 <= p < len(flags) and bool(flags[p])


def _held(flags: np.ndarray, ps: np.ndarray) -> np.ndarray:
    """``_holds`` of each of the row numbers ``ps`` (any ints)."""
    ok = (ps >= 0) & (ps < len(flags))
    out = np.zeros(len(ps), dtype=bool)
    out[ok] = flags[ps[ok]]
    return out


class _Partitions:
    """The partitions of one topic as columns indexed by partition number.

    ``present`` marks the rows that hold a partition and ``seq`` numbers them in the order they were
    added (the iteration order of the dict the view kept before, which its snapshots record);
    replicas and ISR are -1-padded int32 matrices with their lengths. Values past a length, and rows
    not present, are garbage. A topic holds one such object: nothing per partition for the GC.
    """
    __slots__ = ("present", "seq", "state", "leader", "leader_epoch", "partition_epoch", "recovery_state",
                 "replicas", "n_replicas", "isr", "n_isr", "count", "next_seq")
    _VECTORS = (("present", np.bool_), ("seq", np.int64), ("state", np.uint8), ("leader", np.int32),
                ("leader_epoch", np.int32), ("partition_epoch", np.int32), ("recovery_state", np.int32),
                ("n_replicas", np.int32), ("n_isr", np.int32))

    def __init__(self) -> None:
        for name, dtype in self._VECTORS:
            setattr(self, name, np.zeros(0, dtype=dtype))
        self.replicas = np.full((0, 0), -1, dtype=np.int32)
        self.isr = np.full((0, 0), -1, dtype=np.int32)
        self.count = 0        # rows present
        self.next_seq = 0

    def reserve(self, top: int) -> None:
        """Room for partition numbers up to ``top``."""
        cap = len(self.present)
        if top < cap:
            return
        n = max(top + 1, 2 * cap, 16)
        for name, _ in self._VECTORS:
            setattr(self, name, _resized(getattr(self, name), n, 0))
        self.replicas = _resized(self.replicas, n, -1)
        self.isr = _resized(self.isr, n, -1)

    def has(self, p) -> bool:
        return _holds(self.present, p)

    def mask(self, ps: np.ndarray) -> np.ndarray:
        """Which of the partition numbers ``ps`` (any ints) hold a partition."""
        return _held(self.present, ps)

    def order(self) -> np.ndarray:
        """The partition numbers present, in the order they were added."""
        return _in_order(np.flatnonzero(self.present), self.seq)

    def row(self, p: int) -> tuple:
        """Partition ``p`` (present) as the PartitionView fields."""
        nr, ni = int(self.n_replicas[p]), int(self.n_isr[p])
        return (int(self.state[p]), tuple(self.replicas[p, :nr].tolist()), int(self.leader[p]),
                int(self.leader_epoch[p]), tuple(self.isr[p, :ni].tolist()), int(self.partition_epoch[p]),
                int(self.recovery_state[p]))

    def rows(self, ids: np.ndarray) -> list[tuple]:
        """The rows ``ids`` (present) as PartitionView field tuples."""
        return list(zip(self.state[ids].tolist(), _tuples(self.replicas[ids], self.n_replicas[ids]),
                        self.leader[ids].tolist(), self.leader_epoch[ids].tolist(),
                        _tuples(self.isr[ids], self.n_isr[ids]), self.partition_epoch[ids].tolist(),
                        self.recovery_state[ids].tolist()))

    # -- one row --
    def _add(self, p: int) -> None:
        if not self.present[p]:
            self.present[p] = True
            self.seq[p] = self.next_seq
            self.next_seq += 1
            self.count += 1

    def _set_list(self, name: str, p: int, values: tuple) -> None:
        k = len(values)
        m = getattr(self, name)
        if k > m.shape[1]:
            m = _widened(m, k)
            setattr(self, name, m)
        m[p, :k] = values
        getattr(self, "n_" + name)[p] = k

    def set_row(self, p: int, state: int, replicas: tuple, leader: int, leader_epoch: int, isr: tuple,
                partition_epoch: int, recovery_state: int) -> None:
        if p >= len(self.present):
            self.reserve(p)
        self._add(p)
        self.state[p] = state
        self._set_list("replicas", p, replicas)
        self.set_leadership(p, leader, leader_epoch, isr, partition_epoch, recovery_state)

    def set_leadership(self, p: int, leader: int, leader_epoch: int, isr: tuple, partition_epoch: int,
                       recovery_state: int) -> None:
        self.leader[p] = leader
        self.leader_epoch[p] = leader_epoch
        self._set_list("isr", p, isr)
        self.partition_epoch[p] = partition_epoch
        self.recovery_state[p] = recovery_state

    def remove(self, p: int) -> None:
        self.present[p] = False
        self.count -= 1

    # -- many rows (``ids``: distinct partition numbers, int64) --
    def _put_list(self, name: str, ids: np.ndarray, block: np.ndarray, lengths: np.ndarray) -> None:
        m = getattr(self, name)
        w = block.shape[1]
        if w > m.shape[1]:
            m = _widened(m, w)
            setattr(self, name, m)
        if w == m.shape[1]:
            m[ids] = block
        else:
            m[ids, :w] = block
        getattr(self, "n_" + name)[ids] = lengths

    def put(self, ids: np.ndarray, state, replicas: tuple, leader, leader_epoch, isr: tuple, partition_epoch,
            recovery_state) -> None:
        """Set the rows ``ids``; those not present are added in the order of ``ids``. ``replicas`` and
        ``isr`` are (matrix, lengths) pairs; the other values are arrays aligned with ``ids`` or scalars."""
        if not len(ids):
            return
        self.reserve(int(ids.max()))
        new = ids[~self.present[ids]]
        if len(new):
            self.present[new] = True
            self.seq[new] = np.arange(self.next_seq, self.next_seq + len(new))
            self.next_seq += len(new)
            self.count += len(new)
        self.state[ids] = state
        self._put_list("replicas", ids, *replicas)
        self.put_leadership(ids, leader, leader_epoch, isr, partition_epoch, recovery_state)

    def put_leadership(self, ids: np.ndarray, leader, leader_epoch, isr: tuple, partition_epoch,
                       recovery_state) -> None:
        self.leader[ids] = leader
        self.leader_epoch[ids] = leader_epoch
        self._put_list("isr", ids, *isr)
        self.partition_epoch[ids] = partition_epoch
        self.recovery_state[ids] = recovery_state

    def put_from(self, other: _Partitions, ids: np.ndarray) -> None:
        """Copy the rows ``ids`` (present in ``other``) into this table."""
        self.put(ids, other.state[ids], (other.replicas[ids], other.n_replicas[ids]), other.leader[ids],
                 other.leader_epoch[ids], (other.isr[ids], other.n_isr[ids]), other.partition_epoch[ids],
                 other.recovery_state[ids])

    def drop(self, ids: np.ndarray) -> None:
        self.present[ids] = False
        self.count -= len(ids)

    # -- snapshots --
    def snapshot_rows(self) -> list:
        """``[p, state, replicas, leader, leader_epoch, isr, partition_epoch, recovery_state]`` per partition,
        in order (the ViewSnapshot layout)."""
        ids = self.order()
        return list(zip(ids.tolist(), self.state[ids].tolist(), _lists(self.replicas[ids], self.n_replicas[ids]),
                        self.leader[ids].tolist(), self.leader_epoch[ids].tolist(),
                        _lists(self.isr[ids], self.n_isr[ids]), self.partition_epoch[ids].tolist(),
                        self.recovery_state[ids].tolist()))

    @classmethod
    def from_rows(cls, rows: tuple) -> _Partitions:
        """The table :meth:`snapshot_rows` wrote; ValueError if ``rows`` does not have that layout."""
        table = cls()
        if not rows:
            return table
        if any(len(r) != 8 for r in rows):
            raise ValueError("a partition row does not have 8 fields")
        ps, state, replicas, leader, leader_epoch, isr, partition_epoch, recovery_state = zip(*rows)
        ids = _distinct_partitions(ps)
        table.put(ids, _int_column(state, np.uint8, "state"), _tuples_block(replicas, "replicas"),
                  _int_column(leader, np.int32, "leader"), _int_column(leader_epoch, np.int32, "leader_epoch"),
                  _tuples_block(isr, "isr"), _int_column(partition_epoch, np.int32, "partition_epoch"),
                  _int_column(recovery_state, np.int32, "recovery_state"))
        return table

    def __eq__(self, other) -> bool:
        """Same partitions, values and order (not the same storage)."""
        if type(other) is not _Partitions:
            return NotImplemented
        a, b = self.order(), other.order()
        return np.array_equal(a, b) and self.rows(a) == other.rows(b)

    __hash__ = None

    def __repr__(self) -> str:
        ids = self.order()
        return f"_Partitions({dict(zip(ids.tolist(), self.rows(ids)))})"


class _ReplicaStates:
    """The replica states of one topic's partitions as columns indexed by partition number.

    ``has`` marks the partitions that have a replica-state map (possibly empty: a failover sets one for
    every partition), ``seq`` orders them as they were added; row p of ``ids``/``states`` holds
    ``n[p]`` (replica, state byte) pairs in the order the replicas got a state (a dict's order).
    """
    __slots__ = ("has", "seq", "ids", "states", "n", "count", "next_seq")

    def __init__(self) -> None:
        self.has = np.zeros(0, dtype=bool)
        self.seq = np.zeros(0, dtype=np.int64)
        self.n = np.zeros(0, dtype=np.int32)
        self.ids = np.full((0, 0), -1, dtype=np.int32)
        self.states = np.zeros((0, 0), dtype=np.uint8)
        self.count = 0        # partitions with a map
        self.next_seq = 0

    def reserve(self, top: int) -> None:
        cap = len(self.has)
        if top < cap:
            return
        n = max(top + 1, 2 * cap, 16)
        self.has, self.seq, self.n = (_resized(self.has, n, 0), _resized(self.seq, n, 0), _resized(self.n, n, 0))
        self.ids, self.states = _resized(self.ids, n, -1), _resized(self.states, n, 0)

    def widen(self, w: int) -> None:
        if w > self.ids.shape[1]:
            self.ids, self.states = _widened(self.ids, w), _widened(self.states, w, 0)

    def has_partition(self, p) -> bool:
        return _holds(self.has, p)

    def mask(self, ps: np.ndarray) -> np.ndarray:
        return _held(self.has, ps)

    def order(self) -> np.ndarray:
        return _in_order(np.flatnonzero(self.has), self.seq)

    def of(self, p: int) -> dict[int, int]:
        k = int(self.n[p])
        return dict(zip(self.ids[p, :k].tolist(), self.states[p, :k].tolist()))

    def pairs(self, ids: np.ndarray, into=list) -> list:
        """The (replica, state) pairs of the partitions ``ids`` (with a map), in order, each made ``into`` a
        list (or a dict)."""
        ids_rows, state_rows, n = self.ids[ids].tolist(), self.states[ids].tolist(), self.n[ids]
        if not len(n) or int(n.min()) == self.ids.shape[1]:
            return list(map(into, map(zip, ids_rows, state_rows)))
        return [into(zip(r[:k], s[:k])) for r, s, k in zip(ids_rows, state_rows, n.tolist())]

    def _add(self, ids: np.ndarray) -> None:
        new = ids[~self.has[ids]]
        if len(new):
            self.has[new] = True
            self.seq[new] = np.arange(self.next_seq, self.next_seq + len(new))
            self.next_seq += len(new)
            self.count += len(new)

    # -- one replica --
    def set(self, p: int, replica: int, state: int) -> None:
        if p >= len(self.has):
            self.reserve(p)
        if not self.has[p]:
            self.has[p] = True
            self.seq[p] = self.next_seq
            self.next_seq += 1
            self.count += 1
        k = int(self.n[p])
        row = self.ids[p, :k].tolist()
        if replica in row:
            self.states[p, row.index(replica)] = state
            return
        if k >= self.ids.shape[1]:
            self.widen(k + 1)
        self.ids[p, k] = replica
        self.states[p, k] = state
        self.n[p] = k + 1

    def remove(self, p: int, replica: int) -> None:
        """Take ``replica``'s state out of partition ``p``'s map (which exists); drop the map if empty."""
        k = int(self.n[p])
        row = self.ids[p, :k].tolist()
        if replica in row:
            i = row.index(replica)
            self.ids[p, i:k - 1] = self.ids[p, i + 1:k]
            self.states[p, i:k - 1] = self.states[p, i + 1:k]
            self.n[p] = k = k - 1
        if not k:
            self.has[p] = False
            self.count -= 1

    # -- many partitions (``ps``: distinct partition numbers, int64) --
    def _find(self, ps: np.ndarray, replicas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, position) of ``replicas[i]`` in partition ``ps[i]``'s map."""
        w = self.ids.shape[1]
        if not w:
            return np.zeros(len(ps), dtype=bool), np.zeros(len(ps), dtype=np.int64)
        match = (self.ids[ps] == replicas[:, None]) & (np.arange(w) < self.n[ps][:, None])
        return match.any(axis=1), match.argmax(axis=1)

    def put(self, ps: np.ndarray, replicas: np.ndarray, states: np.ndarray) -> None:
        """Set one replica's state in each partition ``ps``; maps not there yet are added in the order of ``ps``."""
        if not len(ps):
            return
        self.reserve(int(ps.max()))
        self._add(ps)
        found, pos = self._find(ps, replicas)
        if found.any():
            self.states[ps[found], pos[found]] = states[found]
        if not found.all():
            new = ~found
            at, k = ps[new], self.n[ps[new]]
            self.widen(int(k.max()) + 1)
            self.ids[at, k] = replicas[new]
            self.states[at, k] = states[new]
            self.n[at] = k + 1

    def put_held(self, ps: np.ndarray, replicas: np.ndarray, states: np.ndarray) -> bool:
        """:meth:`put` of many (partition, replica) pairs at once (``ps`` may repeat) when the pairs are distinct
        and every replica already has a state in its partition's map: the states are set and True returned;
        else nothing is changed and False returned."""
        if not len(ps) or int(ps.max()) >= len(self.has) or not self.has[ps].all():
            return False
        found, pos = self._find(ps, replicas)
        if not found.all() or not _distinct(np.sort((ps << 32) | (replicas.astype(np.int64) & 0xFFFFFFFF))):
            return False
        self.states[ps, pos] = states
        return True

    def drop(self, ps: np.ndarray, replicas: np.ndarray) -> None:
        """:meth:`remove` of ``replicas[i]`` from partition ``ps[i]``, for each i."""
        ok = self.mask(ps)
        ps, replicas = ps[ok], replicas[ok]
        if not len(ps):
            return
        found, pos = self._find(ps, replicas)
        if found.any():
            at, pos = ps[found], pos[found]
            cols = np.arange(self.ids.shape[1])
            src = np.minimum(cols + (cols >= pos[:, None]), len(cols) - 1)
            self.ids[at] = np.take_along_axis(self.ids[at], src, axis=1)
            self.states[at] = np.take_along_axis(self.states[at], src, axis=1)
            self.n[at] -= 1
        empty = ps[self.n[ps] == 0]
        self.has[empty] = False
        self.count -= len(empty)

    def replace(self, ps: np.ndarray, ids: np.ndarray, states: np.ndarray, lengths: np.ndarray) -> None:
        """Set the whole maps of partitions ``ps`` (rows of ``ids``/``states``, ``lengths`` long); maps not
        there yet are added in the order of ``ps``."""
        if not len(ps):
            return
        self.reserve(int(ps.max()))
        self._add(ps)
        w = ids.shape[1]
        self.widen(w)
        if w == self.ids.shape[1]:
            self.ids[ps] = ids
            self.states[ps] = states
        else:
            self.ids[ps, :w] = ids
            self.states[ps, :w] = states
        self.n[ps] = lengths

    # -- snapshots --
    def snapshot_rows(self) -> list:
        """``[p, [[replica, state], ...]]`` per partition, in order (the ViewSnapshot layout)."""
        ids = self.order()
        # [[replica, state], ...] rows made by numpy: a (partitions, width, 2) array as nested lists
        pairs = _lists(np.stack([self.ids[ids], self.states[ids].astype(np.int32)], axis=2), self.n[ids])
        return list(zip(ids.tolist(), pairs))

    @classmethod
    def from_rows(cls, rows: tuple) -> _ReplicaStates:
        table = cls()
        if not rows:
            return table
        if any(len(r) != 2 for r in rows):
            raise ValueError("a replica-state row does not have 2 fields")
        ps, maps = zip(*rows)
        ids = _distinct_partitions(ps)
        lengths = np.fromiter(map(len, maps), dtype=np.int64, count=len(maps))
        pairs = np.array(list(chain.from_iterable(maps)))    # ragged pairs: ValueError
        if len(pairs) and (pairs.ndim != 2 or pairs.shape[1] != 2):
            raise ValueError("a replica state is not a (replica, state) pair")
        pairs = pairs.reshape(-1, 2)
        replicas, _ = _padded(lengths, _int_column(pairs[:, 0], np.int32, "replica"))
        states, _ = _padded(lengths, _int_column(pairs[:, 1], np.uint8, "replica state"))
        if _first_occurrences(replicas, lengths)[1] is not lengths:
            raise ValueError("a partition lists a replica's state twice")
        table.replace(ids, replicas, states.astype(np.uint8, copy=False), lengths)
        return table

    def __eq__(self, other) -> bool:
        if type(other) is not _ReplicaStates:
            return NotImplemented
        a, b = self.order(), other.order()
        return np.array_equal(a, b) and self.pairs(a) == other.pairs(b)

    __hash__ = None

    def __repr__(self) -> str:
        ids = self.order()
        return f"_ReplicaStates({dict(zip(ids.tolist(), map(dict, self.pairs(ids))))})"


class _Assignment:
    """One topic's replica assignment as the store holds it (partition -> replicas), as columns indexed by
    partition number: ``present`` rows, ``seq`` their order of addition, replicas as a -1-padded int32
    matrix with lengths ``n`` (cells past a length are -1)."""
    __slots__ = ("present", "seq", "replicas", "n", "count", "next_seq")

    def __init__(self) -> None:
        self.present = np.zeros(0, dtype=bool)
        self.seq = np.zeros(0, dtype=np.int64)
        self.n = np.zeros(0, dtype=np.int32)
        self.replicas = np.full((0, 0), -1, dtype=np.int32)
        self.count = 0
        self.next_seq = 0

    @classmethod
    def of_rows(cls, ids: np.ndarray, block: np.ndarray, lengths: np.ndarray) -> _Assignment:
        table = cls()
        table.put(ids, block, lengths)
        return table

    def reserve(self, top: int) -> None:
        cap = len(self.present)
        if top < cap:
            return
        n = max(top + 1, 2 * cap, 16)
        self.present, self.seq, self.n = (_resized(self.present, n, 0), _resized(self.seq, n, 0),
                                          _resized(self.n, n, 0))
        self.replicas = _resized(self.replicas, n, -1)

    def has(self, p) -> bool:
        return _holds(self.present, p)

    def order(self) -> np.ndarray:
        return _in_order(np.flatnonzero(self.present), self.seq)

    def row(self, p: int) -> tuple:
        return tuple(self.replicas[p, :int(self.n[p])].tolist())

    def rows(self, ids: np.ndarray) -> list[tuple]:
        return _tuples(self.replicas[ids], self.n[ids])

    def put(self, ids: np.ndarray, block: np.ndarray, lengths: np.ndarray) -> None:
        """Set the rows ``ids`` (distinct) to the rows of ``block`` (-1 past ``lengths``); rows not present
        are added in the order of ``ids``."""
        if not len(ids):
            return
        self.reserve(int(ids.max()))
        new = ids[~self.present[ids]]
        if len(new):
            self.present[new] = True
            self.seq[new] = np.arange(self.next_seq, self.next_seq + len(new))
            self.next_seq += len(new)
            self.count += len(new)
        w = block.shape[1]
        if w > self.replicas.shape[1]:
            self.replicas = _widened(self.replicas, w)
        if w == self.replicas.shape[1]:
            self.replicas[ids] = block
        else:
            self.replicas[ids, :w] = block
            self.replicas[ids, w:] = -1
        self.n[ids] = lengths

    def set(self, p: int, replicas: tuple) -> None:
        self.put(np.array([p], dtype=np.int64), *_tuples_block([replicas], "replicas"))

    # -- snapshots (format 2) --
    def snapshot_rows(self) -> list:
        """``[p, replicas]`` per partition, in order (the ViewSnapshot format 2 layout)."""
        ids = self.order()
        return list(zip(ids.tolist(), _lists(self.replicas[ids], self.n[ids])))

    @classmethod
    def from_rows(cls, rows: tuple) -> _Assignment:
        if any(len(r) != 2 for r in rows):
            raise ValueError("an assignment row does not have 2 fields")
        ps, replicas = zip(*rows) if rows else ((), ())
        return cls.of_rows(_distinct_partitions(ps), *_tuples_block(replicas, "replicas"))

    def __eq__(self, other) -> bool:
        if type(other) is not _Assignment:
            return NotImplemented
        a, b = self.order(), other.order()
        return np.array_equal(a, b) and self.rows(a) == other.rows(b)

    __hash__ = None

    def __repr__(self) -> str:
        ids = self.order()
        return f"_Assignment({dict(zip(ids.tolist(), self.rows(ids)))})"


class _PartitionsView(Mapping):
    """partition -> PartitionView of one topic, read from its columns."""
    __slots__ = ("_table",)

    def __init__(self, table: _Partitions):
        self._table = table

    def __getitem__(self, partition) -> PartitionView:
        if not self._table.has(partition):
            raise KeyError(partition)
        return _new(PartitionView, self._table.row(operator.index(partition)))

    def __contains__(self, partition: object) -> bool:
        return self._table.has(partition)

    def __iter__(self) -> Iterator[int]:
        return iter(self._table.order().tolist())

    def __len__(self) -> int:
        return self._table.count

    def items(self):
        ids = self._table.order()
        return list(zip(ids.tolist(), map(partial(_new, PartitionView), self._table.rows(ids))))

    def values(self):
        return list(map(partial(_new, PartitionView), self._table.rows(self._table.order())))

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _PartitionStatesView(Mapping):
    """partition -> {replica: state byte} of one topic (each map a new dict)."""
    __slots__ = ("_table",)

    def __init__(self, table: _ReplicaStates):
        self._table = table

    def __getitem__(self, partition) -> dict[int, int]:
        if not self._table.has_partition(partition):
            raise KeyError(partition)
        return self._table.of(operator.index(partition))

    def __contains__(self, partition: object) -> bool:
        return self._table.has_partition(partition)

    def __iter__(self) -> Iterator[int]:
        return iter(self._table.order().tolist())

    def __len__(self) -> int:
        return self._table.count

    def items(self):
        ids = self._table.order()
        return list(zip(ids.tolist(), self._table.pairs(ids, dict)))

    def values(self):
        return self._table.pairs(self._table.order(), dict)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _AssignmentView(Mapping):
    """partition -> replicas tuple of one topic's assignment, read from its columns."""
    __slots__ = ("_table",)

    def __init__(self, table: _Assignment):
        self._table = table

    def __getitem__(self, partition) -> tuple:
        if not self._table.has(partition):
            raise KeyError(partition)
        return self._table.row(operator.index(partition))

    def __contains__(self, partition: object) -> bool:
        return self._table.has(partition)

    def __iter__(self) -> Iterator[int]:
        return iter(self._table.order().tolist())

    def __len__(self) -> int:
        return self._table.count

    def items(self):
        ids = self._table.order()
        return list(zip(ids.tolist(), self._table.rows(ids)))

    def values(self):
        return self._table.rows(self._table.order())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _ByTopic(Mapping):
    """topic -> a read-only view (``wrap``) of that topic's table: the face of the view's per-topic tables."""
    __slots__ = ("_topics", "_wrap")

    def __init__(self, topics: dict, wrap):
        self._topics, self._wrap = topics, wrap

    def __getitem__(self, topic: str):
        return self._wrap(self._topics[topic])

    def __contains__(self, topic: object) -> bool:
        return topic in self._topics

    def __iter__(self) -> Iterator[str]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)

    def __repr__(self) -> str:
        return repr({t: dict(parts.items()) for t, parts in self.items()})


def _ints(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


# --- grouping a batch's records ---------------------------------------------------------------------

def _topic_groups(column: DictColumn) -> list[tuple[str, np.ndarray]]:
    """(topic, positions of its records in the batch, ascending) per topic, in the order of each topic's
    first record (the order in which a record-by-record fold meets them)."""
    names, codes = column.dictionary, column.codes
    if len(names) == 1:
        return [(names[0], np.arange(len(codes)))]
    if len(set(names)) != len(names):   # the same string under two codes
        first: dict = {}
        codes = np.array([first.setdefault(name, i) for i, name in enumerate(names)], dtype=np.int64)[codes]
    order = np.argsort(codes, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
    groups.sort(key=lambda g: int(g[0]))
    return [(names[int(codes[g[0]])], g) for g in groups if len(g)]


def _distinct(ps: np.ndarray) -> bool:
    return distinct(ps)


def _last_writes(ps: np.ndarray) -> np.ndarray:
    """Indexes into ``ps`` of the last occurrence of each value, in the order of the values' first occurrence."""
    if _distinct(ps):
        return np.arange(len(ps))
    _, first = np.unique(ps, return_index=True)
    _, last_reversed = np.unique(ps[::-1], return_index=True)
    return (len(ps) - 1 - last_reversed)[np.argsort(first)]


def _first_writes(ps: np.ndarray) -> np.ndarray:
    """Indexes into ``ps`` of the first occurrence of each value, ascending."""
    if _distinct(ps):
        return np.arange(len(ps))
    return np.sort(np.unique(ps, return_index=True)[1])


def _rounds(ps: np.ndarray) -> list[np.ndarray]:
    """Indexes into ``ps`` in rounds: round k holds the (k+1)-th occurrence of each value, ascending."""
    if _distinct(ps):
        return [np.arange(len(ps))]
    order = np.argsort(ps, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(ps[order]) != 0])
    rank = np.empty(len(ps), dtype=np.int64)
    rank[order] = np.arange(len(ps)) - np.repeat(starts, np.diff(np.r_[starts, len(ps)]))
    return [np.flatnonzero(rank == k) for k in range(int(rank.max()) + 1)]


def _partition_numbers(column: np.ndarray) -> np.ndarray:
    """A batch's partition column as int64, ValueError if a number is outside what the view holds."""
    ps = column.astype(np.int64, copy=False)
    if len(ps) and (int(ps.min()) < 0 or int(ps.max()) >= MAX_PARTITIONS):
        bad = int(ps.min()) if int(ps.min()) < 0 else int(ps.max())
        raise ValueError(f"partition {bad}: the view holds partitions 0..{MAX_PARTITIONS - 1}")
    return ps


def _first_occurrences(block: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a padded matrix without repeated values (the first of each kept), as a dict's keys."""
    w = block.shape[1]
    dup = np.zeros(len(block), dtype=bool)
    for j in range(1, w):
        for i in range(j):
            dup |= (block[:, i] == block[:, j]) & (j < lengths)
    if not dup.any():
        return block, lengths
    block, lengths = block.copy(), lengths.copy()
    for row in np.flatnonzero(dup).tolist():
        keys = list(dict.fromkeys(block[row, :lengths[row]].tolist()))
        block[row] = -1
        block[row, :len(keys)] = keys
        lengths[row] = len(keys)
    return block, lengths


# --- ViewSnapshot format 3: per topic, columns as bin buffers -----------------------------------------

_bin = narrow_bytes


def _flat(block: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The first ``lengths[i]`` values of each row of a padded matrix, concatenated."""
    if not len(lengths) or int(lengths.min()) == block.shape[1]:
        return block.ravel()
    return block[np.arange(block.shape[1]) < lengths[:, None]]


def _unbin(data, n: int, what: str) -> np.ndarray:
    """The ``n`` ints of a column :func:`_bin` wrote; ValueError if ``data`` cannot be that."""
    values = from_narrow_bytes(data, n, what)
    return values if n else _EMPTY_I32


def _row_count(n) -> int:
    if type(n) is not int or n < 0:
        raise ValueError(f"row count {n!r:.50} is not a non-negative int")
    return n


def _lists_from_columns(counts, values, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(a -1-padded int32 matrix, lengths) from a column of counts and one of the values they count."""
    lengths = _unbin(counts, n, f"{what} counts").astype(np.int64)
    if n and int(lengths.min()) < 0:
        raise ValueError(f"{what} counts: a negative count")
    total = int(lengths.sum())
    return _padded(lengths, _int_column(_unbin(values, total, what), np.int32, what))


def _partition_columns(table: _Partitions) -> list:
    """n, then partitions, states, leaders, leader epochs, partition epochs, recovery states, replica counts,
    replicas, ISR counts, ISR as bins (rows in the order they were added)."""
    ids = table.order()
    nr, ni = table.n_replicas[ids], table.n_isr[ids]
    return [len(ids), _bin(ids), _bin(table.state[ids]), _bin(table.leader[ids]), _bin(table.leader_epoch[ids]),
            _bin(table.partition_epoch[ids]), _bin(table.recovery_state[ids]), _bin(nr),
            _bin(_flat(table.replicas[ids], nr)), _bin(ni), _bin(_flat(table.isr[ids], ni))]


def _partitions_from_columns(n, ps, state, leader, leader_epoch, partition_epoch, recovery_state, n_replicas,
                             replicas, n_isr, isr) -> _Partitions:
    n = _row_count(n)
    table = _Partitions()
    table.put(_distinct_partitions(_unbin(ps, n, "partitions")),
              _int_column(_unbin(state, n, "states"), np.uint8, "states"),
              _lists_from_columns(n_replicas, replicas, n, "replicas"),
              _unbin(leader, n, "leaders"), _unbin(leader_epoch, n, "leader epochs"),
              _lists_from_columns(n_isr, isr, n, "isr"), _unbin(partition_epoch, n, "partition epochs"),
              _unbin(recovery_state, n, "recovery states"))
    return table


def _replica_state_columns(table: _ReplicaStates) -> list:
    """n, then partitions, pair counts, replicas, replica states as bins (the pairs of each partition in the
    order the replicas got a state)."""
    ids = table.order()
    n = table.n[ids]
    return [len(ids), _bin(ids), _bin(n), _bin(_flat(table.ids[ids], n)), _bin(_flat(table.states[ids], n))]


def _replica_states_from_columns(n, ps, counts, replicas, states) -> _ReplicaStates:
    n = _row_count(n)
    ids = _distinct_partitions(_unbin(ps, n, "partitions"))
    block, lengths = _lists_from_columns(counts, replicas, n, "replicas")
    state_values = _int_column(_unbin(states, int(lengths.sum()), "replica states"), np.uint8, "replica states")
    state_block, _ = _padded(lengths, state_values)
    if _first_occurrences(block, lengths)[1] is not lengths:
        raise ValueError("a partition lists a replica's state twice")
    table = _ReplicaStates()
    table.replace(ids, block, state_block.astype(np.uint8, copy=False), lengths)
    return table


def _assignment_columns(table: _Assignment) -> list:
    """n, then partitions, replica counts, replicas as bins."""
    ids = table.order()
    n = table.n[ids]
    return [len(ids), _bin(ids), _bin(n), _bin(_flat(table.replicas[ids], n))]


def _assignment_from_columns(n, ps, counts, replicas) -> _Assignment:
    n = _row_count(n)
    return _Assignment.of_rows(_distinct_partitions(_unbin(ps, n, "partitions")),
                               *_lists_from_columns(counts, replicas, n, "replicas"))


def _topic_tables(entries, build, what: str) -> dict:
    """topic -> table of a format-3 element: ``[topic, *columns]`` per topic, each read by ``build``."""
    arity = build.__code__.co_argcount
    tables = {}
    for entry in entries:
        if not isinstance(entry, tuple) or len(entry) != arity + 1 or type(entry[0]) is not str:
            raise ValueError(f"a {what} entry is not [topic, {arity} columns]")
        try:
            tables[entry[0]] = build(*entry[1:])
        except ValueError as exc:
            raise ValueError(f"{what} of topic {entry[0]!r:.100}: {exc}") from None
    return tables


class ClusterView:
    """The cluster state folded from records; feed records in offset order to :meth:`apply`, or columnar
    batches to :meth:`apply_columns`."""

    def __init__(self) -> None:
        self.controller: tuple[int, int] | None = None   # (id, epoch) of the active controller
        self.latest_epoch = 0                             # highest controller epoch seen
        self.known_brokers: set[int] = set()
        self.registered_brokers: dict[int, int] = {}      # id -> broker epoch, shutting-down ones included
        self.shutting_down: frozenset[int] = frozenset()
        self._partitions: dict[str, _Partitions] = {}     # topic -> its partitions (see ``topics``)
        self._replica_states: dict[str, _ReplicaStates] = {}  # see ``replica_states``
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._assignments: dict[str, _Assignment] = {}    # see ``assignments``
        self.deleting: set[str] = set()                   # topics queued for deletion
        # reassignments in progress as the store holds them: topic -> partition -> (adding, removing)
        self.reassignments: dict[str, dict[int, tuple[tuple, tuple]]] = {}
        # the cluster's broker-level configs (ClusterCreated, broker ConfigChanged): not in a ViewSnapshot,
        # fold_log reads them from the log's first record when it starts from one
        self.broker_configs: dict[str, str] = {}
        # partitions of topics being deleted that went NonExistentPartition, with their last state
        self._deleted_partitions: dict[str, _Partitions] = {}
        self._failover_pending: tuple[int, int] | None = None  # elected controller whose context is not built yet
        self.offset = -1                                  # offset of the last record applied
        self.timestamp_ms: int | None = None              # its timestamp

    @property
    def topics(self) -> Mapping[str, Mapping[int, PartitionView]]:
        """topic -> partition -> :class:`PartitionView` (a read-only mapping over the stored partitions)."""
        return _ByTopic(self._partitions, _PartitionsView)

    @property
    def replica_states(self) -> Mapping[str, Mapping[int, dict[int, int]]]:
        """topic -> partition -> {replica: ReplicaState byte} (read-only; topics and partitions in the order
        they got a state, replicas too)."""
        return _ByTopic(self._replica_states, _PartitionStatesView)

    @property
    def assignments(self) -> Mapping[str, Mapping[int, tuple]]:
        """topic -> partition -> replicas as the store holds them (TopicCreated, PartitionsAdded, then
        ReplicaAssignmentChanged; read-only, topics and partitions in the order they were added)."""
        return _ByTopic(self._assignments, _AssignmentView)

    # --- folding -----------------------------------------------------------------------------
    def apply(self, record: tuple) -> None:
        """Fold one record (an ``events.records`` object) into the view."""
        # Positional access (kind, offset, controller id and epoch, time): this runs for every record.
        handler = _HANDLERS.get(record[0])
        if handler is not None and not (record[0] in _STATE_KINDS and record[3] >= 0
                                        and record[4] < self.latest_epoch):
            # (a deposed, zombie controller's in-memory changes are not the cluster's state)
            handler(self, record)
        self.offset = record[2]
        self.timestamp_ms = record[5]

    def apply_columns(self, batch) -> None:
        """Fold an ``events.columns.ColumnBatch`` (records of one kind and one header): kinds the view does
        not fold cost nothing per record; partition and replica transitions and leader/ISR updates are
        folded as array operations, with the result of folding them one by one; the others one by one."""
        if not batch.n:
            return
        kind = batch.cls.KIND
        handler = _HANDLERS.get(kind)
        if handler is not None and not (kind in _STATE_KINDS and batch.controller_id >= 0
                                        and batch.controller_epoch < self.latest_epoch):
            bulk = _BULK.get(kind)
            if bulk is None or not bulk(self, batch):
                for record in batch.records():
                    handler(self, record)
        self.offset = batch.first_offset + batch.n - 1
        self.timestamp_ms = batch.timestamp_ms

    def apply_until(self, records: Iterable[tuple], at_offset: int | None = None,
                    at_time: int | None = None) -> bool:
        """Apply records in order until one lies past the bound; return False if one did."""
        for record in records:
            if (at_offset is not None and record.offset > at_offset) or \
                    (at_time is not None and record.timestamp_ms > at_time):
                return False
            self.apply(record)
        return True

    def _controller_elected(self, rec: ControllerElected) -> None:
        self.controller = (rec.controller_id, rec.controller_epoch)
        self.latest_epoch = max(self.latest_epoch, rec.controller_epoch)
        self._failover_pending = self.controller

    def _controller_resigned(self, rec: ControllerResigned) -> None:
        if self.controller is not None and rec.controller_epoch >= self.controller[1]:
            self.controller = None
        self.latest_epoch = max(self.latest_epoch, rec.controller_epoch)

    def _broker_started(self, rec: BrokerStarted) -> None:
        self.known_brokers.add(rec.broker_id)

    def _live_brokers_changed(self, rec: LiveBrokersChanged) -> None:
        self.registered_brokers = dict(rec.live_brokers)
        self.shutting_down = frozenset(rec.shutting_down)
        self.known_brokers.update(self.registered_brokers)
        if self._failover_pending == (rec.controller_id, rec.controller_epoch):
            self._failover_pending = None
            self._initialize_states()

    def _initialize_states(self) -> None:
        """A new controller's context was just built (its first LiveBrokersChanged): Kafka then sets
        every state directly, without a log line or record (initializeReplicaState and
        initializePartitionState), from the live brokers and the stored leaders. Do the same."""
        live = np.array(self.live_broker_ids(), dtype=np.int64)
        # Partitions created while no controller acted on them: the new controller finds them in the
        # store without a leader (NewPartition); only the admin's input records carried them.
        # A halted deletion's partitions are in the store too: Kafka initialises them like any other.
        for topic, assignment in self._assignments.items():
            deleted = self._deleted_partitions.pop(topic, None)
            if not assignment.count:
                continue
            table = self._partitions.get(topic)
            keys = assignment.order()
            missing = keys if table is None else keys[~table.mask(keys)]
            if not len(missing):
                continue
            if table is None:
                table = self._partitions[topic] = _Partitions()
            n = len(missing)
            table.put(missing, NEW_PARTITION, (assignment.replicas[missing], assignment.n[missing]),
                      NO_LEADER, -1, (np.full((n, 0), -1, dtype=np.int32), np.zeros(n, dtype=np.int32)), 0, 0)
            if deleted is not None:
                back = missing[deleted.mask(missing)]
                table.put_from(deleted, back)
        for topic, table in self._partitions.items():
            ids = table.order()
            leader_epoch = table.leader_epoch[ids]
            table.state[ids] = np.where(leader_epoch < 0, NEW_PARTITION,
                                        np.where(np.isin(table.leader[ids], live), ONLINE_PARTITION,
                                                 OFFLINE_PARTITION))
            replicas, lengths = _first_occurrences(table.replicas[ids], table.n_replicas[ids])
            states = np.where(np.isin(replicas, live), ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE).astype(np.uint8)
            rs = self._replica_states.get(topic)
            if rs is None:
                rs = self._replica_states[topic] = _ReplicaStates()
            rs.replace(ids, replicas, states, lengths)

    def _cluster_created(self, rec: ClusterCreated) -> None:
        self.broker_configs = dict(rec.configs)

    def _topic_created(self, rec: TopicCreated) -> None:
        self.topic_configs[rec.topic] = dict(rec.configs)
        try:
            block = _tuples_block(rec.assignment, "replicas")
        except ValueError as exc:
            raise _unfit(rec, exc) from None
        self._assignments[rec.topic] = _Assignment.of_rows(np.arange(len(rec.assignment)), *block)

    def _partitions_added(self, rec: PartitionsAdded) -> None:
        if rec.topic in self.deleting:
            return  # the controller puts the topic's assignment back (processPartitionModifications)
        table = self._assignments.get(rec.topic)
        if table is None:
            table = self._assignments[rec.topic] = _Assignment()
        if not rec.assignment:
            return
        try:
            ps = _partition_numbers(_int_column([p for p, _ in rec.assignment], np.int64, "partition"))
            sel = _last_writes(ps).tolist()   # a dict's update: the first position, the last value
            block = _tuples_block([rec.assignment[i][1] for i in sel], "replicas")
        except ValueError as exc:
            raise _unfit(rec, exc) from None
        table.put(ps[sel], *block)

    def _replica_assignment_changed(self, rec: ReplicaAssignmentChanged) -> None:
        replicas = tuple(rec.replicas)
        # Kafka lists a partition as being reassigned while its assignment has adding or removing
        # replicas (ReplicaAssignment.isBeingReassigned)
        moving = self.reassignments.setdefault(rec.topic, {})
        if rec.adding_replicas or rec.removing_replicas:
            moving[operator.index(rec.partition)] = (tuple(rec.adding_replicas), tuple(rec.removing_replicas))
        else:
            moving.pop(rec.partition, None)
        if not moving:
            del self.reassignments[rec.topic]
        assignment = self._assignments.get(rec.topic)
        if assignment is not None:
            try:
                assignment.set(_partition_number(rec.topic, rec.partition), replicas)
            except ValueError as exc:
                raise _unfit(rec, exc) from None
        table = self._partitions.get(rec.topic)
        if table is not None and table.has(rec.partition):
            try:
                table._set_list("replicas", rec.partition, replicas)
            except OverflowError as exc:
                raise _unfit(rec, exc) from None

    def _topic_queued_for_deletion(self, rec: TopicQueuedForDeletion) -> None:
        self.deleting.add(rec.topic)

    def _topic_deletion_completed(self, rec: TopicDeletionCompleted) -> None:
        topic = rec.topic
        self.deleting.discard(topic)
        for table in (self._partitions, self._deleted_partitions, self._assignments, self.topic_configs,
                      self._replica_states, self.reassignments):
            table.pop(topic, None)

    def _config_changed(self, rec: ConfigChanged) -> None:
        if rec.entity_type == "broker" and not rec.entity_name:
            if rec.value is None:
                self.broker_configs.pop(rec.name, None)
            else:
                self.broker_configs[rec.name] = rec.value
            return
        if rec.entity_type != "topic":
            return
        configs = self.topic_configs.setdefault(rec.entity_name, {})
        if rec.value is None:
            configs.pop(rec.name, None)
        else:
            configs[rec.name] = rec.value

    def _partition_transition(self, rec: PartitionTransition) -> None:
        if rec.to_state == NON_EXISTENT_PARTITION:
            table = self._partitions.get(rec.topic)
            if table is not None and table.has(rec.partition):
                p = operator.index(rec.partition)
                deleted = self._deleted_partitions.get(rec.topic)
                if deleted is None:
                    deleted = self._deleted_partitions[rec.topic] = _Partitions()
                deleted.set_row(p, *table.row(p))
                table.remove(p)
                if not table.count:
                    del self._partitions[rec.topic]
            return
        p = _partition_number(rec.topic, rec.partition)
        table = self._partitions.get(rec.topic)
        if table is None:
            table = self._partitions[rec.topic] = _Partitions()
        try:
            table.set_row(p, rec.to_state, tuple(rec.replicas), rec.leader, rec.leader_epoch, tuple(rec.isr),
                          rec.partition_epoch, rec.recovery_state)
        except OverflowError as exc:
            raise _unfit(rec, exc) from None

    def _leader_and_isr_updated(self, rec: LeaderAndIsrUpdated) -> None:
        table = self._partitions.get(rec.topic)
        if table is None or not table.has(rec.partition):
            # A partition of a topic being deleted (ISR shrinks go on after NonExistentPartition).
            table = self._deleted_partitions.get(rec.topic)
            if table is None or not table.has(rec.partition):
                return  # no state, replicas or partition to attach it to: nothing to invent
        try:
            table.set_leadership(operator.index(rec.partition), rec.leader, rec.leader_epoch, tuple(rec.isr),
                                 rec.partition_epoch, rec.recovery_state)
        except OverflowError as exc:
            raise _unfit(rec, exc) from None

    def _replica_transition(self, rec: ReplicaTransition) -> None:
        if rec.to_state != NON_EXISTENT_REPLICA:
            p = _partition_number(rec.topic, rec.partition)
            table = self._replica_states.get(rec.topic)
            if table is None:
                table = self._replica_states[rec.topic] = _ReplicaStates()
            try:
                table.set(p, rec.replica, rec.to_state)
            except OverflowError as exc:
                raise _unfit(rec, exc) from None
            return
        table = self._replica_states.get(rec.topic)
        if table is not None and table.has_partition(rec.partition):
            table.remove(operator.index(rec.partition), rec.replica)
            if not table.count:
                del self._replica_states[rec.topic]

    # --- folding columnar batches (each returns False, having changed nothing, to fold record by record) ----
    def _fold_partition_transitions(self, batch) -> bool:
        topic, part, _, to, replicas, leader, leader_epoch, isr, partition_epoch, recovery_state, _ = batch.columns
        gone = to == NON_EXISTENT_PARTITION
        if gone.all():
            # Each present row moves to the deleted table (a second NonExistentPartition finds nothing);
            # the deleted table gets its topics in the order of their first move.
            moves = []
            for name, at in _topic_groups(topic):
                table = self._partitions.get(name)
                if table is None:
                    continue
                ps = part[at].astype(np.int64)
                first = _first_writes(ps)
                moving = table.mask(ps[first])
                if moving.any():
                    moves.append((int(at[first[moving][0]]), name, table, ps[first[moving]]))
            for _, name, table, ps in sorted(moves, key=lambda m: m[0]):
                deleted = self._deleted_partitions.get(name)
                if deleted is None:
                    deleted = self._deleted_partitions[name] = _Partitions()
                deleted.put_from(table, ps)
                table.drop(ps)
                if not table.count:
                    del self._partitions[name]
            return True
        if gone.any():
            return False
        part = _partition_numbers(part)
        where = f"{batch!r}"
        replicas = _list_block(replicas, f"{where} replicas")
        isr = _list_block(isr, f"{where} isr")
        leader = _int_column(leader, np.int32, f"{where} leader")
        leader_epoch = _int_column(leader_epoch, np.int32, f"{where} leader_epoch")
        partition_epoch = _int_column(partition_epoch, np.int32, f"{where} partition_epoch")
        recovery_state = _int_column(recovery_state, np.int32, f"{where} recovery_state")
        to = _int_column(to, np.uint8, f"{where} to_state")
        for name, at in _topic_groups(topic):
            sel = at[_last_writes(part[at])]
            table = self._partitions.get(name)
            if table is None:
                table = self._partitions[name] = _Partitions()
            table.put(part[sel], to[sel], (replicas[0][sel], replicas[1][sel]), leader[sel], leader_epoch[sel],
                      (isr[0][sel], isr[1][sel]), partition_epoch[sel], recovery_state[sel])
        return True

    def _fold_leader_and_isr_updates(self, batch) -> bool:
        topic, part, leader, leader_epoch, isr, partition_epoch, recovery_state, _, _ = batch.columns
        part = part.astype(np.int64, copy=False)
        where = f"{batch!r}"
        isr = _list_block(isr, f"{where} isr")
        leader = _int_column(leader, np.int32, f"{where} leader")
        leader_epoch = _int_column(leader_epoch, np.int32, f"{where} leader_epoch")
        partition_epoch = _int_column(partition_epoch, np.int32, f"{where} partition_epoch")
        recovery_state = _int_column(recovery_state, np.int32, f"{where} recovery_state")
        for name, at in _topic_groups(topic):
            sel = at[_last_writes(part[at])]
            ps = part[sel]
            rest = np.ones(len(sel), dtype=bool)
            for table in (self._partitions.get(name), self._deleted_partitions.get(name)):
                if table is None:
                    continue
                hit = rest & table.mask(ps)
                if hit.any():
                    s = sel[hit]
                    table.put_leadership(ps[hit], leader[s], leader_epoch[s], (isr[0][s], isr[1][s]),
                                         partition_epoch[s], recovery_state[s])
                    rest &= ~hit
        return True

    def _fold_replica_transitions(self, batch) -> bool:
        topic, part, replica, _, to = batch.columns
        gone = to == NON_EXISTENT_REPLICA
        if gone.any() and not gone.all():
            return False
        gone = bool(gone.all())
        where = f"{batch!r}"
        replica = _int_column(replica, np.int32, f"{where} replica")
        if gone:
            part = part.astype(np.int64, copy=False)
        else:
            part = _partition_numbers(part)
            to = _int_column(to, np.uint8, f"{where} to_state")
        for name, at in _topic_groups(topic):
            table = self._replica_states.get(name)
            if table is None:
                if gone:
                    continue
                table = self._replica_states[name] = _ReplicaStates()
            if not gone and table.put_held(part[at], replica[at], to[at]):
                continue
            for r in _rounds(part[at]):
                sel = at[r]
                if gone:
                    table.drop(part[sel], replica[sel])
                else:
                    table.put(part[sel], replica[sel], to[sel])
            if gone and not table.count:
                del self._replica_states[name]
        return True

    # --- snapshots ---------------------------------------------------------------------------
    def to_snapshot(self, format: int = SNAPSHOT_FORMAT) -> bytes:
        """The whole view as a msgpack array (layout: docs/event-log-format.md, ViewSnapshot), in format 3
        (per topic, columns as bin buffers of little-endian ints) or, with ``format=2``, the earlier one
        (per partition, positional arrays).

        Tables are written in the view's own order, so that :meth:`from_snapshot` rebuilds an identical
        view, iteration order included; equal views write equal bytes.
        """
        if format == 3 and self.reassignments:
            # A 16th field: the reassignments in progress (written only when there are some, so a log without
            # a reassignment in progress at a snapshot keeps the bytes of earlier versions)
            extra = [[[t, [[p, list(a), list(r)] for p, (a, r) in moving.items()]]
                      for t, moving in self.reassignments.items()]]
        else:
            extra = []
        if format == 3:
            topics = [[t, *_partition_columns(table)] for t, table in self._partitions.items()]
            replica_states = [[t, *_replica_state_columns(table)] for t, table in self._replica_states.items()]
            assignments = [[t, *_assignment_columns(table)] for t, table in self._assignments.items()]
            deleted = [[t, *_partition_columns(table)] for t, table in self._deleted_partitions.items()]
        elif format == 2:
            topics = [[t, table.snapshot_rows()] for t, table in self._partitions.items()]
            replica_states = [[t, table.snapshot_rows()] for t, table in self._replica_states.items()]
            assignments = [[t, table.snapshot_rows()] for t, table in self._assignments.items()]
            deleted = [[t, table.snapshot_rows()] for t, table in self._deleted_partitions.items()]
        else:
            raise ValueError(f"view snapshot format {format!r:.50}: this writer knows 2 and 3")
        pending = self._failover_pending
        state = [
            format,
            self.offset,
            self.timestamp_ms,
            None if self.controller is None else list(self.controller),
            self.latest_epoch,
            sorted(self.known_brokers),
            [[b, e] for b, e in self.registered_brokers.items()],
            sorted(self.shutting_down),
            None if pending is None else list(pending),
            topics,
            replica_states,
            [[topic, [[k, v] for k, v in configs.items()]] for topic, configs in self.topic_configs.items()],
            assignments,
            sorted(self.deleting),
            deleted,
            *extra,
        ]
        return msgpack.packb(state, use_bin_type=True)

    @classmethod
    def from_snapshot(cls, data: bytes) -> ClusterView:
        """The view :meth:`to_snapshot` wrote (in format 1, 2 or 3); ValueError if ``data`` is not such a
        snapshot."""
        try:
            state = msgpack.unpackb(data, use_list=False, raw=False)
        except Exception as exc:  # msgpack raises several unrelated types
            raise ValueError(f"view snapshot is not valid msgpack: {exc}") from exc
        if not isinstance(state, tuple) or not state or state[0] not in (1, 2, 3) or type(state[0]) is not int:
            found = state[0] if isinstance(state, tuple) and state else state
            raise ValueError(f"view snapshot has format {found!r:.100}, this reader knows 1, 2 and 3")
        fmt = state[0]
        expected = 13 if fmt == 1 else 15
        if len(state) != expected and not (fmt == 3 and len(state) == 16):
            raise ValueError(f"view snapshot has {len(state)} fields, expected {expected}")
        if fmt == 1:
            state = state + ((), ())  # format 1 had no deletions
        view = cls()
        if len(state) == 16:   # format 3 with the reassignments in progress
            try:
                view.reassignments = {t: {operator.index(p): (tuple(a), tuple(r)) for p, a, r in moving}
                                      for t, moving in state[15]}
            except (TypeError, ValueError) as exc:
                raise ValueError(f"view snapshot does not have the ViewSnapshot layout: {exc}") from exc
            state = state[:15]
        try:
            (_, view.offset, view.timestamp_ms, controller, view.latest_epoch, known, registered, shutting_down,
             pending, topics, replica_states, topic_configs, assignments, deleting, deleted) = state
            view.controller = None if controller is None else (controller[0], controller[1])
            view.known_brokers = set(known)
            view.registered_brokers = {b: e for b, e in registered}
            view.shutting_down = frozenset(shutting_down)
            view._failover_pending = None if pending is None else (pending[0], pending[1])
            if fmt == 3:
                view._partitions = _topic_tables(topics, _partitions_from_columns, "partitions")
                view._replica_states = _topic_tables(replica_states, _replica_states_from_columns, "replica states")
                view._assignments = _topic_tables(assignments, _assignment_from_columns, "assignment")
                view._deleted_partitions = _topic_tables(deleted, _partitions_from_columns, "deleted partitions")
            else:
                view._partitions = {topic: _Partitions.from_rows(parts) for topic, parts in topics}
                view._replica_states = {topic: _ReplicaStates.from_rows(parts) for topic, parts in replica_states}
                view._assignments = {topic: _Assignment.from_rows(parts) for topic, parts in assignments}
                view._deleted_partitions = {topic: _Partitions.from_rows(parts) for topic, parts in deleted}
            view.topic_configs = {topic: dict(configs) for topic, configs in topic_configs}
            view.deleting = set(deleting)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"view snapshot does not have the ViewSnapshot layout: {exc}") from exc
        return view

    # --- reading -----------------------------------------------------------------------------
    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.registered_brokers and broker_id not in self.shutting_down

    def live_broker_ids(self) -> list[int]:
        return sorted(b for b in self.registered_brokers if b not in self.shutting_down)

    def partition_replica_states(self, topic: str, partition: int) -> dict[int, int]:
        """Replica id -> ReplicaState byte for the partition's replicas that have a state (a new dict)."""
        table = self._replica_states.get(topic)
        if table is None or not table.has_partition(partition):
            return {}
        return table.of(operator.index(partition))

    def _sorted_partitions(self, topic: str) -> Iterator[tuple[int, tuple, dict]]:
        """(partition, PartitionView fields, replica states) of a topic's partitions, by number."""
        table = self._partitions[topic]
        ids = np.flatnonzero(table.present)
        states = self._replica_states.get(topic)
        if states is None:
            maps = [{}] * len(ids)
        else:
            has = states.mask(ids)
            maps = states.pairs(np.where(has, ids, 0), dict)
            if not has.all():
                for i in np.flatnonzero(~has).tolist():
                    maps[i] = {}
        return zip(ids.tolist(), table.rows(ids), maps)

    def to_json_dict(self) -> dict:
        """The view as JSON data: controller, brokers by id, topics by name, partitions by number."""
        if self.controller is None:
            controller = {"id": -1, "epoch": self.latest_epoch}
        else:
            controller = {"id": self.controller[0], "epoch": self.controller[1]}
        brokers = [{"id": b, "live": self.is_live(b)} for b in sorted(self.known_brokers)]
        topics = [{"name": topic, "partitions": [_partition_json(p, row, states)
                                                 for p, row, states in self._sorted_partitions(topic)]}
                  for topic in sorted(self._partitions)]
        return {"controller": controller, "brokers": brokers, "topics": topics}

    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_json_dict` (``json.dumps`` with sorted keys and no
        spaces; here written topic by topic without building the dicts): equal views, equal digests."""
        h = hashlib.sha256()
        cid, epoch = (-1, self.latest_epoch) if self.controller is None else self.controller
        brokers = ",".join(f'{{"id":{b},"live":{"true" if self.is_live(b) else "false"}}}'
                           for b in sorted(self.known_brokers))
        h.update(f'{{"brokers":[{brokers}],"controller":{{"epoch":{epoch},"id":{cid}}},"topics":['.encode())
        for i, topic in enumerate(sorted(self._partitions)):
            parts = ",".join(_partition_canonical_json(p, row, states)
                             for p, row, states in self._sorted_partitions(topic))
            h.update(f'{"," if i else ""}{{"name":{json.dumps(topic)},"partitions":[{parts}]}}'.encode())
        h.update(b"]}")
        return h.hexdigest()

    def describe_lines(self, options: DescribeOptions | None = None) -> Iterator[str]:
        """A comment line naming the controller, then ``kafka-topics.sh --describe`` lines with ``options``'
        topic and partition filters (module docstring). ValueError for a ``--topic`` no topic matches."""
        options = options or DescribeOptions()
        who = "none" if self.controller is None else self.controller[0]
        epoch = self.latest_epoch if self.controller is None else self.controller[1]
        header = f"# controller {who} epoch {epoch}, live brokers {_ints(self.live_broker_ids()) or 'none'}"
        if self.shutting_down:
            header += f", shutting down {_ints(sorted(self.shutting_down))}"
        names = set(self._partitions) | (self.deleting & set(self._deleted_partitions))
        topics = options.matching(names)
        yield header
        # Kafka's liveBrokers for --unavailable-partitions are the brokers DescribeCluster lists: the
        # registered ones, shutting down included; Offline: counts a shutting-down broker's replicas too
        metadata_brokers = set(self.registered_brokers)
        live = set(self.live_broker_ids())
        default_min_isr = self.broker_configs.get(MIN_INSYNC_REPLICAS, "1")
        for topic in topics:
            configs = self.topic_configs.get(topic, {})
            moving = self.reassignments.get(topic, {})
            yield from describe_topic_lines(
                topic, self._describe_partitions(topic, moving), configs,
                int(configs.get(MIN_INSYNC_REPLICAS, default_min_isr)), topic in self.deleting, metadata_brokers,
                live, options)

    def _describe_partitions(self, topic: str, moving: dict) -> list[PartitionDescription]:
        """The topic's partitions by number; a topic being deleted keeps the ones that went NonExistentPartition
        (their znodes stay until the deletion completes)."""
        rows: dict[int, tuple] = {}
        for tables in (self._deleted_partitions, self._partitions) if topic in self.deleting else (self._partitions,):
            table = tables.get(topic)
            if table is not None:
                ids = np.flatnonzero(table.present)
                rows.update(zip(ids.tolist(), table.rows(ids)))
        out = []
        for p in sorted(rows):
            _, replicas, leader, _, isr, _, _ = rows[p]
            adding, removing = moving.get(p, (None, None))
            out.append(PartitionDescription(p, leader, replicas, isr, adding, removing))
        return out


MIN_INSYNC_REPLICAS = "min.insync.replicas"


class PartitionDescription(NamedTuple):
    """One partition as ``kafka-topics.sh --describe`` shows it; ``adding``/``removing`` are None when the
    partition is not being reassigned (ListPartitionReassignments does not list it)."""
    partition: int
    leader: int              # -1: none
    replicas: tuple          # the full replica set (RS) during a reassignment
    isr: tuple
    adding: tuple | None = None
    removing: tuple | None = None


class DescribeOptions(NamedTuple):
    """The options of ``kafka-topics.sh --describe`` (Kafka 3.7's TopicCommand) that choose what is printed."""
    topic: str | None = None                 # --topic: a regular expression for the whole name (IncludeList)
    under_replicated: bool = False           # --under-replicated-partitions
    unavailable: bool = False                # --unavailable-partitions
    under_min_isr: bool = False              # --under-min-isr-partitions
    at_min_isr: bool = False                 # --at-min-isr-partitions
    topics_with_overrides: bool = False      # --topics-with-overrides

    @property
    def describe_configs(self) -> bool:
        """Whether topic lines are printed (and every partition): no partition filter (DescribeOptions)."""
        return not (self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr)

    def matching(self, topics: Iterable[str]) -> list[str]:
        """The topics ``--topic`` selects, sorted; ValueError with Kafka's message when it names some and none
        matches (TopicCommand.ensureTopicExists)."""
        names = sorted(topics)
        if self.topic is None:
            return names
        # TopicFilter: trimmed, commas as alternatives, spaces and surrounding quotes dropped, whole-name match
        regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", self.topic.strip().replace(",", "|").replace(" ", "")))
        try:
            pattern = re.compile(regex)
        except re.error:
            raise ValueError(f"{regex} is an invalid regex.") from None
        found = [t for t in names if pattern.fullmatch(t)]
        if self.topic and not found:
            raise ValueError(f"Topic '{self.topic}' does not exist as expected")
        return found


def _replication_factor(p: PartitionDescription) -> int:
    """TopicCommand.getReplicationFactor: while a reassignment is in progress (a replica of the partition is
    adding or removing), the replicas minus the adding ones, i.e. the size of the assignment being left."""
    if p.adding is not None and set(p.replicas) & (set(p.adding) | set(p.removing)):
        return len(p.replicas) - len(p.adding)
    return len(p.replicas)


def describe_topic_lines(topic: str, partitions: list[PartitionDescription], configs: Mapping[str, str],
                         min_isr: int, marked_for_deletion: bool, brokers: set[int], live: set[int],
                         options: DescribeOptions = DescribeOptions()) -> Iterator[str]:
    """A topic as ``kafka-topics.sh --describe`` prints it: Kafka 3.7's TopicDescription and
    PartitionDescription lines, with ``MarkedForDeletion: true`` as the ZooKeeper-based tool (1.0 to 2.8) set
    it, and kcontroller's ``Offline:`` (replicas on brokers not in ``live``) after Kafka's columns.

    ``partitions`` are sorted by number; ``configs`` are the topic's overrides (Kafka lists the values that
    are not defaults); ``brokers`` are those DescribeCluster lists (``--unavailable-partitions``); the
    filters are TopicCommand's: a partition is printed if no filter is given or any given one holds."""
    if not partitions:
        return
    deleting = "\tMarkedForDeletion: true" if marked_for_deletion else ""
    if options.describe_configs and (not options.topics_with_overrides or configs):
        listed = ",".join(f"{k}={v}" for k, v in sorted(configs.items()))
        yield (f"Topic: {topic}\tPartitionCount: {len(partitions)}\tReplicationFactor: "
               f"{_replication_factor(partitions[0])}\tConfigs: {listed}{deleting}")
    if options.topics_with_overrides:
        return
    for p in partitions:
        has_leader = p.leader >= 0
        # the admin client's TopicPartitionInfo has no leader when the leader's broker is not listed
        known_leader = has_leader and p.leader in brokers
        if not (options.describe_configs
                or (options.under_replicated and _replication_factor(p) - len(p.isr) > 0)
                or (options.unavailable and not known_leader)
                or (options.under_min_isr and (not known_leader or len(p.isr) < min_isr))
                or (options.at_min_isr and len(p.isr) == min_isr)):
            continue
        line = (f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {p.leader if has_leader else 'none'}"
                f"\tReplicas: {_ints(p.replicas)}\tIsr: {_ints(p.isr)}")
        if p.adding is not None:
            line += f"\tAdding Replicas: {_ints(p.adding)}\tRemoving Replicas: {_ints(p.removing)}"
        line += deleting
        offline = [r for r in p.replicas if r not in live]
        if offline:
            line += f"\tOffline: {_ints(offline)}"
        yield line


_REPLICAS = 1   # position of the replicas in a PartitionView field tuple


def _partition_json(p: int, row: tuple, states: dict) -> dict:
    state, replicas, leader, leader_epoch, isr, _, _ = row
    return {
        "partition": p,
        "leader": leader if leader >= 0 else NO_LEADER,
        "leader_epoch": leader_epoch,
        "isr": list(isr),
        "replicas": list(replicas),
        "state": _PARTITION_NAMES[state],
        "replica_states": {str(r): _REPLICA_NAMES[states[r]] for r in sorted(states)},
    }


def _partition_canonical_json(p: int, row: tuple, states: dict) -> str:
    """``json.dumps(_partition_json(p, row, states), sort_keys=True, separators=(",", ":"))``, faster."""
    state, replicas, leader, leader_epoch, isr, _, _ = row
    names = ",".join(f'"{key}":"{_REPLICA_NAMES[states[r]]}"' for key, r in sorted((str(r), r) for r in states))
    return (f'{{"isr":[{_ints(isr)}],"leader":{leader if leader >= 0 else NO_LEADER},"leader_epoch":{leader_epoch},'
            f'"partition":{p},"replica_states":{{{names}}},"replicas":[{_ints(replicas)}],'
            f'"state":"{_PARTITION_NAMES[state]}"}}')


_PARTITION_NAMES = {b: s.value for b, s in PARTITION_BY_BYTE.items()}
_REPLICA_NAMES = {b: s.value for b, s in REPLICA_BY_BYTE.items()}


def _unfit(rec: tuple, exc: Exception) -> RecordValueError:
    """A record value the view's int32 columns cannot hold, as an error naming the record."""
    return RecordValueError(f"{type(rec).__name__} at offset {rec.offset}: {exc}")


_HANDLERS = {
    ClusterCreated.KIND: ClusterView._cluster_created,
    ControllerElected.KIND: ClusterView._controller_elected,
    ControllerResigned.KIND: ClusterView._controller_resigned,
    BrokerStarted.KIND: ClusterView._broker_started,
    LiveBrokersChanged.KIND: ClusterView._live_brokers_changed,
    TopicCreated.KIND: ClusterView._topic_created,
    ConfigChanged.KIND: ClusterView._config_changed,
    PartitionTransition.KIND: ClusterView._partition_transition,
    LeaderAndIsrUpdated.KIND: ClusterView._leader_and_isr_updated,
    ReplicaTransition.KIND: ClusterView._replica_transition,
    PartitionsAdded.KIND: ClusterView._partitions_added,
    ReplicaAssignmentChanged.KIND: ClusterView._replica_assignment_changed,
    TopicQueuedForDeletion.KIND: ClusterView._topic_queued_for_deletion,
    TopicDeletionCompleted.KIND: ClusterView._topic_deletion_completed,
}
# Kinds whose columnar batches are folded as arrays.
_BULK = {
    PartitionTransition.KIND: ClusterView._fold_partition_transitions,
    LeaderAndIsrUpdated.KIND: ClusterView._fold_leader_and_isr_updates,
    ReplicaTransition.KIND: ClusterView._fold_replica_transitions,
}
# Records of a controller's in-memory view: a deposed controller's (older epoch) are not the cluster's.
_STATE_KINDS = frozenset({PartitionTransition.KIND, LeaderAndIsrUpdated.KIND, ReplicaTransition.KIND,
                          LiveBrokersChanged.KIND, ReplicaAssignmentChanged.KIND, TopicQueuedForDeletion.KIND,
                          TopicDeletionCompleted.KIND})


def fold(records: Iterable[tuple], *, at_offset: int | None = None, at_time: int | None = None) -> ClusterView:
    """The view after the records with offset <= ``at_offset`` and timestamp_ms <= ``at_time``
    (either bound may be None); stops at the first record past a bound."""
    view = ClusterView()
    view.apply_until(records, at_offset, at_time)
    return view


def snapshot_record_body(view: ClusterView) -> tuple:
    """The body of the ViewSnapshot record of ``view`` (``journal.emit(ViewSnapshot, *body)``)."""
    return (view.to_snapshot(),)


def _int_encodings(n: int) -> list[bytes]:
    """Every msgpack encoding of the small non-negative int ``n`` (fixint and all fixed widths)."""
    return [bytes([n])] + [bytes([tag]) + n.to_bytes(width, "big")
                           for tag, width in ((0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8),
                                              (0xD0, 1), (0xD1, 2), (0xD2, 4), (0xD3, 8))]


def _any_of(options: list[bytes]) -> bytes:
    return b"(?:" + b"|".join(re.escape(o) for o in options) + b")"


# How every ViewSnapshot record starts in a payload, whichever msgpack widths the writer chose: an
# array of 8 fields, kind 52, a schema version this reader knows. A payload without this byte
# sequence holds no snapshot; one with it may (a string or an 8-replica list can hold the same
# bytes): it is decoded to find out.
_SNAPSHOT_START = re.compile(
    _any_of([bytes([0x90 + len(ViewSnapshot._fields)]), b"\xdc" + len(ViewSnapshot._fields).to_bytes(2, "big"),
             b"\xdd" + len(ViewSnapshot._fields).to_bytes(4, "big")])
    + _any_of(_int_encodings(ViewSnapshot.KIND))
    # every schema version the log may hold (logs written before version 2 hold version 1 snapshots)
    + _any_of([e for v in range(1, ViewSnapshot.VERSION + 1) for e in _int_encodings(v)]))


def _past(batch: Batch, at_offset: int | None, at_time: int | None) -> bool:
    """Whether the batch's first record is already past a bound (from its header alone)."""
    return (at_offset is not None and batch.base_offset > at_offset) or \
        (at_time is not None and batch.first_timestamp_ms > at_time)


def _latest_snapshot(reader: LogReader, at_offset: int | None, at_time: int | None,
                     decoded: dict[int, list]) -> tuple[ClusterView, list, int] | None:
    """The view at the latest usable ViewSnapshot within the bounds, the records after it in its batch
    and the offset after that batch; None if there is no such snapshot.

    One pass over the batches up to the bound (checksums and a byte search, no decoding) finds the
    batches that may hold a snapshot; then only those are decoded, latest first, until one does.
    The first batch decoded is left in ``decoded`` (base offset -> records) for the tail to reuse:
    it is the one the bound falls in when that batch holds a later snapshot.
    """
    candidates: list[int] = []   # base offsets of batches that may hold a snapshot
    last: Batch | None = None    # the latest of them, kept to avoid reading it twice
    with closing(reader.iter_batches()) as batches:
        for batch in batches:
            if _past(batch, at_offset, at_time):
                break
            if _SNAPSHOT_START.search(batch.payload):
                candidates.append(batch.base_offset)
                last = batch
            if (at_offset is not None and batch.end_offset - 1 > at_offset) or \
                    (at_time is not None and batch.last_timestamp_ms > at_time):
                break  # the bound falls inside this batch: nothing after it counts
    for base in reversed(candidates):
        batch = last if base == last.base_offset else _batch_at(reader, base)
        records = batch.records()
        if not decoded:
            decoded[base] = records
        found = _snapshot_in(records, at_offset, at_time)
        if found is not None:
            i, view = found
            view.apply(records[i])  # the snapshot record itself: only offset and timestamp change
            return view, records[i + 1:], batch.end_offset
    return None


def _batch_at(reader: LogReader, base_offset: int) -> Batch:
    with closing(reader.iter_batches(base_offset)) as batches:
        for batch in batches:
            if batch.base_offset == base_offset:
                return batch
    raise AssertionError(f"batch at offset {base_offset} vanished")  # the log is append-only


def _snapshot_in(records: list, at_offset: int | None, at_time: int | None) -> tuple[int, ClusterView] | None:
    """(index, restored view) of the latest usable ViewSnapshot among ``records`` before the first one
    past a bound. A snapshot whose view does not end at the record just before it is not usable (it
    does not describe this log) and is passed over."""
    found = []
    for i, record in enumerate(records):
        if (at_offset is not None and record.offset > at_offset) or \
                (at_time is not None and record.timestamp_ms > at_time):
            break
        if type(record) is ViewSnapshot:
            found.append(i)
    for i in reversed(found):
        view = ClusterView.from_snapshot(records[i].state)
        if view.offset == records[i].offset - 1:
            return i, view
    return None


def fold_log(log_dir: str | os.PathLike, at_offset: int | None = None, at_time: int | None = None, *,
             broker_configs: bool = False) -> ClusterView:
    """:func:`fold` over a log directory, one batch (two while starting) in memory at a time.

    The fold starts from the latest ViewSnapshot record at or before the bounds (found without
    decoding batches that cannot hold one, see :func:`_latest_snapshot`), or from the start of the
    log if there is none; the result is the same either way. Timestamps are taken to never decrease
    along the log (the journal's clock never goes back).

    A batch whose header puts its first record past a bound (base offset, first timestamp)
    ends the fold without being decoded; nothing after it is read. A snapshot holds no broker-level
    configs: with ``broker_configs`` a fold that starts from one takes them from the log's first record.
    """
    reader = LogReader(log_dir)
    start = 0
    decoded: dict[int, list] = {}
    found = _latest_snapshot(reader, at_offset, at_time, decoded)
    if found is None:
        view = ClusterView()
    else:
        view, rest, start = found
        if broker_configs:
            first = next(iter(reader.records()), None)
            if type(first) is ClusterCreated:
                view.broker_configs = dict(first.configs)
        if not view.apply_until(rest, at_offset, at_time):
            return view
    with closing(reader.iter_batches(start)) as batches:
        for batch in batches:
            if _past(batch, at_offset, at_time):
                break
            records = decoded.pop(batch.base_offset, None) or batch.records()
            if batch.base_offset < start:
                records = records[start - batch.base_offset:]
            if not view.apply_until(records, at_offset, at_time):
                break
    return view
