"""The batch path of the ReplicaStateMachine: OfflineReplica for many replicas of one broker as array work.

``offline_replicas_batch`` is ``ReplicaStateMachine._do_handle_state_changes(broker, replicas, OfflineReplica)``
for the common case — every replica has a state valid for the move, every partition has leadership info
in the context and a ``/state`` in the store written by this controller's epoch or an older one, no topic
is queued for deletion: StopReplica to the broker, the broker removed from each ISR with one fenced
conditional write per partition (Kafka's ``removeReplicasFromIsr``), LeaderAndIsr to the other replicas,
UpdateMetadata, and the records, in the per-partition path's order. Anything else returns False before it
has changed anything, and the caller takes the per-partition path (the reference: both give the same
records and store bytes, tests/test_batch_differential.py).
"""
from __future__ import annotations

import logging

import numpy as np

from events.columns import DictColumn
from events.records import UPDATE_OFFLINE_REPLICA, LeaderAndIsrUpdated, ReplicaTransition
from statemachines.election_arrays import remove_replica_from_isrs
from statemachines import partition_batch as pb
from statemachines.partition_batch import list_column, topic_column
from statemachines import failures
from statemachines.leader_and_isr import TopicPartition
from statemachines.replica_rows import ReplicaRows
from statemachines.states import (
    NEW_REPLICA, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_REPLICA, REPLICA_BY_BYTE, VALID_PREVIOUS_REPLICA_BYTES,
)



def offline_states(sm, replica_id: int, replicas: list[tuple]) -> tuple[np.ndarray, list] | None:
    """(The current states of ``replicas`` (all of broker ``replica_id``) as an array, their topic segments),
    when every one has a state valid for OfflineReplica; None otherwise (the per-replica path then logs the
    invalid ones)."""
    ctx = sm.context
    if len(replicas) < pb.BATCH_MIN:
        return None
    segments = ctx.topic_segments(replicas)
    if segments is None:
        return None
    valid = np.fromiter(VALID_PREVIOUS_REPLICA_BYTES[OFFLINE_REPLICA], dtype=np.uint8)
    out = []
    for ts, parts, _, _ in segments:
        col, cur = ctx.replica_states_array(ts, parts, replica_id)
        if (col < 0).any() or not np.isin(cur, valid).all():
            return None
        out.append(cur)
    return (np.concatenate(out) if out else np.zeros(0, dtype=np.uint8)), segments


