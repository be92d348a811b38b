"""The rows of KRaft-era Kafka logs (3.3 to 4.x): what a broker's and a controller's lines say, as tuples.

KRaft has no controller state machines, so its lines do not fit :class:`audit.rows.AuditRow` (states,
controller epochs): they carry topic ids, partition epochs, eligible leader replicas (KIP-966), broker
epochs and Raft epochs. :mod:`audit.kraft_broker_lines` and :mod:`audit.kraft_controller_lines` make
these rows; the KRaft checks of :mod:`audit.checks` (run by :func:`audit.local_engine.audit_kraft`, in
process for either engine: text logs are read in the driver) consume them.

Conventions are those of ``AuditRow``: ``seq`` orders rows within a run (the line number in reading
order), ``source``/``position`` say where the row was read; ``-1`` is "not applicable" in the id
columns, ``None`` "not known".

- ``node`` is who logged the line: the broker of a ``[Broker id=N]`` line, the controller of a
  ``[QuorumController id=N]`` line (``-1`` when neither is printed and none was seen before).
- ``epoch`` is the broker epoch of a broker-registration row, the Raft (controller) epoch of a
  quorum row, and the previous leader epoch a broker's ``Leader`` line prints; ``None`` elsewhere.
- ``detail`` tells rows of one kind apart where needed (how a registration or a leader came about).
- Rows of the decoded metadata log (:mod:`audit.kraft_metadata_dump`) have ``node`` ``METADATA_LOG``:
  the log is the cluster's, no node logged it.
"""
from __future__ import annotations

from typing import NamedTuple

# Broker side (state.change.logger, "[Broker id=N]").
KRAFT_PARTITION_CREATED = "kraft_partition_created"  # "Creating new partition t-0 with topic id U."
KRAFT_LEADER = "kraft_leader"                        # "Leader t-0 ... starts at leader epoch E ... ISR [...]"
KRAFT_FOLLOWER = "kraft_follower"                    # "Follower t-0 starts at leader epoch E ... Current leader is L."
# Controller side (QuorumController and its managers).
KRAFT_TOPIC_CREATED = "kraft_topic_created"          # "Replayed TopicRecord for topic t with topic ID U."
KRAFT_TOPIC_REMOVED = "kraft_topic_removed"          # "Replayed RemoveTopicRecord for topic t with ID U."
KRAFT_REGISTRATION = "kraft_registration"            # a PartitionRegistration(...) dump: a partition's whole state
KRAFT_ELECTION = "kraft_election"                    # an ELR or unclean election (detail "elr" / "unclean")
KRAFT_BROKER_REGISTERED = "kraft_broker_registered"  # RegisterBrokerRecord replayed (detail "initial" / "incarnation")
KRAFT_BROKER_CHANGED = "kraft_broker_changed"        # BrokerRegistrationChangeRecord (detail: fenced, unfenced, ...)
KRAFT_BROKER_FENCED = "kraft_broker_fenced"          # "Fencing broker N at epoch E because its session has timed out."
KRAFT_UNFENCE_GRANTED = "kraft_unfence_granted"      # "The request from broker N to unfence has been granted ..."
KRAFT_SHUTDOWN_GRANTED = "kraft_shutdown_granted"    # controlled (or immediate) shutdown granted
KRAFT_DUPLICATE_REGISTRATION = "kraft_duplicate_registration"  # registerBroker failed: DuplicateBrokerRegistration
KRAFT_RAFT_EPOCH = "kraft_raft_epoch"                # "In the new epoch N, the leader is L|(none)."
KRAFT_ACTIVATED = "kraft_controller_activated"       # "Becoming the active controller at epoch N, ..."
KRAFT_RENOUNCED = "kraft_controller_renounced"       # "Renouncing the leadership ..." (epoch: the one it led)
KRAFT_CONTROLLER_STARTED = "kraft_controller_started"  # "Creating new QuorumController with clusterId C" (detail C)
KRAFT_SNAPSHOT_LOADING = "kraft_snapshot_loading"    # "Starting to load snapshot ...": the replay starts over

KRAFT_KINDS = (
    KRAFT_PARTITION_CREATED, KRAFT_LEADER, KRAFT_FOLLOWER, KRAFT_TOPIC_CREATED, KRAFT_TOPIC_REMOVED,
    KRAFT_REGISTRATION, KRAFT_ELECTION, KRAFT_BROKER_REGISTERED, KRAFT_BROKER_CHANGED, KRAFT_BROKER_FENCED,
    KRAFT_UNFENCE_GRANTED, KRAFT_SHUTDOWN_GRANTED, KRAFT_DUPLICATE_REGISTRATION, KRAFT_RAFT_EPOCH, KRAFT_ACTIVATED,
    KRAFT_RENOUNCED, KRAFT_CONTROLLER_STARTED, KRAFT_SNAPSHOT_LOADING,
)
BROKER_VIEW_KINDS = frozenset((KRAFT_LEADER, KRAFT_FOLLOWER))
# Rows after which a controller's in-memory replay starts over (a new process, a snapshot, a revert).
REPLAY_RESET_KINDS = frozenset((KRAFT_CONTROLLER_STARTED, KRAFT_SNAPSHOT_LOADING, KRAFT_RENOUNCED))

METADATA_LOG = -2   # the node of rows folded from the metadata log itself

# detail values
ELECTED_FROM_ELR = "elr"
ELECTED_UNCLEAN = "unclean"
REGISTERED_INITIAL = "initial"          # the first registration this controller replays for the broker
REGISTERED_INCARNATION = "incarnation"  # a new incarnation of a broker already registered
FENCED, UNFENCED, CONTROLLED_SHUTDOWN = "fenced", "unfenced", "controlled_shutdown"
UNREGISTERED = "unregistered"


class KraftRow(NamedTuple):
    run_id: str
    source: str
    position: int                # line number in the file
    seq: int                     # order within the run
    kind: str                    # one of KRAFT_KINDS
    node: int                    # the broker or controller that logged the line; -1 when not known
    time_ms: int | None
    topic: str | None
    topic_id: str | None
    partition: int               # -1 for rows that are not about one partition
    broker: int                  # the broker a registration / fencing / shutdown row is about; -1 otherwise
    leader: int | None
    leader_epoch: int | None
    partition_epoch: int | None
    isr: tuple[int, ...] | None
    replicas: tuple[int, ...] | None
    elr: tuple[int, ...] | None
    recovering: bool | None      # leaderRecoveryState RECOVERING (after an unclean election)
    epoch: int | None            # broker epoch (registrations), Raft epoch (quorum), previous leader epoch (Leader)
    detail: str | None
    adding: tuple[int, ...] | None = None    # a registration's reassignment: replicas being added ...
    removing: tuple[int, ...] | None = None  # ... and being removed


KRAFT_COLUMNS = KraftRow._fields

_INT_TUPLES: dict[str, tuple[int, ...]] = {}   # a file prints the same ISRs and replica lists over and over


def int_tuple(text: str) -> tuple[int, ...]:
    """``1,2,3`` or ``1, 2`` as (1, 2, 3); ``()`` for an empty text. Remembered by text: callers may look in
    ``INT_TUPLES`` first (``INT_TUPLES.get(text) or int_tuple(text)``)."""
    ints = _INT_TUPLES.get(text)
    if ints is None:
        ints = tuple(map(int, text.split(","))) if text else ()
        if len(_INT_TUPLES) >= 4096:
            _INT_TUPLES.clear()
        _INT_TUPLES[text] = ints
    return ints


INT_TUPLES = _INT_TUPLES
