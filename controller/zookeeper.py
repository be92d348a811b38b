"""An embedded ZooKeeper: the znode tree, sessions, ephemerals, one-shot watches and multi, no network.

It keeps ZooKeeper's server semantics where Kafka depends on them:

* every write request is one transaction with the next zxid (a multi is one transaction; a failed
  write still consumes its zxid, as ZooKeeper logs an error transaction), session creation and
  session close/expiry are transactions too; zxids start at epoch 1 (``0x100000001``) like a
  freshly elected ensemble's;
* ``Stat`` as ZooKeeper reports it: the parent's ``cversion`` counts child creations (deletions
  only move ``pzxid``), sequential names append the parent's ``cversion`` as ten digits;
* the error codes and check order of ZooKeeper's PrepRequestProcessor (NONODE for a missing parent
  before NODEEXISTS before NOCHILDRENFOREPHEMERALS; NONODE, BADVERSION, then NOTEMPTY on delete);
* multi is all or nothing; a failure raises ``MultiError`` whose ``results`` say OK for the ops
  before the failing one, its error code, and RUNTIMEINCONSISTENCY after it;
* watches are one-shot and per session: ``exists``/``get_data`` arm a data watch, ``get_children``
  a child watch; a deleted node's data and child watchers get one NodeDeleted each, its parent's
  child watchers NodeChildrenChanged. Events are delivered after the transaction is applied, in
  order of session id then arming order, each transaction's events after the previous one's, so a
  watcher may read, re-arm and write from inside its callback;
* any request from a session counts as a heartbeat; ``tick()`` expires the sessions whose
  deadline has passed (an expired session's ephemerals are deleted in one transaction, its watches
  dropped, then its ``on_expired`` is called).

Time comes from the injected ``clock`` (milliseconds); nothing is random, so the same calls give
the same tree, zxids and session ids. Nodes are small ``__slots__`` objects in a dict keyed by
path; ctime/mtime are not stored per node but looked up from a per-transaction time column.
"""
from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import NamedTuple

import structlog

from statemachines.errors import StoreError

_log = structlog.get_logger("kcontroller.zookeeper")

ZXID_EPOCH = 1
ZXID_BASE = ZXID_EPOCH << 32          # zxid = epoch << 32 | counter
FIRST_SESSION_ID = 0x1000000000000000  # server id 16 in the top byte, as real session ids look
ANY_VERSION = -1
_INTERN_MAX_LEN = 256                  # znode data up to this size is shared between equal nodes
_INTERN_MAX_ENTRIES = 1 << 16


# --- errors -----------------------------------------------------------------------------------------
class KeeperError(StoreError):
    """ZooKeeper's KeeperException: ``code`` is the Code name (NONODE, BADVERSION, ...).

    It is a ``statemachines.errors.StoreError`` (which holds ZooKeeper's messages and class names),
    so the state machines see store failures as one type.
    """

    @staticmethod
    def create(code: str, path: str = "") -> KeeperError:
        """KeeperException.create(code, path): the subclass for ``code``."""
        cls = _BY_CODE.get(code)
        return cls(path) if cls is not None else KeeperError(code, path)


class _CodedError(KeeperError):
    CODE = ""

    def __init__(self, path: str = ""):
        super().__init__(self.CODE, path)


class NoNodeError(_CodedError):
    CODE = "NONODE"


class NodeExistsError(_CodedError):
    CODE = "NODEEXISTS"


class BadVersionError(_CodedError):
    CODE = "BADVERSION"


class NotEmptyError(_CodedError):
    CODE = "NOTEMPTY"


class SessionExpiredError(_CodedError):
    CODE = "SESSIONEXPIRED"


class NoChildrenForEphemeralsError(_CodedError):
    CODE = "NOCHILDRENFOREPHEMERALS"


_BY_CODE = {cls.CODE: cls for cls in (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError,
                                      SessionExpiredError, NoChildrenForEphemeralsError)}


