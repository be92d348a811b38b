"""TopicDeletionManager (controller/topic_deletion_manager.py).

Ports Kafka's TopicDeletionManagerTest (core/src/test/scala/unit/kafka/controller/, 3.7). Kafka drives the
manager with MockReplicaStateMachine / MockPartitionStateMachine (which only put states, and throw on an invalid
transition) and a mocked DeletionClient. Here the manager drives the real state machines over the in-memory
``/state`` store of conftest.py, wrapped only to count calls per target state as Kafka's mocks do; the
DeletionClient is a fake that records its calls and does what Kafka's ControllerDeletionClient does to the
store and the brokers. Besides Kafka's assertions, each test checks that no transition was refused
(TransitionFailed records) and which requests reached the brokers.

Kafka's setup: controller broker id 1, brokers 1, 2, 3 with broker epoch 1, round-robin replica assignment.
"""
from __future__ import annotations

from collections import Counter

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config import KafkaConfig
from controller.topic_deletion_manager import TopicDeletionManager
from events.records import (
    ENTITY_PARTITION, ENTITY_REPLICA, EPOCH_DURING_DELETE, LEADER_DURING_DELETE, PartitionTransition,
    StopReplicaPartition, UpdateMetadataPartition,
)
from statemachines.leader_and_isr import ReplicaAssignment
from statemachines.partition_state_machine import PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine
from statemachines.states import (
    NON_EXISTENT_PARTITION, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
    REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL, ReplicaState,
)

CONTROLLER_ID = 1
EPOCH = 1


class CountingReplicaStateMachine(ReplicaStateMachine):
    """The real state machine, counting handle_state_changes calls per target (MockReplicaStateMachine)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: Counter = Counter()

    def handle_state_changes(self, replicas, target_state):
        self.calls[target_state] += 1
        return super().handle_state_changes(replicas, target_state)


class CountingPartitionStateMachine(PartitionStateMachine):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: Counter = Counter()

    def handle_state_changes(self, partitions, target_state, strategy=None):
        self.calls[target_state] += 1
        return super().handle_state_changes(partitions, target_state, strategy)


class FakeDeletionClient:
    """Records every call. Like ControllerDeletionClient, ``delete_topic`` removes the topic's ``/state`` znodes
    and ``send_metadata_update`` sends UpdateMetadata to every live or shutting-down broker."""

    def __init__(self, h):
        self.h = h
        self.calls: list[tuple] = []
        self.completed_with_all_successful: dict[str, bool] = {}

    def delete_topic(self, topic, epoch_zk_version):
        self.calls.append(("delete_topic", topic, epoch_zk_version))
        self.h.store.delete_topic(topic)

    def delete_topic_deletions(self, topics, epoch_zk_version):
        self.calls.append(("delete_topic_deletions", list(topics), epoch_zk_version))

    def mute_partition_modifications(self, topic):
        # The first step of the teardown: every replica must be ReplicaDeletionSuccessful by now.
        ctx = self.h.ctx
        self.completed_with_all_successful[topic] = bool(ctx.replicas_for_topic(topic)) and all(
            ctx.replica_state(r) == REPLICA_DELETION_SUCCESSFUL for r in ctx.replicas_for_topic(topic))
        self.calls.append(("mute_partition_modifications", topic))

    def send_metadata_update(self, partitions):
        partitions = list(partitions)
        self.calls.append(("send_metadata_update", partitions))
        h = self.h
        h.batch.new_batch()
        h.batch.add_update_metadata_request_for_brokers(h.ctx.live_or_shutting_down_broker_ids, partitions)
        h.batch.send_requests_to_brokers(h.ctx.epoch)

    def of(self, name):
        return [c[1:] for c in self.calls if c[0] == name]


def init_context(h, brokers, topics, num_partitions, replication_factor):
    """Kafka's initContext: live brokers with epoch 1 and a simple round-robin assignment."""
    h.ctx.add_live_brokers({b: 1 for b in brokers})
    leader_index = 0
    for topic in topics:
        for p in range(num_partitions):
            replicas = tuple(brokers[(i + leader_index) % len(brokers)] for i in range(replication_factor))
            h.ctx.update_partition_full_replica_assignment((topic, p), ReplicaAssignment(replicas))
            leader_index += 1


