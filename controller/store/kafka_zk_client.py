"""Kafka's ZooKeeperClient and KafkaZkClient (with the AdminZkClient writes) over the embedded ZooKeeper.

One ``KafkaZkClient`` is one broker's (or the admin tool's) connection: it owns a session and
behaves as Kafka's client does on top of it:

* handlers: znode handlers (creation, deletion, data change) and child handlers are kept by path;
  a read of a path with a registered handler arms the watch (``exists``/``get_data`` for znode
  handlers, ``get_children`` with ``register_watch`` for child handlers); a fired watch calls the
  handler once and stays disarmed until the next such read. Unregistering only forgets the
  handler; an armed watch still fires, into nothing;
* session timeout: ``session_timeout_ms`` is what the client asks for (Kafka's
  ``zookeeper.session.timeout.ms``); the server grants it within its bounds and
  ``negotiated_session_timeout_ms`` is what the session got (ZooKeeper.getSessionTimeout), the
  timeout its expiry and its pings go by;
* session expiry: every state handler's ``before_initializing_session``, a new session with the
  same timeout and watcher, then ``after_initializing_session`` — unless the client was closed
  (``close``: a clean shutdown that closes the session) or abandoned (``abandon``: the process was
  killed; its session lingers until ZooKeeper expires it);
* writes the controller makes with ``expected_controller_epoch_zk_version`` >= 0 are sent, each
  request on its own, as a multi of a CheckOp on ``/controller_epoch`` and the write
  (wrapRequestWithControllerEpochCheck); a failed check raises ``ControllerMovedError`` once all
  the batch's requests have been sent, as Kafka unwraps pipelined responses. -1 means unfenced.
  The partition-state batches (``create_partition_states``, ``update_leader_and_isr``) go through
  ``ZooKeeper.iter_multi`` and ``get_partition_states`` through ``get_data_and_version_many``: the
  same requests, pipelined. The batch path's column methods (``read_partition_state_columns``,
  ``write_leader_and_isr_columns``) and the ``/state`` creates of ``create_partition_states`` go through
  the model's ``/state`` table (``ZooKeeper.get_state_rows``, ``set_state_rows``, ``create_state_rows``):
  the same requests again, answered as array work, with the same results as the per-partition
  methods (``PartitionStateColumnsMixin``, which they fall back to for anything unusual). Creation has
  column forms too: ``create_topic_with_replica_matrix`` (and ``validate_topic_create`` of a matrix) writes
  the topic znode from an (n, rf) replica matrix, ``get_replica_assignment_columns`` reads topic znodes
  back as columns (``zk_data.TopicColumns``), and ``create_partition_states_columns`` creates the
  partitions' parents and ``/state`` znodes from per-topic columns (``ZooKeeper.create_partition_parents``,
  ``create_state_columns``; ``create_partition_states`` goes the same way for its dict).

The znode bodies come from ``controller.store.zk_data``. It implements ``statemachines.ports.PartitionStateStore``.
"""
from __future__ import annotations

import random
import re
from itertools import chain
from operator import attrgetter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import structlog

from controller.store.state_columns import PartitionStateColumnsMixin
from controller.store.state_table import (
    CODE_NAMES, MAX_ISR, R_BADVERSION, R_CHECK_BADVERSION, R_CHECK_NONODE, R_NONODE, R_OK, encode_state, isr_matrix,
    plain_topic, state_key, state_path,
)
from controller.store.zk_data import (
    BROKER_IDS_PATH, CLUSTER_ID_PATH, CONFIG_CHANGES_PATH, CONFIG_CHANGE_PREFIX, CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH, DELETE_TOPICS_PATH, FEATURE_PATH, INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION,
    ISR_CHANGE_NOTIFICATION_PATH, ISR_CHANGE_PREFIX, LOG_DIR_EVENT_NOTIFICATION_PATH, LOG_DIR_EVENT_PREFIX,
    PERSISTENT_ZK_PATHS, PREFERRED_REPLICA_ELECTION_PATH, REASSIGN_PARTITIONS_PATH, TOPIC_CONFIG_TYPE, TOPICS_PATH,
    BrokerInfo, EndPoint, TopicColumns, TopicIdReplicaAssignment, broker_id_path, config_entity_path,
    config_entity_type_path, decode_broker_info, decode_cluster_id, decode_controller, decode_controller_epoch,
    decode_controller_registration, decode_entity_config, decode_isr_change_notification, decode_log_dir_event,
    decode_partition_reassignment, decode_partition_state, decode_preferred_replica_election, decode_topic,
    decode_topic_columns, delete_topic_path, encode_broker_info, encode_cluster_id, encode_config_change_notification,
    encode_controller, encode_controller_epoch, encode_entity_config, encode_feature_znode,
    encode_isr_change_notification, encode_log_dir_event, encode_leader_and_isr, encode_partition_reassignment,
    encode_partition_state, encode_preferred_replica_election, encode_topic, encode_topic_matrix, encode_topic_rows,
    isr_change_notification_path, log_dir_event_notification_path, random_uuid, sequence_number,
    topic_partition_path, topic_partitions_path, topic_path,
)
from controller.store.zookeeper import (
    ANY_VERSION, CheckOp, CreateOp, CreateResult, DeleteOp, DeleteResult, EventType, KeeperError, MultiError,
    NodeExistsError, NoNodeError, SessionExpiredError, SetDataOp, SetDataResult, Stat, WatchedEvent, ZooKeeper,
)
from events.arrays import distinct
from statemachines.errors import ControllerMovedError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from statemachines.ports import ColumnWriteResult, PartitionStateColumns, UpdateLeaderAndIsrResult
from statemachines.replica_rows import key_topic_runs

_log = structlog.get_logger("kcontroller.kafka_zk_client")

CONTROLLER_MOVED = "Controller moved to another broker. Aborting controller startup procedure"
UNKNOWN_VERSION = -2   # ZkVersion.UnknownVersion


# --- admin errors (org.apache.kafka.common.errors) ----------------------------------------------------
class AdminError(Exception):
    kafka_name = "org.apache.kafka.common.errors.ApiException"


class TopicExistsError(AdminError):
    kafka_name = "org.apache.kafka.common.errors.TopicExistsException"


class InvalidTopicError(AdminError):
    kafka_name = "org.apache.kafka.common.errors.InvalidTopicException"


class InvalidReplicaAssignmentError(AdminError):
    kafka_name = "org.apache.kafka.common.errors.InvalidReplicaAssignmentException"


class UnknownTopicOrPartitionError(AdminError):
    kafka_name = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"


class BrokerNotAvailableError(AdminError):
    kafka_name = "org.apache.kafka.common.errors.BrokerNotAvailableException"


_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249


def validate_topic_name(topic: str) -> None:
    """org.apache.kafka.common.internals.Topic.validate."""
    if not topic:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
                                f"Topic name: {topic}")
    if not _LEGAL_TOPIC.match(topic):
        raise InvalidTopicError(f'Topic name "{topic}" is illegal, it contains a character other than ASCII '
                                f"alphanumerics, '.', '_' and '-'")


class _CheckFailed:
    """The CheckOp on /controller_epoch of a fenced request failed with ``code``."""
    __slots__ = ("code", "expected")

    def __init__(self, code: str, expected: int):
        self.code, self.expected = code, expected

    def error(self) -> Exception:
        if self.code == "BADVERSION":
            return ControllerMovedError(f"Controller epoch zkVersion check fails. Expected zkVersion = {self.expected}")
        return KeeperError.create(self.code, CONTROLLER_EPOCH_PATH)


def _call(handler, method: str) -> None:
    fn = getattr(handler, method, None)
    if fn is not None:
        fn()


def _failures(outcomes: Iterable) -> list:
    """Every outcome of a batch of requests (all of them sent), with the results as None: only the
    failures are looked at, and a long batch then holds no result objects."""
    return [None if type(o) is CreateResult or type(o) is SetDataResult else o for o in outcomes]


def _partition(key) -> int:
    """A partition id from a (topic, partition) key or a bare id."""
    return key[1] if isinstance(key, tuple) else int(key)


def _assignment(value) -> ReplicaAssignment:
    return value if isinstance(value, ReplicaAssignment) else ReplicaAssignment(tuple(value))


