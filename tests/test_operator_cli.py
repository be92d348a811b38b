"""Issue 18, the operator's view: simulated time has a date (scenario ``start_time``, ``new-cluster
--start-time``), ``--json`` on every command that reports, progress bars on terminals only, shell completion,
help on every flag."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from events.log import LogReader
from kcontroller import progress
from kcontroller.cli import build_parser, main
from kcontroller.completion import bash_script
from kcontroller.logging_setup import use_clock
from sim.scenario import ScenarioError, dump_scenario, parse_scenario
from statemachines.kafka_log_format import (
    DEFAULT_START_MS, DEFAULT_START_TIME, StartTimeError, format_records, format_start_time, log_start_ms,
    parse_start_time,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    use_clock(None)
    structlog.reset_defaults()  # main() configures structlog for the process; leave other tests as they were


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def ops(tmp_path, capsys):
    log = tmp_path / "ops"
    assert run(capsys, "new-cluster", log, "--brokers", 3, "--topic", "orders:4:3", "--topic", "rf1:2:1",
               "--start-time", "2024-03-01T09:00:00Z")[0] == 0
    return log


# --- simulated time has a date --------------------------------------------------------------------------------
def test_start_times_parse_as_iso_8601_and_print_back():
    assert parse_start_time("2024-03-01T09:00:00Z") == 1_709_283_600_000
    assert parse_start_time("2024-03-01T10:00:00+01:00") == 1_709_283_600_000
    assert parse_start_time("2024-03-01") == parse_start_time("2024-03-01T00:00:00Z")
    assert format_start_time(parse_start_time("2024-03-01T09:00:00.250Z")) == "2024-03-01T09:00:00.250Z"
    assert format_start_time(DEFAULT_START_MS) == DEFAULT_START_TIME == "2024-01-01T00:00:00Z"
    for bad in ("yesterday", "2024-13-01", "1969-12-31T23:59:59Z", "2024-03-01T09:00:00.0001Z", ""):
        with pytest.raises(StartTimeError):
            parse_start_time(bad)


def test_a_scenario_takes_a_start_time_that_changes_no_record(tmp_path):
    from sim.simulation import Simulation
    text = (EXAMPLES / "rf1-broker-kill.yaml").read_text()
    dated = text.replace("\nduration:", "\nstart_time: 2024-03-01T09:00:00Z\nduration:", 1)
    scenario = parse_scenario(dated)
    assert scenario.start_time_ms == parse_start_time("2024-03-01T09:00:00Z")
    assert parse_scenario(text).start_time_ms == DEFAULT_START_MS
    assert parse_scenario(dump_scenario(scenario)) == scenario
    quoted = text.replace("\nduration:", "\nstart_time: '2024-03-01T10:00:00+01:00'\nduration:", 1)
    assert parse_scenario(quoted).start_time_ms == scenario.start_time_ms
    with pytest.raises(ScenarioError, match=r"<string>:\d+: start_time: expected an ISO 8601"):
        parse_scenario(text.replace("\nduration:", "\nstart_time: soon\nduration:", 1))

    def records(s):
        out: list = []
        Simulation(s, sink=out.append, column_sink=lambda b: out.extend(b.records())).run()
        return out
    plain, with_date = records(parse_scenario(text)), records(scenario)
    assert [r for r in plain[1:]] == [r for r in with_date[1:]]   # the first holds the scenario's text
    assert log_start_ms(with_date[0]) == scenario.start_time_ms and log_start_ms(plain[0]) == DEFAULT_START_MS


def test_log_lines_describe_and_operations_show_the_cluster_date(ops, capsys):
    first = next(iter(LogReader(ops).records()))
    assert dict(first.configs)["kcontroller.start.time"] == "2024-03-01T09:00:00Z" and first.timestamp_ms == 0
    code, out, _ = run(capsys, "kill-broker", ops, "--broker-id", 1)
    assert code == 0 and out.splitlines()[-1].endswith("(time 0 ms, 2024-03-01 09:00:00,000)")
    code, out, _ = run(capsys, "advance", ops, "--ms", 30_000)
    assert "time is now 30000 ms (2024-03-01 09:00:30,000)" in out
    code, out, _ = run(capsys, "log", ops, "--level", "INFO")
    lines = out.splitlines()
    assert lines[0].startswith("[2024-03-01 09:00:00,000] INFO [Controller id=0 epoch=1]")
    assert any(line.startswith("[2024-03-01 09:00:18,000] ") for line in lines)   # the session expired at 18 s
    doc = json.loads(run(capsys, "describe", ops, "--json")[1])
    assert (doc["time_ms"], doc["time"]) == (30_000, "2024-03-01T09:00:30Z")
    doc = json.loads(run(capsys, "describe", ops, "--json", "--time", 1000)[1])
    assert (doc["time_ms"], doc["time"]) == (1000, "2024-03-01T09:00:01Z")
    assert run(capsys, "replay", ops)[0] == 0   # the start time is part of the log, replayed as it is


def test_a_log_without_a_start_time_shows_the_default_date(tmp_path, capsys):
    log = tmp_path / "plain"
    assert run(capsys, "new-cluster", log, "--topic", "t:1:1")[0] == 0
    assert run(capsys, "log", log)[1].startswith("[2024-01-01 00:00:00,000] ")
    assert format_records(LogReader(log).records()).__next__().startswith("[1970-01-01 ")   # the library: raw ms
    code, _, err = run(capsys, "new-cluster", tmp_path / "bad", "--start-time", "2024-02-30")
    assert code == 2 and "--start-time: expected an ISO 8601 date and time" in err and not (tmp_path / "bad").exists()


def test_demo_takes_a_start_time(tmp_path, capsys):
    code, out, _ = run(capsys, "demo", "--log-dir", tmp_path / "d", "--start-time", "2023-06-01T12:00:00Z")
    assert code == 0
    assert "[2023-06-01 12:00:28,000] INFO [Controller id=0 epoch=1]" in out


def test_diagnostic_lines_carry_the_simulated_time(ops):
    # In a process of its own: main() configures structlog once per process (its loggers are cached).
    proc = subprocess.run([sys.executable, "-m", "kcontroller", "--log-level", "info", "shutdown-broker", str(ops),
                           "--broker-id", "2", "--at", "5000"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    err = proc.stderr
    assert proc.returncode == 0, err[-2000:]
    stamped = [line for line in err.splitlines() if line.startswith("2024-03-01 09:00:05,000 [info")]
    assert any("Shutting down broker 2" in line for line in stamped), err[-2000:]


def test_a_simulation_log_is_shown_on_its_scenarios_calendar(tmp_path, capsys):
    text = (EXAMPLES / "rf1-broker-kill.yaml").read_text()
    scenario = tmp_path / "dated.yaml"
    scenario.write_text(text.replace("\nduration:", "\nstart_time: 2024-03-01T09:00:00Z\nduration:", 1))
    log = tmp_path / "sim"
    assert run(capsys, "simulate", scenario, "--log-dir", log, "--json")[0] == 0
    lines = run(capsys, "log", log, "--level", "INFO")[1].splitlines()
    stamped = [line for line in lines if line.startswith("[")]   # the rest: the exception lines under an ERROR
    assert stamped and all(line.startswith(("[2024-03-01 09:00:", "[2024-03-01 09:01:")) for line in stamped)
    doc = json.loads(run(capsys, "describe", log, "--json", "--time", 20_000)[1])
    assert doc["time"] == "2024-03-01T09:00:20Z"


# --- --json -------------------------------------------------------------------------------------------------
def test_operations_commands_print_json(ops, capsys, tmp_path):
    code, out, _ = run(capsys, "create-topic", ops, "--topic", "new", "--partitions", 2, "--replication-factor", 2,
                       "--json")
    doc = json.loads(out)
    assert code == 0 and doc["command"] == "create-topic" and doc["status"] == 0 and doc["appended"]
    assert doc["result"] == {"topic": "new", "partitions": 2, "replication_factor": 2}
    assert doc["output"] == ["Created topic new."] and doc["records"] == LogReader(ops).end_offset

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0,
                                                              "replicas": [2, 1, 0]}]}))
    doc = json.loads(run(capsys, "reassign", ops, "--execute", "--reassignment-json-file", plan, "--json")[1])
    assert doc["result"]["started"] == [{"topic": "orders", "partition": 0}]
    assert doc["result"]["rollback"]["partitions"][0]["topic"] == "orders"
    doc = json.loads(run(capsys, "reassign", ops, "--verify", "--reassignment-json-file", plan, "--json")[1])
    assert [p["status"] for p in doc["result"]["partitions"]] == ["completed"]
    doc = json.loads(run(capsys, "reassign", ops, "--list", "--json")[1])
    assert doc["result"]["reassignments"] == [] and not doc["appended"]

    doc = json.loads(run(capsys, "kill-broker", ops, "--broker-id", 0, "--json")[1])
    assert doc["result"]["session_timeout_ms"] == 18000
    doc = json.loads(run(capsys, "advance", ops, "--ms", 20_000, "--json")[1])
    assert (doc["time_ms"], doc["time"]) == (20_000, "2024-03-01T09:00:20Z")
    doc = json.loads(run(capsys, "start-broker", ops, "--broker-id", 0, "--json")[1])
    assert doc["result"]["alive"] is True
    doc = json.loads(run(capsys, "catch-up", ops, "--json")[1])
    assert set(doc["result"]) == {"partitions", "leaders"}
    code, out, _ = run(capsys, "elect-leaders", ops, "--election-type", "preferred", "--all-topic-partitions",
                       "--json")
    doc = json.loads(out)
    assert doc["status"] == code and {"elected", "not_needed", "failed"} <= set(doc["result"])
    doc = json.loads(run(capsys, "delete-topic", ops, "--topic", "rf1", "--json")[1])
    assert doc["result"]["topic"] == "rf1" and doc["result"]["marked_for_deletion"]


def test_a_refused_command_prints_json_with_its_error(ops, capsys, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0,
                                                              "replicas": [7, 1, 0]}]}))
    before = LogReader(ops).end_offset
    code, out, err = run(capsys, "reassign", ops, "--execute", "--reassignment-json-file", plan, "--json")
    doc = json.loads(out)
    assert code == doc["status"] == 1 and doc["result"]["error"] == ["Error: Unknown broker id 7"]
    assert "Error: Unknown broker id 7" in err and LogReader(ops).end_offset == before


def test_new_cluster_log_replay_and_quorum_print_json(tmp_path, capsys, ops):
    doc = json.loads(run(capsys, "new-cluster", tmp_path / "j", "--brokers", 2, "--json")[1])
    assert doc["result"]["brokers"] == [0, 1] and doc["start_time"] == DEFAULT_START_TIME
    lines = run(capsys, "log", ops, "--json")[1].splitlines()
    entries = [json.loads(line) for line in lines]
    assert entries[0]["time"] == "2024-03-01 09:00:00,000" and entries[0]["logger"] == "state.change.logger"
    assert {"time", "time_ms", "level", "controller_id", "controller_epoch", "offset", "message"} <= set(entries[0])
    doc = json.loads(run(capsys, "replay", ops, "--json")[1])
    assert doc["ok"] and doc["kind"] == "cluster" and doc["digest"]
    code, out, _ = run(capsys, "describe", "--quorum", EXAMPLES / "kraft-observer-expiry.yaml", "--time", 30000,
                       "--json")
    doc = json.loads(out)
    assert code == 0 and doc["time_ms"] == 30000 and doc["leader_id"] == 0 and doc["voters"]
    assert all("last_fetch_ago_ms" in o for o in doc["observers"])


def test_every_reporting_command_has_json():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = {"demo", "completion", "export"}   # demo tells a story; completion prints a script; export: its own
    for name, sub in commands.items():
        if name not in silent:
            assert "--json" in sub._option_string_actions, f"kcontroller {name} has no --json"


# --- progress -------------------------------------------------------------------------------------------------
def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(ops, capsys):
    code, out, err = run(capsys, "log", ops, "--progress", "always")
    assert code == 0 and "records" in err and "[2024-03-01" not in err and out.startswith("[2024-03-01")
    assert run(capsys, "log", ops)[2] == ""                 # stderr is not a terminal here: quiet
    code, out, err = run(capsys, "replay", ops, "--progress", "always")
    assert code == 0 and "replayed" in err and "rec" in err and "replay of" in out
    assert progress.shown("auto") is False and progress.shown("always") and not progress.shown("never")


def test_progress_of_audit_and_sweep(tmp_path, ops, capsys):
    code, out, err = run(capsys, "audit", ops, "--engine", "local", "--progress", "always")
    assert code == 0 and "audit" in err and out.startswith("audit: clean")
    code, out, err = run(capsys, "sweep", EXAMPLES / "rf1-broker-kill.yaml", "--seeds", 2, "--out",
                         tmp_path / "sweep", "--engine", "local", "--progress", "always")
    assert code == 0 and "/2 [" in err and "run" in err


def test_the_poller_draws_its_last_sample():
    done = [0]
    with progress.Poller("always", lambda: done[0], total=3, unit="run", desc="t", interval=0.01) as poller:
        done[0] = 3
    assert poller.bar.n == 3


# --- completion, help -----------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completion_is_valid_and_completes_commands_flags_and_choices(tmp_path, capsys):
    code, script, _ = run(capsys, "completion", "bash")
    assert code == 0 and script == bash_script(build_parser())
    path = tmp_path / "kcontroller.bash"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0

    def complete(*words: str) -> list[str]:
        probe = (f'source "{path}"; COMP_WORDS=({" ".join(repr(w) for w in ("kcontroller", *words))}); '
                 f'COMP_CWORD={len(words)}; _kcontroller; printf "%s\\n" "${{COMPREPLY[@]}}"')
        proc = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return [w for w in proc.stdout.splitlines() if w]
    assert complete("si") == ["simulate"]
    assert {"describe", "demo"} <= set(complete("de"))
    assert complete("--log-level", "debug", "rep") == ["replay"]
    assert "--engine" in complete("audit", "--eng")
    assert complete("audit", "--engine", "") == ["auto", "local", "columnar", "duckdb", "spark"]
    assert complete("new-cluster", "ops", "--start") == ["--start-time"]
    (tmp_path / "scenario.yaml").write_text("")
    assert complete("simulate", "scen") == ["scenario.yaml"]


def test_zsh_completion_script(capsys):
    code, script, _ = run(capsys, "completion", "zsh")
    assert code == 0 and script.startswith("#compdef kcontroller") and "bashcompinit" in script
    if shutil.which("zsh"):
        assert subprocess.run(["zsh", "-n", "-c", script], capture_output=True).returncode == 0


def test_every_option_and_command_has_help():
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            elif not (action.help or "").strip():
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    walk(build_parser(), "kcontroller")
    assert missing == []
