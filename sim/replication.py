"""The data plane of the simulated brokers: replicas, followers fetching from leaders, ISR changes,
the high watermark, and the produce path with its delayed-produce purgatory.

What Kafka 3.7's ``Partition``, ``ReplicaManager``, ``ReplicaFetcherThread`` and
``AlterPartitionManager`` do, on the simulation's event loop:

- A broker's replica of a partition (:class:`Replica`) has a :class:`~sim.replica_log.ReplicaLog`
  that survives the process (a kill -9 keeps the page cache; a restarted broker finds its logs).
  LeaderAndIsr makes it leader (epoch start offset recorded, remote replica states reset: LEO
  unknown, ISR members caught up "now") or follower (it joins the fetch session to the leader;
  delayed produces fail with NOT_LEADER_OR_FOLLOWER).
- One :class:`FetchSession` per (follower broker, leader broker, fetcher thread) carries every
  partition the follower follows on that leader that its fetcher thread fetches: a partition goes
  to fetcher ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers``
  (AbstractFetcherManager.getFetcherId; one fetcher, one session per leader, by default). A fetch goes out, the leader answers with the records past
  each fetch offset (at most ``replica.fetch.max.bytes`` per partition and
  ``replica.fetch.response.max.bytes`` in all), or parks it until something is appended (a
  parked session counts as fetching continuously: Kafka's ``replica.fetch.wait.max.ms`` expiries
  would refresh it every 500 ms; only the expiry after a high watermark moved is simulated, as it
  brings the follower the new high watermark). Every response carries the high watermarks that
  moved since the last one. The follower appends and fetches again. A fetch lost or reset is
  retried after ``replica.fetch.backoff.ms`` (1 s) as a full fetch (every partition's offset); a
  partition answered FENCED_LEADER_EPOCH stops fetching until a LeaderAndIsr brings the newer
  epoch, one with another error is fetched again after the backoff.
  A fetch whose last fetched epoch the leader's log contradicts gets the diverging epoch and the
  follower truncates to where the logs part (KIP-320 / Fetch v12): how unclean elections lose
  acknowledged records.
- The leader tracks each follower's LEO and last caught-up time (Kafka's two rules in
  ``Replica.updateFetchState``), advances the high watermark to the minimum LEO of the maximal ISR
  — not while the ISR is under ``min.insync.replicas`` (KAFKA-15583, Kafka 3.7; brokers of an
  ``inter.broker.protocol.version`` before 3.7 advance it anyway) — shrinks the ISR every
  ``replica.lag.time.max.ms / 2`` by an AlterPartition to the controller, and expands it when a
  follower reaches the high watermark.
- Produce (``acks`` 0, 1, -1): NOT_LEADER_OR_FOLLOWER off the leader, KAFKA_STORAGE_ERROR on a
  failed log directory, NOT_ENOUGH_REPLICAS for acks=-1 when the ISR is smaller than
  ``min.insync.replicas``; acks=-1 waits in the purgatory until the high watermark passes the
  batch (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is now under the minimum)
  or ``request.timeout.ms`` passes (REQUEST_TIMED_OUT). The high watermark moves on appends too,
  whatever the acks (a leader alone in the ISR). ``min.insync.replicas`` changes apply at once.

Per-partition work happens only where something changes: an append touches its partition's
followers' sessions, a fetch handles the partitions whose offsets moved, and the ISR check
looks only at sessions that have stopped fetching or partitions whose followers are behind.
Anything iterated to decide an order is a dict (insertion order) or sorted — never a set.
"""
from __future__ import annotations

import gc
from collections import deque
from itertools import chain, compress, repeat
from operator import attrgetter, contains, eq, is_, itemgetter
from types import MappingProxyType

import numpy as np

from sim.replica_log import ReplicaLog

NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR"
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
# What a replica that leads nothing holds of its followers, and of waiting produces: shared, read-only
# (a cluster has millions of replicas; only leaders with followers, and leaders with waiting acks=-1
# batches, get objects of their own).
NO_FOLLOWERS = MappingProxyType({})
NOTHING_DELAYED = ()
NO_REPLICAS = MappingProxyType({})        # the replicas of a broker whose process is not running
_ORDER = attrgetter("order")

# Session states (follower side).
IDLE, IN_FLIGHT, PARKED, BACKOFF, DELAYED = range(5)
ALTER_PARTITION_RETRY_MS = 100


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return to_int32(h)


def to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def java_abs(n: int) -> int:
    """Kafka's Utils.abs: |n|, and 0 for Integer.MIN_VALUE."""
    return 0 if n == -(1 << 31) else abs(n)


class Replica:
    """One broker's replica of one partition: Kafka's ``Partition`` with its log."""

    __slots__ = ("tp", "broker", "log", "leader", "leader_epoch", "isr", "partition_epoch", "replicas",
                 "follower_leo", "epoch_start", "pending_isr", "delayed", "offline", "log_dir", "min_isr",
                 "fetching_from", "order")

    def __init__(self, tp: tuple, broker: int, log: ReplicaLog, log_dir: str):
        self.tp = tp
        self.broker = broker
        self.log = log
        self.leader = -1
        self.leader_epoch = -1
        self.isr: tuple = ()
        self.partition_epoch = -1
        self.replicas: tuple = ()
        self.follower_leo = NO_FOLLOWERS         # leader only: what each follower's last fetch said
        self.epoch_start = 0
        self.pending_isr: tuple | None = None    # an AlterPartition in flight: the maximal ISR
        self.delayed = NOTHING_DELAYED           # acks=-1 batches waiting for the high watermark (a deque)
        self.offline = False                     # its log directory failed
        self.log_dir = log_dir
        self.min_isr = 1
        self.fetching_from = -1                  # follower: the leader whose session it is in
        self.order = 0                           # when the process made it (Replication.made): dict order

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker and not self.offline

    @property
    def maximal_isr(self) -> tuple:
        return self.pending_isr if self.pending_isr is not None else self.isr

    def __repr__(self) -> str:
        return (f"Replica({self.tp}@{self.broker} leader={self.leader} epoch={self.leader_epoch} isr={self.isr} "
                f"{self.log})")


class FetchSession:
    """The fetch session of ``follower`` with ``leader``: the partitions it follows there, and what
    the leader knows of how up to date the follower is."""

    __slots__ = ("follower", "leader", "fetcher", "partitions", "state", "pending", "dirty", "watch", "fresh",
                 "caught_up_ms", "last_fetch_ms", "sent_ms", "timer", "seq", "hw_moved", "parked_ms", "expiry")

    def __init__(self, follower: int, leader: int, now: int, fetcher: int = 0):
        self.follower = follower
        self.leader = leader
        self.fetcher = fetcher                    # the follower's fetcher thread for this leader
        self.partitions: dict[tuple, None] = {}   # followed partitions (ordered set)
        self.state = IDLE
        self.pending: dict[tuple, None] = {}      # leader side: appended since the last response
        self.dirty: dict[tuple, None] = {}        # follower side: offsets moved since the last fetch
        self.watch: dict[tuple, list] = {}        # leader side: tp -> [last caught-up ms, leader LEO at last fetch]
        # The watch's tail (its entries after all of ``watch``'s): entries the follower has never fetched (a
        # pristine leader row's tuple, or the list it became when the row was woken). Nothing is inserted into the
        # watch while it is there (Replication._flush first); an answer skips it: such an entry has nothing to send.
        self.fresh: dict[tuple, tuple | list] = {}
        self.caught_up_ms = now                   # for partitions not watched: caught up as of this time
        self.last_fetch_ms = now
        self.sent_ms = now
        self.timer = None
        self.seq = 0                              # the fetch in flight; answers to older ones are dropped
        self.hw_moved: dict[tuple, None] = {}     # leader side: high watermarks not sent to the follower yet
        self.parked_ms = now                      # leader side: when the fetch in purgatory was parked
        self.expiry = None                        # leader side: (seq, timer) of the parked fetch's next expiry

    def __repr__(self) -> str:
        return (f"FetchSession({self.follower}->{self.leader}#{self.fetcher}, {len(self.partitions)} partitions, "
                f"state={('idle', 'in-flight', 'parked', 'backoff', 'delayed')[self.state]})")


