"""An audit from start to end: find the inputs, read them, run the checks on the right engine, report.

What ``kcontroller audit PATH...`` runs. A PATH is
- an event-log directory (segment files ``*.kclog``): one run;
- a directory whose subdirectories are event logs (a sweep's output): one run each;
- a Kafka log file (``state-change.log``, ``controller.log``, rotated or gzip-compressed; or the decoded
  KRaft metadata log, ``kafka-dump-log.sh --cluster-metadata-decoder`` output): one run;
- a directory of Kafka log files: every regular, non-hidden file in it, one run each;
- a Parquet export of audit rows (``kcontroller export --parquet``, :mod:`audit.export`): each of its runs,
  or one of its ``run=`` directories (any directory of ``*.parquet`` files of the audit's schema): one run;
- a glob of any of these.

A path that does not exist, a glob that matches nothing, or a file that is not text is an *input
error*: the others are still audited, and the result says which inputs failed (the command exits
2). A Kafka file that is text but not a Kafka log is read (every line "not understood") and its
reading says so. KRaft files have no controller state machines: their rows (:mod:`audit.kraft_rows`)
go through the KRaft checks (:func:`audit.local_engine.audit_kraft`), in process whichever the engine,
and that report is merged into the engine's.

The engine: ``local`` (in process, no JVM, row by row: the reference), ``columnar`` (in process: the checks as
numpy array operations over one Arrow table of the inputs, :mod:`audit.columnar_engine`), ``duckdb`` (in process:
the checks as SQL on DuckDB, :mod:`audit.duckdb_engine`; asked for by name only: at 10 M transitions it was no
faster than ``local``, docs/benchmarks.md) or ``spark`` (:mod:`audit.spark_engine`, on the active session or one
built for ``master``). ``auto`` takes ``local`` below ``COLUMNAR_THRESHOLD`` bytes of input (it starts at once),
``columnar`` up to ``spark_threshold`` bytes and ``spark`` above it (or ``columnar`` when no Java is found). The default threshold is where
the in-process engine's rows (about ten times the input's size) would fill half the machine's
memory: on the 2-core benchmark machine the in-process engine was faster than Spark at every size
measured (docs/benchmarks.md); Spark is for inputs that do not fit, and for clusters.
Both give identical reports. Kafka text logs are always read here, on the driver's machine, and handed to
Spark as Arrow: several of them, big enough, by as many worker processes as it has cores (a broker writes
megabytes a day, not gigabytes; a cluster's many brokers' files are read side by side).
"""
from __future__ import annotations

import glob as _glob
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from audit import local_engine
from audit.export import (
    ParquetInputError, ParquetRun, find_parquet_runs, is_parquet_dir, parquet_table, read_parquet_rows,
)
from audit.checks import (
    ALL_FINDING_KINDS, ALL_VIOLATION_KINDS, ERROR, SEVERITY, Report, Violation, events, fails, location, merge_reports,
    state_name,
)
from audit.kafka_text_logs import (
    KafkaLogError, KafkaLogReading, read_kafka_log, read_kafka_logs, rotation_sets, run_id_for,
)
from audit.log_rows import GLOB_MAGIC, ReadStats, SegmentRef, discover_segments, iter_log_rows
from audit.kraft_rows import KraftRow
from audit.rows import PARTITION_TRANSITION, REPLICA_TRANSITION, AuditRow
from audit.spark_session import physical_memory
from audit.timeline import TIMELINE_BUCKETS, bucket, bucket_counts
from events.log import LogError
from events.segment import SEGMENT_SUFFIX

_log = structlog.get_logger("kcontroller.audit")

EVENT_LOG = "event-log"
KAFKA_LOG = "kafka-log"
PARQUET = "parquet"
ENGINES = ("auto", "local", "columnar", "duckdb", "spark")
# Below this many bytes of input ``auto`` keeps the reference engine (``local``): it starts at once, where the
# columnar engine first imports numpy and pyarrow; above it the columnar engine is many times faster.
COLUMNAR_THRESHOLD = 4 << 20
# The in-process engine holds every row: about ten times the input's bytes in memory. On the
# benchmark machine (2 cores) it was faster than Spark at every size measured (docs/benchmarks.md),
# so ``auto`` takes Spark only when the rows would need more than half of the memory.
LOCAL_BYTES_PER_INPUT_BYTE = 10
# A Parquet row stands for about this many bytes of event log (bench data: 67 MiB of segments, 1.17 M rows);
# without a manifest, a Parquet byte for this many (zstd-compressed rows).
LOG_BYTES_PER_PARQUET_ROW = 60
LOG_BYTES_PER_PARQUET_BYTE = 10
# Kafka text logs of at least this many bytes in all, in several inputs, are read by worker processes (one per
# core): a spawned worker takes about half a second to start, a reader about 5 s per 100 MiB.
PARALLEL_READ_BYTES = 32 << 20
# ... and only with this many cores: a worker's rows cross back to the driver pickled (about a sixth of the reading's
# CPU again), so on two cores (the benchmark machine's two vCPUs) side by side was 0.9-1.35x one process.
PARALLEL_READ_CORES = 4


