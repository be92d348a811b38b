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

from controller.request_entries import EntryTable, group_codes
from events.columns import DictColumn, ListColumn
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, HEADER_LEN, LEADER_DURING_DELETE, SCHEMA_VERSION,
    LeaderAndIsrPartition, RequestSent, StopReplicaPartition, UpdateMetadataPartition,
)
from statemachines.leader_and_isr import LeaderIsrAndControllerEpoch, ReplicaAssignment


COLUMN_MIN = 64  # partition states from which a request's records are emitted as one columnar batch


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

    def _lai_columns(self, ts, parts: np.ndarray, recipients: np.ndarray, is_new: bool) -> tuple:
        ctx = self.context
        ce, leader, le, icode, pe, rec = ctx.leadership_arrays(ts, parts)
        rcodes = ctx.assignment_codes(ts, parts)
        adding = removing = 0
        if ts.adding or ts.removing:
            code = self.pool.code
            plist = parts.tolist()
            adding = np.fromiter((code(ts.adding.get(p, ())) for p in plist), dtype=np.int64, count=len(plist))
            removing = np.fromiter((code(ts.removing.get(p, ())) for p in plist), dtype=np.int64, count=len(plist))
        if recipients.shape[1] == 1 and bool((recipients >= 0).all()):   # one recipient per partition
            return (recipients[:, 0], self._lai.topic_code(ts.name), parts, ce, leader, le, icode, pe, rcodes,
                    adding, removing, int(is_new), rec)
        rows, cols = np.nonzero(recipients >= 0)   # row-major: each partition's recipients in order

        def per(a):
            return a[rows] if isinstance(a, np.ndarray) else a
        return (recipients[rows, cols], self._lai.topic_code(ts.name), parts[rows], ce[rows], leader[rows], le[rows],
                icode[rows], pe[rows], rcodes[rows], per(adding), per(removing), int(is_new), rec[rows])

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
        lai = [self._lai_columns(ts, parts, recipients, is_new) for ts, parts, recipients in segments]
        self._lai.add_columns(_concat(lai))
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
        for t, ts in enumerate(topics):
            rows = order[bounds[t]:bounds[t + 1]]
            if not len(rows):
                continue
            c = self._um_columns(ts, parts[rows], rows)
            if c is not None:
                um.append(c[0])
                taken.append(c[1])
        if not um:
            return
        cols = _concat(um)
        taken = np.concatenate(taken)
        slot = np.full(len(parts), -1, dtype=np.int64)
        slot[taken] = np.arange(len(taken))
        back = slot[slot >= 0]   # the rows' order again
        n = len(back)
        self._um.add_columns(tuple(np.broadcast_to(np.asarray(c, dtype=np.int64), (n,))[back] for c in cols))

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

    def _list_column(self, codes: np.ndarray) -> ListColumn:
        """Pool codes as an int tuple column."""
        if not codes.any():   # every tuple empty (the pool's code 0): adding/removing replicas, mostly
            return ListColumn(np.zeros(len(codes) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        pool = self.pool
        lengths = pool.lengths()[codes]
        low, high = int(lengths.min()), int(lengths.max())
        if low == high:   # every tuple of one length (an RF, mostly)
            return ListColumn(np.arange(len(codes) + 1, dtype=np.int64) * low,
                              pool.matrix()[:, :low][codes].reshape(-1))
        offsets = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        m = pool.matrix()[:, :high][codes]
        return ListColumn(offsets, m[np.arange(m.shape[1]) < lengths[:, None]])

    def _emit_partitions(self, cls, lead: tuple, table: EntryTable, columns: dict, start: int, stop: int):
        """The partition states of rows ``start..stop-1`` of a merged table, ``lead`` (their first body field)
        first: one record each, emitted as one columnar batch (returned) when there are at least COLUMN_MIN,
        else as row records (returned as a tuple)."""
        n = stop - start
        names = cls._fields[HEADER_LEN:]   # the lead field, topic, partition, then the table's fields
        fields = table.fields[3:]
        topic = columns["topic"][start:stop]
        partition = columns["partition"][start:stop]
        if n >= COLUMN_MIN:
            uniq, inverse = group_codes(topic)
            out = {names[0]: _lead_column(lead[0], n),
                   "topic": DictColumn(tuple(table.topic_names[t] for t in uniq.tolist()), inverse),
                   "partition": partition}
            for f in fields:
                c = columns[f][start:stop]
                if f in _TUPLE_FIELDS:
                    out[f] = self._list_column(c)
                elif f in _BOOL_FIELDS:
                    out[f] = c != 0
                else:
                    out[f] = c
            return self.journal.emit_columns(cls, **out)
        tuples = self.pool.tuples
        topic_names = table.topic_names
        body = [[topic_names[t] for t in topic.tolist()], partition.tolist()]
        for f in fields:
            c = columns[f][start:stop].tolist()
            if f in _TUPLE_FIELDS:
                c = [tuples[v] for v in c]
            elif f in _BOOL_FIELDS:
                c = [v != 0 for v in c]
            body.append(c)
        off, header, sink = self.journal.reserve(n)
        prefix = (cls.KIND, SCHEMA_VERSION)
        new = tuple.__new__
        recs = []
        for row in zip(*body):
            rec = new(cls, prefix + (off,) + header + lead + row)
            sink(rec)
            recs.append(rec)
            off += 1
        return tuple(recs)

    def _send_leader_and_isr(self, epoch: int, sent: list) -> None:
        if not len(self._lai):
            return
        live = self.context.live_broker_epochs
        merged = self._lai.merged()
        cols = merged.columns
        for broker, start, stop in merged.groups:
            if broker not in live:
                continue
            partitions = self._emit_partitions(LeaderAndIsrPartition, (broker,), self._lai, cols, start, stop)
            leaders = int(np.count_nonzero(cols["leader"][start:stop] == broker))
            callback = None
            if self.on_leader_and_isr_response is not None:
                callback = self._leader_and_isr_callback(broker)
            self._request(API_LEADER_AND_ISR, broker, epoch, partitions, leaders, 0, (), sent, callback)

    def _send_update_metadata(self, epoch: int, sent: list) -> None:
        live = self.context.live_broker_epochs
        brokers = tuple(sorted(b for b in self.update_metadata_brokers if b in live))
        if not brokers:
            return
        merged = self._um.merged()
        n = len(merged.columns["partition"])
        partitions = self._emit_partitions(UpdateMetadataPartition, (brokers,), self._um, merged.columns, 0, n) \
            if n else ()
        live_brokers = tuple(sorted(live))
        for broker in brokers:
            self._request(API_UPDATE_METADATA, broker, epoch, partitions, 0, 0, live_brokers, sent)

    def _send_stop_replica(self, epoch: int, sent: list) -> None:
        if not len(self._sr):
            return
        live = self.context.live_broker_epochs
        merged = self._sr.merged()
        cols = merged.columns
        for broker, start, stop in merged.groups:
            if broker not in live:
                continue
            partitions = self._emit_partitions(StopReplicaPartition, (broker,), self._sr, cols, start, stop)
            deletes = int(np.count_nonzero(cols["delete_partition"][start:stop]))
            callback = None
            if deletes and self.on_topic_deletion_stop_replica_response is not None:
                deleted = {(rec.topic, rec.partition) for rec in partitions if rec.delete_partition}
                callback = self._stop_replica_callback(broker, deleted)
            self._request(API_STOP_REPLICA, broker, epoch, partitions, 0, deletes, (), sent, callback)

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


def _lead_column(value, n: int):
    """The first body field of every record of a request: a broker id, or (UpdateMetadata) the tuple of
    brokers the request goes to."""
    if isinstance(value, tuple):
        k = len(value)
        return ListColumn(np.arange(n + 1, dtype=np.int64) * k, np.tile(np.asarray(value, dtype=np.int64), n))
    return np.full(n, value, dtype=np.int64)