class MultiError(KeeperError):
    """A failed multi: ``code`` of the first failing op, ``failed_index``, and per-op ``results``."""

    def __init__(self, code: str, results: list, failed_index: int, path: str = ""):
        super().__init__(code)  # ZooKeeper's multi exception names the code only
        self.results = results
        self.failed_index = failed_index
        self.path = path


# --- values ----------------------------------------------------------------------------------------
class Stat(NamedTuple):
    """org.apache.zookeeper.data.Stat."""
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int


class EventType(StrEnum):
    NODE_CREATED = "NodeCreated"
    NODE_DELETED = "NodeDeleted"
    NODE_DATA_CHANGED = "NodeDataChanged"
    NODE_CHILDREN_CHANGED = "NodeChildrenChanged"


class WatchedEvent(NamedTuple):
    type: EventType
    path: str


class CheckOp(NamedTuple):
    path: str
    version: int = ANY_VERSION


class CreateOp(NamedTuple):
    path: str
    data: bytes | None = b""
    ephemeral: bool = False
    sequential: bool = False


class SetDataOp(NamedTuple):
    path: str
    data: bytes | None
    version: int = ANY_VERSION


class DeleteOp(NamedTuple):
    path: str
    version: int = ANY_VERSION


class CreateResult(NamedTuple):
    path: str        # the actual path (with the sequence suffix)


class SetDataResult(NamedTuple):
    stat: Stat


class DeleteResult(NamedTuple):
    pass


class CheckResult(NamedTuple):
    pass


class ErrorResult(NamedTuple):
    code: str        # OK for ops rolled back before the failing one, RUNTIMEINCONSISTENCY after it


# --- internals -----------------------------------------------------------------------------------
class _Node:
    __slots__ = ("data", "czxid", "mzxid", "version", "cversion", "owner", "pzxid", "children")

    def __init__(self, data, zxid, owner):
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.version = self.cversion = 0
        self.owner = owner
        self.children = None   # None, one child's path (str), or a set of the children's paths


class _Session:
    __slots__ = ("sid", "timeout", "last", "watcher", "on_expired", "ephemerals", "watches")

    def __init__(self, sid, timeout, last, watcher, on_expired):
        self.sid = sid
        self.timeout = timeout
        self.last = last
        self.watcher = watcher
        self.on_expired = on_expired
        self.ephemerals: set[str] = set()
        self.watches: set[tuple[bool, str]] = set()   # (is_child_watch, path), for cleanup on close


def _parent(path: str) -> str:
    i = path.rfind("/")
    return path[:i] if i > 0 else "/"


def _check_path(path: str, sequential: bool = False) -> None:
    """ZooKeeper's PathUtils.validatePath (client side: IllegalArgumentException)."""
    if (type(path) is str and path[:1] == "/" and (path[-1] != "/" or sequential or path == "/")
            and "//" not in path and "/." not in path and "\0" not in path):
        return
    if not isinstance(path, str) or path[:1] != "/":
        raise ValueError(f"Path must start with / character: {path!r}")
    if path[-1] == "/" and not sequential and path != "/":
        raise ValueError(f"Path must not end with / character: {path!r}")
    if "//" in path or "\0" in path:
        raise ValueError(f"Invalid path string {path!r}")
    if any(part in (".", "..") for part in path.split("/")):
        raise ValueError(f"Invalid path string {path!r}: relative paths not allowed")


def _add_child(parent: _Node, path: str) -> None:
    c = parent.children
    if c is None:
        parent.children = path
    elif type(c) is str:
        parent.children = {c, path}
    else:
        c.add(path)


def _remove_child(parent: _Node, path: str) -> None:
    c = parent.children
    if type(c) is str:
        parent.children = None
    else:
        c.discard(path)
        if len(c) == 1:
            parent.children = next(iter(c))


def _child_paths(node: _Node) -> tuple | set:
    c = node.children
    return () if c is None else (c,) if type(c) is str else c


