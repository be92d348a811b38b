"""The partitions' ``/brokers/topics/<t>/partitions/<p>/state`` znodes as columns, for the ZooKeeper model.

A controller of a large cluster keeps one ``/state`` znode per partition, and its batch path reads and
writes them by the hundred thousand. ``ZooKeeper`` keeps those znodes here, one ``StateTable`` per topic,
row = partition id, instead of one node tuple and one body each: the body's fields (controller epoch,
leader, leader epoch, leader recovery state, ISR as an ISR length and a -1 padded matrix) and the
``Stat`` fields a /state znode can have (czxid, mzxid, version; pzxid is czxid, cversion, owner and
children are none).

A znode is kept here only when it is one of these (``state_key``), its body is exactly what
``zk_data.encode_leader_and_isr`` writes for the parsed fields (``parse_state``; anything else a test or
a broker writes there is kept as bytes, verbatim), and it is a plain leaf (persistent, never had a
child). A row written by a batch has its body made again, byte for byte, only when someone reads it
(``encode_state``); a row created or written on its own keeps the body it was given (one bytes object
for equal bodies) and waits as a tuple until a batch needs the columns (``StateTable.pending``).

The partitions' parents ``/brokers/topics/<t>/partitions/<p>`` are rows of the same table (``parent_key``):
a parent as Kafka creates it (no data, never set, persistent, no child but its ``/state``) is its czxid,
its stored cversion (the children ever created), its pzxid and whether its ``/state`` exists; any other
parent is kept as a node tuple. ``ZooKeeper`` holds ``~p`` (a negative int) at a parent's path.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from controller.store.zk_data import _STATE, encode_leader_and_isr
from statemachines.leader_and_isr import LeaderAndIsr

TOPICS_PREFIX = "/brokers/topics/"
_PREFIX_LEN = len(TOPICS_PREFIX)
MAX_ISR = 32                 # a longer ISR is kept as bytes (the matrix is as wide as the widest ISR)
MIN_ROWS = 1 << 16           # partitions below this id always fit; above it, up to twice the table's rows
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_MEMO_MAX = 1 << 16

_new = tuple.__new__


def state_key(path: str) -> tuple[str, int] | None:
    """(topic, partition) of a ``/brokers/topics/<t>/partitions/<p>/state`` path whose ``<p>`` is a partition
    id as Kafka writes it (decimal, no sign, no leading zero, an int32); None for any other path."""
    return parent_key(path[:-6]) if path.endswith("/state") else None


def parent_key(path: str) -> tuple[str, int] | None:
    """(topic, partition) of a ``/brokers/topics/<t>/partitions/<p>`` path whose ``<p>`` is a partition id as
    Kafka writes it (decimal, no sign, no leading zero, an int32); None for any other path."""
    if not path.startswith(TOPICS_PREFIX):
        return None
    parts = path.split("/")
    if len(parts) != 6 or parts[4] != "partitions" or not parts[3]:
        return None
    s = parts[5]
    if not (s.isascii() and s.isdigit() and len(s) <= 10 and (s[0] != "0" or s == "0")):
        return None
    p = int(s)
    return (parts[3], p) if p <= _INT32_MAX else None


def parent_fits(node: tuple, path: str) -> bool:
    """May the node tuple of a ``parent_key`` path be held as a parent row?"""
    data, czxid, mzxid, version, cversion, owner, pzxid, children = node
    return (data is None and mzxid == czxid and not version and not owner and 0 <= cversion < 1 << 62
            and (children is None or children == path + "/state"))


def partitions_topic(path: str) -> str | None:
    """The topic of ``/brokers/topics/<t>/partitions`` and of any path below it; None for other paths."""
    if not path.startswith(TOPICS_PREFIX):
        return None
    i = path.find("/", _PREFIX_LEN)
    if i < 0 or not path.startswith("/partitions", i) or (len(path) > i + 11 and path[i + 11] != "/"):
        return None
    return path[_PREFIX_LEN:i]


def topic_of(path: str) -> str:
    """The topic of a path ``state_key`` accepts."""
    return path[_PREFIX_LEN:path.index("/", _PREFIX_LEN)]


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PREFIX}{topic}/partitions/{partition}/state"


def plain_topic(topic) -> bool:
    """A topic whose ``/state`` paths are valid znode paths that ``state_key`` reads back to it."""
    return (type(topic) is str and topic not in ("", ".", "..") and "/" not in topic and "\0" not in topic)


# --- bodies ------------------------------------------------------------------------------------------
_PARSED: dict[bytes, tuple | None] = {}
_ENCODED: dict[tuple, bytes] = {}


def encode_state(ce: int, leader: int, leader_epoch: int, recovery: int, isr: tuple) -> bytes:
    """``encode_leader_and_isr(LeaderAndIsr(leader, leader_epoch, isr, recovery), ce)`` (memoized)."""
    key = (ce, leader, leader_epoch, recovery, isr)
    data = _ENCODED.get(key)
    if data is None:
        data = encode_leader_and_isr(_new(LeaderAndIsr, (leader, leader_epoch, isr, recovery, 0)), ce)
        if len(_ENCODED) >= _MEMO_MAX:
            _ENCODED.clear()
        _ENCODED[key] = data
    return data


def _fits(v: int) -> bool:
    return _INT32_MIN <= v <= _INT32_MAX


def parse_state(data) -> tuple | None:
    """(controller epoch, leader, leader epoch, recovery, ISR) of a body ``encode_state`` gives back byte for
    byte, with every field fitting its column; None for any other body (memoized)."""
    parsed = parse_body(data)
    return None if parsed is None else parsed[0]


def parse_body(data) -> tuple | None:
    """(``parse_state(data)``, the bytes object kept for equal bodies), or None."""
    if type(data) is not bytes:
        return None
    try:
        return _PARSED[data]
    except KeyError:
        pass
    fields = None
    m = _STATE.fullmatch(data)
    if m is not None:
        ce, leader, recovery, epoch, isr = m.groups()
        isr = tuple(map(int, isr.split(b","))) if isr else ()
        fields = (int(ce), int(leader), int(epoch), int(recovery) if recovery else 0, isr)
        if not (_fits(fields[0]) and _fits(fields[1]) and _fits(fields[2]) and fields[3] <= 255
                and len(isr) <= MAX_ISR and all(_fits(r) for r in isr) and encode_state(*fields) == data):
            fields = None
    if len(_PARSED) >= _MEMO_MAX:
        _PARSED.clear()
    parsed = _PARSED[data] = None if fields is None else (fields, data)
    return parsed


class StateRows(NamedTuple):
    """``ZooKeeper.get_state_rows``: the /state of many partitions of one topic (``PartitionStateColumns``'
    fields and dtypes; rows in the order asked)."""
    exists: np.ndarray
    controller_epoch: np.ndarray
    leader: np.ndarray
    leader_epoch: np.ndarray
    isr: np.ndarray
    recovery: np.ndarray
    version: np.ndarray


# Outcome codes of a batch of fenced /state writes or creates (``ZooKeeper.set_state_rows``/``create_state_rows``).
R_OK = 0
R_BADVERSION = 1            # the write's version did not match
R_NONODE = 2                # no such znode (a write), no parent (a create)
R_NODEEXISTS = 3
R_NOCHILDRENFOREPHEMERALS = 4
R_CHECK_NONODE = 5          # the CheckOp failed: no such znode
R_CHECK_BADVERSION = 6      # the CheckOp failed: version mismatch
R_NOT_SENT = 7              # after the session was found gone (``stopped``)
CODE_NAMES = {R_BADVERSION: "BADVERSION", R_NONODE: "NONODE", R_NODEEXISTS: "NODEEXISTS",
              R_NOCHILDRENFOREPHEMERALS: "NOCHILDRENFOREPHEMERALS", R_CHECK_NONODE: "NONODE",
              R_CHECK_BADVERSION: "BADVERSION"}
CODES = {"BADVERSION": R_BADVERSION, "NONODE": R_NONODE, "NODEEXISTS": R_NODEEXISTS,
         "NOCHILDRENFOREPHEMERALS": R_NOCHILDRENFOREPHEMERALS}


class StateWriteOutcome(NamedTuple):
    """Per row: ``code`` (R_*) and, where R_OK, the znode's new ``version``; ``stopped`` is the row at which
    the session was found gone (that row and the later ones were not sent; -1 if none)."""
    code: np.ndarray        # int8
    version: np.ndarray     # int64
    stopped: int


class StateTable:
    """One topic's /state znodes as columns, row = partition id (``present`` marks the rows held).

    ``body`` keeps each row's JSON body once it has been made or given (equal bodies are one bytes object),
    None where a batch has written the row since: the body is made again when it is read. A row written on
    its own (``put``: a create, set_data or multi of the generic API) waits in ``pending`` as a tuple, as
    cheap as the node tuple it stands for, until an operation on many rows (``flush``) writes the pending
    rows into the columns in one go; the rows' readers look at ``pending`` first."""
    __slots__ = ("prefix", "cap", "width", "count", "present", "ce", "leader", "leader_epoch", "recovery", "isr",
                 "isr_len", "czxid", "mzxid", "version", "body", "pending", "pcount", "parent", "pczxid",
                 "pcversion", "ppzxid", "pchild")

    _COLUMNS = ("present", "ce", "leader", "leader_epoch", "recovery", "isr_len", "czxid", "mzxid", "version",
                "body", "parent", "pczxid", "pcversion", "ppzxid", "pchild")

    def __init__(self, topic: str) -> None:
        self.prefix = f"{TOPICS_PREFIX}{topic}/partitions/"
        self.cap = 0
        self.width = 1
        self.count = 0
        self.present = np.zeros(0, dtype=bool)
        self.ce = np.zeros(0, dtype=np.int32)
        self.leader = np.zeros(0, dtype=np.int32)
        self.leader_epoch = np.zeros(0, dtype=np.int32)
        self.recovery = np.zeros(0, dtype=np.uint8)
        self.isr = np.full((0, 1), -1, dtype=np.int32)
        self.isr_len = np.zeros(0, dtype=np.uint8)
        self.czxid = np.zeros(0, dtype=np.int64)
        self.mzxid = np.zeros(0, dtype=np.int64)
        self.version = np.zeros(0, dtype=np.int64)
        self.body = np.full(0, None, dtype=object)
        self.pending: dict[int, tuple] = {}   # p -> (fields, czxid, mzxid, version, body) not in the columns yet
        self.pcount = 0                          # the parent rows: parent marks those held
        self.parent = np.zeros(0, dtype=bool)
        self.pczxid = np.zeros(0, dtype=np.int64)     # czxid = mzxid
        self.pcversion = np.zeros(0, dtype=np.int64)  # as stored: the children ever created
        self.ppzxid = np.zeros(0, dtype=np.int64)
        self.pchild = np.zeros(0, dtype=bool)         # its /state exists

    # --- shape ---------------------------------------------------------------------------------------
    def fits(self, p: int) -> bool:
        """May partition ``p`` be held here (the table grows to twice its rows at a time)?"""
        return p < MIN_ROWS or p < 2 * self.cap

    def grow(self, need: int) -> None:
        """At least ``need`` rows."""
        if need <= self.cap:
            return
        cap = max(need, 2 * self.cap, 8)
        old = self.cap
        for name in self._COLUMNS:
            col = getattr(self, name)
            new = np.full(cap, None, dtype=object) if col.dtype == object else np.zeros(cap, dtype=col.dtype)
            new[:old] = col
            setattr(self, name, new)
        isr = np.full((cap, self.width), -1, dtype=np.int32)
        isr[:old] = self.isr
        self.isr = isr
        self.cap = cap

    def widen(self, width: int) -> None:
        if width <= self.width:
            return
        isr = np.full((self.cap, width), -1, dtype=np.int32)
        isr[:, :self.width] = self.isr
        self.isr = isr
        self.width = width

    # --- rows one at a time ----------------------------------------------------------------------------
    def put(self, p: int, fields: tuple, czxid: int, mzxid: int, version: int, body: bytes) -> None:
        """Row ``p``: the body ``body`` (whose ``parse_state`` is ``fields``) and these Stat fields."""
        if p >= self.cap:
            self.grow(p + 1)
        self.pending[p] = (fields, czxid, mzxid, version, body)
        if not self.present[p]:
            self.present[p] = True
            self.count += 1

    def clear(self, p: int) -> None:
        if self.present[p]:
            self.present[p] = False
            self.pending.pop(p, None)
            self.body[p] = None
            self.count -= 1

    def fields(self, p: int) -> tuple:
        row = self.pending.get(p)
        if row is not None:
            return row[0]
        n = self.isr_len.item(p)
        return (self.ce.item(p), self.leader.item(p), self.leader_epoch.item(p), self.recovery.item(p),
                tuple(self.isr[p, :n].tolist()))

    def data(self, p: int) -> bytes | None:
        if p < 0:
            return None
        row = self.pending.get(p)
        if row is not None:
            return row[4]
        data = self.body.item(p)
        if data is None:
            data = self.body[p] = encode_state(*self.fields(p))
        return data

    def version_of(self, p: int) -> int:
        if p < 0:
            return 0
        row = self.pending.get(p)
        return row[3] if row is not None else self.version.item(p)

    def node(self, p: int) -> tuple:
        """The znode tuple ``ZooKeeper`` would hold: (data, czxid, mzxid, version, cversion, owner, pzxid,
        children); ``p`` < 0: the parent row ``~p``."""
        if p < 0:
            return self.parent_node(~p)
        row = self.pending.get(p)
        if row is not None:
            _, czxid, mzxid, version, data = row
            return (data, czxid, mzxid, version, 0, 0, czxid, None)
        data = self.body.item(p)
        if data is None:
            data = self.body[p] = encode_state(*self.fields(p))
        czxid = self.czxid.item(p)
        return (data, czxid, self.mzxid.item(p), self.version.item(p), 0, 0, czxid, None)

    # --- parent rows -----------------------------------------------------------------------------------
    def put_parent(self, p: int, czxid: int, cversion: int, pzxid: int, child: bool) -> None:
        if p >= self.cap:
            self.grow(p + 1)
        if not self.parent[p]:
            self.parent[p] = True
            self.pcount += 1
        self.pczxid[p] = czxid
        self.pcversion[p] = cversion
        self.ppzxid[p] = pzxid
        self.pchild[p] = child

    def clear_parent(self, p: int) -> None:
        if self.parent[p]:
            self.parent[p] = False
            self.pchild[p] = False
            self.pcount -= 1

    def parent_node(self, p: int) -> tuple:
        czxid = self.pczxid.item(p)
        return (None, czxid, czxid, 0, self.pcversion.item(p), 0, self.ppzxid.item(p),
                f"{self.prefix}{p}/state" if self.pchild.item(p) else None)

    def parent_nodes(self) -> dict[int, tuple]:
        """``node`` of every parent row held, by ``~p``."""
        idx = np.flatnonzero(self.parent)
        prefix = self.prefix
        return {~p: (None, cz, cz, 0, cv, 0, pz, f"{prefix}{p}/state" if ch else None)
                for p, cz, cv, pz, ch in zip(idx.tolist(), self.pczxid[idx].tolist(), self.pcversion[idx].tolist(),
                                             self.ppzxid[idx].tolist(), self.pchild[idx].tolist())}

    def put_parents(self, ps: np.ndarray, czxid: np.ndarray) -> None:
        """New parent rows ``ps`` (not held yet) without children, created at ``czxid``."""
        if not len(ps):
            return
        top = int(ps.max()) + 1
        if top > self.cap:
            self.grow(top)
        self.parent[ps] = True
        self.pcount += len(ps)
        self.pczxid[ps] = czxid
        self.pcversion[ps] = 0
        self.ppzxid[ps] = czxid
        self.pchild[ps] = False

    # --- many rows at a time ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the pending rows into the columns."""
        pending = self.pending
        if not pending:
            return
        k = len(pending)
        ps = np.fromiter(pending, dtype=np.int64, count=k)
        rows = list(pending.values())
        pending.clear()
        fields = [r[0] for r in rows]
        isr, isr_len = isr_matrix([f[4] for f in fields])
        self._assign(ps, [f[0] for f in fields], [f[1] for f in fields], [f[2] for f in fields],
                     [f[3] for f in fields], isr, isr_len, [r[1] for r in rows], [r[2] for r in rows],
                     [r[3] for r in rows])
        body = np.empty(k, dtype=object)
        body[:] = [r[4] for r in rows]
        self.body[ps] = body

    def _assign(self, ps, ce, leader, leader_epoch, recovery, isr, isr_len, czxid, mzxid, version) -> None:
        w = isr.shape[1]
        if w > self.width:
            self.widen(w)
        self.ce[ps] = ce
        self.leader[ps] = leader
        self.leader_epoch[ps] = leader_epoch
        self.recovery[ps] = recovery
        if w == self.width:
            self.isr[ps] = isr
        else:
            block = np.full((len(ps), self.width), -1, dtype=np.int32)
            block[:, :w] = isr
            self.isr[ps] = block
        self.isr_len[ps] = isr_len
        self.czxid[ps] = czxid
        self.mzxid[ps] = mzxid
        self.version[ps] = version

    def put_many(self, ps: np.ndarray, ce, leader, leader_epoch, recovery, isr: np.ndarray, isr_len,
                 czxid, mzxid, version, body: list | None = None) -> None:
        """``put`` of many distinct rows not held yet (the scalars or arrays broadcast over ``ps``); ``isr``
        is (len(ps), w), -1 padded after each row's ``isr_len``; ``body`` their bodies if known."""
        if not len(ps):
            return
        top = int(ps.max()) + 1
        if top > self.cap:
            self.grow(top)
        self._assign(ps, ce, leader, leader_epoch, recovery, isr, isr_len, czxid, mzxid, version)
        if body is None:
            self.body[ps] = None
        else:
            bodies = np.empty(len(ps), dtype=object)
            bodies[:] = body
            self.body[ps] = bodies
        self.count += len(ps) - int(np.count_nonzero(self.present[ps]))
        self.present[ps] = True

    def write_rows(self, dst, rows, controller_epoch: int, leader: np.ndarray, leader_epoch: np.ndarray,
                   recovery: np.ndarray, isr: np.ndarray, isr_len: np.ndarray, mzxid, version) -> None:
        """Rows ``dst`` (held and flushed; a slice or distinct indices) take the values at ``rows`` of the
        arrays (a slice or indices), the scalar ``controller_epoch`` and the given ``mzxid`` and ``version``."""
        width = isr.shape[1]
        if width > self.width:
            self.widen(width)
        self.version[dst] = version
        self.mzxid[dst] = mzxid
        self.ce[dst] = controller_epoch
        self.leader[dst] = leader[rows]
        self.leader_epoch[dst] = leader_epoch[rows]
        self.recovery[dst] = recovery[rows]
        if width == self.width:
            self.isr[dst] = isr[rows]
        else:
            self.isr[dst, :width] = isr[rows]
            self.isr[dst, width:] = -1
        self.isr_len[dst] = isr_len[rows]
        self.body[dst] = None

    def nodes(self) -> dict[int, tuple]:
        """``node`` of every row held, by partition (one pass over the columns), and of every parent row, by
        ``~p``."""
        self.flush()
        out = self.parent_nodes() if self.pcount else {}
        idx = np.flatnonzero(self.present)
        if not len(idx):
            return out
        lens = self.isr_len[idx].tolist()
        isrs = self.isr[idx].tolist()
        czxids = self.czxid[idx].tolist()
        enc = encode_state
        out.update({p: (body if body is not None else enc(ce, ld, le, rc, tuple(row[:n])), cz, mz, v, 0, 0, cz, None)
                for p, ce, ld, le, rc, row, n, cz, mz, v, body in zip(
                    idx.tolist(), self.ce[idx].tolist(), self.leader[idx].tolist(),
                    self.leader_epoch[idx].tolist(), self.recovery[idx].tolist(), isrs, lens, czxids,
                    self.mzxid[idx].tolist(), self.version[idx].tolist(), self.body[idx].tolist())})
        return out

    def held(self, ps: np.ndarray) -> np.ndarray:
        """Per partition id of ``ps`` (any ints): is its row held here?"""
        inside = (ps >= 0) & (ps < self.cap)
        if inside.all():
            return self.present[ps]
        out = np.zeros(len(ps), dtype=bool)
        out[inside] = self.present[ps[inside]]
        return out


