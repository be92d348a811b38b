"""Sweeps: one scenario run with many seeds — as Spark tasks or in this process — every log audited, and
the distribution of each simulation metric across the seeds. ``kcontroller sweep`` (:mod:`kcontroller.cli_sweep`)
is :func:`run_sweep` with argument parsing and printing.

1. The scenario is checked once, by the caller, before anything runs: :func:`check_runnable` (a malformed
   file is already a ``ScenarioError`` naming file and line from ``sim.scenario.load_scenario``).
2. Seed S runs with :func:`kcontroller.cli_simulate.simulate_to_log` — the code of ``kcontroller simulate
   --seed S`` — so ``DIR/seed-S`` holds the bytes that command writes. It writes into a fresh temporary
   directory under DIR, renamed to ``DIR/seed-S`` when the run has finished: a retried Spark task starts
   over, and DIR never shows a half-written log. The parsed scenario travels with the task (executors
   need not see the YAML file).

   - engine ``spark``: one Spark task per seed, ``sc.parallelize(seeds, len(seeds)).map(run)``, on the
     session given; our packages go to the executors as a zip (:func:`audit.spark_session.ship_packages`,
     on every master, so the code a cluster runs is the code the local tests run).
   - engine ``local``: no JVM. The seeds run one after another in this process, or with ``jobs`` > 1 in a
     pool of that many worker processes (started fresh, ``spawn``: never forked from a process that may
     hold a JVM's threads).

   A run that raises is recorded with its error and the others go on; the sweep then has failed.
3. The finished runs' logs are audited: :mod:`audit.spark_engine` over :mod:`audit.spark_source` on the
   same session, or :mod:`audit.local_engine` over :mod:`audit.log_rows`. Each ``DIR/seed-S`` is one
   audit run (run id: that path, normalised); violations are reported per seed.
   With ``verify``, the logs are also replayed (:mod:`kcontroller.replay_many`, one Spark task per log on the
   same session, or one after another in process): each must be written again, byte for byte.
4. :func:`sweep_document` is the result (also ``DIR/sweep.json`` and ``--json``): the scenario, the audit,
   per metric its distribution across seeds (:func:`distribution`), and every seed's summary.

Determinism: a run is a function of (scenario, seed) and everything is ordered by seed, never by when a
task finished, so the same scenario and seeds give the same logs and the same document on either engine,
with any number of tasks or workers. Nothing about the machine (wall time, engine, master, where DIR is)
goes into the document.

On a cluster, DIR must be on a file system shared by the driver and the executors, at the same path:
the tasks write the logs there, and the driver and the audit's tasks read them back.
"""
from __future__ import annotations

import fnmatch
import functools
import glob
import json
import math
import os
import re
import shutil
import socket
import time
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from audit.checks import Report
from audit.runner import SWEEP_DOCUMENT
from kcontroller.cli_simulate import simulate_to_log
from kcontroller.files import write_text_atomically
from sim.scenario import Scenario
from sim.simulation import Simulation

ENGINES = ("spark", "local")
SWEEP_FILE = SWEEP_DOCUMENT      # the audit passes it over in a sweep's directory
AUDIT_LIMIT = 1000    # violations listed in the document (their counts are always exact)
LISTED_SEEDS = 10     # seeds listed at a metric's min / max / null (the counts are exact)
# What the executors import to run a seed: the packages the simulator and this module stand on.
SHIPPED = ("events", "statemachines", "controller", "sim", "audit", "kcontroller")

# Numeric fields of the summary that are not metrics of the run, or are too fine-grained for the table.
NOT_METRICS = frozenset({"seed", "simulated_s", "partitions", "at_end.controller_id", "lost_by_partition"})
# The order of the table; within a pattern by name (numbers in names compared as numbers); metrics no
# pattern names (a field added to the summary later) come last.
METRIC_ORDER = (
    "acknowledged_writes_lost", "acknowledged_writes_unavailable", "loss_events", "truncated_records",
    "offline_partition_seconds", "under_min_isr_partition_seconds", "under_replicated_partition_seconds",
    "timeline.*",
    "produce.sent_messages", "produce.acknowledged_messages", "produce.failed_messages", "produce.pending_messages",
    "produce.errors.*", "produce.error_messages.*", "elections.*", "controller_elections", "controller_failovers",
    "fault *", "at_end.*", "expects_failed",
)