class KafkaZkClient(PartitionStateColumnsMixin):
    """A broker's (or admin's) ZooKeeper connection with Kafka's operations on it."""

    def __init__(self, zk: ZooKeeper, *, session_timeout_ms: int = 18000, clock: Callable[[], int],
                 rng: random.Random, enable_entity_config_controller_check: bool = False,
                 session_id: int | None = None):
        self._zk = zk
        self._clock = clock
        self._rng = rng
        self.session_timeout_ms = session_timeout_ms   # requested; the server may grant another
        # Kafka 3.7.1+ (KAFKA-16539) checks /controller before config writes; 3.7.0 does not.
        self.enable_entity_config_controller_check = enable_entity_config_controller_check
        self._znode_handlers: dict[str, object] = {}
        self._state_handler_partitions: dict[str, set[int]] = {}   # topic -> partitions of the /state handlers
        self._child_handlers: dict[str, object] = {}
        self._state_handlers: dict[str, object] = {}
        self._closed = False
        self._registered_session_id = -1   # KAFKA-7165: the session that registered our ephemerals
        self._check_ops: dict[int, CheckOp] = {}
        if session_id is None:
            self._session_id = zk.connect(session_timeout_ms, self._process, self._on_session_expired)
        else:  # a client restored from a snapshot takes its session back
            self._session_id = session_id
            if zk.is_alive(session_id):
                zk.attach(session_id, self._process, self._on_session_expired)
            else:  # a dead broker's client whose session has timed out since
                self._closed = True

    # --- ZooKeeperClient: session -----------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def negotiated_session_timeout_ms(self) -> int:
        """ZooKeeper.getSessionTimeout: the timeout the server granted the session (``session_timeout_ms``
        clamped to the server's bounds); for a session that is gone, what asking again would get."""
        granted = self._zk.session_timeout(self._session_id)
        return granted if granted else self._zk.negotiated_session_timeout(self.session_timeout_ms)

    @property
    def is_connected(self) -> bool:
        return not self._closed and self._zk.is_alive(self._session_id)

    def heartbeat(self) -> None:
        """Ping the session (a dead process pings nothing)."""
        if not self._closed:
            self._zk.heartbeat(self._session_id)

    def close(self) -> None:
        """ZooKeeperClient.close: forget all handlers and close the session (its ephemerals go now)."""
        if self._closed:
            return
        self._closed = True
        self._znode_handlers.clear()
        self._state_handler_partitions.clear()
        self._child_handlers.clear()
        self._state_handlers.clear()
        self._zk.close_session(self._session_id)

    def abandon(self) -> None:
        """The process died (kill -9): nothing more happens here; the session lives until it times out."""
        self._closed = True
        self._znode_handlers.clear()
        self._state_handler_partitions.clear()
        self._child_handlers.clear()
        self._state_handlers.clear()

    def _on_session_expired(self) -> None:
        if self._closed:
            return
        _log.info("Session expired.", session=hex(self._session_id))
        for handler in list(self._state_handlers.values()):
            self._call_state_handler(handler, "before_initializing_session")
        if self._closed:
            return
        self._session_id = self._zk.connect(self.session_timeout_ms, self._process, self._on_session_expired)
        _log.info("Initialized a new session.", session=hex(self._session_id))
        for handler in list(self._state_handlers.values()):
            self._call_state_handler(handler, "after_initializing_session")

    @staticmethod
    def _call_state_handler(handler, method: str) -> None:
        try:
            _call(handler, method)
        except Exception:
            _log.exception(f"Uncaught error in handler {getattr(handler, 'name', handler)}")

    def handler_paths(self) -> tuple[list[str], list[str], list[str]]:
        """Paths of the registered znode and child handlers and names of the state handlers (snapshots)."""
        return sorted(self._znode_handlers), sorted(self._child_handlers), sorted(self._state_handlers)

    # --- ZooKeeperClient: handlers ------------------------------------------------------------------------
    def register_znode_change_handler(self, handler) -> None:
        self._znode_handlers[handler.path] = handler
        key = state_key(handler.path) if isinstance(handler.path, str) else None
        if key is not None:
            self._state_handler_partitions.setdefault(key[0], set()).add(key[1])

    def unregister_znode_change_handler(self, path: str) -> None:
        self._znode_handlers.pop(path, None)
        key = state_key(path) if isinstance(path, str) else None
        if key is not None and key[0] in self._state_handler_partitions:
            watched = self._state_handler_partitions[key[0]]
            watched.discard(key[1])
            if not watched:
                del self._state_handler_partitions[key[0]]

    def register_znode_child_change_handler(self, handler) -> None:
        self._child_handlers[handler.path] = handler

    def unregister_znode_child_change_handler(self, path: str) -> None:
        self._child_handlers.pop(path, None)

    def register_state_change_handler(self, handler) -> None:
        self._state_handlers[handler.name] = handler

    def unregister_state_change_handler(self, name: str) -> None:
        self._state_handlers.pop(name, None)

    def register_znode_change_handler_and_check_existence(self, handler) -> bool:
        """Register, then ``exists`` (arming a data watch even on a missing path)."""
        self.register_znode_change_handler(handler)
        return self._exists(handler.path) is not None

    def _process(self, event: WatchedEvent) -> None:
        if self._closed:
            return
        if event.type is EventType.NODE_CHILDREN_CHANGED:
            handler = self._child_handlers.get(event.path)
            if handler is not None:
                _call(handler, "handle_child_change")
            return
        handler = self._znode_handlers.get(event.path)
        if handler is not None:
            _call(handler, _ZNODE_METHODS[event.type])

    # --- requests ------------------------------------------------------------------------------------------
    def _now(self) -> int:
        return int(self._clock())

    def _get_data(self, path: str) -> tuple[bytes | None, Stat] | None:
        try:
            return self._zk.get_data(self._session_id, path, path in self._znode_handlers)
        except NoNodeError:
            return None

    def _exists(self, path: str) -> Stat | None:
        return self._zk.exists(self._session_id, path, path in self._znode_handlers)

    def _get_children(self, path: str, register_watch: bool = True) -> list[str] | None:
        try:
            return self._zk.get_children(self._session_id, path, register_watch and path in self._child_handlers)
        except NoNodeError:
            return None

    def _plain(self, op):
        zk, sid = self._zk, self._session_id
        t = type(op)
        if t is SetDataOp:
            return SetDataResult(zk.set_data(sid, op.path, op.data, op.version))
        if t is CreateOp:
            return CreateResult(zk.create(sid, op.path, op.data, ephemeral=op.ephemeral, sequential=op.sequential))
        zk.delete(sid, op.path, op.version)
        return DeleteResult()

    def _write(self, op, expected_controller_epoch_zk_version: int = ANY_VERSION):
        """One write request as Kafka sends it; returns its result, its KeeperError, or a _CheckFailed."""
        expected = expected_controller_epoch_zk_version
        if expected == ANY_VERSION:
            try:
                return self._plain(op)
            except SessionExpiredError:
                raise
            except KeeperError as e:
                return e
        check = self._epoch_check(expected)
        try:
            return self._zk.multi(self._session_id, (check, op))[1]
        except MultiError as e:
            if e.failed_index == 0:
                return _CheckFailed(e.code, expected)
            return KeeperError.create(e.code, op.path)

    def _epoch_check(self, expected: int) -> CheckOp:
        """The CheckOp on /controller_epoch's version that fences every controller write."""
        if expected < 0:
            raise ValueError(f"Expected controller epoch zkVersion {expected} should be non-negative or equal to "
                             f"{ANY_VERSION}")
        check = self._check_ops.get(expected)
        if check is None:
            check = self._check_ops[expected] = CheckOp(CONTROLLER_EPOCH_PATH, expected)
        return check

    def _write_many(self, ops: Iterable, expected_controller_epoch_zk_version: int = ANY_VERSION) -> Iterator:
        """``(self._write(op, expected) for op in ops)``, the fenced requests pipelined through
        ``ZooKeeper.iter_multi`` (the same transactions in the same order, each applied when the
        iteration reaches it)."""
        expected = expected_controller_epoch_zk_version
        if expected == ANY_VERSION:
            for op in ops:
                yield self._write(op, expected)
            return
        check = None
        current = None

        def fenced():
            nonlocal check, current
            for op in ops:
                if check is None:   # as _write: checked when there is a request to send
                    check = self._epoch_check(expected)
                current = op
                yield check, op

        for r in self._zk.iter_multi(self._session_id, fenced()):
            t = type(r)
            if t is list:
                yield r[1]
            elif t is MultiError:
                yield (_CheckFailed(r.code, expected) if r.failed_index == 0
                       else KeeperError.create(r.code, current.path))
            else:   # the session is gone: _write raises it too
                raise r

    @staticmethod
    def _unwrap(outcomes: Iterable) -> None:
        """unwrapResponseWithControllerEpochCheck over a batch: the first failed check raises."""
        for o in outcomes:
            if type(o) is _CheckFailed:
                raise o.error()

    def _write_checked(self, op, expected: int = ANY_VERSION):
        """A single request whose error is thrown (``maybeThrow``)."""
        r = self._write(op, expected)
        self._unwrap((r,))
        if isinstance(r, KeeperError):
            raise r
        return r

    def _create_recursive(self, path: str, data: bytes | None = None, throw_if_path_exists: bool = True) -> None:
        """KafkaZkClient.createRecursive: try the node, create missing parents only on NONODE."""
        r = self._write(CreateOp(path, data))
        if isinstance(r, KeeperError):
            if r.code == "NODEEXISTS":
                if throw_if_path_exists:
                    raise r
            elif r.code == "NONODE":
                self._create_parents(path[:path.rfind("/")])
                r = self._write(CreateOp(path, data))
                if isinstance(r, KeeperError) and (throw_if_path_exists or r.code != "NODEEXISTS"):
                    raise r
            else:
                raise r

    def _create_parents(self, path: str) -> None:
        r = self._write(CreateOp(path, None))
        if isinstance(r, KeeperError) and r.code == "NONODE":
            self._create_parents(path[:path.rfind("/")])
            r = self._write(CreateOp(path, None))
        if isinstance(r, KeeperError) and r.code != "NODEEXISTS":
            raise r

    def _delete_recursive(self, path: str, expected: int = ANY_VERSION) -> bool:
        """KafkaZkClient.deleteRecursive: children first, each delete its own (fenced) request."""
        children = self._get_children(path)
        if children is None:
            return False
        for child in children:
            self._delete_recursive(f"{path}/{child}", expected)
        r = self._write(DeleteOp(path), expected)
        self._unwrap((r,))
        if isinstance(r, KeeperError) and r.code != "NONODE":
            raise r
        return True

    def _delete_all(self, paths: Iterable[str], expected: int) -> None:
        """Delete requests whose responses Kafka does not look at (beyond the epoch check)."""
        self._unwrap([self._write(DeleteOp(p), expected) for p in paths])

    def create_top_level_paths(self) -> None:
        for path in PERSISTENT_ZK_PATHS:
            self.make_sure_persistent_path_exists(path)

    def make_sure_persistent_path_exists(self, path: str) -> None:
        self._create_recursive(path, None, throw_if_path_exists=False)

    def path_exists(self, path: str) -> bool:
        return self._exists(path) is not None

    def get_data_and_stat(self, path: str) -> tuple[bytes | None, Stat | None]:
        r = self._get_data(path)
        return (None, None) if r is None else r

    def get_children(self, path: str) -> list[str]:
        return self._get_children(path) or []

    # --- brokers -------------------------------------------------------------------------------------------
    def register_broker(self, broker_id: int, host: str | None = None, port: int = 9092, rack: str | None = None, *,
                        endpoints: Sequence[EndPoint] | None = None, jmx_port: int = -1,
                        features: Iterable[tuple] = (), version: int = 5) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; returns the broker epoch (its czxid)."""
        info = _broker_info(broker_id, host, port, rack, endpoints, jmx_port, features, version)
        path = broker_id_path(broker_id)
        stat = self._checked_ephemeral_create(path, encode_broker_info(info, self._now()))
        _log.info(f"Registered broker {broker_id} at path {path} with addresses: "
                  f"{','.join(e.connection_string for e in info.endpoints)}, czxid (broker epoch): {stat.czxid}")
        return stat.czxid

    def update_broker_info(self, broker_id: int, host: str | None = None, port: int = 9092, rack: str | None = None,
                           *, endpoints: Sequence[EndPoint] | None = None, jmx_port: int = -1,
                           features: Iterable[tuple] = (), version: int = 5) -> None:
        info = _broker_info(broker_id, host, port, rack, endpoints, jmx_port, features, version)
        self._write_checked(SetDataOp(broker_id_path(broker_id), encode_broker_info(info, self._now())))

    def _checked_ephemeral_create(self, path: str, data: bytes) -> Stat:
        """CheckedEphemeral.create: multi(create ephemeral without data, setData version 0)."""
        try:
            results = self._zk.multi(self._session_id, (CreateOp(path, None, ephemeral=True), SetDataOp(path, data, 0)))
            stat = results[1].stat
        except MultiError as e:
            if e.code != "NODEEXISTS":
                _log.error(f"Error while creating ephemeral at {path} with return code: {e.code}")
                raise KeeperError.create(e.code) from None
            stat = self._get_after_node_exists(path, data)
        self._registered_session_id = self._session_id
        return stat

    def _get_after_node_exists(self, path: str, data: bytes) -> Stat:
        r = self._get_data(path)
        if r is None:
            _log.info(f"The ephemeral node at {path} went away while reading it, attempting create() again")
            return self._checked_ephemeral_create(path, data)
        owner = r[1].ephemeral_owner
        if owner == self._registered_session_id and self._session_id != self._registered_session_id:
            _log.info(f"Was not possible to create the ephemeral at {path}, node already exists and owner "
                      f"'{owner:#x}' does not match current session '{self._session_id:#x}', trying to delete and "
                      f"re-create it with the newest Zookeeper session")
            self._write(DeleteOp(path))
            return self._checked_ephemeral_create(path, data)
        if owner != self._session_id:
            _log.error(f"Error while creating ephemeral at {path}, node already exists and owner '{owner:#x}' does "
                       f"not match current session '{self._session_id:#x}'")
            raise NodeExistsError()
        return r[1]

    def get_sorted_broker_list(self) -> list[int]:
        return sorted(int(c) for c in self._get_children(BROKER_IDS_PATH) or ())

    def get_all_brokers_in_cluster(self) -> list[BrokerInfo]:
        return [info for info, _ in self.get_all_broker_and_epochs_in_cluster().values()]

    def get_all_broker_and_epochs_in_cluster(self) -> dict[int, tuple[BrokerInfo, int]]:
        """Broker id -> (registration, broker epoch = czxid), by id."""
        out = {}
        for b in self.get_sorted_broker_list():
            r = self._get_data(broker_id_path(b))
            if r is not None:
                out[b] = (decode_broker_info(b, r[0]), r[1].czxid)
        return out

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        r = self._get_data(broker_id_path(broker_id))
        return None if r is None else decode_broker_info(broker_id, r[0])

    # --- controller ----------------------------------------------------------------------------------------
    def get_controller_id(self) -> int | None:
        r = self._get_data(CONTROLLER_PATH)
        return None if r is None else decode_controller(r[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zkVersion of /controller_epoch), or None if it does not exist."""
        r = self._get_data(CONTROLLER_EPOCH_PATH)
        return None if r is None else (decode_controller_epoch(r[0]), r[1].version)

    def register_controller_and_increment_controller_epoch(self, controller_id: int) -> tuple[int, int]:
        """Create the ephemeral /controller and bump /controller_epoch in one multi; returns (epoch, zkVersion).

        Raises ControllerMovedError if another broker won (or the epoch moved under us)."""
        timestamp = self._now()
        current = self.get_controller_epoch()
        cur_epoch, cur_version = current if current is not None else self._maybe_create_controller_epoch_znode()
        new_epoch = cur_epoch + 1
        _log.debug(f"Try to create {CONTROLLER_PATH} and increment controller epoch to {new_epoch} with expected "
                   f"controller epoch zkVersion {cur_version}")
        try:
            results = self._zk.multi(self._session_id, (
                CreateOp(CONTROLLER_PATH, encode_controller(controller_id, timestamp), ephemeral=True),
                SetDataOp(CONTROLLER_EPOCH_PATH, encode_controller_epoch(new_epoch), cur_version)))
        except MultiError as e:
            if e.code in ("NODEEXISTS", "BADVERSION"):
                return self._check_controller_and_epoch(controller_id, new_epoch)
            raise KeeperError.create(e.code) from None
        return new_epoch, results[1].stat.version

    def _maybe_create_controller_epoch_znode(self) -> tuple[int, int]:
        r = self._write(CreateOp(CONTROLLER_EPOCH_PATH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH)))
        if not isinstance(r, KeeperError):
            _log.info(f"Successfully created {CONTROLLER_EPOCH_PATH} with initial epoch {INITIAL_CONTROLLER_EPOCH}")
            return INITIAL_CONTROLLER_EPOCH, INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        if r.code != "NODEEXISTS":
            raise r
        current = self.get_controller_epoch()
        if current is None:
            raise RuntimeError(f"{CONTROLLER_EPOCH_PATH} existed before but goes away while trying to read it")
        return current

    def _check_controller_and_epoch(self, controller_id: int, new_epoch: int) -> tuple[int, int]:
        current_id = self.get_controller_id()
        if current_id is None:
            raise ControllerMovedError(f"The ephemeral node at {CONTROLLER_PATH} went away while checking whether the "
                                       f"controller election succeeds. Aborting controller startup procedure")
        if current_id == controller_id:
            current = self.get_controller_epoch()
            if current is None:
                raise RuntimeError(f"{CONTROLLER_EPOCH_PATH} existed before but goes away while trying to read it")
            if current[0] == new_epoch:
                return current
        raise ControllerMovedError(CONTROLLER_MOVED)

    def delete_controller(self, expected_controller_epoch_zk_version: int) -> None:
        self._delete_all((CONTROLLER_PATH,), expected_controller_epoch_zk_version)

    def get_controller_registration(self) -> tuple[int, int | None, int] | None:
        """(broker id, kraftControllerEpoch or None, zkVersion of /controller)."""
        r = self._get_data(CONTROLLER_PATH)
        if r is None:
            return None
        reg = decode_controller_registration(r[0])
        return None if reg is None else (reg[0], reg[1], r[1].version)

    # --- topics --------------------------------------------------------------------------------------------
    def get_all_topics_in_cluster(self, register_watch: bool = False) -> set[str]:
        children = self._get_children(TOPICS_PATH, register_watch)
        return set(children) if children is not None else set()

    def topic_exists(self, topic: str) -> bool:
        return self.path_exists(topic_path(topic))

    def get_replica_assignment_and_topic_id_for_topics(self, topics: Iterable[str]) -> list[TopicIdReplicaAssignment]:
        out = []
        for topic in sorted(set(topics)):
            r = self._get_data(topic_path(topic))
            out.append(decode_topic(topic, r[0]) if r is not None else TopicIdReplicaAssignment(topic, None, {}))
        return out

    def get_full_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[tuple, ReplicaAssignment]:
        """(topic, partition) -> ReplicaAssignment for the topics that exist, by topic then partition."""
        out: dict[tuple, ReplicaAssignment] = {}
        for topic in sorted(set(topics)):
            r = self._get_data(topic_path(topic))
            if r is not None:
                out.update(decode_topic(topic, r[0]).assignment)
        return out

    def get_replica_assignment_columns(self, topics: Iterable[str]) -> dict[str, TopicColumns]:
        """``get_replica_assignment_and_topic_id_for_topics`` as columns, for the topics that exist, by topic:
        the same reads (no watch unless a handler is registered on the topic's path); a body that is not a JSON
        object gives no partitions. The columns of bodies this process wrote or read before are not parsed
        again (``zk_data.decode_topic_columns``); they are shared: read-only."""
        out: dict[str, TopicColumns] = {}
        for topic in sorted(set(topics)):
            r = self._get_data(topic_path(topic))
            if r is not None:
                out[topic] = decode_topic_columns(r[0]) or _NO_TOPIC_COLUMNS
        return out

    def get_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[tuple, tuple]:
        return {tp: a.replicas for tp, a in self.get_full_replica_assignment_for_topics(topics).items()}

    def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Topic -> topic id, for the topics that exist and have one (getTopicIdsForTopics)."""
        return {a.topic: a.topic_id for a in self.get_replica_assignment_and_topic_id_for_topics(topics)
                if a.topic_id is not None}

    def get_all_partitions(self) -> list[tuple]:
        out = []
        for topic in sorted(self.get_all_topics_in_cluster()):
            children = self._get_children(topic_partitions_path(topic)) or ()
            out.extend((topic, p) for p in sorted(int(c) for c in children))
        return out

    def set_topic_assignment(self, topic: str, topic_id: str | None, assignment: Mapping,
                             expected_controller_epoch_zk_version: int = ANY_VERSION) -> None:
        """Overwrite ``/brokers/topics/<t>``; ``assignment`` maps (topic, p) or p to a ReplicaAssignment or replicas."""
        by_partition = {_partition(k): _assignment(v) for k, v in assignment.items()}
        self._write_checked(SetDataOp(topic_path(topic), encode_topic(topic_id, by_partition)),
                            expected_controller_epoch_zk_version)

    def set_topic_assignment_rows(self, topic: str, topic_id: str | None, replicas: Sequence[tuple],
                                  adding: Mapping[int, tuple], removing: Mapping[int, tuple],
                                  expected_controller_epoch_zk_version: int = ANY_VERSION) -> None:
        """``set_topic_assignment`` for partitions 0..n-1 given as replica tuples (index = partition id) and the
        adding / removing replicas of those being reassigned."""
        self._write_checked(SetDataOp(topic_path(topic), encode_topic_rows(topic_id, replicas, adding, removing)),
                            expected_controller_epoch_zk_version)

    def create_topic_assignment(self, topic: str, topic_id: str | None, assignment: Mapping) -> None:
        matrix = assignment if isinstance(assignment, np.ndarray) else _assignment_matrix(assignment)
        if matrix is not None:
            self._create_recursive(topic_path(topic), encode_topic_matrix(topic_id, matrix))
            return
        by_partition = {_partition(k): _assignment(v) for k, v in assignment.items()}
        self._create_recursive(topic_path(topic), encode_topic(topic_id, by_partition))

    def set_topic_ids(self, assignments: Iterable[TopicIdReplicaAssignment],
                      expected_controller_epoch_zk_version: int) -> list[TopicIdReplicaAssignment]:
        """Give topics without an id a new one (the controller's processTopicIds)."""
        updated = []
        for a in assignments:
            if a.topic_id is not None:
                raise ValueError(f"TopicIdReplicaAssignment for {a.topic} already contains a topic ID.")
            updated.append(a._replace(topic_id=random_uuid(self._rng)))
        self._unwrap([self._write(SetDataOp(topic_path(a.topic), encode_topic(
            a.topic_id, {tp[1]: ra for tp, ra in a.assignment.items()})), expected_controller_epoch_zk_version)
            for a in updated])
        return updated

    # --- partition states (statemachines.ports.PartitionStateStore) ---------------------------------------------
    def get_topic_partition_states(self, partitions: Iterable[tuple]) -> dict[tuple, LeaderIsrAndControllerEpoch]:
        """The ``/state`` of each partition that has one."""
        return {tp: info for tp, info in self.get_partition_states(partitions).items() if info is not None}

    def get_topic_partition_state(self, tp: tuple) -> LeaderIsrAndControllerEpoch | None:
        return self.get_partition_states((tp,))[tp]

    def get_partition_states(self, partitions: Iterable[tuple]) -> dict[tuple, LeaderIsrAndControllerEpoch | None]:
        partitions = partitions if isinstance(partitions, (list, tuple)) else list(partitions)
        rows = self._zk.get_data_and_version_many(
            self._session_id, [f"{TOPICS_PATH}/{tp[0]}/partitions/{tp[1]}/state" for tp in partitions],
            self._znode_handlers)
        decode = decode_partition_state
        return {tp: None if row is None else decode(row[0], row[1]) for tp, row in zip(partitions, rows)}

    def create_partition_states(self, states: Mapping[tuple, LeaderIsrAndControllerEpoch],
                                expected_controller_epoch_zk_version: int) -> dict[tuple, Exception | None]:
        """createTopicPartitionStatesRaw: the partitions parents, then each ``/state`` (all fenced)."""
        expected = expected_controller_epoch_zk_version
        topics = list(dict.fromkeys(tp[0] for tp in states))
        self._unwrap(_failures(self._write_many([CreateOp(topic_partitions_path(t), None) for t in topics], expected)))
        if expected >= 0 and states and self._create_parents_in_bulk(_topic_runs(list(states)), expected):
            paths = None
        else:
            paths = [topic_partition_path(tp) for tp in states]
            self._unwrap(_failures(self._write_many((CreateOp(path, None) for path in paths), expected)))
        if expected >= 0 and states:
            created = self._create_state_znodes(states, expected)
            if created is not None:
                return created
        if paths is None:
            paths = [topic_partition_path(tp) for tp in states]
        outcomes = _failures(self._write_many((CreateOp(f"{path}/state", encode_partition_state(info))
                                               for path, info in zip(paths, states.values())), expected))
        self._unwrap(outcomes)
        # Kafka builds these errors from the result code alone (KeeperException.create(code)).
        return {tp: KeeperError.create(o.code) if isinstance(o, KeeperError) else None
                for tp, o in zip(states, outcomes)}

    def _create_parents_in_bulk(self, runs: list[tuple[str, object]], expected: int) -> bool:
        """The fenced parent creates of ``runs`` ((topic, partition ids) each, in order) through
        ``ZooKeeper.create_partition_parents``: True when every run was done so (a failed check raised after
        the last run, as ``_unwrap`` raises it); False, having sent nothing, if the first run cannot be; a
        later run that cannot be goes request by request."""
        check = self._epoch_check(expected)
        sid = self._session_id
        check_failed = None
        for i, (topic, ps) in enumerate(runs):
            res = self._zk.create_partition_parents(sid, topic, ps, check)
            if res is None:
                if i == 0:
                    return False
                prefix = f"{TOPICS_PATH}/{topic}/partitions/"
                outcomes = _failures(self._write_many([CreateOp(f"{prefix}{p}", None) for p in np.asarray(ps).tolist()],
                                                      expected))
                check_failed = check_failed or next((o for o in outcomes if type(o) is _CheckFailed), None)
                continue
            c = int(res.code[0])
            if c == R_CHECK_NONODE or c == R_CHECK_BADVERSION:
                check_failed = check_failed or _CheckFailed(CODE_NAMES[c], expected)
        if check_failed is not None:
            raise check_failed.error()
        return True

    def create_partition_states_columns(self, segments: Sequence[tuple], controller_epoch: int,
                                        expected_controller_epoch_zk_version: int) -> list[dict[int, Exception]]:
        """``create_partition_states`` of the partitions of ``segments`` as columns: each segment is (topic,
        partition ids, leader, ISR matrix[, leader epoch, leader recovery state]) — the ISR of row i is the
        non-negative entries of ``isr[i]`` in order, the leader epoch and recovery state 0 if not given — and
        every partition's ``/state`` is ``LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader epoch, ISR,
        recovery state), controller_epoch)``. The same requests in the same order (the topics' /partitions,
        every parent, every /state, all fenced), the same errors raised; returns per segment the rows whose
        /state was not created, with their error (rows not there were created)."""
        segs = [_creation_segment(seg, controller_epoch) for seg in segments]
        expected = expected_controller_epoch_zk_version
        if not segs or all(seg is None or not len(seg[1]) for seg in segs):
            pass
        elif expected >= 0 and all(seg is not None for seg in segs):
            topics = list(dict.fromkeys(seg[0] for seg in segs if len(seg[1])))
            runs = [(seg[0], seg[1]) for seg in segs if len(seg[1])]
            if len(topics) == len(runs):   # a topic in two segments: the dict form keeps one row of each
                self._unwrap(_failures(self._write_many([CreateOp(topic_partitions_path(t), None) for t in topics],
                                                        expected)))
                if not self._create_parents_in_bulk(runs, expected):
                    self._unwrap(_failures(self._write_many(
                        (CreateOp(f"{TOPICS_PATH}/{topic}/partitions/{p}", None)
                         for topic, ps in runs for p in ps.tolist()), expected)))
                return self._create_states_in_bulk(segs, expected)
        return self._create_columns_by_dict(segments, controller_epoch, expected)

    def _create_columns_by_dict(self, segments: Sequence[tuple], controller_epoch: int,
                                expected: int) -> list[dict[int, Exception]]:
        """``create_partition_states_columns`` through ``create_partition_states`` of the dict of the rows."""
        return PartitionStateColumnsMixin.create_partition_states_columns(self, segments, controller_epoch, expected)

    def _create_states_in_bulk(self, segs: list[tuple], expected: int) -> list[dict[int, Exception]]:
        """The fenced /state creates of ``create_partition_states_columns`` (its segments as
        ``_creation_segment`` makes them): ``ZooKeeper.create_state_columns`` for each, the per-request
        ``create_state_rows`` for a segment it does not take."""
        check = self._epoch_check(expected)
        sid = self._session_id
        check_failed = None
        results: list[dict[int, Exception]] = []
        for topic, ps, ce, leader, epoch, isr, isr_len, recovery in segs:
            if not len(ps):
                results.append({})
                continue
            res = self._zk.create_state_columns(sid, topic, ps, ce, leader, epoch, isr, isr_len, recovery, check)
            if res is None:
                datas = [encode_state(c, ld, le, rc, tuple(i[:k])) for c, ld, le, rc, i, k in zip(
                    np.broadcast_to(ce, len(ps)).tolist(), leader.tolist(), epoch.tolist(), recovery.tolist(),
                    isr.tolist(), isr_len.tolist())]
                res = self._zk.create_state_rows(sid, topic, ps.tolist(), datas, check)
                if res.stopped >= 0:
                    raise SessionExpiredError()
            errors: dict[int, Exception] = {}
            code = res.code
            if (code != R_OK).any():
                for i, c in enumerate(code.tolist()):
                    if c == R_OK:
                        continue
                    if c == R_CHECK_NONODE or c == R_CHECK_BADVERSION:
                        check_failed = check_failed or _CheckFailed(CODE_NAMES[c], expected)
                    else:   # Kafka builds these errors from the result code alone (KeeperException.create(code))
                        errors[i] = KeeperError.create(CODE_NAMES[c])
            results.append(errors)
        if check_failed is not None:
            raise check_failed.error()
        return results

    def update_leader_and_isr(self, states: Mapping[tuple, LeaderAndIsr], controller_epoch: int,
                              expected_controller_epoch_zk_version: int) -> UpdateLeaderAndIsrResult:
        """Conditional ``/state`` writes (expected version = each LeaderAndIsr's partition_epoch), fenced.

        Every write is sent; then a failed epoch check raises ControllerMovedError (any other failure of the
        check, or a lost session, fails every partition with that error, as in Kafka). Partitions of the model's
        /state table go as rows, a run of one topic at a time (``_update_leader_and_isr_rows``)."""
        rows = self._update_leader_and_isr_rows(states, controller_epoch, expected_controller_epoch_zk_version)
        if rows is not None:
            return rows
        finished: dict = {}
        retry: list = []
        check_failed = None
        encode = encode_leader_and_isr
        try:
            items = states.items()
            outcomes = self._write_many((SetDataOp(f"{TOPICS_PATH}/{tp[0]}/partitions/{tp[1]}/state",
                                                   encode(lai, controller_epoch), lai.partition_epoch)
                                         for tp, lai in items), expected_controller_epoch_zk_version)
            for (tp, lai), o in zip(items, outcomes):
                if type(o) is SetDataResult:
                    finished[tp] = lai.with_partition_epoch(o.stat.version)
                elif type(o) is _CheckFailed:
                    check_failed = check_failed or o
                elif o.code == "BADVERSION":
                    retry.append(tp)
                else:
                    finished[tp] = o
            if check_failed is not None:
                raise check_failed.error()
        except ControllerMovedError:
            raise
        except KeeperError as e:
            return UpdateLeaderAndIsrResult({tp: e for tp in states}, [])
        return UpdateLeaderAndIsrResult(finished, retry)

    def _update_leader_and_isr_rows(self, states: Mapping[tuple, LeaderAndIsr], controller_epoch: int,
                                    expected: int) -> UpdateLeaderAndIsrResult | None:
        """``update_leader_and_isr`` through ``ZooKeeper.set_state_rows``: the same multis in the same order (each
        run of consecutive partitions of one topic as one call), the same result; None, with nothing sent, for
        input it does not take (unfenced, a name or value the rows cannot hold, an ISR with a negative id)."""
        if not states or expected == ANY_VERSION:
            return None
        runs: list = []
        topic = None
        for tp, lai in states.items():
            if type(tp) is not tuple or len(tp) != 2 or type(lai) is not LeaderAndIsr:
                return None
            if tp[0] != topic:
                topic = tp[0]
                runs.append((topic, []))
            runs[-1][1].append((tp[1], lai))
        prepared = []
        for topic, items in runs:
            n = len(items)
            isrs = [lai.isr for _, lai in items]
            width = max(map(len, isrs))
            try:
                ps = np.fromiter((p for p, _ in items), np.int64, n)
                leader = np.fromiter((lai.leader for _, lai in items), np.int64, n)
                leader_epoch = np.fromiter((lai.leader_epoch for _, lai in items), np.int64, n)
                recovery = np.fromiter((lai.recovery_state for _, lai in items), np.int64, n)
                version = np.fromiter((lai.partition_epoch for _, lai in items), np.int64, n)
                isr = np.full((n, width), -1, np.int64)
                lengths = np.fromiter(map(len, isrs), np.int64, n)
                if width:
                    isr[np.arange(width) < lengths[:, None]] = np.fromiter(chain.from_iterable(isrs), np.int64,
                                                                           int(lengths.sum()))
            except (TypeError, ValueError, OverflowError):
                return None
            if (isr[np.arange(width) < lengths[:, None]] < 0).any():
                return None     # written as given by the per-partition way; a row's ISR holds ids >= 0 only
            row = _column_write_rows(topic, ps, leader, leader_epoch, isr, recovery, version, controller_epoch,
                                     expected)
            if row is None:
                return None
            prepared.append((topic, items, row))
        finished: dict = {}
        retry: list = []
        check_failed = None
        # One session for the whole batch, as its requests are in flight on one connection: if a watcher run by a
        # write expires it, the client's new session must not carry the rest (they fail with the old one).
        session_id = self._session_id
        for topic, items, (ps, leader, leader_epoch, isr, isr_len, recovery, version, ce, exp) in prepared:
            out = self._zk.set_state_rows(session_id, topic, ps, ce, leader, leader_epoch, isr, isr_len,
                                          recovery, version, self._epoch_check(exp))
            if out.stopped >= 0:    # the session is gone: every partition fails with it, as _write_many raises
                e = SessionExpiredError()
                return UpdateLeaderAndIsrResult({tp: e for tp in states}, [])
            for (p, lai), c, v in zip(items, out.code.tolist(), out.version.tolist()):
                if c == R_OK:
                    finished[(topic, p)] = lai.with_partition_epoch(v)
                elif c == R_BADVERSION:
                    retry.append((topic, p))
                elif c == R_CHECK_NONODE or c == R_CHECK_BADVERSION:
                    check_failed = check_failed or _CheckFailed(CODE_NAMES[c], exp)
                else:
                    finished[(topic, p)] = KeeperError.create(CODE_NAMES[c], state_path(topic, p))
        if check_failed is not None:
            e = check_failed.error()
            if isinstance(e, ControllerMovedError):
                raise e
            return UpdateLeaderAndIsrResult({tp: e for tp in states}, [])
        return UpdateLeaderAndIsrResult(finished, retry)

    # --- the batch path's column methods (statemachines.ports.PartitionStateStore) -------------------------------
    def read_partition_state_columns(self, topic: str, partitions: np.ndarray) -> PartitionStateColumns:
        """``PartitionStateColumnsMixin.read_partition_state_columns`` (the same read, the same watches armed,
        the same columns) from the model's /state table; the mixin's reading and decoding when a znode of the
        batch is not in the table (a body in another form than Kafka's)."""
        ps = partitions
        if (type(topic) is str and isinstance(ps, np.ndarray) and ps.ndim == 1 and len(ps) and ps.dtype.kind in "iu"
                and int(ps.min()) >= -(1 << 31) and int(ps.max()) < (1 << 31)):
            rows = self._zk.get_state_rows(self._session_id, topic, ps,
                                           self._state_handler_partitions.get(topic, ()))
            if rows is not None:
                return PartitionStateColumns(*rows)
        return super().read_partition_state_columns(topic, partitions)

    def write_leader_and_isr_columns(self, topic: str, partitions: np.ndarray, leader: np.ndarray,
                                     leader_epoch: np.ndarray, isr: np.ndarray, recovery: np.ndarray,
                                     expected_version: np.ndarray, controller_epoch: int,
                                     expected_controller_epoch_zk_version: int) -> ColumnWriteResult:
        """``PartitionStateColumnsMixin.write_leader_and_isr_columns`` (the same fenced conditional writes, one
        multi per partition in row order, and the same result) through ``ZooKeeper.set_state_rows``. Input the
        batch form does not take (unfenced, duplicate partitions, values beyond int32, ISRs longer than
        ``state_table.MAX_ISR``, ...) goes the mixin's way."""
        rows = _column_write_rows(topic, partitions, leader, leader_epoch, isr, recovery, expected_version,
                                  controller_epoch, expected_controller_epoch_zk_version)
        if rows is None:
            return super().write_leader_and_isr_columns(topic, partitions, leader, leader_epoch, isr, recovery,
                                                        expected_version, controller_epoch,
                                                        expected_controller_epoch_zk_version)
        ps, leader, leader_epoch, isr, isr_len, recovery, expected_version, ce, expected = rows
        out = self._zk.set_state_rows(self._session_id, topic, ps, ce, leader, leader_epoch, isr, isr_len, recovery,
                                      expected_version, self._epoch_check(expected))
        n = len(ps)
        version = np.full(n, -2, dtype=np.int32)
        if out.stopped >= 0:   # update_leader_and_isr: the lost session fails every partition
            e = SessionExpiredError()
            return ColumnWriteResult(version, dict.fromkeys(range(n), e), None)
        code = out.code
        failed = np.flatnonzero((code == R_CHECK_NONODE) | (code == R_CHECK_BADVERSION))
        if len(failed):        # the first failed check: ControllerMovedError, or every partition fails with it
            e = _CheckFailed(CODE_NAMES[int(code[failed[0]])], expected).error()
            if isinstance(e, ControllerMovedError):
                return ColumnWriteResult(version, {}, e)
            return ColumnWriteResult(version, dict.fromkeys(range(n), e), None)
        ok = code == R_OK
        version[ok] = out.version[ok]
        version[code == R_BADVERSION] = -1
        errors = {i: KeeperError.create("NONODE", state_path(topic, p))
                  for i, p in zip(np.flatnonzero(code == R_NONODE).tolist(), ps[code == R_NONODE].tolist())}
        return ColumnWriteResult(version, errors, None)

    def _create_state_znodes(self, states: Mapping[tuple, LeaderIsrAndControllerEpoch],
                             expected: int) -> dict[tuple, Exception | None] | None:
        """The ``/state`` creates of ``create_partition_states`` (fenced) a run of one topic at a time, as columns
        (``_create_states_in_bulk``) or through ``ZooKeeper.create_state_rows``; None (nothing sent) for input it
        does not take."""
        items = list(states.items())
        if not all(isinstance(tp, tuple) and len(tp) == 2 and plain_topic(tp[0]) and type(tp[1]) is int
                   for tp, _ in items):
            return None
        segs = _state_columns(items)
        if segs is not None:
            out: dict[tuple, Exception | None] = dict.fromkeys(states)
            for (topic, ps, *_), errors in zip(segs, self._create_states_in_bulk(segs, expected)):
                for i, e in errors.items():
                    out[(topic, int(ps[i]))] = e
            return out
        try:
            datas = [encode_partition_state(info) for _, info in items]
        except Exception:   # the per-request loop raises it after sending the requests before it
            return None
        check = self._epoch_check(expected)
        sid = self._session_id   # as _write_many: the batch goes on the session it started on
        out = {}
        check_failed = None
        i = 0
        while i < len(items):
            topic = items[i][0][0]
            j = i + 1
            while j < len(items) and items[j][0][0] == topic:
                j += 1
            res = self._zk.create_state_rows(sid, topic, [tp[1] for tp, _ in items[i:j]], datas[i:j],
                                             check)
            if res.stopped >= 0:   # the requests after it were not sent: the lost session is raised
                raise SessionExpiredError()
            for (tp, _), c in zip(items[i:j], res.code.tolist()):
                if c == R_OK:
                    out[tp] = None
                elif c == R_CHECK_NONODE or c == R_CHECK_BADVERSION:
                    check_failed = check_failed or _CheckFailed(CODE_NAMES[c], expected)
                else:   # Kafka builds these errors from the result code alone (KeeperException.create(code))
                    out[tp] = KeeperError.create(CODE_NAMES[c])
            i = j
        if check_failed is not None:
            raise check_failed.error()
        return out

    def update_partition_state_as_leader(self, tp: tuple, leader_and_isr: LeaderAndIsr,
                                         controller_epoch: int) -> tuple[bool, int]:
        """Broker side (ReplicationUtils.updateLeaderAndIsr, before AlterPartition): a conditional write of
        ``/state`` with the leader's view; on BADVERSION it succeeded anyway if the stored state equals ours.
        Returns (succeeded, new zkVersion or -1/-2)."""
        path = f"{topic_partition_path(tp)}/state"
        data = encode_partition_state(LeaderIsrAndControllerEpoch(leader_and_isr, controller_epoch))
        r = self._write(SetDataOp(path, data, leader_and_isr.partition_epoch))
        if not isinstance(r, KeeperError):
            return True, r.stat.version
        if r.code == "BADVERSION":
            written = self._get_data(path)
            if written is None:
                return False, -1
            ours = decode_partition_state(data, written[1].version)
            return (True, written[1].version) if ours == decode_partition_state(written[0], written[1].version) \
                else (False, -1)
        if r.code == "NONODE":
            return False, UNKNOWN_VERSION
        raise r

    # --- configs ---------------------------------------------------------------------------------------------
    def get_entity_configs(self, entity_type: str, name: str) -> dict[str, str]:
        r = self._get_data(config_entity_path(entity_type, name))
        return {} if r is None else decode_entity_config(r[0])

    def get_entities_configs(self, entity_type: str, names: Iterable[str]) -> dict[str, dict[str, str]]:
        return {n: self.get_entity_configs(entity_type, n) for n in sorted(set(names))}

    def get_log_configs(self, topics: Iterable[str], defaults: Mapping[str, str] | None = None
                        ) -> tuple[dict[str, dict[str, str]], dict[str, Exception]]:
        """Per topic, the broker defaults overridden by ``/config/topics/<t>``; and per-topic failures."""
        configs, failed = {}, {}
        for topic in sorted(set(topics)):
            try:
                configs[topic] = {**(defaults or {}), **self.get_entity_configs(TOPIC_CONFIG_TYPE, topic)}
            except KeeperError as e:
                failed[topic] = e
        return configs, failed

    def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        return self.get_children(config_entity_type_path(entity_type))

    def set_or_create_entity_configs(self, entity_type: str, name: str, configs: Mapping[str, str]) -> None:
        """Set ``/config/<type>/<name>``, creating it (and parents) if missing; last writer wins."""
        path = config_entity_path(entity_type, name)
        data = encode_entity_config(configs)
        controller_version = None
        if self.enable_entity_config_controller_check:
            reg = self.get_controller_registration()
            if reg is None:
                raise ControllerMovedError(f"Cannot set entity configs for {entity_type} {name} when there is no "
                                           f"controller.")
            if reg[1] is not None and reg[1] > 0:
                raise ControllerMovedError(f"Cannot set entity configs for {entity_type} {name} directly when there "
                                           f"is a KRaft controller.")
            controller_version = reg[2]

        def set_() -> object:
            if controller_version is None:
                return self._write(SetDataOp(path, data))
            try:
                return self._zk.multi(self._session_id, (CheckOp(CONTROLLER_PATH, controller_version),
                                                         SetDataOp(path, data)))[1]
            except MultiError as e:
                return KeeperError.create(e.code, path)

        r = set_()
        if isinstance(r, KeeperError) and r.code == "NONODE":
            try:
                self._create_recursive(path, data)
                return
            except NodeExistsError:
                r = set_()
        if isinstance(r, KeeperError):
            raise r

    def create_config_change_notification(self, sanitized_entity_path: str) -> str:
        self.make_sure_persistent_path_exists(CONFIG_CHANGES_PATH)
        return self._write_checked(CreateOp(f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}",
                                            encode_config_change_notification(sanitized_entity_path),
                                            sequential=True)).path

    def delete_topic_configs(self, topics: Iterable[str], expected_controller_epoch_zk_version: int) -> None:
        self._delete_all((config_entity_path(TOPIC_CONFIG_TYPE, t) for t in topics),
                         expected_controller_epoch_zk_version)

    # --- topic deletion ------------------------------------------------------------------------------------
    def create_delete_topic_path(self, topic: str) -> None:
        self._create_recursive(delete_topic_path(topic))

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.path_exists(delete_topic_path(topic))

    def get_topic_deletions(self) -> list[str]:
        return self._get_children(DELETE_TOPICS_PATH) or []

    def delete_topic_deletions(self, topics: Iterable[str], expected_controller_epoch_zk_version: int) -> None:
        self._delete_all((delete_topic_path(t) for t in topics), expected_controller_epoch_zk_version)

    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int) -> None:
        self._delete_recursive(topic_path(topic), expected_controller_epoch_zk_version)

    # --- ISR change and log dir event notifications -------------------------------------------------------------
    def propagate_isr_changes(self, partitions: Iterable[tuple]) -> str:
        """Broker side: a sequential ``/isr_change_notification/isr_change_NNNNNNNNNN``; returns its path."""
        path = self._write_checked(CreateOp(isr_change_notification_path(), encode_isr_change_notification(partitions),
                                            sequential=True)).path
        _log.debug(f"Added {path}")
        return path

    def get_all_isr_change_notifications(self) -> list[str]:
        """The sequence numbers of the pending notifications (Kafka's znode names without the prefix)."""
        children = self._get_children(ISR_CHANGE_NOTIFICATION_PATH)
        return [sequence_number(c, ISR_CHANGE_PREFIX) for c in children] if children else []

    def get_partitions_from_isr_change_notifications(self, sequence_numbers: Iterable[str]) -> list[tuple]:
        out: list[tuple] = []
        for seq in sequence_numbers:
            r = self._get_data(isr_change_notification_path(sequence_number(seq, ISR_CHANGE_PREFIX)))
            if r is not None:
                out.extend(decode_isr_change_notification(r[0]))
        return out

    def delete_isr_change_notifications(self, sequence_numbers: Iterable[str] | None,
                                        expected_controller_epoch_zk_version: int) -> None:
        """Delete the given notifications (None: all of them)."""
        if sequence_numbers is None:
            sequence_numbers = self.get_all_isr_change_notifications()
        self._delete_all((isr_change_notification_path(sequence_number(s, ISR_CHANGE_PREFIX))
                          for s in sequence_numbers), expected_controller_epoch_zk_version)

    def propagate_log_dir_event(self, broker_id: int) -> str:
        path = self._write_checked(CreateOp(log_dir_event_notification_path(), encode_log_dir_event(broker_id),
                                            sequential=True)).path
        _log.debug(f"Added {path} for broker {broker_id}")
        return path

    def get_all_log_dir_event_notifications(self) -> list[str]:
        children = self._get_children(LOG_DIR_EVENT_NOTIFICATION_PATH)
        return [sequence_number(c, LOG_DIR_EVENT_PREFIX) for c in children] if children else []

    def get_broker_ids_from_log_dir_events(self, sequence_numbers: Iterable[str]) -> list[int]:
        out = []
        for seq in sequence_numbers:
            r = self._get_data(log_dir_event_notification_path(sequence_number(seq, LOG_DIR_EVENT_PREFIX)))
            if r is not None and (broker := decode_log_dir_event(r[0])) is not None:
                out.append(broker)
        return out

    def delete_log_dir_event_notifications(self, sequence_numbers: Iterable[str] | None,
                                           expected_controller_epoch_zk_version: int) -> None:
        if sequence_numbers is None:
            sequence_numbers = self.get_all_log_dir_event_notifications()
        self._delete_all((log_dir_event_notification_path(sequence_number(s, LOG_DIR_EVENT_PREFIX))
                          for s in sequence_numbers), expected_controller_epoch_zk_version)

    # --- reassignment and preferred replica election (/admin) ------------------------------------------------
    def get_partition_reassignment(self) -> dict[tuple, list[int]]:
        r = self._get_data(REASSIGN_PARTITIONS_PATH)
        if r is None:
            return {}
        decoded = decode_partition_reassignment(r[0])
        if decoded is None:
            _log.warning("Ignoring partition reassignment due to invalid json")
            return {}
        return decoded

    def create_partition_reassignment(self, reassignment: Mapping[tuple, Sequence[int]]) -> None:
        self._create_recursive(REASSIGN_PARTITIONS_PATH, encode_partition_reassignment(reassignment))

    def set_or_create_partition_reassignment(self, reassignment: Mapping[tuple, Sequence[int]],
                                             expected_controller_epoch_zk_version: int) -> None:
        data = encode_partition_reassignment(reassignment)
        r = self._write(SetDataOp(REASSIGN_PARTITIONS_PATH, data), expected_controller_epoch_zk_version)
        self._unwrap((r,))
        if isinstance(r, KeeperError) and r.code == "NONODE":
            self._write_checked(CreateOp(REASSIGN_PARTITIONS_PATH, data), expected_controller_epoch_zk_version)
        elif isinstance(r, KeeperError):
            raise r

    def delete_partition_reassignment(self, expected_controller_epoch_zk_version: int) -> None:
        self._delete_recursive(REASSIGN_PARTITIONS_PATH, expected_controller_epoch_zk_version)

    def reassign_partitions_in_progress(self) -> bool:
        return self.path_exists(REASSIGN_PARTITIONS_PATH)

    def create_preferred_replica_election(self, partitions: Iterable[tuple]) -> None:
        self._create_recursive(PREFERRED_REPLICA_ELECTION_PATH, encode_preferred_replica_election(partitions))

    def get_preferred_replica_election(self) -> list[tuple]:
        """The partitions of ``/admin/preferred_replica_election`` (distinct, in Kafka's Set order)."""
        r = self._get_data(PREFERRED_REPLICA_ELECTION_PATH)
        return [] if r is None else decode_preferred_replica_election(r[0])

    def delete_preferred_replica_election(self, expected_controller_epoch_zk_version: int) -> None:
        self._delete_all((PREFERRED_REPLICA_ELECTION_PATH,), expected_controller_epoch_zk_version)

    # --- cluster id and features ----------------------------------------------------------------------------
    def get_cluster_id(self) -> str | None:
        r = self._get_data(CLUSTER_ID_PATH)
        return None if r is None else decode_cluster_id(r[0])

    def create_or_get_cluster_id(self, proposed: str) -> str:
        try:
            self._create_recursive(CLUSTER_ID_PATH, encode_cluster_id(proposed))
            return proposed
        except NodeExistsError:
            cluster_id = self.get_cluster_id()
            if cluster_id is None:
                raise RuntimeError("Failed to get cluster id from Zookeeper. This can happen if /cluster/id is "
                                   "deleted from Zookeeper.") from None
            return cluster_id

    def get_or_generate_cluster_id(self) -> str:
        """KafkaServer.getOrGenerateClusterId: the stored id, or a new random one (from ``rng``)."""
        return self.get_cluster_id() or self.create_or_get_cluster_id(random_uuid(self._rng))

    def create_feature_znode(self, features: Mapping[str, int] | None = None, status: int = 1) -> None:
        self._write_checked(CreateOp(FEATURE_PATH, encode_feature_znode(features or {}, status)))

    # --- AdminZkClient ------------------------------------------------------------------------------------------
    def create_topic_with_assignment(self, topic: str, configs: Mapping[str, str] | None,
                                     assignment: Mapping[int, Sequence[int]], topic_id: str | None = None, *,
                                     validate: bool = True, uses_topic_id: bool = True) -> str | None:
        """Write ``/config/topics/<t>`` then ``/brokers/topics/<t>``; returns the topic id (new from ``rng``
        unless given; None if ``uses_topic_id`` is False)."""
        configs = dict(configs or {})
        matrix = _assignment_matrix(assignment)        # the usual form as given: no tuple per partition made
        if matrix is None:
            assignment = {int(p): tuple(r) for p, r in assignment.items()}
            matrix = _assignment_matrix(assignment)
        if matrix is not None:
            return self.create_topic_with_replica_matrix(topic, configs, matrix, topic_id, validate=validate,
                                                         uses_topic_id=uses_topic_id)
        if validate:
            self.validate_topic_create(topic, assignment)
        return self._create_topic(topic, configs, assignment, topic_id, uses_topic_id)

    def create_topic_with_replica_matrix(self, topic: str, configs: Mapping[str, str] | None, replicas: np.ndarray,
                                         topic_id: str | None = None, *, validate: bool = True,
                                         uses_topic_id: bool = True) -> str | None:
        """``create_topic_with_assignment`` of ``{p: tuple(replicas[p])}`` for the rows p = 0..n-1 of an (n, rf)
        integer matrix: the same checks, writes and result, without an object per partition."""
        replicas = np.asarray(replicas)
        if replicas.ndim != 2 or replicas.dtype.kind not in "iu":
            raise ValueError(f"replicas must be an (n, rf) integer matrix, not {replicas.dtype} {replicas.shape}")
        configs = dict(configs or {})
        if validate:
            self.validate_topic_create(topic, replicas)
        return self._create_topic(topic, configs, replicas, topic_id, uses_topic_id)

    def _create_topic(self, topic: str, configs: dict, assignment, topic_id: str | None,
                      uses_topic_id: bool) -> str | None:
        """The writes of ``create_topic_with_assignment``; ``assignment`` a dict or a replica matrix."""
        n = len(assignment)
        if n > 10:
            shown = f"({n} partitions)"
        else:
            shown = assignment if isinstance(assignment, dict) else dict(enumerate(map(tuple, assignment.tolist())))
        _log.info(f"Creating topic {topic} with configuration {configs} and initial partition assignment {shown}")
        self.set_or_create_entity_configs(TOPIC_CONFIG_TYPE, topic, configs)
        if uses_topic_id and topic_id is None:
            topic_id = random_uuid(self._rng)
        elif not uses_topic_id:
            topic_id = None
        try:
            self.create_topic_assignment(topic, topic_id, assignment)
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None
        return topic_id

    def validate_topic_create(self, topic: str, assignment: Mapping[int, tuple] | np.ndarray) -> None:
        """Raise Kafka's error for a topic creation that AdminZkClient would refuse; writes nothing.
        ``assignment`` may also be an (n, rf) replica matrix, standing for ``{p: tuple(row p)}``."""
        validate_topic_name(topic)
        if self.is_topic_marked_for_deletion(topic):
            raise TopicExistsError(f"Topic '{topic}' is marked for deletion.")
        if self.topic_exists(topic):
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        if "." in topic or "_" in topic:
            existing = self.get_all_topics_in_cluster()
            if topic in existing:
                raise TopicExistsError(f"Topic '{topic}' already exists.")
            key = topic.replace(".", "_")
            colliding = sorted(t for t in existing if t.replace(".", "_") == key)
            if colliding:
                raise InvalidTopicError(f"Topic '{topic}' collides with existing topic: {colliding[0]}")
        if isinstance(assignment, np.ndarray):
            _validate_replica_matrix(assignment)
            return
        if len({len(r) for r in assignment.values()}) != 1:
            raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
        for replicas in assignment.values():
            if len(replicas) != len(set(replicas)):
                raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {assignment}")
        if sorted(assignment) != list(range(len(assignment))):
            raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")

    def add_partitions(self, topic: str, existing: Mapping | None, new_assignment: Mapping[int, Sequence[int]], *,
                       available_brokers: Iterable[int] | None = None,
                       validate_only: bool = False) -> dict[int, ReplicaAssignment]:
        """AdminZkClient.createPartitionsWithAssignment: rewrite ``/brokers/topics/<t>`` with the existing and the
        new partitions (keeping the topic id; not fenced). ``existing`` maps (topic, p) or p to the current
        assignment (None: read it). Returns the combined assignment by partition."""
        if existing is None:
            existing = self.get_full_replica_assignment_for_topics([topic])
            if not existing:
                raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        current = {_partition(k): _assignment(v) for k, v in existing.items()}
        new = {int(p): ReplicaAssignment(tuple(r)) for p, r in new_assignment.items()}
        rf = len(current[min(current)].replicas) if current else None
        brokers = set(available_brokers) if available_brokers is not None else None
        for p, a in sorted(new.items()):
            if not a.replicas:
                raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {p}.")
            if len(a.replicas) != len(set(a.replicas)):
                raise InvalidReplicaAssignmentError(f"Duplicate brokers not allowed in replica assignment: "
                                                    f"{', '.join(map(str, a.replicas))} for partition id {p}.")
            if brokers is not None and not set(a.replicas) <= brokers:
                raise BrokerNotAvailableError(f"Some brokers specified for partition id {p} are not available. "
                                              f"Specified brokers: {', '.join(map(str, a.replicas))}, available "
                                              f"brokers: {', '.join(map(str, sorted(brokers)))}.")
        bad = sorted((p, len(a.replicas)) for p, a in new.items() if rf is not None and len(a.replicas) != rf)
        if bad:
            partitions = ", ".join(str(p) for p, _ in bad)
            factors = ", ".join(str(n) for _, n in bad)
            raise InvalidReplicaAssignmentError(
                f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
                f"[{partitions}] have replication factors [{factors}], respectively.")
        if sorted(new) != list(range(len(current), len(current) + len(new))):
            raise InvalidReplicaAssignmentError(f"Unexpected partition ids {sorted(new)} for topic '{topic}' with "
                                                f"{len(current)} partitions")
        combined = {**current, **new}
        if validate_only:
            return combined
        topic_id = self.get_topic_ids([topic]).get(topic)
        self.set_topic_assignment(topic, topic_id, combined)
        return combined

    def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        """AdminZkClient.changeTopicConfig: the new overrides, then a config change notification."""
        validate_topic_name(topic)
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.")
        self.set_or_create_entity_configs(TOPIC_CONFIG_TYPE, topic, configs)
        self.create_config_change_notification(f"{TOPIC_CONFIG_TYPE}/{topic}")