def offline_replicas_batch(sm, replica_id: int, replicas: list[tuple], curs, segments: list | None = None) -> bool:
    """Move ``replicas`` (all of broker ``replica_id``, each valid for OfflineReplica, ``curs`` their states)
    to OfflineReplica; False (nothing done) when the per-partition path must do it."""
    ctx, store = sm.context, sm.store
    if (len(replicas) < pb.BATCH_MIN or not hasattr(store, "write_leader_and_isr_columns")
            or not hasattr(sm.batch, "add_leader_and_isr_segments")):
        return False
    if segments is None:
        segments = ctx.topic_segments(replicas)
    if segments is None:
        return False
    for ts, parts, _, _ in segments:
        if ctx.is_topic_queued_up_for_deletion(ts.name):
            return False
        col, _ = ctx.replica_states_array(ts, parts, replica_id)
        if (col < 0).any() or (ctx.leadership_arrays(ts, parts)[2] == -1).any():
            return False
    # From here on the batch changes things, in the per-partition path's order.
    batch = sm.batch
    epoch = ctx.epoch
    for ts, parts, _, _ in segments:
        batch.add_stop_replica_columns(replica_id, ts, parts, False)
    reads = []
    try:
        for ts, parts, _, _ in segments:
            reads.append(store.read_partition_state_columns(ts.name, parts))
    except Exception as exc:   # a failed read fails every partition, no retry
        for rep, cur in zip(replicas, curs):
            sm._log_failed_state_change(rep, cur, OFFLINE_REPLICA, exc)
        sm._succeed([], [], OFFLINE_REPLICA)
        return True
    # Every topic run's reads as one set of rows: the checks and the ISR removals in one pass over all of them.
    n_all = len(replicas)
    exists = np.concatenate([r.exists for r in reads])
    r_epoch = np.concatenate([r.controller_epoch for r in reads])
    isr_width = max(r.isr.shape[1] for r in reads)
    r_isr = np.concatenate([pb.pad_rows(np.asarray(r.isr, dtype=np.int32), isr_width) for r in reads])
    r_leader = np.concatenate([r.leader for r in reads])
    r_leader_epoch = np.concatenate([r.leader_epoch for r in reads])
    r_recovery = np.concatenate([r.recovery for r in reads])
    r_version = np.concatenate([r.version for r in reads])
    usable = exists & (r_epoch <= epoch)
    failed_reads: list[tuple[int, Exception]] = []
    for i in np.flatnonzero(~usable).tolist():
        tp = replicas[i][:2]
        failed_reads.append((i, failures.isr_path_empty(replica_id, tp) if not exists[i] else
                             failures.isr_path_written_by_newer_controller(epoch, int(r_epoch[i]))))
    new_leader, new_isr, contains = remove_replica_from_isrs(r_leader, r_isr, replica_id)
    contains &= usable
    keep = ~contains & usable
    # Nothing to write for the rows without the replica in their ISR: cached as read, under this epoch.
    keep_codes = ctx.codes_of_rows(r_isr[keep]) if keep.any() else np.zeros(0, dtype=np.int32)
    at = 0
    for ts, parts, start, end in segments:
        k = keep[start:end]
        m = int(np.count_nonzero(k))
        if m:
            sel = np.flatnonzero(k) + start
            ctx.put_leadership_arrays(ts, parts[k], r_leader[sel], r_leader_epoch[sel], keep_codes[at:at + m],
                                      r_recovery[sel], r_version[sel], epoch)
            at += m

    written = []   # per segment: (rows written, new leader, new leader epoch, new ISR, recovery, new version)
    check_failed = None
    errors: list[tuple[int, Exception]] = []   # (row, error) of writes that failed otherwise than BADVERSION
    retry: list[int] = []                      # rows whose write hit BADVERSION
    for ts, parts, start, end in segments:
        rows = np.flatnonzero(contains[start:end])
        version = np.zeros(0, dtype=np.int32)
        at = start + rows
        leader, leader_epoch, isr, recovery = new_leader[at], r_leader_epoch[at] + 1, new_isr[at], r_recovery[at]
        if len(rows):
            res = store.write_leader_and_isr_columns(ts.name, parts[rows], leader, leader_epoch, isr, recovery,
                                                     r_version[at], epoch, ctx.epoch_zk_version)
            check_failed = check_failed or res.check_failed
            version = res.version
            errors.extend((start + int(rows[i]), e) for i, e in sorted(res.errors.items()))
            retry.extend((start + rows[version == -1]).tolist())
        ok = version >= 0
        if not ok.all():
            rows, leader, leader_epoch, isr, recovery, version = (rows[ok], leader[ok], leader_epoch[ok], isr[ok],
                                                                  recovery[ok], version[ok])
        written.append((rows, leader, leader_epoch, isr, recovery, version))
    if check_failed is not None:
        raise check_failed

    # Written partitions: cached and recorded (LeaderAndIsrUpdated, one batch for every topic), in row order.
    runs = [(ts, parts[w[0]], w) for (ts, parts, _, _), w in zip(segments, written) if len(w[0])]
    if runs:
        isr_all = np.concatenate([w[3] for _, _, w in runs])
        codes = ctx.codes_of_rows(isr_all)
        at = 0
        for ts, sel, (rows, leader, leader_epoch, isr, recovery, version) in runs:
            ctx.put_leadership_arrays(ts, sel, leader, leader_epoch, codes[at:at + len(rows)], recovery, version,
                                      epoch)
            at += len(rows)
        n = at
        sm.journal.emit_columns(
            LeaderAndIsrUpdated, topic=topic_column([(ts, sel) for ts, sel, _ in runs]),
            partition=np.concatenate([sel for _, sel, _ in runs]),
            leader=np.concatenate([w[1] for _, _, w in runs]), leader_epoch=np.concatenate([w[2] for _, _, w in runs]),
            isr=list_column(isr_all), partition_epoch=np.concatenate([w[5] for _, _, w in runs]),
            recovery_state=np.concatenate([w[4] for _, _, w in runs]),
            reason=np.full(n, UPDATE_OFFLINE_REPLICA, dtype=np.int32),
            replica=np.full(n, replica_id, dtype=np.int32))
    for row, exc in failed_reads + errors:
        sm._log_failed_state_change(replicas[row], curs[row], OFFLINE_REPLICA, exc)
    for row in retry:
        sm._log.debug(f"Controller failed to remove replica {replica_id} from ISR of partition "
                      f"{TopicPartition(*replicas[row][:2])}. This will be retried.")
    # Kafka's order of the results: the partitions without the broker in their ISR first, then the written
    # ones, then those of the retries.
    updated_rows = []
    for (ts, parts, start, _), (rows, *_rest) in zip(segments, written):
        mask = np.ones(len(parts), dtype=bool)
        mask[rows] = False
        for row in retry:
            if start <= row < start + len(parts):
                mask[row - start] = False
        for row, _ in failed_reads + errors:
            if start <= row < start + len(parts):
                mask[row - start] = False
        updated_rows.append((ts, parts, start, np.flatnonzero(mask)))
    for (ts, parts, start, _), (rows, *_rest) in zip(segments, written):
        updated_rows.append((ts, parts, start, rows))
    later = {}
    if retry:
        later = sm._remove_replicas_from_isr(replica_id, [replicas[row][:2] for row in retry],
                                             {replicas[row]: curs[row] for row in retry})

    log_info = sm.trace_transitions and sm._log.is_enabled_for(logging.INFO)
    matrix = ctx.pool.matrix()
    adds = []
    for ts, parts, start, rows in updated_rows:
        if not len(rows):
            continue
        sel = parts[rows]
        if log_info:
            _log_isr_removals(sm, ts, sel, replica_id)
        recipients = matrix[ctx.assignment_codes(ts, sel)]
        adds.append((ts, sel, np.where(recipients == replica_id, -1, recipients)))
    batch.add_leader_and_isr_segments(adds, False)
    for tp, info in later.items():
        if log_info:
            sm._log.info(f"Partition {TopicPartition(*tp)} state changed to {info.kafka_str()} after removing replica "
                         f"{replica_id} from the ISR as part of transition to OfflineReplica", epoch=epoch)
        full = ctx.partition_full_replica_assignment(tp)
        batch.add_leader_and_isr_request_for_brokers([r for r in full.replicas if r != replica_id], tp, info, full,
                                                     False)

    # ReplicaTransition records (Kafka's logSuccessfulTransition) and the new states, in the results' order.
    cur_of_row = np.asarray(curs, dtype=np.uint8)
    done = [(ts, parts[rows], cur_of_row[start + rows]) for ts, parts, start, rows in updated_rows if len(rows)]
    for tp in later:
        ts = ctx.topics[tp[0]]
        p = np.array([tp[1]], dtype=np.int64)
        done.append((ts, p, np.array([ctx.replica_state((tp[0], tp[1], replica_id))], dtype=np.uint8)))
    transitions_columns(sm, replica_id, done, OFFLINE_REPLICA)
    return True


