"""The KRaft broker's meaning of its ``state.change.logger`` lines (Kafka 3.3 to 4.x): lines in, KRaft rows out.

A KRaft broker applies each metadata delta to its partitions (``ReplicaManager.applyDelta``) and logs,
per partition it hosts (``kafka.cluster.Partition``)::

    [Broker id=1] Transitioning 52 partition(s) to local leaders.
    [Broker id=1] Creating new partition t-0 with topic id U.
    [Broker id=1] Leader t-0 with topic id Some(U) starts at leader epoch 50 from offset 0 with partition
        epoch 50, high watermark 0, ISR [1], adding replicas [] and removing replicas [] . Previous leader
        Some(1) and previous leader epoch was 48.
    [Broker id=3] Follower t-1 starts at leader epoch 89 from offset 0 with partition epoch 90 and high
        watermark 0. Current leader is -1. Previous leader Some(-1) and previous leader epoch was 89.

Rows: ``kraft_partition_created`` (the topic id of a partition new on this broker: a new id is a new
topic of the same name), ``kraft_leader`` (leader = the broker itself, leader and partition epochs, ISR)
and ``kraft_follower`` (the current leader, -1 for none, and the epochs). The Follower line prints no
topic id: the row takes the one the broker last named for the partition. What the lines print as the
*previous* leader and leader epoch is not read: from Kafka 3.6 on (KAFKA-15020 era) the Follower line
prints the new values there. ZooKeeper-mode brokers of 3.x print the same Leader/Follower lines;
:class:`audit.kafka_log_reader.KafkaLogReader` keeps these rows for KRaft-era files only.
"""
from __future__ import annotations

import re

from audit.kafka_line_patterns import INTS as _INTS
from audit.kraft_rows import INT_TUPLES, KRAFT_FOLLOWER, KRAFT_LEADER, KRAFT_PARTITION_CREATED, KraftRow, int_tuple

_TP = r"(?P<tp>\S+)-(?P<p>\d+)"
LEADER = re.compile(
    rf"Leader {_TP}(?: with topic id (?:Some\((?P<tid>[^)]*)\)|None|(?P<tid2>[\w-]+)))? starts at leader epoch "
    r"(?P<le>-?\d+) from offset -?\d+ with partition epoch (?P<pe>-?\d+), high watermark -?\d+, ISR \[(?P<isr>[-\d, ]*)\]")
_PREVIOUS = "revious leader epoch was "     # "... Previous leader epoch was 6." / "... and previous leader epoch was 6."
_PREVIOUS_EPOCH = re.compile(r"-?\d+").match
FOLLOWER = re.compile(
    rf"Follower {_TP} starts at leader epoch (?P<le>-?\d+) from offset -?\d+ with partition epoch (?P<pe>-?\d+) "
    r"and high watermark -?\d+\. Current leader is (?P<leader>-?\d+)")
SKIPPED = re.compile(
    rf"Skipped the become-(?P<role>leader|follower) state change for {_TP} with topic id (?:Some\((?P<tid>[^)]*)\)|None) "
    r"and partition state LeaderAndIsrPartitionState\(.*?, leader=(?P<leader>-?\d+), leaderEpoch=(?P<le>-?\d+), "
    r"isr=\[(?P<isr>[-\d, ]*)\], partitionEpoch=(?P<pe>-?\d+), replicas=\[(?P<replicas>[-\d, ]*)\]")
CREATING = re.compile(rf"Creating new partition {_TP} with topic id (?P<tid>[\w-]+)\.?$")
# Understood, no row: the batch heads and the fetcher bookkeeping around them.
KNOWN = re.compile(
    r"Transitioning \d+ partition\(s\) to local |Skipped the become-(?:leader|follower) state change |"
    r"(?:Stopped|Started) fetchers as part of |Stopped fetchers as part of controlled shutdown ")
