"""``kcontroller sweep SCENARIO --seeds N --out DIR``: run a scenario with N seeds (as Spark tasks, or in
this process with ``--engine local``), write each run's log to DIR/seed-<S>, audit every log, and print
the distribution of the simulation's metrics across the seeds (:mod:`kcontroller.sweep`).

Everything, each seed's summary included, goes to DIR/sweep.json (``--json`` prints it). Exit status 0
when every run finished and the audit found nothing, 1 when the audit found violations (or, with
``--verify``, a log did not replay the same), 2 on errors (a failed run included). On a terminal a progress bar counts the runs done (their log directories
as they appear in DIR) out of N, then the audit.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys

from audit.spark_session import active_session, spark_session, under_spark_submit
from kcontroller import progress
from kcontroller.cli_cluster import MAX_SEED, MAX_SWEEP_SEEDS
from kcontroller.sweep import (
    ENGINES, SWEEP_FILE, SweepError, check_runnable, dump_document, format_sweep, prepare_out_dir, run_sweep,
)
from sim.scenario import ScenarioError, load_scenario
from sim.simulation import SimulationError

EXIT_OK, EXIT_VIOLATIONS, EXIT_ERROR = 0, 1, 2


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sweep", help="run a scenario with many seeds (Spark tasks, or --engine local), audit "
                                     "every log, and summarise the metrics across the seeds")
    p.add_argument("scenario", metavar="SCENARIO", help="a scenario file (see docs/scenarios.md, examples/)")
    p.add_argument("--seeds", type=int, required=True, metavar="N", help="how many runs, one seed each")
    p.add_argument("--first-seed", type=int, default=None, metavar="S",
                   help="the seeds are S, S+1, ..., S+N-1 (default: S is the scenario's seed)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="where the logs (DIR/seed-<S>) and DIR/sweep.json go; on a cluster, a file system "
                        "the driver and every executor see at the same path")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier sweep in DIR")
    p.add_argument("--engine", choices=("auto", *ENGINES), default="auto",
                   help="spark: one Spark task per seed, audit on Spark; local: no JVM, the runs in this "
                        "process (or --jobs processes) and the audit in process; auto: spark when --master is "
                        "given or the command runs under spark-submit, else local "
                        "(default: %(default)s)")
    p.add_argument("--master", metavar="URL", default=None,
                   help="Spark master (local[N], spark://host:port, ...; default: the session spark-submit "
                        "started, or local[*])")
    p.add_argument("--jobs", type=int, default=1, metavar="J",
                   help="with --engine local: run the seeds in J worker processes (default: 1, in this process)")
    p.add_argument("--verify", action="store_true",
                   help="also replay every log (on the sweep's engine, one Spark task per log) and check it is "
                        "written again byte for byte; exit 1 if one is not")
    p.add_argument("--json", action="store_true", help=f"print the whole result ({SWEEP_FILE}) as JSON")
    progress.add_option(p)
    return p


def _error(message: str) -> int:
    print(f"kcontroller: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def cmd_sweep(args: argparse.Namespace) -> int:
    if not 1 <= args.seeds <= MAX_SWEEP_SEEDS:
        return _error(f"--seeds must be in 1..{MAX_SWEEP_SEEDS}, got {args.seeds}")
    if args.first_seed is not None and not 0 <= args.first_seed <= MAX_SEED - args.seeds:
        return _error(f"--first-seed must be in 0..{MAX_SEED - args.seeds}, got {args.first_seed}")
    if not 1 <= args.jobs <= 1024:
        return _error(f"--jobs must be in 1..1024, got {args.jobs}")
    if args.engine == "auto":
        args.engine = "spark" if args.master is not None or under_spark_submit() else "local"
    if args.engine == "local" and args.master is not None:
        return _error("--master is for --engine spark")
    if args.engine == "spark" and args.jobs != 1:
        return _error("--jobs is for --engine local (Spark runs one task per seed on the master's cores)")
    try:
        scenario = load_scenario(args.scenario)
        check_runnable(scenario)
    except (ScenarioError, SimulationError) as exc:
        return _error(str(exc))
    first = scenario.seed if args.first_seed is None else args.first_seed
    seeds = list(range(first, first + args.seeds))
    try:
        prepare_out_dir(args.out, args.overwrite)
    except SweepError as exc:
        return _error(str(exc))

    spark = created = None
    where = "this process" if args.jobs == 1 else f"{args.jobs} processes"
    if args.engine == "spark":
        try:
            created = active_session() is None
            spark = spark_session(args.master, app_name=f"kcontroller sweep {scenario.name}")
        except Exception as exc:  # noqa: BLE001 - no pyspark, no Java, a bad master URL: all end here
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return _error(f"cannot start Spark ({first_line}); --engine local runs the sweep without a JVM")
        where = f"Spark {spark.sparkContext.master}"
    # A run's log appears as DIR/seed-<S> once the run is complete (kcontroller.sweep.run_seed).
    pattern = os.path.join(glob.escape(args.out), "seed-*")
    try:
        with progress.Poller(args.progress, lambda: len(glob.glob(pattern)), total=len(seeds), unit="run",
                             desc=f"sweep ({where})", unit_scale=False):
            result = run_sweep(scenario, args.out, seeds, engine=args.engine, spark=spark, jobs=args.jobs,
                               log_level=args.log_level, verify=args.verify)
    finally:
        if created and spark is not None:
            spark.stop()

    for r in result.failed:
        print(f"kcontroller: seed {r['seed']} failed:\n{r['traceback']}", file=sys.stderr)
    if args.json:
        sys.stdout.write(dump_document(result.document))
    else:
        print(format_sweep(result.document, args.out))
        print(f"# {len(seeds)} runs in {result.run_seconds:.1f}s, audit in {result.audit_seconds:.1f}s ({where}); "
              f"logs in {os.path.join(args.out, 'seed-<S>')}, "
              f"everything in {os.path.join(args.out, SWEEP_FILE)}")
    if result.failed:
        return EXIT_ERROR
    return EXIT_VIOLATIONS if result.violations or result.not_replayed else EXIT_OK
