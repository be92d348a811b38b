"""Benchmark of the event log: write N records with LogWriter, read them back decoded and raw.

Run: .venv/bin/python bench/bench_log.py [--records N] [--batch-records B] [--repeat R] [--dir PATH]
Records are generated before the clock starts; writing uses FsyncPolicy.none() and reading
comes from the page cache, so the figures measure encoding, decoding, checksums and system
calls, not the disk. Each figure is the best of R runs (this VM's speed varies from run to run).
"""
from __future__ import annotations

import argparse
import functools
import gc
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from events.log import FsyncPolicy, LogReader, LogWriter  # noqa: E402
from events.records import PartitionTransition, ReplicaTransition  # noqa: E402


def make_records(n: int, seed: int = 1) -> list:
    """A controller-like mix: ~1 PartitionTransition per 3 ReplicaTransitions, few topics, bursts of
    records sharing a timestamp and cause offset."""
    rng = random.Random(seed)
    topics = [f"topic-{i:03d}" for i in range(50)]
    # Fields are set by name on a template, so this keeps working when record kinds gain fields.
    replica_t = _Template(ReplicaTransition.make(
        topic="", partition=0, replica=0, from_state=2, to_state=3, controller_id=1, controller_epoch=7))
    partition_t = _Template(PartitionTransition.make(
        topic="", partition=0, from_state=1, to_state=2, replicas=(), leader=-1, leader_epoch=0, isr=(),
        partition_epoch=0, recovery_state=0, election=2, controller_id=1, controller_epoch=7))
    out = []
    ts = 1_700_000_000_000
    cause = 0
    for offset in range(n):
        if rng.random() < 0.25:
            cause = offset
            ts += rng.randrange(1, 50)
        topic, partition = rng.choice(topics), rng.randrange(64)
        if rng.random() < 0.25:
            replicas = tuple(sorted(rng.sample(range(6), 3)))
            out.append(partition_t(offset=offset, timestamp_ms=ts, cause_offset=cause, topic=topic,
                                   partition=partition, replicas=replicas, leader=replicas[0],
                                   leader_epoch=rng.randrange(100), isr=replicas[:2],
                                   partition_epoch=rng.randrange(1000)))
        else:
            out.append(replica_t(offset=offset, timestamp_ms=ts, cause_offset=cause, topic=topic,
                                 partition=partition, replica=rng.randrange(6)))
    return out


class _Template:
    """Builds records of one kind from a template record, faster than Kind.make()."""

    def __init__(self, record):
        self.cls = type(record)
        self.values = list(record)
        self.index = {name: i for i, name in enumerate(self.cls._fields)}

    def __call__(self, **fields):
        values = self.values.copy()
        for name, value in fields.items():
            values[self.index[name]] = value
        return tuple.__new__(self.cls, values)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--batch-records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    parser.add_argument("--dir", help="parent directory for the temporary log (default: system temp)")
    args = parser.parse_args(argv)

    t = time.perf_counter()
    gc.disable()
    records = make_records(args.records)
    gc.freeze()  # the collector need not traverse the pre-built records while the writes are timed
    gc.enable()
    print(f"generated {len(records):,} records in {time.perf_counter() - t:.1f} s (not timed); "
          f"best of {args.repeat} runs, FsyncPolicy.none(), {args.batch_records} records per batch")

    parent = tempfile.mkdtemp(prefix="bench-log-", dir=args.dir)
    directory = os.path.join(parent, "log")
    try:
        n = len(records)
        for what, write in [("write: append() per record", write_one_by_one),
                            ("write: append_many()", write_many)]:
            measure(what, functools.partial(write, directory, records, args.batch_records), args.repeat)
        del records
        gc.unfreeze()
        gc.collect()
        for what, read in [("read: records()", lambda: sum(1 for _ in LogReader(directory).records())),
                           ("read: raw_records()", lambda: sum(1 for _ in LogReader(directory).raw_records())),
                           ("read: verify() (checksums)", lambda: LogReader(directory).verify())]:
            assert measure(what, read, args.repeat) == n
        segments = LogReader(directory).segments()
        size = sum(os.path.getsize(path) for path, _ in segments)
        print(f"log: {size:,} bytes in {len(segments)} segment(s) = {size / n:.1f} bytes/record")
    finally:
        shutil.rmtree(parent)


def write_one_by_one(directory: str, records: list, batch_records: int) -> int:
    shutil.rmtree(directory, ignore_errors=True)
    with LogWriter(directory, fsync=FsyncPolicy.none(), batch_records=batch_records) as writer:
        append = writer.append
        for record in records:
            append(record)
    return len(records)


def write_many(directory: str, records: list, batch_records: int) -> int:
    shutil.rmtree(directory, ignore_errors=True)
    with LogWriter(directory, fsync=FsyncPolicy.none(), batch_records=batch_records) as writer:
        writer.append_many(records)
    return len(records)


def measure(what: str, run, repeat: int) -> int:
    rates = []
    for _ in range(repeat):
        t = time.perf_counter()
        n = run()
        rates.append(n / (time.perf_counter() - t))
    runs = ", ".join(f"{r / 1e6:.2f}" for r in rates)
    print(f"{what:30s} {max(rates) / 1e6:6.2f} M records/s  (runs: {runs})")
    return n


if __name__ == "__main__":
    main()
