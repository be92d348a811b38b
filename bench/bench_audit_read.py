"""Benchmark of the audit's readers of our event logs: in process and on Spark (local[1], local[2]).

Run: .venv/bin/python bench/bench_audit_read.py [--records 1000000 10000000] [--data-dir out/bench-audit]
     [--segment-mb 8] [--repeat 3] [--masters local[1] local[2]] [--arrow] [--columnar]

Data: transition-heavy runs of the state machines (controller.state_machine_harness.run_scripted:
topic creation, then two of six brokers fail), one log directory per ~1 M records, written once
with FsyncPolicy.none() and small segments (--segment-mb) so that Spark has one input partition
per segment, and kept under --data-dir/<N>/ for the next run. About 57% of the records map to
audit rows; the rest (requests, UpdateMetadata partitions, broker inputs) are read, checked and
skipped.

With --columnar the runs are written as the controller writes them now: its transitions as columnar batches
(``events.columns.ColumnBatch``, through the journal's column sink) instead of one record at a time; kept
under --data-dir/columnar-<N>/.

Timed, all reading from the page cache (the files were just written or read):
- local: ``audit.log_rows.read_log_rows`` over all the directories, rows counted (best of --repeat);
- with --arrow: ``audit.spark_source.arrow_batches`` over every segment in process (what each Spark task
  runs, without Spark), row batches through the vectorised decoder (``arrow``) and through record tuples
  (``arrow, tuples``: the decoder's fallback, the reader before it);
- Spark: a fresh Python process per master starts a session (``session s``), then
  ``read_logs_df(...).count()`` once (``cold count s``: first job, Python workers start) and
  --repeat more times (``warm count s``: the best).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RECORDS_PER_DIR = 1_000_000
RECORDS_PER_PARTITION = 18.1   # what run_scripted writes per partition with brokers=6, kill=(1, 2)


def generate(directory: str, records: int, segment_bytes: int, columnar: bool = False) -> list[str]:
    """Log directories under ``directory`` holding about ``records`` records (cached); with ``columnar``
    the state machines' columnar batches are written as such."""
    from functools import partial

    import controller.state_machine_harness as harness
    from controller.state_machine_harness import ScriptSpec, run_scripted
    from events.journal import Journal
    from events.log import FsyncPolicy, LogWriter
    marker = os.path.join(directory, "complete.json")
    if os.path.exists(marker):
        with open(marker) as f:
            info = json.load(f)
        if info.get("segment_bytes") == segment_bytes:
            return [os.path.join(directory, d) for d in info["dirs"]]
    dirs, left, i = [], records, 0
    t = time.perf_counter()
    while left > 0:
        n = min(left, RECORDS_PER_DIR)
        name = f"run-{i:03d}"
        path = os.path.join(directory, name)
        if os.path.exists(path):
            for entry in os.listdir(path):
                os.remove(os.path.join(path, entry))
        with LogWriter(path, fsync=FsyncPolicy.none(), segment_bytes=segment_bytes) as writer:
            if columnar:  # run_scripted builds its own journal: give it one with the writer's column sink
                harness.Journal = partial(Journal, column_sink=writer.append_columns)
            try:
                run_scripted(ScriptSpec(brokers=6, partitions=max(1, round(n / RECORDS_PER_PARTITION)),
                                        kill=(1, 2), seed=i), writer.append)
            finally:
                harness.Journal = Journal
        dirs.append(name)
        left -= n
        i += 1
    with open(marker, "w") as f:
        json.dump({"dirs": dirs, "segment_bytes": segment_bytes}, f)
    print(f"  generated {len(dirs)} log(s) in {directory} in {time.perf_counter() - t:.1f} s", flush=True)
    return [os.path.join(directory, d) for d in dirs]


def time_local(dirs: list[str], repeat: int) -> dict:
    from audit.log_rows import ReadStats, read_log_rows
    best = None
    for _ in range(repeat):
        stats = ReadStats()
        t, cpu = time.perf_counter(), time.process_time()
        rows = sum(1 for _ in read_log_rows(dirs, stats))
        elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
        if best is None or elapsed < best[0]:
            best = (elapsed, cpu, rows, stats)
    elapsed, cpu, rows, stats = best
    return {"seconds": elapsed, "cpu": cpu, "rows": rows, "records": stats.records, "segments": stats.segments,
            "bytes": stats.bytes}


def time_arrow(dirs: list[str], repeat: int, vectorised: bool) -> dict:
    from audit.log_rows import ReadStats, discover_segments
    from audit.spark_source import arrow_batches
    refs = discover_segments(dirs)
    best = None
    for _ in range(repeat):
        stats = ReadStats()
        t, cpu = time.perf_counter(), time.process_time()
        rows = sum(b.num_rows for ref in refs for b in arrow_batches(ref, stats=stats, vectorised=vectorised))
        elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
        if best is None or elapsed < best[0]:
            best = (elapsed, cpu, rows, stats)
    elapsed, cpu, rows, stats = best
    return {"seconds": elapsed, "cpu": cpu, "rows": rows, "records": stats.records, "segments": stats.segments,
            "bytes": stats.bytes}