class PristineRows:
    """A broker's pristine replicas as columns, row ``k`` each (:attr:`Replication.pristine` maps a partition to
    its row): followers, and leaders (``leader[k]`` is the broker itself) with an empty log whose followers' state
    is their session's watch entry, a shared tuple until the follower's first fetch removes it. Append-only while
    the broker's process runs; a woken row stays, unreferenced."""

    __slots__ = ("leader", "leader_epoch", "isr", "partition_epoch", "replicas", "min_isr", "log_dir", "order",
                 "keys", "woken", "_mirror", "_mirrored", "_ids", "_order", "_alive", "_indexed", "_woken_seen",
                 "_id_chunks", "_id_tail")

    def __init__(self) -> None:
        self._mirror: tuple | None = None     # (leader, leader epoch, ISR bitmask) as arrays: rows.arrays()
        self._mirrored = 0
        # Rows found by their keys' identity (rows.find): the rows' key objects' ids sorted, and which rows are live.
        self.keys: list[tuple] = []           # row -> its (topic, partition) key object (kept alive: ids stay unique)
        self.woken: list[int] = []            # rows made replicas, in order
        self._ids = self._order = self._alive = None
        self._indexed = self._woken_seen = 0
        self._id_chunks: list[np.ndarray] = []   # the keys' ids in row order: arrays given by extend_ids ...
        self._id_tail: list[int] = []            # ... then those of rows added one by one since
        self.leader: list[int] = []
        self.leader_epoch: list[int] = []
        self.isr: list[tuple] = []
        self.partition_epoch: list[int] = []
        self.replicas: list[tuple] = []
        self.min_isr: list[int] = []
        self.log_dir: list[str] = []
        self.order: list[int] = []

    def extend_ids(self, ids: np.ndarray) -> None:
        """The ids of the key objects of the rows just appended (``keys.extend``), in order."""
        if self._id_tail:
            self._id_chunks.append(np.array(self._id_tail, dtype=np.int64))
            self._id_tail = []
        self._id_chunks.append(ids)

    def arrays(self) -> tuple | None:
        """(leader, leader epoch, ISR as a bitmask of broker ids) of every row as int64 arrays, or None if a broker
        id is outside 0..62. The rows never change (a touched one is woken): each is copied in once."""
        n, m = len(self.order), self._mirrored
        if n > m:
            ids = np.fromiter(map(id, self.isr[m:]), dtype=np.int64, count=n - m)   # (ISR tuples are interned)
            distinct, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
            masks = []
            for i in first.tolist():
                isr = self.isr[m + i]
                if any(r < 0 or r > 62 for r in isr):
                    return None
                masks.append(sum(1 << r for r in isr))
            tail = (np.fromiter(self.leader[m:], dtype=np.int64, count=n - m),
                    np.fromiter(self.leader_epoch[m:], dtype=np.int64, count=n - m),
                    np.array(masks, dtype=np.int64)[inverse.reshape(-1)])
            self._mirror_tail(tail)
        return self._mirror

    def _mirror_tail(self, tail: tuple) -> None:
        """The rows past the mirrored ones into the mirror: (leader, leader epoch, ISR bitmask) arrays."""
        m = self._mirrored
        n = m + len(tail[0])
        if self._mirror is None or len(self._mirror[0]) < n:
            grown = tuple(np.empty(max(n, 2 * m), dtype=np.int64) for _ in range(3))
            if m:
                for new, old in zip(grown, self._mirror):
                    new[:m] = old[:m]
            self._mirror = grown
        for column, values in zip(self._mirror, tail):
            column[m:n] = values
        self._mirrored = n

    def mirror_appended(self, leader: np.ndarray, leader_epoch: np.ndarray, isr: np.ndarray | None) -> None:
        """:meth:`arrays` of the rows just appended, from their columns as arrays (``isr``: a table of broker ids,
        one row per row), when the rows before them are mirrored and every broker id fits a bitmask."""
        if isr is None or self._mirrored + len(leader) != len(self.order) or (
                self._mirror is None and self._mirrored) or not len(leader):
            return
        if isr.size and (isr.min() < 0 or isr.max() > 62):
            return
        mask = np.bitwise_or.reduce(np.left_shift(np.int64(1), isr), axis=1) if isr.shape[1] else \
            np.zeros(len(leader), dtype=np.int64)
        self._mirror_tail((leader, leader_epoch, mask))

    def find(self, keys: list, pristine: dict) -> np.ndarray:
        """``pristine.get(tp, -1)`` for every key of ``keys``, as an int64 array: a key object that is a live row's own
        is found by its id (sorted arrays: no hashing, no lookups in a dict of a broker's rows); any other through
        ``pristine`` (``pristine`` maps a live row's key to it: the rows' keys, less the woken, are its keys)."""
        n, m = len(self.keys), self._indexed
        if n > m:
            ids = np.concatenate(self._id_chunks + [np.array(self._id_tail, dtype=np.int64)])
            self._order = np.argsort(ids, kind="stable")
            self._ids = ids[self._order]
            alive = np.ones(n, dtype=bool)
            if m:
                alive[:m] = self._alive
            self._alive = alive
            self._indexed = n
        if len(self.woken) > self._woken_seen:
            self._alive[self.woken[self._woken_seen:]] = False
            self._woken_seen = len(self.woken)
        count = len(keys)
        ids = np.fromiter(map(id, keys), dtype=np.int64, count=count)
        at = np.searchsorted(self._ids, ids)
        np.minimum(at, n - 1, out=at)
        rows = self._order[at]
        hit = (self._ids[at] == ids) & self._alive[rows]
        if hit.all():
            return rows
        rows = np.where(hit, rows, -1)
        miss = np.flatnonzero(~hit)
        if len(miss) == 1:
            rows[miss[0]] = pristine.get(keys[int(miss[0])], -1)
        else:
            rows[miss] = np.fromiter(map(pristine.get, itemgetter(*miss.tolist())(keys), repeat(-1)), dtype=np.int64,
                                     count=len(miss))
        return rows

    def add(self, leader: int, leader_epoch: int, isr: tuple, partition_epoch: int, replicas: tuple, min_isr: int,
            log_dir: str, order: int, key: tuple) -> int:
        self.leader.append(leader)
        self.leader_epoch.append(leader_epoch)
        self.isr.append(isr)
        self.partition_epoch.append(partition_epoch)
        self.replicas.append(replicas)
        self.min_isr.append(min_isr)
        self.log_dir.append(log_dir)
        self.order.append(order)
        self.keys.append(key)
        self._id_tail.append(id(key))
        return len(self.order) - 1


class ProduceRequest:
    """A produce request at a leader: its batches' results, answered when all are decided."""

    __slots__ = ("acks", "batches", "results", "remaining", "respond", "timer")

    def __init__(self, acks: int, batches: list, respond):
        self.acks = acks
        self.batches = batches                  # (tp, count) each
        self.results: list = [None] * len(batches)
        self.remaining = len(batches)
        self.respond = respond
        self.timer = None

    def decide(self, i: int, result: tuple) -> None:
        if self.results[i] is None:
            self.results[i] = result
            self.remaining -= 1
            if self.remaining == 0:
                if self.timer is not None:
                    self.timer.cancel()
                self.respond(self.results)


