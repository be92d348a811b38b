"""Replay of many event logs — a sweep's output, a directory of runs — in this process or as Spark tasks,
one log per task, with a verdict per log: ``kcontroller replay PATH... [--engine local|spark|auto]`` and
``kcontroller sweep --verify``.

1. :func:`find_logs` turns the PATHs into log directories: a directory holding segment files is a log;
   any other directory is searched recursively (hidden entries skipped: a sweep's half-written
   ``.seed-S.*.tmp``), without descending into the logs found; a glob names what it matches. A PATH that
   names no log is an input error, reported as an ``unreadable`` verdict of its own.
2. :func:`replay_one` replays one log by re-execution — :func:`controller.embedding.replay.replay_records`
   for a cluster's log, :func:`sim.sim_replay.replay_simulation` for a simulation's — and never raises:
   its verdict is ``same``, ``diverged`` (the offset of the first difference, and what differed) or
   ``unreadable`` (why: a corrupt segment, a log that does not start as a replay needs, ...). It is the
   function a Spark task runs, so it takes and returns plain data.
3. :func:`replay_logs` runs it over the logs: in a loop here (``local``), or as one Spark job of one task
   per log (``spark``; our packages are shipped to the executors as a sweep ships them); ``auto`` is
   ``spark`` from :data:`AUTO_SPARK_LOGS` logs on, or when spark-submit started this process. Verdicts come back ordered by path, so both engines give the same list.

Determinism: a verdict is a function of the log's bytes; nothing about the engine or the machine is in
it, and the path is the one found from the PATH given (not made absolute).
"""
from __future__ import annotations

import functools
import glob
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from events.segment import SEGMENT_SUFFIX

ENGINES = ("auto", "local", "spark")
# From this many logs on, ``auto`` replays on Spark. A sweep log of 150 simulated seconds replays in ~0.4 s in
# process, while starting a local Spark session and its first job costs ~20-30 s more and each task ~0.6 s on a
# busy 2-core machine (docs/benchmarks.md, "Replay of many logs"): below a few hundred logs Spark only pays off
# on a cluster, where --engine spark asks for it.
AUTO_SPARK_LOGS = 500
SAME, DIVERGED, UNREADABLE = "same", "diverged", "unreadable"
VERDICTS = (SAME, DIVERGED, UNREADABLE)
EXIT_OK, EXIT_DIVERGED, EXIT_ERROR = 0, 1, 2
# What the executors import to replay a log.
SHIPPED = ("events", "statemachines", "controller", "sim", "audit", "kcontroller")

_GLOB_MAGIC = ("*", "?", "[")


class ReplayInputError(Exception):
    """Bad arguments to :func:`replay_logs` (an unknown engine, Spark asked for without a session)."""


# ---------------------------------------------------------------------------------------------------------
# Finding the logs
# ---------------------------------------------------------------------------------------------------------

def is_event_log(directory: str) -> bool:
    """True if ``directory`` holds segment files (it is one event log)."""
    try:
        return any(name.endswith(SEGMENT_SUFFIX) for name in os.listdir(directory))
    except OSError:
        return False


def _logs_under(directory: str) -> list[str]:
    if is_event_log(directory):
        return [directory]
    found = []
    for top, dirs, _files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        logs = [d for d in dirs if is_event_log(os.path.join(top, d))]
        found += [os.path.join(top, d) for d in logs]
        dirs[:] = [d for d in dirs if d not in logs]   # a log's own directory holds no other log
    return found


@dataclass(frozen=True)
class Found:
    logs: list[str]                    # log directories, normalised, each once, ordered by path
    problems: list[tuple[str, str]]    # (PATH, why it names no log)