class SweepError(Exception):
    """A sweep that cannot start: no seeds, an output directory it must not touch, ..."""


def seed_dir(seed: int) -> str:
    """The name of seed ``seed``'s log directory inside the sweep's directory."""
    return f"seed-{seed}"


_OWN_ENTRY = re.compile(r"seed--?\d+|\.seed--?\d+\..*\.tmp|" + re.escape(SWEEP_FILE) + r"(?:\..*\.tmp)?")


def prepare_out_dir(out_dir: str, overwrite: bool) -> None:
    """Create ``out_dir``, or empty it of an earlier sweep when ``overwrite`` is set. Refuses a non-empty
    directory without ``overwrite``, and one holding anything a sweep does not write even with it."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise SweepError(f"{out_dir} is not a directory")
    entries = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
    if entries:
        if not overwrite:
            raise SweepError(f"{out_dir} is not empty; pass --overwrite to replace the sweep in it")
        foreign = [e for e in entries if not _OWN_ENTRY.fullmatch(e)]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise SweepError(f"{out_dir} holds {shown}, which a sweep does not write: not replacing it")
        for e in entries:
            path = os.path.join(out_dir, e)
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
    os.makedirs(out_dir, exist_ok=True)


def check_runnable(scenario: Scenario) -> None:
    """Raise SimulationError now if the simulator cannot run ``scenario`` at all (steps it does not
    simulate), rather than in every task."""
    Simulation(scenario, sink=lambda rec: None)


# ---------------------------------------------------------------------------------------------------------
# The runs
# ---------------------------------------------------------------------------------------------------------

def run_seed(scenario: Scenario, out_dir: str, seed: int, *, log_level: str | None = None) -> dict:
    """Run ``scenario`` with ``seed``, its log into ``out_dir``/seed-S; a Spark task, or a call in process.

    Returns ``{"seed", "log_dir", "records", "summary"}``, or ``{"seed", "error", "traceback"}`` if the
    run raised. ``log_level`` configures the engine's diagnostics first (a fresh worker process has none
    configured); None leaves them as they are.
    """
    if log_level is not None:
        from kcontroller.logging_setup import configure_logging
        configure_logging(log_level)
    if not os.path.isdir(out_dir):
        raise SweepError(f"{out_dir} is not a directory on {socket.gethostname()}: a sweep's directory must be on "
                         f"a file system the driver and every executor share, at the same path")
    target = os.path.join(out_dir, seed_dir(seed))
    # A name of its own per attempt (tempfile.mkdtemp would also make it private, mode 0700; a log
    # directory gets the umask's mode, as kcontroller simulate's does).
    tmp = os.path.join(out_dir, f".{seed_dir(seed)}.{uuid.uuid4().hex}.tmp")
    os.mkdir(tmp)
    try:
        sim, summary = simulate_to_log(scenario, tmp, seed=seed)
        if os.path.isdir(target):  # left by an earlier attempt of this task
            shutil.rmtree(target)
        os.rename(tmp, target)
    except Exception as exc:  # noqa: BLE001 - one seed's failure is a result of the sweep, not its end
        shutil.rmtree(tmp, ignore_errors=True)
        return {"seed": seed, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    # As the log's SimulationSummary record holds it: plain JSON types, whichever way it travelled.
    summary = json.loads(json.dumps(summary))
    return {"seed": seed, "log_dir": seed_dir(seed), "records": sim.journal.next_offset, "summary": summary}


def run_seeds_local(scenario: Scenario, out_dir: str, seeds: Sequence[int], *, jobs: int = 1,
                    log_level: str | None = None) -> list[dict]:
    """Each seed's :func:`run_seed`, in this process (``jobs`` 1) or in a pool of ``jobs`` processes;
    ``log_level`` is set in the pool's processes (this one keeps its own). Ordered by seed."""
    out_dir = os.path.abspath(out_dir)
    seeds = sorted(seeds)
    if jobs <= 1 or len(seeds) <= 1:
        return [run_seed(scenario, out_dir, seed) for seed in seeds]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    task = functools.partial(run_seed, scenario, out_dir, log_level=log_level or "critical")
    with ProcessPoolExecutor(max_workers=min(jobs, len(seeds)), mp_context=multiprocessing.get_context("spawn")) as pool:
        return sorted(pool.map(task, seeds), key=lambda r: r["seed"])


