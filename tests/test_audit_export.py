"""``kcontroller export LOG_DIR... --parquet OUT`` and the audit of such an export: the export holds exactly the
rows the in-process reader reads (columnar and row batches), auditing it gives the report of auditing the logs
(violations located in the same segment and byte), on both engines; bad inputs and outputs are errors naming
the path (exit 2)."""
from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_audit_cli import damaged_log, scripted_log

import controller.state_machine_harness as harness
from audit.export import MANIFEST, ExportError, export_parquet, find_parquet_runs, read_parquet_rows
from audit.log_rows import read_log_rows
from audit.runner import PARQUET, resolve_inputs, run_audit
from events.journal import Journal
from events.log import FsyncPolicy, LogWriter
from kcontroller.cli import main


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


def columnar_log(path: Path, monkeypatch, partitions: int = 150) -> Path:
    """A scripted run whose transitions the state machines write as columnar batches (ColumnBatch)."""
    with LogWriter(path, fsync=FsyncPolicy.none(), segment_bytes=64 << 10) as writer, monkeypatch.context() as m:
        m.setattr(harness, "Journal", partial(Journal, column_sink=writer.append_columns))
        harness.run_scripted(harness.ScriptSpec(brokers=5, partitions=partitions, kill=(1, 2), seed=4),
                             writer.append)
    return path


@pytest.fixture
def logs(tmp_path, monkeypatch) -> list[str]:
    return [str(scripted_log(tmp_path / "logs" / "planted", plant_illegal=True)),
            str(scripted_log(tmp_path / "logs" / "clean", seed=3)),
            str(columnar_log(tmp_path / "logs" / "columnar", monkeypatch))]


def _report(result) -> dict:
    out = result.to_json()
    out.pop("inputs")
    return out


