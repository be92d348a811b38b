"""Benchmark: the whole audit of --transitions (10 M) transitions on the columnar engine, in process and on Spark.

Run: .venv/bin/python bench/bench_audit_columnar.py [--transitions 10000000] [--masters 'local[2]' 'local[1]']
     [--threads 2 1] [--local] [--data-dir out/bench-audit-full]

Data: the runs of bench_audit_read.py written as the controller writes them now (its transitions as columnar
batches; state machines of six brokers, two of which fail; about 1 M records per log directory, 32 MiB
segments), cached under --data-dir/columnar-<records>/; their Parquet export (``kcontroller export``) under
--data-dir/columnar-<records>-parquet/.

Timed, each in the same run (wall seconds, and this process's CPU seconds where it does the work):
- ``columnar, logs``: ``run_audit(dirs, engine="columnar")``: reading every log into Arrow (dictionary strings)
  and every check (audit.columnar_engine), per --threads;
- ``columnar, parquet``: the same from the export's Parquet files;
- ``spark <master>``: in a child process (a fresh JVM each): the session's start, then ``run_audit(dirs,
  engine="spark")`` (one task per run: audit.spark_runs), then the same again (warm: "once started");
- ``baseline``: a numpy/pyarrow program doing the core of the work on the export: read the Parquet columns,
  the legality lookup, one packed sort per entity key and the shift that finds each row's predecessor
  (continuity), a running maximum of leader epochs per partition — the floor the engine is measured against;
- with --local: the reference engine (``run_audit(dirs, engine="local")``, row by row) — slow.
Every report must equal the first one (violations, findings, summary).
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


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def key_of(report) -> tuple:
    return report.violations, report.findings, report.summary


def baseline(parquet_dir: str) -> tuple[float, int]:
    """The floor: the work every engine must do at least, in numpy over the Parquet columns."""
    import glob

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from audit.checks import LEGAL_TRANSITIONS
    t = time.perf_counter()
    files = sorted(glob.glob(os.path.join(parquet_dir, "run=*", "*.parquet")))
    table = pa.concat_tables([pq.read_table(f, columns=["run_id", "seq", "kind", "entity", "partition", "replica",
                                                        "from_state", "to_state", "leader_epoch"],
                                            read_dictionary=["run_id", "kind", "entity"]) for f in files])
    def ints(name):
        return np.asarray(pc.fill_null(table[name], -1).to_numpy(zero_copy_only=False), np.int64)
    def codes(name):
        c = table[name].unify_dictionaries() if hasattr(table[name], "unify_dictionaries") else table[name]
        return np.concatenate([np.asarray(x.indices.fill_null(0), np.int64) for x in c.chunks])
    run, kind, entity = codes("run_id"), codes("kind"), codes("entity")
    seq, part, rep = ints("seq"), ints("partition"), ints("replica")
    frm, to, le = ints("from_state"), ints("to_state"), ints("leader_epoch")
    legal = np.zeros((3, 16, 16), bool)
    for m, f, tt in LEGAL_TRANSITIONS:
        legal[0 if m == "replica" else 1, f, tt] = True
    illegal = int((~legal[np.minimum(entity, 2), np.clip(frm, 0, 15), np.clip(to, 0, 15)]).sum())
    n = len(seq)
    bits = n.bit_length()
    order = np.sort((run << 40 | seq) << bits | np.arange(n)) & ((1 << bits) - 1)       # the rows in order
    key = ((run * 4 + entity) * (1 << 20) + part + 1) * 64 + rep + 1                     # per entity
    k = key[order]
    by_entity = np.sort(k << bits | np.arange(n)) & ((1 << bits) - 1)
    rows = order[by_entity]
    broken = int(((k[by_entity][1:] == k[by_entity][:-1]) & (frm[rows][1:] != to[rows][:-1])).sum())
    group = np.cumsum(np.r_[True, k[by_entity][1:] != k[by_entity][:-1]])
    running = np.maximum.accumulate(group << 32 | (le[rows] + 1))
    return time.perf_counter() - t, illegal + broken + int(running[-1] & 1)


BASELINE_CHILD = r"""
import sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from bench_audit_columnar import baseline
t = time.perf_counter(); baseline({parquet!r}); print(time.perf_counter() - t)
"""


def baseline_scaling(parquet: str) -> tuple[float, float]:
    """The baseline in a process alone (best of two), then in two processes at once (the mean of their times)."""
    code = BASELINE_CHILD.format(root=ROOT, bench=os.path.join(ROOT, "bench"), parquet=parquet)
    def run(n: int) -> list[float]:
        procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(n)]
        return [float(p.communicate()[0].split()[-1]) for p in procs]
    alone = min(run(1)[0] for _ in range(2))
    pair = run(2)
    return alone, sum(pair) / 2


SPARK_CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
w = time.perf_counter()
from audit.spark_session import spark_session
spark = spark_session({master!r}, app_name="bench-audit-columnar")
spark.sparkContext.parallelize([0], 1).count()
session = time.perf_counter() - w
from audit.runner import run_audit
out = {{"session": session}}
for name in ("first", "warm"):
    t = time.perf_counter()
    result = run_audit({dirs!r}, engine="spark", master={master!r}, limit=1000)
    out[name] = time.perf_counter() - t
import pickle, base64
out["report"] = base64.b64encode(pickle.dumps((result.report.violations, result.report.findings,
                                               result.report.summary))).decode()
print("RESULT " + json.dumps(out))
"""


