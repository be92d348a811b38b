"""An in-process Kafka cluster around the controller: the embedding API.

``Cluster`` holds an embedded ZooKeeper model, the brokers (each with its store session, its
registration, its controller candidate and the metadata it accepts from controllers), an
admin client, a simulated clock and the journal. Every public action — start, kill or
restart a broker, expire a session, fail a log directory, let time pass, create a topic, add
partitions, change a config, send an AlterPartition — is journaled as an input record and then
carried out; the cluster then *settles*: the brokers' event queues are stepped round-robin in
broker-id order until all are empty. Time moves only by actions; on its way it stops at every
session timeout and every task the controllers scheduled (the auto leader rebalance), in time
order. Nothing reads the wall clock; two clusters given the same actions write the same records,
byte for byte, and ``replay`` re-applies a log's inputs to a fresh cluster.
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Mapping

import msgpack
import numpy as np
import structlog

from controller.assignment import (
    AdminOperationError, InvalidReplicationFactorError, assign_replica_matrix, assign_replicas,
)
from controller.config import KafkaConfig, check_config_name, check_config_value
from controller.embedding.broker_columns import (
    BrokerColumns, LeaderAndIsrTable, MetadataImage, MetadataView, int32s, isr_block,
)
from controller.embedding.snapshot_state import cluster_state
from controller.controller_events import (
    ADMIN_CLIENT_TRIGGERED, KAFKA_STORAGE_ERROR, NONE, PREFERRED, STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH,
    AlterPartitionReceived, ApiPartitionReassignment, ControlledShutdown, ListPartitionReassignments,
    ReplicaLeaderElection, TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from controller.controller_events import UNCLEAN as UNCLEAN_ELECTION
from controller.kafka_controller import KafkaController
from controller.partition_errors import PartitionErrors
from controller.store.kafka_zk_client import InvalidTopicError, KafkaZkClient, validate_topic_name
from controller.request_batch import COLUMN_MIN, BrokerRequest, BrokerResponse
from controller.store.zookeeper import NodeExistsError, ZooKeeper
from events.arrays import distinct
from events.columns import ColumnBatch
from events.journal import Journal
from events.records import (
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, UPDATE_ISR_NOTIFICATION,
    AlterPartitionRequested, BrokerKilled, BrokerModified, BrokerSessionExpired, BrokerStarted, BrokerStopped,
    ClockAdvanced, ClusterCreated, ClusterSnapshot, ConfigChanged, ControlledShutdownRequested, IsrChangeNotified,
    LeaderAndIsrUpdated, LeaderElectionRequested, LogDirFailed, PartitionsAdded, ReassignmentRequested, StateDigest,
    TopicCreated, TopicDeletionRequested, ViewSnapshot,
)
from statemachines.cluster_view import ClusterView, snapshot_record_body
from statemachines.kafka_log_format import START_TIME_CONFIG, format_start_time, parse_start_time
from statemachines.leader_and_isr import LeaderAndIsr

_log = structlog.get_logger("kcontroller.cluster")

UNCLEAN = "unclean.leader.election.enable"
# Broker configs Kafka reads at start-up only ("read-only" update mode): kafka-configs.sh cannot change them.
READ_ONLY_BROKER_CONFIGS = frozenset({
    "delete.topic.enable", "auto.leader.rebalance.enable", "leader.imbalance.per.broker.percentage",
    "leader.imbalance.check.interval.seconds", "controlled.shutdown.enable", "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms", "zookeeper.session.timeout.ms", "inter.broker.protocol.version",
    "log.dir", "log.dirs",
})
MAX_SETTLE_STEPS = 10_000_000
DIGEST_FORMAT_PREFIX = "2:"   # Cluster.digest(); a digest without it is format 1 (legacy_digest)


def _replica_matrix(assignment) -> np.ndarray | None:
    """A topic's assignment (replicas per partition) as an (n, rf) int matrix, when it is one: every partition
    with the same number (> 0) of integer replica ids; None otherwise (it is then checked and written
    partition by partition, with Kafka's errors for what is wrong)."""
    if not assignment or not assignment[0]:
        return None
    try:
        m = np.array(assignment)
    except (ValueError, OverflowError, TypeError):
        return None
    if m.ndim != 2 or m.dtype.kind not in "iu" or m.dtype == np.bool_:
        return None
    m.setflags(write=False)
    return m


class _LastMatrix:
    """``_replica_matrix`` of the last assignment asked for, kept while it is the same tuple object (a topic
    creation reads its input's assignment three times: two checks and the write)."""
    __slots__ = ("assignment", "matrix")

    def __init__(self) -> None:
        self.assignment, self.matrix = None, None

    def prime(self, assignment: tuple, matrix: np.ndarray) -> None:
        """``matrix`` is the assignment ``assignment`` (made from it or it from the matrix)."""
        matrix.setflags(write=False)
        self.assignment, self.matrix = assignment, matrix

    def __call__(self, assignment) -> np.ndarray | None:
        if assignment is not self.assignment:
            self.assignment, self.matrix = assignment, _replica_matrix(assignment)
        return self.matrix


def _could_be_topic(name) -> bool:
    """Whether ``name`` is a legal topic name (any other names no topic, and no znode path)."""
    try:
        validate_topic_name(name)
    except (InvalidTopicError, TypeError):
        return False
    return True


class ClusterError(RuntimeError):
    """An action the cluster cannot carry out (unknown broker, broker already running, ...)."""


class InvalidPartitionsError(ClusterError):
    kafka_name = "org.apache.kafka.common.errors.InvalidPartitionsException"


class BrokerServer:
    """One broker process: its store session and registration, its controller candidate, the
    partition metadata it accepts from controllers (rejecting stale controller epochs as Kafka does),
    and its log directories (``log.dirs``, else ``log.dir``).

    With more than one log directory the broker places each replica it is told to host (a LeaderAndIsr
    partition it had no log for) in the live directory holding the fewest, ties in ``log.dirs`` order
    (LogManager.nextLogDirs). A failed directory's replicas go offline (ReplicaManager.handleLogDirFailure):
    the broker answers KAFKA_STORAGE_ERROR for them to LeaderAndIsr and StopReplica, neither leads nor
    follows them, and creates no log for a partition whose LeaderAndIsr is not ``is_new`` while any of
    its directories is offline (LogManager.getOrCreateLog). A process started again has every directory
    back (the disk was replaced) and no logs, as every restarted broker here."""

    def __init__(self, cluster: Cluster, broker_id: int, host: str, port: int, rack: str | None):
        self.cluster = cluster
        self.broker_id = broker_id
        self.host, self.port, self.rack = host, port, rack
        self.alive = False
        self.zk: KafkaZkClient | None = None
        self.controller: KafkaController | None = None
        self.broker_epoch = -1
        # What the broker knows from controllers, as columns (broker_columns); the brokers of a cluster
        # share topic ids, tuple pools and the UpdateMetadata caches they hold alike.
        self._columns = shared = cluster.__dict__.get("_broker_columns")
        if shared is None:
            self._columns = shared = cluster._broker_columns = BrokerColumns()
        self.controller_epoch = 0
        # (topic, p) -> (leader, leader_epoch, isr, partition_epoch)
        self.leader_and_isr: LeaderAndIsrTable = LeaderAndIsrTable(shared)
        self._metadata_image: MetadataImage = shared.empty_image   # the UpdateMetadata cache
        self.live_brokers: tuple = ()
        self.rejected: list[tuple] = []                # (api, controller_id, controller_epoch, error)
        self.log_dirs: tuple[str, ...] = cluster.config.log_dirs
        self.offline_dirs: set[str] = set()
        self.replica_dirs: dict[tuple, str] = {}       # (topic, p) -> log dir; kept with more than one log dir
        self.dir_counts: dict[str, int] = dict.fromkeys(self.log_dirs, 0)  # logs per online log dir
        self.offline_partitions: set[tuple] = set()    # HostedPartition.Offline: replicas in a failed log dir

    @property
    def metadata(self) -> MetadataView:
        """The broker's metadata cache: (topic, partition) -> the UpdateMetadataPartition it holds (a read-only
        Mapping over the cache as it is now)."""
        return MetadataView(self._columns, self._metadata_image)

    def start(self) -> None:
        c = self.cluster
        self.zk = KafkaZkClient(c.zk, session_timeout_ms=c.config.get_int("zookeeper.session.timeout.ms"),
                                clock=c.clock, rng=c.store_rng)
        self.zk.create_top_level_paths()
        try:
            self.broker_epoch = self._register()
        except NodeExistsError:
            # /brokers/ids/<id> still belongs to a killed process's live session: KafkaServer.startup fails
            # and the process exits (KafkaZkClient re-creates only what its own earlier session made).
            _log.error("Fatal error during KafkaServer startup. Prepare to shutdown", broker_id=self.broker_id)
            self.zk.close()
            return
        self.controller = KafkaController(self.broker_id, c.config, self.zk, c.journal, c.clock,
                                          send=c._deliver, register_broker=self._register)
        self.alive = True
        self.controller.startup()

    def _register(self) -> int:
        self.broker_epoch = self.zk.register_broker(self.broker_id, self.host, self.port, self.rack)
        return self.broker_epoch

    def stop(self) -> None:
        """The end of KafkaServer.shutdown: the controller candidate resigns, the session is closed (its
        ephemeral registration, and ``/controller`` if it held it, go at once)."""
        self.alive = False
        self.controller.shutdown()
        self.zk.close()

    def kill(self) -> None:
        """kill -9: the process stops; its session lives until it times out."""
        self.alive = False
        self.zk.abandon()
        self.controller.event_manager.close()

    def fail_log_dir(self, log_dir: str) -> None:
        """ReplicaManager.handleLogDirFailure: the replicas in ``log_dir`` go offline, then the broker writes a
        ``/log_dir_event_notification`` for the controller; with no log directory left it halts (Exit.halt,
        a kill -9: its session lives until it times out), as it does on any failure before IBP 1.0."""
        if self.cluster.config.halt_broker_on_log_dir_failure:
            _log.error(f"Halting broker because dir {log_dir} is offline", broker_id=self.broker_id)
            self.kill()
            return
        self.offline_dirs.add(log_dir)
        self.dir_counts.pop(log_dir, None)
        offline = sorted(tp for tp, d in self.replica_dirs.items() if d == log_dir)
        for tp in offline:
            del self.replica_dirs[tp]
        key = self._columns.key
        self.leader_and_isr.remove(np.array([k for k in map(key, offline) if k is not None], dtype=np.int64))
        self.offline_partitions.update(offline)
        if all(d in self.offline_dirs for d in self.log_dirs):
            _log.error(f"Shutdown broker because all log dirs in {', '.join(self.log_dirs)} have failed",
                       broker_id=self.broker_id)
            self.kill()
            return
        self.zk.propagate_log_dir_event(self.broker_id)

    def _create_log(self, tp: tuple, is_new: bool) -> bool:
        """LogManager.getOrCreateLog for a partition the broker has no log for: False when it cannot."""
        if len(self.log_dirs) < 2:
            return True  # one directory: it is online while the broker runs, nothing to place
        if not is_new and self.offline_dirs:
            return False  # "Can not create log ... because log directories ... are offline"
        counts = self.dir_counts  # online directories in log.dirs order: min() keeps the first of equals
        self.replica_dirs[tp] = d = min(counts, key=counts.__getitem__)
        counts[d] += 1
        return True

    # --- requests from controllers -------------------------------------------------------------
    def handle_request(self, request: BrokerRequest) -> str:
        """Handle a request from a controller; returns the request's error."""
        return self.answer(request)[0]

    def answer(self, request: BrokerRequest) -> tuple[str, Mapping]:
        """Handle a request from a controller: the request's error and its per-partition errors
        ({(topic, partition): error}, for LeaderAndIsr and StopReplica; a PartitionErrors for a columnar
        request)."""
        if request.controller_epoch < self.controller_epoch:
            self.rejected.append((request.api, request.controller_id, request.controller_epoch,
                                  STALE_CONTROLLER_EPOCH))
            return STALE_CONTROLLER_EPOCH, {}
        if request.api != API_UPDATE_METADATA and 0 <= request.broker_epoch < self.broker_epoch:
            self.rejected.append((request.api, request.controller_id, request.controller_epoch, STALE_BROKER_EPOCH))
            return STALE_BROKER_EPOCH, {}
        self.controller_epoch = request.controller_epoch
        partitions = request.partitions
        # Offline log directories and replica placement over several directories are per-partition questions.
        columnar = len(self.log_dirs) < 2 and not self.offline_partitions
        if columnar and type(partitions) is not ColumnBatch:
            partitions = self._columns.as_columns(self.cluster._shared_partitions(partitions), COLUMN_MIN)
            columnar = type(partitions) is ColumnBatch
        if request.api == API_LEADER_AND_ISR:
            errors = self._leader_and_isr_columns(partitions) if columnar else None
            return NONE, (errors if errors is not None else self._leader_and_isr_records(partitions))
        if request.api == API_UPDATE_METADATA:
            self.live_brokers = request.live_brokers
            if len(partitions):
                self._metadata_image = self._columns.apply_metadata(
                    self._metadata_image, self.cluster._shared_partitions(partitions))
            return NONE, {}
        if request.api == API_STOP_REPLICA:
            errors = self._stop_replica_columns(partitions) if columnar else None
            return NONE, (errors if errors is not None else self._stop_replica_records(partitions))
        return NONE, {}

    def _leader_and_isr_columns(self, batch: ColumnBatch) -> PartitionErrors | None:
        """LeaderAndIsr as arrays: a state is applied where the broker has none for the partition or the
        leader epoch is newer, else the partition's error is STALE_CONTROLLER_EPOCH. None when the request
        names a partition twice (the records then go one by one)."""
        shared = self._columns
        keys = shared.batch_keys(batch)
        in_order = _ascending(keys)
        if not in_order and not distinct(keys):
            return None
        rows = LeaderAndIsrTable.rows(int32s("leader", batch.column("leader")),
                                      int32s("leader_epoch", batch.column("leader_epoch")),
                                      int32s("partition_epoch", batch.column("partition_epoch")),
                                      *isr_block(batch.column("isr")))
        applied = self.leader_and_isr.apply_newer(keys, rows, in_order)
        return PartitionErrors(batch.column("topic"), batch.column("partition"),
                               (~applied).view(np.uint8), _LEADER_AND_ISR_ERRORS)

    def _leader_and_isr_records(self, partitions) -> dict:
        """LeaderAndIsr one partition state at a time (the reference for the columnar path; offline log
        directories; replica placement over several log directories)."""
        errors: dict = {}
        offline = self.offline_partitions
        track = len(self.log_dirs) > 1
        held = self.leader_and_isr
        applied: dict = {}
        for p in partitions:
            tp = (p.topic, p.partition)
            if offline and tp in offline:
                errors[tp] = KAFKA_STORAGE_ERROR  # HostedPartition.Offline
                continue
            cur = applied.get(tp)
            if cur is None:
                cur = held.get(tp)
            if cur is None or p.leader_epoch > cur[1]:
                if track and tp not in self.replica_dirs and not self._create_log(tp, p.is_new):
                    offline.add(tp)  # makeLeaders/makeFollowers: KafkaStorageException -> markPartitionOffline
                    errors[tp] = KAFKA_STORAGE_ERROR
                    continue
                applied[tp] = (p.leader, p.leader_epoch, p.isr, p.partition_epoch)
                errors[tp] = NONE
            else:
                errors[tp] = STALE_CONTROLLER_EPOCH  # not a newer leader epoch: ignored
        held.update(applied)
        return errors

    def _stop_replica_columns(self, batch: ColumnBatch) -> PartitionErrors | None:
        """StopReplica as arrays: delete_partition drops the partitions' LeaderAndIsr state. None when the
        request names a partition twice."""
        keys = self._columns.batch_keys(batch)
        if not _distinct(keys):
            return None
        deleted = np.asarray(batch.column("delete_partition"), dtype=bool)
        if deleted.any():
            self.leader_and_isr.remove(keys[deleted])
        return PartitionErrors.uniform(batch.column("topic"), batch.column("partition"), NONE)

    def _stop_replica_records(self, partitions) -> dict:
        errors: dict = {}
        offline = self.offline_partitions
        deleted = []
        for p in partitions:
            tp = (p.topic, p.partition)
            if offline and tp in offline:
                errors[tp] = KAFKA_STORAGE_ERROR  # HostedPartition.Offline: not stopped, not deleted
                continue
            if p.delete_partition:
                deleted.append(tp)
                d = self.replica_dirs.pop(tp, None)
                if d is not None:
                    self.dir_counts[d] -= 1
            errors[tp] = NONE
        if deleted:
            key = self._columns.key
            self.leader_and_isr.remove(np.array([k for k in map(key, deleted) if k is not None], dtype=np.int64))
        return errors


_LEADER_AND_ISR_ERRORS = (NONE, STALE_CONTROLLER_EPOCH)


def _ascending(keys: np.ndarray) -> bool:
    """Strictly ascending (no partition twice): the controller's requests are in key order."""
    return len(keys) < 2 or bool(np.all(keys[1:] > keys[:-1]))


def _distinct(keys: np.ndarray) -> bool:
    return distinct(keys)


class Cluster:
    """A cluster of brokers around the controller, driven by journaled actions.

    ``configs`` are broker configs by Kafka name; ``sink`` receives every record (a
    ``LogWriter.append``; without it the records are kept in ``cluster.journal.records``).
    ``start_time`` (ISO 8601) is the date of simulated time 0, recorded as the config
    ``kcontroller.start.time``: it only places the log's times on the calendar when they are shown
    (``statemachines.kafka_log_format.log_start_ms``); ``start_time_ms`` is where the clock starts.
    """

    def __init__(self, *, configs: Mapping[str, object] | None = None, seed: int = 0,
                 sink: Callable[[tuple], object] | None = None, start_time_ms: int = 0, record_creation: bool = True,
                 start_time: str | None = None):
        overrides = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (configs or {}).items()}
        if start_time is not None:   # StartTimeError (a ValueError) for one that is not ISO 8601
            overrides[START_TIME_CONFIG] = format_start_time(parse_start_time(start_time))
        self.config = KafkaConfig(overrides)
        self.seed = seed
        self.now = start_time_ms
        # Replica placement draws from a source seeded per topic (see _placement_rng), so it holds no
        # state that a replay (whose inputs carry the placements) would not reproduce.
        self.store_rng = random.Random(seed + 1)
        self.zk = ZooKeeper(self.clock)
        # Every record is folded into ``view`` too (the cluster as its log tells it; checkpoints
        # snapshot it), then handed to ``sink``.
        self.view = ClusterView()
        self.journal = Journal(self._tee(sink), column_sink=self._tee_columns(sink))
        if sink is None:
            self.journal.records = self.records  # as a Journal without a sink keeps them
        self.brokers: dict[int, BrokerServer] = {}
        self._keys_cache: dict[int, tuple] = {}
        self._replica_matrix = _LastMatrix()
        self.admin = KafkaZkClient(self.zk, session_timeout_ms=self.config.get_int("zookeeper.session.timeout.ms"),
                                   clock=self.clock, rng=self.store_rng)
        self.admin.create_top_level_paths()
        self._overrides = tuple(sorted(overrides.items()))
        if record_creation:
            self.journal.set_time(self.now)
            self.journal.input(ClusterCreated, seed, self._overrides)

    def clock(self) -> int:
        return self.now

    def _placement_rng(self, topic: str, first_partition: int) -> random.Random:
        return random.Random(f"{self.seed}/{topic}/{first_partition}")

    def _tee(self, sink: Callable[[tuple], object] | None) -> Callable[[tuple], object]:
        apply = self.view.apply
        if sink is None:
            self.records: list = []
            sink = self.records.append

        def tee(record: tuple) -> None:
            apply(record)
            sink(record)
        return tee

    def _tee_columns(self, sink: Callable[[tuple], object] | None) -> Callable[[object], object]:
        """The journal's column sink: a columnar batch is folded into the view, then handed on whole when
        ``sink`` takes batches (it has an ``append_columns`` method, as a replay's comparator, or is a
        ``LogWriter.append``: its writer's ``append_columns``), else record by record."""
        apply = self.view.apply_columns
        append_columns = getattr(sink, "append_columns", None)
        if append_columns is None and getattr(sink, "__name__", "") == "append":
            append_columns = getattr(getattr(sink, "__self__", None), "append_columns", None)

        def tee_columns(batch) -> None:
            apply(batch)
            if append_columns is not None:
                append_columns(batch)
            elif sink is None:
                self.records.extend(batch.records())
            else:
                for record in batch.records():
                    sink(record)
        return tee_columns

    # --- actions ---------------------------------------------------------------------------------
    def start_broker(self, broker_id: int, *, host: str | None = None, port: int = 9092, rack: str | None = None,
                     at: int | None = None) -> BrokerServer:
        """Start (or restart) a broker: it registers and runs its controller candidate. Restarted while its
        registration still belongs to the session of a killed process, it exits at once (not ``alive``)."""
        self._input(at, BrokerStarted, broker_id, host or f"broker-{broker_id}", port, rack)
        return self.brokers[broker_id]

    def start_brokers(self, broker_ids: Iterable[int], at: int | None = None) -> None:
        for b in broker_ids:
            self.start_broker(b, at=at)

    def kill_broker(self, broker_id: int, at: int | None = None) -> None:
        """kill -9: the broker stops at once; the store notices when its session times out."""
        self._input(at, BrokerKilled, broker_id)

    def controlled_shutdown(self, broker_id: int, at: int | None = None) -> tuple[str, tuple] | None:
        """One ControlledShutdown request from ``broker_id`` to the controller (``stop_broker`` sends
        them with Kafka's retries). Returns (error, partitions still led by the broker), or None when no
        controller answered."""
        return self._input(at, ControlledShutdownRequested, broker_id, self._running(broker_id).broker_epoch)

    def stop_broker(self, broker_id: int, at: int | None = None) -> bool:
        """Shut a broker down as KafkaServer.shutdown does: with ``controlled.shutdown.enable``, ask the
        controller to move its leaders away, retrying while partitions remain, at most
        ``controlled.shutdown.max.retries`` times, ``controlled.shutdown.retry.backoff.ms`` apart; then stop
        (a BrokerStopped input). Returns whether the controlled shutdown succeeded (Kafka shuts down anyway)."""
        self._running(broker_id)
        succeeded = False
        if self.config.get_bool("controlled.shutdown.enable"):
            retries = self.config.get_int("controlled.shutdown.max.retries")
            backoff = self.config.get_int("controlled.shutdown.retry.backoff.ms")
            when = at
            while not succeeded and retries > 0:
                retries -= 1
                response = self.controlled_shutdown(broker_id, at=when)
                succeeded = response is not None and response[0] == NONE and not response[1]
                if not succeeded and retries > 0:
                    _log.info(f"Retrying controlled shutdown ({retries} retries remaining)", broker_id=broker_id)
                    when = self.now + backoff
            at = None
        self._input(at, BrokerStopped, broker_id)
        return succeeded

    def fail_log_dir(self, broker_id: int, dir: str | None = None, at: int | None = None) -> None:
        """A log directory of a running broker fails (a disk error): ``dir`` is one of its ``log.dirs``, by
        default the first one still online. The broker takes the replicas in it offline and notifies the
        controller through ``/log_dir_event_notification``; the controller sends it LeaderAndIsr for all its
        replicas, learns the offline ones from their KAFKA_STORAGE_ERROR and moves leadership off them. A
        broker left without a log directory halts instead (as ``kill_broker``). A LogDirFailed input."""
        server = self._running(broker_id)
        if dir is None:
            dir = next((d for d in server.log_dirs if d not in server.offline_dirs), None)
        self._input(at, LogDirFailed, broker_id, dir)

    def expire_session(self, broker_id: int, at: int | None = None) -> None:
        """Expire the broker's store session now (a network partition from ZooKeeper, a long GC pause)."""
        self._input(at, BrokerSessionExpired, broker_id)

    def modify_broker(self, broker_id: int, *, host: str | None = None, port: int | None = None,
                      rack: str | None = None, at: int | None = None) -> None:
        """Re-register a running broker with other endpoints or rack (BrokerModifications)."""
        server = self._running(broker_id)
        self._input(at, BrokerModified, broker_id, host or server.host, port or server.port,
                    rack if rack is not None else server.rack)

    def advance_to(self, time_ms: int) -> None:
        """Let time pass (sessions of dead brokers time out on the way)."""
        self._input(time_ms, ClockAdvanced)

    def advance(self, ms: int) -> None:
        self.advance_to(self.now + ms)

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None, *,
                     assignment: Iterable[Iterable[int]] | None = None, configs: Mapping[str, object] | None = None,
                     at: int | None = None) -> None:
        """Create a topic as ``kafka-topics.sh --create`` does (an explicit assignment, or Kafka's placement)."""
        if assignment is None:
            # AdminUtils.assignReplicasToBrokers' checks; 0 is a value (refused), not "the default".
            partitions = self.config.get_int("num.partitions") if partitions is None else partitions
            rf = self.config.get_int("default.replication.factor") if replication_factor is None else replication_factor
            if partitions <= 0:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            if rf <= 0:
                raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
            racks = self._live_racks()
            if not any(r is not None for r in racks.values()):
                matrix = assign_replica_matrix(sorted(racks), partitions, rf, rng=self._placement_rng(name, 0))
                assignment = tuple(map(tuple, matrix.tolist()))
                self._replica_matrix.prime(assignment, matrix)
            else:
                assignment = tuple(self._assign(racks, partitions, rf, self._placement_rng(name, 0)))
        else:
            assignment = tuple(map(tuple, assignment))
        topic_configs = tuple(sorted((k, str(v).lower() if isinstance(v, bool) else str(v))
                                     for k, v in (configs or {}).items()))
        for k, v in topic_configs:
            check_config_name(k)
            check_config_value(k, v)
        self._input(at, TopicCreated, name, assignment, topic_configs)

    def add_partitions(self, topic: str, count: int | None = None, *,
                       assignment: Mapping[int, Iterable[int]] | None = None, at: int | None = None) -> None:
        """Grow a topic to ``count`` partitions (Kafka's placement) or add an explicit assignment."""
        existing = self.admin.get_full_replica_assignment_for_topics([topic])
        if not existing:
            raise ClusterError(f"topic {topic} does not exist")
        if assignment is None:
            if count is None or count <= len(existing):
                raise ClusterError(f"topic {topic} has {len(existing)} partitions; pass a larger count")
            rf = len(existing[(topic, 0)].replicas)
            new = self._assign(self._live_racks(), count - len(existing), rf,
                               self._placement_rng(topic, len(existing)), start_partition_id=len(existing))
            assignment = {len(existing) + i: r for i, r in enumerate(new)}
        self._input(at, PartitionsAdded, topic, tuple((p, tuple(r)) for p, r in sorted(assignment.items())))

    def _live_racks(self) -> dict[int, str | None]:
        return {b: s.rack for b, s in sorted(self.brokers.items()) if s.alive}

    @staticmethod
    def _assign(racks: dict, partitions: int, rf: int, rng, start_partition_id: int = 0) -> list[tuple[int, ...]]:
        """Kafka's placement over the live brokers: rack-aware when they all have a rack (broker.rack)."""
        try:
            return assign_replicas(racks, partitions, rf, rng=rng, start_partition_id=start_partition_id)
        except AdminOperationError as e:
            raise ClusterError(str(e)) from None

    def delete_topic(self, topic: str, at: int | None = None) -> None:
        """Mark a topic for deletion as ``kafka-topics.sh --delete`` does (``/admin/delete_topics/<topic>``);
        the controller's TopicDeletionManager does the rest."""
        self._input(at, TopicDeletionRequested, topic)

    def reassign_partitions(self, reassignment: Mapping[tuple, Iterable[int] | None], *, via: str = "api",
                            at: int | None = None) -> tuple[str, dict] | None:
        """Start (or, with None as the target, cancel) partition reassignments (KIP-455):
        ``{(topic, partition): target replicas}``. ``via="api"`` is the AlterPartitionReassignments API that
        ``kafka-reassign-partitions.sh --execute`` uses since 2.4; it returns (error, {tp: error}).
        ``via="zk"`` writes ``/admin/reassign_partitions`` as the older tool did, after the tool's checks."""
        if via not in ("api", "zk"):
            raise ClusterError(f"via must be 'api' or 'zk', not {via!r}")
        body = tuple((t, int(p), None if r is None else tuple(int(b) for b in r))
                     for (t, p), r in sorted(reassignment.items()))
        return self._input(at, ReassignmentRequested, via, body)

    def list_reassignments(self, partitions: Iterable[tuple] | None = None) -> dict | None:
        """ListPartitionReassignments (reads the active controller's state; not an input):
        {(topic, partition): ReplicaAssignment} of the partitions being reassigned."""
        controller = self.controller
        if controller is None:
            return None
        out: list = []
        controller.event_manager.put(ListPartitionReassignments(
            None if partitions is None else sorted(partitions), lambda error, result: out.append(result)))
        self.settle()
        return out[0] if out else None

    def set_config(self, entity_type: str, entity_name: str, name: str, value: object, at: int | None = None) -> None:
        """Change a broker default (``entity_type="broker"``, name ""), one broker's dynamic config (name: its id,
        ``/config/brokers/<id>``; no config a broker here reads: the replication throttles are recorded, not
        enforced) or a topic override (value None deletes)."""
        if entity_type not in ("broker", "topic"):
            raise ClusterError(f"entity_type must be 'broker' or 'topic', not {entity_type!r}")
        text = None if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        self._input(at, ConfigChanged, entity_type, entity_name, name, text)

    def alter_partition(self, broker_id: int, partitions: Mapping[tuple, tuple], *, broker_epoch: int | None = None,
                        at: int | None = None):
        """Send AlterPartition from ``broker_id``: ``{(topic, p): (leader_epoch, isr, recovery_state,
        partition_epoch)}``. Returns the controller's response (None if no controller answered)."""
        epoch = self.brokers[broker_id].broker_epoch if broker_epoch is None else broker_epoch
        body = tuple((t, p, le, tuple(isr), rs, pe) for (t, p), (le, isr, rs, pe) in sorted(partitions.items()))
        return self._input(at, AlterPartitionRequested, broker_id, epoch, body)

    def catch_up_followers(self, at: int | None = None) -> dict[int, object]:
        """Every live follower of the current leader epoch joins its partition's ISR: each leader sends one
        AlterPartition with the expanded ISRs, as Kafka's leaders do once a follower reaches the log end.
        (This cluster has no data plane, so followers catch up the moment they are asked to.) Returns
        each leader's AlterPartition response."""
        assignments = self.admin.get_full_replica_assignment_for_topics(self.admin.get_all_topics_in_cluster())
        proposals: dict[int, dict] = {}
        for tp in sorted(assignments):
            for b in assignments[tp].replicas:
                server = self.brokers.get(b)
                state = server.leader_and_isr.get(tp) if server is not None and server.alive else None
                if state is None or state[0] != b:
                    continue
                _, leader_epoch, isr, partition_epoch = state
                joining = [r for r in assignments[tp].replicas if r not in isr and self._follows(r, tp, leader_epoch)]
                if joining:
                    proposals.setdefault(b, {})[tp] = (leader_epoch, tuple(isr) + tuple(joining), 0, partition_epoch)
        responses = {}
        for leader in sorted(proposals):
            responses[leader] = self.alter_partition(leader, proposals[leader], at=at)
            at = None
        return responses

    def _follows(self, broker_id: int, tp: tuple, leader_epoch: int) -> bool:
        server = self.brokers.get(broker_id)
        if server is None or not server.alive:
            return False
        state = server.leader_and_isr.get(tp)
        return state is not None and state[1] == leader_epoch

    def notify_isr_change(self, broker_id: int, partitions: Mapping[tuple, Iterable[int]],
                          at: int | None = None) -> None:
        """The pre-2.7 path: the leader writes the new ISR to ``/state`` itself, then notifies the controller."""
        body = tuple((t, p, tuple(isr)) for (t, p), isr in sorted(partitions.items()))
        self._input(at, IsrChangeNotified, broker_id, body)

    def elect_leaders(self, election_type: str = "preferred", partitions: Iterable[tuple] | None = None, *,
                      via: str = "api", at: int | None = None) -> dict | None:
        """Ask for leader elections as ``kafka-leader-election.sh --election-type preferred|unclean`` does
        (the ElectLeaders API; ``partitions`` None means all), or, with ``via="zk"``, write
        ``/admin/preferred_replica_election`` as the pre-2.4 tool did (preferred only). Returns
        {(topic, partition): (error, leader)} for the API, None for the znode."""
        types = {"preferred": PREFERRED, "unclean": UNCLEAN_ELECTION}
        if election_type not in types:
            raise ClusterError(f"election_type must be 'preferred' or 'unclean', not {election_type!r}")
        if via not in ("api", "zk"):
            raise ClusterError(f"via must be 'api' or 'zk', not {via!r}")
        if via == "zk" and election_type != "preferred":
            raise ClusterError("/admin/preferred_replica_election only triggers preferred elections")
        body = None if partitions is None else tuple(sorted((t, int(p)) for t, p in partitions))
        return self._input(at, LeaderElectionRequested, types[election_type], via, body)

    def checkpoint(self, snapshot: bool = True) -> str:
        """Record the digest of the whole cluster state (a StateDigest), preceded, with ``snapshot``, by
        a ViewSnapshot of the cluster view folded from every record so far: readers of the log
        (``fold_log``, ``kcontroller describe``) start folding there. Returns the digest."""
        self.journal.set_writer(-1, 0)
        if snapshot:
            self.journal.emit(ViewSnapshot, *snapshot_record_body(self.view))
        digest = self.digest()
        self.journal.emit(StateDigest, digest)
        return digest

    def snapshot(self) -> None:
        """Record a ClusterSnapshot: the whole cluster, so that a replay or a later run can restart here
        (``controller.embedding.cluster_snapshot.restore_cluster``)."""
        self.settle()
        state = cluster_state(self, next_offset=self.journal.next_offset + 1)
        self.journal.set_writer(-1, 0)
        self.journal.emit(ClusterSnapshot, state)

    def apply(self, record) -> object:
        """Carry out an input record from a log (replay); returns what the action returns."""
        if type(record) is ClusterCreated:
            return None
        return self._input(record.timestamp_ms, type(record), *record.body())

    # --- reading -------------------------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        cid = self.admin.get_controller_id()
        return -1 if cid is None else cid

    @property
    def session_timeout_ms(self) -> int:
        """The session timeout the brokers get: ``zookeeper.session.timeout.ms`` as the ZooKeeper server
        negotiates it (clamped to its min/max session timeout, 4 s to 40 s by default)."""
        return self.zk.negotiated_session_timeout(self.config.get_int("zookeeper.session.timeout.ms"))

    @property
    def controller(self) -> KafkaController | None:
        """The active controller (the broker that holds ``/controller`` and knows it)."""
        server = self.brokers.get(self.controller_id)
        if server is None or not server.alive or not server.controller.is_active:
            return None
        return server.controller

    def digest(self) -> str:
        """SHA-256 over the store's contents and the active controller's view of the cluster, as
        ``2:<hex>`` (digest format 2: column buffers, see ``ZooKeeper.digest_into`` and
        ``ControllerContext.digest_into``). The same state gives the same digest however it is held, so a
        cluster restored from a snapshot digests as the one that wrote it."""
        h = hashlib.sha256(b"kcontroller cluster state, digest format 2\n")
        self.zk.digest_into(h)
        controller = self.controller
        if controller is not None:
            ctx = controller.context
            h.update(msgpack.packb(["controller", controller.broker_id, ctx.epoch,
                                    sorted(ctx.live_broker_epochs.items())]))
            ctx.digest_into(h)
        return DIGEST_FORMAT_PREFIX + h.hexdigest()

    def digest_like(self, other: str) -> str:
        """``digest()`` in the format of the digest ``other`` (a StateDigest of an older log is format 1:
        64 hex digits, no prefix)."""
        return self.digest() if other.startswith(DIGEST_FORMAT_PREFIX) else self.legacy_digest()

    def legacy_digest(self) -> str:
        """The digest of format 1 (written before format 2): SHA-256 over the store's dump and the ``repr`` of
        every partition in the active controller's context. Kept to replay logs written with it; it costs
        tens of µs per partition."""
        h = hashlib.sha256(self.zk.dump().encode())
        controller = self.controller
        if controller is not None:
            ctx = controller.context
            h.update(f"controller {controller.broker_id} epoch {ctx.epoch}\n".encode())
            h.update(repr(sorted(ctx.live_broker_epochs.items())).encode())
            for tp in sorted(ctx.all_partitions()):
                h.update(repr((tp, ctx.partition_state(tp), ctx.partition_leadership_info(tp),
                               ctx.partition_full_replica_assignment(tp),
                               [(r, ctx.replica_state((tp[0], tp[1], r)))
                                for r in ctx.partition_replica_assignment(tp)])).encode())
        return h.hexdigest()

    # --- machinery -------------------------------------------------------------------------------------
    def _input(self, at: int | None, cls, *body) -> object:
        target = self.now if at is None else at
        if target < self.now:
            raise ClusterError(f"time cannot go back: now {self.now}, asked {target}")
        self._check(cls, body)
        self._advance_clock(target)
        self._check(cls, body)  # time passing may have changed things (a session expired)
        self.journal.set_writer(-1, 0)
        rec = self.journal.input(cls, *body)
        result = self._carry_out(rec)
        self.settle()
        return result

    def _advance_clock(self, target: int) -> None:
        """Move time to ``target``, stopping at every session deadline on the way so that
        expiries happen (and are recorded) at their own time."""
        # Running processes heartbeat all the time (re-done at every step below), so only the
        # sessions of dead brokers reach their deadlines.
        self._set_time(self.now)
        while True:
            deadline = self._next_deadline()
            if deadline is None or deadline > target:
                break
            self._set_time(max(self.now, deadline))
            self.zk.tick()
            self._run_scheduled_tasks()
            self.settle()
        self._set_time(target)

    def _next_deadline(self) -> int | None:
        """The earliest session timeout or scheduled controller task."""
        deadlines = [d for d in (self.zk.next_session_deadline(),
                                 *(s.controller.scheduler.next_deadline() for s in self.brokers.values() if s.alive))
                     if d is not None]
        return min(deadlines, default=None)

    def _run_scheduled_tasks(self) -> None:
        for b in sorted(self.brokers):
            server = self.brokers[b]
            if server.alive:
                server.controller.scheduler.run_due(self.now)

    def _set_time(self, now: int) -> None:
        self.now = now
        self.journal.set_time(now)
        for server in self.brokers.values():
            if server.alive:
                server.zk.heartbeat()
        self.admin.heartbeat()

    def settle(self) -> int:
        """Step every running broker's event queue, round-robin by broker id, until all are empty."""
        steps = 0
        while True:
            progressed = False
            for b in sorted(self.brokers):
                server = self.brokers[b]
                if server.alive and server.controller.event_manager.step():
                    progressed = True
                    steps += 1
            if not progressed:
                return steps
            if steps > MAX_SETTLE_STEPS:
                raise ClusterError("the cluster did not settle: events keep coming")

    def _shared_partitions(self, partitions):
        """One object for a request's partitions for all the brokers it was sent to: a columnar batch is
        sent to all as it is; a tuple of records may be one tuple per request (of the same records), and
        the brokers share their UpdateMetadata results by the identity of what they applied."""
        if not partitions or type(partitions) is not tuple:
            return partitions
        key = id(partitions[0])   # the cache entry keeps that record alive: the id stays its own
        entry = self._keys_cache.get(key)
        if entry is None or not (entry[0] is partitions or entry[0] == partitions):
            entry = self._keys_cache[key] = (partitions, None)
            if len(self._keys_cache) > 64:
                self._keys_cache.pop(next(iter(self._keys_cache)))
        return entry[0]

    def _deliver(self, request: BrokerRequest) -> BrokerResponse | None:
        server = self.brokers.get(request.broker_id)
        if server is None or not server.alive:
            return None
        error, errors = server.answer(request)
        if error != NONE and request.api == API_STOP_REPLICA:
            partitions = request.partitions
            if type(partitions) is ColumnBatch:
                errors = PartitionErrors.uniform(partitions.column("topic"), partitions.column("partition"), error)
            else:
                errors = {(p.topic, p.partition): error for p in partitions}
        return BrokerResponse(request.api, request.broker_id, request.correlation_id, error, errors)

    def _carry_out(self, rec) -> object:
        t = type(rec)
        if t is BrokerStarted:
            server = self.brokers.get(rec.broker_id)
            if server is not None and server.alive:
                raise ClusterError(f"broker {rec.broker_id} is already running")
            server = BrokerServer(self, rec.broker_id, rec.host, rec.port, rec.rack)
            self.brokers[rec.broker_id] = server
            server.start()
        elif t is BrokerKilled:
            self._running(rec.broker_id).kill()
        elif t is BrokerStopped:
            self._running(rec.broker_id).stop()
        elif t is ControlledShutdownRequested:
            return self._controlled_shutdown(rec)
        elif t is LeaderElectionRequested:
            return self._elect_leaders(rec)
        elif t is TopicDeletionRequested:
            self.admin.create_delete_topic_path(rec.topic)
        elif t is ReassignmentRequested:
            return self._reassign(rec)
        elif t is BrokerSessionExpired:
            self.zk.expire_session(self._running(rec.broker_id).zk.session_id)
        elif t is ClockAdvanced:
            pass
        elif t is TopicCreated:
            matrix = self._replica_matrix(rec.assignment)
            if matrix is not None:
                self.admin.create_topic_with_replica_matrix(rec.topic, dict(rec.configs), matrix)
            else:
                self.admin.create_topic_with_assignment(rec.topic, dict(rec.configs),
                                                        {p: list(r) for p, r in enumerate(rec.assignment)})
        elif t is PartitionsAdded:
            existing = self.admin.get_full_replica_assignment_for_topics([rec.topic])
            self.admin.add_partitions(rec.topic, existing, {p: list(r) for p, r in rec.assignment})
        elif t is ConfigChanged:
            self._change_config(rec)
        elif t is AlterPartitionRequested:
            return self._alter_partition(rec)
        elif t is IsrChangeNotified:
            self._isr_change(rec)
        elif t is BrokerModified:
            server = self._running(rec.broker_id)
            server.host, server.port, server.rack = rec.host, rec.port, rec.rack
            server.zk.update_broker_info(rec.broker_id, rec.host, rec.port, rec.rack)
        elif t is LogDirFailed:
            self._running(rec.broker_id).fail_log_dir(rec.log_dir)
        else:
            raise ClusterError(f"{t.__name__} is not an input the cluster can carry out")
        return None

    def _check(self, cls, body: tuple) -> None:
        """Refuse an action that cannot be carried out *before* it is recorded, so the log only holds
        inputs that happened (and replays)."""
        if cls is BrokerStarted:
            server = self.brokers.get(body[0])
            if server is not None and server.alive:
                raise ClusterError(f"broker {body[0]} is already running")
        elif cls in (BrokerKilled, BrokerSessionExpired, BrokerModified, AlterPartitionRequested, IsrChangeNotified,
                     BrokerStopped, ControlledShutdownRequested):
            self._running(body[0])
        elif cls is LogDirFailed:
            server = self._running(body[0])
            if body[1] not in server.log_dirs:
                raise ClusterError(f"{body[1]!r} is not a log directory of broker {body[0]} "
                                   f"(log.dirs: {','.join(server.log_dirs)})")
            if body[1] in server.offline_dirs:
                raise ClusterError(f"log directory {body[1]} of broker {body[0]} is already offline")
        elif cls is TopicCreated:
            matrix = self._replica_matrix(body[1])
            self.admin.validate_topic_create(body[0], matrix if matrix is not None else
                                             {p: tuple(r) for p, r in enumerate(body[1])})
        elif cls is PartitionsAdded:
            self.admin.add_partitions(body[0], None, {p: list(r) for p, r in body[1]}, validate_only=True)
        elif cls is TopicDeletionRequested:
            if not _could_be_topic(body[0]) or not self.admin.topic_exists(body[0]):
                raise ClusterError(f"Topic '{body[0]}' does not exist as expected")
            if self.admin.is_topic_marked_for_deletion(body[0]):
                raise ClusterError(f"Topic {body[0]} is already marked for deletion")
        elif cls is ReassignmentRequested and body[0] == "zk":
            self._validate_zk_reassignment(body[1])
        elif cls is LeaderElectionRequested and body[1] == "zk" and self.admin.path_exists(
                "/admin/preferred_replica_election"):
            raise ClusterError("a preferred replica election is already in progress (/admin/preferred_replica_election)")
        elif cls is ConfigChanged:
            if body[0] == "broker" and body[2] in READ_ONLY_BROKER_CONFIGS:
                raise ClusterError(f"Cannot update these configs dynamically: Set({body[2]})")
            if body[0] == "broker" and body[1] and not (body[1].isascii() and body[1].isdigit()
                                                         and int(body[1]) < 2**31):
                raise ClusterError(f"The entity name for brokers must be a valid integer broker id, found: {body[1]}")
            if body[0] == "topic" and (not _could_be_topic(body[1]) or not self.admin.topic_exists(body[1])):
                raise ClusterError(f"topic {body[1]} does not exist")
            if body[3] is not None:
                check_config_name(body[2])
                check_config_value(body[2], body[3])

    def _running(self, broker_id: int) -> BrokerServer:
        server = self.brokers.get(broker_id)
        if server is None or not server.alive:
            raise ClusterError(f"broker {broker_id} is not running")
        return server

    def _change_config(self, rec) -> None:
        if rec.entity_type == "broker" and rec.entity_name:
            configs = dict(self.admin.get_entity_configs("brokers", rec.entity_name))
            if rec.value is None:
                configs.pop(rec.name, None)
            else:
                configs[rec.name] = rec.value
            self.admin.set_or_create_entity_configs("brokers", rec.entity_name, configs)
            self.admin.create_config_change_notification(f"brokers/{rec.entity_name}")
        elif rec.entity_type == "broker":
            self.config = self.config.with_overrides({rec.name: rec.value} if rec.value is not None else {})
            for server in self.brokers.values():
                if server.alive:
                    server.controller.config = self.config
                    server.controller.partition_state_machine.broker_config = self.config
            if rec.name == UNCLEAN and rec.value == "true":
                self._put_on_active(UncleanLeaderElectionEnable())
        else:
            configs = dict(self.admin.get_entity_configs("topics", rec.entity_name))
            if rec.value is None:
                configs.pop(rec.name, None)
            else:
                configs[rec.name] = rec.value
            self.admin.change_topic_config(rec.entity_name, configs)
            if rec.name == UNCLEAN and rec.value == "true":
                self._put_on_active(TopicUncleanLeaderElectionEnable(rec.entity_name))

    def _put_on_active(self, event) -> None:
        for server in self.brokers.values():
            if server.alive and server.controller.is_active:
                server.controller.event_manager.put(event)

    def _alter_partition(self, rec):
        server = self._running(rec.broker_id)
        proposed = {(t, p): LeaderAndIsr(rec.broker_id, le, tuple(isr), rs, pe)
                    for t, p, le, isr, rs, pe in rec.partitions}
        responses = []
        target = self.brokers.get(self.controller_id)
        if target is None or not target.alive:
            return None

        def on_response(response) -> None:
            # Partition.handleAlterPartitionUpdate, at once: the leader adopts the state the controller
            # stored before the requests the controller sends next (a completed reassignment's) reach it.
            responses.append(response)
            if server.alive:
                for tp, res in response.partitions.items():
                    cur = server.leader_and_isr.get(tp)
                    if isinstance(res, LeaderAndIsr) and cur is not None and cur[1] == res.leader_epoch:
                        server.leader_and_isr[tp] = (res.leader, res.leader_epoch, tuple(res.isr),
                                                     res.partition_epoch)
        target.controller.event_manager.put(
            AlterPartitionReceived(server.broker_id, rec.broker_epoch, proposed, on_response))
        self.settle()
        return responses[0] if responses else None

    def _controlled_shutdown(self, rec):
        self._running(rec.broker_id)
        target = self.brokers.get(self.controller_id)
        if target is None or not target.alive:
            _log.info("No zk controller present in the metadata cache", broker_id=rec.broker_id)
            return None
        responses: list = []
        target.controller.event_manager.put(
            ControlledShutdown(rec.broker_id, rec.broker_epoch, lambda error, remaining: responses.append(
                (error, remaining))))
        self.settle()
        return responses[0] if responses else None

    def _all_partitions(self) -> list[tuple]:
        assignments = self.admin.get_full_replica_assignment_for_topics(self.admin.get_all_topics_in_cluster())
        return sorted(assignments)

    def _elect_leaders(self, rec):
        partitions = list(rec.partitions) if rec.partitions is not None else self._all_partitions()
        if rec.source == "zk":
            self.admin.create_preferred_replica_election(partitions)
            return None
        target = self.brokers.get(self.controller_id)
        if target is None or not target.alive:
            return None
        responses: list = []
        target.controller.event_manager.put(
            ReplicaLeaderElection(partitions, rec.election_type, ADMIN_CLIENT_TRIGGERED, responses.append))
        self.settle()
        return responses[0] if responses else None

    def _validate_zk_reassignment(self, partitions: tuple) -> None:
        """The checks kafka-reassign-partitions.sh made before writing /admin/reassign_partitions."""
        if self.admin.reassign_partitions_in_progress():
            raise ClusterError("There is an existing assignment running.")
        if not partitions:
            raise ClusterError("Partition reassignment list cannot be empty")
        tps = [(t, p) for t, p, _ in partitions]
        if len(set(tps)) != len(tps):
            raise ClusterError(f"Partition reassignment contains duplicate topic partitions: {tps}")
        for t, p, replicas in partitions:
            if replicas is None:
                raise ClusterError(f"Cancelling a reassignment of {t}-{p} needs the AlterPartitionReassignments API")
            if not replicas:
                raise ClusterError(f"Partition replica list cannot be empty for {t}-{p}")
            if len(set(replicas)) != len(replicas):
                raise ClusterError(f"Partition replica lists may not contain duplicate entries: {t}-{p} contains "
                                   f"{list(replicas)}")
        existing = set(self._all_partitions())
        missing = [f"{t}-{p}" for t, p in tps if (t, p) not in existing]
        if missing:
            raise ClusterError(f"The proposed assignment contains non-existent partitions: {missing}")
        brokers = set(self.admin.get_all_broker_and_epochs_in_cluster())
        unknown = sorted({b for _, _, r in partitions for b in r} - brokers)
        if unknown:
            raise ClusterError(f"The proposed assignment contains non-existent brokerIDs: {','.join(map(str, unknown))}")

    def _reassign(self, rec):
        reassignment = {(t, p): r for t, p, r in rec.partitions}
        if rec.source == "zk":
            self.admin.create_partition_reassignment(reassignment)
            return None
        target = self.brokers.get(self.controller_id)
        if target is None or not target.alive:
            return None
        responses: list = []
        target.controller.event_manager.put(ApiPartitionReassignment(
            reassignment, lambda error, results: responses.append((error, results))))
        self.settle()
        return responses[0] if responses else None

    def _isr_change(self, rec) -> None:
        server = self._running(rec.broker_id)
        changed = []
        states = server.zk.get_topic_partition_states([(t, p) for t, p, _ in rec.partitions])
        for t, p, isr in rec.partitions:
            info = states.get((t, p))
            if info is None:
                continue
            lai = info.leader_and_isr._replace(isr=tuple(isr))
            ok, version = server.zk.update_partition_state_as_leader((t, p), lai, info.controller_epoch)
            if ok:
                # The broker itself wrote /state: record it, or no record would ever carry this ISR
                # if a new controller loads it at failover (the notification is deleted then).
                self.journal.set_writer(-1, 0)
                self.journal.emit(LeaderAndIsrUpdated, t, p, lai.leader, lai.leader_epoch, lai.isr, version,
                                  lai.recovery_state, UPDATE_ISR_NOTIFICATION, -1)
                changed.append((t, p))
        if changed:
            server.zk.propagate_isr_changes(changed)


def replay_inputs(records: Iterable[tuple], sink: Callable[[tuple], object] | None = None) -> Cluster:
    """Build a fresh cluster from a log's ClusterCreated record and re-apply its inputs."""
    it = iter(records)
    first = next(it, None)
    if type(first) is not ClusterCreated:
        raise ClusterError("a replayable log starts with a ClusterCreated record")
    cluster = Cluster(configs=dict(first.configs), seed=first.seed, sink=sink, start_time_ms=first.timestamp_ms)
    for rec in it:
        if rec.is_input:
            cluster.apply(rec)
    return cluster
