"""Benchmark: the audit on Spark, the shared SQL (audit.sql_checks.spark_audit) against the Spark engine's
DataFrame checks (audit.spark_engine.audit), over the same rows.

Run: .venv/bin/python bench/bench_audit_spark_sql.py PARQUET_DIR [--master 'local[2]'] [--repeat 2]

PARQUET_DIR: an export of audit rows (``kcontroller export LOG_DIR... --parquet PARQUET_DIR``; the audit
benchmarks keep theirs under out/bench-audit-full/N-parquet). Each engine runs --repeat times, alternating,
on one session; the first run of each pays its plans' compilation. Both reports must be equal.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parquet", metavar="PARQUET_DIR")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    from audit import spark_engine, sql_checks
    from audit.rows import COLUMNS, SPARK_DDL
    from audit.spark_session import spark_session
    files = sorted(glob.glob(os.path.join(args.parquet, "**", "*.parquet"), recursive=True))
    if not files:
        sys.exit(f"no Parquet files under {args.parquet}")
    spark = spark_session(args.master, app_name="bench audit spark sql")
    rows = spark.read.schema(SPARK_DDL).parquet(*files).select(*COLUMNS)
    print(f"# {rows.count():,} rows in {len(files)} files; {spark.sparkContext.master}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    reports = {}
    for i in range(args.repeat):
        for name, run in (("dataframe", spark_engine.audit), ("sql", sql_checks.spark_audit)):
            t = time.perf_counter()
            reports[name] = run(rows, limit=100)
            print(f"{name:>10} run {i + 1}: {time.perf_counter() - t:7.1f} s")
    assert reports["dataframe"] == reports["sql"], "the engines' reports differ"
    spark.stop()


if __name__ == "__main__":
    main()
