"""The audit's checks, defined once: violation kinds, the ``Violation`` tuple, and report assembly.

Two engines run these checks over :class:`audit.rows.AuditRow` rows: :mod:`audit.local_engine`
in process (small inputs, no JVM) and :mod:`audit.spark_engine` as Spark DataFrame expressions
(large inputs). Both find the same violations and hand them here, row by row, to become
:class:`Violation` tuples (:func:`violation` writes every ``detail`` text, so the two cannot word
one differently), and both build their :class:`Report` with :func:`build_report`. On the same rows
they give equal reports: ``tests/test_audit_differential.py`` compares them exactly.

Order and scope
- Runs (``run_id``) are independent. Within a run rows are ordered by ``(seq, source, position)``;
  that triple must be unique within a run and not null (every reader guarantees it: ``seq`` is a
  log offset or a line number, ``position`` a byte offset or a line number in ``source``).
- Replica and partition states are the state bytes of :mod:`statemachines.states`; ``None``
  means the source did not say.
- A run is cut into *eras* by controller epoch resets (``controller_epoch_reset`` below: the
  epoch back at 1, as when ZooKeeper's data is wiped). A wipe loses everything the checks carry
  from row to row — controller epochs (the numbers start over and repeat), topics, leader epochs
  and ISRs — so every check but legality looks at one era at a time: an era's first transitions
  have no predecessor, its topics start at incarnation 0, its deleted topics are judged on its
  own rows. A row's era is the number of resets up to and including it (0 before any).

The checks (one violation kind each, except where noted)
- ``illegal_transition``: a ``replica_transition`` / ``partition_transition`` row whose
  (entity, from, to) is not in the legal-transition table that :mod:`statemachines.states`
  derives from its one definition (:func:`statemachines.states.legal_transition_rows`). Rows
  with an unknown from- or to-state (``None``) are not checked. ``transition_failed`` rows are
  never checked: a refused transition is Kafka working correctly (the summary counts them by
  error).
- ``discontinuity``: a transition row whose from-state is not the to-state of the previous
  transition row of the same entity (entity, topic, partition, replica) *within the same
  controller epoch* (and era) *and topic incarnation* (see ``leader_epoch_decreased``): a topic
  removed from the controller's context and created again starts from NonExistent, whether or not
  the log shows its deletion. A new controller re-derives every state from ZooKeeper and the
  live brokers when it takes over (Kafka's initializePartitionState / initializeReplicaState)
  without logging a transition, so continuity restarts with each epoch: the first transition of
  an entity in an epoch has no predecessor. A row with from-state ``None`` is not checked but its to-state still
  becomes the entity's state; a predecessor with to-state ``None`` checks nothing. Failed
  transitions change no state and take no part.
- ``leader_epoch_decreased``: a ``partition_transition`` or ``leader_and_isr_updated`` row whose
  leader epoch (only epochs >= 0 count: -1 is "no leadership yet", -2 "during delete") is lower
  than the highest leader epoch of an earlier such row of the same partition and *topic
  incarnation*. A topic deleted and created again starts over at leader epoch 0, so the
  incarnation of a topic is the running count of its ``topic_created`` and
  ``topic_deletion_completed`` rows; leader epochs are compared within one incarnation only
  (and across controller epochs: leader epochs live in ZooKeeper, not in the controller).
- ``duplicate_leader``: such a row (leader >= 0 and leader epoch >= 0) whose leader differs from
  the leader of the *first* row with the same partition, incarnation and leader epoch: at most
  one leader per (partition, leader epoch). Rows without a leader (-1, ``None``) do not count.
- ``leader_not_in_isr``: such a row with a leader >= 0 and a known ISR that does not contain the
  leader, unless the row says the election was unclean (``unclean`` true).
- ``isr_not_in_replicas``: such a row whose ISR and replicas are both known and whose ISR holds a
  broker that is not among the replicas and was not in the partition's previous ISR (the ISR of
  the previous such row of the same partition and topic incarnation with a known ISR): a broker
  must be a replica to *join* the ISR. Brokers carried over from the previous ISR are not held
  against the row because Kafka itself narrows the replicas before the ISR: a reassignment sets
  the replicas to the target (step B2) and may elect a leader with them (B3) before it takes the
  removed replicas out of the ISR (B4), so its transition shows an ISR wider than its replicas
  for a moment. Rows without replicas (``leader_and_isr_updated``) are not checked but pass
  their ISR on.
- Controller epochs, over the rows a controller writes (every kind but ``topic_created`` and
  ``topic_deletion_requested``, which record what an administrator did) with a known epoch
  (>= 0), in order within the run:

  - ``controller_epoch_reset``: the epoch went back to 1 (the first epoch a cluster's controller
    ever gets): a ``controller_elected`` row with epoch 1 whose previous ``controller_elected`` row
    had a higher epoch. That is what a cluster whose ZooKeeper data was wiped writes: a new
    controller history, which real logs do show. It is reported (nothing in the log can tell a
    wipe from a bug), and starts a new era: the checks start over. Only elections start an era
    when the run has ``controller_elected`` rows with a known epoch: a transition logged
    at epoch 1 after epoch 2 is then a zombie of the first controller, not a reset. In a run
    without any (a bare ``state-change.log``) any row at epoch 1 whose previous row had a higher
    epoch starts one (and a zombie of epoch 1 is reported as a reset there).
  - ``controller_epoch_decreased``: a ``controller_elected`` row whose epoch is lower than the
    highest epoch seen earlier in the era: elections only ever increase the epoch.
  - ``zombie_write``: any other row whose epoch is lower than the highest epoch seen earlier in
    the era: written by a controller after a newer controller had taken over.
- ``deleted_topic_has_state``: for a topic whose last ``topic_created`` /
  ``topic_deletion_completed`` row in the era is ``topic_deletion_completed`` (a deletion request
  changes nothing until it completes), every replica and partition of that topic whose last
  transition row in the era (before or after the completion, of any incarnation) does not leave
  it in NonExistentReplica / NonExistentPartition. The violation is reported on that last
  transition row.

Findings: what a correct controller does but an operator must know, reported beside the violations
(they do not make an audit fail), each on the row that shows it:

- ``unclean_election``: a ``partition_transition`` or ``leader_and_isr_updated`` row whose election was
  unclean (``unclean`` true): a leader from outside the ISR, so writes the old ISR acknowledged may be
  lost (``unclean.leader.election.enable``).
- ``failed_election``: a ``transition_failed`` row of a partition whose target was OnlinePartition: no
  leader could be elected (no live replica, or none in the ISR with unclean election off), so the
  partition stayed offline.
- ``refused_transition``: any other ``transition_failed`` row: the controller refused a transition its
  state machine does not allow, or the change failed (the error says which).
- ``deletion_stuck``: a replica whose last transition in the era leaves it in
  ReplicaDeletionIneligible: its topic's deletion could not complete (the broker was down or failed
  the StopReplica) and is waiting for a retry.

KRaft-era logs (:mod:`audit.kraft_rows`: no controller state machines, no controller epochs) have checks
of their own (``KRAFT_VIOLATION_KINDS``, ``KRAFT_FINDING_KINDS``; the pass is
:func:`audit.local_engine.audit_kraft`, in process whichever the engine: text logs are read in the
driver). A partition's *scope* is who holds its state: each broker (its ``Leader``/``Follower`` lines) and
each controller (its ``PartitionRegistration`` dumps; a controller's scope starts over when it starts,
loads a snapshot or renounces its leadership and reverts to the last committed offset). Within a
scope a partition is (topic, partition) and its topic id: a new topic id is a new topic (the state
starts over).

- ``kraft_epoch_decreased``: a partition's leader epoch or partition epoch lower than the highest
  one of its scope (they may skip, never go back).
- ``kraft_duplicate_leader``: a second, different leader for the same (topic id, partition, leader
  epoch), across every broker and controller of the run (rows with leader -1 do not count).
- ``kraft_leader_not_in_isr``: a ``Leader`` line whose broker is not in the ISR it prints, or a
  registration whose leader (not -1) is not in its ISR.
- ``kraft_invalid_registration``: a ``PartitionRegistration`` dump whose ISR is not a subset of its
  replicas, whose ELR and ISR overlap, or that is RECOVERING with an ISR other than one broker.
- ``kraft_broker_epoch_decreased``: a new incarnation of a broker registered with a broker epoch not
  above the one of its previous registration (a controller's scope).
- ``kraft_raft_epoch_decreased``: a controller logging a Raft epoch lower than one it logged
  before (Raft epochs are kept on disk: they never fall, across restarts too; a new cluster id
  starts over).
- ``kraft_two_leaders_in_epoch``: two different controllers named the leader of one Raft epoch.
- ``kraft_fenced_broker_used`` (the decoded metadata log only, :mod:`audit.kraft_metadata_dump`, whose
  registrations are the folded state after each record): a broker fenced (or unregistered) by the log
  made a partition's leader, or added to its ISR, before a record unfences it. Kafka writes a fencing's
  partition changes before the fencing and an unfencing before its elections, so the log in order never
  shows it; the controllers' text logs print elections before the unfencing is replayed, so they are not
  held to it. ``kraft_invalid_registration`` also holds the folded state to a reassignment's adding and
  removing replicas never overlapping.

Findings: ``kraft_session_timeout`` (a broker fenced because its heartbeats stopped),
``kraft_restart_in_old_session`` (registerBroker refused with DuplicateBrokerRegistrationException,
once or repeatedly: the broker restarted before its old session expired; one finding per streak, on
its first line), ``kraft_controller_churn`` (``CHURN_EPOCHS`` Raft epochs began within ``CHURN_WINDOW_MS``:
counted from the epochs' numbers, not from the lines, since a node logs only the epochs it saw; one per
burst), ``kraft_two_active_controllers`` (a controller became active
while another's claim still stood in the log), ``kraft_stale_broker_epoch`` (a fencing or
registration change naming another broker epoch than the broker's current registration),
``kraft_elr_election`` and ``kraft_unclean_election`` (a leader from the eligible leader replicas,
KIP-966, or from outside the ISR and ELR), ``kraft_leader_epoch_gap`` (a broker's leader epoch of a
partition jumped by more than one: it missed leaderships, likely a process pause or a metadata
catch-up).

Each violation names its kind, the row's run, entity, topic, partition, replica, from- and
to-state, controller epoch, and where the row was read (source, position, seq); ``detail`` says
what was expected. Violations are sorted by (run_id, seq, source, position, kind), nulls first.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from audit.rows import (
    ENTITY_PARTITION, ENTITY_REPLICA, KINDS, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_CREATED, TOPIC_DELETION_COMPLETED, TOPIC_DELETION_REQUESTED, TRANSITION_FAILED,
)
from statemachines.states import (
    ONLINE_PARTITION, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, PARTITION_BY_BYTE, REPLICA_BY_BYTE, legal_transition_rows,
)

# --- violation kinds ------------------------------------------------------------------------------------
ILLEGAL_TRANSITION = "illegal_transition"
DISCONTINUITY = "discontinuity"
LEADER_EPOCH_DECREASED = "leader_epoch_decreased"
DUPLICATE_LEADER = "duplicate_leader"
LEADER_NOT_IN_ISR = "leader_not_in_isr"
ISR_NOT_IN_REPLICAS = "isr_not_in_replicas"
CONTROLLER_EPOCH_DECREASED = "controller_epoch_decreased"
CONTROLLER_EPOCH_RESET = "controller_epoch_reset"
ZOMBIE_WRITE = "zombie_write"
DELETED_TOPIC_HAS_STATE = "deleted_topic_has_state"

VIOLATION_KINDS: dict[str, str] = {
    ILLEGAL_TRANSITION: "a replica or partition transition that its state machine does not allow",
    DISCONTINUITY: "a transition whose from-state is not the state the entity's previous transition in the same "
                   "controller epoch left it in",
    LEADER_EPOCH_DECREASED: "a partition's leader epoch lower than one it already had (same topic incarnation)",
    DUPLICATE_LEADER: "a second, different leader for the same partition and leader epoch",
    LEADER_NOT_IN_ISR: "a leader outside the ISR that was not elected uncleanly",
    ISR_NOT_IN_REPLICAS: "a broker joined a partition's ISR without being one of its replicas",
    CONTROLLER_EPOCH_DECREASED: "a controller elected with a lower epoch than one seen before it",
    CONTROLLER_EPOCH_RESET: "the controller epoch started over at 1 (as when ZooKeeper's data is wiped); "
                            "later rows are checked against the new history",
    ZOMBIE_WRITE: "a row written by a controller whose epoch is older than one already seen (a deposed "
                  "controller still writing)",
    DELETED_TOPIC_HAS_STATE: "a replica or partition of a deleted topic whose last transition does not leave it "
                             "NonExistent",
}

# --- finding kinds: reported, but not violations ------------------------------------------------------
UNCLEAN_ELECTION = "unclean_election"
FAILED_ELECTION = "failed_election"
REFUSED_TRANSITION = "refused_transition"
DELETION_STUCK = "deletion_stuck"

FINDING_KINDS: dict[str, str] = {
    UNCLEAN_ELECTION: "a leader elected from outside the ISR: writes the old ISR acknowledged may be lost",
    FAILED_ELECTION: "an election to OnlinePartition that failed: the partition stayed without a leader",
    REFUSED_TRANSITION: "a state change the controller refused (not legal from the current state) or that failed",
    DELETION_STUCK: "a replica left in ReplicaDeletionIneligible: its topic's deletion could not complete",
}

# --- KRaft-era kinds (audit.kraft_rows; the pass is audit.local_engine.audit_kraft) -----------------------
KRAFT_EPOCH_DECREASED = "kraft_epoch_decreased"
KRAFT_DUPLICATE_LEADER = "kraft_duplicate_leader"
KRAFT_LEADER_NOT_IN_ISR = "kraft_leader_not_in_isr"
KRAFT_INVALID_REGISTRATION = "kraft_invalid_registration"
KRAFT_BROKER_EPOCH_DECREASED = "kraft_broker_epoch_decreased"
KRAFT_RAFT_EPOCH_DECREASED = "kraft_raft_epoch_decreased"
KRAFT_TWO_LEADERS_IN_EPOCH = "kraft_two_leaders_in_epoch"
KRAFT_FENCED_BROKER_USED = "kraft_fenced_broker_used"

KRAFT_VIOLATION_KINDS: dict[str, str] = {
    KRAFT_EPOCH_DECREASED: "a partition's leader or partition epoch lower than one its broker or controller "
                           "already had (same topic id)",
    KRAFT_DUPLICATE_LEADER: "a second, different leader for the same partition, topic id and leader epoch",
    KRAFT_LEADER_NOT_IN_ISR: "a partition's leader outside its ISR",
    KRAFT_INVALID_REGISTRATION: "a partition registration whose ISR is not among its replicas, whose ELR and ISR "
                                "overlap, that is RECOVERING with an ISR other than its leader alone, or whose "
                                "reassignment adds and removes the same replica",
    KRAFT_BROKER_EPOCH_DECREASED: "a new incarnation of a broker registered with a broker epoch not above its "
                                  "previous one",
    KRAFT_RAFT_EPOCH_DECREASED: "a controller's Raft epoch lower than one it logged before",
    KRAFT_TWO_LEADERS_IN_EPOCH: "two different controllers named the leader of one Raft epoch",
    KRAFT_FENCED_BROKER_USED: "in the metadata log, a fenced broker made leader or added to an ISR before it was "
                              "unfenced",
}

KRAFT_SESSION_TIMEOUT = "kraft_session_timeout"
KRAFT_RESTART_IN_OLD_SESSION = "kraft_restart_in_old_session"
KRAFT_CONTROLLER_CHURN = "kraft_controller_churn"
KRAFT_TWO_ACTIVE_CONTROLLERS = "kraft_two_active_controllers"
KRAFT_STALE_BROKER_EPOCH = "kraft_stale_broker_epoch"
KRAFT_ELR_ELECTION = "kraft_elr_election"
KRAFT_UNCLEAN_ELECTION = "kraft_unclean_election"
KRAFT_LEADER_EPOCH_GAP = "kraft_leader_epoch_gap"

KRAFT_FINDING_KINDS: dict[str, str] = {
    KRAFT_SESSION_TIMEOUT: "a broker fenced because its session timed out (no heartbeat in time)",
    KRAFT_RESTART_IN_OLD_SESSION: "a broker re-registering while its old session was still alive "
                                  "(DuplicateBrokerRegistrationException): it restarted within the session timeout",
    KRAFT_CONTROLLER_CHURN: "many Raft epochs in a short time: the controller quorum keeps changing its leader",
    KRAFT_TWO_ACTIVE_CONTROLLERS: "a controller became active while another still claimed to be",
    KRAFT_STALE_BROKER_EPOCH: "a fencing or registration change naming a broker epoch other than the broker's "
                              "current registration",
    KRAFT_ELR_ELECTION: "a leader elected from the eligible leader replicas (KIP-966), outside the ISR",
    KRAFT_UNCLEAN_ELECTION: "a leader elected uncleanly: writes the old ISR acknowledged may be lost",
    KRAFT_LEADER_EPOCH_GAP: "a broker's leader epoch of a partition skipped values: it missed leaderships "
                            "(a process pause, or catching up on metadata)",
}
CHURN_EPOCHS = 5          # Raft epochs of one run (by their numbers) ...
CHURN_WINDOW_MS = 60_000  # ... within this time: controller churn

ALL_VIOLATION_KINDS = {**VIOLATION_KINDS, **KRAFT_VIOLATION_KINDS}
ALL_FINDING_KINDS = {**FINDING_KINDS, **KRAFT_FINDING_KINDS}

# --- severities: what fails an audit (``--fail-on``) --------------------------------------------------------
ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)   # most severe first
SEVERITY: dict[str, str] = {
    **{kind: ERROR for kind in ALL_VIOLATION_KINDS},
    # A reset is what a wiped ZooKeeper writes: nothing in the log tells it from a bug, and it is no bug of
    # the controller's.
    CONTROLLER_EPOCH_RESET: WARNING,
    UNCLEAN_ELECTION: WARNING, FAILED_ELECTION: WARNING, DELETION_STUCK: WARNING, REFUSED_TRANSITION: INFO,
    KRAFT_SESSION_TIMEOUT: WARNING, KRAFT_CONTROLLER_CHURN: WARNING, KRAFT_TWO_ACTIVE_CONTROLLERS: WARNING,
    KRAFT_STALE_BROKER_EPOCH: WARNING, KRAFT_UNCLEAN_ELECTION: WARNING, KRAFT_RESTART_IN_OLD_SESSION: INFO,
    KRAFT_ELR_ELECTION: INFO, KRAFT_LEADER_EPOCH_GAP: INFO,
}


def severity(kind: str) -> str:
    """The severity of a violation or finding kind (``error``, ``warning``, ``info``)."""
    return SEVERITY[kind]


def fails(summary: dict, fail_on: str = ERROR) -> bool:
    """Whether a report's violations and findings fail an audit run with ``--fail-on fail_on``: any of
    that severity or a more severe one."""
    if fail_on not in SEVERITIES:
        raise ValueError(f"--fail-on must be one of {', '.join(SEVERITIES)}, not {fail_on!r}")
    counts = summary["by_severity"]
    return any(counts.get(s, 0) for s in SEVERITIES[:SEVERITIES.index(fail_on) + 1])


def location(v) -> str:
    """Where a violation was read: ``file:line`` in a text log, ``segment@byte`` in an event log."""
    if v.run_id is not None and v.run_id.startswith(_TEXT_RUN_PREFIX):
        return f"{v.source}:{v.position}"
    return f"{v.source}@{v.position}"


_TEXT_RUN_PREFIX = "kafka-log:"   # audit.kafka_text_logs.run_id_for: the runs of text logs

# --- row kinds the checks look at -----------------------------------------------------------------------
TRANSITION_KINDS = frozenset((REPLICA_TRANSITION, PARTITION_TRANSITION))
LEADER_KINDS = frozenset((PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED))
TOPIC_BOUNDARY_KINDS = frozenset((TOPIC_CREATED, TOPIC_DELETION_COMPLETED))
EPOCH_KINDS = frozenset(k for k in KINDS if k not in (TOPIC_CREATED, TOPIC_DELETION_REQUESTED))

FIRST_CONTROLLER_EPOCH = 1  # the epoch of a cluster's first controller (what a reset goes back to)

NON_EXISTENT = {ENTITY_REPLICA: NON_EXISTENT_REPLICA, ENTITY_PARTITION: NON_EXISTENT_PARTITION}

LEGAL_TRANSITIONS: frozenset[tuple[str, int, int]] = frozenset(
    (machine, from_byte, to_byte) for machine, _, _, from_byte, to_byte in legal_transition_rows())


class Violation(NamedTuple):
    kind: str                    # one of VIOLATION_KINDS
    run_id: str
    entity: str | None           # "replica" / "partition", None for rows of other kinds
    topic: str | None
    partition: int | None
    replica: int | None
    from_state: int | None       # state bytes, as in the row
    to_state: int | None
    controller_epoch: int | None
    source: str                  # where the row was read: file ...
    position: int                # ... and byte offset or line
    seq: int                     # order within the run
    time_ms: int | None          # the row's time, when the source told it
    detail: str


class Report(NamedTuple):
    violations: list[Violation]  # sorted by sort_key; at most ``limit`` of them
    summary: dict                # counts (see build_report); always exact
    findings: list[Violation] = []  # FINDING_KINDS, sorted by sort_key; at most ``limit`` of them


def state_name(entity: str | None, state: int | None) -> str:
    """Kafka's name of a state byte of the entity's machine (``state 9`` for a byte it does not have)."""
    if state is None:
        return "an unknown state"
    table = REPLICA_BY_BYTE if entity == ENTITY_REPLICA else PARTITION_BY_BYTE if entity == ENTITY_PARTITION else {}
    member = table.get(state)
    return member.value if member is not None else f"state {state}"


def _ids(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _what(row) -> str:
    if row.entity == ENTITY_REPLICA:
        return f"replica {row.replica} of {row.topic}-{row.partition}"
    if row.topic is not None and row.partition is not None and row.partition >= 0:
        return f"partition {row.topic}-{row.partition}"
    if row.topic is not None:
        return f"topic {row.topic}"
    return "the controller"


def _detail(kind: str, row, a, b) -> str:
    if kind == ILLEGAL_TRANSITION:
        machine = "ReplicaStateMachine" if row.entity == ENTITY_REPLICA else "PartitionStateMachine"
        return (f"{_what(row)}: {state_name(row.entity, row.from_state)} -> {state_name(row.entity, row.to_state)} "
                f"is not a legal transition of the {machine}")
    if kind == DISCONTINUITY:
        return (f"{_what(row)}: moved from {state_name(row.entity, row.from_state)}, but its previous transition "
                f"in controller epoch {row.controller_epoch} (seq {b}) left it in {state_name(row.entity, a)}")
    if kind == LEADER_EPOCH_DECREASED:
        return (f"{_what(row)}: leader epoch {row.leader_epoch} (leader {row.leader}) after leader epoch {a} "
                f"of the same topic incarnation")
    if kind == DUPLICATE_LEADER:
        return (f"{_what(row)}: leader {row.leader} at leader epoch {row.leader_epoch}, but broker {a} was leader "
                f"at that leader epoch (seq {b})")
    if kind == LEADER_NOT_IN_ISR:
        return (f"{_what(row)}: leader {row.leader} (leader epoch {row.leader_epoch}) is not in the ISR "
                f"{_ids(row.isr)} and the election was not unclean")
    if kind == ISR_NOT_IN_REPLICAS:
        replicas, before = set(row.replicas), set(a or ())
        extra = list(dict.fromkeys(i for i in row.isr if i not in replicas and i not in before))
        previous = "none" if a is None else _ids(a)
        return (f"{_what(row)}: {_ids(extra)} joined the ISR {_ids(row.isr)} (previous ISR {previous}) without "
                f"being among the replicas {_ids(row.replicas)}")
    if kind == CONTROLLER_EPOCH_DECREASED:
        return (f"controller {row.controller_id} elected with epoch {row.controller_epoch} after epoch {a} "
                f"was seen: elections only increase the controller epoch")
    if kind == CONTROLLER_EPOCH_RESET:
        return (f"{row.kind} by controller {row.controller_id} at epoch {row.controller_epoch} after epoch {a} "
                f"(highest so far {b}): the controller epoch started over, as when ZooKeeper's data is wiped; "
                f"a new controller history, checked on its own from here")
    if kind == ZOMBIE_WRITE:
        return (f"{row.kind} of {_what(row)} by controller {row.controller_id} with epoch {row.controller_epoch} "
                f"after epoch {a} was seen: written by a deposed controller")
    if kind == UNCLEAN_ELECTION:
        isr = "" if row.isr is None else f"; the new ISR is {_ids(row.isr)}"
        return (f"{_what(row)}: leader {row.leader} (leader epoch {row.leader_epoch}) elected uncleanly, from "
                f"outside the ISR{isr}: writes acknowledged by the previous ISR may be lost")
    if kind == FAILED_ELECTION:
        outcome = ("the partition kept its leader" if row.from_state == ONLINE_PARTITION
                   else "the partition stayed without a leader")
        return (f"{_what(row)}: election from {state_name(row.entity, row.from_state)} to OnlinePartition failed "
                f"({row.error or 'no reason given'}): {outcome}")
    if kind == REFUSED_TRANSITION:
        return (f"{_what(row)}: {state_name(row.entity, row.from_state)} -> {state_name(row.entity, row.to_state)} "
                f"refused or failed ({row.error or 'no reason given'})")
    if kind == DELETION_STUCK:
        return (f"{_what(row)}: left in ReplicaDeletionIneligible: the deletion of topic {row.topic} could not "
                f"complete here (its broker was down or failed the StopReplica)")
    if kind == DELETED_TOPIC_HAS_STATE:
        return (f"{_what(row)}: topic {row.topic} was deleted (deletion completed at seq {a}), but the last "
                f"transition of this {row.entity} leaves it in {state_name(row.entity, row.to_state)}")
    raise ValueError(f"unknown violation kind {kind!r}")


def violation(kind: str, row, a: Any = None, b: Any = None) -> Violation:
    """The violation of ``kind`` found on ``row`` (an AuditRow, or any object with its attribute names).

    ``a`` and ``b`` are what the check compared the row with: the previous to-state and its seq
    (discontinuity), the highest earlier leader epoch (leader_epoch_decreased), the first leader and its
    seq (duplicate_leader), the previous ISR, a list or None (isr_not_in_replicas), the highest earlier
    controller epoch in the era (controller_epoch_decreased, zombie_write), the previous election's (or
    row's) and the highest earlier controller epoch (controller_epoch_reset), the seq of the deletion's
    completion (deleted_topic_has_state). Nothing else goes into ``detail``: both engines word a
    violation the same way because they pass the same values here.
    """
    return Violation(kind, row.run_id, row.entity, row.topic, row.partition, row.replica, row.from_state,
                     row.to_state, row.controller_epoch, row.source, row.position, row.seq, row.time_ms,
                     _detail(kind, row, a, b))


_METADATA_LOG = -2   # audit.kraft_rows.METADATA_LOG (not imported: checks.py needs only row attributes)
_KRAFT_PARTITION_ROWS = frozenset(("kraft_partition_created", "kraft_leader", "kraft_follower", "kraft_registration",
                                   "kraft_election", "kraft_topic_created", "kraft_topic_removed"))
_KRAFT_QUORUM_ROWS = frozenset(("kraft_raft_epoch", "kraft_controller_activated", "kraft_controller_renounced",
                                "kraft_controller_started", "kraft_snapshot_loading"))


def _kraft_what(row) -> str:
    if row.kind in _KRAFT_PARTITION_ROWS:
        if row.topic is None:
            name, tid = f"{row.partition} of topic id {row.topic_id}", ""
        else:
            name = f"{row.topic}-{row.partition}"
            tid = f" (topic id {row.topic_id})" if row.topic_id else ""
        if row.node == _METADATA_LOG:
            return f"partition {name}{tid} in the metadata log"
        where = "broker" if row.kind in ("kraft_leader", "kraft_follower", "kraft_partition_created") else "controller"
        return f"partition {name}{tid} as {where} {row.node} logged it"
    if row.broker is not None and row.broker >= 0:
        return f"broker {row.broker} ({'the metadata log' if row.node == _METADATA_LOG else f'controller {row.node}'})"
    return f"controller {row.node}"


def _kraft_detail(kind: str, row, a, b) -> str:
    what = _kraft_what(row)
    if kind == KRAFT_EPOCH_DECREASED:
        field_name, value = a
        return f"{what}: {field_name} {value} after {field_name} {b[0]} (seq {b[1]}): epochs never go back"
    if kind == KRAFT_DUPLICATE_LEADER:
        return (f"{what}: leader {row.leader} at leader epoch {row.leader_epoch}, but node {b[0]} logged leader {a} "
                f"at that leader epoch (seq {b[1]})")
    if kind == KRAFT_LEADER_NOT_IN_ISR:
        return f"{what}: leader {row.leader} (leader epoch {row.leader_epoch}) is not in the ISR {_ids(row.isr)}"
    if kind == KRAFT_INVALID_REGISTRATION:
        return f"{what}: {a} (replicas {_ids(row.replicas)}, ISR {_ids(row.isr)}, ELR {_ids(row.elr or ())})"
    if kind == KRAFT_BROKER_EPOCH_DECREASED:
        return (f"{what}: new incarnation registered with broker epoch {row.epoch}, not above the broker epoch {a} "
                f"of its previous registration (seq {b})")
    if kind == KRAFT_RAFT_EPOCH_DECREASED:
        return f"{what}: Raft epoch {row.epoch} after epoch {a} (seq {b}): Raft epochs never fall"
    if kind == KRAFT_TWO_LEADERS_IN_EPOCH:
        return (f"{what}: names {row.leader} the leader of Raft epoch {row.epoch}, but controller {b[0]} named {a} "
                f"(seq {b[1]})")
    if kind == KRAFT_FENCED_BROKER_USED:
        return (f"{what}: broker {a} {b} while fenced (the metadata log fenced it and has not unfenced it): a fenced "
                f"broker leads nothing and joins no ISR")
    if kind == KRAFT_SESSION_TIMEOUT:
        return (f"{what}: fenced at broker epoch {row.epoch} because its session timed out: its partitions lost "
                f"it as leader and ISR member until it unfences")
    if kind == KRAFT_RESTART_IN_OLD_SESSION:
        return (f"{what}: a broker's registration refused {a} time(s) from here (DuplicateBrokerRegistrationException, "
                f"last at seq {b}): it restarted while its old session was still alive, and waits for it to expire")
    if kind == KRAFT_CONTROLLER_CHURN:
        return (f"{what}: {a} Raft epochs within {CHURN_WINDOW_MS // 1000} s (epochs {b[0]} to {b[1]}): the "
                f"controller quorum keeps changing its leader")
    if kind == KRAFT_TWO_ACTIVE_CONTROLLERS:
        return (f"{what}: became the active controller at Raft epoch {row.epoch} while controller {a} still claimed "
                f"to be active (since epoch {b})")
    if kind == KRAFT_STALE_BROKER_EPOCH:
        return (f"{what}: {row.kind.replace('kraft_', '').replace('_', ' ')} at broker epoch {row.epoch}, but its "
                f"current registration has broker epoch {a}")
    if kind == KRAFT_ELR_ELECTION:
        return (f"{what}: leader {row.leader} elected from the eligible leader replicas (ELR, KIP-966): the ISR was "
                f"empty; the new ISR is {_ids(row.isr or ())}")
    if kind == KRAFT_UNCLEAN_ELECTION:
        epoch = "" if row.leader_epoch is None else f" (leader epoch {row.leader_epoch})"
        return (f"{what}: leader {row.leader}{epoch} elected uncleanly, from outside the ISR and ELR: writes "
                f"acknowledged by the previous ISR may be lost")
    if kind == KRAFT_LEADER_EPOCH_GAP:
        after = "the previous leader epoch its line prints" if b is None else f"seq {b}"
        return (f"{what}: leader epoch {row.leader_epoch} after {a} ({after}): the broker missed "
                f"{row.leader_epoch - a - 1} leader epoch(s) of this partition (a process pause or a metadata catch-up)")
    raise ValueError(f"unknown KRaft violation kind {kind!r}")


def kraft_violation(kind: str, row, a: Any = None, b: Any = None) -> Violation:
    """The KRaft violation or finding of ``kind`` on ``row`` (a :class:`audit.kraft_rows.KraftRow`); ``a``
    and ``b`` are what the check compared the row with (see :func:`audit.local_engine.audit_kraft`)."""
    if row.kind in _KRAFT_PARTITION_ROWS:
        entity, replica = ENTITY_PARTITION, -1
    elif row.broker is not None and row.broker >= 0:
        entity, replica = "broker", row.broker
    else:
        entity, replica = "controller", -1
    epoch = row.epoch if row.kind in _KRAFT_QUORUM_ROWS else None
    return Violation(kind, row.run_id, entity, row.topic, row.partition, replica, None, None, epoch, row.source,
                     row.position, row.seq, row.time_ms, _kraft_detail(kind, row, a, b))


def sort_key(v: Violation) -> tuple:
    """(run_id, seq, source, position, kind), nulls first (Spark's ascending order)."""
    return (v.run_id is not None, v.run_id or "", v.seq is not None, v.seq or 0, v.source is not None,
            v.source or "", v.position is not None, v.position or 0, v.kind)


SORT_COLUMNS = ("run_id", "seq", "source", "position", "violation")  # the same order, for the Spark engine


def build_report(violations: Iterable[Violation], violation_counts: Mapping[tuple, int],
                 rows_by_kind: Mapping[str | None, int], failures_by_error: Mapping[str | None, int],
                 runs: int, limit: int | None = None, rows_by_run: Mapping[str, int] | None = None) -> Report:
    """Assemble a report: ``violations`` (violations and findings, told apart by kind, sorted here and
    each cut to ``limit``) and the summary.

    ``violation_counts`` maps (kind, run_id, source) to the number of violations or findings found — all
    of them, also when only ``limit`` of them were listed. ``rows_by_kind`` and ``failures_by_error`` count
    the rows audited (``transition_failed`` rows by error, and by run when ``rows_by_run`` is given);
    ``runs`` is the number of distinct runs.
    """
    ordered = sorted(violations, key=sort_key)
    listed = [v for v in ordered if v.kind in ALL_VIOLATION_KINDS]
    found = [v for v in ordered if v.kind in ALL_FINDING_KINDS]
    if limit is not None:
        listed, found = listed[:limit], found[:limit]
    by_kind: Counter = Counter()
    by_run: Counter = Counter()
    by_source: Counter = Counter()
    findings_by_kind: Counter = Counter()
    findings_by_run: Counter = Counter()
    by_severity: Counter = Counter()
    for (kind, run_id, source), n in violation_counts.items():
        if not n:
            continue
        by_severity[SEVERITY[kind]] += n
        if kind in ALL_FINDING_KINDS:
            findings_by_kind[kind] += n
            findings_by_run[run_id] += n
            continue
        by_kind[kind] += n
        by_run[run_id] += n
        by_source[source] += n
    rows = {k: n for k, n in rows_by_kind.items() if n}

    def by_id(counter: Counter) -> dict:
        return dict(sorted(counter.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))

    summary = {
        "runs": runs,
        "rows": sum(rows.values()),
        "rows_by_kind": dict(sorted(rows.items(), key=lambda kv: str(kv[0]))),
        "rows_by_run": by_id(Counter({k: n for k, n in (rows_by_run or {}).items() if n})),
        "transitions": rows.get(REPLICA_TRANSITION, 0) + rows.get(PARTITION_TRANSITION, 0),
        "failures": rows.get(TRANSITION_FAILED, 0),
        "failures_by_error": dict(sorted(((e if e is not None else "unknown"), n)
                                         for e, n in failures_by_error.items() if n)),
        "violations": sum(by_kind.values()),
        "violations_by_kind": {k: by_kind.get(k, 0) for k in VIOLATION_KINDS},
        "violations_by_run": by_id(by_run),
        "violations_by_source": by_id(by_source),
        "listed": len(listed),
        "findings": sum(findings_by_kind.values()),
        "findings_by_kind": {k: findings_by_kind.get(k, 0) for k in FINDING_KINDS},
        "findings_by_run": by_id(findings_by_run),
        "findings_listed": len(found),
        "kraft_violations_by_kind": {k: by_kind.get(k, 0) for k in KRAFT_VIOLATION_KINDS},
        "kraft_findings_by_kind": {k: findings_by_kind.get(k, 0) for k in KRAFT_FINDING_KINDS},
        "by_severity": {s: by_severity.get(s, 0) for s in SEVERITIES},
    }
    return Report(listed, summary, found)


def merge_reports(a: Report, b: Report, limit: int | None = None) -> Report:
    """One report of two over different rows (an engine's and the KRaft pass's): counts added, listings
    merged in report order and cut to ``limit``; ``runs`` counts the runs with rows in either."""
    def added(x, y):
        if isinstance(x, dict):
            out = dict(x)
            for k, n in y.items():
                out[k] = out.get(k, 0) + n
            return out
        return x + y

    s = {k: added(v, b.summary[k]) for k, v in a.summary.items()}
    for key in ("rows_by_kind", "rows_by_run", "failures_by_error", "violations_by_run", "violations_by_source",
                "findings_by_run"):
        s[key] = dict(sorted(s[key].items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))
    s["runs"] = len(set(a.summary["rows_by_run"]) | set(b.summary["rows_by_run"])) or max(
        a.summary["runs"], b.summary["runs"])
    listed = sorted(a.violations + b.violations, key=sort_key)
    found = sorted(a.findings + b.findings, key=sort_key)
    if limit is not None:
        listed, found = listed[:limit], found[:limit]
    s["listed"], s["findings_listed"] = len(listed), len(found)
    return Report(listed, s, found)


def format_violation(v: Violation) -> str:
    """One line for people: where, what kind, and the detail."""
    if v.kind in KRAFT_VIOLATION_KINDS or v.kind in KRAFT_FINDING_KINDS:   # no controller epochs in KRaft
        epoch = "" if v.controller_epoch is None else f", Raft epoch {v.controller_epoch}"
        return f"{location(v)} (run {v.run_id}, seq {v.seq}{epoch}) {SEVERITY[v.kind]} {v.kind}: {v.detail}"
    return f"{location(v)} (run {v.run_id}, seq {v.seq}, controller epoch {v.controller_epoch}) " \
           f"{SEVERITY[v.kind]} {v.kind}: {v.detail}"


def events(findings: list[Violation], window_ms: int = 1000) -> list[dict]:
    """Findings of one cause as one event: findings of one kind, run, file and controller epoch whose times
    are within ``window_ms`` of the event's last one (findings without times: of the same kind, run, file
    and epoch, in a row) — the 218 failed elections of one broker failure, the 52 ELR elections of one
    unfencing. Events are in the order of their first finding; each lists its partitions (or brokers)."""
    out: list[dict] = []
    open_events: dict = {}    # (kind, run, source, epoch) -> the event findings of that key join
    last_key = None
    for v in findings:
        key = (v.kind, v.run_id, v.source, v.controller_epoch)
        current = open_events.get(key)
        joins = current is not None and (
            current["_time"] - window_ms <= v.time_ms <= current["_time"] + window_ms
            if v.time_ms is not None and current["_time"] is not None else key == last_key)
        last_key = key
        what = _subject(v)
        if joins:
            current["count"] += 1
            current["last"] = location(v)
            current["_time"] = v.time_ms
            if what is not None and what not in current["_seen"]:
                current["_seen"].add(what)
                current["subjects"].append(what)
            continue
        current = {"kind": v.kind, "severity": SEVERITY[v.kind], "run_id": v.run_id, "count": 1,
                   "first": location(v), "last": location(v), "time_ms": v.time_ms, "detail": v.detail,
                   "subjects": [what] if what is not None else [], "_seen": {what}, "_time": v.time_ms}
        open_events[key] = current
        out.append(current)
    for e in out:
        del e["_seen"], e["_time"]
    return out


def _subject(v) -> str | None:
    """What a violation is about, in one word: a partition ``t-0``, a replica ``t-0/1``, a broker ``broker 1``."""
    if v.entity == ENTITY_REPLICA:
        return f"{v.topic}-{v.partition}/{v.replica}"
    if v.partition is not None and v.partition >= 0:
        return f"{v.topic}-{v.partition}" if v.topic is not None else f"partition {v.partition}"
    if v.entity == "broker":
        return f"broker {v.replica}"
    return v.topic


__all__ = [
    "ALL_FINDING_KINDS", "ALL_VIOLATION_KINDS", "CHURN_EPOCHS", "CHURN_WINDOW_MS", "KRAFT_BROKER_EPOCH_DECREASED",
    "KRAFT_CONTROLLER_CHURN", "KRAFT_DUPLICATE_LEADER", "KRAFT_FENCED_BROKER_USED", "KRAFT_ELR_ELECTION", "KRAFT_EPOCH_DECREASED",
    "KRAFT_FINDING_KINDS", "KRAFT_INVALID_REGISTRATION", "KRAFT_LEADER_EPOCH_GAP", "KRAFT_LEADER_NOT_IN_ISR",
    "KRAFT_RAFT_EPOCH_DECREASED", "KRAFT_RESTART_IN_OLD_SESSION", "KRAFT_SESSION_TIMEOUT", "KRAFT_STALE_BROKER_EPOCH",
    "KRAFT_TWO_ACTIVE_CONTROLLERS", "KRAFT_TWO_LEADERS_IN_EPOCH", "KRAFT_UNCLEAN_ELECTION", "KRAFT_VIOLATION_KINDS",
    "ERROR", "INFO", "SEVERITIES", "SEVERITY", "WARNING", "events", "fails", "kraft_violation", "location",
    "merge_reports", "severity",
    "CONTROLLER_EPOCH_DECREASED", "CONTROLLER_EPOCH_RESET", "DELETED_TOPIC_HAS_STATE", "DELETION_STUCK",
    "DISCONTINUITY", "FAILED_ELECTION", "FINDING_KINDS", "REFUSED_TRANSITION", "UNCLEAN_ELECTION",
    "DUPLICATE_LEADER", "EPOCH_KINDS", "FIRST_CONTROLLER_EPOCH", "ILLEGAL_TRANSITION", "ISR_NOT_IN_REPLICAS",
    "LEADER_EPOCH_DECREASED", "LEADER_KINDS", "LEADER_NOT_IN_ISR", "LEGAL_TRANSITIONS", "NON_EXISTENT", "Report",
    "SORT_COLUMNS", "TOPIC_BOUNDARY_KINDS", "TRANSITION_KINDS", "VIOLATION_KINDS", "Violation", "ZOMBIE_WRITE",
    "build_report", "format_violation", "sort_key", "state_name", "violation",
]