def build(make_harness, brokers=(1, 2, 3), topics=("foo", "bar"), num_partitions=2, replication_factor=3,
          config=None, log=None):
    """A harness with counting state machines, both started as in Kafka's test, and the manager."""
    h = make_harness(controller_id=CONTROLLER_ID, epoch=EPOCH)
    h.rsm = CountingReplicaStateMachine(CONTROLLER_ID, h.ctx, h.store, h.batch, h.journal)
    h.psm = CountingPartitionStateMachine(CONTROLLER_ID, h.ctx, h.store, h.batch, h.journal)
    init_context(h, list(brokers), topics, num_partitions, replication_factor)
    h.rsm.startup()
    h.psm.startup()  # NewPartition -> OnlinePartition: leaders and ISRs written to the store
    h.client = FakeDeletionClient(h)
    h.tdm = TopicDeletionManager(KafkaConfig(config), h.ctx, h.rsm, h.psm, h.client, log=log)
    return h


def replicas_of(h, topic):
    return set(h.ctx.replicas_for_topic(topic))


def partitions_of(h, topic):
    return set(h.ctx.partitions_for_topic(topic))


def in_state(h, topic, state):
    return set(h.ctx.replicas_in_state(topic, state))


def partitions_in_state(h, topic, state):
    return set(h.ctx.partitions_in_state(state, topic))


def stop_replicas(h, *, delete):
    """(broker, topic, partition) of every StopReplica partition sent with this delete flag."""
    return {(r.broker_id, r.topic, r.partition) for r in h.records(StopReplicaPartition)
            if r.delete_partition == delete}


def clear_counts(h):
    h.rsm.calls.clear()
    h.psm.calls.clear()


def assert_gone(h, topic):
    assert topic not in h.ctx.topics
    assert h.ctx.partitions_for_topic(topic) == []
    assert not [r for r in h.ctx.replicas_in_states(range(1, 8)) if r[0] == topic]
    assert not [tp for tp in h.store.states if tp[0] == topic]


# --- Kafka's test cases -------------------------------------------------------------------------------


def test_initialization(make_harness):
    """Kafka: testInitialization."""
    h = build(make_harness, topics=("foo", "bar", "baz"))
    assert h.tdm.is_delete_topic_enabled
    h.tdm.init(initial_topics_to_be_deleted={"foo", "bar"}, initial_topics_ineligible_for_deletion={"bar", "baz"})
    assert h.ctx.topics_to_be_deleted == {"foo", "bar"}
    assert h.ctx.topics_ineligible_for_deletion == {"bar"}
    # init only records; nothing moves until tryTopicDeletion.
    assert h.ctx.topics_with_deletion_started == set()
    assert h.client.calls == []


