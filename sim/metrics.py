"""What a simulation run cost: availability (as the controller and as clients see it), produce errors and
latency, elections, failovers and lost writes.

:class:`Metrics` watches every record the run journals (rows through :meth:`Metrics.observe`, columnar
batches through :meth:`Metrics.observe_batch`) and keeps, per partition, the leader, ISR size and
replica count the controller last wrote — the state Kafka's own ``OfflinePartitionsCount`` and
``UnderMinIsrPartitionCount`` report — as numpy columns (one region of rows per topic), so a batch of
transitions is a few array operations. Partition-seconds are integrated exactly at every change.

**Availability as clients see it.** A partition is *unavailable to clients* while

- it is offline (no leader in its ``/state``, or in OfflinePartition), or
- the broker its ``/state`` names as leader is not serving it: the broker's process is gone (killed,
  halted or stopped), or the network keeps ``"clients"`` from reaching it, or it does not act as the
  partition's leader — it has not yet applied the LeaderAndIsr that made it leader (a new leader, or a
  restarted process that has not been told yet), or the partition's log directory failed there.

It is available again once the leader the controller elected serves it: the instant the leader's
process applies the LeaderAndIsr (``Replication._make_leader`` calls :meth:`Metrics.leader_changed`).
A leader epoch bump that keeps the leader (an ISR change written by the controller) does not stop a
serving leader: Kafka's produce path does not check the leader epoch. What the clients' own discovery
of a new leader costs — the metadata refresh after ``retry.backoff.ms``, reconnection backoff — is not
part of this count: it shows in the produce latency and in each fault's recovery as producers saw it.
A zombie (a leader the controller replaced, still accepting writes) does not make its partition
available: its writes are the ones that get lost.

Counted cheaply: per broker, the partitions it leads (``/state``) and those of them it does not serve
yet; the unavailable count is the offline ones plus, per broker, all it leads if clients cannot reach
its process, else those it does not serve. Only what changed is touched: a partition's transition,
a broker becoming leader of a partition, or a broker's process or reachability changing (the
simulation's hooks call :meth:`Metrics.brokers_changed` and :meth:`Metrics.log_dir_failed`). A
restarted process serves nothing until told, so all its broker's leaderships count as unserved then.

**Produce.** The producers report each batch's outcome; every batch acknowledged with acks 1 or all
is kept as (leader epoch, first offset, count), and at the end it is looked up in the log of the
partition's leader: an acknowledged record the leader's log no longer holds (same offset, same epoch)
is lost. If the partition has no leader at the end, records that no replica holds are lost and those
only an offline replica holds are "unavailable". Each leader change also checks the new leader's log,
so the timeline shows when the loss happened (an unclean election, or an acks=1 leader dying before
its followers fetched). Produce latency is measured for messages acknowledged with acks 1 or all,
from their batch's creation in the producer's accumulator to the acknowledgement reaching the
producer; it is kept as an exact histogram (integer milliseconds -> messages), overall and per
interval, and percentiles are nearest-rank.

**Over time.** The gauges (offline, unavailable, under-replicated, under-min-ISR, controller) are kept
as a timeline of change points; counts (messages, errors, elections, latencies) in buckets of
``interval_ms`` (1 s unless the run sets another before it starts): :mod:`sim.series` makes the
time series of both.

``summary()`` is a plain dict (the ``--json`` output); ``format_summary`` prints it for people.
"""
from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter

import numpy as np

from events.records import (
    ELECTION_CONTROLLED_SHUTDOWN, ELECTION_OFFLINE, ELECTION_OFFLINE_UNCLEAN, ELECTION_PREFERRED, ELECTION_REASSIGN,
    KINDS, ControllerElected, LeaderAndIsrUpdated, PartitionTransition, TopicDeletionCompleted,
)
from statemachines.states import NON_EXISTENT_PARTITION, OFFLINE_PARTITION

_PT = PartitionTransition.KIND
_LU = LeaderAndIsrUpdated.KIND
_CE = ControllerElected.KIND
_TD = TopicDeletionCompleted.KIND
ELECTION_KINDS = {
    ELECTION_OFFLINE: "clean", ELECTION_OFFLINE_UNCLEAN: "unclean", ELECTION_PREFERRED: "preferred",
    ELECTION_CONTROLLED_SHUTDOWN: "controlled_shutdown", ELECTION_REASSIGN: "reassignment",
}
HEALTH_ACTIONS = ("kill_broker", "controlled_shutdown", "expire_session", "partition_network", "slow_follower",
                  "fail_log_dir", "start_broker", "heal_network", "catch_up", "reassign", "elect_preferred",
                  "elect_unclean", "delete_topic")
FAULT_ACTIONS = ("kill_broker", "controlled_shutdown", "expire_session", "partition_network", "slow_follower",
                 "fail_log_dir")
DEFAULT_INTERVAL_MS = 1000

# Timeline point columns.
T_MS, T_OFFLINE, T_UNDER_REPLICATED, T_UNDER_MIN_ISR, T_EPOCH, T_UNAVAILABLE, T_CONTROLLER = range(7)
# Interval bucket slots (then one per election kind, in ELECTION_KINDS order).
B_SENT, B_ACKED, B_FAILED, B_CONTROLLER_ELECTIONS, B_ELECTIONS = range(5)
_ELECTION_SLOT = {code: B_ELECTIONS + k for k, code in enumerate(ELECTION_KINDS)}
_BUCKET_SLOTS = B_ELECTIONS + len(ELECTION_KINDS)
_ELECTION_CODES = np.array(sorted(ELECTION_KINDS), dtype=np.int64)

