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

This module carries out the steps of a scenario: broker lifecycle and controlled shutdown (with
KafkaServer's retries; a restart racing the session of its killed process fails, as Kafka's
does), sessions (and a zombie's late notice of its expiry; an expiry finding no session is a
noted no-op), network partitions, slow followers, log-directory failures, topics and their
configs, reassignments and leader elections (admin requests travel from ``"clients"`` to the
controller), and the observations (``describe``, ``describe_quorum``, ``expect``, ``note``). The
data plane — replica logs, fetchers, ISR changes, producers — is :mod:`sim.replication` and
:mod:`sim.producer`; :mod:`sim.metrics` keeps score. A scenario with a ``quorum`` section also
runs a KRaft metadata quorum (:mod:`sim.kraft_quorum`) that the brokers fetch from.
"""
from __future__ import annotations

import gc
import heapq
import json
import random
from collections.abc import Callable
from itertools import chain

import structlog

from controller.config import KafkaConfig
from controller.store.kafka_zk_client import KafkaZkClient
from controller.request_batch import BrokerRequest
from controller.store.zookeeper import ZooKeeper
from events.journal import Journal
from controller.assignment import assign_replica_matrix, assign_replicas
from controller.controller_events import (
    ADMIN_CLIENT_TRIGGERED, NONE, PREFERRED, UNCLEAN as UNCLEAN_ELECTION, ApiPartitionReassignment, ControlledShutdown,
    AlterPartitionReceived, ReplicaLeaderElection, TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from events.records import (
    AlterPartitionRequested, BrokerKilled, LogDirFailed, BrokerSessionExpired, BrokerStarted, BrokerStopped, ClusterCreated, ConfigChanged,
    ControlledShutdownRequested, LeaderElectionRequested, PartitionsAdded, ReassignmentRequested, SimulationStarted,
    SimulationSummary, TopicCreated, TopicDeletionRequested,
)
from sim.event_loop import EventLoop
from sim.kraft_quorum import SimQuorum
from sim.metrics import Metrics
from sim.network import Network
from sim.producer import Producer
from sim.replication import Replication
from sim.scenario import Scenario, cut_links, dump_scenario
from sim.sim_broker import SimBroker
from statemachines.cluster_view import PartitionDescription, describe_topic_lines
from statemachines.leader_and_isr import LeaderAndIsr

_log = structlog.get_logger("kcontroller.sim")

REQUEST_RETRY_BACKOFF_MS = 100   # RequestSendThread's backoff before resending
MAX_SETTLE_STEPS = 10_000_000
GC_THRESHOLDS = (100_000, 50, 100)    # the collector's thresholds while a simulation runs (see run_until)
SUPPORTED_ACTIONS = frozenset({
    "kill_broker", "start_broker", "expire_session", "partition_network", "heal_network", "note", "create_topic",
    "delete_topic", "add_partitions", "set_config", "controlled_shutdown", "elect_preferred", "elect_unclean",
    "reassign", "cancel_reassignment", "slow_follower", "catch_up", "fail_log_dir", "describe", "describe_quorum",
    "expect"})
UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"
DEFAULT_LOG_DIR = "/tmp/kafka-logs"


class SimulationError(RuntimeError):
    """A scenario the engine cannot run (yet), or an action that cannot be carried out."""


class Simulation:
    """The cluster of ``scenario`` on a simulated clock; ``sink`` receives every record.

    ``column_sink`` (optional) receives the controller's columnar batches (:class:`events.columns.ColumnBatch`,
    e.g. ``LogWriter.append_columns``) into the same stream as ``sink`` (the Journal's contract); without
    one, ``sink`` gets every record of a batch, in order. With a ``quorum`` section every record goes
    to ``sink`` (the quorum reads records one by one)."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None, sink: Callable[[tuple], object] | None = None,
                 column_sink: Callable[[object], object] | None = None):
        unsupported = sorted({s.action for s in scenario.steps} - SUPPORTED_ACTIONS)
        if unsupported:
            raise SimulationError(f"{scenario.source}: steps not simulated yet: {', '.join(unsupported)}")
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.loop = EventLoop(self.seed)
        self.network = Network(self.loop, scenario.network.latency_ms, scenario.network.jitter_ms)
        self.config = KafkaConfig(scenario.cluster.configs)
        self.store_rng = random.Random(self.seed + 1)
        self.zk = ZooKeeper(self.loop.clock)
        # The brokers ask for zookeeper.session.timeout.ms; their sessions get it as the server negotiates it
        # (clamped to its min/max session timeout), which is what expiry and their pings go by.
        self.requested_session_timeout_ms = self.config.get_int("zookeeper.session.timeout.ms")
        self.session_timeout_ms = self.zk.negotiated_session_timeout(self.requested_session_timeout_ms)
        self.metrics = Metrics(self)
        self.quorum = SimQuorum(self, scenario.quorum) if scenario.quorum is not None else None
        observe = self.metrics.observe
        if sink is None:
            self.records: list | None = []
            sink = self.records.append
        else:
            self.records = None

        if self.quorum is None:
            def journal_sink(rec, _out=sink) -> None:
                observe(rec)
                _out(rec)
        else:
            def journal_sink(rec, _out=sink, _metadata=self.quorum.observe) -> None:
                observe(rec)
                _metadata(rec)
                _out(rec)
        self.journal = Journal(journal_sink)
        if self.quorum is None:
            self.journal.column_sink = self._column_sink(sink, column_sink)
        self.replication = Replication(self)
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.topic_partitions: dict[str, int] = {}
        self._producer_partitions: dict[tuple, list] = {}
        self.log_dirs = [d.strip() for d in self.config.get("log.dirs", DEFAULT_LOG_DIR).split(",") if d.strip()]
        self.failed_dirs: dict[int, set[str]] = {}
        self._dir_of: dict[tuple, str] = {}
        self._dir_load: dict[tuple[int, str], int] = {}
        self.producers: list[Producer] = []
        self.brokers: dict[int, SimBroker] = {}
        self.admin = KafkaZkClient(self.zk, session_timeout_ms=self.requested_session_timeout_ms,
                                   clock=self.loop.clock, rng=self.store_rng)
        self.admin.create_top_level_paths()
        self._zk_tick = None
        self._scheduler_timer = None
        self._by_id: list[tuple[int, SimBroker]] = []   # the brokers by id, for settle
        self._settle_due = False                          # an event was put on some controller's queue
        self._in_run = False                              # inside run_until (its outermost call)
        self._freezing = False                            # ... and freezing what is made in bulk (gc.freeze)
        self._armed_opened = -1
        self._started = False
        self.journal.set_time(0)
        self.journal.input(SimulationStarted, scenario.name, scenario.source, scenario.text or dump_scenario(scenario),
                           self.seed)
        self.journal.input(ClusterCreated, self.seed, tuple(sorted(scenario.cluster.configs.items())))

    def _column_sink(self, sink: Callable[[tuple], object], column_sink: Callable[[object], object] | None):
        """The journal's column sink: the metrics take each batch on its columns, then the caller's column
        sink does, or (a caller with a row sink only) the row sink gets its records in offset order."""
        observe_batch = self.metrics.observe_batch
        if column_sink is not None:
            def batches(batch, _out=column_sink) -> None:
                observe_batch(batch)
                _out(batch)
        elif self.records is not None:
            def batches(batch, _out=self.records.extend) -> None:
                observe_batch(batch)
                _out(batch.records())
        else:
            def batches(batch, _out=sink) -> None:
                observe_batch(batch)
                for rec in batch.records():
                    _out(rec)
        return batches

    # --- running -------------------------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], object] | None = None) -> None:
        """Start the brokers, create the topics, run the steps, and stop at the scenario's duration.
        ``progress(now_ms, duration_ms)`` is called every few thousand events."""
        self.start()
        self.run_until(self.scenario.duration_ms, progress)

    def start(self) -> None:
        """Schedule what the scenario does (``run`` does this; ``start`` then ``run_until(t)`` stops at ``t``)."""
        if self._started:
            raise SimulationError("the simulation has already been started")
        self._started = True
        if self.quorum is not None:
            self.loop.at(0, self.quorum.start, "quorum leader elected")
        for b in self.scenario.cluster.brokers:
            if b not in self.scenario.cluster.down:
                self.loop.at(0, lambda b=b: self._start_broker(b), f"start {b}")
        for spec in self.scenario.topics:
            self.loop.at(0, lambda spec=spec: self._create_topic(spec.name, spec.partitions, spec.replication_factor,
                                                                 spec.assignment, spec.configs), f"create {spec.name}")
        for step in self.scenario.steps:
            self.loop.at(step.at_ms, lambda step=step: self._step(step), f"step {step.action} (line {step.line})")
        if self.scenario.workload is not None:
            for i, spec in enumerate(self.scenario.workload.producers):
                for topic in spec.topics:
                    self.replication.message_bytes[topic] = spec.message_bytes
                producer = Producer(self, spec, i)
                self.producers.append(producer)
                producer.start()

    def summary(self) -> dict:
        """What the run cost, as :func:`sim.metrics.format_summary` prints it."""
        return self.metrics.summary()

    def finish(self) -> dict:
        """End the run: the summary, also journaled as the log's last record (SimulationSummary)."""
        summary = self.summary()
        self.journal.set_writer(-1, 0)
        self.journal.set_time(self.loop.now)
        self.journal.emit(SimulationSummary, json.dumps(summary, sort_keys=True, separators=(",", ":")))
        return summary

    # --- what the data plane asks of the cluster ------------------------------------------------------
    def min_isr(self, topic: str) -> int:
        value = self.topic_configs.get(topic, {}).get(MIN_ISR)
        return int(value) if value is not None else self.config.get_int(MIN_ISR)

    def producer_partitions(self, topics: tuple) -> list[tuple]:
        cached = self._producer_partitions.get(topics)
        if cached is None:
            keys = self.replication.tp_keys
            cached = self._producer_partitions[topics] = list(chain.from_iterable(
                keys(t, self.topic_partitions.get(t, 0)) for t in topics))
        return cached

    def _topics_changed(self) -> None:
        self._producer_partitions.clear()

    def metadata_source(self) -> SimBroker | None:
        """The broker a client's MetadataRequest goes to: the first live one the clients can reach."""
        for b in sorted(self.brokers):
            broker = self.brokers[b]
            if broker.alive and self.network.reachable("clients", b) and broker.metadata:
                return broker
        return None

    def broker_alive_in_metadata(self, at: int, broker_id: int) -> bool:
        broker = self.brokers.get(at)
        return broker is not None and broker_id in broker.live_brokers

    def log_dir_of(self, b: int, tp: tuple) -> str:
        """Where broker ``b`` keeps ``tp``: chosen once, the log dir with the fewest partitions."""
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        key = (b, tp)
        d = self._dir_of.get(key)
        if d is None:
            d = min(self.log_dirs, key=lambda x: (self._dir_load.get((b, x), 0), self.log_dirs.index(x)))
            self._dir_of[key] = d
            self._dir_load[(b, d)] = self._dir_load.get((b, d), 0) + 1
        return d

    def log_dir_failed(self, b: int, d: str) -> bool:
        return d in self.failed_dirs.get(b, ())

    def send_alter_partition(self, b: int, proposals: dict, on_response) -> bool:
        """AlterPartitionManager: send the proposals to the controller broker ``b`` knows, over the network.
        False when it knows none; ``on_response`` gets the AlterPartitionResponse (None when the request
        was lost or timed out)."""
        broker = self.brokers.get(b)
        if broker is None or not broker.alive:
            return False
        target_id = broker.known_controller
        target = self.brokers.get(target_id)
        if target_id < 0 or target is None:
            return False
        answered = [False]
        epoch = broker.broker_epoch

        def answer(response) -> None:
            if not answered[0]:
                answered[0] = True
                timer.cancel()
                on_response(response)

        def deliver() -> None:
            if not target.alive:
                self.network.send(target_id, b, broker.on(lambda: answer(None)), name="alter-partition reset")
                return
            body = tuple((t, p, le, tuple(isr), 0, pe) for (t, p), (le, isr, pe) in proposals.items())
            self._input(AlterPartitionRequested, b, epoch, body)
            proposed = {(t, p): LeaderAndIsr(b, le, tuple(isr), 0, pe) for (t, p), (le, isr, pe) in proposals.items()}
            target.controller.event_manager.put(AlterPartitionReceived(
                b, epoch, proposed, lambda response: self.network.send(
                    target_id, b, broker.on(lambda: answer(response)), name="alter-partition response")))

        timer = self.loop.after(self.replication.request_timeout_ms, broker.on(lambda: answer(None)),
                                "alter-partition timeout")
        self.network.send(b, target_id, deliver, broker.on(lambda: self.loop.after(
            REQUEST_RETRY_BACKOFF_MS, broker.on(lambda: answer(None)), "alter-partition lost")),
            name=f"alter-partition {b}->{target_id}")
        return True

    def run_until(self, time_ms: int, progress: Callable[[int, int], object] | None = None) -> None:
        """Run every event due up to ``time_ms``. While it runs, the cyclic garbage collector runs less often
        (its thresholds raised to at least :data:`GC_THRESHOLDS`, restored after): a simulated cluster holds
        millions of long-lived objects, which Python's default thresholds (700, 10, 10) have it scan again
        and again — a third of a 100,000-partition run's time."""
        old = gc.get_threshold()
        gc.set_threshold(*(max(a, b) for a, b in zip(old, GC_THRESHOLDS)))
        # Nor does it scan again what was made before the run or in bulk during it (:meth:`made_in_bulk`): those
        # objects are frozen (gc.freeze) for the run's length, and unfrozen after. Not if the embedding program
        # froze objects itself (it would find them unfrozen).
        outer = not self._in_run
        freezing = outer and gc.get_freeze_count() == 0
        if outer:
            self._in_run = True
            self._freezing = freezing
            if freezing:
                gc.freeze()
        try:
            self._run_until(time_ms, progress)
        finally:
            if outer:
                self._in_run = self._freezing = False
                if freezing:
                    gc.unfreeze()
            gc.set_threshold(*old)

    def made_in_bulk(self) -> None:
        """Many long-lived objects were just made at once (a broker's first LeaderAndIsr): during a run, they are
        frozen out of the cyclic collector's scans (see :meth:`run_until`)."""
        if self._freezing:
            gc.freeze()

    def _run_until(self, time_ms: int, progress: Callable[[int, int], object] | None) -> None:
        # EventLoop.next_time and step, inlined: this loop runs thousands of times a simulated second.
        loop, journal, zk = self.loop, self.journal, self.zk
        heap, heappop = loop._heap, heapq.heappop
        every = 0
        while True:
            if self._zk_tick is None or zk.sessions_opened != self._armed_opened:
                self._arm_zk_tick()
            while heap and heap[0][2].cancelled:
                heappop(heap)
            if not heap or heap[0][0] > time_ms:
                break
            now, _, _, fn = heappop(heap)
            if journal.now_ms != now:
                journal.set_time(now)
            loop.now = now
            loop.events_run += 1
            fn()
            if self._settle_due and self.settle():
                self._arm_scheduler()
            if progress is not None:
                every += 1
                if every >= 5000:
                    every = 0
                    progress(loop.now, time_ms)
        loop.run_until(time_ms)
        if progress is not None:
            progress(time_ms, time_ms)

    def controller_event_put(self) -> None:
        """A broker's controller has an event to handle (its event manager's ``on_put``)."""
        self._settle_due = True

    def settle(self) -> int:
        """Step every running broker's controller queue, round-robin by broker id, until all are empty."""
        if not self._settle_due:
            return 0
        self._settle_due = False
        steps = 0
        brokers = self._by_id
        while True:
            progressed = False
            blocked = False
            for b, broker in brokers:
                # A broker cut off from the store has its controller thread blocked on its first request.
                if broker.alive and not broker.controller.event_manager.is_empty:
                    if not broker.reaches_store():
                        blocked = True
                    elif broker.controller.event_manager.step():
                        progressed = True
                        steps += 1
            if not progressed:
                # A queue whose thread is blocked is looked at again after every event, until it can go on.
                self._settle_due = blocked
                return steps
            if steps > MAX_SETTLE_STEPS:
                raise SimulationError("the controllers did not settle: events keep coming")

    def _arm_scheduler(self) -> None:
        """Have the loop wake when a controller's scheduler has a task due (the auto leader rebalance task:
        ``leader.imbalance.check.interval.seconds`` after the last, 5 s after a controller takes over).
        Tasks are only scheduled while a controller processes events, so re-arming after every settle
        that processed some keeps the wake-up early enough."""
        due = min((d for d in (broker.controller.scheduler.next_deadline() for broker in self.brokers.values()
                               if broker.alive) if d is not None), default=None)
        timer = self._scheduler_timer
        if timer is not None:
            if due is not None and timer.time == max(due, self.loop.now) and not timer.cancelled:
                return
            timer.cancel()
            self._scheduler_timer = None
        if due is not None:
            self._scheduler_timer = self.loop.at(max(due, self.loop.now), self._run_scheduled_tasks,
                                                 "controller scheduler")

    def _run_scheduled_tasks(self) -> None:
        """KafkaScheduler's thread: each live broker's due tasks put their events on its controller's queue."""
        self._scheduler_timer = None
        now = self.loop.now
        for b in sorted(self.brokers):
            broker = self.brokers[b]
            if broker.alive:
                broker.controller.scheduler.run_due(now)
        self._arm_scheduler()

    def _arm_zk_tick(self) -> None:
        """Have the loop wake at the store's next session deadline (expiries happen at their own time).

        Heartbeats only move deadlines later, so an armed tick stays early enough until a new session
        opens; a tick that finds nothing due re-arms."""
        opened = self.zk.sessions_opened
        if self._zk_tick is not None and opened == self._armed_opened:
            return
        self._armed_opened = opened
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
        self.admin.heartbeat()
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

    def _start_broker(self, b: int, line: int = 0) -> None:
        previous = self.brokers.get(b)
        if previous is not None and previous.alive:
            raise SimulationError(f"broker {b} is already running")
        rack = self.scenario.cluster.racks.get(b) if self.scenario.cluster.racks else None
        broker = SimBroker(self, b, f"broker-{b}", 9092, rack)
        self.brokers[b] = broker
        self._by_id = sorted(self.brokers.items())
        self._input(BrokerStarted, b, broker.host, broker.port, rack)
        started = broker.start()
        self.metrics.brokers_changed()
        if not started:
            since = f" (gone since {previous.stopped_ms / 1000:g}s)" if previous is not None else ""
            self._note(line, f"broker {b} did not start: /brokers/ids/{b} still belongs to the ZooKeeper session "
                             f"of its previous process{since}, which has not expired yet (zookeeper.session."
                             f"timeout.ms {self._session_timeout_text()}); the registration fails with NodeExists "
                             f"and the process exits, as Kafka's does")
            return
        if self.quorum is not None:
            self.quorum.broker_started(broker)

    def _session_timeout_text(self) -> str:
        requested, timeout = self.requested_session_timeout_ms, self.session_timeout_ms
        return f"{requested}" if timeout == requested else f"{requested}, negotiated to {timeout}"

    def _note(self, line: int, text: str) -> None:
        """Something the run found worth telling, in the summary's observations."""
        _log.info(text, at_ms=self.loop.now, line=line)
        self.metrics.observe_step({"kind": "note", "at_s": self.loop.now / 1000, "line": line, "text": text})

    def _live_broker_ids(self) -> list[int]:
        return sorted(b for b, broker in self.brokers.items() if broker.alive)

    def _assign(self, partitions: int, rf: int, rng: random.Random, start_partition_id: int = 0) -> list[tuple]:
        """Kafka's placement over the live brokers, rack-aware when the cluster has racks (every broker has one,
        or none: the scenario's rule)."""
        racks = self.scenario.cluster.racks
        return assign_replicas({b: racks.get(b) for b in self._live_broker_ids()}, partitions, rf, rng=rng,
                               start_partition_id=start_partition_id)

    def _placement(self, topic: str, first: int) -> random.Random:
        return random.Random(f"{self.seed}/{topic}/{first}")

    def _create_topic(self, name, partitions, replication_factor, assignment, configs) -> None:
        """kafka-topics.sh --create through the store, as the admin tool does."""
        matrix = None
        if assignment is None:
            partitions = partitions or self.config.get_int("num.partitions")
            rf = replication_factor or self.config.get_int("default.replication.factor")
            if not self.scenario.cluster.racks:
                # Kafka's placement as a matrix, given to the store as one (the same writes as the dict form).
                matrix = assign_replica_matrix(self._live_broker_ids(), partitions, rf, rng=self._placement(name, 0))
                assignment = tuple(map(tuple, matrix.tolist()))
            else:
                assignment = self._assign(partitions, rf, self._placement(name, 0))
        assignment = tuple(tuple(r) for r in assignment) if matrix is None else assignment
        configs = tuple(sorted((k, str(v)) for k, v in (configs or {}).items()))
        self.topic_configs[name] = dict(configs)
        self.topic_partitions[name] = len(assignment)
        self._topics_changed()
        self._input(TopicCreated, name, assignment, configs)
        if matrix is not None:
            self.admin.create_topic_with_replica_matrix(name, dict(configs), matrix)
        else:
            self.admin.create_topic_with_assignment(name, dict(configs),
                                                    {p: list(r) for p, r in enumerate(assignment)})

    def _add_partitions(self, topic: str, count: int, assignment) -> None:
        existing = self.admin.get_full_replica_assignment_for_topics([topic])
        if assignment is None:
            rf = len(existing[(topic, 0)].replicas)
            new = self._assign(count - len(existing), rf, self._placement(topic, len(existing)),
                               start_partition_id=len(existing))
            added = {len(existing) + i: tuple(r) for i, r in enumerate(new)}
        else:
            added = {len(existing) + i: tuple(r) for i, r in enumerate(assignment)}
        self._input(PartitionsAdded, topic, tuple(sorted(added.items())))
        self.topic_partitions[topic] = len(existing) + len(added)
        self._topics_changed()
        self.admin.add_partitions(topic, existing, {p: list(r) for p, r in added.items()})

    def _set_config(self, a: dict) -> None:
        value = a["value"]
        if a["entity"] == "broker":
            self._input(ConfigChanged, "broker", "", a["config"], value)
            self.config = self.config.with_overrides({a["config"]: value} if value is not None else {})
            if a["config"] == MIN_ISR:
                self.metrics.min_isr_changed("")
                self.replication.min_isr_changed("")
            for broker in self.brokers.values():
                if broker.alive:
                    broker.controller.config = self.config
                    broker.controller.partition_state_machine.broker_config = self.config
            if a["config"] == UNCLEAN and value == "true":
                self._to_controller(lambda c: c.event_manager.put(UncleanLeaderElectionEnable()))
        else:
            topic = a["name"]
            self._input(ConfigChanged, "topic", topic, a["config"], value)
            local = self.topic_configs.setdefault(topic, {})
            if value is None:
                local.pop(a["config"], None)
            else:
                local[a["config"]] = value
            if a["config"] == MIN_ISR:
                self.metrics.min_isr_changed(topic)
                self.replication.min_isr_changed(topic)
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
            self.metrics.brokers_changed()
            return
        backoff = self.config.get_int("controlled.shutdown.retry.backoff.ms")
        self._input(ControlledShutdownRequested, b, broker.broker_epoch)

        def on_response(error: str, remaining: tuple) -> None:
            if error == NONE and not remaining:
                self._input(BrokerStopped, b)
                broker.stop()
                self.metrics.brokers_changed()
            elif retries > 1:
                self.loop.after(backoff, broker.on(lambda: self._controlled_shutdown(b, retries - 1)), "retry")
            else:
                self._input(BrokerStopped, b)
                broker.stop()
                self.metrics.brokers_changed()

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
        self.metrics.step(step, self.loop.now)
        if action == "start_broker":
            self._start_broker(a["broker"], step.line)
        elif action == "kill_broker":
            b = self.controller_id if a.get("controller") else a["broker"]
            self._input(BrokerKilled, b)
            self._running(b).kill()
            self.metrics.brokers_changed()
        elif action == "expire_session":
            self._expire_session(self.controller_id if a.get("controller") else a["broker"],
                                 a.get("notice_after_ms") or 0, step.line)
        elif action == "partition_network":
            self.network.cut(cut_links(a, self.scenario.cluster.brokers, self.controller_id))
            self.replication.links_cut()
            self.metrics.brokers_changed()
        elif action == "heal_network":
            self.network.heal()
            for b in sorted(self.brokers):
                broker = self.brokers[b]
                if broker.alive and broker.zk.holds_notifications:
                    broker.zk.reconnect()
            self.metrics.brokers_changed()
        elif action == "note":
            self.metrics.observe_step({"kind": "note", "at_s": self.loop.now / 1000, "line": step.line,
                                       "text": a["text"]})
        elif action == "slow_follower":
            b = a["broker"]
            if a["delay_ms"] is not None:
                self.replication.set_slow(b, "delay", a["delay_ms"])
            else:
                self.replication.set_slow(b, "factor", a["factor"])
            if a["until_ms"] is not None:
                self.loop.at(a["until_ms"], lambda: self.replication.set_slow(b, None), f"slow follower {b} ends")
        elif action == "catch_up":
            for b in ([a["broker"]] if a["broker"] is not None else sorted(self.brokers)):
                self.replication.set_slow(b, None)
        elif action == "fail_log_dir":
            self._fail_log_dir(a["broker"], a["dir"])
        elif action == "describe":
            self.metrics.observe_step({"kind": "describe", "at_s": self.loop.now / 1000, "line": step.line,
                                       "lines": self.describe_lines(a["topics"])})
        elif action == "describe_quorum":
            self.metrics.observe_step(self._describe_quorum(step.line, a["replication"]))
        elif action == "expect":
            self.metrics.observe_step(self._expect(step))
        elif action == "create_topic":
            self._create_topic(a["name"], a["partitions"], a["replication_factor"], a["assignment"], a["configs"])
        elif action == "delete_topic":
            self.topic_partitions.pop(a["topic"], None)
            self._topics_changed()
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

    def _expire_session(self, b: int, notice_after_ms: int, line: int) -> None:
        """ZooKeeper expires the session of running broker ``b``. With no session to expire — the one it
        had expired already (the process has not noticed yet, or cannot reach the store to open a new
        one), or the process is not running (its start failed, it halted) — nothing happens: nothing is
        journaled, the summary notes it. (A broker the scenario stopped is refused when it is parsed.)"""
        broker = self.brokers.get(b)
        if broker is None or not broker.alive:
            why = "no broker is the controller" if b < 0 else f"broker {b} is not running"
            self._note(line, f"expire_session: {why}; no session expired")
            return
        if not self.zk.is_alive(broker.zk.session_id):
            self._note(line, f"expire_session: broker {b}'s session has already expired and it has not "
                             f"registered with a new one yet; nothing to expire")
            return
        self._input(BrokerSessionExpired, b)
        broker.zk.expiry_notice_ms = notice_after_ms
        self.zk.expire_session(broker.zk.session_id)

    # --- log directories and observations ------------------------------------------------------------
    def _fail_log_dir(self, b: int, d: str | None) -> None:
        """A log directory of broker ``b`` fails: its replicas go offline and the broker tells the controller
        through ``/log_dir_event_notification``; with no directory left the broker halts."""
        broker = self._running(b)
        failed = self.failed_dirs.setdefault(b, set())
        if d is None:
            d = next((x for x in self.log_dirs if x not in failed), self.log_dirs[0])
        failed.add(d)
        self._input(LogDirFailed, b, d)
        self.replication.log_dir_failed(b, d)
        self.metrics.log_dir_failed(b, d)
        if all(x in failed for x in self.log_dirs):
            _log.info("Shutdown broker because all log dirs have failed", broker_id=b, log_dir=d)
            broker.kill()
            self.metrics.brokers_changed()
            return
        broker.zk.propagate_log_dir_event(b)

    def _partition_states(self, topics) -> list[tuple]:
        admin = self.admin
        existing = admin.get_all_topics_in_cluster()
        names = sorted(existing) if topics is None else [t for t in topics if t in existing]
        assignment = admin.get_full_replica_assignment_for_topics(names)
        states = admin.get_topic_partition_states(list(assignment))
        rows = []
        for tp in sorted(assignment):
            st = states.get(tp)
            lai = st.leader_and_isr if st is not None else None
            rows.append((tp, lai.leader if lai is not None else -1, tuple(lai.isr) if lai is not None else (),
                         tuple(assignment[tp].replicas)))
        return rows

    def describe_lines(self, topics=None) -> list[str]:
        """The topics as ``kafka-topics.sh --describe`` prints them, in the layout of ``kcontroller describe``
        (``statemachines.cluster_view.describe_topic_lines``: the same lines for the same cluster). Read from
        the store as the ZooKeeper-based tool read it — assignments with their adding and removing replicas,
        ``/state`` leaders and ISRs, ``/admin/delete_topics``, topic configs — and the brokers from the
        active controller's context, as the brokers' metadata has them."""
        admin = self.admin
        existing = admin.get_all_topics_in_cluster()
        names = sorted(existing) if topics is None else sorted(t for t in set(topics) if t in existing)
        assignment = admin.get_full_replica_assignment_for_topics(names)
        states = admin.get_topic_partition_states(list(assignment))
        cid = self.controller_id
        broker = self.brokers.get(cid)
        controller = broker.controller if broker is not None and broker.alive else None
        if controller is not None and controller.is_active:
            ctx = controller.context
            registered, shutting_down, epoch = set(ctx.live_broker_epochs), set(ctx.shutting_down_broker_ids), \
                ctx.epoch
        else:
            registered = {b.id for b in admin.get_all_brokers_in_cluster()}
            shutting_down, cid = set(), "none"
            found = admin.get_controller_epoch()
            epoch = found[0] if found is not None else 0
        live = registered - shutting_down
        header = f"# controller {cid} epoch {epoch}, live brokers {','.join(map(str, sorted(live))) or 'none'}"
        if shutting_down:
            header += f", shutting down {','.join(map(str, sorted(shutting_down)))}"
        by_topic: dict[str, list] = {}
        for tp in sorted(assignment):
            st = states.get(tp)
            lai = st.leader_and_isr if st is not None else None
            ra = assignment[tp]
            moving = bool(ra.adding_replicas or ra.removing_replicas)
            by_topic.setdefault(tp[0], []).append(PartitionDescription(
                tp[1], lai.leader if lai is not None else -1, tuple(ra.replicas),
                tuple(lai.isr) if lai is not None else (),
                tuple(ra.adding_replicas) if moving else None, tuple(ra.removing_replicas) if moving else None))
        lines = [header]
        for topic, partitions in by_topic.items():
            lines.extend(describe_topic_lines(
                topic, partitions, admin.get_entity_configs("topics", topic), self.min_isr(topic),
                admin.is_topic_marked_for_deletion(topic), registered, live))
        return lines

    def describe_quorum_text(self, replication: bool = False) -> str:
        """``kafka-metadata-quorum.sh describe --status`` (``--replication``) now, then the ``#`` lines
        with each observer's last-fetch age. A DescribeQuorum request: it expires idle observers."""
        if self.quorum is None:
            raise SimulationError(f"{self.scenario.source}: the scenario has no quorum section")
        return self.quorum.describe_text(replication)[1]

    def _describe_quorum(self, line: int, replication: bool) -> dict:
        if self.quorum is None:
            raise SimulationError(f"line {line}: describe_quorum needs a quorum section")
        result, text = self.quorum.describe_text(replication)
        now = self.loop.now
        observers = [{"id": o.replica_id, "directory_id": o.directory_id,
                      "last_fetch_ago_ms": None if o.last_fetch_timestamp < 0 else now - o.last_fetch_timestamp}
                     for o in result.observers]
        return {"kind": "describe_quorum", "at_s": now / 1000, "line": line, "replication": replication,
                "lines": text.rstrip("\n").split("\n"), "observers": observers}

    def _expect(self, step) -> dict:
        a = step.args
        entry = {"kind": "expect", "at_s": self.loop.now / 1000, "line": step.line}
        if a["controller"] is not None:
            actual = self.controller_id
            entry.update(what=f"controller {a['controller']}", ok=actual == a["controller"], actual=actual)
        elif a["topic"] is not None:
            actual = a["topic"] in self.admin.get_all_topics_in_cluster()
            entry.update(what=f"topic {a['topic']} exists={a['exists']}", ok=actual == a["exists"], actual=actual)
        else:
            t, p = a["partition"]
            rows = {tp: r for tp, *r in self._partition_states([t])}
            leader, isr, replicas = rows.get((t, p), (-1, (), ()))
            checks, actual = [], []
            if a["leader"] is not None:
                checks.append(leader == a["leader"])
                actual.append(f"leader {leader}")
            if a["isr"] is not None:
                checks.append(set(isr) == set(a["isr"]))
                actual.append(f"isr {list(isr)}")
            if a["replicas"] is not None:
                checks.append(tuple(replicas) == tuple(a["replicas"]))
                actual.append(f"replicas {list(replicas)}")
            wanted = ", ".join(f"{k} {list(v) if isinstance(v, tuple) else v}" for k, v in
                               (("leader", a["leader"]), ("isr", a["isr"]), ("replicas", a["replicas"]))
                               if v is not None)
            entry.update(what=f"{t}-{p} {wanted}", ok=all(checks), actual=", ".join(actual))
        return entry
