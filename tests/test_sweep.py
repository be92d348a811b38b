"""``kcontroller sweep``: runs of one scenario over many seeds, on Spark and in process, their logs (the bytes
``kcontroller simulate --seed S`` writes), their audit, and the distribution of the metrics across seeds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kcontroller import sweep as sweep_module
from kcontroller.cli import main
from kcontroller.sweep import (
    SHIPPED, SWEEP_FILE, distribution, metric_distributions, metric_values, run_sweep, sweep_document,
)
from sim.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "unclean-election-on.yaml")

# Three brokers, three partitions placed by the seed, a jittery network: the unclean-election story in
# 12 simulated seconds, whose numbers differ from seed to seed.
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
  - {at: 1s, action: slow_follower, broker: 3, delay: 20s, until: 6s}
  - {at: 3s, action: slow_follower, broker: 1, delay: 20s, until: 6s}
  - {at: 5s, action: kill_broker, broker: 2}
  - {at: 10s, action: start_broker, broker: 2}
"""


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


@pytest.fixture
def small(tmp_path) -> str:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return str(path)


def _files(log_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log_dir.iterdir())}


def _logs(out: Path) -> dict[str, dict[str, bytes]]:
    return {d.name: _files(d) for d in sorted(out.iterdir()) if d.is_dir()}


# --- in process ------------------------------------------------------------------------------------------

