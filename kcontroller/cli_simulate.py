"""``kcontroller simulate SCENARIO --log-dir DIR``: run a scenario on the simulated cluster, write its event
log, and print what it cost (offline and under-min-ISR partition-seconds, produce errors by code,
acknowledged writes lost, elections by kind, controller failovers, recovery after each fault).

``--json`` prints the same summary as JSON; ``--series FILE.csv|.json|.parquet`` writes the metrics as a
time series, one row per ``--series-interval`` (default 1 s; see :mod:`sim.series`); ``--plot FILE.png``
draws the timeline from the same series; a progress bar of simulated time goes to stderr while the run is
under way on a terminal (:mod:`kcontroller.progress`).
The log replays with ``kcontroller replay DIR``.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from kcontroller import progress
from kcontroller.files import new_event_log
from kcontroller.logging_setup import use_clock
from sim.metrics import format_summary
from sim.scenario import MAX_SEED, Scenario, ScenarioError, load_scenario, parse_time
from sim.series import SeriesError, series, series_format, write_series
from sim.simulation import Simulation, SimulationError

EXIT_OK, EXIT_ERROR = 0, 2


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("simulate", help="run a scenario (YAML) on the simulated cluster: write its event log and "
                                        "print what it cost")
    p.add_argument("scenario", metavar="SCENARIO", help="a scenario file (see docs/scenarios.md, examples/)")
    p.add_argument("--log-dir", required=True, help="where to write the event log")
    p.add_argument("--seed", type=int, default=None, help="the run's seed (default: the scenario's)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing event log in --log-dir")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the timeline of the run into this PNG file")
    p.add_argument("--series", metavar="FILE", help="write the metrics as a time series, one row per interval: "
                                                   "FILE.csv, FILE.json or FILE.parquet (columns: docs/simulation.md)")
    p.add_argument("--series-interval", metavar="TIME", default="1s",
                   help="the series' (and the plot's) interval, e.g. 1s, 500ms, 1m (default: %(default)s)")
    progress.add_option(p)
    return p


def simulate_to_log(scenario: Scenario, log_dir: str, *, seed: int | None = None,
                    progress: Callable[[int, int], object] | None = None,
                    overwrite: bool = False, interval_ms: int | None = None) -> tuple[Simulation, dict]:
    """Run ``scenario`` with ``seed`` (default: the scenario's), writing its event log into ``log_dir``
    (created if needed; it must hold no log yet unless ``overwrite``; the log appears there only once the
    run has completed): the run of ``kcontroller simulate``, also each run of a sweep. ``interval_ms``: the
    metrics' interval (default 1 s). Returns the finished simulation and its summary. Raises
    SimulationError (LogError for the log directory)."""
    with new_event_log(log_dir, overwrite=overwrite) as writer:
        sim = Simulation(scenario, seed=seed, sink=writer.append, column_sink=writer.append_columns)
        use_clock(sim.loop.clock, scenario.start_time_ms)
        if interval_ms is not None:
            sim.metrics.set_interval(interval_ms)
        sim.run(progress)
        summary = sim.finish()
    return sim, summary


def cmd_simulate(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        print(f"kcontroller: error: --seed must be in 0..{MAX_SEED}, got {args.seed}", file=sys.stderr)
        return EXIT_ERROR
    try:
        interval_ms = parse_time(args.series_interval)
        if interval_ms <= 0:
            raise ValueError("it must be positive")
        if args.series:
            series_format(args.series)
    except SeriesError as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as exc:
        print(f"kcontroller: error: --series-interval {args.series_interval!r}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    bar = progress.SimulatedTime(args.progress)
    try:
        sim, summary = simulate_to_log(scenario, args.log_dir, seed=args.seed,
                                       progress=None if bar.bar.disable else bar, overwrite=args.overwrite,
                                       interval_ms=interval_ms)
    except SimulationError as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        bar.close()
    columns = series(sim.metrics) if args.series or args.plot else None
    if args.series:
        write_series(columns, args.series)
    if args.plot:
        from sim.plot import plot_timeline
        plot_timeline(sim.metrics, args.plot, f"{scenario.name} (seed {sim.seed})", columns, summary)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_summary(summary))
        print(f"# {sim.journal.next_offset} records in {args.log_dir}; kcontroller replay {args.log_dir} runs it "
              f"again and compares" + (f"; timeline in {args.plot}" if args.plot else "")
              + (f"; time series in {args.series}" if args.series else ""))
    return EXIT_OK
