"""``kcontroller audit``: inputs, engines, exit statuses, the JSON and HTML reports, and the verdict on
every real Kafka log in ../shared/real-logs (controller-epoch resets, unclean and failed elections,
deletions stuck in ReplicaDeletionIneligible, and the KRaft files' findings)."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from audit.runner import EVENT_LOG, KAFKA_LOG, resolve_inputs, run_audit
from controller.state_machine_harness import ScriptSpec, run_scripted
from events import records as R
from events.log import FsyncPolicy, LogWriter
from kcontroller.cli import main
from statemachines.states import ReplicaState

REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or Path(__file__).parents[1].parent / "shared" / "real-logs")
needs_real_logs = pytest.mark.skipif(not REAL_LOGS.is_dir(), reason=f"no real logs at {REAL_LOGS}")

# What each real file shows, as the audit must find it: violations and findings by kind (files not
# listed have neither). Every entry was checked against the file and its line in INDEX.md.
REAL_VERDICTS = {
    "1316591029-kafka-0.10.1-state-change.log": ({}, {"failed_election": 1}),
    "andreastraut-kafka-2.8.0-controller-2021-04-28.log": ({"controller_epoch_reset": 1}, {}),
    "andreastraut-kafka-2.8.0-state-change-2021-04-28-part1.log": ({}, {"failed_election": 29}),
    "andreastraut-kafka-2.8.0-state-change-2021-04-28-part2.log": ({}, {"failed_election": 28}),
    "andreastraut-kafka-2.8.0-state-change-2021-04-28-part3.log": ({}, {"failed_election": 5}),
    "andreastraut-kafka-2.8.0-state-change-2021-04-28-part4.log": ({"controller_epoch_reset": 1},
                                                                   {"failed_election": 16}),
    "andreinedelciu-kafka-brokers-public-controller.log": ({}, {"unclean_election": 3}),
    "andreinedelciu-kafka-brokers-public-state-change-2020-10-28-15.log": ({}, {"failed_election": 6}),
    "andreinedelciu-kafka-brokers-public-state-change-part1.log": ({}, {"failed_election": 6}),
    "andreinedelciu-kafka-brokers-public-state-change-part2.log": ({}, {"unclean_election": 3,
                                                                        "failed_election": 20}),
    "bitterdone-k2.3.1-state-change-deletion-retry.log": ({"controller_epoch_reset": 1}, {"deletion_stuck": 1}),
    "choopong-kafka-1.1-state-change.log": ({}, {"failed_election": 51}),
    "citypulse-kafka-1.0-state-change-part1.log": ({}, {"failed_election": 16}),
    "citypulse-kafka-1.0-state-change-part2.log": ({}, {"failed_election": 2}),
    "darrendao-kafka-0.8.1-controller-2014-02-02-01.log": ({"controller_epoch_reset": 1}, {}),
    "darrendao-kafka-0.8.1-state-change-2014-02-02-02.log": ({}, {"failed_election": 1}),
    "darrendao-kafka-0.8.1-state-change.log": ({}, {"failed_election": 1}),
    "parasmani300-kafka-2.5-state-change-deletion-ineligible.log": ({}, {"deletion_stuck": 6}),
    "vishalbb27-kafka-3.2.1-controller-part1.log": ({"controller_epoch_reset": 1}, {}),
    "vishalbb27-kafka-3.2.1-state-change-part2.log": ({}, {"failed_election": 2}),
    "vishalbb27-kafka-3.2.1-state-change-part3.log": ({}, {"failed_election": 34}),
    # KRaft files: the KRaft checks' findings (tests/test_kraft_logs.py checks each against its file).
    "ammar-kafka-4.0-controller-fencing.log": ({}, {"kraft_session_timeout": 6, "kraft_restart_in_old_session": 5}),
    "betrajj-kafka-kraft-3.9-controller-2025-02-07-11.log": ({}, {"kraft_controller_churn": 1}),
    "betrajj-kafka-kraft-3.9-controller-2025-02-11-15.log": ({}, {"kraft_controller_churn": 3}),
    "betrajj-kafka-kraft-3.9-state-change.log": ({}, {"kraft_leader_epoch_gap": 5}),
    "graphlogistics-kafka-4.1.1-controller-elr.log": ({}, {"kraft_session_timeout": 1, "kraft_elr_election": 52}),
    "graphlogistics-kafka-4.1.1-state-change.log": ({}, {"kraft_leader_epoch_gap": 52}),
}
KRAFT_FILES = 8
NOT_LOGS = {"INDEX.md", "confluentinc-examples-multiregion-describe-liveobservers.txt",
            "confluentinc-examples-multiregion-describe.txt",
            "ghshu-kafka-notes-describe-leader-none-broker-id-change.txt",
            "yunanjeong-kafka-test-consumer-offsets-reassignment.json"}


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


def scripted_log(path: Path, *, plant_illegal: bool = False, seed: int = 0, batch_records: int = 1000) -> Path:
    """An event log of a scripted run (broker 1 killed); optionally with one illegal transition planted at
    its end (OnlineReplica -> NewReplica)."""
    records: list = []
    run_scripted(ScriptSpec(brokers=4, partitions=8, kill=(1,), seed=seed), records.append)
    if plant_illegal:
        last = records[-1]
        records.append(R.ReplicaTransition(R.ReplicaTransition.KIND, R.SCHEMA_VERSION, last.offset + 1,
                                           last.controller_id, last.controller_epoch, last.timestamp_ms, last.offset,
                                           "planted", 0, 2, ReplicaState.OnlineReplica.byte,
                                           ReplicaState.NewReplica.byte))
    with LogWriter(path, fsync=FsyncPolicy.none(), batch_records=batch_records) as writer:
        for rec in records:
            writer.append(rec)
    return path


def by_run_and_kind(items: list) -> dict:
    out: dict = {}
    for v in items:
        out.setdefault(v.run_id, Counter())[v.kind] += 1
    return out


# --- the real logs ----------------------------------------------------------------------------------------

@needs_real_logs
def test_every_real_file_is_read_and_audited_as_it_shows():
    result = run_audit([str(REAL_LOGS)], engine="local", limit=None)
    assert not result.errors
    # The tool outputs and the index are not logs in any layout: input errors, which say so.
    not_logs = {os.path.basename(i.path) for i in result.inputs if i.error}
    assert not_logs == NOT_LOGS
    assert all(i.error.startswith("not a Kafka log: none of its") for i in result.inputs if i.error)
    names = {os.path.basename(i.path) for i in result.inputs}
    assert len(names) == 62 and "INDEX.md" in names   # the 61 files, and the index (not a log: said so)
    violations = by_run_and_kind(result.report.violations)
    findings = by_run_and_kind(result.report.findings)
    for i in result.inputs:
        name = os.path.basename(i.path)
        expected = REAL_VERDICTS.get(name, ({}, {}))
        got = (dict(violations.get(i.run_id, {})), dict(findings.get(i.run_id, {})))
        assert got == expected, name
    # KRaft files make no audit rows but KRaft rows, and the report says so.
    kraft = [i for i in result.inputs if i.reading is not None and i.reading.kraft]
    assert len(kraft) == KRAFT_FILES and all(i.reading.rows == [] and i.reading.kraft_rows for i in kraft)
    assert any("KRaft has no controller state machines" in n for n in result.notes)
    # Resets are the only violations; the files that are not logs make the audit exit 2.
    assert result.exit_status == 2
    assert result.report.summary["violations_by_kind"]["controller_epoch_reset"] == 5


@needs_real_logs
def test_a_real_file_without_violations_exits_0_and_findings_do_not_fail_it(capsys):
    path = REAL_LOGS / "parasmani300-kafka-2.5-state-change-deletion-ineligible.log"
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert "audit: clean" in out and "deletion_stuck 6" in out and "second_topic" in out


# --- our own logs ---------------------------------------------------------------------------------------

def test_a_clean_log_exits_0_and_a_planted_violation_exits_1(tmp_path, capsys):
    clean = scripted_log(tmp_path / "clean")
    bad = scripted_log(tmp_path / "bad", plant_illegal=True)
    assert main(["audit", str(clean)]) == 0
    assert "audit: clean" in capsys.readouterr().out
    assert main(["audit", str(clean), str(bad), "--report", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "VIOLATIONS FOUND" in out and "illegal_transition" in out and "OnlineReplica -> NewReplica" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_status"] == 1 and report["summary"]["violations_by_run"] == {str(tmp_path / "bad"): 1}
    v, = report["violations"]
    assert (v["kind"], v["topic"], v["replica"], v["from"], v["to"]) == (
        "illegal_transition", "planted", 2, "OnlineReplica", "NewReplica")
    assert v["source"].startswith(str(tmp_path / "bad")) and v["position"] > 0
    assert {i["path"]: i["rows"] > 0 for i in report["inputs"]} == {str(tmp_path / "clean"): True,
                                                                     str(tmp_path / "bad"): True}


def test_a_directory_of_logs_and_globs_name_every_run_once(tmp_path):
    for i in range(3):
        scripted_log(tmp_path / "sweep" / f"seed-{i}", seed=i)
    inputs, errors = resolve_inputs([str(tmp_path / "sweep"), str(tmp_path / "sweep" / "seed-*")])
    assert not errors and [os.path.basename(i.path) for i in inputs] == ["seed-0", "seed-1", "seed-2"]
    assert {i.type for i in inputs} == {EVENT_LOG}


def test_unreadable_inputs_exit_2_and_the_rest_is_still_audited(tmp_path, capsys):
    log = scripted_log(tmp_path / "log", plant_illegal=True)
    binary = tmp_path / "state-change.log"
    binary.write_bytes(b"\x00\x01\x02garbage\x00" * 100)
    code = main(["audit", str(log), str(tmp_path / "missing"), str(binary), str(tmp_path / "nothing-*"),
                 "--report", str(tmp_path / "r.json")])
    assert code == 2
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "input errors"
    assert {e["path"] for e in report["input_errors"]} == {str(tmp_path / "missing"), str(tmp_path / "nothing-*")}
    broken, = [i for i in report["inputs"] if i["type"] == KAFKA_LOG]
    assert "error" in broken and broken["path"] == str(binary)
    assert report["summary"]["violations"] == 1     # the readable log was audited all the same


def damaged_log(tmp_path: Path) -> tuple[Path, Path]:
    """A log whose only segment has a byte flipped three quarters in: (log directory, segment)."""
    log = scripted_log(tmp_path / "log", batch_records=10)
    segment = sorted(log.iterdir())[0]
    data = bytearray(segment.read_bytes())
    data[len(data) * 3 // 4] ^= 0xFF
    segment.write_bytes(bytes(data))
    return log, segment


def test_a_sweeps_directory_is_its_runs_and_its_document_is_passed_over(tmp_path, capsys):
    scripted_log(tmp_path / "sweep" / "seed-1")
    scripted_log(tmp_path / "sweep" / "seed-2", seed=2)
    (tmp_path / "sweep" / "sweep.json").write_text('{\n  "scenario": "x"\n}\n')
    result = run_audit([str(tmp_path / "sweep")], engine="local")
    assert result.exit_status == 0 and [i.type for i in result.inputs] == [EVENT_LOG, EVENT_LOG]
    named = run_audit([str(tmp_path / "sweep" / "sweep.json")], engine="local")
    assert named.exit_status == 2 and "not a Kafka log" in named.inputs[0].error


def test_a_damaged_segment_is_an_input_error_naming_the_file(tmp_path):
    log, segment = damaged_log(tmp_path)
    result = run_audit([str(log)], engine="local")
    assert result.exit_status == 2
    bad, = result.inputs
    assert bad.error and str(segment.name) in bad.error
    assert result.report.summary["rows"] > 0                # the rows before the damage were audited


def test_the_html_report_is_one_self_contained_page(tmp_path):
    log = scripted_log(tmp_path / "log", plant_illegal=True)
    html = tmp_path / "out" / "audit.html"
    assert main(["audit", str(log), "--html", str(html)]) == 1
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "illegal_transition" in page
    # One self-contained page: its sorting/filtering script is inline, nothing is loaded from elsewhere.
    assert "<script src" not in page and "src=" not in page and "<link" not in page
    assert "OnlineReplica -&gt; NewReplica" in page


def test_the_engine_is_chosen_by_input_size_unless_named(tmp_path):
    log = scripted_log(tmp_path / "log")
    assert run_audit([str(log)], engine="auto").engine == "local"
    from audit.runner import choose_engine
    assert choose_engine("auto", 10, 100) == ("local", None)
    assert choose_engine("local", 10 ** 12, 100) == ("local", None)
    assert choose_engine("spark", 1, 100) == ("spark", None)
    assert choose_engine("auto", 5 << 20, 1 << 40) == ("columnar", None)
    with pytest.raises(ValueError):
        choose_engine("fast", 1, 1)


def test_the_columnar_engine_reports_what_the_local_engine_reports(tmp_path):
    """Event logs (one with a planted illegal transition), a Parquet export and Kafka's own logs: the same report,
    findings, timeline and notes on either in-process engine."""
    from audit.export import export_parquet
    clean = scripted_log(tmp_path / "clean", seed=3)
    planted = scripted_log(tmp_path / "planted", plant_illegal=True, seed=4)
    export_parquet([str(clean)], str(tmp_path / "rows"))
    data = Path(__file__).parent / "data"
    kafka = [str(data / "layouts" / "base.log"), str(data / "layouts" / "compose.log"), str(data / "kraft" / "broker-planted.log")]
    for paths in ([str(clean), str(planted)], [str(tmp_path / "rows")], kafka):
        local = run_audit(paths, engine="local", limit=25)
        if paths[0] == str(clean):
            assert local.report.summary["violations_by_kind"]["illegal_transition"] > 0
        columnar = run_audit(paths, engine="columnar", limit=25)
        assert columnar.engine == "columnar"
        assert columnar.report == local.report, paths
        assert columnar.timeline == local.timeline and columnar.notes == local.notes
        assert [e.path for e in columnar.errors] == [e.path for e in local.errors]
    assert local.report.summary["rows"] > 0


def test_availability_figures_come_from_the_fold_of_every_input(tmp_path, capsys):
    """``--availability``: each run's figures from its rows folded into timelines (audit.availability), the
    same whichever engine audits; for a simulated log what the simulation counted while it ran; a damaged
    log's from its rows before the damage; a Kafka log's from its rows."""
    import sim
    from audit.export import export_parquet
    from kcontroller.cli_simulate import simulate_to_log
    from sim.scenario import load_scenario
    example = Path(sim.__file__).parents[1] / "examples" / "rf1-broker-kill.yaml"
    summary = simulate_to_log(load_scenario(example), str(tmp_path / "rf1"))[1]
    log, _ = damaged_log(tmp_path)
    export_parquet([str(scripted_log(tmp_path / "c", seed=5))], str(tmp_path / "rows"))
    paths = [str(tmp_path / "rf1"), str(log), str(tmp_path / "rows")]
    if REAL_LOGS.is_dir():
        paths.append(str(REAL_LOGS / "artificial-ridiculous-kafka-2.1.1-state-change-broker-failure.log"))
        paths.append(str(REAL_LOGS / "ammar-kafka-4.0-state-change.log"))          # KRaft: no rows to fold
    results = {engine: run_audit(paths, engine=engine, availability=True) for engine in ("local", "columnar", "duckdb")}
    figures = results["local"].availability
    assert all(r.availability == figures for r in results.values())
    rf1 = figures[os.path.normpath(tmp_path / "rf1")]
    assert rf1["offline_partition_seconds"] == summary["offline_partition_seconds"] > 0
    assert rf1["unclean_elections"] == summary["elections"]["unclean"] and rf1["partitions_offline"] >= 1
    assert figures[os.path.normpath(log)]["leader_elections"] >= 1                 # read up to the damage
    assert len(figures) == len(paths) - (1 if REAL_LOGS.is_dir() else 0)
    if REAL_LOGS.is_dir():
        real = figures["kafka-log:artificial-ridiculous-kafka-2.1.1-state-change-broker-failure.log"]
        assert real["offline_intervals"] == real["partitions_offline"] == 51 and real["leader_elections"] == 52
        assert any("without controller rows to fold" in n and "ammar" in n for n in results["local"].notes)
    assert run_audit(paths, engine="local").availability is None
    assert main(["audit", str(tmp_path / "rf1"), "--availability", "--html", str(tmp_path / "r.html")]) == 0
    text = capsys.readouterr().out
    assert f"offline {summary['offline_partition_seconds']:g} partition-s in" in text
    assert 'id="availability-table"' in (tmp_path / "r.html").read_text()


# --- Spark -------------------------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.parametrize("per_run", [True, False], ids=["a-task-per-run", "dataframes"])
def test_spark_and_local_give_the_same_report(spark, tmp_path, monkeypatch, per_run):
    """Several runs go to Spark as one task per run (audit.spark_runs); one run larger than a task holds sends
    them all to the DataFrame engine. Either way, the local engine's report."""
    from audit import spark_runs
    if not per_run:
        monkeypatch.setattr(spark_runs, "RUN_TASK_BYTES", 0)
    paths = [str(scripted_log(tmp_path / "a", plant_illegal=True)), str(scripted_log(tmp_path / "b", seed=3))]
    if per_run:
        from audit.export import export_parquet
        export_parquet([str(scripted_log(tmp_path / "c", seed=5))], str(tmp_path / "rows"))
        paths.append(str(tmp_path / "rows"))
    if REAL_LOGS.is_dir():
        paths.append(str(REAL_LOGS))
    local = run_audit(paths, engine="local", limit=50, availability=True).to_json()
    on_spark = run_audit(paths, engine="spark", limit=50, availability=True).to_json()
    assert on_spark.pop("engine") == "spark" and local.pop("engine") == "local"
    on_spark.pop("master"), local.pop("master")
    assert on_spark == local                       # the fold's figures too: Spark SQL's and DuckDB's
    assert local["summary"]["violations"] >= 1 and local["timeline"]["transitions"]
    assert local["availability"][os.path.normpath(paths[1])]["leader_elections"] >= 8


