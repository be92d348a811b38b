"""The audit's illegal-transition check written once as SQL (audit.sql_checks) gives the local engine's verdicts:
on DuckDB over the differential test's corpus (every run, mutated ones with illegal transitions planted, nulls
sprinkled), and on Spark SQL over the same rows."""
from __future__ import annotations

import pyarrow as pa
import pytest
from test_audit_differential import build_corpus

from audit.checks import ILLEGAL_TRANSITION
from audit.local_engine import audit as local_audit
from audit.rows import rows_to_arrow

duckdb = pytest.importorskip("duckdb")
from audit.sql_checks import duckdb_illegal_transitions, spark_illegal_transitions  # noqa: E402

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rows = build_corpus(tmp_path_factory.mktemp("sql-checks"))
    expected = [v for v in local_audit(rows).violations if v.kind == ILLEGAL_TRANSITION]
    return rows, expected


def test_duckdb_finds_the_illegal_transitions_the_local_engine_finds(corpus):
    rows, expected = corpus
    assert len(expected) > 20 and len({v.run_id for v in expected}) > 10
    table = pa.Table.from_batches([rows_to_arrow(rows)])
    assert duckdb_illegal_transitions(table) == expected
    assert duckdb_illegal_transitions(table, threads=1) == expected


def test_no_illegal_transition_in_a_clean_run():
    from test_audit_checks import clean_run
    assert duckdb_illegal_transitions(pa.Table.from_batches([rows_to_arrow(clean_run("clean"))])) == []


@pytest.mark.spark
@pytest.mark.slow
def test_the_same_sql_on_spark(spark, corpus):
    rows, expected = corpus
    assert spark_illegal_transitions(spark.createDataFrame(pa.Table.from_batches([rows_to_arrow(rows)]))) == expected
