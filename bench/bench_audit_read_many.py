"""Benchmark: many Kafka log files read by worker processes (``kcontroller audit --jobs N``) beside one process
reading them in turn, in the same run.

Run: .venv/bin/python bench/bench_audit_read_many.py [--files 6] [--copies 16] [--jobs 1 2]

Data: every real log of ../shared/real-logs concatenated ``--copies`` times into each of ``--files`` files (without
../shared: the fixture tests/data/layouts/base.log, many times), in a temporary directory. Timed: the audit's
reading of them (``audit.runner._read_kafka_logs``: every file read, its rows in the driver), wall seconds, and the
lines a second that makes; each --jobs value in turn, best of --repeat. The readings are checked equal.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def corpus() -> str:
    real = ROOT.parent / "shared" / "real-logs"
    if real.is_dir():
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(real.glob("*.log")))
    return (ROOT / "tests" / "data" / "layouts" / "base.log").read_text() * 200


def main() -> None:
    from audit import runner
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    text = corpus() * args.copies
    lines = text.count("\n") * args.files
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.files):
            Path(d, f"broker-{i}-state-change.log").write_text(text)
        size = sum(p.stat().st_size for p in Path(d).iterdir())
        print(f"{args.files} files, {lines:,} lines, {size / 2**20:,.0f} MiB; {runner._cores()} cores; "
              f"load {os.getloadavg()[0]:.1f}")
        first = None
        for jobs in args.jobs:
            best = float("inf")
            for _ in range(args.repeat):
                inputs, _ = runner.resolve_inputs([d])
                t = time.perf_counter()
                rows, kraft = runner._read_kafka_logs(inputs, jobs)
                best = min(best, time.perf_counter() - t)
            got = (rows, kraft)
            if first is None:
                first, base = got, best
            elif got != first:
                raise SystemExit(f"--jobs {jobs} read other rows than --jobs {args.jobs[0]}")
            print(f"jobs {jobs}: {best:6.2f} wall s = {lines / best:>10,.0f} lines/s  ({base / best:.2f}x --jobs "
                  f"{args.jobs[0]}; {len(rows):,} rows, {len(kraft):,} KRaft rows)")


if __name__ == "__main__":
    main()