@pytest.mark.spark
def test_a_damaged_segment_on_spark_is_an_input_error_naming_the_file(spark, tmp_path):
    log, segment = damaged_log(tmp_path)
    result = run_audit([str(log)], engine="spark")
    assert result.exit_status == 2
    error, = result.errors
    assert segment.name in error.reason, error.reason


@pytest.mark.spark
def test_a_damaged_run_among_others_on_spark_is_its_input_s_error(spark, tmp_path):
    """A task per run: the damaged log's rows before the damage are audited and its input carries the error,
    as in process; the other run is audited whole."""
    log, segment = damaged_log(tmp_path / "damaged")
    other = scripted_log(tmp_path / "other", seed=2)
    local = run_audit([str(log), str(other)], engine="columnar")
    result = run_audit([str(log), str(other)], engine="spark")
    assert result.exit_status == 2 == local.exit_status
    assert result.report == local.report
    assert [(i.path, i.error) for i in result.inputs] == [(i.path, i.error) for i in local.inputs]
    assert any(i.error and segment.name in i.error for i in result.inputs)


def test_a_torn_tail_is_noted_not_an_error(tmp_path, capsys):
    log = scripted_log(tmp_path / "log", batch_records=10)
    segment = sorted(log.iterdir())[-1]
    with open(segment, "ab") as f:
        f.write(b"\x00" * 7)              # the start of a batch header, cut short by a crash
    assert main(["audit", str(log), "--report", str(tmp_path / "r.json")]) == 0
    assert "incomplete" in capsys.readouterr().out
    note, = json.loads((tmp_path / "r.json").read_text())["inputs"][0]["notes"]
    assert "cut short by a crash" in note