def run_seeds_spark(spark, scenario: Scenario, out_dir: str, seeds: Sequence[int], *,
                    log_level: str | None = "critical") -> list[dict]:
    """Each seed's :func:`run_seed` as a Spark task of ``spark``'s context, one task per seed. Ordered by seed."""
    from audit.spark_session import local_workers_run_this_python, ship_packages
    ship_packages(spark, SHIPPED)
    sc = spark.sparkContext
    seeds = sorted(seeds)
    task = functools.partial(run_seed, scenario, os.path.abspath(out_dir), log_level=log_level)
    with local_workers_run_this_python(sc):
        results = sc.parallelize(seeds, len(seeds)).map(task).collect()
    return sorted(results, key=lambda r: r["seed"])


def timeline_figures(paths: Sequence[str], run_end_ms: dict[str, int], spark=None) -> dict[str, dict]:
    """Each log's availability figures from its fold's timelines (:mod:`audit.availability`), by run id: folded
    on ``spark`` if given, else by DuckDB in process. Open intervals end at the run's end in ``run_end_ms`` (run
    id -> ms: the simulation's end)."""
    from audit import availability
    if spark is None:
        return availability.fold_figures_duckdb(list(paths), run_end_ms=run_end_ms)
    from audit.spark_source import read_logs_df
    return availability.fold_figures_spark(read_logs_df(spark, list(paths)), run_end_ms=run_end_ms)


def audit_logs(paths: Sequence[str], spark=None) -> Report:
    """The audit of the log directories ``paths``: on ``spark`` if given, else in process."""
    if spark is None:
        from audit.local_engine import audit
        from audit.log_rows import read_log_rows
        return audit(read_log_rows(list(paths)), limit=AUDIT_LIMIT)
    from audit.spark_engine import audit
    from audit.spark_source import read_logs_df
    return audit(read_logs_df(spark, list(paths)), limit=AUDIT_LIMIT)


# ---------------------------------------------------------------------------------------------------------
# Metrics across seeds
# ---------------------------------------------------------------------------------------------------------

