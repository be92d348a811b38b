"""Record types of the event log: controller inputs, state transitions and broker requests.

Every record is an immutable ``NamedTuple`` whose positional layout *is* its wire layout:
msgpack packs a tuple as an array, so encoding a record costs no conversion. The first
seven fields are the same for every kind (the *header*)::

    kind, v, offset, controller_id, controller_epoch, timestamp_ms, cause_offset

``kind`` names the record type (see ``KINDS``), ``v`` its schema version (``SCHEMA_VERSION``
when written, any of ``READABLE_VERSIONS`` when read), ``offset`` its
position in the log, ``controller_id``/``controller_epoch`` the controller that wrote it
(-1/0 when no controller was involved), ``timestamp_ms`` the simulated time, and
``cause_offset`` the offset of the input record whose processing produced it (an input
record names itself).

Broker ids, partitions and epochs are ints; replica lists and ISRs are tuples of ints;
replica and partition states are Kafka's state bytes (``statemachines`` maps them to
names). Records are built by :class:`events.journal.Journal` or with ``Kind.make(...)``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

SCHEMA_VERSION = 2
"""The schema version records are written with (their ``v`` field). Version 2 added columnar batches
(:mod:`events.columns`) to batch payloads; the record layouts are those of version 1, so a reader reads
records of both (``READABLE_VERSIONS``) and a log written before holds only version 1 records."""
READABLE_VERSIONS = frozenset({1, 2})

HEADER_FIELDS = (
    "kind", "v", "offset", "controller_id", "controller_epoch", "timestamp_ms", "cause_offset",
)
HEADER_LEN = len(HEADER_FIELDS)

# Entities of transition records.
ENTITY_REPLICA = 0
ENTITY_PARTITION = 1

# How a partition's leader was chosen (PartitionTransition.election).
ELECTION_NONE = 0              # no election (OfflinePartition, NonExistentPartition, NewPartition)
ELECTION_NEW_PARTITION = 1     # initializeLeaderAndIsrForPartitions: first live replica
ELECTION_OFFLINE = 2           # OfflinePartitionLeaderElectionStrategy, leader from the ISR
ELECTION_OFFLINE_UNCLEAN = 3   # OfflinePartitionLeaderElectionStrategy, leader outside the ISR
ELECTION_REASSIGN = 4
ELECTION_PREFERRED = 5
ELECTION_CONTROLLED_SHUTDOWN = 6
ELECTION_NAMES = {
    ELECTION_NONE: "none",
    ELECTION_NEW_PARTITION: "new_partition",
    ELECTION_OFFLINE: "offline",
    ELECTION_OFFLINE_UNCLEAN: "offline_unclean",
    ELECTION_REASSIGN: "reassign",
    ELECTION_PREFERRED: "preferred",
    ELECTION_CONTROLLED_SHUTDOWN: "controlled_shutdown",
}

# Broker request APIs (RequestSent.api), Kafka's ApiKeys ids.
API_LEADER_AND_ISR = 4
API_STOP_REPLICA = 5
API_UPDATE_METADATA = 6
API_NAMES = {API_LEADER_AND_ISR: "LeaderAndIsr", API_STOP_REPLICA: "StopReplica",
             API_UPDATE_METADATA: "UpdateMetadata"}

# LeaderRecoveryState (KIP-704).
RECOVERED = 0
RECOVERING = 1

NO_LEADER = -1            # LeaderAndIsr.NoLeader
LEADER_DURING_DELETE = -2  # LeaderAndIsr.LeaderDuringDelete
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2


class _RecordMixin:
    """Helpers shared by all record classes (attached after class creation)."""

    __slots__ = ()

    @classmethod
    def make(cls, *, offset: int = -1, controller_id: int = -1, controller_epoch: int = 0,
             timestamp_ms: int = 0, cause_offset: int = -1, v: int = SCHEMA_VERSION, **body: Any):
        """Build a record from keyword arguments; header fields default to "unknown"."""
        values = [cls.KIND, v, offset, controller_id, controller_epoch, timestamp_ms, cause_offset]
        missing = [f for f in cls._fields[HEADER_LEN:] if f not in body]
        extra = set(body) - set(cls._fields[HEADER_LEN:])
        if missing or extra:
            raise TypeError(f"{cls.__name__}.make(): missing fields {missing}, unknown fields {sorted(extra)}")
        values.extend(body[f] for f in cls._fields[HEADER_LEN:])
        return tuple.__new__(cls, values)

    def body(self) -> tuple:
        """The kind-specific fields, after the common header."""
        return tuple(self[HEADER_LEN:])

    def to_dict(self) -> dict:
        """A JSON-friendly dict with field names (tuples stay tuples)."""
        d = self._asdict()
        d["type"] = type(self).__name__
        return d

    @property
    def is_input(self) -> bool:
        return self.KIND < FIRST_OUTPUT_KIND


# ---------------------------------------------------------------------------------------------
# Inputs: what happened to the controller. Kinds 1..39.
# ---------------------------------------------------------------------------------------------

class BrokerStarted(NamedTuple):
    """A broker process started: it opens a store session, registers ``/brokers/ids/<id>`` and runs a
    controller candidate. Its broker epoch is the czxid of that registration. (When that znode still
    belongs to the live session of a previous process of the broker, the registration fails with
    NodeExists and the process exits, as Kafka's does.)"""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    host: str
    port: int
    rack: str | None


class BrokerSessionExpired(NamedTuple):
    """The store expired a broker's session now: its ephemeral nodes are gone; a broker that is still
    running opens a new session and registers again (RegisterBrokerAndReelect)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int


class TopicCreated(NamedTuple):
    """``/brokers/topics/<topic>`` was created with this assignment (replicas per partition)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    assignment: tuple          # tuple[tuple[int, ...], ...], index = partition
    configs: tuple             # tuple[tuple[str, str], ...] topic config overrides, sorted by name


class PartitionsAdded(NamedTuple):
    """Partitions were added to an existing topic (``/brokers/topics/<topic>`` changed)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    assignment: tuple          # tuple[tuple[partition, tuple[replica, ...]], ...]


class TopicDeletionRequested(NamedTuple):
    """``/admin/delete_topics/<topic>`` was created."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str


class ConfigChanged(NamedTuple):
    """A broker default or topic override changed (value None = deleted), by Kafka config name."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    entity_type: str           # "broker" (cluster default or one broker) or "topic"
    entity_name: str           # topic name, a broker id, or "" for the cluster-wide broker default
    name: str                  # e.g. "unclean.leader.election.enable"
    value: str | None


class ControlledShutdownRequested(NamedTuple):
    """A broker sent a ControlledShutdown request."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    broker_epoch: int


class BrokerKilled(NamedTuple):
    """A broker process died (kill -9): no controlled shutdown; its session lives on until
    ``zookeeper.session.timeout.ms`` passes without a heartbeat."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int


class ClockAdvanced(NamedTuple):
    """Time passed to ``timestamp_ms`` with nothing else happening (sessions may time out)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int


class AlterPartitionRequested(NamedTuple):
    """A partition leader asked the controller to change ISRs (AlterPartition, IBP >= 2.7)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    broker_epoch: int
    partitions: tuple          # ((topic, partition, leader_epoch, isr, recovery_state, partition_epoch), ...)


class IsrChangeNotified(NamedTuple):
    """A leader on an old IBP wrote new ISRs to ``/state`` itself and queued an ``/isr_change_notification``."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    partitions: tuple          # ((topic, partition, isr), ...)


class BrokerModified(NamedTuple):
    """A broker re-registered with different endpoints or rack (BrokerModifications)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    host: str
    port: int
    rack: str | None


class ClusterCreated(NamedTuple):
    """The first record of a run: the cluster's seed and broker configs (Kafka names), so a replay can rebuild it."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    seed: int
    configs: tuple             # ((name, value), ...) sorted by name


class BrokerStopped(NamedTuple):
    """A broker shut down cleanly (after its controlled shutdown, if enabled): its controller candidate
    resigned and it closed its store session, so its registration and any ``/controller`` it held are gone
    at once (no session timeout)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int


class ReassignmentRequested(NamedTuple):
    """A partition reassignment was requested (KIP-455): through the AlterPartitionReassignments API
    (``source`` "api") or by writing ``/admin/reassign_partitions`` (``source`` "zk", as
    ``kafka-reassign-partitions.sh --execute`` did before 2.4). ``replicas`` None cancels."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    source: str                # "api" or "zk"
    partitions: tuple          # ((topic, partition, replicas tuple or None), ...)


class LeaderElectionRequested(NamedTuple):
    """A leader election was requested: through the ElectLeaders API (``source`` "api", as
    ``kafka-leader-election.sh`` does) or by writing ``/admin/preferred_replica_election`` (``source``
    "zk"). ``partitions`` None means every partition."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    election_type: int         # Kafka's ElectionType: 0 PREFERRED, 1 UNCLEAN
    source: str                # "api" or "zk"
    partitions: tuple | None   # ((topic, partition), ...) or None for all


class LogDirFailed(NamedTuple):
    """A log directory of a running broker failed (``log_dir``, one of its ``log.dirs``): the broker takes
    the replicas in it offline (KAFKA_STORAGE_ERROR) and writes a ``/log_dir_event_notification``; with no
    log directory left (or an inter-broker protocol before 1.0) it halts instead, as a kill -9 does."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    log_dir: str


class SimulationStarted(NamedTuple):
    """A simulation began (``sim.simulation``): the scenario as written, where it was read from, and the seed.
    ``kcontroller replay`` runs the same scenario with the same seed again and compares every record."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    scenario: str              # the scenario's name
    source: str                # the file it was read from ("<string>" if none)
    text: str                  # the scenario's YAML text, verbatim
    seed: int


FIRST_OUTPUT_KIND = 40


# ---------------------------------------------------------------------------------------------
# Outputs: what the controller did. Kinds 40..
# ---------------------------------------------------------------------------------------------


class ControllerElected(NamedTuple):
    """A broker won the ``/controller`` race; ``controller_epoch`` is its new epoch."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    epoch_zk_version: int


class ReplicaTransition(NamedTuple):
    """A replica moved between ReplicaStateMachine states (``from_state`` may equal ``to_state``)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    partition: int
    replica: int
    from_state: int            # ReplicaState byte (1..7)
    to_state: int


class PartitionTransition(NamedTuple):
    """A partition moved between PartitionStateMachine states; leader/ISR as stored after the move.

    ``leader_epoch`` is -1 when the partition has no leadership information yet.
    """
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    partition: int
    from_state: int            # PartitionState byte (0..3)
    to_state: int
    replicas: tuple            # the assignment (RS) at the time of the transition
    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int       # zkVersion of the partition's /state znode
    recovery_state: int        # RECOVERED / RECOVERING
    election: int              # ELECTION_* code


class TransitionFailed(NamedTuple):
    """A requested transition that was refused (invalid) or failed (e.g. no leader could be elected)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    entity: int                # ENTITY_REPLICA / ENTITY_PARTITION
    topic: str
    partition: int
    replica: int               # -1 for partitions
    from_state: int
    to_state: int
    error: str                 # Kafka exception class, e.g. "IllegalStateException"
    message: str               # Kafka's exception message


class LeaderAndIsrPartition(NamedTuple):
    """One partition state of a LeaderAndIsr request to ``broker_id``."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    topic: str
    partition: int
    state_controller_epoch: int  # epoch of the controller that wrote the stored leader/ISR
    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    replicas: tuple
    adding_replicas: tuple
    removing_replicas: tuple
    is_new: bool
    recovery_state: int


class UpdateMetadataPartition(NamedTuple):
    """One partition state of the UpdateMetadata requests sent to ``brokers``."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    brokers: tuple
    topic: str
    partition: int
    state_controller_epoch: int
    leader: int                # LEADER_DURING_DELETE (-2) for topics queued for deletion
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    replicas: tuple
    offline_replicas: tuple


class StopReplicaPartition(NamedTuple):
    """One partition of a StopReplica request to ``broker_id``."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    topic: str
    partition: int
    leader_epoch: int          # EPOCH_DURING_DELETE (-2) for topics queued for deletion
    delete_partition: bool


class RequestSent(NamedTuple):
    """A request left the controller for one broker; its partitions are the records just before it."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    api: int                   # API_LEADER_AND_ISR / API_UPDATE_METADATA / API_STOP_REPLICA
    broker_id: int
    broker_epoch: int          # the destination's registration epoch (KIP-380)
    correlation_id: int
    partition_count: int
    leader_count: int          # LeaderAndIsr: become-leader partitions
    delete_count: int          # StopReplica: partitions with deletePartition=true
    live_brokers: tuple        # UpdateMetadata: live broker ids carried; () otherwise


class LeaderAndIsrUpdated(NamedTuple):
    """The controller rewrote a partition's leader/ISR without a partition state change
    (ISR shrink on OfflineReplica, a reassignment's epoch bump, an accepted AlterPartition)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    recovery_state: int
    reason: int                # UPDATE_* code
    replica: int               # the replica removed from the ISR (UPDATE_OFFLINE_REPLICA), else -1


UPDATE_OFFLINE_REPLICA = 1     # removeReplicasFromIsr on the way to OfflineReplica
UPDATE_REASSIGNMENT_EPOCH = 2  # updateLeaderEpoch during a reassignment
UPDATE_ALTER_PARTITION = 3     # AlterPartition from a leader, accepted and written by the controller
UPDATE_ISR_NOTIFICATION = 4    # a leader wrote /state itself; the controller read it on an ISR change notification
UPDATE_REASON_NAMES = {UPDATE_OFFLINE_REPLICA: "offline_replica", UPDATE_REASSIGNMENT_EPOCH: "reassignment_epoch",
                       UPDATE_ALTER_PARTITION: "alter_partition", UPDATE_ISR_NOTIFICATION: "isr_change_notification"}


class ControllerResigned(NamedTuple):
    """The controller in the header stopped being controller (onControllerResignation)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int


class LiveBrokersChanged(NamedTuple):
    """The controller's view of the live brokers changed (failover, BrokerChange, controlled shutdown)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    live_brokers: tuple        # ((broker_id, broker_epoch), ...) sorted by id, shutting-down brokers included
    shutting_down: tuple       # broker ids in controlled shutdown


class StateDigest(NamedTuple):
    """A SHA-256 digest of the whole cluster state (store contents and the active controller's context),
    written at checkpoints and at the end of a run so that a replay can compare states, not only records."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    digest: str


class ViewSnapshot(NamedTuple):
    """The folded cluster view (``statemachines.cluster_view.ClusterView``) after every record before this one,
    so that a reader can start folding here instead of at offset 0. ``state`` is the msgpack payload of
    ``ClusterView.to_snapshot()`` (layout: docs/event-log-format.md)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    state: bytes


class ClusterSnapshot(NamedTuple):
    """The whole cluster (store, brokers, controllers, clock, random sources) as it is after every
    record before this one: a replay or a simulation can restart here (controller.embedding.cluster_snapshot)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    state: bytes


class ControlledShutdownResponded(NamedTuple):
    """The controller answered a ControlledShutdown request: ``error`` is Kafka's error name ("NONE" on
    success) and ``remaining`` the partitions the broker still leads (the broker retries while any remain)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    broker_id: int
    broker_epoch: int
    error: str
    remaining: tuple           # ((topic, partition), ...)


class LeaderElectionResponded(NamedTuple):
    """The controller answered an ElectLeaders request, per partition: Kafka's error name ("NONE" when a
    leader was elected) and the elected leader (-1 with any error, ELECTION_NOT_NEEDED included)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    election_type: int
    error: str                 # request-level error ("NONE", "NOT_CONTROLLER")
    results: tuple             # ((topic, partition, error, leader), ...)


class ReassignmentResponded(NamedTuple):
    """The controller answered an AlterPartitionReassignments request, per partition (Kafka's error names)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    error: str                 # request-level error ("NONE", "NOT_CONTROLLER")
    results: tuple             # ((topic, partition, error), ...)


class ReplicaAssignmentChanged(NamedTuple):
    """The controller wrote a partition's assignment to ``/brokers/topics/<topic>`` during a reassignment:
    RS with the adding (AR) and removing (RR) replicas, or RS = TRS with both empty when it completed."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str
    partition: int
    replicas: tuple
    adding_replicas: tuple
    removing_replicas: tuple


class TopicQueuedForDeletion(NamedTuple):
    """The controller queued a topic for deletion (TopicDeletionManager.enqueueTopicsForDeletion, or its
    init at failover): from here the topic takes no elections, reassignments or new partitions."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str


class TopicDeletionCompleted(NamedTuple):
    """Every replica of the topic was deleted: the controller removed its znodes and forgot it
    (TopicDeletionManager.completeDeleteTopic)."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    topic: str


class SimulationSummary(NamedTuple):
    """A simulation ended: its summary (what ``kcontroller simulate --json`` prints), as JSON text."""
    kind: int
    v: int
    offset: int
    controller_id: int
    controller_epoch: int
    timestamp_ms: int
    cause_offset: int
    summary: str


# kind code -> class. Codes are part of the file format: never reuse or renumber one.
KINDS: dict[int, type] = {
    1: BrokerStarted,
    2: BrokerSessionExpired,
    3: TopicCreated,
    4: PartitionsAdded,
    5: TopicDeletionRequested,
    6: ConfigChanged,
    7: ControlledShutdownRequested,
    8: BrokerKilled,
    9: ClockAdvanced,
    10: AlterPartitionRequested,
    11: IsrChangeNotified,
    12: BrokerModified,
    13: ClusterCreated,
    14: BrokerStopped,
    15: ReassignmentRequested,
    16: LeaderElectionRequested,
    17: LogDirFailed,
    18: SimulationStarted,
    40: ControllerElected,
    41: ReplicaTransition,
    42: PartitionTransition,
    43: TransitionFailed,
    44: LeaderAndIsrPartition,
    45: UpdateMetadataPartition,
    46: StopReplicaPartition,
    47: RequestSent,
    48: LeaderAndIsrUpdated,
    49: ControllerResigned,
    50: LiveBrokersChanged,
    51: StateDigest,
    52: ViewSnapshot,
    53: ClusterSnapshot,
    54: ControlledShutdownResponded,
    55: LeaderElectionResponded,
    56: ReassignmentResponded,
    57: ReplicaAssignmentChanged,
    58: TopicQueuedForDeletion,
    59: TopicDeletionCompleted,
    60: SimulationSummary,
}

for _code, _cls in KINDS.items():
    assert _cls._fields[:HEADER_LEN] == HEADER_FIELDS, _cls
    _cls.KIND = _code
    _cls.VERSION = SCHEMA_VERSION
    for _name in ("make", "body", "to_dict", "is_input"):
        setattr(_cls, _name, vars(_RecordMixin)[_name])
del _code, _cls, _name

INPUT_KINDS = frozenset(k for k in KINDS if k < FIRST_OUTPUT_KIND)
KIND_BY_NAME = {cls.__name__: code for code, cls in KINDS.items()}

Record = (BrokerStarted | BrokerSessionExpired | TopicCreated | PartitionsAdded
          | TopicDeletionRequested | ConfigChanged | ControlledShutdownRequested | BrokerKilled | ClockAdvanced
          | AlterPartitionRequested | IsrChangeNotified | BrokerModified | ClusterCreated | BrokerStopped
          | ReassignmentRequested | LeaderElectionRequested | LogDirFailed | ControllerElected
          | ReplicaTransition | PartitionTransition | TransitionFailed | LeaderAndIsrPartition
          | UpdateMetadataPartition | StopReplicaPartition | RequestSent | LeaderAndIsrUpdated | ControllerResigned
          | LiveBrokersChanged | StateDigest | ClusterSnapshot | ViewSnapshot | ControlledShutdownResponded
          | LeaderElectionResponded | ReassignmentResponded | ReplicaAssignmentChanged
          | TopicQueuedForDeletion | TopicDeletionCompleted | SimulationStarted | SimulationSummary)