def _log_isr_removals(sm, ts, sel: np.ndarray, replica_id: int) -> None:
    """Kafka's info line for each partition whose ISR lost ``replica_id`` (trace_transitions only)."""
    ctx = sm.context
    tuples = ctx.pool.tuples
    ce, leader, le, icode, pe, rec = (a.tolist() for a in ctx.leadership_arrays(ts, sel))
    for i, p in enumerate(sel.tolist()):
        sm._log.info(f"Partition {TopicPartition(ts.name, p)} state changed to "
                     f"(Leader:{leader[i]},ISR:{','.join(map(str, tuples[icode[i]]))},LeaderRecoveryState:"
                     f"{'RECOVERED' if rec[i] == 0 else 'RECOVERING'},LeaderEpoch:{le[i]},ZkVersion:{pe[i]},"
                     f"ControllerEpoch:{ce[i]}) after removing replica {replica_id} from the ISR as part of "
                     f"transition to OfflineReplica", epoch=ctx.epoch)


def transitions_columns(sm, replica_id: int, done: list, target: int) -> None:
    """``ReplicaStateMachine._succeed`` for replicas of broker ``replica_id`` given as ``done`` = [(topic columns,
    partitions, current states)] in order: ReplicaTransition records as one columnar batch, and the new states."""
    if not done:
        return
    ctx = sm.context
    topics = [ts.name for ts, _, _ in done]
    codes = np.repeat(np.arange(len(done), dtype=np.int32), [len(p) for _, p, _ in done])
    parts = np.concatenate([p for _, p, _ in done])
    cur = np.concatenate([c for _, _, c in done])
    n = len(parts)
    if len(set(topics)) == len(topics):
        topic = DictColumn(tuple(topics), codes)
    else:
        names = list(dict.fromkeys(topics))
        index = np.array([names.index(t) for t in topics], dtype=np.int32)
        topic = DictColumn(tuple(names), index[codes])
    sm.journal.emit_columns(ReplicaTransition, topic=topic, partition=parts,
                            replica=np.full(n, replica_id, dtype=np.int32), from_state=cur,
                            to_state=np.full(n, target, dtype=np.uint8))
    if sm.trace_transitions and sm._log.is_enabled_for(logging.DEBUG):
        for t, p, c in zip(np.array(topics, dtype=object)[codes].tolist(), parts.tolist(), cur.tolist()):
            sm._log.debug(f"Changed state of replica {replica_id} for partition {t}-{p} from {REPLICA_BY_BYTE[c]} "
                          f"to {REPLICA_BY_BYTE[target]}", epoch=ctx.epoch)
    for ts, p, _ in done:
        cols, _ = ctx.replica_states_array(ts, p, replica_id)
        ctx.put_replica_states_array(ts, p, cols, target)


