"""An embedded ZooKeeper: the znode tree, sessions, ephemerals, one-shot watches and multi, no network.

It keeps ZooKeeper's server semantics where Kafka depends on them:

* every write request is one transaction with the next zxid (a multi is one transaction; a failed
  write still consumes its zxid, as ZooKeeper logs an error transaction), session creation and
  session close/expiry are transactions too; zxids start at epoch 1 (``0x100000001``) like a
  freshly elected ensemble's;
* ``Stat`` as ZooKeeper reports it. A znode stores, as ZooKeeper's StatPersisted does, the number
  of children ever created under it (a creation bumps it and moves ``pzxid``; a deletion only
  moves ``pzxid``); sequential names append that stored count as ten digits (PrepRequestProcessor),
  and the ``cversion`` a client sees is ``2 * stored - num_children`` (DataNode.copyStat: every
  child no longer there was deleted), so creations and deletions both count;
* the error codes and check order of ZooKeeper's PrepRequestProcessor (NONODE for a missing parent
  before NODEEXISTS before NOCHILDRENFOREPHEMERALS; NONODE, BADVERSION, then NOTEMPTY on delete);
* multi is all or nothing; a failure raises ``MultiError`` whose ``results`` say OK for the ops
  before the failing one, its error code, and RUNTIMEINCONSISTENCY after it;
* watches are one-shot and per session: ``exists``/``get_data`` arm a data watch, ``get_children``
  a child watch; a deleted node's data and child watchers get one NodeDeleted each, its parent's
  child watchers NodeChildrenChanged. Events are delivered after the transaction is applied, in
  order of session id, and each session's in the order the transaction fired them (op order in a
  multi, as the server sends each one down the connection while it applies the op), each
  transaction's events after the previous one's, so a watcher may read, re-arm and write from
  inside its callback;
* session timeouts are negotiated as ZooKeeperServer.processConnectRequest does: the requested
  timeout is clamped to [``min_session_timeout_ms``, ``max_session_timeout_ms``], by default
  [2, 20] x ``tick_time_ms`` (2000 ms, as in zoo_sample.cfg), so 1,000 ms becomes 4,000 ms;
  the negotiated timeout is the session's (``session_timeout``, expiry);
* any request from a session counts as a heartbeat; ``tick()`` expires the sessions whose
  deadline has passed (an expired session's ephemerals are deleted in one transaction, its watches
  dropped, then its ``on_expired`` is called).

Time comes from the injected ``clock`` (milliseconds); nothing is random, so the same calls give
the same tree, zxids and session ids. A znode is an immutable plain tuple ``(data, czxid, mzxid,
version, cversion, owner, pzxid, children)`` in a dict keyed by path, replaced on every change
(``children`` is None, the one child's path, or a set of paths): a tuple of bytes, ints and strings
is not tracked by Python's cyclic GC, so a big tree adds no objects for the collector to track.
ctime/mtime are not stored per node but looked up from a per-transaction time column.

The partitions' ``/brokers/topics/<t>/partitions/<p>/state`` znodes are kept as columns instead, one
``state_table.StateTable`` per topic (row = partition id: controller epoch, leader, leader epoch,
recovery state, ISR, czxid, mzxid, version), and so are their parents ``.../partitions/<p>`` as Kafka
creates them (czxid, stored cversion, pzxid, whether the /state exists). A row has no entry of its own
in the dict of znodes (``_Tree``): a lookup of its path answers the row's marker (``p`` for a /state row,
``~p`` for a parent row) while the table holds the row, so existence, children, ordering and deletes
work as for any znode, and a million partitions add no path strings; a topic's ``.../partitions`` znode
whose children are exactly its parent rows lists and counts them from the table (``_RowChildren``).
The JSON body is made only when someone reads it, byte for byte what ``zk_data.encode_leader_and_isr``
writes; a body in any other form (or a /state znode that is ephemeral or gets a child, a parent with data
or another child) is kept as a tuple, verbatim. The layout is not observable: every read, Stat, watch and
dump is what the tuples would give; a snapshot (``to_dict``) holds the rows as column buffers per topic
(``to_dict(per_znode=True)``: every znode on its own, as a model without tables writes it), and
``from_dict`` reads both layouts.

``multi_many`` (or ``iter_multi``, lazily) applies a batch of multis, each exactly as ``multi``
would (its own transaction and zxid, rollback, watch delivery before the next one), and
``get_data_and_version_many`` reads a batch of znodes: Kafka pipelines such requests; here they
save the per-call overhead. ``get_state_rows``, ``set_state_rows`` and ``create_state_rows`` are the
same for many /state znodes of one topic (a read; one fenced conditional write or create per
partition), answered as array work on the table where no watch is armed. ``create_partition_parents``
and ``create_state_columns`` are a new topic's fenced creates (its parents, then its /state znodes from
columns), done as array work where nothing under the topic's /partitions is watched, and refused (None,
nothing done) otherwise, for the caller to send the requests one by one.
"""
from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Container, Iterable, Iterator
from enum import StrEnum
from operator import itemgetter
from typing import NamedTuple

import msgpack
import numpy as np
import structlog


from controller.store.state_table import (
    CODES, MIN_ROWS, R_BADVERSION, R_CHECK_BADVERSION, R_CHECK_NONODE, R_NOCHILDRENFOREPHEMERALS, R_NODEEXISTS, R_NONODE,
    R_NOT_SENT, R_OK, TOPICS_PREFIX, StateRows, StateTable, StateWriteOutcome, encode_state, isr_matrix, load_table,
    parent_fits, parent_key, parse_body, parse_state, partitions_topic, plain_topic, state_key, state_path, table_content,
    topic_of,
)
from events.arrays import distinct, from_narrow_bytes, narrow_bytes
from statemachines.errors import StoreError

_log = structlog.get_logger("kcontroller.zookeeper")

ZXID_EPOCH = 1
ZXID_BASE = ZXID_EPOCH << 32          # zxid = epoch << 32 | counter
_ZXID_BASE_1 = ZXID_BASE + 1          # the zxid of self._times[0]
FIRST_SESSION_ID = 0x1000000000000000  # server id 16 in the top byte, as real session ids look
DEFAULT_TICK_TIME_MS = 2000            # tickTime in zoo_sample.cfg (ZooKeeperServer.DEFAULT_TICK_TIME is 3000)
DEFAULT_MIN_SESSION_TIMEOUT_MS = 2 * DEFAULT_TICK_TIME_MS    # minSessionTimeout unset: 2 ticks
DEFAULT_MAX_SESSION_TIMEOUT_MS = 20 * DEFAULT_TICK_TIME_MS   # maxSessionTimeout unset: 20 ticks
ANY_VERSION = -1
_INTERN_MAX_LEN = 256                  # znode data up to this size is shared between equal nodes
_INTERN_MAX_ENTRIES = 1 << 16


def negotiated_session_timeout(timeout_ms: int, min_ms: int = DEFAULT_MIN_SESSION_TIMEOUT_MS,
                               max_ms: int = DEFAULT_MAX_SESSION_TIMEOUT_MS) -> int:
    """The session timeout a server with these bounds grants a client asking for ``timeout_ms``
    (ZooKeeperServer.processConnectRequest: raised to the minimum, then lowered to the maximum)."""
    t = int(timeout_ms)
    if t < min_ms:
        t = min_ms
    if t > max_ms:
        t = max_ms
    return t


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
# A znode: (data, czxid, mzxid, version, cversion, owner, pzxid, children), see the module docstring.
_DATA, _CZXID, _MZXID, _VERSION, _CVERSION, _OWNER, _PZXID, _CHILDREN = range(8)


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


class _RowChildren:
    """The children of a ``/brokers/topics/<t>/partitions`` znode when they are exactly its topic's parent rows
    (``tables``: topic -> StateTable): counted, tested and listed from the table, no path held. A change
    that is not a parent row's makes them a set of paths first (``materialized``)."""
    __slots__ = ("tables", "topic")

    def __init__(self, tables: dict, topic: str):
        self.tables, self.topic = tables, topic

    def __len__(self) -> int:
        table = self.tables.get(self.topic)
        return table.pcount if table is not None else 0

    def __iter__(self):
        table = self.tables.get(self.topic)
        if table is None:
            return iter(())
        prefix = table.prefix
        return iter([f"{prefix}{p}" for p in np.flatnonzero(table.parent).tolist()])

    def materialized(self):
        """None, the one path, or a set of the paths."""
        paths = list(self)
        return None if not paths else paths[0] if len(paths) == 1 else set(paths)


def _with_child(children, path: str):
    """``children`` (None, a path, or a set of paths) with ``path`` added (a set is changed in place)."""
    if type(children) is _RowChildren:
        children = children.materialized()
    if children is None:
        return path
    if type(children) is str:
        return children if children == path else {children, path}
    children.add(path)
    return children


