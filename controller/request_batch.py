"""The per-broker request batch (Kafka's ControllerBrokerRequestBatch) and the channel it sends on.

State machines add LeaderAndIsr, UpdateMetadata and StopReplica entries while they work — one
partition at a time, or (the batch paths) a topic's partitions as arrays read from the context's
columns; ``send_requests_to_brokers`` then turns them into one request per broker and API, in
Kafka's order (LeaderAndIsr, UpdateMetadata, StopReplica), records every partition state and
every request in the journal, and hands the requests to the channel. Brokers are served in
ascending id order and partitions in the order they were first added, so the records are
deterministic (Kafka iterates hash maps here). Entries are held as columns
(``controller.request_entries``); a request with at least ``COLUMN_MIN`` partition states is
recorded as one columnar batch and carries that ``ColumnBatch`` as its ``partitions``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from controller.request_entries import EntryTable, Merged, Parts, group_codes
from events.columns import STORED_INT_DTYPES, DictColumn, ListColumn, stored_array, stored_int_widths
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, HEADER_LEN, LEADER_DURING_DELETE, SCHEMA_VERSION,
    LeaderAndIsrPartition, RequestSent, StopReplicaPartition, UpdateMetadataPartition,
)
from statemachines.leader_and_isr import LeaderIsrAndControllerEpoch, ReplicaAssignment


COLUMN_MIN = 64  # partition states from which a request's records are emitted as one columnar batch
_I4 = STORED_INT_DTYPES[1]
_TOPICS_MATRIX_MAX = 1 << 24   # the largest (range, topic) presence matrix a send allocates


class BrokerRequest(NamedTuple):
    """One request to one broker; ``partitions`` are the journal records of its partition states."""
    api: int
    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    correlation_id: int
    partitions: tuple
    live_brokers: tuple


class BrokerResponse(NamedTuple):
    """A broker's answer to a request: Kafka's error names, for the request and per (topic, partition)."""
    api: int
    broker_id: int
    correlation_id: int
    error: str
    partition_errors: dict


class ControllerChannel:
    """Where requests go: per-broker correlation ids and a sink (a simulated network, or a list).

    ``send`` may return the broker's :class:`BrokerResponse` at once (an in-process cluster), or
    return None and have the transport call ``receive`` later (a simulated network); either way
    the response reaches the callback the request was sent with.
    """

    def __init__(self, send: Callable[[BrokerRequest], object] | None = None):
        self.sent: list[BrokerRequest] | None = None
        if send is None:
            self.sent = []
            send = self.sent.append
        self._send = send
        self._correlation: dict[int, int] = {}
        self._callbacks: dict[tuple[int, int], Callable[[BrokerResponse], object]] = {}

    def next_correlation_id(self, broker_id: int) -> int:
        c = self._correlation.get(broker_id, 0)
        self._correlation[broker_id] = c + 1
        return c

    def send(self, request: BrokerRequest, callback: Callable[[BrokerResponse], object] | None = None) -> None:
        if callback is not None:
            self._callbacks[(request.broker_id, request.correlation_id)] = callback
        response = self._send(request)
        if isinstance(response, BrokerResponse):
            self.receive(response)

    def receive(self, response: BrokerResponse) -> None:
        callback = self._callbacks.pop((response.broker_id, response.correlation_id), None)
        if callback is not None:
            callback(response)

    def remove_broker(self, broker_id: int) -> None:
        """Requests to a broker that went away get no response (Kafka's RequestSendThread is stopped)."""
        for key in [k for k in self._callbacks if k[0] == broker_id]:
            del self._callbacks[key]


class IllegalBatchStateError(RuntimeError):
    """Kafka's IllegalStateException from ``newBatch`` when a previous batch was never sent."""


# Entry fields (ints; tuples as pool codes). LeaderAndIsr and StopReplica entries are grouped by broker,
# UpdateMetadata entries have one group (0): every broker of the request gets the same partitions.
_LAI_FIELDS = ("state_controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas",
               "adding_replicas", "removing_replicas", "is_new", "recovery_state")
_UM_FIELDS = ("state_controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas",
              "offline_replicas")
_SR_FIELDS = ("leader_epoch", "delete_partition")
_TUPLE_FIELDS = frozenset({"isr", "replicas", "adding_replicas", "removing_replicas", "offline_replicas"})
_BOOL_FIELDS = frozenset({"is_new", "delete_partition"})
# A request's partition records hold (lead, topic, partition) and then the entry fields, in this order.
assert LeaderAndIsrPartition._fields[HEADER_LEN + 3:] == _LAI_FIELDS
assert UpdateMetadataPartition._fields[HEADER_LEN + 3:] == _UM_FIELDS
assert StopReplicaPartition._fields[HEADER_LEN + 3:] == _SR_FIELDS


class ControllerBrokerRequestBatch:
    """Collects requests for one round of state changes, then sends them per broker."""

    def __init__(self, controller_id: int, context, journal, channel: ControllerChannel,
                 on_topic_deletion_stop_replica_response: Callable[[int, str, dict], object] | None = None,
                 on_leader_and_isr_response: Callable[[int, str, dict], object] | None = None):
        self.controller_id = controller_id
        self.context = context
        self.journal = journal
        self.channel = channel
        # Called with (broker id, request error, {tp: error}) for StopReplica(delete=true) responses of
        # partitions whose topic deletion is in progress (Kafka enqueues TopicDeletionStopReplicaResponseReceived).
        self.on_topic_deletion_stop_replica_response = on_topic_deletion_stop_replica_response
        # Called with (broker id, request error, {tp: error}) for every LeaderAndIsr response (Kafka enqueues
        # LeaderAndIsrResponseReceived: KAFKA_STORAGE_ERROR marks replicas on offline log directories).
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self._lai = EntryTable(_LAI_FIELDS, sticky=("is_new",))
        self._sr = EntryTable(_SR_FIELDS, sticky=("delete_partition",))
        self._um = EntryTable(_UM_FIELDS)
        self.update_metadata_brokers: set[int] = set()
        # Per-batch caches: the live brokers do not change while one batch is being built.
        self._all_live_added = False
        self._is_online = None
        self._live = None
        self._offline = None

    @property
    def pool(self):
        return self.context.pool

    def is_empty(self) -> bool:
        return not (len(self._lai) or len(self._sr) or self.update_metadata_brokers or len(self._um))

    # --- the entries as Kafka's maps (for messages and inspection) --------------------------------
    def _as_maps(self, table: EntryTable, grouped: bool = True) -> dict:
        merged = table.merged()
        tuples = self.pool.tuples
        names = table.topic_names
        fields = table.fields[3:]
        cols = [merged.columns[f].tolist() for f in table.fields]
        out: dict = {}
        for row in zip(*cols):
            values = tuple(tuples[v] if f in _TUPLE_FIELDS else (bool(v) if f in _BOOL_FIELDS else v)
                           for f, v in zip(fields, row[3:]))
            target = out.setdefault(row[0], {}) if grouped else out
            target[(names[row[1]], row[2])] = values
        return out

    @property
    def leader_and_isr_requests(self) -> dict[int, dict[tuple, tuple]]:
        """broker -> (topic, partition) -> (state_controller_epoch, leader, leader_epoch, isr, partition_epoch,
        replicas, adding, removing, is_new, recovery_state), merged as Kafka's maps hold them."""
        return self._as_maps(self._lai)

    @property
    def stop_replica_requests(self) -> dict[int, dict[tuple, tuple]]:
        """broker -> (topic, partition) -> (leader_epoch, delete_partition)."""
        return self._as_maps(self._sr)

    @property
    def update_metadata_partitions(self) -> dict[tuple, tuple]:
        """(topic, partition) -> (state_controller_epoch, leader, leader_epoch, isr, partition_epoch, replicas,
        offline_replicas)."""
        return self._as_maps(self._um, grouped=False)

    def new_batch(self) -> None:
        if len(self._lai):
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some LeaderAndIsr state changes {self.leader_and_isr_requests} might be lost ")
        if len(self._sr):
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some StopReplica state changes {self.stop_replica_requests} might be lost ")
        if self.update_metadata_brokers:
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some UpdateMetadata state changes to brokers {self.update_metadata_brokers} with partition info "
                f"{self.update_metadata_partitions} might be lost ")

    def clear(self) -> None:
        self._lai.clear()
        self._sr.clear()
        self._um.clear()
        self.update_metadata_brokers.clear()
        self._all_live_added = False
        self._is_online = None
        self._live = None
        self._offline = None

    # --- adding, one partition at a time ----------------------------------------------------------
    def add_leader_and_isr_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                               info: LeaderIsrAndControllerEpoch, assignment: ReplicaAssignment,
                                               is_new: bool) -> None:
        lai = info.leader_and_isr
        code = self.pool.code
        table = self._lai
        row = (table.topic_code(tp[0]), tp[1], info.controller_epoch, lai.leader, lai.leader_epoch, code(lai.isr),
               lai.partition_epoch, code(assignment.replicas), code(assignment.adding_replicas),
               code(assignment.removing_replicas), int(is_new), lai.recovery_state)
        for b in broker_ids:
            if b >= 0:
                table.add((b,) + row)
        if self._all_live_added:
            self._add_update_metadata_partition(tp)
        else:
            self.add_update_metadata_request_for_brokers(self.context.live_broker_epochs, (tp,))
            self._all_live_added = True

    def add_leader_and_isr_requests(self, recipients: list, tps: list, states: list, is_new: bool,
                                    update_metadata: list | None = None) -> None:
        """``add_leader_and_isr_request_for_brokers`` for many partitions, in order: ``recipients[i]`` the broker
        ids for ``tps[i]``, ``states[i]`` = (controller_epoch, leader, leader_epoch, isr, partition_epoch, replicas,
        adding, removing, recovery_state). ``update_metadata``: [(topic columns, partition indexes)] of a prefix
        of ``tps`` (in their order) whose UpdateMetadata states are added as arrays."""
        code = self.pool.code
        table = self._lai
        topic_code = table.topic_code
        new = int(is_new)
        for brokers, tp, (ce, leader, epoch, isr, pe, replicas, adding, removing, rs) in zip(recipients, tps, states):
            row = (topic_code(tp[0]), tp[1], ce, leader, epoch, code(isr), pe, code(replicas), code(adding),
                   code(removing), new, rs)
            for b in brokers:
                if b >= 0:
                    table.add((b,) + row)
        if not tps:
            return
        self._add_update_metadata(tps, update_metadata)

    def _ensure_all_live(self) -> None:
        if not self._all_live_added:
            self.add_update_metadata_request_for_brokers(self.context.live_broker_epochs, ())
            self._all_live_added = True

    def _add_update_metadata(self, tps: list, selections: list | None) -> None:
        self._ensure_all_live()
        covered = 0
        if selections is not None and not self.context.has_offline_dirs():
            for ts, parts in selections:
                self.add_update_metadata_columns(ts, parts)
                covered += len(parts)
        add = self._add_update_metadata_partition
        for tp in tps[covered:]:
            add(tp)

    def add_stop_replica_requests(self, broker_id: int, tps: list, leader_epochs: list, delete_partition: bool) -> None:
        """``add_stop_replica_request_for_brokers((broker_id,), tp, delete_partition)`` for many partitions, with
        their leader epochs as ``ControllerContext.leader_epoch`` gives them."""
        if broker_id < 0:
            return
        table = self._sr
        topic_code = table.topic_code
        delete = int(delete_partition)
        for tp, epoch in zip(tps, leader_epochs):
            table.add((broker_id, topic_code(tp[0]), tp[1], epoch, delete))

    def add_stop_replica_columns(self, broker_id: int, ts, parts: np.ndarray, delete_partition: bool) -> None:
        """``add_stop_replica_request_for_brokers((broker_id,), tp, delete_partition)`` for partitions ``parts``
        (numpy indexes, in order) of one topic's columns."""
        if broker_id < 0 or not len(parts):
            return
        table = self._sr
        table.add_columns((broker_id, table.topic_code(ts.name), parts, self.context.leader_epochs_array(ts, parts),
                           int(delete_partition)))

    def add_stop_replica_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                             delete_partition: bool) -> None:
        leader_epoch = self.context.leader_epoch(tp)
        table = self._sr
        row = (table.topic_code(tp[0]), tp[1], leader_epoch, int(delete_partition))
        for b in broker_ids:
            if b >= 0:
                table.add((b,) + row)

    def add_update_metadata_request_for_brokers(self, broker_ids: Iterable[int],
                                                partitions: Iterable[tuple] = ()) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            self._add_update_metadata_partition(tp)

    def add_update_metadata_segments(self, broker_ids: Iterable[int], selections: list) -> None:
        """``add_update_metadata_request_for_brokers(broker_ids, partitions)`` with ``partitions`` given as
        ``selections`` = [(topic columns, partition indexes)], in order: the partitions' states read from the
        context as arrays (one append), those without leadership info skipped as the per-partition method skips
        them. With replicas on offline log directories (a per-partition question), one partition at a time."""
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        if self.context.has_offline_dirs():
            add = self._add_update_metadata_partition
            for ts, parts in selections:
                name = ts.name
                for p in parts.tolist():
                    add((name, p))
            return
        um = [c for c in (self._um_columns(ts, parts) for ts, parts in selections if len(parts)) if c is not None]
        if um:
            self._um.add_columns(_concat(um))

    def _add_update_metadata_partition(self, tp: tuple) -> None:
        ctx = self.context
        fields = ctx.leadership_fields(tp)
        if fields is None:
            return  # Kafka: "Leader not yet assigned for partition ... Skip sending UpdateMetadataRequest."
        is_online = self._is_online
        if is_online is None:
            is_online = self._is_online = ctx.online_replica_filter()
        controller_epoch, leader, leader_epoch, isr, partition_epoch, _ = fields
        replicas = ctx.partition_replica_assignment(tp)
        offline = tuple(r for r in replicas if not is_online(r, tp))
        code = self.pool.code
        table = self._um
        if tp[0] in ctx.topics_to_be_deleted:
            # LeaderAndIsr.duringDelete(isr): a fresh LeaderAndIsr, so epochs read 0.
            leader, leader_epoch, partition_epoch = LEADER_DURING_DELETE, 0, 0
        table.add((0, table.topic_code(tp[0]), tp[1], controller_epoch, leader, leader_epoch, code(isr),
                   partition_epoch, code(replicas), code(offline)))

    def _offline_codes(self) -> np.ndarray:
        """Pool code -> the code of that replica list's replicas on brokers not live (the UpdateMetadata
        ``offline_replicas`` of a partition with that assignment), for this batch (the live brokers do not
        change while it is built); extended as the pool grows."""
        pool = self.pool
        cache = self._offline
        if cache is not None and len(cache) == len(pool):
            return cache
        live = self._live
        if live is None:
            live = self._live = self.context.live_mask()
        while True:   # interning the offline lists may grow the pool: then once more, over them too
            m = pool.matrix()
            offline = m >= 0
            known = offline & (m < len(live))
            offline[known] = ~live[m[known]]
            codes = np.zeros(len(m), dtype=np.int64)
            rows = np.flatnonzero(offline.any(axis=1))
            if len(rows):
                codes[rows] = self.context.codes_of_rows(np.where(offline[rows], m[rows], -1))
            if len(pool) == len(m):
                break
        self._offline = codes
        return codes

    # --- adding, a topic's partitions as arrays ---------------------------------------------------
    def add_update_metadata_columns(self, ts, parts: np.ndarray) -> None:
        """``_add_update_metadata_partition`` for partitions ``parts`` (numpy indexes) of one topic's columns,
        read from the context as arrays. Only without replicas on offline log directories (a per-partition
        question): callers check ``context.has_offline_dirs()``."""
        columns = self._um_columns(ts, parts)
        if columns is not None:
            self._um.add_columns(columns)

    def _um_columns(self, ts, parts: np.ndarray, tags: np.ndarray | None = None):
        """The UpdateMetadata entry columns of partitions ``parts`` with leadership info, None if none; with
        ``tags`` (an array aligned with ``parts``), (the columns, the tags of the partitions kept)."""
        ctx = self.context
        ce, leader, le, icode, pe, _ = ctx.leadership_arrays(ts, parts)
        has = le != -1
        if not has.all():
            parts, ce, leader, le, icode, pe = parts[has], ce[has], leader[has], le[has], icode[has], pe[has]
            if tags is not None:
                tags = tags[has]
        if not len(parts):
            return None
        rcodes = ctx.assignment_codes(ts, parts)
        ocodes = self._offline_codes()[rcodes]
        if ts.name in ctx.topics_to_be_deleted:
            leader, le, pe = LEADER_DURING_DELETE, 0, 0
        columns = 0, self._um.topic_code(ts.name), parts, ce, leader, le, icode, pe, rcodes, ocodes
        return columns if tags is None else (columns, tags)

    def _add_lai(self, ts, parts: np.ndarray, recipients: np.ndarray, is_new: bool) -> None:
        """The LeaderAndIsr entries of partitions ``parts`` of one topic to their ``recipients``: each distinct
        partition's state read from the context once, a row of the table's values its entries share."""
        index = None
        if recipients.shape[1] == 1 and bool((recipients >= 0).all()):   # one recipient per row
            brokers = recipients[:, 0]
            entry_parts = parts
            if len(parts) > 1:   # a partition listed once per replica (a takeover): its state read once
                present = np.zeros(len(ts), dtype=bool)
                present[parts] = True
                distinct = np.flatnonzero(present)
                if len(distinct) < len(parts):
                    index = (np.cumsum(present, dtype=np.int64) - 1)[parts]
                    parts = distinct
        else:
            rows, cols = np.nonzero(recipients >= 0)   # row-major: each partition's recipients in order
            brokers, entry_parts, index = recipients[rows, cols], parts[rows], rows
        ctx = self.context
        ce, leader, le, icode, pe, rec = ctx.leadership_arrays(ts, parts)
        rcodes = ctx.assignment_codes(ts, parts)
        adding = removing = 0
        if ts.adding or ts.removing:
            code = self.pool.code
            plist = parts.tolist()
            adding = np.fromiter((code(ts.adding.get(p, ())) for p in plist), dtype=np.int64, count=len(plist))
            removing = np.fromiter((code(ts.removing.get(p, ())) for p in plist), dtype=np.int64, count=len(plist))
        self._lai.add_indexed((brokers, self._lai.topic_code(ts.name), entry_parts, int(is_new)),
                              (ce, leader, le, icode, pe, rcodes, adding, removing, rec), index)

    def add_leader_and_isr_columns(self, ts, parts: np.ndarray, recipients: np.ndarray, is_new: bool,
                                   update_metadata: bool = True) -> None:
        """``add_leader_and_isr_request_for_brokers`` for partitions ``parts`` (numpy indexes, in order) of one
        topic's columns, with their leadership and assignment as the context holds them now: ``recipients``
        an int matrix, row ``i`` the broker ids for ``parts[i]`` (-1 padded). Then their UpdateMetadata states
        (``update_metadata``), as the per-partition method adds them."""
        self.add_leader_and_isr_segments([(ts, parts, recipients)], is_new, update_metadata)

    def add_leader_and_isr_segments(self, segments: list, is_new: bool, update_metadata: bool = True) -> None:
        """``add_leader_and_isr_columns`` of each (topic columns, partition indexes, recipients matrix) in
        ``segments``, in order, with one append per table."""
        segments = [seg for seg in segments if len(seg[1])]
        if not segments:
            return
        for ts, parts, recipients in segments:
            self._add_lai(ts, parts, recipients, is_new)
        if not update_metadata:
            return
        ctx = self.context
        if ctx.has_offline_dirs():
            self._add_update_metadata([(ts.name, p) for ts, parts, _ in segments for p in parts.tolist()], None)
            return
        self._ensure_all_live()
        um = [c for c in (self._um_columns(ts, parts) for ts, parts, _ in segments) if c is not None]
        if um:
            self._um.add_columns(_concat(um))

    def add_update_metadata_rows(self, topics: list, topic_index: np.ndarray, parts: np.ndarray) -> None:
        """The UpdateMetadata states ``add_leader_and_isr_request_for_brokers`` adds (for all live brokers) of
        partitions given row by row — row ``i`` partition ``parts[i]`` of the topic columns
        ``topics[topic_index[i]]`` —, in row order: each topic's read as arrays, one append for all."""
        if not len(parts):
            return
        self._ensure_all_live()
        if self.context.has_offline_dirs():
            add = self._add_update_metadata_partition
            for t, p in zip(topic_index.tolist(), parts.tolist()):
                add((topics[t].name, p))
            return
        order = np.argsort(topic_index.astype(np.int16) if len(topics) < 1 << 15 else topic_index, kind="stable")
        bounds = np.searchsorted(topic_index[order], np.arange(len(topics) + 1))
        um, taken = [], []
        code_of = np.full(len(topics), -1, dtype=np.int64)
        for t, ts in enumerate(topics):
            rows = order[bounds[t]:bounds[t + 1]]
            if not len(rows):
                continue
            c = self._um_columns(ts, parts[rows], rows)
            if c is not None:
                um.append(c[0])
                taken.append(c[1])
                code_of[t] = c[0][1]
        if not um:
            return
        taken = np.concatenate(taken)
        slot = np.full(len(parts), -1, dtype=np.int64)
        slot[taken] = np.arange(len(taken))
        back = slot[slot >= 0]   # the rows' order again
        kept = taken[back]
        values = tuple(Parts((c[i], len(c[2])) for c in um) for i in range(3, len(um[0])))
        self._um.add_indexed((0, code_of[topic_index[kept]], parts[kept]), values, back)

    # --- sending ------------------------------------------------------------------------------
    def send_requests_to_brokers(self, controller_epoch: int) -> list[BrokerRequest]:
        """Send everything collected (LeaderAndIsr, UpdateMetadata, StopReplica), record it, and clear."""
        sent: list[BrokerRequest] = []
        try:
            self._send_leader_and_isr(controller_epoch, sent)
            self._send_update_metadata(controller_epoch, sent)
            self._send_stop_replica(controller_epoch, sent)
        finally:
            self.clear()
        return sent

    def _request(self, api, broker, epoch, partitions, leaders, deletes, live_brokers, sent, callback=None) -> None:
        ctx = self.context
        broker_epoch = ctx.live_broker_epochs.get(broker, -1)
        correlation_id = self.channel.next_correlation_id(broker)
        self.journal.emit(RequestSent, api, broker, broker_epoch, correlation_id, len(partitions), leaders,
                          deletes, live_brokers)
        req = BrokerRequest(api, broker, broker_epoch, self.controller_id, epoch, correlation_id,
                            partitions, live_brokers)
        sent.append(req)
        self.channel.send(req, callback)

    def _emit_partitions(self, cls, lead, stored: _StoredTable, i: int):
        """The partition states of group ``i`` of a merged table, ``lead`` (their first body field) first:
        one record each, emitted as one columnar batch (returned) when there are at least COLUMN_MIN, else
        as row records (returned as a tuple)."""
        start, stop = stored.bounds(i)
        n = stop - start
        table = stored.table
        fields = table.fields[3:]
        keys = stored.merged.keys
        if n >= COLUMN_MIN:
            # (a request's lead is its broker, the group, or the UpdateMetadata brokers)
            lead_column = _stored_lead(lead, n) if isinstance(lead, tuple) else stored.ints("group", i)
            columns = [lead_column, stored.topic(i), stored.ints("partition", i)]
            for f in fields:
                if f in _TUPLE_FIELDS:
                    columns.append(stored.tuples(f, i))
                elif f in _BOOL_FIELDS:
                    columns.append(stored.bools(f, i))
                elif f in keys:
                    columns.append(stored.ints(f, i))
                else:
                    columns.append(stored.value_ints(f, i))
            return self.journal.emit_stored(cls, n, tuple(columns))
        tuples = self.pool.tuples
        topic_names = table.topic_names
        body = [[topic_names[t] for t in stored.plain("topic", i)], stored.plain("partition", i)]
        for f in fields:
            c = stored.plain(f, i)
            if f in _TUPLE_FIELDS:
                c = [tuples[v] for v in c]
            elif f in _BOOL_FIELDS:
                c = [v != 0 for v in c]
            body.append(c)
        off, header, sink = self.journal.reserve(n)
        prefix = (cls.KIND, SCHEMA_VERSION)
        lead = (lead,)
        new = tuple.__new__
        recs = []
        for row in zip(*body):
            rec = new(cls, prefix + (off,) + header + lead + row)
            sink(rec)
            recs.append(rec)
            off += 1
        return tuple(recs)

    def _stored(self, table: EntryTable, merged: Merged) -> _StoredTable:
        starts = np.fromiter((start for _, start, _ in merged.groups), dtype=np.int64, count=len(merged.groups))
        return _StoredTable(self.pool, table, merged, np.append(starts, len(merged)))

    def _send_leader_and_isr(self, epoch: int, sent: list) -> None:
        if not len(self._lai):
            return
        live = self.context.live_broker_epochs
        merged = self._lai.merged()
        stored = self._stored(self._lai, merged)
        leaders = np.take(stored.value_array("leader")[1], merged.row) == merged.keys["group"]
        leads = np.add.reduceat(leaders, stored.starts[:-1]).tolist()
        for i, (broker, _, _) in enumerate(merged.groups):
            if broker not in live:
                continue
            partitions = self._emit_partitions(LeaderAndIsrPartition, broker, stored, i)
            callback = None
            if self.on_leader_and_isr_response is not None:
                callback = self._leader_and_isr_callback(broker)
            self._request(API_LEADER_AND_ISR, broker, epoch, partitions, leads[i], 0, (), sent, callback)

    def _send_update_metadata(self, epoch: int, sent: list) -> None:
        live = self.context.live_broker_epochs
        brokers = tuple(sorted(b for b in self.update_metadata_brokers if b in live))
        if not brokers:
            return
        merged = self._um.merged()
        n = len(merged)
        partitions = ()
        if n:
            stored = _StoredTable(self.pool, self._um, merged, np.array([0, n], dtype=np.int64))
            partitions = self._emit_partitions(UpdateMetadataPartition, brokers, stored, 0)
        live_brokers = tuple(sorted(live))
        for broker in brokers:
            self._request(API_UPDATE_METADATA, broker, epoch, partitions, 0, 0, live_brokers, sent)

    def _send_stop_replica(self, epoch: int, sent: list) -> None:
        if not len(self._sr):
            return
        live = self.context.live_broker_epochs
        merged = self._sr.merged()
        deletes = merged.keys["delete_partition"]
        stored = self._stored(self._sr, merged)
        for i, (broker, start, stop) in enumerate(merged.groups):
            if broker not in live:
                continue
            partitions = self._emit_partitions(StopReplicaPartition, broker, stored, i)
            count = int(np.count_nonzero(deletes[start:stop]))
            callback = None
            if count and self.on_topic_deletion_stop_replica_response is not None:
                deleted = {(rec.topic, rec.partition) for rec in partitions if rec.delete_partition}
                callback = self._stop_replica_callback(broker, deleted)
            self._request(API_STOP_REPLICA, broker, epoch, partitions, 0, count, (), sent, callback)

    def _leader_and_isr_callback(self, broker: int) -> Callable[[BrokerResponse], None]:
        def on_response(response: BrokerResponse) -> None:
            self.on_leader_and_isr_response(broker, response.error, response.partition_errors)
        return on_response

    def _stop_replica_callback(self, broker: int, deleted: set) -> Callable[[BrokerResponse], None]:
        def on_response(response: BrokerResponse) -> None:
            ctx = self.context
            errors = dict(sorted((tp, err) for tp, err in response.partition_errors.items()
                                 if tp in deleted and ctx.is_topic_deletion_in_progress(tp[0])))
            if errors:
                self.on_topic_deletion_stop_replica_response(broker, response.error, errors)
        return on_response