def new_or_online_replicas_batch(sm, replica_id: int, replicas: list[tuple], target: int) -> bool:
    """``_do_handle_state_changes(replica_id, replicas, NewReplica | OnlineReplica)`` for the common case: every
    replica's state valid for the move; for NewReplica no partition with leadership info yet (a new
    topic's); for OnlineReplica a NewReplica always in its partition's assignment. LeaderAndIsr to the
    broker for replicas coming back online (OfflineReplica, ...) of partitions with leadership info. False
    (only the states Kafka puts first, NonExistentReplica where none, put) when the per-partition path must
    do it."""
    ctx = sm.context
    if len(replicas) < pb.BATCH_MIN or not hasattr(sm.batch, "add_leader_and_isr_segments"):
        return False
    segments = ctx.topic_segments(replicas)
    if segments is None:
        return False
    valid_prev = np.fromiter(VALID_PREVIOUS_REPLICA_BYTES[target], dtype=np.uint8)
    checked = []
    contains = ctx.pool.contains_any((replica_id,))
    for ts, parts, _, _ in segments:
        cols, cur = ctx.ensure_replica_states(ts, parts, replica_id, NON_EXISTENT_REPLICA)
        if not np.isin(cur, valid_prev).all():
            return False
        has_info = ctx.leadership_arrays(ts, parts)[2] != -1
        if target == NEW_REPLICA and has_info.any():
            return False
        if target == ONLINE_REPLICA and not contains[ctx.assignment_codes(ts, parts)][cur == NEW_REPLICA].all():
            return False
        checked.append((cols, cur, has_info))
    if target == ONLINE_REPLICA:
        adds = []
        for (ts, parts, _, _), (_, cur, has_info) in zip(segments, checked):
            sel = parts[(cur != NEW_REPLICA) & has_info]
            if len(sel):
                adds.append((ts, sel, np.full((len(sel), 1), replica_id, dtype=np.int32)))
        sm.batch.add_leader_and_isr_segments(adds, False)
    succeed_columns(sm, replica_id, replicas, segments, checked, target)
    return True


