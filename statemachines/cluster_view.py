"""The cluster state as an event log's records say it was at an offset or a time, folded from the records alone.

:class:`ClusterView` folds records one by one (no engine, no controller context): the active
controller, the brokers the controller sees as live, and per partition its state, replicas,
leader/ISR and the states of its replicas. :func:`fold` folds a sequence of records up to an
offset and/or time; :func:`fold_log` does the same from a log directory, streaming it one batch
at a time and using the batch headers to stop without decoding anything past the bound. The
audit and ``kcontroller describe`` print a view with :meth:`ClusterView.to_json_dict` or
:meth:`ClusterView.describe_lines`, and compare replays with :meth:`ClusterView.digest`.

A partition is stored as a plain tuple of ints and int tuples (the fields of :class:`PartitionView`),
which Python's cyclic GC does not track: a view of a million partitions adds nothing to the
collector's work. :attr:`ClusterView.topics` reads them as ``PartitionView`` values.

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
tools/src/main/java/org/apache/kafka/tools/TopicCommand.java), with these differences:

- ``TopicId`` is left out: the records carry no topic id, and TopicCommand leaves the field
  out for the unknown id ``Uuid.ZERO_UUID``. (Kafka 3.7.x compares that id by reference and so
  prints ``TopicId: AAAAAAAAAAAAAAAAAAAAAA`` for a zero id from the wire; fixed in 3.8.0.)
- ``Configs:`` lists the topic's overrides only, sorted by name; Kafka also lists broker-level
  values that are not defaults (static or dynamic broker configs), which the records do not
  give per topic.
- ``Leader: none`` when the stored leader is -1 (NoLeader). Kafka's brokers also answer
  "none" for a stored leader whose broker they do not see alive; here such a leader is printed
  and shows in ``Offline:``.
- ``Offline:`` is not a TopicCommand column (no Kafka version prints one): it is kcontroller's
  addition, printed after ``Isr:`` when some replicas' brokers
  are not live in the view.
- ``Adding Replicas``/``Removing Replicas`` (reassignments) and ``MarkedForDeletion`` are never
  printed: no state record carries a reassignment, and 3.7's describe never sets the flag.
- A first line ``# controller C epoch E, live brokers ...`` (a comment; kafka-topics has none).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing
from typing import NamedTuple

import msgpack

from events.log import Batch, LogReader
from events.records import (
    NO_LEADER, BrokerStarted, ConfigChanged, ControllerElected, ControllerResigned, LeaderAndIsrUpdated,
    LiveBrokersChanged, PartitionsAdded, PartitionTransition, ReplicaAssignmentChanged, ReplicaTransition,
    TopicCreated, TopicDeletionCompleted, TopicQueuedForDeletion, ViewSnapshot,
)
from statemachines.states import (
    NEW_PARTITION, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, ONLINE_PARTITION, ONLINE_REPLICA,
    PARTITION_BY_BYTE, REPLICA_BY_BYTE, REPLICA_DELETION_INELIGIBLE,
)

__all__ = ["ClusterView", "PartitionView", "fold", "fold_log", "snapshot_record_body"]

SNAPSHOT_FORMAT = 2  # element 0 of a ViewSnapshot's state array


class PartitionView(NamedTuple):
    """One partition as the last state records left it; ``state`` is a PartitionState byte."""
    state: int
    replicas: tuple
    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    recovery_state: int


_new = tuple.__new__
_STATE, _REPLICAS, _LEADER, _LEADER_EPOCH = 0, 1, 2, 3   # positions in a stored partition tuple


class _PartitionsView(Mapping):
    """partition -> PartitionView of one topic, read from the view's stored tuples."""
    __slots__ = ("_rows",)

    def __init__(self, rows: dict[int, tuple]):
        self._rows = rows

    def __getitem__(self, partition: int) -> PartitionView:
        return _new(PartitionView, self._rows[partition])

    def __contains__(self, partition: object) -> bool:
        return partition in self._rows

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _TopicsView(Mapping):
    """topic -> (partition -> PartitionView): the read-only face of ``ClusterView._partitions``."""
    __slots__ = ("_topics",)

    def __init__(self, topics: dict[str, dict[int, tuple]]):
        self._topics = topics

    def __getitem__(self, topic: str) -> _PartitionsView:
        return _PartitionsView(self._topics[topic])

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


