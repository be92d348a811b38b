"""The KRaft controller's meaning of its lines (``org.apache.kafka.controller.*``, Kafka 3.3 to 4.x): KRaft rows.

The QuorumController logs, at INFO, every metadata record it replays that matters to the audit
(``ReplicationControlManager``, ``ClusterControlManager``), its broker-liveness decisions
(``BrokerHeartbeatManager``), its Raft leadership, and the elections ``PartitionChangeBuilder`` makes
from eligible leader replicas (KIP-966) or uncleanly. The messages read (exact texts of apache/kafka)::

    Replayed TopicRecord for topic t with topic ID U.
    Replayed RemoveTopicRecord for topic t with ID U.
    Replayed PartitionRecord for new partition t-0 with topic ID U and PartitionRegistration(replicas=[1],
        directories=[..], isr=[1], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=1,
        leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=0).       (also "for existing partition")
    UNCLEAN partition change for t-0 with topic ID U: isr: [1] -> [2], leader: 1 -> 2, leaderRecoveryState:
        RECOVERED -> RECOVERING, leaderEpoch: 2 -> 3, partitionEpoch: 5 -> 6
    Setting new leader for topicId U, partition 30 to 1 using ELR. Previous partition: PartitionRegistration(..),
        change record: PartitionChangeRecord(.., leader=-2, ..)    (also "using an unclean election")
    Replayed initial RegisterBrokerRecord for broker 10: RegisterBrokerRecord(brokerId=10, ..,
        incarnationId=I, brokerEpoch=123, .., fenced=true, ..)
    Replayed RegisterBrokerRecord establishing a new incarnation of broker 10: RegisterBrokerRecord(..)
    Replayed BrokerRegistrationChangeRecord modifying the registration for broker 10:
        BrokerRegistrationChangeRecord(brokerId=10, brokerEpoch=123, fenced=1, inControlledShutdown=0, ..)
    Fencing broker 10 at epoch 123 because its session has timed out.
    The request from broker 10 to unfence has been granted because it has caught up with the offset of ..
    Unfenced broker 10 has requested and been granted a controlled shutdown.   ("an immediate shutdown")
    The request from broker 2 to shut down has been granted since the lowest active offset ..
    registerBroker: event failed with DuplicateBrokerRegistrationException in 825 microseconds. ..
    In the new epoch 619, the leader is 1.                       ("the leader is (none).")
    Becoming the active controller at epoch 4, next write offset 2133.
    Renouncing the leadership due to a metadata log event. We were the leader at epoch 607, but in the new
        epoch 608, the leader is (none). Reverting to last stable offset 52471.
    writeNoOpRecord: event failed with NotLeaderException (treated as NotControllerException) at epoch 3056 in
        1358 microseconds. Renouncing leadership and reverting to the last committed offset 93644. ..
    Creating new QuorumController with clusterId C
    Starting to load snapshot 93644-3056. ..

Traps: the ELR line's change record prints ``leader=-2`` (no change) because the leader is set after the
line; the new leader is the one named in the message. The ELR lines carry no ``[QuorumController id=N]``
prefix (``PartitionChangeBuilder`` logs without the controller's log context): their node is the last
controller named before them. Every other line of a KRaft logger is understood and makes no row.
"""
from __future__ import annotations

import re

from audit.kraft_rows import (
    CONTROLLED_SHUTDOWN, ELECTED_FROM_ELR, ELECTED_UNCLEAN, FENCED, KRAFT_ACTIVATED, KRAFT_BROKER_CHANGED,
    KRAFT_BROKER_FENCED, KRAFT_BROKER_REGISTERED, KRAFT_CONTROLLER_STARTED, KRAFT_DUPLICATE_REGISTRATION,
    KRAFT_ELECTION, KRAFT_RAFT_EPOCH, KRAFT_REGISTRATION, KRAFT_RENOUNCED, KRAFT_SHUTDOWN_GRANTED,
    KRAFT_SNAPSHOT_LOADING, KRAFT_TOPIC_CREATED, KRAFT_TOPIC_REMOVED, KRAFT_UNFENCE_GRANTED, REGISTERED_INCARNATION,
    INT_TUPLES, REGISTERED_INITIAL, UNFENCED, KraftRow, int_tuple,
)
from audit.kafka_line_patterns import INTS

