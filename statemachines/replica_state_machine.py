"""The ReplicaStateMachine: Kafka's ``ZkReplicaStateMachine.handleStateChanges`` over a controller context.

Replicas are ``(topic, partition, replica)`` tuples and states are Kafka's bytes. Each call
groups the replicas by broker, checks every transition against the legal table, refuses the
invalid ones as Kafka does (a TransitionFailed record and an error line), applies the valid
ones to the context, emits a ReplicaTransition record for each, and adds to the request
batch exactly the requests Kafka would send — then sends the batch.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

import structlog

from events.records import (
    ENTITY_REPLICA, NO_LEADER, SCHEMA_VERSION, UPDATE_OFFLINE_REPLICA, LeaderAndIsrUpdated, ReplicaTransition,
    TransitionFailed,
)
from statemachines.errors import (
    ControllerMovedError, InvalidTransitionError, StateChangeFailedError, kafka_name,
)
from statemachines import failures
from statemachines.leader_and_isr import LeaderIsrAndControllerEpoch, PartitionAndReplica, TopicPartition
from statemachines.replica_rows import ReplicaRows
from statemachines.replica_batch import new_or_online_all_brokers, new_or_online_replicas_batch, offline_replicas_batch, offline_states
from statemachines.states import (
    NEW_REPLICA, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_REPLICA, REPLICA_BY_BYTE, REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL, VALID_PREVIOUS_REPLICA_BYTES,
)

_log = structlog.get_logger("kcontroller.replica_state_machine")


class ReplicaStateMachine:
    """Applies replica state transitions for one controller.

    ``context`` is a ``controller.context.ControllerContext`` (or anything with its API),
    ``store`` a ``ports.PartitionStateStore``, ``batch`` a ``ports.RequestBatch`` and
    ``journal`` an ``events.journal.Journal``. Set ``trace_transitions`` to log every
    successful transition at debug level (Kafka's TRACE lines); the records hold them anyway.
    """

    # True: transitions on many partitions run as array operations (the batch path); False: one partition
    # at a time (the reference path). Both write the same records and store bytes (tests/test_batch_differential.py).
    batch_path = True

    def __init__(self, controller_id: int, context, store, batch, journal, *, trace_transitions: bool = False):
        self.controller_id = controller_id
        self.context = context
        self.store = store
        self.batch = batch
        self.journal = journal
        self.trace_transitions = trace_transitions
        self._log = _log.bind(controller_id=controller_id)

    # --- lifecycle ------------------------------------------------------------------------------
    def startup(self) -> None:
        """Kafka's startup(): initial states from the context, then Online / Offline transitions."""
        self._log.info("Initializing replica state")
        self.initialize_replica_state()
        self._log.info("Triggering online replica state changes")
        online, offline = self.context.online_and_offline_replicas()
        self.handle_state_changes(online, ONLINE_REPLICA)
        self._log.info("Triggering offline replica state changes")
        self.handle_state_changes(offline, OFFLINE_REPLICA)

    def shutdown(self) -> None:
        self._log.info("Stopped replica state machine")

    def initialize_replica_state(self) -> None:
        """Online replicas start OnlineReplica; the others ReplicaDeletionIneligible (direct puts, no records)."""
        ctx = self.context
        if self.batch_path and hasattr(ctx, "initialize_replica_states"):
            ctx.initialize_replica_states(ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE)
            return
        is_online = ctx.online_replica_filter()
        for topic in list(ctx.topics):
            for tp in ctx.partitions_for_topic(topic):
                for r in ctx.partition_replica_assignment(tp):
                    ctx.put_replica_state((topic, tp[1], r),
                                          ONLINE_REPLICA if is_online(r, tp) else REPLICA_DELETION_INELIGIBLE)

    # --- transitions ----------------------------------------------------------------------------
    def handle_state_changes(self, replicas: Iterable[tuple], target_state: int) -> None:
        rows = isinstance(replicas, ReplicaRows)
        if rows:
            if not len(replicas):
                return
            by_broker = None   # grouped below, unless one pass takes every broker's group
        else:
            by_broker = {}
            for rep in replicas:
                group = by_broker.get(rep[2])
                if group is None:
                    by_broker[rep[2]] = [rep]
                else:
                    group.append(rep)
            if not by_broker:
                return
        try:
            self.batch.new_batch()
            if not (rows and self.batch_path and target_state in (NEW_REPLICA, ONLINE_REPLICA)
                    and new_or_online_all_brokers(self, replicas, target_state)):
                if by_broker is None:
                    by_broker = replicas.by_replica()
                for broker, group in by_broker.items():
                    self._do_handle_state_changes(broker, group, target_state)
            self.batch.send_requests_to_brokers(self.context.epoch)
        except ControllerMovedError:
            self._log.error(f"Controller moved to another broker when moving some replicas to "
                            f"{REPLICA_BY_BYTE[target_state]} state")
            raise
        except Exception:
            # Kafka logs and swallows anything else here.
            self._log.exception(f"Error while moving some replicas to {REPLICA_BY_BYTE[target_state]} state")

    def _do_handle_state_changes(self, replica_id: int, replicas: list[tuple], target: int) -> None:
        ctx = self.context
        if (self.batch_path and target in (NEW_REPLICA, ONLINE_REPLICA)
                and new_or_online_replicas_batch(self, replica_id, replicas, target)):
            return
        if self.batch_path and target == OFFLINE_REPLICA:
            checked = offline_states(self, replica_id, replicas)
            if checked is not None and offline_replicas_batch(self, replica_id, replicas, *checked):
                return
        valid_prev = VALID_PREVIOUS_REPLICA_BYTES[target]
        valid: list[tuple] = []
        curs: list[int] = []  # current state of each valid replica, aligned with ``valid``
        for rep, cur in zip(replicas, ctx.replica_states_or_init(replicas, NON_EXISTENT_REPLICA)):
            if cur in valid_prev:
                valid.append(rep)
                curs.append(cur)
            else:
                self._log_invalid_transition(rep, cur, target)
        if not valid:
            return
        batch = self.batch

        if target == NEW_REPLICA:
            done, done_curs = [], []
            for rep, cur, has_info in zip(valid, curs, ctx.has_leadership_info_mask(valid)):
                if has_info:
                    tp = (rep[0], rep[1])
                    info = ctx.partition_leadership_info(tp)
                    if info.leader_and_isr.leader == replica_id:
                        exc = StateChangeFailedError(
                            f"Replica {replica_id} for partition {TopicPartition(*tp)} cannot be moved to NewReplica "
                            f"state as it is being requested to become leader")
                        # Kafka reports this failure with OfflineReplica as the target (sic).
                        self._log_failed_state_change(rep, cur, OFFLINE_REPLICA, exc)
                        continue
                    batch.add_leader_and_isr_request_for_brokers(
                        (replica_id,), tp, info, ctx.partition_full_replica_assignment(tp), True)
                done.append(rep)
                done_curs.append(cur)
            self._succeed(done, done_curs, target)
        elif target == ONLINE_REPLICA:
            for rep, cur, has_info in zip(valid, curs, ctx.has_leadership_info_mask(valid)):
                if cur == NEW_REPLICA:
                    if replica_id not in ctx.partition_replica_assignment((rep[0], rep[1])):
                        tp = (rep[0], rep[1])
                        assignment = ctx.partition_full_replica_assignment(tp)
                        self._log.error(f"Adding replica ({replica_id}) that is not part of the assignment {assignment}")
                        ctx.update_partition_full_replica_assignment(
                            tp, assignment._replace(replicas=assignment.replicas + (replica_id,)))
                elif has_info:
                    tp = (rep[0], rep[1])
                    batch.add_leader_and_isr_request_for_brokers(
                        (replica_id,), tp, ctx.partition_leadership_info(tp), ctx.partition_full_replica_assignment(tp),
                        False)
            self._succeed(valid, curs, target)
        elif target == OFFLINE_REPLICA:
            if self.batch_path and offline_replicas_batch(self, replica_id, valid, curs):
                return
            for rep in valid:
                batch.add_stop_replica_request_for_brokers((replica_id,), (rep[0], rep[1]), False)
            with_info: dict[tuple, int] = {}
            without_info, without_curs = [], []
            for rep, cur, has_info in zip(valid, curs, ctx.has_leadership_info_mask(valid)):
                if has_info:
                    with_info[rep] = cur
                else:
                    without_info.append(rep)
                    without_curs.append(cur)
            updated = self._remove_replicas_from_isr(replica_id, [(r[0], r[1]) for r in with_info], with_info)
            done, done_curs = [], []
            log_info = self.trace_transitions and self._log.is_enabled_for(logging.INFO)
            for tp, info in updated.items():
                if log_info:
                    self._log.info(f"Partition {TopicPartition(*tp)} state changed to {info.kafka_str()} after "
                                   f"removing replica {replica_id} from the ISR as part of transition to "
                                   f"OfflineReplica", epoch=ctx.epoch)
                if not ctx.is_topic_queued_up_for_deletion(tp[0]):
                    recipients = [r for r in ctx.partition_replica_assignment(tp) if r != replica_id]
                    batch.add_leader_and_isr_request_for_brokers(
                        recipients, tp, info, ctx.partition_full_replica_assignment(tp), False)
                rep = (tp[0], tp[1], replica_id)
                done.append(rep)
                done_curs.append(ctx.replica_state(rep))
            self._succeed(done, done_curs, target)
            live_or_shutting_down = tuple(ctx.live_broker_epochs)
            for rep in without_info:
                batch.add_update_metadata_request_for_brokers(live_or_shutting_down, ((rep[0], rep[1]),))
            self._succeed(without_info, without_curs, target)
        elif target == REPLICA_DELETION_STARTED:
            self._succeed(valid, curs, target)
            for rep in valid:
                batch.add_stop_replica_request_for_brokers((replica_id,), (rep[0], rep[1]), True)
        elif target in (REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_SUCCESSFUL):
            self._succeed(valid, curs, target)
        elif target == NON_EXISTENT_REPLICA:
            for rep in valid:
                tp = (rep[0], rep[1])
                assignment = ctx.partition_full_replica_assignment(tp)
                ctx.update_partition_full_replica_assignment(tp, assignment.remove_replica(replica_id))
            self._succeed(valid, curs, target, remove=True)
        else:
            raise ValueError(f"unknown replica state byte {target}")

    def _succeed(self, replicas: list[tuple], curs: list[int], target: int, remove: bool = False) -> None:
        """Record, trace-log and apply successful transitions (Kafka: logSuccessfulTransition + putReplicaState)."""
        if not replicas:
            return
        ctx = self.context
        off, (cid, epoch, now, cause), sink = self.journal.reserve(len(replicas))
        kind, new = ReplicaTransition.KIND, tuple.__new__
        for (t, p, r), cur in zip(replicas, curs):
            sink(new(ReplicaTransition, (kind, SCHEMA_VERSION, off, cid, epoch, now, cause, t, p, r, cur, target)))
            off += 1
        if self.trace_transitions and self._log.is_enabled_for(logging.DEBUG):
            for (t, p, r), cur in zip(replicas, curs):
                self._log.debug(f"Changed state of replica {r} for partition {t}-{p} from "
                                f"{REPLICA_BY_BYTE[cur]} to {REPLICA_BY_BYTE[target]}", epoch=ctx.epoch)
        if remove:
            for rep in replicas:
                ctx.remove_replica_state(rep)
        else:
            ctx.put_replica_states(replicas, target)

    # --- ISR removal (OfflineReplica) ---------------------------------------------------------------
    def _remove_replicas_from_isr(self, replica_id: int, partitions: list[tuple],
                                  current: dict[tuple, int]) -> dict[tuple, LeaderIsrAndControllerEpoch]:
        """Drop ``replica_id`` from each partition's ISR in the store (retrying BADVERSION), as Kafka does."""
        results: dict[tuple, LeaderIsrAndControllerEpoch] = {}
        remaining = partitions
        while remaining:
            finished, remaining = self._do_remove_replicas_from_isr(replica_id, remaining)
            for tp, res in finished.items():
                if isinstance(res, Exception):
                    rep = (tp[0], tp[1], replica_id)
                    self._log_failed_state_change(rep, current.get(rep, self.context.replica_state(rep)),
                                                  OFFLINE_REPLICA, res)
                else:
                    results[tp] = res
        return results

    def _do_remove_replicas_from_isr(self, replica_id: int, partitions: list[tuple]):
        ctx = self.context
        finished: dict[tuple, object] = {}
        try:
            stored = self.store.get_partition_states(partitions)
        except Exception as exc:  # a failed read fails every partition, no retry
            return {tp: exc for tp in partitions}, []
        with_replica: dict[tuple, object] = {}
        for tp in partitions:
            info = stored.get(tp)
            if info is None:
                if not ctx.is_topic_queued_up_for_deletion(tp[0]):
                    finished[tp] = failures.isr_path_empty(replica_id, tp)
                continue
            if info.controller_epoch > ctx.epoch:
                finished[tp] = failures.isr_path_written_by_newer_controller(ctx.epoch, info.controller_epoch)
                continue
            lai = info.leader_and_isr
            if replica_id in lai.isr:
                new_leader = NO_LEADER if lai.leader == replica_id else lai.leader
                new_isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica_id)
                with_replica[tp] = lai.new_leader_and_isr(new_leader, new_isr)
            else:
                # Nothing to write; Kafka still caches it under the current controller epoch.
                lice = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
                ctx.put_partition_leadership_info(tp, lice)
                finished[tp] = lice
        retry: list[tuple] = []
        if with_replica:
            result = self.store.update_leader_and_isr(with_replica, ctx.epoch, ctx.epoch_zk_version)
            emit = self.journal.emit
            for tp, res in result.finished.items():
                if isinstance(res, Exception):
                    finished[tp] = res
                    continue
                lice = LeaderIsrAndControllerEpoch(res, ctx.epoch)
                ctx.put_partition_leadership_info(tp, lice)
                emit(LeaderAndIsrUpdated, tp[0], tp[1], res.leader, res.leader_epoch, res.isr, res.partition_epoch,
                     res.recovery_state, UPDATE_OFFLINE_REPLICA, replica_id)
                finished[tp] = lice
            for tp in result.to_retry:
                self._log.debug(f"Controller failed to remove replica {replica_id} from ISR of partition "
                                f"{TopicPartition(*tp)}. Attempted to write state {with_replica[tp]}, but failed with "
                                f"bad ZK version. This will be retried.")
            retry = result.to_retry
        return finished, retry

    # --- failures -------------------------------------------------------------------------------
    def _log_invalid_transition(self, rep: tuple, cur: int, target: int) -> None:
        target_state = REPLICA_BY_BYTE[target]
        expected = ",".join(s.value for s in target_state.valid_previous_ordered)
        exc = InvalidTransitionError(
            f"Replica {PartitionAndReplica(*rep)} should be in the {expected} states before moving to "
            f"{target_state} state. Instead it is in {REPLICA_BY_BYTE[cur]} state")
        self._log_failed_state_change(rep, cur, target, exc)

    def _log_failed_state_change(self, rep: tuple, cur: int, target: int, exc: Exception) -> None:
        epoch = self.context.epoch
        self.journal.emit(TransitionFailed, ENTITY_REPLICA, rep[0], rep[1], rep[2], cur, target, kafka_name(exc),
                          str(exc))
        self._log.error(f"Controller {self.controller_id} epoch {epoch} initiated state change of replica {rep[2]} "
                        f"for partition {rep[0]}-{rep[1]} from {REPLICA_BY_BYTE[cur]} to {REPLICA_BY_BYTE[target]} "
                        f"failed", epoch=epoch, error=f"{kafka_name(exc)}: {exc}")

