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
column order).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from operator import itemgetter

from audit.checks import (
    CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, DELETED_TOPIC_HAS_STATE, DELETION_STUCK, DISCONTINUITY,
    DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION, ISR_NOT_IN_REPLICAS,
    LEADER_EPOCH_DECREASED, LEADER_NOT_IN_ISR, LEGAL_TRANSITIONS, NON_EXISTENT, REFUSED_TRANSITION, UNCLEAN_ELECTION,
    ZOMBIE_WRITE, Report, Violation, build_report, violation,
)
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE
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


def audit(rows: Iterable[AuditRow], *, limit: int | None = None) -> Report:
    """Run every check over ``rows``; list at most ``limit`` violations (the counts are always exact)."""
    by_run: dict = defaultdict(list)
    for row in rows:
        by_run[row[0]].append(row)
    rows_by_kind: Counter = Counter()
    failures: Counter = Counter()
    found: list[Violation] = []
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
    return build_report(found, counts, rows_by_kind, failures, len(by_run), limit, rows_by_run)


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
