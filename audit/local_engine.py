"""The audit's checks in process: pure Python over AuditRow tuples, no JVM.

For inputs that fit in memory (a test, one log directory, a Kafka log file): it gives exactly the
report of :mod:`audit.spark_engine` on the same rows. What is checked, and every decision about
order, nulls and scope, is written once in :mod:`audit.checks`; this module only finds the
violations, with dicts:

- rows are grouped by run and each run is sorted by ``(seq, source, position)`` (cheap when a
  reader already yields them in order), then read once, front to back, keeping the running and
  per-era highest controller epochs and, per era (emptied when the controller epoch is reset):
  the last to-state per (controller epoch, topic incarnation, entity) for continuity, each topic's incarnation
  count and last create/delete row, the highest leader epoch and the last known ISR per (topic
  incarnation, partition), the first leader per (incarnation, partition, leader epoch), and each
  entity's last transition (checked against deleted topics when the era or the run ends);
- every row is unpacked once into locals; no objects are made per row except dict keys;
- findings (unclean elections, failed and refused transitions, replicas stuck in
  ReplicaDeletionIneligible at the end of an era) come out of the same pass.

``audit(rows)`` takes any iterable of :class:`audit.rows.AuditRow` (or plain tuples in its
column order), and ``kraft_rows`` (:class:`audit.kraft_rows.KraftRow`, KRaft-era logs), checked by
:func:`audit_kraft`'s pass (see ``audit.checks`` for what it checks): per run, in order, with dicts per
scope (a broker or a controller that logged the rows) of each partition's topic id and highest leader
and partition epochs, of registered broker epochs, and per controller of its highest Raft epoch and
active claim. The Spark engine has no KRaft pass: KRaft rows come from text logs, always read in the
driver, and the runner merges this pass's report into the engine's (``checks.merge_reports``).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from operator import itemgetter

from audit.checks import (
    CHURN_EPOCHS, CHURN_WINDOW_MS, KRAFT_BROKER_EPOCH_DECREASED, KRAFT_CONTROLLER_CHURN, KRAFT_DUPLICATE_LEADER,
    KRAFT_ELR_ELECTION, KRAFT_EPOCH_DECREASED, KRAFT_FENCED_BROKER_USED, KRAFT_INVALID_REGISTRATION, KRAFT_LEADER_EPOCH_GAP,
    KRAFT_LEADER_NOT_IN_ISR, KRAFT_RAFT_EPOCH_DECREASED, KRAFT_RESTART_IN_OLD_SESSION, KRAFT_SESSION_TIMEOUT,
    KRAFT_STALE_BROKER_EPOCH, KRAFT_TWO_ACTIVE_CONTROLLERS, KRAFT_TWO_LEADERS_IN_EPOCH, KRAFT_UNCLEAN_ELECTION,
    kraft_violation,
    CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, DELETED_TOPIC_HAS_STATE, DELETION_STUCK, DISCONTINUITY,
    DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION, ISR_NOT_IN_REPLICAS,
    LEADER_EPOCH_DECREASED, LEADER_NOT_IN_ISR, LEGAL_TRANSITIONS, NON_EXISTENT, REFUSED_TRANSITION, UNCLEAN_ELECTION,
    ZOMBIE_WRITE, Report, Violation, build_report, violation,
)
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE
from audit import kraft_rows as kr
from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION, REPLICA_TRANSITION, TOPIC_CREATED,
    TOPIC_DELETION_COMPLETED, TRANSITION_FAILED, AuditRow,
)

_order = itemgetter(3, 1, 2)  # seq, source, position
_kind = itemgetter(4)


def _found(kind: str, row, a=None, b=None) -> Violation:
    return violation(kind, row if isinstance(row, AuditRow) else AuditRow._make(row), a, b)


def _null_safe_order(row) -> tuple:
    seq, source, position = row[3], row[1], row[2]
    return (seq is not None, seq or 0, source is not None, source or "", position is not None, position or 0)


def audit(rows: Iterable[AuditRow], *, limit: int | None = None, kraft_rows: Iterable = ()) -> Report:
    """Run every check over ``rows`` (and the KRaft checks over ``kraft_rows``); list at most ``limit``
    violations (the counts are always exact)."""
    by_run: dict = defaultdict(list)
    for row in rows:
        by_run[row[0]].append(row)
    rows_by_kind: Counter = Counter()
    failures: Counter = Counter()
    found: list[Violation] = []
    kraft_by_run: dict = defaultdict(list)
    for row in kraft_rows:
        kraft_by_run[row[0]].append(row)
    for run_rows in kraft_by_run.values():
        rows_by_kind.update(map(_kind, run_rows))
        run_rows.sort(key=_kraft_order)
        _audit_kraft_run(run_rows, found.append)
    for run_rows in by_run.values():
        kinds = Counter(map(_kind, run_rows))
        rows_by_kind.update(kinds)
        try:
            run_rows.sort(key=_order)
        except TypeError:  # a None among the keys: order as Spark does, nulls first
            run_rows.sort(key=_null_safe_order)
        elections = CONTROLLER_ELECTED in kinds and any(
            r[4] == CONTROLLER_ELECTED and r[6] is not None and r[6] >= 0 for r in run_rows)
        _audit_run(run_rows, elections, found, failures)
    counts = Counter((v.kind, v.run_id, v.source) for v in found)
    rows_by_run = {run_id: len(run_rows) for run_id, run_rows in by_run.items()}
    for run_id, run_rows in kraft_by_run.items():
        rows_by_run[run_id] = rows_by_run.get(run_id, 0) + len(run_rows)
    return build_report(found, counts, rows_by_kind, failures, len(rows_by_run), limit, rows_by_run)


def audit_kraft(kraft_rows: Iterable, *, limit: int | None = None) -> Report:
    """The KRaft checks alone (the Spark path's complement: see the module's docstring)."""
    return audit((), limit=limit, kraft_rows=kraft_rows)


def _audit_run(rows: list, has_elections: bool, out: list, failures: Counter) -> None:
    emit = out.append
    legal = LEGAL_TRANSITIONS
    epoch_kinds = EPOCH_KINDS
    RT, PT, LAIU, TF = REPLICA_TRANSITION, PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED, TRANSITION_FAILED
    TC, TDC, ELECTED = TOPIC_CREATED, TOPIC_DELETION_COMPLETED, CONTROLLER_ELECTED
    first_epoch = FIRST_CONTROLLER_EPOCH
    online = ONLINE_PARTITION

    # The state of one era (a controller epoch reset starts a new one, with all of these empty).
    previous = {}        # (controller epoch, entity, topic, partition, replica, incarnation) -> (to_state, seq)
    last_transition = {}  # (entity, topic, partition, replica) -> row
    incarnation = {}     # topic -> count of its topic_created / topic_deletion_completed rows so far
    last_boundary = {}   # topic -> its last topic_created / topic_deletion_completed row
    max_leader_epoch = {}  # (topic, incarnation, partition) -> highest leader epoch so far
    first_leader = {}    # (topic, incarnation, partition, leader epoch) -> (leader, seq) of the first row
    previous_isr = {}    # (topic, incarnation, partition) -> the last known ISR
    era_state = (previous, last_transition, incarnation, last_boundary, max_leader_epoch, first_leader, previous_isr)
    run_max = era_max = prev_epoch = prev_elected = None

    for row in rows:
        (_run, _src, _pos, seq, kind, _cid, epoch, _time, entity, topic, partition, replica,
         from_state, to_state, leader, leader_epoch, isr, replicas, unclean, error) = row

        # Controller epochs: resets, decreases, zombies.
        if kind in epoch_kinds and epoch is not None and epoch >= 0:
            if epoch == first_epoch and (
                    (prev_elected is not None and prev_elected > first_epoch) if kind == ELECTED
                    else (not has_elections and prev_epoch is not None and prev_epoch > first_epoch)):
                emit(_found(CONTROLLER_EPOCH_RESET, row, prev_elected if kind == ELECTED else prev_epoch, run_max))
                _end_era(last_transition, last_boundary, emit)
                for table in era_state:
                    table.clear()
                era_max = None
            elif era_max is not None and epoch < era_max:
                emit(_found(CONTROLLER_EPOCH_DECREASED if kind == ELECTED else ZOMBIE_WRITE, row, era_max))
            if era_max is None or epoch > era_max:
                era_max = epoch
            if run_max is None or epoch > run_max:
                run_max = epoch
            prev_epoch = epoch
            if kind == ELECTED:
                prev_elected = epoch

        if kind == RT or kind == PT:
            # Legality.
            if from_state is not None and to_state is not None and (entity, from_state, to_state) not in legal:
                emit(_found(ILLEGAL_TRANSITION, row))
            # Continuity within the controller epoch.
            key = (epoch, entity, topic, partition, replica, incarnation.get(topic, 0))
            prev = previous.get(key)
            if prev is not None and from_state is not None and prev[0] is not None and from_state != prev[0]:
                emit(_found(DISCONTINUITY, row, prev[0], prev[1]))
            previous[key] = (to_state, seq)
            last_transition[(entity, topic, partition, replica)] = row

        if kind == PT or kind == LAIU:
            if unclean:
                emit(_found(UNCLEAN_ELECTION, row))
            inc = incarnation.get(topic, 0)
            if leader_epoch is not None and leader_epoch >= 0:
                key = (topic, inc, partition)
                highest = max_leader_epoch.get(key)
                if highest is None or leader_epoch > highest:
                    max_leader_epoch[key] = leader_epoch
                elif leader_epoch < highest:
                    emit(_found(LEADER_EPOCH_DECREASED, row, highest))
                if leader is not None and leader >= 0:
                    key = (topic, inc, partition, leader_epoch)
                    first = first_leader.get(key)
                    if first is None:
                        first_leader[key] = (leader, seq)
                    elif first[0] != leader:
                        emit(_found(DUPLICATE_LEADER, row, first[0], first[1]))
            if isr is not None:
                if leader is not None and leader >= 0 and leader not in isr and not unclean:
                    emit(_found(LEADER_NOT_IN_ISR, row))
                key = (topic, inc, partition)
                before = previous_isr.get(key)
                if replicas is not None:
                    for broker in isr:
                        if broker not in replicas and (before is None or broker not in before):
                            emit(_found(ISR_NOT_IN_REPLICAS, row, before))
                            break
                previous_isr[key] = isr
        elif kind == TF:
            failures[error] += 1
            emit(_found(FAILED_ELECTION if entity == ENTITY_PARTITION and to_state == online else REFUSED_TRANSITION,
                        row))
        elif kind == TC or kind == TDC:
            incarnation[topic] = incarnation.get(topic, 0) + 1
            last_boundary[topic] = row

    _end_era(last_transition, last_boundary, emit)


def _end_era(last_transition: dict, last_boundary: dict, emit) -> None:
    """Deleted topics end with no state, and replicas still ReplicaDeletionIneligible are stuck:
    judged at the end of each era (and of the run)."""
    TDC = TOPIC_DELETION_COMPLETED
    for (entity, topic, _p, _r), row in last_transition.items():
        if entity == ENTITY_REPLICA and row[13] == REPLICA_DELETION_INELIGIBLE:
            emit(_found(DELETION_STUCK, row))
        if topic is None:
            continue
        boundary = last_boundary.get(topic)
        if boundary is None or boundary[4] != TDC:
            continue
        gone = NON_EXISTENT.get(entity)
        to_state = row[13]
        if gone is not None and to_state is not None and to_state != gone:
            emit(_found(DELETED_TOPIC_HAS_STATE, row, boundary[3]))


# --- the KRaft era --------------------------------------------------------------------------------------
_kraft_order = itemgetter(3)   # seq (a line may make two rows: kept in the order made)
_BROKER_SCOPE = frozenset((kr.KRAFT_LEADER, kr.KRAFT_FOLLOWER, kr.KRAFT_PARTITION_CREATED))
_EPOCH_ROWS = frozenset((kr.KRAFT_LEADER, kr.KRAFT_FOLLOWER, kr.KRAFT_REGISTRATION, kr.KRAFT_ELECTION))


def _audit_kraft_run(rows: list, emit) -> None:
    """One run's KRaft rows, in order (see ``audit.checks`` for the checks and findings)."""
    found = kraft_violation
    scopes: dict = {}          # ("broker"|"controller", node) -> {(topic key, partition): [tid, le, le seq, pe, pe seq]}
    first_leader: dict = {}    # (topic id, partition, leader epoch) -> (leader, node, seq)
    registered: dict = {}      # controller node -> {broker: (broker epoch, seq)}
    cluster: dict = {}         # controller node -> its cluster id
    raft_max: dict = {}        # controller node -> (highest Raft epoch, seq)
    epoch_leader: dict = {}    # (cluster id, Raft epoch) -> (leader, node, seq)
    active: dict = {}          # controller node -> the Raft epoch it became active at (a standing claim)
    # Churn is counted over the run (one cluster: a controller's cluster id is known only once it starts).
    window: list = []          # (time_ms, epoch) of the run's new Raft epochs within the churn window
    churning = False           # in a burst already reported
    seen_epoch = -1            # the run's highest Raft epoch
    duplicates: dict = {}      # controller node -> [first row, count, last seq] of a refused-registration streak
    fenced: set = set()        # brokers the metadata log fenced (or unregistered) and has not unfenced
    metadata_log = kr.METADATA_LOG

    def end_streak(node):
        streak = duplicates.pop(node, None)
        if streak is not None:
            emit(found(KRAFT_RESTART_IN_OLD_SESSION, streak[0], streak[1], streak[2]))

    for row in rows:
        kind = row.kind
        node = row.node
        if kind in _EPOCH_ROWS or kind == kr.KRAFT_PARTITION_CREATED:
            role = "broker" if kind in _BROKER_SCOPE else "controller"
            scope = scopes.get((role, node))
            if scope is None:
                scope = scopes[(role, node)] = {}
            tid = row.topic_id
            key = (row.topic if row.topic is not None else tid, row.partition)
            entry = scope.get(key)
            if entry is None or (tid is not None and entry[0] is not None and tid != entry[0]):
                entry = scope[key] = [tid, None, None, None, None, None, None]   # a new topic id: a new topic
            elif entry[0] is None:
                entry[0] = tid
            if kind == kr.KRAFT_PARTITION_CREATED:
                continue
            le, pe, leader, isr = row.leader_epoch, row.partition_epoch, row.leader, row.isr
            if le is not None and le >= 0:
                if entry[1] is not None and le < entry[1]:
                    emit(found(KRAFT_EPOCH_DECREASED, row, ("leader epoch", le), (entry[1], entry[2])))
                else:
                    if role == "broker":
                        if entry[1] is not None:
                            if le > entry[1] + 1:
                                emit(found(KRAFT_LEADER_EPOCH_GAP, row, entry[1], entry[2]))
                        elif kind == kr.KRAFT_LEADER and row.epoch is not None and row.epoch >= 0 \
                                and le > row.epoch + 1:
                            emit(found(KRAFT_LEADER_EPOCH_GAP, row, row.epoch, None))
                    entry[1], entry[2] = le, row.seq
                tid = entry[0]
                if tid is not None and leader is not None and leader >= 0:
                    lkey = (tid, row.partition, le)
                    first = first_leader.get(lkey)
                    if first is None:
                        first_leader[lkey] = (leader, node, row.seq)
                    elif first[0] != leader:
                        emit(found(KRAFT_DUPLICATE_LEADER, row, first[0], (first[1], first[2])))
            if pe is not None and pe >= 0:
                if entry[3] is not None and pe < entry[3]:
                    emit(found(KRAFT_EPOCH_DECREASED, row, ("partition epoch", pe), (entry[3], entry[4])))
                else:
                    entry[3], entry[4] = pe, row.seq
            if kind == kr.KRAFT_ELECTION:
                emit(found(KRAFT_ELR_ELECTION if row.detail == kr.ELECTED_FROM_ELR else KRAFT_UNCLEAN_ELECTION, row))
            elif isr is not None and leader is not None and leader >= 0 and leader not in isr:
                emit(found(KRAFT_LEADER_NOT_IN_ISR, row))
            if kind == kr.KRAFT_REGISTRATION and node == metadata_log:
                if fenced:
                    if leader is not None and leader in fenced and leader != entry[6]:
                        emit(found(KRAFT_FENCED_BROKER_USED, row, leader, "made leader"))
                    for b in isr or ():
                        if b in fenced and (entry[5] is None or b not in entry[5]):
                            emit(found(KRAFT_FENCED_BROKER_USED, row, b, "added to the ISR"))
                entry[5], entry[6] = isr, leader
            if kind == kr.KRAFT_REGISTRATION and isr is not None:
                wrong = []
                if row.replicas is not None and any(b not in row.replicas for b in isr):
                    wrong.append("the ISR is not a subset of the replicas")
                if row.elr and any(b in isr for b in row.elr):
                    wrong.append("the ELR and the ISR overlap")
                if row.recovering and len(isr) != 1:
                    wrong.append("RECOVERING with an ISR other than one broker")
                if row.adding and row.removing and any(b in row.removing for b in row.adding):
                    wrong.append("the reassignment adds and removes the same replica")
                if wrong:
                    emit(found(KRAFT_INVALID_REGISTRATION, row, "; ".join(wrong)))
            continue

        if kind in kr.REPLAY_RESET_KINDS:
            scopes.pop(("controller", node), None)
            registered.pop(node, None)
            active.pop(node, None)
            if kind == kr.KRAFT_CONTROLLER_STARTED:
                if cluster.get(node, row.detail) != row.detail:
                    raft_max.pop(node, None)               # a new cluster: Raft epochs start over
                cluster[node] = row.detail
            continue

        if kind == kr.KRAFT_RAFT_EPOCH or kind == kr.KRAFT_ACTIVATED:
            epoch, leader = row.epoch, row.leader
            highest = raft_max.get(node)
            if highest is not None and epoch < highest[0]:
                emit(found(KRAFT_RAFT_EPOCH_DECREASED, row, highest[0], highest[1]))
            elif highest is None or epoch > highest[0]:
                raft_max[node] = (epoch, row.seq)
            cid = cluster.get(node)
            if leader is not None and leader >= 0:
                lkey = (cid, epoch)
                first = epoch_leader.get(lkey)
                if first is None:
                    epoch_leader[lkey] = (leader, node, row.seq)
                elif first[0] != leader:
                    emit(found(KRAFT_TWO_LEADERS_IN_EPOCH, row, first[0], (first[1], first[2])))
            if kind == kr.KRAFT_ACTIVATED:
                for other, since in sorted(active.items()):
                    if other != node:
                        emit(found(KRAFT_TWO_ACTIVE_CONTROLLERS, row, other, since))
                active[node] = epoch
            elif node in active and epoch > active[node] and leader != node:
                del active[node]
            # Churn: new epochs of the cluster within the window.
            if row.time_ms is not None and epoch > seen_epoch:
                seen_epoch = epoch
                window.append((row.time_ms, epoch))
                while window[0][0] < row.time_ms - CHURN_WINDOW_MS:
                    window.pop(0)
                spanned = epoch - window[0][1] + 1   # Raft epochs that began in the window, logged or not
                if spanned >= CHURN_EPOCHS:
                    if not churning:
                        churning = True
                        emit(found(KRAFT_CONTROLLER_CHURN, row, spanned, (window[0][1], epoch)))
                else:
                    churning = False
            continue

        if kind == kr.KRAFT_BROKER_REGISTERED:
            end_streak(node)
            regs = registered.setdefault(node, {})
            prev = regs.get(row.broker)
            if (prev is not None and row.detail == kr.REGISTERED_INCARNATION and row.epoch is not None
                    and row.epoch <= prev[0]):
                emit(found(KRAFT_BROKER_EPOCH_DECREASED, row, prev[0], prev[1]))
            regs[row.broker] = (row.epoch, row.seq)
        elif kind == kr.KRAFT_BROKER_CHANGED or kind == kr.KRAFT_BROKER_FENCED:
            if node == metadata_log:
                if row.detail == kr.FENCED or row.detail == kr.UNREGISTERED:
                    fenced.add(row.broker)
                elif row.detail == kr.UNFENCED:
                    fenced.discard(row.broker)
            prev = registered.get(node, {}).get(row.broker)
            if prev is not None and row.epoch is not None and row.epoch != prev[0]:
                emit(found(KRAFT_STALE_BROKER_EPOCH, row, prev[0]))
            if kind == kr.KRAFT_BROKER_FENCED:
                end_streak(node)
                emit(found(KRAFT_SESSION_TIMEOUT, row))
        elif kind == kr.KRAFT_DUPLICATE_REGISTRATION:
            streak = duplicates.get(node)
            if streak is None:
                duplicates[node] = [row, 1, row.seq]
            else:
                streak[1] += 1
                streak[2] = row.seq
    for node in sorted(duplicates):
        end_streak(node)
