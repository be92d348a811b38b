"""Benchmark of the "columnar controller" goals: each goal measured on our controller (a Cluster) and on a
numpy/pyarrow baseline program that does the same work on columns, in the same run; both times and the
ratio (ours / baseline) are printed, with the goal and whether it is met. Nothing here asserts a timing.

Goals (sizes are the defaults; --partitions/--brokers/... change them):

  failure   a broker fails: 1,000,000 RF-3 partitions on 30 brokers, ~100,000 hosted on the dead broker:
            <= 1 s (<= 10 us per hosted partition) and within 5x of the baseline
  shutdown  controlled shutdown of a broker hosting 10,000 partitions (a cluster sized for it): <= 0.1 s
  create    creating 1,000,000 partitions (create_topic calls, records written to a LogWriter): <= 3 s
  failover  a new controller takes over a 1,000,000-partition cluster (snapshot + restore + the old
            controller killed): <= 3 s and <= 1.5 GiB peak RSS (restore and takeover run in a child process,
            whose peak RSS is reported)
  replay    replay of a written run: >= 1,000,000 records/s
  log       transition rows written to the event log and read back: >= 5,000,000 rows/s (ours: columnar
            batches — ColumnBatch, LogWriter.append_columns, LogReader.column_batches — when events/columns.py
            is there, else row records through LogWriter.append_many and LogReader.raw_records)

One big cluster (--partitions) serves create, failure and failover: it is built once with its records
going to a LogWriter (FsyncPolicy.none()); the create_topic calls are the "create" measurement, a
snapshot of it is the first part of "failover", then the broker failure runs on it. Our side at 1M
partitions is slow today (several minutes to build): progress lines are printed as it goes.

The baselines work on columns (int32 matrices for assignments and ISRs, arrays for leaders and epochs),
with numpy vectorisation and pyarrow.compute string building, no Python loop per partition; each step
carries a comment naming the Kafka step it stands for. They produce the same outputs as ours: the /state
JSON bytes of every changed partition (Kafka-exact: checked against our store when both sides run) and
record batches of the same kinds and counts, serialized to bytes (Arrow IPC streams; files for create).

    .venv/bin/python bench/bench_scale.py                       # every goal, both sides, full sizes (slow)
    .venv/bin/python bench/bench_scale.py --quick               # smoke run: 100,000 partitions, small others
    .venv/bin/python bench/bench_scale.py --side baseline       # the baselines alone (fast)
    .venv/bin/python bench/bench_scale.py --side ours --only failure shutdown
        [--partitions 1000000] [--brokers 30] [--per-topic 10000] [--victim 5] [--shutdown-hosted 10000]
        [--replay-partitions 100000] [--log-rows 2000000] [--repeat 3] [--seed 1]

Best of --repeat runs where a run is cheap (every baseline, the log goal); single runs where ours is
expensive (anything that needs a cluster built). For ours, the time spent in the cyclic GC during the
measurement (gc.callbacks) is printed; peak RSS where the goal names memory.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import structlog  # noqa: E402

from controller.store.zk_data import _scala_presized_table, java_hash, scala_mutable_order  # noqa: E402
from events.codec import decode_elements, encode_batch_pieces  # noqa: E402
from events.log import FsyncPolicy, LogReader, LogWriter  # noqa: E402
from events.records import (  # noqa: E402
    API_LEADER_AND_ISR, API_STOP_REPLICA, API_UPDATE_METADATA, ELECTION_CONTROLLED_SHUTDOWN, ELECTION_NEW_PARTITION,
    ELECTION_NONE, ELECTION_OFFLINE, SCHEMA_VERSION, UPDATE_OFFLINE_REPLICA, LeaderAndIsrPartition,
    LeaderAndIsrUpdated, PartitionTransition, ReplicaTransition, RequestSent, StopReplicaPartition,
    UpdateMetadataPartition,
)
from gc_watch import GcWatch  # noqa: E402  (bench/, the script's own folder)

GOALS = ("failure", "shutdown", "create", "failover", "replay", "log")
# Partition and replica state bytes (statemachines/states.py).
P_NEW, P_ONLINE, P_OFFLINE, P_NONEXISTENT = 0, 1, 2, 3
R_NEW, R_ONLINE, R_OFFLINE, R_NONEXISTENT = 1, 2, 3, 7
NONE = -1


def say(*parts) -> None:
    print(*parts, flush=True)


# =========================================================================================================
# Measurement
# =========================================================================================================

def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def own_peak_rss_mb() -> float:
    """Peak RSS of this process image (VmHWM): unlike ru_maxrss, not inherited from the parent across exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return peak_rss_mb()


def best_of(n: int, run, prepare=None):
    """Best wall time of ``n`` runs of ``run(prepared)`` (``prepare()`` untimed before each); returns
    (seconds, result of the best run)."""
    best, out = float("inf"), None
    for _ in range(max(1, n)):
        arg = prepare() if prepare is not None else None
        gc.collect()
        t0 = time.perf_counter()
        res = run(arg) if prepare is not None else run()
        dt = time.perf_counter() - t0
        if dt < best:
            best, out = dt, res
    return best, out


@dataclass
class Row:
    goal: str
    what: str
    ours: float | None          # seconds
    base: float | None          # seconds
    target: str
    met: bool | None
    extra: str = ""


RESULTS: list[Row] = []


def report(goal: str, what: str, ours: float | None, base: float | None, target: str, met: bool | None,
           extra: str = "") -> None:
    ratio = f"{ours / base:,.1f}x" if ours is not None and base else "-"
    o = "-" if ours is None else f"{ours:.3f} s"
    b = "-" if base is None else f"{base:.3f} s"
    m = "-" if met is None else ("yes" if met else "NO")
    say(f"== {goal}: {what}: ours {o}, baseline {b}, ratio {ratio}; goal {target}: met {m}"
        + (f"; {extra}" if extra else ""))
    RESULTS.append(Row(goal, what, ours, base, target, met, extra))


# =========================================================================================================
# Baseline: the cluster's state as columns
# =========================================================================================================

@dataclass
class Columns:
    """The controller context and the store's /state znodes of n partitions, as arrays (row = partition)."""
    topics: list                 # topic names; topic[i] indexes it
    topic_names: pa.Array
    topic: np.ndarray            # int32 (n,)
    partition: np.ndarray        # int32 (n,)
    assign: np.ndarray           # int32 (n, R): replicas in assignment order
    isr: np.ndarray              # int32 (n, R): ISR in stored order, padded with -1
    leader: np.ndarray           # int32 (n,)
    leader_epoch: np.ndarray     # int32 (n,)
    partition_epoch: np.ndarray  # int32 (n,): the zkVersion the controller last read or wrote
    zk_version: np.ndarray       # int32 (n,): the store's version of each /state znode
    state_ce: np.ndarray         # int32 (n,): controller epoch stored in /state
    live: np.ndarray             # bool (max broker + 1,)
    broker_epoch: np.ndarray     # int64 (max broker + 1,)
    controller_id: int = 0
    controller_epoch: int = 1
    epoch_zk_version: int = 0    # /controller_epoch's version, checked by every fenced write
    outputs: list = field(default_factory=list)   # (rows, /state bytes array) of every write

    def copy(self) -> Columns:
        return Columns(self.topics, self.topic_names, self.topic, self.partition, self.assign, self.isr.copy(),
                       self.leader.copy(), self.leader_epoch.copy(), self.partition_epoch.copy(),
                       self.zk_version.copy(), self.state_ce.copy(), self.live.copy(), self.broker_epoch,
                       self.controller_id, self.controller_epoch, self.epoch_zk_version, [])


def live_of(st: Columns, m: np.ndarray) -> np.ndarray:
    """Which entries of a broker-id matrix (padded with -1) are live brokers."""
    return (m >= 0) & st.live[np.maximum(m, 0)]


