"""The audit's HTML report: one self-contained page from the JSON report, rendered from a jinja2 template.

The template is ``audit/templates/report.html.j2`` (package data); this module turns the JSON report
(:meth:`audit.runner.AuditResult.to_json`) into what the template shows, so the page says nothing the
JSON does not. Sections: the verdict; per run, a swimlane on that run's own time axis (runs of different
clusters and years are never drawn on one axis) with its violations and its findings grouped by cause;
counts per kind with what each kind means; the inputs; the violations; the findings by cause, and each.
Every table sorts (click a heading) and filters (the box above it) by a small inline script: no external
file, so the page opens offline.

Times of our own event logs are simulated milliseconds from the run's start; they are shown on the run's
calendar, from its first record (:func:`audit.timeline.run_start_ms`).
"""
from __future__ import annotations

import datetime as _dt
import math
import os

import jinja2

from audit.timeline import is_wall_clock, run_start_ms

EVENT_LOG, KAFKA_LOG, PARQUET = "event-log", "kafka-log", "parquet"   # audit.runner's input types
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

# The errors Kafka names on a failed state change ("failed transitions by error").
FAILURE_MEANINGS = {
    "NoReplicaOnlineException": "no live replica could lead the partition (none in the ISR, and unclean "
                                "election off; or no replica alive at all)",
    "StateChangeFailedException": "the controller could not make the change: not legal from the current state, "
                                  "or the election it needed found no leader",
    "IllegalStateException": "the controller found its own state inconsistent and refused the change",
    "ControllerMovedException": "this broker stopped being the controller while making the change",
    "ZkNodeExistsException": "a znode the change had to create already existed",
    "unknown": "a failed change whose log line names no error",
}
_FAILURE_FALLBACK = "a failed state change, with the error Kafka logged (see the failed transitions' log lines)"

_LANE_W, _LANE_LEFT, _LANE_RIGHT = 1000, 16, 16   # room for the largest mark at either end


def failure_meaning(error: str) -> str:
    return FAILURE_MEANINGS.get(error, _FAILURE_FALLBACK)