def _without_child(children, path: str):
    """``children`` with ``path`` removed (a set is changed in place; one left becomes its path)."""
    if type(children) is _RowChildren:   # (the row may be gone from the table already: then it is not listed)
        children = children.materialized()
    if children is None:
        return None
    if type(children) is str:
        return None if children == path else children
    children.discard(path)
    return next(iter(children)) if len(children) == 1 else children


def _child_paths(node: tuple | int) -> tuple | set:
    if type(node) is int:   # a /state row of a StateTable: a leaf
        return ()
    c = node[_CHILDREN]
    return () if c is None else (c,) if type(c) is str else c


def _component_key(path: str) -> list[str]:
    return path.split("/")


_OP_TYPES = (CheckOp, CreateOp, SetDataOp, DeleteOp)
_new = tuple.__new__   # builds a NamedTuple without its Python-level __new__ (hot paths)
_CHECK_RESULT = CheckResult()
_DELETE_RESULT = DeleteResult()


def _checked_ops(ops: Iterable) -> list:
    """The ops of a multi as a list, refused (TypeError, ValueError) as the client library refuses them."""
    ops = list(ops)
    for op in ops:
        t = type(op)
        if t not in _OP_TYPES:
            raise TypeError(f"not a ZooKeeper op: {op!r}")
        path = op.path
        if not (type(path) is str and path[:1] == "/" and path[-1] != "/" and "//" not in path
                and "/." not in path and "\0" not in path):
            _check_path(path, t is CreateOp and op.sequential)
    return ops


_MISSING = object()
_PREFIX_LEN = len(TOPICS_PREFIX)


class _Tree(dict):
    """The znodes by path: a dict of node tuples, and every row of the /state tables (``tables``: topic ->
    StateTable) without an entry of its own — a lookup of a row's path that the dict does not hold answers the
    row's marker (``p`` for a /state row, ``~p`` for a parent row) while the table holds the row, so a table
    of a million partitions adds no path strings and no dict entries. Storing a marker at a path only drops
    an entry the dict may hold there (the caller has put the row in the table); storing a tuple at a row's
    path requires the row to have been dropped; deleting a row's path leaves dropping the row to the caller."""
    __slots__ = ("tables",)

    def __init__(self, tables: dict[str, StateTable], nodes: dict | None = None):
        super().__init__(nodes or {})
        self.tables = tables

    def _row(self, path: str) -> int | None:
        """The marker of the table row at ``path`` (which starts with TOPICS_PREFIX), None if none is held."""
        i = path.find("/", _PREFIX_LEN)
        if i < 0:
            return None
        table = self.tables.get(path[_PREFIX_LEN:i])
        if table is None or not path.startswith("/partitions/", i):
            return None
        rest = path[i + 12:]
        state = rest[-6:] == "/state"
        if state:
            rest = rest[:-6]
        if not (rest.isdigit() and rest.isascii() and len(rest) <= 10 and (rest[0] != "0" or rest == "0")):
            return None
        p = int(rest)
        if p >= table.cap:
            return None
        if state:
            return p if table.present.item(p) else None
        return ~p if table.parent.item(p) else None

    def get(self, path, default=None):
        node = dict.get(self, path)
        if node is not None:
            return node
        if self.tables and path[:_PREFIX_LEN] == TOPICS_PREFIX:
            row = self._row(path)
            if row is not None:
                return row
        return default

    def __contains__(self, path) -> bool:
        return dict.__contains__(self, path) or (
            bool(self.tables) and path[:_PREFIX_LEN] == TOPICS_PREFIX and self._row(path) is not None)

    def __getitem__(self, path):
        node = dict.get(self, path)
        if node is None:
            node = self._row(path) if self.tables and path[:_PREFIX_LEN] == TOPICS_PREFIX else None
            if node is None:
                raise KeyError(path)
        return node

    def __setitem__(self, path, node) -> None:
        if type(node) is int:
            dict.pop(self, path, None)
        else:
            dict.__setitem__(self, path, node)

    def __delitem__(self, path) -> None:
        if dict.pop(self, path, _MISSING) is _MISSING and path not in self:
            raise KeyError(path)

    def pop(self, path, default=_MISSING):
        node = dict.pop(self, path, _MISSING)
        if node is _MISSING:
            node = self.get(path)
            if node is None:
                if default is _MISSING:
                    raise KeyError(path)
                return default
        return node

    def __len__(self) -> int:
        return dict.__len__(self) + sum(t.count + t.pcount for t in self.tables.values())

    def entries(self) -> list[tuple[str, tuple | int]]:
        """(path, node tuple or row marker) of every znode, in no particular order."""
        out = list(dict.items(self))
        for table in self.tables.values():
            prefix = table.prefix
            ps = np.flatnonzero(table.parent).tolist()
            out.extend(zip([f"{prefix}{p}" for p in ps], [~p for p in ps]))
            ps = np.flatnonzero(table.present).tolist()
            out.extend(zip([f"{prefix}{p}/state" for p in ps], ps))
        return out

    def __iter__(self):
        return iter([path for path, _ in self.entries()])

    def keys(self):
        return [path for path, _ in self.entries()]

    def items(self):
        return self.entries()

    def values(self):
        return [node for _, node in self.entries()]


# A table in a snapshot: its rows' columns as little-endian buffers (the /state rows at ``p``, the parent rows
# at ``pp``; an ISR as ``isr_len`` entries of a row of ``width``); the bodies are made again when read. Each
# column is in the narrowest width that holds its values (``events.arrays.narrow_bytes``), zxids as their
# distance from ``zxid_base``; a snapshot written before (no ``zxid_base``) has the fixed dtypes below.
_STATE_COLUMNS = (("ce", "<i4"), ("leader", "<i4"), ("leader_epoch", "<i4"), ("recovery", "u1"), ("isr_len", "u1"),
                  ("czxid", "<i8"), ("mzxid", "<i8"), ("version", "<i8"))
_PARENT_COLUMNS = (("pczxid", "<i8"), ("pcversion", "<i8"), ("ppzxid", "<i8"), ("pchild", "u1"))
_ZXID_COLUMNS = frozenset({"czxid", "mzxid", "pczxid", "ppzxid"})
_COLUMN_DTYPES = dict(_STATE_COLUMNS + _PARENT_COLUMNS)


def _table_columns(table: StateTable) -> dict:
    table.flush()
    ps = np.flatnonzero(table.present)
    pp = np.flatnonzero(table.parent)
    width = max(int(table.isr_len[ps].max()) if len(ps) else 0, 1)
    cols = {"p": ps.astype("<i4").tobytes(), "width": width, "zxid_base": ZXID_BASE,
            "isr": narrow_bytes(table.isr[ps, :width])}
    for rows, names in ((ps, _STATE_COLUMNS), (pp, _PARENT_COLUMNS)):
        for name, _ in names:
            values = getattr(table, name)[rows]
            cols[name] = narrow_bytes(values - ZXID_BASE if name in _ZXID_COLUMNS else values)
    cols["pp"] = pp.astype("<i4").tobytes()
    return cols


def _table_column(cols: dict, name: str, n: int, what: str) -> np.ndarray:
    """A column of ``_table_columns``' output (of this version or an earlier one) as its dtype."""
    base = cols.get("zxid_base")
    if base is None:
        return _buffer(cols[name], _COLUMN_DTYPES.get(name, "<i4"), what, n)
    if type(base) is not int:
        raise ValueError(f"ZooKeeper snapshot: {what}: zxid_base is not an int")
    values = from_narrow_bytes(cols[name], n, f"ZooKeeper snapshot: {what}")
    if name in _ZXID_COLUMNS:
        return values.astype(np.int64) + base
    return values.astype(_COLUMN_DTYPES.get(name, "<i4"))


def _time_runs(times: array) -> dict:
    """The transaction times (one per zxid, never decreasing: many transactions share a millisecond) as runs:
    each distinct time and how many transactions in a row have it, in the narrowest widths."""
    t = np.frombuffer(times, dtype=np.int64) if len(times) else np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]) if len(t) else np.zeros(0, dtype=np.int64)
    lengths = np.diff(np.r_[starts, len(t)])
    return {"runs": len(starts), "time": narrow_bytes(t[starts]), "count": narrow_bytes(lengths)}


def _from_time_runs(d: dict) -> np.ndarray:
    try:
        n = d["runs"]
        if type(n) is not int or n < 0:
            raise ValueError(f"ZooKeeper snapshot: times: {n!r} runs")
        values = from_narrow_bytes(d["time"], n, "ZooKeeper snapshot: times").astype(np.int64)
        counts = from_narrow_bytes(d["count"], n, "ZooKeeper snapshot: times counts").astype(np.int64)
    except KeyError as e:
        raise ValueError(f"ZooKeeper snapshot: times have no {e}") from None
    if len(counts) and int(counts.min()) < 1:
        raise ValueError("ZooKeeper snapshot: times: a run of no transactions")
    return np.repeat(values, counts).astype("<i8")


