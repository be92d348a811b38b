"""The per-broker request batch (Kafka's ControllerBrokerRequestBatch) and the channel it sends on.

State machines add LeaderAndIsr, UpdateMetadata and StopReplica entries while they work;
``send_requests_to_brokers`` then turns them into one request per broker and API, in Kafka's
order (LeaderAndIsr, UpdateMetadata, StopReplica), records every partition state and every
request in the journal, and hands the requests to the channel. Brokers are served in
ascending id order and partitions in the order they were added, so the records are
deterministic (Kafka iterates hash maps here).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from events.records import (
    HEADER_LEN, API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, LEADER_DURING_DELETE, SCHEMA_VERSION,
    LeaderAndIsrPartition,
    RequestSent, StopReplicaPartition, UpdateMetadataPartition,
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
        self.leader_and_isr_requests: dict[int, dict[tuple, tuple]] = defaultdict(dict)
        self.stop_replica_requests: dict[int, dict[tuple, tuple]] = defaultdict(dict)
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[tuple, tuple] = {}
        # Per-batch caches: the live brokers do not change while one batch is being built.
        self._all_live_added = False
        self._is_online = None

    def is_empty(self) -> bool:
        return not (self.leader_and_isr_requests or self.stop_replica_requests
                    or self.update_metadata_brokers or self.update_metadata_partitions)

    def new_batch(self) -> None:
        if self.leader_and_isr_requests:
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some LeaderAndIsr state changes {self.leader_and_isr_requests} might be lost ")
        if self.stop_replica_requests:
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some StopReplica state changes {self.stop_replica_requests} might be lost ")
        if self.update_metadata_brokers:
            raise IllegalBatchStateError(
                "Controller to broker state change requests batch is not empty while creating a new one. "
                f"Some UpdateMetadata state changes to brokers {self.update_metadata_brokers} with partition info "
                f"{self.update_metadata_partitions} might be lost ")

    def clear(self) -> None:
        self.leader_and_isr_requests.clear()
        self.stop_replica_requests.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self._all_live_added = False
        self._is_online = None

    # --- adding -------------------------------------------------------------------------------
    def add_leader_and_isr_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                               info: LeaderIsrAndControllerEpoch, assignment: ReplicaAssignment,
                                               is_new: bool) -> None:
        lai = info.leader_and_isr
        requests = self.leader_and_isr_requests
        for b in broker_ids:
            if b < 0:
                continue
            per_broker = requests[b]
            prev = per_broker.get(tp)
            # (controller_epoch, leader, leader_epoch, isr, partition_epoch, replicas, adding, removing, is_new, rs)
            per_broker[tp] = (info.controller_epoch, lai.leader, lai.leader_epoch, lai.isr, lai.partition_epoch,
                              assignment.replicas, assignment.adding_replicas, assignment.removing_replicas,
                              is_new or (prev is not None and prev[8]), lai.recovery_state)
        if self._all_live_added:
            self._add_update_metadata_partition(tp)
        else:
            self.add_update_metadata_request_for_brokers(self.context.live_broker_epochs, (tp,))
            self._all_live_added = True

    def update_metadata_entries(self, ts, parts) -> dict | None:
        """(topic, partition) -> the UpdateMetadata partition state ``_add_update_metadata_partition`` would
        add, for partitions ``parts`` (numpy indexes) of one topic's columns, computed as arrays; None when
        replicas on offline log directories make it a per-partition question."""
        ctx = self.context
        if ctx.has_offline_dirs():
            return None
        ce, leader, le, icode, pe, _ = ctx.leadership_arrays(ts, parts)
        has = le != -1
        parts, ce, leader, le, icode, pe = parts[has], ce[has], leader[has], le[has], icode[has], pe[has]
        rcodes = ctx.assignment_codes(ts, parts)
        rows = ctx.pool.matrix()[rcodes]
        live = ctx.live_mask()
        offline = rows >= 0
        known = offline & (rows < len(live))
        offline[known] = ~live[rows[known]]
        offline_t = ctx.tuples_of_rows(np.where(offline, rows, -1))
        tuples = ctx.pool.tuples
        name = ts.name
        if name in ctx.topics_to_be_deleted:
            # LeaderAndIsr.duringDelete(isr): a fresh LeaderAndIsr, so epochs read 0.
            return {(name, p): (c, LEADER_DURING_DELETE, 0, tuples[i], 0, tuples[r], o)
                    for p, c, i, r, o in zip(parts.tolist(), ce.tolist(), icode.tolist(), rcodes.tolist(), offline_t)}
        return {(name, p): (c, ld, e, tuples[i], v, tuples[r], o)
                for p, c, ld, e, i, v, r, o in zip(parts.tolist(), ce.tolist(), leader.tolist(), le.tolist(),
                                                   icode.tolist(), pe.tolist(), rcodes.tolist(), offline_t)}

    def add_leader_and_isr_requests(self, recipients: list, tps: list, states: list, is_new: bool,
                                    update_metadata: dict | None = None) -> None:
        """``add_leader_and_isr_request_for_brokers`` for many partitions, in order: ``recipients[i]`` the broker
        ids for ``tps[i]``, ``states[i]`` = (controller_epoch, leader, leader_epoch, isr, partition_epoch, replicas,
        adding, removing, recovery_state). ``update_metadata``: their UpdateMetadata states as
        ``update_metadata_entries`` gives them (else computed one by one)."""
        requests = self.leader_and_isr_requests
        for brokers, tp, (ce, leader, epoch, isr, pe, replicas, adding, removing, rs) in zip(recipients, tps, states):
            for b in brokers:
                if b < 0:
                    continue
                per_broker = requests[b]
                prev = per_broker.get(tp)
                per_broker[tp] = (ce, leader, epoch, isr, pe, replicas, adding, removing,
                                  is_new or (prev is not None and prev[8]), rs)
        if not tps:
            return
        if not self._all_live_added:
            self.add_update_metadata_request_for_brokers(self.context.live_broker_epochs, ())
            self._all_live_added = True
        if update_metadata is not None:
            partitions = self.update_metadata_partitions
            add = self._add_update_metadata_partition
            for tp in tps:
                entry = update_metadata.get(tp)
                if entry is not None:
                    partitions[tp] = entry
                else:
                    add(tp)
            return
        add = self._add_update_metadata_partition
        for tp in tps:
            add(tp)

    def add_stop_replica_requests(self, broker_id: int, tps: list, leader_epochs: list, delete_partition: bool) -> None:
        """``add_stop_replica_request_for_brokers((broker_id,), tp, delete_partition)`` for many partitions, with
        their leader epochs as ``ControllerContext.leader_epoch`` gives them."""
        if broker_id < 0:
            return
        per_broker = self.stop_replica_requests[broker_id]
        for tp, epoch in zip(tps, leader_epochs):
            prev = per_broker.get(tp)
            per_broker[tp] = (epoch, delete_partition or (prev is not None and prev[1]))

    def add_stop_replica_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                             delete_partition: bool) -> None:
        leader_epoch = self.context.leader_epoch(tp)
        requests = self.stop_replica_requests
        for b in broker_ids:
            if b < 0:
                continue
            per_broker = requests[b]
            prev = per_broker.get(tp)
            per_broker[tp] = (leader_epoch, delete_partition or (prev is not None and prev[1]))

    def add_update_metadata_request_for_brokers(self, broker_ids: Iterable[int],
                                                partitions: Iterable[tuple] = ()) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            self._add_update_metadata_partition(tp)

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
        if tp[0] in ctx.topics_to_be_deleted:
            # LeaderAndIsr.duringDelete(isr): a fresh LeaderAndIsr, so epochs read 0.
            self.update_metadata_partitions[tp] = (controller_epoch, LEADER_DURING_DELETE, 0, isr, 0, replicas, offline)
        else:
            self.update_metadata_partitions[tp] = (controller_epoch, leader, leader_epoch, isr, partition_epoch,
                                                   replicas, offline)

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
                            tuple(partitions), live_brokers)
        sent.append(req)
        self.channel.send(req, callback)

    def _emit_partitions(self, cls, lead: tuple, states: dict[tuple, tuple]) -> list:
        """One record per partition state: ``lead`` fields, then topic, partition, then the state's fields.
        Many of them go to the journal as one columnar batch (the same records, as columns)."""
        n = len(states)
        if n >= COLUMN_MIN:
            names = cls._fields[HEADER_LEN:]
            columns = {names[0]: [lead[0]] * n, "topic": [tp[0] for tp in states],
                       "partition": [tp[1] for tp in states]}
            columns.update(zip(names[3:], zip(*states.values())))
            return self.journal.emit_columns(cls, **columns).records()
        off, header, sink = self.journal.reserve(len(states))
        prefix = (cls.KIND, SCHEMA_VERSION)
        new = tuple.__new__
        recs = []
        for tp, st in states.items():
            rec = new(cls, prefix + (off,) + header + lead + tp + st)
            sink(rec)
            recs.append(rec)
            off += 1
        return recs

    def _send_leader_and_isr(self, epoch: int, sent: list) -> None:
        live = self.context.live_broker_epochs
        for broker in sorted(self.leader_and_isr_requests):
            if broker not in live:
                continue
            recs = self._emit_partitions(LeaderAndIsrPartition, (broker,), self.leader_and_isr_requests[broker])
            leaders = sum(1 for rec in recs if rec.leader == broker)
            callback = None
            if self.on_leader_and_isr_response is not None:
                callback = self._leader_and_isr_callback(broker)
            self._request(API_LEADER_AND_ISR, broker, epoch, recs, leaders, 0, (), sent, callback)

    def _send_update_metadata(self, epoch: int, sent: list) -> None:
        live = self.context.live_broker_epochs
        brokers = tuple(sorted(b for b in self.update_metadata_brokers if b in live))
        if not brokers:
            return
        recs = self._emit_partitions(UpdateMetadataPartition, (brokers,), self.update_metadata_partitions)
        live_brokers = tuple(sorted(live))
        for broker in brokers:
            self._request(API_UPDATE_METADATA, broker, epoch, recs, 0, 0, live_brokers, sent)

    def _send_stop_replica(self, epoch: int, sent: list) -> None:
        live = self.context.live_broker_epochs
        for broker in sorted(self.stop_replica_requests):
            if broker not in live:
                continue
            recs = self._emit_partitions(StopReplicaPartition, (broker,), self.stop_replica_requests[broker])
            deletes = sum(1 for rec in recs if rec.delete_partition)
            callback = None
            if deletes and self.on_topic_deletion_stop_replica_response is not None:
                deleted = {(rec.topic, rec.partition) for rec in recs if rec.delete_partition}
                callback = self._stop_replica_callback(broker, deleted)
            self._request(API_STOP_REPLICA, broker, epoch, recs, 0, deletes, (), sent, callback)

    def _leader_and_isr_callback(self, broker: int) -> Callable[[BrokerResponse], None]:
        def on_response(response: BrokerResponse) -> None:
            self.on_leader_and_isr_response(broker, response.error, response.partition_errors)
        return on_response

    def _stop_replica_callback(self, broker: int, deleted: set) -> Callable[[BrokerResponse], None]:
        def on_response(response: BrokerResponse) -> None:
            ctx = self.context
            errors = {tp: err for tp, err in sorted(response.partition_errors.items())
                      if tp in deleted and ctx.is_topic_deletion_in_progress(tp[0])}
            if errors:
                self.on_topic_deletion_stop_replica_response(broker, response.error, errors)
        return on_response