DEFAULT_SPARK_THRESHOLD = physical_memory() // 2 // LOCAL_BYTES_PER_INPUT_BYTE
DEFAULT_LIMIT = 1000
REPORT_FORMAT = 1


@dataclass
class AuditInput:
    """One run to audit: where it is, what it is, and (after reading) what came of it."""
    path: str                        # the event-log directory or the Kafka log file
    type: str                        # EVENT_LOG or KAFKA_LOG
    run_id: str
    bytes: int
    segments: list[SegmentRef] = field(default_factory=list)
    reading: KafkaLogReading | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)   # e.g. a torn tail (a crash mid-write), not an error
    paths: list = field(default_factory=list)        # Kafka files read as this one run: a rotated set, oldest
    merged: bool = False                             # first; merged by time (a set as a list in the list)
    parquet: ParquetRun | None = None                # a run of a Parquet export
    read: bool = field(default=False, repr=False)    # a Kafka input: read (``reading`` or ``error`` says how)

    @property
    def log_bytes(self) -> int:
        """The input's size as event-log bytes (what ``auto``'s threshold is about)."""
        if self.parquet is None:
            return self.bytes
        if self.parquet.rows is not None:
            return self.parquet.rows * LOG_BYTES_PER_PARQUET_ROW
        return self.bytes * LOG_BYTES_PER_PARQUET_BYTE

    def to_json(self, rows_by_run: dict) -> dict:
        out = {"path": self.path, "type": self.type, "run_id": self.run_id, "bytes": self.bytes,
               "rows": rows_by_run.get(self.run_id, 0)}
        if self.type == EVENT_LOG:
            out["segments"] = len(self.segments)
        if self.parquet is not None:
            out["files"] = list(self.parquet.files)
        if self.paths:
            out["files"] = self.paths
            out["merged"] = self.merged
        r = self.reading
        if r is not None:
            c = r.counts
            out.update(era=r.era, kraft=r.kraft, is_log4j=r.is_log4j, layouts=r.layouts,
                       version_hints=list(r.version_hints),
                       lines={"total": c.total, "rows": c.rows, "other": c.other, "continuation": c.continuation,
                              "header": c.header, "not_understood": c.not_understood},
                       not_understood_sample=[{"line": no, "text": text} for no, text in r.not_understood_sample],
                       notes=list(r.notes))
        if self.notes:
            out["notes"] = [*out.get("notes", []), *self.notes]
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class InputError:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class AuditResult:
    """Everything an audit found; :meth:`to_json` is the JSON report."""
    engine: str
    master: str | None
    inputs: list[AuditInput]
    errors: list[InputError]
    report: Report
    timeline: dict
    notes: list[str] = field(default_factory=list)
    fail_on: str = ERROR                 # the least severity that fails the audit (checks.SEVERITIES)
    availability: dict | None = None     # run -> audit.availability figures (``availability=True``)

    @property
    def exit_status(self) -> int:
        """2 when an input could not be read, else 1 when a violation or finding of ``fail_on``'s severity or a
        more severe one was found (by default: an error), else 0."""
        if self.errors or any(i.error for i in self.inputs):
            return 2
        return 1 if fails(self.report.summary, self.fail_on) else 0

    def to_json(self) -> dict:
        summary = self.report.summary
        rows_by_run = summary.get("rows_by_run", {})
        return {
            "format": REPORT_FORMAT,
            "engine": self.engine,
            "master": self.master,
            "status": {0: "clean", 1: "violations", 2: "input errors"}[self.exit_status],
            "exit_status": self.exit_status,
            "fail_on": self.fail_on,
            "inputs": [i.to_json(rows_by_run) for i in self.inputs],
            "input_errors": [{"path": e.path, "reason": e.reason} for e in self.errors],
            "notes": list(self.notes),
            "summary": summary,
            "violation_kinds": ALL_VIOLATION_KINDS,
            "finding_kinds": ALL_FINDING_KINDS,
            "severities": SEVERITY,
            "violations": [violation_json(v) for v in self.report.violations],
            "findings": [violation_json(v) for v in self.report.findings],
            "finding_events": events(self.report.findings),
            "timeline": self.timeline,
            "availability": self.availability,
        }