_ZNODE_METHODS = {EventType.NODE_CREATED: "handle_creation", EventType.NODE_DELETED: "handle_deletion",
                  EventType.NODE_DATA_CHANGED: "handle_data_change"}


def _broker_info(broker_id, host, port, rack, endpoints, jmx_port, features, version) -> BrokerInfo:
    eps = tuple(endpoints) if endpoints else (EndPoint(host, port),)
    return BrokerInfo(broker_id, eps, rack, tuple(sorted(features)), version, jmx_port)


def _column_write_rows(topic, partitions, leader, leader_epoch, isr, recovery, expected_version, controller_epoch,
                       expected_controller_epoch_zk_version) -> tuple | None:
    """The arguments of ``write_leader_and_isr_columns`` as ``ZooKeeper.set_state_rows`` takes them, with each
    ISR as the mixin makes it (the non-negative entries, in order); None for input only the mixin takes."""
    expected, ce = expected_controller_epoch_zk_version, controller_epoch
    if not (isinstance(expected, (int, np.integer)) and not isinstance(expected, bool) and expected >= 0
            and isinstance(ce, (int, np.integer)) and not isinstance(ce, bool) and _INT32_MIN <= ce <= _INT32_MAX
            and plain_topic(topic)):
        return None
    cols = (partitions, leader, leader_epoch, recovery, expected_version)
    if not all(isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind in "iu" for c in cols):
        return None
    n = len(partitions)
    if not n or any(len(c) != n for c in cols):
        return None
    if not (isinstance(isr, np.ndarray) and isr.ndim == 2 and isr.shape[0] == n and isr.dtype.kind in "iu"):
        return None
    for c in (partitions, leader, leader_epoch, expected_version):
        if not _fits_int32(c):
            return None
    if not (recovery.dtype == np.uint8 or (int(recovery.min()) >= 0 and int(recovery.max()) <= 255)):
        return None
    ps = partitions.astype(np.int64)
    if not distinct(ps):
        return None     # the mixin's dict of partitions keeps one row of each
    width = isr.shape[1]
    if width and not _fits_int32(isr):
        return None
    neg = isr < 0
    isr_len = width - np.count_nonzero(neg, axis=1)
    if width > MAX_ISR and int(isr_len.max()) > MAX_ISR:
        return None
    if neg.any():
        if (neg[:, :-1] & ~neg[:, 1:]).any():     # a negative before a broker id: move the ids up, in order
            isr = np.take_along_axis(isr, np.argsort(neg, axis=1, kind="stable"), axis=1)
        isr = np.where(np.arange(width) < isr_len[:, None], isr, -1)
    return (ps, leader.astype(np.int32), leader_epoch.astype(np.int32), isr.astype(np.int32),
            isr_len.astype(np.uint8), recovery.astype(np.uint8), expected_version.astype(np.int64), int(ce),
            int(expected))


