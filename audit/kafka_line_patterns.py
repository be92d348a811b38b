"""The shapes of Kafka's log lines: compiled regexes, small parsers, and the catalogue of known lines.

This module knows the *syntax* of the lines Kafka (0.8 to 4.x) writes to ``state-change.log``
and ``controller.log`` once ``audit.log_layouts`` has taken the layout of the line off — the
``[Controller id=N epoch=E]`` style prefixes, the embedded ``Controller N epoch E`` of 0.8–0.11, partitions printed as
``[topic,0]`` or ``topic-0``, Scala ``Set(..)``/``HashSet(..)``/``List(..)``, and every printed
form of a partition's leadership (``(Leader:1,ISR:1,2,...)``, ``LeaderAndIsr(...)`` of 1.1, 3.2,
3.3 and 3.5, the JSON of 0.8–1.0, the request ``PartitionState(...)`` forms) — and lists the
messages that are understood but make no audit row. A message missing from that catalogue shows
up as *not understood* rather than being silently accepted. What a line means for the audit is
decided by ``audit.kafka_log_reader``.
"""
from __future__ import annotations

import re

from statemachines.states import PartitionState, ReplicaState

# The layout of a line (timestamp, level, logger, continuation lines) is audit.log_layouts' business.
EXCEPTION_HEAD = re.compile(
    r"(?:Caused by: )?(?P<cls>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)(?::\s?(?P<msg>.*))?\s*$")

# --- prefixes --------------------------------------------------------------------------------
# A bracketed ident opens most messages: "[Controller id=1 epoch=7] ", "[Controller 1]: ",
# "[Topic Deletion Manager 3], ", "[OfflinePartitionLeaderSelector]: ".
IDENT = re.compile(r"\[(?P<ident>[^\[\]]*)\][:,]? ?")
IDENT_CONTROLLER = re.compile(r"Controller id=(?P<id>\d+)(?: epoch=(?P<epoch>\d+))?$")
IDENT_BROKER = re.compile(r"Broker id=(?P<id>\d+)$")
IDENT_KRAFT = re.compile(r"QuorumController id=(?P<id>\d+)$")
IDENT_OLD_CONTROLLER = re.compile(r"Controller (?P<id>\d+)$")  # 0.8–0.11 KafkaController
# Controller components of every era: "Partition state machine on Controller 1",
# "PartitionStateMachine controllerId=1", "Topic Deletion Manager 3", "Controller-1-to-broker-2-send-thread".
IDENT_COMPONENT_ID = re.compile(r"(?:[Cc]ontroller(?:Id=| |-)|Manager |on )(?P<id>\d+)")
# 0.8–0.11 embed the controller in the message; 1.1+ failure lines repeat it after the prefix.
EMBEDDED_CONTROLLER = re.compile(r"Controller (?P<id>\d+) epoch (?P<epoch>\d+) ")

# --- identifiers -----------------------------------------------------------------------------
# ``[topic,0]`` (TopicAndPartition, 0.8–0.11) or ``topic-0`` (TopicPartition, 1.0+); a topic may
# itself contain '-' and digits, the partition is what follows the last '-'.
TP = r"(?:\[[^\[\],\s]+,\d+\]|\S+-\d+)"
_TP_PARTS = re.compile(r"\[(?P<t1>[^\[\],\s]+),(?P<p1>\d+)\]$|(?P<t2>\S+)-(?P<p2>\d+)$")

REPLICA_STATE_BYTES = {s.value: s.byte for s in ReplicaState}
PARTITION_STATE_BYTES = {s.value: s.byte for s in PartitionState}
# Kafka 0.8.0 printed short partition state names in some lines ("from NotExists to New").
SHORT_PARTITION_STATE_BYTES = {"NotExists": PartitionState.NonExistentPartition.byte,
                               "New": PartitionState.NewPartition.byte,
                               "Online": PartitionState.OnlinePartition.byte,
                               "Offline": PartitionState.OfflinePartition.byte}
ALL_PARTITION_STATE_BYTES = {**PARTITION_STATE_BYTES, **SHORT_PARTITION_STATE_BYTES}


