"""``kcontroller audit PATH...``: check the transitions of event logs and Kafka log files.

A PATH is an event-log directory, a directory of them (a sweep's output), a Kafka ``state-change.log``
or ``controller.log`` (any version from 0.8, gzip or plain), a directory of Kafka log files, or a glob.
Prints the verdict, the counts by kind and the first violations and findings; ``--report FILE.json``
writes the whole report as JSON, ``--html FILE.html`` as one self-contained page.

Exit status: 0 clean, 1 a violation or finding of the ``--fail-on`` severity or a more severe one (by
default an error: every violation but a controller-epoch reset, which is a warning), 2 an input could not
be read (or the audit could not run). Findings of one cause are printed as one event with its partitions.
On a terminal a progress bar shows the bytes of the inputs read so far (:mod:`kcontroller.progress`).
"""
from __future__ import annotations

import argparse
import json
import sys

from audit.checks import SEVERITIES, format_violation
from audit.runner import (
    DEFAULT_LIMIT, DEFAULT_SPARK_THRESHOLD, ENGINES, PARALLEL_READ_BYTES, PARALLEL_READ_CORES, AuditResult, run_audit,
)
from kcontroller import progress
from kcontroller.files import write_text_atomically

EXIT_ERROR = 2
SHOWN = 20  # violations and findings printed on stdout; the reports hold up to --limit


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", help="check the transitions of event logs and Kafka state-change/controller "
                                     "logs: legality, continuity, leaders, ISRs, controller epochs; exit 1 on "
                                     "an error found (see --fail-on), 2 when an input cannot be read")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="an event-log directory, a directory of them, a Kafka log file, a directory of Kafka log "
                        "files, a Parquet export of audit rows (kcontroller export), or a glob of any of these")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="local: in process, row by row (the reference); columnar: in process, the checks as "
                        "numpy array operations over the rows' columns (many times faster on large inputs); duckdb: "
                        "in process, the checks as SQL on DuckDB; spark: Spark DataFrames; "
                        "auto: local below 4 MiB of input, columnar up to --spark-threshold bytes, Spark above "
                        "(default: %(default)s)")
    p.add_argument("--master", metavar="URL",
                   help="Spark master (local[N], spark://host:port, yarn, ...); implies --engine spark. Under "
                        "spark-submit the session's own master is used")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark property for the session the audit builds (repeatable), e.g. "
                        "spark.executor.memory=4g")
    p.add_argument("--report", metavar="FILE.json", help="write the full report as JSON")
    p.add_argument("--html", metavar="FILE.html", help="write the report as one self-contained HTML page")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help="list at most this many violations and findings in the reports; counts are always exact "
                        "(default: %(default)s)")
    p.add_argument("--spark-threshold", type=int, default=DEFAULT_SPARK_THRESHOLD, metavar="BYTES",
                   help="input size in bytes from which --engine auto uses Spark (default: a twentieth of this "
                        f"machine's memory, {DEFAULT_SPARK_THRESHOLD / 2**30:.1f} GiB here: the in-process engine "
                        "holds about ten times its input)")
    p.add_argument("--json", action="store_true", help="print the JSON report on stdout instead of the summary")
    p.add_argument("--fail-on", choices=SEVERITIES, default="error",
                   help="the least severity that makes the exit status 1: error (violations; a controller-epoch "
                        "reset is a warning), warning (also unclean and failed elections, fencing by session "
                        "timeout, controller churn ...), info (any finding) (default: %(default)s)")
    p.add_argument("--merge", action="store_true",
                   help="read every Kafka log file given as one history merged by timestamp (the logs of several "
                        "brokers of one cluster); a rotated set is always read as one history, oldest first")
    p.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                   help="processes that read Kafka log files side by side, a file (or rotated set) each at a time "
                        f"(default: one per core on a machine of {PARALLEL_READ_CORES} cores or more when they are "
                        f"{PARALLEL_READ_BYTES >> 20} MiB or more in all, else 1)")
    p.add_argument("--availability", action="store_true",
                   help="also fold each run's rows into per-partition timelines and report its availability: "
                        "offline partition-seconds and intervals, leader elections, moves and unclean elections")
    progress.add_option(p)
    return p


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, 1 or more, not {text!r}")
    return n