class Replication:
    """The data plane of every broker of a :class:`sim.simulation.Simulation`."""

    # become_many keeps new followers as pristine rows when it applies at least this many rows at once.
    pristine_min_rows = 4096
    # ... and new leaders too (with followers' rows: a LeaderAndIsr whose rows are all new, no leader's log on disk).
    pristine_leaders = True

    def __init__(self, sim):
        self.sim = sim
        cfg = sim.config
        self.lag_max_ms = cfg.get_int("replica.lag.time.max.ms")
        self.fetch_max_bytes = cfg.get_int("replica.fetch.max.bytes")
        self.response_max_bytes = cfg.get_int("replica.fetch.response.max.bytes")
        self.request_timeout_ms = cfg.get_int("request.timeout.ms")
        self.fetch_wait_max_ms = max(1, cfg.get_int("replica.fetch.wait.max.ms"))
        self.fetch_backoff_ms = cfg.get_int("replica.fetch.backoff.ms")
        self.num_fetchers = max(1, cfg.get_int("num.replica.fetchers"))
        self._fetcher_of: dict[tuple, int] = {}
        ibp = cfg["inter.broker.protocol.version"].split("-")[0].split(".")
        self.hw_frozen_under_min_isr = (int(ibp[0]), int(ibp[1])) >= (3, 7)
        self.disks: dict[int, dict[tuple, ReplicaLog]] = {}     # broker -> its logs (survive restarts)
        self.replicas: dict[int, dict[tuple, Replica]] = {}      # broker -> live replicas of the process
        self.sessions: dict[tuple[int, int, int], FetchSession] = {}  # (follower, leader, fetcher)
        self.led_with: dict[int, dict[int, dict[tuple, None]]] = {}  # leader -> follower -> tps it leads
        self.slow: dict[int, tuple] = {}                          # broker -> ("delay", ms) | ("factor", f)
        self.alter_queue: dict[int, dict[tuple, tuple]] = {}     # broker -> proposals waiting to be sent
        self.alter_in_flight: dict[int, bool] = {}
        self.isr_timers: dict[int, object] = {}
        self.message_bytes: dict[str, int] = {}                   # topic -> bytes per record (for fetch limits)
        self.truncated = 0
        # One object per distinct (topic, partition) key and per distinct ISR / replica tuple: millions of
        # replicas share a few thousand tuples (a cluster's replica sets repeat).
        self._interned: dict[tuple, tuple] = {}
        # Pristine followers as rows: a replica a large LeaderAndIsr makes a follower, with no log on disk yet,
        # is a row of PristineRows (leader, leader epoch, ISR, partition epoch, replicas, min ISR, log dir, order)
        # until something touches it (records or a high watermark for it, a truncation, a fetch error, a new
        # LeaderAndIsr, a StopReplica, a failed log directory): then _wake makes its Replica, as it would be
        # had it been made at once. An empty log is then made on disk too (no log on disk reads as an empty one).
        # Its first fetches read the row. tests/test_pristine_replicas.py holds this to the eager path.
        self.pristine: dict[int, dict[tuple, int]] = {}         # broker -> tp -> its row in rows[broker]
        self.rows: dict[int, PristineRows] = {}
        self._tp_table: dict[str, np.ndarray] = {}              # topic -> its interned (topic, partition) keys
        self._tp_ids: dict[str, np.ndarray] = {}                # topic -> its keys' ids (PristineRows.find)
        self.made = 0                                            # replicas made so far (their order)

    # --- broker lifecycle -------------------------------------------------------------------------
    def broker_started(self, b: int) -> None:
        self.replicas[b] = {}
        self.pristine[b] = {}
        self.rows[b] = PristineRows()
        self.disks.setdefault(b, {})
        self._schedule_isr_check(b)

    def broker_stopped(self, b: int) -> None:
        """The process is gone (killed, halted or stopped): sessions break, waiting requests die."""
        now = self.sim.loop.now
        timer = self.isr_timers.pop(b, None)
        if timer is not None:
            timer.cancel()
        pristine, rows = self.pristine.pop(b, None), self.rows.pop(b, None)
        if pristine:
            # The logs its pristine rows would have left on disk: empty; a leader's epoch starting at 0.
            disk = self.disks[b]
            row_leader, row_epoch = rows.leader, rows.leader_epoch
            for tp, k in pristine.items():
                log = disk[tp] = ReplicaLog()
                if row_leader[k] == b:
                    log.epochs.append((row_epoch[k], 0))
        for rep in self.replicas.pop(b, {}).values():
            if rep.delayed:
                for item in rep.delayed:
                    if item[1].timer is not None:
                        item[1].timer.cancel()
                rep.delayed.clear()
        self.led_with.pop(b, None)
        for producer in self.sim.producers:
            producer.broker_died(b)
        self.alter_queue.pop(b, None)
        self.alter_in_flight.pop(b, None)
        for (f, leader, _), s in self.sessions.items():
            if f == b:
                if s.state == PARKED:
                    s.caught_up_ms = now
                if s.timer is not None:
                    s.timer.cancel()
                s.state = IDLE
                s.seq += 1      # the dead process's fetch still in flight is answered to no one
                s.partitions.clear()
                s.dirty.clear()
            elif leader == b and s.state == PARKED:
                # The follower's connection resets: it backs off and retries.
                self._backoff(s)

    def links_cut(self) -> None:
        """Links were cut: parked fetches across them break; the followers back off and retry."""
        net = self.sim.network
        for s in self.sessions.values():
            if s.state == PARKED and not net.reachable(s.follower, s.leader):
                s.caught_up_ms = self.sim.loop.now
                self._backoff(s)

    # --- LeaderAndIsr / StopReplica ------------------------------------------------------------------
    def replica(self, b: int, tp: tuple) -> Replica:
        reps = self.replicas[b]
        rep = reps.get(tp)
        if rep is None:
            if tp in self.pristine[b]:
                return self._wake(b, tp)
            disk = self.disks[b]
            log = disk.get(tp)
            if log is None:
                log = disk[tp] = ReplicaLog()
            rep = reps[tp] = Replica(tp, b, log, self.sim.log_dir_of(b, tp))
            rep.order = self.made = self.made + 1
            if self.sim.failed_dirs:
                rep.offline = self.sim.log_dir_failed(b, rep.log_dir)
        return rep

    def _wake(self, b: int, tp: tuple) -> Replica:
        """The Replica of pristine row ``tp`` of broker ``b``, made now as become_many would have made it."""
        k = self.pristine[b].pop(tp)
        rows = self.rows[b]
        rows.woken.append(k)
        disk = self.disks[b]
        log = disk.get(tp)
        if log is None:
            log = disk[tp] = ReplicaLog()
        rep = self.replicas[b][tp] = Replica(tp, b, log, rows.log_dir[k])
        leader = rows.leader[k]
        rep.leader, rep.leader_epoch, rep.isr = leader, rows.leader_epoch[k], rows.isr[k]
        rep.partition_epoch, rep.replicas, rep.min_isr = rows.partition_epoch[k], rows.replicas[k], rows.min_isr[k]
        rep.order = rows.order[k]
        if leader != b:
            rep.fetching_from = leader
            return rep
        # A pristine leader: its log is the empty one become_many would have made (the epoch starts at 0); a
        # follower has fetched (at offset 0) once its watch entry is gone, and its entry is a list from now on.
        if not log.epochs:
            log.epochs.append((rep.leader_epoch, 0))
        follower_leo = rep.follower_leo = {}
        led = self.led_with.setdefault(b, {})
        sessions = self.sessions
        for r in rep.replicas:
            if r == b:
                continue
            s = sessions.get((r, b, 0))
            if s is None:
                w = None
            else:
                w = s.watch.get(tp)
                if w is None and s.fresh:
                    w = s.fresh.get(tp)
            if type(w) is tuple:
                follower_leo[r] = -1
                (s.fresh if tp in s.fresh else s.watch)[tp] = list(w)
            else:
                follower_leo[r] = 0
            tps_r = led.get(r)
            if tps_r is None:
                tps_r = led[r] = {}
            tps_r[tp] = None
        return rep

    def serves(self, b: int, tp: tuple) -> bool:
        """Whether broker ``b``'s process acts as ``tp``'s leader now (its replica, or its pristine leader row)."""
        rep = self.replicas.get(b, NO_REPLICAS).get(tp)
        if rep is not None:
            return rep.leader == b and not rep.offline
        k = self.pristine.get(b, NO_REPLICAS).get(tp)
        return k is not None and self.rows[b].leader[k] == b

    def log_of(self, b: int, tp: tuple) -> ReplicaLog | None:
        """Broker ``b``'s log of ``tp`` on disk (a pristine row's made with its replica), None if it has none."""
        disk = self.disks.get(b)
        log = disk.get(tp) if disk is not None else None
        if log is None and tp in self.pristine.get(b, NO_REPLICAS):
            log = self._wake(b, tp).log
        return log

    def wake_all(self, b: int) -> None:
        """Every pristine row of broker ``b`` made a Replica (for what looks at all of a broker's replicas)."""
        rows = self.pristine.get(b)
        if rows:
            for tp in list(rows):
                self._wake(b, tp)

    def replica_or_none(self, b: int, tp: tuple) -> Replica | None:
        """Broker ``b``'s live replica of ``tp``, pristine or not (made if pristine); None if it has none."""
        reps = self.replicas.get(b)
        if reps is None:
            return None
        rep = reps.get(tp)
        if rep is None and tp in self.pristine.get(b, NO_REPLICAS):
            rep = self._wake(b, tp)
        return rep

    def become_leader_or_follower(self, b: int, p) -> str:
        """Apply one accepted LeaderAndIsr partition state ``p`` at broker ``b``; returns the partition error."""
        intern = self._interned.setdefault
        tp = self._tp_key(p.topic, p.partition)
        rep = self.replica(b, tp)
        if rep.offline:
            return KAFKA_STORAGE_ERROR
        isr, replicas = tuple(p.isr), tuple(p.replicas)
        self._become(rep, p.leader, p.leader_epoch, intern(isr, isr), p.partition_epoch, intern(replicas, replicas))
        return NONE

    def _become(self, rep: Replica, leader: int, leader_epoch: int, isr: tuple, partition_epoch: int,
                replicas: tuple) -> None:
        b = rep.broker
        was_leader = rep.leader == b
        rep.leader, rep.leader_epoch, rep.isr = leader, leader_epoch, isr
        rep.partition_epoch, rep.replicas = partition_epoch, replicas
        rep.pending_isr = None
        rep.min_isr = min(self.sim.min_isr(rep.tp[0]), len(replicas))   # effectiveMinIsr
        if leader == b:
            self._make_leader(rep)
        else:
            if was_leader:
                self._resign(rep)
            self._make_follower(rep)

    def become_many(self, b: int, batch, rows) -> None:
        """:meth:`become_leader_or_follower` for the rows ``rows`` (ascending) of a columnar LeaderAndIsr request
        ``batch``, in order: the same state, the same metrics calls and the same messages in the same order as
        the records one by one (the per-record method stays the reference; tests/test_become_many.py holds
        them to each other), without a record object per row. The broker has no replica in a failed log
        directory (the caller's condition): no replica here is offline."""
        n = len(rows)
        if not n:
            return
        if n < 4096 or not gc.isenabled():
            self._become_many(b, batch, rows)
            return
        # Thousands of new replicas at once (a broker's first LeaderAndIsr): the cyclic collector would scan
        # every object of the cluster again and again while they are made (half the time of a set-up); it
        # runs once they are all made. Nothing made here is garbage yet.
        gc.disable()
        try:
            self._become_many(b, batch, rows)
        finally:
            gc.enable()
        self.sim.made_in_bulk()

    def _become_many(self, b: int, batch, rows) -> None:
        topic = batch.column("topic")
        names = topic.dictionary
        codes = np.asarray(topic.codes)[rows]
        columns = {name: np.asarray(batch.column(name))[rows] for name in ("leader", "leader_epoch", "partition_epoch")}
        leaders = columns["leader"].tolist()
        epochs = columns["leader_epoch"].tolist()
        partition_epochs = columns["partition_epoch"].tolist()
        replica_column = batch.column("replicas")
        isrs = self._row_tuples(batch.column("isr"), rows)
        replica_sets = self._row_tuples(replica_column, rows)
        sim = self.sim
        # effectiveMinIsr of every row, as arrays: the topic's min.insync.replicas, at most the replica count.
        used = np.unique(codes)
        topic_min = np.zeros(len(names), dtype=np.int64)
        topic_min[used] = [sim.min_isr(names[c]) for c in used.tolist()]
        offsets = np.asarray(replica_column.offsets)
        columns["min_isr"] = np.minimum(topic_min[codes], offsets[np.asarray(rows) + 1] - offsets[rows])
        min_isrs = columns["min_isr"].tolist()
        tps, tp_ids = self._tps(names, codes, np.asarray(batch.column("partition"))[rows])
        reps, disk = self.replicas[b], self.disks[b]
        now = sim.loop.now
        became_leader: list[Replica] = []      # told to the metrics together (nothing in between reads them)
        one_dir = len(sim.log_dirs) == 1
        log_dir = sim.log_dirs[0]
        led = self.led_with.setdefault(b, {})
        sessions = self.sessions
        single = self.num_fetchers == 1
        fetcher_id = self.fetcher_id
        following: dict = {}     # leader (or (leader, fetcher)) -> this broker's session with it
        watches: dict = {}       # (follower, fetcher) -> the follower's session with this broker
        led_tps: dict = {}       # follower -> led_with[b][follower]
        pristine, pristine_rows = self.pristine[b], self.rows[b]
        lazy = len(tps) >= self.pristine_min_rows
        made = self.made
        flags, groups, watched = self._pristine_in_bulk(b, tps, columns, isrs, replica_sets,
                                                        (replica_column, batch.column("isr"), rows), tp_ids) \
            if lazy and single and one_dir else (None, (), ())
        every = zip(tps, leaders, epochs, isrs, partition_epochs, replica_sets, min_isrs, repeat(0))
        if flags is not None:
            # Every row is new and makes one replica or row (row i the (made + 1 + i)-th): the loop visits only
            # the rows that do more than add a row (flags 1 and 3 did all in _pristine_in_bulk).
            first = made
            visit = np.flatnonzero((flags != 1) & (flags != 3)).tolist()
            flags = flags.tolist()
            every = zip(*(itemgetter(*visit)(column) for column in (
                tps, leaders, epochs, isrs, partition_epochs, replica_sets, min_isrs, flags))) if len(visit) > 1 \
                else ([tuple(column[visit[0]] for column in (tps, leaders, epochs, isrs, partition_epochs,
                                                            replica_sets, min_isrs, flags))] if visit else ())
            at = iter(visit)
        for tp, leader, epoch, isr, partition_epoch, replicas, min_isr, flag in every:
            if flags is not None:
                made = first + next(at)
            if flag:
                made += 1
                if flag == 2:    # the first of its session's new rows: the session is kicked now, as row by row
                    s = following[leader] = self._session(b, leader, 0)
                    s.partitions[tp] = None
                    s.dirty[tp] = None
                    if s.state == IDLE or s.state == PARKED:
                        self.made = made
                        self._kick(s)
                elif flag == 4:  # a leader row with a follower seen first: its session is made now, as row by row
                    for r in replicas:
                        if r != b and (r, b, 0) not in sessions:
                            self._session(r, b, 0)
                continue
            rep = reps.get(tp)
            if rep is None and pristine and tp in pristine:
                rep = self._wake(b, tp)
            if rep is not None:
                if became_leader:
                    sim.metrics.leaders_changed(b, became_leader)
                    became_leader = []
                self.made = made
                self._become(rep, leader, epoch, isr, partition_epoch, replicas)
                made = self.made
                continue
            # A replica the process does not have yet: it leads nothing and is in no session.
            made += 1
            log = disk.get(tp)
            if log is None:
                if lazy and leader != b and leader >= 0:
                    pristine[tp] = pristine_rows.add(leader, epoch, isr, partition_epoch, replicas, min_isr,
                                                     log_dir if one_dir else sim.log_dir_of(b, tp), made, tp)
                    key = leader if single else (leader, fetcher_id(tp))
                    s = following.get(key)
                    if s is None:
                        s = following[key] = self._session(b, leader, 0 if single else key[1])
                    s.partitions[tp] = None
                    s.dirty[tp] = None
                    if s.state == IDLE or s.state == PARKED:
                        self.made = made
                        self._kick(s)
                    continue
                log = disk[tp] = ReplicaLog()
            rep = reps[tp] = Replica(tp, b, log, log_dir if one_dir else sim.log_dir_of(b, tp))
            rep.order = made
            rep.leader, rep.leader_epoch, rep.isr = leader, epoch, isr
            rep.partition_epoch, rep.replicas, rep.min_isr = partition_epoch, replicas, min_isr
            if leader == b:
                leo = log.leo
                if leo or log.epochs:
                    log.assign_epoch_start(epoch)
                else:
                    log.epochs.append((epoch, 0))       # assign_epoch_start on an empty log
                rep.epoch_start = leo
                follower_leo = rep.follower_leo = {}
                fetcher = 0 if single else fetcher_id(tp)
                for r in replicas:
                    if r == b:
                        continue
                    follower_leo[r] = -1
                    tps_r = led_tps.get(r)
                    if tps_r is None:
                        tps_r = led_tps[r] = led.get(r)
                        if tps_r is None:
                            tps_r = led_tps[r] = led[r] = {}
                    tps_r[tp] = None
                    s = watches.get(r if single else (r, fetcher))
                    if s is None:
                        s = watches[r if single else (r, fetcher)] = sessions.get((r, b, fetcher)) or \
                            self._session(r, b, fetcher)
                    if s.fresh:
                        self._watch_set(s, tp, [now if r in isr else 0, leo])
                    else:
                        s.watch[tp] = [now if r in isr else 0, leo]
                if leo:
                    # Its log has records (a restarted broker's): the high watermark may move and answer
                    # produces, so the metrics hear of the leaders so far first, as one by one.
                    became_leader.append(rep)
                    sim.metrics.leaders_changed(b, became_leader)
                    became_leader = []
                    self.made = made
                    self._maybe_advance_hw(rep)
                else:
                    became_leader.append(rep)
            elif leader >= 0:
                key = leader if single else (leader, fetcher_id(tp))
                s = following.get(key)
                if s is None:
                    s = following[key] = self._session(b, leader, 0 if single else key[1])
                s.partitions[tp] = None
                s.dirty[tp] = None
                rep.fetching_from = leader
                if s.state == IDLE or s.state == PARKED:
                    self.made = made
                    self._kick(s)
        self.made = made if flags is None else first + len(tps)
        for leader, rest in groups:
            # The session's other new rows: nothing has read its partitions since its first one was added.
            s = following[leader]
            rest = dict.fromkeys(rest)
            s.partitions.update(rest)
            if s.dirty:
                s.dirty.update(rest)
            else:
                s.dirty = rest          # (the kicked fetch took the first row: usually the dirty set is empty)
        if watched:
            # The leader rows' watch entries (Kafka's lastCaughtUpTime: now for ISR members, 0 for the others), in
            # row order in each session: nothing read these sessions' watches since the first leader row.
            lead_tps, entries_of = watched
            for r, entries in entries_of:
                s = sessions[(r, b, 0)]
                if s.fresh:
                    s.fresh.update(entries)
                else:
                    s.fresh = entries       # (made for this session alone)
            sim.metrics.leader_rows_changed(b, lead_tps)
        if became_leader:
            sim.metrics.leaders_changed(b, became_leader)

    def _pristine_in_bulk(self, b: int, tps: list, columns: dict, isrs: list, replica_sets: list, lists: tuple,
                          tp_ids: np.ndarray) -> tuple[list | None, list, list]:
        """The pristine rows of a LeaderAndIsr whose rows are all new to broker ``b`` (one log directory, one
        fetcher), made at once: (a flag per row — 1 a pristine follower row made here, 2 the first such row of
        its session, 3 a pristine leader row, 4 one whose followers include one seen first, 0 any other —,
        (leader, the partitions of its session's other new rows, in order) per session, and (the leader rows'
        partitions, (follower, the watch entries of the leader rows it follows, in order) per follower) or ());
        (None, (), ()) when some row is not new.
        The leaders are rows only if none has a log on disk."""
        reps, pristine, disk = self.replicas[b], self.pristine[b], self.disks[b]
        if (reps and any(map(reps.__contains__, tps))) or (pristine and any(map(pristine.__contains__, tps))):
            return None, (), ()
        n = len(tps)
        leader_array = columns["leader"]
        follows = (leader_array != b) & (leader_array >= 0)
        leads = leader_array == b
        if not self.pristine_leaders:
            leads[:] = False
        if disk:
            # A follower with a log on disk is made a Replica in the loop, in its session's order: its session's
            # rows all go that way.
            on_disk = np.fromiter(map(disk.__contains__, tps), dtype=bool, count=n)
            follows &= ~np.isin(leader_array, leader_array[follows & on_disk])
            if (leads & on_disk).any():
                leads[:] = False
        lazy = np.flatnonzero(follows | leads)
        follows = np.flatnonzero(follows)
        if not lazy.size:
            return None, (), ()
        flags = np.zeros(n, dtype=np.int8)
        tp_array = np.fromiter(tps, dtype=object, count=n)     # (not a[:] = list: 8x slower)
        groups: list = []
        if follows.size:
            by_session = follows[np.argsort(leader_array[follows], kind="stable")]
            keys = leader_array[by_session]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            flags[follows] = 1
            flags[by_session[starts]] = 2
            groups = [(int(leader_array[g[0]]), tp_array[g[1:]].tolist()) for g in np.split(by_session, starts[1:])]
        watched: dict = {}
        if leads.any():
            lead_rows = np.flatnonzero(leads)
            flags[lead_rows] = 3
            now = self.sim.loop.now
            caught_up, never = (now, 0), (0, 0)       # shared: a follower's first fetch removes its entry
            replica_column, isr_column, batch_rows = lists
            table = self._row_table(replica_column, np.asarray(batch_rows)[lead_rows])
            isr_table = self._row_table(isr_column, np.asarray(batch_rows)[lead_rows]) if table is not None else None
            if isr_table is not None:
                # Each follower's entries in row order, as arrays: (row, follower) pairs sorted by follower, then row.
                width = table.shape[1]
                in_isr = np.zeros(table.shape, dtype=bool)
                for j in range(isr_table.shape[1]):
                    in_isr |= table == isr_table[:, j:j + 1]
                at = np.repeat(lead_rows, width)
                follower = table.reshape(-1)
                in_isr = in_isr.reshape(-1)
                keep = follower != b
                at, follower, in_isr = at[keep], follower[keep], in_isr[keep]
                order = np.lexsort((at, follower))
                at, follower, in_isr = at[order], follower[order], in_isr[order]
                starts = np.flatnonzero(np.r_[True, follower[1:] != follower[:-1]])
                flags[at[starts]] = 4
                bounds = np.r_[starts, len(at)].tolist()
                for r, lo, hi in zip(follower[starts].tolist(), bounds, bounds[1:]):
                    keys = tp_array[at[lo:hi]].tolist()
                    member = in_isr[lo:hi]
                    watched[r] = dict.fromkeys(keys, caught_up) if member.all() else \
                        dict(zip(keys, [caught_up if x else never for x in member.tolist()]))
            else:
                for i, tp, replicas, isr in zip(lead_rows.tolist(), tp_array[lead_rows].tolist(),
                                                np.fromiter(replica_sets, dtype=object, count=n)[lead_rows].tolist(),
                                                np.fromiter(isrs, dtype=object, count=n)[lead_rows].tolist()):
                    for r in replicas:
                        if r != b:
                            entries = watched.get(r)
                            if entries is None:
                                entries = watched[r] = {}
                                flags[i] = 4
                            entries[tp] = caught_up if r in isr else never
        # Every row makes one replica or row: row i is the (made + 1 + i)-th.
        rows = self.rows[b]
        base = len(rows.order)
        m = len(lazy)
        every = m == n          # (a set-up: every row a pristine row)
        for column, name in ((rows.leader, "leader"), (rows.leader_epoch, "leader_epoch"),
                             (rows.partition_epoch, "partition_epoch"), (rows.min_isr, "min_isr")):
            column.extend((columns[name] if every else columns[name][lazy]).tolist())
        for column, values in ((rows.isr, isrs), (rows.replicas, replica_sets)):
            column.extend(values if every else np.fromiter(values, dtype=object, count=n)[lazy].tolist())
        rows.log_dir.extend(repeat(self.sim.log_dirs[0], m))
        rows.order.extend(range(self.made + 1, self.made + 1 + n) if every else (lazy + (self.made + 1)).tolist())
        keys = tps if every else tp_array[lazy].tolist()
        rows.keys.extend(keys)
        rows.extend_ids(tp_ids if every else tp_ids[lazy])
        _, isr_column, batch_rows = lists
        rows.mirror_appended(columns["leader"] if every else columns["leader"][lazy],
                             columns["leader_epoch"] if every else columns["leader_epoch"][lazy],
                             self._row_table(isr_column, np.asarray(batch_rows)[lazy]))
        pristine.update(zip(keys, range(base, base + m)))
        return flags, groups, (tp_array[leads].tolist(), list(watched.items())) if leads.any() else ()

    def _tp_key(self, topic: str, partition: int) -> tuple:
        """The one (topic, partition) key object of a partition (from its topic's table, if that covers it)."""
        keys = self._tp_table.get(topic)
        if keys is not None and partition < len(keys):
            return keys[partition]
        tp = (topic, partition)
        return self._interned.setdefault(tp, tp)

    def _tps(self, names, codes: np.ndarray, parts: np.ndarray) -> tuple[list[tuple], np.ndarray]:
        """The interned (topic, partition) keys of rows (``names[codes[i]]``, ``parts[i]``), from a table per topic, and
        their ids."""
        out = np.empty(len(codes), dtype=object)
        out_ids = np.empty(len(codes), dtype=np.int64)
        by_code = np.argsort(codes, kind="stable")
        sorted_codes = codes[by_code]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        for at in np.split(by_code, starts[1:]):
            name = names[int(codes[at[0]])]
            want = parts[at]
            keys = self._key_table(name, int(want.max()) + 1)
            out[at] = keys[want]
            out_ids[at] = self._tp_ids[name][want]
        return out.tolist(), out_ids

    def _key_table(self, name: str, need: int) -> np.ndarray:
        """Topic ``name``'s table of (topic, partition) key objects (and of their ids), grown to at least ``need``."""
        keys = self._tp_table.get(name)
        if keys is None or len(keys) < need:
            have = 0 if keys is None else len(keys)
            grown = np.empty(max(need, 2 * have), dtype=object)
            if have:
                grown[:have] = keys
            grown[have:] = np.fromiter(zip(repeat(name), range(have, len(grown))), dtype=object,
                                       count=len(grown) - have)
            keys = self._tp_table[name] = grown
            ids = np.fromiter(map(id, grown[have:].tolist()), dtype=np.int64, count=len(grown) - have)
            self._tp_ids[name] = ids if not have else np.concatenate((self._tp_ids[name], ids))
        return keys

    def tp_keys(self, topic: str, n: int) -> list[tuple]:
        """The key objects of ``topic``'s partitions 0 .. n-1 (the ones the data plane uses)."""
        return self._key_table(topic, n)[:n].tolist() if n else []

    @staticmethod
    def _row_table(column, rows) -> np.ndarray | None:
        """The int lists of ``rows`` of a ListColumn as a table, if they all have one length (else None)."""
        offsets = np.asarray(column.offsets)
        rows = np.asarray(rows)
        if not len(rows):
            return None
        lengths = offsets[rows + 1] - offsets[rows]
        width = int(lengths[0])
        if not width or lengths.min() != lengths.max():
            return None
        return np.asarray(column.values)[offsets[rows][:, None] + np.arange(width)].astype(np.int64)

    def _row_tuples(self, column, rows) -> list[tuple]:
        """The int tuples of ``rows`` of a ListColumn, each one interned."""
        intern = self._interned.setdefault
        offsets = np.asarray(column.offsets)
        values = np.asarray(column.values)
        rows = np.asarray(rows)
        lengths = offsets[rows + 1] - offsets[rows]
        width = int(lengths[0]) if len(rows) else 0
        if len(rows) > 64 and 0 < width <= 3 and lengths.min() == lengths.max():
            # One width of at most three (replica sets and full ISRs at RF 3): each distinct tuple is made once,
            # found by packing a row's broker ids into one int64 (21 bits each).
            table = values[offsets[rows][:, None] + np.arange(width)].astype(np.int64)
            if table.min() >= 0 and table.max() < 1 << 21:
                packed = table[:, 0]
                for k in range(1, width):
                    packed = packed << 21 | table[:, k]
                distinct, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
                made = np.empty(len(first), dtype=object)
                made[:] = [intern(t, t) for t in map(tuple, table[first].tolist())]
                return made[inverse.reshape(-1)].tolist()
        lo = offsets[rows].tolist()
        hi = offsets[rows + 1].tolist()
        flat = values.tolist()
        out = []
        for a, z in zip(lo, hi):
            t = tuple(flat[a:z])
            out.append(intern(t, t))
        return out

    def _make_leader(self, rep: Replica) -> None:
        b, tp, now = rep.broker, rep.tp, self.sim.loop.now
        if rep.fetching_from >= 0:
            self._leave_session(b, tp)
        rep.log.assign_epoch_start(rep.leader_epoch)
        rep.epoch_start = rep.log.leo
        leo = rep.log.leo
        rep.follower_leo = {}
        led = self.led_with.setdefault(b, {})
        fetcher = self.fetcher_id(tp)
        for r in rep.replicas:
            if r == b:
                continue
            rep.follower_leo[r] = -1               # unknown until the follower fetches
            led.setdefault(r, {})[tp] = None
            s = self.sessions.get((r, b, fetcher)) or self._session(r, b, fetcher)
            # Kafka resets lastCaughtUpTime to now for ISR members, to 0 for the others.
            self._watch_set(s, tp, [now if r in rep.isr else 0, leo])
        self.sim.metrics.leader_changed(rep)
        self._maybe_advance_hw(rep)

    def _resign(self, rep: Replica) -> None:
        led = self.led_with.get(rep.broker, {})
        for r in rep.replicas:
            if r in led:
                led[r].pop(rep.tp, None)
            s = self.sessions.get((r, rep.broker, self.fetcher_id(rep.tp)))
            if s is not None:
                s.watch.pop(rep.tp, None)
                if s.fresh:
                    s.fresh.pop(rep.tp, None)
                s.pending.pop(rep.tp, None)
        self._fail_delayed(rep, NOT_LEADER_OR_FOLLOWER)
        rep.follower_leo = NO_FOLLOWERS

    def _make_follower(self, rep: Replica) -> None:
        b, tp = rep.broker, rep.tp
        if rep.fetching_from >= 0:
            self._leave_session(b, tp)
        if rep.leader < 0 or rep.leader == b:
            return    # "cannot become follower since the new leader -1 is unavailable"
        s = self._session(b, rep.leader, self.fetcher_id(tp))
        s.partitions[tp] = None
        s.dirty[tp] = None
        rep.fetching_from = rep.leader
        self._kick(s)

    def stop_replica(self, b: int, tp: tuple, delete: bool) -> None:
        rep = self.replica_or_none(b, tp)
        if rep is not None:
            if rep.leader == b:
                self._resign(rep)
            self._leave_session(b, tp)
            del self.replicas[b][tp]
        if delete:
            self.disks.get(b, {}).pop(tp, None)

    def log_dir_failed(self, b: int, log_dir: str) -> None:
        """The replicas in ``log_dir`` go offline at once: leaders stop, followers stop fetching."""
        self.wake_all(b)
        for rep in sorted(self.replicas.get(b, {}).values(), key=_ORDER):      # the order they were made in
            if rep.log_dir == log_dir and not rep.offline:
                if rep.leader == b:
                    self._resign(rep)
                    self._fail_delayed(rep, KAFKA_STORAGE_ERROR)
                self._leave_session(b, rep.tp)
                rep.offline = True

    def min_isr_changed(self, topic: str) -> None:
        """``min.insync.replicas`` changed for ``topic`` ("": the broker default): every replica takes it at
        once (Kafka reads it from the log's config on each append and high-watermark update)."""
        for b in sorted(self.replicas):
            for rep in self.replicas[b].values():
                if topic == "" or rep.tp[0] == topic:
                    rep.min_isr = min(self.sim.min_isr(rep.tp[0]), len(rep.replicas))   # effectiveMinIsr
        for b, pristine in self.pristine.items():
            rows = self.rows[b]
            for tp, k in pristine.items():
                if topic == "" or tp[0] == topic:
                    rows.min_isr[k] = min(self.sim.min_isr(tp[0]), len(rows.replicas[k]))

    def _leave_session(self, b: int, tp: tuple) -> None:
        rep = self.replica_or_none(b, tp)
        if rep is None or rep.fetching_from < 0:
            return
        s = self.sessions.get((b, rep.fetching_from, self.fetcher_id(tp)))
        rep.fetching_from = -1
        if s is not None:
            s.partitions.pop(tp, None)
            s.dirty.pop(tp, None)

    # --- fetching ------------------------------------------------------------------------------------
    def fetcher_id(self, tp: tuple) -> int:
        """The follower's fetcher thread for ``tp``: AbstractFetcherManager.getFetcherId."""
        if self.num_fetchers == 1:
            return 0
        f = self._fetcher_of.get(tp)
        if f is None:
            f = self._fetcher_of[tp] = java_abs(to_int32(31 * java_string_hash(tp[0]) + tp[1])) % self.num_fetchers
        return f

    def _session(self, follower: int, leader: int, fetcher: int = 0) -> FetchSession:
        key = (follower, leader, fetcher)
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = FetchSession(follower, leader, self.sim.loop.now, fetcher)
        return s

    @staticmethod
    def _flush(s: FetchSession) -> None:
        """The watch's never-fetched tail moved into it, in order (before anything is inserted into the watch)."""
        s.watch.update(s.fresh)
        s.fresh.clear()

    def _watch_set(self, s: FetchSession, tp: tuple, entry: list) -> None:
        """``s.watch[tp] = entry`` on the watch with its tail: an entry keeps its place; a new one goes last."""
        fresh = s.fresh
        if fresh:
            if tp in fresh:
                fresh[tp] = entry
                return
            if tp not in s.watch:
                self._flush(s)
        s.watch[tp] = entry

    def _kick(self, s: FetchSession) -> None:
        """New partitions in the session: fetch now (a parked fetch is answered early)."""
        if s.state == IDLE:
            self._send_fetch(s)
        elif s.state == PARKED:
            self._respond(s, {}, {}, {}, force=True)

    def _backoff(self, s: FetchSession, seq: int | None = None, reset: bool = True) -> None:
        """Fetch again after ``replica.fetch.backoff.ms``. After a failed fetch (``reset``), the next one is
        a full fetch with every partition's offset: FetchSessionHandler.handleError closes the session,
        and the leader may not have heard of what the failed fetch carried."""
        if seq is not None and seq != s.seq:
            return      # about an older fetch
        s.seq += 1
        s.state = BACKOFF
        if reset:
            s.dirty.update(dict.fromkeys(s.partitions))
        if s.timer is not None:
            s.timer.cancel()
        s.timer = self.sim.loop.after(self.fetch_backoff_ms, lambda: self._retry(s), "fetch backoff")

    def _retry(self, s: FetchSession) -> None:
        s.timer = None
        if s.state in (BACKOFF, DELAYED):
            s.state = IDLE
            self._send_fetch(s)

    def _send_fetch(self, s: FetchSession) -> None:
        f = s.follower
        reps = self.replicas.get(f)
        if reps is None or not s.partitions or s.state != IDLE:
            return
        offsets = {}
        partitions = s.partitions
        # Each partition once, dirty ones first ({**a, **b}: the keys in first-seen order, made in C).
        pristine = self.pristine.get(f)
        row_epochs = self.rows[f].leader_epoch if pristine else None
        watch, fresh, dirty = s.watch, s.fresh, s.dirty
        keys = None
        if (watch or fresh) and 4 * len(partitions) < len(watch) + len(fresh):
            # Few partitions followed against many of the leader's (a session kicked at its first new row while the
            # leader's rows for this follower await their first fetch): the merge below, from the followed side.
            extra = [tp for tp in partitions if tp not in dirty and (tp in watch or tp in fresh)]
            if len(extra) <= 1:     # (one partition past the dirty ones has one place)
                keys = [tp for tp in dirty if tp in partitions] + extra
        if keys is None:
            keys = ({**dirty, **watch, **fresh} if fresh else {**dirty, **watch}) if watch or fresh else dirty
        n = len(keys)
        if n >= 16:
            followed = list(map(partitions.__contains__, keys))
            if not all(followed):
                keys = list(compress(keys, followed))      # (the watch holds the leader's partitions not followed yet)
                n = len(keys)
        if pristine and n >= 16:
            # The loop below as arrays (a session's first full fetch carries thousands of pristine rows): a pristine
            # row's offsets are an empty log's in its row's leader epoch; a replica's are read one by one.
            keys = list(keys)
            at = self.rows[f].find(keys, pristine)
            is_row = at >= 0
            if is_row.any():
                mirror = self.rows[f].arrays()
                epochs = mirror[1][np.maximum(at, 0)] if mirror is not None else \
                    np.fromiter(itemgetter(*at.tolist())(row_epochs), dtype=np.int64, count=n)
                # One (0, -1, epoch) tuple per distinct epoch, shared by the rows (the leader reads them by identity).
                distinct, inverse = np.unique(epochs, return_inverse=True)
                shared = np.empty(len(distinct), dtype=object)
                for i, e in enumerate(distinct.tolist()):
                    shared[i] = (0, -1, e)
                values = shared[inverse.reshape(-1)].tolist()
                has_rep = ~is_row       # (a partition is a replica or a row, never both)
                for i in np.flatnonzero(has_rep).tolist():
                    rep = reps.get(keys[i])
                    if rep is None:
                        has_rep[i] = False
                        continue
                    log = rep.log
                    epochs = log.epochs
                    values[i] = (log.leo, epochs[-1][0] if epochs else -1, rep.leader_epoch)
                keep = is_row | has_rep
                # (every partition sent: the two lists as they are, the leader makes what it needs of them)
                offsets = (keys, values) if keep.all() else dict(compress(zip(keys, values), keep.tolist()))
                keys = ()
        for tp in keys:
            if tp in partitions:
                rep = reps.get(tp)
                if rep is not None:
                    log = rep.log
                    epochs = log.epochs     # ReplicaLog.latest_epoch, inlined: once per partition fetched
                    offsets[tp] = (log.leo, epochs[-1][0] if epochs else -1, rep.leader_epoch)
                elif pristine:
                    k = pristine.get(tp)
                    if k is not None:
                        offsets[tp] = (0, -1, row_epochs[k])       # an empty log
        s.dirty.clear()
        s.state = IN_FLIGHT
        s.sent_ms = self.sim.loop.now
        s.seq += 1
        seq = s.seq
        self.sim.network.send(f, s.leader, lambda: self._on_fetch(s, offsets, seq), lambda: self._backoff(s, seq),
                              name="fetch")

    def _on_fetch(self, s: FetchSession, offsets: dict | tuple, seq: int) -> None:
        """At the leader: note the follower's progress, then answer or park. ``offsets``: tp -> (offset, last
        fetched epoch, leader epoch), or that as (keys, values) lists."""
        leader, f, now = s.leader, s.follower, self.sim.loop.now
        reps = self.replicas.get(leader)
        if seq != s.seq:
            return
        if reps is None:       # the leader's process is gone: the connection resets
            self.sim.network.send(leader, f, lambda: self._backoff(s, seq), name="fetch reset")
            return
        prev = s.last_fetch_ms
        s.caught_up_ms = prev
        s.last_fetch_ms = now
        truncations: dict = {}
        errors: dict = {}
        watch, fresh = s.watch, s.fresh
        pristine = self.pristine.get(leader)
        if pristine:
            rows = self.rows[leader]
            row_leader, row_epoch, row_isr = rows.leader, rows.leader_epoch, rows.isr
            listed = type(offsets) is tuple
            n = len(offsets[0] if listed else offsets)
            if n >= 16:
                # The loop's common case for a pristine leader (below), as arrays: a follower in the ISR at offset 0
                # with no epoch, in the row's leader epoch. Those partitions only leave the watch, and their answer
                # is empty: the rest go through the loop, in order, and the answer looks at the rest only.
                keys, values = offsets if listed else (list(offsets), list(offsets.values()))
                ka = rows.find(keys, pristine)
                plain = ka >= 0
                if plain.any():
                    mirror = rows.arrays() if 0 <= f <= 62 else None
                    if mirror is not None:
                        at = np.maximum(ka, 0)
                        # The fetch's (offset, last epoch, leader epoch) by the identity of its tuples: a first
                        # fetch's pristine rows share a few.
                        _, first, inverse = np.unique(np.fromiter(map(id, values), dtype=np.int64, count=n),
                                                      return_index=True, return_inverse=True)
                        sent = np.array([values[i] for i in first.tolist()], dtype=np.int64).reshape(-1, 3)[
                            inverse.reshape(-1)]
                        plain &= (mirror[0][at] == leader) & (sent[:, 0] == 0) & (sent[:, 1] < 0)
                        plain &= (sent[:, 2] == mirror[1][at]) & ((mirror[2][at] >> f) & 1 == 1)
                    else:
                        pick = itemgetter(*ka.tolist())      # (-1, not a row: the last row's values, masked out)
                        plain &= np.fromiter(pick(row_leader), dtype=np.int64, count=n) == leader
                        plain &= np.fromiter(map(eq, values, zip(repeat(0), repeat(-1), pick(row_epoch))),
                                             dtype=bool, count=n)
                        plain &= np.fromiter(map(contains, pick(row_isr), repeat(f)), dtype=bool, count=n)
                    if plain.any():
                        gone = compress(keys, plain.tolist())
                        if fresh:
                            # (a row's entry is in the tail unless something was inserted into the watch since)
                            gone = list(gone)
                            left = list(map(fresh.pop, gone, repeat(None)))
                            gone = list(compress(gone, map(is_, left, repeat(None)))) if watch else ()
                        if gone:
                            deque(map(watch.pop, gone, repeat(None)), 0)
                        offsets = {} if plain.all() else dict(compress(zip(keys, values), (~plain).tolist()))
        if type(offsets) is tuple:
            offsets = dict(zip(*offsets))
        for tp, (offset, last_epoch, leader_epoch) in offsets.items():
            rep = reps.get(tp)
            if rep is None and pristine:
                k = pristine.get(tp)
                if k is not None and row_leader[k] == leader:
                    # A pristine leader: an empty log in the epoch of its row.
                    if leader_epoch != row_epoch[k]:
                        errors[tp] = (FENCED_LEADER_EPOCH if leader_epoch < row_epoch[k] else UNKNOWN_LEADER_EPOCH,
                                      leader_epoch)
                        continue
                    if not offset and last_epoch < 0 and f in row_isr[k]:
                        # The follower is at the log end: caught up now, and the session's fetch times stand
                        # for it from here (its watch entry goes; none left means fetched, at offset 0).
                        if fresh.pop(tp, None) is None:
                            watch.pop(tp, None)
                        continue
                    rep = self._wake(leader, tp)
            if rep is None or rep.leader != leader or rep.offline:     # not Replica.is_leader: hot path
                errors[tp] = (NOT_LEADER_OR_FOLLOWER if rep is None or not rep.offline else KAFKA_STORAGE_ERROR,
                              leader_epoch)
                continue
            if leader_epoch != rep.leader_epoch:
                errors[tp] = (FENCED_LEADER_EPOCH if leader_epoch < rep.leader_epoch else UNKNOWN_LEADER_EPOCH,
                              leader_epoch)
                continue
            log = rep.log
            if last_epoch >= 0:
                epoch, end = log.end_offset_for_epoch(last_epoch)
                if epoch != last_epoch or end < offset:
                    follower = self.replicas.get(f, {}).get(tp)
                    if follower is not None:
                        truncations[tp] = follower.log.divergence_with(log)
                        continue
            # _update_follower, inlined for its common case (a follower in the ISR, at or below the high
            # watermark: a set-up's first fetches are millions of these).
            rep.follower_leo[f] = offset
            hw = log.hw
            if offset > hw or rep.pending_isr is not None or f not in rep.isr:
                self._update_follower(rep, s, f, offset, now, prev, True)
                continue
            w = watch.get(tp)
            at = watch
            if w is None and fresh:
                w = fresh.get(tp)
                at = fresh
            if w is not None:
                leo = log.leo
                if offset >= leo:
                    if now > w[0]:
                        w[0] = now
                    del at[tp]
                elif offset >= w[1]:
                    if prev > w[0]:
                        w[0] = prev
                    del at[tp]
                else:
                    w[1] = leo
                    if at is fresh:
                        self._flush(s)      # (fetched: no longer a never-fetched entry)
        self._respond(s, offsets, truncations, errors)

    def _update_follower(self, rep: Replica, s: FetchSession, f: int, offset: int, now: int, prev: int,
                         leo_set: bool = False) -> None:
        """Replica.updateFetchState, then maybeExpandIsr and maybeIncrementLeaderHW."""
        if not leo_set:
            rep.follower_leo[f] = offset
        leo = rep.log.leo
        if s.fresh and (rep.tp in s.fresh or (f not in rep.maximal_isr and rep.tp not in s.watch)):
            self._flush(s)      # fetched, or a new entry: after the tail
        w = s.watch.get(rep.tp)
        if w is not None:
            caught_up = True
            if offset >= leo:
                w[0] = max(w[0], now)
            elif offset >= w[1]:
                w[0] = max(w[0], prev)
            else:
                caught_up = False
            w[1] = leo
            if caught_up and f in rep.isr:
                # From here the session's own fetch times stand for this partition's lastCaughtUpTime.
                del s.watch[rep.tp]
        if f not in rep.maximal_isr:
            s.watch.setdefault(rep.tp, [0, leo])
            if (rep.pending_isr is None and offset >= rep.log.hw and offset >= rep.epoch_start
                    and self.sim.broker_alive_in_metadata(rep.broker, f)):
                self._propose_isr(rep, rep.isr + (f,))
        if offset > rep.log.hw:
            # The high watermark is the least LEO of the ISR: a follower at or below it cannot move it.
            self._maybe_advance_hw(rep)

    def _respond(self, s: FetchSession, offsets: dict, truncations: dict, errors: dict, force: bool = False) -> None:
        leader = s.leader
        reps = self.replicas.get(leader) or NO_REPLICAS
        data = {}
        pending, watch = s.pending, s.watch
        if pending or watch or offsets:
            follower = s.follower
            budget = self.response_max_bytes
            fetch_max = self.fetch_max_bytes
            message_bytes = self.message_bytes
            skip = truncations or errors
            # Each partition once, in first-seen order ({**a, **b, **c} is made in C; a partition's second
            # visit would decide as its first did). The loop adds to ``watch``: it runs over a copy.
            # A partition without a replica here (a pristine row: an empty log) has nothing to send: when none has
            # one, nothing is looked at (a watch of thousands of pristine rows not fetched yet is common in a set-up).
            if not (any(map(reps.__contains__, pending)) or any(map(reps.__contains__, offsets))
                    or any(map(reps.__contains__, watch))):
                keys = ()
            elif watch:
                keys = {**pending, **watch, **offsets} if pending or offsets else tuple(watch)
            else:
                keys = ({**pending, **offsets} if offsets else pending) if pending else offsets
            for tp in keys:
                if skip and (tp in truncations or tp in errors):
                    continue
                rep = reps.get(tp)
                if rep is None or rep.leader != leader or rep.offline:     # not Replica.is_leader: hot path
                    continue
                log = rep.log
                leo = log.leo
                if not leo:
                    continue        # an empty log has nothing past any offset
                o = offsets.get(tp)
                start = o[0] if o is not None else rep.follower_leo.get(follower, -1)
                if start < 0 or start >= leo:
                    continue
                size = message_bytes.get(tp[0], 1024)
                if budget < size:
                    break
                count = min(leo - start, max(1, fetch_max // size), max(1, budget // size))
                budget -= count * size
                upto = start + count
                data[tp] = (start, upto, log.epochs_between(start, upto), log.hw, rep.leader_epoch)
                if upto < leo and tp not in watch:
                    if s.fresh:
                        self._flush(s)      # (tp is not in the tail: it was fetched)
                    watch[tp] = [s.caught_up_ms, leo]
        if not data:
            pending.clear()     # nothing past the follower's offsets: the appends were already sent
        else:
            for tp in data:
                pending.pop(tp, None)
        if not data and not truncations and not errors and not force:
            if s.state == IN_FLIGHT:
                s.state = PARKED
                s.parked_ms = self.sim.loop.now
            if s.hw_moved:
                self._arm_expiry(s)
            return
        if s.hw_moved:
            for tp in s.hw_moved:
                if tp in data or tp in truncations or tp in errors:
                    continue
                rep = reps.get(tp)
                if rep is not None and rep.is_leader:
                    at = rep.follower_leo.get(s.follower, -1)
                    if at >= 0:
                        data[tp] = (at, at, (), rep.log.hw, rep.leader_epoch)     # no records, the high watermark
            s.hw_moved.clear()
        if s.state == PARKED:
            # Woken early from a parked fetch: Kafka's follower would have been refreshing every
            # replica.fetch.wait.max.ms until now, so it counts as having fetched just now.
            s.last_fetch_ms = self.sim.loop.now
        s.state = IN_FLIGHT
        seq = s.seq
        self.sim.network.send(leader, s.follower, lambda: self._on_response(s, data, truncations, errors, seq),
                              lambda: self._backoff(s, seq), name="fetch response")

    def _on_response(self, s: FetchSession, data: dict, truncations: dict, errors: dict, seq: int) -> None:
        """At the follower: truncate where told, append what came, fetch again."""
        f = s.follower
        reps = self.replicas.get(f)
        if reps is None or s.state != IN_FLIGHT or seq != s.seq:
            return
        pristine = self.pristine.get(f)
        for tp, offset in truncations.items():
            rep = reps.get(tp)
            if rep is None and pristine and tp in pristine and tp in s.partitions:
                rep = self._wake(f, tp)
            if rep is not None and tp in s.partitions:
                removed = rep.log.truncate_to(offset)
                if removed:
                    self.truncated += removed
                    self.sim.metrics.truncated(rep, removed)
                s.dirty[tp] = None
        for tp, (start, upto, entries, hw, leader_epoch) in data.items():
            rep = reps.get(tp)
            if rep is None and pristine and tp in pristine and tp in s.partitions:
                rep = self._wake(f, tp)
            if rep is None or tp not in s.partitions or rep.leader_epoch != leader_epoch:
                continue
            if rep.log.leo == start:
                rep.log.copy_from(entries, upto)
            elif upto > start:
                continue      # records for an offset this log is no longer at
            rep.log.hw = min(hw, rep.log.leo)
            s.dirty[tp] = None
        s.state = IDLE
        if errors:
            for tp, (error, leader_epoch) in errors.items():
                rep = reps.get(tp)
                if rep is None:
                    k = pristine.get(tp) if pristine else None
                    if k is None or tp not in s.partitions:
                        continue
                    epoch = self.rows[f].leader_epoch[k]
                elif tp not in s.partitions:
                    continue
                else:
                    epoch = rep.leader_epoch
                if error == FENCED_LEADER_EPOCH and epoch == leader_epoch:
                    # AbstractFetcherThread.onPartitionFenced: the leader has a newer epoch; the partition
                    # stops fetching until a LeaderAndIsr brings the follower that epoch.
                    self._leave_session(f, tp)
                else:
                    s.dirty[tp] = None      # delayPartitions: fetched again after the backoff
            self._backoff(s, reset=False)
            return
        slow = self.slow.get(f)
        if slow is None:
            self._send_fetch(s)
        else:
            kind, value = slow
            wait = value if kind == "delay" else int((value - 1) * max(1, self.sim.loop.now - s.sent_ms))
            s.state = DELAYED
            s.timer = self.sim.loop.after(wait, lambda: self._retry(s), "slow follower")

    def set_slow(self, b: int, kind: str | None, value=None) -> None:
        if kind is None:
            self.slow.pop(b, None)
            for (f, _, _), s in self.sessions.items():
                if f == b and s.state == DELAYED:
                    if s.timer is not None:
                        s.timer.cancel()
                    s.state = IDLE
                    self._send_fetch(s)
        else:
            self.slow[b] = (kind, value)

    # --- the high watermark and the purgatory -----------------------------------------------------
    def _maybe_advance_hw(self, rep: Replica) -> None:
        if self.hw_frozen_under_min_isr and len(rep.isr) < rep.min_isr:
            return
        hw = rep.log.leo
        fl = rep.follower_leo
        for r in rep.maximal_isr:
            if r != rep.broker:
                leo = fl.get(r, -1)
                if leo < hw:
                    hw = leo
        if hw > rep.log.hw:
            rep.log.hw = hw
            self._complete_delayed(rep)
            b, tp = rep.broker, rep.tp
            fetcher = self.fetcher_id(tp)
            for r in rep.replicas:
                if r != b:
                    s = self.sessions.get((r, b, fetcher))
                    if s is not None:
                        s.hw_moved[tp] = None
                        if s.state == PARKED:
                            self._arm_expiry(s)

    def _arm_expiry(self, s: FetchSession) -> None:
        """A parked fetch expires every ``replica.fetch.wait.max.ms`` after it was parked (the follower then
        fetches again at once): the first expiry after a high watermark moved is answered, carrying it."""
        seq = s.seq
        if s.expiry is not None:
            if s.expiry[0] == seq:
                return
            s.expiry[1].cancel()
        wait = self.fetch_wait_max_ms
        now = self.sim.loop.now
        at = s.parked_ms + wait * ((now - s.parked_ms) // wait + 1)

        def expire() -> None:
            s.expiry = None
            if s.state == PARKED and s.seq == seq and s.leader in self.replicas:
                self._respond(s, {}, {}, {}, force=True)
        s.expiry = (seq, self.sim.loop.at(at, expire, "fetch wait expiry"))

    def _complete_delayed(self, rep: Replica) -> None:
        delayed = rep.delayed
        hw = rep.log.hw
        while delayed and delayed[0][0] <= hw:
            end, request, i, result = delayed.popleft()
            if len(rep.maximal_isr) >= rep.min_isr:
                request.decide(i, result)
            else:
                request.decide(i, (NOT_ENOUGH_REPLICAS_AFTER_APPEND,) + result[1:])

    def _fail_delayed(self, rep: Replica, error: str) -> None:
        while rep.delayed:
            _, request, i, result = rep.delayed.popleft()
            request.decide(i, (error,) + result[1:])

    def produce(self, b: int, acks: int, batches: list, respond, timeout_ms: int | None = None) -> None:
        """A produce request at broker ``b``: ``batches`` of (tp, count); ``respond(results)`` gets
        one (error, tp, count, epoch, first offset) per batch (never called for acks=0). ``timeout_ms``
        is the request's timeout (the producer's request.timeout.ms): how long acks=-1 batches may wait."""
        reps = self.replicas.get(b)
        pristine = self.pristine.get(b)
        request = ProduceRequest(acks, batches, respond if acks != 0 else (lambda results: None))
        waiting = False
        for i, (tp, count) in enumerate(batches):
            rep = reps.get(tp) if reps is not None else None
            if rep is None and pristine and tp in pristine:
                rep = self._wake(b, tp)
            if rep is not None and rep.offline:
                # ReplicaManager.getPartitionOrException: an offline partition fails first, leader or not.
                request.decide(i, (KAFKA_STORAGE_ERROR, tp, count, -1, -1))
                continue
            if rep is None or rep.leader != b:
                request.decide(i, (NOT_LEADER_OR_FOLLOWER, tp, count, -1, -1))
                continue
            if acks == -1 and len(rep.isr) < rep.min_isr:
                request.decide(i, (NOT_ENOUGH_REPLICAS, tp, count, -1, -1))
                continue
            first = rep.log.append(count, rep.leader_epoch)
            result = (NONE, tp, count, rep.leader_epoch, first)
            self._appended(rep)
            self._maybe_advance_hw(rep)     # whatever the acks (the ISR may be the leader alone)
            if acks == -1:
                if rep.log.hw >= first + count:
                    ok = len(rep.maximal_isr) >= rep.min_isr
                    request.decide(i, result if ok else (NOT_ENOUGH_REPLICAS_AFTER_APPEND,) + result[1:])
                else:
                    if rep.delayed is NOTHING_DELAYED:
                        rep.delayed = deque()
                    rep.delayed.append((first + count, request, i, result))
                    waiting = True
            else:
                request.decide(i, result)
        if waiting and request.remaining:
            request.timer = self.sim.loop.after(self.request_timeout_ms if timeout_ms is None else timeout_ms,
                                                lambda: self._expire(request),
                                                "produce timeout")

    def _expire(self, request: ProduceRequest) -> None:
        request.timer = None
        for i, r in enumerate(request.results):
            if r is None:
                tp, count = request.batches[i]
                request.decide(i, (REQUEST_TIMED_OUT, tp, count, -1, -1))

    def _appended(self, rep: Replica) -> None:
        """Wake the followers' parked fetches."""
        b, tp = rep.broker, rep.tp
        fetcher = self.fetcher_id(tp)
        for r in rep.replicas:
            if r != b:
                s = self.sessions.get((r, b, fetcher))
                if s is not None:
                    s.pending[tp] = None
                    if s.state == PARKED:
                        self._respond(s, {}, {}, {})

    # --- ISR shrink and AlterPartition -------------------------------------------------------------
    def _schedule_isr_check(self, b: int) -> None:
        self.isr_timers[b] = self.sim.loop.after(max(1, self.lag_max_ms // 2), lambda: self._isr_check(b),
                                                 f"isr-expiration {b}")

    def _isr_check(self, b: int) -> None:
        """ReplicaManager's isr-expiration task: maybeShrinkIsr on every partition this broker leads
        (only those that can be out of sync are looked at)."""
        if b not in self.replicas:
            return
        now = self.sim.loop.now
        reps = self.replicas[b]
        shrink: dict[tuple, list] = {}
        pristine = self.pristine.get(b)
        if pristine:
            # Pristine leaders: a follower that has not fetched yet has its row's watch entry (a tuple).
            row_leader, row_isr = self.rows[b].leader, self.rows[b].isr
            for (f, leader, _), s in self.sessions.items():
                if leader != b or not (s.watch or s.fresh):
                    continue
                for tp, w in chain(s.watch.items(), s.fresh.items()) if s.fresh else s.watch.items():
                    if type(w) is tuple and now - w[0] > self.lag_max_ms:
                        k = pristine.get(tp)
                        if k is not None and row_leader[k] == b and f in row_isr[k] and tp not in reps:
                            shrink.setdefault(tp, []).append(f)
        for f, tps in self.led_with.get(b, {}).items():
            if self.num_fetchers == 1:
                groups = [(self.sessions.get((f, b, 0)), tps)]
            else:
                by_fetcher: dict[int, dict] = {}
                for tp in tps:
                    by_fetcher.setdefault(self.fetcher_id(tp), {})[tp] = None
                groups = [(self.sessions.get((f, b, k)), group) for k, group in sorted(by_fetcher.items())]
            for s, group in groups:
                fresh = s is not None and (s.state == PARKED or now - s.caught_up_ms <= self.lag_max_ms)
                candidates = group if not fresh else (s.watch if s is not None else {})
                if fresh and s.fresh:
                    candidates = chain(s.watch, s.fresh)
                for tp in candidates:
                    rep = reps.get(tp)
                    if rep is None or not rep.is_leader or rep.pending_isr is not None or f not in rep.isr:
                        continue
                    if rep.follower_leo.get(f, -1) == rep.log.leo:
                        continue       # Replica.isCaughtUp: a follower at the log end is in sync
                    w = s.watch.get(tp) if s is not None else None
                    if w is None and s is not None and s.fresh:
                        w = s.fresh.get(tp)
                    last = w[0] if w is not None else (s.caught_up_ms if s is not None else 0)
                    if now - last > self.lag_max_ms:
                        shrink.setdefault(tp, []).append(f)
        for tp in sorted(shrink):
            rep = reps.get(tp) or self._wake(b, tp)
            out = shrink[tp]
            self._propose_isr(rep, tuple(r for r in rep.isr if r not in out), shrink=True)
        self._schedule_isr_check(b)

    def _propose_isr(self, rep: Replica, isr: tuple, shrink: bool = False) -> None:
        # PendingShrinkIsr keeps the current ISR as the maximal one; PendingExpandIsr adds the new member.
        rep.pending_isr = rep.isr if shrink else isr
        self.alter_queue.setdefault(rep.broker, {})[rep.tp] = (rep.leader_epoch, isr, rep.partition_epoch)
        self._send_alter(rep.broker)

    def _send_alter(self, b: int) -> None:
        if self.alter_in_flight.get(b) or not self.alter_queue.get(b):
            return
        proposals = self.alter_queue.pop(b)
        self.alter_in_flight[b] = True
        gen = self.replicas.get(b)

        def on_response(response) -> None:
            if self.replicas.get(b) is not gen:
                return     # the process restarted meanwhile
            self.alter_in_flight[b] = False
            self._alter_done(b, proposals, response)
            self._send_alter(b)

        if not self.sim.send_alter_partition(b, proposals, on_response):
            self.alter_in_flight[b] = False
            self.alter_queue.setdefault(b, {}).update(
                {tp: v for tp, v in proposals.items() if tp not in self.alter_queue.get(b, {})})
            self.sim.loop.after(ALTER_PARTITION_RETRY_MS, lambda: self._send_alter(b) if b in self.replicas else None,
                                "alter-partition retry")

    def _alter_done(self, b: int, proposals: dict, response) -> None:
        """Partition.handleAlterPartitionUpdate: adopt what the controller stored, or give up the proposal."""
        for tp, (leader_epoch, _isr, _pe) in proposals.items():
            rep = self.replica_or_none(b, tp)
            if rep is None or rep.leader_epoch != leader_epoch:
                continue
            rep.pending_isr = None
            result = response.partitions.get(tp) if response is not None else None
            if result is not None and not isinstance(result, str) and result.leader_epoch == rep.leader_epoch:
                isr = tuple(result.isr)
                rep.isr = self._interned.setdefault(isr, isr)
                rep.partition_epoch = result.partition_epoch
                fetcher = self.fetcher_id(tp)
                for r in rep.isr:
                    s = self.sessions.get((r, b, fetcher))
                    if r != b and s is not None:
                        w = s.watch.get(tp)     # (not the tail: a follower there has not fetched)
                        if w is not None and rep.follower_leo.get(r, -1) >= rep.log.leo:
                            del s.watch[tp]
            self._maybe_advance_hw(rep)
            self._complete_delayed(rep)