def spark_run(master: str, dirs: list[str]) -> dict:
    import base64
    import pickle
    code = SPARK_CHILD.format(root=ROOT, master=master, dirs=dirs)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"spark child failed:\n{proc.stderr[-3000:]}")
    out = json.loads(line[7:])
    out["report"] = pickle.loads(base64.b64decode(out["report"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=10_000_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--masters", nargs="*", default=["local[2]", "local[1]"])
    ap.add_argument("--local", action="store_true", help="also the reference engine, row by row (slow)")
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "out", "bench-audit-full"))
    ap.add_argument("--segment-mb", type=int, default=32)
    args = ap.parse_args()

    from audit import columnar_engine
    from audit.export import export_parquet
    from audit.runner import run_audit
    from bench_audit import transitions_per_record
    from bench_audit_read import generate

    records = int(args.transitions / transitions_per_record())
    dirs = generate(os.path.join(args.data_dir, f"columnar-{records}"), records, args.segment_mb << 20, True)
    parquet = os.path.join(args.data_dir, f"columnar-{records}-parquet")
    if not os.path.exists(os.path.join(parquet, "_kcontroller.json")) and not os.path.isdir(parquet):
        export_parquet(dirs, parquet)
    print(f"# {args.transitions:,} transitions wanted: {records:,} records in {len(dirs)} log dirs; "
          f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)

    first = None
    def same(report, what):
        nonlocal first
        if first is None:
            first = key_of(report)
        elif key_of(report) != first:
            raise SystemExit(f"{what}: the report differs from the first one")

    b, _, _ = timed(lambda: baseline(parquet))
    print(f"baseline (numpy over the Parquet columns)   {b:7.2f} s", flush=True)
    if len(args.masters) > 1:
        alone, pair = baseline_scaling(parquet)
        print(f"baseline, the machine's two cores: alone {alone:.2f} s, two at once {pair:.2f} s each: "
              f"{2 * alone / pair:.2f}x the work per second (the most local[2] can gain over local[1])", flush=True)
    for threads in args.threads:
        columnar_engine_threads = threads
        orig = columnar_engine.audit
        columnar_engine.audit = lambda rows, limit=None, threads=None, _o=orig: _o(rows, limit=limit,
                                                                                   threads=columnar_engine_threads)
        try:
            for name, paths in (("logs", dirs), ("parquet", [parquet])):
                w, c, result = timed(lambda: run_audit(paths, engine="columnar", limit=1000))
                same(result.report, f"columnar {name}")
                n = result.report.summary["transitions"]
                print(f"columnar, {name:8s} threads={threads}       {w:7.2f} s  cpu {c:6.2f} s  "
                      f"{n / w:12,.0f} transitions/s  ({w / b:.1f}x the baseline)", flush=True)
        finally:
            columnar_engine.audit = orig
    for master in args.masters:
        out = spark_run(master, dirs)
        same_report = out["report"] == first
        n = first[2]["transitions"]
        print(f"spark {master:9s} session {out['session']:6.2f} s, first audit {out['first']:7.2f} s "
              f"(with the session {out['session'] + out['first']:7.2f} s), warm {out['warm']:7.2f} s "
              f"({n / out['warm']:,.0f} transitions/s once started); report equal: {same_report}", flush=True)
        if not same_report:
            raise SystemExit(f"spark {master}: the report differs")
    if args.local:
        w, c, result = timed(lambda: run_audit(dirs, engine="local", limit=1000))
        same(result.report, "local")
        print(f"local (reference, row by row)              {w:7.2f} s  cpu {c:6.2f} s", flush=True)


if __name__ == "__main__":
    main()