def find_logs(paths: Iterable[str | os.PathLike]) -> Found:
    """The event logs named by ``paths`` (see the module docstring), and the PATHs that name none."""
    logs: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for arg in paths:
        arg = os.fspath(arg)
        if any(c in arg for c in _GLOB_MAGIC):
            matches = sorted(m for m in glob.glob(arg, recursive=True) if os.path.isdir(m))
            if not matches:
                problems.append((arg, "no directory matches this glob"))
                continue
        elif os.path.isdir(arg):
            matches = [arg]
        else:
            why = "not a directory (replay reads event log directories)" if os.path.exists(arg) else "does not exist"
            problems.append((arg, why))
            continue
        found = [log for m in matches for log in _logs_under(m)]
        if not found:
            problems.append((arg, "no event log in it (no directory holding *" + SEGMENT_SUFFIX + " files)"))
        for log in found:
            logs.setdefault(os.path.realpath(log), os.path.normpath(log))
    return Found(sorted(set(logs.values())), problems)


# ---------------------------------------------------------------------------------------------------------
# One log
# ---------------------------------------------------------------------------------------------------------

def _verdict(log_dir: str, verdict: str, **fields) -> dict:
    out = {"log_dir": log_dir, "verdict": verdict, "kind": None, "records": None, "inputs": None, "digest": None,
           "offset": None, "divergence": None, "error": None}
    out.update(fields)
    return out


