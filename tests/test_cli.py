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


def test_demo_tells_the_rf1_story(tmp_path, capsys):
    """The main job: RF=3 partitions fail over at once; the RF=1 partition on the dead broker keeps
    leader -1 and ISR [1] until the broker returns (../shared/seeds/004_34d7787fd39b218f.txt)."""
    log_dir = tmp_path / "log"
    assert main(["demo", "--log-dir", str(log_dir), "--layout", "message"]) == 0
    out = capsys.readouterr().out
    phases = out.split("\n## ")[1:]
    assert len(phases) == 4
    up, killed, expired, restarted = phases
    assert "Partition: 1\tLeader: 1\tReplicas: 1\tIsr: 1" in up                   # events-1 (RF 1) on broker 1
    assert "Changed" not in killed.split("# controller")[0]                      # session alive: nothing moves
    assert ("[Controller id=0 epoch=1] Partition events-1 state changed to (Leader:-1,ISR:1,LeaderRecoveryState:"
            "RECOVERED,LeaderEpoch:1,ZkVersion:1,ControllerEpoch:1) after removing replica 1 from the ISR as part of "
            "transition to OfflineReplica") in expired
    assert "Topic: events\tPartition: 1\tLeader: none\tReplicas: 1\tIsr: 1\tOffline: 1" in expired
    assert "Topic: orders\tPartition: 1\tLeader: 0\tReplicas: 1,0,2\tIsr: 0,2\tOffline: 1" in expired
    assert "Topic: events\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1" in restarted
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
    assert all(line.endswith("(state.change.logger)") or line.startswith("kafka.common.") for line in trace)
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


def test_replay_reproduces_the_demo_and_reports_a_divergence(demo_log, capsys):
    assert main(["replay", str(demo_log)]) == 0
    assert "records identical" in capsys.readouterr().out
    records = list(LogReader(demo_log).records())
    tampered = tmp = demo_log.parent / "tampered"
    from events.log import LogWriter
    with LogWriter(tmp) as w:
        for r in records:
            w.append(r._replace(timestamp_ms=r.timestamp_ms + 1) if r.offset == 100 else r)
    assert main(["replay", str(tampered)]) == 1
    out = capsys.readouterr().out
    assert "diverged after 100 identical records at offset 100: expected" in out


def test_describe_text_json_and_points_in_time(demo_log, capsys):
    import json
    assert main(["describe", str(demo_log)]) == 0
    assert "Topic: events\tPartition: 1\tLeader: 1" in capsys.readouterr().out
    assert main(["describe", str(demo_log), "--time", "30000", "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["controller"] == {"id": 0, "epoch": 1}
    assert [b["live"] for b in state["brokers"]] == [True, False, True]
    events1 = state["topics"][0]["partitions"][1]
    assert (events1["leader"], events1["isr"], events1["state"]) == (-1, [1], "OfflinePartition")
    assert events1["replica_states"] == {"1": "OfflineReplica"}
    assert main(["describe", str(demo_log), "--at", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["topics"] == []


def test_python_dash_m_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kcontroller", "demo", "--log-dir", str(tmp_path / "l"),
                           "--level", "INFO"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "INFO [Controller id=0 epoch=1]" in proc.stdout