def spark_child(master: str, dirs: list[str], repeat: int) -> dict:
    """Runs in a fresh process: session start, a cold count, ``repeat`` warm counts."""
    t = time.perf_counter()
    from pyspark.sql import SparkSession

    from audit.spark_source import read_logs_df
    spark = (SparkSession.builder.master(master).appName("bench-audit-read")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    session = time.perf_counter() - t
    t = time.perf_counter()
    df = read_logs_df(spark, dirs)
    rows = df.count()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(repeat):
        t = time.perf_counter()
        assert read_logs_df(spark, dirs).count() == rows
        warm.append(time.perf_counter() - t)
    partitions = df.rdd.getNumPartitions()
    spark.stop()
    return {"session": session, "cold": cold, "warm": min(warm) if warm else None, "warm_runs": warm,
            "rows": rows, "partitions": partitions}


def time_spark(master: str, dirs: list[str], repeat: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--spark-child", master, "--repeat", str(repeat),
           "--dirs", *dirs]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"Spark run on {master} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--data-dir", default=os.path.join("out", "bench-audit"))
    parser.add_argument("--segment-mb", type=float, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="local runs and warm Spark counts; the best is reported")
    parser.add_argument("--masters", nargs="*", default=["local[1]", "local[2]"])
    parser.add_argument("--arrow", action="store_true", help="also time arrow_batches in process (both decoders)")
    parser.add_argument("--columnar", action="store_true", help="write the transitions as columnar batches")
    parser.add_argument("--spark-child", help=argparse.SUPPRESS)
    parser.add_argument("--dirs", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.spark_child:
        print(json.dumps(spark_child(args.spark_child, args.dirs, args.repeat)))
        return

    segment_bytes = int(args.segment_mb * 2**20)
    print(f"cpus: {os.cpu_count()}, segments of {args.segment_mb:g} MiB, best of {args.repeat}", flush=True)
    table = []
    for n in args.records:
        name = f"columnar-{n}" if args.columnar else str(n)
        dirs = generate(os.path.join(args.data_dir, name), n, segment_bytes, args.columnar)
        local = time_local(dirs, args.repeat)
        print(f"  {n:,}: local done in {local['seconds']:.2f} s", flush=True)
        table.append((n, "in process", local, None, os.getloadavg()[0]))
        if args.arrow:
            for label, vectorised in (("arrow", True), ("arrow, tuples", False)):
                result = time_arrow(dirs, args.repeat, vectorised)
                if result["rows"] != local["rows"]:
                    raise SystemExit(f"arrow_batches gave {result['rows']} rows, the local reader {local['rows']}")
                print(f"  {n:,}: {label} done in {result['seconds']:.2f} s", flush=True)
                table.append((n, label, result, None, os.getloadavg()[0]))
        for master in args.masters:
            result = time_spark(master, dirs, args.repeat)
            if result["rows"] != local["rows"]:
                raise SystemExit(f"Spark counted {result['rows']} rows, the local reader {local['rows']}")
            print(f"  {n:,}: {master} done (warm {result['warm']:.2f} s)", flush=True)
            table.append((n, master, local, result, os.getloadavg()[0]))

    print()
    print(f"{'records':>11} {'rows':>10} {'segs':>5} {'reader':>13} {'session s':>10} {'cold count s':>13} "
          f"{'warm s':>7} {'M records/s':>12} {'M rows/s':>9}  {'load avg':>8}")
    for n, reader, local, spark, load in table:
        records, rows = local["records"], local["rows"]
        if spark is None:
            seconds, session, cold = local["seconds"], "", ""
        else:
            seconds, session, cold = spark["warm"], f"{spark['session']:.1f}", f"{spark['cold']:.2f}"
        print(f"{records:>11,} {rows:>10,} {local['segments']:>5} {reader:>13} {session:>10} {cold:>13} "
              f"{seconds:>7.2f} {records / seconds / 1e6:>12.2f} {rows / seconds / 1e6:>9.2f}  {load:>8.1f}")
    for n, reader, local, spark, load in table:
        if spark is None:
            print(f"{reader}, {local['records']:,} records: {local['cpu']:.2f} s of CPU "
                  f"({local['records'] / local['cpu'] / 1e6:.2f} M records/s, {local['rows'] / local['cpu'] / 1e6:.2f} "
                  "M rows/s per core)")
    print("load avg: the 1-minute load average after the measurement (this machine has "
          f"{os.cpu_count()} cores; anything above that means other work competed for them)")


if __name__ == "__main__":
    main()