def violation_json(v: Violation) -> dict:
    return {"kind": v.kind, "severity": SEVERITY[v.kind], "location": location(v), "run_id": v.run_id, "entity": v.entity, "topic": v.topic, "partition": v.partition,
            "replica": v.replica, "from": None if v.from_state is None else state_name(v.entity, v.from_state),
            "to": None if v.to_state is None else state_name(v.entity, v.to_state),
            "controller_epoch": v.controller_epoch, "source": v.source, "position": v.position, "seq": v.seq,
            "time_ms": v.time_ms, "detail": v.detail}


# --- finding the inputs -------------------------------------------------------------------------------------

def _is_event_log(directory: str) -> bool:
    try:
        return any(name.endswith(SEGMENT_SUFFIX) for name in os.listdir(directory))
    except OSError:
        return False


SWEEP_DOCUMENT = "sweep.json"   # what kcontroller sweep writes beside its runs' log directories


def _expand(path: str) -> tuple[list[tuple[str, str]], str | None]:
    """(type, path) pairs named by one PATH argument, or an error."""
    if GLOB_MAGIC.search(path):
        matches = sorted(_glob.glob(path, recursive=True))
        if not matches:
            return [], "no file or directory matches this glob"
        out = []
        for m in matches:
            found, _ = _expand(m)
            out += found
        return out, None
    if os.path.isdir(path):
        if _is_event_log(path):
            return [(EVENT_LOG, path)], None
        if is_parquet_dir(path):
            return [(PARQUET, path)], None
        out = []
        for name in sorted(os.listdir(path)):
            if name.startswith("."):
                continue
            child = os.path.join(path, name)
            if os.path.isdir(child) and _is_event_log(child):
                out.append((EVENT_LOG, child))
            elif os.path.isdir(child) and is_parquet_dir(child):
                out.append((PARQUET, child))
            elif os.path.isfile(child):
                out.append((KAFKA_LOG, child))
        if any(kind == EVENT_LOG for kind, _ in out):
            # A sweep's own document beside its runs is not a log (named on its own, it is read as one).
            out = [(kind, p) for kind, p in out if not (kind == KAFKA_LOG and os.path.basename(p) == SWEEP_DOCUMENT)]
        if not out:
            return [], "a directory with no event log and no file in it"
        return out, None
    if os.path.isfile(path):
        return [(KAFKA_LOG, path)], None
    return [], "does not exist"


def resolve_inputs(paths: Iterable[str], *, merge: bool = False) -> tuple[list[AuditInput], list[InputError]]:
    """The runs named by ``paths`` (see the module docstring), each once, in the order given. The files of
    a rotated Kafka log (``state-change.log``, ``.1``, ``.2024-01-01-10``) are one run, oldest first; with
    ``merge``, every Kafka log file given is one run, merged by timestamp."""
    inputs: list[AuditInput] = []
    errors: list[InputError] = []
    seen: set[str] = set()
    for arg in paths:
        arg = os.fspath(arg)
        found, problem = _expand(arg)
        if problem is not None:
            errors.append(InputError(arg, problem))
        for kind, p in found:
            p = os.path.normpath(p)
            key = os.path.realpath(p)
            if key in seen:
                continue
            seen.add(key)
            if kind == EVENT_LOG:
                try:
                    refs = discover_segments(p)
                except LogError as exc:
                    errors.append(InputError(p, str(exc)))
                    continue
                size = sum(os.path.getsize(r.file) for r in refs)
                inputs.append(AuditInput(p, EVENT_LOG, p, size, refs))
            elif kind == PARQUET:
                try:
                    runs = find_parquet_runs(p)
                except ParquetInputError as exc:
                    errors.append(InputError(exc.path, exc.reason))
                    continue
                for run in runs:
                    run_key = os.path.realpath(run.path)
                    if run_key != key and run_key in seen:
                        continue
                    seen.add(run_key)
                    inputs.append(AuditInput(run.path, PARQUET, run.run_id or run.path, run.bytes, parquet=run))
            else:
                inputs.append(AuditInput(p, KAFKA_LOG, run_id_for(p), os.path.getsize(p)))
    inputs = _kafka_runs(inputs, merge)
    # Kafka files of the same name (two brokers' state-change.log) are different runs.
    names: dict[str, int] = {}
    for i in inputs:
        if i.type == KAFKA_LOG:
            names[i.run_id] = names.get(i.run_id, 0) + 1
    for i in inputs:
        if i.type == KAFKA_LOG and names[i.run_id] > 1:
            i.run_id = f"kafka-log:{i.path}"
    return inputs, errors