# The per-partition columns: name -> (dtype, value of a row no partition uses).
_COLUMNS = {"ex": (np.bool_, False), "off": (np.bool_, False), "ld": (np.int32, -1), "isr": (np.int32, 0),
            "rf": (np.int32, 0), "mi": (np.int32, 0), "st": (np.int8, 0), "sb": (np.int32, -1), "si": (np.int64, -1)}


def percentile(histogram: dict[int, int], q: float) -> int | None:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of a histogram value -> count; None if it is empty."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, -(-int(q * total * 1_000_000) // 1_000_000))   # ceil(q * total), exact for q in 1e-6 steps
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return value
    return max(histogram)  # pragma: no cover - rank <= total


class Metrics:
    """The running tally of one simulation (see the module docstring)."""

    def __init__(self, sim, interval_ms: int = DEFAULT_INTERVAL_MS):
        self.sim = sim
        self.interval_ms = interval_ms
        # Partition columns: a region of rows per topic, row = base + partition.
        self._base: dict[str, int] = {}
        self._cap: dict[str, int] = {}
        self._used = 0
        self._p = {name: np.full(0, fill, dtype) for name, (dtype, fill) in _COLUMNS.items()}
        self.partitions = 0
        self.offline = 0
        self.under_min_isr = 0
        self.under_replicated = 0
        # Client-side availability: per broker id, the online partitions it leads and those it does not serve.
        self._led: dict[int, int] = {}
        self._unserved: dict[int, int] = {}
        self._up: set[int] = set()                # brokers whose process runs and that clients reach
        self._process: dict[int, object] = {}     # broker id -> the SimBroker process last seen
        self._inc: dict[int, int] = {}            # broker id -> its process's number (0, 1, ... per restart)
        self._unavailable_online = 0              # online partitions clients cannot write to
        self.last_ms = 0
        self.offline_ms = 0             # partition-milliseconds
        self.unavailable_ms = 0
        self.under_min_isr_ms = 0
        self.under_replicated_ms = 0
        self.timeline: list[list] = [[0, 0, 0, 0, 0, 0, -1]]   # see T_*
        self.controller_epoch = 0
        self.controller_id = -1
        self.controller_elections = 0
        self.elections = dict.fromkeys(ELECTION_KINDS.values(), 0)
        self._sent = 0
        self._acked = 0
        self._failed = 0
        self.errors: dict[str, int] = {}          # batches answered with each error
        self.error_messages: dict[str, int] = {}  # messages in them
        self.error_times: list[int] = []          # the distinct times (ms) an error was answered, rising
        self.latency: dict[int, int] = {}         # produce latency ms -> messages acknowledged after it
        self.buckets: dict[int, list] = {}        # interval -> counts (B_* slots)
        self.bucket_errors: dict[int, dict] = {}  # interval -> {error: batches}
        self.bucket_latency: dict[int, dict] = {}  # interval -> {latency ms: messages}
        self.acked: dict[tuple, list] = {}        # tp -> [[epoch, first, end], ...]
        self.lost_seen: dict[tuple, int] = {}
        self.loss_events: list[tuple] = []        # (t, tp, count, why)
        self.truncated_records = 0
        self.faults: list[dict] = []
        self.observations: list[dict] = []

    @property
    def unavailable(self) -> int:
        """Partitions clients cannot write to now (see the module docstring)."""
        return self.offline + self._unavailable_online

    def set_interval(self, interval_ms: int) -> None:
        """Count messages, errors, elections and latencies in buckets of ``interval_ms`` (before the run)."""
        if interval_ms <= 0:
            raise ValueError(f"the metrics interval must be positive, got {interval_ms} ms")
        if self.buckets or self.bucket_errors or self.bucket_latency:
            raise ValueError("the metrics interval is set before the run starts")
        self.interval_ms = interval_ms

    def _bucket(self) -> list:
        k = self.sim.loop.now // self.interval_ms
        b = self.buckets.get(k)
        if b is None:
            b = self.buckets[k] = [0] * _BUCKET_SLOTS
        return b

    # The producers add to these counters (``metrics.sent_messages += n``); each addition is also
    # counted in the interval it happens in.
    @property
    def sent_messages(self) -> int:
        return self._sent

    @sent_messages.setter
    def sent_messages(self, value: int) -> None:
        self._bucket()[B_SENT] += value - self._sent
        self._sent = value

    @property
    def acked_messages(self) -> int:
        return self._acked

    @acked_messages.setter
    def acked_messages(self, value: int) -> None:
        self._bucket()[B_ACKED] += value - self._acked
        self._acked = value

    @property
    def failed_messages(self) -> int:
        return self._failed

    @failed_messages.setter
    def failed_messages(self, value: int) -> None:
        self._bucket()[B_FAILED] += value - self._failed
        self._failed = value

    # --- the partition columns ------------------------------------------------------------------
    def _region(self, topic: str, need: int) -> int:
        """The first row of ``topic``'s region, grown to hold partitions 0..need-1."""
        base = self._base.get(topic)
        if base is not None and need <= self._cap[topic]:
            return base
        old_cap = self._cap.get(topic, 0)
        cap = max(need, 2 * old_cap, 1)
        new = self._used
        self._used = new + cap
        if self._used > len(self._p["ex"]):
            size = max(self._used, 2 * len(self._p["ex"]), 1024)
            for name, (dtype, fill) in _COLUMNS.items():
                a = np.full(size, fill, dtype)
                a[:new] = self._p[name][:new]
                self._p[name] = a
        if base is not None:
            for name, (_, fill) in _COLUMNS.items():
                a = self._p[name]
                a[new:new + old_cap] = a[base:base + old_cap]
                a[base:base + old_cap] = fill
        self._base[topic] = new
        self._cap[topic] = cap
        return new

    def _row(self, tp: tuple) -> int:
        return self._region(tp[0], tp[1] + 1) + tp[1]

    def _count(self, i: int, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) existing partition row ``i`` from every count."""
        p = self._p
        off = bool(p["off"][i])
        isr = int(p["isr"][i])
        self.partitions += sign
        self.offline += sign * off
        self.under_replicated += sign * (isr < int(p["rf"][i]))
        self.under_min_isr += sign * (isr < int(p["mi"][i]))
        if not off:
            b = int(p["ld"][i])
            self._led[b] = self._led.get(b, 0) + sign
            served = int(p["sb"][i]) == b and int(p["si"][i]) == self._inc.get(b, -2)
            if not served:
                self._unserved[b] = self._unserved.get(b, 0) + sign
            if not served or b not in self._up:
                self._unavailable_online += sign

    def _count_rows(self, rows: np.ndarray, sign: int) -> None:
        """:meth:`_count` of many distinct rows at once."""
        p = self._p
        rows = rows[p["ex"][rows]]
        if not rows.size:
            return
        off = p["off"][rows]
        isr = p["isr"][rows]
        self.partitions += sign * int(rows.size)
        self.offline += sign * int(np.count_nonzero(off))
        self.under_replicated += sign * int(np.count_nonzero(isr < p["rf"][rows]))
        self.under_min_isr += sign * int(np.count_nonzero(isr < p["mi"][rows]))
        online = rows[~off]
        if not online.size:
            return
        leaders = p["ld"][online]
        ids, inverse = np.unique(leaders, return_inverse=True)
        ids = ids.tolist()
        inc = np.array([self._inc.get(b, -2) for b in ids], dtype=np.int64)[inverse]
        served = (p["sb"][online] == leaders) & (p["si"][online] == inc)
        led = np.bincount(inverse, minlength=len(ids)).tolist()
        unserved = np.bincount(inverse[~served], minlength=len(ids)).tolist()
        for b, n_led, n_unserved in zip(ids, led, unserved):
            self._led[b] = self._led.get(b, 0) + sign * n_led
            self._unserved[b] = self._unserved.get(b, 0) + sign * n_unserved
            self._unavailable_online += sign * (n_unserved if b in self._up else n_led)

    def _serves(self, b: int, tp: tuple) -> bool:
        """Whether broker ``b``'s process acts as ``tp``'s leader now (the data plane's own state)."""
        return self.sim.replication.serves(b, tp)

    # --- the record stream ------------------------------------------------------------------------
    def observe(self, rec: tuple) -> None:
        kind = rec[0]
        if kind == _PT:
            self._advance(rec[5])
            topic, partition = rec[7], rec[8]
            if rec[10] == NON_EXISTENT_PARTITION:
                self._set(topic, partition, None)
            else:
                self._set(topic, partition, (rec[12], len(rec[14]), len(rec[11]), rec[10]))
            slot = _ELECTION_SLOT.get(rec[17])
            if slot is not None:
                self.elections[ELECTION_KINDS[rec[17]]] += 1
                self._bucket()[slot] += 1
        elif kind == _LU:
            self._advance(rec[5])
            base = self._base.get(rec[7])
            if base is not None and rec[8] < self._cap[rec[7]] and self._p["ex"][base + rec[8]]:
                i = base + rec[8]
                self._set(rec[7], rec[8], (rec[9], len(rec[11]), int(self._p["rf"][i]), int(self._p["st"][i])))
        elif kind == _CE:
            self._advance(rec[5])
            self.controller_elections += 1
            self._bucket()[B_CONTROLLER_ELECTIONS] += 1
            self.controller_epoch = rec[4]
            self.controller_id = rec[3]
            self._point(rec[5])
        elif kind == _TD:
            self._advance(rec[5])
            topic = rec[7]
            base = self._base.get(topic)
            if base is not None:
                rows = np.arange(base, base + self._cap[topic])
                self._count_rows(rows, -1)
                self._p["ex"][rows] = False
                self._point(self.last_ms)
            # A deleted topic's records are gone by design, not lost; a topic re-created under the
            # same name starts again.
            for tp in [tp for tp in self.acked if tp[0] == topic]:
                del self.acked[tp]
                self.lost_seen.pop(tp, None)

    def observe_batch(self, batch) -> None:
        """What :meth:`observe` does for each record of a :class:`events.columns.ColumnBatch`, on its columns."""
        kind = batch.cls.KIND
        if kind == _PT:
            self._transitions(batch)
        elif kind == _LU:
            self._leader_and_isr_updates(batch)
        elif kind in (_CE, _TD):
            for rec in batch.records():
                self.observe(rec)

    def _leader_and_isr_updates(self, batch) -> None:
        """A batch of LeaderAndIsrUpdated records (one time): the last leader and ISR of each partition counted
        (one already counted: the records of others change nothing), as :meth:`observe` does record by record."""
        self._advance(batch.timestamp_ms)
        topic = batch.column("topic")
        names = topic.dictionary
        codes = np.asarray(topic.codes, dtype=np.int64)
        parts = np.asarray(batch.column("partition"), dtype=np.int64)
        bases = np.array([self._base.get(t, -1) for t in names], dtype=np.int64)
        caps = np.array([self._cap.get(t, 0) for t in names], dtype=np.int64)
        p = self._p
        at = np.flatnonzero((bases[codes] >= 0) & (parts >= 0) & (parts < caps[codes]))
        rows = bases[codes[at]] + parts[at]
        counted = p["ex"][rows]
        at, rows = at[counted], rows[counted]
        if not rows.size:
            return
        if rows.size > 1:
            _, last = np.unique(rows[::-1], return_index=True)
            if last.size < rows.size:
                keep = np.sort(rows.size - 1 - last)     # a partition twice: its last record counts
                at, rows = at[keep], rows[keep]
        leader = np.asarray(batch.column("leader"), dtype=np.int64)[at]
        isr = np.diff(batch.column("isr").offsets)[at]
        old_leader = np.where(p["off"][rows], -2, p["ld"][rows])
        self._count_rows(rows, -1)
        offline = (leader < 0) | (p["st"][rows] == OFFLINE_PARTITION)
        min_isr = np.array([self.sim.min_isr(t) for t in names], dtype=np.int64)
        p["ld"][rows] = leader
        p["isr"][rows] = isr
        p["off"][rows] = offline
        p["mi"][rows] = np.minimum(min_isr[codes[at]], p["rf"][rows])
        # A leader moved to a broker that once served the partition: is it still its leader now?
        suspect = ~offline & (leader != old_leader) & (p["sb"][rows] == leader)
        for j in np.flatnonzero(suspect).tolist():
            i, b = int(rows[j]), int(leader[j])
            if int(p["si"][i]) == self._inc.get(b, -2) and not self._serves(b, (names[int(codes[at[j]])],
                                                                                int(parts[at[j]]))):
                p["sb"][i] = -1
        self._count_rows(rows, 1)
        self._point(self.last_ms)

    def _transitions(self, batch) -> None:
        """A batch of PartitionTransition records (one time): the last state of each partition counts."""
        self._advance(batch.timestamp_ms)
        topic = batch.column("topic")
        codes = np.asarray(topic.codes, dtype=np.int64)
        parts = np.asarray(batch.column("partition"), dtype=np.int64)
        election = np.asarray(batch.column("election"), dtype=np.int64)
        counts = np.bincount(np.searchsorted(_ELECTION_CODES, election)[np.isin(election, _ELECTION_CODES)],
                             minlength=len(_ELECTION_CODES)).tolist()
        if any(counts):
            bucket = self._bucket()
            for code, n in zip(_ELECTION_CODES.tolist(), counts):
                if n:
                    self.elections[ELECTION_KINDS[code]] += n
                    bucket[_ELECTION_SLOT[code]] += n
        present = np.flatnonzero(np.bincount(codes, minlength=len(topic.dictionary)))
        need = np.zeros(len(topic.dictionary), dtype=np.int64)
        np.maximum.at(need, codes, parts + 1)
        bases = np.zeros(len(topic.dictionary), dtype=np.int64)
        for c in present.tolist():
            bases[c] = self._region(topic.dictionary[c], int(need[c]))
        rows = bases[codes] + parts
        n = rows.size
        keep = None
        if n > 1:
            _, last = np.unique(rows[::-1], return_index=True)
            if last.size < n:
                keep = np.sort(n - 1 - last)     # a partition twice: its last transition counts
                rows = rows[keep]
        to_state = np.asarray(batch.column("to_state"))
        leader = np.asarray(batch.column("leader"), dtype=np.int64)
        isr = np.diff(batch.column("isr").offsets)
        rf = np.diff(batch.column("replicas").offsets)
        if keep is not None:
            to_state, leader, isr, rf, codes = to_state[keep], leader[keep], isr[keep], rf[keep], codes[keep]
        p = self._p
        was_online = p["ex"][rows] & ~p["off"][rows]
        old_leader = np.where(was_online, p["ld"][rows], -2)
        self._count_rows(rows, -1)
        gone = to_state == NON_EXISTENT_PARTITION
        offline = (leader < 0) | (to_state == OFFLINE_PARTITION)
        min_isr = np.array([self.sim.min_isr(t) for t in topic.dictionary], dtype=np.int64)
        p["ex"][rows] = ~gone
        p["ld"][rows] = leader
        p["isr"][rows] = isr
        p["rf"][rows] = rf
        p["st"][rows] = to_state
        p["off"][rows] = offline
        p["mi"][rows] = np.minimum(min_isr[codes], rf)
        # A leader moved to a broker that once served the partition: is it still its leader now?
        suspect = ~gone & ~offline & (leader != old_leader) & (p["sb"][rows] == leader)
        for j in np.flatnonzero(suspect).tolist():
            i, b = int(rows[j]), int(leader[j])
            if int(p["si"][i]) == self._inc.get(b, -2):
                tp = (topic.dictionary[int(codes[j])], int(parts[j] if keep is None else parts[keep[j]]))
                if not self._serves(b, tp):
                    p["sb"][i] = -1
        self._count_rows(rows[~gone], 1)
        self._point(self.last_ms)

    def _set(self, topic: str, partition: int, new: tuple | None) -> None:
        i = self._region(topic, partition + 1) + partition
        p = self._p
        old_leader = -2
        if p["ex"][i]:
            if not p["off"][i]:
                old_leader = int(p["ld"][i])
            self._count(i, -1)
        if new is None:
            p["ex"][i] = False
        else:
            leader, isr, rf, state = new
            offline = leader < 0 or state == OFFLINE_PARTITION
            p["ex"][i] = True
            p["ld"][i] = leader
            p["isr"][i] = isr
            p["rf"][i] = rf
            p["st"][i] = state
            p["off"][i] = offline
            p["mi"][i] = min(self.sim.min_isr(topic), rf)
            if (not offline and leader != old_leader and int(p["sb"][i]) == leader
                    and int(p["si"][i]) == self._inc.get(leader, -2) and not self._serves(leader, (topic, partition))):
                p["sb"][i] = -1
            self._count(i, 1)
        self._point(self.last_ms)

    def min_isr_changed(self, topic: str) -> None:
        self._advance(self.sim.loop.now)
        p = self._p
        for t in ([topic] if topic else list(self._base)):
            base = self._base.get(t)
            if base is None:
                continue
            rows = np.arange(base, base + self._cap[t])
            rows = rows[p["ex"][rows]]
            before = int(np.count_nonzero(p["isr"][rows] < p["mi"][rows]))
            p["mi"][rows] = np.minimum(p["rf"][rows], self.sim.min_isr(t))
            self.under_min_isr += int(np.count_nonzero(p["isr"][rows] < p["mi"][rows])) - before
        self._point(self.last_ms)

    def _advance(self, now: int) -> None:
        dt = now - self.last_ms
        if dt > 0:
            self.offline_ms += self.offline * dt
            self.unavailable_ms += (self.offline + self._unavailable_online) * dt
            self.under_min_isr_ms += self.under_min_isr * dt
            self.under_replicated_ms += self.under_replicated * dt
            self.last_ms = now

    def _point(self, now: int) -> None:
        point = [now, self.offline, self.under_replicated, self.under_min_isr, self.controller_epoch,
                 self.offline + self._unavailable_online, self.controller_id]
        last = self.timeline[-1]
        if last[1:] == point[1:]:
            return
        if last[0] == now:
            self.timeline[-1] = point
        else:
            self.timeline.append(point)

    # --- the brokers, as clients see them ---------------------------------------------------------
    def brokers_changed(self) -> None:
        """A broker's process started or stopped, or links were cut or healed: which brokers clients can
        write to, and which processes are new (they serve nothing until a LeaderAndIsr makes them leader)."""
        sim = self.sim
        self._advance(sim.loop.now)
        for b in sorted(sim.brokers):
            broker = sim.brokers[b]
            if broker is not self._process.get(b):
                self._process[b] = broker
                self._inc[b] = self._inc.get(b, -1) + 1
                led = self._led.get(b, 0)
                if b in self._up:
                    self._unavailable_online += led - self._unserved.get(b, 0)
                self._unserved[b] = led
            up = broker.alive and sim.network.reachable("clients", b)
            if up != (b in self._up):
                served = self._led.get(b, 0) - self._unserved.get(b, 0)
                if up:
                    self._up.add(b)
                    self._unavailable_online -= served
                else:
                    self._up.discard(b)
                    self._unavailable_online += served
        self._point(self.last_ms)

    def log_dir_failed(self, b: int, log_dir: str) -> None:
        """Broker ``b``'s replicas in ``log_dir`` went offline: it no longer serves those it led."""
        self._advance(self.sim.loop.now)
        p = self._p
        inc = self._inc.get(b, -2)
        for tp, rep in self.sim.replication.replicas.get(b, {}).items():
            base = self._base.get(tp[0])
            if not rep.offline or rep.log_dir != log_dir or base is None or tp[1] >= self._cap[tp[0]]:
                continue
            i = base + tp[1]
            if int(p["sb"][i]) == b and int(p["si"][i]) == inc:
                p["sb"][i] = -1
                if p["ex"][i] and not p["off"][i] and int(p["ld"][i]) == b:
                    self._unserved[b] = self._unserved.get(b, 0) + 1
                    if b in self._up:
                        self._unavailable_online += 1
        self._point(self.last_ms)

    # --- the data plane ---------------------------------------------------------------------------
    def produce_error(self, error: str, messages: int, now: int, batches: int = 1) -> None:
        self.errors[error] = self.errors.get(error, 0) + batches
        self.error_messages[error] = self.error_messages.get(error, 0) + messages
        bucket = self.bucket_errors.setdefault(now // self.interval_ms, {})
        bucket[error] = bucket.get(error, 0) + batches
        if not self.error_times or self.error_times[-1] != now:
            self.error_times.append(now)

    def acknowledged(self, tp: tuple, epoch: int, first: int, count: int) -> None:
        self.acked_messages += count
        ranges = self.acked.get(tp)
        if ranges is None:
            self.acked[tp] = [[epoch, first, first + count]]
            return
        last = ranges[-1]
        if last[0] == epoch and last[2] == first:
            last[2] = first + count
        else:
            ranges.append([epoch, first, first + count])

    def acknowledged_after(self, latency_ms: int, messages: int) -> None:
        """``messages`` were acknowledged (acks 1 or all) ``latency_ms`` after their batch was made."""
        self.latency[latency_ms] = self.latency.get(latency_ms, 0) + messages
        hist = self.bucket_latency.setdefault(self.sim.loop.now // self.interval_ms, {})
        hist[latency_ms] = hist.get(latency_ms, 0) + messages

    def leader_changed(self, replica) -> None:
        """A broker became leader: it serves the partition now, and acknowledged records its log lacks are
        lost from now on."""
        b, tp = replica.broker, replica.tp
        if self.sim.brokers.get(b) is not self._process.get(b):
            self.brokers_changed()
        i = self._row(tp)
        p = self._p
        inc = self._inc[b]
        if not (int(p["sb"][i]) == b and int(p["si"][i]) == inc):
            p["sb"][i] = b
            p["si"][i] = inc
            if p["ex"][i] and not p["off"][i] and int(p["ld"][i]) == b:
                self._advance(self.sim.loop.now)
                self._unserved[b] -= 1
                if b in self._up:
                    self._unavailable_online -= 1
                self._point(self.last_ms)
        self._check_loss(tp, replica.log, b, replica.leader_epoch,
                         f"broker {b} became leader (epoch {replica.leader_epoch})")

    def leaders_changed(self, b: int, replicas: list) -> None:
        """:meth:`leader_changed` for many replicas broker ``b`` now leads, in order, at one time: the same
        counts, timeline and loss events, with the partition rows updated as arrays."""
        if not replicas:
            return
        if self.sim.brokers.get(b) is not self._process.get(b):
            self.brokers_changed()
        self._now_serving(b, [rep.tp for rep in replicas])
        acked = self.acked
        for rep in replicas if acked else ():
            if rep.tp in acked:
                self._check_loss(rep.tp, rep.log, b, rep.leader_epoch,
                                 f"broker {b} became leader (epoch {rep.leader_epoch})")

    def leader_rows_changed(self, b: int, tps: list) -> None:
        """:meth:`leaders_changed` for the partitions ``tps`` broker ``b`` now leads as pristine rows (empty logs)."""
        if not tps:
            return
        if self.sim.brokers.get(b) is not self._process.get(b):
            self.brokers_changed()
        self._now_serving(b, tps)
        acked = self.acked
        for tp in filter(acked.__contains__, tps) if acked else ():
            if tp in acked:
                rep = self.sim.replication.replica_or_none(b, tp)
                self._check_loss(tp, rep.log, b, rep.leader_epoch, f"broker {b} became leader (epoch {rep.leader_epoch})")

    def _rows(self, tps: list) -> np.ndarray:
        """The rows of ``tps`` (as :meth:`_row` one by one; as arrays when no topic's region has to grow)."""
        n = len(tps)
        names = list(map(itemgetter(0), tps))
        parts = np.fromiter(map(itemgetter(1), tps), dtype=np.int64, count=n)
        distinct = list(dict.fromkeys(names))
        if n:
            base, cap = self._base, self._cap
            if len(distinct) == 1:
                name = distinct[0]
                if name in base and int(parts.max()) < cap[name]:
                    return base[name] + parts
            else:
                code_of = {name: i for i, name in enumerate(distinct)}
                codes = np.fromiter(map(code_of.__getitem__, names), dtype=np.int64, count=n)
                need = np.zeros(len(distinct), dtype=np.int64)
                np.maximum.at(need, codes, parts + 1)
                if all(name in base and k <= cap[name] for name, k in zip(distinct, need.tolist())):
                    return np.array([base[name] for name in distinct], dtype=np.int64)[codes] + parts
        return np.fromiter(map(self._row, tps), dtype=np.int64, count=n)

    def _now_serving(self, b: int, tps: list) -> None:
        rows = self._rows(tps)
        p = self._p
        inc = self._inc[b]
        change = ~((p["sb"][rows] == b) & (p["si"][rows] == inc))
        if change.any():
            changed = rows[change]
            served = int(np.count_nonzero(p["ex"][changed] & ~p["off"][changed].astype(bool) & (p["ld"][changed] == b)))
            p["sb"][changed] = b
            p["si"][changed] = inc
            if served:
                self._advance(self.sim.loop.now)
                self._unserved[b] -= served
                if b in self._up:
                    self._unavailable_online -= served
                self._point(self.last_ms)

    def _leader_of(self, tp: tuple) -> int:
        """The partition's leader in ``/state``; -1 if it has none, is offline or unknown."""
        base = self._base.get(tp[0])
        if base is None or tp[1] >= self._cap[tp[0]]:
            return -1
        i = base + tp[1]
        p = self._p
        return int(p["ld"][i]) if p["ex"][i] and not p["off"][i] else -1

    def truncated(self, replica, removed: int) -> None:
        """A follower truncated its log: acknowledged records the leader never had are gone with it."""
        self.truncated_records += removed
        leader = self._leader_of(replica.tp)
        if leader < 0:
            return
        log = self.sim.replication.log_of(leader, replica.tp)
        if log is not None:
            self._check_loss(replica.tp, log, leader, -1,
                             f"broker {replica.broker} truncated them (leader {leader} never had them)")

    def _check_loss(self, tp: tuple, log, leader: int, epoch: int, why: str) -> None:
        ranges = self.acked.get(tp)
        if not ranges:
            return
        missing = sum(end - first - log.holds(e, first, end) for e, first, end in ranges)
        seen = self.lost_seen.get(tp, 0)
        if missing > seen:
            self.lost_seen[tp] = missing
            self.loss_events.append((self.sim.loop.now, tp, missing - seen, why))

    # --- faults and observations ----------------------------------------------------------------
    def step(self, step, now: int) -> None:
        if step.action in HEALTH_ACTIONS:
            args = {k: v for k, v in step.args.items() if v is not None and k != "reassignment"}
            if args.get("controller") and args.get("broker") is None:
                args["broker"] = self.sim.controller_id      # the broker the step hits
            self.faults.append({"at_ms": now, "action": step.action, "line": step.line, "note": step.note,
                                "args": args})

    def observe_step(self, entry: dict) -> None:
        self.observations.append(entry)

    # --- the end ----------------------------------------------------------------------------------
    def lost_writes(self) -> tuple[int, int, dict]:
        """(lost, unavailable, per-partition lost) of every acknowledged record, now."""
        lost = unavailable = 0
        per_partition: dict[str, int] = {}
        replication = self.sim.replication
        for tp, ranges in self.acked.items():
            total = sum(end - first for _, first, end in ranges)
            leader = self._leader_of(tp)
            log = replication.log_of(leader, tp) if leader >= 0 else None
            if log is not None:
                held = sum(log.holds(e, f, t) for e, f, t in ranges)
                gone = total - held
            else:
                # No leader: what some replica still holds may come back; the rest is gone.
                held = 0
                for disk in replication.disks.values():
                    other = disk.get(tp)
                    if other is not None:
                        held = max(held, sum(other.holds(e, f, t) for e, f, t in ranges))
                gone = total - held
                unavailable += held
            if gone:
                lost += gone
                per_partition[f"{tp[0]}-{tp[1]}"] = gone
        return lost, unavailable, per_partition

    def _last_error_ms(self, start: int, end: int) -> int | None:
        """The last time in [start, end] a produce error was answered."""
        j = bisect_right(self.error_times, end) - 1
        return self.error_times[j] if j >= 0 and self.error_times[j] >= start else None

    def _recovery(self, start: int, end: int, column: int | None) -> int | None:
        """How long after ``start`` the cluster was last unhealthy before ``end`` (0: never was);
        None if still unhealthy at ``end``. ``column`` None means offline or under min ISR, or a
        produce error in the same second; T_UNAVAILABLE means unavailable to clients, or a produce
        error (at its millisecond)."""
        def unhealthy(point) -> bool:
            return (point[T_OFFLINE] > 0 or point[T_UNDER_MIN_ISR] > 0) if column is None else point[column] > 0

        state_at_start = None
        last_bad_end = start
        bad_since = None
        for point in self.timeline:
            t = point[0]
            if t <= start:
                state_at_start = point
                continue
            if t > end:
                break
            if bad_since is None and state_at_start is not None and unhealthy(state_at_start):
                bad_since = start
            state_at_start = None
            if unhealthy(point):
                if bad_since is None:
                    bad_since = t
            elif bad_since is not None:
                last_bad_end = t
                bad_since = None
        if state_at_start is not None and unhealthy(state_at_start):
            return None
        if bad_since is not None:
            return None
        if column is None:
            # Produce errors count too (a dead leader the controller has not noticed yet), by the second.
            last = self._last_error_ms(start // 1000 * 1000, (end // 1000 + 1) * 1000 - 1)
            if last is not None:
                last_bad_end = max(last_bad_end, (last // 1000 + 1) * 1000)
        elif column == T_UNAVAILABLE:
            last = self._last_error_ms(start, end)
            if last is not None:
                last_bad_end = max(last_bad_end, last)
        return max(0, min(last_bad_end, end) - start)

    def summary(self) -> dict:
        sim = self.sim
        end = sim.loop.now
        self._advance(end)
        lost, unavailable, per_partition = self.lost_writes()
        faults = []
        for i, f in enumerate(self.faults):
            if f["action"] not in FAULT_ACTIONS:
                continue
            # The window of a fault ends at the next step that changes the cluster's health.
            nxt = next((g["at_ms"] for g in self.faults[i + 1:] if g["at_ms"] > f["at_ms"]), end)
            window_end = nxt if nxt > f["at_ms"] else end
            recovered = self._recovery(f["at_ms"], window_end, None)
            producers = self._recovery(f["at_ms"], window_end, T_UNAVAILABLE)
            replicated = self._recovery(f["at_ms"], end, T_UNDER_REPLICATED)
            faults.append({
                "at_s": f["at_ms"] / 1000, "action": f["action"], "line": f["line"], "note": f["note"],
                "args": f["args"],
                "recovered_after_s": None if recovered is None else recovered / 1000,
                "producers_recovered_after_s": None if producers is None else producers / 1000,
                "window_end_s": nxt / 1000,
                "fully_replicated_after_s": None if replicated is None else replicated / 1000,
            })
        return {
            "scenario": sim.scenario.name,
            "seed": sim.seed,
            "simulated_s": end / 1000,
            "partitions": self.partitions,
            "offline_partition_seconds": round(self.offline_ms / 1000, 3),
            "unavailable_partition_seconds": round(self.unavailable_ms / 1000, 3),
            "under_min_isr_partition_seconds": round(self.under_min_isr_ms / 1000, 3),
            "under_replicated_partition_seconds": round(self.under_replicated_ms / 1000, 3),
            "at_end": {"offline": self.offline, "unavailable": self.unavailable,
                       "under_min_isr": self.under_min_isr, "under_replicated": self.under_replicated,
                       "controller_id": sim.controller_id, "controller_epoch": self.controller_epoch},
            "produce": {
                "sent_messages": self.sent_messages,
                "acknowledged_messages": self.acked_messages,
                "failed_messages": self.failed_messages,
                "pending_messages": self.sent_messages - self.acked_messages - self.failed_messages,
                "errors": dict(sorted(self.errors.items())),
                "error_messages": dict(sorted(self.error_messages.items())),
                "latency_ms": {"p50": percentile(self.latency, 0.5), "p99": percentile(self.latency, 0.99),
                               "max": max(self.latency) if self.latency else None},
            },
            "acknowledged_writes_lost": lost,
            "acknowledged_writes_unavailable": unavailable,
            "lost_by_partition": dict(sorted(per_partition.items())),
            "loss_events": [{"at_s": t / 1000, "partition": f"{tp[0]}-{tp[1]}", "lost": n, "why": why}
                            for t, tp, n, why in self.loss_events],
            "truncated_records": self.truncated_records,
            "elections": dict(self.elections),
            "controller_elections": self.controller_elections,
            "controller_failovers": max(0, self.controller_elections - 1),
            "faults": faults,
            "observations": self.observations,
        }


def fault_label(action: str, args: dict) -> str:
    """``kill_broker(broker=5)``: a step as the summary and the plot name it."""
    return f"{action}({', '.join(f'{k}={v}' for k, v in args.items())})"


def _seconds(x: float | None, until: float | None = None) -> str:
    if x is None:
        return "not recovered" + (f" by {until:g}s" if until is not None else "")
    return f"{x:g}s"


def _ms(x: int | None) -> str:
    return "-" if x is None else f"{x:,}ms"


def format_summary(s: dict) -> str:
    """The summary for people, one fact per line."""
    p = s["produce"]
    latency = p.get("latency_ms") or {}
    lines = [
        f"scenario {s['scenario']} (seed {s['seed']}): {s['simulated_s']:g}s simulated, {s['partitions']} partitions",
        f"  offline partition-seconds        {s['offline_partition_seconds']:g}",
        f"  unavailable partition-seconds    {s.get('unavailable_partition_seconds', 0):g} (as clients see it: "
        f"no leader, or one that is dead, cut off from them or not serving yet)",
        f"  under-min-ISR partition-seconds  {s['under_min_isr_partition_seconds']:g}",
        f"  under-replicated partition-secs  {s['under_replicated_partition_seconds']:g}",
        f"  produced {p['sent_messages']} messages: {p['acknowledged_messages']} acknowledged, "
        f"{p['failed_messages']} failed, {p['pending_messages']} still being retried at the end",
    ]
    if latency.get("max") is not None:
        lines.append(f"  produce latency (acks 1/all)     p50 {_ms(latency['p50'])}, p99 {_ms(latency['p99'])}, "
                     f"max {_ms(latency['max'])}")
    if p["errors"]:
        lines.append("  produce errors (attempts / messages in them): " + ", ".join(
            f"{code} {n}/{p['error_messages'][code]}" for code, n in p["errors"].items()))
    else:
        lines.append("  produce errors: none")
    lines.append(f"  acknowledged writes lost         {s['acknowledged_writes_lost']}"
                 + (f" (+{s['acknowledged_writes_unavailable']} unavailable: only on offline replicas)"
                    if s["acknowledged_writes_unavailable"] else ""))
    for e in s["loss_events"]:
        lines.append(f"    at {e['at_s']:g}s {e['partition']}: {e['lost']} lost: {e['why']}")
    lines.append("  elections: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s["elections"].items()))
    lines.append(f"  controller failovers             {s['controller_failovers']} "
                 f"(epoch {s['at_end']['controller_epoch']} at the end, controller {s['at_end']['controller_id']})")
    if s["faults"]:
        lines.append("  faults: recovered = no offline or under-min-ISR partition and no produce error (the "
                     "controller's view); for producers = every partition available to clients and no produce error")
        for f in s["faults"]:
            note = f"  # {f['note']}" if f.get("note") else ""
            producers = ""
            if "producers_recovered_after_s" in f:
                producers = f", for producers after {_seconds(f['producers_recovered_after_s'], f['window_end_s'])}"
            lines.append(f"    {f['at_s']:>7g}s {fault_label(f['action'], f['args'])}: recovered after "
                         f"{_seconds(f['recovered_after_s'], f['window_end_s'])}{producers}, fully replicated after "
                         f"{_seconds(f['fully_replicated_after_s'])}{note}")
    for o in s["observations"]:
        if o["kind"] == "expect":
            mark = "ok" if o["ok"] else "FAILED"
            lines.append(f"  expect at {o['at_s']:g}s (line {o['line']}): {o['what']}: {mark}"
                         + ("" if o["ok"] else f" (actual: {o['actual']})"))
        elif o["kind"] == "describe":
            lines.append(f"  describe at {o['at_s']:g}s (line {o['line']}):")
            lines.extend("    " + row for row in o["lines"])
        elif o["kind"] == "describe_quorum":
            lines.append(f"  describe quorum at {o['at_s']:g}s (line {o['line']}):")
            lines.extend("    " + row for row in o["lines"])
        elif o["kind"] == "note":
            lines.append(f"  note at {o['at_s']:g}s: {o['text']}")
    e = s["at_end"]
    lines.append(f"  at the end: {e['offline']} offline, " + (f"{e['unavailable']} unavailable to clients, "
                 if "unavailable" in e else "") + f"{e['under_min_isr']} under min ISR, "
                 f"{e['under_replicated']} under-replicated")
    return "\n".join(lines)


assert all(k in KINDS for k in (_PT, _LU, _CE, _TD))