def isr_matrix(isrs: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """(len(isrs), width) int32 matrix, -1 padded, and the lengths (uint8) of a list of ISR tuples."""
    codes: dict[tuple, int] = {}
    code = [codes.setdefault(isr, len(codes)) for isr in isrs]
    pool = list(codes)
    width = max(max((len(isr) for isr in pool), default=0), 1)
    mat = np.full((len(pool), width), -1, dtype=np.int32)
    for i, isr in enumerate(pool):
        mat[i, :len(isr)] = isr
    lens = np.fromiter((len(isr) for isr in pool), dtype=np.uint8, count=len(pool))
    idx = np.asarray(code, dtype=np.intp)
    return mat[idx], lens[idx]


def load_table(topic: str, rows: list[tuple], parents: list[tuple] = ()) -> tuple[StateTable, list[tuple], list[tuple]]:
    """A table of ``rows`` (partition, path, fields, czxid, mzxid, version, body) and parent ``parents``
    (partition, path, czxid, cversion, pzxid, has its /state), taking them by partition as ``StateTable.fits``
    would; returns it and the rows and parents taken."""
    table = StateTable(topic)
    cap = 0
    fitting = set()
    for p in sorted({r[0] for r in rows} | {r[0] for r in parents}):
        if p < MIN_ROWS or p < 2 * cap:
            fitting.add(p)
            if p >= cap:
                cap = max(p + 1, 2 * cap, 8)
    taken = sorted((r for r in rows if r[0] in fitting), key=lambda r: r[0])
    taken_parents = [r for r in parents if r[0] in fitting]
    if cap:
        table.grow(cap)
    if taken:
        ps = np.fromiter((r[0] for r in taken), dtype=np.int64, count=len(taken))
        isr, isr_len = isr_matrix([r[2][4] for r in taken])
        table.put_many(ps, [r[2][0] for r in taken], [r[2][1] for r in taken], [r[2][2] for r in taken],
                       [r[2][3] for r in taken], isr, isr_len, [r[3] for r in taken], [r[4] for r in taken],
                       [r[5] for r in taken], [r[6] for r in taken])
    if taken_parents:
        ps = np.fromiter((r[0] for r in taken_parents), dtype=np.int64, count=len(taken_parents))
        table.parent[ps] = True
        table.pcount = len(ps)
        table.pczxid[ps] = [r[2] for r in taken_parents]
        table.pcversion[ps] = [r[3] for r in taken_parents]
        table.ppzxid[ps] = [r[4] for r in taken_parents]
        table.pchild[ps] = [r[5] for r in taken_parents]
    return table, taken, taken_parents


def table_content(table: StateTable | None, rows=(), parents=()) -> tuple[np.ndarray, ...]:
    """What a topic's /state znodes and partition parents hold, in one canonical form whatever holds them
    (for digests): the table's rows and parent rows with ``rows`` ((partition, ``parse_state`` fields) of
    /state znodes held as node tuples) and ``parents`` (partition ids of data-less parents held as node
    tuples) merged in, by partition: partition ids (int32), controller epoch, leader, leader epoch (int32),
    recovery state, ISR length (uint8), the ISRs as a -1 padded int32 matrix as wide as the longest, and the
    parents' partition ids (int32); all little-endian."""
    if table is not None:
        table.flush()
        idx = np.flatnonzero(table.present)
        ps = [idx]
        ce, leader, le, rec = [table.ce[idx]], [table.leader[idx]], [table.leader_epoch[idx]], [table.recovery[idx]]
        isr_len = [table.isr_len[idx]]
        isr = [table.isr[idx]]
        parent_ps = [np.flatnonzero(table.parent)]
    else:
        ps, ce, leader, le, rec, isr_len, isr, parent_ps = [], [], [], [], [], [], [], []
    if rows:
        ps.append(np.array([r[0] for r in rows], dtype=np.int64))
        ce.append(np.array([r[1][0] for r in rows], dtype=np.int32))
        leader.append(np.array([r[1][1] for r in rows], dtype=np.int32))
        le.append(np.array([r[1][2] for r in rows], dtype=np.int32))
        rec.append(np.array([r[1][3] for r in rows], dtype=np.uint8))
        m, n = isr_matrix([r[1][4] for r in rows])
        isr.append(m)
        isr_len.append(n)
    parent_ps.append(np.array(parents, dtype=np.int64))
    width = max((int(n.max()) for n in isr_len if len(n)), default=0)
    isr = [np.pad(m[:, :width], ((0, 0), (0, max(0, width - m.shape[1]))), constant_values=-1) for m in isr]
    if not ps:
        empty = np.zeros(0, dtype=np.int32)
        return (empty, empty, empty, empty, np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.uint8),
                np.zeros((0, width), dtype="<i4"), np.sort(np.concatenate(parent_ps)).astype("<i4"))
    order = np.argsort(np.concatenate(ps), kind="stable")
    def col(parts, dtype):
        return np.ascontiguousarray(np.concatenate(parts)[order], dtype=dtype)
    lens, matrix = col(isr_len, np.uint8), col(isr, "<i4")
    matrix[np.arange(width)[None, :] >= lens[:, None]] = -1
    return (col(ps, "<i4"), col(ce, "<i4"), col(leader, "<i4"), col(le, "<i4"), col(rec, np.uint8), lens, matrix,
            np.sort(np.concatenate(parent_ps)).astype("<i4"))