def _concat(adds: list[tuple]) -> tuple:
    """The entry columns of several adds as one (a field that is the same scalar in every add stays that
    scalar; the third field, the partitions, is always an array)."""
    if len(adds) == 1:
        return adds[0]
    bounds = np.cumsum([0] + [len(a[2]) for a in adds]).tolist()
    out = []
    for i in range(len(adds[0])):
        values = [a[i] for a in adds]
        if not any(isinstance(v, np.ndarray) for v in values) and len(set(values)) == 1:
            out.append(values[0])
            continue
        col = np.empty(bounds[-1], dtype=np.int64)
        for v, s, e in zip(values, bounds[:-1], bounds[1:]):
            col[s:e] = v
        out.append(col)
    return tuple(out)


def _stored_lead(value, n: int):
    """The first body field of every record of a request, stored: a broker id, or (UpdateMetadata) the
    tuple of brokers the request goes to."""
    if isinstance(value, tuple):
        k = len(value)
        one = _stored_ints(np.asarray(value, dtype=np.int64))
        return ListColumn(_list_offsets(n, k), _frozen(np.tile(one, n)))
    return _frozen(np.full(n, value, dtype=_stored_ints(np.array([value], dtype=np.int64)).dtype))


def _list_offsets(n: int, k: int) -> np.ndarray:
    """The stored offsets of ``n`` tuples of ``k`` ints each."""
    return _frozen(np.arange(0, (n + 1) * k, k, dtype=_I4)) if k else stored_array(np.zeros(n + 1), _I4)


