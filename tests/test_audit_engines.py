"""The contract every audit engine passes: the local engine's report, exactly (every Violation with its detail
text, the findings, the summary, with and without a limit), on the differential corpus
(test_audit_differential.build_corpus: many runs, mutated, nulls sprinkled, shuffled) and on row sequences
hypothesis makes — random rows over small domains (so keys, orders and epochs collide) and the differential
test's mutations of synthetic runs, shuffled.

Engines: ``local`` (the reference), ``duckdb`` (audit.duckdb_engine: the SQL of audit.sql_checks, in
process; skipped without duckdb), ``spark-sql`` (the same SQL on Spark SQL, audit.sql_checks.spark_audit) and
``spark`` (audit.spark_engine's DataFrame checks); the Spark ones are marked ``spark`` and ``slow`` and share
the suite's session.
"""
from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_audit_checks import clean_run, failed, planted_run, topic_life
from test_audit_differential import build_corpus, variants

from audit import checks
from audit.local_engine import audit as local_audit
from audit.rows import KINDS, TRANSITION_FAILED, AuditRow, arrow_schema, rows_to_arrow

duckdb = pytest.importorskip("duckdb")
from audit import duckdb_engine  # noqa: E402

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


def assert_same(expected, got, engine: str) -> None:
    if got.violations != expected.violations:
        only_local = sorted(set(expected.violations) - set(got.violations), key=checks.sort_key)[:5]
        only_engine = sorted(set(got.violations) - set(expected.violations), key=checks.sort_key)[:5]
        pytest.fail(f"{engine} disagrees with the local engine: only local {only_local}, only {engine} "
                    f"{only_engine}")
    assert got.findings == expected.findings, engine
    assert got.summary == expected.summary, engine


def table_of(rows: list[AuditRow]) -> pa.Table:
    return pa.Table.from_batches([rows_to_arrow(rows)], schema=arrow_schema())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rows = build_corpus(tmp_path_factory.mktemp("audit-engines"))
    return rows, table_of(rows), local_audit(rows), local_audit(rows, limit=40)


def test_duckdb_gives_the_local_report_on_the_corpus(corpus):
    rows, table, expected, limited = corpus
    assert all(n > 0 for n in expected.summary["violations_by_kind"].values())
    assert all(n > 0 for n in expected.summary["findings_by_kind"].values())
    assert_same(expected, duckdb_engine.audit(table), "duckdb")
    assert_same(limited, duckdb_engine.audit(table, limit=40, threads=1), "duckdb")
    assert limited.summary["listed"] == 40 and limited.summary["violations"] > 40


def test_duckdb_reads_a_record_batch_reader_and_parquet(corpus, tmp_path):
    import pyarrow.parquet as pq
    rows, table, expected, _ = corpus
    assert_same(expected, duckdb_engine.audit(pa.RecordBatchReader.from_batches(table.schema, table.to_batches())),
                "duckdb")
    files = []
    for i, chunk in enumerate(range(0, table.num_rows, 20_000)):   # several files, rows of a run across them
        files.append(str(tmp_path / f"part-{i}.parquet"))
        pq.write_table(table.slice(chunk, 20_000), files[-1])
    assert_same(expected, duckdb_engine.audit_parquet(files), "duckdb (parquet)")


def test_duckdb_on_empty_input_and_bad_input():
    assert_same(local_audit([]), duckdb_engine.audit(table_of([])), "duckdb")
    assert_same(local_audit([]), duckdb_engine.audit_parquet([]), "duckdb")
    with pytest.raises(ValueError, match="lack the audit columns .*seq"):
        duckdb_engine.audit(table_of([]).drop(["seq"]))
    with pytest.raises(TypeError, match="pyarrow Table"):
        duckdb_engine.audit([("r", "s", 1)])
    twice = [failed(5, "t", 0, 1, 2, 3), failed(5, "t", 0, 1, 2, 3, error="other")]   # one (seq, source, position)
    with pytest.raises(ValueError, match="share seq 5, source 'r.log' and position 105: .* must be unique"):
        duckdb_engine.audit(table_of(twice))


# --- hypothesis: random rows over small domains, and mutated synthetic runs ------------------------------------

