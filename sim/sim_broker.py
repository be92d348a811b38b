"""A simulated broker process: its store session with heartbeats, its registration, its controller
candidate, and how it answers the controller's requests.

The broker pings the store every third of its session timeout (``zookeeper.session.timeout.ms`` as
the server negotiated it), as ZooKeeper's client does, when the network lets it reach ``"zk"``;
cut off longer than the timeout, its session
expires and its registration goes, while the process runs on. A process started while the
registration of a previous one (killed, its session not expired yet) is still there fails to
register and exits, as Kafka 3.7's does. It answers LeaderAndIsr, UpdateMetadata and StopReplica
as a Kafka broker does: a request from an older controller epoch gets STALE_CONTROLLER_EPOCH, one
addressed to an older registration of this broker STALE_BROKER_EPOCH (UpdateMetadata excepted),
and a LeaderAndIsr partition whose leader epoch is not newer than the one the broker has is
ignored (Kafka answers STALE_CONTROLLER_EPOCH for it, per partition). A replica in a failed log
directory answers KAFKA_STORAGE_ERROR to both LeaderAndIsr and StopReplica, and stays as it is.
"""
from __future__ import annotations

from collections.abc import Callable

import structlog

import numpy as np

from controller.controller_events import KAFKA_STORAGE_ERROR, NONE, STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH
from controller.embedding.broker_columns import BrokerColumns, LeaderAndIsrTable, MetadataView, int32s, isr_block
from controller.partition_errors import PartitionErrors
from controller.kafka_controller import KafkaController
from controller.store.kafka_zk_client import KafkaZkClient
from controller.request_batch import BrokerRequest, BrokerResponse
from controller.store.zookeeper import NodeExistsError, SessionExpiredError
from events.arrays import distinct
from events.columns import ColumnBatch
from events.records import API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA

_log = structlog.get_logger("kcontroller.sim")
_LEADER_AND_ISR_ERRORS = (NONE, STALE_CONTROLLER_EPOCH)


def shared_columns(sim) -> BrokerColumns:
    """The topic ids, tuple pools and UpdateMetadata images the brokers of ``sim`` share (one per simulation:
    every broker gets the same UpdateMetadata requests, so they hold the same cache objects)."""
    shared = sim.__dict__.get("broker_columns")
    if shared is None:
        shared = sim.broker_columns = BrokerColumns()
    return shared


class SimZkClient(KafkaZkClient):
    """A broker's store client that hears from the store only while the network lets it reach ``"zk"``.

    Watch notifications travel from ``"zk"`` over the network. Cut off, it holds the watch notifications and the session expiry the store sends; when it can
    reach the store again it learns of them in order — and once its session has expired, the watches
    of that dead session are gone, as ZooKeeper's are. (Its requests are not sent while cut off:
    the simulation does not run the controller thread of a broker that cannot reach the store,
    as Kafka's retryRequestsUntilConnected blocks it.)"""

    def __init__(self, *args, reachable: Callable[[], bool], deliver: Callable[[Callable[[], object]], object],
                 later: Callable[[int, Callable[[], object]], object], **kwargs):
        self._reachable = reachable
        self._deliver = deliver   # sends a notification from the store over the network
        self._later = later       # runs a callback after a delay on the event loop
        self._held: list = []
        self.expiry_notice_ms = 0   # the expiry reaches the process this late (a zombie window)
        super().__init__(*args, **kwargs)

    def _process(self, event) -> None:
        if self._reachable():
            self._deliver(lambda: KafkaZkClient._process(self, event))
        else:
            self._held.append(("watch", event))

    def _on_session_expired(self) -> None:
        if self.expiry_notice_ms > 0:
            delay, self.expiry_notice_ms = self.expiry_notice_ms, 0
            self._later(delay, self._on_session_expired)
        elif self._reachable():
            super()._on_session_expired()
        else:
            self._held.append(("expired", None))

    @property
    def holds_notifications(self) -> bool:
        return bool(self._held)

    def reconnect(self) -> None:
        """The store is reachable again: deliver what was held."""
        held, self._held = self._held, []
        if any(kind == "expired" for kind, _ in held):
            super()._on_session_expired()
        else:
            for _, event in held:
                super()._process(event)


