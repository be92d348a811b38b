"""The audit's rows as Parquet: ``kcontroller export LOG_DIR... --parquet OUT``, and reading such an export back.

An export holds the rows :mod:`audit.log_rows` reads from our event logs (the shape of
:mod:`audit.rows`, :func:`audit.rows.arrow_schema`), one directory per log, Hive-style so that any
Parquet reader sees the run as a column::

    OUT/_kcontroller_export.json          the manifest: format, schema, one entry per run
    OUT/run=<name>/part-00000.parquet     the rows of one log, in log order (seq), a row group per segment

``<name>`` is the log directory's base name (characters other than letters, digits, ``.``, ``_``
and ``-`` replaced by ``_``; ``~2``, ``~3`` ... when two logs share one); the rows keep their
``run_id``, ``source`` and ``position``, so an audit of the export reports exactly what an audit of
the logs reports (violations name the segment file and byte). The rows of each segment go from the
log's columnar batches to Arrow with :func:`audit.spark_source.arrow_batches` (no Python object per
row for columnar batches).

For analysts: ``spark.read.parquet("OUT")``, ``pyarrow.dataset.dataset("OUT", partitioning="hive")``
or DuckDB's ``read_parquet('OUT/*/*.parquet', hive_partitioning = true)`` read it as one table.

Reading back (:func:`find_parquet_runs`, :func:`read_parquet_rows`): ``kcontroller audit`` takes an
export's directory (every run) or one of its ``run=`` directories (that run), and also any
directory holding ``*.parquet`` files of the audit's schema. Files are checked against the schema
before anything is audited; a file that is not Parquet, or lacks a column, or holds one of another
type, is an input error naming the file (:class:`ParquetInputError`).

An export refuses (:class:`ExportError`, naming the path) a path that is not an event log or a
directory of them, and an output directory that exists and is not empty (with ``overwrite``, an
earlier export there is replaced; any other directory is still refused). A log that cannot be read
(a damaged segment) is not exported: its partial directory is removed and the error names its
segment and byte; the other logs are exported, and the manifest lists only the runs written.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field

from audit.log_rows import ReadStats, SegmentRef
from audit.rows import COLUMNS, arrow_schema
from events.log import LogError

__all__ = [
    "MANIFEST", "EXPORT_FORMAT", "ExportError", "ExportResult", "ParquetInputError", "ParquetRun", "export_parquet",
    "find_parquet_runs", "is_parquet_dir", "read_parquet_rows", "read_parquet_table", "parquet_files",
]

MANIFEST = "_kcontroller_export.json"
EXPORT_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class ExportError(Exception):
    """An input or output an export cannot use; ``path`` names it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class ParquetInputError(Exception):
    """A Parquet file or directory the audit cannot read as audit rows; ``path`` names it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass
class ExportedRun:
    run_id: str
    directory: str         # relative to the export's root: run=<name>
    rows: int
    segments: int
    bytes: int             # Parquet bytes written
    log_bytes: int         # segment bytes read
    notes: list[str] = field(default_factory=list)


@dataclass
class ExportResult:
    out: str
    runs: list[ExportedRun]
    errors: list[ExportError]

    @property
    def exit_status(self) -> int:
        return 2 if self.errors else 0


# --- writing --------------------------------------------------------------------------------------------------

def _event_logs(paths: Iterable[str]) -> tuple[list[tuple[str, list[SegmentRef]]], list[ExportError]]:
    """(log directory, segments) of every event log named by ``paths`` (see audit.runner's inputs), in order."""
    from audit.runner import EVENT_LOG, resolve_inputs
    logs, errors = [], []
    for arg in paths:
        arg = os.fspath(arg)
        inputs, problems = resolve_inputs([arg])
        errors += [ExportError(p.path, p.reason) for p in problems]
        for i in inputs:
            if i.type != EVENT_LOG:
                what = "a Parquet export" if is_parquet_dir(i.path) else "not an event log directory (no *.kclog segment)"
                errors.append(ExportError(i.path, what))
            else:
                logs.append((i.path, i.segments))
    seen, unique = set(), []
    for path, refs in logs:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append((path, refs))
    return unique, errors


def _check_out(out: str, overwrite: bool) -> None:
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise ExportError(out, "the output exists and is not a directory")
        if os.listdir(out):
            if overwrite and os.path.isfile(os.path.join(out, MANIFEST)):
                shutil.rmtree(out)
            elif overwrite:
                raise ExportError(out, "the output directory is not empty and not an export: not overwritten")
            else:
                raise ExportError(out, "the output directory exists and is not empty (--overwrite replaces an "
                                       "earlier export)")


def _names(logs: list[str]) -> list[str]:
    names, taken = [], set()
    for path in logs:
        base = _UNSAFE.sub("_", os.path.basename(os.path.normpath(path))) or "run"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}~{n}"
        taken.add(name)
        names.append(name)
    return names


