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

This module carries out the control-plane steps of a scenario (broker lifecycle, sessions,
network partitions, topics). The data plane (replica logs, fetchers, producers) is not modelled
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
from events.records import BrokerKilled, BrokerSessionExpired, BrokerStarted, ClusterCreated
from sim.event_loop import EventLoop
from sim.network import Network
from sim.scenario import Scenario, cut_links
from sim.sim_broker import SimBroker

_log = structlog.get_logger("kcontroller.sim")

REQUEST_RETRY_BACKOFF_MS = 100   # RequestSendThread's backoff before resending
MAX_SETTLE_STEPS = 10_000_000
CONTROL_PLANE_ACTIONS = frozenset({"kill_broker", "start_broker", "expire_session", "partition_network",
                                   "heal_network", "note"})


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
        else:
            raise SimulationError(f"line {step.line}: {action} is not simulated yet")
