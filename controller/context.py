"""ControllerContext: the controller's in-memory metadata cache (Kafka's ControllerContext.scala).

Fields and predicates follow Kafka's, in snake_case. Partitions are ``(topic, partition)``
tuples and replicas ``(topic, partition, replica)`` tuples at the API. Inside, each topic keeps
its partitions in columns (``TopicState``): ``array('i')`` for leaders, epochs and the codes of
replica lists and ISRs, bytes for states. Replica lists and ISRs are dictionary-encoded: a
``TuplePool`` holds each distinct tuple once under an int code (clusters share a handful of
distinct assignments), and knows them as one padded numpy matrix, so "which partitions does
broker 3 host" is a gather of a per-code mask by the topic's code column, not a scan of tuples.
Replica states are one flat byte column per topic, ``rwidth`` bytes per partition aligned with
the partition's ``rids`` (the replicas that have a state). Batch paths take zero-copy numpy views
of these columns (``np.frombuffer``) for the length of one operation; nothing here is a
GC-tracked object per partition, so a million partitions cost the collector nothing. Touched only
from the controller's event thread; not thread-safe, like Kafka's.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

from itertools import repeat
from operator import itemgetter

import msgpack
import numpy as np

from events.arrays import factorize, from_narrow_bytes, narrow_bytes
from events.records import EPOCH_DURING_DELETE, NO_EPOCH, NO_LEADER
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.replica_rows import PartitionRows, ReplicaRows
from statemachines.states import OFFLINE_PARTITION

ABSENT = 0xFF  # no state recorded (Kafka: key absent from partitionStates)
_EMPTY = ()
EMPTY_CODE = 0  # the pool's code of ()
_ARRAY_MIN = 64  # partitions from which per-partition loops over columns become array work
_POSITIONS_MAX_ID, _POSITIONS_MAX = 1 << 12, 1 << 26   # the largest id and size of TuplePool.positions()
_HASH_MIN = 1 << 17  # rows from which codes_of_row_sets finds distinct rows by hashing rather than sorting
# codes_of_row_sets addresses distinct rows directly (a table over every possible packed row) where that table
# has at most _DIRECT_MAX slots and not many more than the rows (8 per row, and _DIRECT_SLACK)
_DIRECT_MAX, _DIRECT_SLACK = 1 << 22, 1 << 16


class TuplePool:
    """Distinct int tuples under dense int codes (code 0 is ``()``), and the same as a matrix.

    ``matrix()`` is an int32 array of shape (codes, width), row ``c`` the tuple of code ``c``
    padded with -1; it is extended as the pool grows, so per-code masks cost O(distinct tuples).
    """

    __slots__ = ("tuples", "codes", "_matrix", "_rows", "_lengths", "_positions", "_position_rows", "_keys")

    def __init__(self) -> None:
        self.tuples: list[tuple] = [_EMPTY]
        self.codes: dict[tuple, int] = {_EMPTY: EMPTY_CODE}
        self._matrix = np.full((16, 1), -1, dtype=np.int32)
        self._rows = 1
        self._lengths: np.ndarray | None = None
        self._positions: np.ndarray | None = None
        self._position_rows = 0
        self._keys: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}   # bits -> (sorted keys, codes, covered)

    def __len__(self) -> int:
        return len(self.tuples)

    def code(self, t: tuple) -> int:
        c = self.codes.get(t)
        if c is None:
            c = self.codes[t] = len(self.tuples)
            self.tuples.append(t)
        return c

    def intern(self, t: tuple) -> tuple:
        return self.tuples[self.code(t)]

    def matrix(self) -> np.ndarray:
        """(len(self), width) int32: every tuple, -1 padded (a view: do not keep it across interning)."""
        n = len(self.tuples)
        if self._rows < n:
            m = self._matrix
            new = self.tuples[self._rows:n]
            width = max(m.shape[1], max(map(len, new)))
            if width > m.shape[1] or n > m.shape[0]:
                grown = np.full((max(n, 2 * m.shape[0]), width), -1, dtype=np.int32)
                grown[:self._rows, :m.shape[1]] = m[:self._rows]
                self._matrix = m = grown
            for i, t in enumerate(new, self._rows):
                if t:
                    m[i, :len(t)] = t
            self._rows = n
            self._lengths = None
        return self._matrix[:n]

    def lengths(self) -> np.ndarray:
        """int32 (len(self),): each tuple's length."""
        m = self.matrix()
        if self._lengths is None or len(self._lengths) != len(m):
            self._lengths = (m >= 0).sum(axis=1, dtype=np.int32)
        return self._lengths

    def positions(self) -> np.ndarray | None:
        """int8 (len(self), ids): ``[c, r]`` the index of id ``r`` in the tuple of code ``c`` (its first
        place), -1 where absent; extended as the pool grows. None where the ids are too large or the tuples
        too long for such a table (callers then search the matrix)."""
        m = self.matrix()
        n = len(m)
        table = self._positions
        if table is not None and self._position_rows == n:
            return table[:n]
        top = int(m.max()) + 1 if m.size else 1
        if m.shape[1] > 127 or top > _POSITIONS_MAX_ID or n * max(top, 1) > _POSITIONS_MAX:
            return None
        start = self._position_rows
        if table is None or top > table.shape[1] or n > table.shape[0]:
            grown = np.full((max(n, 2 * (0 if table is None else table.shape[0]), 16),
                             max(top, 0 if table is None else table.shape[1])), -1, dtype=np.int8)
            if table is not None:
                grown[:start, :table.shape[1]] = table[:start]
            table = grown
        new = m[start:n]
        rows = np.arange(start, n)
        for j in range(new.shape[1] - 1, -1, -1):   # the first place of an id wins
            ids = new[:, j]
            ok = ids >= 0
            table[rows[ok], ids[ok]] = j
        self._positions, self._position_rows = table, n
        return table[:n]

    def key_codes(self, bits: int, keys: np.ndarray) -> np.ndarray:
        """int64: the code of the tuple each key packs (each id + 1 in ``bits`` bits, the first id lowest, as
        ``ControllerContext.codes_of_row_sets`` packs rows), -1 where the pool has no such tuple. The pool's
        tuples are packed once per ``bits`` as the pool grows (those that do not fit are never asked for)."""
        sorted_keys, codes, covered = self._keys.get(bits, (None, None, 0))
        n = len(self.tuples)
        if covered < n:
            m = self.matrix()[covered:n].astype(np.int64)
            lens = (m >= 0).sum(axis=1)
            fits = ((m >= 0) == (np.arange(m.shape[1]) < lens[:, None])).all(axis=1) & (lens * bits <= 62) & (
                (m + 1 < (1 << bits)).all(axis=1))
            rows = np.flatnonzero(fits)
            m = m[rows]
            new_keys = np.zeros(len(rows), dtype=np.int64)
            for j in range(m.shape[1]):
                new_keys |= np.where(m[:, j] >= 0, m[:, j] + 1, 0) << (bits * j)
            order = np.argsort(new_keys)
            new_keys, new_codes = new_keys[order], (rows + covered)[order]
            if sorted_keys is None:
                sorted_keys, codes = new_keys, new_codes
            else:   # merged into the sorted index: a copy, not a sort of all of it
                at = np.searchsorted(sorted_keys, new_keys)
                sorted_keys, codes = np.insert(sorted_keys, at, new_keys), np.insert(codes, at, new_codes)
            self._keys[bits] = (sorted_keys, codes, n)
        if not len(sorted_keys):
            return np.full(len(keys), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
        return np.where(sorted_keys[at] == keys, codes[at], -1)

    def contains_any(self, broker_ids: Iterable[int]) -> np.ndarray:
        """bool (len(self),): does the tuple of each code hold any of ``broker_ids``?"""
        m = self.matrix()
        ids = np.fromiter(broker_ids, dtype=np.int32)
        if not len(ids):
            return np.zeros(len(m), dtype=bool)
        return np.isin(m, ids).any(axis=1)


def view_i32(col: array) -> np.ndarray:
    """A zero-copy int32 numpy view of an ``array('i')`` column (release it before the column grows)."""
    return np.frombuffer(col, dtype=np.int32) if len(col) else np.zeros(0, dtype=np.int32)


def view_u8(col: bytearray) -> np.ndarray:
    return np.frombuffer(col, dtype=np.uint8) if len(col) else np.zeros(0, dtype=np.uint8)


def _i32_array(values) -> array:
    """Little-endian int32 bytes (or an int array) as an ``array('i')`` column."""
    out = array("i")
    out.frombytes(np.asarray(np.frombuffer(values, dtype="<i4") if isinstance(values, bytes) else values,
                             dtype=np.int32).tobytes())
    return out


class TopicState:
    """All partitions of one topic, column by column; partition ids are 0..n-1 as in Kafka."""

    __slots__ = ("name", "rcode", "adding", "removing", "pstate", "leader", "leader_epoch", "icode",
                 "partition_epoch", "state_controller_epoch", "recovery", "ridcode", "rstates", "rwidth")

    def __init__(self, name: str):
        self.name = name
        self.rcode = array("i")                  # RS per partition, as a pool code
        self.adding: dict[int, tuple] = {}       # AR, only for partitions being reassigned
        self.removing: dict[int, tuple] = {}     # RR
        self.pstate = bytearray()                # PartitionState byte or ABSENT
        self.leader = array("i")
        self.leader_epoch = array("i")           # -1: no leadership info cached
        self.icode = array("i")                  # ISR per partition, as a pool code
        self.partition_epoch = array("i")
        self.state_controller_epoch = array("i")
        self.recovery = bytearray()
        self.ridcode = array("i")                # replicas that have a state, per partition (pool code)
        self.rstates = bytearray()               # their ReplicaState bytes: rwidth per partition, aligned
        self.rwidth = 0

    def __len__(self) -> int:
        return len(self.rcode)

    def extend_to(self, n: int) -> None:
        grow = n - len(self.rcode)
        if grow <= 0:
            return
        self.rcode.extend(array("i", [EMPTY_CODE]) * grow)
        self.pstate.extend(b"\xff" * grow)
        self.leader.extend(array("i", [NO_LEADER]) * grow)
        self.leader_epoch.extend(array("i", [NO_EPOCH]) * grow)
        self.icode.extend(array("i", [EMPTY_CODE]) * grow)
        self.partition_epoch.extend(array("i", [0]) * grow)
        self.state_controller_epoch.extend(array("i", [0]) * grow)
        self.recovery.extend(bytes(grow))
        self.ridcode.extend(array("i", [EMPTY_CODE]) * grow)
        self.rstates.extend(bytes(grow * self.rwidth))

    def widen_rstates(self, width: int) -> None:
        """Make room for ``width`` replica states per partition (rows keep their states)."""
        if width <= self.rwidth:
            return
        n, old = len(self.rcode), self.rwidth
        grown = bytearray(n * width)
        if old:
            view = np.frombuffer(grown, dtype=np.uint8).reshape(n, width)
            view[:, :old] = np.frombuffer(self.rstates, dtype=np.uint8).reshape(n, old)
            del view
        self.rstates = grown
        self.rwidth = width


class ControllerContext:
    """Kafka's ControllerContext: brokers, topics, assignments, leadership, states, deletion sets."""

    def __init__(self) -> None:
        self.pool = TuplePool()
        self.reset_context()

    # --- lifecycle --------------------------------------------------------------------------
    def reset_context(self) -> None:
        """Forget everything (on resignation), keeping the tuple pool."""
        self.epoch = 0
        self.epoch_zk_version = 0
        self.live_broker_epochs: dict[int, int] = {}
        self.broker_info: dict[int, object] = {}  # registration data of live brokers (endpoints, rack)
        self.shutting_down_broker_ids: set[int] = set()
        self.replicas_on_offline_dirs: dict[int, set[tuple]] = {}
        self.topics: dict[str, TopicState] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        # Kafka's topicIds, filled as the controller reads them (a cache: snapshots leave it out).
        self.topic_ids: dict[str, str | None] = {}
        self.partitions_being_reassigned: set[tuple] = set()
        self.topics_to_be_deleted: set[str] = set()
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()
        self.offline_partition_count = 0
        self.preferred_replica_imbalance_count = 0
        self.unclean_leader_elections = 0  # UncleanLeaderElectionsPerSec meter count

    def intern(self, t: Iterable[int]) -> tuple:
        return self.pool.intern(tuple(t))

    # --- brokers ----------------------------------------------------------------------------
    def add_live_brokers(self, broker_epochs: dict[int, int]) -> None:
        self.live_broker_epochs.update(broker_epochs)

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for b in broker_ids:
            self.live_broker_epochs.pop(b, None)

    def update_broker_metadata(self, broker_id: int, epoch: int) -> None:
        self.live_broker_epochs[broker_id] = epoch

    @property
    def live_broker_ids(self) -> set[int]:
        return self.live_broker_epochs.keys() - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_broker_epochs)

    def live_or_shutting_down_broker(self, broker_id: int) -> bool:
        return broker_id in self.live_broker_epochs

    def live_broker_id_and_epochs(self) -> dict[int, int]:
        return dict(self.live_broker_epochs)

    def is_replica_online(self, broker_id: int, tp: tuple, include_shutting_down_brokers: bool = False) -> bool:
        if broker_id not in self.live_broker_epochs:
            return False
        if not include_shutting_down_brokers and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self.replicas_on_offline_dirs.get(broker_id)
        return not offline or tp not in offline

    def online_replica_filter(self, include_shutting_down_brokers: bool = False):
        """A fast ``(broker, tp) -> bool`` equivalent of is_replica_online for batch loops."""
        live = set(self.live_broker_epochs)
        if not include_shutting_down_brokers:
            live -= self.shutting_down_broker_ids
        offline_dirs = {b: s for b, s in self.replicas_on_offline_dirs.items() if s}
        if not offline_dirs:
            return lambda b, tp: b in live
        return lambda b, tp: b in live and (b not in offline_dirs or tp not in offline_dirs[b])

    def live_mask(self, include_shutting_down_brokers: bool = False) -> np.ndarray:
        """bool array by broker id: live (and, unless included, not shutting down). Replicas on offline
        log directories are per partition: see ``has_offline_dirs``."""
        live = set(self.live_broker_epochs)
        if not include_shutting_down_brokers:
            live -= self.shutting_down_broker_ids
        mask = np.zeros(max(live, default=-1) + 1, dtype=bool)
        if live:
            mask[np.fromiter(live, dtype=np.int64)] = True
        return mask

    def has_offline_dirs(self) -> bool:
        return any(self.replicas_on_offline_dirs.values())

    # --- topics and assignments -------------------------------------------------------------
    @property
    def all_topics(self) -> set[str]:
        return set(self.topics)

    def topic_state(self, topic: str) -> TopicState:
        return self.topics[topic]

    def add_topic(self, topic: str, assignment: Iterable[Iterable[int]] = ()) -> TopicState:
        """Register a topic (setAllTopics) with replicas per partition, index = partition id."""
        ts = self.topics.get(topic)
        if ts is None:
            ts = self.topics[topic] = TopicState(topic)
        for p, replicas in enumerate(assignment):
            self.update_partition_full_replica_assignment((topic, p), ReplicaAssignment(tuple(replicas)))
        return ts

    def remove_topic(self, topic: str) -> None:
        ts = self.topics.pop(topic, None)
        if ts is not None:
            for p in range(len(ts)):
                if ts.pstate[p] == OFFLINE_PARTITION and topic not in self.topics_with_deletion_started:
                    self.offline_partition_count -= 1
                if topic not in self.topics_to_be_deleted and not self._has_preferred_leader(ts, p):
                    self.preferred_replica_imbalance_count -= 1
        self.topic_configs.pop(topic, None)
        self.topic_ids.pop(topic, None)
        # As Kafka 3.7's removeTopic: topicsIneligibleForDeletion, partitionsBeingReassigned and
        # replicasOnOfflineDirs keep whatever they had for the topic.
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)

    def _writable(self, topic: str, p: int) -> TopicState:
        """The topic's columns, created and grown so that partition ``p`` exists."""
        ts = self.topics.get(topic)
        if ts is None:
            ts = self.topics[topic] = TopicState(topic)
        if p >= len(ts.rcode):
            ts.extend_to(p + 1)
        return ts

    def partition_replica_assignment(self, tp: tuple) -> tuple:
        """RS of the partition, () if unknown."""
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode):
            return _EMPTY
        return self.pool.tuples[ts.rcode[tp[1]]]

    def partition_full_replica_assignment(self, tp: tuple) -> ReplicaAssignment:
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode):
            return ReplicaAssignment(_EMPTY)
        p = tp[1]
        return ReplicaAssignment(self.pool.tuples[ts.rcode[p]], ts.adding.get(p, _EMPTY), ts.removing.get(p, _EMPTY))

    def update_partition_full_replica_assignment(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        topic, p = tp
        ts = self.topics.get(topic)
        # An unknown partition counts as balanced.
        had_preferred = ts is None or p >= len(ts.rcode) or self._has_preferred_leader(ts, p)
        ts = self._writable(topic, p)
        pool = self.pool
        ts.rcode[p] = pool.code(tuple(assignment.replicas))
        for column, values in ((ts.adding, assignment.adding_replicas), (ts.removing, assignment.removing_replicas)):
            if values:
                column[p] = pool.intern(tuple(values))
            else:
                column.pop(p, None)
        self._adjust_imbalance(ts, p, had_preferred)

    def set_topic_assignment_codes(self, topic: str, codes: np.ndarray) -> TopicState:
        """Register a new topic's partitions 0..n-1 with these RS pool codes in one step (the batch form of
        ``add_topic`` for a topic the context does not know yet: nothing to adjust but the imbalance, which
        a partition without leadership does not count)."""
        ts = self.topics.get(topic)
        if ts is not None and len(ts):
            raise ValueError(f"topic {topic} already has partitions in the context")
        ts = self.topics[topic] = TopicState(topic)
        ts.extend_to(len(codes))
        ts.rcode = array("i", np.ascontiguousarray(codes, dtype=np.int32).tobytes())
        return ts

    def partition_full_replica_assignment_for_topic(self, topic: str) -> dict[int, ReplicaAssignment]:
        """partition -> ReplicaAssignment of every partition of the topic (Kafka's
        partitionFullReplicaAssignmentForTopic), built from the columns in one pass."""
        ts = self.topics.get(topic)
        if ts is None:
            return {}
        adding, removing, new, tuples = ts.adding, ts.removing, tuple.__new__, self.pool.tuples
        if not adding and not removing:
            return {p: new(ReplicaAssignment, (tuples[c], _EMPTY, _EMPTY)) for p, c in enumerate(ts.rcode)}
        return {p: new(ReplicaAssignment, (tuples[c], adding.get(p, _EMPTY), removing.get(p, _EMPTY)))
                for p, c in enumerate(ts.rcode)}

    def partition_replica_assignment_for_topic(self, topic: str) -> dict[tuple, tuple]:
        ts = self.topics.get(topic)
        tuples = self.pool.tuples
        return {} if ts is None else {(topic, p): tuples[c] for p, c in enumerate(ts.rcode)}

    def all_partitions(self) -> Iterator[tuple]:
        for topic, ts in self.topics.items():
            for p in range(len(ts)):
                yield (topic, p)

    def partitions_for_topic(self, topic: str) -> list[tuple]:
        ts = self.topics.get(topic)
        return [] if ts is None else [(topic, p) for p in range(len(ts))]

    def hosted_mask(self, ts: TopicState, broker_ids: Iterable[int]) -> np.ndarray:
        """bool (partitions,): does the partition's RS hold any of ``broker_ids``?"""
        return self.pool.contains_any(broker_ids)[view_i32(ts.rcode)]

    def partitions_on_broker(self, broker_id: int) -> list[tuple]:
        out = []
        contains = self.pool.contains_any((broker_id,))
        for topic, ts in self.topics.items():
            if len(ts):
                out.extend(zip(repeat(topic), np.flatnonzero(contains[view_i32(ts.rcode)]).tolist()))
        return out

    def replica_rows_on_brokers(self, broker_ids: Iterable[int]) -> ReplicaRows:
        """``replicas_on_brokers`` as columns (the same rows in the same order)."""
        ids = np.fromiter(set(broker_ids), dtype=np.int32)
        names = list(self.topics)
        if not len(ids):
            return ReplicaRows(names, np.zeros(0), np.zeros(0), np.zeros(0))
        matrix = self.pool.matrix()
        contains = np.isin(matrix, ids)
        any_code = contains.any(axis=1)
        topic, partition, replica = [], [], []
        for code, ts in enumerate(self.topics.values()):
            if not len(ts):
                continue
            codes = view_i32(ts.rcode)
            parts = np.flatnonzero(any_code[codes])
            if not len(parts):
                continue
            pi, ci = np.nonzero(contains[codes[parts]])
            topic.append(np.full(len(pi), code, dtype=np.int32))
            partition.append(parts[pi])
            replica.append(matrix[codes[parts[pi]], ci])
        if not topic:
            return ReplicaRows(names, np.zeros(0), np.zeros(0), np.zeros(0))
        return ReplicaRows(names, np.concatenate(topic), np.concatenate(partition), np.concatenate(replica))

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[tuple]:
        """(topic, partition, replica) of every replica on those brokers: topics in context order,
        partitions ascending, replicas in assignment order."""
        ids = np.fromiter(set(broker_ids), dtype=np.int32)
        out = []
        if not len(ids):
            return out
        pool = self.pool
        matrix = pool.matrix()
        contains = np.isin(matrix, ids)
        any_code = contains.any(axis=1)
        for topic, ts in self.topics.items():
            if not len(ts):
                continue
            codes = view_i32(ts.rcode)
            parts = np.flatnonzero(any_code[codes])
            if not len(parts):
                continue
            rows = matrix[codes[parts]]
            hit = contains[codes[parts]]
            pi, ci = np.nonzero(hit)
            out.extend(zip([topic] * len(pi), parts[pi].tolist(), rows[pi, ci].tolist()))
        return out

    def topics_with_offline_replicas(self) -> set[str]:
        """Topics with a replica that ``is_replica_online`` says is not online (Kafka's check in
        fetchTopicDeletionsInProgress), per distinct assignment as arrays where no log directory is offline."""
        if self.has_offline_dirs():
            return {t for t in self.topics
                    if any(not self.is_replica_online(r, (t, p)) for t, p, r in self.replicas_for_topic(t))}
        m = self.pool.matrix()
        live = self.live_mask()
        known = (m >= 0) & (m < len(live))
        offline = (m >= 0) & ~known
        offline[known] = ~live[m[known]]
        has_offline = offline.any(axis=1)
        return {t for t, ts in self.topics.items() if len(ts) and has_offline[view_i32(ts.rcode)].any()}

    def replicas_for_topic(self, topic: str) -> list[tuple]:
        ts = self.topics.get(topic)
        if ts is None:
            return []
        tuples = self.pool.tuples
        return [(topic, p, r) for p, c in enumerate(ts.rcode) for r in tuples[c]]

    def replicas_for_partition(self, partitions: Iterable[tuple]) -> list[tuple]:
        """(topic, partition, replica) of each partition's replicas, in partition then assignment order (as
        ``ReplicaRows`` for many partitions of known topics)."""
        if not isinstance(partitions, (list, tuple, PartitionRows)):
            partitions = list(partitions)
        segments = self.topic_segments(partitions) if len(partitions) >= _ARRAY_MIN else None
        if segments is None:
            return [(t, p, r) for t, p in partitions for r in self.partition_replica_assignment((t, p))]
        matrix = self.pool.matrix()
        names, topic, part, replica = [], [], [], []
        for code, (ts, parts, _, _) in enumerate(segments):
            m = matrix[view_i32(ts.rcode)[parts]]
            i, j = np.nonzero(m >= 0)
            names.append(ts.name)
            topic.append(np.full(len(i), code, dtype=np.int32))
            part.append(parts[i])
            replica.append(m[i, j])
        return ReplicaRows(names, np.concatenate(topic), np.concatenate(part), np.concatenate(replica))

    def online_and_offline_replicas(self) -> tuple[list[tuple], list[tuple]]:
        """Every replica of every partition, split by ``is_replica_online``: topic, partition and assignment
        order (as columns, ``ReplicaRows``, when no replica is on an offline log directory)."""
        if not self.has_offline_dirs():
            return self._online_and_offline_rows()
        online, offline = [], []
        is_online = self.online_replica_filter()
        tuples = self.pool.tuples
        for topic, ts in self.topics.items():
            for p, c in enumerate(ts.rcode):
                tp = (topic, p)
                for r in tuples[c]:
                    (online if is_online(r, tp) else offline).append((topic, p, r))
        return online, offline

    def _online_and_offline_rows(self) -> tuple[ReplicaRows, ReplicaRows]:
        live = self.live_mask()
        names = list(self.topics)
        pool_matrix = self.pool.matrix()
        parts: list = [[], []]
        for code, ts in enumerate(self.topics.values()):
            m = pool_matrix[view_i32(ts.rcode)]
            has = m >= 0
            online = has.copy()
            known = has & (m < len(live))
            online[known] = live[m[known]]
            online[has & ~known] = False
            for side, mask in ((0, online), (1, has & ~online)):
                p, j = np.nonzero(mask)
                parts[side].append((np.full(len(p), code, dtype=np.int32), p, m[p, j]))
        out = []
        for side in parts:
            if side:
                out.append(ReplicaRows(names, np.concatenate([a for a, _, _ in side]),
                                       np.concatenate([b for _, b, _ in side]), np.concatenate([c for _, _, c in side])))
            else:
                out.append(ReplicaRows(names, np.zeros(0), np.zeros(0), np.zeros(0)))
        return out[0], out[1]

    # --- batch access (the state machines' array paths) ----------------------------------------
    def topic_segments(self, rows: list[tuple]) -> list[tuple[TopicState, np.ndarray, int, int]] | None:
        """Split ``(topic, partition[, ...])`` rows into runs of one topic: (columns, partitions, start, end)
        in row order. None when a topic appears in two runs, a partition twice, or a partition is unknown:
        the caller then takes the per-partition path."""
        if isinstance(rows, (ReplicaRows, PartitionRows)):
            return self._row_segments(rows)
        n = len(rows)
        parts = np.fromiter(map(itemgetter(1), rows), dtype=np.int64, count=n)
        if n > 1:
            names = np.empty(n, dtype=object)
            names[:] = list(map(itemgetter(0), rows))
            bounds = (np.flatnonzero(names[1:] != names[:-1]) + 1).tolist()
        else:
            bounds = []
        starts = [0] + bounds if n else []
        return self._segments([rows[i][0] for i in starts], parts, starts, bounds + [n])

    def _row_segments(self, rows) -> list[tuple[TopicState, np.ndarray, int, int]] | None:
        runs = rows.topic_runs()
        return self._segments([t for t, _, _ in runs], rows.partition, [s for _, s, _ in runs],
                              [e for _, _, e in runs])

    def _segments(self, names: list, parts: np.ndarray, starts: list, ends: list):
        """``topic_segments`` of runs ``names[i]`` = rows ``starts[i]..ends[i]-1`` of partitions ``parts``: the
        checks over all runs at once (each run's partitions ascending, the usual case, are distinct)."""
        topics = self.topics
        segs = [topics.get(t) for t in names]
        if not segs:
            return []
        if any(ts is None for ts in segs) or len(set(names)) != len(names) or int(parts.min()) < 0:
            return None
        at = np.asarray(starts, dtype=np.int64)
        sizes = np.fromiter(map(len, segs), dtype=np.int64, count=len(segs))
        if bool((np.maximum.reduceat(parts, at) >= sizes).any()):
            return None
        rising = parts[1:] > parts[:-1]
        rising[at[1:] - 1] = True   # (a run's first row need not follow the previous run's last)
        if not rising.all():
            for start, end in zip(starts, ends):
                seg = parts[start:end]
                if len(seg) > 1 and int(np.bincount(seg).max()) > 1:
                    return None
        return [(ts, parts[s:e], s, e) for ts, s, e in zip(segs, starts, ends)]

    def replica_states_array(self, ts: TopicState, parts: np.ndarray, replica: int) -> tuple[np.ndarray, np.ndarray]:
        """(column of ``replica`` in each partition's replica states, -1 if it has none; its state, ABSENT
        where none)."""
        cols = self.replica_state_columns(ts, parts, replica)
        states = np.full(len(parts), ABSENT, dtype=np.uint8)
        has = cols >= 0
        if has.any() and ts.rwidth:
            grid = view_u8(ts.rstates).reshape(len(ts), ts.rwidth)
            states[has] = grid[parts[has], cols[has]]
            del grid
        return cols, states

    @staticmethod
    def _add_replica_states(ts: TopicState, coded: np.ndarray, codes: np.ndarray, rows: np.ndarray, pos: np.ndarray,
                            state: int) -> None:
        """Partitions ``coded`` take the replica-id codes ``codes``; the state bytes at (``rows``, ``pos``) become
        ``state`` (the columns widened first if a position needs it)."""
        ts.widen_rstates(int(pos.max()) + 1)
        view = view_i32(ts.ridcode)
        view[coded] = codes
        del view
        grid = view_u8(ts.rstates).reshape(len(ts), ts.rwidth)
        grid[rows, pos] = state
        del grid

    def ensure_replica_states(self, ts: TopicState, parts: np.ndarray, replica,
                              default: int) -> tuple[np.ndarray, np.ndarray]:
        """``replica_states_array``, giving ``replica`` the state ``default`` first where it has none (the
        batch form of ``replica_states_or_init``). ``replica`` may be an array, one replica per row (a
        partition then on several rows): the missing ones are appended in row order, as that loop does."""
        cols, states = self.replica_states_array(ts, parts, replica)
        missing = cols < 0
        if missing.any() and np.ndim(replica):
            rows = np.flatnonzero(missing)
            rows = rows[np.argsort(parts[rows], kind="stable")]   # by partition, row order within
            sel = parts[rows]
            start = np.concatenate(([True], sel[1:] != sel[:-1]))
            run = np.cumsum(start) - 1
            heads = np.flatnonzero(start)
            uniq = sel[heads]
            rids = view_i32(ts.ridcode)[uniq]
            pos = self.pool.lengths()[rids][run] + (np.arange(len(sel)) - heads[run])
            old = self.pool.matrix()[rids]
            grown = np.full((len(uniq), max(int(pos.max()) + 1, old.shape[1])), -1, dtype=np.int32)
            grown[:, :old.shape[1]] = old
            grown[run, pos] = np.asarray(replica)[rows]
            self._add_replica_states(ts, uniq, self.codes_of_rows(grown), sel, pos, default)
            cols[rows] = pos
            states[rows] = default
        elif missing.any():
            sel = parts[missing]
            rids = view_i32(ts.ridcode)[sel]
            uniq, inverse = np.unique(rids, return_inverse=True)
            tuples, code = self.pool.tuples, self.pool.code
            new_codes = np.fromiter((code(tuples[c] + (replica,)) for c in uniq.tolist()), dtype=np.int32,
                                    count=len(uniq))[inverse.reshape(-1)]
            pos = self.pool.lengths()[rids]
            self._add_replica_states(ts, sel, new_codes, sel, pos, default)
            cols[missing] = pos
            states[missing] = default
        return cols, states

    def ensure_partition_states(self, ts: TopicState, parts: np.ndarray, default: int) -> np.ndarray:
        """The states of partitions ``parts``, ``default`` put first where they have none (the batch form of
        ``partition_states_or_init``)."""
        view = view_u8(ts.pstate)
        states = view[parts]
        absent = states == ABSENT
        del view
        if absent.any():
            self.put_partition_states_array(ts, parts[absent], default)
            states[absent] = default
        return states

    def initialize_replica_states(self, online: int, offline: int) -> None:
        """Kafka's initializeReplicaState in bulk: every replica of every partition gets ``online`` if it is
        online, else ``offline`` (direct puts, in assignment order, as one put per replica would)."""
        live = self.live_mask()
        offline_dirs = {b: s for b, s in self.replicas_on_offline_dirs.items() if s}
        matrix = self.pool.matrix()
        for topic, ts in self.topics.items():
            n = len(ts)
            if not n:
                continue
            if bool((view_i32(ts.ridcode) != EMPTY_CODE).any()):   # states already there: one put each
                is_online = self.online_replica_filter()
                for p in range(n):
                    for r in self.pool.tuples[ts.rcode[p]]:
                        self.put_replica_state((topic, p, r), online if is_online(r, (topic, p)) else offline)
                continue
            rows = matrix[view_i32(ts.rcode)]
            width = int(self.pool.lengths()[view_i32(ts.rcode)].max())
            if not width:
                continue
            rows = rows[:, :width]
            on = (rows >= 0) & (rows < len(live))
            on[on] = live[rows[on]]
            if offline_dirs:
                for p, j in zip(*np.nonzero(on)):
                    s = offline_dirs.get(int(rows[p, j]))
                    if s and (topic, int(p)) in s:
                        on[p, j] = False
            ts.ridcode = array("i", ts.rcode)
            ts.widen_rstates(width)
            grid = view_u8(ts.rstates).reshape(n, ts.rwidth)
            grid[:, :width] = np.where(rows >= 0, np.where(on, online, offline), 0)
            del grid

    def initialize_partition_states(self, new: int, online: int, offline: int) -> None:
        """Kafka's initializePartitionState in bulk: ``new`` without leadership info, else ``online`` when the
        leader is online, ``offline`` when not (direct puts)."""
        live = self.live_mask()
        offline_dirs = {b: s for b, s in self.replicas_on_offline_dirs.items() if s}
        for topic, ts in self.topics.items():
            n = len(ts)
            if not n:
                continue
            leader = view_i32(ts.leader)
            on = (leader >= 0) & (leader < len(live))
            on[on] = live[leader[on]]
            if offline_dirs:
                for p in np.flatnonzero(on).tolist():
                    s = offline_dirs.get(int(leader[p]))
                    if s and (topic, p) in s:
                        on[p] = False
            no_info = view_i32(ts.leader_epoch) == NO_EPOCH
            del leader
            everything = np.arange(n)
            for state, mask in ((new, no_info), (online, ~no_info & on), (offline, ~no_info & ~on)):
                if mask.any():
                    self.put_partition_states_array(ts, everything[mask], state)

    def put_replica_states_array(self, ts: TopicState, parts: np.ndarray, cols: np.ndarray, state: int) -> None:
        """Set the state of the replicas at ``cols`` (all >= 0) of partitions ``parts``."""
        grid = view_u8(ts.rstates).reshape(len(ts), ts.rwidth)
        grid[parts, cols] = state
        del grid

    def leadership_arrays(self, ts: TopicState, parts: np.ndarray) -> tuple[np.ndarray, ...]:
        """(controller_epoch, leader, leader_epoch, isr code, partition_epoch, recovery) of partitions ``parts``."""
        return (view_i32(ts.state_controller_epoch)[parts], view_i32(ts.leader)[parts],
                view_i32(ts.leader_epoch)[parts], view_i32(ts.icode)[parts], view_i32(ts.partition_epoch)[parts],
                view_u8(ts.recovery)[parts])

    def assignment_codes(self, ts: TopicState, parts: np.ndarray) -> np.ndarray:
        return view_i32(ts.rcode)[parts]

    def tuples_of_rows(self, rows: np.ndarray) -> list[tuple]:
        """The tuples of a -1 padded int32 matrix's rows, each distinct one built once (the pool's)."""
        tuples = self.pool.tuples
        return [tuples[c] for c in self.codes_of_rows(rows).tolist()]

    def codes_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Pool codes of the tuples in a -1 padded int32 matrix (each distinct row interned once, in the order
        of their packed keys)."""
        rows = np.asarray(rows)
        if rows.ndim == 2 and len(rows) >= _ARRAY_MIN and rows.shape[1]:
            return self.codes_of_row_sets([rows])[0]
        return self._codes_of_rows(rows)

    def _codes_of_rows(self, rows: np.ndarray) -> np.ndarray:
        if not len(rows):
            return np.zeros(0, dtype=np.int32)
        rows = np.asarray(rows)
        code = self.pool.code
        width = rows.shape[1] if rows.ndim == 2 else 0
        top = int(rows.max()) + 2 if rows.size else 1
        bits = max(1, top.bit_length())
        if width and bits * width <= 62:
            # Each row packed into one int64 (ids + 1 in ``bits``-bit digits): a hash-based unique of ints.
            key = np.zeros(len(rows), dtype=np.int64)
            for j in range(width):
                key |= (rows[:, j].astype(np.int64) + 1) << (bits * j)
            uniq_keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            uniq = rows[first]
        else:
            uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        keep = uniq >= 0
        lens = keep.sum(axis=1)
        rows_list = uniq.tolist()
        if (keep == (np.arange(uniq.shape[1]) < lens[:, None])).all():   # ids first, padding after
            tuples = [tuple(r[:n]) for r, n in zip(rows_list, lens.tolist())]
        else:
            tuples = [tuple(x for x in r if x >= 0) for r in rows_list]
        codes = np.fromiter(map(code, tuples), dtype=np.int32, count=len(tuples))
        return codes[inverse.reshape(-1)]

    def codes_of_row_sets(self, sets: list[np.ndarray]) -> list[np.ndarray]:
        """``codes_of_rows`` of each matrix of ``sets``, with the pool codes that calling it on one after the
        other gives (new tuples interned set by set, each set's in the order of its packed keys), in one pass
        over all their rows."""
        sizes = [len(m) for m in sets]
        widths = [np.asarray(m).shape[1] if np.asarray(m).ndim == 2 else 0 for m in sets]
        width = max(widths, default=0)
        if sum(sizes) < _ARRAY_MIN or not width or not all(widths):
            return [self._codes_of_rows(m) for m in sets]
        top = max(int(np.asarray(m).max()) + 2 for m, n in zip(sets, sizes) if n)
        bits = max(1, top.bit_length())
        if bits * width > 62:   # codes_of_rows orders such rows differently: one set at a time
            return [self._codes_of_rows(m) for m in sets]
        total = sum(sizes)
        key = np.zeros(total, dtype=np.int64)
        at = 0
        for m, n, w in zip(sets, sizes, widths):   # each row packed as codes_of_rows packs it (padding: zero digits)
            m = np.asarray(m)
            for j in range(w):
                key[at:at + n] |= (m[:, j].astype(np.int64) + 1) << (bits * j)
            at += n
        set_id = np.repeat(np.arange(len(sets)), sizes)
        span = 1 << (bits * width)
        if span <= min(_DIRECT_MAX, 8 * total + _DIRECT_SLACK):   # few possible rows: found by address
            present = np.zeros(span, dtype=bool)
            present[key] = True
            uniq_keys = np.flatnonzero(present)
            inverse = (np.cumsum(present, dtype=np.int32) - 1)[key]
            set_of = np.full(len(uniq_keys), len(sets), dtype=np.int64)
            np.minimum.at(set_of, inverse, set_id)   # the first set holding each
        else:
            if total < _HASH_MIN:   # a sort is cheaper than building an Arrow array
                uniq_keys, first, inverse = np.unique(key, return_index=True, return_inverse=True)
                inverse = inverse.reshape(-1)
            else:
                uniq_keys, inverse = factorize(key)
                seen = np.maximum.accumulate(inverse)
                first = np.flatnonzero(np.concatenate(([True], seen[1:] > seen[:-1])))   # each key's first row
            set_of = set_id[first]
        codes = self.pool.key_codes(bits, uniq_keys).astype(np.int32)   # the rows the pool holds already
        new = np.flatnonzero(codes < 0)
        if len(new):
            new_keys = uniq_keys[new]
            uniq = ((new_keys[:, None] >> (bits * np.arange(width))) & ((1 << bits) - 1)) - 1   # the rows again
            keep = uniq >= 0
            lens = keep.sum(axis=1)
            rows_list = uniq.tolist()
            if (keep == (np.arange(width) < lens[:, None])).all():
                tuples = [tuple(r[:n]) for r, n in zip(rows_list, lens.tolist())]
            else:
                tuples = [tuple(x for x in r if x >= 0) for r in rows_list]
            order = np.lexsort((new_keys, set_of[new]))   # the order the one-by-one calls intern them
            codes[new[order]] = np.fromiter(map(self.pool.code, map(tuples.__getitem__, order.tolist())),
                                            dtype=np.int32, count=len(order))
        out = codes[inverse]
        bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
        return [out[s:e] for s, e in zip(bounds[:-1], bounds[1:])]

    # --- partition states -------------------------------------------------------------------
    def partition_state(self, tp: tuple) -> int | None:
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode):
            return None
        s = ts.pstate[tp[1]]
        return None if s == ABSENT else s

    def put_partition_state(self, tp: tuple, state: int) -> None:
        topic, p = tp
        ts = self._writable(topic, p)
        old = ts.pstate[p]
        ts.pstate[p] = state
        if topic not in self.topics_with_deletion_started:
            if old != OFFLINE_PARTITION and state == OFFLINE_PARTITION:
                self.offline_partition_count += 1
            elif old == OFFLINE_PARTITION and state != OFFLINE_PARTITION:
                self.offline_partition_count -= 1

    def put_partition_states_array(self, ts: TopicState, parts: np.ndarray, state: int) -> None:
        """``put_partition_state`` for partitions ``parts`` (distinct indexes) of one topic."""
        view = view_u8(ts.pstate)
        if ts.name not in self.topics_with_deletion_started:
            old = view[parts]
            if state == OFFLINE_PARTITION:
                self.offline_partition_count += int(np.count_nonzero(old != OFFLINE_PARTITION))
            else:
                self.offline_partition_count -= int(np.count_nonzero(old == OFFLINE_PARTITION))
        view[parts] = state
        del view

    def partition_states_or_init(self, partitions: list[tuple], default: int) -> list[int]:
        """Current state of each partition; partitions without one get ``default`` first."""
        segments = self.topic_segments(partitions) if len(partitions) >= _ARRAY_MIN else None
        if segments is not None:
            out = []
            for ts, parts, _, _ in segments:
                cur = view_u8(ts.pstate)[parts]
                absent = cur == ABSENT
                if absent.any():
                    self.put_partition_states_array(ts, parts[absent], default)
                    cur[absent] = default
                out.append(cur)
            return np.concatenate(out).tolist() if out else []
        out = []
        for tp in partitions:
            s = self.partition_state(tp)
            if s is None:
                self.put_partition_state(tp, default)
                s = default
            out.append(s)
        return out

    def put_partition_states(self, partitions: list[tuple], state: int) -> None:
        segments = self.topic_segments(partitions) if len(partitions) >= _ARRAY_MIN else None
        if segments is not None:
            for ts, parts, _, _ in segments:
                self.put_partition_states_array(ts, parts, state)
            return
        for tp in partitions:
            self.put_partition_state(tp, state)

    def put_partition_state_if_not_exists(self, tp: tuple, state: int) -> None:
        if self.partition_state(tp) is None:
            self.put_partition_state(tp, state)

    def partitions_in_state(self, state: int, topic: str | None = None) -> list[tuple]:
        return self.partitions_in_states((state,), topic)

    def partitions_in_states(self, states: Iterable[int], topic: str | None = None) -> list[tuple]:
        wanted = np.fromiter(set(states), dtype=np.uint8)
        topics = self.topics.items() if topic is None else [(topic, self.topics[topic])] if topic in self.topics else []
        out = []
        for t, ts in topics:
            if len(ts):
                out.extend(zip(repeat(t), np.flatnonzero(np.isin(view_u8(ts.pstate), wanted)).tolist()))
        return out

    # --- replica states ---------------------------------------------------------------------
    def replica_state(self, replica: tuple) -> int | None:
        topic, p, r = replica
        ts = self.topics.get(topic)
        if ts is None or p >= len(ts.rcode):
            return None
        rids = self.pool.tuples[ts.ridcode[p]]
        if r in rids:
            return ts.rstates[p * ts.rwidth + rids.index(r)]
        return None

    def _add_replica_state(self, ts: TopicState, p: int, rids: tuple, r: int, state: int) -> None:
        i = len(rids)
        if i >= ts.rwidth:
            ts.widen_rstates(i + 1)
        ts.ridcode[p] = self.pool.code(rids + (r,))
        ts.rstates[p * ts.rwidth + i] = state

    def put_replica_state(self, replica: tuple, state: int) -> None:
        topic, p, r = replica
        ts = self._writable(topic, p)
        rids = self.pool.tuples[ts.ridcode[p]]
        if r in rids:
            ts.rstates[p * ts.rwidth + rids.index(r)] = state
        else:
            self._add_replica_state(ts, p, rids, r, state)

    def replica_states_or_init(self, replicas: list[tuple], default: int) -> list[int]:
        """Current state of each replica; replicas without one get ``default`` first (batched
        ``putReplicaStateIfNotExists`` + ``replicaState``)."""
        out = []
        append = out.append
        topics = self.topics
        tuples = self.pool.tuples
        last_topic = None
        ts = None
        for topic, p, r in replicas:
            if topic is not last_topic:
                ts = topics.get(topic)
                if ts is None:
                    ts = topics[topic] = TopicState(topic)
                last_topic = topic
            if p >= len(ts.rcode):
                ts.extend_to(p + 1)
            rids = tuples[ts.ridcode[p]]
            if r in rids:
                append(ts.rstates[p * ts.rwidth + rids.index(r)])
            else:
                self._add_replica_state(ts, p, rids, r, default)
                append(default)
        return out

    def put_replica_states(self, replicas: list[tuple], state: int) -> None:
        """``put_replica_state`` for many replicas that already have a state."""
        topics = self.topics
        tuples = self.pool.tuples
        last_topic = None
        ts = None
        for topic, p, r in replicas:
            if topic is not last_topic:
                ts = topics[topic]
                last_topic = topic
            ts.rstates[p * ts.rwidth + tuples[ts.ridcode[p]].index(r)] = state

    def replica_state_columns(self, ts: TopicState, parts: np.ndarray, replica) -> np.ndarray:
        """For partitions ``parts`` of one topic: the column of ``replica`` (an int, or an array: one per
        row) in each row of replica states, -1 where it has none (the batch form of the lookup in
        ``replica_state``)."""
        codes = view_i32(ts.ridcode)[parts]
        table = self.pool.positions()
        if table is None:
            rows = self.pool.matrix()[codes]
            hit = rows == (np.asarray(replica)[:, None] if np.ndim(replica) else replica)
            return np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
        width = table.shape[1]
        if not np.ndim(replica):
            if 0 <= replica < width:
                return table[:, replica][codes].astype(np.int64)
            return np.full(len(codes), -1, dtype=np.int64)
        replica = np.asarray(replica)
        ok = (replica >= 0) & (replica < width)
        if ok.all():
            return table[codes, replica].astype(np.int64)
        out = np.full(len(codes), -1, dtype=np.int64)
        out[ok] = table[codes[ok], replica[ok]]
        return out

    def partition_replica_states(self, tp: tuple) -> dict[int, int]:
        """replica -> state of every replica of the partition that has one, in the order they got it."""
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode):
            return {}
        base = tp[1] * ts.rwidth
        return {r: ts.rstates[base + i] for i, r in enumerate(self.pool.tuples[ts.ridcode[tp[1]]])}

    def put_replica_state_if_not_exists(self, replica: tuple, state: int) -> None:
        if self.replica_state(replica) is None:
            self.put_replica_state(replica, state)

    def remove_replica_state(self, replica: tuple) -> None:
        topic, p, r = replica
        ts = self.topics.get(topic)
        if ts is None or p >= len(ts.rcode):
            return
        rids = self.pool.tuples[ts.ridcode[p]]
        if r in rids:
            i = rids.index(r)
            ts.ridcode[p] = self.pool.code(rids[:i] + rids[i + 1:])
            base = p * ts.rwidth
            row = ts.rstates[base:base + ts.rwidth]
            ts.rstates[base:base + ts.rwidth] = row[:i] + row[i + 1:] + b"\x00"

    def _replica_rows(self, ts: TopicState):
        tuples, rstates, w = self.pool.tuples, ts.rstates, ts.rwidth
        for p, c in enumerate(ts.ridcode):
            if c:
                base = p * w
                for i, r in enumerate(tuples[c]):
                    yield p, r, rstates[base + i]

    def replicas_in_state(self, topic: str, state: int) -> list[tuple]:
        ts = self.topics.get(topic)
        if ts is None:
            return []
        return [(topic, p, r) for p, r, s in self._replica_rows(ts) if s == state]

    def replicas_in_states(self, states: Iterable[int]) -> list[tuple]:
        wanted = set(states)
        return [(topic, p, r) for topic, ts in self.topics.items() for p, r, s in self._replica_rows(ts)
                if s in wanted]

    def are_all_replicas_in_state(self, topic: str, state: int) -> bool:
        ts = self.topics.get(topic)
        tuples = self.pool.tuples
        return ts is None or all(self.replica_state((topic, p, r)) == state
                                 for p, c in enumerate(ts.rcode) for r in tuples[c])

    def is_any_replica_in_state(self, topic: str, state: int) -> bool:
        ts = self.topics.get(topic)
        tuples = self.pool.tuples
        return ts is not None and any(self.replica_state((topic, p, r)) == state
                                      for p, c in enumerate(ts.rcode) for r in tuples[c])

    # --- leadership ---------------------------------------------------------------------------
    def partition_leadership_info(self, tp: tuple) -> LeaderIsrAndControllerEpoch | None:
        ts = self.topics.get(tp[0])
        p = tp[1]
        if ts is None or p >= len(ts.rcode) or ts.leader_epoch[p] == NO_EPOCH:
            return None
        return LeaderIsrAndControllerEpoch(
            LeaderAndIsr(ts.leader[p], ts.leader_epoch[p], self.pool.tuples[ts.icode[p]], ts.recovery[p],
                         ts.partition_epoch[p]),
            ts.state_controller_epoch[p])

    def has_leadership_info(self, tp: tuple) -> bool:
        ts = self.topics.get(tp[0])
        return ts is not None and tp[1] < len(ts.rcode) and ts.leader_epoch[tp[1]] != NO_EPOCH

    def has_leadership_info_mask(self, replicas: list[tuple]) -> list[bool]:
        """For each (topic, partition[, replica]): does its partition have cached leadership info?"""
        out = []
        topics = self.topics
        last_topic = None
        epochs = None
        for rep in replicas:
            topic, p = rep[0], rep[1]
            if topic is not last_topic:
                ts = topics.get(topic)
                last_topic, epochs = topic, (ts.leader_epoch if ts is not None else ())
            out.append(p < len(epochs) and epochs[p] != NO_EPOCH)
        return out

    def leadership_fields(self, tp: tuple) -> tuple | None:
        """(controller_epoch, leader, leader_epoch, isr, partition_epoch, recovery_state), or None:
        partition_leadership_info without building objects, for batch loops."""
        ts = self.topics.get(tp[0])
        p = tp[1]
        if ts is None or p >= len(ts.rcode) or ts.leader_epoch[p] == NO_EPOCH:
            return None
        return (ts.state_controller_epoch[p], ts.leader[p], ts.leader_epoch[p], self.pool.tuples[ts.icode[p]],
                ts.partition_epoch[p], ts.recovery[p])

    def put_partition_leadership_info(self, tp: tuple, info: LeaderIsrAndControllerEpoch) -> None:
        topic, p = tp
        ts = self._writable(topic, p)
        had_preferred = self._has_preferred_leader(ts, p)
        lai = info.leader_and_isr
        ts.leader[p] = lai.leader
        ts.leader_epoch[p] = lai.leader_epoch
        ts.icode[p] = self.pool.code(tuple(lai.isr))
        ts.recovery[p] = lai.recovery_state
        ts.partition_epoch[p] = lai.partition_epoch
        ts.state_controller_epoch[p] = info.controller_epoch
        self._adjust_imbalance(ts, p, had_preferred)

    def put_leadership_arrays(self, ts: TopicState, parts: np.ndarray, leader: np.ndarray, leader_epoch: np.ndarray,
                              icodes: np.ndarray, recovery: np.ndarray | int, partition_epoch: np.ndarray,
                              controller_epoch: int) -> None:
        """``put_partition_leadership_info`` for partitions ``parts`` (distinct indexes) of one topic, with
        the preferred-replica imbalance count adjusted as the scalar path does."""
        counted = ts.name not in self.topics_to_be_deleted
        if counted:
            before = self._preferred_mask(ts, parts)
        views = (view_i32(ts.leader), view_i32(ts.leader_epoch), view_i32(ts.icode), view_u8(ts.recovery),
                 view_i32(ts.partition_epoch), view_i32(ts.state_controller_epoch))
        views[0][parts] = leader
        views[1][parts] = leader_epoch
        views[2][parts] = icodes
        views[3][parts] = recovery
        views[4][parts] = partition_epoch
        views[5][parts] = controller_epoch
        del views
        if counted:
            after = self._preferred_mask(ts, parts)
            self.preferred_replica_imbalance_count += (int(np.count_nonzero(before & ~after))
                                                       - int(np.count_nonzero(after & ~before)))

    def partition_leader(self, tp: tuple) -> int:
        """The cached leader, or -1 (no leader or no leadership info)."""
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode) or ts.leader_epoch[tp[1]] == NO_EPOCH:
            return NO_LEADER
        return ts.leader[tp[1]]

    def leader_epochs_array(self, ts: TopicState, parts: np.ndarray) -> np.ndarray:
        """``leader_epoch`` of partitions ``parts`` of one topic's columns."""
        if ts.name in self.topics_to_be_deleted:
            return np.full(len(parts), EPOCH_DURING_DELETE, dtype=np.int32)
        return view_i32(ts.leader_epoch)[parts]

    def leader_epoch(self, tp: tuple) -> int:
        """Cached leader epoch; -2 (EpochDuringDelete) for topics queued for deletion, -1 if unknown."""
        if tp[0] in self.topics_to_be_deleted:
            return EPOCH_DURING_DELETE
        ts = self.topics.get(tp[0])
        if ts is None or tp[1] >= len(ts.rcode):
            return NO_EPOCH
        return ts.leader_epoch[tp[1]]

    def partitions_leadership_info(self) -> dict[tuple, LeaderIsrAndControllerEpoch]:
        return {tp: info for tp in self.all_partitions()
                if (info := self.partition_leadership_info(tp)) is not None}

    def partitions_with_leaders(self) -> list[tuple]:
        out = []
        for t, ts in self.topics.items():
            if t not in self.topics_to_be_deleted and len(ts):
                out.extend(zip(repeat(t), np.flatnonzero(view_i32(ts.leader_epoch) != NO_EPOCH).tolist()))
        return out

    def partitions_with_offline_leader(self) -> list[tuple]:
        live = self.live_mask()
        offline_dirs = {b: s for b, s in self.replicas_on_offline_dirs.items() if s}
        out = []
        for t, ts in self.topics.items():
            if t in self.topics_to_be_deleted or not len(ts):
                continue
            leader = view_i32(ts.leader)
            online = (leader >= 0) & (leader < len(live))
            online[online] = live[leader[online]]
            if offline_dirs:
                for p in np.flatnonzero(online).tolist():
                    s = offline_dirs.get(leader[p])
                    if s and (t, p) in s:
                        online[p] = False
            out.extend(zip(repeat(t), np.flatnonzero((view_i32(ts.leader_epoch) != NO_EPOCH) & ~online).tolist()))
        return out

    def partition_leaders_on_broker(self, broker_id: int) -> list[tuple]:
        lengths = self.pool.lengths()
        out = []
        for t, ts in self.topics.items():
            if t in self.topics_to_be_deleted or not len(ts):
                continue
            mask = ((view_i32(ts.leader) == broker_id) & (view_i32(ts.leader_epoch) != NO_EPOCH)
                    & (lengths[view_i32(ts.rcode)] > 1))
            out.extend(zip(repeat(t), np.flatnonzero(mask).tolist()))
        return out

    def partition_with_leaders_count(self) -> int:
        return sum(int(np.count_nonzero(view_i32(ts.leader_epoch) != NO_EPOCH)) for ts in self.topics.values())

    def clear_partition_leadership_info(self) -> None:
        for ts in self.topics.values():
            n = len(ts)
            ts.leader_epoch = array("i", [NO_EPOCH]) * n
            ts.leader = array("i", [NO_LEADER]) * n
        self._recount_imbalance()

    # --- preferred-replica imbalance (maintained incrementally, as Kafka 3.7 does) -------------
    def _has_preferred_leader(self, ts: TopicState, p: int) -> bool:
        if ts.leader_epoch[p] == NO_EPOCH:
            return True
        replicas = self.pool.tuples[ts.rcode[p]]
        if not replicas:
            return True
        preferred = replicas[0]
        adding = ts.adding.get(p)
        if adding and preferred in adding:
            # A reassignment's adding preferred replica counts as balanced until it joins the ISR.
            return preferred not in self.pool.tuples[ts.icode[p]] or ts.leader[p] == preferred
        return ts.leader[p] == preferred

    def _preferred_mask(self, ts: TopicState, parts: np.ndarray) -> np.ndarray:
        """``_has_preferred_leader`` for partitions ``parts`` of one topic."""
        out = view_i32(ts.leader)[parts] == self.pool.matrix()[view_i32(ts.rcode)[parts], 0]
        out |= view_i32(ts.leader_epoch)[parts] == NO_EPOCH
        out |= view_i32(ts.rcode)[parts] == EMPTY_CODE
        if ts.adding:
            for i, p in enumerate(parts.tolist()):
                if p in ts.adding:
                    out[i] = self._has_preferred_leader(ts, p)
        return out

    def _adjust_imbalance(self, ts: TopicState, p: int, had_preferred: bool) -> None:
        if ts.name in self.topics_to_be_deleted:
            return
        has = self._has_preferred_leader(ts, p)
        if had_preferred and not has:
            self.preferred_replica_imbalance_count += 1
        elif has and not had_preferred:
            self.preferred_replica_imbalance_count -= 1

    def _recount_imbalance(self) -> None:
        self.preferred_replica_imbalance_count = sum(
            int(np.count_nonzero(~self._preferred_mask(ts, np.arange(len(ts)))))
            for t, ts in self.topics.items() if t not in self.topics_to_be_deleted and len(ts))

    # --- topic deletion -------------------------------------------------------------------
    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        for t in topics:
            if t not in self.topics_to_be_deleted:
                ts = self.topics.get(t)
                if ts is not None and len(ts):
                    self.preferred_replica_imbalance_count -= int(
                        np.count_nonzero(~self._preferred_mask(ts, np.arange(len(ts)))))
                self.topics_to_be_deleted.add(t)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        # Kafka calls this after the topic's partitions went Offline -> NonExistent, so the
        # offline count has already dropped them; from now on their states are not counted.
        self.topics_with_deletion_started.update(topics)

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self.topics_with_deletion_started

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted and topic not in self.topics_ineligible_for_deletion

    def topics_queued_for_deletion(self) -> set[str]:
        return set(self.topics_to_be_deleted)

    # --- configs ------------------------------------------------------------------------------
    def topic_config(self, topic: str, name: str, default: str | None = None) -> str | None:
        return self.topic_configs.get(topic, {}).get(name, default)

    # --- digests ------------------------------------------------------------------------------
    def digest_into(self, h) -> None:
        """Feed the hash ``h`` (hashlib) with the context's cluster state: per topic (by name) and partition,
        its partition state, full replica assignment, leadership info (if cached) and the states of its
        assigned replicas in assignment order, as column buffers; then the brokers shutting down, the
        reassignments and the deletion queues. The same bytes for the same contents however they are held
        (pool codes are resolved, padding is canonical), so a context restored from a snapshot digests as
        the one that wrote it."""
        pool = self.pool.matrix()
        lengths = self.pool.lengths()
        i32 = np.dtype("<i4")

        def tuples(codes: np.ndarray) -> np.ndarray:
            width = int(lengths[codes].max()) if len(codes) else 0
            return np.ascontiguousarray(pool[codes, :width], dtype=i32)

        for name in sorted(self.topics):
            ts = self.topics[name]
            n = len(ts)
            h.update(msgpack.packb(["topic", name, n, sorted(ts.adding.items()), sorted(ts.removing.items())]))
            if not n:
                continue
            epoch = view_i32(ts.leader_epoch)
            has = epoch != NO_EPOCH
            rs = tuples(view_i32(ts.rcode))
            rids = tuples(view_i32(ts.ridcode))
            rstates = np.frombuffer(ts.rstates, dtype=np.uint8).reshape(n, ts.rwidth)[:, :rids.shape[1]]
            states = np.full(rs.shape, ABSENT, dtype=np.uint8)
            for j in range(rs.shape[1]):
                replica = rs[:, j:j + 1]
                match = (rids == replica) & (replica >= 0)
                found = match.any(axis=1)
                states[found, j] = rstates[found, match[found].argmax(axis=1)]
            isr = tuples(np.where(has, view_i32(ts.icode), EMPTY_CODE))
            h.update(msgpack.packb([rs.shape[1], isr.shape[1]]))
            for col in (bytes(ts.pstate), rs, np.where(has, view_i32(ts.leader), 0).astype(i32), epoch.astype(i32),
                        isr, np.where(has, view_i32(ts.partition_epoch), 0).astype(i32),
                        np.where(has, view_i32(ts.state_controller_epoch), 0).astype(i32),
                        np.where(has, view_u8(ts.recovery), 0).astype(np.uint8), states):
                h.update(col if type(col) is bytes else col.tobytes())
        h.update(msgpack.packb(["context", sorted(self.shutting_down_broker_ids),
                                sorted(self.partitions_being_reassigned), sorted(self.topics_to_be_deleted),
                                sorted(self.topics_with_deletion_started),
                                sorted(self.topics_ineligible_for_deletion)]))

    # --- snapshots ------------------------------------------------------------------------------
    STATE_FORMAT = 3
    _READABLE_COLUMN_FORMATS = (2, 3)   # 2: the int columns as int32 buffers; 3: in their narrowest widths

    def to_state(self) -> list:
        """The whole context as msgpack-able data, for cluster snapshots: the pool's tuples once, then per topic
        its columns as little-endian buffers (pool codes and int columns in the narrowest width that holds
        them, ``events.arrays.narrow_bytes``; byte columns as they are)."""
        # The tuples the columns use, coded in order of first use: the bytes depend on the context's contents,
        # not on the order its pool interned tuples in.
        code_columns = [(view_i32(ts.rcode), view_i32(ts.icode), view_i32(ts.ridcode)) for ts in self.topics.values()]
        used = np.concatenate([c for cols in code_columns for c in cols] or [np.zeros(0, dtype=np.int32)])
        order = factorize(used)[0]
        remap = np.zeros(len(self.pool), dtype="<i4")
        remap[order] = np.arange(len(order), dtype="<i4")
        tuples = self.pool.tuples
        topics = []
        for (name, ts), (rcode, icode, ridcode) in zip(self.topics.items(), code_columns):
            topics.append([name, narrow_bytes(remap[rcode]), sorted(ts.adding.items()), sorted(ts.removing.items()),
                           bytes(ts.pstate), narrow_bytes(view_i32(ts.leader)), narrow_bytes(view_i32(ts.leader_epoch)),
                           narrow_bytes(remap[icode]), narrow_bytes(view_i32(ts.partition_epoch)),
                           narrow_bytes(view_i32(ts.state_controller_epoch)), bytes(ts.recovery),
                           narrow_bytes(remap[ridcode]), ts.rwidth, bytes(ts.rstates)])
        return [self.STATE_FORMAT, [list(tuples[c]) for c in order.tolist()], self.epoch, self.epoch_zk_version,
                sorted(self.live_broker_epochs.items()), sorted(self.shutting_down_broker_ids),
                sorted([b, sorted(s)] for b, s in self.replicas_on_offline_dirs.items()), topics,
                sorted([t, sorted(c.items())] for t, c in self.topic_configs.items()),
                sorted(self.partitions_being_reassigned), sorted(self.topics_to_be_deleted),
                sorted(self.topics_with_deletion_started), sorted(self.topics_ineligible_for_deletion),
                self.offline_partition_count, self.preferred_replica_imbalance_count, self.unclean_leader_elections]

    def load_state(self, state: list) -> None:
        """Restore what ``to_state`` returned (broker_info is not part of it: the caller re-reads it); the
        list form of snapshots written before the columnar one is read too."""
        if state and state[0] in self._READABLE_COLUMN_FORMATS and len(state) == 16:
            narrow, pool_tuples, state = state[0] == 3, state[1], state[2:]
            remap = np.fromiter((self.pool.code(tuple(t)) for t in pool_tuples), dtype=np.int32,
                                count=len(pool_tuples))
            load_topic = self._load_topic_columns if not narrow else self._load_topic_narrow
        else:
            remap, load_topic = None, self._load_topic_lists
        (self.epoch, self.epoch_zk_version, live, shutting_down, offline_dirs, topics, configs, reassigning,
         to_delete, deletion_started, ineligible, self.offline_partition_count,
         self.preferred_replica_imbalance_count, self.unclean_leader_elections) = state
        self.live_broker_epochs = {b: e for b, e in live}
        self.broker_info = {}
        self.shutting_down_broker_ids = set(shutting_down)
        self.replicas_on_offline_dirs = {b: {tuple(tp) for tp in s} for b, s in offline_dirs}
        self.topics = {}
        for row in topics:
            ts = self.topics[row[0]] = TopicState(row[0])
            load_topic(ts, row, remap)
        self.topic_configs = {t: dict(c) for t, c in configs}
        self.partitions_being_reassigned = {tuple(tp) for tp in reassigning}
        self.topics_to_be_deleted, self.topics_with_deletion_started = set(to_delete), set(deletion_started)
        self.topics_ineligible_for_deletion = set(ineligible)

    def _load_topic_columns(self, ts: TopicState, row: list, remap: np.ndarray) -> None:
        (_, rcode, adding, removing, pstate, leader, leader_epoch, icode, partition_epoch, ctrl_epoch, recovery,
         ridcode, rwidth, rstates) = row

        def codes(buf: bytes) -> array:
            return _i32_array(remap[np.frombuffer(buf, dtype="<i4")] if buf else np.zeros(0, dtype=np.int32))
        ts.rcode, ts.icode, ts.ridcode = codes(rcode), codes(icode), codes(ridcode)
        ts.adding = {p: self.intern(tuple(r)) for p, r in adding}
        ts.removing = {p: self.intern(tuple(r)) for p, r in removing}
        ts.pstate, ts.recovery = bytearray(pstate), bytearray(recovery)
        ts.leader, ts.leader_epoch = _i32_array(leader), _i32_array(leader_epoch)
        ts.partition_epoch, ts.state_controller_epoch = _i32_array(partition_epoch), _i32_array(ctrl_epoch)
        ts.rwidth, ts.rstates = rwidth, bytearray(rstates)

    def _load_topic_narrow(self, ts: TopicState, row: list, remap: np.ndarray) -> None:
        """A topic of format 3: the int columns in their narrowest widths (as many as ``pstate`` has bytes)."""
        (name, rcode, adding, removing, pstate, leader, leader_epoch, icode, partition_epoch, ctrl_epoch, recovery,
         ridcode, rwidth, rstates) = row
        n = len(pstate)

        def ints(buf: bytes, what: str) -> array:
            values = from_narrow_bytes(buf, n, f"controller context snapshot: topic {name} {what}")
            if len(values) and (int(values.min()) < -(1 << 31) or int(values.max()) >= 1 << 31):
                raise ValueError(f"controller context snapshot: topic {name} {what} beyond int32")
            return _i32_array(values)

        def codes(buf: bytes, what: str) -> array:
            values = from_narrow_bytes(buf, n, f"controller context snapshot: topic {name} {what}")
            if len(values) and (int(values.min()) < 0 or int(values.max()) >= len(remap)):
                raise ValueError(f"controller context snapshot: topic {name} {what} outside the tuples")
            return _i32_array(remap[values])
        ts.rcode, ts.icode, ts.ridcode = codes(rcode, "replicas"), codes(icode, "isr"), codes(ridcode, "replica ids")
        ts.adding = {p: self.intern(tuple(r)) for p, r in adding}
        ts.removing = {p: self.intern(tuple(r)) for p, r in removing}
        ts.pstate, ts.recovery = bytearray(pstate), bytearray(recovery)
        ts.leader, ts.leader_epoch = ints(leader, "leaders"), ints(leader_epoch, "leader epochs")
        ts.partition_epoch = ints(partition_epoch, "partition epochs")
        ts.state_controller_epoch = ints(ctrl_epoch, "controller epochs")
        ts.rwidth, ts.rstates = rwidth, bytearray(rstates)

    def _load_topic_lists(self, ts: TopicState, row: list, _remap) -> None:
        """A topic of the snapshot format before the columnar one (per-partition lists)."""
        code = self.pool.code
        (_, replicas, adding, removing, pstate, leader, leader_epoch, isr, partition_epoch, ctrl_epoch,
         recovery, rids, rstates) = row
        ts.rcode = array("i", [code(tuple(r)) for r in replicas])
        ts.adding = {p: self.intern(r) for p, r in adding}
        ts.removing = {p: self.intern(r) for p, r in removing}
        ts.pstate = bytearray(pstate)
        ts.leader, ts.leader_epoch = array("i", leader), array("i", leader_epoch)
        ts.icode = array("i", [code(tuple(r)) for r in isr])
        ts.partition_epoch, ts.state_controller_epoch = array("i", partition_epoch), array("i", ctrl_epoch)
        ts.recovery = bytearray(recovery)
        ts.ridcode = array("i", [code(tuple(r)) for r in rids])
        w = ts.rwidth = max(map(len, rids), default=0)
        ts.rstates = bytearray(b"".join(bytes(r).ljust(w, b"\0") for r in rstates))