def _sorted_segment_table(ref: SegmentRef, stats: ReadStats):
    """The segment's rows as one Arrow table in log order (rows of one record keep their order)."""
    import pyarrow as pa

    from audit.spark_source import arrow_batches
    batches = list(arrow_batches(ref, stats=stats))
    if not batches:
        return None
    table = pa.Table.from_batches(batches, schema=arrow_schema())
    return table.take(table["seq"].combine_chunks().to_numpy().argsort(kind="stable"))


def export_parquet(paths: Iterable[str], out: str, *, compression: str = "zstd", overwrite: bool = False) -> ExportResult:
    """Write the audit rows of every event log named by ``paths`` (log directories, directories of logs,
    globs) under ``out`` (see the module docstring). Raises :class:`ExportError` when no log can be
    exported because of the output or the inputs (nothing is written then); a log that fails while being
    read is reported in the result's ``errors`` and left out. ``overwrite`` replaces an earlier export at
    ``out`` (a directory with the manifest), never another directory."""
    import pyarrow.parquet as pq

    paths = [os.fspath(p) for p in paths]
    out = os.fspath(out)
    logs, errors = _event_logs(paths)
    if errors:
        raise errors[0] if len(errors) == 1 else ExportError(
            errors[0].path, errors[0].reason + f" (and {len(errors) - 1} more input error(s): "
            + "; ".join(str(e) for e in errors[1:4]) + ")")
    if not logs:
        raise ExportError(", ".join(paths) or "(no path)", "no event log to export")
    _check_out(out, overwrite)
    os.makedirs(out, exist_ok=True)
    schema = arrow_schema()
    runs: list[ExportedRun] = []
    failed: list[ExportError] = []
    for (log, refs), name in zip(logs, _names([p for p, _ in logs])):
        directory = f"run={name}"
        run_dir = os.path.join(out, directory)
        os.makedirs(run_dir)
        file = os.path.join(run_dir, "part-00000.parquet")
        stats = ReadStats()
        rows = 0
        try:
            with pq.ParquetWriter(file, schema, compression=compression) as writer:
                for ref in refs:
                    table = _sorted_segment_table(ref, stats)
                    if table is not None:
                        writer.write_table(table, row_group_size=max(1, table.num_rows))
                        rows += table.num_rows
        except LogError as exc:
            shutil.rmtree(run_dir, ignore_errors=True)
            failed.append(ExportError(log, str(exc)))
            continue
        runs.append(ExportedRun(os.path.normpath(log), directory, rows, len(refs), os.path.getsize(file),
                                sum(os.path.getsize(r.file) for r in refs), [str(t) for t in stats.torn_tails]))
    manifest = {"format": EXPORT_FORMAT, "what": "kcontroller audit rows (audit.rows.AuditRow), one directory per run",
                "columns": [[f.name, str(f.type)] for f in schema],
                "runs": [{"run_id": r.run_id, "directory": r.directory, "rows": r.rows, "segments": r.segments,
                          "bytes": r.bytes, "log_bytes": r.log_bytes, "notes": r.notes} for r in runs]}
    tmp = os.path.join(out, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(out, MANIFEST))
    return ExportResult(out, runs, failed)


# --- reading --------------------------------------------------------------------------------------------------

@dataclass
class ParquetRun:
    """One directory of Parquet files to audit: a run of an export, or any directory of such files."""
    path: str
    files: list[str]
    run_id: str | None       # from the export's manifest (None: the files' own run_id column)
    rows: int | None         # from the manifest
    bytes: int


