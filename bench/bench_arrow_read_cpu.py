"""CPU time of reading our event logs into Arrow (``audit.spark_source.arrow_batches``), and digests of the rows.

Run: .venv/bin/python bench/bench_arrow_read_cpu.py [LOG_DIR_OR_GLOB ...] [--repeat 3] [--dictionary] [--digest]
     [--tuples]

Default logs: out/bench-audit-full/columnar-18607505/run-* (bench_audit_duckdb.py --transitions 10000000 writes
them: 10 M transitions, 18.6 M records, 19 logs as the controller writes them now). Times are CPU seconds of this
process (``time.process_time``), not wall time: the machine is shared, and the reading is single-threaded.

- ``arrow``: every segment through ``arrow_batches`` (what a Spark task runs), rows counted (best of --repeat);
  with ``--dictionary`` string columns dictionary-encoded (what the columnar engine reads).
- ``--tuples``: also the in-process reader's ``read_log_rows`` (AuditRow tuples).
- ``--digest``: sha256 of the rows, to compare before/after a change that must not change them: the Arrow
  rows stably sorted by (run_id, source, seq) (the order across Arrow batches is not part of the contract;
  the rows of one record keep their order), and with ``--tuples`` the AuditRow tuples in log order.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT = "out/bench-audit-full/columnar-18607505/run-*"


def read_arrow(refs, keep: bool, dictionary: bool = False):
    from audit.spark_source import arrow_batches
    rows, batches = 0, []
    for ref in refs:
        for b in arrow_batches(ref, dictionary=dictionary):
            rows += b.num_rows
            if keep:
                batches.append(b)
    return rows, batches


def arrow_digest(batches) -> str:
    import pyarrow as pa
    import pyarrow.compute as pc
    table = pa.Table.from_batches(batches).combine_chunks()
    order = pc.sort_indices(table, sort_keys=[("run_id", "ascending"), ("source", "ascending"),
                                              ("seq", "ascending")])
    table = table.take(order)
    h = hashlib.sha256()
    step = 200_000
    for start in range(0, table.num_rows, step):
        for row in table.slice(start, step).to_pylist():
            h.update(repr(tuple(row.values())).encode())
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=[DEFAULT])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--tuples", action="store_true")
    parser.add_argument("--dictionary", action="store_true", help="string columns dictionary-encoded (what the "
                        "columnar engine reads)")
    args = parser.parse_args()
    from audit.log_rows import discover_segments, read_log_rows
    paths = [p for pattern in args.paths for p in (sorted(glob.glob(pattern)) or [pattern]) if os.path.isdir(p)]
    refs = discover_segments(paths)
    size = sum(os.path.getsize(r.file) for r in refs)
    print(f"{len(paths)} logs, {len(refs)} segments, {size / 2**20:.0f} MiB")
    read_arrow(refs, False, args.dictionary)   # warm the page cache
    best = None
    for _ in range(args.repeat):
        t = time.process_time()
        rows, _ = read_arrow(refs, False, args.dictionary)
        cpu = time.process_time() - t
        best = cpu if best is None else min(best, cpu)
        print(f"arrow{' (dictionary)' if args.dictionary else ''}  {rows:>12,} rows  {cpu:7.2f} s CPU")
    print(f"arrow best {best:.2f} s CPU, {rows / best / 1e6:.2f} M rows/s")
    if args.tuples:
        t = time.process_time()
        n = sum(1 for _ in read_log_rows(paths))
        print(f"tuples  {n:>12,} rows  {time.process_time() - t:7.2f} s CPU")
    if args.digest:
        _, batches = read_arrow(refs, True)
        print(f"arrow digest  {arrow_digest(batches)}")
        del batches
        if args.tuples:
            h = hashlib.sha256()
            for row in read_log_rows(paths):
                h.update(repr(tuple(row)).encode())
            print(f"tuples digest {h.hexdigest()}")


if __name__ == "__main__":
    main()
