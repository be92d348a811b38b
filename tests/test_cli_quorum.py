"""``kcontroller describe --quorum``: a scenario file or a simulation log, run up to a time, printed as
kafka-metadata-quorum.sh describe --status / --replication would (plus the '#' lines); clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from events.log import LogReader, LogWriter
from kcontroller.cli import main
from sim.scenario import load_scenario
from sim.simulation import Simulation


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE = str(EXAMPLES / "kraft-observer-expiry.yaml")
_steps: dict = {}


def step_output(at_s: float) -> str:
    """What the example's own describe_quorum step at ``at_s`` printed."""
    if not _steps:
        sim = Simulation(load_scenario(EXAMPLE), sink=lambda rec: None)
        sim.run()
        _steps.update((o["at_s"], "\n".join(o["lines"]) + "\n")
                      for o in sim.summary()["observations"] if o["kind"] == "describe_quorum")
    return _steps[at_s]


def describe(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["describe", "--quorum", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_scenario_described_at_a_time_prints_what_a_describe_quorum_step_then_does(capsys):
    code, out, err = describe(capsys, EXAMPLE, "--time", "30000")
    assert code == 0 and err == ""
    assert out == step_output(30)
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines[:8]] == [
        "ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
        "CurrentVoters", "CurrentObservers"]
    assert lines[6] == ('CurrentVoters:          [{"id": 0, "directoryId": "' + lines[6].split('"')[5] +
                        '", "endpoints": ["CONTROLLER://controller-0:9093"]}]')
    assert '{"id": 2, "directoryId": ' in lines[7]                          # dead 10 s: still listed
    assert any(line.startswith("# observer 2 ") and "last fetch 10,000 ms ago" in line for line in lines[8:])
    code, out, _ = describe(capsys, EXAMPLE, "--time", "321000")
    assert code == 0 and out == step_output(321) and '"id": 2' not in out.splitlines()[7]


def test_without_a_time_the_end_of_the_run_and_the_replication_table(capsys):
    code, out, _ = describe(capsys, EXAMPLE, "--replication")
    assert code == 0 and out == step_output(330)                           # that step is at the end, 330 s
    assert out.splitlines()[0] == ("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
                                   "LastCaughtUpTimestamp\tStatus  \t")


def test_another_seed_draws_other_ids(capsys):
    _, default, _ = describe(capsys, EXAMPLE, "--time", "30000")
    _, other, _ = describe(capsys, EXAMPLE, "--time", "30000", "--seed", "7")
    assert default.splitlines()[0] != other.splitlines()[0]
    assert default.splitlines()[1:3] == other.splitlines()[1:3]


def test_a_simulation_log_is_run_again_up_to_the_time(tmp_path, capsys):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 0
    capsys.readouterr()
    code, out, err = describe(capsys, str(log), "--time", "30000")
    assert (code, err) == (0, "")
    # The log names its scenario by the path it was run from; the run is the same.
    assert out == step_output(30)
    assert describe(capsys, str(log), "--time", "321000")[1] == step_output(321)


def test_a_log_that_does_not_replay_is_refused(tmp_path, capsys):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 0
    records = list(LogReader(log).records())
    changed = tmp_path / "changed"
    with LogWriter(changed) as w:
        w.append(records[0]._replace(text=records[0].text.replace("at: 20s\n", "at: 25s\n")))
        for r in records[1:]:
            w.append(r)
    capsys.readouterr()
    code, out, err = describe(capsys, str(changed), "--time", "30000")
    assert code == 2 and out == ""
    assert "the log does not replay" in err and err.startswith("kcontroller: error: ")


@pytest.mark.parametrize("argv, message", [
    (["--time", "400000"], "--time 400000: the run of 'kraft-observer-expiry' lasts 330000 ms"),
    (["--time", "-1"], "--time: expected a time >= 0 ms, got -1"),
    (["--at", "3"], "--quorum describes a time (--time MS), not a record offset (--at)"),
])
def test_bad_options_are_clear_errors(capsys, argv, message):
    code, out, err = describe(capsys, EXAMPLE, *argv)
    assert (code, out, err) == (2, "", f"kcontroller: error: {message}\n")


def test_a_scenario_or_log_without_a_quorum_is_a_clear_error(tmp_path, capsys):
    plain = str(EXAMPLES / "rf1-broker-kill.yaml")
    code, _, err = describe(capsys, plain)
    assert code == 2 and err == (f"kcontroller: error: {plain}: the scenario has no quorum section, so no metadata "
                                 f"quorum to describe (see docs/scenarios.md)\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration: 10s\ncluster: {brokers: [1]}\nquorum: {voters: [1]}\n")
    code, _, err = describe(capsys, str(bad))
    assert code == 2 and f"{bad}:4: quorum.voters[0]: expected a controller node id that is not a broker's" in err


def test_a_cluster_log_and_the_seed_of_a_log_are_refused(tmp_path, capsys):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 0
    capsys.readouterr()
    code, _, err = describe(capsys, str(log), "--seed", "3")
    assert code == 2 and "--seed is for a scenario file" in err
    cluster_log = tmp_path / "cluster"
    assert main(["demo", "--log-dir", str(cluster_log)]) == 0
    capsys.readouterr()
    code, _, err = describe(capsys, str(cluster_log))
    assert code == 2 and "is not a simulation's log (it does not start with SimulationStarted)" in err


def test_the_cluster_describe_is_unchanged_and_refuses_quorum_only_options(tmp_path, capsys):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 0
    capsys.readouterr()
    assert main(["describe", str(log), "--time", "30000"]) == 0
    assert "Topic: orders\tPartition: 0" in capsys.readouterr().out
    assert main(["describe", str(log), "--replication"]) == 2
    assert capsys.readouterr().err == "kcontroller: error: --replication goes with --quorum\n"
    assert main(["describe", str(log), "--seed", "1"]) == 2