def test_basic_deletion(make_harness):
    """Kafka: testBasicDeletion."""
    h = build(make_harness)
    assert h.tdm.is_delete_topic_enabled
    h.tdm.init(set(), set())
    foo_partitions, foo_replicas = partitions_of(h, "foo"), replicas_of(h, "foo")
    bar_partitions, bar_replicas = partitions_of(h, "bar"), replicas_of(h, "bar")
    clear_counts(h)
    h.reset_output()

    h.tdm.enqueue_topics_for_deletion({"foo", "bar"})

    assert partitions_in_state(h, "foo", NON_EXISTENT_PARTITION) == foo_partitions
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == foo_replicas
    assert partitions_in_state(h, "bar", NON_EXISTENT_PARTITION) == bar_partitions
    assert in_state(h, "bar", REPLICA_DELETION_STARTED) == bar_replicas
    assert h.client.of("send_metadata_update") == [(sorted(bar_partitions | foo_partitions),)]
    assert h.ctx.topics_to_be_deleted == {"foo", "bar"}
    assert h.ctx.topics_with_deletion_started == {"foo", "bar"}
    assert h.ctx.topics_ineligible_for_deletion == set()
    # What reached the brokers: StopReplica without and then with delete for every replica, and
    # UpdateMetadata announcing the partitions as being deleted.
    every = {(r[2], r[0], r[1]) for r in foo_replicas | bar_replicas}
    assert stop_replicas(h, delete=False) == every
    assert stop_replicas(h, delete=True) == every
    assert {r.leader_epoch for r in h.records(StopReplicaPartition)} == {EPOCH_DURING_DELETE}
    announced = h.records(UpdateMetadataPartition)
    assert {(r.topic, r.partition) for r in announced} == foo_partitions | bar_partitions
    assert {r.leader for r in announced} == {LEADER_DURING_DELETE}

    h.tdm.complete_replica_deletion(foo_replicas | bar_replicas)

    for topic in ("foo", "bar"):
        assert_gone(h, topic)
    assert h.ctx.topics_to_be_deleted == set()
    assert h.ctx.topics_with_deletion_started == set()
    assert h.ctx.topics_ineligible_for_deletion == set()

    assert h.psm.calls[OFFLINE_PARTITION] == 1
    assert h.psm.calls[NON_EXISTENT_PARTITION] == 1
    assert h.rsm.calls[REPLICA_DELETION_INELIGIBLE] == 1
    assert h.rsm.calls[OFFLINE_REPLICA] == 1
    assert h.rsm.calls[REPLICA_DELETION_STARTED] == 1
    assert h.rsm.calls[REPLICA_DELETION_SUCCESSFUL] == 1

    assert h.client.of("mute_partition_modifications") == [("bar",), ("foo",)]
    assert h.client.of("delete_topic") == [("bar", h.ctx.epoch_zk_version), ("foo", h.ctx.epoch_zk_version)]
    assert h.client.completed_with_all_successful == {"foo": True, "bar": True}
    assert h.failures() == []


def test_deletion_with_broker_offline(make_harness):
    """Kafka: testDeletionWithBrokerOffline."""
    h = build(make_harness)
    assert h.tdm.is_delete_topic_enabled
    h.tdm.init(set(), set())
    foo_partitions, foo_replicas = partitions_of(h, "foo"), replicas_of(h, "foo")

    # Broker 2 is taken offline
    failed_broker = 2
    last_epoch = h.ctx.live_broker_id_and_epochs()[failed_broker]
    h.ctx.remove_live_brokers({failed_broker})
    assert h.ctx.live_broker_ids == {1, 3}
    offline_replicas = {r for r in foo_replicas if r[2] == failed_broker}
    online_replicas = foo_replicas - offline_replicas
    h.rsm.handle_state_changes(sorted(offline_replicas), OFFLINE_REPLICA)

    # Start topic deletion
    h.reset_output()
    h.tdm.enqueue_topics_for_deletion({"foo"})
    assert partitions_in_state(h, "foo", NON_EXISTENT_PARTITION) == foo_partitions
    assert h.client.of("send_metadata_update") == [(sorted(foo_partitions),)]
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == online_replicas
    assert in_state(h, "foo", REPLICA_DELETION_INELIGIBLE) == offline_replicas
    assert h.ctx.topics_to_be_deleted == {"foo"}
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    assert {b for b, _, _ in stop_replicas(h, delete=True)} == {1, 3}  # nothing goes to the dead broker

    # Deletion succeeds for online replicas
    h.tdm.complete_replica_deletion(online_replicas)
    assert partitions_in_state(h, "foo", NON_EXISTENT_PARTITION) == foo_partitions
    assert h.ctx.topics_to_be_deleted == {"foo"}
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    assert in_state(h, "foo", REPLICA_DELETION_SUCCESSFUL) == online_replicas
    assert in_state(h, "foo", OFFLINE_REPLICA) == offline_replicas  # reset for the retry

    # Broker 2 comes back online and deletion is resumed
    h.ctx.add_live_brokers({failed_broker: last_epoch + 1})
    h.reset_output()
    h.tdm.resume_deletion_for_topics({"foo"})
    assert in_state(h, "foo", REPLICA_DELETION_SUCCESSFUL) == online_replicas
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == offline_replicas
    assert stop_replicas(h, delete=True) == {(r[2], r[0], r[1]) for r in offline_replicas}

    h.tdm.complete_replica_deletion(offline_replicas)
    assert_gone(h, "foo")
    assert h.ctx.topics_to_be_deleted == set()
    assert h.ctx.topics_with_deletion_started == set()
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert h.client.completed_with_all_successful == {"foo": True}
    assert h.failures() == []
    # The other topic was not touched.
    assert in_state(h, "bar", ONLINE_REPLICA) == replicas_of(h, "bar")