_NO_TOPIC_COLUMNS = TopicColumns(None, np.zeros(0, dtype=np.int32), np.zeros((0, 0), dtype=np.int32),
                                 np.zeros((0, 0), dtype=np.int32), np.zeros((0, 0), dtype=np.int32))
for _a in _NO_TOPIC_COLUMNS[1:]:
    _a.setflags(write=False)


def _assignment_matrix(assignment: Mapping) -> np.ndarray | None:
    """An assignment {0: replicas, 1: ..., n-1: ...} (ints as keys, in that order; replica tuples or lists of
    ints, all as long, none being reassigned) as an (n, rf) matrix; None for any other. The checks are C-level
    passes (``map``, ``chain``): a million partitions' assignment is read in a fraction of a second."""
    n = len(assignment)
    if not n or set(map(type, assignment)) != {int} or list(assignment) != list(range(n)):
        return None
    values = list(assignment.values())
    if not set(map(type, values)) <= {tuple, list}:
        return None
    lengths = set(map(len, values))
    if len(lengths) != 1 or 0 in lengths:
        return None
    if set(map(type, chain.from_iterable(values))) != {int}:
        return None     # a bool or a float: written as the dict form writes it
    try:
        return np.fromiter(chain.from_iterable(values), np.int64, count=n * next(iter(lengths))).reshape(n, -1)
    except (TypeError, ValueError, OverflowError):
        return None


