"""Benchmark of the whole audit (read + every check + report) of our event logs: in process and on Spark.

Run: .venv/bin/python bench/bench_audit.py [--transitions 10000000] [--masters local[2] local[1]]
     [--engines local spark] [--data-dir out/bench-audit-full] [--sizes 300000 1000000 3000000]
     [--conf spark.driver.memory=8g ...]

Data: the runs of bench/bench_audit_read.py (state machines of six brokers, two of which fail), about
1 M records per log directory, cached under --data-dir/<records>/. --transitions is the number of
replica and partition transitions wanted; the records needed for it are estimated from a small run.

Timed, each in a fresh Python process so that nothing is warm but the page cache:
- local: ``audit.runner.run_audit(dirs, engine="local")`` — read, check, report;
- spark (per master): ``total s`` from before the session is built to the report (what a user waits
  for), ``session s`` to build it, ``audit s`` the rest; the rate is transitions per audit second.
--sizes runs both engines at smaller inputs too, to find where Spark overtakes the in-process engine.
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
sys.path.insert(0, os.path.join(ROOT, "bench"))


def transitions_per_record() -> float:
    from audit.log_rows import ReadStats, read_log_rows
    from bench_audit_read import generate
    dirs = generate(os.path.join(ROOT, "out", "bench-audit-calibrate"), 100_000, 8 << 20)
    stats = ReadStats()
    n = sum(1 for r in read_log_rows(dirs, stats) if r.kind in ("replica_transition", "partition_transition"))
    return n / stats.records


def child(engine: str, master: str | None, dirs: list[str], conf: dict) -> dict:
    t0 = time.perf_counter()
    session = 0.0
    if engine == "spark":
        from audit.spark_session import spark_session
        spark_session(master, app_name="bench-audit", conf=conf)
        session = time.perf_counter() - t0
    from audit.runner import run_audit
    t1 = time.perf_counter()
    result = run_audit(dirs, engine=engine, master=master, limit=1000, conf=conf)
    end = time.perf_counter()
    s = result.report.summary
    return {"engine": engine, "master": master, "total": end - t0, "session": session, "audit": end - t1,
            "rows": s["rows"], "transitions": s["transitions"], "violations": s["violations"],
            "findings": s["findings"], "bytes": sum(i.bytes for i in result.inputs)}


def run_child(engine: str, master: str | None, dirs: list[str], conf: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, master or "-", json.dumps(conf), *dirs]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        errors = [line for line in out.stderr.splitlines() if "Error" in line or "Exception" in line][:5]
        raise RuntimeError(f"{engine} {master}: " + "\n".join(errors) + "\n" + out.stderr[-2000:])
    return json.loads(lines[-1][len("RESULT "):])


def show(r: dict) -> None:
    rate = r["transitions"] / r["audit"] if r["audit"] else 0
    where = r["engine"] + (f" {r['master']}" if r["master"] else "")
    print(f"  {where:<16} {r['transitions']:>11,} transitions {r['rows']:>11,} rows {r['bytes'] / 2**20:>8.0f} MiB  "
          f"total {r['total']:7.1f} s  session {r['session']:5.1f} s  audit {r['audit']:7.1f} s  "
          f"{rate:>10,.0f} transitions/s (audit)  {r['transitions'] / r['total']:>10,.0f} /s (total)", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        engine, master, conf, dirs = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5:]
        print("RESULT " + json.dumps(child(engine, None if master == "-" else master, dirs, conf)), flush=True)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--transitions", type=int, default=10_000_000)
    ap.add_argument("--sizes", type=int, nargs="*", default=[], help="smaller inputs (transitions) for the crossover")
    ap.add_argument("--engines", nargs="+", default=["local", "spark"])
    ap.add_argument("--masters", nargs="+", default=["local[2]", "local[1]"])
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "out", "bench-audit-full"))
    ap.add_argument("--segment-mb", type=int, default=32)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark properties")
    args = ap.parse_args()

    from bench_audit_read import generate
    conf = dict(item.split("=", 1) for item in args.conf)
    ratio = transitions_per_record()
    print(f"# {ratio:.3f} transitions per record; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    for n in [*args.sizes, args.transitions]:
        records = int(n / ratio)
        dirs = generate(os.path.join(args.data_dir, str(records)), records, args.segment_mb << 20)
        print(f"## about {n:,} transitions ({records:,} records, {len(dirs)} log dirs)", flush=True)
        if "local" in args.engines:
            show(run_child("local", None, dirs, conf))
        if "spark" in args.engines:
            for master in args.masters:
                show(run_child("spark", master, dirs, conf))


if __name__ == "__main__":
    main()
