"""``kcontroller replay PATH...`` over many logs (:mod:`kcontroller.replay_many`): logs found recursively, a verdict
per log (same / diverged at offset N / unreadable), the same verdicts in process and on Spark (one task per log),
exit codes, ``--json``; and ``kcontroller sweep --verify``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from controller.embedding.demo import DemoSpec, run_demo
from events.log import LogReader, LogWriter
from kcontroller import replay_many
from kcontroller.cli import main
from kcontroller.replay_many import AUTO_SPARK_LOGS, choose_engine, find_logs, replay_logs
from kcontroller.sweep import SWEEP_FILE, run_sweep, verify_logs
from sim.scenario import parse_scenario

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")

SMALL = """\
name: small-unclean
seed: 5
duration: 12s
cluster:
  brokers: [1, 2, 3]
  configs:
    replica.lag.time.max.ms: 1000
    zookeeper.session.timeout.ms: 2000
    unclean.leader.election.enable: true
network: {latency: 1ms, jitter: 5ms}
topics:
  - {name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
workload:
  producers: [{topics: [t], rate_per_s: 300, acks: all}]
steps:
  - {at: 3s, action: slow_follower, broker: 1, delay: 20s, until: 6s}
  - {at: 5s, action: kill_broker, broker: 2}
  - {at: 10s, action: start_broker, broker: 2}
"""
TAMPERED_AT = 50


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """runs/sweep/seed-{5,6,7} (a sweep's output), runs/cluster/demo (a cluster's log), runs/tampered (seed 6's log
    with one record's time changed), and a hidden half-written directory a search must skip."""
    root = tmp_path_factory.mktemp("runs")
    run_sweep(parse_scenario(SMALL, "small.yaml"), str(root / "sweep"), [5, 6, 7], engine="local")
    with LogWriter(root / "cluster" / "demo") as w:
        run_demo(DemoSpec(), w.append)
    with LogWriter(root / "tampered") as w:
        for r in LogReader(root / "sweep" / "seed-6").records():
            w.append(r._replace(timestamp_ms=r.timestamp_ms + 1) if r.offset == TAMPERED_AT else r)
    shutil.copytree(root / "tampered", root / "sweep" / ".seed-9.x.tmp")
    return root


@pytest.fixture
def corrupt(runs, tmp_path) -> Path:
    """A copy of seed 5's log with a byte of its first batch flipped."""
    log = tmp_path / "corrupt"
    shutil.copytree(runs / "sweep" / "seed-5", log)
    segment = sorted(log.iterdir())[0]
    data = bytearray(segment.read_bytes())
    data[200] ^= 0xFF
    segment.write_bytes(bytes(data))
    return log


def _replay(capsys, *args) -> tuple[int, str]:
    code = main(["replay", *map(str, args)])
    return code, capsys.readouterr().out


def test_logs_are_found_recursively_each_once_hidden_directories_skipped(runs, tmp_path):
    found = find_logs([runs, runs / "sweep", str(runs / "sweep" / "seed-*")])
    assert found.logs == sorted(str(runs / p) for p in ("cluster/demo", "sweep/seed-5", "sweep/seed-6",
                                                        "sweep/seed-7", "tampered"))
    assert found.problems == []
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    problems = dict(find_logs([tmp_path / "empty", tmp_path / "file", tmp_path / "nothing", str(tmp_path / "x*")])
                    .problems)
    assert problems == {str(tmp_path / "empty"): "no event log in it (no directory holding *.kclog files)",
                        str(tmp_path / "file"): "not a directory (replay reads event log directories)",
                        str(tmp_path / "nothing"): "does not exist",
                        str(tmp_path / "x*"): "no directory matches this glob"}


def test_every_log_gets_a_verdict_and_the_tampered_one_names_its_offset(runs, capsys):
    code, out = _replay(capsys, runs)
    assert code == 1
    lines = out.splitlines()
    assert lines[-1] == "# replayed 5 logs (this process): 4 same, 1 diverged, 0 unreadable"
    by_log = {line.split(": ", 1)[0]: line for line in lines[:-1]}
    assert list(by_log) == sorted(by_log) and len(by_log) == 5
    assert by_log[str(runs / "cluster" / "demo")].startswith(f"{runs / 'cluster' / 'demo'}: same: cluster, ")
    assert "final state digest 2:" in by_log[str(runs / "cluster" / "demo")]
    assert "same: simulation 'small-unclean' (seed 6)" in by_log[str(runs / "sweep" / "seed-6")]
    tampered = by_log[str(runs / "tampered")]
    assert f"DIVERGED at offset {TAMPERED_AT}: expected " in tampered and ", got " in tampered
    assert f"after {TAMPERED_AT} identical records" in tampered


def test_exit_status_same_diverged_unreadable(runs, corrupt, tmp_path, capsys):
    assert _replay(capsys, runs / "sweep")[0] == 0
    assert _replay(capsys, runs / "sweep", runs / "tampered")[0] == 1
    code, out = _replay(capsys, runs / "tampered", corrupt, tmp_path / "missing")
    assert code == 2
    assert f"{corrupt}: UNREADABLE: LogCorruptError: event log segment" in out
    assert f"{tmp_path / 'missing'}: UNREADABLE: does not exist" in out
    assert out.splitlines()[-1].endswith("0 same, 1 diverged, 2 unreadable")


def test_json_holds_the_counts_and_every_verdict(runs, capsys):
    code, out = _replay(capsys, runs / "sweep", runs / "tampered", "--json")
    doc = json.loads(out)
    assert code == 1 and (doc["ok"], doc["logs"], doc["same"], doc["diverged"], doc["unreadable"]) == (
        False, 4, 3, 1, 0)
    tampered = next(v for v in doc["runs"] if v["log_dir"] == str(runs / "tampered"))
    assert (tampered["verdict"], tampered["offset"], tampered["records"], tampered["kind"], tampered["seed"]) == (
        "diverged", TAMPERED_AT, TAMPERED_AT, "simulation", 6)
    assert tampered["divergence"].startswith(f"offset {TAMPERED_AT}: expected ReplicaTransition")
    same = next(v for v in doc["runs"] if v["log_dir"] == str(runs / "sweep" / "seed-5"))
    assert same["verdict"] == "same" and same["records"] == len(list(LogReader(runs / "sweep" / "seed-5").records()))


def test_one_log_keeps_the_one_log_output(runs, capsys):
    code, out = _replay(capsys, runs / "sweep" / "seed-5")
    assert code == 0 and out.startswith(f"replay of {runs / 'sweep' / 'seed-5'}: simulation 'small-unclean' (seed 5)")
    code, out = _replay(capsys, runs / "tampered")
    assert code == 1 and out.startswith(f"replay of {runs / 'tampered'} diverged after {TAMPERED_AT} identical")
    assert json.loads(_replay(capsys, runs / "cluster" / "demo", "--json")[1])["kind"] == "cluster"


def test_auto_is_local_below_the_threshold_and_spark_from_it(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert choose_engine("auto", AUTO_SPARK_LOGS - 1) == "local"
    assert choose_engine("auto", AUTO_SPARK_LOGS) == "spark"
    assert choose_engine("local", 10 ** 6) == "local" and choose_engine("spark", 1) == "spark"
    # Under spark-submit (it hands the driver its JVM gateway): Spark for more than one log. A session merely
    # left running in the process (a test suite's) does not count.
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
    assert choose_engine("auto", 2) == "spark" and choose_engine("auto", 1) == "local"


def test_master_goes_with_spark(runs, capsys):
    assert main(["replay", str(runs / "sweep"), "--engine", "local", "--master", "local[1]"]) == 2
    assert "--master" in capsys.readouterr().err


def test_a_sweep_with_verify_replays_its_logs(tmp_path, capsys, monkeypatch):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    out = tmp_path / "sweep"
    assert main(["sweep", str(scenario), "--seeds", "3", "--engine", "local", "--out", str(out), "--verify"]) == 0
    assert "replay of the 3 logs: every log written again, byte for byte" in capsys.readouterr().out
    doc = json.loads((out / SWEEP_FILE).read_text())
    assert doc["verify"] == {"logs": 3, "same": 3, "diverged": 0, "unreadable": 0, "failed": []}

    real = replay_many.replay_one

    def seed_6_diverges(log_dir, **kw):
        v = real(log_dir, **kw)
        if log_dir.endswith("seed-6"):
            v.update(verdict="diverged", offset=7, divergence="offset 7: expected X, got Y")
        return v

    monkeypatch.setattr(replay_many, "replay_one", seed_6_diverges)
    code = main(["sweep", str(scenario), "--seeds", "3", "--engine", "local", "--out", str(out), "--overwrite",
                 "--verify"])
    text = capsys.readouterr().out
    assert code == 1
    assert "replay of the 3 logs: 1 DIVERGED, 0 UNREADABLE" in text and "seed 6: diverged at offset 7" in text
    failed = json.loads((out / SWEEP_FILE).read_text())["verify"]["failed"]
    assert failed == [{"seed": 6, "verdict": "diverged", "offset": 7, "divergence": "offset 7: expected X, got Y",
                       "error": None}]


# --- on Spark -------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_spark_gives_the_local_verdicts_one_task_per_log(spark, runs, corrupt, capsys):
    paths = [runs, corrupt]
    local = replay_logs(paths, engine="local")
    on_spark = replay_logs(paths, engine="spark", spark=spark)
    assert on_spark.engine == "spark" and on_spark.verdicts == local.verdicts
    assert [v["verdict"] for v in local.verdicts].count("diverged") == 1 and local.exit_status == 2
    # The command, on the session the test run shares (it takes the active one, and leaves it running).
    code = main(["replay", *map(str, paths), "--engine", "spark", "--master", spark.sparkContext.master, "--json",
                 "--progress", "always"])
    out, err = capsys.readouterr()
    assert code == 2 and json.loads(out) == local.to_json()
    logs = len(local.verdicts)
    assert f"{logs}/{logs}" in err and "Spark tasks" in err     # the bar: Spark's tasks, one per log
    assert spark.range(3).count() == 3


@pytest.mark.spark
def test_a_sweep_on_spark_verifies_its_logs_on_spark(spark, runs):
    """What ``run_sweep(engine="spark", verify=True)`` does after its audit (that costs a Spark audit: the
    sweep tests run one), on the logs of a local sweep: the same logs, byte for byte."""
    out = str(runs / "sweep")
    done = [{"seed": s, "log_dir": f"seed-{s}"} for s in (5, 6, 7)]
    assert verify_logs(out, done, spark) == verify_logs(out, done) == {
        "logs": 3, "same": 3, "diverged": 0, "unreadable": 0, "failed": []}
