"""The kcontroller commands that drive the cluster an event log describes, and the admin JSON files they read."""
from __future__ import annotations

import json

import pytest
import structlog

from controller.admin_files import AdminFileError, parse_election_json, parse_reassignment_json
from controller.embedding.replay import replay_log
from events.log import LogReader
from events.records import (
    BrokerStopped, ControlledShutdownRequested, LeaderElectionRequested, ReassignmentRequested, TopicDeletionRequested,
)
from kcontroller.cli import main
from statemachines.cluster_view import fold_log


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    structlog.reset_defaults()  # main() configures structlog for the process; leave other tests as they were


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def cluster_log(tmp_path, capsys):
    log = str(tmp_path / "log")
    status, out, _ = run(capsys, "new-cluster", log, "--brokers", "4", "--topic", "t:4:3", "--topic", "one:2:1")
    assert status == 0 and "cluster of 4 brokers" in out
    return log


def _inputs(log: str, cls) -> list:
    return [r for r in LogReader(log).records() if type(r) is cls]


def test_reassign_from_a_kafka_reassignment_file_then_catch_up(tmp_path, capsys, cluster_log):
    f = tmp_path / "reassign.json"
    f.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [3, 2, 1], "log_dirs": ["any", "any", "any"]}]}))
    status, out, _ = run(capsys, "reassign", cluster_log, "--reassignment-json-file", str(f))
    assert status == 0 and "Successfully started partition reassignment for t-0" in out
    assert [r.partitions for r in _inputs(cluster_log, ReassignmentRequested)] == [(("t", 0, (3, 2, 1)),)]
    status, out, _ = run(capsys, "catch-up", cluster_log)
    assert status == 0
    topics = {t["name"]: t for t in fold_log(cluster_log).to_json_dict()["topics"]}
    assert topics["t"]["partitions"][0]["replicas"] == [3, 2, 1]
    assert replay_log(cluster_log).ok


def test_reassign_refused_partitions_exit_1(tmp_path, capsys, cluster_log):
    f = tmp_path / "reassign.json"
    f.write_text(json.dumps({"partitions": [{"topic": "nope", "partition": 0, "replicas": [1]}]}))
    status, _, err = run(capsys, "reassign", cluster_log, "--reassignment-json-file", str(f))
    assert status == 1 and "nope-0: UNKNOWN_TOPIC_OR_PARTITION" in err


def test_shutdown_elect_and_delete(capsys, cluster_log):
    status, out, _ = run(capsys, "shutdown-broker", cluster_log, "--broker-id", "1")
    assert status == 0 and "controlled shutdown succeeded" in out
    assert len(_inputs(cluster_log, ControlledShutdownRequested)) == 1
    assert len(_inputs(cluster_log, BrokerStopped)) == 1
    status, out, _ = run(capsys, "elect-leaders", cluster_log, "--election-type", "preferred",
                         "--topic", "t", "--partition", "1")
    assert status == 0
    assert _inputs(cluster_log, LeaderElectionRequested)[0].partitions == (("t", 1),)
    status, out, _ = run(capsys, "delete-topic", cluster_log, "--topic", "one")
    assert status == 0 and "marked for deletion" in out
    assert [r.topic for r in _inputs(cluster_log, TopicDeletionRequested)] == ["one"]
    assert replay_log(cluster_log).ok


def test_commands_on_a_missing_log_fail_cleanly(tmp_path, capsys):
    status, _, err = run(capsys, "catch-up", str(tmp_path / "none"))
    assert status == 2 and "holds no event log" in err


def test_bad_election_file_names_the_file_and_entry(tmp_path, capsys, cluster_log):
    f = tmp_path / "elect.json"
    f.write_text('{"partitions": [{"topic": "t"}]}')
    status, _, err = run(capsys, "elect-leaders", cluster_log, "--election-type", "preferred",
                         "--path-to-json-file", str(f))
    assert status == 2 and f"{f}: partitions[0]: \"partition\"" in err


@pytest.mark.parametrize("text, message", [
    ('{"version": 1, "partitions": [', "<f>:1:"),
    ('{"version": 2, "partitions": []}', "unsupported reassignment file version"),
    ('{"partitions": []}', "cannot be empty"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', "duplicate entries"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}', "cannot be empty"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["any", "any"]}]}',
     "different from size of log dirs"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}, '
     '{"topic": "t", "partition": 0, "replicas": [2]}]}', "duplicate topic partitions"),
    ('{"partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]}', "non-negative"),
])
def test_reassignment_file_errors(text, message):
    with pytest.raises(AdminFileError, match=message):
        parse_reassignment_json(text, "<f>")


def test_files_parse():
    assert parse_reassignment_json('{"version":1,"partitions":[{"topic":"t","partition":2,"replicas":[3,1]}]}') == {
        ("t", 2): (3, 1)}
    assert parse_election_json('{"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":1}]}') == [
        ("t", 0), ("u", 1)]
    with pytest.raises(AdminFileError, match="duplicate partitions"):
        parse_election_json('{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0}]}')
