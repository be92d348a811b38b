"""KafkaController: the ZooKeeper-era controller of one broker, event by event (Kafka 3.7).

Every broker runs one. All of them race for ``/controller``; the winner increments
``/controller_epoch`` and runs ``on_controller_failover``; the others watch ``/controller``.
Store watches become events on the controller's FIFO event manager, and ``process`` handles
them one at a time with the handlers below, each following KafkaController.scala step by
step (section numbers refer to ../shared/kafka-notes/controller-reference.md). Every write the
active controller makes is fenced by the ``/controller_epoch`` zkVersion, so a deposed
controller's writes fail with ControllerMovedError, which makes it resign.

The operator-driven flows (controlled shutdown, reassignment, topic deletion, preferred
elections) build on the same handlers.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import numpy as np
import structlog

from controller.config import KafkaConfig
from controller.context import ControllerContext, view_i32
from controller.controller_events import (
    ADMIN_CLIENT_TRIGGERED, AUTO_TRIGGERED, BROKER_NOT_AVAILABLE, ELECTION_NOT_NEEDED, ELECTION_TYPE_NAMES,
    ELIGIBLE_LEADERS_NOT_AVAILABLE, FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA, INVALID_REQUEST, INVALID_TOPIC_EXCEPTION,
    INVALID_UPDATE_VERSION, KAFKA_STORAGE_ERROR, NONE, NOT_CONTROLLER, PREFERRED, PREFERRED_LEADER_NOT_AVAILABLE,
    STALE_BROKER_EPOCH, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, ZK_TRIGGERED, AlterPartitionReceived,
    AlterPartitionResponse, AutoPreferredReplicaLeaderElection, BrokerChange, BrokerModifications, ControlledShutdown,
    ControllerChange, Expire, IsrChangeNotification, LeaderAndIsrResponseReceived, LogDirEventNotification,
    PartitionModifications, Reelect, RegisterBrokerAndReelect, ReplicaLeaderElection,
    Startup, TopicChange, TopicUncleanLeaderElectionEnable, UncleanLeaderElectionEnable, ApiPartitionReassignment,
    ListPartitionReassignments, PartitionReassignmentIsrChange, TopicDeletion, TopicDeletionStopReplicaResponseReceived,
    ZkPartitionReassignment,
)
from controller.partition_reassignment import REASSIGN_PARTITIONS_PATH, REASSIGNMENT_IN_PROGRESS, PartitionReassignmentMixin
from controller.topic_deletion_manager import TopicDeletionManager
from controller.store.zk_data import LOG_DIR_EVENT_NOTIFICATION_PATH, topic_partition_state_path
from controller.event_manager import ControllerEventManager
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel
from controller.scheduler import ControllerScheduler
from events.records import (
    NO_EPOCH, RECOVERED, RECOVERING, UPDATE_ALTER_PARTITION, UPDATE_ISR_NOTIFICATION, ControlledShutdownResponded,
    ControllerElected, ControllerResigned, LeaderAndIsrUpdated, LeaderElectionResponded, LiveBrokersChanged,
    TopicDeletionCompleted, TopicQueuedForDeletion,
)
from statemachines import election, partition_batch
from statemachines.errors import ControllerMovedError, StateChangeFailedError
from statemachines.leader_and_isr import TopicPartition
from statemachines.partition_state_machine import (
    ControlledShutdownPartitionLeaderElectionStrategy, OfflinePartitionLeaderElectionStrategy, PartitionStateMachine,
    PreferredReplicaPartitionLeaderElectionStrategy,
)
from statemachines.replica_rows import PartitionRows, ReplicaRows, key_topic_runs
from statemachines.replica_state_machine import ReplicaStateMachine
from statemachines.states import (
    NEW_PARTITION, NEW_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA, ONLINE_PARTITION, ONLINE_REPLICA,
)

_log = structlog.get_logger("kcontroller.controller")

BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
CONTROLLER_PATH = "/controller"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
DELETE_TOPICS_PATH = "/admin/delete_topics"
AUTO_LEADER_REBALANCE_TASK = "auto-leader-rebalance-task"


def _ids(xs: Iterable[int]) -> str:
    return ",".join(map(str, sorted(xs)))


class _Handler:
    """A store watch handler that turns notifications into controller events (Kafka's ZNode*Handler)."""

    def __init__(self, path: str, put: Callable, *, on_create=None, on_delete=None, on_change=None,
                 on_child_change=None):
        self.path = path
        self._put = put
        self._on_create, self._on_delete, self._on_change = on_create, on_delete, on_change
        self._on_child_change = on_child_change

    def handle_creation(self) -> None:
        if self._on_create is not None:
            self._put(self._on_create())

    def handle_deletion(self) -> None:
        if self._on_delete is not None:
            self._put(self._on_delete())

    def handle_data_change(self) -> None:
        if self._on_change is not None:
            self._put(self._on_change())

    def handle_child_change(self) -> None:
        if self._on_child_change is not None:
            self._put(self._on_child_change())


class _StateChangeHandler:
    """Session lifecycle hooks (Kafka's controller StateChangeHandler)."""

    name = "controller-state-change-handler"

    def __init__(self, controller: KafkaController):
        self._controller = controller

    def before_initializing_session(self) -> None:
        self._controller._before_initializing_session()

    def after_initializing_session(self) -> None:
        self._controller.event_manager.put(RegisterBrokerAndReelect())


class _ControllerDeletionClient:
    """Kafka's ControllerDeletionClient: what the TopicDeletionManager asks of the controller and the store."""

    def __init__(self, controller: KafkaController):
        self._controller = controller

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        zk = self._controller.zk
        zk.delete_topic_znode(topic, epoch_zk_version)
        zk.delete_topic_configs([topic], epoch_zk_version)
        zk.delete_topic_deletions([topic], epoch_zk_version)
        self._controller.journal.emit(TopicDeletionCompleted, topic)

    def delete_topic_deletions(self, topics: list[str], epoch_zk_version: int) -> None:
        self._controller.zk.delete_topic_deletions(topics, epoch_zk_version)

    def mute_partition_modifications(self, topic: str) -> None:
        self._controller.zk.unregister_znode_change_handler(f"{TOPICS_PATH}/{topic}")

    def send_metadata_update(self, partitions: list[tuple]) -> None:
        c = self._controller
        c._send_update_metadata_request(c.context.live_or_shutting_down_broker_ids, partitions)


class KafkaController(PartitionReassignmentMixin):
    """The controller candidate of broker ``broker_id``.

    ``zk`` is a ``controller.store.kafka_zk_client.KafkaZkClient`` (it also serves as the partition
    state store), ``journal`` the shared ``events.journal.Journal``, ``clock`` a function
    returning milliseconds, and ``send`` where requests to brokers go. ``register_broker``
    re-registers this broker after a new store session (RegisterBrokerAndReelect).
    """

    def __init__(self, broker_id: int, config: KafkaConfig, zk, journal, clock: Callable[[], float], *,
                 send: Callable | None = None, register_broker: Callable[[], int] | None = None):
        self.broker_id = broker_id
        self.config = config
        self.zk = zk
        self.journal = journal
        self.clock = clock
        self._register_broker = register_broker
        self.context = ControllerContext()
        self.channel = ControllerChannel(send)
        on_deleted = self._on_topic_deletion_stop_replica_response
        on_lai = self._on_leader_and_isr_response
        self.request_batch = ControllerBrokerRequestBatch(broker_id, self.context, journal, self.channel, on_deleted,
                                                          on_lai)
        self.replica_state_machine = ReplicaStateMachine(
            broker_id, self.context, zk,
            ControllerBrokerRequestBatch(broker_id, self.context, journal, self.channel, on_deleted, on_lai), journal)
        self.partition_state_machine = PartitionStateMachine(
            broker_id, self.context, zk,
            ControllerBrokerRequestBatch(broker_id, self.context, journal, self.channel, on_deleted, on_lai),
            journal, broker_config=config, topic_configs=self._topic_configs,
            leader_recovery_supported=config.leader_recovery_supported)
        self.event_manager = ControllerEventManager(broker_id, self, clock)
        self.scheduler = ControllerScheduler(clock)
        self.active_controller_id = -1
        self._was_controller = False  # between onControllerFailover and onControllerResignation
        self._log = _log.bind(controller_id=broker_id)
        self.topic_deletion_manager = TopicDeletionManager(
            config, self.context, self.replica_state_machine, self.partition_state_machine,
            _ControllerDeletionClient(self), log=self._log)
        put = self.event_manager.put
        self._controller_change_handler = _Handler(CONTROLLER_PATH, put, on_create=ControllerChange,
                                                   on_delete=Reelect, on_change=ControllerChange)
        self._broker_change_handler = _Handler(BROKER_IDS_PATH, put, on_child_change=BrokerChange)
        self._topic_change_handler = _Handler(TOPICS_PATH, put, on_child_change=TopicChange)
        self._isr_change_handler = _Handler(ISR_CHANGE_NOTIFICATION_PATH, put, on_child_change=IsrChangeNotification)
        self._log_dir_event_notification_handler = _Handler(LOG_DIR_EVENT_NOTIFICATION_PATH, put,
                                                            on_child_change=LogDirEventNotification)
        self._preferred_replica_election_handler = _Handler(
            PREFERRED_REPLICA_ELECTION_PATH, put, on_create=lambda: ReplicaLeaderElection(None, PREFERRED, ZK_TRIGGERED))
        self._partition_reassignment_handler = _Handler(REASSIGN_PARTITIONS_PATH, put,
                                                        on_create=ZkPartitionReassignment)
        self._topic_deletion_handler = _Handler(DELETE_TOPICS_PATH, put, on_child_change=TopicDeletion)
        self._state_change_handler = _StateChangeHandler(self)
        self._dispatch = {
            Startup: self._process_startup,
            ControllerChange: lambda e: self.maybe_resign(),
            Reelect: lambda e: self._process_reelect(),
            RegisterBrokerAndReelect: lambda e: self._process_register_broker_and_reelect(),
            Expire: lambda e: self._process_expire(),
            BrokerChange: lambda e: self._process_broker_change(),
            BrokerModifications: lambda e: self._process_broker_modification(e.broker_id),
            TopicChange: lambda e: self._process_topic_change(),
            PartitionModifications: lambda e: self._process_partition_modifications(e.topic),
            IsrChangeNotification: lambda e: self._process_isr_change_notification(),
            AlterPartitionReceived: self._process_alter_partition,
            UncleanLeaderElectionEnable: lambda e: self._process_unclean_leader_election_enable(),
            TopicUncleanLeaderElectionEnable: lambda e: self._process_topic_unclean_leader_election_enable(e.topic),
            ControlledShutdown: self._process_controlled_shutdown,
            ReplicaLeaderElection: self._process_replica_leader_election,
            AutoPreferredReplicaLeaderElection: lambda e: self._process_auto_preferred_replica_leader_election(),
            TopicDeletion: lambda e: self._process_topic_deletion(),
            TopicDeletionStopReplicaResponseReceived: self._process_topic_deletion_stop_replica_response_received,
            LeaderAndIsrResponseReceived: self._process_leader_and_isr_response_received,
            LogDirEventNotification: lambda e: self._process_log_dir_event_notification(),
            ZkPartitionReassignment: lambda e: self._process_zk_partition_reassignment(),
            ApiPartitionReassignment: self._process_api_partition_reassignment,
            PartitionReassignmentIsrChange: self._process_partition_reassignment_isr_change,
            ListPartitionReassignments: self._process_list_partition_reassignments,
        }

    # --- lifecycle ------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id

    @property
    def epoch(self) -> int:
        return self.context.epoch

    def startup(self, *, threaded: bool = False) -> None:
        """Kafka's KafkaController.startup(): session hooks, then Startup on the event queue."""
        self.zk.register_state_change_handler(self._state_change_handler)
        self.event_manager.put(Startup())
        if threaded:
            self.event_manager.start()

    def shutdown(self) -> None:
        """Stop the event manager and resign (a broker shutting down, or killed)."""
        self.event_manager.close()
        self._on_controller_resignation()

    def _before_initializing_session(self) -> None:
        queued = self.event_manager.clear_and_put(Expire())
        # Kafka blocks the new session until Expire is being processed; stepped, we process it here.
        if self.event_manager._thread_running:
            queued.await_processing()
        else:
            while not queued.spent and self.event_manager.step():
                pass

    # --- snapshots ------------------------------------------------------------------------------
    def to_state(self) -> list:
        """What a cluster snapshot needs of this controller (taken between events: the queue is empty)."""
        if not self.event_manager.is_empty:
            raise RuntimeError(f"controller {self.broker_id} has queued events; snapshot a settled cluster")
        znodes, children, states = self.zk.handler_paths()
        return [self.active_controller_id, self._was_controller, self.context.to_state(),
                sorted(self.channel._correlation.items()), znodes, children, states,
                [self.scheduler.running, self.scheduler.pending()]]

    def load_state(self, state: list) -> None:
        """Restore ``to_state``: the context, and the store handlers as they were registered (their
        watches are restored with the store itself, so registering here reads nothing)."""
        active, was_controller, context, correlation, znodes, children, states, (running, tasks) = state
        self.active_controller_id, self._was_controller = active, was_controller
        self.context.load_state(context)
        for b in self.context.live_broker_epochs:
            info = self.zk.get_broker(b)
            if info is not None:
                self.context.broker_info[b] = info
        self.channel._correlation = {b: c for b, c in correlation}
        if states:
            self.zk.register_state_change_handler(self._state_change_handler)
        for path in children:
            self.zk.register_znode_child_change_handler(self._child_handler_for(path))
        for path in znodes:
            self.zk.register_znode_change_handler(self._znode_handler_for(path))
        if running:
            self.scheduler.startup()
            now = int(self.clock())
            for name, due in tasks:
                if name != AUTO_LEADER_REBALANCE_TASK:
                    raise ValueError(f"unknown scheduled task {name!r}")
                self._schedule_auto_leader_rebalance_task(due - now)

    def _child_handler_for(self, path: str) -> _Handler:
        for handler in (self._broker_change_handler, self._topic_change_handler, self._isr_change_handler,
                        self._topic_deletion_handler, self._log_dir_event_notification_handler):
            if handler.path == path:
                return handler
        raise ValueError(f"no child handler for {path}")

    def _znode_handler_for(self, path: str) -> _Handler:
        if path == CONTROLLER_PATH:
            return self._controller_change_handler
        if path == PREFERRED_REPLICA_ELECTION_PATH:
            return self._preferred_replica_election_handler
        if path == REASSIGN_PARTITIONS_PATH:
            return self._partition_reassignment_handler
        if path.startswith(f"{TOPICS_PATH}/") and path.endswith("/state"):
            _, _, _, topic, _, p, _ = path.split("/")
            return self._reassignment_isr_change_handler((topic, int(p)))
        if path.startswith(f"{TOPICS_PATH}/"):
            topic = path[len(TOPICS_PATH) + 1:]
            return _Handler(path, self.event_manager.put, on_change=lambda: PartitionModifications(topic))
        if path.startswith(f"{BROKER_IDS_PATH}/"):
            b = int(path[len(BROKER_IDS_PATH) + 1:])
            return _Handler(path, self.event_manager.put, on_change=lambda: BrokerModifications(b))
        raise ValueError(f"no znode handler for {path}")

    # --- EventProcessor -----------------------------------------------------------------------
    def process(self, event) -> None:
        self.journal.set_writer(self.broker_id, self.context.epoch)
        try:
            self._dispatch[type(event)](event)
        except ControllerMovedError:
            self._log.info(f"Controller moved to another broker when processing {event!r}.")
            self.maybe_resign()
        except Exception:
            self._log.exception(f"Error processing event {event!r}")

    def preempt(self, event) -> None:
        event.preempt()

    # --- election (§4.1) -------------------------------------------------------------------------
    def _process_startup(self, event) -> None:
        self.zk.register_znode_change_handler_and_check_existence(self._controller_change_handler)
        self.elect()

    def elect(self) -> None:
        controller_id = self.zk.get_controller_id()
        self.active_controller_id = -1 if controller_id is None else controller_id
        if self.active_controller_id != -1:
            self._log.debug(f"Broker {self.active_controller_id} has been elected as the controller, so stopping "
                            f"the election process.")
            return
        try:
            epoch, epoch_zk_version = self.zk.register_controller_and_increment_controller_epoch(self.broker_id)
            self.context.epoch = epoch
            self.context.epoch_zk_version = epoch_zk_version
            self.active_controller_id = self.broker_id
            self._log.info(f"{self.broker_id} successfully elected as the controller. Epoch incremented to {epoch} "
                           f"and epoch zk version is now {epoch_zk_version}")
            self.journal.set_writer(self.broker_id, epoch)
            self.journal.emit(ControllerElected, epoch_zk_version)
            self._on_controller_failover()
        except ControllerMovedError:
            self.maybe_resign()
            if self.active_controller_id != -1:
                self._log.debug(f"Broker {self.active_controller_id} was elected as controller instead of broker "
                                f"{self.broker_id}")
            else:
                self._log.warning("A controller has been elected but just resigned, this will result in another "
                                  "round of election")
        except Exception:
            self._log.exception(f"Error while electing or becoming controller on broker {self.broker_id}. "
                                f"Trigger controller movement immediately")
            self._trigger_controller_move()

    def maybe_resign(self) -> None:
        was_active = self.is_active
        self.zk.register_znode_change_handler_and_check_existence(self._controller_change_handler)
        controller_id = self.zk.get_controller_id()
        self.active_controller_id = -1 if controller_id is None else controller_id
        if was_active and not self.is_active:
            self._on_controller_resignation()

    def _process_reelect(self) -> None:
        self.maybe_resign()
        self.elect()

    def _process_register_broker_and_reelect(self) -> None:
        if self._register_broker is not None:
            self._register_broker()
        self._process_reelect()

    def _process_expire(self) -> None:
        self.active_controller_id = -1
        self._on_controller_resignation()

    def _trigger_controller_move(self) -> None:
        controller_id = self.zk.get_controller_id()
        self.active_controller_id = -1 if controller_id is None else controller_id
        if not self.is_active:
            self._log.warning("Controller has already moved when trying to trigger controller movement")
            return
        try:
            # Read before resigning: the resignation resets the context.
            expected_epoch_zk_version = self.context.epoch_zk_version
            self.active_controller_id = -1
            self._on_controller_resignation()
            self.zk.delete_controller(expected_epoch_zk_version)
        except ControllerMovedError:
            self._log.warning("Controller has already moved when trying to trigger controller movement")

    # --- failover and resignation (§4.2) -------------------------------------------------------------
    def _on_controller_failover(self) -> None:
        self._log.info("Registering handlers")
        for handler in (self._broker_change_handler, self._topic_change_handler, self._topic_deletion_handler,
                        self._log_dir_event_notification_handler, self._isr_change_handler):
            self.zk.register_znode_child_change_handler(handler)
        self.zk.register_znode_change_handler_and_check_existence(self._preferred_replica_election_handler)
        self.zk.register_znode_change_handler_and_check_existence(self._partition_reassignment_handler)
        epoch_zk_version = self.context.epoch_zk_version
        # Kafka reads the pending notifications (re-arming the child watch) and deletes them unprocessed: the
        # LeaderAndIsr requests replicaStateMachine.startup() sends below find the offline replicas anyway.
        self._log.info("Deleting log dir event notifications")
        self.zk.delete_log_dir_event_notifications(self.zk.get_all_log_dir_event_notifications(), epoch_zk_version)
        self._log.info("Deleting isr change notifications")
        self.zk.delete_isr_change_notifications(self.zk.get_all_isr_change_notifications(), epoch_zk_version)
        self._log.info("Initializing controller context")
        self._initialize_controller_context()
        self._log.info("Fetching topic deletions in progress")
        to_delete, ineligible = self._fetch_topic_deletions_in_progress()
        self._log.info("Initializing topic deletion manager")
        self.topic_deletion_manager.init(to_delete, ineligible)
        self._emit_queued_for_deletion(to_delete)
        self._was_controller = True
        self._log.info("Sending update metadata request")
        self._send_update_metadata_request(self.context.live_or_shutting_down_broker_ids, ())
        self.replica_state_machine.startup()
        self.partition_state_machine.startup()
        self._log.info(f"Ready to serve as the new controller with epoch {self.context.epoch}")
        self._initialize_partition_reassignments()
        self.topic_deletion_manager.try_topic_deletion()
        pending = self._fetch_pending_preferred_replica_elections()
        self._on_replica_election(pending, PREFERRED, ZK_TRIGGERED)
        self._log.info("Starting the controller scheduler")
        self.scheduler.startup()
        if self.config.get_bool("auto.leader.rebalance.enable"):
            self._schedule_auto_leader_rebalance_task(5_000)

    def _fetch_topic_deletions_in_progress(self) -> tuple[list[str], list[str]]:
        ctx = self.context
        to_delete = sorted(self.zk.get_topic_deletions())
        with_offline = ctx.topics_with_offline_replicas()
        reassigning = {tp[0] for tp in ctx.partitions_being_reassigned}
        ineligible = sorted(with_offline | reassigning)
        self._log.info(f"List of topics to be deleted: {','.join(to_delete)}")
        self._log.info(f"List of topics ineligible for deletion: {','.join(ineligible)}")
        return to_delete, ineligible

    def _initialize_controller_context(self) -> None:
        ctx = self.context
        brokers = self.zk.get_all_broker_and_epochs_in_cluster()
        ctx.add_live_brokers({b: epoch for b, (_, epoch) in brokers.items()})
        for b, (info, _) in brokers.items():
            ctx.broker_info[b] = info
        self._log.info(f"Initialized broker epochs cache: {dict(sorted(ctx.live_broker_epochs.items()))}")
        topics = sorted(self.zk.get_all_topics_in_cluster(register_watch=True))
        for topic in topics:
            ctx.add_topic(topic)
            self._register_partition_modifications_handler(topic)
        self._read_assignments(topics, track_reassignments=True)
        ctx.clear_partition_leadership_info()
        ctx.shutting_down_broker_ids.clear()
        self._register_broker_modifications_handlers(sorted(ctx.live_broker_epochs))
        self._update_leader_and_isr_cache()
        self._log.info(f"Currently active brokers in the cluster: {_ids(ctx.live_broker_ids)}")
        self._log.info(f"Current list of topics in the cluster: {','.join(topics)}")
        self._emit_live_brokers()

    def _read_assignments(self, topics: list[str], track_reassignments: bool) -> list[tuple]:
        """Read the topics' assignments from the store into the context (topics already added, with no
        partitions yet); returns their partitions, by topic then partition. A topic none of whose partitions
        is being reassigned, numbered 0..n-1, goes in as columns (``get_replica_assignment_columns``): its
        code column set in one step; any other is read and loaded partition by partition."""
        ctx = self.context
        read_columns = getattr(self.zk, "get_replica_assignment_columns", None)
        if read_columns is None or not self.partition_state_machine.batch_path or not topics:
            assignments = self.zk.get_full_replica_assignment_for_topics(topics)
            self._load_assignments(assignments, track_reassignments)
            return sorted(assignments)
        columns = read_columns(topics)
        rest: list[str] = []
        whole: list[str] = []
        for topic in sorted(columns):
            c = columns[topic]
            n = len(c.partitions)
            ts = ctx.topics.get(topic)
            if (n and (ts is None or not len(ts)) and not c.adding.shape[1] and not c.removing.shape[1]
                    and int(c.partitions[-1]) == n - 1 and int(c.partitions[0]) == 0):
                whole.append(topic)
            else:
                rest.append(topic)
        for topic, codes in zip(whole, ctx.codes_of_row_sets([columns[t].replicas for t in whole])):
            ctx.set_topic_assignment_codes(topic, codes)
        if not rest and whole:   # every topic read whole: its partitions as columns, not a tuple each
            sizes = [len(columns[t].partitions) for t in whole]
            starts = np.repeat(np.cumsum([0] + sizes[:-1]), sizes)
            return PartitionRows(whole, np.repeat(np.arange(len(whole)), sizes), np.arange(sum(sizes)) - starts)
        partitions: list[tuple] = [(t, p) for t in whole for p in range(len(columns[t].partitions))]
        if rest:
            assignments = self.zk.get_full_replica_assignment_for_topics(rest)
            self._load_assignments(assignments, track_reassignments)
            partitions.extend(assignments)
            partitions.sort()
        return partitions

    def _load_assignments(self, assignments: dict, track_reassignments: bool) -> None:
        """Put the assignments read from the store into the context, partition by partition in (topic,
        partition) order; with ``track_reassignments`` the partitions being reassigned are remembered. A topic
        the context has no partitions of yet, read whole and not being reassigned, goes in at once: its code
        column set in one step (a partition without leadership info counts as balanced: nothing to adjust)."""
        ctx = self.context
        by_topic: dict[str, list] = {}
        for tp in sorted(assignments):
            by_topic.setdefault(tp[0], []).append(tp)
        for topic, tps in by_topic.items():
            ts = ctx.topics.get(topic)
            if (self.partition_state_machine.batch_path and (ts is None or not len(ts))
                    and tps[-1][1] == len(tps) - 1 and not any(assignments[tp].is_being_reassigned for tp in tps)):
                code = ctx.pool.code
                ctx.set_topic_assignment_codes(topic, np.fromiter(
                    (code(tuple(assignments[tp].replicas)) for tp in tps), dtype=np.int32, count=len(tps)))
                continue
            for tp in tps:
                assignment = assignments[tp]
                ctx.update_partition_full_replica_assignment(tp, assignment)
                if track_reassignments and assignment.is_being_reassigned:
                    ctx.partitions_being_reassigned.add(tp)

    def _on_controller_resignation(self) -> None:
        ctx = self.context
        for handler in (self._isr_change_handler, self._log_dir_event_notification_handler,
                        self._broker_change_handler, self._topic_change_handler, self._topic_deletion_handler):
            self.zk.unregister_znode_child_change_handler(handler.path)
        self.zk.unregister_znode_change_handler(REASSIGN_PARTITIONS_PATH)
        self._unregister_partition_reassignment_isr_change_handlers()
        self.topic_deletion_manager.reset()
        for topic in list(ctx.topics):
            self.zk.unregister_znode_change_handler(f"{TOPICS_PATH}/{topic}")
        for b in list(ctx.live_broker_epochs):
            self.zk.unregister_znode_change_handler(f"{BROKER_IDS_PATH}/{b}")
        self.zk.unregister_znode_change_handler(PREFERRED_REPLICA_ELECTION_PATH)
        self.scheduler.shutdown()
        self.partition_state_machine.shutdown()
        self.replica_state_machine.shutdown()
        if self._was_controller:
            self._was_controller = False
            self.journal.set_writer(self.broker_id, ctx.epoch)
            self.journal.emit(ControllerResigned)
        ctx.reset_context()
        self._log.info("Resigned")

    # --- broker changes (§4.3, §4.4) -----------------------------------------------------------------
    def _process_broker_change(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        current = self.zk.get_all_broker_and_epochs_in_cluster()
        current_ids = set(current)
        known = ctx.live_or_shutting_down_broker_ids
        new = sorted(current_ids - known)
        dead = sorted(known - current_ids)
        bounced = sorted(b for b in current_ids & known if current[b][1] > ctx.live_broker_epochs[b])
        self._log.info(f"Newly added brokers: {_ids(new)}, deleted brokers: {_ids(dead)}, bounced brokers: "
                       f"{_ids(bounced)}, all live brokers: {_ids(current_ids)}")
        if new:
            ctx.add_live_brokers({b: current[b][1] for b in new})
            for b in new:
                ctx.broker_info[b] = current[b][0]
            self._on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            self._on_broker_failure(bounced)
            ctx.add_live_brokers({b: current[b][1] for b in bounced})
            for b in bounced:
                ctx.broker_info[b] = current[b][0]
            self._on_broker_startup(bounced)
        if dead:
            ctx.remove_live_brokers(dead)
            for b in dead:
                ctx.broker_info.pop(b, None)
            self._on_broker_failure(dead)
        if new or bounced or dead:
            self._log.info(f"Updated broker epochs cache: {dict(sorted(ctx.live_broker_epochs.items()))}")
            self._emit_live_brokers()

    # --- log directory failures (§3: LogDirEventNotification, LeaderAndIsrResponseReceived) ---------------
    def _process_log_dir_event_notification(self) -> None:
        """Kafka's processLogDirEventNotification: the brokers named by the notifications, then delete them."""
        if not self.is_active:
            return
        sequence_numbers = self.zk.get_all_log_dir_event_notifications()
        try:
            self._on_broker_log_dir_failure(self.zk.get_broker_ids_from_log_dir_events(sequence_numbers))
        finally:
            self.zk.delete_log_dir_event_notifications(sequence_numbers, self.context.epoch_zk_version)

    def _on_broker_log_dir_failure(self, broker_ids: list[int]) -> None:
        """Kafka's onBrokerLogDirFailure: LeaderAndIsr for every replica on those brokers (OnlineReplica); the
        replicas on an offline log directory answer KAFKA_STORAGE_ERROR (LeaderAndIsrResponseReceived)."""
        self._log.info(f"Handling log directory failure for brokers {','.join(map(str, broker_ids))}")
        self.replica_state_machine.handle_state_changes(self.context.replicas_on_brokers(set(broker_ids)),
                                                        ONLINE_REPLICA)

    def _on_leader_and_isr_response(self, broker_id: int, error: str, partition_errors: dict) -> None:
        """A LeaderAndIsr response (the request batches' callback): queue it as Kafka does."""
        self.event_manager.put(LeaderAndIsrResponseReceived(broker_id, error, partition_errors))

    def _process_leader_and_isr_response_received(self, event: LeaderAndIsrResponseReceived) -> None:
        """Kafka's processLeaderAndIsrResponseReceived: KAFKA_STORAGE_ERROR partitions are on an offline log
        directory of the broker, NONE ones are not; the newly offline replicas go offline."""
        if not self.is_active:
            return
        broker_id = event.broker_id
        if event.error != NONE:
            self._log.error(f"Received error {event.error} in LeaderAndIsr response from broker {broker_id}")
            return
        ctx = self.context
        errors = event.partition_errors
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        if not previous and KAFKA_STORAGE_ERROR not in errors.values():
            return  # nothing offline before or now: nothing changes (the common case, checked cheaply)
        if self.config.leader_and_isr_topic_ids:
            # v5+ responses name topics by id: those the controller no longer has an id for are dropped.
            topics = ctx.topics
            errors = {tp: e for tp, e in errors.items() if tp[0] in topics}
        offline = {tp for tp, e in errors.items() if e == KAFKA_STORAGE_ERROR}
        online = {tp for tp, e in errors.items() if e == NONE}
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(broker_id, None)
        new_offline = sorted(current - previous)
        if new_offline:
            self._log.info(f"Mark replicas {_tps(new_offline)} on broker {broker_id} as offline")
            self.on_replicas_become_offline([(t, p, broker_id) for t, p in new_offline])

    def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.context
        self._log.info(f"New broker startup callback for {_ids(new_brokers)}")
        for b in new_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        new_set = set(new_brokers)
        existing = ctx.live_or_shutting_down_broker_ids - new_set
        self._send_update_metadata_request(existing, ())
        self._send_update_metadata_for_all_partitions(new_set)
        replicas = ctx.replicas_on_brokers(new_set)
        self.replica_state_machine.handle_state_changes(replicas, ONLINE_REPLICA)
        self.partition_state_machine.trigger_online_partition_state_change()
        self._maybe_resume_reassignments(lambda tp, a: any(r in new_set for r in a.target_replicas))
        for_deletion = sorted({r[0] for r in replicas if self.topic_deletion_manager.is_topic_queued_up_for_deletion(r[0])})
        if for_deletion:
            self._log.info(f"Some replicas {','.join(f'[Topic={t},Partition={p},Replica={b}]' for t, p, b in replicas if t in for_deletion)} "
                           f"for topics scheduled for deletion {','.join(for_deletion)} are on the newly restarted brokers "
                           f"{_ids(new_brokers)}. Signaling restart of topic deletion for these topics")
            self.topic_deletion_manager.resume_deletion_for_topics(for_deletion)
        self._register_broker_modifications_handlers(new_brokers)

    def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        ctx = self.context
        self._log.info(f"Broker failure callback for {_ids(dead_brokers)}")
        for b in dead_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        stopped = [b for b in dead_brokers if b in ctx.shutting_down_broker_ids]
        ctx.shutting_down_broker_ids.difference_update(dead_brokers)
        if stopped:
            self._log.info(f"Removed {_ids(stopped)} from list of shutting down brokers.")
        self.on_replicas_become_offline(ctx.replica_rows_on_brokers(dead_brokers))
        for b in dead_brokers:
            self.zk.unregister_znode_change_handler(f"{BROKER_IDS_PATH}/{b}")

    def on_replicas_become_offline(self, new_offline_replicas: list[tuple]) -> None:
        """Kafka's onReplicasBecomeOffline (§4.4): elections first, then the replicas go offline."""
        ctx = self.context
        if ctx.topics_to_be_deleted:
            for_deletion = [r for r in new_offline_replicas if ctx.is_topic_queued_up_for_deletion(r[0])]
            not_for_deletion = [r for r in new_offline_replicas if not ctx.is_topic_queued_up_for_deletion(r[0])]
        else:
            for_deletion, not_for_deletion = [], new_offline_replicas
        self.partition_state_machine.handle_state_changes(ctx.partitions_with_offline_leader(), OFFLINE_PARTITION)
        results = self.partition_state_machine.trigger_online_partition_state_change()
        self.replica_state_machine.handle_state_changes(not_for_deletion, OFFLINE_REPLICA)
        if for_deletion:
            self._fail_replica_deletion(for_deletion)
        if not not_for_deletion and all(isinstance(r, Exception) for r in results.values()):
            self._send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, ())

    def _fail_replica_deletion(self, replicas: list[tuple]) -> None:
        self.topic_deletion_manager.fail_replica_deletion(replicas)

    def _process_broker_modification(self, broker_id: int) -> None:
        if not self.is_active:
            return
        new = self.zk.get_broker(broker_id)
        old = self.context.broker_info.get(broker_id)
        if new is not None and old is not None and _endpoints(new) != _endpoints(old):
            self._log.info(f"Updated broker metadata: {old} -> {new}")
            self.context.broker_info[broker_id] = new
            self._log.info(f"Broker info update callback for {broker_id}")
            self._send_update_metadata_request(self.context.live_or_shutting_down_broker_ids, ())

    def _emit_live_brokers(self) -> None:
        ctx = self.context
        self.journal.emit(LiveBrokersChanged, tuple(sorted(ctx.live_broker_epochs.items())),
                          tuple(sorted(ctx.shutting_down_broker_ids)))

    # --- controlled shutdown (§4.6) ---------------------------------------------------------------------
    def _process_controlled_shutdown(self, event: ControlledShutdown) -> None:
        """Kafka's processControlledShutdown: any failure, a fenced write included, becomes the response's
        error (Kafka wraps doControlledShutdown in a Try, so a ControllerMovedException does not resign here)."""
        remaining: list[tuple] = []
        try:
            remaining = self._do_controlled_shutdown(event.broker_id, event.broker_epoch)
            error = NONE
        except _ControlledShutdownError as e:
            error = e.code
        except ControllerMovedError:
            error = NOT_CONTROLLER
        except Exception:
            self._log.exception(f"Error processing controlled shutdown of broker {event.broker_id}")
            error = UNKNOWN_SERVER_ERROR
        remaining_tps = tuple(sorted(remaining))
        self.journal.emit(ControlledShutdownResponded, event.broker_id, event.broker_epoch, error, remaining_tps)
        event.callback(error, remaining_tps)

    def _do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple]:
        if not self.is_active:
            raise ControllerMovedError("Controller moved to another broker. Aborting controlled shutdown")
        ctx = self.context
        if broker_epoch != -1:  # AbstractControlRequest.UNKNOWN_BROKER_EPOCH: pre-KIP-380 brokers
            cached = ctx.live_broker_epochs.get(broker_id)
            if cached is None:
                # liveBrokerIdAndEpochs(id) throws NoSuchElementException in Kafka.
                raise KeyError(f"key not found: {broker_id}")
            if broker_epoch < cached:
                msg = (f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                       f"{broker_id}. Current broker epoch is {cached}.")
                self._log.info(msg)
                raise _ControlledShutdownError(STALE_BROKER_EPOCH, msg)
        self._log.info(f"Shutting down broker {broker_id}")
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            raise _ControlledShutdownError(BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist.")
        ctx.shutting_down_broker_ids.add(broker_id)
        self._log.debug(f"All shutting down brokers: {_ids(ctx.shutting_down_broker_ids)}")
        self._log.debug(f"Live brokers: {_ids(ctx.live_broker_ids)}")
        # The broker's partitions with more than one replica and leadership info, of topics not being deleted,
        # in (topic, partition) order: those it leads move their leaders, those it follows lose it.
        led: list[tuple] = []
        followed_by_topic: list[tuple] = []   # (topic columns, partition indexes)
        hosts = ctx.pool.contains_any((broker_id,))
        several = ctx.pool.lengths() > 1
        for topic in sorted(ctx.topics):
            if ctx.is_topic_queued_up_for_deletion(topic):
                continue
            ts = ctx.topics[topic]
            codes = view_i32(ts.rcode)
            leader = view_i32(ts.leader)
            parts = np.flatnonzero(hosts[codes] & several[codes] & (view_i32(ts.leader_epoch) != NO_EPOCH))
            if not len(parts):
                continue
            leads = leader[parts] == broker_id
            led.extend(zip([topic] * int(leads.sum()), parts[leads].tolist()))
            if not leads.all():
                followed_by_topic.append((ts, parts[~leads]))
        self.partition_state_machine.handle_state_changes(led, ONLINE_PARTITION,
                                                          ControlledShutdownPartitionLeaderElectionStrategy())
        batch = self.request_batch
        batch.new_batch()
        for ts, parts in followed_by_topic:
            batch.add_stop_replica_columns(broker_id, ts, parts, False)
        batch.send_requests_to_brokers(ctx.epoch)
        names = [ts.name for ts, _ in followed_by_topic]
        followed = ReplicaRows(
            names, np.repeat(np.arange(len(names), dtype=np.int32), [len(p) for _, p in followed_by_topic]),
            np.concatenate([p for _, p in followed_by_topic] or [np.zeros(0, dtype=np.int64)]),
            np.full(sum(len(p) for _, p in followed_by_topic), broker_id, dtype=np.int32))
        self.replica_state_machine.handle_state_changes(followed, OFFLINE_REPLICA)
        self._emit_live_brokers()
        return ctx.partition_leaders_on_broker(broker_id)

    # --- preferred and unclean leader elections (§4.7) ------------------------------------------------
    def _fetch_pending_preferred_replica_elections(self) -> list[tuple]:
        ctx = self.context
        undergoing = self.zk.get_preferred_replica_election()
        completed = []
        for tp in undergoing:
            replicas = ctx.partition_replica_assignment(tp)
            if not replicas or ctx.partition_leader(tp) == replicas[0]:
                completed.append(tp)
        pending_ignoring_deletion = [tp for tp in undergoing if tp not in completed]
        skipped = [tp for tp in pending_ignoring_deletion if ctx.is_topic_queued_up_for_deletion(tp[0])]
        pending = [tp for tp in pending_ignoring_deletion if tp not in skipped]
        self._log.info(f"Partitions undergoing preferred replica election: {_tps(undergoing)}")
        self._log.info(f"Partitions that completed preferred replica election: {_tps(completed)}")
        self._log.info(f"Skipping preferred replica election for partitions due to topic deletion: {_tps(skipped)}")
        self._log.info(f"Resuming preferred replica election for partitions: {_tps(pending)}")
        return pending

    def _on_replica_election(self, partitions: list[tuple], election_type: int, trigger: str) -> dict:
        """Kafka's onReplicaElection: tp -> new LeaderAndIsr, or the exception of a failed election."""
        self._log.info(f"Starting replica leader election ({ELECTION_TYPE_NAMES[election_type]}) for partitions "
                       f"{_tps(partitions)} triggered by {trigger}")
        try:
            strategy = (PreferredReplicaPartitionLeaderElectionStrategy() if election_type == PREFERRED
                        # Unclean only when an admin asked for it.
                        else OfflinePartitionLeaderElectionStrategy(trigger == ADMIN_CLIENT_TRIGGERED))
            results = self.partition_state_machine.handle_state_changes(partitions, ONLINE_PARTITION, strategy)
            if trigger != ADMIN_CLIENT_TRIGGERED:
                for tp, res in results.items():
                    if isinstance(res, Exception):
                        self._log.error(f"Error completing replica leader election "
                                        f"({ELECTION_TYPE_NAMES[election_type]}) for partition {TopicPartition(*tp)}",
                                        error=f"{type(res).__name__}: {res}")
            return results
        finally:
            if trigger != ADMIN_CLIENT_TRIGGERED:
                self._remove_partitions_from_preferred_replica_election(partitions, trigger == AUTO_TRIGGERED)

    def _remove_partitions_from_preferred_replica_election(self, partitions: list[tuple], auto: bool) -> None:
        ctx = self.context
        for tp in partitions:
            leader = ctx.partition_leader(tp)
            preferred = ctx.partition_replica_assignment(tp)[0]
            if leader == preferred:
                self._log.info(f"Partition {TopicPartition(*tp)} completed preferred replica leader election. "
                               f"New leader is {preferred}")
            else:
                self._log.warning(f"Partition {TopicPartition(*tp)} failed to complete preferred replica leader "
                                  f"election to {preferred}. Leader is still {leader}")
        if not auto:
            self.zk.delete_preferred_replica_election(ctx.epoch_zk_version)
            # Detect future elections through the znode.
            self.event_manager.put(ReplicaLeaderElection(None, PREFERRED, ZK_TRIGGERED))

    def _process_replica_leader_election(self, event: ReplicaLeaderElection) -> None:
        admin = event.trigger == ADMIN_CLIENT_TRIGGERED
        if not self.is_active:
            if admin:
                self._respond_to_election(event, NOT_CONTROLLER, {tp: (NOT_CONTROLLER, -1) for tp in event.partitions})
            return
        # Registering the watch also tells whether the znode exists.
        if not admin and not self.zk.register_znode_change_handler_and_check_existence(
                self._preferred_replica_election_handler):
            return
        ctx = self.context
        partitions = event.partitions if event.partitions is not None else self.zk.get_preferred_replica_election()
        kind = ELECTION_TYPE_NAMES[event.election_type]
        known = [tp for tp in partitions if ctx.partition_replica_assignment(tp)]
        unknown = [tp for tp in partitions if not ctx.partition_replica_assignment(tp)]
        for tp in unknown:
            self._log.info(f"Skipping replica leader election ({kind}) for partition {TopicPartition(*tp)} by "
                           f"{event.trigger} since it doesn't exist.")
        being_deleted = [tp for tp in known if ctx.is_topic_queued_up_for_deletion(tp[0])]
        live_partitions = [tp for tp in known if not ctx.is_topic_queued_up_for_deletion(tp[0])]
        if being_deleted:
            self._log.warning(f"Skipping replica leader election ({kind}) for partitions {_tps(being_deleted)} by "
                              f"{event.trigger} since the respective topics are being deleted")
        live = ctx.live_broker_ids
        electable, already_valid = [], []
        for tp in live_partitions:
            leader = ctx.partition_leader(tp)
            if event.election_type == PREFERRED:
                needed = leader != ctx.partition_replica_assignment(tp)[0]
            else:
                needed = leader == -1 or leader not in live
            (electable if needed else already_valid).append(tp)
        results: dict = {}
        # Kafka answers a leader only for a successful election (Right(leader)); errors carry none.
        for tp, res in self._on_replica_election(electable, event.election_type, event.trigger).items():
            if isinstance(res, StateChangeFailedError):
                results[tp] = (PREFERRED_LEADER_NOT_AVAILABLE if event.election_type == PREFERRED
                               else ELIGIBLE_LEADERS_NOT_AVAILABLE, -1)
            elif isinstance(res, Exception):
                results[tp] = (getattr(res, "code", UNKNOWN_SERVER_ERROR), -1)
            else:
                results[tp] = (NONE, res.leader)
        for tp in already_valid:
            results[tp] = (ELECTION_NOT_NEEDED, -1)
        for tp in being_deleted:
            results[tp] = (INVALID_TOPIC_EXCEPTION, -1)
        for tp in unknown:
            results[tp] = (UNKNOWN_TOPIC_OR_PARTITION, -1)
        if admin:
            self._respond_to_election(event, NONE, results)

    def _respond_to_election(self, event: ReplicaLeaderElection, error: str, results: dict) -> None:
        body = tuple((t, p, err, leader) for (t, p), (err, leader) in sorted(results.items()))
        self.journal.emit(LeaderElectionResponded, event.election_type, error, body)
        if event.callback is not None:
            event.callback(dict(sorted(results.items())))

    def _schedule_auto_leader_rebalance_task(self, delay_ms: int) -> None:
        self.scheduler.schedule_once(AUTO_LEADER_REBALANCE_TASK,
                                     lambda: self.event_manager.put(AutoPreferredReplicaLeaderElection()), delay_ms)

    def _process_auto_preferred_replica_leader_election(self) -> None:
        if not self.is_active:
            return
        try:
            self._log.info("Processing automatic preferred replica leader election")
            self._check_and_trigger_auto_leader_rebalance()
        finally:
            self._schedule_auto_leader_rebalance_task(
                1000 * self.config.get_int("leader.imbalance.check.interval.seconds"))

    def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """Per preferred broker: when more than ``leader.imbalance.per.broker.percentage`` of the partitions
        it should lead are led elsewhere, elect the preferred leader where it can lead."""
        ctx = self.context
        if ctx.preferred_replica_imbalance_count == 0:
            # No partition that could take its preferred leader leads elsewhere: no broker can have
            # a candidate, so Kafka's scan would elect nothing. Skip it (it reads every partition).
            self._log.debug("No partition has a preferred replica that could lead it and does not")
            return
        # Kafka groups every partition of the topics not queued for deletion by its preferred replica (the
        # first of its assignment); per broker, in broker order, the partitions it should lead that have
        # leadership info and another leader. As arrays per topic, in the context's topic and partition order.
        matrix = ctx.pool.matrix()
        pieces = []
        for topic, ts in ctx.topics.items():
            if not len(ts) or ctx.is_topic_queued_up_for_deletion(topic):
                continue
            preferred = matrix[view_i32(ts.rcode), 0]
            assigned = preferred >= 0
            elsewhere = assigned & (view_i32(ts.leader_epoch) != NO_EPOCH) & (view_i32(ts.leader) != preferred)
            pieces.append((topic, preferred, assigned, elsewhere))
        if not pieces:
            return
        every = np.concatenate([p[1][p[2]] for p in pieces]).astype(np.int64)
        moved = np.concatenate([p[1][p[3]] for p in pieces]).astype(np.int64)
        if not len(every):
            return
        totals = np.bincount(every)
        not_preferred = np.bincount(moved, minlength=len(totals))
        threshold = self.config.get_int("leader.imbalance.per.broker.percentage") / 100
        for broker in np.flatnonzero(totals).tolist():
            ratio = int(not_preferred[broker]) / int(totals[broker])
            self._log.debug(f"Leader imbalance ratio for broker {broker} is {ratio}")
            if ratio > threshold:
                candidates = [(topic, p) for topic, preferred, _, elsewhere in pieces
                              for p in np.flatnonzero(elsewhere & (preferred == broker)).tolist()
                              if topic in ctx.topics and self._can_preferred_replica_be_leader((topic, p))]
                self._on_replica_election(candidates, PREFERRED, AUTO_TRIGGERED)

    def _can_preferred_replica_be_leader(self, tp: tuple) -> bool:
        ctx = self.context
        assignment = ctx.partition_replica_assignment(tp)
        live = [r for r in assignment if ctx.is_replica_online(r, tp)]
        isr = ctx.partition_leadership_info(tp).leader_and_isr.isr
        return election.preferred_replica_leader(assignment, isr, live) is not None

    # --- topic deletion (§5) ----------------------------------------------------------------------------
    def _process_topic_deletion(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        to_delete = set(self.zk.get_topic_deletions())
        self._log.debug(f"Delete topics listener fired for topics {','.join(sorted(to_delete))} to be deleted")
        non_existent = sorted(to_delete - ctx.all_topics)
        if non_existent:
            self._log.warning(f"Ignoring request to delete non-existing topics {','.join(non_existent)}")
            self.zk.delete_topic_deletions(non_existent, ctx.epoch_zk_version)
        to_delete = sorted(to_delete - set(non_existent))
        if self.config.get_bool("delete.topic.enable"):
            if to_delete:
                self._log.info(f"Starting topic deletion for topics {','.join(to_delete)}")
                reassigning = {tp[0] for tp in ctx.partitions_being_reassigned}
                for topic in to_delete:
                    if topic in reassigning:
                        self.topic_deletion_manager.mark_topic_ineligible_for_deletion([topic], REASSIGNMENT_IN_PROGRESS)
                self._emit_queued_for_deletion(to_delete)
                self.topic_deletion_manager.enqueue_topics_for_deletion(to_delete)
        else:
            self._log.info(f"Removing {set(to_delete)} since delete topic is disabled")
            self.zk.delete_topic_deletions(to_delete, ctx.epoch_zk_version)

    def _emit_queued_for_deletion(self, topics: Iterable[str]) -> None:
        if self.topic_deletion_manager.is_delete_topic_enabled:
            for topic in sorted(topics):
                self.journal.emit(TopicQueuedForDeletion, topic)

    def _on_topic_deletion_stop_replica_response(self, broker_id: int, request_error: str, errors: dict) -> None:
        """A StopReplica(delete=true) response (the request batch's callback): queue it as Kafka does."""
        self.event_manager.put(TopicDeletionStopReplicaResponseReceived(broker_id, request_error, errors))

    def _process_topic_deletion_stop_replica_response_received(
            self, event: TopicDeletionStopReplicaResponseReceived) -> None:
        if not self.is_active:
            return
        self._log.debug(f"Delete topic callback invoked on StopReplica response received from broker "
                        f"{event.replica_id}: request error = {event.request_error}, partition errors = "
                        f"{event.partition_errors}")
        errors = event.partition_errors
        in_error = sorted(errors) if event.request_error != NONE else sorted(tp for tp, e in errors.items() if e != NONE)
        self.topic_deletion_manager.fail_replica_deletion([(t, p, event.replica_id) for t, p in in_error])
        if len(in_error) != len(errors):
            deleted = sorted(set(errors) - set(in_error))
            self.topic_deletion_manager.complete_replica_deletion([(t, p, event.replica_id) for t, p in deleted])

    # --- reassignment store watches -------------------------------------------------------------------
    def _reassignment_isr_change_handler(self, tp: tuple) -> _Handler:
        return _Handler(topic_partition_state_path(tp), self.event_manager.put,
                        on_change=lambda: PartitionReassignmentIsrChange(tp))

    # --- topics (§4.5) --------------------------------------------------------------------------------
    def _process_topic_change(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        topics = self.zk.get_all_topics_in_cluster(register_watch=True)
        new_topics = sorted(set(topics) - ctx.all_topics)
        deleted_topics = sorted(ctx.all_topics - set(topics))
        for topic in new_topics:
            self._register_partition_modifications_handler(topic)
        for topic in deleted_topics:
            ctx.remove_topic(topic)
        for topic in new_topics:
            ctx.add_topic(topic)
        added = self._read_assignments(new_topics, track_reassignments=False)
        self._log.info(f"New topics: [{set(new_topics)}], deleted topics: [{set(deleted_topics)}], new partition "
                       f"replica assignment [{len(added)} partitions]")
        if added:
            self.on_new_partition_creation(added)

    def _process_partition_modifications(self, topic: str) -> None:
        if not self.is_active:
            return
        ctx = self.context
        assignment = self.zk.get_full_replica_assignment_for_topics([topic])
        to_add = {tp: a for tp, a in sorted(assignment.items()) if not ctx.partition_replica_assignment(tp)}
        if ctx.is_topic_queued_up_for_deletion(topic):
            if to_add:
                self._log.warning(f"Skipping adding partitions {_tps(to_add)} for topic {topic} since it is "
                                  f"currently being deleted")
                existing = {tp: ctx.partition_full_replica_assignment(tp) for tp in assignment if tp not in to_add}
                self.zk.set_topic_assignment(topic, self._topic_id(topic), existing,
                                             ctx.epoch_zk_version)
            return
        if to_add:
            self._log.info(f"New partitions to be added {_tps(to_add)}")
            for tp, a in to_add.items():
                ctx.update_partition_full_replica_assignment(tp, a)
            self.on_new_partition_creation(list(to_add))

    def on_new_partition_creation(self, partitions: list[tuple]) -> None:
        """NewPartition, NewReplica, then OnlinePartition (leader init) and OnlineReplica (§4.5)."""
        ctx = self.context
        if self._log.is_enabled_for(logging.INFO):
            self._log.info(f"New partition creation callback for {_tps(partitions)}")
        psm, rsm = self.partition_state_machine, self.replica_state_machine
        psm.handle_state_changes(partitions, NEW_PARTITION)
        rsm.handle_state_changes(ctx.replicas_for_partition(partitions), NEW_REPLICA)
        psm.handle_state_changes(partitions, ONLINE_PARTITION, OfflinePartitionLeaderElectionStrategy(False))
        rsm.handle_state_changes(ctx.replicas_for_partition(partitions), ONLINE_REPLICA)

    def _register_partition_modifications_handler(self, topic: str) -> None:
        self.zk.register_znode_change_handler(self._znode_handler_for(f"{TOPICS_PATH}/{topic}"))

    def _register_broker_modifications_handlers(self, brokers: Iterable[int]) -> None:
        for b in brokers:
            self.zk.register_znode_change_handler_and_check_existence(self._znode_handler_for(f"{BROKER_IDS_PATH}/{b}"))

    # --- ISR changes (§4.9) -----------------------------------------------------------------------------
    def _process_isr_change_notification(self) -> None:
        if not self.is_active:
            return
        names = self.zk.get_all_isr_change_notifications()
        try:
            partitions = self.zk.get_partitions_from_isr_change_notifications(names)
            if partitions:
                self._update_leader_and_isr_cache(partitions, reason=UPDATE_ISR_NOTIFICATION)
                self._send_update_metadata_request(self.context.live_or_shutting_down_broker_ids, partitions)
                for tp in partitions:
                    if tp in self.context.partitions_being_reassigned:
                        self._maybe_complete_reassignment(tp)
        finally:
            self.zk.delete_isr_change_notifications(names, self.context.epoch_zk_version)

    def _process_alter_partition(self, event: AlterPartitionReceived) -> None:
        """Kafka's processAlterPartition: any error, a fenced write included, answers UNKNOWN_SERVER_ERROR."""
        try:
            self._try_process_alter_partition(event)
        except Exception:
            self._log.exception(f"Error when processing AlterPartition: {event!r}")
            event.callback(AlterPartitionResponse(UNKNOWN_SERVER_ERROR, {}))

    def _try_process_alter_partition(self, event: AlterPartitionReceived) -> None:
        """Kafka's tryProcessAlterPartition: accept or refuse each proposed ISR, write, respond."""
        if not self.is_active:
            event.callback(AlterPartitionResponse(NOT_CONTROLLER, {}))
            return
        ctx = self.context
        cached_epoch = ctx.live_broker_epochs.get(event.broker_id)
        if cached_epoch is None or cached_epoch != event.broker_epoch:
            self._log.info(f"Ignoring AlterPartition due to {'unknown broker' if cached_epoch is None else 'stale broker epoch'} "
                           f"{event.broker_id}")
            event.callback(AlterPartitionResponse(STALE_BROKER_EPOCH, {}))
            return
        responses: dict = {}
        adjusted: dict = {}
        live = ctx.live_broker_ids
        for tp, proposed in sorted(event.partitions.items()):
            if proposed.recovery_state not in (RECOVERED, RECOVERING):
                # LeaderRecoveryState.of(value) throws in Kafka, failing the whole request.
                raise ValueError(f"Unknown leader recovery state {proposed.recovery_state} for {TopicPartition(*tp)}")
            info = ctx.partition_leadership_info(tp)
            if info is None:
                responses[tp] = UNKNOWN_TOPIC_OR_PARTITION
                continue
            cur = info.leader_and_isr
            if proposed.partition_epoch > cur.partition_epoch or proposed.leader_epoch > cur.leader_epoch:
                responses[tp] = NOT_CONTROLLER
            elif proposed.leader_epoch < cur.leader_epoch:
                responses[tp] = FENCED_LEADER_EPOCH
            elif (proposed.leader, proposed.leader_epoch, tuple(proposed.isr), proposed.recovery_state) == (
                    cur.leader, cur.leader_epoch, tuple(cur.isr), cur.recovery_state):
                responses[tp] = cur
            elif proposed.partition_epoch < cur.partition_epoch:
                responses[tp] = INVALID_UPDATE_VERSION
            elif proposed.recovery_state == RECOVERING and len(proposed.isr) > 1:
                responses[tp] = INVALID_REQUEST
            elif cur.recovery_state == RECOVERED and proposed.recovery_state == RECOVERING:
                responses[tp] = INVALID_REQUEST
            elif set(proposed.isr) - live:
                responses[tp] = INELIGIBLE_REPLICA
            else:
                adjusted[tp] = proposed
        successful = []
        if adjusted:
            result = self.zk.update_leader_and_isr(adjusted, ctx.epoch, ctx.epoch_zk_version)
            for tp, res in result.finished.items():
                if isinstance(res, Exception):
                    responses[tp] = getattr(res, "code", type(res).__name__)
                else:
                    responses[tp] = res
                    successful.append(tp)
            for tp in result.to_retry:
                self._log.info(f"Failed to update ISR to {adjusted[tp]} for partition {TopicPartition(*tp)}, "
                               f"bad ZK version.")
                responses[tp] = INVALID_UPDATE_VERSION
        self._update_leader_and_isr_cache(sorted(successful), reason=UPDATE_ALTER_PARTITION)
        self._send_update_metadata_request(ctx.live_or_shutting_down_broker_ids, sorted(event.partitions))
        event.callback(AlterPartitionResponse("NONE", dict(sorted(responses.items()))))
        # After answering: a successful ISR expansion may complete a reassignment.
        for tp, res in sorted(responses.items()):
            if tp in ctx.partitions_being_reassigned and not isinstance(res, str):
                self._maybe_complete_reassignment(tp)

    def _update_leader_and_isr_cache(self, partitions: list[tuple] | None = None, reason: int | None = None) -> None:
        """Read ``/state`` of the partitions (all if None) into the context. With ``reason``, record each
        partition whose leader/ISR changed as a LeaderAndIsrUpdated."""
        ctx = self.context
        if partitions is None and reason is None and self.partition_state_machine.batch_path:
            # Every partition, topic by topic, as columns (the same reads, no object per partition; the ISRs'
            # pool codes in one pass).
            read = []
            for topic, ts in ctx.topics.items():
                if not len(ts):
                    continue
                parts = np.arange(len(ts))
                r = self.zk.read_partition_state_columns(topic, parts)
                ok = r.exists
                if ok.all():
                    read.append((ts, parts, r, slice(None)))   # (no copies of the columns)
                elif ok.any():
                    read.append((ts, parts, r, ok))
            isr_codes = ctx.codes_of_row_sets([r.isr[ok] for _, _, r, ok in read])
            for (ts, parts, r, ok), codes in zip(read, isr_codes):
                ctx.put_leadership_arrays(ts, parts[ok], r.leader[ok], r.leader_epoch[ok], codes, r.recovery[ok],
                                          r.version[ok], r.controller_epoch[ok])
            return
        if partitions is None:
            partitions = list(ctx.all_partitions())
        if not partitions:
            return
        if (self.partition_state_machine.batch_path and len(partitions) >= partition_batch.BATCH_MIN
                and self._update_leader_and_isr_cache_columns(partitions, reason)):
            return
        states = self.zk.get_topic_partition_states(partitions)
        for tp in partitions:
            info = states.get(tp)
            if info is None:
                continue
            if reason is not None and ctx.partition_leadership_info(tp) != info:
                lai = info.leader_and_isr
                self.journal.emit(LeaderAndIsrUpdated, tp[0], tp[1], lai.leader, lai.leader_epoch, tuple(lai.isr),
                                  lai.partition_epoch, lai.recovery_state, reason, -1)
            ctx.put_partition_leadership_info(tp, info)

    def _topic_runs(self, partitions: list[tuple]) -> list[tuple] | None:
        """``partitions`` as [(topic columns, ascending partition indexes)], one entry per run of one topic, in
        order; None unless each topic is in the context and makes one run of distinct ascending partitions
        that all exist (the per-partition code then runs)."""
        topics = self.context.topics
        runs = []
        seen = set()
        for topic, start, end in key_topic_runs(partitions):
            ts = topics.get(topic)
            if ts is None or topic in seen:
                return None
            parts = np.fromiter((tp[1] for tp in partitions[start:end]), dtype=np.int64, count=end - start)
            if int(parts[0]) < 0 or int(parts[-1]) >= len(ts.rcode) or (
                    len(parts) > 1 and not (parts[1:] > parts[:-1]).all()):
                return None
            seen.add(topic)
            runs.append((ts, parts))
        return runs

    def _update_leader_and_isr_cache_columns(self, partitions: list[tuple], reason: int | None) -> bool:
        """``_update_leader_and_isr_cache(partitions, reason)`` for partitions sorted by topic (each topic one
        run) as columns: each topic's ``/state`` znodes read in one batch, the changed ones recorded in one
        LeaderAndIsrUpdated batch (in partition order, as the per-partition loop records them), every one read
        put in the context. False (nothing done) for a topic not in the context, or a partition beyond its
        topic or listed twice: the per-partition loop then runs."""
        ctx = self.context
        runs = self._topic_runs(partitions)
        if runs is None:
            return False
        read = []
        for ts, parts in runs:
            r = self.zk.read_partition_state_columns(ts.name, parts)
            ok = r.exists
            if not ok.all():
                parts = parts[ok]
                r = type(r)(*(c[ok] for c in r))
            read.append((ts, parts, r))
        codes = ctx.codes_of_row_sets([r.isr for _, _, r in read])
        changed = []
        for (ts, parts, r), icodes in zip(read, codes):
            if reason is not None:
                c_epoch, leader, leader_epoch, icode, partition_epoch, recovery = ctx.leadership_arrays(ts, parts)
                diff = ((leader_epoch == NO_EPOCH) | (leader != r.leader) | (leader_epoch != r.leader_epoch)
                        | (icode != icodes) | (recovery != r.recovery) | (partition_epoch != r.version)
                        | (c_epoch != r.controller_epoch))
                if diff.any():
                    changed.append((ts, parts[diff], r, diff))
            ctx.put_leadership_arrays(ts, parts, r.leader, r.leader_epoch, icodes, r.recovery, r.version,
                                      r.controller_epoch)
        if changed:
            width = max(r.isr.shape[1] for _, _, r, _ in changed)
            m = sum(len(sel) for _, sel, _, _ in changed)
            self.journal.emit_columns(
                LeaderAndIsrUpdated, topic=partition_batch.topic_column([(ts, sel) for ts, sel, _, _ in changed]),
                partition=np.concatenate([sel for _, sel, _, _ in changed]),
                leader=np.concatenate([r.leader[d] for _, _, r, d in changed]),
                leader_epoch=np.concatenate([r.leader_epoch[d] for _, _, r, d in changed]),
                isr=partition_batch.list_column(np.concatenate([partition_batch.pad_rows(r.isr[d], width)
                                                                for _, _, r, d in changed])),
                partition_epoch=np.concatenate([r.version[d] for _, _, r, d in changed]),
                recovery_state=np.concatenate([r.recovery[d] for _, _, r, d in changed]),
                reason=np.full(m, reason, dtype=np.int32), replica=np.full(m, -1, dtype=np.int32))
        return True

    # --- unclean leader election configs (§4.10) --------------------------------------------------------
    def _process_unclean_leader_election_enable(self) -> None:
        if not self.is_active:
            return
        self._log.info("Unclean leader election has been enabled by default")
        self.partition_state_machine.trigger_online_partition_state_change()

    def _process_topic_unclean_leader_election_enable(self, topic: str) -> None:
        if not self.is_active:
            return
        self._log.info(f"Unclean leader election has been enabled for topic {topic}")
        self.partition_state_machine.trigger_online_partition_state_change(topic)

    def _topic_id(self, topic: str) -> str | None:
        """Kafka's controllerContext.topicIds(topic): read from the topic znode once, then kept."""
        ids = self.context.topic_ids
        if topic not in ids:
            ids[topic] = self.zk.get_topic_ids([topic]).get(topic)
        return ids[topic]

    def _topic_configs(self, topic: str) -> dict:
        return self.zk.get_entity_configs("topics", topic)

    # --- requests ---------------------------------------------------------------------------------------
    def _send_update_metadata_request(self, brokers: Iterable[int], partitions: Iterable[tuple]) -> None:
        batch = self.request_batch
        batch.new_batch()
        runs = None
        if (self.partition_state_machine.batch_path and hasattr(batch, "add_update_metadata_segments")
                and isinstance(partitions, list) and len(partitions) >= partition_batch.BATCH_MIN):
            runs = self._topic_runs(partitions)   # each topic's partitions added as columns
        if runs is not None:
            batch.add_update_metadata_segments(sorted(brokers), runs)
        else:
            batch.add_update_metadata_request_for_brokers(sorted(brokers), partitions)
        batch.send_requests_to_brokers(self.context.epoch)

    def _send_update_metadata_for_all_partitions(self, brokers: Iterable[int]) -> None:
        """``_send_update_metadata_request(brokers, context.partitions_with_leaders())``; on the batch path every
        topic's partitions are added as columns (topics in context order, partitions ascending, those without
        leadership info and the topics queued for deletion left out, as ``partitions_with_leaders`` does)."""
        ctx = self.context
        batch = self.request_batch
        if not self.partition_state_machine.batch_path or not hasattr(batch, "add_update_metadata_segments"):
            self._send_update_metadata_request(brokers, ctx.partitions_with_leaders())
            return
        selections = [(ts, np.arange(len(ts))) for t, ts in ctx.topics.items()
                      if t not in ctx.topics_to_be_deleted and len(ts)]
        batch.new_batch()
        batch.add_update_metadata_segments(sorted(brokers), selections)
        batch.send_requests_to_brokers(ctx.epoch)

    # --- metrics ------------------------------------------------------------------------------------------
    def metrics(self) -> dict[str, int]:
        """Kafka's KafkaController gauges (computed on demand), by MBean name."""
        ctx = self.context
        active = self.is_active
        prefix = "kafka.controller:type=KafkaController,name="
        return {
            prefix + "ActiveControllerCount": int(active),
            prefix + "OfflinePartitionsCount": ctx.offline_partition_count if active else 0,
            prefix + "PreferredReplicaImbalanceCount": ctx.preferred_replica_imbalance_count if active else 0,
            prefix + "ControllerState": int(self.event_manager.state),
            prefix + "GlobalTopicCount": len(ctx.topics) if active else 0,
            prefix + "GlobalPartitionCount": ctx.partition_with_leaders_count() if active else 0,
            prefix + "TopicsToDeleteCount": len(ctx.topics_to_be_deleted) if active else 0,
            prefix + "ActiveBrokerCount": len(ctx.live_broker_ids) if active else 0,
            prefix + "FencedBrokerCount": 0,
            "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec": ctx.unclean_leader_elections,
        }


class _ControlledShutdownError(Exception):
    """StaleBrokerEpochException / BrokerNotAvailableException of doControlledShutdown, with their error code."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _endpoints(info) -> tuple:
    return tuple(getattr(info, "endpoints", ())) or (getattr(info, "host", None), getattr(info, "port", None),
                                                      getattr(info, "rack", None))


def _tps(partitions: Iterable[tuple]) -> str:
    return ",".join(str(TopicPartition(*tp)) for tp in partitions)

