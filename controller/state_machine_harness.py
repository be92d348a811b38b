"""The state machines wired together without the event-driven controller or the store model.

``StateMachineHarness`` drives the state machines through Kafka's own sequences
(onNewPartitionCreation; onBrokerFailure -> onReplicasBecomeOffline) directly, with an
in-memory ``/state`` store. Benchmarks use it to measure the state machines alone, and tests
use ``run_scripted`` for a quick scripted history. The real controller is
``controller.kafka_controller.KafkaController`` inside ``controller.embedding.cluster.Cluster``.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.assignment import assign_replicas_to_brokers
from controller.context import ControllerContext
from controller.store.partition_state_store import InMemoryPartitionStateStore
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel
from events.journal import Journal
from events.records import (
    BrokerSessionExpired, BrokerStarted, ConfigChanged, ControllerElected, TopicCreated,
)
from statemachines.partition_state_machine import OfflinePartitionLeaderElectionStrategy, PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine
from statemachines.states import (
    NEW_PARTITION, NEW_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
)


@dataclass
class ScriptSpec:
    brokers: int = 3
    topic: str = "orders"
    partitions: int = 6
    replication_factor: int = 3
    kill: tuple[int, ...] = (1,)
    unclean_leader_election_enable: bool = False
    seed: int = 42
    controller_id: int = 0
    extra_topics: dict[str, tuple[int, int]] = field(default_factory=dict)


class StateMachineHarness:
    """The pieces of one controller wired together, with Kafka's flows as methods."""

    def __init__(self, controller_id: int, sink: Callable[[tuple], object] | None = None,
                 broker_config: dict | None = None, send: Callable[[object], object] | None = None):
        self.controller_id = controller_id
        self.context = ControllerContext()
        self.journal = Journal(sink)
        self.channel = ControllerChannel(send)  # no ``send``: requests are kept in channel.sent
        self.store = InMemoryPartitionStateStore()
        self.batch = ControllerBrokerRequestBatch(controller_id, self.context, self.journal, self.channel)
        self.replica_state_machine = ReplicaStateMachine(controller_id, self.context, self.store, self.batch,
                                                         self.journal)
        self.partition_state_machine = PartitionStateMachine(controller_id, self.context, self.store, self.batch,
                                                             self.journal, broker_config=broker_config)

    def elect(self, epoch: int) -> None:
        ctx = self.context
        ctx.epoch = epoch
        ctx.epoch_zk_version = self.store.controller_epoch_zk_version = epoch
        self.journal.set_writer(self.controller_id, epoch)
        self.journal.emit(ControllerElected, ctx.epoch_zk_version)
        self.batch.new_batch()
        self.batch.add_update_metadata_request_for_brokers(ctx.live_broker_epochs)
        self.batch.send_requests_to_brokers(epoch)

    def on_new_partition_creation(self, partitions: list[tuple]) -> None:
        ctx = self.context
        psm, rsm = self.partition_state_machine, self.replica_state_machine
        psm.handle_state_changes(partitions, NEW_PARTITION)
        rsm.handle_state_changes(ctx.replicas_for_partition(partitions), NEW_REPLICA)
        psm.handle_state_changes(partitions, ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(False))
        rsm.handle_state_changes(ctx.replicas_for_partition(partitions), ONLINE_REPLICA)

    def on_broker_failure(self, dead: list[int]) -> None:
        ctx = self.context
        for b in dead:
            ctx.replicas_on_offline_dirs.pop(b, None)
            ctx.shutting_down_broker_ids.discard(b)
        self.on_replicas_become_offline(ctx.replicas_on_brokers(dead))

    def on_replicas_become_offline(self, replicas: list[tuple]) -> None:
        ctx = self.context
        psm, rsm = self.partition_state_machine, self.replica_state_machine
        live_topic_replicas = [r for r in replicas if not ctx.is_topic_queued_up_for_deletion(r[0])]
        psm.handle_state_changes(ctx.partitions_with_offline_leader(), OFFLINE_PARTITION)
        results = psm.trigger_online_partition_state_change()
        rsm.handle_state_changes(live_topic_replicas, OFFLINE_REPLICA)
        if not live_topic_replicas and all(isinstance(r, Exception) for r in results.values()):
            self.batch.new_batch()
            self.batch.add_update_metadata_request_for_brokers(ctx.live_or_shutting_down_broker_ids)
            self.batch.send_requests_to_brokers(ctx.epoch)


def run_scripted(spec: ScriptSpec, sink: Callable[[tuple], object] | None = None) -> StateMachineHarness:
    """Run the scripted scenario, sending every record to ``sink`` (a LogWriter.append, a list.append...)."""
    broker_config = {"unclean.leader.election.enable": str(spec.unclean_leader_election_enable).lower()}
    engine = StateMachineHarness(spec.controller_id, sink, broker_config)
    ctx, journal = engine.context, engine.journal
    rng = random.Random(spec.seed)
    now = 0

    # Brokers register; the controller (broker 0) wins the election with epoch 1.
    for b in range(spec.brokers):
        journal.set_time(now)
        broker_epoch = 0x100 + b  # the czxid of the registration znode
        journal.input(BrokerStarted, b, f"broker-{b}", 9092, None)
        ctx.add_live_brokers({b: broker_epoch})
        now += 10
    journal.set_time(now)
    journal.input(ConfigChanged, "broker", "", "unclean.leader.election.enable",
                  broker_config["unclean.leader.election.enable"])
    engine.elect(1)

    topics = {spec.topic: (spec.partitions, spec.replication_factor), **spec.extra_topics}
    for topic, (partitions, rf) in topics.items():
        now += 1000
        journal.set_time(now)
        assignment = assign_replicas_to_brokers(sorted(ctx.live_broker_ids), partitions, rf, rng=rng)
        journal.input(TopicCreated, topic, tuple(assignment), ())
        ctx.add_topic(topic, assignment)
        engine.on_new_partition_creation(ctx.partitions_for_topic(topic))

    for b in spec.kill:
        now += 5000
        journal.set_time(now)
        journal.input(BrokerSessionExpired, b)
        ctx.remove_live_brokers([b])
        engine.on_broker_failure([b])
    return engine
