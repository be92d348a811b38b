"""``kcontroller fold PATH... (--time MS | --offset N) [--timelines] --out FILE``: the cluster state at a time or an
offset for every run, as a table (and with ``--timelines`` each partition's offline intervals and leader changes),
folded by SQL on DuckDB in process or on Spark. See :mod:`audit.state_fold` and docs/fold.md.

Outputs: ``FILE.parquet``, ``FILE.json`` or ``FILE.csv`` (by its ending) holds the state, one row per (run, topic,
partition). With ``--timelines``, Parquet and CSV write the timelines beside it (``NAME.offline.EXT``,
``NAME.leader-changes.EXT``); JSON writes one document ``{"bound", "state", "offline_intervals", "leader_changes"}``.
CSV writes lists as JSON text (``[1, 2]``, ``[{"replica": 1, "state": "OnlineReplica"}]``).

The engine: ``local`` is DuckDB (in process); ``spark`` a Spark session (``--master``,
or the one spark-submit started); ``auto`` is Spark with ``--master`` or under spark-submit, else local, as
``kcontroller replay`` chooses.

Exit status: 0 written, 2 bad input (a path that is neither an event log nor an export, an offset beyond the end of
every run, an output of another type, DuckDB missing): the message says which.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from kcontroller import progress

EXIT_OK, EXIT_ERROR = 0, 2
ENGINES = ("auto", "local", "duckdb", "spark")
FORMATS = (".parquet", ".json", ".csv")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("fold", help="the cluster state at a time or offset for every run (describe for many logs), "
                                    "and per-partition timelines, as a Parquet/JSON/CSV table (SQL on DuckDB or Spark)")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="an event-log directory, a directory of them (a sweep's output), a Parquet export "
                        "(kcontroller export --parquet) or one of its runs, or a glob of these")
    at = p.add_mutually_exclusive_group(required=True)
    at.add_argument("--time", type=int, metavar="MS", help="the state after the rows with time_ms <= MS")
    at.add_argument("--offset", type=int, metavar="N", help="the state after the rows with seq (log offset) <= N")
    p.add_argument("--timelines", action="store_true",
                   help="also each partition's offline intervals and leader changes up to the bound")
    p.add_argument("--out", required=True, metavar="FILE", dest="output",
                   help="FILE.parquet, FILE.json or FILE.csv (with --timelines Parquet and CSV write "
                        "NAME.offline.EXT and NAME.leader-changes.EXT beside it)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="local (= duckdb: in process), spark, or auto: Spark with --master or under spark-submit "
                        "(default: %(default)s)")
    p.add_argument("--master", metavar="URL", help="Spark master URL (local[2], spark://host:7077); implies Spark "
                                                   "under --engine auto")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON: {bound, engine, runs, partitions, files, notes}")
    progress.add_option(p)


def choose_engine(engine: str, master: str | None) -> str:
    from audit.spark_session import under_spark_submit
    if engine == "auto":
        return "spark" if master is not None or under_spark_submit() else "local"
    return "local" if engine == "duckdb" else engine


def output_files(output: str, timelines: bool) -> dict[str, str]:
    """Table name -> file for ``output`` (ValueError for an ending other than .parquet/.json/.csv)."""
    stem, ext = os.path.splitext(output)
    if ext.lower() not in FORMATS:
        raise ValueError(f"{output}: the output's name must end with .parquet, .json or .csv")
    files = {"state": output}
    if timelines and ext.lower() != ".json":
        files.update({"offline": f"{stem}.offline{ext}", "leader_changes": f"{stem}.leader-changes{ext}"})
    return files


def _csv_safe(table):
    """Lists and structs as JSON text: CSV has no nested values."""
    import pyarrow as pa
    columns = []
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_list(column.type) or pa.types.is_struct(column.type):
            column = pa.array([None if v is None else json.dumps(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def write_result(result, files: dict[str, str]) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    tables = {"state": result.state, "offline": result.offline, "leader_changes": result.leader_changes}
    ext = os.path.splitext(files["state"])[1].lower()
    for name in files:
        os.makedirs(os.path.dirname(os.path.abspath(files[name])), exist_ok=True)
    if ext == ".json":
        doc = {"bound": {result.bound.kind: result.bound.value}, "state": result.state.to_pylist()}
        if result.offline is not None:
            doc.update({"offline_intervals": result.offline.to_pylist(),
                        "leader_changes": result.leader_changes.to_pylist()})
        tmp = files["state"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, files["state"])
        return
    for name, file in files.items():
        if ext == ".parquet":
            pq.write_table(tables[name], file, compression="zstd")
        else:
            pcsv.write_csv(_csv_safe(tables[name]), file)


def _fold(args: argparse.Namespace, bound, engine: str):
    """The fold; on Spark with a bar of Spark's tasks on a terminal (the session made first, for the bar)."""
    from audit.state_fold import fold_paths
    if engine != "spark" or not progress.shown(args.progress):
        return fold_paths(args.paths, bound, engine=engine, timelines=args.timelines, master=args.master)
    from audit.spark_session import spark_session
    spark = spark_session(args.master, app_name="kcontroller-fold")
    with progress.SparkTasks(args.progress, spark, desc="fold (Spark tasks)"):
        return fold_paths(args.paths, bound, engine=engine, timelines=args.timelines, master=args.master)


def cmd_fold(args: argparse.Namespace) -> int:
    from audit.state_fold import Bound, FoldError
    try:
        files = output_files(args.output, args.timelines)
        bound = Bound("time", args.time) if args.time is not None else Bound("offset", args.offset)
        engine = choose_engine(args.engine, args.master)
        result = _fold(args, bound, engine)
    except (ValueError, FoldError) as exc:
        print(f"kcontroller fold: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - a damaged segment, a Parquet file that cannot be read
        from events.log import LogError
        if isinstance(exc, LogError) or type(exc).__module__.startswith(("pyarrow", "duckdb")):
            print(f"kcontroller fold: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        raise
    write_result(result, files)
    for note in result.notes:
        print(f"kcontroller fold: note: {note}", file=sys.stderr)
    summary = {"bound": {bound.kind: bound.value}, "engine": result.engine, "runs": len(result.runs),
               "partitions": result.state.num_rows, "files": files, "notes": result.notes}
    if args.timelines:
        summary.update({"offline_intervals": result.offline.num_rows, "leader_changes": result.leader_changes.num_rows})
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    extra = (f", {result.offline.num_rows} offline interval(s), {result.leader_changes.num_rows} leader change(s)"
             if args.timelines else "")
    print(f"fold at {bound} ({result.engine}): {len(result.runs)} run(s), {result.state.num_rows} partition(s){extra} "
          f"-> {', '.join(files.values())}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """``python -m kcontroller.cli_fold ...``: the command without the rest of the CLI."""
    p = argparse.ArgumentParser(prog="kcontroller fold", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return cmd_fold(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