def parse_tp(token: str) -> tuple[str, int] | None:
    """``[t,0]`` or ``t-0`` as (topic, partition)."""
    m = _TP_PARTS.match(token)
    if m is None:
        return None
    if m.group("t1") is not None:
        return m.group("t1"), int(m.group("p1"))
    return m.group("t2"), int(m.group("p2"))


_INT = re.compile(r"-?\d+")


class _Ints(dict):
    """Decimal texts -> ints, ``int(text)`` for a text not in the table: a lookup costs half of ``int()``."""
    __slots__ = ()

    def __missing__(self, text: str) -> int:
        return int(text)


INTS = _Ints({str(i): i for i in range(-2, 8192)})   # INTS[text] == int(text) for any decimal text
_INTS_SEEN: dict[str, tuple[int, ...]] = {}   # text -> its integers: a file prints the same ISRs over and over


def parse_ints(text: str) -> list[int]:
    """Every integer in ``text``: ``1,2,3`` / ``List(1, 2)`` / ``[1, 2]`` / ``Set(1, 2)`` (a new list each call)."""
    ints = _INTS_SEEN.get(text)
    if ints is None:
        ints = tuple(map(int, _INT.findall(text)))
        if len(_INTS_SEEN) >= 4096:
            _INTS_SEEN.clear()
        _INTS_SEEN[text] = ints
    return list(ints)


# --- leadership as printed -------------------------------------------------------------------
# Each printed form is recognised by how it starts, then read with one anchored regex.
_LISR = re.compile(                                   # (Leader:1,ISR:1,2,[LeaderRecoveryState:..,]LeaderEpoch:5,..)
    r"\(Leader:(?P<leader>-?\d+),ISR:(?P<isr>[-\d,]*),(?:LeaderRecoveryState:\w+,)?LeaderEpoch:(?P<epoch>-?\d+)")
_LAI = re.compile(                                    # LeaderAndIsr(...) of 1.1–3.4 and of 3.5+
    r"LeaderAndIsr\(leader=(?P<leader>-?\d+), leaderEpoch=(?P<epoch>-?\d+), "
    r"(?:isr=List\((?P<isr>[^)]*)\)|isrWithBrokerEpoch=List\((?P<isr_be>.*?)\), leaderRecoveryState=)")
_REQUEST_STATE = re.compile(                          # PartitionState(..) 1.0–2.3, *PartitionState(..) 2.4+
    r", leader=(?P<leader>-?\d+), leaderEpoch=(?P<epoch>-?\d+), isr=(?:\[(?P<isr>[^\]]*)\]|(?P<isr_bare>[-\d,]*),)")
_JSON_LEADER = re.compile(r'"leader":(-?\d+)')
_JSON_EPOCH = re.compile(r'"leader_epoch":(-?\d+)')
_JSON_ISR = re.compile(r'"isr":\[([^\]]*)\]')
_BROKER_ID = re.compile(r"brokerId=(-?\d+)")


class Leadership(tuple):
    """(leader, leader_epoch, isr) as printed; the ISR may be None when not printed."""
    __slots__ = ()

    def __new__(cls, leader, leader_epoch, isr):
        return tuple.__new__(cls, (leader, leader_epoch, isr))

    leader = property(lambda self: self[0])
    leader_epoch = property(lambda self: self[1])
    isr = property(lambda self: self[2])


def parse_leadership(text: str) -> Leadership | None:
    """Leader, leader epoch and ISR from any form Kafka printed them in; None if not one of them."""
    text = text.lstrip()
    if text.startswith("(Leader:"):
        m = _LISR.match(text)
        return m and Leadership(int(m["leader"]), int(m["epoch"]), parse_ints(m["isr"]))
    if text.startswith("LeaderAndIsr("):
        m = _LAI.match(text)
        if m is None:
            return None
        isr = parse_ints(m["isr"]) if m["isr"] is not None else [int(b) for b in _BROKER_ID.findall(m["isr_be"])]
        return Leadership(int(m["leader"]), int(m["epoch"]), isr)
    if text.startswith("{"):
        leader, epoch, isr = _JSON_LEADER.search(text), _JSON_EPOCH.search(text), _JSON_ISR.search(text)
        return leader and Leadership(int(leader[1]), int(epoch[1]) if epoch else None,
                                     parse_ints(isr[1]) if isr else None)
    if text.startswith(("PartitionState(", "LeaderAndIsrPartitionState(", "UpdateMetadataPartitionState(")):
        m = _REQUEST_STATE.search(text)
        if m is None:
            return None
        isr = m["isr"] if m["isr"] is not None else m["isr_bare"]
        return Leadership(int(m["leader"]), int(m["epoch"]), parse_ints(isr))
    return None