_maybe = st.one_of
_ids = st.lists(st.integers(0, 4), max_size=3)


@st.composite
def random_rows(draw) -> list[AuditRow]:
    """Rows of two runs with every column drawn from a few values: keys, orders (seq ties broken by source and
    position, a few nulls) and epochs collide. (seq, source, position) stays unique within a run."""
    out = []
    for position in range(draw(st.integers(0, 60))):
        kind = draw(st.sampled_from(KINDS))
        transition = kind.endswith("transition") or kind == TRANSITION_FAILED
        out.append(AuditRow(
            run_id=draw(st.sampled_from(("a", "b"))),
            source=draw(st.sampled_from(("x.log", "x.log", "y.log", None))),
            position=position,
            seq=draw(st.one_of(st.integers(0, 12), st.none())) if draw(st.integers(0, 19)) == 0
            else draw(st.integers(0, 12)),
            kind=kind,
            controller_id=draw(st.integers(-1, 2)),
            controller_epoch=draw(st.sampled_from((None, -1, 0, 1, 1, 1, 2, 2, 3, 4))),
            time_ms=draw(_maybe(st.none(), st.integers(0, 100))),
            entity=draw(st.sampled_from(("replica", "partition", "partition", None))) if transition
            else draw(st.sampled_from((None, None, None, "partition"))),
            topic=draw(st.sampled_from(("t", "t", "u", None))),
            partition=draw(st.sampled_from((0, 0, 1, -1, None))),
            replica=draw(st.sampled_from((0, 1, -1))),
            from_state=draw(_maybe(st.none(), st.integers(0, 8))),
            to_state=draw(_maybe(st.none(), st.integers(0, 8))),
            leader=draw(st.sampled_from((None, -1, 0, 1, 2))),
            leader_epoch=draw(st.sampled_from((None, -1, 0, 1, 1, 2))),
            isr=draw(_maybe(st.none(), _ids)),
            replicas=draw(_maybe(st.none(), _ids)),
            unclean=draw(st.sampled_from((None, False, True))),
            error=draw(st.sampled_from((None, "IllegalStateException", "NoReplicaOnlineException")))))
    return out


_BASES = {"clean": lambda run: clean_run(run), "planted": lambda run: planted_run(run),
          "lives": lambda run: topic_life(1, "t", (0, 1, 2), run=run) + topic_life(40, "t", (1, 2), run=run)
          + topic_life(80, "u", (2, 0), delete=False, run=run)}


@st.composite
def mutated_runs(draw) -> list[AuditRow]:
    """Synthetic runs mutated by the differential test's mutations (two or three variants of one or two
    bases), shuffled."""
    rows = []
    for i, base in enumerate(draw(st.lists(st.sampled_from(sorted(_BASES)), min_size=1, max_size=2))):
        run = _BASES[base](f"{base}{i}")
        for variant in variants(run, draw(st.integers(0, 10_000)), draw(st.integers(1, 3))):
            rows += variant
    random.Random(draw(st.integers(0, 1000))).shuffle(rows)
    return unique_order(rows)


def unique_order(rows: list[AuditRow]) -> list[AuditRow]:
    """The rows without those whose (run_id, seq, source, position) an earlier one has: the readers' contract
    (two mutations may insert a row after the same one)."""
    seen = set()
    out = []
    for r in rows:
        key = (r.run_id, r.seq, r.source, r.position)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


_LIMITS = st.sampled_from((None, None, 3))


@_SETTINGS
@given(random_rows(), _LIMITS)
def test_duckdb_gives_the_local_report_on_random_rows(rows, limit):
    assert_same(local_audit(rows, limit=limit), duckdb_engine.audit(table_of(rows), limit=limit), "duckdb")


@_SETTINGS
@given(mutated_runs(), _LIMITS)
def test_duckdb_gives_the_local_report_on_mutated_runs(rows, limit):
    assert_same(local_audit(rows, limit=limit), duckdb_engine.audit(table_of(rows), limit=limit), "duckdb")


# --- Spark: the same SQL on Spark SQL, and the DataFrame engine ------------------------------------------------

def _spark_engines():
    from audit import spark_engine
    from audit.sql_checks import spark_audit
    return {"spark-sql": spark_audit, "spark": spark_engine.audit}