def replay_one(log_dir: str, *, from_snapshot: bool = False, open_at: str | None = None,
               log_level: str | None = None) -> dict:
    """The verdict of replaying the log ``log_dir`` (read at ``open_at`` if given: an absolute path for an
    executor in another working directory). ``from_snapshot``: a cluster's log from its latest
    ClusterSnapshot (a simulation's log always replays from its start). Never raises for a bad log.

    Returns ``{"log_dir", "verdict", "kind", "records", "inputs", "digest", "offset", "divergence",
    "error"}`` (and ``scenario``, ``seed`` for a simulation): ``records`` identical before any divergence,
    ``offset`` and ``divergence`` (expected and produced record) where it diverged, ``error`` why the log
    could not be replayed.
    """
    if log_level is not None:
        from kcontroller.logging_setup import configure_logging
        configure_logging(log_level)
    from controller.embedding.cluster import ClusterError
    from controller.embedding.replay import latest_cluster_snapshot, replay_records
    from events.log import LogError, LogReader
    from kcontroller.logging_setup import use_clock
    from sim.scenario import ScenarioError
    from sim.sim_replay import is_simulation_log, replay_simulation
    from statemachines.errors import RecordValueError
    path = open_at or log_dir
    use_clock(None)
    try:
        first = next(iter(LogReader(path).records()), None)
        if first is None:
            return _verdict(log_dir, UNREADABLE, error="the log has no records")
        if is_simulation_log(first):
            result = replay_simulation(LogReader(path).records())
            extra = {"kind": "simulation", "scenario": first.scenario, "seed": first.seed}
        else:
            start = latest_cluster_snapshot(path) if from_snapshot else None
            result = replay_records(LogReader(path).column_batches(start or 0))
            extra = {"kind": "cluster", "digest": result.digest}
    except (LogError, RecordValueError, ClusterError, ScenarioError, ValueError) as exc:
        return _verdict(log_dir, UNREADABLE, error=f"{type(exc).__name__}: {_one_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - one log's failure is its verdict; the others go on
        return _verdict(log_dir, UNREADABLE, error=f"the replay raised {type(exc).__name__}: {_one_line(exc)}")
    if result.ok:
        return _verdict(log_dir, SAME, records=result.records, inputs=result.inputs, **extra)
    extra.pop("digest", None)
    return _verdict(log_dir, DIVERGED, records=result.records, inputs=result.inputs,
                    offset=result.divergence.offset, divergence=str(result.divergence), **extra)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


# ---------------------------------------------------------------------------------------------------------
# Many logs
# ---------------------------------------------------------------------------------------------------------

def choose_engine(engine: str, logs: int, spark=None) -> str:
    """``local`` or ``spark`` for ``engine`` (``auto``: Spark from :data:`AUTO_SPARK_LOGS` logs on, when
    ``spark``, a session, is given, or under spark-submit)."""
    if engine not in ENGINES:
        raise ReplayInputError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine != "auto":
        return engine
    if spark is not None or logs >= AUTO_SPARK_LOGS:
        return "spark"
    from audit.spark_session import under_spark_submit
    return "spark" if logs > 1 and under_spark_submit() else "local"


def replay_local(logs: Sequence[str], *, from_snapshot: bool = False, progress=None) -> list[dict]:
    """:func:`replay_one` of each log, one after another in this process; ``progress``, a bar, counts them."""
    out = []
    for log in sorted(logs):
        out.append(replay_one(log, from_snapshot=from_snapshot))
        if progress is not None:
            progress.update(1)
    return out


def replay_spark(spark, logs: Sequence[str], *, from_snapshot: bool = False,
                 log_level: str | None = "critical") -> list[dict]:
    """:func:`replay_one` of each log as a task of one Spark job on ``spark``, one task per log. The logs
    must be at the same path on the executors (a shared file system on a cluster). Ordered by path."""
    from audit.spark_session import local_workers_run_this_python, ship_packages
    logs = sorted(logs)
    if not logs:
        return []
    ship_packages(spark, SHIPPED)
    sc = spark.sparkContext
    task = functools.partial(_replay_task, from_snapshot=from_snapshot, log_level=log_level)
    with local_workers_run_this_python(sc):
        results = sc.parallelize([(log, os.path.abspath(log)) for log in logs], len(logs)).map(task).collect()
    return sorted(results, key=lambda v: v["log_dir"])


def _replay_task(paths: tuple[str, str], *, from_snapshot: bool, log_level: str | None) -> dict:
    shown, absolute = paths
    if not os.path.isdir(absolute):
        import socket
        return _verdict(shown, UNREADABLE, error=f"{absolute} is not a directory on {socket.gethostname()}: on a "
                                                 f"cluster the logs must be on a file system every executor shares")
    return replay_one(shown, from_snapshot=from_snapshot, open_at=absolute, log_level=log_level)


@dataclass
class ReplayReport:
    verdicts: list[dict]     # one per log, then one per PATH that named no log
    engine: str              # "local" or "spark": where the logs were replayed

    def count(self, verdict: str) -> int:
        return sum(1 for v in self.verdicts if v["verdict"] == verdict)

    @property
    def exit_status(self) -> int:
        """0 when every log replays the same, 2 when any input is unreadable, else 1 when any diverged."""
        if self.count(UNREADABLE):
            return EXIT_ERROR
        return EXIT_DIVERGED if self.count(DIVERGED) else EXIT_OK

    def to_json(self) -> dict:
        """JSON-ready: the counts and the verdicts (nothing about the engine: the same on both)."""
        return {"ok": self.exit_status == EXIT_OK, "logs": len(self.verdicts),
                **{v: self.count(v) for v in VERDICTS}, "runs": self.verdicts}


def replay_logs(paths: Iterable[str | os.PathLike], *, engine: str = "auto", spark=None,
                from_snapshot: bool = False, progress=None) -> ReplayReport:
    """Replay every log ``paths`` name (:func:`find_logs`) on ``engine``; ``spark`` is the session for the
    ``spark`` engine (required then). PATHs that name no log get an ``unreadable`` verdict each."""
    found = find_logs(paths)
    engine = choose_engine(engine, len(found.logs), spark)
    if engine == "spark":
        if spark is None:
            raise ReplayInputError("the spark engine needs a Spark session")
        verdicts = replay_spark(spark, found.logs, from_snapshot=from_snapshot)
    else:
        verdicts = replay_local(found.logs, from_snapshot=from_snapshot, progress=progress)
    verdicts += [_verdict(path, UNREADABLE, error=why) for path, why in found.problems]
    return ReplayReport(verdicts, engine)


# ---------------------------------------------------------------------------------------------------------
# For people
# ---------------------------------------------------------------------------------------------------------

def format_verdict(v: dict) -> str:
    """One line: ``LOG_DIR: same ...``, ``LOG_DIR: DIVERGED at offset N ...``, ``LOG_DIR: UNREADABLE: why``."""
    what = (f"simulation {v['scenario']!r} (seed {v['seed']})" if v["kind"] == "simulation"
            else "cluster" if v["kind"] == "cluster" else None)
    if v["verdict"] == SAME:
        digest = f", final state digest {v['digest']}" if v.get("digest") else ""
        return f"{v['log_dir']}: same: {what}, {v['records']} records identical ({v['inputs']} inputs){digest}"
    if v["verdict"] == DIVERGED:
        return f"{v['log_dir']}: DIVERGED at {v['divergence']} ({what}, after {v['records']} identical records)"
    return f"{v['log_dir']}: UNREADABLE: {v['error']}"


def summary_line(report: ReplayReport, where: str) -> str:
    n = len(report.verdicts)
    return (f"# replayed {n} log{'s' if n != 1 else ''} ({where}): {report.count(SAME)} same, "
            f"{report.count(DIVERGED)} diverged, {report.count(UNREADABLE)} unreadable")


# ---------------------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------------------

def add_options(p) -> None:
    """``replay``'s options for many logs (its PATHs, ``--from-snapshot``, ``--json``, ``--progress`` are
    :mod:`kcontroller.cli`'s)."""
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="with many logs: local replays them one after another in this process; spark as one "
                        "Spark job, one task per log; auto: Spark from "
                        f"{AUTO_SPARK_LOGS} logs on, with --master, or under spark-submit, else local (default: auto)")
    p.add_argument("--master", metavar="URL", default=None,
                   help="Spark master for --engine spark/auto (local[N], spark://host:port, ...; default: the "
                        "session spark-submit started, or local[*])")


