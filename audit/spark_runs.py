"""The audit on Spark, one run per task: each task reads its run into Arrow and checks it with the columnar engine.

Runs are independent (:mod:`audit.checks`: no check looks across runs), so a Spark job of one task per run —
an event-log directory, or the Parquet files of one run of an export — needs no shuffle: a task reads its run
column-wise (``arrow_batches`` with dictionary strings, or ``pyarrow.parquet``), runs
:func:`audit.columnar_engine.audit` on it (one thread: Spark runs a task per core) and sends back the run's
report (at most ``limit`` listings of each list, exact counts) and its transitions' times as distinct values
with their counts. The driver merges the reports (:func:`audit.checks.merge_reports`: counts added, listings
in report order cut to the limit) and counts the timeline from the times: the report is the local engine's,
exactly (``tests/test_spark_runs.py``).

The runner takes this path when the input is two or more runs none of which is larger than
:data:`RUN_TASK_BYTES` (a task holds its run in memory); one long run goes to :mod:`audit.spark_engine`, whose
checks are keyed by partition and so spread one run over every core. The runs must be at the same path on the
executors (a shared file system on a cluster), as for ``kcontroller replay --engine spark``.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from audit.checks import Report, merge_reports

__all__ = ["RUN_TASK_BYTES", "RunResult", "audit_runs", "merge_runs"]

RUN_TASK_BYTES = 2 << 30       # the largest run (bytes of log, or the Parquet equivalent) a task checks whole
SHIPPED = ("events", "statemachines", "audit")
JOB_GROUP = "kcontroller-audit-runs"


@dataclass
class RunResult:
    """What a task found in one run."""
    name: str                     # the input as the user named it
    report: Report
    times: tuple = ((), ())       # the transitions' times: (distinct values, their counts)
    error: str | None = None      # the run could not be read to its end (the rows before were audited)
    notes: list[str] = field(default_factory=list)


def audit_runs(spark, runs: Sequence[tuple[str, str, object]], *, limit: int | None) -> list[RunResult]:
    """Audit each run of ``runs`` — (kind, name, what) with kind ``"log"`` (what: the log directory) or
    ``"parquet"`` (what: the run's Parquet files) — as one task of one Spark job; results in the order given."""
    from audit.spark_session import local_workers_run_this_python, ship_packages
    if not runs:
        return []
    ship_packages(spark, SHIPPED)
    sc = spark.sparkContext
    work = [(i, kind, name, os.path.abspath(what) if kind == "log" else [os.path.abspath(f) for f in what])
            for i, (kind, name, what) in enumerate(runs)]
    sc.setJobGroup(JOB_GROUP, "kcontroller audit: one task per run")
    try:
        with local_workers_run_this_python(sc):
            results = sc.parallelize(work, len(work)).map(partial(_task, limit=limit)).collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return [r for _, r in sorted(results, key=lambda ir: ir[0])]


def _task(item, *, limit: int | None) -> tuple[int, RunResult]:
    index, kind, name, what = item
    return index, audit_run(kind, name, what, limit=limit)


def audit_run(kind: str, name: str, what, *, limit: int | None) -> RunResult:
    """One run read and checked, here (what a task does)."""
    import numpy as np
    import pyarrow as pa

    from audit import columnar_engine
    from audit.log_rows import ReadStats
    from audit.rows import arrow_schema

    schema = arrow_schema(dictionary=True)
    error, notes = None, []
    if kind == "log":
        from audit.spark_source import read_log_table
        if not os.path.isdir(what):
            import socket
            return RunResult(name, columnar_engine.audit(schema.empty_table(), limit=limit),
                             error=f"{what} is not a directory on {socket.gethostname()}: on a cluster the logs "
                                   f"must be on a file system every executor shares")
        stats = ReadStats()
        table, error = read_log_table(what, dictionary=True, stats=stats)
        notes = [str(t) for t in stats.torn_tails]
    else:
        from audit.export import parquet_table
        tables = [parquet_table(f).cast(schema) for f in what]
        table = pa.concat_tables(tables) if tables else schema.empty_table()
    report = columnar_engine.audit(table, limit=limit, threads=1)
    times = columnar_engine.transition_times(table)
    values, counts = np.unique(times, return_counts=True)
    return RunResult(name, report, (values, counts), error, notes)


def merge_runs(results: Sequence[RunResult], limit: int | None) -> tuple[Report | None, tuple]:
    """The runs' reports as one, and their times as (distinct values, counts)."""
    import numpy as np
    report = None
    for r in results:
        report = r.report if report is None else merge_reports(report, r.report, limit)
    values = [np.asarray(r.times[0], np.int64) for r in results if len(r.times[0])]
    counts = [np.asarray(r.times[1], np.int64) for r in results if len(r.times[0])]
    if not values:
        return report, (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return report, (np.concatenate(values), np.concatenate(counts))