_ID = r"[\w-]+"
_REGISTRATION_FIELDS = (   # the fields the audit reads, in their printed order (3.3-3.6: no directories, ELRs)
    r"PartitionRegistration\(replicas=\[(?P<replicas>[^\]]*)\], (?:directories=\[[^\]]*\], )?isr=\[(?P<isr>[^\]]*)\], "
    r"removingReplicas=\[(?P<removing>[^\]]*)\], addingReplicas=\[(?P<adding>[^\]]*)\], (?:elr=\[(?P<elr>[^\]]*)\], )?"
    r"(?:lastKnownElr=\[[^\]]*\], )?leader=(?P<leader>-?\d+), leaderRecoveryState=(?P<recovery>\w+), "
    r"leaderEpoch=(?P<le>-?\d+), partitionEpoch=(?P<pe>-?\d+)\)")
PARTITION_RECORD = re.compile(
    rf"Replayed PartitionRecord for (?:new|existing) partition (?P<tp>\S+)-(?P<p>\d+) with topic ID (?P<tid>{_ID}) "
    rf"and {_REGISTRATION_FIELDS}")
TOPIC_RECORD = re.compile(rf"Replayed TopicRecord for topic (?P<topic>\S+) with topic ID (?P<tid>{_ID})\.?$")
REMOVE_TOPIC = re.compile(rf"Replayed RemoveTopicRecord for topic (?P<topic>\S+) with ID (?P<tid>{_ID})\.?$")
UNCLEAN_CHANGE = re.compile(
    rf"UNCLEAN partition change for (?P<tp>\S+)-(?P<p>\d+) with topic ID (?P<tid>{_ID}): (?P<diff>.*)$")
NEW_LEADER = re.compile(
    rf"Setting new leader for topicId (?P<tid>{_ID}), partition (?P<p>\d+) to (?P<leader>-?\d+) using "
    r"(?P<how>ELR|an unclean election)(?:\. Previous partition: (?P<reg>PartitionRegistration\())?")
REGISTER_BROKER = re.compile(
    r"Replayed (?P<initial>initial )?RegisterBrokerRecord (?:for|establishing a new incarnation of|[\w -]*?) "
    r"broker (?P<b>\d+): RegisterBrokerRecord\(brokerId=\d+, .*?incarnationId=(?P<inc>[\w-]+), "
    r"brokerEpoch=(?P<epoch>-?\d+)")
BROKER_CHANGE = re.compile(
    r"Replayed BrokerRegistrationChangeRecord modifying the registration for broker (?P<b>\d+): "
    r"BrokerRegistrationChangeRecord\(brokerId=\d+, brokerEpoch=(?P<epoch>-?\d+), fenced=(?P<fenced>-?\d+), "
    r"inControlledShutdown=(?P<cs>-?\d+)")
FENCING = re.compile(r"Fencing broker (?P<b>\d+) at epoch (?P<epoch>-?\d+) because its session has timed out")
UNFENCE_GRANTED = re.compile(r"The request from broker (?P<b>\d+) to unfence has been granted")
SHUTDOWN_GRANTED = re.compile(
    r"(?:(?:Unfenced|Fenced) broker (?P<b>\d+) has requested and been granted (?P<how>a controlled|an immediate) "
    r"shutdown|The request from broker (?P<b2>\d+) to shut down has been granted)")
DUPLICATE_REGISTRATION = re.compile(
    r"registerBroker: event failed with DuplicateBrokerRegistrationException.*?(?:Exception message: (?P<msg>.*))?$")