def parquet_table(path: str):
    """A Parquet file of audit rows as an Arrow table of the audit's columns, its strings read as dictionaries
    (``audit.rows.arrow_schema(dictionary=True)`` once cast)."""
    import pyarrow.parquet as pq
    text = [f.name for f in arrow_schema() if str(f.type) == "string"]
    return pq.read_table(path, columns=list(COLUMNS), read_dictionary=text).select(list(COLUMNS))


def parquet_files(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names
            if n.endswith(".parquet") and not n.startswith((".", "_")) and os.path.isfile(os.path.join(directory, n))]


def is_parquet_dir(directory: str) -> bool:
    """An export's root (it has the manifest) or a directory holding ``*.parquet`` files."""
    return os.path.isfile(os.path.join(directory, MANIFEST)) or bool(parquet_files(directory))


def _manifest(root: str) -> dict:
    path = os.path.join(root, MANIFEST)
    try:
        with open(path) as f:
            manifest = json.load(f)
        if manifest.get("format") != EXPORT_FORMAT or not isinstance(manifest.get("runs"), list):
            raise ValueError(f"format {manifest.get('format')!r}, expected {EXPORT_FORMAT}")
        return manifest
    except (OSError, ValueError, AttributeError) as exc:
        raise ParquetInputError(path, f"not a kcontroller export manifest: {exc}") from None


def find_parquet_runs(directory: str) -> list[ParquetRun]:
    """The runs of a Parquet directory (an export's root: each of its runs; a run directory or any
    directory of ``*.parquet`` files: that one). ParquetInputError for a manifest that cannot be read
    or a run directory it names that is missing or empty."""
    directory = os.path.normpath(directory)
    if os.path.isfile(os.path.join(directory, MANIFEST)):
        runs = []
        for entry in _manifest(directory)["runs"]:
            run_dir = os.path.join(directory, str(entry.get("directory")))
            files = parquet_files(run_dir)
            if not files:
                raise ParquetInputError(run_dir, "a run the export's manifest lists has no Parquet file")
            runs.append(ParquetRun(run_dir, files, entry.get("run_id"), entry.get("rows"),
                                   sum(os.path.getsize(f) for f in files)))
        return runs
    files = parquet_files(directory)
    if not files:
        raise ParquetInputError(directory, "no Parquet file in this directory")
    run_id = rows = None
    parent = os.path.dirname(directory)
    if os.path.isfile(os.path.join(parent, MANIFEST)):
        for entry in _manifest(parent)["runs"]:
            if os.path.normpath(os.path.join(parent, str(entry.get("directory")))) == directory:
                run_id, rows = entry.get("run_id"), entry.get("rows")
    return [ParquetRun(directory, files, run_id, rows, sum(os.path.getsize(f) for f in files))]


def check_schema(file: str) -> None:
    """ParquetInputError unless ``file`` is Parquet with every audit row column, each of its type."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        found = pq.read_schema(file)
    except (OSError, pa.ArrowException) as exc:
        raise ParquetInputError(file, f"not a Parquet file: {exc}") from None
    for f in arrow_schema():
        i = found.get_field_index(f.name)
        if i < 0:
            raise ParquetInputError(file, f"no column {f.name!r}: not a file of audit rows "
                                          f"(expected the columns of audit.rows.AuditRow)")
        if not found.field(i).type.equals(f.type):
            raise ParquetInputError(file, f"column {f.name!r} is {found.field(i).type}, expected {f.type}")


def read_parquet_table(run: ParquetRun):
    """The run's rows as one Arrow table in :func:`audit.rows.arrow_schema` (schema-checked)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    tables = []
    for file in run.files:
        check_schema(file)
        try:
            tables.append(pq.read_table(file, columns=list(COLUMNS)).select(list(COLUMNS)))
        except (OSError, pa.ArrowException) as exc:
            raise ParquetInputError(file, f"cannot be read: {exc}") from None
    return pa.concat_tables(tables).cast(arrow_schema())


def read_parquet_rows(run: ParquetRun) -> list:
    """The run's rows as :class:`audit.rows.AuditRow` tuples, in file order (schema-checked)."""
    from functools import partial

    from audit.rows import AuditRow
    table = read_parquet_table(run)
    columns = [table.column(name).to_pylist() for name in COLUMNS]
    return list(map(partial(tuple.__new__, AuditRow), zip(*columns)))