def test_broker_failure_after_deletion_started(make_harness):
    """Kafka: testBrokerFailureAfterDeletionStarted."""
    h = build(make_harness)
    h.tdm.init(set(), set())
    foo_partitions, foo_replicas = partitions_of(h, "foo"), replicas_of(h, "foo")

    # Queue the topic for deletion
    h.tdm.enqueue_topics_for_deletion({"foo"})
    assert partitions_in_state(h, "foo", NON_EXISTENT_PARTITION) == foo_partitions
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == foo_replicas

    # Broker 2 fails
    failed_broker = 2
    last_epoch = h.ctx.live_broker_id_and_epochs()[failed_broker]
    h.ctx.remove_live_brokers({failed_broker})
    assert h.ctx.live_broker_ids == {1, 3}
    offline_replicas = {r for r in foo_replicas if r[2] == failed_broker}
    online_replicas = foo_replicas - offline_replicas

    # Fail replica deletion
    h.tdm.fail_replica_deletion(offline_replicas)
    assert h.ctx.topics_to_be_deleted == {"foo"}
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    assert in_state(h, "foo", REPLICA_DELETION_INELIGIBLE) == offline_replicas
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == online_replicas

    # Broker 2 is restarted. The offline replicas remain ineligible while others are still in flight.
    h.ctx.add_live_brokers({failed_broker: last_epoch + 1})
    h.tdm.resume_deletion_for_topics({"foo"})
    assert h.ctx.topics_to_be_deleted == {"foo"}
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == online_replicas
    assert in_state(h, "foo", REPLICA_DELETION_INELIGIBLE) == offline_replicas

    # When deletion completes for the replicas which started, then deletion begins for the remaining ones
    h.reset_output()
    h.tdm.complete_replica_deletion(online_replicas)
    assert h.ctx.topics_to_be_deleted == {"foo"}
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert in_state(h, "foo", REPLICA_DELETION_SUCCESSFUL) == online_replicas
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == offline_replicas
    assert stop_replicas(h, delete=True) == {(r[2], r[0], r[1]) for r in offline_replicas}
    assert h.failures() == []

    # (Beyond Kafka's test) and the topic goes once those succeed.
    h.tdm.complete_replica_deletion(offline_replicas)
    assert_gone(h, "foo")
    assert h.failures() == []


# --- beyond Kafka's test --------------------------------------------------------------------------------


def test_delete_topic_disabled(make_harness):
    h = build(make_harness, config={"delete.topic.enable": "false"})
    assert not h.tdm.is_delete_topic_enabled
    h.tdm.init({"foo", "bar"}, {"bar"})
    # The /admin/delete_topics entries are removed and nothing is queued.
    assert h.client.calls == [("delete_topic_deletions", ["bar", "foo"], h.ctx.epoch_zk_version)]
    assert h.ctx.topics_to_be_deleted == set() and h.ctx.topics_ineligible_for_deletion == set()
    h.reset_output()
    h.tdm.try_topic_deletion()
    h.tdm.enqueue_topics_for_deletion({"foo"})
    h.tdm.resume_deletion_for_topics({"foo"})
    h.tdm.mark_topic_ineligible_for_deletion({"foo"}, "offline replicas")
    h.tdm.fail_replica_deletion(replicas_of(h, "foo"))
    h.tdm.complete_replica_deletion(replicas_of(h, "foo"))
    assert not h.tdm.is_topic_queued_up_for_deletion("foo")
    assert h.ctx.topics_to_be_deleted == set()
    assert in_state(h, "foo", ONLINE_REPLICA) == replicas_of(h, "foo")
    assert h.journal.records == [] and h.channel.sent == []