NEW_EPOCH = re.compile(r"In the new epoch (?P<epoch>\d+), the leader is (?:\(none\)|(?P<leader>-?\d+))")
ACTIVATED = re.compile(r"Becoming the active controller at epoch (?P<epoch>\d+)")
RENOUNCING = re.compile(
    r"Renouncing the leadership due to a metadata log event\. We were the leader at epoch (?P<was>\d+), but in the "
    r"new epoch (?P<epoch>\d+), the leader is (?:\(none\)|(?P<leader>-?\d+))")
RENOUNCING_ON_ERROR = re.compile(
    r"\w+: event failed with NotLeaderException .*? at epoch (?P<epoch>\d+) .*?Renouncing leadership and reverting")
CONTROLLER_STARTED = re.compile(r"Creating new QuorumController with clusterId (?P<cluster>[\w-]+)")
SNAPSHOT_LOADING = re.compile(r"Starting to load snapshot ")

_FIELDS = re.compile(r"(\w+)=(\[[^\]]*\]|[^,)]*)")
_REGISTRATION = re.compile(_REGISTRATION_FIELDS)
_DIFF = re.compile(r"(\w+): (\[[^\]]*\]|\S+?) -> (\[[^\]]*\]|[^,\s]+)")
_INT_TEXT = re.compile(r"-?\d+")


_new = tuple.__new__


_ints = int_tuple     # "1, 2, 3" as (1, 2, 3)
_PARTITION_RECORD, _BROKER_CHANGE = PARTITION_RECORD.match, BROKER_CHANGE.match


def parse_registration(text: str) -> dict:
    """The fields of a ``PartitionRegistration(...)`` dump: lists as int tuples, numbers as ints."""
    out = {}
    for name, value in _FIELDS.findall(text):
        if value.startswith("["):
            out[name] = _ints(value[1:-1]) if name != "directories" else value
        elif _INT_TEXT.fullmatch(value):
            out[name] = int(value)
        else:
            out[name] = value
    return out


# The first word of a message (lower-cased, ``audit.kafka_line_patterns.dispatch_key``) -> its templates.
_BY_KEY = {
    "replayed": "replayed", "unclean": "unclean", "setting": "setting", "fencing": "fencing", "the": "the",
    "unfenced": "shutdown", "fenced": "shutdown", "registerbroker:": "duplicate", "in": "epoch",
    "becoming": "activated", "renouncing": "renouncing", "creating": "started", "starting": "snapshot",
}


