"""The audit's checks in process on DuckDB: the SQL of :mod:`audit.sql_checks` over Arrow or Parquet.

Gives exactly the report of :mod:`audit.local_engine` on the same rows (``tests/test_audit_engines.py``
holds every engine to it), without a Python object per row: DuckDB scans the Arrow table in place (or
the Parquet files of an export, :func:`audit_parquet`), sorts and windows in C++ on every core, and only
the violations listed (at most ``limit`` of each list) come back to Python as rows, to become
:class:`audit.checks.Violation` objects; the counts are aggregated in DuckDB, so they are exact.

The small steps of :data:`audit.sql_checks.STEPS` (resets, eras, topic boundaries, the rows a window
marked) are made temporary tables, the others views, and the violations found one table, read for the
counts and the listings. A record batch reader is read into a table first: the checks scan the rows
several times. The KRaft-era checks have no SQL: the runner runs :func:`audit.local_engine.audit_kraft`
beside any engine.

DuckDB is a dependency (it also folds sweeps' logs); it is imported only when called.
"""
from __future__ import annotations

from collections.abc import Sequence

from audit.checks import ALL_FINDING_KINDS, ALL_VIOLATION_KINDS, Report
from audit.rows import COLUMNS, arrow_schema, arrow_table
from audit.sql_checks import COUNTS_SQL, FOUND, STATS_SQL, STEPS, legal_table, listed_sql, report_of

__all__ = ["audit", "audit_parquet", "available"]


def available() -> bool:
    """Whether duckdb can be imported."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def audit(rows, *, limit: int | None = None, threads: int | None = None) -> Report:
    """Run every check over ``rows``: a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader`` with the
    columns of :func:`audit.rows.arrow_schema`; list at most ``limit`` violations and at most ``limit``
    findings (counts are exact). ``threads``: DuckDB's (default: every core)."""
    rows = arrow_table(rows)
    con = _connect(threads)
    try:
        con.register("arrow_rows", rows)
        con.execute("CREATE TEMP VIEW audit_rows AS SELECT * FROM arrow_rows")
        return _run(con, limit)
    finally:
        con.close()


def audit_parquet(files: Sequence[str], *, limit: int | None = None, threads: int | None = None) -> Report:
    """The same over Parquet files of the audit's schema (an export's ``run=*/part-*.parquet``), read by
    DuckDB as it checks."""
    if not files:
        return audit(arrow_schema().empty_table(), limit=limit, threads=threads)
    con = _connect(threads)
    try:
        paths = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
        con.execute(f"CREATE TEMP VIEW audit_rows AS SELECT {', '.join(COLUMNS)} FROM read_parquet([{paths}])")
        return _run(con, limit)
    finally:
        con.close()


def _connect(threads: int | None):
    import duckdb
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = false")
    return con


def _run(con, limit: int | None) -> Report:
    con.register("legal", legal_table())
    for step in STEPS:
        con.execute(f"CREATE TEMP {'TABLE' if step.small else 'VIEW'} {step.name} AS {step.sql}")
    con.execute(f"CREATE TEMP TABLE found AS {FOUND}")
    counts = con.sql(COUNTS_SQL).fetchall()
    listed = [r for kinds in (ALL_VIOLATION_KINDS, ALL_FINDING_KINDS) for r in con.sql(listed_sql(kinds, limit)).fetchall()]
    stats = con.sql(STATS_SQL).fetchall()
    return report_of(listed, counts, stats, limit)
