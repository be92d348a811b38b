"""The simulation engine: brokers, the metadata store and the controller on one event loop.

A :class:`Simulation` owns the :class:`~sim.event_loop.EventLoop` (time and the one random
source), the :class:`~sim.network.Network`, the embedded ZooKeeper model and the journal. Each
broker is a :class:`~sim.sim_broker.SimBroker` running Kafka's ``KafkaController`` as its
controller candidate. After every event the loop runs, the brokers' controller queues are
stepped (round-robin by broker id) until all are empty: controller processing takes no
simulated time, the network does. Requests from a controller travel over the network to their
broker and the broker's response travels back to the controller's channel (a lost request is
resent after Kafka's 100 ms backoff while the broker is still live for that controller). Store
sessions expire at their exact deadlines.

This module carries out the control-plane steps of a scenario: broker lifecycle and controlled
shutdown (with KafkaServer's retries), sessions, network partitions, topics and their configs,
reassignments and leader elections (admin requests travel from ``"clients"`` to the controller).
The data plane (replica logs, fetchers, producers) is not modelled
yet: a scenario with a workload is refused rather than run without it.
"""
from __future__ import annotations

import random
from collections.abc import Callable

import structlog

from controller.config import KafkaConfig
from controller.kafka_zk_client import KafkaZkClient
from controller.request_batch import BrokerRequest
from controller.zookeeper import ZooKeeper
from events.journal import Journal
from controller.assignment import assign_replicas_to_brokers
from controller.controller_events import (
    ADMIN_CLIENT_TRIGGERED, NONE, PREFERRED, UNCLEAN as UNCLEAN_ELECTION, ApiPartitionReassignment, ControlledShutdown,
    ReplicaLeaderElection, TopicUncleanLeaderElectionEnable, UncleanLeaderElectionEnable,
)
from events.records import (
    BrokerKilled, BrokerSessionExpired, BrokerStarted, BrokerStopped, ClusterCreated, ConfigChanged,
    ControlledShutdownRequested, LeaderElectionRequested, PartitionsAdded, ReassignmentRequested, TopicCreated,
    TopicDeletionRequested,
)
from sim.event_loop import EventLoop
from sim.network import Network
from sim.scenario import Scenario, cut_links
from sim.sim_broker import SimBroker

_log = structlog.get_logger("kcontroller.sim")

REQUEST_RETRY_BACKOFF_MS = 100   # RequestSendThread's backoff before resending
MAX_SETTLE_STEPS = 10_000_000
CONTROL_PLANE_ACTIONS = frozenset({
    "kill_broker", "start_broker", "expire_session", "partition_network", "heal_network", "note", "create_topic",
    "delete_topic", "add_partitions", "set_config", "controlled_shutdown", "elect_preferred", "elect_unclean",
    "reassign", "cancel_reassignment"})
UNCLEAN = "unclean.leader.election.enable"


class SimulationError(RuntimeError):
    """A scenario the engine cannot run (yet), or an action that cannot be carried out."""