def new_or_online_all_brokers(sm, rows: ReplicaRows, target: int) -> bool:
    """``new_or_online_replicas_batch`` for the groups of every broker of ``rows`` at once, as
    ``handle_state_changes`` runs them one after the other (each broker's group in order of its first row,
    each group in row order): one array pass over all rows, the same records in the same order. False (only
    the states Kafka puts first, NonExistentReplica where none, put — in that order) when any group would
    not take the batch path; the caller then runs the groups one by one."""
    ctx = sm.context
    batch = sm.batch
    n = len(rows)
    if (n < pb.BATCH_MIN or not hasattr(batch, "add_update_metadata_rows")
            or not hasattr(batch, "add_leader_and_isr_segments")):
        return False
    runs = rows.topic_runs()
    if len({t for t, _, _ in runs}) != len(runs):
        return False
    position = group_positions(rows.replica)
    if position is None:
        return False

    valid_prev = np.fromiter(VALID_PREVIOUS_REPLICA_BYTES[target], dtype=np.uint8)
    matrix_of = ctx.pool.matrix
    cols = np.empty(n, dtype=np.int64)
    cur = np.empty(n, dtype=np.uint8)
    segments = []
    for topic, start, end in runs:
        ts = ctx.topics.get(topic)
        parts, reps = rows.partition[start:end], rows.replica[start:end]
        if ts is None or int(parts.min()) < 0 or int(parts.max()) >= len(ts):
            return False
        c, s = ctx.replica_states_array(ts, parts, reps)
        if not _distinct(parts, c, ts.rwidth):
            return False   # a replica listed twice: its broker's group lists the partition twice
        missing = np.flatnonzero(c < 0)
        if len(missing):
            assigned = matrix_of()[ctx.assignment_codes(ts, parts[missing])]
            hit = assigned == reps[missing][:, None]
            if not hit.any(axis=1).all() or not _distinct(parts[missing], hit.argmax(axis=1), assigned.shape[1]):
                return False
            # States put first (NonExistentReplica), in the groups' order, as the groups one by one put them.
            missing = missing[np.argsort(position[start + missing])]
            c[missing], s[missing] = ctx.ensure_replica_states(ts, parts[missing], reps[missing], NON_EXISTENT_REPLICA)
        cols[start:end] = c
        cur[start:end] = s
        segments.append((ts, parts, reps, start, end))
    for ts, parts, reps, start, end in segments:
        seg_cur = cur[start:end]
        if not np.isin(seg_cur, valid_prev).all():
            return False
        if target == NEW_REPLICA:
            if (ctx.leadership_arrays(ts, parts)[2] != -1).any():
                return False
        elif target == ONLINE_REPLICA:
            new = seg_cur == NEW_REPLICA
            if new.any() and not (matrix_of()[ctx.assignment_codes(ts, parts[new])] == reps[new][:, None]).any(
                    axis=1).all():
                return False

    if target == ONLINE_REPLICA:
        _online_requests(ctx, batch, segments, cur, position)

    # ReplicaTransition records, group after group, and the new states.
    order = np.empty(n, dtype=np.int64)
    order[position] = np.arange(n)
    run_of_code = np.full(len(rows.names), -1, dtype=np.int32)
    for i, (topic, _, _) in enumerate(runs):
        run_of_code[rows.names.index(topic)] = i
    sm.journal.emit_columns(ReplicaTransition, topic=DictColumn(tuple(t for t, _, _ in runs),
                                                                run_of_code[rows.topic[order]]),
                            partition=rows.partition[order], replica=rows.replica[order], from_state=cur[order],
                            to_state=np.full(n, target, dtype=np.uint8))
    if sm.trace_transitions and sm._log.is_enabled_for(logging.DEBUG):
        for i in order.tolist():
            t, p, r = rows[i]
            sm._log.debug(f"Changed state of replica {r} for partition {t}-{p} from {REPLICA_BY_BYTE[int(cur[i])]} "
                          f"to {REPLICA_BY_BYTE[target]}", epoch=ctx.epoch)
    for ts, parts, reps, start, end in segments:
        ctx.put_replica_states_array(ts, parts, cols[start:end], target)
    return True