class SimBroker:
    """One broker process of a :class:`sim.simulation.Simulation`."""

    def __init__(self, sim, broker_id: int, host: str, port: int = 9092, rack: str | None = None):
        self.sim = sim
        self.broker_id = broker_id
        self.host, self.port, self.rack = host, port, rack
        self.alive = False
        self.zk: KafkaZkClient | None = None
        self.controller: KafkaController | None = None
        self.broker_epoch = -1
        self.controller_epoch = 0                       # the newest controller epoch it has accepted
        self.known_controller = -1                      # the controller of the newest request it accepted
        # What the broker knows from controllers, as columns shared with the other brokers (broker_columns):
        # (topic, p) -> (leader, leader_epoch, isr, partition_epoch), and the UpdateMetadata cache.
        self._columns = shared_columns(sim)
        self.partitions = LeaderAndIsrTable(self._columns)
        self._metadata_image = self._columns.empty_image
        self.live_brokers: tuple = ()
        self.rejected: list[tuple] = []                 # (time, api, controller id, controller epoch, error)
        self.stopped_ms = -1                            # when the process stopped (killed, halted or shut down)
        self._heartbeat_timer = None

    @property
    def metadata(self) -> MetadataView:
        """The broker's metadata cache: (topic, partition) -> the UpdateMetadataPartition it holds."""
        return MetadataView(self._columns, self._metadata_image)

    # --- process lifecycle ---------------------------------------------------------------------
    def start(self) -> bool:
        """KafkaServer.startup. False when the process exits instead: ``/brokers/ids/<id>`` still belongs to
        another live session — a previous process of this broker, killed before ZooKeeper expired its
        session — so the registration fails with NodeExists and Kafka.main exits (KafkaZkClient's
        KAFKA-7165 re-creation applies only to the client's own earlier session, not another process's)."""
        sim = self.sim
        self.zk = SimZkClient(sim.zk, session_timeout_ms=sim.requested_session_timeout_ms, clock=sim.loop.clock,
                              rng=sim.store_rng, reachable=self.reaches_store,
                              deliver=lambda fn: sim.network.send("zk", self.broker_id, self.on(fn),
                                                                  name=f"watch zk->{self.broker_id}"),
                              later=lambda ms, fn: sim.loop.after(ms, self.on(fn), "session expiry noticed"))
        self.zk.create_top_level_paths()
        try:
            self._register()
        except NodeExistsError:
            _log.error("Fatal error during KafkaServer startup. Prepare to shutdown", broker_id=self.broker_id,
                       error="org.apache.zookeeper.KeeperException$NodeExistsException: KeeperErrorCode = NodeExists")
            self.zk.close()      # KafkaServer.shutdown closes the new session; the old registration stays
            self.stopped_ms = sim.loop.now
            return False
        self.controller = KafkaController(self.broker_id, sim.config, self.zk, sim.journal, sim.loop.clock,
                                          send=lambda request: sim.send_request(self.broker_id, request),
                                          register_broker=self._register)
        self.controller.event_manager.on_put = sim.controller_event_put
        self.alive = True
        sim.replication.broker_started(self.broker_id)
        self.controller.startup()
        self._schedule_heartbeat()
        return True

    def _register(self) -> int:
        self.broker_epoch = self.zk.register_broker(self.broker_id, self.host, self.port, self.rack)
        return self.broker_epoch

    def kill(self) -> None:
        """kill -9: nothing more happens in the process; its session lives until it times out."""
        self.alive = False
        self.stopped_ms = self.sim.loop.now
        if self._heartbeat_timer is not None:
            self._heartbeat_timer.cancel()
        self.zk.abandon()
        self.controller.event_manager.close()
        self.sim.replication.broker_stopped(self.broker_id)

    def stop(self) -> None:
        """A clean stop: the controller candidate resigns and the session is closed at once."""
        self.alive = False
        self.stopped_ms = self.sim.loop.now
        if self._heartbeat_timer is not None:
            self._heartbeat_timer.cancel()
        self.controller.shutdown()
        self.zk.close()
        self.sim.replication.broker_stopped(self.broker_id)

    def reaches_store(self) -> bool:
        return self.sim.network.reachable(self.broker_id, "zk")

    def _schedule_heartbeat(self) -> None:
        self._heartbeat_timer = self.sim.loop.after(max(1, self.sim.session_timeout_ms // 3), self._heartbeat,
                                                    f"heartbeat {self.broker_id}")

    def _heartbeat(self) -> None:
        if not self.alive:
            return
        if self.sim.network.reachable(self.broker_id, "zk"):
            try:
                self.zk.heartbeat()
            except SessionExpiredError:
                pass    # the expiry reaches the process through the client's callback (maybe late)
        self._schedule_heartbeat()

    # --- requests from controllers -------------------------------------------------------------------
    def handle_request(self, request: BrokerRequest) -> BrokerResponse:
        error = self._check(request)
        errors: dict = {}
        if error == NONE:
            self.controller_epoch = request.controller_epoch
            self.known_controller = request.controller_id
            if request.api == API_LEADER_AND_ISR:
                errors = self._leader_and_isr(request)
            elif request.api == API_UPDATE_METADATA:
                self._update_metadata(request)
            elif request.api == API_STOP_REPLICA:
                errors = self._stop_replica(request)
        else:
            self.rejected.append((self.sim.loop.now, request.api, request.controller_id, request.controller_epoch,
                                  error))
            if request.api == API_STOP_REPLICA:
                errors = {(p.topic, p.partition): error for p in request.partitions}
        return BrokerResponse(request.api, self.broker_id, request.correlation_id, error, errors)

    def _check(self, request: BrokerRequest) -> str:
        if request.controller_epoch < self.controller_epoch:
            return STALE_CONTROLLER_EPOCH
        if request.api != API_UPDATE_METADATA and 0 <= request.broker_epoch < self.broker_epoch:
            return STALE_BROKER_EPOCH
        return NONE

    def _leader_and_isr(self, request: BrokerRequest):
        parts = request.partitions
        replication = self.sim.replication
        if (type(parts) is ColumnBatch and not self.sim.failed_dirs.get(self.broker_id)
                and distinct(keys := self._columns.batch_keys(parts))):
            # No replica can be in a failed log directory: the leader epochs decide, as arrays.
            rows = LeaderAndIsrTable.rows(int32s("leader", parts.column("leader")),
                                          int32s("leader_epoch", parts.column("leader_epoch")),
                                          int32s("partition_epoch", parts.column("partition_epoch")),
                                          *isr_block(parts.column("isr")))
            applied = self.partitions.apply_newer(keys, rows)
            replication.become_many(self.broker_id, parts, np.flatnonzero(applied))
            return PartitionErrors(parts.column("topic"), parts.column("partition"), (~applied).view(np.uint8),
                                   _LEADER_AND_ISR_ERRORS)
        errors = {}
        for p in parts:
            tp = (p.topic, p.partition)
            cur = self.partitions.get(tp)
            rep = replication.replicas.get(self.broker_id, {}).get(tp)
            if rep is not None and rep.offline:
                # ReplicaManager checks the log directory before the leader epoch.
                errors[tp] = KAFKA_STORAGE_ERROR
            elif cur is None or p.leader_epoch > cur[1]:
                self.partitions[tp] = (p.leader, p.leader_epoch, tuple(p.isr), p.partition_epoch)
                errors[tp] = replication.become_leader_or_follower(self.broker_id, p)
            else:
                # ReplicaManager.becomeLeaderOrFollower: not a newer leader epoch -> ignored.
                errors[tp] = STALE_CONTROLLER_EPOCH
        return errors

    def _update_metadata(self, request: BrokerRequest) -> None:
        self.live_brokers = request.live_brokers
        if len(request.partitions):
            self._metadata_image = self._columns.apply_metadata(self._metadata_image, request.partitions)

    def _stop_replica(self, request: BrokerRequest) -> dict:
        errors = {}
        for p in request.partitions:
            tp = (p.topic, p.partition)
            rep = self.sim.replication.replicas.get(self.broker_id, {}).get(tp)
            if rep is not None and rep.offline:
                errors[tp] = KAFKA_STORAGE_ERROR    # HostedPartition.Offline: not stopped, not deleted
                continue
            if p.delete_partition:
                self.partitions.pop(tp, None)
            self.sim.replication.stop_replica(self.broker_id, tp, p.delete_partition)
            errors[tp] = NONE
        return errors

    def on(self, fn: Callable[[], object]) -> Callable[[], None]:
        """``fn`` wrapped to do nothing once the process is dead (for callbacks scheduled earlier)."""
        def call() -> None:
            if self.alive:
                fn()
        return call
