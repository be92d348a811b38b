"""Our msgpack event logs as a Spark DataFrame of audit rows: a PySpark Python Data Source (Spark 4).

::

    from audit.spark_source import read_logs_df
    df = read_logs_df(spark, ["runs/*", "/data/other-run"])     # SPARK_DDL columns

or, after ``register(spark)``::

    spark.read.format("kcontroller").load("runs/run-1")             # or .load(["runs/*", "other"])
    spark.read.format("kcontroller").option("paths", json.dumps(["runs/*", "other"])).load()

Any number of log directories and globs of directories become one DataFrame in the shape of
:mod:`audit.rows` (``SPARK_DDL``), with ``run_id`` naming the log each row came from. There is
one input partition per segment file; a task decodes its segment's batches with
:mod:`audit.log_rows` (the in-process reader: same checks, same errors, same rows) and hands
them to Spark as Arrow record batches in :func:`audit.rows.arrow_schema`, about
``batchRows`` (default 65536) records at a time, without going through Python row objects.
The rows of columnar batches (``events.columns``) go from their arrays to Arrow arrays with
no Python object per record at all.

Options
- ``path`` (what ``load(path)`` sets) or ``paths`` (a JSON list; what ``load([...])`` sets):
  log directories and globs, resolved by the planning worker (relative paths against its
  working directory: that of the JVM). :func:`read_logs_df` resolves them in the calling
  process instead and passes the segments themselves (option ``segments``), so relative paths
  mean what they mean to the caller and a bad path raises a plain ``LogNotFoundError`` there.
- ``batchRows``: records decoded per Arrow batch (default 65536).

Python workers
- They need pyarrow, msgpack and google-crc32c. On a ``local`` master with no
  ``PYSPARK_PYTHON`` set, :func:`register` has the data source run this interpreter (not the
  ``python3`` on PATH, which may lack them); elsewhere set ``PYSPARK_PYTHON``.
- Our own packages (``events``, ``audit``) are shipped with the session by :func:`register`
  (``ship_code=True``), so executors need no kcontroller installation.
- On a cluster the segment files must be readable at the same absolute paths on every
  executor (a shared file system).

Errors: a damaged segment fails its task with the same ``LogCorruptError`` /
``LogRecordError`` text as the in-process reader (segment path and byte position), wrapped
by Spark. A torn tail of a log's last segment is ignored, as ``events.log.LogReader`` does.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator

import numpy as np

from audit.log_rows import (
    CHUNK_RECORDS, Const, Masked, ReadStats, RowError, SegmentRef, chunk_columns, column_values, discover_segments, gc_paused,
    iter_segment_chunks,
)
from audit.rows import SPARK_DDL, arrow_schema
from events.columns import DictColumn, ListColumn
from audit.spark_session import local_workers_run_this_python, ship_packages

try:  # pyspark is only needed to run on Spark; the Arrow conversion below works without it
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - the project depends on pyspark
    DataSource = DataSourceReader = InputPartition = object

__all__ = ["FORMAT", "KControllerDataSource", "arrow_batches", "read_logs_df", "register"]

FORMAT = "kcontroller"


# ---------------------------------------------------------------------------------------------
# Arrow batches of one segment (no Spark needed)
# ---------------------------------------------------------------------------------------------

def arrow_batches(ref: SegmentRef, chunk_records: int = CHUNK_RECORDS, stats: ReadStats | None = None,
                  vectorised: bool = True, dictionary: bool = False) -> Iterator:
    """The segment's rows as ``pyarrow.RecordBatch`` objects in ``arrow_schema()``.

    Up to ``chunk_records`` records are decoded at a time; their rows become one batch per
    record kind present (rows of one kind in log order; order across batches is not log
    order: sort by ``seq`` where it matters). ``stats`` (optional) is filled in as the
    in-process reader does (torn tails included). ``vectorised=False`` decodes row batches into
    record tuples (:mod:`audit.row_columns` is the default, with that path as its fallback).
    ``dictionary``: string columns dictionary-encoded (``arrow_schema(dictionary=True)``), straight from the
    columnar batches' dictionaries, without a string per row.
    """
    import pyarrow as pa
    schema = arrow_schema(dictionary)
    types = [f.type for f in schema]
    chunks = iter_segment_chunks(ref, chunk_records, stats, vectorised)
    while True:
        with gc_paused():  # the chunk's records are built into batches and freed before the collector returns
            chunk = next(chunks, None)
            if chunk is None:
                return
            batches = []
            parts = chunk_columns(chunk)
            for n, columns in parts:
                try:
                    arrays = [_arrow_column(c, n, t, pa) for c, t in zip(columns, types)]
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                    raise _first_misfit(ref, parts, schema, exc, pa) from exc
                batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
                del arrays, columns
            del chunk, parts
        yield from batches
        del batches


def read_log_table(log_dir: str, *, dictionary: bool = False, stats: ReadStats | None = None):
    """Every segment of the event log in ``log_dir`` as one Arrow table (:func:`arrow_batches`), and the error
    that stopped the reading (``None`` when it read to the end): the rows before a damaged record are kept, as
    the in-process reader keeps them. ``stats`` is filled in (torn tails)."""
    import pyarrow as pa

    from events.log import LogError
    batches: list = []
    error = None
    try:
        for ref in discover_segments([log_dir]):
            batches.extend(arrow_batches(ref, stats=stats, dictionary=dictionary))
    except LogError as exc:
        error = str(exc)
    return pa.Table.from_batches(batches, schema=arrow_schema(dictionary)), error


def _first_misfit(ref: SegmentRef, parts: list, schema, exc: Exception, pa) -> RowError:
    """The error for the chunk's first record, in log order, with a value that does not fit its Arrow column
    (the chunk's parts are per kind: the first part to fail need not hold the first such record)."""
    errors = []
    for n, columns in parts:
        try:
            [_arrow_column(c, n, f.type, pa) for c, f in zip(columns, schema)]
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as part_exc:
            errors.append(_misfit(ref, columns, schema, part_exc, pa))
    if not errors:
        return RowError(ref.file, 0, None, f"the records do not fit the audit row schema: {exc}")
    return min(errors, key=lambda e: (e.offset is None, e.offset or 0, e.position))


def _misfit(ref: SegmentRef, columns: list, schema, exc: Exception, pa) -> RowError:
    """The error for the first row whose value does not fit its Arrow column."""
    def at(column, i):
        return column.value if type(column) is Const else column_values(column)[i]
    for column, f in zip(columns, schema):
        if type(column) is Const:
            continue
        for i, value in enumerate(column_values(column)):
            if type(value) is tuple:
                value = list(value)    # as the decoders give int lists (tuples from records, lists from columns)
            try:
                pa.array([value], type=f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as row_exc:
                return RowError(ref.file, at(columns[2], i), at(columns[3], i), f"{f.name} value {value!r:.100} "
                                f"does not fit the audit row column ({f.type}): {row_exc}")
    return RowError(ref.file, at(columns[2], 0), None, f"the records do not fit the audit row schema: {exc}")


_CONSTANTS: dict = {}


def _const_column(value, n: int, type_, pa):
    if value is None:
        return pa.nulls(n, type_)
    if pa.types.is_dictionary(type_):
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))
    return pa.repeat(pa.scalar(value, type=type_), n)


