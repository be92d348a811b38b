"""The kcontroller command: demo writes a log and prints it; log prints any log; bad logs exit 2 with one line."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import structlog

from events.log import LogReader
from kcontroller.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    structlog.reset_defaults()  # main() configures structlog for the process; leave other tests as they were


@pytest.fixture
def demo_log(tmp_path, capsys):
    log_dir = tmp_path / "log"
    assert main(["demo", "--log-dir", str(log_dir)]) == 0
    capsys.readouterr()
    return log_dir


def test_demo_prints_kafka_state_change_lines(tmp_path, capsys):
    log_dir = tmp_path / "log"
    assert main(["demo", "--log-dir", str(log_dir), "--layout", "message"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert ("[Controller id=0 epoch=1] Changed partition orders-0 state from NonExistentPartition to NewPartition "
            "with assigned replicas 2,0,1") in lines
    assert ("[Controller id=0 epoch=1] Changed state of replica 1 for partition orders-0 from OnlineReplica to "
            "OfflineReplica") in lines
    assert any(line.startswith("[Controller id=0 epoch=1] Changed partition orders-2 from OfflinePartition to "
                               "OnlinePartition with state LeaderAndIsr(leader=2, leaderEpoch=1") for line in lines)
    assert "Partition: 0\tLeader: 2\tReplicas: 2,0,1\tIsr: 2,0\tOffline: 1" in err
    assert len(list(LogReader(log_dir).records())) > 100


def test_demo_is_deterministic(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["demo", "--log-dir", str(a)]) == 0
    assert main(["demo", "--log-dir", str(b)]) == 0
    files_a, files_b = sorted(os.listdir(a)), sorted(os.listdir(b))
    assert files_a == files_b
    for name in files_a:
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_demo_refuses_to_overwrite_without_flag(demo_log, capsys):
    assert main(["demo", "--log-dir", str(demo_log)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert main(["demo", "--log-dir", str(demo_log), "--overwrite"]) == 0


def test_log_prints_all_levels_or_info_only(demo_log, capsys):
    assert main(["log", str(demo_log)]) == 0
    trace = capsys.readouterr().out.splitlines()
    assert all(line.endswith("(state.change.logger)") for line in trace)
    assert any(" TRACE [Controller id=0 epoch=1] Changed state of replica" in line for line in trace)
    assert main(["log", str(demo_log), "--level", "INFO"]) == 0
    info = capsys.readouterr().out.splitlines()
    assert info and not any(" TRACE " in line for line in info)
    assert set(info) <= set(trace)


def test_log_from_offset(demo_log, capsys):
    assert main(["log", str(demo_log), "--from", "100000"]) == 0
    assert capsys.readouterr().out == ""


def test_missing_log_is_one_line_exit_2(tmp_path, capsys):
    assert main(["log", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and err.startswith("kcontroller: error:")


def test_damaged_log_names_file_and_position(demo_log, capsys):
    segment = sorted(demo_log.iterdir())[0]
    data = bytearray(segment.read_bytes())
    data[200] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert main(["log", str(demo_log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert str(segment) in err and "byte" in err


def test_python_dash_m_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kcontroller", "demo", "--log-dir", str(tmp_path / "l"),
                           "--level", "INFO"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "INFO [Controller id=0 epoch=1]" in proc.stdout