_LEADER, _FOLLOWER, _PREVIOUS_LEN = LEADER.match, FOLLOWER.match, len(_PREVIOUS)
KEYS = frozenset({"leader", "follower", "creating", "transitioning", "skipped", "stopped", "started"})


_new = tuple.__new__


def _row(head, kind: str, node: int, *rest) -> KraftRow:
    h = head()
    return _new(KraftRow, (h[0], h[1], h[2], h[3], kind, node, h[4], *rest, None, None))


_ints = int_tuple


class KraftBrokerLines:
    """Reads one run's broker state-change lines; rows go to ``out``."""
    __slots__ = ("out", "_topic_ids")

    def __init__(self, out: list):
        self.out = out
        self._topic_ids: dict[tuple[int, str, int], str] = {}   # (broker, topic, partition) -> last topic id

    def line(self, head, node: int, key: str, body: str) -> bool | None:
        """Rows of one line: True when it made rows, False when it is known and makes none, None when not known.
        ``head()`` gives the row's (run_id, source, position, seq) and ``time_ms`` (asked only for a row)."""
        # The two lines of nearly every partition a broker hosts are read inline, their rows made without calls.
        if key == "leader":
            m = _LEADER(body)
            if m is None:
                return None
            topic, p, tid, tid2, le, pe, isr = m.groups()        # LEADER's groups
            p = _INTS[p]
            if tid is None:
                tid = tid2
            if tid == "" or tid == "None":
                tid = None
            if tid is not None:
                self._topic_ids[(node, topic, p)] = tid
            else:
                tid = self._topic_ids.get((node, topic, p))
            # The Leader line prints its partition's previous leader epoch before changing it (unlike the
            # Follower line of 3.6+): kept as ``epoch``, it tells a gap the file itself does not show.
            at = body.rfind(_PREVIOUS)
            prev = _PREVIOUS_EPOCH(body, at + _PREVIOUS_LEN) if at > 0 else None
            h = head()
            self.out.append(_new(KraftRow, (h[0], h[1], h[2], h[3], KRAFT_LEADER, node, h[4], topic, tid, p, -1, node,
                                            _INTS[le], _INTS[pe], INT_TUPLES.get(isr) or _ints(isr), None, None, None,
                                            None if prev is None else _INTS[prev.group()], None, None, None)))
            return True
        if key == "follower":
            m = _FOLLOWER(body)
            if m is None:
                return None
            topic, p, le, pe, leader = m.groups()               # FOLLOWER's groups
            p = _INTS[p]
            h = head()
            self.out.append(_new(KraftRow, (h[0], h[1], h[2], h[3], KRAFT_FOLLOWER, node, h[4], topic,
                                            self._topic_ids.get((node, topic, p)), p, -1, _INTS[leader], _INTS[le],
                                            _INTS[pe], None, None, None, None, None, None, None, None)))
            return True
        if key == "creating":
            m = CREATING.match(body)
            if m is None:
                return None
            topic, p, tid = m["tp"], int(m["p"]), m["tid"]
            self._topic_ids[(node, topic, p)] = tid
            self.out.append(_row(head, KRAFT_PARTITION_CREATED, node, topic, tid, p, -1, None,
                                     None, None, None, None, None, None, None, None))
            return True
        if key == "skipped":
            m = SKIPPED.match(body)
            if m is not None:   # the partition state the broker already had: a view of it all the same
                topic, p, tid = m["tp"], int(m["p"]), m["tid"] or None
                if tid is not None:
                    self._topic_ids[(node, topic, p)] = tid
                kind = KRAFT_LEADER if m["role"] == "leader" else KRAFT_FOLLOWER
                self.out.append(_row(head, kind, node, topic, tid, p, -1, int(m["leader"]),
                                         int(m["le"]), int(m["pe"]), _ints(m["isr"]), _ints(m["replicas"]), None,
                                         None, None, "skipped"))
                return True
        return False if KNOWN.match(body) is not None else None