def _kafka_runs(inputs: list[AuditInput], merge: bool) -> list[AuditInput]:
    """Kafka files of one rotated set as one input; with ``merge``, all of them as one."""
    kafka = [i for i in inputs if i.type == KAFKA_LOG]
    by_path = {i.path: i for i in kafka}
    run_of: dict[str, AuditInput] = {}
    for files in rotation_sets([i.path for i in kafka]):
        if len(files) > 1:
            run = AuditInput(files[-1], KAFKA_LOG, run_id_for(files[-1]), sum(by_path[f].bytes for f in files),
                             paths=list(files))
            for f in files:
                run_of[f] = run
    out: list[AuditInput] = []
    taken: set[int] = set()
    for i in inputs:
        run = run_of.get(i.path, i)
        if id(run) not in taken:
            taken.add(id(run))
            out.append(run)
    if merge:
        runs = [i for i in out if i.type == KAFKA_LOG]
        if len(runs) > 1:
            whole = AuditInput(runs[0].path, KAFKA_LOG, "kafka-log:merged", sum(i.bytes for i in runs),
                               paths=[i.paths or i.path for i in runs], merged=True)
            out = [i for i in out if i.type != KAFKA_LOG]
            out.append(whole)
    return out


# --- the engines --------------------------------------------------------------------------------------------

def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool((home and os.path.exists(os.path.join(home, "bin", "java"))) or shutil.which("java"))


def choose_engine(engine: str, total_bytes: int, spark_threshold: int) -> tuple[str, str | None]:
    """The engine to run and, when ``auto`` had to decide against its rule, why."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine != "auto":
        return engine, None
    if total_bytes < spark_threshold:
        return ("local" if total_bytes < COLUMNAR_THRESHOLD else "columnar"), None
    if not java_available():
        return "columnar", (f"{total_bytes} bytes of input is above the Spark threshold ({spark_threshold}), but no "
                            "Java was found (Spark needs Java 17+): audited in process")
    return "spark", None


def _workers_for(inputs: list[AuditInput], workers: int | None) -> int:
    """How many processes read the Kafka inputs: ``workers``, or for None one per core when they are several,
    ``PARALLEL_READ_BYTES`` or more in all, and the machine has ``PARALLEL_READ_CORES`` cores or more (else 1)."""
    kafka = [i for i in inputs if i.type == KAFKA_LOG]
    if workers is None:
        cores = _cores()
        workers = cores if cores >= PARALLEL_READ_CORES and sum(i.bytes for i in kafka) >= PARALLEL_READ_BYTES else 1
    return max(1, min(workers, len(kafka)))


def _read_kafka_logs(inputs: list[AuditInput], workers: int = 1) -> tuple[list[AuditRow], list]:
    """The Kafka inputs' audit rows and KRaft rows, in the inputs' order; inputs not read yet are read, by
    ``workers`` processes (spawned, one input at a time each) when more than 1. Each input is read alone, so
    the readings are the same whoever reads them."""
    kafka = [i for i in inputs if i.type == KAFKA_LOG]
    todo = [i for i in kafka if not i.read]
    jobs = [(i.path, i.paths, i.merged, i.run_id) for i in todo]
    workers = min(workers, len(jobs))
    results = _read_in_workers(jobs, workers) if workers > 1 else None
    if results is None:
        results = map(_read_kafka_input, jobs)
    for i, (reading, error) in zip(todo, results):
        i.read = True
        if error is not None:
            i.error = error
        else:
            i.reading = reading
    rows: list[AuditRow] = []
    kraft_rows: list = []
    for i in kafka:
        if i.reading is not None:
            rows += i.reading.rows
            kraft_rows += i.reading.kraft_rows
    return rows, kraft_rows


def _read_in_workers(jobs: list[tuple], workers: int) -> list | None:
    """``_read_kafka_input`` of each job by ``workers`` spawned processes (not forked: the driver may hold a
    JVM's threads, Spark's, and their locks); None when the workers could not do it (one died, or none could
    start): the caller then reads in process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_read_kafka_input_plain, jobs))
    except (BrokenProcessPool, OSError) as exc:
        _log.warning("reading Kafka log files in worker processes failed; reading them in this process",
                     error=f"{type(exc).__name__}: {exc}")
        return None
    return [(None, error) if error is not None else (_rows_as_records(reading), None) for reading, error in results]