def test_a_local_sweep_runs_every_seed_audits_the_logs_and_summarises_the_metrics(small, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", small, "--seeds", "4", "--engine", "local", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "sweep of small-unclean" in text and "4 seeds (5..8)" in text and ": clean" in text
    assert "acknowledged_writes_lost" in text.split("the same in every run")[0]   # differs between seeds
    doc = json.loads((out / SWEEP_FILE).read_text())
    assert sorted(p.name for p in out.iterdir()) == ["seed-5", "seed-6", "seed-7", "seed-8", SWEEP_FILE]
    assert doc["seeds"] == [5, 6, 7, 8] and doc["finished"] == 4 and doc["failed"] == []
    assert doc["audit"]["runs"] == 4 and doc["audit"]["violations"] == 0 and doc["audit"]["listed"] == []
    assert [r["seed"] for r in doc["runs"]] == [5, 6, 7, 8] and all(r["violations"] == 0 for r in doc["runs"])
    lost = doc["metrics"]["acknowledged_writes_lost"]
    values = {r["seed"]: r["summary"]["acknowledged_writes_lost"] for r in doc["runs"]}
    assert lost["min"] == min(values.values()) < lost["max"] == max(values.values())
    assert set(lost["min_seeds"]) == {s for s, v in values.items() if v == lost["min"]}
    assert lost["n"] == 4 and lost["null"] == 0
    assert doc["metrics"]["elections.unclean"]["min"] >= 1
    # Each log folded into its timelines tells the availability the simulation counted while it ran.
    assert doc["timeline"] == {"runs": 4, "offline_seconds_differ": [], "unclean_elections_differ": []}
    assert "timelines tell the simulations' offline partition-seconds and unclean elections in 4 of 4 runs" in text
    for r in doc["runs"]:
        assert r["timeline"]["offline_partition_seconds"] == r["summary"]["offline_partition_seconds"]
        assert r["timeline"]["unclean_elections"] == r["summary"]["elections"]["unclean"]
        assert r["timeline"]["leader_elections"] >= 3                      # every partition's first leader
    assert doc["metrics"]["timeline.unclean_elections"]["max"] >= 1
    capsys.readouterr()
    assert main(["sweep", small, "--seeds", "4", "--engine", "local", "--out", str(out), "--overwrite",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc


def test_a_log_that_disagrees_with_its_simulations_metrics_is_named(small, tmp_path, monkeypatch):
    real = sweep_module.timeline_figures

    def one_off(paths, ends, spark=None):
        figures = real(paths, ends, spark)
        seed_6 = next(run for run in figures if run.endswith("seed-6"))
        figures[seed_6] = {**figures[seed_6], "offline_partition_seconds": 1234.5}
        return figures

    monkeypatch.setattr(sweep_module, "timeline_figures", one_off)
    result = run_sweep(parse_scenario(SMALL, small), str(tmp_path / "sweep"), [5, 6, 7], engine="local")
    assert result.document["timeline"] == {"runs": 3, "offline_seconds_differ": [6], "unclean_elections_differ": []}
    assert "in 2 of 3 runs; DIFFERENT in seeds 6" in sweep_module.format_sweep(result.document, str(tmp_path))


def test_sweep_logs_are_the_bytes_kcontroller_simulate_writes(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", EXAMPLE, "--seeds", "2", "--first-seed", "7", "--engine", "local", "--out", str(out),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for seed in (7, 8):
        alone = tmp_path / f"alone-{seed}"
        assert main(["simulate", EXAMPLE, "--seed", str(seed), "--log-dir", str(alone), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == doc["runs"][seed - 7]["summary"]
        assert _files(out / f"seed-{seed}") == _files(alone)
    # The example pins its assignment and has no network jitter: every seed tells the same story.
    assert doc["metrics"]["acknowledged_writes_lost"]["min"] == doc["metrics"]["acknowledged_writes_lost"]["max"] > 0


def test_the_first_seed_defaults_to_the_scenarios(small, tmp_path, capsys):
    assert main(["sweep", small, "--seeds", "1", "--engine", "local", "--out", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeds"] == [5]


def test_a_malformed_scenario_fails_before_anything_runs(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration: 10s\ncluster: {brokers: [1]}\nsteps:\n  - {at: 1s, action: kil_broker}\n")
    monkeypatch.setattr("kcontroller.cli_sweep.spark_session", lambda *a, **k: pytest.fail("Spark was started"))
    monkeypatch.setattr("kcontroller.sweep.run_seed", lambda *a, **k: pytest.fail("a seed ran"))
    for engine in ("spark", "local"):
        out = tmp_path / f"out-{engine}"
        assert main(["sweep", str(bad), "--seeds", "3", "--engine", engine, "--out", str(out)]) == 2
        assert f"{bad}:5:" in capsys.readouterr().err
        assert not out.exists()


def test_the_output_directory_is_replaced_only_when_asked_and_only_if_it_holds_a_sweep(small, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["sweep", small, "--seeds", "1", "--engine", "local", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["sweep", small, "--seeds", "1", "--engine", "local", "--out", str(out), "--overwrite"]) == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    assert main(["sweep", small, "--seeds", "3", "--engine", "local", "--out", str(out)]) == 0
    assert main(["sweep", small, "--seeds", "1", "--engine", "local", "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["seed-5", SWEEP_FILE]   # no leftover of the earlier sweep


def test_bad_options_are_errors(small, tmp_path, capsys):
    out = str(tmp_path / "o")
    assert main(["sweep", small, "--seeds", "0", "--engine", "local", "--out", out]) == 2
    assert main(["sweep", small, "--seeds", "1", "--engine", "local", "--master", "local[1]", "--out", out]) == 2
    assert main(["sweep", small, "--seeds", "1", "--jobs", "2", "--engine", "spark", "--out", out]) == 2
    assert capsys.readouterr().err.count("kcontroller: error:") == 3


def test_auto_runs_in_process_unless_spark_is_asked_for(small, tmp_path, monkeypatch):
    import kcontroller.cli_sweep as cli_sweep

    def no_spark(*args, **kwargs):
        raise AssertionError("auto started Spark without --master or an active session")
    monkeypatch.setattr(cli_sweep, "spark_session", no_spark)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    out = tmp_path / "o"
    assert main(["sweep", small, "--seeds", "2", "--jobs", "2", "--out", str(out)]) == 0
    document = json.loads((out / "sweep.json").read_text())
    assert len(document["seeds"]) == 2 and not document["failed"]


def test_a_run_that_fails_is_reported_and_the_others_are_audited(small, tmp_path, capsys, monkeypatch):
    real = sweep_module.simulate_to_log

    def flaky(scenario, log_dir, *, seed=None, progress=None):
        if seed == 6:
            raise RuntimeError("boom")
        return real(scenario, log_dir, seed=seed, progress=progress)

    monkeypatch.setattr(sweep_module, "simulate_to_log", flaky)
    out = tmp_path / "out"
    assert main(["sweep", small, "--seeds", "3", "--engine", "local", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "seed 6 failed: RuntimeError: boom" in captured.out and "Traceback" in captured.err
    doc = json.loads((out / SWEEP_FILE).read_text())
    assert doc["failed"] == [{"seed": 6, "error": "RuntimeError: boom"}] and doc["finished"] == 2
    assert doc["audit"]["runs"] == 2 and doc["metrics"]["acknowledged_writes_lost"]["n"] == 2
    assert sorted(p.name for p in out.iterdir()) == ["seed-5", "seed-7", SWEEP_FILE]   # no half-written log


def test_worker_processes_and_the_order_of_the_seeds_change_nothing(tmp_path):
    scenario = parse_scenario(SMALL, "small.yaml")
    one = run_sweep(scenario, str(tmp_path / "one"), [5, 6, 7], engine="local")
    pool = run_sweep(scenario, str(tmp_path / "pool"), [7, 5, 6], engine="local", jobs=2)
    assert pool.document == one.document
    assert (tmp_path / "pool" / SWEEP_FILE).read_bytes() == (tmp_path / "one" / SWEEP_FILE).read_bytes()
    assert _logs(tmp_path / "pool") == _logs(tmp_path / "one")
    shuffled = sweep_document(scenario, str(tmp_path / "one"), list(reversed(one.runs)), one.report)
    assert shuffled == one.document


def test_distribution_nearest_rank_percentiles_and_the_seeds_at_the_extremes():
    d = distribution([(s, v) for s, v in zip(range(1, 11), [5, 1, 9, 1, 7, 3, 3, 8, 2, 9])])
    assert (d["min"], d["p50"], d["p90"], d["max"], d["mean"]) == (1, 3, 9, 9, 4.8)
    assert (d["min_seeds"], d["min_count"], d["max_seeds"], d["max_count"]) == ([2, 4], 2, [3, 10], 2)
    assert distribution([(1, 2.5)])["p90"] == 2.5
    nulls = distribution([(3, None), (1, 4.0), (2, None)])
    assert (nulls["n"], nulls["null"], nulls["null_seeds"], nulls["min"], nulls["max"]) == (1, 2, [2, 3], 4.0, 4.0)
    none = distribution([(1, None)])
    assert none["min"] is None and none["mean"] is None and none["null"] == 1


def test_metric_values_flatten_the_summary_and_a_count_missing_from_a_run_is_zero(tmp_path):
    scenario = parse_scenario(SMALL, "small.yaml")
    runs = run_sweep(scenario, str(tmp_path / "o"), [5], engine="local").runs
    summary = runs[0]["summary"]
    values = metric_values(summary)
    assert values["acknowledged_writes_lost"] == summary["acknowledged_writes_lost"]
    assert values["elections.unclean"] == summary["elections"]["unclean"]
    assert values["loss_events"] == len(summary["loss_events"])
    assert "seed" not in values and "at_end.controller_id" not in values
    assert "fault 3 kill_broker@5s: recovered_after_s" in values
    other = json.loads(json.dumps(summary))
    other["seed"] = 99
    other["produce"]["errors"] = {"NOT_ENOUGH_REPLICAS": 4}
    metrics = metric_distributions([summary, other])
    assert metrics["produce.errors.NOT_ENOUGH_REPLICAS"]["min_seeds"] == [5]     # 0 where it did not happen
    assert metrics["produce.errors.NOT_ENOUGH_REPLICAS"]["max_seeds"] == [99]
    names = list(metrics)
    assert names.index("acknowledged_writes_lost") == 0
    fault = [n for n in names if n.startswith("fault 3 kill_broker@5s: ")]
    assert fault == ["fault 3 kill_broker@5s: recovered_after_s", "fault 3 kill_broker@5s: producers_recovered_after_s",
                     "fault 3 kill_broker@5s: fully_replicated_after_s"]
    assert names.index(fault[0]) + 2 == names.index(fault[2])


def test_the_shipped_zip_alone_runs_a_seed(small, tmp_path):
    """What executors import: a fresh Python with only the zip (not this checkout) on its path runs a seed."""
    from audit.spark_session import ship_packages

    class FakeContext:
        applicationId = "test-app"

        def __init__(self):
            self.added = []

        def addPyFile(self, path):
            self.added.append(path)

    class FakeSession:
        sparkContext = FakeContext()

    session = FakeSession()
    path = ship_packages(session, SHIPPED)
    assert ship_packages(session, SHIPPED) == path and session.sparkContext.added == [path]   # once per session
    with zipfile.ZipFile(path) as zf:
        assert {n.split("/")[0] for n in zf.namelist()} == set(SHIPPED)
    (tmp_path / "runs").mkdir()
    code = (f"import sys; sys.path.insert(0, {path!r})\n"
            "from sim.scenario import load_scenario\n"
            "from kcontroller.sweep import run_seed\n"
            "import kcontroller.sweep, sim.simulation, audit.log_rows\n"
            f"assert all(m.__file__.startswith({path!r}) for m in (kcontroller.sweep, sim.simulation, audit.log_rows))\n"
            f"r = run_seed(load_scenario({small!r}), {str(tmp_path / 'runs')!r}, 6, log_level='critical')\n"
            "print(r['summary']['acknowledged_writes_lost'])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    local = run_sweep(parse_scenario(SMALL, small), str(tmp_path / "here"), [6], engine="local")
    assert int(done.stdout) == local.runs[0]["summary"]["acknowledged_writes_lost"]
    assert _files(tmp_path / "runs" / "seed-6") == _files(tmp_path / "here" / "seed-6")


# --- on Spark -------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_a_spark_sweep_gives_the_local_sweeps_logs_and_results(spark, small, tmp_path, capsys):
    """One Spark job of four tasks and one Spark audit (the costly part): the command, on the session the
    test run shares (same master: it takes the active one, and leaves it running)."""
    out = tmp_path / "spark"
    assert main(["sweep", small, "--seeds", "4", "--master", spark.sparkContext.master, "--out", str(out),
                 "--json"]) == 0
    on_spark = json.loads(capsys.readouterr().out)
    local = run_sweep(parse_scenario(SMALL, small), str(tmp_path / "local"), [8, 6, 5, 7], engine="local")
    assert on_spark == local.document
    assert (out / SWEEP_FILE).read_bytes() == (tmp_path / "local" / SWEEP_FILE).read_bytes()
    assert _logs(out) == _logs(tmp_path / "local")
    assert on_spark["seeds"] == [5, 6, 7, 8] and on_spark["finished"] == 4 and on_spark["audit"]["violations"] == 0
    assert spark.range(3).count() == 3   # not stopped: the command did not start it
