"""Audit checks written once, as SQL over the audit's rows: the candidate for one definition run by every engine.

Issue 15 asks that each check be written once and run by both engines, the in-process one on an embedded
columnar engine (DuckDB, over Arrow) and Spark. This module holds the first such check, the one measured
against the in-process engine before anything is switched (docs/benchmarks.md, "Audit engines"):

- :data:`ILLEGAL_TRANSITIONS_SQL`: every replica or partition transition whose (entity, from-state, to-state)
  is not a row of the legal-transition table (an anti-join, as a left join, with the table ``legal`` derived from
  :func:`statemachines.states.legal_transition_rows`, the same table :data:`audit.checks.LEGAL_TRANSITIONS`
  is). Transitions with an unknown from- or to-state are not judged, as in :mod:`audit.local_engine`.

The SQL reads a relation ``audit_rows`` in the shape of :mod:`audit.rows` and one ``legal`` of
(``machine``, ``from_state``, ``to_state``); it is plain SQL that DuckDB and Spark SQL both run
(:func:`duckdb_illegal_transitions`, :func:`spark_illegal_transitions`). The result's rows become the same
:class:`audit.checks.Violation` objects (detail text included) as the local engine's, through
:func:`audit.checks.violation`.

DuckDB is optional (``pip install duckdb``); it is imported only when called.
"""
from __future__ import annotations

from audit.checks import ILLEGAL_TRANSITION, Violation, sort_key, violation
from audit.rows import COLUMNS, PARTITION_TRANSITION, REPLICA_TRANSITION, AuditRow
from statemachines.states import legal_transition_rows

__all__ = ["ILLEGAL_TRANSITIONS_SQL", "ILLEGAL_TRANSITIONS_COUNT_SQL", "legal_table", "duckdb_illegal_transitions",
           "duckdb_connection", "spark_illegal_transitions", "violations_of"]

# An anti-join written as a left join (DuckDB plans NOT EXISTS here as a mark join over a copy of every
# column: measured 5x slower; Spark SQL runs either).
_ILLEGAL_FROM_WHERE = f"""
FROM audit_rows AS r
LEFT JOIN legal AS l ON l.machine = r.entity AND l.from_state = r.from_state AND l.to_state = r.to_state
WHERE r.kind IN ('{REPLICA_TRANSITION}', '{PARTITION_TRANSITION}')
  AND r.from_state IS NOT NULL AND r.to_state IS NOT NULL
  AND l.machine IS NULL
"""

ILLEGAL_TRANSITIONS_SQL = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + _ILLEGAL_FROM_WHERE
"""The rows of illegal transitions (every audit row column)."""

ILLEGAL_TRANSITIONS_COUNT_SQL = "SELECT count(*)" + _ILLEGAL_FROM_WHERE
"""How many transitions are illegal (what the benchmark times: the check without building violations)."""


def legal_table():
    """The legal-transition table as Arrow: (machine, from_state, to_state), machine = the row's ``entity``."""
    import pyarrow as pa
    rows = legal_transition_rows()
    return pa.table({"machine": pa.array([m for m, *_ in rows], pa.string()),
                     "from_state": pa.array([f for *_, f, _ in rows], pa.int32()),
                     "to_state": pa.array([t for *_, t in rows], pa.int32())})


def violations_of(columns: dict) -> list[Violation]:
    """Violations (report order) from the result's columns (name -> list of values)."""
    rows = [AuditRow(*values) for values in zip(*(columns[c] for c in COLUMNS))]
    return sorted((violation(ILLEGAL_TRANSITION, r) for r in rows), key=sort_key)


def duckdb_connection(rows, *, threads: int | None = None):
    """A DuckDB connection with ``audit_rows`` (an Arrow table or record batch reader in
    :func:`audit.rows.arrow_schema`; scanned in place, not copied) and ``legal`` registered."""
    import duckdb
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    con.register("audit_rows", rows)
    con.register("legal", legal_table())
    return con


def duckdb_illegal_transitions(rows, *, threads: int | None = None) -> list[Violation]:
    """The illegal-transition violations of ``rows`` (Arrow, :func:`audit.rows.arrow_schema`), on DuckDB."""
    con = duckdb_connection(rows, threads=threads)
    try:
        return violations_of(con.sql(ILLEGAL_TRANSITIONS_SQL).to_arrow_table().to_pydict())
    finally:
        con.close()


def spark_illegal_transitions(df) -> list[Violation]:
    """The same SQL on Spark, over a DataFrame of audit rows (``audit.rows.SPARK_DDL``)."""
    spark = df.sparkSession
    df.createOrReplaceTempView("audit_rows")
    legal = [(m, f, t) for m, _, _, f, t in legal_transition_rows()]
    spark.createDataFrame(legal, "machine string, from_state int, to_state int").createOrReplaceTempView("legal")
    found = spark.sql(ILLEGAL_TRANSITIONS_SQL).collect()
    return violations_of({c: [r[c] for r in found] for c in COLUMNS})
