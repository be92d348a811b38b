"""Availability figures from the fold's timelines (audit.availability): what each figure counts, on tables
written by hand, and on logs folded by DuckDB against what the simulations counted while they ran."""
import os
import pathlib

import pyarrow as pa
import pytest

import sim
from audit.availability import FIGURES, empty_figures, figures_by_run, fold_figures_duckdb
from audit.state_fold import LEADER_CHANGES_SCHEMA, OFFLINE_SCHEMA
from kcontroller.cli_simulate import simulate_to_log
from sim.scenario import load_scenario

EXAMPLES = pathlib.Path(sim.__file__).parents[1] / "examples"


def offline(*rows):
    names = OFFLINE_SCHEMA.names
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows], schema=OFFLINE_SCHEMA)


def changes(*rows):
    names = LEADER_CHANGES_SCHEMA.names
    return pa.Table.from_pylist([dict(zip(names, r)) for r in rows], schema=LEADER_CHANGES_SCHEMA)


def test_each_figure_counts_what_it_says():
    off = offline(("a", "t", 0, 1000, 3000, 2000, 5, 9, False),
                  ("a", "t", 0, 5000, 5500, 500, 12, 14, False),
                  ("a", "t", 1, 7000, 8000, 1000, 20, None, True),       # still offline at the last row
                  ("b", "u", 0, 0, 250, 250, 1, 2, False))
    lead = changes(("a", "t", 0, 1, 0, -1, 1, 0, False, "partition_transition"),   # first leader
                   ("a", "t", 0, 5, 1000, 1, -1, 0, False, "leader_and_isr_updated"),   # leaderless: no election
                   ("a", "t", 0, 9, 3000, -1, 2, 1, True, "partition_transition"),   # unclean
                   ("a", "t", 1, 3, 10, -1, 2, 0, None, "partition_transition"),
                   ("a", "t", 1, 4, 20, 2, 3, 1, False, "partition_transition"))    # a move
    got = figures_by_run(off, lead, runs=["a", "b", "c"])
    assert list(got) == ["a", "b", "c"]
    assert got["a"] == {"offline_partition_seconds": 3.5, "offline_intervals": 3, "open_offline_intervals": 1,
                        "partitions_offline": 2, "longest_offline_s": 2.0, "leader_elections": 4,
                        "leader_moves": 1, "unclean_elections": 1}
    assert got["b"] == {**empty_figures(), "offline_partition_seconds": 0.25, "offline_intervals": 1,
                        "partitions_offline": 1, "longest_offline_s": 0.25}
    assert got["c"] == empty_figures() and set(empty_figures()) == set(FIGURES)


def test_an_open_interval_ends_at_the_runs_end_when_it_is_known():
    off = offline(("a", "t", 1, 7000, 8000, 1000, 20, None, True), ("a", "t", 2, 100, 200, 100, 3, 4, False),
                  ("b", "t", 1, 7000, 8000, 1000, 20, None, True))
    assert figures_by_run(off, None, run_end_ms=10_000)["a"]["offline_partition_seconds"] == 3.1
    by_run = figures_by_run(off, None, run_end_ms={"b": 9000})
    assert by_run["a"]["offline_partition_seconds"] == 1.1       # no end known for a: its last row
    assert by_run["b"]["offline_partition_seconds"] == 2.0 and by_run["b"]["longest_offline_s"] == 2.0


def test_empty_tables_give_zeros():
    assert figures_by_run(offline(), changes(), runs=["x"]) == {"x": empty_figures()}
    assert figures_by_run(None, None) == {}


@pytest.mark.parametrize("example", ["rf1-broker-kill", "unclean-election-on", "unclean-election-off"])
def test_the_logs_timelines_tell_what_the_simulation_counted(example, tmp_path):
    log = str(tmp_path / example)
    summary = simulate_to_log(load_scenario(EXAMPLES / f"{example}.yaml"), log)[1]
    figures = fold_figures_duckdb([log], run_end_ms=round(summary["simulated_s"] * 1000))[os.path.normpath(log)]
    assert figures["offline_partition_seconds"] == summary["offline_partition_seconds"]
    assert figures["unclean_elections"] == summary["elections"]["unclean"]
    assert figures["leader_elections"] >= sum(summary["elections"].values())
    if summary["offline_partition_seconds"]:
        assert figures["offline_intervals"] >= 1 and figures["partitions_offline"] >= 1