def print_summary(result: AuditResult, out=None) -> None:
    out = out or sys.stdout
    s = result.report.summary
    status = {0: "clean", 1: "VIOLATIONS FOUND" if result.fail_on == "error" else f"FAILED (--fail-on {result.fail_on})",
              2: "INPUT ERRORS"}[result.exit_status]
    engine = result.engine + (f" on {result.master}" if result.master else "")
    out.write(f"audit: {status} — {len(result.inputs)} input(s), {s['runs']} run(s), {s['rows']} rows, "
              f"{s['transitions']} transitions (engine {engine})\n")
    for e in result.errors:
        out.write(f"  cannot read {e}\n")
    for i in result.inputs:
        if i.error:
            out.write(f"  cannot read {i.path}: {i.error}\n")
        for note in i.notes:
            out.write(f"  {i.path}: {note}\n")
        r = i.reading
        if r is not None:
            for note in r.notes:
                out.write(f"  {i.path}: {note}\n")
            if r.counts.not_understood and r.is_log4j:
                out.write(f"  {i.path}: {r.counts.not_understood} line(s) not understood (sampled in the report)\n")
    for note in result.notes:
        out.write(f"  note: {note}\n")
    for title, total, by_kind, listed in (
            ("violations", s["violations"], {**s["violations_by_kind"], **s.get("kraft_violations_by_kind", {})},
             result.report.violations),
            ("findings", s["findings"], {**s["findings_by_kind"], **s.get("kraft_findings_by_kind", {})},
             result.report.findings)):
        kinds = ", ".join(f"{k} {n}" for k, n in by_kind.items() if n)
        out.write(f"{title}: {total}{' (' + kinds + ')' if kinds else ''}\n")
        if title == "findings":
            _print_events(out, total, listed)
            continue
        for v in listed[:SHOWN]:
            out.write(f"  {format_violation(v)}\n")
        if total > min(len(listed), SHOWN):
            out.write(f"  ... {total - min(len(listed), SHOWN)} more (see --report / --html)\n")
    if s["failures_by_error"]:
        out.write("failed transitions by error: " + ", ".join(f"{k} {n}" for k, n in s["failures_by_error"].items())
                  + "\n")
    if result.availability is not None:
        _print_availability(out, result.availability)


def _print_availability(out, by_run: dict) -> None:
    """Each run's availability figures (the first SHOWN runs), and their sum over the runs."""
    def line(f: dict) -> str:
        return (f"offline {f['offline_partition_seconds']:g} partition-s in {f['offline_intervals']} interval(s) of "
                f"{f['partitions_offline']} partition(s), longest {f['longest_offline_s']:g} s, "
                f"{f['open_offline_intervals']} open at the end; {f['leader_elections']} leader elections "
                f"({f['leader_moves']} moves, {f['unclean_elections']} unclean)")
    out.write(f"availability (from the rows folded into per-partition timelines), {len(by_run)} run(s):\n")
    for run, f in list(by_run.items())[:SHOWN]:
        out.write(f"  {run}: {line(f)}\n")
    if len(by_run) > SHOWN:
        total = {k: sum(f[k] for f in by_run.values()) for k in next(iter(by_run.values()))}
        total["longest_offline_s"] = max(f["longest_offline_s"] for f in by_run.values())
        out.write(f"  ... {len(by_run) - SHOWN} more runs (see --report / --html); all {len(by_run)}: {line(total)}\n")


def _print_events(out, total: int, listed: list) -> None:
    """Findings of one cause as one line: its kind, how many, where, and its partitions (or brokers)."""
    from audit.checks import events
    grouped = events(listed)
    for e in grouped[:SHOWN]:
        subjects = e["subjects"]
        shown = ", ".join(subjects[:8]) + (f" and {len(subjects) - 8} more" if len(subjects) > 8 else "")
        where = e["first"] if e["count"] == 1 else f"{e['first']} .. {e['last']}"
        if e["count"] == 1:
            out.write(f"  {where} {e['severity']} {e['kind']}: {e['detail']}\n")
        else:
            out.write(f"  {where} {e['severity']} {e['kind']} x{e['count']}"
                      f"{' (' + shown + ')' if shown else ''}: first: {e['detail']}\n")
    if len(grouped) > SHOWN or total > len(listed):
        out.write(f"  ... more (see --report / --html)\n")


def _reading(args: argparse.Namespace) -> progress.Poller:
    """The audit's bar: bytes this process has read since the start, out of the inputs' size (run_audit has no
    progress callback; the I/O counter of /proc/self/io stands in for one); on Spark (the executors read) Spark's
    tasks done; where there is no I/O counter, the seconds spent."""
    if not progress.shown(args.progress):
        return progress.Poller("never", lambda: 0, total=None, unit="B", desc="audit")
    try:
        base = progress.bytes_read()
    except OSError:
        base = None
    if args.engine == "spark" or args.master:
        return progress.LateSparkTasks(args.progress, desc="audit (Spark tasks)")
    if base is None:
        import time
        started = time.monotonic()
        return progress.Poller(args.progress, lambda: int(time.monotonic() - started), total=None, unit="s",
                               desc="audit", unit_scale=False)
    total = progress.input_bytes(args.paths)
    return progress.Poller(args.progress, lambda: progress.bytes_read() - base, total=total or None, unit="B",
                           desc="audit: read")


def cmd_audit(args: argparse.Namespace) -> int:
    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"kcontroller: error: --conf {item!r}: expected KEY=VALUE", file=sys.stderr)
            return EXIT_ERROR
        conf[key.strip()] = value.strip()
    try:
        with _reading(args):
            result = run_audit(args.paths, engine=args.engine, master=args.master, limit=args.limit,
                               spark_threshold=args.spark_threshold, conf=conf, merge=args.merge,
                               fail_on=args.fail_on, availability=args.availability, read_workers=args.jobs)
    except ImportError as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    report = result.to_json()
    if args.report:
        write_text_atomically(args.report, json.dumps(report, indent=2) + "\n")
    if args.html:
        from audit.html_report import render
        write_text_atomically(args.html, render(report))
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_summary(result)
        for what, path in (("JSON report", args.report), ("HTML report", args.html)):
            if path:
                print(f"{what}: {path}")
    return result.exit_status