def _online_requests(ctx, batch, segments: list, cur: np.ndarray, position: np.ndarray) -> None:
    """OnlineReplica's requests for every group: LeaderAndIsr to each replica's broker for the replicas
    coming back (not NewReplica) of partitions with leadership info — a broker's entries in row order, as
    its group adds them — and the UpdateMetadata state of each of those partitions once, where the groups
    one by one first add it (their later adds repeat the same state: leadership does not change here)."""
    adds, lai_rows, bases = [], [], []
    base = 0
    for ts, parts, reps, start, end in segments:
        sel = np.flatnonzero((cur[start:end] != NEW_REPLICA) & (ctx.leadership_arrays(ts, parts)[2] != -1))
        if len(sel):
            adds.append((ts, parts[sel], reps[sel][:, None]))
            lai_rows.append((start + sel, parts[sel] + base))
        bases.append(base)
        base += len(ts)
    if not adds:
        return
    batch.add_leader_and_isr_segments(adds, False, update_metadata=False)
    rows = np.concatenate([r for r, _ in lai_rows])
    key = np.concatenate([k for _, k in lai_rows])       # partitions numbered across the segments' topics
    first = np.full(base, len(position), dtype=np.int64)
    np.minimum.at(first, key, position[rows])
    slot = np.full(len(position), -1, dtype=np.int64)
    taken = np.flatnonzero(first < len(position))
    slot[first[taken]] = taken
    key = slot[slot >= 0]                                 # the partitions in order of their first add
    seg = np.searchsorted(np.asarray(bases, dtype=np.int64), key, side="right") - 1
    batch.add_update_metadata_rows([ts for ts, *_ in segments], seg, key - np.asarray(bases, dtype=np.int64)[seg])


def group_positions(replica: np.ndarray) -> np.ndarray | None:
    """Where each row goes when rows are listed group after group — groups by replica id in order of each
    id's first row, each in row order (``ReplicaRows.by_replica``): the rows' positions in that listing.
    None for ids outside 0..32767."""
    n = len(replica)
    if not n or int(replica.min()) < 0 or int(replica.max()) >= 1 << 15:
        return None
    first = np.full(int(replica.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, replica, np.arange(n))
    present = np.flatnonzero(first < n)
    rank = np.zeros(len(first), dtype=np.int16)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(len(present))
    order = np.argsort(rank[replica], kind="stable")   # 16-bit keys: a radix sort
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    return position


def _distinct(parts: np.ndarray, cols: np.ndarray, width: int) -> bool:
    """Are the (partition, column) pairs with ``cols >= 0`` distinct (``width`` bounding the columns)?"""
    have = cols >= 0
    if not have.any():
        return True
    key = parts[have] * max(width, 1) + cols[have]
    return int(np.bincount(key).max()) <= 1


def succeed_columns(sm, replica_id: int, replicas: list[tuple], segments: list, checked: list, target: int) -> None:
    """``ReplicaStateMachine._succeed`` for the replicas of broker ``replica_id`` in ``segments`` (all of
    ``replicas``, in order), their state columns and current states in ``checked``: ReplicaTransition records
    as one columnar batch, and the new states."""
    if not replicas:
        return
    cur = np.concatenate([c[1] for c in checked])
    sm.journal.emit_columns(ReplicaTransition, topic=topic_column(segments),
                            partition=np.concatenate([s[1] for s in segments]),
                            replica=np.full(len(replicas), replica_id, dtype=np.int32), from_state=cur,
                            to_state=np.full(len(replicas), target, dtype=np.uint8))
    if sm.trace_transitions and sm._log.is_enabled_for(logging.DEBUG):
        for (t, p, r), c in zip(replicas, cur.tolist()):
            sm._log.debug(f"Changed state of replica {r} for partition {t}-{p} from {REPLICA_BY_BYTE[c]} to "
                          f"{REPLICA_BY_BYTE[target]}", epoch=sm.context.epoch)
    for (ts, parts, _, _), (cols, _, _) in zip(segments, checked):
        sm.context.put_replica_states_array(ts, parts, cols, target)


def update_metadata_of(batch, selections: list) -> list | None:
    """The partitions ``(columns, indexes)`` in ``selections`` whose UpdateMetadata states the batch adds as
    arrays (``add_leader_and_isr_requests``' ``update_metadata``); None where it adds them one by one."""
    if not hasattr(batch, "add_update_metadata_columns"):
        return None
    return [(ts, parts) for ts, parts in selections if len(parts)]