_LEADERSHIPS: dict[str, tuple] = {}


def leadership(text: str) -> tuple | None:
    """``(leader, leader_epoch, isr, version hint)`` of a printed leadership (:func:`parse_leadership`, with the
    ISR as a tuple or None, and :func:`leadership_version_hint`); None if not one. Remembered: a file prints
    the same states over and over."""
    seen = _LEADERSHIPS.get(text)
    if seen is None:
        lead = parse_leadership(text)
        seen = None if lead is None else (lead[0], lead[1], None if lead[2] is None else tuple(lead[2]),
                                          leadership_version_hint(text))
        if len(_LEADERSHIPS) >= 4096:
            _LEADERSHIPS.clear()
        _LEADERSHIPS[text] = seen or ()
    return seen or None


def leadership_version_hint(text: str) -> str | None:
    """Which Kafka versions print a LeaderAndIsr this way (see the reference, section 8.2)."""
    if "isrWithBrokerEpoch=" in text:
        return "3.5+"
    if "leaderRecoveryState=" in text:
        return "3.3-3.4" if "partitionEpoch=" in text else "3.2"
    if text.startswith("LeaderAndIsr(") and "zkVersion=" in text:
        return "1.1-3.1"
    if "LeaderRecoveryState:" in text:
        return "3.2+"
    return None


# --- the templates that become rows (matched against the message body) -----------------------
# The body is the message after the ident prefix and after an embedded "Controller N epoch E ".
REPLICA_CHANGED = re.compile(
    rf"[Cc]hanged state of replica (?P<replica>-?\d+) for partition (?P<tp>{TP})"
    rf"(?: from (?P<frm>\w+))? to (?P<to>\w+)$")
PARTITION_CHANGED_STATE = re.compile(                 # to New (with replicas), Offline, NonExistent
    rf"[Cc]hanged partition (?P<tp>{TP}) state from (?P<frm>\w+) to (?P<to>\w+)"
    rf"(?: with assigned replicas (?P<replicas>[-\d,]*))?$")
PARTITION_CHANGED_LEADER = re.compile(                # 0.8–1.0 elections
    rf"[Cc]hanged partition (?P<tp>{TP}) from (?P<frm>\w+) to (?P<to>\w+) with leader (?P<leader>-?\d+)$")
PARTITION_CHANGED_WITH_STATE = re.compile(            # 1.1+ elections: "... with state LeaderAndIsr(...)"
    rf"[Cc]hanged partition (?P<tp>{TP}) from (?P<frm>\w+) to (?P<to>\w+) with state (?P<state>.+)$")
REPLICA_FAILED = re.compile(
    rf"[Ii]nitiated state change of replica (?P<replica>-?\d+) for partition (?P<tp>{TP})"
    rf"(?: from (?P<frm>\w+))? to (?P<to>\w+) failed$")
PARTITION_FAILED_OLD = re.compile(                    # 0.8–1.0
    rf"[Ii]nitiated state change for partition (?P<tp>{TP}) from (?P<frm>\w+) to (?P<to>\w+) failed$")
PARTITION_FAILED = re.compile(                        # 1.1+
    rf"failed to change state for partition (?P<tp>{TP}) from (?P<frm>\w+) to (?P<to>\w+)$")
ISR_REMOVED = re.compile(                             # 2.6+, INFO
    rf"Partition (?P<tp>{TP}) state changed to (?P<state>\(Leader:.*\)) after removing replica "
    rf"(?P<replica>-?\d+) from the ISR as part of transition to (?P<to>\w+)$")
NEW_LEADER_AND_ISR = re.compile(                      # 0.8–1.0 controller.log, ISR removal
    rf"New leader and ISR for partition (?P<tp>{TP}) is (?P<state>\{{.*\}})$")