def _buffer(data, dtype: str, what: str, n: int | None = None) -> np.ndarray:
    if not isinstance(data, bytes) or len(data) % np.dtype(dtype).itemsize:
        raise ValueError(f"ZooKeeper snapshot: {what} is not a buffer of {dtype}")
    a = np.frombuffer(data, dtype=dtype)
    if n is not None and len(a) != n:
        raise ValueError(f"ZooKeeper snapshot: {what} has {len(a)} entries, expected {n}")
    return a


def _load_table_columns(topic: str, cols: dict) -> StateTable:
    """The table of ``_table_columns``' output."""
    if not (plain_topic(topic) and isinstance(cols, dict)):
        raise ValueError(f"ZooKeeper snapshot: a table of {topic!r} is not a topic's columns")
    try:
        ps = _buffer(cols["p"], "<i4", f"table {topic}: p").astype(np.int64)
        pp = _buffer(cols["pp"], "<i4", f"table {topic}: pp").astype(np.int64)
        width = cols["width"]
        if type(width) is not int or width < 1:
            raise ValueError(f"ZooKeeper snapshot: table {topic}: width {width!r} is not a positive int")
        state = {name: _table_column(cols, name, len(ps), f"table {topic}: {name}") for name, _ in _STATE_COLUMNS}
        parent = {name: _table_column(cols, name, len(pp), f"table {topic}: {name}") for name, _ in _PARENT_COLUMNS}
        isr = _table_column(cols, "isr", len(ps) * width, f"table {topic}: isr").reshape(len(ps), width)
    except KeyError as e:
        raise ValueError(f"ZooKeeper snapshot: table {topic} has no column {e}") from None
    if (len(ps) and int(ps.min()) < 0) or (len(pp) and int(pp.min()) < 0):
        raise ValueError(f"ZooKeeper snapshot: table {topic} has a negative partition id")
    if len(ps) and int(state["isr_len"].max()) > width:
        raise ValueError(f"ZooKeeper snapshot: table {topic} has an ISR longer than its width {width}")
    table = StateTable(topic)
    table.grow(max(int(ps.max()) + 1 if len(ps) else 0, int(pp.max()) + 1 if len(pp) else 0))
    if len(ps):
        table.put_many(ps, state["ce"], state["leader"], state["leader_epoch"], state["recovery"], isr,
                       state["isr_len"], state["czxid"], state["mzxid"], state["version"])
    if len(pp):
        table.parent[pp] = True
        table.pcount = len(pp)
        for name, _ in _PARENT_COLUMNS:
            getattr(table, name)[pp] = parent[name]
    if int(np.count_nonzero(table.present)) != len(ps) or int(np.count_nonzero(table.parent)) != len(pp):
        raise ValueError(f"ZooKeeper snapshot: table {topic} has a partition twice")
    return table


_EV_WATCH, _EV_CALL = 0, 1
_first = itemgetter(0)
_U_CREATED, _U_DELETED, _U_SET, _U_WATCHES = 0, 1, 2, 3