def metric_values(summary: dict) -> dict[str, int | float | None]:
    """The numeric metrics of one run's summary (``sim.metrics``), flattened to dotted names.

    Counts kept in dicts keyed by what happens in the run (``produce.errors.<code>``, ...) appear only
    where they happened: a name missing from a run means 0 there. The lists become ``loss_events``
    (how many) and ``expects_failed``, and per fault ``fault <n> <action>@<time>: recovered_after_s`` /
    ``producers_recovered_after_s`` / ``fully_replicated_after_s``, None when the cluster had not recovered.
    """
    out: dict[str, int | float | None] = {}

    def walk(prefix: str, d: dict) -> None:
        for k, v in d.items():
            name = prefix + k
            if name in NOT_METRICS:
                continue
            if isinstance(v, dict):
                walk(name + ".", v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[name] = v

    walk("", summary)
    out["loss_events"] = len(summary.get("loss_events", ()))
    out["expects_failed"] = sum(1 for o in summary.get("observations", ()) if o.get("kind") == "expect"
                                and not o.get("ok"))
    for i, f in enumerate(summary.get("faults", ()), 1):
        label = f"fault {i} {f['action']}@{f['at_s']:g}s"
        out[f"{label}: recovered_after_s"] = f["recovered_after_s"]
        out[f"{label}: fully_replicated_after_s"] = f["fully_replicated_after_s"]
        if "producers_recovered_after_s" in f:
            out[f"{label}: producers_recovered_after_s"] = f["producers_recovered_after_s"]
    return out


def _natural(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


_FAULT_FIELDS = {": recovered_after_s": ": 0", ": producers_recovered_after_s": ": 1",   # in this order per fault
                 ": fully_replicated_after_s": ": 2"}


def _metric_order(name: str) -> tuple:
    rank = next((i for i, pattern in enumerate(METRIC_ORDER) if fnmatch.fnmatchcase(name, pattern)),
                len(METRIC_ORDER))
    for field, order in _FAULT_FIELDS.items():
        if name.startswith("fault ") and name.endswith(field):
            name = name[:-len(field)] + order
    return rank, _natural(name)


def _nearest_rank(ordered: list, p: int):
    return ordered[max(0, math.ceil(p * len(ordered) / 100) - 1)]


def distribution(values: Sequence[tuple[int, int | float | None]]) -> dict:
    """Min, p50, p90, max and mean of a metric over (seed, value) pairs, and the seeds at its min and max.

    Percentiles are nearest-rank (the smallest value with at least p% of the runs at or below it), so each
    is the value of some run. ``n`` counts the runs with a value; ``null`` those without (a fault the
    cluster had not recovered from); the seeds listed (at most 10, smallest first) come with exact counts.
    """
    known = sorted((v, seed) for seed, v in values if v is not None)
    nulls = sorted(seed for seed, v in values if v is None)
    d: dict = {"n": len(known), "null": len(nulls)}
    if not known:
        d.update(min=None, p50=None, p90=None, max=None, mean=None, min_seeds=[], min_count=0, max_seeds=[],
                 max_count=0)
    else:
        ordered = [v for v, _ in known]
        lo, hi = ordered[0], ordered[-1]
        at_min = [seed for v, seed in known if v == lo]
        at_max = [seed for v, seed in known if v == hi]
        d.update(min=lo, p50=_nearest_rank(ordered, 50), p90=_nearest_rank(ordered, 90), max=hi,
                 mean=round(math.fsum(ordered) / len(ordered), 6),
                 min_seeds=at_min[:LISTED_SEEDS], min_count=len(at_min),
                 max_seeds=at_max[:LISTED_SEEDS], max_count=len(at_max))
    d["null_seeds"] = nulls[:LISTED_SEEDS]
    return d


def metric_distributions(summaries: Sequence[dict]) -> dict[str, dict]:
    """:func:`distribution` of every metric of :func:`metric_values` over the runs' summaries."""
    per_run = sorted(((s["seed"], metric_values(s)) for s in summaries), key=lambda sv: sv[0])
    names = sorted({name for _, values in per_run for name in values}, key=_metric_order)
    return {name: distribution([(seed, values.get(name, 0)) for seed, values in per_run]) for name in names}


# ---------------------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------------------

@dataclass
class SweepResult:
    document: dict            # what DIR/sweep.json holds (sweep_document)
    runs: list[dict]          # run_seed's results, by seed (failed runs with their traceback)
    report: Report | None     # the audit of the finished runs' logs; None if none finished
    run_seconds: float        # wall time of the runs ...
    audit_seconds: float      # ... and of the audit
    verify_seconds: float = 0.0   # ... and of the replay of the logs (``verify``)

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.runs if "error" in r]

    @property
    def violations(self) -> int:
        return self.document["audit"]["violations"] if self.document["audit"] else 0

    @property
    def not_replayed(self) -> int:
        """With ``verify``: the logs whose replay diverged or could not read them (0 without ``verify``)."""
        v = self.document.get("verify")
        return v["diverged"] + v["unreadable"] if v else 0


def run_sweep(scenario: Scenario, out_dir: str, seeds: Sequence[int], *, engine: str = "spark", spark=None,
              jobs: int = 1, log_level: str | None = None, overwrite: bool = False,
              verify: bool = False) -> SweepResult:
    """Run ``scenario`` once per seed into ``out_dir`` (see :func:`prepare_out_dir` for ``overwrite``), audit
    the logs, with ``verify`` replay them (:func:`verify_logs`), and write ``out_dir``/sweep.json. ``engine``
    "spark" needs ``spark``, a session; "local" runs in ``jobs`` processes. ``log_level`` is set in worker
    processes (default: critical)."""
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "spark" and spark is None:
        raise SweepError("the spark engine needs a Spark session")
    seeds = sorted(seeds)
    if not seeds:
        raise SweepError("a sweep needs at least one seed")
    if len(set(seeds)) != len(seeds):
        raise SweepError("a sweep's seeds must differ")
    prepare_out_dir(out_dir, overwrite)
    started = time.monotonic()
    if engine == "spark":
        runs = run_seeds_spark(spark, scenario, out_dir, seeds, log_level=log_level or "critical")
    else:
        runs = run_seeds_local(scenario, out_dir, seeds, jobs=jobs, log_level=log_level)
    ran = time.monotonic()
    # Escaped: the audit's readers take globs, and DIR may hold a glob character.
    paths = [glob.escape(os.path.join(out_dir, r["log_dir"])) for r in runs if "error" not in r]
    report = audit_logs(paths, spark if engine == "spark" else None) if paths else None
    if paths:
        ends = {os.path.normpath(os.path.join(out_dir, r["log_dir"])): round(r["summary"]["simulated_s"] * 1000)
                for r in runs if "error" not in r}
        figures = timeline_figures(paths, ends, spark if engine == "spark" else None)
        for r in runs:
            if "error" not in r:
                r["timeline"] = figures.get(os.path.normpath(os.path.join(out_dir, r["log_dir"])))
    audited = time.monotonic()
    verified = verify_logs(out_dir, runs, spark if engine == "spark" else None) if verify else None
    document = sweep_document(scenario, out_dir, runs, report, verified)
    write_text_atomically(os.path.join(out_dir, SWEEP_FILE), dump_document(document))
    return SweepResult(document, runs, report, ran - started, audited - ran, time.monotonic() - audited)


def verify_logs(out_dir: str, runs: Sequence[dict], spark=None) -> dict:
    """Replay the finished runs' logs (:mod:`kcontroller.replay_many`: as Spark tasks on ``spark`` if given,
    else in process) and return ``{"logs", "same", "diverged", "unreadable", "failed"}`` for the sweep's
    document: ``failed`` lists the seeds whose log did not replay the same, with the offset and what differed
    (or why it could not be read)."""
    from kcontroller.replay_many import DIVERGED, SAME, UNREADABLE, replay_local, replay_spark
    seed_of = {os.path.normpath(os.path.join(out_dir, r["log_dir"])): r["seed"] for r in runs if "error" not in r}
    logs = sorted(seed_of)
    verdicts = replay_spark(spark, logs) if spark is not None else replay_local(logs)
    count = {v: sum(1 for x in verdicts if x["verdict"] == v) for v in (SAME, DIVERGED, UNREADABLE)}
    failed = sorted(({"seed": seed_of[os.path.normpath(x["log_dir"])], "verdict": x["verdict"], "offset": x["offset"],
                      "divergence": x["divergence"], "error": x["error"]} for x in verdicts if x["verdict"] != SAME),
                    key=lambda f: f["seed"])
    return {"logs": len(verdicts), **count, "failed": failed}


def _violation_entry(v, seed_of_run: dict, out_dir: str) -> dict:
    return {"seed": seed_of_run.get(v.run_id), "kind": v.kind,
            "source": os.path.relpath(v.source, os.path.normpath(out_dir)) if v.source else v.source,
            "position": v.position, "seq": v.seq, "controller_epoch": v.controller_epoch, "entity": v.entity,
            "topic": v.topic, "partition": v.partition, "replica": v.replica, "from_state": v.from_state,
            "to_state": v.to_state, "detail": v.detail}


def sweep_document(scenario: Scenario, out_dir: str, runs: Sequence[dict], report: Report | None,
                   verify: dict | None = None) -> dict:
    """The sweep's results as JSON-ready data: nothing in it depends on the engine, the order the runs
    finished in, or where ``out_dir`` is (log paths are relative to it). ``verify`` (:func:`verify_logs`)
    goes in as ``verify`` when given."""
    runs = sorted(runs, key=lambda r: r["seed"])
    finished = [r for r in runs if "error" not in r]
    seed_of_run = {os.path.normpath(os.path.join(out_dir, r["log_dir"])): r["seed"] for r in finished}
    violations_of_seed = dict.fromkeys((r["seed"] for r in finished), 0)
    audit = None
    if report is not None:
        s = report.summary
        for run_id, n in s["violations_by_run"].items():
            violations_of_seed[seed_of_run[run_id]] = n
        audit = {
            "runs": s["runs"], "rows": s["rows"], "rows_by_kind": s["rows_by_kind"], "transitions": s["transitions"],
            "failures": s["failures"], "failures_by_error": s["failures_by_error"], "violations": s["violations"],
            "violations_by_kind": s["violations_by_kind"],
            "violations_by_seed": {str(seed): n for seed, n in violations_of_seed.items() if n},
            "findings": s["findings"], "findings_by_kind": s["findings_by_kind"],
            "findings_by_seed": {str(seed_of_run[run_id]): n for run_id, n in s["findings_by_run"].items()
                                 if run_id in seed_of_run and n},
            "listed": [_violation_entry(v, seed_of_run, out_dir) for v in report.violations],
        }
    per_seed = []
    for r in runs:
        if "error" in r:
            per_seed.append({"seed": r["seed"], "error": r["error"]})
        else:
            per_seed.append({"seed": r["seed"], "log_dir": r["log_dir"], "records": r["records"],
                             "violations": violations_of_seed[r["seed"]], "summary": r["summary"],
                             **({"timeline": r["timeline"]} if r.get("timeline") is not None else {})})
    document = {
        "scenario": scenario.name,
        "source": scenario.source,
        "simulated_s": scenario.duration_ms / 1000,
        "seeds": [r["seed"] for r in runs],
        "finished": len(finished),
        "failed": [{"seed": r["seed"], "error": r["error"]} for r in runs if "error" in r],
        "audit": audit,
        "metrics": metric_distributions([{**r["summary"], "timeline": r["timeline"]} if r.get("timeline") is not None
                                         else r["summary"] for r in finished]),
        "timeline": _timeline_check(finished),
        "runs": per_seed,
    }
    if verify is not None:
        document["verify"] = verify
    return document


def _timeline_check(finished: Sequence[dict]) -> dict | None:
    """Whether the logs' timelines tell what the simulations' metrics counted while they ran: the seeds where
    the offline partition-seconds or the unclean elections differ (a simulation's metrics and its log
    disagree: a bug to report)."""
    told = [r for r in finished if r.get("timeline") is not None]
    if not told:
        return None
    offline = [r["seed"] for r in told if not math.isclose(r["timeline"]["offline_partition_seconds"],
                                                            r["summary"].get("offline_partition_seconds", 0.0),
                                                            abs_tol=1e-9)]
    unclean = [r["seed"] for r in told
               if r["timeline"]["unclean_elections"] != r["summary"].get("elections", {}).get("unclean", 0)]
    return {"runs": len(told), "offline_seconds_differ": offline, "unclean_elections_differ": unclean}


def dump_document(document: dict) -> str:
    """The document as DIR/sweep.json and ``--json`` hold it."""
    return json.dumps(document, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------------------
# For people
# ---------------------------------------------------------------------------------------------------------

def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _seeds(listed: list, count: int, total: int) -> str:
    if count == 0:
        return "-"
    if count == total and total > 1:
        return "all"
    text = ",".join(str(s) for s in listed[:3])
    return text + (f" +{count - 3}" if count > 3 else "")


def _seed_range(seeds: list) -> str:
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(s) for s in seeds[:10]) + (f" and {len(seeds) - 10} more" if len(seeds) > 10 else "")


def _constant(d: dict) -> bool:
    return d["n"] == 0 or (d["null"] == 0 and d["min"] == d["max"])


def format_table(metrics: dict[str, dict], runs: int) -> list[str]:
    """One line per metric that differs between runs: min, p50, p90, max, mean, the seeds at min and max
    (and those where it has no value: a fault not recovered from); then the metrics every run shares."""
    varying = {name: d for name, d in metrics.items() if not _constant(d)}
    with_nulls = any(d["null"] for d in varying.values())
    head = ["metric", "min", "p50", "p90", "max", "mean", "seeds at min", "seeds at max"]
    if with_nulls:
        head.append("not recovered")
    rows = [head]
    for name, d in varying.items():
        row = [name, _num(d["min"]), _num(d["p50"]), _num(d["p90"]), _num(d["max"]), _num(d["mean"]),
               _seeds(d["min_seeds"], d["min_count"], runs), _seeds(d["max_seeds"], d["max_count"], runs)]
        if with_nulls:
            row.append(_seeds(d["null_seeds"], d["null"], runs) if d["null"] else "")
        rows.append(row)
    lines = []
    if varying:
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:6], widths[1:6])] + \
                    [c.ljust(w) for c, w in zip(r[6:], widths[6:])]
            lines.append("  ".join(cells).rstrip())
    same = [f"{name} {'not recovered' if d['n'] == 0 else _num(d['min'])}" for name, d in metrics.items()
            if _constant(d)]
    if same:
        if lines:
            lines.append("")
        line = "the same in every run:"
        for i, item in enumerate(same):
            item += "," if i < len(same) - 1 else ""
            if len(line) + 1 + len(item) > 110:
                lines.append(line)
                line = "  " + item
            else:
                line += " " + item
        lines.append(line)
    return lines