def single_log(args) -> str | None:
    """The PATH when ``replay`` was given one that is one log (or holds none, and is no glob: the one-log
    command's errors say what is wrong with it) and Spark was not asked for — the command then prints what it
    always has — else None."""
    if len(args.paths) != 1 or args.engine == "spark" or args.master is not None:
        return None
    path = args.paths[0]
    if is_event_log(path):
        return path
    if any(c in path for c in _GLOB_MAGIC) and not os.path.exists(path):
        return None
    return path if not os.path.isdir(path) or not _logs_under(path) else None


def _error(message: str) -> int:
    print(f"kcontroller: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def cmd_replay_many(args) -> int:
    """``kcontroller replay PATH...`` for anything but one log: a verdict per log and a summary line."""
    from kcontroller import progress
    found_logs = find_logs(args.paths).logs
    if args.master is not None and args.engine == "local":
        return _error("--master is for --engine spark (or auto, which it makes spark)")
    try:
        engine = "spark" if args.master is not None else choose_engine(args.engine, len(found_logs))
    except ReplayInputError as exc:
        return _error(str(exc))
    spark = created = None
    where = "this process"
    if engine == "spark" and found_logs:
        from audit.spark_session import active_session, spark_session
        try:
            created = active_session() is None
            spark = spark_session(args.master, app_name="kcontroller replay")
        except Exception as exc:  # noqa: BLE001 - no pyspark, no Java, a bad master URL: all end here
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return _error(f"cannot start Spark ({first_line}); --engine local replays without a JVM")
        where = f"Spark {spark.sparkContext.master}, one task per log"
    try:
        if spark is not None:
            # One task per log: Spark's tasks done are the logs replayed.
            with progress.SparkTasks(args.progress, spark, desc="replayed (Spark tasks)"):
                report = replay_logs(args.paths, engine="spark", spark=spark, from_snapshot=args.from_snapshot)
        else:
            with progress.bar(args.progress, total=len(found_logs), unit="log", desc="replayed",
                              unit_scale=False) as bar:
                report = replay_logs(args.paths, engine="local", from_snapshot=args.from_snapshot, progress=bar)
    finally:
        if created and spark is not None:
            spark.stop()
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for v in report.verdicts:
            print(format_verdict(v))
        print(summary_line(report, where))
    return report.exit_status
