"""``kcontroller export LOG_DIR... --parquet OUT``: the audit's rows of event logs as Parquet, one directory per run.

For analysts (Spark, DuckDB, pandas read it as one table) and for repeated audits: ``kcontroller audit OUT``
reads the export directly and reports what an audit of the logs reports. See :mod:`audit.export`.

Exit status: 0 written, 2 an input or the output could not be used (a path that is not an event log, an
output directory that is not empty, a damaged segment: the message names the path).
"""
from __future__ import annotations

import argparse
import sys

EXIT_ERROR = 2


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="write the audit's rows of event logs as Parquet, one directory per run "
                                      "(for analysts and repeated audits: kcontroller audit reads it)")
    p.add_argument("paths", nargs="+", metavar="LOG_DIR",
                   help="an event-log directory, a directory of them (a sweep's output), or a glob of these")
    p.add_argument("--parquet", required=True, metavar="OUT",
                   help="the output directory (created; if it exists it must be empty)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier export at OUT (never a directory that is not one)")
    p.add_argument("--compression", default="zstd", choices=("zstd", "snappy", "gzip", "none"),
                   help="Parquet compression (default: %(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON: {out, runs: [{run_id, directory, rows, segments, "
                        "log_bytes, bytes, notes}], errors}")
    return p


def cmd_export(args: argparse.Namespace) -> int:
    from audit.export import ExportError, export_parquet
    try:
        result = export_parquet(args.paths, args.parquet, compression=args.compression, overwrite=args.overwrite)
    except ExportError as exc:
        print(f"kcontroller export: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        import json
        json.dump({"out": str(result.out),
                   "runs": [{"run_id": r.run_id, "directory": str(r.directory), "rows": r.rows, "segments": r.segments,
                             "log_bytes": r.log_bytes, "bytes": r.bytes, "notes": list(r.notes)} for r in result.runs],
                   "errors": [str(e) for e in result.errors]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return result.exit_status
    for run in result.runs:
        notes = f" ({'; '.join(run.notes)})" if run.notes else ""
        print(f"{run.run_id} -> {run.directory}: {run.rows} rows from {run.segments} segment(s), "
              f"{run.log_bytes} bytes of log, {run.bytes} bytes of Parquet{notes}")
    for error in result.errors:
        print(f"kcontroller export: error: {error}", file=sys.stderr)
    print(f"export: {len(result.runs)} run(s), {sum(r.rows for r in result.runs)} rows in {result.out}"
          + (f"; {len(result.errors)} log(s) not exported" if result.errors else ""))
    return result.exit_status