def compact(m: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Each row's kept entries, in their order, padded on the right with -1 (a filter on every row)."""
    width = m.shape[1]
    key = np.where(keep, np.arange(width, dtype=np.int32), width)
    order = np.argsort(key, axis=1, kind="stable")
    return np.take_along_axis(np.where(keep, m, NONE), order, axis=1)


def kafka_placement(brokers: np.ndarray, count: int, rf: int, start: int, shift: int) -> np.ndarray:
    """AdminUtils.assignReplicasToBrokers (rack-unaware), vectorised: first replica (p + start) % n, followers
    spread by a shift that grows every n partitions (controller/assignment.py, same draws, same result)."""
    n = len(brokers)
    pid = np.arange(count, dtype=np.int64)
    first = (pid + start) % n
    sh = shift + pid // n
    out = np.empty((count, rf), dtype=np.int32)
    out[:, 0] = brokers[first]
    for j in range(rf - 1):
        out[:, j + 1] = brokers[(first + 1 + (sh + j) % (n - 1)) % n]
    return out


def decimal_java_hash(p: np.ndarray) -> np.ndarray:
    """String.hashCode of str(p) for non-negative ints, vectorised (uint32)."""
    p = p.astype(np.int64)
    ndig = np.ones(len(p), dtype=np.int64)
    k = 10
    while (p >= k).any():
        ndig += p >= k
        k *= 10
    h = np.zeros(len(p), dtype=np.int64)
    for pos in range(int(ndig.max()) - 1, -1, -1):
        d = (p // 10 ** pos) % 10
        h = np.where(ndig > pos, (h * 31 + 48 + d) & 0xFFFFFFFF, h)
    return h.astype(np.uint32)


def int_text(a: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(a), pa.string())


def isr_text(m: np.ndarray) -> pa.Array:
    """Each row's ids joined with "," (padding skipped): the inside of a JSON int list."""
    cols = [pc.cast(pa.array(m[:, j], mask=m[:, j] < 0), pa.string()) for j in range(m.shape[1])]
    return pc.binary_join_element_wise(*cols, ",", null_handling="skip")


def state_json(controller_epoch: int, leader: np.ndarray, leader_epoch: np.ndarray, isr: np.ndarray) -> pa.Array:
    """TopicPartitionStateZNode.encode for many partitions: the Kafka-exact /state bytes (recovery state 0)."""
    return pc.binary_join_element_wise(
        '{"controller_epoch":', str(controller_epoch), ',"leader":', int_text(leader),
        ',"version":1,"leader_epoch":', int_text(leader_epoch), ',"isr":[', isr_text(isr), "]}", "")


def list_column(m: np.ndarray) -> pa.Array:
    """A padded id matrix as an Arrow list<int32> column (the records' tuple fields)."""
    keep = m >= 0
    offsets = np.zeros(len(m) + 1, dtype=np.int32)
    np.cumsum(keep.sum(1), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(m[keep], type=pa.int32()))


def const_list_column(values: np.ndarray, n: int) -> pa.Array:
    """The same id list on every row (materialised: a record carries its own copy, as in the row log)."""
    offsets = (np.arange(n + 1, dtype=np.int64) * len(values)).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.tile(values.astype(np.int32), n)))


def empty_list_column(n: int) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], type=pa.int32()))


class RecordColumns:
    """The records of one controller step as columns: one Arrow record batch per run of records of one kind,
    the record's body fields (events/records.py) as columns and its header (kind, schema version, first
    offset, controller id and epoch, time, cause; the same for the whole run, offsets consecutive) once per
    batch as IPC metadata, as a ColumnBatch keeps it. Each batch is serialized as an Arrow IPC stream as
    soon as it is built (only the bytes are kept, as a writer streaming batches out would)."""

    def __init__(self, st: Columns, now_ms: int, cause_offset: int, first_offset: int):
        self.st, self.now, self.cause, self.offset = st, now_ms, cause_offset, first_offset
        self.blobs: list[pa.Buffer] = []
        self.counts: Counter = Counter()
        self.correlation = 0

    def topic(self, rows: np.ndarray) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(self.st.topic[rows]), self.st.topic_names)

    def add(self, cls, n: int, **fields) -> None:
        if n == 0:
            return
        names = list(fields)
        if tuple(names) != cls._fields[7:]:
            raise ValueError(f"{cls.__name__} fields {names} != {cls._fields[7:]}")
        st = self.st
        header = {"kind": cls.KIND, "v": SCHEMA_VERSION, "first_offset": self.offset, "n": n,
                  "controller_id": st.controller_id, "controller_epoch": st.controller_epoch,
                  "timestamp_ms": self.now, "cause_offset": self.cause}
        arrays = []
        for v in fields.values():
            if isinstance(v, pa.Array):
                arrays.append(v)
            elif np.ndim(v) == 0:
                arrays.append(pa.array(np.full(n, v)))
            else:
                arrays.append(pa.array(v))
        batch = pa.RecordBatch.from_arrays(arrays, names=names)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch, custom_metadata={k: str(v) for k, v in header.items()})
        self.blobs.append(sink.getvalue())
        self.offset += n
        self.counts[cls.__name__] += n

    def requests(self, api: int, brokers: np.ndarray | None = None, *, counts: np.ndarray | None = None,
                 leaders: np.ndarray | None = None, live_brokers: np.ndarray | None = None) -> None:
        """RequestSent, one per destination broker of a batch: the per-broker partition counts from the
        destination of each (broker, partition) pair, or given as ``counts``."""
        size = len(self.st.live)
        if counts is None:
            counts = np.bincount(brokers, minlength=size)
        dest = np.flatnonzero(counts)
        k = len(dest)
        lead = (np.bincount(brokers, weights=leaders, minlength=size)[dest].astype(np.int32) if leaders is not None
                else np.zeros(k, np.int32))
        lb = const_list_column(live_brokers, k) if live_brokers is not None else empty_list_column(k)
        self.add(RequestSent, k, api=api, broker_id=dest.astype(np.int32), broker_epoch=self.st.broker_epoch[dest],
                 correlation_id=np.arange(self.correlation, self.correlation + k, dtype=np.int32),
                 partition_count=counts[dest].astype(np.int32), leader_count=lead, delete_count=np.zeros(k, np.int32),
                 live_brokers=lb)
        self.correlation += k

    def to_bytes(self) -> list:
        return self.blobs

    def write(self, path: str) -> int:
        """Every batch to one file (an IPC stream per batch, one after another); returns bytes written."""
        with open(path, "wb") as f:
            for buf in self.to_bytes():
                f.write(buf)
            return f.tell()


def partition_transitions(rc: RecordColumns, rows: np.ndarray, frm: int, to: int, election) -> None:
    st = rc.st
    rc.add(PartitionTransition, len(rows), topic=rc.topic(rows), partition=st.partition[rows], from_state=np.int8(frm),
           to_state=np.int8(to), replicas=list_column(st.assign[rows]), leader=st.leader[rows],
           leader_epoch=st.leader_epoch[rows], isr=list_column(st.isr[rows]), partition_epoch=st.partition_epoch[rows],
           recovery_state=np.int8(0), election=np.asarray(election, np.int8) * np.ones(len(rows), np.int8))


def replica_transitions(rc: RecordColumns, rows: np.ndarray, replicas: np.ndarray, frm, to) -> None:
    st = rc.st
    n = len(rows)
    rc.add(ReplicaTransition, n, topic=rc.topic(rows), partition=st.partition[rows], replica=replicas.astype(np.int32),
           from_state=np.asarray(frm, np.int8) * np.ones(n, np.int8),
           to_state=np.asarray(to, np.int8) * np.ones(n, np.int8))


