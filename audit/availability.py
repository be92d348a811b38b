"""Availability figures from the fold's per-partition timelines (:mod:`audit.state_fold`): per run, how long
partitions were without a leader and how often leadership changed, as the log tells it.

One definition over the timelines' Arrow tables (:data:`audit.state_fold.OFFLINE_SCHEMA`,
:data:`audit.state_fold.LEADER_CHANGES_SCHEMA`), whichever engine folded them (DuckDB in process, Spark SQL),
used by ``kcontroller audit --availability`` and by sweeps (each seed's ``timeline`` figures, beside what the
simulation's own metrics integrated while it ran):

- ``offline_partition_seconds``: the sum of the offline intervals (no leader, or OfflinePartition); an interval
  still open at the end of the rows ends at the run's end when the caller knows it (a simulation's duration),
  else at its last row;
- ``offline_intervals``, ``open_offline_intervals`` (still offline at the end), ``partitions_offline`` (that
  had one), ``longest_offline_s``;
- ``leader_elections`` (a partition given a live leader, its first one included), ``leader_moves`` (from one
  live leader to another: what producers see as a leadership change), ``unclean_elections`` (a leader chosen
  from outside the ISR).

The timelines carry what the controller decided: a partition whose leader is dead but not yet declared dead is
online here (the simulator's client-side figures count that time; rows cannot).
"""
from __future__ import annotations

from collections.abc import Iterable

FIGURES = ("offline_partition_seconds", "offline_intervals", "open_offline_intervals", "partitions_offline",
           "longest_offline_s", "leader_elections", "leader_moves", "unclean_elections")
# Every row of every run: a bound no time or offset reaches.
WHOLE_RUN = 1 << 62


def empty_figures() -> dict:
    return {name: (0.0 if name.endswith("_s") or name.endswith("_seconds") else 0) for name in FIGURES}


def figures_by_run(offline, leader_changes, runs: Iterable[str] = (),
                   run_end_ms: int | dict[str, int] | None = None) -> dict[str, dict]:
    """The figures of every run in ``runs`` or in the tables, from the fold's ``offline`` and
    ``leader_changes`` tables (Arrow); ``run_end_ms`` (every run's end, or run -> its end, in ms) extends the
    intervals still open to the run's end. Runs sorted; a run with nothing offline and no leader change has
    zeros."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {run: empty_figures() for run in runs}
    if offline is not None and offline.num_rows:
        duration = offline.column("duration_ms").to_numpy(zero_copy_only=False).astype(np.int64)
        is_open = offline.column("open").to_numpy(zero_copy_only=False).astype(bool)
        if run_end_ms is not None:
            runs_of = offline.column("run_id")
            names = runs_of.unique()
            ends = np.array([run_end_ms.get(r, -1) if isinstance(run_end_ms, dict) else run_end_ms
                             for r in names.to_pylist()], np.int64)
            end = ends[pc.index_in(runs_of, names).to_numpy(zero_copy_only=False)]
            start = offline.column("from_ms").to_numpy(zero_copy_only=False).astype(np.int64)
            duration = np.where(is_open & (end >= 0), np.maximum(duration, end - start), duration)
        t = pa.table({"run_id": offline.column("run_id"), "topic": offline.column("topic"),
                      "partition": offline.column("partition"), "duration_ms": duration, "open": is_open})
        per_run = t.group_by("run_id").aggregate([("duration_ms", "sum"), ("duration_ms", "count"),
                                                  ("duration_ms", "max"), ("open", "sum")])
        partitions = t.group_by(["run_id", "topic", "partition"]).aggregate([]).group_by("run_id").aggregate(
            [("topic", "count")])
        n_partitions = dict(zip(partitions.column("run_id").to_pylist(), partitions.column("topic_count").to_pylist()))
        for row in per_run.to_pylist():
            f = out.setdefault(row["run_id"], empty_figures())
            f["offline_partition_seconds"] = row["duration_ms_sum"] / 1000
            f["offline_intervals"] = row["duration_ms_count"]
            f["open_offline_intervals"] = int(row["open_sum"] or 0)
            f["partitions_offline"] = n_partitions[row["run_id"]]
            f["longest_offline_s"] = row["duration_ms_max"] / 1000
    if leader_changes is not None and leader_changes.num_rows:
        new = pc.greater_equal(leader_changes.column("new_leader"), 0)
        moved = pc.and_(new, pc.greater_equal(leader_changes.column("old_leader"), 0))
        unclean = pc.and_(new, pc.fill_null(leader_changes.column("unclean"), False))
        t = pa.table({"run_id": leader_changes.column("run_id"), "elected": pc.cast(new, pa.int64()),
                      "moved": pc.cast(moved, pa.int64()), "unclean": pc.cast(unclean, pa.int64())})
        for row in t.group_by("run_id").aggregate([("elected", "sum"), ("moved", "sum"),
                                                   ("unclean", "sum")]).to_pylist():
            f = out.setdefault(row["run_id"], empty_figures())
            f["leader_elections"] = int(row["elected_sum"])
            f["leader_moves"] = int(row["moved_sum"])
            f["unclean_elections"] = int(row["unclean_sum"])
    return dict(sorted(out.items()))


def fold_figures_duckdb(logs: list[str], parquet: list[str] = (), tables: tuple = (), *,
                        run_end_ms: int | dict[str, int] | None = None, threads: int | None = None) -> dict[str, dict]:
    """:func:`figures_by_run` of the rows of event logs ``logs``, Parquet files ``parquet`` and Arrow tables of
    audit rows ``tables``, folded by DuckDB in process."""
    from audit.state_fold import Bound, _duckdb_connection, duckdb_fold
    con = _duckdb_connection(list(logs), list(parquet), threads, tuple(tables))
    try:
        runs = [r for (r,) in con.sql("SELECT DISTINCT run_id FROM audit_rows").fetchall()]
        result = duckdb_fold(con, Bound("offset", WHOLE_RUN), timelines=True, state=False)
    finally:
        con.close()
    return figures_by_run(result.offline, result.leader_changes, runs, run_end_ms)


def fold_figures_spark(df, *, run_end_ms: int | dict[str, int] | None = None) -> dict[str, dict]:
    """:func:`figures_by_run` of a Spark DataFrame of audit rows, folded by Spark SQL."""
    from audit.state_fold import Bound, spark_fold
    runs = [r[0] for r in df.select("run_id").distinct().collect()]
    result = spark_fold(df, Bound("offset", WHOLE_RUN), timelines=True, state=False)
    return figures_by_run(result.offline, result.leader_changes, runs, run_end_ms)