def _read_kafka_input(job: tuple, plain: bool = False) -> tuple[KafkaLogReading | None, str | None]:
    """One Kafka input read: (reading, None), or (None, why it could not be read). ``plain``: the reading's rows
    as plain tuples (for a worker process: they cross to the driver in about half the time of named tuples)."""
    path, paths, merged, run_id = job
    try:
        if paths:
            reading = read_kafka_logs(paths, merge=merged, run_id=run_id)
        else:
            reading = read_kafka_log(path, run_id=run_id)
    except KafkaLogError as exc:
        return None, exc.reason
    if plain:
        reading.rows = list(map(tuple, reading.rows))
        reading.kraft_rows = list(map(tuple, reading.kraft_rows))
    return reading, None


def _read_kafka_input_plain(job: tuple) -> tuple[KafkaLogReading | None, str | None]:
    return _read_kafka_input(job, plain=True)


def _rows_as_records(reading: KafkaLogReading) -> KafkaLogReading:
    """A worker's reading with its rows made AuditRow and KraftRow again."""
    new = tuple.__new__
    reading.rows = [new(AuditRow, r) for r in reading.rows]
    reading.kraft_rows = [new(KraftRow, r) for r in reading.kraft_rows]
    return reading


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not on Linux
        return os.cpu_count() or 1


def _parquet_run_id(i: AuditInput, run_ids) -> None:
    """A Parquet directory without a manifest: its run is named by its rows."""
    if i.parquet.run_id is None:
        found = set(run_ids)
        if len(found) == 1:
            i.run_id = found.pop()


def _audit_local(inputs: list[AuditInput], limit: int | None) -> tuple[Report, dict]:
    rows: list[AuditRow] = []
    for i in inputs:
        if i.type == PARQUET:
            try:
                run_rows = read_parquet_rows(i.parquet)
            except ParquetInputError as exc:
                i.error = str(exc)
                continue
            _parquet_run_id(i, (r.run_id for r in run_rows))
            rows += run_rows
        if i.type != EVENT_LOG:
            continue
        stats = ReadStats()
        try:
            rows.extend(iter_log_rows(i.path, stats))
        except LogError as exc:  # the rows before the damage are audited; the input is reported
            i.error = str(exc)
        i.notes += [str(t) for t in stats.torn_tails]
    kafka_rows, kraft_rows = _read_kafka_logs(inputs)
    rows += kafka_rows
    report = local_engine.audit(rows, limit=limit, kraft_rows=kraft_rows)
    return report, timeline_of(_transition_times(rows), report)


def _transition_times(rows: Iterable[AuditRow]) -> list[int]:
    return [r.time_ms for r in rows if r.time_ms is not None and r.kind in (REPLICA_TRANSITION, PARTITION_TRANSITION)]


def _audit_spark(inputs: list[AuditInput], limit: int | None, master: str | None,
                 conf: dict | None) -> tuple[Report, dict]:
    import pyarrow as pa

    from audit import spark_engine
    from audit.rows import COLUMNS, SPARK_DDL, rows_to_arrow
    from audit.spark_session import spark_session
    from audit.spark_source import read_logs_df

    spark = spark_session(master, app_name="kcontroller-audit", conf=conf)
    runs = _run_tasks(inputs)
    if runs is not None:
        return _audit_spark_runs(spark, inputs, runs, limit)
    frames = []
    event_logs = [i.path for i in inputs if i.type == EVENT_LOG]
    if event_logs:
        frames.append(read_logs_df(spark, event_logs))
    parquet = _checked_parquet_files(inputs)
    if parquet:
        frames.append(spark.read.schema(SPARK_DDL).parquet(*parquet).select(*COLUMNS))
    kafka_rows, kraft_rows = _read_kafka_logs(inputs)
    if kafka_rows:
        frames.append(spark.createDataFrame(pa.Table.from_batches([rows_to_arrow(kafka_rows)])))
    if not frames:
        frames.append(spark.createDataFrame([], SPARK_DDL))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    timeline = spark_engine.TransitionTimeline(TIMELINE_BUCKETS)
    report = spark_engine.audit(df, limit=limit, timeline=timeline)
    if kraft_rows:
        report = merge_reports(report, local_engine.audit_kraft(kraft_rows, limit=limit), limit)
    return report, _timeline(timeline.lo, timeline.width, timeline.counts, report)


