"""Kafka log files read by worker processes (``kcontroller audit --jobs N``, ``run_audit(read_workers=N)``):
the same readings, rows, errors and report as one process reading them in turn."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from audit import runner
from audit.runner import _workers_for, resolve_inputs, run_audit

DATA = Path(__file__).parent / "data"
REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or Path(__file__).parents[1].parent / "shared" / "real-logs")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """A directory of Kafka log files: layout fixtures, KRaft files, real logs when there, a rotated set, a gzip
    file cut short (an input error) and a text file that is no Kafka log."""
    d = tmp_path_factory.mktemp("kafka-logs")
    sources = sorted((DATA / "layouts").glob("*.log")) + sorted((DATA / "kraft").glob("*.log"))
    if REAL_LOGS.is_dir():
        sources += sorted(REAL_LOGS.glob("*state-change*.log"))[:6]
    for i, src in enumerate(sources):
        shutil.copyfile(src, d / f"{i:02d}-{src.name}")
    base = (DATA / "layouts" / "base.log").read_text()
    (d / "rotated.log").write_text(base)
    (d / "rotated.log.1").write_text(base)
    whole = gzip.compress(base.encode() * 4)
    (d / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    (d / "notes.log").write_text("nothing here is a log line\nnor here\n")
    return d


def _readings(inputs) -> list:
    return [(i.path, i.run_id, i.error, i.reading) for i in inputs]


def test_workers_read_what_one_process_reads(logs):
    one, errors_one = resolve_inputs([str(logs)])
    rows_one, kraft_one = runner._read_kafka_logs(one, 1)
    two, errors_two = resolve_inputs([str(logs)])
    rows_two, kraft_two = runner._read_kafka_logs(two, 2)
    assert errors_one == errors_two
    assert rows_one == rows_two and kraft_one == kraft_two
    assert len(rows_one) > 100 and kraft_one
    assert _readings(one) == _readings(two)
    assert type(rows_two[0]) is type(rows_one[0]) and type(kraft_two[0]) is type(kraft_one[0])
    cut = next(i for i in two if i.path.endswith("cut.log.gz"))
    assert cut.reading is None and "gzip" in cut.error
    # Read once: the engines that read the Kafka inputs again find them read.
    again, _ = runner._read_kafka_logs(two, 1)
    assert again == rows_two


@pytest.mark.parametrize("engine", ["local", "columnar"])
def test_the_report_is_the_same_with_workers(logs, engine):
    one = run_audit([str(logs)], engine=engine, limit=None, read_workers=1).to_json()
    two = run_audit([str(logs)], engine=engine, limit=None, read_workers=2).to_json()
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert one["exit_status"] == 2   # the cut gzip file, named, whoever read it
    errors = {Path(i["path"]).name: i["error"] for i in one["inputs"] if i.get("error")}
    assert "truncated gzip" in errors["cut.log.gz"] and "not a Kafka log" in errors["notes.log"]


def test_how_many_workers(logs, monkeypatch):
    inputs, _ = resolve_inputs([str(logs)])
    kafka = [i for i in inputs if i.type == runner.KAFKA_LOG]
    assert _workers_for(inputs, None) == 1            # small files: not worth starting processes
    assert _workers_for(inputs, 3) == 3
    assert _workers_for(inputs[:0], 4) == 1
    monkeypatch.setattr(runner, "PARALLEL_READ_BYTES", 1)
    monkeypatch.setattr(runner, "_cores", lambda: 2)
    assert _workers_for(inputs, None) == 1            # two cores: not worth the rows' trip back (measured)
    monkeypatch.setattr(runner, "_cores", lambda: 4)
    assert _workers_for(inputs, None) == 4
    assert _workers_for(kafka[:1], None) == 1         # one file: one reader
    with pytest.raises(ValueError, match="read_workers must be 1 or more"):
        run_audit([str(logs)], read_workers=0)


def test_the_command_reads_with_jobs(logs, tmp_path):
    cmd = [sys.executable, "-m", "kcontroller", "audit", str(logs), "--engine", "local", "--json"]
    one = subprocess.run(cmd + ["--jobs", "1"], capture_output=True, text=True, timeout=300)
    two = subprocess.run(cmd + ["--jobs", "2"], capture_output=True, text=True, timeout=300)
    assert one.returncode == two.returncode == 2, one.stderr + two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    bad = subprocess.run(cmd + ["--jobs", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--jobs: expected a whole number of processes, 1 or more, not '0'" in bad.stderr


def test_a_worker_that_dies_leaves_the_reading_to_this_process(logs, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    class Pool:                                   # a pool whose map fails as a killed worker makes it fail
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, fn, jobs):
            raise BrokenProcessPool("a worker was killed")

    import concurrent.futures
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    one, _ = resolve_inputs([str(logs)])
    rows_one, kraft_one = runner._read_kafka_logs(one, 1)
    two, _ = resolve_inputs([str(logs)])
    rows_two, kraft_two = runner._read_kafka_logs(two, 2)
    assert (rows_two, kraft_two) == (rows_one, kraft_one) and _readings(two) == _readings(one)