SELECTED_OFFLINE_LEADER = re.compile(                 # 0.8–1.0 controller.log, OfflinePartitionLeaderSelector
    rf"Selected new leader and ISR (?P<state>\{{.*\}}) for offline partition (?P<tp>{TP})$")
UNCLEAN_WARNING = re.compile(                         # 0.8–1.0 controller.log, WARN
    rf"No broker in ISR is alive for (?P<tp>{TP})\. Elect leader (?P<leader>-?\d+) from live brokers "
    rf"(?P<live>[-\d,]*)\. There's potential data loss\.$")

ELECTED_OLD = re.compile(r"Controller (?P<id>\d+) incremented epoch to (?P<epoch>\d+)$")       # 0.8–0.11
ELECTED_1_0 = re.compile(r"(?:Incremented epoch to|Epoch incremented to) (?P<epoch>\d+)$")    # 1.0 / 1.1–2.0
ELECTED = re.compile(r"(?P<id>\d+) successfully elected as the controller\. Epoch incremented to "
                     r"(?P<epoch>\d+)")                                                        # 2.1+
ELECTED_LEADER = re.compile(r"(?P<id>\d+) successfully elected as leader$")   # 0.8–0.10 server.log
READY_TO_SERVE = re.compile(r"(?:Broker (?P<id>\d+) is r|R)eady to serve as the new controller with epoch "
                            r"(?P<epoch>\d+)$")
RESIGNED = re.compile(r"(?:Broker (?P<id>\d+) resigned as the controller|Resigned)$")
DELETION_STARTED = re.compile(r"Starting topic deletion for topics (?P<topics>.*)$")
DELETION_COMPLETED = re.compile(r"Deletion of topic (?P<topic>\S+) successfully completed$")

# Controller-side request lines carry the partition's leadership as the controller knows it:
# "Sending become-leader LeaderAndIsr request <state>[ with correlationId N] to broker B for partition <tp>",
# "Sending UpdateMetadata request <state> to brokers Set(..) for partition <tp>" (0.8–2.5, TRACE).
_REQUEST_HEADS = ("Sending become-leader LeaderAndIsr request ", "Sending become-follower LeaderAndIsr request ",
                  "sending become-leader LeaderAndIsr request ", "sending become-follower LeaderAndIsr request ",
                  "Sending UpdateMetadata request ", "sending UpdateMetadata request ")


def split_request_line(body: str) -> tuple[str, str] | None:
    """(state text, partition token) of a per-partition request line; None for other lines."""
    if not body.startswith(_REQUEST_HEADS):
        return None
    at = body.rfind(" for partition ")
    to = body.rfind(" to broker", 0, at)
    if at < 0 or to < 0:
        return None
    state = body[body.index(" request ") + 9:to]
    cut = state.find(" with correlationId ")
    return (state[:cut] if cut >= 0 else state), body[at + 15:]


LEADER_CACHE_UPDATED = re.compile(                    # 1.0 controller.log, after an election
    rf"After leader election, leader cache for (?P<tp>{TP}) is updated to (?P<state>\(Leader:.*\))$")
ISR_UPDATED = re.compile(                             # 2.7+ controller.log (DEBUG), an accepted AlterIsr
    rf"ISR for partition (?P<tp>{TP}) updated to \[(?P<isr>[-\d,]*)\] and zkVersion updated to \[-?\d+\]$")
INITIALIZING_LEADER_AND_ISR = re.compile(
    rf"Initializing leader and isr for partition (?P<tp>{TP}) to (?P<state>\(Leader:.*\))$")