def format_sweep(document: dict, out_dir: str, shown_violations: int = 20) -> str:
    """The sweep for people: what ran, the table of metrics, the audit, and any failed run or violation."""
    d = document
    seeds = d["seeds"]
    lines = [f"sweep of {d['scenario']} ({d['source']}): {len(seeds)} seeds ({_seed_range(seeds)}), "
             f"{d['simulated_s']:g}s simulated each; {d['finished']} runs finished, {len(d['failed'])} failed"]
    a = d["audit"]
    if a is not None:
        verdict = "clean" if a["violations"] == 0 else f"{a['violations']} VIOLATIONS " + ", ".join(
            f"{k} {n}" for k, n in a["violations_by_kind"].items() if n)
        lines.append(f"audit of the {a['runs']} logs: {a['rows']} rows, {a['transitions']} transitions, "
                     f"{a['failures']} failed or refused transitions: {verdict}")
        if a["findings"]:
            lines.append("findings (not violations): " + ", ".join(
                f"{k} {n}" for k, n in a["findings_by_kind"].items() if n))
    t = d.get("timeline")
    if t is not None:
        differ = sorted(set(t["offline_seconds_differ"]) | set(t["unclean_elections_differ"]))
        lines.append(f"the logs' timelines tell the simulations' offline partition-seconds and unclean elections in "
                     f"{t['runs'] - len(differ)} of {t['runs']} runs" +
                     (f"; DIFFERENT in seeds {', '.join(str(s) for s in differ[:10])}" if differ else ""))
    v = d.get("verify")
    if v is not None:
        verdict = "every log written again, byte for byte" if v["same"] == v["logs"] else \
            f"{v['diverged']} DIVERGED, {v['unreadable']} UNREADABLE"
        lines.append(f"replay of the {v['logs']} logs: {verdict}")
        for f in v["failed"][:shown_violations]:
            lines.append(f"  seed {f['seed']}: " + (f"diverged at {f['divergence']}" if f["verdict"] == "diverged"
                                                     else f"unreadable: {f['error']}"))
    lines.append("")
    if d["metrics"]:
        lines.extend(format_table(d["metrics"], d["finished"]))
    if a is not None and a["violations"]:
        lines.append("")
        lines.append("violations by seed: " + ", ".join(f"seed {s}: {n}" for s, n in a["violations_by_seed"].items()))
        for v in a["listed"][:shown_violations]:
            lines.append(f"  seed {v['seed']} {v['source']}@{v['position']} (seq {v['seq']}, controller epoch "
                         f"{v['controller_epoch']}) {v['kind']}: {v['detail']}")
        if a["violations"] > min(shown_violations, len(a["listed"])):
            lines.append(f"  ... {a['violations'] - min(shown_violations, len(a['listed']))} more "
                         f"({len(a['listed'])} listed in {os.path.join(out_dir, SWEEP_FILE)})")
    if d["failed"]:
        lines.append("")
        for f in d["failed"]:
            lines.append(f"seed {f['seed']} failed: {f['error']} (kcontroller simulate {d['source']} "
                         f"--seed {f['seed']} --log-dir DIR runs it alone)")
    return "\n".join(lines)
