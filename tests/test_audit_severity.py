"""Severities and ``--fail-on``, findings grouped into events, and locations (``file:line``, ``segment@byte``).

A controller-epoch reset (ZooKeeper wiped) is a warning, every other violation an error; findings are
warnings or infos. The exit status is 1 when something of the ``--fail-on`` severity (default: error) or a
more severe one was found. Findings of one cause (one broker failure's failed elections, one unfencing's
ELR elections) are one event listing its partitions.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from audit import checks
from audit.checks import ERROR, INFO, SEVERITIES, SEVERITY, WARNING, Violation, events, fails, location
from audit.runner import run_audit
from kcontroller.cli import main

ROOT = Path(__file__).resolve().parents[1]
KRAFT_DATA = ROOT / "tests" / "data" / "kraft"
REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or ROOT.parent / "shared" / "real-logs")
TS = "[2024-04-29 12:13:51,142]"


def line(message: str, level: str = "TRACE", ts: str = TS) -> str:
    return f"{ts} {level} {message} (state.change.logger)"


def test_every_kind_has_a_severity_and_a_reset_is_a_warning():
    assert set(SEVERITY) == set(checks.ALL_VIOLATION_KINDS) | set(checks.ALL_FINDING_KINDS)
    assert set(SEVERITY.values()) <= set(SEVERITIES)
    assert SEVERITY[checks.CONTROLLER_EPOCH_RESET] == WARNING
    assert all(SEVERITY[k] == ERROR for k in checks.ALL_VIOLATION_KINDS if k != checks.CONTROLLER_EPOCH_RESET)
    assert all(SEVERITY[k] != ERROR for k in checks.ALL_FINDING_KINDS)


def test_fail_on_counts_its_severity_and_the_more_severe_ones():
    summary = {"by_severity": {ERROR: 0, WARNING: 2, INFO: 5}}
    assert (fails(summary, ERROR), fails(summary, WARNING), fails(summary, INFO)) == (False, True, True)
    with pytest.raises(ValueError, match="--fail-on must be one of error, warning, info"):
        fails(summary, "fatal")


def reset_log(tmp_path: Path) -> Path:
    """A state-change.log whose controller epoch starts over (ZooKeeper wiped): a reset, nothing else."""
    path = tmp_path / "state-change.log"
    path.write_text("\n".join([
        line("[Controller id=0 epoch=7] Changed partition t-0 state from NonExistentPartition to NewPartition "
             "with assigned replicas 0"),
        line("[Controller id=0 epoch=1] Changed partition u-0 state from NonExistentPartition to NewPartition "
             "with assigned replicas 0", ts="[2024-04-29 13:00:00,000]"),
    ]) + "\n")
    return path


def test_a_reset_alone_passes_by_default_and_fails_on_warnings(tmp_path, capsys):
    path = reset_log(tmp_path)
    result = run_audit([str(path)], engine="local")
    assert result.report.summary["violations_by_kind"]["controller_epoch_reset"] == 1
    assert result.report.summary["by_severity"] == {ERROR: 0, WARNING: 1, INFO: 0}
    assert result.exit_status == 0 and result.to_json()["status"] == "clean"
    assert run_audit([str(path)], engine="local", fail_on=WARNING).exit_status == 1
    assert main(["audit", str(path)]) == 0
    assert main(["audit", str(path), "--fail-on", "warning"]) == 1
    out = capsys.readouterr().out
    assert "FAILED (--fail-on warning)" in out and f"{path}:2 " in out and "warning controller_epoch_reset" in out


def test_findings_fail_only_at_their_severity():
    path = str(KRAFT_DATA / "controller-findings.log")      # warnings and infos, no violation
    assert run_audit([path], engine="local").exit_status == 0
    assert run_audit([path], engine="local", fail_on=WARNING).exit_status == 1
    broker = str(KRAFT_DATA / "broker-clean.log")           # one leader-epoch gap: an info
    assert run_audit([broker], engine="local", fail_on=WARNING).exit_status == 0
    assert run_audit([broker], engine="local", fail_on=INFO).exit_status == 1


def test_a_bad_fail_on_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["audit", str(KRAFT_DATA / "broker-clean.log"), "--fail-on", "fatal"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(ValueError):
        run_audit([str(KRAFT_DATA / "broker-clean.log")], fail_on="fatal")


def test_the_json_report_names_severities_locations_and_events(tmp_path):
    report_path = tmp_path / "r.json"
    assert main(["audit", str(KRAFT_DATA / "controller-planted.log"), "--report", str(report_path)]) == 1
    report = json.loads(report_path.read_text())
    assert report["fail_on"] == "error" and report["summary"]["by_severity"] == {"error": 9, "warning": 1, "info": 0}
    first = report["violations"][0]
    assert first["severity"] == "error" and first["location"] == f"{KRAFT_DATA / 'controller-planted.log'}:5"
    assert report["severities"]["controller_epoch_reset"] == "warning"
    assert [e["kind"] for e in report["finding_events"]] == ["kraft_stale_broker_epoch"]


def finding(kind: str, seq: int, time_ms: int | None, topic: str = "t", partition: int = 0, epoch: int = 5,
            source: str = "s.log") -> Violation:
    return Violation(kind, "kafka-log:s.log", "partition", topic, partition, -1, None, None, epoch, source, seq, seq,
                     time_ms, f"detail {seq}")


def test_findings_of_one_cause_are_one_event_listing_its_partitions():
    failed, unclean = checks.FAILED_ELECTION, checks.UNCLEAN_ELECTION
    found = [finding(failed, 1, 1000, partition=0), finding(unclean, 2, 1100, topic="u"),
             finding(failed, 3, 1200, partition=1), finding(failed, 4, 1900, partition=0),   # t-0 again
             finding(failed, 5, 9000, partition=2),                                          # later: another cause
             finding(failed, 6, 9100, partition=3, epoch=6)]                                 # another controller
    got = [(e["kind"], e["count"], e["subjects"], e["first"], e["last"]) for e in events(found)]
    assert got == [(failed, 3, ["t-0", "t-1"], "s.log:1", "s.log:4"), (unclean, 1, ["u-0"], "s.log:2", "s.log:2"),
                   (failed, 1, ["t-2"], "s.log:5", "s.log:5"), (failed, 1, ["t-3"], "s.log:6", "s.log:6")]
    # Without times, findings in a row of one kind are one event.
    timeless = [finding(failed, 1, None), finding(failed, 2, None, partition=1), finding(unclean, 3, None),
                finding(failed, 4, None, partition=2)]
    assert [e["count"] for e in events(timeless)] == [2, 1, 1]


def test_locations_read_file_line_for_text_logs_and_segment_byte_for_event_logs():
    text = finding(checks.FAILED_ELECTION, 7, None)
    event_log = text._replace(run_id="runs/a", source="runs/a/00000000000000000000.kclog", position=4096)
    assert (location(text), location(event_log)) == ("s.log:7", "runs/a/00000000000000000000.kclog@4096")


@pytest.mark.skipif(not (REAL_LOGS / "andreinedelciu-kafka-brokers-public-state-change-part2.log").is_file(),
                    reason=f"no real logs at {REAL_LOGS}")
def test_a_real_broker_failures_failed_elections_are_one_event():
    result = run_audit([str(REAL_LOGS / "andreinedelciu-kafka-brokers-public-state-change-part2.log")], engine="local")
    grouped = {e["kind"]: e for e in result.to_json()["finding_events"]}
    assert grouped["failed_election"]["count"] == 20 and len(grouped["failed_election"]["subjects"]) == 20
    assert grouped["unclean_election"]["subjects"] == ["dns_kafka_topic-1", "dns_kafka_topic-2", "dns_kafka_topic-0"]