def _component_key(path: str) -> list[str]:
    return path.split("/")


_OP_TYPES = (CheckOp, CreateOp, SetDataOp, DeleteOp)
_EV_WATCH, _EV_CALL = 0, 1
_U_CREATED, _U_DELETED, _U_SET, _U_WATCHES = 0, 1, 2, 3


class ZooKeeper:
    """The ensemble, as one in-process object. All methods take the calling ``session_id``."""

    def __init__(self, clock: Callable[[], int]):
        self._clock = clock
        root = _Node(None, 0, 0)
        self._nodes: dict[str, _Node] = {"/": root}
        self._zxid = ZXID_BASE                      # last zxid handed out
        self._times = array("q")                    # txn time by (zxid - ZXID_BASE - 1)
        self._sessions: dict[int, _Session] = {}
        self._next_sid = FIRST_SESSION_ID
        self._data_watches: dict[str, dict[int, int]] = {}   # path -> {session id: arming sequence}
        self._child_watches: dict[str, dict[int, int]] = {}
        self._watch_seq = 0
        self._pending: deque = deque()
        self._delivering = False
        self._intern: dict[bytes, bytes] = {}

    # --- time and transactions ----------------------------------------------------------------------
    def _now(self) -> int:
        return int(self._clock())

    def _next_zxid(self, now: int | None = None) -> int:
        self._zxid += 1
        self._times.append(self._now() if now is None else now)
        return self._zxid

    def _share(self, data: bytes | None) -> bytes | None:
        """Equal small data is stored once (a million /state znodes hold few distinct values)."""
        if data is None or len(data) > _INTERN_MAX_LEN:
            return data
        intern = self._intern
        shared = intern.setdefault(data, data)
        if len(intern) > _INTERN_MAX_ENTRIES:
            intern.clear()
        return shared

    def _time_of(self, zxid: int) -> int:
        return self._times[zxid - ZXID_BASE - 1] if zxid > ZXID_BASE else 0

    @property
    def last_zxid(self) -> int:
        return self._zxid

    def _live(self, sid: int, now: int | None = None) -> _Session:
        """The session of a request (SESSIONEXPIRED if it is gone); any request is a heartbeat."""
        sess = self._sessions.get(sid)
        if sess is None:
            raise SessionExpiredError()
        sess.last = self._now() if now is None else now
        return sess

    def _stat(self, node: _Node) -> Stat:
        data, children = node.data, node.children
        n = 0 if children is None else 1 if type(children) is str else len(children)
        return Stat(node.czxid, node.mzxid, self._time_of(node.czxid), self._time_of(node.mzxid), node.version,
                    node.cversion, 0, node.owner, len(data) if data else 0, n, node.pzxid)

    # --- sessions ----------------------------------------------------------------------------------
    def connect(self, timeout_ms: int, watcher: Callable[[WatchedEvent], object] | None = None,
                on_expired: Callable[[], object] | None = None) -> int:
        """Open a session (a createSession transaction); returns its id."""
        sid = self._next_sid
        self._next_sid += 1
        self._next_zxid()
        self._sessions[sid] = _Session(sid, int(timeout_ms), self._now(), watcher, on_expired)
        return sid

    def attach(self, session_id: int, watcher=None, on_expired=None) -> None:
        """Re-bind the callbacks of a session restored by ``from_dict``."""
        sess = self._sessions.get(session_id)
        if sess is None:
            raise SessionExpiredError()
        sess.watcher, sess.on_expired = watcher, on_expired

    def heartbeat(self, session_id: int) -> None:
        self._live(session_id)

    def is_alive(self, session_id: int) -> bool:
        return session_id in self._sessions

    def sessions(self) -> list[int]:
        return sorted(self._sessions)

    def session_timeout(self, session_id: int) -> int:
        return self._sessions[session_id].timeout if session_id in self._sessions else 0

    def next_session_deadline(self) -> int | None:
        """The earliest time at which ``tick()`` would expire a session, or None without sessions."""
        return min((s.last + s.timeout for s in self._sessions.values()), default=None)

    def tick(self) -> list[int]:
        """Expire every session whose last heartbeat + timeout <= now; returns their ids in id order."""
        now = self._now()
        due = sorted(sid for sid, s in self._sessions.items() if s.last + s.timeout <= now)
        for sid in due:
            if sid in self._sessions:
                self._end_session(sid, expired=True)
        return due

    def expire_session(self, session_id: int) -> None:
        """Expire now, as a network partition longer than the timeout would."""
        if session_id not in self._sessions:
            raise SessionExpiredError()
        self._end_session(session_id, expired=True)

    def close_session(self, session_id: int) -> None:
        """A clean close: ephemerals go, watches go, no expiry callback. Closing a dead session is a no-op."""
        if session_id in self._sessions:
            self._end_session(session_id, expired=False)

    def _end_session(self, sid: int, expired: bool) -> None:
        sess = self._sessions.pop(sid)
        for is_child, path in sess.watches:
            table = self._child_watches if is_child else self._data_watches
            entry = table.get(path)
            if entry is not None and entry.pop(sid, None) is not None and not entry:
                del table[path]
        zxid = self._next_zxid()
        fired: list = []
        for path in sorted(sess.ephemerals):
            if path in self._nodes:
                self._do_delete(path, ANY_VERSION, zxid, None, fired)
        _log.debug("session closed", session=hex(sid), expired=expired, ephemerals=len(sess.ephemerals))
        self._enqueue(fired)
        if expired and sess.on_expired is not None:
            self._pending.append((_EV_CALL, sess.on_expired, None))
        self._deliver()

    # --- reads ---------------------------------------------------------------------------------------
    def get_data(self, session_id: int, path: str, watch: bool = False) -> tuple[bytes | None, Stat]:
        sess = self._live(session_id)
        node = self._nodes.get(path)
        if node is None:
            _check_path(path)
            raise NoNodeError(path)
        if watch:
            self._arm(sess, False, path)
        return node.data, self._stat(node)

    def get_data_and_version(self, session_id: int, path: str, watch: bool = False) -> tuple[bytes | None, int]:
        """``get_data`` without building a Stat: (data, version). For bulk readers."""
        sess = self._live(session_id)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if watch:
            self._arm(sess, False, path)
        return node.data, node.version

    def exists(self, session_id: int, path: str, watch: bool = False) -> Stat | None:
        _check_path(path)
        sess = self._live(session_id)
        if watch:
            self._arm(sess, False, path)   # armed whether or not the node exists
        node = self._nodes.get(path)
        return None if node is None else self._stat(node)

    def get_children(self, session_id: int, path: str, watch: bool = False) -> list[str]:
        sess = self._live(session_id)
        node = self._nodes.get(path)
        if node is None:
            _check_path(path)
            raise NoNodeError(path)
        if watch:
            self._arm(sess, True, path)
        c = node.children
        if c is None:
            return []
        start = 1 if path == "/" else len(path) + 1
        return [c[start:]] if type(c) is str else [p[start:] for p in sorted(c)]

    def _arm(self, sess: _Session, is_child: bool, path: str) -> None:
        table = self._child_watches if is_child else self._data_watches
        entry = table.get(path)
        if entry is None:
            entry = table[path] = {}
        if sess.sid not in entry:
            self._watch_seq += 1
            entry[sess.sid] = self._watch_seq
            sess.watches.add((is_child, path))

    # --- writes --------------------------------------------------------------------------------------
    def create(self, session_id: int, path: str, data: bytes | None = b"", *, ephemeral: bool = False,
               sequential: bool = False) -> str:
        """Create a znode; returns the actual path (with the sequence suffix if ``sequential``)."""
        _check_path(path, sequential)
        now = self._now()
        sess = self._live(session_id, now)
        fired: list = []
        actual = self._do_create(path, data, ephemeral, sequential, sess, self._next_zxid(now), None, fired)
        self._enqueue(fired)
        self._deliver()
        return actual

    def set_data(self, session_id: int, path: str, data: bytes | None, version: int = ANY_VERSION) -> Stat:
        _check_path(path)
        now = self._now()
        self._live(session_id, now)
        fired: list = []
        node = self._do_set(path, data, version, self._next_zxid(now), None, fired)
        stat = self._stat(node)
        self._enqueue(fired)
        self._deliver()
        return stat

    def delete(self, session_id: int, path: str, version: int = ANY_VERSION) -> None:
        _check_path(path)
        now = self._now()
        self._live(session_id, now)
        fired: list = []
        self._do_delete(path, version, self._next_zxid(now), None, fired)
        self._enqueue(fired)
        self._deliver()

    def multi(self, session_id: int, ops: Iterable) -> list:
        """Apply ``ops`` atomically as one transaction; returns one result per op or raises MultiError."""
        ops = list(ops)
        for op in ops:
            if type(op) not in _OP_TYPES:
                raise TypeError(f"not a ZooKeeper op: {op!r}")
            _check_path(op.path, type(op) is CreateOp and op.sequential)
        now = self._now()
        sess = self._live(session_id, now)
        zxid = self._next_zxid(now)
        undo: list = []
        fired: list = []
        results: list = []
        for i, op in enumerate(ops):
            try:
                results.append(self._apply(op, sess, zxid, undo, fired))
            except KeeperError as e:
                self._rollback(undo)
                n = len(ops)
                res = ([ErrorResult("OK")] * i + [ErrorResult(e.code)]
                       + [ErrorResult("RUNTIMEINCONSISTENCY")] * (n - i - 1))
                raise MultiError(e.code, res, i, e.path) from None
        self._enqueue(fired)
        self._deliver()
        return results

    def _apply(self, op, sess: _Session, zxid: int, undo: list, fired: list):
        t = type(op)
        if t is SetDataOp:
            return SetDataResult(self._stat(self._do_set(op.path, op.data, op.version, zxid, undo, fired)))
        if t is CheckOp:
            node = self._nodes.get(op.path)
            if node is None:
                raise NoNodeError(op.path)
            if op.version != ANY_VERSION and node.version != op.version:
                raise BadVersionError(op.path)
            return CheckResult()
        if t is CreateOp:
            return CreateResult(self._do_create(op.path, op.data, op.ephemeral, op.sequential, sess, zxid, undo, fired))
        self._do_delete(op.path, op.version, zxid, undo, fired)
        return DeleteResult()

    def _do_create(self, path, data, ephemeral, sequential, sess, zxid, undo, fired) -> str:
        nodes = self._nodes
        i = path.rfind("/")
        parent_path = path[:i] if i > 0 else "/"
        parent = nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(path)
        if sequential:
            path = f"{path}{parent.cversion:010d}"
        if path in nodes:
            raise NodeExistsError(path)
        if parent.owner:
            raise NoChildrenForEphemeralsError(path)
        if undo is not None:
            undo.append((_U_CREATED, path, parent, parent.cversion, parent.pzxid))
        nodes[path] = _Node(self._share(data), zxid, sess.sid if ephemeral else 0)
        _add_child(parent, path)
        parent.cversion += 1
        parent.pzxid = zxid
        if ephemeral:
            sess.ephemerals.add(path)
        if self._data_watches:
            self._fire(self._data_watches, path, EventType.NODE_CREATED, fired, undo)
        if self._child_watches:
            self._fire(self._child_watches, parent_path, EventType.NODE_CHILDREN_CHANGED, fired, undo)
        return path

    def _do_set(self, path, data, version, zxid, undo, fired) -> _Node:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != ANY_VERSION and node.version != version:
            raise BadVersionError(path)
        if undo is not None:
            undo.append((_U_SET, node, node.data, node.version, node.mzxid))
        node.data = self._share(data)
        node.version += 1
        node.mzxid = zxid
        if self._data_watches:
            self._fire(self._data_watches, path, EventType.NODE_DATA_CHANGED, fired, undo)
        return node

    def _do_delete(self, path, version, zxid, undo, fired) -> None:
        if path == "/":
            raise KeeperError("BADARGUMENTS", path)
        nodes = self._nodes
        node = nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != ANY_VERSION and node.version != version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        parent_path = _parent(path)
        parent = nodes[parent_path]
        if undo is not None:
            undo.append((_U_DELETED, path, node, parent, parent.pzxid))
        del nodes[path]
        _remove_child(parent, path)
        if zxid > parent.pzxid:
            parent.pzxid = zxid
        if node.owner:
            owner = self._sessions.get(node.owner)
            if owner is not None:
                owner.ephemerals.discard(path)
        if self._data_watches or self._child_watches:
            notified = self._fire(self._data_watches, path, EventType.NODE_DELETED, fired, undo)
            self._fire(self._child_watches, path, EventType.NODE_DELETED, fired, undo, notified)
            self._fire(self._child_watches, parent_path, EventType.NODE_CHILDREN_CHANGED, fired, undo)

    def _fire(self, table, path, etype, fired, undo, exclude=None):
        entry = table.pop(path, None)
        if not entry:
            return None
        if undo is not None:
            undo.append((_U_WATCHES, table, path, entry))
        event = WatchedEvent(etype, path)
        for sid, seq in entry.items():
            if exclude is None or sid not in exclude:
                fired.append((sid, seq, event))
        return entry

    def _rollback(self, undo: list) -> None:
        nodes = self._nodes
        for rec in reversed(undo):
            kind = rec[0]
            if kind == _U_SET:
                _, node, data, version, mzxid = rec
                node.data, node.version, node.mzxid = data, version, mzxid
            elif kind == _U_CREATED:
                _, path, parent, cversion, pzxid = rec
                node = nodes.pop(path)
                _remove_child(parent, path)
                parent.cversion, parent.pzxid = cversion, pzxid
                if node.owner and node.owner in self._sessions:
                    self._sessions[node.owner].ephemerals.discard(path)
            elif kind == _U_DELETED:
                _, path, node, parent, pzxid = rec
                nodes[path] = node
                _add_child(parent, path)
                parent.pzxid = pzxid
                if node.owner and node.owner in self._sessions:
                    self._sessions[node.owner].ephemerals.add(path)
            else:
                _, table, path, entry = rec
                table.setdefault(path, {}).update(entry)

    # --- conveniences --------------------------------------------------------------------------------
    def create_recursive(self, session_id: int, path: str, data: bytes | None = b"", *,
                         ephemeral: bool = False) -> str:
        """Create ``path`` and any missing parents (parents persistent, without data), one transaction each."""
        _check_path(path)
        self._live(session_id)
        missing = []
        p = _parent(path)
        while p not in self._nodes:
            missing.append(p)
            p = _parent(p)
        for parent in reversed(missing):
            self.create(session_id, parent, None)
        return self.create(session_id, path, data, ephemeral=ephemeral)

    def delete_recursive(self, session_id: int, path: str) -> int:
        """Delete ``path`` and everything below it in one multi (children first); returns the node count."""
        _check_path(path)
        self._live(session_id)
        if path not in self._nodes:
            raise NoNodeError(path)
        order: list[str] = []
        stack = [path]
        while stack:
            p = stack.pop()
            order.append(p)
            stack.extend(sorted(_child_paths(self._nodes[p]), reverse=True))
        ops = [DeleteOp(p) for p in reversed(order)]
        self.multi(session_id, ops)
        return len(ops)

    # --- events --------------------------------------------------------------------------------------
    def _enqueue(self, fired: list) -> None:
        if fired:
            fired.sort(key=lambda f: (f[0], f[1]))
            self._pending.extend((_EV_WATCH, sid, event) for sid, _, event in fired)

    def _deliver(self) -> None:
        if self._delivering:
            return
        self._delivering = True
        try:
            pending = self._pending
            while pending:
                kind, a, b = pending.popleft()
                try:
                    if kind == _EV_WATCH:
                        sess = self._sessions.get(a)
                        if sess is not None and sess.watcher is not None:
                            sess.watcher(b)
                    else:
                        a()
                except Exception:  # ZooKeeper's event thread logs "Error while calling watcher" and goes on
                    _log.exception("Error while calling watcher", session=hex(a) if kind == _EV_WATCH else None,
                                   watched_event=str(b))
        finally:
            self._delivering = False

    # --- inspection ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, path: str) -> bool:
        return path in self._nodes

    def nodes(self) -> Iterator[tuple[str, bytes | None, Stat]]:
        """Every znode as (path, data, Stat), parents before children, siblings by name."""
        for path in sorted(self._nodes, key=_component_key):
            node = self._nodes[path]
            yield path, node.data, self._stat(node)

    def dump(self) -> str:
        """A recursive listing like ``zkCli.sh``: one line per znode, ``path`` or ``path = data``."""
        lines = []
        nodes = self._nodes
        for path in sorted(nodes, key=_component_key):
            data = nodes[path].data
            if data:
                text = data.decode("utf-8", "backslashreplace").replace("\n", "\\n")
                lines.append(f"{path} = {text}")
            else:
                lines.append(path)
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        """A snapshot in canonical order: every node (parents first) with its stats, the zxid counter and
        transaction times, the sessions and their armed watches. Plain lists, ints, bytes and None."""
        nodes = self._nodes
        return {
            "zxid": self._zxid,
            "times": self._times.tolist(),
            "next_session_id": self._next_sid,
            "nodes": [[p, n.data, n.czxid, n.mzxid, n.version, n.cversion, n.owner, n.pzxid]
                      for p in sorted(nodes, key=_component_key) for n in (nodes[p],)],
            "sessions": [[sid, s.timeout, s.last] for sid, s in sorted(self._sessions.items())],
            "watch_seq": self._watch_seq,
            "data_watches": sorted([p, sid, seq] for p, e in self._data_watches.items() for sid, seq in e.items()),
            "child_watches": sorted([p, sid, seq] for p, e in self._child_watches.items() for sid, seq in e.items()),
        }

    @classmethod
    def from_dict(cls, d: dict, clock: Callable[[], int]) -> ZooKeeper:
        """Rebuild from ``to_dict`` output; sessions come back without callbacks (see ``attach``)."""
        zk = cls(clock)
        zk._zxid = d["zxid"]
        zk._times = array("q", d["times"])
        zk._next_sid = d["next_session_id"]
        for sid, timeout, last in d["sessions"]:
            zk._sessions[sid] = _Session(sid, timeout, last, None, None)
        nodes = zk._nodes
        nodes.clear()
        for path, data, czxid, mzxid, version, cversion, owner, pzxid in d["nodes"]:
            node = _Node(data, czxid, owner)
            node.mzxid, node.version, node.cversion, node.pzxid = mzxid, version, cversion, pzxid
            nodes[path] = node
        for path, node in nodes.items():
            if path != "/":
                _add_child(nodes[_parent(path)], path)
            if node.owner and node.owner in zk._sessions:
                zk._sessions[node.owner].ephemerals.add(path)
        zk._watch_seq = d["watch_seq"]
        for key, table, is_child in (("data_watches", zk._data_watches, False),
                                     ("child_watches", zk._child_watches, True)):
            for path, sid, seq in sorted(d[key], key=lambda w: w[2]):
                table.setdefault(path, {})[sid] = seq
                if sid in zk._sessions:
                    zk._sessions[sid].watches.add((is_child, path))
        return zk