def _arrow_column(column, n: int, type_, pa, mask=None):
    """One Arrow column of a batch from a column of :func:`audit.log_rows.chunk_columns`; the
    columns of columnar batches (numpy arrays, dictionaries, offset/value lists) without a
    Python object per row. ``mask``: True where the value is None."""
    kind = type(column)
    if kind is Const:
        # The same constant column (a run's id, a segment's name, a kind's nulls) recurs in every batch: one
        # immutable array of it is shared, not made again (most of a read's fresh memory).
        key = (column.value, type(column.value), type_, n)
        shared = _CONSTANTS.get(key)
        if shared is None:
            if len(_CONSTANTS) > 256:
                _CONSTANTS.clear()
            shared = _CONSTANTS[key] = _const_column(column.value, n, type_, pa)
        return shared
    if pa.types.is_dictionary(type_):
        if kind is Masked:
            return _arrow_column(column.values, n, type_, pa, ~column.valid)
        if kind is DictColumn:
            return pa.DictionaryArray.from_arrays(pa.array(column.codes, pa.int32(), mask=mask),
                                                  pa.array(column.dictionary, pa.string()))
        return pa.array(column, type=type_, mask=mask)
    if kind is Masked:
        return _arrow_column(column.values, n, type_, pa, ~column.valid)
    if kind is DictColumn:
        return pa.array(column.dictionary, type_).take(pa.array(column.codes, pa.int32(), mask=mask))
    if kind is ListColumn:
        values, offsets = column.values, column.offsets
        if mask is not None and mask.any():   # the values of lists that are None are not the rows' values
            lengths = np.diff(offsets)
            values = values[np.repeat(~mask, lengths)]
            offsets = np.concatenate(([0], np.cumsum(np.where(mask, 0, lengths)))).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values, type_.value_type),
                                        type=type_, mask=None if mask is None else pa.array(mask, pa.bool_()))
    if mask is not None and isinstance(column, np.ndarray) and mask.any():
        column = np.where(mask, 0, column)    # (nor are the values that are None)
    return pa.array(column, type=type_, mask=mask)


