"""The metrics as a time series (``kcontroller simulate --series``) in each format, and the plot drawn from it."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kcontroller.cli import main
from sim.scenario import parse_scenario
from sim.series import COLUMNS, SeriesError, series, write_series
from sim.simulation import Simulation


@pytest.fixture(autouse=True)
def _no_global_logging_config(quiet_cli_logging):
    """In-process ``main()`` calls leave structlog as they found it (see conftest.quiet_cli_logging)."""


EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "unclean-election-on.yaml")
RUN = """
name: series
seed: 3
duration: 12500ms
cluster:
  brokers: [1, 2, 3]
  configs: {zookeeper.session.timeout.ms: 6000}
network: {latency: 1ms, jitter: 0ms}
topics:
  - {name: t, assignment: [[1, 2, 3], [2, 3, 1], [3, 1, 2], [2, 1, 3]]}
workload:
  producers:
    - {topics: [t], rate_per_s: 400, acks: all}
steps:
  - {at: 3s, action: kill_broker, broker: 2}
"""


@pytest.fixture(scope="module")
def finished():
    sim = Simulation(parse_scenario(RUN, "<test>"))
    sim.run()
    return sim, sim.finish()


def test_the_series_adds_up_to_the_summary(finished):
    sim, s = finished
    cols = series(sim.metrics)
    assert list(cols) == [name for name, _ in COLUMNS]        # the documented columns, in order
    assert cols["time_s"][:3] == [0.0, 1.0, 2.0] and len(cols["time_s"]) == 13 and cols["end_s"][-1] == 12.5
    for gauge in ("offline", "unavailable", "under_replicated", "under_min_isr"):
        assert round(sum(cols[f"{gauge}_partition_s"]), 3) == s[f"{gauge}_partition_seconds"]
    assert sum(cols["messages_sent"]) == s["produce"]["sent_messages"]
    assert sum(cols["messages_acknowledged"]) == s["produce"]["acknowledged_messages"]
    assert sum(cols["produce_errors"]) == sum(s["produce"]["errors"].values())
    assert sum(cols["elections_clean"]) == s["elections"]["clean"] == 2
    # Broker 2 (two leaderships) is killed at 3 s; its session expires at 8 s (the last heartbeat at 2 s):
    # both partitions count as unavailable from 3 s until the new leaders serve just after 8 s.
    assert cols["unavailable"][2:9] == [0, 2, 2, 2, 2, 2, 2] and cols["unavailable"][9] == 0
    assert cols["unavailable_partition_s"][4] == 2.0 and cols["offline"] == [0] * 13
    assert cols["steps"][3] == "kill_broker(broker=2, controller=False)"
    assert cols["controller_id"] == [1] * 13 and cols["controller_epoch"] == [1] * 13
    # Broker 2 stays in every ISR until then: no acks=all write is acknowledged, they all wait.
    assert cols["latency_p99_ms"][3:8] == [None] * 5 and cols["latency_max_ms"][8] > 5_000
    assert cols["latency_p50_ms"][1] is not None and cols["latency_p50_ms"][1] <= 6


def test_a_coarser_interval_merges_the_buckets(finished):
    sim, _ = finished
    fine, coarse = series(sim.metrics), series(sim.metrics, 5_000)
    assert coarse["time_s"] == [0.0, 5.0, 10.0] and coarse["end_s"] == [5.0, 10.0, 12.5]
    assert coarse["messages_sent"] == [sum(fine["messages_sent"][i:i + 5]) for i in (0, 5, 10)]
    assert coarse["unavailable"] == [max(fine["unavailable"][i:i + 5]) for i in (0, 5, 10)]
    with pytest.raises(SeriesError, match="multiple"):
        series(sim.metrics, 1_500)


@pytest.mark.parametrize("ext", ["csv", "json", "parquet"])
def test_each_format_reads_back(finished, tmp_path, ext):
    sim, _ = finished
    cols = series(sim.metrics)
    path = tmp_path / f"run.{ext}"
    write_series(cols, str(path))
    if ext == "csv":
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0]) == list(cols)
        assert [float(r["unavailable_partition_s"]) for r in rows] == cols["unavailable_partition_s"]
        assert [int(r["messages_sent"]) for r in rows] == cols["messages_sent"]
        assert [r["latency_p99_ms"] for r in rows] == ["" if v is None else str(v) for v in cols["latency_p99_ms"]]
        assert [r["steps"] for r in rows] == cols["steps"]
    elif ext == "json":
        rows = json.loads(path.read_text())
        assert {k: [r[k] for r in rows] for k in cols} == cols
    else:
        import pyarrow.parquet as pq
        table = pq.read_table(path)
        assert table.column_names == list(cols)
        assert {k: table.column(k).to_pylist() for k in cols} == cols


def test_simulate_writes_the_series_and_the_plot(tmp_path, capsys):
    png, out = tmp_path / "run.png", tmp_path / "run.parquet"
    assert main(["simulate", EXAMPLE, "--log-dir", str(tmp_path / "log"), "--series", str(out),
                 "--series-interval", "5s", "--plot", str(png)]) == 0
    assert "time series in" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import pyarrow.parquet as pq
    table = pq.read_table(out)
    assert table.column("time_s").to_pylist()[:3] == [0.0, 5.0, 10.0]
    assert sum(table.column("acknowledged_writes_lost").to_pylist()) > 0


@pytest.mark.parametrize("args, message", [
    (["--series", "run.xlsx"], "must end in .csv, .json, .parquet"),
    (["--series", "run.csv", "--series-interval", "soon"], "--series-interval"),
    (["--series", "run.csv", "--series-interval", "0"], "positive"),
])
def test_bad_series_options_are_refused_before_the_run(tmp_path, capsys, args, message):
    log = tmp_path / "log"
    assert main(["simulate", EXAMPLE, "--log-dir", str(log), *args]) == 2
    assert message in capsys.readouterr().err and not log.exists()