class KraftControllerLines:
    """Reads one run's QuorumController lines; rows go to ``out``."""
    __slots__ = ("out", "_node", "_topic_names")

    def __init__(self, out: list):
        self.out = out
        self._node = -1                              # the last controller named (for lines that name none)
        self._topic_names: dict[str, str] = {}       # topic id -> name, from TopicRecord replays

    def line(self, head, node: int | None, key: str, body: str) -> bool:
        """Rows of one line (``head`` as in :meth:`audit.kraft_broker_lines.KraftBrokerLines.line`): True when it
        made rows. Lines of KRaft loggers are all understood."""
        if node is None:
            node = self._node
        else:
            self._node = node
        handler = _HANDLERS.get(key)
        if handler is None:
            if key.endswith(":") and "NotLeaderException" in body:
                m = RENOUNCING_ON_ERROR.match(body)
                if m is not None:
                    return self._row(head, KRAFT_RENOUNCED, node, epoch=int(m["epoch"]), detail="error")
            return False
        return handler(self, head, node, body)

    def _row(self, head, kind, node, *, topic=None, topic_id=None, partition=-1, broker=-1, leader=None,
             leader_epoch=None, partition_epoch=None, isr=None, replicas=None, elr=None, recovering=None, epoch=None,
             detail=None) -> bool:
        head = head()
        self.out.append(_new(KraftRow, (head[0], head[1], head[2], head[3], kind, node, head[4], topic, topic_id,
                                        partition, broker, leader, leader_epoch, partition_epoch, isr, replicas, elr,
                                        recovering, epoch, detail, None, None)))
        return True

    def _registration(self, head, node, topic, tid, p, fields) -> tuple:
        """A registration row of a ``PartitionRegistration(...)`` dump (``fields``, the groups of
        ``_REGISTRATION``); its (replicas, elr)."""
        replicas, isr, removing, adding, elr, leader, recovery, le, pe = fields
        tuples = INT_TUPLES
        replicas = tuples.get(replicas) or _ints(replicas)
        if elr is not None:
            elr = tuples.get(elr) or _ints(elr)
        h = head()      # the most frequent row of a controller's log: made without keywords
        self.out.append(_new(KraftRow, (h[0], h[1], h[2], h[3], KRAFT_REGISTRATION, node, h[4], topic, tid, p, -1,
                                        INTS[leader], INTS[le], INTS[pe], tuples.get(isr) or _ints(isr), replicas, elr,
                                        recovery == "RECOVERING", None, None, tuples.get(adding) or _ints(adding),
                                        tuples.get(removing) or _ints(removing))))
        return replicas, elr

    def _replayed(self, head, node, body) -> bool:
        word = body[9:body.find(" ", 9)]
        if word == "PartitionRecord":
            m = _PARTITION_RECORD(body)
            if m is not None:
                fields = m.groups()         # PARTITION_RECORD's: tp, p, tid, then _REGISTRATION's
                topic, tid = fields[0], fields[2]
                self._topic_names.setdefault(tid, topic)
                self._registration(head, node, topic, tid, INTS[fields[1]], fields[3:])
                return True
        elif word == "TopicRecord":
            m = TOPIC_RECORD.match(body)
            if m is not None:
                self._topic_names[m["tid"]] = m["topic"]
                return self._row(head, KRAFT_TOPIC_CREATED, node, topic=m["topic"], topic_id=m["tid"])
        elif word == "RemoveTopicRecord":
            m = REMOVE_TOPIC.match(body)
            if m is not None:
                return self._row(head, KRAFT_TOPIC_REMOVED, node, topic=m["topic"], topic_id=m["tid"])
        elif word in ("initial", "RegisterBrokerRecord"):
            m = REGISTER_BROKER.match(body)
            if m is not None:
                return self._row(head, KRAFT_BROKER_REGISTERED, node, broker=int(m["b"]), epoch=int(m["epoch"]),
                                 detail=REGISTERED_INITIAL if m["initial"] else REGISTERED_INCARNATION)
        elif word == "BrokerRegistrationChangeRecord":
            m = _BROKER_CHANGE(body)
            if m is not None:
                broker, epoch, fenced, shutdown = m.groups()    # BROKER_CHANGE's groups
                fenced, shutdown = INTS[fenced], INTS[shutdown]
                detail = FENCED if fenced == 1 else UNFENCED if fenced == -1 else \
                    CONTROLLED_SHUTDOWN if shutdown == 1 else None
                h = head()
                self.out.append(_new(KraftRow, (h[0], h[1], h[2], h[3], KRAFT_BROKER_CHANGED, node, h[4], None, None,
                                                -1, INTS[broker], None, None, None, None, None, None, None,
                                                INTS[epoch], detail, None, None)))
                return True
        return False

    def _unclean(self, head, node, body) -> bool:
        m = UNCLEAN_CHANGE.match(body)
        if m is None:
            return False
        new = {name: after for name, _before, after in _DIFF.findall(m["diff"])}

        def number(name):
            v = new.get(name)
            return int(v) if v is not None and _INT_TEXT.fullmatch(v) else None
        isr = _ints(new["isr"][1:-1]) if "isr" in new else None
        recovery = new.get("leaderRecoveryState")
        return self._row(head, KRAFT_ELECTION, node, topic=m["tp"], topic_id=m["tid"], partition=int(m["p"]),
                         leader=number("leader"), leader_epoch=number("leaderEpoch"),
                         partition_epoch=number("partitionEpoch"), isr=isr,
                         recovering=None if recovery is None else recovery == "RECOVERING", detail=ELECTED_UNCLEAN)

    def _setting(self, head, node, body) -> bool:
        m = NEW_LEADER.match(body)
        if m is None:
            return False
        tid, p, leader = m["tid"], int(m["p"]), int(m["leader"])
        topic = self._topic_names.get(tid)
        elr = replicas = None
        reg = _REGISTRATION.match(body, m.start("reg")) if m["reg"] is not None else None
        before = self._registration(head, node, topic, tid, p, reg.groups()) if reg is not None else None
        if before is not None:
            replicas, elr = before
            if elr is not None:
                elr = tuple(b for b in elr if b != leader)
        how = ELECTED_FROM_ELR if m["how"] == "ELR" else ELECTED_UNCLEAN
        return self._row(head, KRAFT_ELECTION, node, topic=topic, topic_id=tid, partition=p, leader=leader,
                         isr=(leader,), replicas=replicas, elr=elr, detail=how)

    def _fencing(self, head, node, body) -> bool:
        m = FENCING.match(body)
        return m is not None and self._row(head, KRAFT_BROKER_FENCED, node, broker=int(m["b"]), epoch=int(m["epoch"]))

    def _the(self, head, node, body) -> bool:
        m = UNFENCE_GRANTED.match(body)
        if m is not None:
            return self._row(head, KRAFT_UNFENCE_GRANTED, node, broker=int(m["b"]))
        return self._shutdown(head, node, body)

    def _shutdown(self, head, node, body) -> bool:
        m = SHUTDOWN_GRANTED.match(body)
        if m is None:
            return False
        broker = m["b"] if m["b"] is not None else m["b2"]
        detail = "immediate" if m["how"] == "an immediate" else "controlled"
        return self._row(head, KRAFT_SHUTDOWN_GRANTED, node, broker=int(broker), detail=detail)

    def _duplicate(self, head, node, body) -> bool:
        m = DUPLICATE_REGISTRATION.match(body)
        return m is not None and self._row(head, KRAFT_DUPLICATE_REGISTRATION, node, detail=m["msg"])

    def _epoch(self, head, node, body) -> bool:
        m = NEW_EPOCH.match(body)
        if m is None:
            return False
        leader = int(m["leader"]) if m["leader"] is not None else -1
        return self._row(head, KRAFT_RAFT_EPOCH, node, leader=leader, epoch=int(m["epoch"]))

    def _activated(self, head, node, body) -> bool:
        m = ACTIVATED.match(body)
        return m is not None and self._row(head, KRAFT_ACTIVATED, node, leader=node, epoch=int(m["epoch"]))

    def _renouncing(self, head, node, body) -> bool:
        m = RENOUNCING.match(body)
        if m is None:
            return False
        leader = int(m["leader"]) if m["leader"] is not None else -1
        # The epoch it led; the new epoch and its leader are a Raft epoch row of their own.
        self._row(head, KRAFT_RENOUNCED, node, epoch=int(m["was"]), detail="metadata log event")
        return self._row(head, KRAFT_RAFT_EPOCH, node, leader=leader, epoch=int(m["epoch"]))

    def _started(self, head, node, body) -> bool:
        m = CONTROLLER_STARTED.match(body)
        return m is not None and self._row(head, KRAFT_CONTROLLER_STARTED, node, detail=m["cluster"])

    def _snapshot(self, head, node, body) -> bool:
        return SNAPSHOT_LOADING.match(body) is not None and self._row(head, KRAFT_SNAPSHOT_LOADING, node)


# A message's first word (``audit.kafka_line_patterns.dispatch_key``) -> the method reading it.
_HANDLERS = {key: getattr(KraftControllerLines, "_" + what) for key, what in _BY_KEY.items()}