def test_a_rotated_set_is_one_run_and_merge_reads_brokers_as_one(tmp_path, capsys):
    base = Path(__file__).parent / "data" / "layouts" / "base.log"
    lines = base.read_text().splitlines()
    cut = next(k for k, x in enumerate(lines) if "failed to change state" in x)
    (tmp_path / "b0").mkdir()
    (tmp_path / "b1").mkdir()
    (tmp_path / "b0" / "state-change.log.1").write_text("\n".join(lines[:cut]) + "\n")
    (tmp_path / "b0" / "state-change.log").write_text("\n".join(lines[cut:]) + "\n")
    strimzi = Path(__file__).parent / "data" / "layouts" / "strimzi.log"
    (tmp_path / "b1" / "state-change.log").write_text(strimzi.read_text())
    whole = run_audit([str(base)], engine="local")
    one = run_audit([str(tmp_path / "b0")], engine="local")
    assert [i.paths for i in one.inputs] == [[str(tmp_path / "b0" / "state-change.log.1"),
                                              str(tmp_path / "b0" / "state-change.log")]]
    assert one.report.summary["rows"] == whole.report.summary["rows"] and one.exit_status == whole.exit_status
    assert main(["audit", str(tmp_path / "b0"), str(tmp_path / "b1"), "--merge", "--report",
                 str(tmp_path / "r.json")]) == whole.exit_status
    report = json.loads((tmp_path / "r.json").read_text())
    merged, = report["inputs"]
    assert merged["merged"] and merged["files"] == [[str(tmp_path / "b0" / "state-change.log.1"),
                                                     str(tmp_path / "b0" / "state-change.log")],
                                                    str(tmp_path / "b1" / "state-change.log")]
    assert merged["rows"] == 2 * whole.report.summary["rows"]
    assert merged["layouts"] == {"kafka": 13, "strimzi": 13}
