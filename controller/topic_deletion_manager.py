"""TopicDeletionManager: drives topic deletion through the two state machines (Kafka 3.7's TopicDeletionManager.scala).

A topic queued for deletion (``/admin/delete_topics/<t>``) goes through these steps, each one
re-evaluated by ``resume_deletions`` after every event that may let it progress:

1. its partitions go OfflinePartition -> NonExistentPartition (once per topic) and the brokers
   get an UpdateMetadata marking them "being deleted";
2. replicas on dead brokers become ReplicaDeletionIneligible and halt the topic ("offline
   replicas"); the others go OfflineReplica -> ReplicaDeletionStarted, which sends them a
   StopReplica with ``delete_partition=True``;
3. StopReplica responses come back as ``complete_replica_deletion`` (-> ReplicaDeletionSuccessful)
   or ``fail_replica_deletion`` (-> ReplicaDeletionIneligible, topic halted);
4. when every replica is ReplicaDeletionSuccessful the topic is torn down: replicas go
   NonExistentReplica, the client deletes its znodes and the context forgets it.

A halted topic (in ``topics_ineligible_for_deletion``) resumes through
``resume_deletion_for_topics`` (a broker hosting one of its replicas restarted, a reassignment
completed): its ineligible replicas go back to OfflineReplica and deletion is retried.

The bookkeeping sets live in the ControllerContext, as in Kafka 3.7. Everything is iterated in
sorted order, so the state machines see the same inputs, in the same order, on every run.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import structlog

from statemachines.leader_and_isr import PartitionAndReplica
from statemachines.states import (
    NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA, REPLICA_DELETION_INELIGIBLE,
    REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
)

_log = structlog.get_logger("kcontroller.controller")

DELETE_TOPIC_ENABLE = "delete.topic.enable"

REASON_OFFLINE_REPLICAS = "offline replicas"
REASON_REPLICA_DELETION_FAILURE = "replica deletion failure"
REASON_REASSIGNMENT_IN_PROGRESS = "topic reassignment in progress"


class DeletionClient(Protocol):
    """What the manager asks of the controller and the metadata store (Kafka's DeletionClient trait)."""

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Delete ``/brokers/topics/<t>``, ``/config/topics/<t>`` and ``/admin/delete_topics/<t>``."""
        ...

    def delete_topic_deletions(self, topics: list[str], epoch_zk_version: int) -> None:
        """Delete the ``/admin/delete_topics/<t>`` entries of ``topics``."""
        ...

    def mute_partition_modifications(self, topic: str) -> None:
        """Unregister the topic's PartitionModifications handler."""
        ...

    def send_metadata_update(self, partitions: list[tuple]) -> None:
        """UpdateMetadata for ``partitions`` to every live or shutting-down broker."""
        ...


def _scala_set(items: Iterable) -> str:
    """A Scala immutable Set's toString (``Set(a, b)``, ``HashSet(..)`` past 4 elements), sorted."""
    xs = sorted(items)
    return f"{'Set' if len(xs) <= 4 else 'HashSet'}({', '.join(map(str, xs))})"


def _replicas_str(replicas: Iterable[tuple]) -> str:
    return ",".join(str(PartitionAndReplica(*r)) for r in replicas)


def _delete_topic_enabled(config) -> bool:
    if config is None:
        return True
    get_bool = getattr(config, "get_bool", None)
    if get_bool is not None:
        return get_bool(DELETE_TOPIC_ENABLE)
    return str(config.get(DELETE_TOPIC_ENABLE, "true")).strip().lower() == "true"


class TopicDeletionManager:
    """Kafka's TopicDeletionManager over a ``ControllerContext`` and the two state machines.

    ``config`` is a ``controller.config.KafkaConfig`` (or a mapping of Kafka config names);
    ``client`` a ``DeletionClient``; ``log`` a structlog logger, normally the controller's,
    already bound with its ``controller_id``.
    """

    def __init__(self, config, context, replica_state_machine, partition_state_machine, client: DeletionClient,
                 *, log=None):
        self.context = context
        self.replica_state_machine = replica_state_machine
        self.partition_state_machine = partition_state_machine
        self.client = client
        self._log = log if log is not None else _log
        # Read once, as Kafka's ``val isDeleteTopicEnabled``.
        self._delete_topic_enabled = _delete_topic_enabled(config)

    @property
    def is_delete_topic_enabled(self) -> bool:
        return self._delete_topic_enabled

    # --- entry points ---------------------------------------------------------------------------
    def init(self, initial_topics_to_be_deleted: Iterable[str],
             initial_topics_ineligible_for_deletion: Iterable[str]) -> None:
        """At failover: queue the topics found under ``/admin/delete_topics`` (or drop them if disabled)."""
        to_delete = set(initial_topics_to_be_deleted)
        ineligible = set(initial_topics_ineligible_for_deletion)
        self._log.info(f"Initializing manager with initial deletions: {_scala_set(to_delete)}, "
                       f"initial ineligible deletions: {_scala_set(ineligible)}")
        ctx = self.context
        if self._delete_topic_enabled:
            ctx.queue_topic_deletion(sorted(to_delete))
            ctx.topics_ineligible_for_deletion.update(ineligible & ctx.topics_to_be_deleted)
        else:
            self._log.info(f"Removing {_scala_set(to_delete)} since delete topic is disabled")
            self.client.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)

    def try_topic_deletion(self) -> None:
        """Kick deletion off at the end of failover."""
        if self._delete_topic_enabled:
            self._resume_deletions()

    def enqueue_topics_for_deletion(self, topics: Iterable[str]) -> None:
        """Queue topics (from a TopicDeletion event); they stay queued until fully deleted."""
        if self._delete_topic_enabled:
            self.context.queue_topic_deletion(sorted(set(topics)))
            self._resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str] = ()) -> None:
        """Lift the halt on ``topics`` (a broker came back, a reassignment completed) and resume."""
        if self._delete_topic_enabled:
            ctx = self.context
            to_resume = set(topics) & ctx.topics_to_be_deleted
            if to_resume:
                ctx.topics_ineligible_for_deletion.difference_update(to_resume)
                self._resume_deletions()

    def fail_replica_deletion(self, replicas: Iterable[tuple]) -> None:
        """Replicas whose deletion failed (error in a StopReplica response, or their broker died)."""
        if not self._delete_topic_enabled:
            return
        failed = sorted({r for r in replicas if self.is_topic_queued_up_for_deletion(r[0])})
        if not failed:
            return
        topics = {r[0] for r in failed}
        self._log.debug(f"Deletion failed for replicas {_replicas_str(failed)}. Halting deletion for topics "
                        f"{_scala_set(topics)}")
        self.replica_state_machine.handle_state_changes(failed, REPLICA_DELETION_INELIGIBLE)
        self.mark_topic_ineligible_for_deletion(topics, REASON_REPLICA_DELETION_FAILURE)
        self._resume_deletions()

    def complete_replica_deletion(self, replicas: Iterable[tuple]) -> None:
        """Replicas a broker reported deleted (StopReplica response without error)."""
        deleted = sorted({r for r in replicas if self.is_topic_queued_up_for_deletion(r[0])})
        self._log.debug(f"Deletion successfully completed for replicas {_replicas_str(deleted)}")
        self.replica_state_machine.handle_state_changes(deleted, REPLICA_DELETION_SUCCESSFUL)
        self._resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        """Halt deletion of the queued topics among ``topics``."""
        if self._delete_topic_enabled:
            ctx = self.context
            halted = set(topics) & ctx.topics_to_be_deleted
            ctx.topics_ineligible_for_deletion.update(halted)
            if halted:
                self._log.info(f"Halted deletion of topics {','.join(sorted(halted))} due to {reason}")

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self._delete_topic_enabled and self.context.is_topic_queued_up_for_deletion(topic)

    def reset(self) -> None:
        """Forget all deletion bookkeeping (on resignation; Kafka 3.7 does it in resetContext)."""
        ctx = self.context
        ctx.topics_to_be_deleted.clear()
        ctx.topics_with_deletion_started.clear()
        ctx.topics_ineligible_for_deletion.clear()

    # --- predicates -------------------------------------------------------------------------------
    def _is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        return not self._delete_topic_enabled or topic in self.context.topics_ineligible_for_deletion

    def _is_topic_deletion_in_progress(self, topic: str) -> bool:
        # Not the context's is_topic_deletion_in_progress (topics_with_deletion_started): here
        # "in progress" means StopReplica requests are still outstanding.
        return self._delete_topic_enabled and self.context.is_any_replica_in_state(topic, REPLICA_DELETION_STARTED)

    def _is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (self.context.is_topic_queued_up_for_deletion(topic)
                and not self._is_topic_deletion_in_progress(topic)
                and not self._is_topic_ineligible_for_deletion(topic))

    # --- the driver -------------------------------------------------------------------------------
    def _resume_deletions(self) -> None:
        ctx = self.context
        queued = sorted(ctx.topics_to_be_deleted)
        eligible_for_retry: list[str] = []
        eligible_for_deletion: list[str] = []
        if queued:
            self._log.info(f"Handling deletion for topics {','.join(queued)}")
        for topic in queued:
            if ctx.are_all_replicas_in_state(topic, REPLICA_DELETION_SUCCESSFUL):
                self._complete_delete_topic(topic)
                self._log.info(f"Deletion of topic {topic} successfully completed")
            elif (not ctx.is_any_replica_in_state(topic, REPLICA_DELETION_STARTED)
                  and ctx.is_any_replica_in_state(topic, REPLICA_DELETION_INELIGIBLE)):
                # Nothing outstanding, but some replica failed: reset it so deletion can be retried.
                eligible_for_retry.append(topic)
            if self._is_topic_eligible_for_deletion(topic):
                self._log.info(f"Deletion of topic {topic} (re)started")
                eligible_for_deletion.append(topic)
        if eligible_for_retry:
            self._retry_deletion_for_ineligible_replicas(eligible_for_retry)
        if eligible_for_deletion:
            self._on_topic_deletion(eligible_for_deletion)

    def _retry_deletion_for_ineligible_replicas(self, topics: list[str]) -> None:
        ctx = self.context
        failed = sorted(r for t in topics for r in ctx.replicas_in_state(t, REPLICA_DELETION_INELIGIBLE))
        self._log.debug(f"Retrying deletion of topics {','.join(topics)} since replicas {_replicas_str(failed)} "
                        f"were not successfully deleted")
        self.replica_state_machine.handle_state_changes(failed, OFFLINE_REPLICA)

    def _complete_delete_topic(self, topic: str) -> None:
        ctx = self.context
        # Mute the partition-modification watch first, so that a topic re-created under the same
        # name is seen by the topic-change handler before any partition-change event.
        self.client.mute_partition_modifications(topic)
        deleted = sorted(ctx.replicas_in_state(topic, REPLICA_DELETION_SUCCESSFUL))
        # NonExistentReplica also drops each replica from the cached assignment.
        self.replica_state_machine.handle_state_changes(deleted, NON_EXISTENT_REPLICA)
        self.client.delete_topic(topic, ctx.epoch_zk_version)
        ctx.remove_topic(topic)

    def _on_topic_deletion(self, topics: list[str]) -> None:
        ctx = self.context
        unseen = [t for t in topics if t not in ctx.topics_with_deletion_started]
        if unseen:
            partitions = [tp for t in unseen for tp in ctx.partitions_for_topic(t)]
            psm = self.partition_state_machine
            psm.handle_state_changes(partitions, OFFLINE_PARTITION)
            psm.handle_state_changes(partitions, NON_EXISTENT_PARTITION)
            # Only now: while deletion has started the offline-partition count ignores the
            # topic, so marking it earlier would leave its partitions counted as offline.
            ctx.begin_topic_deletion(unseen)
        # Brokers stop serving the topics (their partitions go out with leader -2).
        self.client.send_metadata_update([tp for t in topics for tp in ctx.partitions_for_topic(t)])
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: list[str]) -> None:
        ctx = self.context
        dead: list[tuple] = []
        retry: list[tuple] = []
        halted: list[str] = []
        for topic in topics:
            alive: list[tuple] = []
            topic_dead: list[tuple] = []
            for r in sorted(ctx.replicas_for_topic(topic)):
                (alive if ctx.is_replica_online(r[2], (r[0], r[1])) else topic_dead).append(r)
            successful = set(ctx.replicas_in_state(topic, REPLICA_DELETION_SUCCESSFUL))
            dead.extend(topic_dead)
            retry.extend(r for r in alive if r not in successful)
            if topic_dead:
                self._log.debug(f"Dead Replicas ({_replicas_str(topic_dead)}) found for topic {topic}")
                halted.append(topic)
        rsm = self.replica_state_machine
        rsm.handle_state_changes(dead, REPLICA_DELETION_INELIGIBLE)
        # OfflineReplica first: its StopReplica (delete=false) stops followers fetching from the leader.
        rsm.handle_state_changes(retry, OFFLINE_REPLICA)
        rsm.handle_state_changes(retry, REPLICA_DELETION_STARTED)
        if halted:
            self.mark_topic_ineligible_for_deletion(halted, REASON_OFFLINE_REPLICAS)
