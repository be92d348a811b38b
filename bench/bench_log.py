"""Benchmark of the event log: write N records with LogWriter, read them back decoded and raw;
then columnar batches, against pyarrow doing the same work.

Run: .venv/bin/python bench/bench_log.py [--records N] [--batch-records B] [--repeat R] [--dir PATH]
         [--column-rows M] [--column-batch K] [--skip-rows]
Records are generated before the clock starts; writing uses FsyncPolicy.none() and reading
comes from the page cache, so the figures measure encoding, decoding, checksums and system
calls, not the disk. Each figure is the best of R runs (this VM's speed varies from run to run).

Columnar part (events.columns): M transition rows of one kind (ReplicaTransition: topic,
partition, replica, from_state, to_state; PartitionTransition: also replicas/isr lists) in
batches of K rows sharing a header, as numpy columns built before the clock starts (topics as
dictionary codes, lists as offsets + values). Timed:
- log write: ``ColumnBatch.from_columns`` + ``LogWriter.append_columns`` + close (encoding,
  checksums, write);
- log read: ``LogReader.column_batches()``: checksums, decoding, the columns as numpy arrays;
- log read -> Arrow: the same, then ``ColumnBatch.to_arrow()`` for each batch;
- the pyarrow baseline in the same run: the same body columns (same dtypes, topics as a
  dictionary array, lists as list arrays) written as an Arrow IPC stream to a file
  (``pa.ipc.new_stream``) and read back (``pa.ipc.open_stream`` over ``pa.OSFile``), one record
  batch per K rows. The ratio printed is ours / pyarrow's (rows/s; > 1: faster than pyarrow).
It also compares the two encodings a column could have had: a msgpack ``bin`` of the
little-endian array (the format's choice) and a msgpack array of ints.
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

import msgpack  # noqa: E402
import numpy as np  # noqa: E402

from events.columns import ColumnBatch, DictColumn, ListColumn  # noqa: E402
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
    parser.add_argument("--column-rows", type=int, default=5_000_000, help="rows per kind in the columnar part")
    parser.add_argument("--column-batch", type=int, default=100_000, help="rows per columnar batch")
    parser.add_argument("--skip-rows", action="store_true", help="only the columnar part")
    args = parser.parse_args(argv)
    if not args.skip_rows:
        bench_rows(args)
    bench_columns(args)


def bench_rows(args) -> None:

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


# ---------------------------------------------------------------------------------------------
# Columnar batches
# ---------------------------------------------------------------------------------------------

HEADER = (1, 7, 1_700_000_000_000, 0)   # controller id, epoch, timestamp, cause offset of each batch
TOPICS = tuple(f"topic-{i:03d}" for i in range(50))


def make_columns(cls, rows: int, batch: int, seed: int = 1) -> list[dict]:
    """Body columns of ``rows`` records of ``cls`` in batches of ``batch`` rows, as numpy arrays
    in the dtypes a controller would hold them (topics as dictionary codes, lists as offsets + values)."""
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        cols = {"topic": DictColumn(TOPICS, rng.integers(0, len(TOPICS), n, dtype=np.int32)),
                "partition": rng.integers(0, 64, n, dtype=np.int32)}
        if cls is ReplicaTransition:
            cols.update(replica=rng.integers(0, 6, n, dtype=np.int32), from_state=np.full(n, 2, np.uint8),
                        to_state=rng.integers(1, 8, n, dtype=np.uint8))
        else:
            offsets = np.arange(0, 3 * n + 1, 3, dtype=np.int32)          # three replicas each
            replicas = rng.integers(0, 6, 3 * n, dtype=np.int32)
            isr_offsets = np.arange(0, 2 * n + 1, 2, dtype=np.int32)      # two in the ISR
            isr = rng.integers(0, 6, 2 * n, dtype=np.int32)
            cols.update(from_state=np.full(n, 1, np.uint8), to_state=np.full(n, 2, np.uint8),
                        replicas=ListColumn(offsets, replicas), leader=replicas[::3].copy(),
                        leader_epoch=rng.integers(0, 100, n, dtype=np.int32), isr=ListColumn(isr_offsets, isr),
                        partition_epoch=rng.integers(0, 1000, n, dtype=np.int32), recovery_state=np.zeros(n, np.uint8),
                        election=np.full(n, 2, np.uint8))
        out.append(cols)
    return out


def write_columns(directory: str, cls, batches: list[dict]) -> int:
    shutil.rmtree(directory, ignore_errors=True)
    rows = 0
    with LogWriter(directory, fsync=FsyncPolicy.none()) as writer:
        for cols in batches:
            batch = ColumnBatch.from_columns(cls, writer.next_offset, HEADER, **cols)
            writer.append_columns(batch)
            rows += len(batch)
    return rows


def read_columns(directory: str) -> int:
    rows = 0
    for batch in LogReader(directory).column_batches():
        batch.columns   # the arrays, as decoded
        rows += len(batch)
    return rows


def read_columns_to_arrow(directory: str) -> int:
    return sum(batch.to_arrow().num_rows for batch in LogReader(directory).column_batches())


def arrow_batch(pa, cols: dict):
    arrays, names = [], []
    for name, c in cols.items():
        if isinstance(c, DictColumn):
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(c.codes), pa.array(c.dictionary, pa.string())))
        elif isinstance(c, ListColumn):
            arrays.append(pa.ListArray.from_arrays(pa.array(c.offsets), pa.array(c.values)))
        else:
            arrays.append(pa.array(c))
        names.append(name)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def write_arrow(path: str, batches: list[dict]) -> int:
    import pyarrow as pa
    rows = 0
    with pa.OSFile(path, "wb") as sink:
        writer = None
        for cols in batches:
            rb = arrow_batch(pa, cols)
            if writer is None:
                writer = pa.ipc.new_stream(sink, rb.schema)
            writer.write_batch(rb)
            rows += rb.num_rows
        writer.close()
    return rows


def read_arrow(path: str) -> int:
    import pyarrow as pa
    rows = 0
    with pa.OSFile(path, "rb") as source:
        for rb in pa.ipc.open_stream(source):
            rb.columns   # the arrays, as read
            rows += rb.num_rows
    return rows


def bench_columns(args) -> None:
    n, k, repeat = args.column_rows, args.column_batch, args.repeat
    print(f"\ncolumnar batches: {n:,} rows per kind in batches of {k:,} rows; best of {repeat} runs, "
          "FsyncPolicy.none(); pyarrow baseline: the same columns as an Arrow IPC stream file")
    compare_encodings()
    parent = tempfile.mkdtemp(prefix="bench-columns-", dir=args.dir)
    try:
        for cls in (ReplicaTransition, PartitionTransition):
            batches = make_columns(cls, n, k)
            directory, arrow_path = os.path.join(parent, "log"), os.path.join(parent, "stream.arrows")
            print(f"{cls.__name__} ({', '.join(batches[0])}):")
            w = measure("  log write (columns)", functools.partial(write_columns, directory, cls, batches), repeat,
                        "rows")
            r = measure("  log read (columns)", functools.partial(read_columns, directory), repeat, "rows")
            ra = measure("  log read -> Arrow", functools.partial(read_columns_to_arrow, directory), repeat, "rows")
            aw = measure("  pyarrow IPC write", functools.partial(write_arrow, arrow_path, batches), repeat, "rows")
            ar = measure("  pyarrow IPC read", functools.partial(read_arrow, arrow_path), repeat, "rows")
            assert w[0] == r[0] == ra[0] == aw[0] == ar[0] == n
            log_bytes = sum(os.path.getsize(p) for p, _ in LogReader(directory).segments())
            arrow_bytes = os.path.getsize(arrow_path)
            both, arrow_both = _round_trip(w[1], r[1]), _round_trip(aw[1], ar[1])
            both_arrow = _round_trip(w[1], ra[1])
            print(f"  write + read back as columns: log {both / 1e6:.2f} M rows/s (to Arrow: {both_arrow / 1e6:.2f}), "
                  f"pyarrow {arrow_both / 1e6:.2f} M rows/s; ratio log/pyarrow: write {w[1] / aw[1]:.2f}, "
                  f"read {r[1] / ar[1]:.2f} (to Arrow {ra[1] / ar[1]:.2f}), write + read {both / arrow_both:.2f} "
                  f"(to Arrow {both_arrow / arrow_both:.2f})")
            print(f"  size: log {log_bytes / n:.1f} bytes/row, Arrow IPC {arrow_bytes / n:.1f} bytes/row")
            del batches
    finally:
        shutil.rmtree(parent)


def _round_trip(write_rate: float, read_rate: float) -> float:
    """Rows per second of writing then reading the rows once (the harmonic combination)."""
    return 1 / (1 / write_rate + 1 / read_rate)


def compare_encodings(rows: int = 100_000, repeat: int = 7) -> None:
    """A ReplicaTransition batch's four int columns (the topic codes too) as msgpack bin (the format's choice)
    vs msgpack arrays of ints: encode + decode to numpy arrays."""
    cols = make_columns(ReplicaTransition, rows, rows)[0]
    arrays = [cols["topic"].codes, cols["partition"], cols["replica"], cols["from_state"], cols["to_state"]]

    def as_bin():
        data = msgpack.packb([[a.dtype.str, memoryview(a)] for a in arrays])
        return [np.frombuffer(buf, dtype) for dtype, buf in msgpack.unpackb(data)], len(data)

    def as_array():
        data = msgpack.packb([a.tolist() for a in arrays])
        return [np.array(values, a.dtype) for values, a in zip(msgpack.unpackb(data), arrays)], len(data)
    for name, f in (("msgpack bin", as_bin), ("msgpack array of ints", as_array)):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            decoded, size = f()
            times.append(time.perf_counter() - t)
        assert all(np.array_equal(a, b) for a, b in zip(decoded, arrays))
        print(f"  column encoding, {name:22s}: encode + decode {rows / min(times) / 1e6:7.2f} M rows/s, "
              f"{size / rows:.1f} bytes/row ({len(arrays)} int columns, {rows:,} rows)")


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


def measure(what: str, run, repeat: int, unit: str = ""):
    """Run ``run`` (returning a count) ``repeat`` times and print the best rate; returns the count, or
    (count, best rate) when ``unit`` names what is counted."""
    rates = []
    for _ in range(repeat):
        t = time.perf_counter()
        n = run()
        rates.append(n / (time.perf_counter() - t))
    runs = ", ".join(f"{r / 1e6:.2f}" for r in rates)
    print(f"{what:30s} {max(rates) / 1e6:6.2f} M {unit or 'records'}/s  (runs: {runs})")
    return (n, max(rates)) if unit else n


if __name__ == "__main__":
    main()
