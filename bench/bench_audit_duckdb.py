"""Benchmark: the audit on DuckDB (audit.duckdb_engine: every check written once as SQL) against the in-process engine.

Run: .venv/bin/python bench/bench_audit_duckdb.py [--transitions 10000000] [--threads 2 1] [--parquet]
     [--data-dir out/bench-audit-full] [--only whole|legality]

The whole audit (``--only whole``, and by default), in one process, each step timed on its own:
- ``duckdb audit, arrow``: audit.duckdb_engine.audit on the Arrow table of the logs (read as below), per --threads;
- with --parquet: ``duckdb audit, parquet``: audit.duckdb_engine.audit_parquet on the export's files (DuckDB
  reads them as it checks; the export is made once and kept under --data-dir);
- ``local audit``: audit.local_engine.audit on the AuditRow tuples (read as below);
and the reports must be equal (violations, findings, summary).

One check alone (``--only legality``, and by default):

Data: bench/bench_audit.py's (the runs of bench_audit_read.py: state machines of six brokers, two of which
fail; about 1 M records per log directory, 32 MiB segments), cached under --data-dir/<records>/.

Timed from the page cache:
- ``arrow read``: every segment's rows as Arrow (audit.spark_source.arrow_batches), one table;
- ``duckdb check``: audit.sql_checks.ILLEGAL_TRANSITIONS_COUNT_SQL on that table (DuckDB scans the Arrow
  table in place), per --threads; and the full query (the violations' rows, as the engine would list them);
- ``tuple read``: the rows as AuditRow tuples (audit.log_rows.read_log_rows: what the local engine reads);
- ``local check``: the legality test of audit.local_engine (the same expression, per row, over the tuples);
- with --parquet: ``kcontroller export`` of the logs (once), then the DuckDB check reading the export's
  Parquet files (read_parquet) instead of the Arrow table.
Both checks must count the same illegal transitions.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import time
from functools import partial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def local_check(rows) -> int:
    """The legality test of audit.local_engine.audit, alone: per transition row, (entity, from, to) in the table."""
    from audit.checks import LEGAL_TRANSITIONS
    from audit.rows import PARTITION_TRANSITION as PT, REPLICA_TRANSITION as RT
    legal = LEGAL_TRANSITIONS
    found = []
    emit = found.append
    for row in rows:
        kind = row[4]
        if kind == RT or kind == PT:
            entity, from_state, to_state = row[8], row[12], row[13]
            if from_state is not None and to_state is not None and (entity, from_state, to_state) not in legal:
                emit(row)
    return len(found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=10_000_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parquet", action="store_true", help="also export to Parquet and check from the files")
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "out", "bench-audit-full"))
    ap.add_argument("--segment-mb", type=int, default=32)
    ap.add_argument("--only", choices=("whole", "legality"), help="the whole audit, or the one check (default both)")
    args = ap.parse_args()
    legality = args.only != "whole"
    whole = args.only != "legality"

    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    from audit.log_rows import discover_segments, read_log_rows
    from audit import duckdb_engine
    from audit.rows import arrow_schema
    from audit.spark_source import arrow_batches
    from audit.sql_checks import ILLEGAL_TRANSITIONS_COUNT_SQL, ILLEGAL_TRANSITIONS_SQL, duckdb_connection, legal_table
    from bench_audit import transitions_per_record
    from bench_audit_read import generate

    ratio = transitions_per_record()
    records = int(args.transitions / ratio)
    dirs = generate(os.path.join(args.data_dir, str(records)), records, args.segment_mb << 20)
    print(f"# {args.transitions:,} transitions wanted: {records:,} records in {len(dirs)} log dirs; "
          f"{os.cpu_count()} cores; duckdb {duckdb.__version__}; load {os.getloadavg()[0]:.1f}", flush=True)

    refs = discover_segments(dirs)
    t = time.perf_counter()
    table = pa.Table.from_batches([b for ref in refs for b in arrow_batches(ref)], schema=arrow_schema())
    arrow_read = time.perf_counter() - t
    transitions = pc.sum(pc.is_in(table["kind"], value_set=pa.array(["replica_transition",
                                                                            "partition_transition"]))).as_py()
    print(f"arrow read      {arrow_read:7.2f} s  {table.num_rows:,} rows ({transitions:,} transitions), "
          f"{table.nbytes / 2**20:,.0f} MiB", flush=True)
    duck = {}
    reports = {}
    for threads in args.threads if whole else ():
        seconds, report = best(partial(duckdb_engine.audit, table, threads=threads), 1)
        reports[f"duckdb arrow {threads}"] = report
        print(f"duckdb audit, arrow {seconds:7.2f} s  threads={threads}: {_verdict(report)} "
              f"({transitions / seconds:,.0f} transitions/s; + arrow read {arrow_read + seconds:.1f} s)", flush=True)
    if legality:
        for threads in args.threads:
            con = duckdb_connection(table, threads=threads)
            seconds, count = best(lambda: con.sql(ILLEGAL_TRANSITIONS_COUNT_SQL).fetchall()[0][0], args.repeat)
            full, listed = best(lambda: con.sql(ILLEGAL_TRANSITIONS_SQL).to_arrow_table().num_rows, args.repeat)
            assert listed == count
            duck[threads] = (seconds, count)
            print(f"duckdb check    {seconds:7.3f} s  threads={threads}: {count} illegal "
                  f"({transitions / seconds:,.0f} transitions/s); the violations' rows: {full:.3f} s", flush=True)
            con.close()
        # The rows loaded once into DuckDB's own storage (what an engine running every check would do), then the check.
        con = duckdb.connect()
        con.execute(f"SET threads = {args.threads[0]}")
        con.register("arrow_rows", table)
        t = time.perf_counter()
        con.execute("CREATE TABLE audit_rows AS SELECT * FROM arrow_rows")
        load = time.perf_counter() - t
        con.register("legal", legal_table())
        seconds, count = best(lambda: con.sql(ILLEGAL_TRANSITIONS_COUNT_SQL).fetchall()[0][0], args.repeat)
        duck["native"] = (seconds, count)
        print(f"duckdb load     {load:7.3f} s  the Arrow table into a DuckDB table (threads={args.threads[0]})\n"
              f"duckdb check    {seconds:7.3f} s  on the DuckDB table: {count} illegal "
              f"({transitions / seconds:,.0f} transitions/s)", flush=True)
        con.close()

    del table
    gc.collect()

    if args.parquet:
        from audit.export import export_parquet
        from audit.export import MANIFEST, find_parquet_runs
        out = os.path.join(args.data_dir, f"{records}-parquet")
        if not os.path.isfile(os.path.join(out, MANIFEST)):
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            export_parquet(dirs, out)
            exported = time.perf_counter() - t
            print(f"export          {exported:7.2f} s", flush=True)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
        files = [f for run in find_parquet_runs(out) for f in run.files]
        print(f"parquet                    {size / 2**20:,.0f} MiB in {len(files)} files ({out})", flush=True)
        for threads in args.threads if whole else ():
            seconds, report = best(lambda: duckdb_engine.audit_parquet(files, threads=threads), 1)
            reports[f"duckdb parquet {threads}"] = report
            print(f"duckdb audit, parquet {seconds:7.2f} s  threads={threads}: {_verdict(report)} "
                  f"({transitions / seconds:,.0f} transitions/s)", flush=True)
        for threads in args.threads if legality else ():
            con = duckdb.connect()
            con.execute(f"SET threads = {threads}")
            con.execute(f"CREATE VIEW audit_rows AS SELECT * FROM read_parquet('{out}/*/*.parquet')")
            con.register("legal", legal_table())
            seconds, count = best(lambda: con.sql(ILLEGAL_TRANSITIONS_COUNT_SQL).fetchall()[0][0], args.repeat)
            print(f"duckdb parquet  {seconds:7.3f} s  threads={threads}: {count} illegal (read + check)", flush=True)
            con.close()

    t = time.perf_counter()
    rows = list(read_log_rows(dirs))
    tuple_read = time.perf_counter() - t
    print(f"tuple read      {tuple_read:7.2f} s  {len(rows):,} rows", flush=True)
    gc.freeze()   # the rows are long-lived: keep the collector from traversing them during the check
    if whole:
        from audit.local_engine import audit as local_audit
        seconds, expected = best(lambda: local_audit(rows), 1)
        print(f"local audit     {seconds:7.2f} s  {_verdict(expected)} ({transitions / seconds:,.0f} transitions/s; "
              f"+ tuple read {tuple_read + seconds:.1f} s)", flush=True)
        for name, report in reports.items():
            assert report == expected, f"{name} disagrees with the local engine"
        print(f"every engine's report equals the local engine's ({len(reports)} compared)", flush=True)
    if legality:
        seconds, count = best(lambda: local_check(rows), args.repeat)
        print(f"local check     {seconds:7.3f} s  {count} illegal ({transitions / seconds:,.0f} transitions/s)",
              flush=True)
        assert all(c == count for _, c in duck.values()), (duck, count)
        d = duck["native"][0]
        print(f"\ncheck alone: local {seconds:.3f} s, duckdb ({args.threads[0]} threads, own table) {d:.3f} s: "
              f"{seconds / d:.1f}x; read + check: local {tuple_read + seconds:.1f} s, "
              f"arrow + load + duckdb {arrow_read + load + d:.1f} s: "
              f"{(tuple_read + seconds) / (arrow_read + load + d):.1f}x")


def _verdict(report) -> str:
    s = report.summary
    return f"{s['violations']} violations, {s['findings']} findings in {s['rows']:,} rows"

if __name__ == "__main__":
    main()
