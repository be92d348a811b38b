"""Benchmark: replay of many small sweep logs (``kcontroller replay DIR``), in process against on Spark.

Run: .venv/bin/python bench/bench_replay_many.py [--logs 50] [--master 'local[2]'] [--scenario FILE]
     [--out out/bench-replay-many] [--warm 2]

Data: a local sweep of --scenario (default examples/sweeps/unclean-election-placement.yaml, 150 s simulated per
run) with --logs seeds, made once and kept in --out. Timed, each on its own:
- ``local``: kcontroller.replay_many.replay_local over the logs, one after another in this process;
- ``spark session``: starting the session (spark_session(--master));
- ``spark, first job``: replay_spark over the logs, one task per log (ships the packages, starts the Python
  workers);
- ``spark, warm``: the same again on the running session (best of 2).
All must give the same verdicts, every log ``same``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=50)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--scenario", default=os.path.join(ROOT, "examples", "sweeps", "unclean-election-placement.yaml"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench-replay-many"))
    ap.add_argument("--warm", type=int, default=2, help="warm Spark runs, the best one reported (default: 2)")
    args = ap.parse_args()

    from kcontroller.logging_setup import configure_logging
    from kcontroller.replay_many import find_logs, replay_local, replay_spark
    from kcontroller.sweep import run_sweep
    from sim.scenario import load_scenario
    configure_logging("critical")

    data = os.path.join(args.out, str(args.logs))
    if not os.path.isdir(data):
        run_sweep(load_scenario(args.scenario), data, list(range(1, args.logs + 1)), engine="local")
    logs = find_logs([data]).logs
    print(f"# {len(logs)} logs of {args.scenario} in {data}; CPython {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")

    t = time.perf_counter()
    local = replay_local(logs)
    local_s = time.perf_counter() - t
    assert all(v["verdict"] == "same" for v in local), [v for v in local if v["verdict"] != "same"][:1]
    records = sum(v["records"] for v in local)
    print(f"local:             {local_s:7.2f} s  {1000 * local_s / len(logs):7.1f} ms/log  "
          f"({records} records, {records / local_s:,.0f} records/s)")

    from audit.spark_session import spark_session
    t = time.perf_counter()
    spark = spark_session(args.master, app_name="bench replay many")
    start_s = time.perf_counter() - t
    print(f"spark session:     {start_s:7.2f} s  ({spark.sparkContext.master})")
    t = time.perf_counter()
    first = replay_spark(spark, logs)
    first_s = time.perf_counter() - t
    assert first == local
    print(f"spark, first job:  {first_s:7.2f} s  {1000 * first_s / len(logs):7.1f} ms/log")
    warm = []
    for _ in range(args.warm):
        t = time.perf_counter()
        again = replay_spark(spark, logs)
        warm.append(time.perf_counter() - t)
        assert again == local
    warm_s = min(warm) if warm else float("nan")
    print(f"spark, warm:       {warm_s:7.2f} s  {1000 * warm_s / len(logs):7.1f} ms/log  (best of "
          f"{', '.join(f'{w:.2f}' for w in warm)} s)")
    print(f"spark, whole:      {start_s + first_s:7.2f} s  (session + first job) vs local {local_s:.2f} s")
    spark.stop()


if __name__ == "__main__":
    main()
