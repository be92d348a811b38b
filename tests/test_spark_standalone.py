"""Smoke tests on a real (one-machine) Spark standalone cluster: master and worker daemons started
from the pyspark package, our log reader, ``kcontroller audit --master`` and a sweep run against
spark://127.0.0.1:<port> (one cluster for the module); and a sweep under spark-submit.

The job runs in a separate Python process: a second SparkContext cannot live beside the one the
other Spark tests share in this process. The executors get our packages from the job
(``read_logs_df`` ships them) and run this interpreter (``PYSPARK_PYTHON``).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from audit.log_rows import read_log_rows
from controller.state_machine_harness import ScriptSpec, run_scripted
from events.log import FsyncPolicy, LogWriter

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTUP_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(spark_home: str, args: list[str], log_path: str, env: dict) -> subprocess.Popen:
    with open(log_path, "wb") as log:
        return subprocess.Popen([os.path.join(spark_home, "bin", "spark-class"), *args], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)   # its own session: spark-class execs the JVM in place
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("spark-standalone")
    pyspark = pytest.importorskip("pyspark")
    spark_home = os.path.dirname(os.path.abspath(pyspark.__file__))
    master_port, master_ui, worker_port, worker_ui = (_free_port() for _ in range(4))
    env = dict(os.environ, SPARK_HOME=spark_home, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(tmp_path / "work"),
               SPARK_LOG_DIR=str(tmp_path), PYSPARK_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)  # executors must get our packages from the job, not from here
    url = f"spark://127.0.0.1:{master_port}"
    daemons = []
    try:
        daemons.append(_start(spark_home, ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                           "--port", str(master_port), "--webui-port", str(master_ui)],
                              str(tmp_path / "master.log"), env))
        daemons.append(_start(spark_home, ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                           "--port", str(worker_port), "--webui-port", str(worker_ui),
                                           "--cores", "1", "--memory", "1g"],
                              str(tmp_path / "worker.log"), env))
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while _alive_workers(master_ui) < 1:
            for proc, name in zip(daemons, ("master", "worker")):
                if proc.poll() is not None:
                    pytest.fail(f"Spark {name} exited with {proc.returncode}:\n"
                                f"{(tmp_path / f'{name}.log').read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no worker registered with {url} within {STARTUP_TIMEOUT_S} s:\n"
                            f"{(tmp_path / 'worker.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        for proc in reversed(daemons):
            _stop(proc)


_JOB = """
import sys
from pyspark.sql import SparkSession
from audit.spark_source import read_logs_df
spark = (SparkSession.builder.master(sys.argv[1]).appName("kcontroller-standalone-smoke")
         .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.executor.memory", "512m")
         .config("spark.cores.max", "1").getOrCreate())
