"""Partition reassignment (KIP-455) as Kafka 3.7's KafkaController does it, mixed into the controller.

Terms (reference §4.8): RS the full replica set, ORS the original replicas (RS - AR), TRS the
target replicas (RS - RR), AR the replicas being added, RR the replicas being removed.
``on_partition_reassignment`` runs the phases: U (write the new RS/AR/RR to the topic znode, then
memory; stop replicas a superseded reassignment no longer needs), A while TRS is not all in the
ISR (bump the leader epoch and send LeaderAndIsr with the new assignment; AR -> NewReplica), and B
once it is (AR -> OnlineReplica; move the leader into TRS if needed; RR -> Offline ->
DeletionStarted -> DeletionSuccessful -> NonExistent; write RS = TRS; forget the reassignment;
UpdateMetadata). Triggers: the AlterPartitionReassignments API, ``/admin/reassign_partitions``,
ISR changes of a reassigning partition (AlterPartition, ISR notifications, or a ``/state`` watch on
IBPs before AlterPartition), a broker of TRS starting, and controller failover.

The methods use the controller's context, store client, state machines, request batch and
deletion manager, as the same methods of KafkaController.scala do.
"""
from __future__ import annotations

from controller.controller_events import (
    INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS, NONE, NOT_CONTROLLER, UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION, ApiPartitionReassignment, ListPartitionReassignments, PartitionReassignmentIsrChange,
    ZkPartitionReassignment,
)
from controller.store.zk_data import topic_partition_state_path
from events.records import (
    UPDATE_REASSIGNMENT_EPOCH, LeaderAndIsrUpdated, ReassignmentResponded, ReplicaAssignmentChanged,
)
from statemachines.errors import ControllerMovedError, StateChangeFailedError
from statemachines.leader_and_isr import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from statemachines.partition_state_machine import ReassignPartitionLeaderElectionStrategy
from statemachines.states import (
    NEW_REPLICA, NON_EXISTENT_REPLICA, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_STARTED,
    REPLICA_DELETION_SUCCESSFUL,
)

REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
REASSIGNMENT_IN_PROGRESS = "topic reassignment in progress"


def _ids(xs) -> str:
    return ",".join(map(str, xs))


