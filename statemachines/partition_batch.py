"""The batch path of the PartitionStateMachine: leader elections of many partitions as array work.

``elect_batch`` is the election branch of ``PartitionStateMachine._do_handle_state_changes`` (Offline or
Online partitions to OnlinePartition) for the offline strategy (clean and unclean) and the
controlled-shutdown strategy: the ``/state`` of each partition read and checked, the leader and ISR
chosen by the array forms of Kafka's algorithms (``election_arrays``), one fenced conditional write per
partition, the context, the LeaderAndIsr / UpdateMetadata requests, the failures and the
PartitionTransition records, in the per-partition path's order. Write retries after BADVERSION go to the
per-partition path inside the batch. Anything it does not cover (other strategies, replicas on offline log
directories, a partition listed twice) returns False before it has changed anything, and the caller takes
the per-partition path (the reference: tests/test_batch_differential.py holds both to the same records).
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from events.arrays import unique
from events.records import (
    ELECTION_CONTROLLED_SHUTDOWN, ELECTION_NEW_PARTITION, ELECTION_NONE, ELECTION_OFFLINE, ELECTION_OFFLINE_UNCLEAN,
    RECOVERING, PartitionTransition,
)
from events.columns import DictColumn, ListColumn
from statemachines import election_arrays as ea
from statemachines import failures as fail
from statemachines.leader_and_isr import LeaderAndIsr, TopicPartition
from statemachines.states import ONLINE_PARTITION, PARTITION_BY_BYTE


def elect_batch(sm, partitions: list[tuple], strategy, current: dict, results: dict, log_info: bool) -> bool:
    """Elect leaders for ``partitions`` (each valid for OnlinePartition and not New), filling ``results`` as
    the per-partition path does; False (nothing done) when that path must do it."""
    from statemachines.partition_state_machine import (
        ControlledShutdownPartitionLeaderElectionStrategy, OfflinePartitionLeaderElectionStrategy,
    )
    ctx, store = sm.context, sm.store
    offline = isinstance(strategy, OfflinePartitionLeaderElectionStrategy)
    shutdown = isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy)
    if (len(partitions) < BATCH_MIN or not (offline or shutdown) or not hasattr(store, "write_leader_and_isr_columns")
            or ctx.has_offline_dirs()
            or not hasattr(sm.batch, "add_leader_and_isr_segments")):
        return False
    segments = ctx.topic_segments(partitions)
    if segments is None:
        return False
    epoch = ctx.epoch
    failures: list[tuple[int, Exception]] = []   # (row, error), in Kafka's order
    try:
        reads = [store.read_partition_state_columns(ts.name, parts) for ts, parts, _, _ in segments]
    except Exception as exc:   # a failed read fails every partition, no retry
        for tp in partitions:
            sm._log_failed_state_change(tp, current[tp], ONLINE_PARTITION, exc)
            results[tp] = exc
        return True
    # Every topic run's reads as one set of rows: the checks and elections in one pass over all of them.
    bounds = np.array([seg[2] for seg in segments] + [len(partitions)], dtype=np.int64)
    exists = np.concatenate([r.exists for r in reads])
    r_epoch = np.concatenate([r.controller_epoch for r in reads])
    isr_width = max(r.isr.shape[1] for r in reads)
    r_isr = np.concatenate([pad_rows(np.asarray(r.isr, dtype=np.int32), isr_width) for r in reads])
    usable = exists & (r_epoch <= epoch)
    for i in np.flatnonzero(~usable).tolist():
        tp = partitions[i]
        failures.append((i, fail.no_leadership_info(tp, PARTITION_BY_BYTE[ctx.partition_state(tp)])
                         if not exists[i] else
                         fail.election_aborted_by_newer_controller(tp, sm.controller_id, int(r_epoch[i]))))

    live = ctx.live_mask(include_shutting_down_brokers=shutdown)
    down = np.zeros(0, dtype=bool)
    if shutdown:
        down = np.zeros(max(ctx.shutting_down_broker_ids, default=-1) + 1, dtype=bool)
        down[list(ctx.shutting_down_broker_ids)] = True
    matrix = ctx.pool.matrix()
    assignment = matrix[np.concatenate([ctx.assignment_codes(ts, parts) for ts, parts, _, _ in segments])]
    live_cols = ea.broker_mask(assignment, live)
    if offline:
        isr_live = ea.broker_mask(r_isr, live).any(axis=1)
        if strategy.allow_unclean:
            allowed = np.ones(len(partitions), dtype=bool)
        else:
            # The topic's config is read only where a usable partition has no live ISR member (as Kafka does).
            lacking = np.add.reduceat((usable & ~isr_live).astype(np.int64), bounds[:-1]) > 0 \
                if len(partitions) else np.zeros(0, dtype=bool)
            enabled = [bool(need) and sm.unclean_leader_election_enabled(ts.name)
                       for (ts, _, _, _), need in zip(segments, lacking.tolist())]
            allowed = np.repeat(np.asarray(enabled, dtype=bool), np.diff(bounds))
        leader, unclean = ea.offline_partition_leaders(assignment, r_isr, live, ~isr_live & allowed)
        unclean &= usable
        new_isr = ea.offline_new_isrs(leader, r_isr, live)
        recovery = np.concatenate([r.recovery for r in reads])
        if sm.leader_recovery_supported:
            recovery[unclean] = RECOVERING
        codes = np.where(unclean, ELECTION_OFFLINE_UNCLEAN, ELECTION_OFFLINE)
        # Kafka marks UncleanLeaderElectionsPerSec when the algorithm picks, before the write.
        ctx.unclean_leader_elections += int(np.count_nonzero(unclean))
    else:
        leader = ea.controlled_shutdown_leaders(assignment, r_isr, live, down)
        new_isr = ea.controlled_shutdown_new_isrs(r_isr, down)
        recovery = np.concatenate([r.recovery for r in reads])
        codes = np.full(len(partitions), ELECTION_CONTROLLED_SHUTDOWN)
    failures.sort(key=lambda f: f[0])
    failures += [(row, fail.no_leader_elected(partitions[row], strategy))
                 for row in np.flatnonzero(usable & (leader < 0)).tolist()]
    chosen = usable & (leader >= 0)
    recipients = np.where(live_cols, assignment, -1)
    leader_epoch = np.concatenate([r.leader_epoch for r in reads]) + 1
    version = np.concatenate([r.version for r in reads])
    elected = []   # per segment: (rows, leader, new ISR, recovery, codes, recipients matrix, epoch, version)
    for (ts, parts, start, end) in segments:
        rows = np.flatnonzero(chosen[start:end])
        at = start + rows
        elected.append((rows, leader[at], new_isr[at], recovery[at], codes[at], recipients[at], leader_epoch[at],
                        version[at]))

    # The writes, one fenced conditional write per partition in row order.
    written = []
    check_failed = None
    retry: list[int] = []
    write_errors: list[tuple[int, Exception]] = []
    for (ts, parts, start, _), (rows, leader, isr, recovery, codes, recipients, leader_epoch, version) in zip(
            segments, elected):
        new_version = np.zeros(0, dtype=np.int32)
        if len(rows):
            res = store.write_leader_and_isr_columns(ts.name, parts[rows], leader, leader_epoch, isr, recovery,
                                                     version, epoch, ctx.epoch_zk_version)
            check_failed = check_failed or res.check_failed
            new_version = res.version
            write_errors.extend((start + int(rows[i]), e) for i, e in sorted(res.errors.items()))
            retry.extend((start + rows[new_version == -1]).tolist())
        written.append(new_version)
    if check_failed is not None:
        raise check_failed

    # Successful writes: cached, and LeaderAndIsr + UpdateMetadata for the live replicas (row order).
    kept = []   # per segment with a successful write: (segment, its elected rows, the write's new versions)
    for seg, el, new_version in zip(segments, elected, written):
        ok = new_version >= 0
        if not ok.any():
            continue
        if not ok.all():
            el = tuple(a[ok] for a in el)
            new_version = new_version[ok]
        kept.append((seg, el, new_version))
    # The new ISRs' pool codes in one pass over every topic's rows (each distinct ISR interned once).
    isr_codes = ctx.codes_of_rows(np.concatenate([el[2] for _, el, _ in kept])).tolist() if kept else []
    tuples = ctx.pool.tuples
    done_rows, done_lai, done_codes = [], [], []
    adds = []
    at = 0
    new = tuple.__new__
    for (ts, parts, start, _), (rows, leader, _isr, recovery, codes, recipients, leader_epoch, _v), new_version in kept:
        sel = parts[rows]
        icodes = isr_codes[at:at + len(rows)]
        at += len(rows)
        ctx.put_leadership_arrays(ts, sel, leader, leader_epoch, np.asarray(icodes, dtype=np.int32), recovery,
                                  new_version, epoch)
        adds.append((ts, sel, recipients))
        done_lai.extend(new(LeaderAndIsr, row) for row in zip(
            leader.tolist(), leader_epoch.tolist(), map(tuples.__getitem__, icodes), recovery.tolist(),
            new_version.tolist()))
        done_codes.extend(codes.tolist())
        done_rows.extend((start + rows).tolist())
    sm.batch.add_leader_and_isr_segments(adds, False)   # each partition's state as the context holds it now

    if not failures and not write_errors and not retry and len(done_rows) == len(partitions):
        # Every partition elected and written, in row order (the common case): the results as they stand.
        results.update(zip(partitions, done_lai))
        currents = list(map(current.__getitem__, partitions))
        if log_info:
            for tp, lai in zip(partitions, done_lai):
                sm._log.info(f"Changed partition {TopicPartition(*tp)} from {PARTITION_BY_BYTE[current[tp]]} to "
                             f"OnlinePartition with state {lai.kafka_str()}", epoch=epoch)
        _emit_online(sm, partitions, currents, done_codes, done_lai)
        ctx.put_partition_states(partitions, ONLINE_PARTITION)
        return True

    # Kafka's order of the first round's results: failed reads, failed elections, then the writes in order.
    outcome: dict = {}
    for row, exc in failures:
        outcome[row] = exc
    by_row = dict(zip(done_rows, zip(done_lai, done_codes)))
    errors = dict(write_errors)
    for row in sorted(set(done_rows) | set(errors)):
        outcome[row] = errors[row] if row in errors else by_row[row]
    for row, res in outcome.items():
        if isinstance(res, Exception):
            sm._log_failed_state_change(partitions[row], current[partitions[row]], ONLINE_PARTITION, res)
    finished = {partitions[row]: res for row, res in outcome.items()}
    if retry:
        tps = [partitions[row] for row in retry]
        sm._log.info(f"Retrying leader election with strategy {strategy} for partitions "
                     f"{','.join(str(TopicPartition(*tp)) for tp in tps)}")
        finished.update(sm._elect_leader_for_partitions(tps, strategy, current))

    # PartitionTransition records and OnlinePartition, in the results' order.
    online, currents, codes = [], [], []
    for tp, res in finished.items():
        if isinstance(res, Exception):
            results[tp] = res
            continue
        lai, code = res
        results[tp] = lai
        online.append(tp)
        currents.append(current[tp])
        codes.append(code)
        if log_info:
            sm._log.info(f"Changed partition {TopicPartition(*tp)} from {PARTITION_BY_BYTE[current[tp]]} to "
                         f"OnlinePartition with state {lai.kafka_str()}", epoch=epoch)
    _emit_online(sm, online, currents, codes, [results[tp] for tp in online])
    ctx.put_partition_states(online, ONLINE_PARTITION)
    return True


def _emit_online(sm, online: list, currents: list, codes: list, lais: list) -> None:
    """The PartitionTransition records of elected partitions (to OnlinePartition), as one columnar batch when
    there are enough of them."""
    if not emit_partition_transitions(sm, online, currents, ONLINE_PARTITION, np.asarray(codes, dtype=np.uint8)):
        ctx = sm.context
        sm.journal.emit_rows(PartitionTransition, [
            (tp[0], tp[1], cur, ONLINE_PARTITION, ctx.partition_replica_assignment(tp), lai.leader, lai.leader_epoch,
             lai.isr, lai.partition_epoch, lai.recovery_state, code)
            for tp, cur, code, lai in zip(online, currents, codes, lais)])


COLUMN_MIN = 64  # partitions from which transition records are emitted as one columnar batch
BATCH_MIN = 32
"""Rows (partitions of an election, replicas of one broker) from which the batch paths take a state change:
below it the per-partition path does the work (array work costs more than it saves on a few rows). The
differential tests set it to 1, so that small random clusters drive the batch paths too."""


def emit_partition_transitions(sm, partitions: list[tuple], currents: list[int], target: int, code) -> bool:
    """``PartitionStateMachine._emit_many`` as one columnar batch (assignment and leadership from the
    context's columns; ``code`` the election, one for all or an array); False when the partitions are too few
    or not grouped by topic."""
    if len(partitions) < COLUMN_MIN:
        return False
    segments = sm.context.topic_segments(partitions)
    if segments is None:
        return False
    _emit_columns(sm, segments, np.asarray(currents, dtype=np.uint8), target, code)
    return True


def _emit_columns(sm, segments: list, currents: np.ndarray, target: int, code) -> None:
    """The PartitionTransition records of the partitions of ``segments`` (topic runs) as one columnar batch."""
    ctx = sm.context
    matrix = ctx.pool.matrix()
    cols: dict[str, list] = {k: [] for k in ("replicas", "leader", "leader_epoch", "isr", "partition_epoch",
                                             "recovery_state")}
    for ts, parts, *_ in segments:
        _, leader, le, icode, pe, rec = ctx.leadership_arrays(ts, parts)
        no_info = le == -1
        cols["replicas"].append(matrix[ctx.assignment_codes(ts, parts)])
        cols["leader"].append(np.where(no_info, -1, leader))
        cols["leader_epoch"].append(le)
        cols["isr"].append(matrix[np.where(no_info, 0, icode)])
        cols["partition_epoch"].append(np.where(no_info, 0, pe))
        cols["recovery_state"].append(np.where(no_info, 0, rec))
    width = max(m.shape[1] for m in cols["replicas"])
    n = len(currents)
    sm.journal.emit_columns(
        PartitionTransition, topic=topic_column(segments),
        partition=np.concatenate([s[1] for s in segments]), from_state=currents,
        to_state=np.full(n, target, dtype=np.uint8),
        replicas=list_column(np.concatenate([pad_rows(m, width) for m in cols["replicas"]])),
        leader=np.concatenate(cols["leader"]), leader_epoch=np.concatenate(cols["leader_epoch"]),
        isr=list_column(np.concatenate([pad_rows(m, width) for m in cols["isr"]])),
        partition_epoch=np.concatenate(cols["partition_epoch"]),
        recovery_state=np.concatenate(cols["recovery_state"]),
        election=np.broadcast_to(np.asarray(code, dtype=np.uint8), (n,)))


def list_column(rows: np.ndarray) -> ListColumn:
    """An int tuple column from a matrix whose rows are left-aligned and -1 padded."""
    keep = rows >= 0
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return ListColumn(offsets, rows[keep])


def topic_column(segments: list) -> DictColumn:
    """The topic column of rows in ``ControllerContext.topic_segments`` runs (each topic one run)."""
    names = tuple(ts.name for ts, *_ in segments)
    codes = np.repeat(np.arange(len(names), dtype=np.int32), [len(s[1]) for s in segments])
    return DictColumn(names, codes)


def pad_rows(m: np.ndarray, width: int) -> np.ndarray:
    """A -1 padded int matrix widened to ``width`` columns (with -1)."""
    if m.shape[1] >= width:
        return m
    return np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=-1)


def init_leaders_batch(sm, partitions: list[tuple]) -> dict | None:
    """``PartitionStateMachine._initialize_leader_and_isr_for_partitions`` (NewPartition -> OnlinePartition:
    the first live replica leads, the live replicas are the ISR, the ``/state`` znodes created in one
    fenced batch) with the choice made on arrays; None (nothing done) when the per-partition path must."""
    from statemachines.states import NEW_PARTITION
    from events.records import RECOVERED
    ctx = sm.context
    if len(partitions) < COLUMN_MIN or ctx.has_offline_dirs() or not hasattr(sm.batch, "add_leader_and_isr_segments"):
        return None
    segments = ctx.topic_segments(partitions)
    if segments is None:
        return None
    live = ctx.live_mask()
    matrix = ctx.pool.matrix()
    tuples = ctx.pool.tuples
    done: dict = {}
    chosen = []   # per segment: (rows, leader, isr matrix)
    for ts, parts, start, _ in segments:
        assignment = matrix[ctx.assignment_codes(ts, parts)]
        isr = ea.compact_rows(assignment, ea.broker_mask(assignment, live))
        leader = isr[:, 0] if isr.shape[1] else np.full(len(parts), -1, dtype=np.int32)
        for i in np.flatnonzero(leader < 0).tolist():
            tp = partitions[start + i]
            done[tp] = sm._log_failed_state_change(tp, NEW_PARTITION, ONLINE_PARTITION, fail.no_assigned_replica_alive(
                sm.controller_id, ctx.epoch, tp, tuples[ctx.assignment_codes(ts, parts[i:i + 1])[0]],
                ctx.live_broker_ids))
        rows = np.flatnonzero(leader >= 0)
        chosen.append((rows, leader[rows], isr[rows]))
    epoch = ctx.epoch
    new = tuple.__new__
    if not any(len(rows) for rows, _, _ in chosen):
        return done
    store_segments = [(ts.name, parts[rows], leader, isr)
                      for (ts, parts, _, _), (rows, leader, isr) in zip(segments, chosen)]
    try:
        failed = _create_states(sm.store, store_segments, epoch, ctx.epoch_zk_version)
    except Exception as exc:
        from statemachines.errors import ControllerMovedError
        if isinstance(exc, ControllerMovedError):
            sm._log.error("Controller moved to another broker when trying to create the topic partition state "
                          "znode")
            raise
        for topic, ps, _, _ in store_segments:
            for p in ps.tolist():
                # Kafka reports NewPartition as the target here (sic).
                done[(topic, p)] = sm._log_failed_state_change((topic, p), ctx.partition_state((topic, p)),
                                                               NEW_PARTITION, exc)
        return done
    adds = []
    for (ts, parts, _, _), (rows, leader, isr), bad in zip(segments, chosen, failed):
        sel = parts[rows]
        ok = np.ones(len(sel), dtype=bool)
        if bad:
            ok[list(bad)] = False
        if ok.any():
            okp = sel[ok]
            n = len(okp)
            ctx.put_leadership_arrays(ts, okp, leader[ok], np.zeros(n, dtype=np.int32), ctx.codes_of_rows(isr[ok]),
                                      0, np.zeros(n, dtype=np.int32), epoch)
            adds.append((ts, okp, isr[ok]))
        isr_t = ctx.tuples_of_rows(isr)
        name = ts.name
        for i, (p, ld) in enumerate(zip(sel.tolist(), leader.tolist())):
            done[(name, p)] = new(LeaderAndIsr, (ld, 0, isr_t[i], RECOVERED, 0)) if i not in bad else \
                sm._log_failed_state_change((name, p), NEW_PARTITION, ONLINE_PARTITION, bad[i])
    sm.batch.add_leader_and_isr_segments(adds, True)
    return done


def _create_states(store, segments: list, controller_epoch: int, expected_zk_version: int) -> list[dict]:
    """The store's ``create_partition_states_columns`` of (topic, partitions, leader, ISR matrix) segments, or
    ``create_partition_states`` of them as a dict for a store without it: per segment {row: error} of the
    partitions whose ``/state`` was not created."""
    create = getattr(store, "create_partition_states_columns", None)
    if create is not None:
        return create(segments, controller_epoch, expected_zk_version)
    from statemachines.leader_and_isr import LeaderIsrAndControllerEpoch
    from events.records import RECOVERED
    new = tuple.__new__
    states: dict = {}
    for topic, ps, leader, isr in segments:
        for p, ld, row in zip(ps.tolist(), leader.tolist(), isr.tolist()):
            states[(topic, p)] = new(LeaderIsrAndControllerEpoch, (new(LeaderAndIsr, (
                ld, 0, tuple(r for r in row if r >= 0), RECOVERED, 0)), controller_epoch))
    responses = store.create_partition_states(states, expected_zk_version)
    return [{i: responses[(topic, p)] for i, p in enumerate(ps.tolist()) if responses[(topic, p)] is not None}
            for topic, ps, _, _ in segments]


class LazyResults(Mapping):
    """The results of ``handle_state_changes`` (tp -> LeaderAndIsr / None / Exception) of a batch, built as a
    dict the first time anyone reads them: creation's callers never do, and building a million entries
    costs more than the state change itself."""

    __slots__ = ("_build", "_dict")

    def __init__(self, build):
        self._build = build
        self._dict = None

    def _results(self) -> dict:
        if self._dict is None:
            self._dict = self._build()
            self._build = None
        return self._dict

    def __getitem__(self, tp):
        return self._results()[tp]

    def __iter__(self):
        return iter(self._results())

    def __len__(self) -> int:
        return len(self._results())

    def __contains__(self, tp) -> bool:
        return tp in self._results()

    def __repr__(self) -> str:
        return repr(self._results())


def new_partitions_batch(sm, partitions: list[tuple], target: int):
    """``PartitionStateMachine._do_handle_state_changes`` to NewPartition, or to OnlinePartition when every
    partition is New (leader initialisation), as one columnar pass over the partitions' topic runs; the
    results as a :class:`LazyResults`. None (nothing done) when the per-partition path must do it: too few
    partitions, a partition listed twice or unknown, one in a state the move does not start from (the
    refusals are the reference path's), a New partition with no live replica, replicas on offline log
    directories, or transitions traced one by one."""
    from statemachines.states import NEW_PARTITION, NON_EXISTENT_PARTITION, VALID_PREVIOUS_PARTITION_BYTES
    ctx = sm.context
    if (len(partitions) < BATCH_MIN or sm.trace_transitions or ctx.has_offline_dirs()
            or not hasattr(sm.batch, "add_leader_and_isr_segments")):
        return None
    segments = ctx.topic_segments(partitions)
    if segments is None:
        return None
    if target == NEW_PARTITION:
        # From NonExistentPartition (a partition without a state gets that first): nothing else may start.
        for ts, parts, _, _ in segments:
            cur = np.frombuffer(ts.pstate, dtype=np.uint8)[parts] if len(ts.pstate) else np.zeros(0, np.uint8)
            if not bool(np.all((cur == NON_EXISTENT_PARTITION) | (cur == _ABSENT))):
                return None
        currents = np.full(len(partitions), NON_EXISTENT_PARTITION, dtype=np.uint8)
        _emit_segments(sm, partitions, segments, currents, NEW_PARTITION, ELECTION_NONE)
        for ts, parts, _, _ in segments:
            ctx.put_partition_states_array(ts, parts, NEW_PARTITION)
        return LazyResults(partial(dict.fromkeys, partitions))
    if target != ONLINE_PARTITION or NEW_PARTITION not in VALID_PREVIOUS_PARTITION_BYTES[target]:
        return None
    for ts, parts, _, _ in segments:
        if not bool(np.all(np.frombuffer(ts.pstate, dtype=np.uint8)[parts] == NEW_PARTITION)):
            return None
    return _initialize_new_partitions(sm, partitions, segments)


_ABSENT = 0xFF   # controller.context.ABSENT: a partition with no state recorded


def _live_replica_codes(ctx, codes: np.ndarray, live: np.ndarray) -> np.ndarray:
    """The pool code of the live replicas (in assignment order) of each replica list in ``codes``: computed
    once per distinct replica list."""
    distinct = unique(codes)
    rows = ctx.pool.matrix()[distinct]
    live_codes = ctx.codes_of_rows(ea.compact_rows(rows, ea.broker_mask(rows, live)))
    lookup = np.zeros(int(distinct[-1]) + 1 if len(distinct) else 1, dtype=np.int32)
    lookup[distinct] = live_codes
    return lookup[codes]


def _initialize_new_partitions(sm, partitions: list[tuple], segments: list):
    """NewPartition -> OnlinePartition of ``segments`` (all New): ``_initialize_leader_and_isr_for_partitions``
    then the PartitionTransition records and states, as the reference path does them; None when a partition
    has no live replica (the reference path words that failure)."""
    from statemachines.states import NEW_PARTITION
    from statemachines.errors import ControllerMovedError
    ctx = sm.context
    live = ctx.live_mask()
    chosen = []   # per segment: (ISR codes, leader)
    for ts, parts, _, _ in segments:
        isr_codes = _live_replica_codes(ctx, ctx.assignment_codes(ts, parts), live)
        if not bool(isr_codes.all()):   # code 0 is (): no live replica
            return None
        chosen.append(isr_codes)
    matrix = ctx.pool.matrix()
    chosen = [(isr_codes, matrix[isr_codes]) for isr_codes in chosen]
    epoch = ctx.epoch
    store_segments = [(ts.name, parts, isr[:, 0], isr) for (ts, parts, _, _), (_, isr) in zip(segments, chosen)]
    try:
        failed = _create_states(sm.store, store_segments, epoch, ctx.epoch_zk_version)
    except ControllerMovedError:
        sm._log.error("Controller moved to another broker when trying to create the topic partition state znode")
        raise
    except Exception as exc:
        out = {}
        for topic, ps, _, _ in store_segments:
            for p in ps.tolist():
                # Kafka reports NewPartition as the target here (sic).
                out[(topic, p)] = sm._log_failed_state_change((topic, p), NEW_PARTITION, NEW_PARTITION, exc)
        return LazyResults(partial(dict, out))
    adds, done_segments, kept = [], [], []
    zeros = None
    for (ts, parts, _, _), (isr_codes, isr), bad in zip(segments, chosen, failed):
        ok = None
        if bad:
            ok = np.ones(len(parts), dtype=bool)
            ok[list(bad)] = False
            for i in sorted(bad):
                bad[i] = sm._log_failed_state_change((ts.name, int(parts[i])), NEW_PARTITION, ONLINE_PARTITION, bad[i])
        okp, ok_codes, ok_isr = (parts, isr_codes, isr) if ok is None else (parts[ok], isr_codes[ok], isr[ok])
        kept.append((ts.name, parts, isr_codes, bad))
        if not len(okp):
            continue
        n = len(okp)
        if zeros is None or len(zeros) < n:
            zeros = np.zeros(n, dtype=np.int32)
        ctx.put_leadership_arrays(ts, okp, ok_isr[:, 0], zeros[:n], ok_codes, 0, zeros[:n], epoch)
        adds.append((ts, okp, ok_isr))
        done_segments.append((ts, okp))
    sm.batch.add_leader_and_isr_segments(adds, True)

    done = sum(len(p) for _, p in done_segments)
    if done:
        done_tps = partitions if done == len(partitions) else [
            (ts.name, p) for ts, okp in done_segments for p in okp.tolist()]
        segs = [(ts, okp, 0, 0) for ts, okp in done_segments]
        _emit_segments(sm, done_tps, segs, np.full(done, NEW_PARTITION, dtype=np.uint8), ONLINE_PARTITION,
                       ELECTION_NEW_PARTITION)
        for ts, okp in done_segments:
            ctx.put_partition_states_array(ts, okp, ONLINE_PARTITION)
    return LazyResults(partial(_initialized_results, ctx.pool.tuples, kept))


def _initialized_results(tuples: list, kept: list) -> dict:
    from events.records import RECOVERED
    new = tuple.__new__
    out = {}
    for name, parts, isr_codes, bad in kept:
        isrs = list(map(tuples.__getitem__, isr_codes.tolist()))
        for i, p in enumerate(parts.tolist()):
            isr = isrs[i]
            out[(name, p)] = new(LeaderAndIsr, (isr[0], 0, isr, RECOVERED, 0)) if i not in bad else bad[i]
    return out


def _emit_segments(sm, partitions: list, segments: list, currents: np.ndarray, target: int, code: int) -> None:
    """PartitionTransition records of the partitions of ``segments`` (``partitions`` as tuples, in the same
    order): one columnar batch, or the reference path's rows when they are few."""
    if len(partitions) >= COLUMN_MIN:
        _emit_columns(sm, segments, currents, target, code)
    else:
        sm._emit_rows(partitions, currents.tolist(), target, code)