def _event_log_tables(inputs: list[AuditInput], *, dictionary: bool = False) -> list:
    """Each event-log input's rows as an Arrow table (``read_log_table``); a damaged log's error and torn tails
    go on its input, its rows before the damage are kept."""
    from audit.spark_source import read_log_table
    tables = []
    for i in inputs:
        if i.type != EVENT_LOG:
            continue
        stats = ReadStats()
        table, error = read_log_table(i.path, dictionary=dictionary, stats=stats)
        if error is not None:
            i.error = error
        i.notes += [str(t) for t in stats.torn_tails]
        tables.append(table)
    return tables


def _audit_columnar(inputs: list[AuditInput], limit: int | None) -> tuple[Report, dict]:
    """The checks as array operations in process (:mod:`audit.columnar_engine`) over one Arrow table of every
    input: event logs read column-wise with their strings as dictionaries, Parquet files, Kafka logs' rows."""
    import pyarrow as pa

    from audit import columnar_engine
    from audit.rows import arrow_schema, rows_to_arrow

    schema = arrow_schema(dictionary=True)
    tables = [schema.empty_table()] + _event_log_tables(inputs, dictionary=True)
    tables += [parquet_table(f).cast(schema) for f in _checked_parquet_files(inputs)]
    kafka_rows, kraft_rows = _read_kafka_logs(inputs)
    if kafka_rows:
        tables.append(pa.Table.from_batches([rows_to_arrow(kafka_rows)]).cast(schema))
    table = pa.concat_tables(tables)
    report = columnar_engine.audit(table, limit=limit)
    if kraft_rows:
        report = merge_reports(report, local_engine.audit_kraft(kraft_rows, limit=limit), limit)
    return report, timeline_of(columnar_engine.transition_times(table), report)


def _run_tasks(inputs: list[AuditInput]) -> list[tuple[str, str, object, AuditInput]] | None:
    """The inputs as one Spark task per run (:mod:`audit.spark_runs`) when there are two or more runs and none is
    larger than a task holds; else None (one long run: the DataFrame engine spreads it over every core)."""
    from audit.spark_runs import RUN_TASK_BYTES
    runs = []
    for i in inputs:
        if i.type == EVENT_LOG:
            runs.append(("log", i.path, i.path, i))
        elif i.type == PARQUET:
            runs.append(("parquet", i.path, i.parquet.files, i))
    if len(runs) < 2 or max(i.log_bytes for *_, i in runs) > RUN_TASK_BYTES:
        return None
    return runs


def _audit_spark_runs(spark, inputs: list[AuditInput], runs: list, limit: int | None) -> tuple[Report, dict]:
    import numpy as np

    from audit.spark_runs import audit_runs, merge_runs
    _checked_parquet_files(inputs)      # a bad Parquet file is its input's error (checked here), not a failed job
    runs = [r for r in runs if r[0] == "log" or r[3].error is None]
    results = audit_runs(spark, [(kind, name, what) for kind, name, what, _ in runs], limit=limit)
    for (_, _, _, i), result in zip(runs, results):
        if result.error is not None:
            i.error = result.error
        i.notes += result.notes
    report, (values, counts) = merge_runs(results, limit)
    kafka_rows, kraft_rows = _read_kafka_logs(inputs)
    if kafka_rows:
        from audit import columnar_engine
        from audit.rows import arrow_schema, rows_to_arrow
        import pyarrow as pa
        table = pa.Table.from_batches([rows_to_arrow(kafka_rows)]).cast(arrow_schema(dictionary=True))
        kafka_report = columnar_engine.audit(table, limit=limit)
        report = kafka_report if report is None else merge_reports(report, kafka_report, limit)
        more = columnar_engine.transition_times(table)
        values, counts = np.concatenate([values, more]), np.concatenate([counts, np.ones(len(more), np.int64)])
    if report is None:
        report = local_engine.audit([], limit=limit)
    if kraft_rows:
        report = merge_reports(report, local_engine.audit_kraft(kraft_rows, limit=limit), limit)
    return report, timeline_of(values, report, counts)