df = read_logs_df(spark, sys.argv[2:])
print("ROWS", df.count(), df.rdd.getNumPartitions(), df.select("run_id").distinct().count())
spark.stop()
"""


def test_the_log_reader_runs_on_a_standalone_cluster(cluster, tmp_path):
    logs = []
    for i in range(2):
        path = tmp_path / f"run-{i}"
        with LogWriter(path, fsync=FsyncPolicy.none(), segment_bytes=8192, batch_records=50) as writer:
            run_scripted(ScriptSpec(brokers=5, partitions=30, kill=(1,), seed=i), writer.append)
        logs.append(str(path))
    expected = sum(1 for _ in read_log_rows(logs))
    segments = sum(len(os.listdir(p)) for p in logs)

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    job = subprocess.run([sys.executable, "-c", _JOB, cluster, *logs], env=env, capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    lines = [line for line in job.stdout.splitlines() if line.startswith("ROWS ")]
    assert job.returncode == 0 and lines, job.stderr[-4000:]
    assert lines[0].split()[1:] == [str(expected), str(segments), "2"]


def test_kcontroller_audit_runs_on_a_standalone_cluster(cluster, tmp_path):
    from audit.runner import run_audit
    from events import records as R
    from statemachines.states import ReplicaState

    logs = []
    for i in range(2):
        records: list = []
        run_scripted(ScriptSpec(brokers=5, partitions=30, kill=(1,), seed=i), records.append)
        if i == 1:  # one illegal transition planted at the end of the second log
            last = records[-1]
            records.append(R.ReplicaTransition(R.ReplicaTransition.KIND, R.SCHEMA_VERSION, last.offset + 1,
                                               last.controller_id, last.controller_epoch, last.timestamp_ms,
                                               last.offset, "planted", 0, 2, ReplicaState.OnlineReplica.byte,
                                               ReplicaState.NewReplica.byte))
        path = tmp_path / "logs" / f"run-{i}"
        with LogWriter(path, fsync=FsyncPolicy.none(), segment_bytes=8192, batch_records=50) as writer:
            for rec in records:
                writer.append(rec)
        logs.append(str(path))
    expected = run_audit([str(tmp_path / "logs")], engine="local").to_json()

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    report = tmp_path / "report.json"
    job = subprocess.run([sys.executable, "-m", "kcontroller", "audit", str(tmp_path / "logs"), "--master", cluster,
                          "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.host=127.0.0.1",
                          "--report", str(report)],
                         env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert job.returncode == 1, job.stdout[-2000:] + job.stderr[-4000:]
    got = json.loads(report.read_text())
    assert (got.pop("engine"), got.pop("master")) == ("spark", cluster)
    expected.pop("engine"), expected.pop("master")
    assert got == expected
    assert got["summary"]["violations_by_kind"]["illegal_transition"] == 1


def test_a_sweep_runs_on_a_standalone_cluster(cluster, tmp_path):
    """``kcontroller sweep --master spark://...``: the seeds run on the cluster's executor, which imports our
    packages from the zip the sweep ships (its environment has no PYTHONPATH, its working directory is its
    own); the logs land in the sweep's directory (shared: one machine), equal to a local sweep's."""
    example = os.path.join(ROOT, "examples", "unclean-election-on.yaml")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    runs = {}
    for engine in ("spark", "local"):
        out = tmp_path / engine
        args = ["--master", cluster] if engine == "spark" else ["--engine", "local"]
        job = subprocess.run([sys.executable, "-m", "kcontroller", "sweep", example, "--seeds", "2", "--out", str(out),
                              "--json", *args], env=env, capture_output=True, text=True, timeout=300,
                             cwd=str(tmp_path))
        assert job.returncode == 0, job.stderr[-4000:]
        runs[engine] = job.stdout
    assert runs["spark"] == runs["local"]
    assert json.loads(runs["spark"])["audit"]["violations"] == 0
    for seed in (13, 14):
        spark_files = sorted((tmp_path / "spark" / f"seed-{seed}").iterdir())
        local_files = sorted((tmp_path / "local" / f"seed-{seed}").iterdir())
        assert [f.read_bytes() for f in spark_files] == [f.read_bytes() for f in local_files]


def test_a_sweep_under_spark_submit_runs_on_the_submitted_master(tmp_path):
    """``spark-submit --master local[1] kcontroller/__main__.py sweep ...``: the session the sweep builds takes
    the submitted master (not its own default, local[*]); results equal a local sweep's."""
    pyspark = pytest.importorskip("pyspark")
    submit = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "bin", "spark-submit")
    example = os.path.join(ROOT, "examples", "unclean-election-on.yaml")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    job = subprocess.run([submit, "--master", "local[1]", os.path.join(ROOT, "kcontroller", "__main__.py"), "sweep",
                          example, "--seeds", "2", "--out", str(tmp_path / "spark")], env=env, capture_output=True,
                         text=True, timeout=300, cwd=str(tmp_path))
    assert job.returncode == 0, job.stderr[-4000:]
    assert "(Spark local[1])" in job.stdout
    local = subprocess.run([sys.executable, "-m", "kcontroller", "sweep", example, "--seeds", "2", "--engine", "local",
                            "--out", str(tmp_path / "local")], env=env, capture_output=True, text=True, timeout=300,
                           cwd=str(tmp_path))
    assert local.returncode == 0, local.stderr[-4000:]
    assert (tmp_path / "spark" / "sweep.json").read_bytes() == (tmp_path / "local" / "sweep.json").read_bytes()


def _env() -> dict:
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))


def _kcontroller(args: list[str], cwd, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcontroller", *args], env=_env(), capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd))


@pytest.fixture(scope="module")
def sweep_logs(tmp_path_factory):
    """A local sweep's logs (two seeds of the unclean-election example), for the replay and the fold."""
    out = tmp_path_factory.mktemp("sweep-logs") / "sweep"
    job = _kcontroller(["sweep", os.path.join(ROOT, "examples", "unclean-election-on.yaml"), "--seeds", "2",
                        "--engine", "local", "--out", str(out)], out.parent)
    assert job.returncode == 0, job.stderr[-4000:]
    return out


def test_kcontroller_replay_runs_on_a_standalone_cluster(cluster, sweep_logs, tmp_path):
    """``kcontroller replay SWEEP_DIR --master spark://...``: one task per log on the cluster's executor, the
    same verdicts as in process."""
    on_cluster = _kcontroller(["replay", str(sweep_logs), "--master", cluster, "--json"], tmp_path)
    local = _kcontroller(["replay", str(sweep_logs), "--engine", "local", "--json"], tmp_path)
    assert on_cluster.returncode == 0 and local.returncode == 0, on_cluster.stderr[-4000:] + local.stderr[-2000:]
    got = json.loads(on_cluster.stdout)
    assert got == json.loads(local.stdout) and got["logs"] == 2 and got["same"] == 2


def test_kcontroller_fold_runs_on_a_standalone_cluster(cluster, sweep_logs, tmp_path):
    """``kcontroller fold SWEEP_DIR --master spark://... --timelines``: every run's state and timelines, the
    same tables as DuckDB's in process."""
    pytest.importorskip("duckdb")
    docs = {}
    for engine, args in (("spark", ["--master", cluster]), ("local", ["--engine", "local"])):
        out = tmp_path / f"{engine}.json"
        job = _kcontroller(["fold", str(sweep_logs), "--time", "60000", "--timelines", "--out", str(out), *args],
                           tmp_path)
        assert job.returncode == 0, job.stderr[-4000:]
        assert ("(spark)" if engine == "spark" else "(duckdb)") in job.stdout
        docs[engine] = json.loads(out.read_text())
    assert docs["spark"] == docs["local"]
    assert {row["run_id"] for row in docs["local"]["state"]} and docs["local"]["leader_changes"]
