"""Where the Spark audit's time goes: each step timed on its own, with the session warm.

Run: .venv/bin/python bench/bench_audit_steps.py [--records 1860750] [--master local[2]] [--repeat 2]

Data: bench/bench_audit_read.py's runs (the same as bench_audit.py's, cached under out/bench-audit-full/<records>/).
Steps, each forced with ``write.format("noop")`` (or a collect) and timed on the last of ``--repeat`` rounds
(the first round also compiles Spark's generated code):
- read: the Python Data Source alone, no check;
- persist: reading and persisting the numbered rows (what the engine does first);
- small tables: the collected elections and create/delete rows, the epoch steps (building the checks);
- then each branch of violations the engine unions (transitions, leaders, last transitions, ...), in the
  order the engine builds them; a branch that reads a persisted projection first pays for building it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_860_750)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from audit import spark_engine
    from audit.rows import COLUMNS, CONTROLLER_ELECTED
    from audit.spark_session import spark_session
    from audit.spark_source import read_logs_df
    from bench_audit_read import generate

    dirs = generate(os.path.join(ROOT, "out", "bench-audit-full", str(args.records)), args.records, 32 << 20)
    spark = spark_session(args.master, app_name="bench-audit-steps")
    rows = read_logs_df(spark, dirs)
    branches = []
    found_by = spark_engine._violations

    def spy(df, *checks):
        out = found_by(df, *checks)
        branches.append(out)
        return out

    spark_engine._violations = spy
    for round_ in range(1, args.repeat + 1):
        times: dict[str, float] = {}
        held = []

        def persisted(df):
            held.append(df.persist(StorageLevel.MEMORY_AND_DISK))
            return df

        def timed(label, action):
            t = time.perf_counter()
            action()
            times[label] = time.perf_counter() - t

        timed("read (Python Data Source, no check)", lambda: rows.write.format("noop").mode("overwrite").save())
        base = persisted(rows.select(*COLUMNS).withColumn("_id", F.monotonically_increasing_id()))
        timed("read and persist the rows", base.count)
        stats = []
        timed("row counts", lambda: stats.extend(base.groupBy("run_id", "kind").agg(
            F.max("controller_epoch").alias("max_epoch")).collect()))
        elections = sorted({r.run_id for r in stats if r.kind == CONTROLLER_ELECTED and (r.max_epoch or -1) >= 0})
        branches.clear()
        found = []
        timed("small tables and epoch steps", lambda: found.append(
            spark_engine._violation_keys(base, elections, len(elections) < len({r.run_id for r in stats}),
                                         persisted)))
        for i, branch in enumerate(list(branches)):
            timed(f"branch {i + 1} of {len(branches)}", lambda: branch.write.format("noop").mode("overwrite").save())
        for df in held:
            df.unpersist()
        print(f"round {round_}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()), flush=True)


if __name__ == "__main__":
    main()
