"""Benchmark: state folds as SQL (audit.state_fold) on DuckDB in process and on Spark, at 1 M and 10 M rows.

Run: .venv/bin/python bench/bench_fold.py [--transitions 1000000 10000000] [--engines duckdb spark]
     [--threads 2] [--master local[2]] [--data-dir out/bench-audit-full]

Data: bench_audit_duckdb.py's (bench_audit_read.generate: state machines of six brokers, two of which fail; ~1 M
records per log directory), cached under --data-dir/<records>/, and its Parquet export (``kcontroller export``) in
--data-dir/<records>-parquet/ (made here when missing).

Timed, each on its own, with the bound at the end of every run (the final state) and, separately, the timelines:
- ``duckdb parquet``: the fold on DuckDB reading the export (read_parquet; what ``kcontroller fold EXPORT`` does);
- ``duckdb logs``: the same from the event logs: rows to Arrow, into a DuckDB table, then the fold
  (``kcontroller fold LOG_DIR...``);
- ``spark parquet``: on Spark (``--master``, default local[2]) reading the export; the session's start-up is
  timed apart. Spark's tables must equal DuckDB's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

END = 1 << 62   # a bound past every run's end: the final state


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--engines", nargs="+", default=["duckdb", "spark"], choices=["duckdb", "spark"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-logs", action="store_true", help="DuckDB from the Parquet export only")
    ap.add_argument("--no-timelines", action="store_true", help="time the state alone")
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "out", "bench-audit-full"))
    ap.add_argument("--segment-mb", type=int, default=32)
    args = ap.parse_args()

    import duckdb

    from audit.export import export_parquet, find_parquet_runs
    from audit.state_fold import Bound, _duckdb_connection, duckdb_fold, spark_fold
    from bench_audit import transitions_per_record
    from bench_audit_read import generate

    ratio = transitions_per_record()
    bound = Bound("time", END)
    spark = None
    print(f"# {os.cpu_count()} cores; duckdb {duckdb.__version__}; load {os.getloadavg()[0]:.1f}", flush=True)
    for wanted in args.transitions:
        records = int(wanted / ratio)
        dirs = generate(os.path.join(args.data_dir, str(records)), records, args.segment_mb << 20)
        export = os.path.join(args.data_dir, f"{records}-parquet")
        if not os.path.isdir(export):
            export_parquet(dirs, export)
        files = [os.path.abspath(f) for run in find_parquet_runs(export) for f in run.files]
        con = _duckdb_connection([], files, args.threads)
        rows = con.sql("SELECT count(*) FROM audit_rows").fetchall()[0][0]
        print(f"## {rows:,} rows in {len(dirs)} runs ({wanted:,} transitions wanted); load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        results = {}
        if "duckdb" in args.engines:
            s, state = timed(lambda: duckdb_fold(con, bound))
            t, both = timed(lambda: duckdb_fold(con, bound, timelines=True))
            results["duckdb"] = both
            print(f"duckdb parquet  state {s:7.2f} s ({state.state.num_rows:,} partitions, {rows / s:,.0f} rows/s); "
                  f"with timelines {t:7.2f} s ({both.offline.num_rows:,} offline intervals, "
                  f"{both.leader_changes.num_rows:,} leader changes); threads={args.threads}", flush=True)
            if not args.no_logs:
                def from_logs():
                    c = _duckdb_connection(dirs, [], args.threads)
                    try:
                        return duckdb_fold(c, bound)
                    finally:
                        c.close()
                s, _ = timed(from_logs)
                print(f"duckdb logs     state {s:7.2f} s (read the logs into DuckDB, then fold)", flush=True)
        con.close()
        if "spark" in args.engines:
            from audit.rows import COLUMNS, SPARK_DDL
            from audit.spark_session import spark_session
            if spark is None:
                s, spark = timed(lambda: spark_session(args.master, app_name="bench-fold"))
                print(f"spark start     {s:7.2f} s  master {args.master}", flush=True)
            df = spark.read.schema(SPARK_DDL).parquet(*files).select(*COLUMNS)
            s, state = timed(lambda: spark_fold(df, bound))
            print(f"spark parquet   state {s:7.2f} s ({rows / s:,.0f} rows/s)", flush=True)
            if args.no_timelines:
                continue
            t, both = timed(lambda: spark_fold(df, bound, timelines=True))
            print(f"spark parquet   with timelines {t:7.2f} s", flush=True)
            if "duckdb" in results:
                for name in ("state", "offline", "leader_changes"):
                    assert getattr(both, name).equals(getattr(results["duckdb"], name)), name
                print("spark = duckdb  (the three tables are equal)", flush=True)


if __name__ == "__main__":
    main()