def _audit_duckdb(inputs: list[AuditInput], limit: int | None) -> tuple[Report, dict]:
    """The checks as SQL on DuckDB in process (:mod:`audit.duckdb_engine`) over one Arrow table of every input:
    event logs read column-wise (``arrow_batches``), Parquet files, Kafka logs' rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit import duckdb_engine
    from audit.columnar_engine import transition_times
    from audit.rows import COLUMNS, arrow_schema, rows_to_arrow

    if not duckdb_engine.available():
        raise ImportError("--engine duckdb needs the duckdb package (pip install duckdb)")
    schema = arrow_schema()
    tables = [schema.empty_table()] + _event_log_tables(inputs)
    tables += [pq.read_table(f, columns=list(COLUMNS)).select(list(COLUMNS)).cast(schema)
               for f in _checked_parquet_files(inputs)]
    kafka_rows, kraft_rows = _read_kafka_logs(inputs)
    if kafka_rows:
        tables.append(pa.Table.from_batches([rows_to_arrow(kafka_rows)], schema=schema))
    table = pa.concat_tables(tables)
    report = duckdb_engine.audit(table, limit=limit)
    if kraft_rows:
        report = merge_reports(report, local_engine.audit_kraft(kraft_rows, limit=limit), limit)
    return report, timeline_of(transition_times(table), report)


def _checked_parquet_files(inputs: list[AuditInput]) -> list[str]:
    """The Parquet inputs' files (absolute), each checked against the audit's schema here in the driver (a bad
    file is its input's error, never a failed job)."""
    import pyarrow.parquet as pq

    from audit.export import check_schema
    files = []
    for i in inputs:
        if i.type != PARQUET:
            continue
        try:
            for f in i.parquet.files:
                check_schema(f)
        except ParquetInputError as exc:
            i.error = str(exc)
            continue
        if i.parquet.run_id is None:
            _parquet_run_id(i, (v for f in i.parquet.files
                                for v in pq.read_table(f, columns=["run_id"]).column(0).unique().to_pylist()))
        files += [os.path.abspath(f) for f in i.parquet.files]
    return files


# --- the timeline (the HTML report's chart) -----------------------------------------------------------------

def timeline_of(times, report: Report, counts=None) -> dict:
    """The timeline of transitions at ``times`` (a list or numpy array of ms; ``counts``: how often each occurs)
    and of the report's listed violations and findings."""
    span = bucket_counts(times, counts)
    return _timeline(None, None, None, report) if span is None else _timeline(*span, report)


def _timeline(lo: int | None, width: int | None, counts: dict[int, int] | None, report: Report) -> dict:
    """Transitions (all of them) and the violations and findings listed, per time bucket over the span of
    the transitions (a violation or finding outside it counts in the first or last bucket)."""
    if lo is None:
        return {"start_ms": None, "bucket_ms": None, "transitions": [], "violations": [], "findings": []}
    out = {"start_ms": lo, "bucket_ms": width, "transitions": [0] * TIMELINE_BUCKETS,
           "violations": [0] * TIMELINE_BUCKETS, "findings": [0] * TIMELINE_BUCKETS,
           "listed_only": report.summary["violations"] > len(report.violations)
           or report.summary["findings"] > len(report.findings)}
    for b, n in (counts or {}).items():
        out["transitions"][b] += n
    for name, listed in (("violations", report.violations), ("findings", report.findings)):
        for v in listed:
            if v.time_ms is not None:
                out[name][bucket(v.time_ms, lo, width)] += 1
    return out


def _is_spark_error(exc: Exception) -> bool:
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
    except ImportError:
        return False
    return isinstance(exc, (PySparkException, Py4JJavaError))


def _spark_error_text(exc: Exception) -> str:
    """The reader's own message when an executor's reader failed, else the first lines of Spark's."""
    text = str(exc)
    for marker in ("event log segment ", "LogCorruptError", "RowError", "LogError"):
        at = text.find(marker)
        if at >= 0:
            return text[at:].splitlines()[0][:500]
    return " ".join(text.strip().splitlines()[:3])[:500]


# --- the whole audit ----------------------------------------------------------------------------------------

def run_audit(paths: Iterable[str], *, engine: str = "auto", master: str | None = None,
              limit: int | None = DEFAULT_LIMIT, spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
              conf: dict | None = None, merge: bool = False, fail_on: str = ERROR,
              availability: bool = False, read_workers: int | None = 1) -> AuditResult:
    """Audit every run named by ``paths``; list at most ``limit`` violations and findings (counts are exact).
    ``master`` and ``conf`` (Spark properties) are for the Spark engine; ``fail_on`` is the least severity
    that makes the exit status 1; ``availability`` adds each run's availability figures, from its fold's
    timelines (:mod:`audit.availability`: on Spark with the Spark engine, else by DuckDB). ``read_workers``
    processes read the Kafka log files, one file (or rotated set) each at a time; None: one per core when
    they are ``PARALLEL_READ_BYTES`` or more in all on a machine of ``PARALLEL_READ_CORES`` cores or more. Worker processes are spawned: a script that calls this
    with more than 1 needs the ``if __name__ == "__main__":`` guard, as any user of multiprocessing does."""
    fails({"by_severity": {}}, fail_on)   # a bad level is refused before anything is read
    if read_workers is not None and read_workers < 1:
        raise ValueError(f"read_workers must be 1 or more, not {read_workers}")
    inputs, errors = resolve_inputs(paths, merge=merge)
    workers = _workers_for(inputs, read_workers)
    if workers > 1:
        _read_kafka_logs(inputs, workers)
    if master is not None and engine == "auto":
        engine = "spark"  # naming a cluster is asking for it
    chosen, why = choose_engine(engine, sum(i.log_bytes for i in inputs), spark_threshold)
    notes = [why] if why else []
    if chosen == "spark":
        try:
            report, timeline = _audit_spark(inputs, limit, master, conf)
        except Exception as exc:
            if not _is_spark_error(exc):
                raise
            # A segment that cannot be read fails the job on an executor; its error names the file.
            errors.append(InputError("(Spark job)", _spark_error_text(exc)))
            report = local_engine.audit([], limit=limit)
            timeline = timeline_of([], report)
    elif chosen == "duckdb":
        report, timeline = _audit_duckdb(inputs, limit)
    elif chosen == "columnar":
        report, timeline = _audit_columnar(inputs, limit)
    else:
        report, timeline = _audit_local(inputs, limit)
    kraft = [i.path for i in inputs if i.reading is not None and i.reading.kraft]
    if kraft:
        notes.append(f"{len(kraft)} KRaft file(s): KRaft has no controller state machines; their broker and "
                     f"controller lines were audited by the KRaft checks (epochs, leaders and ISRs, registrations, "
                     f"the quorum): {', '.join(kraft)}")
    figures = None
    if availability:
        figures = _availability(inputs, chosen == "spark" and not errors, master, conf)
        empty = sorted({i.run_id for i in inputs if i.run_id not in figures and not (i.error and i.type != EVENT_LOG)})
        if empty:
            notes.append(f"availability: {len(empty)} run(s) without controller rows to fold (a KRaft file, or a "
                         f"log with no transitions): {', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}")
        damaged = [i.path for i in inputs if i.error and i.type != EVENT_LOG]
        if damaged:
            notes.append(f"availability: not computed for {len(damaged)} input(s) that could not be read: "
                         f"{', '.join(damaged)}")
    return AuditResult(chosen, master if chosen == "spark" else None, inputs, errors, report, timeline, notes,
                       fail_on, figures)


def _availability(inputs: list[AuditInput], on_spark: bool, master: str | None, conf: dict | None) -> dict:
    """Each run's availability figures (:mod:`audit.availability`) from the fold of the inputs' rows: Kafka logs'
    rows as read by the audit, event logs' (up to any damage, as the audit read them) and Parquet exports'."""
    import pyarrow as pa

    from audit import availability
    from audit.rows import arrow_schema, rows_to_arrow
    from audit.spark_source import read_log_table
    kafka = [r for i in inputs if i.type == KAFKA_LOG and i.reading is not None for r in i.reading.rows]
    parquet = [os.path.abspath(f) for i in inputs if i.type == PARQUET and i.error is None for f in i.parquet.files]
    if on_spark:
        from audit.rows import COLUMNS, SPARK_DDL
        from audit.spark_session import spark_session
        from audit.spark_source import read_logs_df
        spark = spark_session(master, app_name="kcontroller-audit", conf=conf)
        df = spark.createDataFrame([], SPARK_DDL)
        logs = [i.path for i in inputs if i.type == EVENT_LOG and i.error is None]
        if logs:
            df = df.unionByName(read_logs_df(spark, logs))
        for i in inputs:    # a damaged log's rows before the damage: read here (on executors it fails the job)
            if i.type == EVENT_LOG and i.error is not None:
                df = df.unionByName(spark.createDataFrame(read_log_table(i.path)[0]))
        if parquet:
            df = df.unionByName(spark.read.schema(SPARK_DDL).parquet(*parquet).select(*COLUMNS))
        if kafka:
            df = df.unionByName(spark.createDataFrame(pa.Table.from_batches([rows_to_arrow(kafka)])))
        figures = availability.fold_figures_spark(df)
    else:
        tables = [read_log_table(i.path)[0] for i in inputs if i.type == EVENT_LOG]
        if kafka:
            tables.append(pa.Table.from_batches([rows_to_arrow(kafka)], schema=arrow_schema()))
        figures = availability.fold_figures_duckdb([], parquet, tuple(tables))
    return figures