def test_try_topic_deletion_after_failover(make_harness):
    # init records; tryTopicDeletion starts the eligible topics and leaves the ineligible ones queued.
    h = build(make_harness, topics=("foo", "bar", "baz"))
    h.tdm.init({"foo", "bar"}, {"bar", "baz"})
    h.tdm.try_topic_deletion()
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == replicas_of(h, "foo")
    assert h.ctx.topics_with_deletion_started == {"foo"}
    assert in_state(h, "bar", ONLINE_REPLICA) == replicas_of(h, "bar")
    assert partitions_in_state(h, "bar", ONLINE_PARTITION) == partitions_of(h, "bar")
    assert h.tdm.is_topic_queued_up_for_deletion("bar") and not h.tdm.is_topic_queued_up_for_deletion("baz")
    # A reassignment of bar completes: its deletion starts.
    h.tdm.resume_deletion_for_topics({"bar", "baz"})
    assert in_state(h, "bar", REPLICA_DELETION_STARTED) == replicas_of(h, "bar")
    assert h.ctx.topics_with_deletion_started == {"foo", "bar"}
    assert in_state(h, "baz", ONLINE_REPLICA) == replicas_of(h, "baz")
    assert h.failures() == []


def test_failover_with_replicas_on_dead_broker(make_harness):
    # At failover the replica state machine starts replicas on dead brokers as ReplicaDeletionIneligible, then
    # moves them to OfflineReplica; the deletion halts on them until the broker returns.
    h = make_harness(controller_id=CONTROLLER_ID, epoch=EPOCH)
    init_context(h, [1, 2, 3], ("foo",), 2, 3)
    h.store.states.clear()
    h.ctx.remove_live_brokers({3})
    h.rsm.startup()
    h.psm.startup()
    client = FakeDeletionClient(h)
    tdm = TopicDeletionManager(KafkaConfig(), h.ctx, h.rsm, h.psm, client)
    tdm.init({"foo"}, set())
    tdm.try_topic_deletion()
    on_3 = {r for r in replicas_of(h, "foo") if r[2] == 3}
    assert in_state(h, "foo", REPLICA_DELETION_INELIGIBLE) == on_3
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == replicas_of(h, "foo") - on_3
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    tdm.complete_replica_deletion(replicas_of(h, "foo") - on_3)
    assert in_state(h, "foo", OFFLINE_REPLICA) == on_3
    h.ctx.add_live_brokers({3: 2})
    tdm.resume_deletion_for_topics({"foo"})
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == on_3
    tdm.complete_replica_deletion(on_3)
    assert "foo" not in h.ctx.topics
    assert h.failures() == []


def test_replica_deletion_failure_halts_until_resumed(make_harness):
    h = build(make_harness, topics=("foo",))
    h.tdm.init(set(), set())
    h.tdm.enqueue_topics_for_deletion({"foo"})
    replicas = replicas_of(h, "foo")
    failed = {r for r in replicas if r[1] == 0 and r[2] == 1}
    h.tdm.fail_replica_deletion(failed)
    h.tdm.complete_replica_deletion(replicas - failed)
    # Nothing is outstanding: the failed replica is reset for a retry, but the topic stays halted.
    assert in_state(h, "foo", OFFLINE_REPLICA) == failed
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    h.reset_output()
    h.tdm.resume_deletion_for_topics({"foo"})
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == failed
    assert stop_replicas(h, delete=True) == {(1, "foo", 0)}
    # The partitions are not moved again (deletion had started), but brokers hear about them again.
    assert h.records(PartitionTransition) == []
    assert h.client.of("send_metadata_update")[-1] == (sorted(partitions_of(h, "foo")),)
    h.tdm.complete_replica_deletion(failed)
    assert_gone(h, "foo")
    assert h.failures() == []


def test_replicas_of_topics_not_queued_are_ignored(make_harness):
    h = build(make_harness)
    h.tdm.init(set(), set())
    h.reset_output()
    h.tdm.fail_replica_deletion(replicas_of(h, "foo"))
    h.tdm.complete_replica_deletion(replicas_of(h, "foo"))
    h.tdm.mark_topic_ineligible_for_deletion({"foo"}, "topic reassignment in progress")
    h.tdm.resume_deletion_for_topics({"foo"})
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert in_state(h, "foo", ONLINE_REPLICA) == replicas_of(h, "foo")
    assert h.journal.records == [] and h.channel.sent == [] and h.client.calls == []