# ---------------------------------------------------------------------------------------------
# The data source
# ---------------------------------------------------------------------------------------------

class SegmentPartition(InputPartition):
    """One segment file: one Spark input partition."""

    def __init__(self, ref: SegmentRef):
        super().__init__(tuple(ref))


class KControllerReader(DataSourceReader):
    """Plans one partition per segment and reads each into Arrow batches."""

    def __init__(self, options):
        self.options = {k.lower(): v for k, v in dict(options).items()}   # Spark hands them lower-cased
        self.chunk_records = int(self.options.get("batchrows", CHUNK_RECORDS))
        if self.chunk_records < 1:
            raise ValueError(f"batchRows must be at least 1, got {self.chunk_records}")

    def partitions(self):
        return [SegmentPartition(ref) for ref in _segments_from_options(self.options)]

    def read(self, partition):
        if partition.value is None:   # Spark plans one empty partition when there is no segment at all
            return iter(())
        return arrow_batches(SegmentRef(*partition.value), self.chunk_records)


class KControllerDataSource(DataSource):
    """``spark.read.format("kcontroller")``: audit rows of our msgpack event logs."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SPARK_DDL

    def reader(self, schema) -> KControllerReader:
        return KControllerReader(self.options)


def _segments_from_options(options: dict) -> list[SegmentRef]:
    if "segments" in options:
        return [SegmentRef(*ref) for ref in json.loads(options["segments"])]
    paths = []
    if "paths" in options:
        paths = json.loads(options["paths"])
        if isinstance(paths, str):
            paths = [paths]
    if "path" in options:
        paths = [options["path"], *paths]
    if not paths:
        raise ValueError(f'the {FORMAT} data source needs log directories: load(path) or '
                         f'option("paths", <JSON list of directories and globs>)')
    return discover_segments(paths)


# ---------------------------------------------------------------------------------------------
# Session helpers
# ---------------------------------------------------------------------------------------------

_registered: set[tuple] = set()


def register(spark, *, ship_code: bool = True) -> None:
    """Register the ``kcontroller`` format with ``spark`` (idempotent per session).

    ``ship_code`` adds a zip of our ``events`` and ``audit`` packages (as imported here) to
    the session's Python files, so that Python workers run the same reader code as this
    process whether or not kcontroller is installed where they run. The zip is not put on this
    process's own ``sys.path``.
    """
    key = (spark.sparkContext.applicationId, id(spark), ship_code)
    if key in _registered:
        return
    if ship_code:
        ship_packages(spark, ("events", "audit"))   # what the reader's tasks import
    # Local workers run on this machine: let them use this interpreter (it has pyarrow, msgpack,
    # google-crc32c). Only the data source registered here carries it; the session's other Python
    # functions are untouched.
    with local_workers_run_this_python(spark.sparkContext):
        spark.dataSource.register(KControllerDataSource)
    _registered.add(key)


def read_logs_df(spark, paths: str | os.PathLike | Iterable[str | os.PathLike], *,
                 batch_rows: int = CHUNK_RECORDS, ship_code: bool = True):
    """One DataFrame (``SPARK_DDL``) of the audit rows of every log directory in ``paths``
    (directories and globs of directories, resolved here; see
    :func:`audit.log_rows.resolve_log_dirs`), one input partition per segment file."""
    refs = discover_segments(paths)
    register(spark, ship_code=ship_code)
    return (spark.read.format(FORMAT)
            .option("segments", json.dumps([list(ref) for ref in refs]))
            .option("batchRows", str(int(batch_rows)))
            .load())