# --- the catalogue of known lines that make no row ------------------------------------------
# Message bodies (after the ident prefix and any embedded "Controller N epoch E ") that the
# controller logs in the course of its work. Each pattern starts with a literal word (or
# "[Xx]word" or "\d+"), which is how lines are dispatched to it.
CONTROLLER_MESSAGES = (
    # life cycle and election
    r"Controller starting up", r"Controller startup complete", r"Controller shutdown complete",
    r"Controller resigning", r"Resigning$", r"Resigned$", r"Broker \d+ resigned as the controller",
    r"Starting become controller state transition", r"Broker \d+ starting become controller state transition",
    r"\d+ successfully elected as the controller$",
    r"Broker -?\d+ has been elected as the controller, so stopping the election process",
    r"Initialized controller epoch to \d+", r"Controller epoch listener fired with new epoch",
    r"Reading controller epoch from ZooKeeper", r"Incrementing controller epoch in ZooKeeper",
    r"Ready to serve as the new controller", r"Broker \d+ is ready to serve as the new controller",
    r"Registering \w+", r"De-registering \w+", r"Deleting isr change notifications",
    r"Deleting log dir event notifications", r"Initializing controller context",
    r"Initialized broker epochs cache", r"Updated broker epochs cache",
    r"Currently active brokers in the cluster", r"Currently shutting brokers in the cluster",
    r"Current list of topics in the cluster", r"Fetching topic deletions in progress",
    r"List of topics to be deleted", r"List of topics ineligible for deletion",
    r"Initializing topic deletion manager", r"Initializing manager with initial deletions",
    r"Sending update metadata request", r"[Ss]tarting the (?:controller|partition rebalance) scheduler",
    r"Creating FeatureZNode", r"Acquired new producerId block", r"Read current producerId block",
    r"There is no producerId block yet", r"preRegister called",
    # multi-line dumps whose logger is printed only after their last line
    r"KafkaConfig values:", r"ProducerConfig values:", r"ConsumerConfig values:", r"AdminClientConfig values:",
    # the state machines at work (the transitions themselves become rows)
    r"Initializing (?:replica|partition) state", r"Triggering (?:online|offline) (?:replica|partition) state changes",
    r"Started (?:replica|partition) state machine with initial state", r"Stopped (?:replica|partition) state machine",
    r"Invoking state change to \w+ for (?:partitions|replicas)", r"Live assigned replicas for partition",
    r"Initializing leader and isr for partition", r"After leader election, leader cache (?:for \S+ )?is updated to",
    r"[Ss]tarted leader election for partition", r"[Ee]lected leader -?\d+ for Offline partition",
    r"[Ee]ncountered error while electing leader for partition",
    r"[Ee]ncountered error during state change of partition",
    r"[Aa]borted leader election for partition", r"No broker in ISR is alive for .* Pick the leader from the alive",
    r"Some broker in ISR is alive for", r"Current leader -?\d+ for partition \S+ is not the preferred replica",
    r"All leaders =", r"Are all replicas for topic \S+ deleted",
    # preferred elections and the auto rebalance
    r"Partitions undergoing preferred replica election", r"Partitions that completed preferred replica election",
    r"Skipping preferred replica election", r"Resuming preferred replica election",
    r"Starting preferred replica leader election", r"Starting replica leader election",
    r"Processing automatic preferred replica leader election",
    r"[Cc]hecking need to trigger (?:auto leader balancing|partition rebalance)", r"[Tt]opics not in preferred replica",
    r"[Ll]eader imbalance ratio for broker", r"[Pp]referred replicas by broker",
    r"Partition \S+ completed preferred replica leader election",
    r"Partition \S+ failed to complete preferred replica leader election",
    # brokers coming and going
    r"Newly added brokers", r"New broker startup callback", r"Broker failure callback",
    r"Broker change listener fired", r"Register BrokerModifications handler",
    r"Unregister BrokerModifications handler",
    r"Removed \d+ from list of shutting down brokers", r"Shutting down broker \d+", r"All shutting down brokers",
    r"Live brokers", r"Updated leader epoch for partition",
    # ISR bookkeeping
    r"Removing replica -?\d+ from ISR", r"Retaining last ISR", r"Cannot remove replica -?\d+ from ISR",
    r"ISR for partition \S+ updated to", r"Updating ISRs for partitions", r"ISR change notification listener fired",
    r"Mark replicas .* on broker -?\d+ as offline",
    # topics and their deletion
    r"New topics: ", r"New topic creation callback", r"New partition creation callback", r"New partitions to be added",
    r"Topic change listener fired", r"Delete topics listener fired", r"Handling deletion for topics",
    r"Deletion of topic \S+ \(re\)started", r"Deletion started for replicas",
    r"Deletion successfully completed for replicas",
    r"Deletion for replicas", r"Delete topic callback invoked", r"Topic deletion callback for",
    r"Partition deletion callback for", r"Not retrying deletion of topic", r"Retrying delete topic for topic",
    r"Some replicas .* for topics scheduled for deletion",
    # reassignments
    r"Partitions being reassigned", r"Partitions already reassigned", r"Resuming reassignment of partitions",
    r"Removing partitions .* from the list of reassigned partitions", r"No more partitions need to be reassigned",
    # requests to brokers and their responses
    r"[Ss]ending (?:become-leader|become-follower) LeaderAndIsr request", r"[Ss]ending UpdateMetadata request",
    r"Sending LeaderAndIsr request to broker", r"Sending StopReplica request", r"[Ss]ent LeaderAndIsr request",
    r"Sending MetadataRequest to Brokers", r"[Rr]eceived response", r"Received error \w+ in \w+ response",
    r"The stop replica request \(delete = (?:true|false)\) sent to broker", r"Not sending request",
    r"Controller -?\d+ connected to", r"Controller -?\d+'s connection to broker",
    r"Controller -?\d+ trying to connect to broker",
    r"fails to send request", r"Starting\s*$", r"Stopped\s*$", r"Shutting down\s*$", r"Shutdown completed\s*$",
    r"shutdownInitiated latch count reached zero", r"Error while handling broker changes",
)