class ZooKeeper:
    """The ensemble, as one in-process object. All methods take the calling ``session_id``."""

    def __init__(self, clock: Callable[[], int], *, tick_time_ms: int = DEFAULT_TICK_TIME_MS,
                 min_session_timeout_ms: int | None = None, max_session_timeout_ms: int | None = None):
        """``min_session_timeout_ms``/``max_session_timeout_ms`` None (or -1, as in zoo.cfg) mean 2 and 20
        ``tick_time_ms`` (QuorumPeerConfig); a minimum above the maximum is refused, as the server refuses it."""
        tick = int(tick_time_ms)
        if tick <= 0:
            raise ValueError("tickTime is not set")
        lo, hi = min_session_timeout_ms, max_session_timeout_ms
        lo = tick * 2 if lo is None or lo == -1 else int(lo)
        hi = tick * 20 if hi is None or hi == -1 else int(hi)
        if lo > hi:
            raise ValueError("minSessionTimeout must not be larger than maxSessionTimeout")
        self._tick_time = tick
        self._min_session_timeout = lo
        self._max_session_timeout = hi
        self._clock = clock
        self._tables: dict[str, StateTable] = {}            # topic -> its /state znodes and parents, see _put
        self._nodes = _Tree(self._tables, {"/": (None, 0, 0, 0, 0, 0, 0, None)})
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
        self._state_watched: dict[str, set[int]] = {}       # topic -> partitions whose /state has a data watch
        self._watched_under: dict[str, int] = {}            # topic -> watched paths at or below its /partitions

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

    def _stat(self, node: tuple) -> Stat:
        data, czxid, mzxid, version, cversion, owner, pzxid, children = node
        n = 0 if children is None else 1 if type(children) is str else len(children)
        times = self._times
        return _new(Stat, (czxid, mzxid, times[czxid - _ZXID_BASE_1] if czxid > ZXID_BASE else 0,
                           times[mzxid - _ZXID_BASE_1] if mzxid > ZXID_BASE else 0, version, 2 * cversion - n, 0,
                           owner, len(data) if data else 0, n, pzxid))

    # --- the /state table ----------------------------------------------------------------------------
    # A /brokers/topics/<t>/partitions/<p>/state znode whose body is Kafka's canonical form (and which is a
    # plain persistent leaf) lives in its topic's StateTable: ``_nodes[path]`` is then its partition id, an
    # int, instead of a node tuple, and ``_put``/``_pop``/``_node`` move between the two forms. Every other
    # path, and a /state znode whose body is anything else, is a tuple as before. A partition's parent
    # /brokers/topics/<t>/partitions/<p> as Kafka creates it is a parent row of the same table: ``~p``.
    def _node(self, path: str) -> tuple | None:
        """The node tuple at ``path`` (a table row made into one), or None."""
        node = self._nodes.get(path)
        if type(node) is int:
            return self._tables[topic_of(path)].node(node)
        return node

    def _put(self, path: str, node: tuple) -> None:
        """Store ``node`` at ``path``: in its topic's table if it is a /state znode or a partition's parent that
        fits there."""
        nodes = self._nodes
        if path[-6:] != "/state":
            key = parent_key(path)
            if key is not None:
                topic, p = key
                table = self._tables.get(topic)
                if parent_fits(node, path) and (p < MIN_ROWS if table is None else table.fits(p)):
                    if table is None:
                        table = self._tables[topic] = StateTable(topic)
                    table.put_parent(p, node[_CZXID], node[_CVERSION], node[_PZXID], node[_CHILDREN] is not None)
                    nodes[path] = ~p
                    return
                if type(nodes.get(path)) is int:
                    self._drop_row(topic, ~p)
        else:
            key = state_key(path)
            if key is not None:
                topic, p = key
                data, czxid, mzxid, version, cversion, owner, pzxid, children = node
                parsed = (parse_body(data) if not cversion and not owner and children is None and pzxid == czxid
                          else None)
                table = self._tables.get(topic)
                if parsed is not None and (p < MIN_ROWS if table is None else table.fits(p)):
                    if table is None:
                        table = self._tables[topic] = StateTable(topic)
                    table.put(p, parsed[0], czxid, mzxid, version, parsed[1])
                    nodes[path] = p
                    return
                if type(nodes.get(path)) is int:
                    self._drop_row(topic, p)
        nodes[path] = node

    def _pop(self, path: str) -> tuple:
        node = self._nodes.pop(path)
        if type(node) is int:
            topic = topic_of(path)
            p, node = node, self._tables[topic].node(node)
            self._drop_row(topic, p)
        return node

    def _drop_row(self, topic: str, p: int) -> None:
        """Row ``p`` (a /state row; < 0: the parent row ``~p``) no longer held in the table."""
        table = self._tables[topic]
        if p >= 0:
            table.clear(p)
        else:
            top = table.prefix[:-1]
            node = dict.get(self._nodes, top)
            if node is not None and type(node[_CHILDREN]) is _RowChildren:   # the row's path stays a child
                self._nodes[top] = (*node[:_CHILDREN], node[_CHILDREN].materialized())
            table.clear_parent(~p)
        if not table.count and not table.pcount:
            del self._tables[topic]

    def _version(self, path: str, node: tuple | int) -> int:
        return self._tables[topic_of(path)].version_of(node) if type(node) is int else node[_VERSION]

    def _materializer(self) -> Callable[[str, tuple | int], tuple]:
        """``node_of(path, nodes[path])``: the node tuple, each topic's rows made in one pass (dump, snapshots)."""
        tables = self._tables
        made: dict[str, dict[int, tuple]] = {}

        def node_of(path: str, node: tuple | int) -> tuple:
            if type(node) is not int:
                return node
            topic = topic_of(path)
            rows = made.get(topic)
            if rows is None:
                rows = made[topic] = tables[topic].nodes()
            return rows[node]
        return node_of

    def _load_state_tables(self) -> None:
        """Move the /state znodes of a rebuilt tree into their topics' tables (``from_dict``)."""
        by_topic: dict[str, list] = {}
        parents: dict[str, list] = {}
        for path, node in dict.items(self._nodes):
            if path[-6:] != "/state":
                key = parent_key(path)
                if key is not None and parent_fits(node, path):
                    parents.setdefault(key[0], []).append((key[1], path, node[_CZXID], node[_CVERSION], node[_PZXID],
                                                           node[_CHILDREN] is not None))
                continue
            key = state_key(path)
            if key is None:
                continue
            data, czxid, mzxid, version, cversion, owner, pzxid, children = node
            if cversion or owner or children is not None or pzxid != czxid:
                continue
            parsed = parse_body(data)
            if parsed is not None:
                by_topic.setdefault(key[0], []).append((key[1], path, parsed[0], czxid, mzxid, version, parsed[1]))
        nodes = self._nodes
        for topic in by_topic.keys() | parents.keys():
            table, taken, taken_parents = load_table(topic, by_topic.get(topic, []), parents.get(topic, []))
            if taken or taken_parents:
                self._tables[topic] = table
                for row in taken:
                    nodes[row[1]] = row[0]
                for row in taken_parents:
                    nodes[row[1]] = ~row[0]

    def _watch_added(self, is_child: bool, path: str) -> None:
        """A watch table has a new entry for ``path``."""
        topic = partitions_topic(path)
        if topic is None:
            return
        self._watched_under[topic] = self._watched_under.get(topic, 0) + 1
        key = state_key(path) if not is_child and path[-6:] == "/state" else None
        if key is not None:
            self._state_watched.setdefault(key[0], set()).add(key[1])

    def _watch_removed(self, is_child: bool, path: str) -> None:
        """A watch table's entry for ``path`` is gone."""
        topic = partitions_topic(path)
        if topic is None:
            return
        left = self._watched_under[topic] - 1
        if left:
            self._watched_under[topic] = left
        else:
            del self._watched_under[topic]
        key = state_key(path) if not is_child and path[-6:] == "/state" else None
        if key is not None:
            watched = self._state_watched.get(key[0])
            if watched is not None:
                watched.discard(key[1])
                if not watched:
                    del self._state_watched[key[0]]

    # --- sessions ----------------------------------------------------------------------------------
    @property
    def tick_time_ms(self) -> int:
        return self._tick_time

    @property
    def min_session_timeout_ms(self) -> int:
        return self._min_session_timeout

    @property
    def max_session_timeout_ms(self) -> int:
        return self._max_session_timeout

    def negotiated_session_timeout(self, timeout_ms: int) -> int:
        """The timeout a session asking for ``timeout_ms`` gets (ZooKeeperServer.processConnectRequest):
        raised to the minimum, lowered to the maximum."""
        return negotiated_session_timeout(timeout_ms, self._min_session_timeout, self._max_session_timeout)

    def connect(self, timeout_ms: int, watcher: Callable[[WatchedEvent], object] | None = None,
                on_expired: Callable[[], object] | None = None) -> int:
        """Open a session (a createSession transaction) asking for ``timeout_ms``; returns its id. The session
        gets the negotiated timeout (``negotiated_session_timeout``; see ``session_timeout``)."""
        sid = self._next_sid
        self._next_sid += 1
        self._next_zxid()
        self._sessions[sid] = _Session(sid, self.negotiated_session_timeout(timeout_ms), self._now(), watcher,
                                       on_expired)
        return sid

    def attach(self, session_id: int, watcher=None, on_expired=None) -> None:
        """Re-bind the callbacks of a session restored by ``from_dict``."""
        sess = self._sessions.get(session_id)
        if sess is None:
            raise SessionExpiredError()
        sess.watcher, sess.on_expired = watcher, on_expired

    def heartbeat(self, session_id: int) -> None:
        self._live(session_id)

    @property
    def sessions_opened(self) -> int:
        """Grows with every session opened (a new session may bring the next deadline forward)."""
        return self._next_sid

    def is_alive(self, session_id: int) -> bool:
        return session_id in self._sessions

    def sessions(self) -> list[int]:
        return sorted(self._sessions)

    def session_timeout(self, session_id: int) -> int:
        """The session's negotiated timeout (0 for a session that is gone)."""
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
                self._watch_removed(is_child, path)
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
        if type(node) is int:
            node = self._tables[topic_of(path)].node(node)
        return node[_DATA], self._stat(node)

    def get_data_and_version(self, session_id: int, path: str, watch: bool = False) -> tuple[bytes | None, int]:
        """``get_data`` without building a Stat: (data, version). For bulk readers."""
        sess = self._live(session_id)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if watch:
            self._arm(sess, False, path)
        if type(node) is int:
            table = self._tables[topic_of(path)]
            return table.data(node), table.version_of(node)
        return node[_DATA], node[_VERSION]

    def get_data_and_version_many(self, session_id: int, paths: Iterable[str],
                                  watch: Container[str] = ()) -> list[tuple[bytes | None, int] | None]:
        """``get_data_and_version`` of each path in order, None for a missing node (one heartbeat for the
        batch); a data watch is armed on each existing node whose path is in ``watch``."""
        paths = paths if isinstance(paths, list) else list(paths)
        if not paths:
            return []
        sess = self._live(session_id)
        get = self._nodes.get
        out: list = []
        append = out.append
        prefix, table = None, None      # the table of the last /state row read, and its paths' prefix
        for path in paths:
            node = get(path)
            if node is None:
                append(None)
                continue
            if watch and path in watch:
                self._arm(sess, False, path)
            if type(node) is int:
                if prefix is None or not path.startswith(prefix):
                    topic = topic_of(path)
                    prefix, table = f"{TOPICS_PREFIX}{topic}/", self._tables[topic]
                append((table.data(node), table.version_of(node)))
            else:
                append((node[_DATA], node[_VERSION]))
        return out

    def exists(self, session_id: int, path: str, watch: bool = False) -> Stat | None:
        _check_path(path)
        sess = self._live(session_id)
        if watch:
            self._arm(sess, False, path)   # armed whether or not the node exists
        node = self._node(path)
        return None if node is None else self._stat(node)

    def get_children(self, session_id: int, path: str, watch: bool = False) -> list[str]:
        sess = self._live(session_id)
        node = self._nodes.get(path)
        if node is None:
            _check_path(path)
            raise NoNodeError(path)
        if watch:
            self._arm(sess, True, path)
        if type(node) is int:
            node = self._tables[topic_of(path)].node(node)
        c = node[_CHILDREN]
        if c is None:
            return []
        start = 1 if path == "/" else len(path) + 1
        return [c[start:]] if type(c) is str else [p[start:] for p in sorted(c)]

    def _arm(self, sess: _Session, is_child: bool, path: str) -> None:
        table = self._child_watches if is_child else self._data_watches
        entry = table.get(path)
        if entry is None:
            entry = table[path] = {}
            self._watch_added(is_child, path)
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
        ops = _checked_ops(ops)
        now = self._now()
        results = self._transact(self._live(session_id, now), ops, now)
        if self._pending:
            self._deliver()
        return results

    def multi_many(self, session_id: int, batches: Iterable[Iterable]) -> list:
        """Several multis, one after the other, each exactly as ``multi`` applies it (its own transaction
        and zxid, all or nothing, its watch events delivered before the next one starts).

        Returns one entry per multi: its result list, or the KeeperError it raised (a ``MultiError``, or
        ``SessionExpiredError`` once the session is gone). A multi that ``multi`` would refuse before
        sending (TypeError/ValueError for a bad op or path) raises here, after the ones before it."""
        return list(self.iter_multi(session_id, batches))

    def iter_multi(self, session_id: int, batches: Iterable[Iterable]) -> Iterator[list | KeeperError]:
        """``multi_many`` one multi at a time: each is taken from ``batches`` and applied when the
        iteration reaches it, and its entry yielded (so a long batch keeps no results alive)."""
        transact = self._transact
        sessions = self._sessions
        for ops in batches:
            ops = _checked_ops(ops)
            now = self._now()
            sess = sessions.get(session_id)
            if sess is None:
                yield SessionExpiredError()
                continue
            sess.last = now
            try:
                result = transact(sess, ops, now)
            except MultiError as e:
                result = e
            if self._pending:
                self._deliver()
            yield result

    def _transact(self, sess: _Session, ops: list, now: int) -> list:
        """One multi transaction; on a failing op, everything is undone and MultiError raised."""
        zxid = self._zxid = self._zxid + 1     # _next_zxid(now), inlined
        self._times.append(now)
        undo: list = []
        fired: list = []
        results: list = []
        append = results.append
        nodes = self._nodes
        for i, op in enumerate(ops):
            t = type(op)
            try:
                if t is SetDataOp:
                    append(_new(SetDataResult, (self._stat(self._do_set(op.path, op.data, op.version, zxid, undo,
                                                                        fired)),)))
                elif t is CheckOp:
                    node = nodes.get(op.path)
                    if node is None:
                        raise NoNodeError(op.path)
                    if op.version != ANY_VERSION and self._version(op.path, node) != op.version:
                        raise BadVersionError(op.path)
                    append(_CHECK_RESULT)
                elif t is CreateOp:
                    append(_new(CreateResult, (self._do_create(op.path, op.data, op.ephemeral, op.sequential, sess,
                                                               zxid, undo, fired),)))
                else:
                    self._do_delete(op.path, op.version, zxid, undo, fired)
                    append(_DELETE_RESULT)
            except KeeperError as e:
                self._rollback(undo)
                n = len(ops)
                res = ([ErrorResult("OK")] * i + [ErrorResult(e.code)]
                       + [ErrorResult("RUNTIMEINCONSISTENCY")] * (n - i - 1))
                raise MultiError(e.code, res, i, e.path) from None
        if fired:
            self._enqueue(fired)
        return results

    def _do_create(self, path, data, ephemeral, sequential, sess, zxid, undo, fired) -> str:
        nodes = self._nodes
        i = path.rfind("/")
        parent_path = path[:i] if i > 0 else "/"
        parent = nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(path)
        row = parent if type(parent) is int else None
        if row is not None:   # a /state row about to get a child: a tuple from now on; a parent row may stay
            parent = self._tables[topic_of(parent_path)].node(row)
        pdata, pczxid, pmzxid, pversion, pcversion, powner, ppzxid, pchildren = parent
        if sequential:
            path = f"{path}{pcversion:010d}"
        if path in nodes:
            raise NodeExistsError(path)
        if powner:
            raise NoChildrenForEphemeralsError(path)
        if undo is not None:
            undo.append((_U_CREATED, path, parent_path, pcversion, ppzxid))
        if data is not None and len(data) <= _INTERN_MAX_LEN:
            data = self._intern.get(data) or self._share(data)
        if row is not None and row >= 0:
            self._drop_row(topic_of(parent_path), row)
        node = (data, zxid, zxid, 0, 0, sess.sid if ephemeral else 0, zxid, None)
        if path.startswith(TOPICS_PREFIX):
            self._put(path, node)
        else:
            nodes[path] = node
        node = (pdata, pczxid, pmzxid, pversion, pcversion + 1, powner, zxid, _with_child(pchildren, path))
        if row is not None and row < 0:
            self._put(parent_path, node)
        else:
            nodes[parent_path] = node
        if ephemeral:
            sess.ephemerals.add(path)
        if path in self._data_watches:
            self._fire(self._data_watches, path, EventType.NODE_CREATED, fired, undo)
        if parent_path in self._child_watches:
            self._fire(self._child_watches, parent_path, EventType.NODE_CHILDREN_CHANGED, fired, undo)
        return path

    def _do_set(self, path, data, version, zxid, undo, fired) -> tuple:
        nodes = self._nodes
        node = nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if type(node) is int:   # a row of the table: a body in Kafka's form stays there
            p, table = node, self._tables[topic_of(path)]
            old = table.node(p)
            if version != ANY_VERSION and old[_VERSION] != version:
                raise BadVersionError(path)
            parsed = parse_body(data) if p >= 0 else None
            if parsed is not None:
                if undo is not None:
                    undo.append((_U_SET, path, old))
                czxid, current = old[_CZXID], old[_VERSION]
                table.put(p, parsed[0], czxid, zxid, current + 1, parsed[1])
                if path in self._data_watches:
                    self._fire(self._data_watches, path, EventType.NODE_DATA_CHANGED, fired, undo)
                return (data, czxid, zxid, current + 1, 0, 0, czxid, None)
            node = old
        elif version != ANY_VERSION and node[_VERSION] != version:
            raise BadVersionError(path)
        if undo is not None:
            undo.append((_U_SET, path, node))
        if data is not None and len(data) <= _INTERN_MAX_LEN:
            data = self._intern.get(data) or self._share(data)
        _, czxid, _, version, cversion, owner, pzxid, children = node
        node = (data, czxid, zxid, version + 1, cversion, owner, pzxid, children)
        if path.startswith(TOPICS_PREFIX):
            self._put(path, node)
        else:
            nodes[path] = node
        if path in self._data_watches:
            self._fire(self._data_watches, path, EventType.NODE_DATA_CHANGED, fired, undo)
        return node

    def _do_delete(self, path, version, zxid, undo, fired) -> None:
        if path == "/":
            raise KeeperError("BADARGUMENTS", path)
        nodes = self._nodes
        node = nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        row = node if type(node) is int else None
        if row is not None:
            node = self._tables[topic_of(path)].node(row)
        if version != ANY_VERSION and node[_VERSION] != version:
            raise BadVersionError(path)
        if node[_CHILDREN]:
            raise NotEmptyError(path)
        parent_path = _parent(path)
        parent = nodes[parent_path]
        parent_row = type(parent) is int
        if parent_row:
            parent = self._tables[topic_of(parent_path)].node(parent)
        pdata, pczxid, pmzxid, pversion, pcversion, powner, ppzxid, pchildren = parent
        if undo is not None:
            undo.append((_U_DELETED, path, node, parent_path, ppzxid))
        del nodes[path]
        if row is not None:
            self._drop_row(topic_of(path), row)
        parent = (pdata, pczxid, pmzxid, pversion, pcversion, powner, zxid if zxid > ppzxid else ppzxid,
                  _without_child(pchildren, path))
        if parent_row:
            self._put(parent_path, parent)
        else:
            nodes[parent_path] = parent
        owner_sid = node[_OWNER]
        if owner_sid:
            owner = self._sessions.get(owner_sid)
            if owner is not None:
                owner.ephemerals.discard(path)
        if self._data_watches or self._child_watches:
            notified = self._fire(self._data_watches, path, EventType.NODE_DELETED, fired, undo)
            self._fire(self._child_watches, path, EventType.NODE_DELETED, fired, undo, notified)
            self._fire(self._child_watches, parent_path, EventType.NODE_CHILDREN_CHANGED, fired, undo)

    def _fire(self, table, path, etype, fired, undo, exclude=None):
        entry = table.pop(path, None)
        if entry is not None:
            self._watch_removed(table is self._child_watches, path)
        if not entry:
            return None
        if undo is not None:
            undo.append((_U_WATCHES, table, path, entry))
        event = WatchedEvent(etype, path)
        for sid in entry:
            if exclude is None or sid not in exclude:
                fired.append((sid, event))
        return entry

    def _rollback(self, undo: list) -> None:
        """Undo a failed multi's changes, last first (each restores only the fields its op changed)."""
        sessions = self._sessions
        for rec in reversed(undo):
            kind = rec[0]
            if kind == _U_SET:
                _, path, old = rec
                _, czxid, _, _, cversion, owner, pzxid, children = self._node(path)
                self._put(path, (old[_DATA], czxid, old[_MZXID], old[_VERSION], cversion, owner, pzxid, children))
            elif kind == _U_CREATED:
                _, path, parent_path, cversion, pzxid = rec
                node = self._pop(path)
                p = self._node(parent_path)
                self._put(parent_path, (p[0], p[1], p[2], p[3], cversion, p[5], pzxid, _without_child(p[7], path)))
                owner = node[_OWNER]
                if owner and owner in sessions:
                    sessions[owner].ephemerals.discard(path)
            elif kind == _U_DELETED:
                _, path, node, parent_path, pzxid = rec
                self._put(path, node)
                p = self._node(parent_path)
                self._put(parent_path, (p[0], p[1], p[2], p[3], p[4], p[5], pzxid, _with_child(p[7], path)))
                owner = node[_OWNER]
                if owner and owner in sessions:
                    sessions[owner].ephemerals.add(path)
            else:
                _, table, path, entry = rec
                if path not in table:
                    self._watch_added(table is self._child_watches, path)
                table.setdefault(path, {}).update(entry)

    # --- /state batches ------------------------------------------------------------------------------
    # The batch forms of what a controller does to many /state znodes of one topic: a read, fenced
    # conditional writes and fenced creates. Each gives exactly what the requests one by one would
    # (``get_data_and_version_many``; ``iter_multi`` of one multi [CheckOp, SetDataOp/CreateOp] per
    # partition, stopping where the session is found gone, as a client stops there): the same results,
    # zxids, times, Stats, bodies and watch events. A stretch of rows held in the table that nothing
    # watches is done as array work (versions compared as arrays, zxids assigned as a range, the time
    # column extended at once, one clock reading per stretch); a watched row, a znode kept as bytes, or a
    # check on one of the topic's own /state paths is sent on its own, and after a row whose events
    # reached a watcher the rest is looked at again (the watcher may have changed anything).
    def _rows_held(self, topic: str, ps: np.ndarray) -> np.ndarray:
        table = self._tables.get(topic)
        return table.held(ps) if table is not None else np.zeros(len(ps), dtype=bool)

    def get_state_rows(self, session_id: int, topic: str, partitions: np.ndarray,
                       watch: Container[int] = ()) -> StateRows | None:
        """``get_data_and_version_many`` of the partitions' /state paths (a data watch armed, in row order, on
        each existing one whose partition is in ``watch``), as columns: the fields of ``PartitionStateColumns``
        (missing znodes: exists False, 0 / -1 elsewhere; the ISR matrix as wide as the longest ISR read, at
        least 1). None, having done nothing, when one of the znodes is kept as bytes (the caller then reads
        them with ``get_data_and_version_many`` and decodes them)."""
        ps = np.asarray(partitions, dtype=np.int64)
        n = len(ps)
        held = self._rows_held(topic, ps)
        if not held.all():
            nodes = self._nodes
            for p in ps[~held].tolist():
                if f"/brokers/topics/{topic}/partitions/{p}/state" in nodes:
                    return None
        if n:    # get_data_and_version_many of nothing sends nothing
            sess = self._live(session_id)
            if watch:
                wanted = np.fromiter((p for p in watch if type(p) is int), dtype=np.int64)
                for p in ps[held & np.isin(ps, wanted)].tolist():
                    self._arm(sess, False, state_path(topic, p))
        rows = ps[held]
        table = self._tables.get(topic)
        if len(rows):
            table.flush()
        width = int(table.isr_len[rows].max()) if len(rows) else 0
        width = max(width, 1)
        ce = np.zeros(n, dtype=np.int32)
        leader = np.full(n, -1, dtype=np.int32)
        epoch = np.full(n, -1, dtype=np.int32)
        recovery = np.zeros(n, dtype=np.uint8)
        version = np.full(n, -1, dtype=np.int32)
        isr = np.full((n, width), -1, dtype=np.int32)
        if len(rows):
            ce[held] = table.ce[rows]
            leader[held] = table.leader[rows]
            epoch[held] = table.leader_epoch[rows]
            recovery[held] = table.recovery[rows]
            version[held] = table.version[rows]
            isr[held] = table.isr[rows, :width]
        return StateRows(held, ce, leader, epoch, isr, recovery, version)

    def _fenced_one(self, sess: _Session, check: CheckOp, op) -> tuple[int, int, bool]:
        """One multi [check, op] as ``iter_multi`` applies it: (R_* code, the new version or -1, whether
        events were queued for delivery)."""
        now = self._now()
        sess.last = now
        try:
            res = self._transact(sess, [check, op], now)[1]
            code, version = R_OK, res.stat.version if type(res) is SetDataResult else -1
        except MultiError as e:
            version = -1
            if e.failed_index == 0:
                code = R_CHECK_NONODE if e.code == "NONODE" else R_CHECK_BADVERSION
            else:
                code = CODES[e.code]
        if self._pending:
            self._deliver()
            return code, version, True
        return code, version, False

    def _check_code(self, check: CheckOp) -> int:
        node = self._nodes.get(check.path)
        if node is None:
            return R_CHECK_NONODE
        if check.version != ANY_VERSION and self._version(check.path, node) != check.version:
            return R_CHECK_BADVERSION
        return R_OK

    def set_state_rows(self, session_id: int, topic: str, partitions: np.ndarray, controller_epoch: int,
                       leader: np.ndarray, leader_epoch: np.ndarray, isr: np.ndarray, isr_len: np.ndarray,
                       recovery: np.ndarray, expected_version: np.ndarray, check: CheckOp) -> StateWriteOutcome:
        """For each row in order, the multi [``check``, SetDataOp(/state of the partition, its body, its
        expected version)], as ``iter_multi`` would apply it; the body is
        ``encode_leader_and_isr(LeaderAndIsr(leader, leader_epoch, isr[:isr_len], recovery), controller_epoch)``.

        ``partitions`` distinct; ``isr`` (n, w) with each row's ISR in its first ``isr_len`` entries, -1 after;
        every value an int32 (``recovery`` 0-255, ``isr_len`` at most ``state_table.MAX_ISR``). Where the
        session is found gone the batch stops (``stopped``), as a client stops at its first SESSIONEXPIRED."""
        if not plain_topic(topic):
            raise ValueError(f"not a topic name: {topic!r}")
        _checked_ops((check,))
        ps = np.asarray(partitions, dtype=np.int64)
        n = len(ps)
        if not distinct(ps):
            raise ValueError("partitions must be distinct")
        code = np.full(n, R_NOT_SENT, dtype=np.int8)
        version = np.full(n, -1, dtype=np.int64)
        own_check = (key := state_key(check.path)) is not None and key[0] == topic
        sessions = self._sessions
        nodes = self._nodes
        i = 0
        while i < n:
            sess = sessions.get(session_id)
            if sess is None:
                return StateWriteOutcome(code, version, i)
            rest = ps[i:]
            held = self._rows_held(topic, rest)
            if own_check:
                alone = np.ones(len(rest), dtype=bool)
            else:
                watched = self._state_watched.get(topic)
                alone = (np.isin(rest, np.fromiter(watched, dtype=np.int64)) if watched
                         else np.zeros(len(rest), dtype=bool))
                for j in np.flatnonzero(~held).tolist():
                    if state_path(topic, int(rest[j])) in nodes:
                        alone[j] = True
            start = 0
            looked_again = False
            for j in np.flatnonzero(alone).tolist():
                if j > start:
                    self._set_rows(sess, topic, i + start, i + j, held[start:j], ps, controller_epoch, leader,
                                   leader_epoch, isr, isr_len, recovery, expected_version, check, code, version)
                k = i + j
                sess = sessions.get(session_id)
                if sess is None:
                    return StateWriteOutcome(code, version, k)
                p = int(ps[k])
                data = encode_state(int(controller_epoch), int(leader[k]), int(leader_epoch[k]), int(recovery[k]),
                                    tuple(isr[k, :int(isr_len[k])].tolist()))
                code[k], version[k], delivered = self._fenced_one(
                    sess, check, SetDataOp(state_path(topic, p), data, int(expected_version[k])))
                start = j + 1
                if delivered:   # a watcher ran: look at the rest again
                    i = k + 1
                    looked_again = True
                    break
            if looked_again:
                continue
            if start < len(rest):
                sess = sessions.get(session_id)
                if sess is None:
                    return StateWriteOutcome(code, version, i + start)
                self._set_rows(sess, topic, i + start, n, held[start:], ps, controller_epoch, leader, leader_epoch,
                               isr, isr_len, recovery, expected_version, check, code, version)
            i = n
        return StateWriteOutcome(code, version, -1)

    def _set_rows(self, sess: _Session, topic: str, a: int, b: int, held: np.ndarray, ps: np.ndarray,
                  controller_epoch: int, leader, leader_epoch, isr, isr_len, recovery, expected_version,
                  check: CheckOp, code: np.ndarray, version: np.ndarray) -> None:
        """Rows [a, b) of ``set_state_rows``, none watched, each held in the table (``held``) or missing."""
        m = b - a
        now = self._now()
        sess.last = now
        z0 = self._zxid
        self._zxid = z0 + m
        self._times.extend(array("q", (now,)) * m)
        checked = self._check_code(check)
        if checked != R_OK:
            code[a:b] = checked
            return
        sel = np.flatnonzero(held)
        if not len(sel):
            code[a:b] = R_NONODE
            return
        table = self._tables[topic]
        table.flush()
        whole = len(sel) == m
        rows = slice(a, b) if whole else sel + a
        tp = ps[rows]
        k = len(tp)
        lo = int(tp[0])
        if int(tp[-1]) - lo == k - 1 and (k == 1 or bool((np.diff(tp) == 1).all())):
            dst = slice(lo, lo + k)          # consecutive partitions: the columns written as slices
        else:
            dst = tp
        cur = table.version[dst]
        expected = expected_version[rows]
        ok = (expected == ANY_VERSION) | (cur == expected)
        if ok.all():
            code[a:b] = R_OK if whole else R_NONODE
            if not whole:
                code[rows] = R_OK
            zxids = np.arange(z0 + 1, z0 + 1 + m, dtype=np.int64) if whole else z0 + 1 + sel
        else:
            out = np.full(m, R_NONODE, dtype=np.int8)
            out[sel] = np.where(ok, R_OK, R_BADVERSION)
            code[a:b] = out
            if not ok.any():
                return
            sel, tp = sel[ok], tp[ok]
            rows, dst, cur = sel + a, tp, cur[ok]
            zxids = z0 + 1 + sel
        new_version = cur + 1
        table.write_rows(dst, rows, controller_epoch, leader, leader_epoch, recovery, isr, isr_len, zxids,
                         new_version)
        version[rows] = new_version

    def create_state_rows(self, session_id: int, topic: str, partitions: list[int], datas: list[bytes],
                          check: CheckOp) -> StateWriteOutcome:
        """For each row in order, the multi [``check``, CreateOp(/state of the partition, its data)], as
        ``iter_multi`` would apply it (the parent ``.../partitions/<p>`` must exist); stops where the session
        is found gone (``stopped``). ``version`` is unused (-1)."""
        if not plain_topic(topic):
            raise ValueError(f"not a topic name: {topic!r}")
        _checked_ops((check,))
        if any(type(p) is not int for p in partitions):
            raise TypeError("partitions must be ints")
        n = len(partitions)
        code = np.full(n, R_NOT_SENT, dtype=np.int8)
        version = np.full(n, -1, dtype=np.int64)
        own_check = (key := state_key(check.path)) is not None and key[0] == topic
        sessions = self._sessions
        nodes = self._nodes
        data_watches, child_watches = self._data_watches, self._child_watches
        times = self._times
        intern = self._intern
        prefix = f"{TOPICS_PREFIX}{topic}/partitions/"
        pending: list[tuple] = []       # rows created into the table, written into it in one go
        pending_ps: set[int] = set()    # their partitions (not held by the table until written)
        checked = None                  # the check's outcome, while no watcher has run
        stopped = -1
        table = self._tables.get(topic)
        for k in range(n):
            sess = sessions.get(session_id)
            if sess is None:
                stopped = k
                break
            p = partitions[k]
            parent_path = f"{prefix}{p}"
            path = parent_path + "/state"
            data = datas[k]
            if own_check or path in data_watches or parent_path in child_watches:
                self._flush_created(topic, pending)
                pending_ps.clear()
                code[k], _, delivered = self._fenced_one(sess, check, CreateOp(path, data))
                table = self._tables.get(topic)
                if delivered:
                    checked = None
                continue
            now = self._now()
            sess.last = now
            zxid = self._zxid = self._zxid + 1
            times.append(now)
            if checked is None:
                checked = self._check_code(check)
            if checked != R_OK:
                code[k] = checked
                continue
            parent = nodes.get(parent_path)
            if parent is None:
                code[k] = R_NONODE
                continue
            if path in nodes or p in pending_ps:
                code[k] = R_NODEEXISTS
                continue
            prow = parent if type(parent) is int else None
            if prow is None:
                pdata, pczxid, pmzxid, pversion, pcversion, powner, ppzxid, pchildren = parent
                if powner:
                    code[k] = R_NOCHILDRENFOREPHEMERALS
                    continue
            parsed = parse_body(data) if 0 <= p <= 0x7FFFFFFF else None
            if parsed is not None and (p < MIN_ROWS if table is None else table.fits(p)):
                if table is None:
                    table = self._tables[topic] = StateTable(topic)
                if p >= table.cap:
                    table.grow(p + 1)
                pending.append((p, parsed, zxid))
                pending_ps.add(p)
            else:
                if data is not None and len(data) <= _INTERN_MAX_LEN:
                    data = intern.get(data) or self._share(data)
                nodes[path] = (data, zxid, zxid, 0, 0, 0, zxid, None)
            if prow is None:
                nodes[parent_path] = (pdata, pczxid, pmzxid, pversion, pcversion + 1, powner, zxid,
                                      _with_child(pchildren, path))
            else:   # a parent row of this topic's table, which now has its /state
                q = ~prow
                ptable = self._tables[topic]
                ptable.pcversion[q] += 1
                ptable.ppzxid[q] = zxid
                ptable.pchild[q] = True
            code[k] = R_OK
        self._flush_created(topic, pending)
        return StateWriteOutcome(code, version, stopped)

    def _flush_created(self, topic: str, pending: list[tuple]) -> None:
        """Write the rows ``create_state_rows`` has created into the topic's table."""
        if not pending:
            return
        table = self._tables[topic]
        ps = np.fromiter((r[0] for r in pending), dtype=np.int64, count=len(pending))
        zx = np.fromiter((r[2] for r in pending), dtype=np.int64, count=len(pending))
        f = [r[1][0] for r in pending]
        isr, isr_len = isr_matrix([x[4] for x in f])
        table.put_many(ps, [x[0] for x in f], [x[1] for x in f], [x[2] for x in f], [x[3] for x in f], isr, isr_len,
                       zx, zx, 0, [r[1][1] for r in pending])
        pending.clear()

    # --- creation of many partitions -------------------------------------------------------------------
    # A controller creates a new topic's partitions as one pipelined batch: every parent
    # .../partitions/<p> (a fenced multi each), then every .../partitions/<p>/state. Where nothing under the
    # topic's /partitions is watched, the check is on another path, the session is live and every row is
    # new, those multis cannot fail one by one nor fire a watch: they are done as array work (zxids as a
    # range, one clock reading, the rows written as columns, the paths put in the tree at once). Anything
    # else is left to the requests one by one (None: nothing done).
    def _bulk_ready(self, session_id: int, topic: str, partitions, check: CheckOp) -> tuple | None:
        """(session, partition ids as int64, the topic's table or None) when the batch can be done as arrays."""
        if not plain_topic(topic) or topic in self._watched_under or type(check) is not CheckOp:
            return None
        _checked_ops((check,))
        if partitions_topic(check.path) == topic:
            return None
        sess = self._sessions.get(session_id)
        if sess is None:
            return None
        ps = np.asarray(partitions)
        if ps.ndim != 1 or not len(ps) or ps.dtype.kind not in "iu":
            return None
        ps = ps.astype(np.int64, copy=False)
        lo, hi = int(ps.min()), int(ps.max())
        if lo < 0 or hi > 0x7FFFFFFF:
            return None
        table = self._tables.get(topic)
        if not (hi < MIN_ROWS or hi < 2 * ((table.cap if table is not None else 0) + len(ps))):
            return None
        if not distinct(ps):
            return None
        return sess, ps, table

    def _bulk_txns(self, sess: _Session, n: int) -> np.ndarray:
        """``n`` transactions of this moment: their zxids."""
        now = self._now()
        sess.last = now
        z0 = self._zxid
        self._zxid = z0 + n
        self._times.extend(array("q", (now,)) * n)
        return np.arange(z0 + 1, z0 + 1 + n, dtype=np.int64)

    def create_partition_parents(self, session_id: int, topic: str, partitions, check: CheckOp
                                 ) -> StateWriteOutcome | None:
        """For each row in order, the multi [``check``, CreateOp(``/brokers/topics/<t>/partitions/<p>``, no
        data)], as ``iter_multi`` would apply it, done as array work; None (nothing done) when it cannot be
        (see above: a watch under the topic's /partitions, a check on a path there, a session gone, a
        parent that exists, no /partitions node, partition ids repeated or beyond an int32)."""
        ready = self._bulk_ready(session_id, topic, partitions, check)
        if ready is None:
            return None
        sess, ps, table = ready
        nodes = self._nodes
        top = f"{TOPICS_PREFIX}{topic}/partitions"
        node = nodes.get(top)
        if type(node) is not tuple or node[_OWNER]:
            return None
        prefix = top + "/"
        children = node[_CHILDREN]
        paths = None
        if type(children) is _RowChildren:    # its children are the parent rows
            if table is not None and table.parent[ps[ps < table.cap]].any():
                return None
        elif children is not None:
            paths = [f"{prefix}{p}" for p in ps.tolist()]
            if any(map(nodes.__contains__, paths)):
                return None
        zx = self._bulk_txns(sess, len(ps))
        failed = self._failed_check(check, len(ps))
        if failed is not None:
            return failed
        if table is None:
            table = self._tables[topic] = StateTable(topic)
        table.put_parents(ps, zx)
        data, czxid, mzxid, version, cversion, owner, pzxid, children = node
        if children is None:
            children = _RowChildren(self._tables, topic)
        elif type(children) is str:
            children = {children, *paths}
        elif type(children) is not _RowChildren:
            children.update(paths)
        nodes[top] = (data, czxid, mzxid, version, cversion + len(ps), owner, int(zx[-1]), children)
        return _all_ok(len(ps))

    def _failed_check(self, check: CheckOp, n: int) -> StateWriteOutcome | None:
        """The outcome of ``n`` fenced requests whose check failed (each fails with the check's code), or None
        when the check holds."""
        checked = self._check_code(check)
        if checked == R_OK:
            return None
        return StateWriteOutcome(np.full(n, checked, dtype=np.int8), np.full(n, -1, dtype=np.int64), -1)

    def create_state_columns(self, session_id: int, topic: str, partitions, controller_epoch, leader, leader_epoch,
                             isr: np.ndarray, isr_len, recovery, check: CheckOp) -> StateWriteOutcome | None:
        """For each row in order, the multi [``check``, CreateOp(/state of the partition, its body)], as
        ``iter_multi`` would apply it, done as array work; the body is ``encode_leader_and_isr(LeaderAndIsr(
        leader, leader_epoch, isr[:isr_len], recovery), controller_epoch)``, made when it is read. Every value an
        int32 (``controller_epoch`` a scalar or a column; ``recovery`` 0-255, ``isr_len`` at most
        ``state_table.MAX_ISR``; ``isr`` (n, w), -1 after each row's ``isr_len``). None (nothing done) when it
        cannot be: as ``create_partition_parents``, or a parent that is not one as Kafka creates it, or has
        its /state already."""
        ready = self._bulk_ready(session_id, topic, partitions, check)
        if ready is None:
            return None
        sess, ps, table = ready
        if table is None or int(ps.max()) >= table.cap or not (table.parent[ps] & ~table.pchild[ps]).all():
            return None
        zx = self._bulk_txns(sess, len(ps))
        failed = self._failed_check(check, len(ps))
        if failed is not None:
            return failed
        table.put_many(ps, controller_epoch, leader, leader_epoch, recovery, isr, isr_len, zx, zx, 0)
        table.pcversion[ps] += 1
        table.ppzxid[ps] = zx
        table.pchild[ps] = True
        return _all_ok(len(ps))

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
            stack.extend(sorted(_child_paths(self._node(p)), reverse=True))
        ops = [DeleteOp(p) for p in reversed(order)]
        self.multi(session_id, ops)
        return len(ops)

    # --- events --------------------------------------------------------------------------------------
    def _enqueue(self, fired: list) -> None:
        """Queue a transaction's events: by session id, each session's in the order they were fired
        (a stable sort: one ``_fire`` gives a session at most one event)."""
        if fired:
            fired.sort(key=_first)
            self._pending.extend((_EV_WATCH, sid, event) for sid, event in fired)

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
            if type(node) is int:   # made now: the caller may change the tree between rows
                node = self._tables[topic_of(path)].node(node)
            yield path, node[_DATA], self._stat(node)

    def _sorted_entries(self) -> list[tuple[str, tuple | int]]:
        """Every (path, node tuple or row marker), parents before children, siblings by name."""
        entries = self._nodes.entries()
        entries.sort(key=lambda e: _component_key(e[0]))
        return entries

    def dump(self) -> str:
        """A recursive listing like ``zkCli.sh``: one line per znode, ``path`` or ``path = data``."""
        lines = []
        node_of = self._materializer()
        for path, node in self._sorted_entries():
            data = node_of(path, node)[_DATA]
            if data:
                text = data.decode("utf-8", "backslashreplace").replace("\n", "\\n")
                lines.append(f"{path} = {text}")
            else:
                lines.append(path)
        return "\n".join(lines) + "\n"

    def digest_into(self, h) -> None:
        """Feed the hash ``h`` (hashlib) with what ``dump`` lists — every znode's path and data — the same
        however each znode is held: the /state bodies that ``parse_state`` reads and the data-less partition
        parents go in as columns per topic (a table's rows and such znodes held as node tuples alike), every
        other znode as its path and data; no text per partition."""
        text = []
        states: dict[str, list] = {}
        parents: dict[str, list] = {}
        for path, node in dict.items(self._nodes):
            data = node[_DATA]
            key = state_key(path)
            if key is not None:
                fields = parse_state(data)
                if fields is not None:
                    states.setdefault(key[0], []).append((key[1], fields))
                    continue
            elif not data:
                key = parent_key(path)
                if key is not None:
                    parents.setdefault(key[0], []).append(key[1])
                    continue
            text.append((path, data or b""))
        text.sort()
        h.update(msgpack.packb(["znodes", text]))
        for topic in sorted(self._tables.keys() | states.keys() | parents.keys()):
            table = self._tables.get(topic)
            cols = table_content(table, states.get(topic, ()), parents.get(topic, ()))
            ps, ce, leader, leader_epoch, recovery, isr_len, isr, parent_ps = cols
            h.update(msgpack.packb(["topic", topic, len(ps), isr.shape[1], len(parent_ps)]))
            for col in cols:
                h.update(col.tobytes())

    def to_dict(self, per_znode: bool = False) -> dict:
        """A snapshot in canonical order: the server's tick time and session timeout bounds, every node
        (parents first) with its stats (``cversion`` as stored: the creations), the zxid counter and
        transaction times, the sessions (with their negotiated timeouts) and their armed watches. Plain
        lists, ints, bytes and None.

        The /state tables' rows (``tables``: per topic, in topic order, the rows' columns as little-endian
        buffers of the narrowest widths, see ``_table_columns``) are not in ``nodes`` and the transaction times
        are runs of equal times, so the snapshot of a million partitions is a few buffers; ``per_znode`` gives
        the layout of before the tables, every znode in ``nodes`` and the times as a list (what a model without
        tables writes)."""
        node_of = self._materializer()
        if per_znode:
            nodes = [[p, *node_of(p, node)[:_CHILDREN]] for p, node in self._sorted_entries()]
            tables = None
        else:
            explicit = sorted(dict.items(self._nodes), key=lambda e: _component_key(e[0]))
            nodes = [[p, *node[:_CHILDREN]] for p, node in explicit]
            tables = [[topic, _table_columns(self._tables[topic])] for topic in sorted(self._tables)]
        d = {
            "tick_time_ms": self._tick_time,
            "min_session_timeout_ms": self._min_session_timeout,
            "max_session_timeout_ms": self._max_session_timeout,
            "zxid": self._zxid,
            "times": self._times.tolist() if per_znode else _time_runs(self._times),
            "next_session_id": self._next_sid,
            "nodes": nodes,
            "sessions": [[sid, s.timeout, s.last] for sid, s in sorted(self._sessions.items())],
            "watch_seq": self._watch_seq,
            "data_watches": sorted([p, sid, seq] for p, e in self._data_watches.items() for sid, seq in e.items()),
            "child_watches": sorted([p, sid, seq] for p, e in self._child_watches.items() for sid, seq in e.items()),
        }
        if tables is not None:
            d["tables"] = tables
        return d

    @classmethod
    def from_dict(cls, d: dict, clock: Callable[[], int]) -> ZooKeeper:
        """Rebuild from ``to_dict`` output; sessions come back without callbacks (see ``attach``). A snapshot
        without the server settings (written before they were kept) gets the defaults."""
        zk = cls(clock, tick_time_ms=d.get("tick_time_ms", DEFAULT_TICK_TIME_MS),
                 min_session_timeout_ms=d.get("min_session_timeout_ms"),
                 max_session_timeout_ms=d.get("max_session_timeout_ms"))
        zk._zxid = d["zxid"]
        times = d["times"]
        if isinstance(times, dict):
            zk._times = array("q")
            zk._times.frombytes(_from_time_runs(times).tobytes())
        elif isinstance(times, bytes):
            zk._times = array("q")
            zk._times.frombytes(_buffer(times, "<i8", "times").astype(np.int64).tobytes())
        else:
            zk._times = array("q", times)
        zk._next_sid = d["next_session_id"]
        for sid, timeout, last in d["sessions"]:
            zk._sessions[sid] = _Session(sid, timeout, last, None, None)
        children: dict[str, object] = {}
        tables = d.get("tables")
        row_children = []
        for topic, cols in tables or ():
            table = zk._tables[topic] = _load_table_columns(topic, cols)
            if table.pcount:
                row_children.append((table.prefix[:-1], topic))
            for p in np.flatnonzero(table.present & ~table.parent).tolist():   # a /state row under a tuple
                key = f"{table.prefix}{p}"
                children[key] = _with_child(children.get(key), key + "/state")
        for row in d["nodes"]:
            path = row[0]
            if path != "/":
                parent = _parent(path)
                children[parent] = _with_child(children.get(parent), path)
            owner = row[6]
            if owner and owner in zk._sessions:
                zk._sessions[owner].ephemerals.add(path)
        for top, topic in row_children:   # the parent rows, and other children if it has any
            c = children.get(top)
            if c is None:
                children[top] = _RowChildren(zk._tables, topic)
            else:
                c = {c} if type(c) is str else c
                c.update(_RowChildren(zk._tables, topic))
                children[top] = c
        get = children.get
        zk._nodes = _Tree(zk._tables, {path: (data, czxid, mzxid, version, cversion, owner, pzxid, get(path))
                                       for path, data, czxid, mzxid, version, cversion, owner, pzxid in d["nodes"]})
        if tables is None:    # a snapshot of before the tables: their znodes are among the nodes
            zk._load_state_tables()
        zk._watch_seq = d["watch_seq"]
        for key, table, is_child in (("data_watches", zk._data_watches, False),
                                     ("child_watches", zk._child_watches, True)):
            for path, sid, seq in sorted(d[key], key=lambda w: w[2]):
                if path not in table:
                    zk._watch_added(is_child, path)
                table.setdefault(path, {})[sid] = seq
                if sid in zk._sessions:
                    zk._sessions[sid].watches.add((is_child, path))
        return zk


def _all_ok(n: int) -> StateWriteOutcome:
    """The outcome of ``n`` requests that all succeeded (no versions to report)."""
    return StateWriteOutcome(np.zeros(n, dtype=np.int8), np.full(n, -1, dtype=np.int64), -1)