class PartitionReassignmentMixin:
    """KafkaController's reassignment methods; ``KafkaController`` inherits them."""

    # --- events -------------------------------------------------------------------------------------
    def _process_zk_partition_reassignment(self) -> set[tuple]:
        """``/admin/reassign_partitions`` was created (or failover): reassign what it lists; returns the
        partitions whose reassignment started."""
        if not (self.is_active and self.zk.register_znode_change_handler_and_check_existence(
                self._partition_reassignment_handler)):
            return set()
        results: dict[tuple, str] = {}
        to_reassign: dict[tuple, ReplicaAssignment] = {}
        for tp, target in sorted(self.zk.get_partition_reassignment().items()):
            built = self._maybe_build_reassignment(tp, tuple(target))
            if built is None:
                results[tp] = NO_REASSIGNMENT_IN_PROGRESS
            else:
                to_reassign[tp] = built
        results.update(self._maybe_trigger_partition_reassignment(to_reassign))
        failed = {tp: err for tp, err in results.items() if err != NONE}
        if failed:
            self._log.warning(f"Failed reassignment through zk with the following errors: {failed}")
            self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, err in results.items() if err == NONE}

    def _process_api_partition_reassignment(self, event: ApiPartitionReassignment) -> None:
        if not self.is_active:
            self._respond_to_reassignment(event, NOT_CONTROLLER, {})
            return
        results: dict[tuple, str] = {}
        to_reassign: dict[tuple, ReplicaAssignment] = {}
        for tp, target in sorted(event.reassignments.items()):
            error = None if target is None else self._validate_replicas(tp, tuple(target))
            if error is not None:
                results[tp] = error
                continue
            built = self._maybe_build_reassignment(tp, None if target is None else tuple(target))
            if built is None:
                results[tp] = NO_REASSIGNMENT_IN_PROGRESS
            else:
                to_reassign[tp] = built
        # The latest reassignment, by API or znode, wins.
        self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        results.update(self._maybe_trigger_partition_reassignment(to_reassign))
        self._respond_to_reassignment(event, NONE, results)

    def _respond_to_reassignment(self, event: ApiPartitionReassignment, error: str, results: dict) -> None:
        body = tuple((t, p, err) for (t, p), err in sorted(results.items()))
        self.journal.emit(ReassignmentResponded, error, body)
        if event.callback is not None:
            event.callback(error, dict(sorted(results.items())))

    def _process_partition_reassignment_isr_change(self, event: PartitionReassignmentIsrChange) -> None:
        if not self.is_active:
            return
        if event.partition in self.context.partitions_being_reassigned:
            self._maybe_complete_reassignment(event.partition)

    def _process_list_partition_reassignments(self, event: ListPartitionReassignments) -> None:
        if not self.is_active:
            event.callback(NOT_CONTROLLER, {})
            return
        ctx = self.context
        partitions = event.partitions if event.partitions is not None else ctx.partitions_being_reassigned
        results = {}
        for tp in sorted(partitions):
            assignment = ctx.partition_full_replica_assignment(tp)
            if assignment.is_being_reassigned:
                results[tp] = assignment
        event.callback(NONE, results)

    # --- validation and triggering --------------------------------------------------------------------
    def _validate_replicas(self, tp: tuple, replicas: tuple) -> str | None:
        if not replicas:
            self._log.info(f"Empty replica list specified in partition reassignment of {TopicPartition(*tp)}.")
            return INVALID_REPLICA_ASSIGNMENT
        if len(set(replicas)) != len(replicas):
            self._log.info(f"Duplicate replica ids in partition reassignment replica list: {list(replicas)}")
            return INVALID_REPLICA_ASSIGNMENT
        if any(r < 0 for r in replicas):
            self._log.info(f"Invalid broker id in replica list: {list(replicas)}")
            return INVALID_REPLICA_ASSIGNMENT
        new = self.context.partition_full_replica_assignment(tp).reassign_to(replicas)
        live = self.context.live_broker_ids
        if not set(new.adding_replicas) <= live:
            self._log.info(f"Replica assignment has brokers that are not alive. Replica list: "
                           f"{list(new.adding_replicas)}, live broker list: {sorted(live)}")
            return INVALID_REPLICA_ASSIGNMENT
        return None

    def _maybe_build_reassignment(self, tp: tuple, target: tuple | None) -> ReplicaAssignment | None:
        current = self.context.partition_full_replica_assignment(tp)
        if current.is_being_reassigned:
            return current.reassign_to(target if target is not None else current.origin_replicas)
        return None if target is None else current.reassign_to(target)

    def _maybe_trigger_partition_reassignment(self, reassignments: dict) -> dict[tuple, str]:
        ctx = self.context
        results: dict[tuple, str] = {}
        for tp, reassignment in reassignments.items():
            if self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0]):
                self._log.info(f"Skipping reassignment of {TopicPartition(*tp)} since the topic is currently "
                               f"being deleted")
                results[tp] = UNKNOWN_TOPIC_OR_PARTITION
            elif not ctx.partition_replica_assignment(tp):
                results[tp] = UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    self._on_partition_reassignment(tp, reassignment)
                    results[tp] = NONE
                except ControllerMovedError:
                    self._log.info(f"Failed completing reassignment of partition {TopicPartition(*tp)} because "
                                   f"controller has moved to another broker")
                    raise
                except Exception:
                    self._log.exception(f"Error completing reassignment of partition {TopicPartition(*tp)}")
                    results[tp] = UNKNOWN_SERVER_ERROR
        return results

    def _initialize_partition_reassignments(self) -> None:
        resumed = self._process_zk_partition_reassignment()
        self._maybe_resume_reassignments(lambda tp, _: tp not in resumed)

    def _maybe_resume_reassignments(self, should_resume) -> None:
        ctx = self.context
        for tp in sorted(ctx.partitions_being_reassigned):
            assignment = ctx.partition_full_replica_assignment(tp)
            if should_resume(tp, assignment):
                self._on_partition_reassignment(tp, assignment)

    def _maybe_complete_reassignment(self, tp: tuple) -> None:
        reassignment = self.context.partition_full_replica_assignment(tp)
        if self._is_reassignment_complete(tp, reassignment):
            self._log.info(f"Target replicas {list(reassignment.target_replicas)} have all caught up with the "
                           f"leader for reassigning partition {TopicPartition(*tp)}")
            self._on_partition_reassignment(tp, reassignment)

    # --- the phases ----------------------------------------------------------------------------------
    def _on_partition_reassignment(self, tp: tuple, reassignment: ReplicaAssignment) -> None:
        ctx = self.context
        rsm, topic = self.replica_state_machine, tp[0]
        # No deletion while a reassignment is in progress.
        self.topic_deletion_manager.mark_topic_ineligible_for_deletion([topic], REASSIGNMENT_IN_PROGRESS)
        self._update_current_reassignment(tp, reassignment)
        adding, removing = reassignment.adding_replicas, reassignment.removing_replicas
        if not self._is_reassignment_complete(tp, reassignment):
            self._update_leader_epoch_and_send_request(tp, reassignment)                     # A1
            for r in adding:                                                                  # A2
                rsm.handle_state_changes([(topic, tp[1], r)], NEW_REPLICA)
        else:
            rsm.handle_state_changes([(topic, tp[1], r) for r in adding], ONLINE_REPLICA)    # B1
            completed = ReplicaAssignment(reassignment.target_replicas)
            ctx.update_partition_full_replica_assignment(tp, completed)                       # B2
            self._move_reassigned_partition_leader_if_required(tp, completed)                 # B3
            self._stop_removed_replicas_of_reassigned_partition(tp, removing)                # B4, B5
            self._update_replica_assignment_for_partition(tp, completed)                      # B6
            self._remove_partition_from_reassigning_partitions(tp, completed)                 # B7
            self._send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, [tp])    # B8
            self.topic_deletion_manager.resume_deletion_for_topics([topic])

    def _update_current_reassignment(self, tp: tuple, reassignment: ReplicaAssignment) -> None:
        ctx = self.context
        current = ctx.partition_full_replica_assignment(tp)
        if current != reassignment:
            self._log.debug(f"Updating assignment of partition {TopicPartition(*tp)} from {current} to {reassignment}")
            self._update_replica_assignment_for_partition(tp, reassignment)                  # U1
            ctx.update_partition_full_replica_assignment(tp, reassignment)                    # U2
            new = set(reassignment.replicas)
            unneeded = [r for r in current.replicas if r not in new]
            if unneeded:                                                                       # U3
                self._stop_removed_replicas_of_reassigned_partition(tp, unneeded)
        if not self.config.alter_partition_supported:
            self.zk.register_znode_change_handler(self._reassignment_isr_change_handler(tp))
        ctx.partitions_being_reassigned.add(tp)

    def _is_reassignment_complete(self, tp: tuple, assignment: ReplicaAssignment) -> bool:
        if not assignment.is_being_reassigned:
            return True
        info = self.zk.get_topic_partition_states([tp]).get(tp)
        return info is not None and set(assignment.target_replicas) <= set(info.leader_and_isr.isr)

    def _move_reassigned_partition_leader_if_required(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        replicas = assignment.replicas
        leader = self.context.partition_leader(tp)
        if leader not in replicas:
            self._log.info(f"Leader {leader} for partition {TopicPartition(*tp)} being reassigned, is not in the "
                           f"new list of replicas {_ids(replicas)}. Re-electing leader")
            self.partition_state_machine.handle_state_changes([tp], ONLINE_PARTITION,
                                                              ReassignPartitionLeaderElectionStrategy())
        elif self.context.is_replica_online(leader, tp):
            self._log.info(f"Leader {leader} for partition {TopicPartition(*tp)} being reassigned, is already in "
                           f"the new list of replicas {_ids(replicas)} and is alive")
            self._update_leader_epoch_and_send_request(tp, assignment)
        else:
            self._log.info(f"Leader {leader} for partition {TopicPartition(*tp)} being reassigned, is already in "
                           f"the new list of replicas {_ids(replicas)} but is dead")
            self.partition_state_machine.handle_state_changes([tp], ONLINE_PARTITION,
                                                              ReassignPartitionLeaderElectionStrategy())

    def _stop_removed_replicas_of_reassigned_partition(self, tp: tuple, removed) -> None:
        replicas = [(tp[0], tp[1], r) for r in removed]
        rsm = self.replica_state_machine
        rsm.handle_state_changes(replicas, OFFLINE_REPLICA)
        rsm.handle_state_changes(replicas, REPLICA_DELETION_STARTED)
        # Kafka does not wait for the StopReplica responses here.
        rsm.handle_state_changes(replicas, REPLICA_DELETION_SUCCESSFUL)
        rsm.handle_state_changes(replicas, NON_EXISTENT_REPLICA)

    def _update_replica_assignment_for_partition(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        ctx = self.context
        topic, p = tp
        # Kafka writes the topic's whole assignment with this partition's replaced: built from the columns.
        ts = ctx.topics.get(topic)
        if ts is None or p >= len(ts):
            by_partition = ctx.partition_full_replica_assignment_for_topic(topic)
            by_partition[p] = assignment
            self.zk.set_topic_assignment(topic, self._topic_id(topic), by_partition, ctx.epoch_zk_version)
        else:
            tuples = ctx.pool.tuples
            replicas = [tuples[c] for c in ts.rcode]
            adding, removing = dict(ts.adding), dict(ts.removing)
            replicas[p] = tuple(assignment.replicas)
            adding[p] = tuple(assignment.adding_replicas)
            removing[p] = tuple(assignment.removing_replicas)
            self.zk.set_topic_assignment_rows(topic, self._topic_id(topic), replicas, adding, removing,
                                              ctx.epoch_zk_version)
        self.journal.emit(ReplicaAssignmentChanged, topic, tp[1], tuple(assignment.replicas),
                          tuple(assignment.adding_replicas), tuple(assignment.removing_replicas))
        self._log.info(f"Successfully updated assignment of partition {TopicPartition(*tp)} to {assignment}")

    def _update_leader_epoch_and_send_request(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        ctx = self.context
        updated = self._update_leader_epoch(tp)
        if updated is None:
            self._log.error(f"Failed to send LeaderAndIsr request with new replica assignment {assignment} to "
                            f"leader for partition being reassigned {TopicPartition(*tp)}", epoch=ctx.epoch)
            return
        batch = self.request_batch
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers(assignment.origin_replicas, tp, updated, assignment, False)
        batch.add_leader_and_isr_request_for_brokers(assignment.adding_replicas, tp, updated, assignment, True)
        batch.send_requests_to_brokers(ctx.epoch)
        self._log.info(f"Sent LeaderAndIsr request {updated.kafka_str()} with new replica assignment {assignment} "
                       f"to leader {updated.leader_and_isr.leader} for partition being reassigned "
                       f"{TopicPartition(*tp)}", epoch=ctx.epoch)

    def _update_leader_epoch(self, tp: tuple) -> LeaderIsrAndControllerEpoch | None:
        """Bump the leader epoch with the same leader and ISR (so the leader learns the new replica set)."""
        ctx = self.context
        self._log.debug(f"Updating leader epoch for partition {TopicPartition(*tp)}")
        while True:
            info = self.zk.get_topic_partition_states([tp]).get(tp)
            if info is None:
                raise RuntimeError(f"Cannot update leader epoch for partition {TopicPartition(*tp)} as leaderAndIsr "
                                   f"path is empty. This could mean we somehow tried to reassign a partition that "
                                   f"doesn't exist")
            if info.controller_epoch > ctx.epoch:
                raise StateChangeFailedError(
                    f"Leader and isr path written by another controller. This probably means the current controller "
                    f"with epoch {ctx.epoch} went through a soft failure and another controller was elected with "
                    f"epoch {info.controller_epoch}. Aborting state change by this controller")
            result = self.zk.update_leader_and_isr({tp: info.leader_and_isr.new_epoch()}, ctx.epoch,
                                                   ctx.epoch_zk_version)
            res = result.finished.get(tp)
            if res is None:
                continue  # BADVERSION: read again and retry
            if isinstance(res, Exception):
                raise res
            updated = LeaderIsrAndControllerEpoch(res, ctx.epoch)
            ctx.put_partition_leadership_info(tp, updated)
            self.journal.emit(LeaderAndIsrUpdated, tp[0], tp[1], res.leader, res.leader_epoch, tuple(res.isr),
                              res.partition_epoch, res.recovery_state, UPDATE_REASSIGNMENT_EPOCH, -1)
            self._log.info(f"Updated leader epoch for partition {TopicPartition(*tp)} to {res.leader_epoch}, "
                           f"zkVersion={res.partition_epoch}")
            return updated

    def _remove_partition_from_reassigning_partitions(self, tp: tuple, assignment: ReplicaAssignment) -> None:
        ctx = self.context
        if tp not in ctx.partitions_being_reassigned:
            raise RuntimeError("Cannot remove a reassigning partition because it is not present in memory")
        if not self.config.alter_partition_supported:
            self.zk.unregister_znode_change_handler(topic_partition_state_path(tp))
        self._maybe_remove_from_zk_reassignment(lambda p, replicas: p == tp and tuple(replicas) == assignment.replicas)
        ctx.partitions_being_reassigned.discard(tp)

    def _maybe_remove_from_zk_reassignment(self, should_remove) -> None:
        if not self.zk.reassign_partitions_in_progress():
            return
        reassigning = self.zk.get_partition_reassignment()
        removing = {tp: r for tp, r in reassigning.items() if should_remove(tp, r)}
        remaining = {tp: r for tp, r in reassigning.items() if tp not in removing}
        self._log.info(f"Removing partitions {removing} from the list of reassigned partitions in zookeeper")
        if not remaining:
            self._log.info(f"No more partitions need to be reassigned. Deleting zk path {REASSIGN_PARTITIONS_PATH}")
            self.zk.delete_partition_reassignment(self.context.epoch_zk_version)
            # Detect future reassignments through the znode.
            self.event_manager.put(ZkPartitionReassignment())
        else:
            self.zk.set_or_create_partition_reassignment(remaining, self.context.epoch_zk_version)

    def _unregister_partition_reassignment_isr_change_handlers(self) -> None:
        if not self.config.alter_partition_supported:
            for tp in sorted(self.context.partitions_being_reassigned):
                self.zk.unregister_znode_change_handler(topic_partition_state_path(tp))