def leader_and_isr_batch(rc: RecordColumns, rows: np.ndarray, recipients: np.ndarray, is_new: bool = False) -> None:
    """LeaderAndIsr to every recipient (a (k, R) mask over the rows' assignments), grouped per broker: a stable
    sort of the (broker, partition) pairs; then the per-broker RequestSent."""
    st = rc.st
    i, j = np.nonzero(recipients)
    brokers = st.assign[rows[i], j]
    order = np.argsort(brokers, kind="stable")
    r, b = rows[i[order]], brokers[order]
    n = len(r)
    rc.add(LeaderAndIsrPartition, n, broker_id=b, topic=rc.topic(r), partition=st.partition[r],
           state_controller_epoch=st.state_ce[r], leader=st.leader[r], leader_epoch=st.leader_epoch[r],
           isr=list_column(st.isr[r]), partition_epoch=st.partition_epoch[r], replicas=list_column(st.assign[r]),
           adding_replicas=empty_list_column(n), removing_replicas=empty_list_column(n), is_new=np.full(n, is_new),
           recovery_state=np.int8(0))
    rc.requests(API_LEADER_AND_ISR, b, leaders=(st.leader[r] == b).astype(np.float64))


def update_metadata_batch(rc: RecordColumns, rows: np.ndarray) -> None:
    """One UpdateMetadata partition set for all live brokers (offline replicas listed), then its RequestSent."""
    st = rc.st
    live_ids = np.flatnonzero(st.live).astype(np.int32)
    a = st.assign[rows]
    offline = np.where((a >= 0) & ~live_of(st, a), a, NONE)
    n = len(rows)
    rc.add(UpdateMetadataPartition, n, brokers=const_list_column(live_ids, n), topic=rc.topic(rows),
           partition=st.partition[rows], state_controller_epoch=st.state_ce[rows], leader=st.leader[rows],
           leader_epoch=st.leader_epoch[rows], isr=list_column(st.isr[rows]), partition_epoch=st.partition_epoch[rows],
           replicas=list_column(a), offline_replicas=list_column(compact(offline, offline >= 0)))
    rc.requests(API_UPDATE_METADATA, counts=np.where(st.live, n, 0), live_brokers=live_ids)


def fenced_write(st: Columns, rows: np.ndarray, leader: np.ndarray, isr: np.ndarray) -> np.ndarray:
    """zkClient.updateLeaderAndIsr: a multi of check(/controller_epoch version) + setData(/state, expected
    version) per partition, as an array compare of expected vs stored versions; the new leader epoch, the
    Kafka-exact /state bytes; the context updated from the results. Returns the rows written."""
    if st.epoch_zk_version != 0:                                   # the controller-epoch fence
        return rows[:0]
    ok = st.zk_version[rows] == st.partition_epoch[rows]           # the /state version check (BadVersion otherwise)
    rows, leader, isr = rows[ok], leader[ok], isr[ok]
    st.zk_version[rows] += 1                                       # setData bumps the znode version
    st.leader[rows] = leader                                       # context.putPartitionLeadershipInfo
    st.leader_epoch[rows] += 1                                     # LeaderAndIsr.newLeaderAndIsr: epoch + 1
    st.isr[rows] = isr
    st.partition_epoch[rows] = st.zk_version[rows]                 # partition epoch = the new zkVersion
    st.state_ce[rows] = st.controller_epoch
    data = state_json(st.controller_epoch, st.leader[rows], st.leader_epoch[rows], st.isr[rows])  # /state bytes
    st.outputs.append((rows, data))
    return rows


# ---------------------------------------------------------------------------------------------------------
# Goal 3 baseline: creating topics
# ---------------------------------------------------------------------------------------------------------

