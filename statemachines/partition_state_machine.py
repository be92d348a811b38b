"""The PartitionStateMachine: Kafka's ``ZkPartitionStateMachine.handleStateChanges`` and its leader elections.

Partitions are ``(topic, partition)`` tuples and states Kafka's bytes. Moving a partition to
OnlinePartition initialises leader and ISR for new partitions (first live replica, all live
replicas) or runs one of the four election strategies for the others, writing the result to
the store with Kafka's fencing (controller epoch, zkVersion, retries on BADVERSION). Every
successful transition becomes a PartitionTransition record; refusals and failed elections
become TransitionFailed records, worded as Kafka words them.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

import structlog

from events.records import (
    ELECTION_CONTROLLED_SHUTDOWN, ELECTION_NEW_PARTITION, ELECTION_NONE, ELECTION_OFFLINE, ELECTION_OFFLINE_UNCLEAN,
    ELECTION_PREFERRED, ELECTION_REASSIGN, ENTITY_PARTITION, NO_EPOCH, NO_LEADER, RECOVERED, PartitionTransition,
    TransitionFailed,
)
from statemachines import election, failures
from statemachines.errors import ControllerMovedError, InvalidTransitionError, kafka_name
from statemachines.partition_batch import (
    elect_batch, emit_partition_transitions, init_leaders_batch, new_partitions_batch,
)
from statemachines.leader_and_isr import (
    INITIAL_LEADER_EPOCH, INITIAL_PARTITION_EPOCH, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition,
)
from statemachines.replica_rows import PartitionRows
from statemachines.states import (
    NEW_PARTITION, NON_EXISTENT_PARTITION, OFFLINE_PARTITION, ONLINE_PARTITION, PARTITION_BY_BYTE,
    VALID_PREVIOUS_PARTITION_BYTES,
)

_log = structlog.get_logger("kcontroller.partition_state_machine")

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


# --- election strategies (PartitionLeaderElectionStrategy); str() is Kafka's toString ------------

class OfflinePartitionLeaderElectionStrategy:
    __slots__ = ("allow_unclean",)

    def __init__(self, allow_unclean: bool = False):
        self.allow_unclean = allow_unclean

    def __str__(self) -> str:
        return f"OfflinePartitionLeaderElectionStrategy({str(self.allow_unclean).lower()})"

    def __eq__(self, other) -> bool:
        return isinstance(other, OfflinePartitionLeaderElectionStrategy) and other.allow_unclean == self.allow_unclean

    def __hash__(self) -> int:
        return hash(("offline", self.allow_unclean))


class _NamedStrategy:
    __slots__ = ()

    def __str__(self) -> str:
        return type(self).__name__

    def __eq__(self, other) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


class ReassignPartitionLeaderElectionStrategy(_NamedStrategy):
    __slots__ = ()


class PreferredReplicaPartitionLeaderElectionStrategy(_NamedStrategy):
    __slots__ = ()


class ControlledShutdownPartitionLeaderElectionStrategy(_NamedStrategy):
    __slots__ = ()


def config_true(value) -> bool:
    return str(value).strip().lower() == "true"


class PartitionStateMachine:
    """Applies partition state transitions for one controller.

    Set ``trace_transitions`` to also log each partition's transition through structlog (Kafka's
    per-partition state.change.logger lines); the records hold them either way.

    ``broker_config`` holds the broker defaults by Kafka name (``unclean.leader.election.enable``);
    topic overrides are read from ``context.topic_configs``. ``leader_recovery_supported``
    (IBP >= 3.2) makes an unclean leader start RECOVERING, as Kafka 3.7 does.
    """

    # True: transitions on many partitions run as array operations (the batch path); False: one partition
    # at a time (the reference path). Both write the same records and store bytes (tests/test_batch_differential.py).
    batch_path = True

    def __init__(self, controller_id: int, context, store, batch, journal, *, broker_config: dict | None = None,
                 topic_configs=None, leader_recovery_supported: bool = True, trace_transitions: bool = False):
        self.controller_id = controller_id
        self.context = context
        self.store = store
        self.batch = batch
        self.journal = journal
        self.broker_config = broker_config if broker_config is not None else {}
        # topic -> its config overrides (Kafka reads them from /config/topics at election time);
        # without it, the overrides cached in context.topic_configs are used.
        self.topic_configs = topic_configs
        self.leader_recovery_supported = leader_recovery_supported
        self.trace_transitions = trace_transitions
        self._log = _log.bind(controller_id=controller_id)

    # --- lifecycle ------------------------------------------------------------------------------
    def startup(self) -> dict:
        self._log.info("Initializing partition state")
        self.initialize_partition_state()
        self._log.info("Triggering online partition state changes")
        return self.trigger_online_partition_state_change()

    def shutdown(self) -> None:
        self._log.info("Stopped partition state machine")

    def initialize_partition_state(self) -> None:
        """Online if the cached leader is online, Offline if not, New without leadership info (direct puts)."""
        ctx = self.context
        if self.batch_path and hasattr(ctx, "initialize_partition_states"):
            ctx.initialize_partition_states(NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION)
            return
        is_online = ctx.online_replica_filter()
        for tp in list(ctx.all_partitions()):
            if not ctx.has_leadership_info(tp):
                state = NEW_PARTITION
            else:
                state = ONLINE_PARTITION if is_online(ctx.partition_leader(tp), tp) else OFFLINE_PARTITION
            ctx.put_partition_state(tp, state)

    def trigger_online_partition_state_change(self, topic: str | None = None) -> dict:
        """Elect leaders for every Offline or New partition (of one topic), topics being deleted excepted."""
        ctx = self.context
        partitions = ctx.partitions_in_states((OFFLINE_PARTITION, NEW_PARTITION), topic)
        if ctx.topics_to_be_deleted:
            partitions = [tp for tp in partitions if not ctx.is_topic_queued_up_for_deletion(tp[0])]
        return self.handle_state_changes(partitions, ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(False))

    def unclean_leader_election_enabled(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` override, else the broker default."""
        default = self.broker_config.get(UNCLEAN_LEADER_ELECTION_ENABLE, "false")
        overrides = (self.topic_configs(topic) if self.topic_configs is not None
                     else self.context.topic_configs.get(topic, {}))
        return config_true(overrides.get(UNCLEAN_LEADER_ELECTION_ENABLE, default))

    # --- transitions ----------------------------------------------------------------------------
    def handle_state_changes(self, partitions: Iterable[tuple], target_state: int, strategy=None) -> dict:
        """Returns tp -> LeaderAndIsr (elections) / None (other successes) / Exception, for the partitions tried."""
        if not isinstance(partitions, (list, PartitionRows)):
            partitions = list(partitions)
        if not len(partitions):
            return {}
        try:
            self.batch.new_batch()
            result = self._do_handle_state_changes(partitions, target_state, strategy)
            self.batch.send_requests_to_brokers(self.context.epoch)
            return result
        except ControllerMovedError:
            self._log.error(f"Controller moved to another broker when moving some partitions to "
                            f"{PARTITION_BY_BYTE[target_state]} state")
            raise
        except Exception as exc:
            self._log.exception(f"Error while moving some partitions to {PARTITION_BY_BYTE[target_state]} state")
            return {tp: exc for tp in partitions}

    def _do_handle_state_changes(self, partitions: list[tuple], target: int, strategy) -> dict:
        ctx = self.context
        if self.batch_path and target in (NEW_PARTITION, ONLINE_PARTITION):
            # New topics' partitions (to NewPartition, then New to Online) in one columnar pass.
            done = new_partitions_batch(self, partitions, target)
            if done is not None:
                return done
        results: dict = {}
        valid_prev = VALID_PREVIOUS_PARTITION_BYTES[target]
        states = ctx.partition_states_or_init(partitions, NON_EXISTENT_PARTITION)
        distinct_states = set(states)
        if distinct_states.issubset(valid_prev):   # every move valid (the usual case): no loop to sort them
            valid = partitions
            current = dict(zip(partitions, states))
        else:
            valid: list[tuple] = []
            current: dict[tuple, int] = {}
            for tp, cur in zip(partitions, states):
                if cur in valid_prev:
                    valid.append(tp)
                    current[tp] = cur
                else:
                    results[tp] = self._log_invalid_transition(tp, cur, target)

        # Per-partition lines are built only when someone will read them (the records hold them anyway).
        trace = self.trace_transitions and self._log.is_enabled_for(logging.DEBUG)
        info = self.trace_transitions and self._log.is_enabled_for(logging.INFO)
        if target == NEW_PARTITION:
            self._emit_many(valid, [current[tp] for tp in valid], target, ELECTION_NONE)
            if trace:
                for tp in valid:
                    self._log.debug(f"Changed partition {TopicPartition(*tp)} state from "
                                    f"{PARTITION_BY_BYTE[current[tp]]} to NewPartition with assigned replicas "
                                    f"{','.join(map(str, ctx.partition_replica_assignment(tp)))}", epoch=ctx.epoch)
            ctx.put_partition_states(valid, NEW_PARTITION)
            results.update(dict.fromkeys(valid))
        elif target == ONLINE_PARTITION:
            if NEW_PARTITION not in distinct_states:
                uninitialized, to_elect = [], list(valid)
            else:
                uninitialized = [tp for tp in valid if current[tp] == NEW_PARTITION]
                to_elect = [tp for tp in valid if current[tp] != NEW_PARTITION]
            if uninitialized:
                initialized = self._initialize_leader_and_isr_for_partitions(uninitialized)
                done = [tp for tp, lai in initialized.items() if not isinstance(lai, Exception)]
                self._emit_many(done, [NEW_PARTITION] * len(done), ONLINE_PARTITION, ELECTION_NEW_PARTITION)
                ctx.put_partition_states(done, ONLINE_PARTITION)
                if info:
                    for tp in done:
                        self._log.info(f"Changed partition {TopicPartition(*tp)} from NewPartition to "
                                       f"OnlinePartition with state {initialized[tp].kafka_str()}", epoch=ctx.epoch)
                results.update(initialized)
            if to_elect:
                if strategy is None:
                    raise ValueError("Election strategy is a required field when the target state is OnlinePartition")
                if self.batch_path and elect_batch(self, to_elect, strategy, current, results, info):
                    return results
                for tp, res in self._elect_leader_for_partitions(to_elect, strategy, current).items():
                    if not isinstance(res, Exception):
                        lai, code = res
                        self._emit(tp, current[tp], ONLINE_PARTITION, code)
                        if info:
                            self._log.info(f"Changed partition {TopicPartition(*tp)} from "
                                           f"{PARTITION_BY_BYTE[current[tp]]} to OnlinePartition with state "
                                           f"{lai.kafka_str()}", epoch=ctx.epoch)
                        ctx.put_partition_state(tp, ONLINE_PARTITION)
                        res = lai
                    results[tp] = res
        elif target in (OFFLINE_PARTITION, NON_EXISTENT_PARTITION):
            self._emit_many(valid, [current[tp] for tp in valid], target, ELECTION_NONE)
            if trace:
                for tp in valid:
                    self._log.debug(f"Changed partition {TopicPartition(*tp)} state from "
                                    f"{PARTITION_BY_BYTE[current[tp]]} to {PARTITION_BY_BYTE[target]}", epoch=ctx.epoch)
            ctx.put_partition_states(valid, target)
            results.update(dict.fromkeys(valid))
        else:
            raise ValueError(f"unknown partition state byte {target}")
        return results

    def _emit(self, tp: tuple, cur: int, target: int, election_code: int) -> None:
        self._emit_many([tp], [cur], target, election_code)

    def _emit_many(self, partitions: list[tuple], currents: list[int], target: int, election_code: int) -> None:
        """PartitionTransition records carrying each partition's assignment and leadership as now cached."""
        ctx = self.context
        if self.batch_path and emit_partition_transitions(self, partitions, currents, target, election_code):
            return
        self._emit_rows(partitions, currents, target, election_code)

    def _emit_rows(self, partitions: list[tuple], currents: list[int], target: int, election_code: int) -> None:
        ctx = self.context
        rows = []
        for tp, cur in zip(partitions, currents):
            replicas = ctx.partition_replica_assignment(tp)
            f = ctx.leadership_fields(tp)
            if f is None:
                rows.append((tp[0], tp[1], cur, target, replicas, NO_LEADER, NO_EPOCH, (), 0, RECOVERED,
                             election_code))
            else:
                rows.append((tp[0], tp[1], cur, target, replicas, f[1], f[2], f[3], f[4], f[5], election_code))
        self.journal.emit_rows(PartitionTransition, rows)

    # --- NewPartition -> OnlinePartition --------------------------------------------------------------
    def _initialize_leader_and_isr_for_partitions(self, partitions: list[tuple]) -> dict:
        """tp -> the initial LeaderAndIsr, or the Exception that stopped it (already logged)."""
        if self.batch_path and (done := init_leaders_batch(self, partitions)) is not None:
            return done
        ctx = self.context
        is_online = ctx.online_replica_filter()
        done: dict = {}
        to_create: dict[tuple, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            replicas = ctx.partition_replica_assignment(tp)
            live = tuple(r for r in replicas if is_online(r, tp))
            if not live:
                done[tp] = self._log_failed_state_change(tp, NEW_PARTITION, ONLINE_PARTITION, failures.no_assigned_replica_alive(
                    self.controller_id, ctx.epoch, tp, replicas, ctx.live_broker_ids))
                continue
            lai = LeaderAndIsr(live[0], INITIAL_LEADER_EPOCH, live, RECOVERED, INITIAL_PARTITION_EPOCH)
            to_create[tp] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
        if not to_create:
            return done
        try:
            responses = self.store.create_partition_states(to_create, ctx.epoch_zk_version)
        except ControllerMovedError:
            self._log.error("Controller moved to another broker when trying to create the topic partition state "
                            "znode")
            raise
        except Exception as exc:
            for tp in to_create:
                # Kafka reports NewPartition as the target here (sic).
                done[tp] = self._log_failed_state_change(tp, ctx.partition_state(tp), NEW_PARTITION, exc)
            return done
        for tp, err in responses.items():
            if err is not None:
                done[tp] = self._log_failed_state_change(tp, NEW_PARTITION, ONLINE_PARTITION, err)
                continue
            info = to_create[tp]
            ctx.put_partition_leadership_info(tp, info)
            self.batch.add_leader_and_isr_request_for_brokers(
                info.leader_and_isr.isr, tp, info, ctx.partition_full_replica_assignment(tp), True)
            done[tp] = info.leader_and_isr
        return done

    # --- elections ----------------------------------------------------------------------------------
    def _elect_leader_for_partitions(self, partitions: list[tuple], strategy, current: dict) -> dict:
        """tp -> (LeaderAndIsr, election code) or Exception; retries BADVERSION writes until none remain."""
        finished: dict = {}
        remaining = partitions
        while remaining:
            done, remaining = self._do_elect_leader_for_partitions(remaining, strategy)
            for tp, res in done.items():
                if isinstance(res, Exception):
                    self._log_failed_state_change(tp, current[tp], ONLINE_PARTITION, res)
            finished.update(done)
            if remaining:
                self._log.info(f"Retrying leader election with strategy {strategy} for partitions "
                               f"{','.join(str(TopicPartition(*tp)) for tp in remaining)}")
        return finished

    def _do_elect_leader_for_partitions(self, partitions: list[tuple], strategy):
        ctx = self.context
        try:
            stored = self.store.get_partition_states(partitions)
        except Exception as exc:
            return {tp: exc for tp in partitions}, []
        failed: dict = {}
        valid: list[tuple] = []
        for tp in partitions:
            info = stored.get(tp)
            if info is None:
                failed[tp] = failures.no_leadership_info(tp, PARTITION_BY_BYTE[ctx.partition_state(tp)])
            elif info.controller_epoch > ctx.epoch:
                failed[tp] = failures.election_aborted_by_newer_controller(tp, self.controller_id,
                                                                           info.controller_epoch)
            else:
                valid.append(tp)
        if not valid:
            return failed, []

        elected: dict[tuple, tuple] = {}  # tp -> (new LeaderAndIsr, recipients, election code)
        for tp, res in self._compute_elections(valid, stored, strategy).items():
            if isinstance(res, Exception):
                failed[tp] = res
            elif res[0] is None:
                failed[tp] = failures.no_leader_elected(tp, strategy)
            else:
                elected[tp] = res
        if not elected:
            return failed, []
        result = self.store.update_leader_and_isr({tp: e[0] for tp, e in elected.items()}, ctx.epoch,
                                                  ctx.epoch_zk_version)
        finished = dict(failed)
        for tp, res in result.finished.items():
            if isinstance(res, Exception):
                finished[tp] = res
                continue
            lai, recipients, code = elected[tp][0], elected[tp][1], elected[tp][2]
            info = LeaderIsrAndControllerEpoch(res, ctx.epoch)
            ctx.put_partition_leadership_info(tp, info)
            self.batch.add_leader_and_isr_request_for_brokers(
                recipients, tp, info, ctx.partition_full_replica_assignment(tp), False)
            finished[tp] = (res, code)
        for tp in result.to_retry:
            self._log.debug(f"Controller failed to elect leader for partition {TopicPartition(*tp)}. Attempted to "
                            f"write state {elected[tp][0]}, but failed with bad ZK version. This will be retried.")
        return finished, list(result.to_retry)

    def _compute_elections(self, partitions: list[tuple], stored: dict, strategy) -> dict:
        """Election.scala: tp -> (new LeaderAndIsr or None, recipients, election code)."""
        ctx = self.context
        out: dict = {}
        if isinstance(strategy, OfflinePartitionLeaderElectionStrategy):
            is_online = ctx.online_replica_filter()
            unclean_by_topic: dict[str, bool] = {}
            for tp in partitions:
                lai = stored[tp].leader_and_isr
                assignment = ctx.partition_replica_assignment(tp)
                live = [r for r in assignment if is_online(r, tp)]
                if any(is_online(r, tp) for r in lai.isr):
                    unclean = False
                elif strategy.allow_unclean:
                    unclean = True
                else:
                    unclean = unclean_by_topic.get(tp[0])
                    if unclean is None:
                        unclean = unclean_by_topic[tp[0]] = self.unclean_leader_election_enabled(tp[0])
                leader = election.offline_partition_leader(assignment, lai.isr, live, unclean)
                if leader is None:
                    out[tp] = (None, live, ELECTION_OFFLINE)
                elif leader in lai.isr:
                    online_isr = [r for r in lai.isr if is_online(r, tp)]
                    new_isr = election.offline_new_isr(leader, lai.isr, online_isr)
                    out[tp] = (lai.new_leader_and_isr(leader, new_isr), live, ELECTION_OFFLINE)
                else:
                    # Kafka marks UncleanLeaderElectionsPerSec when the algorithm picks, before the write.
                    ctx.unclean_leader_elections += 1
                    new = (lai.new_recovering_leader_and_isr(leader, (leader,)) if self.leader_recovery_supported
                           else lai.new_leader_and_isr(leader, (leader,)))
                    out[tp] = (new, live, ELECTION_OFFLINE_UNCLEAN)
        elif isinstance(strategy, ReassignPartitionLeaderElectionStrategy):
            is_online = ctx.online_replica_filter()
            for tp in partitions:
                lai = stored[tp].leader_and_isr
                target = ctx.partition_full_replica_assignment(tp).target_replicas
                live = [r for r in target if is_online(r, tp)]
                leader = election.reassign_partition_leader(target, lai.isr, live)
                out[tp] = (None if leader is None else lai.new_leader(leader), list(target), ELECTION_REASSIGN)
        elif isinstance(strategy, PreferredReplicaPartitionLeaderElectionStrategy):
            is_online = ctx.online_replica_filter()
            for tp in partitions:
                lai = stored[tp].leader_and_isr
                assignment = ctx.partition_replica_assignment(tp)
                live = [r for r in assignment if is_online(r, tp)]
                leader = election.preferred_replica_leader(assignment, lai.isr, live)
                out[tp] = (None if leader is None else lai.new_leader(leader), list(assignment), ELECTION_PREFERRED)
        elif isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy):
            is_online = ctx.online_replica_filter(include_shutting_down_brokers=True)
            down = set(ctx.shutting_down_broker_ids)
            for tp in partitions:
                lai = stored[tp].leader_and_isr
                assignment = ctx.partition_replica_assignment(tp)
                live = [r for r in assignment if is_online(r, tp)]
                leader = election.controlled_shutdown_leader(assignment, lai.isr, live, down)
                new = None if leader is None else lai.new_leader_and_isr(
                    leader, election.controlled_shutdown_new_isr(lai.isr, down))
                out[tp] = (new, live, ELECTION_CONTROLLED_SHUTDOWN)
        else:
            raise ValueError(f"unknown election strategy {strategy!r}")
        return out

    # --- failures -------------------------------------------------------------------------------
    def _log_invalid_transition(self, tp: tuple, cur: int, target: int) -> Exception:
        target_state = PARTITION_BY_BYTE[target]
        expected = ",".join(s.value for s in target_state.valid_previous_ordered)
        exc = InvalidTransitionError(
            f"Partition {TopicPartition(*tp)} should be in one of {expected} states before moving to {target_state} "
            f"state. Instead it is in {PARTITION_BY_BYTE[cur]} state")
        return self._log_failed_state_change(tp, cur, target, exc)

    def _log_failed_state_change(self, tp: tuple, cur: int, target: int, exc: Exception) -> Exception:
        epoch = self.context.epoch
        self.journal.emit(TransitionFailed, ENTITY_PARTITION, tp[0], tp[1], -1, cur, target, kafka_name(exc), str(exc))
        self._log.error(f"Controller {self.controller_id} epoch {epoch} failed to change state for partition "
                        f"{TopicPartition(*tp)} from {PARTITION_BY_BYTE[cur]} to {PARTITION_BY_BYTE[target]}",
                        epoch=epoch, error=f"{kafka_name(exc)}: {exc}")
        return exc
