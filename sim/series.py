"""A simulation run's metrics as a time series: one row per interval (``kcontroller simulate --series``).

:func:`series` turns a run's :class:`sim.metrics.Metrics` into columns (name -> list, one value per
interval; the columns are listed in :data:`COLUMNS` and in docs/simulation.md): the gauges from the
metrics' timeline of change points — their maximum during the interval and their partition-seconds in
it (the integral, exact: the rows add up to the summary's figures) — and the counts of what happened in
each interval (messages, produce errors by code, elections, acknowledged writes lost, produce latency
percentiles, the scenario's steps). The interval is the metrics' bucket (1 s by default) or a multiple
of it. :func:`write_series` writes the columns as CSV, JSON (a list of one object per row) or Parquet
(through pyarrow), chosen by the file's extension. ``--plot`` draws from the same columns
(:mod:`sim.plot`).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from sim.metrics import (
    ELECTION_KINDS, B_ACKED, B_CONTROLLER_ELECTIONS, B_ELECTIONS, B_FAILED, B_SENT, HEALTH_ACTIONS, T_CONTROLLER,
    T_EPOCH, T_OFFLINE, T_UNAVAILABLE, T_UNDER_MIN_ISR, T_UNDER_REPLICATED, Metrics, fault_label, percentile,
)

FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet"}
# The produce errors the simulated clients can see: a column each, whether the run saw it or not.
PRODUCE_ERRORS = ("NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                  "REQUEST_TIMED_OUT", "KAFKA_STORAGE_ERROR", "NETWORK_EXCEPTION", "DELIVERY_TIMEOUT",
                  "UNKNOWN_TOPIC_OR_PARTITION")
GAUGES = (("offline", T_OFFLINE), ("unavailable", T_UNAVAILABLE), ("under_replicated", T_UNDER_REPLICATED),
          ("under_min_isr", T_UNDER_MIN_ISR))
COLUMNS = (
    ("time_s", "the interval's start (simulated seconds)"),
    ("end_s", "its end (the last interval ends with the run)"),
    *((g, f"{g.replace('_', ' ')} partitions: the most at any time during the interval") for g, _ in GAUGES),
    *((f"{g}_partition_s", f"{g.replace('_', ' ')} partition-seconds in the interval") for g, _ in GAUGES),
    ("controller_id", "the active controller at the interval's end (-1: none)"),
    ("controller_epoch", "the controller epoch at the interval's end"),
    ("controller_elections", "controllers elected during the interval"),
    *((f"elections_{k}", f"{k.replace('_', ' ')} leader elections during the interval")
      for k in ELECTION_KINDS.values()),
    ("messages_sent", "messages the producers made"),
    ("messages_acknowledged", "messages acknowledged (acks=0: sent)"),
    ("messages_failed", "messages failed for good (DELIVERY_TIMEOUT, no partition)"),
    ("produce_errors", "produce attempts (batches) answered with an error, all codes"),
    *((f"errors_{code}", f"batches answered {code}") for code in PRODUCE_ERRORS),
    ("latency_p50_ms", "produce latency of the messages acknowledged (acks 1/all) in the interval: median "
                       "(empty when none)"),
    ("latency_p99_ms", "... 99th percentile"),
    ("latency_max_ms", "... maximum"),
    ("acknowledged_writes_lost", "acknowledged records found lost during the interval (loss events)"),
    ("steps", "the scenario's steps that change the cluster's health in the interval, ';'-separated"),
)


class SeriesError(ValueError):
    """A series that cannot be written as asked (its file's extension, its interval)."""


def series_format(path: str) -> str:
    """The format of a series file by its extension; SeriesError for any other."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise SeriesError(f"--series {path}: the file must end in {', '.join(FORMATS)}")
    return fmt


def _gauge_columns(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a step function given by change points (time, value): its maximum on each [start, end), and its
    integral there (value x ms)."""
    t, v = points[:, 0], points[:, 1]
    first = np.searchsorted(t, starts, side="right") - 1      # the point in force at each start
    last = np.searchsorted(t, ends, side="left") - 1          # the last point before each end
    # reduceat takes each start's point up to the next start's (exclusive): the interval's points but
    # perhaps its last one (when no change falls exactly on the boundary), taken with v[last].
    peak = np.maximum(np.maximum.reduceat(v, first), v[last])
    area = np.zeros(len(t), dtype=np.int64)
    np.cumsum(v[:-1] * np.diff(t), out=area[1:])

    def integral(at: np.ndarray) -> np.ndarray:
        j = np.searchsorted(t, at, side="right") - 1
        return area[j] + v[j] * (at - t[j])

    return peak, integral(ends) - integral(starts)


def series(metrics: Metrics, interval_ms: int | None = None) -> dict[str, list]:
    """The run's metrics, one row per interval of ``interval_ms`` (default: the metrics' own, 1 s unless set);
    the interval must be a multiple of the metrics' buckets (SeriesError otherwise)."""
    base = metrics.interval_ms
    interval_ms = base if interval_ms is None else interval_ms
    if interval_ms <= 0 or interval_ms % base:
        raise SeriesError(f"the series interval ({interval_ms} ms) must be a positive multiple of the run's "
                          f"metrics interval ({base} ms)")
    end = metrics.sim.loop.now
    metrics._advance(end)
    rows = max(1, math.ceil(end / interval_ms))
    starts = np.arange(rows, dtype=np.int64) * interval_ms
    ends = np.minimum(starts + interval_ms, max(end, 1))
    timeline = np.array(metrics.timeline, dtype=np.int64)
    timeline = timeline[timeline[:, 0] < ends[-1]]     # a change at the very end lasts no time
    out: dict[str, list] = {"time_s": (starts / 1000).tolist(), "end_s": (ends / 1000).tolist()}
    integrals = {}
    for name, col in GAUGES:
        peak, area = _gauge_columns(timeline[:, [0, col]], starts, ends)
        out[name] = peak.tolist()
        integrals[f"{name}_partition_s"] = (area / 1000).tolist()
    out.update(integrals)
    at_end = np.searchsorted(timeline[:, 0], ends - 1, side="right") - 1
    out["controller_id"] = timeline[at_end, T_CONTROLLER].tolist()
    out["controller_epoch"] = timeline[at_end, T_EPOCH].tolist()

    per = interval_ms // base

    def merged_counts(slot: int) -> list:
        col = [0] * rows
        for k, b in metrics.buckets.items():
            if b[slot]:
                col[min(k // per, rows - 1)] += b[slot]
        return col

    out["controller_elections"] = merged_counts(B_CONTROLLER_ELECTIONS)
    for j, kind in enumerate(ELECTION_KINDS.values()):
        out[f"elections_{kind}"] = merged_counts(B_ELECTIONS + j)
    out["messages_sent"] = merged_counts(B_SENT)
    out["messages_acknowledged"] = merged_counts(B_ACKED)
    out["messages_failed"] = merged_counts(B_FAILED)
    codes = list(PRODUCE_ERRORS) + sorted({c for b in metrics.bucket_errors.values() for c in b} -
                                          set(PRODUCE_ERRORS))
    errors = {code: [0] * rows for code in codes}
    total = [0] * rows
    for k, b in metrics.bucket_errors.items():
        r = min(k // per, rows - 1)
        for code, n in b.items():
            errors[code][r] += n
            total[r] += n
    out["produce_errors"] = total
    out.update({f"errors_{code}": errors[code] for code in codes})
    hists: list[dict] = [{} for _ in range(rows)]
    for k, h in metrics.bucket_latency.items():
        merged = hists[min(k // per, rows - 1)]
        for ms, n in h.items():
            merged[ms] = merged.get(ms, 0) + n
    out["latency_p50_ms"] = [percentile(h, 0.5) for h in hists]
    out["latency_p99_ms"] = [percentile(h, 0.99) for h in hists]
    out["latency_max_ms"] = [max(h) if h else None for h in hists]
    lost = [0] * rows
    for t, _, n, _ in metrics.loss_events:
        lost[min(t // interval_ms, rows - 1)] += n
    out["acknowledged_writes_lost"] = lost
    steps: list[list] = [[] for _ in range(rows)]
    for f in metrics.faults:
        if f["action"] in HEALTH_ACTIONS:
            steps[min(f["at_ms"] // interval_ms, rows - 1)].append(fault_label(f["action"], f["args"]))
    out["steps"] = ["; ".join(s) for s in steps]
    return out


def write_series(columns: dict[str, list], path: str) -> None:
    """Write the series to ``path`` as its extension says: .csv, .json (a list of row objects) or .parquet."""
    fmt = series_format(path)
    names = list(columns)
    rows = len(columns[names[0]]) if names else 0
    if fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(names)
            for i in range(rows):
                w.writerow(["" if columns[n][i] is None else columns[n][i] for n in names])
    elif fmt == "json":
        with open(path, "w", encoding="utf-8") as f:
            json.dump([{n: columns[n][i] for n in names} for i in range(rows)], f, separators=(",", ":"))
            f.write("\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        types = {n: pa.string() if n == "steps" else pa.float64() if n.endswith("_s") else pa.int64() for n in names}
        table = pa.table({n: pa.array(columns[n], type=types[n]) for n in names})
        pq.write_table(table, path)
