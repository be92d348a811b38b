"""The decoded KRaft metadata log: ``kafka-dump-log.sh --cluster-metadata-decoder`` output, folded into KRaft rows.

A KRaft cluster's metadata is the log of the ``__cluster_metadata`` partition (segments, and ``.checkpoint``
snapshots). ``kafka-dump-log.sh --cluster-metadata-decoder --files ...`` prints it as text::

    Dumping /var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 ... position: 0 CreateTime: 1790509878206 size: 143 ...
    | offset: 0 CreateTime: 1790509878206 keySize: -1 valueSize: 27 sequence: -1 headerKeys: [] payload:
        {"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"ywkgJzfISRGP0UN2q1Y88A"}}

Each record line's ``payload`` is read as JSON and folded as the controllers and brokers replay it
(``ReplicationControlManager.replay``, ``PartitionRegistration.merge``): a ``PARTITION_RECORD`` is a
partition's whole state; a ``PARTITION_CHANGE_RECORD`` carries only the fields that change (a field
absent or null, ``leader`` -2, ``leaderRecoveryState`` -1 mean "unchanged"), raises the partition epoch
by one, and raises the leader epoch by one when it names a leader; ``REMOVE_TOPIC_RECORD`` drops the
topic's partitions. Every fold is a ``kraft_registration`` row of node ``METADATA_LOG`` (the state after
the record), so the KRaft checks of :mod:`audit.checks` apply; an election from the eligible leader
replicas (the new leader was in the ELR, not in the ISR) or an unclean one (the recovery state turns
RECOVERING) is a ``kraft_election`` row too. Broker registrations (``REGISTER_BROKER_RECORD``,
``BROKER_REGISTRATION_CHANGE_RECORD``, the ``FENCE_``/``UNFENCE_``/``UNREGISTER_BROKER_RECORD`` of 3.0-3.2)
become broker rows with their fencing, for the metadata log's own check: a fenced broker leads nothing
and joins no ISR until it is unfenced.

A change to a partition the dump has not shown (a segment read without the snapshot or the segments
before it) cannot be folded: it is counted, and the reading says so. ``position`` is the line of the
record in the dump; its batch's byte position in the segment is the ``position:`` of the batch line
above it.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable

from audit.kafka_log_reader import KafkaLogReading, LineCounts
from audit.kraft_rows import (
    CONTROLLED_SHUTDOWN, ELECTED_FROM_ELR, ELECTED_UNCLEAN, FENCED, KRAFT_BROKER_CHANGED, KRAFT_BROKER_REGISTERED,
    KRAFT_ELECTION, KRAFT_REGISTRATION, KRAFT_TOPIC_CREATED, KRAFT_TOPIC_REMOVED, METADATA_LOG, REGISTERED_INCARNATION,
    REGISTERED_INITIAL, UNFENCED, UNREGISTERED, KraftRow,
)

ERA_KRAFT_METADATA = "kraft-metadata-log"
NO_LEADER_CHANGE = -2
RECOVERING = 1
RECORD = re.compile(r"\| offset: (?P<offset>\d+)(?: CreateTime: (?P<time>-?\d+))?.*? payload: (?P<payload>\{.*\})\s*$")
# Lines of the dump that carry no record of the audit's interest.
KNOWN = re.compile(
    r"Dumping |Log starting offset: |Starting offset: |Snapshot end offset: |baseOffset: \d+ |\| offset: \d+ |"
    r"Non-consecutive offsets |\s+-?\d+ is followed by |Found \d+ invalid bytes |Starting offset|"
    r"(?:Skipping|Found) ")
_SAMPLE = 10


def is_metadata_dump(lines: Iterable[str]) -> bool:
    """Whether the first lines given are ``kafka-dump-log.sh --cluster-metadata-decoder`` output."""
    for text in lines:
        if text.startswith("Dumping ") and "__cluster_metadata" in text:
            return True
        if text.startswith("| offset: ") and 'payload: {"type":' in text:
            return True
    return False


def _ids(value) -> tuple[int, ...] | None:
    return None if value is None else tuple(value)


class MetadataDumpReader:
    """Folds the records of one dump (or of several read in order: a snapshot, then segments) into KRaft rows."""

    def __init__(self, path: str, *, run_id: str, sources: tuple[str, ...] = ()):
        self.path = path
        self.run_id = run_id
        self.sources = sources
        self.counts = LineCounts()
        self.sample: list[tuple[int, str]] = []
        self.rows: list[KraftRow] = []
        self._partitions: dict[tuple[str, int], dict] = {}   # (topic id, partition) -> registration
        self._names: dict[str, str] = {}                      # topic id -> name
        self._brokers: set[int] = set()                       # brokers registered so far
        self._unfolded = 0                                    # changes to partitions not shown before
        self._records = 0
        self._seq = 0

    def read(self, source: str, lines: Iterable[str]) -> None:
        """Read one file's lines (``source`` names it in the rows)."""
        counts = self.counts
        for no, text in enumerate(lines, 1):
            self._seq += 1
            if not text.strip() or text.startswith("#"):
                counts.header += 1
                continue
            m = RECORD.match(text) if text.startswith("| offset: ") else None
            if m is not None:
                made = self._record(source, no, m)
                if made is None:
                    self._not_understood(no, text)
                elif made:
                    counts.rows += 1
                else:
                    counts.other += 1
            elif KNOWN.match(text) is not None and " payload: {" not in text:   # a control record, a batch ...
                counts.other += 1
            else:
                self._not_understood(no, text)

    def reading(self) -> KafkaLogReading:
        notes = [f"KRaft metadata log (kafka-dump-log --cluster-metadata-decoder): {self._records} records, "
                 f"{len(self.rows)} KRaft rows (audited by the KRaft checks)"]
        if self._unfolded:
            notes.append(f"{self._unfolded} partition change(s) to partitions the dump had not shown (no snapshot or "
                         f"earlier segment before them): not folded")
        return KafkaLogReading(
            path=self.path, run_id=self.run_id, rows=[], counts=self.counts, not_understood_sample=list(self.sample),
            era=ERA_KRAFT_METADATA, kraft=True, is_log4j=False, notes=tuple(notes),
            layouts={"kafka-dump-log": self._records} if self._records else {}, sources=tuple(self.sources),
            kraft_rows=list(self.rows))

    def _not_understood(self, no: int, text: str) -> None:
        self.counts.not_understood += 1
        if len(self.sample) < _SAMPLE:
            self.sample.append((no, text))

    # --- records -------------------------------------------------------------------------------------------
    def _record(self, source: str, no: int, m) -> bool | None:
        try:
            payload = json.loads(m["payload"])
            kind, data = payload["type"], payload["data"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(data, dict):
            return None
        self._records += 1
        time = int(m["time"]) if m["time"] is not None else None
        head = (self.run_id, source, no, self._seq, time)
        before = len(self.rows)
        try:
            handler = _RECORDS.get(kind)
            if handler is not None:
                handler(self, head, data)
        except (KeyError, TypeError, ValueError):
            return None                                    # a record of a known type without its fields
        return len(self.rows) > before

    def _row(self, head, kind, *, topic=None, topic_id=None, partition=-1, broker=-1, leader=None, leader_epoch=None,
             partition_epoch=None, isr=None, replicas=None, elr=None, recovering=None, epoch=None, detail=None,
             adding=None, removing=None) -> None:
        self.rows.append(KraftRow(head[0], head[1], head[2], head[3], kind, METADATA_LOG, head[4], topic, topic_id,
                                  partition, broker, leader, leader_epoch, partition_epoch, isr, replicas, elr,
                                  recovering, epoch, detail, adding, removing))

    def _registration_row(self, head, tid: str, p: int, reg: dict) -> None:
        self._row(head, KRAFT_REGISTRATION, topic=self._names.get(tid), topic_id=tid, partition=p,
                  leader=reg["leader"], leader_epoch=reg["leaderEpoch"], partition_epoch=reg["partitionEpoch"],
                  isr=reg["isr"], replicas=reg["replicas"], elr=reg["elr"],
                  recovering=reg["leaderRecoveryState"] == RECOVERING, adding=reg["addingReplicas"],
                  removing=reg["removingReplicas"])

    def _topic(self, head, data) -> None:
        self._names[data["topicId"]] = data["name"]
        self._row(head, KRAFT_TOPIC_CREATED, topic=data["name"], topic_id=data["topicId"])

    def _remove_topic(self, head, data) -> None:
        tid = data["topicId"]
        for key in [k for k in self._partitions if k[0] == tid]:
            del self._partitions[key]
        self._row(head, KRAFT_TOPIC_REMOVED, topic=self._names.pop(tid, None), topic_id=tid)

    def _partition(self, head, data) -> None:
        tid, p = data["topicId"], int(data["partitionId"])
        reg = {"replicas": _ids(data["replicas"]), "isr": _ids(data["isr"]),
               "removingReplicas": _ids(data.get("removingReplicas")) or (),
               "addingReplicas": _ids(data.get("addingReplicas")) or (), "leader": int(data["leader"]),
               "leaderRecoveryState": int(data.get("leaderRecoveryState", 0)),
               "leaderEpoch": int(data["leaderEpoch"]), "partitionEpoch": int(data["partitionEpoch"]),
               "elr": _ids(data.get("eligibleLeaderReplicas")) or ()}
        self._partitions[(tid, p)] = reg
        self._registration_row(head, tid, p, reg)

    def _partition_change(self, head, data) -> None:
        tid, p = data["topicId"], int(data["partitionId"])
        prev = self._partitions.get((tid, p))
        if prev is None:
            self._unfolded += 1
            return
        new = dict(prev)
        for field, name in (("isr", "isr"), ("replicas", "replicas"), ("removingReplicas", "removingReplicas"),
                            ("addingReplicas", "addingReplicas"), ("eligibleLeaderReplicas", "elr")):
            if data.get(field) is not None:
                new[name] = tuple(data[field])
        leader = int(data.get("leader", NO_LEADER_CHANGE))
        if leader != NO_LEADER_CHANGE:
            new["leader"], new["leaderEpoch"] = leader, prev["leaderEpoch"] + 1
        recovery = int(data.get("leaderRecoveryState", -1))
        if recovery != -1:
            new["leaderRecoveryState"] = recovery
        new["partitionEpoch"] = prev["partitionEpoch"] + 1
        self._partitions[(tid, p)] = new
        self._registration_row(head, tid, p, new)
        if leader >= 0 and leader != prev["leader"]:
            how = None
            if new["leaderRecoveryState"] == RECOVERING and prev["leaderRecoveryState"] != RECOVERING:
                how = ELECTED_UNCLEAN
            elif leader in prev["elr"] and leader not in prev["isr"]:
                how = ELECTED_FROM_ELR
            if how is not None:
                self._row(head, KRAFT_ELECTION, topic=self._names.get(tid), topic_id=tid, partition=p, leader=leader,
                          leader_epoch=new["leaderEpoch"], partition_epoch=new["partitionEpoch"], isr=new["isr"],
                          replicas=new["replicas"], elr=new["elr"], recovering=how == ELECTED_UNCLEAN, detail=how)

    def _register_broker(self, head, data) -> None:
        broker = int(data["brokerId"])
        detail = REGISTERED_INCARNATION if broker in self._brokers else REGISTERED_INITIAL
        self._brokers.add(broker)
        epoch = int(data.get("brokerEpoch", -1))
        self._row(head, KRAFT_BROKER_REGISTERED, broker=broker, epoch=epoch, detail=detail)
        # A registration starts fenced unless it says otherwise (the field's default is true).
        self._row(head, KRAFT_BROKER_CHANGED, broker=broker, epoch=epoch,
                  detail=FENCED if data.get("fenced", True) else UNFENCED)

    def _broker_change(self, head, data) -> None:
        fenced, shutdown = int(data.get("fenced", 0)), int(data.get("inControlledShutdown", 0))
        detail = FENCED if fenced == 1 else UNFENCED if fenced == -1 else CONTROLLED_SHUTDOWN if shutdown == 1 else None
        self._row(head, KRAFT_BROKER_CHANGED, broker=int(data["brokerId"]), epoch=int(data.get("brokerEpoch", -1)),
                  detail=detail)



def _fencing_record(detail: str):
    """The reader of a 3.0-3.2 ``FENCE_``/``UNFENCE_``/``UNREGISTER_BROKER_RECORD`` ({"id": N, "epoch": E})."""
    def record(self: MetadataDumpReader, head, data) -> None:
        broker = int(data["id"] if "id" in data else data["brokerId"])
        epoch = int(data.get("epoch", data.get("brokerEpoch", -1)))
        self._row(head, KRAFT_BROKER_CHANGED, broker=broker, epoch=epoch, detail=detail)
    return record


_RECORDS = {
    "TOPIC_RECORD": MetadataDumpReader._topic,
    "REMOVE_TOPIC_RECORD": MetadataDumpReader._remove_topic,
    "PARTITION_RECORD": MetadataDumpReader._partition,
    "PARTITION_CHANGE_RECORD": MetadataDumpReader._partition_change,
    "REGISTER_BROKER_RECORD": MetadataDumpReader._register_broker,
    "BROKER_REGISTRATION_CHANGE_RECORD": MetadataDumpReader._broker_change,
    "FENCE_BROKER_RECORD": _fencing_record(FENCED),
    "UNFENCE_BROKER_RECORD": _fencing_record(UNFENCED),
    "UNREGISTER_BROKER_RECORD": _fencing_record(UNREGISTERED),
}
