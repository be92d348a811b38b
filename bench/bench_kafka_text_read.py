"""Benchmark of reading Kafka's own logs (audit.kafka_text_logs): lines a second, in process, per layout.

Run: .venv/bin/python bench/bench_kafka_text_read.py [--copies 5] [--repeat 5] [--layouts kafka strimzi ...]

Data: every real log of ../shared/real-logs (the tool outputs left out) concatenated, ``--copies`` times
(without ../shared: the fixture tests/data/layouts/base.log, many times), rewritten into each layout by
the generator of tests/test_log_layouts.py and written to a temporary file. Timed, best of --repeat:
``read_kafka_log`` of that file (opening, decoding, layout, meaning, rows), and ``read_kafka_lines`` of
its lines already in memory. Lines are the file's physical lines. Times are the process's CPU time
(``time.process_time``): the benchmark machine is shared, and wall time there measures the neighbours.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

NOT_LOGS = {"INDEX.md"}


def corpus(copies: int) -> list[str]:
    real = ROOT.parent / "shared" / "real-logs"
    lines: list[str] = []
    if real.is_dir():
        for p in sorted(real.glob("*.log")):
            lines += p.read_text(encoding="utf-8", errors="replace").splitlines()
    else:
        lines = (ROOT / "tests" / "data" / "layouts" / "base.log").read_text().splitlines() * 2000
    return lines * copies


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    from test_log_layouts import write_variant

    from audit.kafka_text_logs import read_kafka_lines, read_kafka_log
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layouts", nargs="*", default=["kafka", "strimzi", "dash", "compose", "cri", "ecs",
                                                      "docker-json", "mixed"])
    args = ap.parse_args()
    lines = corpus(args.copies)
    print(f"{'layout':<20} {'lines':>8} {'rows':>7} {'file lines/s':>13} {'memory lines/s':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.layouts:
            path = Path(tmp) / f"{layout}.log"
            if layout == "kafka":
                path.write_text("".join(x + "\n" for x in lines))
            else:
                path = write_variant(lines, layout, path)
            with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
                n = sum(1 for _ in f)
            text = path.read_text(encoding="utf-8").splitlines() if not path.suffix == ".gz" else None
            rows = len(read_kafka_log(path).rows)
            t_file = best_of(args.repeat, lambda: read_kafka_log(path))
            t_mem = best_of(args.repeat, lambda: read_kafka_lines(text)) if text is not None else float("nan")
            print(f"{layout:<20} {n:>8} {rows:>7} {n / t_file:>13,.0f} {n / t_mem:>15,.0f}")
            os.remove(path)


if __name__ == "__main__":
    main()