def test_reassignment_halts_deletion_before_it_starts(make_harness):
    # processTopicDeletion marks topics being reassigned ineligible before enqueueing them.
    h = build(make_harness)
    h.tdm.init(set(), set())
    h.tdm.mark_topic_ineligible_for_deletion({"foo"}, "topic reassignment in progress")
    assert h.ctx.topics_ineligible_for_deletion == set()  # only queued topics can be halted
    h.ctx.queue_topic_deletion(["foo"])
    h.tdm.mark_topic_ineligible_for_deletion({"foo"}, "topic reassignment in progress")
    h.tdm.enqueue_topics_for_deletion({"foo"})
    assert h.ctx.topics_with_deletion_started == set()
    assert in_state(h, "foo", ONLINE_REPLICA) == replicas_of(h, "foo")
    h.tdm.resume_deletion_for_topics({"foo"})
    assert in_state(h, "foo", REPLICA_DELETION_STARTED) == replicas_of(h, "foo")


def test_broker_failure_after_replica_deleted_is_refused_as_in_kafka(make_harness):
    # A broker dies after its replica was deleted: the controller's onReplicasBecomeOffline hands that replica to
    # failReplicaDeletion, and ReplicaDeletionSuccessful -> ReplicaDeletionIneligible is not a legal transition:
    # Kafka logs the refusal and the replica stays deleted. The topic is halted; the broker's return resumes it.
    h = build(make_harness, topics=("foo",), num_partitions=1)
    h.tdm.init(set(), set())
    h.tdm.enqueue_topics_for_deletion({"foo"})
    on_2 = ("foo", 0, 2)
    h.tdm.complete_replica_deletion({on_2})
    h.ctx.remove_live_brokers({2})
    h.tdm.fail_replica_deletion({on_2})
    [refused] = h.failures()
    assert (refused.replica, refused.from_state, refused.to_state) == (
        2, REPLICA_DELETION_SUCCESSFUL, REPLICA_DELETION_INELIGIBLE)
    assert h.ctx.replica_state(on_2) == REPLICA_DELETION_SUCCESSFUL
    assert h.ctx.topics_ineligible_for_deletion == {"foo"}
    h.tdm.complete_replica_deletion({("foo", 0, 1), ("foo", 0, 3)})
    assert_gone(h, "foo")


def test_reset(make_harness):
    h = build(make_harness)
    h.tdm.init({"foo", "bar"}, {"bar"})
    h.tdm.try_topic_deletion()
    assert h.ctx.topics_with_deletion_started == {"foo"}
    h.tdm.reset()
    assert h.ctx.topics_to_be_deleted == set()
    assert h.ctx.topics_with_deletion_started == set()
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert not h.tdm.is_topic_queued_up_for_deletion("foo")


def test_log_lines(make_harness):
    log = structlog.testing.CapturingLogger()
    h = build(make_harness, log=log)
    h.tdm.init({"foo"}, {"bar"})
    on_2 = {r for r in replicas_of(h, "foo") if r[2] == 2}
    h.ctx.remove_live_brokers({2})
    h.rsm.handle_state_changes(sorted(on_2), OFFLINE_REPLICA)
    h.tdm.try_topic_deletion()
    h.tdm.complete_replica_deletion(replicas_of(h, "foo") - on_2)
    h.ctx.add_live_brokers({2: 2})
    h.tdm.resume_deletion_for_topics({"foo"})
    h.tdm.complete_replica_deletion(on_2)
    assert h.failures() == []
    infos = [c.args[0] for c in log.calls if c.method_name == "info"]
    assert infos == [
        "Initializing manager with initial deletions: Set(foo), initial ineligible deletions: Set(bar)",
        "Handling deletion for topics foo",
        "Deletion of topic foo (re)started",
        "Halted deletion of topics foo due to offline replicas",
        "Handling deletion for topics foo",
        "Handling deletion for topics foo",
        "Deletion of topic foo (re)started",
        "Handling deletion for topics foo",
        "Deletion of topic foo successfully completed",
    ]
    debugs = [c.args[0] for c in log.calls if c.method_name == "debug"]
    assert "Dead Replicas ([Topic=foo,Partition=0,Replica=2],[Topic=foo,Partition=1,Replica=2]) found for topic foo" \
        in debugs


# --- randomized: StopReplica responses and broker churn ----------------------------------------------------