def _validate_replica_matrix(replicas: np.ndarray) -> None:
    """``validate_topic_create``'s checks of the replica assignment, for a matrix."""
    n, rf = replicas.shape
    if not n:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    if rf > 1:
        s = np.sort(replicas, axis=1)
        if (s[:, 1:] == s[:, :-1]).any():
            shown = dict(enumerate(map(tuple, replicas.tolist())))
            raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {shown}")


def _topic_runs(tps: list[tuple]) -> list[tuple[str, np.ndarray]]:
    """The keys of a ``create_partition_states`` dict as runs of one topic: (topic, partition ids)."""
    runs = []
    for topic, i, j in key_topic_runs(tps):
        ids = [tp[1] for tp in tps[i:j]]
        if not all(type(p) is int for p in ids) or type(topic) is not str:
            return [("", np.zeros(0, dtype=np.int64))]    # nothing the model takes as a batch
        runs.append((topic, np.array(ids, dtype=np.int64)))
    return runs


def _state_columns(items: list[tuple]) -> list[tuple] | None:
    """The (topic, partition) -> LeaderIsrAndControllerEpoch items of ``create_partition_states`` as the
    segments ``_create_states_in_bulk`` takes, one per run of one topic; None for values that are not all
    int32 (recovery 0-255, ISR entries non-negative, at most ``MAX_ISR`` of them)."""
    segs = []
    i = 0
    n = len(items)
    try:
        while i < n:
            topic = items[i][0][0]
            j = i + 1
            while j < n and items[j][0][0] == topic:
                j += 1
            run = items[i:j]
            lais = [info.leader_and_isr for _, info in run]
            ce = np.array([info.controller_epoch for _, info in run], dtype=np.int64)
            ps = np.array([tp[1] for tp, _ in run], dtype=np.int64)
            leader = np.array([lai.leader for lai in lais], dtype=np.int64)
            epoch = np.array([lai.leader_epoch for lai in lais], dtype=np.int64)
            recovery = np.array([lai.recovery_state for lai in lais], dtype=np.int64)
            isrs = [lai.isr for lai in lais]
            if not all(type(x) is tuple for x in isrs):
                return None
            fields = [info.controller_epoch for _, info in run]
            for lai_field in ("leader", "leader_epoch", "recovery_state"):
                fields.extend(map(attrgetter(lai_field), lais))
            if set(map(type, fields)) != {int} or not all(type(r) is int for x in set(isrs) for r in x):
                return None     # a bool or numpy int: the dict form writes what str() makes of it
            isr, isr_len = isr_matrix(isrs)
            if not (_fits_int32(ce) and _fits_int32(leader) and _fits_int32(epoch) and int(recovery.min()) >= 0
                    and int(recovery.max()) <= 255 and int(isr_len.max()) <= MAX_ISR
                    and (np.count_nonzero(isr >= 0, axis=1) == isr_len).all()):
                return None
            segs.append((topic, ps, ce.astype(np.int32), leader.astype(np.int32), epoch.astype(np.int32), isr,
                         isr_len, recovery.astype(np.uint8)))
            i = j
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return segs