class Simulation:
    """The cluster of ``scenario`` on a simulated clock; ``sink`` receives every record."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None, sink: Callable[[tuple], object] | None = None):
        if scenario.workload is not None:
            raise SimulationError(f"{scenario.source}: the data plane (workload) is not simulated yet")
        unsupported = sorted({s.action for s in scenario.steps} - CONTROL_PLANE_ACTIONS)
        if unsupported:
            raise SimulationError(f"{scenario.source}: steps not simulated yet: {', '.join(unsupported)}")
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.loop = EventLoop(self.seed)
        self.network = Network(self.loop, scenario.network.latency_ms, scenario.network.jitter_ms)
        self.config = KafkaConfig(scenario.cluster.configs)
        self.session_timeout_ms = self.config.get_int("zookeeper.session.timeout.ms")
        self.store_rng = random.Random(self.seed + 1)
        self.zk = ZooKeeper(self.loop.clock)
        self.journal = Journal(sink)
        self.brokers: dict[int, SimBroker] = {}
        self.admin = KafkaZkClient(self.zk, session_timeout_ms=self.session_timeout_ms, clock=self.loop.clock,
                                   rng=self.store_rng)
        self.admin.create_top_level_paths()
        self._zk_tick = None
        self.journal.set_time(0)
        self.journal.input(ClusterCreated, self.seed, tuple(sorted(scenario.cluster.configs.items())))

    # --- running -------------------------------------------------------------------------------------
    def run(self) -> None:
        """Start the brokers, create the topics, run the steps, and stop at the scenario's duration."""
        for b in self.scenario.cluster.brokers:
            if b not in self.scenario.cluster.down:
                self.loop.at(0, lambda b=b: self._start_broker(b), f"start {b}")
        for spec in self.scenario.topics:
            self.loop.at(0, lambda spec=spec: self._create_topic(spec.name, spec.partitions, spec.replication_factor,
                                                                 spec.assignment, spec.configs), f"create {spec.name}")
        for step in self.scenario.steps:
            self.loop.at(step.at_ms, lambda step=step: self._step(step), f"step {step.action} (line {step.line})")
        self.run_until(self.scenario.duration_ms)

    def run_until(self, time_ms: int) -> None:
        loop = self.loop
        while True:
            self._arm_zk_tick()
            nxt = loop.next_time()
            if nxt is None or nxt > time_ms:
                break
            self.journal.set_time(nxt)
            loop.step()
            self.settle()
        loop.run_until(time_ms)

    def settle(self) -> int:
        """Step every running broker's controller queue, round-robin by broker id, until all are empty."""
        steps = 0
        while True:
            progressed = False
            for b in sorted(self.brokers):
                broker = self.brokers[b]
                # A broker cut off from the store has its controller thread blocked on its first request.
                if broker.alive and broker.reaches_store() and broker.controller.event_manager.step():
                    progressed = True
                    steps += 1
            if not progressed:
                return steps
            if steps > MAX_SETTLE_STEPS:
                raise SimulationError("the controllers did not settle: events keep coming")

    def _arm_zk_tick(self) -> None:
        """Have the loop wake at the store's next session deadline (expiries happen at their own time)."""
        self.admin.heartbeat()  # the admin tools' session is never cut off
        deadline = self.zk.next_session_deadline()
        if deadline is None:
            return
        deadline = max(deadline, self.loop.now)
        if self._zk_tick is not None and self._zk_tick.time <= deadline:
            return
        if self._zk_tick is not None:
            self._zk_tick.cancel()
        self._zk_tick = self.loop.at(deadline, self._tick, "zk session deadline")

    def _tick(self) -> None:
        self._zk_tick = None
        self.zk.tick()

    # --- controller <-> broker requests -------------------------------------------------------------------
    def send_request(self, src: int, request: BrokerRequest) -> None:
        """The transport of broker ``src``'s controller channel: over the network, answer coming back."""
        sender = self.brokers[src]
        channel = sender.controller.channel
        dst = request.broker_id

        def deliver() -> None:
            target = self.brokers.get(dst)
            if target is None or not target.alive:
                return  # nobody listens: no response (the controller learns from the store)
            response = target.handle_request(request)
            self.network.send(dst, src, sender.on(lambda: channel.receive(response)),
                              name=f"response {request.api} {dst}->{src}")

        def lost() -> None:
            # RequestSendThread: resend after a backoff while the broker is live for this controller.
            def retry() -> None:
                if sender.controller.is_active and dst in sender.controller.context.live_or_shutting_down_broker_ids:
                    self.network.send(src, dst, deliver, lost, name=f"request {request.api} {src}->{dst}")
            self.loop.after(REQUEST_RETRY_BACKOFF_MS, sender.on(retry), "request retry")

        self.network.send(src, dst, deliver, lost, name=f"request {request.api} {src}->{dst}")

    # --- steps ----------------------------------------------------------------------------------------
    def _input(self, cls, *body) -> None:
        self.journal.set_writer(-1, 0)
        self.journal.set_time(self.loop.now)
        self.journal.input(cls, *body)

    def _start_broker(self, b: int) -> None:
        broker = self.brokers.get(b)
        if broker is not None and broker.alive:
            raise SimulationError(f"broker {b} is already running")
        rack = self.scenario.cluster.racks.get(b) if self.scenario.cluster.racks else None
        broker = SimBroker(self, b, f"broker-{b}", 9092, rack)
        self.brokers[b] = broker
        self._input(BrokerStarted, b, broker.host, broker.port, rack)
        broker.start()

    def _live_broker_ids(self) -> list[int]:
        return sorted(b for b, broker in self.brokers.items() if broker.alive)

    def _placement(self, topic: str, first: int) -> random.Random:
        return random.Random(f"{self.seed}/{topic}/{first}")

    def _create_topic(self, name, partitions, replication_factor, assignment, configs) -> None:
        """kafka-topics.sh --create through the store, as the admin tool does."""
        if assignment is None:
            partitions = partitions or self.config.get_int("num.partitions")
            rf = replication_factor or self.config.get_int("default.replication.factor")
            assignment = assign_replicas_to_brokers(self._live_broker_ids(), partitions, rf,
                                                    rng=self._placement(name, 0))
        assignment = tuple(tuple(r) for r in assignment)
        configs = tuple(sorted((k, str(v)) for k, v in (configs or {}).items()))
        self._input(TopicCreated, name, assignment, configs)
        self.admin.create_topic_with_assignment(name, dict(configs), {p: list(r) for p, r in enumerate(assignment)})

    def _add_partitions(self, topic: str, count: int, assignment) -> None:
        existing = self.admin.get_full_replica_assignment_for_topics([topic])
        if assignment is None:
            rf = len(existing[(topic, 0)].replicas)
            new = assign_replicas_to_brokers(self._live_broker_ids(), count - len(existing), rf,
                                             rng=self._placement(topic, len(existing)),
                                             start_partition_id=len(existing))
            added = {len(existing) + i: tuple(r) for i, r in enumerate(new)}
        else:
            added = {len(existing) + i: tuple(r) for i, r in enumerate(assignment)}
        self._input(PartitionsAdded, topic, tuple(sorted(added.items())))
        self.admin.add_partitions(topic, existing, {p: list(r) for p, r in added.items()})

    def _set_config(self, a: dict) -> None:
        value = a["value"]
        if a["entity"] == "broker":
            self._input(ConfigChanged, "broker", "", a["config"], value)
            self.config = self.config.with_overrides({a["config"]: value} if value is not None else {})
            for broker in self.brokers.values():
                if broker.alive:
                    broker.controller.config = self.config
                    broker.controller.partition_state_machine.broker_config = self.config
            if a["config"] == UNCLEAN and value == "true":
                self._to_controller(lambda c: c.event_manager.put(UncleanLeaderElectionEnable()))
        else:
            topic = a["name"]
            self._input(ConfigChanged, "topic", topic, a["config"], value)
            configs = dict(self.admin.get_entity_configs("topics", topic))
            if value is None:
                configs.pop(a["config"], None)
            else:
                configs[a["config"]] = value
            self.admin.change_topic_config(topic, configs)
            if a["config"] == UNCLEAN and value == "true":
                self._to_controller(lambda c: c.event_manager.put(TopicUncleanLeaderElectionEnable(topic)))

    def _to_controller(self, act: Callable, src: int | str = "clients") -> bool:
        """Send an admin request to the active controller over the network (False: none to send to)."""
        target = self.brokers.get(self.controller_id)
        if target is None or not target.alive:
            return False
        self.network.send(src, target.broker_id, target.on(lambda: act(target.controller)),
                          name=f"admin request {src}->{target.broker_id}")
        return True

    def _controlled_shutdown(self, b: int, retries: int) -> None:
        """KafkaServer's controlled shutdown over the network: ask the controller, retry while partitions
        remain (``controlled.shutdown.retry.backoff.ms`` apart), then stop the broker anyway."""
        broker = self._running(b)
        if not self.config.get_bool("controlled.shutdown.enable") or retries <= 0:
            self._input(BrokerStopped, b)
            broker.stop()
            return
        backoff = self.config.get_int("controlled.shutdown.retry.backoff.ms")
        self._input(ControlledShutdownRequested, b, broker.broker_epoch)

        def on_response(error: str, remaining: tuple) -> None:
            if error == NONE and not remaining:
                self._input(BrokerStopped, b)
                broker.stop()
            elif retries > 1:
                self.loop.after(backoff, broker.on(lambda: self._controlled_shutdown(b, retries - 1)), "retry")
            else:
                self._input(BrokerStopped, b)
                broker.stop()

        def request(controller) -> None:
            # The answer goes back over the network to the shutting-down broker.
            controller.event_manager.put(ControlledShutdown(b, broker.broker_epoch, lambda error, remaining: (
                self.network.send(controller.broker_id, b, broker.on(lambda: on_response(error, remaining))))))

        if not self._to_controller(request, src=b):
            self.loop.after(backoff, broker.on(lambda: self._controlled_shutdown(b, retries - 1)), "retry")

    def _running(self, b: int) -> SimBroker:
        broker = self.brokers.get(b)
        if broker is None or not broker.alive:
            raise SimulationError(f"broker {b} is not running")
        return broker

    @property
    def controller_id(self) -> int:
        cid = self.admin.get_controller_id()
        return -1 if cid is None else cid

    def _step(self, step) -> None:
        a = step.args
        action = step.action
        _log.info(f"step {action}", line=step.line, at_ms=self.loop.now, note=step.note)
        if action == "start_broker":
            self._start_broker(a["broker"])
        elif action == "kill_broker":
            b = self.controller_id if a.get("controller") else a["broker"]
            self._input(BrokerKilled, b)
            self._running(b).kill()
        elif action == "expire_session":
            b = self.controller_id if a.get("controller") else a["broker"]
            broker = self._running(b)
            self._input(BrokerSessionExpired, b)
            self.zk.expire_session(broker.zk.session_id)
        elif action == "partition_network":
            self.network.cut(cut_links(a, self.scenario.cluster.brokers, self.controller_id))
        elif action == "heal_network":
            self.network.heal()
            for b in sorted(self.brokers):
                broker = self.brokers[b]
                if broker.alive and broker.zk.holds_notifications:
                    broker.zk.reconnect()
        elif action == "note":
            pass
        elif action == "create_topic":
            self._create_topic(a["name"], a["partitions"], a["replication_factor"], a["assignment"], a["configs"])
        elif action == "delete_topic":
            self._input(TopicDeletionRequested, a["topic"])
            self.admin.create_delete_topic_path(a["topic"])
        elif action == "add_partitions":
            self._add_partitions(a["topic"], a["count"], a["assignment"])
        elif action == "set_config":
            self._set_config(a)
        elif action == "controlled_shutdown":
            b = self.controller_id if a.get("controller") else a["broker"]
            self._controlled_shutdown(b, self.config.get_int("controlled.shutdown.max.retries"))
        elif action in ("elect_preferred", "elect_unclean"):
            kind = PREFERRED if action == "elect_preferred" else UNCLEAN_ELECTION
            partitions = a["partitions"]
            self._input(LeaderElectionRequested, kind, "api", None if partitions is None else tuple(partitions))
            if partitions is None:
                partitions = sorted(self.admin.get_full_replica_assignment_for_topics(
                    self.admin.get_all_topics_in_cluster()))
            self._to_controller(lambda c: c.event_manager.put(
                ReplicaLeaderElection(list(partitions), kind, ADMIN_CLIENT_TRIGGERED, lambda results: None)))
        elif action in ("reassign", "cancel_reassignment"):
            plan = (dict(a["reassignment"]) if action == "reassign"
                    else {tp: None for tp in a["partitions"]})
            self._input(ReassignmentRequested, "api", tuple((t, p, r) for (t, p), r in sorted(plan.items())))
            self._to_controller(lambda c: c.event_manager.put(ApiPartitionReassignment(plan, lambda e, r: None)))
        else:
            raise SimulationError(f"line {step.line}: {action} is not simulated yet")