BROKERS = (1, 2, 3)
ACTIONS = st.lists(st.tuples(st.sampled_from(["complete", "fail", "down", "up"]), st.sampled_from(BROKERS),
                             st.sampled_from([0, 1, None])), max_size=30)

# Refusals Kafka 3.7 itself makes in these histories, because onBrokerFailure / onBrokerStartup hand over every
# replica on the broker whatever its state: a broker dies holding a replica that is already deleted, already
# failed, or back Online after an earlier bounce (-> Ineligible; the same for a dead replica when the topic is
# retried); a broker comes back holding an already-deleted replica (-> Online). Each leaves the replica as it was.
KAFKA_REFUSALS = {
    (REPLICA_DELETION_SUCCESSFUL, REPLICA_DELETION_INELIGIBLE),
    (REPLICA_DELETION_INELIGIBLE, REPLICA_DELETION_INELIGIBLE),
    (ONLINE_REPLICA, REPLICA_DELETION_INELIGIBLE),
    (REPLICA_DELETION_SUCCESSFUL, ONLINE_REPLICA),
}


class Model:
    """The controller's side of the story around the manager: StopReplica responses and broker changes,
    as KafkaController's onBrokerFailure / onBrokerStartup hand them to the state machines and the manager."""

    def __init__(self, h):
        self.h = h
        self.epochs = {b: 1 for b in BROKERS}

    def response(self, broker, partition, ok):
        # Only replicas with a StopReplica(delete=true) outstanding get a response.
        started = sorted(r for r in self.h.ctx.replicas_in_state("t", REPLICA_DELETION_STARTED)
                         if r[2] == broker and partition in (None, r[1]))
        if not started or broker not in self.h.ctx.live_broker_epochs:
            return
        (self.h.tdm.complete_replica_deletion if ok else self.h.tdm.fail_replica_deletion)(started)

    def down(self, broker):
        h = self.h
        if broker not in h.ctx.live_broker_epochs:
            return
        h.ctx.remove_live_brokers({broker})
        replicas = sorted(h.ctx.replicas_on_brokers([broker]))
        queued = [r for r in replicas if h.tdm.is_topic_queued_up_for_deletion(r[0])]
        h.psm.handle_state_changes(h.ctx.partitions_with_offline_leader(), OFFLINE_PARTITION)
        h.psm.trigger_online_partition_state_change()
        h.rsm.handle_state_changes([r for r in replicas if r not in queued], OFFLINE_REPLICA)
        if queued:
            h.tdm.fail_replica_deletion(queued)

    def up(self, broker):
        h = self.h
        if broker in h.ctx.live_broker_epochs:
            return
        self.epochs[broker] += 1
        h.ctx.add_live_brokers({broker: self.epochs[broker]})
        replicas = sorted(h.ctx.replicas_on_brokers([broker]))
        h.rsm.handle_state_changes(replicas, ONLINE_REPLICA)
        h.psm.trigger_online_partition_state_change()
        queued = {r[0] for r in replicas if h.tdm.is_topic_queued_up_for_deletion(r[0])}
        if queued:
            h.tdm.resume_deletion_for_topics(queued)

    def step(self, action):
        kind, broker, partition = action
        if kind in ("complete", "fail"):
            self.response(broker, partition, kind == "complete")
        elif kind == "down":
            self.down(broker)
        else:
            self.up(broker)


