"""``kcontroller simulate``: the log, the summary (text and JSON), the plot, and the replay of the log."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from events.log import LogReader
from events.records import SimulationStarted, SimulationSummary
from kcontroller.cli import main

@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "unclean-election-on.yaml")


def test_simulate_writes_a_log_that_replays_and_prints_the_summary_as_json(tmp_path, capsys):
    log = tmp_path / "log"
    png = tmp_path / "timeline.png"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log), "--json", "--plot", str(png)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenario"] == "unclean-election-on" and summary["acknowledged_writes_lost"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = list(LogReader(log).records())
    assert type(records[0]) is SimulationStarted and records[0].seed == 13
    assert "unclean-election-on" in records[0].text
    assert type(records[-1]) is SimulationSummary and json.loads(records[-1].summary) == summary
    assert main(["replay", str(log)]) == 0
    assert "records identical" in capsys.readouterr().out


def test_another_seed_and_the_text_summary(tmp_path, capsys):
    assert main(["simulate", EXAMPLE, "--log-dir", str(tmp_path / "a"), "--seed", "99"]) == 0
    out = capsys.readouterr().out
    assert "scenario unclean-election-on (seed 99)" in out and "acknowledged writes lost" in out
    assert "elections: clean 0, unclean 1" in out


def test_a_changed_log_does_not_replay(tmp_path, capsys):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log), "--json"]) == 0
    records = list(LogReader(log).records())
    other = tmp_path / "other"
    from events.log import LogWriter
    with LogWriter(other) as w:
        first = records[0]
        w.append(first._replace(text=first.text.replace("rate_per_s: 100", "rate_per_s: 101")))
        for r in records[1:]:
            w.append(r)
    capsys.readouterr()
    assert main(["replay", str(other)]) == 1
    assert "diverged" in capsys.readouterr().out


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration: 10s\ncluster: {brokers: [1]}\nsteps:\n  - {at: 1s, action: kil_broker}\n")
    assert main(["simulate", str(bad), "--log-dir", str(tmp_path / "l")]) == 2
    assert f"{bad}:5:" in capsys.readouterr().err
    log = tmp_path / "used"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 0
    assert main(["simulate", EXAMPLE, "--log-dir", str(log)]) == 2
    assert "--overwrite" in capsys.readouterr().err