# Other components' lines (non-controller loggers) carry no controller state: the broker side,
# networking, the log manager, the ZooKeeper client... The 0.8–0.10 elector is the exception: it
# logs the controller election to server.log.
CONTROLLER_LOGGERS = ("kafka.controller", "state.change.logger")
ELECTOR_LOGGER = "kafka.server.ZookeeperLeaderElector"

# Layouts printing only the last part of a logger's name (``%c{1}``: "KafkaController", "logger" for
# state.change.logger): the full names of the loggers the audit tells apart, by their last part.
SHORT_LOGGER_NAMES = {
    **{name: "kafka.controller." + name for name in (
        "KafkaController", "ControllerChannelManager", "ControllerBrokerRequestBatch", "RequestSendThread",
        "ControllerEventManager", "ControllerEpochListener", "IsrChangeNotificationListener",
        "PartitionStateMachine", "ZkPartitionStateMachine", "ReplicaStateMachine", "ZkReplicaStateMachine",
        "TopicDeletionManager", "OfflinePartitionLeaderSelector", "PreferredReplicaPartitionLeaderSelector",
        "ReassignedPartitionLeaderSelector", "ControlledShutdownLeaderSelector", "NoOpLeaderSelector",
        "KafkaControllerZkUtils")},
    "controller": "kafka.controller", "logger": "state.change.logger",
    "ZookeeperLeaderElector": "kafka.server.ZookeeperLeaderElector",
    **{name: "org.apache.kafka.controller." + name for name in (
        "QuorumController", "ReplicationControlManager", "ClusterControlManager", "FeatureControlManager",
        "ConfigurationControlManager", "AclControlManager", "ProducerIdControlManager", "OffsetControlManager",
        "PeriodicTaskControlManager", "BrokerHeartbeatManager", "PartitionChangeBuilder",
        "EventPerformanceMonitor", "ScramControlManager", "DelegationTokenControlManager")},
    **{name: "org.apache.kafka.raft." + name for name in (
        "KafkaRaftClient", "QuorumState", "LeaderState", "FollowerState", "CandidateState")},
}


def full_logger_name(logger: str | None) -> str | None:
    """A logger's full name from its last part (``%c{1}``), when it is one the audit tells apart."""
    if logger is None or "." in logger:
        return logger
    return SHORT_LOGGER_NAMES.get(logger.split("$", 1)[0], logger)