def _stored_ints(a: np.ndarray) -> np.ndarray:
    if not len(a):
        return stored_array(a, STORED_INT_DTYPES[0])
    w = int(stored_int_widths(a.min(keepdims=True), a.max(keepdims=True))[0])
    return stored_array(a, STORED_INT_DTYPES[w])


def _pool_lists(pool, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool codes as the (int64 offsets, values) of one int tuple column."""
    n = len(codes)
    if not codes.any():   # every tuple empty (the pool's code 0): adding/removing replicas, mostly
        return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    lengths = pool.lengths()[codes]
    low, high = int(lengths.min()), int(lengths.max())
    if low == high:   # every tuple of one length (an RF, mostly)
        return np.arange(n + 1, dtype=np.int64) * low, pool.matrix()[:, :low][codes].reshape(-1)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    m = pool.matrix()[:, :high][codes]
    return offsets, m[np.arange(m.shape[1]) < lengths[:, None]]


class _StoredTable:
    """A merged entry table in the stored form of columnar batches, for records emitted one batch per
    group (broker) of its rows: the key columns' narrowest dtypes per group by one reduce pass; each value
    column cast once to the narrowest dtype of all its values (tuples as a matrix of their ids, when of
    one length) and a group's entries gathered from it by their value rows, narrowed further only where
    the group needs less; the topics' per-group dictionaries by one presence matrix."""

    def __init__(self, pool, table: EntryTable, merged: Merged, starts: np.ndarray):
        self.pool = pool
        self.table = table
        self.merged = merged
        self.starts = starts                                   # group starts, then the table's length
        self._widths: dict = {}                                # key field -> per-group index into STORED_INT_DTYPES
        self._cast: dict = {}                                  # key field -> {width: the column in that dtype}
        self._values: dict = {}                                # value field -> (width, the values in that dtype)
        self._lists: dict = {}                                 # tuple field -> (width, k, matrix) or None
        self._grouped: dict = {}                               # value column -> (widths per group, casts, width)
        self._offsets: dict = {}                               # k -> the offsets of the longest group's k-tuples
        self._topics = None

    def bounds(self, i: int) -> tuple[int, int]:
        return int(self.starts[i]), int(self.starts[i + 1])

    def ints(self, field: str, i: int) -> np.ndarray:
        """A key field's int column of group ``i``."""
        values = self.merged.keys[field]
        w = self._widths.get(field)
        if w is None:
            at = self.starts[:-1]
            w = self._widths[field] = stored_int_widths(np.minimum.reduceat(values, at),
                                                        np.maximum.reduceat(values, at))
        w = int(w[i])
        cast = self._cast.setdefault(field, {})
        whole = cast.get(w)
        if whole is None:
            whole = cast[w] = stored_array(values, STORED_INT_DTYPES[w])
        s, e = self.bounds(i)
        return whole[s:e]

    def bools(self, field: str, i: int) -> np.ndarray:
        """A (key) sticky flag's bool column of group ``i``."""
        cast = self._cast.setdefault(field, {})
        whole = cast.get("bool")
        if whole is None:
            whole = cast["bool"] = stored_array(self.merged.keys[field] != 0, np.bool_)
        s, e = self.bounds(i)
        return whole[s:e]

    def value_array(self, field: str) -> tuple[int, np.ndarray]:
        """(width, a value field's values in the narrowest stored dtype that holds all of them)."""
        hit = self._values.get(field)
        if hit is None:
            v = self.merged.values[field]
            w = int(stored_int_widths(v.min(keepdims=True), v.max(keepdims=True))[0]) if len(v) else 0
            hit = self._values[field] = (w, v.astype(STORED_INT_DTYPES[w]))
        return hit

    def value_ints(self, field: str, i: int) -> np.ndarray:
        """A value field's int column of group ``i``."""
        def whole():
            w, values = self.value_array(field)
            return np.take(values, self.merged.row), w
        return self._group_slice(field, whole, i)

    def _group_slice(self, name: str, make, i: int, scale: int = 1) -> np.ndarray:
        """Group ``i``'s part of a column ``make()`` gives for every row at once — (the column, in the stored
        width ``w`` that holds all of it; ``w``) with ``scale`` values per row —, in the narrowest stored
        width that holds the group's values: each group's width from one reduce pass over the column, the
        column cast once per width some group needs."""
        hit = self._grouped.get(name)
        if hit is None:
            whole, w = make()
            widths = None
            if w:
                at = self.starts[:-1] * scale
                widths = stored_int_widths(np.minimum.reduceat(whole, at), np.maximum.reduceat(whole, at))
            hit = self._grouped[name] = (widths, {w: _frozen(whole)}, w)
        widths, casts, w = hit
        if widths is not None:
            w = int(widths[i])
        column = casts.get(w)
        if column is None:
            column = casts[w] = _frozen(next(iter(casts.values())).astype(STORED_INT_DTYPES[w]))
        s, e = self.bounds(i)
        return column[s * scale:e * scale]

    def tuples(self, field: str, i: int) -> ListColumn:
        """A value field's int tuple column (pool codes) of group ``i``."""
        if field not in self._lists:
            self._lists[field] = self._tuple_matrix(field)
        hit = self._lists[field]
        s, e = self.bounds(i)
        n = e - s
        if hit is None:   # tuples of several lengths: this group's entries one by one
            offsets, flat = _pool_lists(self.pool, np.take(self.merged.values[field], self.merged.row[s:e]))
            return ListColumn(stored_array(offsets, _I4), _stored_ints(flat))
        w, k, matrix = hit
        if not k:
            return ListColumn(_list_offsets(n, 0), stored_array((), STORED_INT_DTYPES[0]))
        offsets = self._offsets.get(k)
        if offsets is None or len(offsets) <= n:
            offsets = self._offsets[k] = _list_offsets(int(np.diff(self.starts).max()), k)

        def whole():
            # Each tuple's k ids as one opaque item: a 1-D gather (several times faster than gathering rows).
            return np.take(matrix, self.merged.row).view(STORED_INT_DTYPES[w]), w
        return ListColumn(offsets[:n + 1], self._group_slice(field + "/values", whole, i, k))

    def _tuple_matrix(self, field: str):
        codes = self.merged.values[field]
        if not codes.any():   # every tuple empty (the pool's code 0): adding/removing replicas, mostly
            return 0, 0, None
        lengths = self.pool.lengths()[codes]
        k = int(lengths.max())
        if int(lengths.min()) != k:
            return None
        m = self.pool.matrix()[:, :k][codes]
        w = int(stored_int_widths(m.min(keepdims=True).reshape(1), m.max(keepdims=True).reshape(1))[0])
        dtype = STORED_INT_DTYPES[w]
        return w, k, np.ascontiguousarray(m, dtype=dtype).view(f"V{k * dtype.itemsize}").reshape(-1)

    def plain(self, field: str, i: int) -> list:
        """Field ``field`` of group ``i``'s rows, as ints."""
        s, e = self.bounds(i)
        c = self.merged.keys.get(field)
        if c is not None:
            return c[s:e].tolist()
        return np.take(self.merged.values[field], self.merged.row[s:e]).tolist()

    def topic(self, i: int) -> DictColumn:
        names = self.table.topic_names
        k = len(names)
        r = len(self.starts) - 1
        topic = self.merged.keys["topic"]
        if r * k > _TOPICS_MATRIX_MAX:
            s, e = self.bounds(i)
            uniq, codes = group_codes(topic[s:e])
            return DictColumn(tuple(names[t] for t in uniq.tolist()), stored_array(codes, _I4))
        if self._topics is None:
            row_range = np.repeat(np.arange(r, dtype=np.int64), np.diff(self.starts))
            key = row_range * k + topic
            present = np.zeros(r * k, dtype=bool)
            present[key] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            before = np.concatenate(([0], np.cumsum(present.reshape(r, k).sum(axis=1))))
            codes = stored_array(rank[key] - before[row_range], _I4)
            self._topics = present.reshape(r, k), codes
        present, codes = self._topics
        s, e = self.bounds(i)
        return DictColumn(tuple(names[t] for t in np.flatnonzero(present[i]).tolist()), codes[s:e])


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