def topic_layout(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    out, i, left = [], 0, partitions
    while left > 0:
        k = min(per_topic, left)
        out.append((f"topic-{i:03d}", k))
        left -= k
        i += 1
    return out


TOPIC_KEYS = scala_mutable_order(["version", "partitions", "adding_replicas", "removing_replicas", "topic_id"],
                                 java_hash, _scala_presized_table(4))   # TopicZNode.encode's key order


def baseline_create(partitions: int, brokers: int, per_topic: int, seed: int, path: str | None,
                    rf: int = 3) -> tuple[Columns, dict]:
    """Create topics totalling ``partitions`` RF-``rf`` partitions on brokers 0..brokers-1, as the cluster's
    create_topic + the controller's onNewPartitionCreation do, on columns; records written to ``path``."""
    layout = topic_layout(partitions, per_topic)
    names = [t for t, _ in layout]
    counts = np.array([k for _, k in layout], dtype=np.int64)
    n = int(counts.sum())
    broker_ids = np.arange(brokers, dtype=np.int32)
    # AdminZkClient.createTopic → assignReplicasToBrokers: per topic two draws, the placement vectorised
    topic = np.repeat(np.arange(len(layout), dtype=np.int32), counts)
    starts = np.zeros(len(layout) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    partition = (np.arange(n, dtype=np.int64) - starts[topic]).astype(np.int32)
    assign = np.empty((n, rf), dtype=np.int32)
    ids = []
    for t, (name, k) in enumerate(layout):                       # per topic, not per partition
        rng = random.Random(f"{seed}/{name}/0")
        start = rng.randrange(brokers)
        shift = rng.randrange(brokers)
        assign[starts[t]:starts[t + 1]] = kafka_placement(broker_ids, k, rf, start, shift)
        ids.append(f"{rng.getrandbits(64):022x}")                   # the topic id (a random UUID in Kafka)
    # /brokers/topics/<t>: TopicZNode.encode, the partitions map in Scala mutable.Map order (bucket, hash, index)
    h = decimal_java_hash(partition).astype(np.int64)
    h = h ^ (h >> 16)
    hs = np.where(h >= 2**31, h - 2**32, h)
    table = np.empty(len(counts), dtype=np.int64)
    for t, k in enumerate(counts):                                 # the table size rule of zk_data._table_size
        size = 16
        while k >= int(size * 0.75):
            size *= 2
        table[t] = size
    bucket = h & (table[topic] - 1)
    order = np.lexsort((partition, hs, bucket, topic))
    entry = pc.binary_join_element_wise('"', int_text(partition), '":[', isr_text(assign), "]", "")
    entry = entry.take(pa.array(order))
    maps = pc.binary_join(pa.ListArray.from_arrays(pa.array(starts.astype(np.int32)), entry), ",")
    parts = {"version": "3", "partitions": pc.binary_join_element_wise("{", maps, "}", ""),
             "adding_replicas": "{}", "removing_replicas": "{}",
             "topic_id": pc.binary_join_element_wise('"', pa.array(ids), '"', "")}
    pieces = []
    for i, key in enumerate(TOPIC_KEYS):
        pieces += [("{" if i == 0 else ",") + f'"{key}":', parts[key]]
    topic_znodes = pc.binary_join_element_wise(*pieces, "}", "")

    live = np.zeros(brokers, dtype=bool)
    live[broker_ids] = True
    st = Columns(names, pa.array(names), topic, partition, assign, np.full((n, rf), NONE, np.int32),
                 np.full(n, NONE, np.int32), np.full(n, NONE, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32),
                 np.zeros(n, np.int32), live, (np.arange(brokers, dtype=np.int64) + 37) << 32 | 1)
    rc = RecordColumns(st, 0, 0, 0)
    rows = np.arange(n)
    # NonExistentPartition -> NewPartition (PartitionStateMachine.handleStateChanges)
    partition_transitions(rc, rows, P_NONEXISTENT, P_NEW, ELECTION_NONE)
    # NonExistentReplica -> NewReplica for every replica
    ri, rj = np.nonzero(assign >= 0)
    replica_transitions(rc, rows[ri], assign[ri, rj], R_NONEXISTENT, R_NEW)
    # NewPartition -> OnlinePartition: initializeLeaderAndIsrForPartitions — leader = first live replica,
    # ISR = the live replicas, /state created with version 0 (createTopicPartitionStatesRaw)
    alive = live_of(st, assign)
    first = alive.argmax(1)
    st.leader[:] = np.where(alive.any(1), assign[rows, first], NONE)
    st.leader_epoch[:] = 0
    st.isr[:] = compact(assign, alive)
    st.state_ce[:] = st.controller_epoch
    st.outputs.append((rows, state_json(st.controller_epoch, st.leader, st.leader_epoch, st.isr)))   # /state bytes
    partition_transitions(rc, rows, P_NEW, P_ONLINE, ELECTION_NEW_PARTITION)
    # LeaderAndIsr (is_new) to every live replica, grouped per broker — and UpdateMetadata to every live broker
    # (all topics in one batch: ours creates them one create_topic at a time, so it writes one RequestSent per
    # broker per topic, 6,000 for 100 topics, where this writes 60; every other record count is the same)
    leader_and_isr_batch(rc, rows, alive, is_new=True)
    update_metadata_batch(rc, rows)
    # NewReplica -> OnlineReplica for every replica
    replica_transitions(rc, rows[ri], assign[ri, rj], R_NEW, R_ONLINE)
    # the records as columns, written to a file
    written = rc.write(path) if path else sum(b.size for b in rc.to_bytes())
    state_bytes = sum(d.nbytes for _, d in st.outputs)
    return st, {"records": sum(rc.counts.values()), "kinds": dict(rc.counts), "record_bytes": written,
                "state_bytes": state_bytes, "topic_znodes": topic_znodes, "topic_bytes": topic_znodes.nbytes}


# ---------------------------------------------------------------------------------------------------------
# Goal 1 baseline: a broker fails
# ---------------------------------------------------------------------------------------------------------

def baseline_broker_failure(st: Columns, victim: int, rc: RecordColumns | None = None,
                            at_failover: bool = False) -> dict:
    """KafkaController.onBrokerFailure(victim) on columns: elections for the partitions it led, ISR shrinks
    for the others, the requests grouped per broker, every record, serialized. ``at_failover``: a new
    controller found the broker dead, so its partitions and replicas start Offline (no transitions to it)."""
    rc = rc or RecordColumns(st, 28_000, 0, 0)
    st.live[victim] = False                                        # BrokerChange: the broker's session expired
    a = st.assign
    hosted = np.flatnonzero((a == victim).any(1))                  # controllerContext.replicasOnBrokers(dead)
    led = hosted[st.leader[hosted] == victim]                      # partitions whose leader is offline
    # OnlinePartition -> OfflinePartition (partitionStateMachine.handleStateChanges)
    if not at_failover:
        partition_transitions(rc, led, P_ONLINE, P_OFFLINE, ELECTION_NONE)
    # triggerOnlinePartitionStateChange: OfflinePartitionLeaderElection — the first replica in assignment order
    # that is live and in the ISR (Election.leaderForOffline); the new ISR is the old ISR's live members
    la, li = a[led], st.isr[led]
    eligible = live_of(st, la) & (la[:, :, None] == li[:, None, :]).any(2)
    has = eligible.any(1)
    new_leader = la[np.arange(len(led)), eligible.argmax(1)]
    new_isr = compact(li, live_of(st, li))
    # the fenced /state writes (unclean election disabled: partitions without a candidate stay offline)
    elected = fenced_write(st, led[has], new_leader[has], new_isr[has])
    # OfflinePartition -> OnlinePartition records, with the new leadership
    partition_transitions(rc, elected, P_OFFLINE, P_ONLINE, ELECTION_OFFLINE)
    # LeaderAndIsr to each elected partition's live replicas (grouped per broker) and UpdateMetadata to all live
    leader_and_isr_batch(rc, elected, live_of(st, a[elected]))
    update_metadata_batch(rc, elected)
    # OfflineReplica for every replica on the dead broker: removeReplicasFromIsr reads every hosted /state
    # and rewrites those whose ISR holds the broker (Kafka keeps an ISR of one; a removed leader becomes -1)
    holds = (st.isr[hosted] == victim).any(1)
    shrink = hosted[holds]
    si = st.isr[shrink]
    keep_one = (si >= 0).sum(1) == 1
    shrunk_isr = np.where(keep_one[:, None], si, compact(si, si != victim))
    shrunk_leader = np.where(st.leader[shrink] == victim, NONE, st.leader[shrink])
    written = fenced_write(st, shrink, shrunk_leader, shrunk_isr)
    n = len(written)
    rc.add(LeaderAndIsrUpdated, n, topic=rc.topic(written), partition=st.partition[written], leader=st.leader[written],
           leader_epoch=st.leader_epoch[written], isr=list_column(st.isr[written]),
           partition_epoch=st.partition_epoch[written], recovery_state=np.int8(0),
           reason=np.int8(UPDATE_OFFLINE_REPLICA), replica=np.int32(victim))
    # LeaderAndIsr to the other live replicas of every hosted partition, UpdateMetadata for them
    ha = a[hosted]
    leader_and_isr_batch(rc, hosted, live_of(st, ha) & (ha != victim))
    update_metadata_batch(rc, hosted)
    # OnlineReplica -> OfflineReplica records
    if not at_failover:
        replica_transitions(rc, hosted, np.full(len(hosted), victim), R_ONLINE, R_OFFLINE)
    # the record batches serialized (Arrow IPC)
    blobs = rc.to_bytes()
    return {"hosted": len(hosted), "led": len(led), "elected": len(elected), "shrunk": n,
            "records": sum(rc.counts.values()), "kinds": dict(rc.counts),
            "record_bytes": sum(b.size for b in blobs), "state_bytes": sum(d.nbytes for _, d in st.outputs)}


# ---------------------------------------------------------------------------------------------------------
# Goal 2 baseline: controlled shutdown
# ---------------------------------------------------------------------------------------------------------

def baseline_controlled_shutdown(st: Columns, victim: int) -> dict:
    """KafkaController.doControlledShutdown(victim) on columns."""
    rc = RecordColumns(st, 0, 0, 0)
    shutting = np.zeros_like(st.live)
    shutting[victim] = True                                        # shuttingDownBrokerIds += id
    a = st.assign
    rf = (a >= 0).sum(1)
    hosted = np.flatnonzero((a == victim).any(1) & (rf > 1))     # partitionsToActOn (all have leadership info)
    is_led = st.leader[hosted] == victim
    led, followed = hosted[is_led], hosted[~is_led]
    # ControlledShutdownPartitionLeaderElection: first replica in assignment order that is live, in the ISR and
    # not shutting down; new ISR = ISR without the shutting-down brokers (Election.leaderForControlledShutdown)
    la, li = a[led], st.isr[led]
    up = live_of(st, la) & ~shutting[np.maximum(la, 0)]
    eligible = up & (la[:, :, None] == li[:, None, :]).any(2)
    has = eligible.any(1)
    new_leader = la[np.arange(len(led)), eligible.argmax(1)]
    new_isr = compact(li, (li >= 0) & ~shutting[np.maximum(li, 0)])
    elected = fenced_write(st, led[has], new_leader[has], new_isr[has])   # fenced /state writes
    # OnlinePartition -> OnlinePartition records
    partition_transitions(rc, elected, P_ONLINE, P_ONLINE, ELECTION_CONTROLLED_SHUTDOWN)
    # LeaderAndIsr to the live-or-shutting-down replicas (all three here), UpdateMetadata
    leader_and_isr_batch(rc, elected, live_of(st, a[elected]))
    update_metadata_batch(rc, elected)
    # StopReplica (deletePartition=false) to the broker for the partitions it follows
    nf = len(followed)
    for _ in range(2):   # once from doControlledShutdown, once from the OfflineReplica transition
        rc.add(StopReplicaPartition, nf, broker_id=np.int32(victim), topic=rc.topic(followed),
               partition=st.partition[followed], leader_epoch=st.leader_epoch[followed], delete_partition=False)
        rc.requests(API_STOP_REPLICA, counts=np.where(np.arange(len(st.live)) == victim, nf, 0))
    # OfflineReplica for the followed partitions: removeReplicasFromIsr (Kafka keeps an ISR of one)
    fi = st.isr[followed]
    holds = (fi == victim).any(1)
    shrink, si = followed[holds], fi[holds]
    keep_one = (si >= 0).sum(1) == 1
    written = fenced_write(st, shrink, st.leader[shrink], np.where(keep_one[:, None], si, compact(si, si != victim)))
    n = len(written)
    rc.add(LeaderAndIsrUpdated, n, topic=rc.topic(written), partition=st.partition[written], leader=st.leader[written],
           leader_epoch=st.leader_epoch[written], isr=list_column(st.isr[written]),
           partition_epoch=st.partition_epoch[written], recovery_state=np.int8(0),
           reason=np.int8(UPDATE_OFFLINE_REPLICA), replica=np.int32(victim))
    fa = a[followed]
    leader_and_isr_batch(rc, followed, live_of(st, fa) & (fa != victim))
    update_metadata_batch(rc, followed)
    replica_transitions(rc, followed, np.full(nf, victim), R_ONLINE, R_OFFLINE)
    # the response: partitions the broker still leads
    remaining = hosted[st.leader[hosted] == victim]
    blobs = rc.to_bytes()
    return {"hosted": len(hosted), "led": len(led), "elected": len(elected), "remaining": len(remaining),
            "records": sum(rc.counts.values()), "kinds": dict(rc.counts),
            "record_bytes": sum(b.size for b in blobs), "state_bytes": sum(d.nbytes for _, d in st.outputs)}


# ---------------------------------------------------------------------------------------------------------
# Goal 4 baseline: failover
# ---------------------------------------------------------------------------------------------------------

STORE_FIELDS = ("topic", "partition", "replicas", "isr", "leader", "leader_epoch", "zk_version", "state_ce")


def baseline_snapshot(st: Columns) -> bytes:
    """The store's state as columns, to bytes (the topic znodes' assignments, every /state znode's fields and
    version, the broker registrations): an Arrow IPC stream."""
    table = pa.record_batch([pa.DictionaryArray.from_arrays(pa.array(st.topic), st.topic_names), pa.array(st.partition),
                             list_column(st.assign), list_column(st.isr), pa.array(st.leader),
                             pa.array(st.leader_epoch), pa.array(st.zk_version), pa.array(st.state_ce)],
                            names=list(STORE_FIELDS))
    brokers = pa.record_batch([pa.array(np.flatnonzero(st.live).astype(np.int32)),
                               pa.array(st.broker_epoch[st.live])], names=["broker_id", "broker_epoch"])
    out = []
    for b in (table, brokers):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, b.schema) as w:
            w.write_batch(b)
        buf = sink.getvalue()
        out.append(len(buf).to_bytes(8, "little") + buf.to_pybytes())
    return b"".join(out)


def padded(lists: pa.ListArray, width: int) -> np.ndarray:
    """A list<int32> column back to a padded (n, width) matrix."""
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy()
    lens = np.diff(offsets)
    m = np.full((len(lens), width), NONE, np.int32)
    col = np.arange(len(values)) - np.repeat(offsets[:-1], lens)
    m[np.repeat(np.arange(len(lens)), lens), col] = values
    return m


def baseline_restore_and_takeover(data: bytes, dead: int, new_controller: int) -> dict:
    """The new controller's onControllerFailover on columns: read the store's columns from bytes, rebuild the
    context, initialise the partition and replica states, send LeaderAndIsr/UpdateMetadata for everything,
    then handle the old controller's failure (elections, ISR shrinks)."""
    t0 = time.perf_counter()
    n1 = int.from_bytes(data[:8], "little")
    table = pa.ipc.open_stream(pa.py_buffer(data[8:8 + n1])).read_next_batch()           # read /brokers/topics/*
    brokers = pa.ipc.open_stream(pa.py_buffer(data[16 + n1:])).read_next_batch()         # read /brokers/ids
    t1 = time.perf_counter()
    ids = brokers.column(0).to_numpy()
    broker_epoch = np.zeros(int(ids.max()) + 1, np.int64)
    broker_epoch[ids] = brokers.column(1).to_numpy()
    live = np.zeros(len(broker_epoch), bool)
    live[ids] = True
    live[dead] = False                                             # its session is gone: not a live broker
    topic = table.column(0)
    replicas = table.column(2)
    width = int(pc.max(pc.list_value_length(replicas)).as_py())
    # initializeControllerContext: assignments, leadership (getTopicPartitionStates), live brokers
    st = Columns(topic.dictionary.to_pylist(), topic.dictionary, topic.indices.to_numpy(),
                 table.column(1).to_numpy(), padded(replicas, width), padded(table.column(3), width),
                 table.column(4).to_numpy().copy(), table.column(5).to_numpy().copy(),
                 table.column(6).to_numpy().copy(), table.column(6).to_numpy().copy(),
                 table.column(7).to_numpy().copy(), live, broker_epoch, controller_id=new_controller,
                 controller_epoch=int(table.column(7).to_numpy().max()) + 1)
    # replicas per broker (partitionsOnBroker): a stable sort of the (broker, partition) pairs
    per_broker = np.argsort(st.assign.ravel(), kind="stable")
    counts = np.bincount(st.assign[st.assign >= 0], minlength=len(live))
    # preferred-replica imbalance per broker (for the auto rebalance)
    imbalance = np.bincount(st.assign[:, 0], weights=st.leader != st.assign[:, 0], minlength=len(live))
    rc = RecordColumns(st, 0, 0, 0)
    n = len(st.leader)
    rows = np.arange(n)
    # replicaStateMachine.startup: every replica Online if its broker is live, else Offline
    ri, rj = np.nonzero(st.assign >= 0)
    rb = st.assign[ri, rj]
    replica_transitions(rc, rows[ri], rb, R_NONEXISTENT, np.where(st.live[rb], R_ONLINE, R_OFFLINE))
    # partitionStateMachine.startup: Online if the leader is live, else Offline
    online = (st.leader >= 0) & st.live[np.maximum(st.leader, 0)]
    offline = rows[~online]
    # LeaderAndIsr for every live replica (OnlineReplica), grouped per broker; UpdateMetadata for all partitions
    leader_and_isr_batch(rc, rows, live_of(st, st.assign))
    update_metadata_batch(rc, rows)
    # the old controller's replicas: elections for its partitions, ISR shrinks (onBrokerFailure)
    st.live[dead] = True
    failure = baseline_broker_failure(st, dead, rc, at_failover=True)
    t2 = time.perf_counter()
    return {"read_s": t1 - t0, "takeover_s": t2 - t1, "offline_before": int(len(offline)),
            "elected": failure["elected"], "shrunk": failure["shrunk"], "records": sum(rc.counts.values()),
            "kinds": dict(rc.counts), "pairs": int(len(per_broker)), "replicas": int(counts.sum()),
            "imbalance": int(imbalance.sum())}


# =========================================================================================================
# Our side
# =========================================================================================================

def settle_gc(args) -> None:
    """Before a measurement on a built cluster: collect, and with --gc-freeze move everything the set-up left
    into the permanent generation (gc.freeze), so the collector does not scan the set-up's objects again."""
    gc.collect()
    if args.gc_freeze:
        gc.freeze()


def ours_build(partitions: int, brokers: int, per_topic: int, seed: int, sink, label: str):
    """A Cluster with topics totalling ``partitions``: returns (cluster, seconds of the create_topic calls, gc)."""
    from controller.embedding.cluster import Cluster
    cluster = Cluster(seed=seed, sink=sink)
    cluster.start_brokers(range(brokers))
    layout = topic_layout(partitions, per_topic)
    elapsed, done = 0.0, 0
    last = time.perf_counter()
    with GcWatch() as collector:
        for name, k in layout:
            t0 = time.perf_counter()
            cluster.create_topic(name, k, 3)
            elapsed += time.perf_counter() - t0
            done += k
            if time.perf_counter() - last > 15:
                last = time.perf_counter()
                say(f"  [{label}] {done:,}/{partitions:,} partitions created, {elapsed:.0f} s so far "
                    f"(RSS {peak_rss_mb():,.0f} MB)")
    return cluster, elapsed, collector


def log_kinds(log_dir: str, start: int) -> Counter:
    """Record kinds at offsets >= start of a log (to count what a step wrote; untimed)."""
    from events.records import KINDS
    c = Counter(rec[0] for rec in LogReader(log_dir).raw_records(start))
    return Counter({KINDS[k].__name__: v for k, v in c.items()})


def compare_states(cluster, st: Columns, limit: int = 2000) -> str:
    """Check: the baseline's /state bytes of its written partitions equal our store's (a sample)."""
    if not st.outputs:
        return "nothing written"
    rows = np.concatenate([r for r, _ in st.outputs])
    data = pa.chunked_array([d for _, d in st.outputs])
    last = {}
    for i in range(len(rows)):   # check only (not timed): the last write of each partition wins
        last[int(rows[i])] = i
    keys = sorted(last)
    step = max(1, len(keys) // limit)
    same = total = 0
    sid = cluster.admin.session_id
    for r in keys[::step]:
        path = f"/brokers/topics/{st.topics[st.topic[r]]}/partitions/{st.partition[r]}/state"
        stored = cluster.zk.get_data(sid, path)[0]
        total += 1
        same += stored == data[last[r]].as_py().encode()
    return f"baseline /state bytes equal ours for {same:,} of {total:,} sampled partitions"


class _Discard:
    """A sink that drops records and columnar batches alike (a plain callable sink would make the cluster
    expand every columnar batch into records for it)."""

    def __call__(self, record) -> None:
        pass

    def append_columns(self, batch) -> None:
        pass


def ours_failover_child(path: str) -> None:
    """Child process: restore the snapshot and kill its controller; prints a RESULT line (times, peak RSS)."""
    from controller.embedding.cluster_snapshot import restore_cluster
    gc.collect()
    with GcWatch() as collector:
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        cluster = restore_cluster(data, sink=_Discard())
        del data
        t1 = time.perf_counter()
        old = cluster.controller_id
        cluster.kill_broker(old, at=cluster.now + 1)
        timeout = cluster.config.get_int("zookeeper.session.timeout.ms")
        t2 = time.perf_counter()
        cluster.advance_to(cluster.now + timeout + 1)
        t3 = time.perf_counter()
    new = cluster.controller
    print("RESULT " + json.dumps({"restore_s": t1 - t0, "takeover_s": t3 - t1, "gc_s": collector.seconds,
                                  "old": old, "new": None if new is None else new.broker_id,
                                  "epoch": None if new is None else new.epoch, "rss_mb": own_peak_rss_mb()}),
          flush=True)


def baseline_failover_child(path: str, dead: int, new_controller: int) -> None:
    gc.collect()
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    t1 = time.perf_counter()
    out = baseline_restore_and_takeover(data, dead, new_controller)
    t2 = time.perf_counter()
    out.update({"restore_s": (t1 - t0) + out["read_s"], "total_s": t2 - t0, "rss_mb": own_peak_rss_mb()})
    print("RESULT " + json.dumps(out), flush=True)


def run_child(args_list: list) -> dict:
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *map(str, args_list)],
                          stdout=subprocess.PIPE, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
        say("  child:", line)
    raise RuntimeError(f"child {args_list} exited with {proc.returncode} without a result")


# =========================================================================================================
# Goals
# =========================================================================================================

def goal_big(args, goals: set, work: str) -> None:
    """create, failure and failover: one big cluster (ours), one set of columns (baseline)."""
    ours_side, base_side = args.side in ("both", "ours"), args.side in ("both", "baseline")
    n, b = args.partitions, args.brokers
    st0 = None
    base_create = None
    if base_side:
        say(f"-- baseline: creating {n:,} partitions (best of {args.repeat})")
        path = os.path.join(work, "baseline-create.arrows")
        base_create, (st0, info) = best_of(args.repeat, lambda: baseline_create(n, b, args.per_topic, args.seed, path))
        say(f"  baseline create: {info['records']:,} records ({info['record_bytes'] / 2**20:,.0f} MiB written), "
            f"/state bytes {info['state_bytes'] / 2**20:,.0f} MiB, "
            f"topic znodes {info['topic_bytes'] / 2**20:,.1f} MiB; "
            f"{dict(sorted(info['kinds'].items()))}")
    cluster = writer = None
    ours_create = None
    log_dir = os.path.join(work, "ours-log")
    if ours_side:
        say(f"-- ours: building the cluster: {n:,} partitions x RF 3 on {b} brokers, records to a LogWriter")
        writer = LogWriter(log_dir, fsync=FsyncPolicy.none())
        cluster, ours_create, collector = ours_build(n, b, args.per_topic, args.seed, writer.append, "ours")
        writer.flush()
        say(f"  ours create: {cluster.journal.next_offset:,} records written; gc {collector.seconds:.2f} s "
            f"({collector.full} full); RSS {peak_rss_mb():,.0f} MB")
        if ours_side and base_side:
            ours_topic = cluster.zk.get_data(cluster.admin.session_id, "/brokers/topics/topic-000")[0]
            base_topic = info["topic_znodes"][0].as_py().encode()
            strip = re.compile(rb'"topic_id":"[^"]*"')
            say("  check: topic-000 znode " + ("equal to ours (topic id aside)" if strip.sub(b"", ours_topic)
                                                == strip.sub(b"", base_topic) else "DIFFERS from ours"))
    if "create" in goals:
        met = None if ours_create is None else ours_create <= 3.0
        report("create", f"create {n:,} partitions (records written)", ours_create, base_create, "<= 3 s", met,
               "" if ours_create is None else f"ours gc {collector.seconds:.2f} s")

    # failover, part 1: the snapshot (of the cluster as created, before the failure below)
    snap_ours = snap_base = None
    ours_snap_path = os.path.join(work, "ours-snapshot.bin")
    base_snap_path = os.path.join(work, "baseline-snapshot.bin")
    if "failover" in goals:
        if ours_side:
            from controller.embedding.snapshot_state import cluster_state
            say("-- ours: snapshot of the cluster (failover, part 1)")
            t0 = time.perf_counter()
            state = cluster_state(cluster)
            snap_ours = time.perf_counter() - t0
            with open(ours_snap_path, "wb") as f:
                f.write(state)
            say(f"  ours snapshot: {len(state) / 2**20:,.0f} MiB in {snap_ours:.2f} s")
            del state
        if base_side:
            snap_base, blob = best_of(args.repeat, lambda: baseline_snapshot(st0))
            with open(base_snap_path, "wb") as f:
                f.write(blob)
            say(f"  baseline snapshot: {len(blob) / 2**20:,.0f} MiB in {snap_base:.3f} s")

    if "failure" in goals:
        victim = args.victim
        ours_fail = base_fail = None
        extra = []
        if base_side:
            base_fail, info = best_of(args.repeat, lambda st: baseline_broker_failure(st, victim), prepare=st0.copy)
            say(f"  baseline failure: {info['hosted']:,} hosted, {info['led']:,} led, {info['elected']:,} elected, "
                f"{info['shrunk']:,} ISR shrinks; {info['records']:,} records "
                f"({info['record_bytes'] / 2**20:,.0f} MiB), "
                f"/state {info['state_bytes'] / 2**20:,.1f} MiB; {dict(sorted(info['kinds'].items()))}")
            hosted = info["hosted"]
        if ours_side:
            ctx = cluster.controller.context
            hosted = len(ctx.partitions_on_broker(victim))
            say(f"-- ours: broker {victim} fails ({hosted:,} partitions hosted on it)")
            cluster.kill_broker(victim, at=10_000)
            start = cluster.journal.next_offset
            timeout = cluster.config.get_int("zookeeper.session.timeout.ms")
            settle_gc(args)
            with GcWatch() as collector:
                t0 = time.perf_counter()
                cluster.advance_to(10_000 + timeout)
                ours_fail = time.perf_counter() - t0
            gc.unfreeze()
            writer.flush()
            after = cluster.controller.context
            still = sum(1 for tp in after.partitions_on_broker(victim) if after.partition_leader(tp) == victim)
            say(f"  ours failure: {cluster.journal.next_offset - start:,} records "
                f"{dict(sorted(log_kinds(log_dir, start).items()))}; {still:,} partitions still led by {victim}")
            extra.append(f"ours gc {collector.seconds:.2f} s ({collector.full} full)")
            if base_side:
                st = st0.copy()
                baseline_broker_failure(st, victim)
                say("  check: " + compare_states(cluster, st))
        per = "" if ours_fail is None else f"; ours {ours_fail / max(1, hosted) * 1e6:,.1f} us per hosted partition"
        met = None if ours_fail is None else (ours_fail <= 1.0 and (base_fail is None or ours_fail <= 5 * base_fail))
        report("failure", f"broker failure, {hosted:,} of {n:,} partitions hosted on it", ours_fail, base_fail,
               "<= 1 s and <= 5x baseline", met, "; ".join(extra) + per)
    if writer is not None:
        writer.close()
    del cluster
    gc.collect()
    shutil.rmtree(log_dir, ignore_errors=True)

    if "failover" in goals:
        ours_total = base_total = None
        extra = []
        if ours_side:
            say("-- ours: restore + the controller killed (failover, part 2, in a child process)")
            r = run_child(["failover-ours", ours_snap_path])
            ours_total = snap_ours + r["restore_s"] + r["takeover_s"]
            extra.append(f"ours snapshot {snap_ours:.1f} + restore {r['restore_s']:.1f} + "
                         f"takeover {r['takeover_s']:.1f} s, "
                         f"gc {r['gc_s']:.1f} s, controller {r['old']} -> {r['new']} (epoch {r['epoch']}), "
                         f"child peak RSS {r['rss_mb']:,.0f} MB")
            ours_rss = r["rss_mb"]
        if base_side:
            best = None
            for _ in range(args.repeat):
                r = run_child(["failover-baseline", base_snap_path, 0, 1])
                if best is None or r["total_s"] < best["total_s"]:
                    best = r
            base_total = snap_base + best["total_s"]
            extra.append(f"baseline snapshot {snap_base:.2f} + restore {best['restore_s']:.2f} + takeover "
                         f"{best['takeover_s']:.2f} s, {best['records']:,} records, {best['elected']:,} elected, "
                         f"child peak RSS {best['rss_mb']:,.0f} MB")
        met = None if ours_total is None else (ours_total <= 3.0 and ours_rss <= 1536)
        report("failover", f"new controller takes over {n:,} partitions", ours_total, base_total,
               "<= 3 s and <= 1.5 GiB RSS", met, "; ".join(extra))
    for p in (ours_snap_path, base_snap_path):
        if os.path.exists(p):
            os.remove(p)


def goal_shutdown(args, work: str) -> None:
    ours_side, base_side = args.side in ("both", "ours"), args.side in ("both", "baseline")
    b, victim = args.brokers, args.victim
    n = args.shutdown_hosted * b // 3                              # RF 3: the victim hosts about shutdown_hosted
    ours_t = base_t = None
    extra = []
    st0 = None
    if base_side:
        st0, _ = baseline_create(n, b, args.per_topic, args.seed, None)
        base_t, info = best_of(args.repeat, lambda st: baseline_controlled_shutdown(st, victim), prepare=st0.copy)
        hosted = info["hosted"]
        say(f"  baseline controlled shutdown: {hosted:,} hosted, {info['led']:,} led, {info['remaining']} remaining; "
            f"{info['records']:,} records ({info['record_bytes'] / 2**20:,.1f} MiB); "
            f"{dict(sorted(info['kinds'].items()))}")
    if ours_side:
        log_dir = os.path.join(work, "ours-shutdown-log")
        say(f"-- ours: building a cluster of {n:,} partitions on {b} brokers for the controlled shutdown")
        with LogWriter(log_dir, fsync=FsyncPolicy.none()) as writer:
            cluster, setup, _ = ours_build(n, b, args.per_topic, args.seed, writer.append, "shutdown")
            hosted = len(cluster.controller.context.partitions_on_broker(victim))
            say(f"  built in {setup:.1f} s; broker {victim} hosts {hosted:,} partitions")
            start = cluster.journal.next_offset
            settle_gc(args)
            with GcWatch() as collector:
                t0 = time.perf_counter()
                response = cluster.controlled_shutdown(victim)
                ours_t = time.perf_counter() - t0
            gc.unfreeze()
            writer.flush()
            say(f"  ours controlled shutdown: response {response[0]}, {len(response[1])} remaining; "
                f"{cluster.journal.next_offset - start:,} records {dict(sorted(log_kinds(log_dir, start).items()))}")
            extra.append(f"ours gc {collector.seconds:.3f} s ({collector.full} full)")
            if base_side:
                st = st0.copy()
                baseline_controlled_shutdown(st, victim)
                say("  check: " + compare_states(cluster, st))
        del cluster
        gc.collect()
        shutil.rmtree(log_dir, ignore_errors=True)
    report("shutdown", f"controlled shutdown, {hosted:,} partitions hosted ({n:,} in the cluster)", ours_t, base_t,
           "<= 0.1 s", None if ours_t is None else ours_t <= 0.1, "; ".join(extra))


def baseline_replay(log_dir: str) -> int:
    """Decode every batch of the log, re-encode it and compare the bytes; returns the records seen."""
    records = 0
    for batch in LogReader(log_dir).iter_batches():                # read and checksum-verify each batch
        elements = decode_elements(batch.payload)                  # decode its records and columnar batches
        again = b"".join(encode_batch_pieces(elements))            # re-encode them
        if again != batch.payload:                                 # compare, batch by batch
            raise RuntimeError(f"batch at offset {batch.base_offset} re-encodes differently")
        records += batch.record_count
    return records


def goal_replay(args, work: str) -> None:
    ours_side, base_side = args.side in ("both", "ours"), args.side in ("both", "baseline")
    from controller.embedding.replay import replay_log
    n = args.replay_partitions
    log_dir = os.path.join(work, "replay-log")
    say(f"-- writing a run to replay: {n:,} partitions, broker 1 killed and restarted, a checkpoint")
    with LogWriter(log_dir, fsync=FsyncPolicy.none()) as writer:
        cluster, _, _ = ours_build(n, args.brokers, args.per_topic, args.seed, writer.append, "replay run")
        cluster.kill_broker(1, at=1_000)
        cluster.advance_to(30_000)
        cluster.start_broker(1, at=40_000)
        cluster.checkpoint()
        records = cluster.journal.next_offset
    del cluster
    gc.collect()
    ours_t = base_t = None
    extra = [f"{records:,} records"]
    if base_side:
        base_t, seen = best_of(args.repeat, lambda: baseline_replay(log_dir))
        extra.append(f"baseline {seen / base_t:,.0f} records/s")
    if ours_side:
        runs = []
        for _ in range(args.repeat):   # best of N, as the baseline's (a replay takes 1-2 s: the VM's noise shows)
            gc.collect()
            with GcWatch() as collector:
                t0 = time.perf_counter()
                result = replay_log(log_dir)
                runs.append(time.perf_counter() - t0)
        ours_t = min(runs)
        extra.append(f"ours {records / ours_t:,.0f} records/s, best of {len(runs)} (runs "
                     f"{', '.join(f'{t:.2f}' for t in runs)} s; {'same records' if result.ok else result.divergence}, "
                     f"{result.inputs} inputs), gc {collector.seconds:.2f} s")
    shutil.rmtree(log_dir, ignore_errors=True)
    report("replay", f"replay of a {n:,}-partition run", ours_t, base_t, ">= 1,000,000 records/s",
           None if ours_t is None else records / ours_t >= 1e6, "; ".join(extra))


def goal_log(args, work: str) -> None:
    ours_side, base_side = args.side in ("both", "ours"), args.side in ("both", "baseline")
    n = args.log_rows
    rng = np.random.default_rng(args.seed)
    topics = [f"topic-{i:03d}" for i in range(100)]
    t_idx = rng.integers(0, len(topics), n).astype(np.int32)
    part = rng.integers(0, 10_000, n).astype(np.int32)
    replica = rng.integers(0, 30, n).astype(np.int32)
    columnar = _columnar_log_api()
    ours_t = base_t = None
    extra = []
    if base_side:
        # The same columns as ours: the body fields, the header once per batch (IPC custom metadata).
        cols = {"topic": pa.DictionaryArray.from_arrays(pa.array(t_idx), pa.array(topics)),
                "partition": part, "replica": replica, "from_state": np.full(n, R_ONLINE, np.uint8),
                "to_state": np.full(n, R_OFFLINE, np.uint8)}
        path = os.path.join(work, "rows.arrow")

        def arrow_round_trip():
            batch = pa.record_batch([c if isinstance(c, pa.Array) else pa.array(c) for c in cols.values()],
                                    names=list(cols))
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:   # write the columns
                for i in range(0, n, 100_000):
                    header = {"kind": ReplicaTransition.KIND, "v": SCHEMA_VERSION, "first_offset": i,
                              "controller_id": 0, "controller_epoch": 1, "timestamp_ms": 28_000, "cause_offset": 0}
                    w.write_batch(batch.slice(i, 100_000), custom_metadata={k: str(v) for k, v in header.items()})
            with pa.OSFile(path, "rb") as source:                                            # read them back
                reader = pa.ipc.open_file(source)
                return [reader.get_batch_with_custom_metadata(i) for i in range(reader.num_record_batches)]

        base_t, _ = best_of(args.repeat, arrow_round_trip)
        extra.append(f"baseline {n / base_t:,.0f} rows/s (pyarrow IPC file, batches of 100,000)")
    if ours_side and columnar is not None:
        # The columnar event log: ColumnBatch.from_columns (batches of 100,000 rows, as the baseline's) appended with
        # LogWriter.append_columns, read back with LogReader.column_batches (numpy columns, no record objects).
        ColumnBatch, DictColumn = columnar.ColumnBatch, columnar.DictColumn
        names = tuple(topics)
        best = (float("inf"), 0, 0)
        for k in range(args.repeat):
            d = os.path.join(work, f"columns-log-{k}")
            gc.collect()
            t0 = time.perf_counter()
            with LogWriter(d, fsync=FsyncPolicy.none()) as writer:   # write the columns
                for i in range(0, n, 100_000):
                    j = min(n, i + 100_000)
                    writer.append_columns(ColumnBatch.from_columns(
                        ReplicaTransition, i, (0, 1, 28_000, 0), topic=DictColumn(names, t_idx[i:j]),
                        partition=part[i:j], replica=replica[i:j], from_state=np.full(j - i, R_ONLINE, np.uint8),
                        to_state=np.full(j - i, R_OFFLINE, np.uint8)))
            t1 = time.perf_counter()
            back = list(LogReader(d).column_batches())                # read them back, as columns
            t2 = time.perf_counter()
            assert sum(len(b) for b in back) == n
            del back
            shutil.rmtree(d, ignore_errors=True)
            if t2 - t0 < best[0]:
                best = (t2 - t0, t1 - t0, t2 - t1)
        ours_t = best[0]
        extra.append(f"ours {n / ours_t:,.0f} rows/s: ColumnBatch via LogWriter.append_columns (write {best[1]:.3f} s) "
                     f"+ LogReader.column_batches (read {best[2]:.3f} s), batches of 100,000")
    elif ours_side:
        rows = [tuple.__new__(ReplicaTransition, (ReplicaTransition.KIND, SCHEMA_VERSION, i, 0, 1, 28_000, 0,
                                                  topics[t], int(p), int(r), R_ONLINE, R_OFFLINE))
                for i, (t, p, r) in enumerate(zip(t_idx.tolist(), part.tolist(), replica.tolist()))]
        best = (float("inf"), 0, 0)
        for k in range(args.repeat):
            d = os.path.join(work, f"rows-log-{k}")
            gc.collect()
            t0 = time.perf_counter()
            with LogWriter(d, fsync=FsyncPolicy.none()) as writer:   # write the rows
                writer.append_many(rows)
            t1 = time.perf_counter()
            back = list(LogReader(d).raw_records())                   # read them back
            t2 = time.perf_counter()
            assert len(back) == n
            del back
            shutil.rmtree(d, ignore_errors=True)
            if t2 - t0 < best[0]:
                best = (t2 - t0, t1 - t0, t2 - t1)
        ours_t = best[0]
        extra.append(f"ours {n / ours_t:,.0f} rows/s: row records via LogWriter.append_many (write {best[1]:.2f} s) "
                     f"+ LogReader.raw_records (read {best[2]:.2f} s); no columnar log batch in this tree")
    report("log", f"{n:,} ReplicaTransition rows written and read back", ours_t, base_t, ">= 5,000,000 rows/s",
           None if ours_t is None else n / ours_t >= 5e6, "; ".join(extra))


def _columnar_log_api():
    """events.columns (ColumnBatch) when the columnar log batch is there, with LogWriter.append_columns and
    LogReader.column_batches; None otherwise (then the row records are measured)."""
    try:
        import events.columns as columns
    except ImportError:
        return None
    ok = hasattr(LogWriter, "append_columns") and hasattr(LogReader, "column_batches")
    return columns if ok and hasattr(columns, "ColumnBatch") else None


# =========================================================================================================

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=None, help="the big cluster (create, failure, failover)")
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--per-topic", type=int, default=10_000)
    ap.add_argument("--victim", type=int, default=5)
    ap.add_argument("--shutdown-hosted", type=int, default=None, help="partitions hosted by the shut-down broker")
    ap.add_argument("--replay-partitions", type=int, default=None)
    ap.add_argument("--log-rows", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="best of N for the cheap measurements")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", nargs="+", choices=GOALS, default=None)
    ap.add_argument("--side", choices=("both", "ours", "baseline"), default="both")
    ap.add_argument("--quick", action="store_true", help="smoke run: 100,000 partitions, small other goals")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() after building a cluster, before the failure and shutdown measurements")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    if args.child:
        kind, *rest = args.child
        if kind == "failover-ours":
            ours_failover_child(rest[0])
        else:
            baseline_failover_child(rest[0], int(rest[1]), int(rest[2]))
        return
    quick = args.quick
    args.partitions = args.partitions or (100_000 if quick else 1_000_000)
    args.shutdown_hosted = args.shutdown_hosted or (2_000 if quick else 10_000)
    args.replay_partitions = args.replay_partitions or (20_000 if quick else 100_000)
    args.log_rows = args.log_rows or (200_000 if quick else 2_000_000)
    goals = set(args.only or GOALS)
    say(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
        f"numpy {np.__version__}, pyarrow {pa.__version__}")
    say(f"# engine {ROOT}; side {args.side}; goals {' '.join(g for g in GOALS if g in goals)}; "
        f"{args.partitions:,} partitions on {args.brokers} brokers, shutdown {args.shutdown_hosted:,} hosted, "
        f"replay run {args.replay_partitions:,} partitions, log {args.log_rows:,} rows, best of {args.repeat}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as work:
        if goals & {"create", "failure", "failover"}:
            goal_big(args, goals, work)
        if "shutdown" in goals:
            goal_shutdown(args, work)
        if "replay" in goals:
            goal_replay(args, work)
        if "log" in goals:
            goal_log(args, work)
    say(f"\n# done in {time.perf_counter() - started:,.0f} s; load average now "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; peak RSS of this process {peak_rss_mb():,.0f} MB")
    say(f"{'goal':<9} {'ours':>10} {'baseline':>10} {'ratio':>8}  {'target':<28} met")
    for r in RESULTS:
        o = "-" if r.ours is None else f"{r.ours:.3f} s"
        b = "-" if r.base is None else f"{r.base:.3f} s"
        ratio = f"{r.ours / r.base:,.1f}x" if r.ours is not None and r.base else "-"
        m = "-" if r.met is None else ("yes" if r.met else "no")
        say(f"{r.goal:<9} {o:>10} {b:>10} {ratio:>8}  {r.target:<28} {m}")


if __name__ == "__main__":
    main()