def test_the_export_holds_the_rows_the_reader_reads(logs, tmp_path):
    out = tmp_path / "export"
    result = export_parquet(logs, str(out))
    assert result.exit_status == 0 and [r.directory for r in result.runs] == ["run=planted", "run=clean",
                                                                              "run=columnar"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert [r["run_id"] for r in manifest["runs"]] == logs
    runs = find_parquet_runs(str(out))
    for log, run in zip(logs, runs):
        expected = sorted(read_log_rows([log]), key=lambda r: r.seq)
        assert read_parquet_rows(run) == expected
        assert run.rows == len(expected) and run.run_id == log
    # for analysts: one table with the run as a Hive partition column
    import pyarrow.dataset as ds
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    assert set(table.column("run").to_pylist()) == {"planted", "clean", "columnar"}


def test_auditing_the_export_gives_the_report_of_auditing_the_logs(logs, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", *logs, "--parquet", str(out)]) == 0
    assert "3 run(s)" in capsys.readouterr().out
    direct = run_audit(logs, engine="local")
    exported = run_audit([str(out)], engine="local")
    assert direct.exit_status == exported.exit_status == 1
    assert _report(exported) == _report(direct)
    assert [i.type for i in exported.inputs] == [PARQUET] * 3
    assert direct.report.summary["violations"] == 1 and direct.report.summary["transitions"] > 1000
    # one run of the export on its own: that run's report
    one = run_audit([str(out / "run=planted")], engine="local")
    assert _report(one) == _report(run_audit(logs[:1], engine="local"))
    assert main(["audit", str(out), "--report", str(tmp_path / "r.json")]) == 1


def test_export_json_says_what_was_written(logs, tmp_path, capsys):
    import json
    out = tmp_path / "export"
    assert main(["export", *logs, "--parquet", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] == [] and len(doc["runs"]) == 3 and doc["out"] == str(out)
    assert all(r["rows"] > 0 and r["bytes"] > 0 for r in doc["runs"])


def test_a_directory_of_parquet_files_without_a_manifest_is_read_too(logs, tmp_path):
    out = tmp_path / "export"
    export_parquet(logs[:1], str(out))
    loose = tmp_path / "loose"
    loose.mkdir()
    (out / "run=planted" / "part-00000.parquet").rename(loose / "rows.parquet")
    inputs, errors = resolve_inputs([str(loose)])
    assert not errors and [i.type for i in inputs] == [PARQUET]
    result = run_audit([str(loose)], engine="local")
    assert _report(result) == _report(run_audit(logs[:1], engine="local"))
    assert result.inputs[0].run_id == logs[0]


def test_export_errors_name_the_path_and_exit_2(logs, tmp_path, capsys):
    text = tmp_path / "state-change.log"
    text.write_text("not an event log\n")
    cases = [([str(tmp_path / "missing")], "missing: does not exist"),
             ([str(text)], "state-change.log: not an event log directory"),
             ([str(tmp_path / "nothing-*")], "no file or directory matches this glob")]
    for paths, message in cases:
        assert main(["export", *paths, "--parquet", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.startswith("kcontroller export: error: "), err
        assert not (tmp_path / "out").exists()
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    assert main(["export", logs[0], "--parquet", str(full)]) == 2
    assert f"{full}: the output directory exists and is not empty" in capsys.readouterr().err
    assert main(["export", logs[0], "--parquet", str(full), "--overwrite"]) == 2
    assert "is not empty and not an export: not overwritten" in capsys.readouterr().err
    assert (full / "x").exists()
    done = tmp_path / "done"
    assert main(["export", logs[0], "--parquet", str(done)]) == 0
    assert main(["export", logs[1], "--parquet", str(done), "--overwrite"]) == 0
    assert sorted(p.name for p in done.iterdir()) == [MANIFEST, "run=clean"]
    with pytest.raises(ExportError):
        export_parquet([], str(tmp_path / "none"))


def test_a_damaged_log_is_not_exported_and_the_others_are(logs, tmp_path, capsys):
    bad, segment = damaged_log(tmp_path / "damaged")
    out = tmp_path / "out"
    assert main(["export", str(bad), logs[1], "--parquet", str(out)]) == 2
    captured = capsys.readouterr()
    assert segment.name in captured.err and str(bad) in captured.err
    assert "1 run(s)" in captured.out
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "run=clean"]


def test_bad_parquet_is_an_input_error_naming_the_file(logs, tmp_path):
    out = tmp_path / "export"
    export_parquet(logs[:2], str(out))
    part = out / "run=clean" / "part-00000.parquet"
    part.write_bytes(b"PAR1 not really")
    result = run_audit([str(out)], engine="local")
    assert result.exit_status == 2
    planted, clean = result.inputs
    assert planted.error is None and "not a Parquet file" in clean.error and str(part) in clean.error
    assert result.report.summary["violations"] == 1          # the readable run is still audited

    other = tmp_path / "other"
    other.mkdir()
    import pyarrow as pa
    pq.write_table(pa.table({"run_id": ["x"], "seq": [1]}), other / "t.parquet")
    result = run_audit([str(other)], engine="local")
    assert result.exit_status == 2 and "no column 'source'" in result.inputs[0].error

    (out / MANIFEST).write_text("{")
    inputs, errors = resolve_inputs([str(out)])
    assert not inputs and MANIFEST in errors[0].path and "not a kcontroller export manifest" in errors[0].reason


@pytest.mark.spark
def test_spark_audits_the_export_as_it_audits_the_logs(spark, logs, tmp_path):
    out = tmp_path / "export"
    export_parquet(logs, str(out))
    on_spark = run_audit([str(out)], engine="spark")
    local = run_audit(logs, engine="local")
    assert on_spark.engine == "spark"
    a, b = _report(on_spark), _report(local)
    for report in (a, b):
        report.pop("engine"), report.pop("master")
    assert a == b
    (out / "run=clean" / "part-00000.parquet").write_bytes(b"junk")
    broken = run_audit([str(out)], engine="spark")
    assert broken.exit_status == 2 and "not a Parquet file" in broken.inputs[1].error


def test_the_columnar_fixture_has_columnar_batches(tmp_path, monkeypatch):
    from audit.log_rows import discover_segments, iter_segment_chunks
    log = columnar_log(tmp_path / "c", monkeypatch)
    assert sum(len(chunk.columnar) for ref in discover_segments([str(log)]) for chunk in iter_segment_chunks(ref)) > 3