# KRaft: the QuorumController and the Raft layer, and the broker-side lines only KRaft writes.
KRAFT_LOGGER_PREFIXES = (
    "org.apache.kafka.controller.", "org.apache.kafka.raft.", "kafka.raft.", "org.apache.kafka.metadata.",
    "org.apache.kafka.image.", "kafka.server.metadata.", "kafka.server.ControllerServer",
    "kafka.server.BrokerLifecycleManager", "kafka.server.ControllerRegistrationManager",
)
KRAFT_STATE_CHANGE = re.compile(
    r"Creating new partition \S+ with topic id |Transitioning \d+ partition\(s\) to local |"
    r"Stopped fetchers as part of controlled shutdown for \d+ partitions")

# Lines that exist only from Kafka 2.6 on (INFO-level state-change logging, KAFKA-8470; the
# broker-side summaries of the same change; the feature znode of 2.7).
SINCE_2_6 = re.compile(
    r"Partition \S+ state changed to \(Leader:|Sending LeaderAndIsr request to broker \d+ with |"
    r"Sending UpdateMetadata request to brokers .* for \d+ partitions$|Sending StopReplica request (?:\(delete|for )|"
    r"Handling (?:LeaderAndIsr|StopReplica) request correlationId \d+ from controller \d+ for \d+ partitions|"
    r"(?:Leader|Follower) \S+ (?:with topic id \S+ )?starts at leader epoch|Creating FeatureZNode|"
    r"Updating ISRs for partitions|ISR for partition \S+ updated to \[")


def dispatch_key(body: str) -> str:
    """The word a message is dispatched on: its first word, lower-cased; ``#`` for a number."""
    end = body.find(" ")
    word = body if end < 0 else body[:end]
    if word[:1].isdigit() or (word[:1] == "-" and word[1:2].isdigit()):
        return "#"
    return word.lower()


def _pattern_key(pattern: str) -> str:
    if pattern.startswith((r"\d", r"-?\d")):
        return "#"
    m = re.match(r"\[([A-Z])([a-z])\]([\w-]*)|([\w'-]+)", pattern)
    if m is None:
        raise ValueError(f"catalogue pattern must start with a word: {pattern!r}")
    word = (m.group(2) + m.group(3)) if m.group(1) else m.group(4)
    return word.split("'")[0].lower() if "'" in word else word.lower()


def _group(patterns: tuple[str, ...]) -> dict[str, re.Pattern]:
    groups: dict[str, list[str]] = {}
    for p in patterns:
        groups.setdefault(_pattern_key(p), []).append(p)
    return {k: re.compile("|".join(f"(?:{p})" for p in ps)) for k, ps in groups.items()}


_KNOWN = KNOWN_BY_KEY = _group(CONTROLLER_MESSAGES)   # dispatch key -> the catalogue's patterns for it


# The dispatch keys (first words) of the lines KRAFT_STATE_CHANGE and SINCE_2_6 match.
KRAFT_STATE_CHANGE_KEYS = _KRAFT_STATE_CHANGE_KEYS = frozenset({"creating", "transitioning", "stopped"})
SINCE_2_6_KEYS = _SINCE_2_6_KEYS = frozenset(
    {"partition", "sending", "handling", "leader", "follower", "creating", "updating", "isr"})


def is_kraft_state_change(key: str, body: str) -> bool:
    """A broker-side state-change line only KRaft writes (``key`` is ``dispatch_key(body)``)."""
    return key in _KRAFT_STATE_CHANGE_KEYS and KRAFT_STATE_CHANGE.match(body) is not None


def is_since_2_6(key: str, body: str) -> bool:
    """A line only Kafka 2.6+ writes (``key`` is ``dispatch_key(body)``)."""
    return key in _SINCE_2_6_KEYS and SINCE_2_6.match(body) is not None


def is_known_controller_message(body: str, key: str | None = None) -> bool:
    """Whether ``body`` is a controller message from the catalogue (understood, no row)."""
    pattern = _KNOWN.get(key if key is not None else dispatch_key(body))
    return pattern is not None and pattern.match(body) is not None


def is_controller_logger(logger: str | None) -> bool:
    """Loggers whose lines the controller writes (None: the layout printed no logger)."""
    return logger is None or logger.startswith(CONTROLLER_LOGGERS) or logger.startswith(ELECTOR_LOGGER)


def is_kraft_logger(logger: str | None) -> bool:
    return logger is not None and logger.startswith(KRAFT_LOGGER_PREFIXES)