class ClusterView:
    """The cluster state folded from records; feed records in offset order to :meth:`apply`."""

    def __init__(self) -> None:
        self.controller: tuple[int, int] | None = None   # (id, epoch) of the active controller
        self.latest_epoch = 0                             # highest controller epoch seen
        self.known_brokers: set[int] = set()
        self.registered_brokers: dict[int, int] = {}      # id -> broker epoch, shutting-down ones included
        self.shutting_down: frozenset[int] = frozenset()
        # topic -> partition -> the PartitionView fields as a plain tuple (see ``topics``)
        self._partitions: dict[str, dict[int, tuple]] = {}
        self.replica_states: dict[str, dict[int, dict[int, int]]] = {}  # topic -> partition -> replica -> byte
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.assignments: dict[str, dict[int, tuple]] = {}  # what the store holds: inputs, then reassignments
        self.deleting: set[str] = set()                   # topics queued for deletion
        # partitions of topics being deleted that went NonExistentPartition, with their last state
        self._deleted_partitions: dict[str, dict[int, tuple]] = {}
        self._failover_pending: tuple[int, int] | None = None  # elected controller whose context is not built yet
        self.offset = -1                                  # offset of the last record applied
        self.timestamp_ms: int | None = None              # its timestamp

    @property
    def topics(self) -> Mapping[str, Mapping[int, PartitionView]]:
        """topic -> partition -> :class:`PartitionView` (a read-only mapping over the stored partitions)."""
        return _TopicsView(self._partitions)

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
        not fold cost nothing per record; the others are folded record by record."""
        if not batch.n:
            return
        kind = batch.cls.KIND
        handler = _HANDLERS.get(kind)
        if handler is not None and not (kind in _STATE_KINDS and batch.controller_id >= 0
                                        and batch.controller_epoch < self.latest_epoch):
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
        live = set(self.live_broker_ids())
        # Partitions created while no controller acted on them: the new controller finds them in the
        # store without a leader (NewPartition); only the admin's input records carried them.
        # A halted deletion's partitions are in the store too: Kafka initialises them like any other.
        for topic, assignment in self.assignments.items():
            deleted = self._deleted_partitions.pop(topic, {})
            for p, replicas in assignment.items():
                partitions = self._partitions.get(topic)
                if partitions is None or p not in partitions:
                    row = deleted.get(p) or (NEW_PARTITION, replicas, NO_LEADER, -1, (), 0, 0)
                    self._partitions.setdefault(topic, {})[p] = row
        for topic, partitions in self._partitions.items():
            states = self.replica_states.setdefault(topic, {})
            for p, pv in partitions.items():
                if pv[_LEADER_EPOCH] < 0:
                    state = NEW_PARTITION
                else:
                    state = ONLINE_PARTITION if pv[_LEADER] in live else OFFLINE_PARTITION
                if state != pv[_STATE]:
                    partitions[p] = (state,) + pv[1:]
                states[p] = {r: (ONLINE_REPLICA if r in live else REPLICA_DELETION_INELIGIBLE)
                             for r in pv[_REPLICAS]}

    def _topic_created(self, rec: TopicCreated) -> None:
        self.topic_configs[rec.topic] = dict(rec.configs)
        self.assignments[rec.topic] = {p: tuple(r) for p, r in enumerate(rec.assignment)}

    def _partitions_added(self, rec: PartitionsAdded) -> None:
        if rec.topic in self.deleting:
            return  # the controller puts the topic's assignment back (processPartitionModifications)
        self.assignments.setdefault(rec.topic, {}).update((p, tuple(r)) for p, r in rec.assignment)

    def _replica_assignment_changed(self, rec: ReplicaAssignmentChanged) -> None:
        replicas = tuple(rec.replicas)
        if rec.topic in self.assignments:
            self.assignments[rec.topic][rec.partition] = replicas
        partitions = self._partitions.get(rec.topic)
        pv = None if partitions is None else partitions.get(rec.partition)
        if pv is not None:
            partitions[rec.partition] = (pv[_STATE], replicas) + pv[2:]

    def _topic_queued_for_deletion(self, rec: TopicQueuedForDeletion) -> None:
        self.deleting.add(rec.topic)

    def _topic_deletion_completed(self, rec: TopicDeletionCompleted) -> None:
        topic = rec.topic
        self.deleting.discard(topic)
        for table in (self._partitions, self._deleted_partitions, self.assignments, self.topic_configs,
                      self.replica_states):
            table.pop(topic, None)

    def _config_changed(self, rec: ConfigChanged) -> None:
        if rec.entity_type != "topic":
            return
        configs = self.topic_configs.setdefault(rec.entity_name, {})
        if rec.value is None:
            configs.pop(rec.name, None)
        else:
            configs[rec.name] = rec.value

    def _partition_transition(self, rec: PartitionTransition) -> None:
        if rec.to_state == NON_EXISTENT_PARTITION:
            partitions = self._partitions.get(rec.topic)
            if partitions is not None:
                row = partitions.pop(rec.partition, None)
                if row is not None:
                    self._deleted_partitions.setdefault(rec.topic, {})[rec.partition] = row
                if not partitions:
                    del self._partitions[rec.topic]
            return
        partitions = self._partitions.get(rec.topic)
        if partitions is None:
            partitions = self._partitions[rec.topic] = {}
        partitions[rec.partition] = (rec.to_state, tuple(rec.replicas), rec.leader, rec.leader_epoch, tuple(rec.isr),
                                     rec.partition_epoch, rec.recovery_state)

    def _leader_and_isr_updated(self, rec: LeaderAndIsrUpdated) -> None:
        partitions = self._partitions.get(rec.topic)
        pv = None if partitions is None else partitions.get(rec.partition)
        if pv is None:
            # A partition of a topic being deleted (ISR shrinks go on after NonExistentPartition).
            partitions = self._deleted_partitions.get(rec.topic)
            pv = None if partitions is None else partitions.get(rec.partition)
        if pv is None:  # no state, replicas or partition to attach it to: nothing to invent
            return
        partitions[rec.partition] = (pv[_STATE], pv[_REPLICAS], rec.leader, rec.leader_epoch, tuple(rec.isr),
                                     rec.partition_epoch, rec.recovery_state)

    def _replica_transition(self, rec: ReplicaTransition) -> None:
        if rec.to_state != NON_EXISTENT_REPLICA:
            self.replica_states.setdefault(rec.topic, {}).setdefault(rec.partition, {})[rec.replica] = rec.to_state
            return
        partitions = self.replica_states.get(rec.topic)
        replicas = partitions.get(rec.partition) if partitions else None
        if replicas is not None:
            replicas.pop(rec.replica, None)
            if not replicas:
                del partitions[rec.partition]
                if not partitions:
                    del self.replica_states[rec.topic]

    # --- snapshots ---------------------------------------------------------------------------
    def to_snapshot(self) -> bytes:
        """The whole view as msgpack positional arrays (layout: docs/event-log-format.md, ViewSnapshot).

        Maps are written as arrays of pairs in the view's own order, so that
        :meth:`from_snapshot` rebuilds an identical view, iteration order included.
        """
        pending = self._failover_pending
        state = [
            SNAPSHOT_FORMAT,
            self.offset,
            self.timestamp_ms,
            None if self.controller is None else list(self.controller),
            self.latest_epoch,
            sorted(self.known_brokers),
            [[b, e] for b, e in self.registered_brokers.items()],
            sorted(self.shutting_down),
            None if pending is None else list(pending),
            [[topic, [[p, *pv] for p, pv in parts.items()]] for topic, parts in self._partitions.items()],
            [[topic, [[p, [[r, st] for r, st in replicas.items()]] for p, replicas in parts.items()]]
             for topic, parts in self.replica_states.items()],
            [[topic, [[k, v] for k, v in configs.items()]] for topic, configs in self.topic_configs.items()],
            [[topic, [[p, replicas] for p, replicas in parts.items()]] for topic, parts in self.assignments.items()],
            sorted(self.deleting),
            [[topic, [[p, *pv] for p, pv in parts.items()]] for topic, parts in self._deleted_partitions.items()],
        ]
        return msgpack.packb(state, use_bin_type=True)

    @classmethod
    def from_snapshot(cls, data: bytes) -> ClusterView:
        """The view :meth:`to_snapshot` wrote; ValueError if ``data`` is not such a snapshot."""
        try:
            state = msgpack.unpackb(data, use_list=False, raw=False)
        except Exception as exc:  # msgpack raises several unrelated types
            raise ValueError(f"view snapshot is not valid msgpack: {exc}") from exc
        if not isinstance(state, tuple) or not state or state[0] not in (1, SNAPSHOT_FORMAT):
            found = state[0] if isinstance(state, tuple) and state else state
            raise ValueError(f"view snapshot has format {found!r:.100}, this reader knows 1 and {SNAPSHOT_FORMAT}")
        expected = 13 if state[0] == 1 else 15
        if len(state) != expected:
            raise ValueError(f"view snapshot has {len(state)} fields, expected {expected}")
        if state[0] == 1:
            state = state + ((), ())  # format 1 had no deletions
        view = cls()
        try:
            (_, view.offset, view.timestamp_ms, controller, view.latest_epoch, known, registered, shutting_down,
             pending, topics, replica_states, topic_configs, assignments, deleting, deleted) = state
            view.controller = None if controller is None else (controller[0], controller[1])
            view.known_brokers = set(known)
            view.registered_brokers = {b: e for b, e in registered}
            view.shutting_down = frozenset(shutting_down)
            view._failover_pending = None if pending is None else (pending[0], pending[1])
            view._partitions = {topic: {p: (st, replicas, leader, leader_epoch, isr, pe, rs)
                                        for p, st, replicas, leader, leader_epoch, isr, pe, rs in parts}
                                for topic, parts in topics}
            view.replica_states = {topic: {p: dict(replicas) for p, replicas in parts}
                                   for topic, parts in replica_states}
            view.topic_configs = {topic: dict(configs) for topic, configs in topic_configs}
            view.assignments = {topic: dict(parts) for topic, parts in assignments}
            view.deleting = set(deleting)
            view._deleted_partitions = {topic: {p: (st, replicas, leader, leader_epoch, isr, pe, rs)
                                                for p, st, replicas, leader, leader_epoch, isr, pe, rs in parts}
                                        for topic, parts in deleted}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"view snapshot does not have the ViewSnapshot layout: {exc}") from exc
        return view

    # --- reading -----------------------------------------------------------------------------
    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.registered_brokers and broker_id not in self.shutting_down

    def live_broker_ids(self) -> list[int]:
        return sorted(b for b in self.registered_brokers if b not in self.shutting_down)

    def partition_replica_states(self, topic: str, partition: int) -> dict[int, int]:
        """Replica id -> ReplicaState byte for the partition's replicas that have a state."""
        return self.replica_states.get(topic, {}).get(partition, {})

    def to_json_dict(self) -> dict:
        """The view as JSON data: controller, brokers by id, topics by name, partitions by number."""
        if self.controller is None:
            controller = {"id": -1, "epoch": self.latest_epoch}
        else:
            controller = {"id": self.controller[0], "epoch": self.controller[1]}
        brokers = [{"id": b, "live": self.is_live(b)} for b in sorted(self.known_brokers)]
        topics = [{"name": topic, "partitions": [self._partition_json(topic, p, _new(PartitionView, pv))
                                                 for p, pv in sorted(parts.items())]}
                  for topic, parts in sorted(self._partitions.items())]
        return {"controller": controller, "brokers": brokers, "topics": topics}

    def _partition_json(self, topic: str, p: int, pv: PartitionView) -> dict:
        states = self.partition_replica_states(topic, p)
        return {
            "partition": p,
            "leader": pv.leader if pv.leader >= 0 else NO_LEADER,
            "leader_epoch": pv.leader_epoch,
            "isr": list(pv.isr),
            "replicas": list(pv.replicas),
            "state": PARTITION_BY_BYTE[pv.state].value,
            "replica_states": {str(r): REPLICA_BY_BYTE[states[r]].value for r in sorted(states)},
        }

    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_json_dict`: equal views, equal digests."""
        canonical = json.dumps(self.to_json_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def describe_lines(self) -> Iterator[str]:
        """A comment line naming the controller, then ``kafka-topics.sh --describe`` lines (module docstring)."""
        who = "none" if self.controller is None else self.controller[0]
        epoch = self.latest_epoch if self.controller is None else self.controller[1]
        header = f"# controller {who} epoch {epoch}, live brokers {_ints(self.live_broker_ids()) or 'none'}"
        if self.shutting_down:
            header += f", shutting down {_ints(sorted(self.shutting_down))}"
        yield header
        for topic, parts in sorted(self.topics.items()):
            first = parts[min(parts)]
            configs = ",".join(f"{k}={v}" for k, v in sorted(self.topic_configs.get(topic, {}).items()))
            yield (f"Topic: {topic}\tPartitionCount: {len(parts)}\tReplicationFactor: {len(first.replicas)}"
                   f"\tConfigs: {configs}")
            for p, pv in sorted(parts.items()):
                leader = pv.leader if pv.leader >= 0 else "none"
                line = (f"\tTopic: {topic}\tPartition: {p}\tLeader: {leader}\tReplicas: {_ints(pv.replicas)}"
                        f"\tIsr: {_ints(pv.isr)}")
                offline = [r for r in pv.replicas if not self.is_live(r)]
                if offline:
                    line += f"\tOffline: {_ints(offline)}"
                yield line


_HANDLERS = {
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
# array of 8 fields, kind 52, a schema version this reader knows. A payload without this byte sequence holds no snapshot; one
# with it may (a string or an 8-replica list can hold the same bytes): it is decoded to find out.
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


def fold_log(log_dir: str | os.PathLike, at_offset: int | None = None, at_time: int | None = None) -> ClusterView:
    """:func:`fold` over a log directory, one batch (two while starting) in memory at a time.

    The fold starts from the latest ViewSnapshot record at or before the bounds (found without
    decoding batches that cannot hold one, see :func:`_latest_snapshot`), or from the start of the
    log if there is none; the result is the same either way. Timestamps are taken to never decrease
    along the log (the journal's clock never goes back).

    A batch whose header puts its first record past a bound (base offset, first timestamp)
    ends the fold without being decoded; nothing after it is read.
    """
    reader = LogReader(log_dir)
    start = 0
    decoded: dict[int, list] = {}
    found = _latest_snapshot(reader, at_offset, at_time, decoded)
    if found is None:
        view = ClusterView()
    else:
        view, rest, start = found
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