@pytest.mark.spark
@pytest.mark.slow
def test_spark_sql_gives_the_local_report_on_the_corpus(spark, corpus):
    from audit.sql_checks import spark_audit
    rows, table, expected, limited = corpus
    df = spark.createDataFrame(table)
    assert_same(expected, spark_audit(df), "spark-sql")
    assert_same(limited, spark_audit(df, limit=40), "spark-sql")


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.one_of(random_rows(), mutated_runs()))
def test_spark_engines_give_the_local_report_on_generated_rows(spark, rows):
    df = spark.createDataFrame(table_of(rows))
    expected = local_audit(rows, limit=5)
    for name, engine in _spark_engines().items():
        assert_same(expected, engine(df, limit=5), name)


# --- the runner: --engine duckdb -------------------------------------------------------------------------------

def test_run_audit_with_the_duckdb_engine_reports_what_the_local_engine_reports(tmp_path):
    from test_audit_checks import history_rows

    from audit.runner import ENGINES, run_audit
    assert "duckdb" in ENGINES
    logs = [tmp_path / f"h{seed}" for seed in (3, 4)]
    for seed, log in zip((3, 4), logs):
        history_rows(seed, 60, log)
    paths = [str(p) for p in logs]
    local, duck = run_audit(paths, engine="local"), run_audit(paths, engine="duckdb")
    assert duck.engine == "duckdb" and local.engine == "local"
    assert duck.report == local.report and duck.timeline == local.timeline
    assert duck.report.summary["transitions"] > 100 and duck.exit_status == local.exit_status == 0


# --- the columnar engine (numpy over Arrow, in process) --------------------------------------------------------

def test_columnar_engine_gives_the_local_report_on_the_corpus(corpus):
    from audit import columnar_engine
    rows, table, expected, limited = corpus
    assert_same(expected, columnar_engine.audit(table), "columnar")
    assert_same(limited, columnar_engine.audit(table, limit=40), "columnar")
    assert_same(expected, columnar_engine.audit(pa.RecordBatchReader.from_batches(table.schema, table.to_batches())),
                "columnar")


def test_columnar_engine_on_empty_and_bad_input():
    from audit import columnar_engine
    assert_same(local_audit([]), columnar_engine.audit(table_of([])), "columnar")
    with pytest.raises(ValueError, match="lack the audit columns .*seq"):
        columnar_engine.audit(table_of([]).drop(["seq"]))
    with pytest.raises(TypeError, match="pyarrow Table"):
        columnar_engine.audit([("r", "s", 1)])


@_SETTINGS
@given(random_rows(), _LIMITS)
def test_columnar_engine_gives_the_local_report_on_random_rows(rows, limit):
    from audit import columnar_engine
    assert_same(local_audit(rows, limit=limit), columnar_engine.audit(table_of(rows), limit=limit), "columnar")


@_SETTINGS
@given(mutated_runs(), _LIMITS)
def test_columnar_engine_gives_the_local_report_on_mutated_runs(rows, limit):
    from audit import columnar_engine
    assert_same(local_audit(rows, limit=limit), columnar_engine.audit(table_of(rows), limit=limit), "columnar")


def test_columnar_engine_reads_dictionary_encoded_strings(corpus):
    from audit import columnar_engine
    rows, table, expected, limited = corpus
    encoded = table.cast(arrow_schema(dictionary=True))
    assert_same(expected, columnar_engine.audit(encoded), "columnar (dictionaries)")
    assert_same(limited, columnar_engine.audit(encoded, limit=40), "columnar (dictionaries)")


def test_columnar_engine_on_threads_gives_the_same_report(corpus, monkeypatch):
    from audit import columnar_engine
    rows, table, expected, limited = corpus
    monkeypatch.setattr(columnar_engine, "_PARALLEL_ROWS", 0)
    assert_same(expected, columnar_engine.audit(table, threads=2), "columnar (2 threads)")
    one_run = table.filter(pa.compute.equal(table["run_id"], table["run_id"][0]))
    assert_same(local_audit([AuditRow(**r) for r in one_run.to_pylist()], limit=7),
                columnar_engine.audit(one_run, limit=7, threads=3), "columnar (3 threads, one run)")
