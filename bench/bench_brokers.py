"""Benchmark: the in-process brokers applying controller requests (``BrokerServer.answer``).

Thirty brokers of one ``Cluster`` (not started: only their request handling runs) are given the
requests a controller sends, built beforehand as the controller builds them (columnar batches, or
``--input records``: tuples of records, as the controller sent them before issue 13):

* creating ``--partitions`` partitions (topics of 10,000, RF 3): per topic one LeaderAndIsr to each
  replica broker and one UpdateMetadata of the topic's partitions to every broker (100 requests per
  kind per broker at 1,000,000 partitions);
* then broker ``--victim`` fails (its ~10 % of the partitions): one LeaderAndIsr to every other replica
  broker (a new leader where it led, the ISR without it) and one UpdateMetadata of those partitions to
  the 29 live brokers.

Prints the CPU time of each phase with the cyclic GC's share, the time to read every broker's
metadata cache once (``len(server.metadata)``: where a broker defers the merge, the merge), the
GC-tracked objects the brokers' state added, and the peak RSS.

    .venv/bin/python bench/bench_brokers.py [--partitions 1000000] [--input batch|records]
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import structlog  # noqa: E402

from controller.embedding.cluster import BrokerServer, Cluster  # noqa: E402
from controller.request_batch import BrokerRequest  # noqa: E402
from events.columns import ColumnBatch, DictColumn, ListColumn  # noqa: E402
from events.records import (  # noqa: E402
    API_LEADER_AND_ISR, API_UPDATE_METADATA, LeaderAndIsrPartition, UpdateMetadataPartition,
)
from gc_watch import GcWatch  # noqa: E402  (bench/, the script's own folder)

PER_TOPIC = 10_000
RF = 3


def list_column(rows: np.ndarray) -> ListColumn:
    """Rows of a -1 padded matrix as an int tuple column."""
    keep = rows >= 0
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return ListColumn(offsets, rows[keep])


def uniform(value: tuple, n: int) -> ListColumn:
    return ListColumn(np.arange(n + 1, dtype=np.int64) * len(value), np.tile(np.asarray(value, dtype=np.int64), n))


class Requests:
    """The controller's requests, with offsets as a journal would give them."""

    def __init__(self, brokers: int):
        self.brokers = brokers
        self.offset = 0
        self.correlation = [0] * brokers

    def batch(self, cls, n: int, **columns) -> ColumnBatch:
        b = ColumnBatch.from_columns(cls, self.offset, (0, 1, 10_000, self.offset - 1), n, **columns)
        self.offset += n + 1
        return b

    def request(self, api: int, broker: int, partitions, live: tuple = ()) -> BrokerRequest:
        c = self.correlation[broker]
        self.correlation[broker] += 1
        return BrokerRequest(api, broker, 0, 0, 1, c, partitions, live)

    def leader_and_isr(self, broker: int, topic: str, parts, leader, leader_epoch, isr, pe, replicas, is_new):
        n = len(parts)
        return self.request(API_LEADER_AND_ISR, broker, self.batch(
            LeaderAndIsrPartition, n, broker_id=np.full(n, broker), topic=DictColumn((topic,), np.zeros(n, np.int32)),
            partition=parts, state_controller_epoch=np.ones(n, np.int64), leader=leader, leader_epoch=leader_epoch,
            isr=list_column(isr), partition_epoch=pe, replicas=list_column(replicas), adding_replicas=uniform((), n),
            removing_replicas=uniform((), n), is_new=np.full(n, is_new), recovery_state=np.zeros(n, np.int64)))

    def update_metadata(self, recipients: tuple, topic_names: tuple, topic_codes, parts, leader, leader_epoch, isr,
                        pe, replicas, offline) -> ColumnBatch:
        n = len(parts)
        return self.batch(UpdateMetadataPartition, n, brokers=uniform(recipients, n),
                          topic=DictColumn(topic_names, topic_codes), partition=parts,
                          state_controller_epoch=np.ones(n, np.int64), leader=leader, leader_epoch=leader_epoch,
                          isr=list_column(isr), partition_epoch=pe, replicas=list_column(replicas),
                          offline_replicas=list_column(offline))


def creation(req: Requests, topics: int) -> tuple[list, np.ndarray]:
    """The requests creating ``topics`` topics, in the order the controller sends them; and the assignment."""
    brokers = req.brokers
    everyone = tuple(range(brokers))
    out = []
    assignments = []
    parts = np.arange(PER_TOPIC, dtype=np.int64)
    for t in range(topics):
        name = f"topic-{t:03d}"
        replicas = (parts[:, None] + t + np.arange(RF)[None, :]) % brokers
        assignments.append(replicas)
        zeros = np.zeros(PER_TOPIC, np.int64)
        for b in range(brokers):
            rows = np.flatnonzero((replicas == b).any(axis=1))
            out.append(req.leader_and_isr(b, name, rows, replicas[rows, 0], zeros[rows], replicas[rows], zeros[rows],
                                          replicas[rows], True))
        um = req.update_metadata(everyone, (name,), np.zeros(PER_TOPIC, np.int32), parts, replicas[:, 0], zeros,
                                 replicas, zeros, replicas, np.full((PER_TOPIC, 1), -1))
        out.extend(req.request(API_UPDATE_METADATA, b, um, everyone) for b in range(brokers))
    return out, np.stack(assignments)