def check_invariants(h, expect_refusals: bool):
    ctx = h.ctx
    deleted = "t" not in ctx.topics
    if deleted:
        # Torn down exactly once, and only when every replica had been deleted.
        assert h.client.of("delete_topic") == [("t", ctx.epoch_zk_version)]
        assert h.client.completed_with_all_successful == {"t": True}
        # Kafka 3.7's removeTopic leaves topicsIneligibleForDeletion as it was.
        assert "t" not in (ctx.topics_to_be_deleted | ctx.topics_with_deletion_started)
    else:
        assert h.client.of("delete_topic") == []
        # Every entry point ends in resumeDeletions, which would have completed it.
        assert not ctx.are_all_replicas_in_state("t", REPLICA_DELETION_SUCCESSFUL)
        assert ctx.topics_with_deletion_started == {"t"}
        assert partitions_in_state(h, "t", NON_EXISTENT_PARTITION) == partitions_of(h, "t")
        states = {ctx.replica_state(r) for r in ctx.replicas_for_topic("t")}
        assert states <= {OFFLINE_REPLICA, ONLINE_REPLICA, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
                          REPLICA_DELETION_INELIGIBLE}
        # A replica on a dead broker is never waiting for a StopReplica response.
        for r in ctx.replicas_in_state("t", REPLICA_DELETION_STARTED):
            assert r[2] in ctx.live_broker_epochs
    refusals = {(f.from_state, f.to_state) for f in h.failures() if f.entity == ENTITY_REPLICA}
    # Partitions: only the bystander's elections can fail (all of its replicas down), never a deletion step.
    assert {(f.topic, f.from_state, f.to_state) for f in h.failures() if f.entity == ENTITY_PARTITION} <= {
        ("keep", OFFLINE_PARTITION, ONLINE_PARTITION)}
    if expect_refusals:
        assert refusals <= KAFKA_REFUSALS, [
            (ReplicaState.from_byte(a), ReplicaState.from_byte(b)) for a, b in refusals - KAFKA_REFUSALS]
    else:
        assert refusals == set()
    # The bystander topic keeps serving; nothing about it was stopped or deleted.
    assert "keep" in ctx.topics and "keep" not in ctx.topics_to_be_deleted
    assert not [r for r in h.records(StopReplicaPartition) if r.topic == "keep" and r.delete_partition]


def run_random_history(make_harness, actions, *, churn: bool):
    h = build(make_harness, topics=("t", "keep"), num_partitions=2, replication_factor=3)
    h.tdm.init(set(), set())
    h.tdm.enqueue_topics_for_deletion({"t"})
    model = Model(h)
    for action in actions:
        if not churn and action[0] in ("down", "up"):
            continue
        model.step(action)
        check_invariants(h, expect_refusals=churn)
    # Then every broker comes back, deletion is resumed, and every outstanding StopReplica succeeds.
    for b in BROKERS:
        model.up(b)
    h.tdm.resume_deletion_for_topics({"t"})
    for _ in range(10):
        if "t" not in h.ctx.topics:
            break
        started = h.ctx.replicas_in_state("t", REPLICA_DELETION_STARTED)
        assert started, "deletion stalled with every broker up"
        h.tdm.complete_replica_deletion(started)
        check_invariants(h, expect_refusals=churn)
    assert "t" not in h.ctx.topics
    check_invariants(h, expect_refusals=churn)
    assert in_state(h, "keep", ONLINE_REPLICA) == replicas_of(h, "keep")
    assert partitions_in_state(h, "keep", ONLINE_PARTITION) == partitions_of(h, "keep")
    return h


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_random_stop_replica_responses(make_harness, actions):
    # Responses only (no broker changes): the state machines never refuse a transition the manager asks for.
    run_random_history(make_harness, actions, churn=False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS)
def test_random_responses_and_broker_churn(make_harness, actions):
    run_random_history(make_harness, actions, churn=True)


def test_random_histories_are_deterministic(make_harness):
    actions = [("down", 2, None), ("complete", 1, 0), ("fail", 3, None), ("up", 2, None), ("complete", 2, None),
               ("down", 1, None), ("up", 1, None), ("complete", 3, 1)]
    runs = [run_random_history(make_harness, actions, churn=True) for _ in range(2)]
    assert runs[0].journal.records == runs[1].journal.records
    assert runs[0].channel.sent == runs[1].channel.sent
    assert runs[0].client.calls == runs[1].client.calls


@pytest.mark.parametrize("broker", BROKERS)
def test_broker_bounce_during_deletion(make_harness, broker):
    # A broker fails with its StopReplica outstanding and returns: its replicas are retried and the topic goes.
    h = build(make_harness, topics=("t", "keep"))
    h.tdm.init(set(), set())
    h.tdm.enqueue_topics_for_deletion({"t"})
    model = Model(h)
    model.down(broker)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    for b in BROKERS:
        model.response(b, None, ok=True)
    assert "t" in h.ctx.topics
    model.up(broker)
    assert {r[2] for r in h.ctx.replicas_in_state("t", REPLICA_DELETION_STARTED)} == {broker}
    model.response(broker, None, ok=True)
    assert "t" not in h.ctx.topics
    assert h.failures() == []