def _creation_segment(seg, controller_epoch) -> tuple | None:
    """A segment of ``create_partition_states_columns`` as the model's column calls take it: (topic, partition
    ids int64, controller epoch, leader int32, leader epoch int32, ISR int32 -1 padded after each row's length,
    ISR lengths uint8, recovery uint8); None for input only the dict form takes."""
    if not (isinstance(seg, tuple) and len(seg) in (4, 5, 6)):
        return None
    topic, ps, leader, isr = seg[:4]
    if not (plain_topic(topic) and isinstance(controller_epoch, (int, np.integer))
            and not isinstance(controller_epoch, bool) and _INT32_MIN <= controller_epoch <= _INT32_MAX):
        return None
    if not all(isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind in "iu" for c in (ps, leader)):
        return None
    n = len(ps)
    epoch = seg[4] if len(seg) > 4 else np.zeros(n, dtype=np.int32)
    recovery = seg[5] if len(seg) > 5 else np.zeros(n, dtype=np.uint8)
    if not all(isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind in "iu" and len(c) == n
               for c in (leader, epoch, recovery)):
        return None
    if not (isinstance(isr, np.ndarray) and isr.ndim == 2 and isr.shape[0] == n and isr.dtype.kind in "iu"):
        return None
    if n and (int(ps.min()) < 0 or int(ps.max()) > _INT32_MAX or not _fits_int32(leader) or not _fits_int32(epoch)
              or int(recovery.min()) < 0 or int(recovery.max()) > 255):
        return None
    width = isr.shape[1]
    if width and n and not _fits_int32(isr):
        return None
    neg = isr < 0
    isr_len = width - np.count_nonzero(neg, axis=1)
    if n and width > MAX_ISR and int(isr_len.max()) > MAX_ISR:
        return None
    if neg.any():
        if (neg[:, :-1] & ~neg[:, 1:]).any():     # a negative before a broker id: move the ids up, in order
            isr = np.take_along_axis(isr, np.argsort(neg, axis=1, kind="stable"), axis=1)
        isr = np.where(np.arange(width) < isr_len[:, None], isr, -1)
    if width == 0:
        isr = np.full((n, 1), -1, dtype=np.int32)
    return (topic, ps.astype(np.int64), int(controller_epoch), leader.astype(np.int32), epoch.astype(np.int32),
            isr.astype(np.int32), isr_len.astype(np.uint8), recovery.astype(np.uint8))


def _fits_int32(c: np.ndarray) -> bool:
    """Every value of an integer array is an int32."""
    if c.dtype.kind == "i" and c.dtype.itemsize <= 4 or c.dtype.kind == "u" and c.dtype.itemsize <= 2:
        return True
    return not len(c) or (int(c.min()) >= _INT32_MIN and int(c.max()) <= _INT32_MAX)


_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