def failure(req: Requests, assignments: np.ndarray, victim: int) -> list:
    """The requests of ``victim``'s failure: elections where it led, ISR shrinks elsewhere."""
    brokers = req.brokers
    topics = assignments.shape[0]
    t_idx, p_idx = np.nonzero((assignments == victim).any(axis=2))
    replicas = assignments[t_idx, p_idx]
    isr = np.where(replicas == victim, -1, replicas)
    isr = np.sort(np.where(isr < 0, np.iinfo(np.int64).max, isr), axis=1)   # the victim's slot last
    isr = np.where(isr == np.iinfo(np.int64).max, -1, isr)
    leader = np.where(replicas[:, 0] == victim, isr[:, 0], replicas[:, 0])
    epoch = np.where(replicas[:, 0] == victim, 1, 0)
    pe = np.ones(len(t_idx), np.int64)
    offline = np.full((len(t_idx), 1), victim)
    live = tuple(b for b in range(brokers) if b != victim)
    names = tuple(f"topic-{t:03d}" for t in range(topics))
    out = []
    for b in live:
        rows = np.flatnonzero((replicas == b).any(axis=1))
        # One request per broker, topics in order (one request for all the topics of the failure).
        parts = p_idx[rows]
        n = len(rows)
        out.append(req.request(API_LEADER_AND_ISR, b, req.batch(
            LeaderAndIsrPartition, n, broker_id=np.full(n, b), topic=DictColumn(names, t_idx[rows].astype(np.int32)),
            partition=parts, state_controller_epoch=np.ones(n, np.int64), leader=leader[rows],
            leader_epoch=epoch[rows], isr=list_column(isr[rows]), partition_epoch=pe[rows],
            replicas=list_column(replicas[rows]), adding_replicas=uniform((), n), removing_replicas=uniform((), n),
            is_new=np.zeros(n, bool), recovery_state=np.zeros(n, np.int64))))
    um = req.update_metadata(live, names, t_idx.astype(np.int32), p_idx, leader, epoch, isr, pe, replicas, offline)
    out.extend(req.request(API_UPDATE_METADATA, b, um, live) for b in live)
    return out


def as_records(requests: list) -> list:
    """The requests with tuples of records (each batch's records built once, shared as the controller did)."""
    built: dict[int, tuple] = {}
    out = []
    for r in requests:
        p = r.partitions
        recs = built.get(id(p))
        if recs is None:
            recs = built[id(p)] = tuple(p.records())
        out.append(r._replace(partitions=recs))
    return out


def run(label: str, servers: dict, requests: list) -> None:
    with GcWatch() as collector:
        t0 = time.process_time()
        for r in requests:
            error, errors = servers[r.broker_id].answer(r)
            assert error == "NONE"
            if r.api == API_LEADER_AND_ISR:
                assert "KAFKA_STORAGE_ERROR" not in errors.values()
        applied = time.process_time() - t0
        t0 = time.process_time()
        sizes = {len(s.metadata) for s in servers.values()}
        read = time.process_time() - t0
    print(f"{label}: {len(requests):,} requests applied in {applied:.2f} s CPU; every broker's metadata read in "
          f"{read:.2f} s ({sorted(sizes)} partitions); GC {collector.seconds:.2f} s ({collector.full} full)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--victim", type=int, default=5)
    ap.add_argument("--input", choices=("batch", "records"), default="batch")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    topics = max(1, args.partitions // PER_TOPIC)
    req = Requests(args.brokers)
    create, assignments = creation(req, topics)
    fail = failure(req, assignments, args.victim)
    if args.input == "records":
        create, fail = as_records(create), as_records(fail)
    cluster = Cluster(seed=1, record_creation=False)
    servers = {b: BrokerServer(cluster, b, f"broker-{b}", 9092, None) for b in range(args.brokers)}
    gc.collect()
    gc.freeze()
    tracked = len(gc.get_objects())
    run(f"create {topics * PER_TOPIC:,} partitions ({args.input})", servers, create)
    hosted = sum(1 for r in fail if r.api == API_UPDATE_METADATA)
    del create
    gc.collect()
    added = len(gc.get_objects()) - tracked
    print(f"  GC-tracked objects added by the brokers' state: {added:,}")
    run(f"broker {args.victim} fails ({len(fail[-1].partitions):,} partitions, {hosted} UpdateMetadata)",
        servers, fail)
    del fail
    gc.collect()
    print(f"  GC-tracked objects added by the brokers' state: {len(gc.get_objects()) - tracked:,}; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