def _fmt(ms: int | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    if ms is None:
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime(fmt)


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    s = ms / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def _tick_format(span_ms: int) -> str:
    if span_ms >= 2 * 86_400_000:
        return "%Y-%m-%d"
    if span_ms >= 600_000:
        return "%H:%M"
    if span_ms >= 10_000:
        return "%H:%M:%S"
    return "%H:%M:%S.%f"


def _short_run(run_id: str) -> str:
    """A run's name as a reader knows it: the file or directory, not the run id's prefix."""
    if run_id.startswith("kafka-log:"):
        run_id = run_id[len("kafka-log:"):]
    return os.path.basename(run_id.rstrip("/")) or run_id


def _input_type(i: dict) -> str:
    """What an input is, as shown: ``kafka-log`` only for files read as Kafka logs."""
    if i["type"] != KAFKA_LOG:
        return i["type"]
    if "lines" not in i:
        return "not a Kafka log" if i.get("error", "").startswith("not a Kafka log") else "unreadable"
    if i["lines"]["rows"] == 0 and not i.get("layouts"):
        return "not a Kafka log"
    return "kafka-log (KRaft)" if i.get("kraft") else KAFKA_LOG


def _offsets(report: dict) -> dict[str, int]:
    """Per run, what to add to its times to put them on its calendar: an event log's start time; 0 for
    Kafka logs (their times are wall clock already)."""
    out = {}
    times: dict[str, list[int]] = {}
    for v in (*report["violations"], *report["findings"]):
        if v["time_ms"] is not None:
            times.setdefault(v["run_id"], []).append(v["time_ms"])
    for i in report["inputs"]:
        if i["type"] == EVENT_LOG:
            out[i["run_id"]] = run_start_ms(i["path"])
        elif i["type"] == PARQUET:
            run_times = times.get(i["run_id"])
            out[i["run_id"]] = 0 if run_times and is_wall_clock(min(run_times)) else run_start_ms(None)
        else:
            out[i["run_id"]] = 0
    return out


def _lanes(report: dict, offsets: dict[str, int]) -> tuple[list[dict], list[str]]:
    """One swimlane per run with timed violations or findings (each on its own axis), and the runs without."""
    by_run: dict[str, dict] = {}
    for v in report["violations"]:
        if v["time_ms"] is not None:
            by_run.setdefault(v["run_id"], {"v": [], "f": []})["v"].append(v)
    for e in report["finding_events"]:
        if e["time_ms"] is not None:
            by_run.setdefault(e["run_id"], {"v": [], "f": []})["f"].append(e)
    transitions = _single_run_transitions(report)
    lanes, quiet = [], []
    for i in report["inputs"]:
        run = i["run_id"]
        got = by_run.get(run)
        if got is None and not (transitions and transitions[0] == run):
            if i.get("rows"):
                quiet.append(_short_run(run))
            continue
        got = got or {"v": [], "f": []}
        off = offsets.get(run, 0)
        times = [x["time_ms"] + off for x in (*got["v"], *got["f"])]
        bars = []
        if transitions and transitions[0] == run:
            _, start, width, counts = transitions
            times += [start + off, start + off + width * len(counts)]
        lo, hi = min(times), max(times)
        when = f"at {_fmt(lo)}" if hi == lo else f"{_fmt(lo)} → {_fmt(hi)} ({_duration(hi - lo)})"
        if hi - lo < 1000:
            lo, hi = lo - 500, hi + 500
        plot_w = _LANE_W - _LANE_LEFT - _LANE_RIGHT

        def x(t: int) -> float:
            return round(_LANE_LEFT + (t - lo) / (hi - lo) * plot_w, 1)

        if transitions and transitions[0] == run:
            _, start, width, counts = transitions
            peak = max(counts) or 1
            for b, n in enumerate(counts):
                if n:
                    x0, x1 = x(start + off + b * width), x(start + off + (b + 1) * width)
                    bars.append({"x": x0, "w": max(round(x1 - x0 - 0.5, 1), 1.0), "h": round(30 * n / peak, 1),
                                 "title": f"{n} transitions from {_fmt(start + off + b * width)}"})
        fmt = _tick_format(hi - lo)
        ticks = [{"x": x(lo + (hi - lo) * k // 4), "label": _fmt(lo + (hi - lo) * k // 4, fmt)[:-3]
                  if fmt.endswith("%f") else _fmt(lo + (hi - lo) * k // 4, fmt),
                  "anchor": ("start", "middle", "middle", "middle", "end")[k]} for k in range(5)]
        if when.startswith("at "):   # one moment: its time says it; a scale around it would say nothing
            ticks = ticks[2:3]
        marks = [{"x": x(v["time_ms"] + off), "y": 18, "r": 4, "cls": "v",
                  "title": f'{v["kind"]} at {_fmt(v["time_ms"] + off)}, {v["location"]}: {v["detail"]}'}
                 for v in got["v"]]
        marks += [{"x": x(e["time_ms"] + off), "y": 36, "r": round(min(3 + 1.5 * math.log2(e["count"]), 12), 1),
                   "cls": "f " + e["severity"],
                   "title": f'{e["kind"]} ×{e["count"]} at {_fmt(e["time_ms"] + off)}, {e["first"]}: '
                            f'{", ".join(e["subjects"][:20])}{" …" if len(e["subjects"]) > 20 else ""}'}
                  for e in got["f"]]
        lanes.append({"run": _short_run(run), "run_id": run, "type": _input_type(i),
                      "when": when,
                      "violations": len(got["v"]), "finding_events": len(got["f"]),
                      "findings": sum(e["count"] for e in got["f"]),
                      "ticks": ticks, "marks": marks, "bars": bars})
    return lanes, quiet


def _single_run_transitions(report: dict):
    """The transition timeline when the audit has one run (the JSON's timeline spans all runs, so it is
    drawn only when it is one run's): (run, start, width, counts) or None."""
    t = report["timeline"]
    if len(report["inputs"]) != 1 or not t.get("transitions"):
        return None
    return report["inputs"][0]["run_id"], t["start_ms"], t["bucket_ms"], t["transitions"]


def _kind_rows(counts: dict, kinds: dict, severities: dict) -> list[dict]:
    rows = [{"kind": k, "count": n, "severity": severities.get(k, ""), "meaning": kinds[k]}
            for k, n in counts.items()]
    rows.sort(key=lambda r: (-r["count"], SEVERITY_ORDER.get(r["severity"], 3), r["kind"]))
    return rows


def _listing(items: list[dict], kinds: dict, offsets: dict) -> list[dict]:
    return [{**v, "run": _short_run(v["run_id"]), "meaning": kinds.get(v["kind"], ""),
             "sev_order": SEVERITY_ORDER.get(v["severity"], 3),
             "when": _fmt(None if v["time_ms"] is None else v["time_ms"] + offsets.get(v["run_id"], 0)),
             "when_ms": -1 if v["time_ms"] is None else v["time_ms"] + offsets.get(v["run_id"], 0)}
            for v in items]


def _inputs(report: dict) -> list[dict]:
    s = report["summary"]
    out = []
    for i in report["inputs"]:
        notes = list(i.get("notes", []))
        if i.get("lines", {}).get("not_understood"):
            sample = "; ".join(f'line {x["line"]}: {x["text"][:120]}' for x in i["not_understood_sample"][:3])
            notes.append(f'{i["lines"]["not_understood"]} line(s) not understood, e.g. {sample}')
        if i.get("error"):
            notes.append("error: " + i["error"])
        out.append({"path": i["path"], "type": _input_type(i), "era": i.get("era") or "", "rows": i["rows"],
                    "violations": s["violations_by_run"].get(i["run_id"], 0),
                    "findings": s["findings_by_run"].get(i["run_id"], 0), "notes": notes})
    return out


def context(report: dict) -> dict:
    """What the template shows, computed from a JSON report."""
    s = report["summary"]
    offsets = _offsets(report)
    lanes, quiet = _lanes(report, offsets)
    kinds = {**report["violation_kinds"], **report["finding_kinds"]}
    events = [{**e, "run": _short_run(e["run_id"]), "meaning": kinds.get(e["kind"], ""),
               "sev_order": SEVERITY_ORDER.get(e["severity"], 3),
               "when": _fmt(None if e["time_ms"] is None else e["time_ms"] + offsets.get(e["run_id"], 0)),
               "when_ms": -1 if e["time_ms"] is None else e["time_ms"] + offsets.get(e["run_id"], 0)}
              for e in report.get("finding_events", [])]
    return {
        "status": report["status"],
        "status_class": {"clean": "clean", "violations": "violations"}.get(report["status"], "errors"),
        "summary": s, "engine": report["engine"], "master": report.get("master"),
        "notes": report.get("notes", []), "input_errors": report.get("input_errors", []),
        "lanes": lanes, "quiet_runs": quiet,
        "listed_only": report["timeline"].get("listed_only", False),
        "violation_kinds": _kind_rows({**s["violations_by_kind"], **s.get("kraft_violations_by_kind", {})},
                                      report["violation_kinds"], report["severities"]),
        "finding_kinds": _kind_rows({**s["findings_by_kind"], **s.get("kraft_findings_by_kind", {})},
                                    report["finding_kinds"], report["severities"]),
        "failures": [{"error": e, "count": n, "meaning": failure_meaning(e)}
                     for e, n in sorted(s.get("failures_by_error", {}).items(), key=lambda p: -p[1])],
        "inputs": _inputs(report),
        "violations": _listing(report["violations"], kinds, offsets),
        "findings": _listing(report["findings"], kinds, offsets),
        "events": events,
        "availability": None if report.get("availability") is None else
        [{"run": _short_run(run), "run_id": run, **f} for run, f in report["availability"].items()],
    }


_ENV = jinja2.Environment(loader=jinja2.PackageLoader("audit", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render(report: dict) -> str:
    """The page for a JSON report (``AuditResult.to_json()``)."""
    return _ENV.get_template("report.html.j2").render(context(report))
