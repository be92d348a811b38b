"""The audit's HTML report: one self-contained page (no script, no external file) from the JSON report.

Sections: the verdict, the inputs (with their notes: KRaft files, lines not understood), counts per
violation and finding kind, per run, a chart of transitions, violations and findings over time (inline
SVG), and the listed violations and findings with where each was found. Everything comes from
:meth:`audit.runner.AuditResult.to_json`, so the page says nothing the JSON does not.
"""
from __future__ import annotations

import datetime as _dt
from html import escape

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;
padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;width:100%}th,td{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;padding:.2em .7em;border-radius:4px;color:#fff;font-weight:600}
.clean{background:#2e7d32}.violations{background:#c62828}.errors{background:#6a1b9a}
.note{background:#fff8e1;border-left:4px solid #f9a825;padding:.3em .6em;margin:.3em 0}
.muted{color:#777}code{font-size:12px}
"""


def _fmt_time(ms: int | None, absolute: bool) -> str:
    if ms is None:
        return ""
    if absolute:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{ms / 1000:.1f} s"


def _chart(timeline: dict) -> str:
    transitions = timeline.get("transitions") or []
    if not transitions:
        return '<p class="muted">No transition in the input carries a time: nothing to draw.</p>'
    violations, findings = timeline["violations"], timeline["findings"]
    start, width = timeline["start_ms"], timeline["bucket_ms"]
    absolute = start > 10 ** 11  # wall-clock milliseconds (Kafka logs), not simulated time from 0
    n = len(transitions)
    w, h, left, bottom, top = 1100, 260, 60, 40, 16
    plot_w, plot_h = w - left - 10, h - bottom - top
    peak = max(transitions) or 1
    peak_v = max(max(violations), max(findings)) or 1
    bar = plot_w / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
             f'aria-label="transitions, violations and findings over time">',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>']
    for i, c in enumerate(transitions):
        if c:
            bh = plot_h * c / peak
            parts.append(f'<rect x="{left + i * bar:.1f}" y="{top + plot_h - bh:.1f}" width="{max(bar - 1, 1):.1f}" '
                         f'height="{bh:.1f}" fill="#90caf9"><title>{c} transitions</title></rect>')
    for series, colour, offset in ((violations, "#c62828", 0.3), (findings, "#f9a825", 0.7)):
        for i, c in enumerate(series):
            if c:
                y = top + plot_h - plot_h * c / peak_v
                parts.append(f'<circle cx="{left + (i + offset) * bar:.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
                             f'<title>{c}</title></circle>')
    for i in range(0, n + 1, max(1, n // 6)):
        x = left + i * bar
        parts.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" font-size="11" text-anchor="middle">'
                     f'{escape(_fmt_time(start + i * width, absolute))}</text>')
    parts.append(f'<text x="{left - 6}" y="{top + 10}" font-size="11" text-anchor="end">{peak}</text>')
    parts.append(f'<text x="{left}" y="{h - 4}" font-size="11">bars: transitions per {width} ms (left scale, '
                 f'peak {peak}); red dots: violations, amber dots: findings (own scale, peak {peak_v})</text>')
    parts.append("</svg>")
    caption = ('<p class="muted">Violations and findings drawn are those listed in this report; their counts '
               'above are exact.</p>') if timeline.get("listed_only") else ""
    return "".join(parts) + caption


def _counts_table(title: str, counts: dict, descriptions: dict) -> str:
    rows = "".join(f'<tr><td><code>{escape(k)}</code></td><td class="n">{n}</td><td>{escape(descriptions.get(k, ""))}'
                   f'</td></tr>' for k, n in counts.items())
    return f"<table><tr><th>{escape(title)}</th><th>count</th><th>meaning</th></tr>{rows}</table>"


def _where(v: dict) -> str:
    return v.get("location") or f"{v['source']}@{v['position']}"


def _listing(items: list[dict], total: int, what: str) -> str:
    if not items:
        return f'<p class="muted">No {what}.</p>'
    head = "".join(f"<th>{c}</th>" for c in ("kind", "severity", "where", "run", "epoch", "what"))
    body = "".join(
        f'<tr><td><code>{escape(v["kind"])}</code></td><td>{escape(v.get("severity", ""))}</td>'
        f'<td><code>{escape(_where(v))}</code></td>'
        f'<td>{escape(str(v["run_id"]))}</td><td class="n">{v["controller_epoch"]}</td>'
        f'<td>{escape(v["detail"])}</td></tr>' for v in items)
    more = f'<p class="muted">{len(items)} of {total} listed.</p>' if total > len(items) else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _events(events: list[dict]) -> str:
    """Findings of one cause, one row each, with the partitions (or brokers) they concern."""
    if not events:
        return '<p class="muted">No findings.</p>'
    head = "".join(f"<th>{c}</th>" for c in ("kind", "severity", "count", "from", "to", "concerning", "first"))
    body = "".join(
        f'<tr><td><code>{escape(e["kind"])}</code></td><td>{escape(e["severity"])}</td>'
        f'<td class="n">{e["count"]}</td><td><code>{escape(e["first"])}</code></td>'
        f'<td><code>{escape(e["last"])}</code></td><td>{escape(", ".join(e["subjects"]))}</td>'
        f'<td>{escape(e["detail"])}</td></tr>' for e in events)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(report: dict) -> str:
    """The page for a JSON report (``AuditResult.to_json()``)."""
    s = report["summary"]
    status = report["status"]
    css_class = {"clean": "clean", "violations": "violations"}.get(status, "errors")
    out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
           "<title>kcontroller audit</title>", f"<style>{_CSS}</style></head><body>",
           f'<h1>kcontroller audit <span class="verdict {css_class}">{escape(status)}</span></h1>',
           f'<p>{s["runs"]} run(s), {s["rows"]} rows, {s["transitions"]} transitions; '
           f'{s["violations"]} violation(s), {s["findings"]} finding(s); engine <code>{escape(report["engine"])}'
           f'</code>{" on " + escape(report["master"]) if report.get("master") else ""}.</p>']
    for note in report.get("notes", []):
        out.append(f'<p class="note">{escape(note)}</p>')
    for err in report.get("input_errors", []):
        out.append(f'<p class="note">could not read <code>{escape(err["path"])}</code>: {escape(err["reason"])}</p>')

    out.append("<h2>Over time</h2>")
    out.append(_chart(report["timeline"]))

    out.append("<h2>Violations by kind</h2>")
    out.append(_counts_table("violation", {**s["violations_by_kind"], **s.get("kraft_violations_by_kind", {})},
                             report["violation_kinds"]))
    out.append("<h2>Findings by kind</h2><p class=\"muted\">What a correct controller does but an operator "
               "must know; findings do not fail an audit.</p>")
    out.append(_counts_table("finding", {**s["findings_by_kind"], **s.get("kraft_findings_by_kind", {})},
                             report["finding_kinds"]))
    if s.get("failures_by_error"):
        out.append(_counts_table("failed transitions by error", s["failures_by_error"], {}))

    out.append("<h2>Inputs</h2><table><tr><th>input</th><th>type</th><th>rows</th><th>violations</th>"
               "<th>findings</th><th>notes</th></tr>")
    for i in report["inputs"]:
        notes = list(i.get("notes", []))
        if i.get("lines", {}).get("not_understood"):
            sample = "; ".join(f'line {x["line"]}: {x["text"][:120]}' for x in i["not_understood_sample"][:3])
            notes.append(f'{i["lines"]["not_understood"]} line(s) not understood, e.g. {sample}')
        if i.get("era"):
            notes.insert(0, f'Kafka {i["era"]}')
        if i.get("error"):
            notes.append("error: " + i["error"])
        out.append(f'<tr><td><code>{escape(i["path"])}</code></td><td>{escape(i["type"])}</td>'
                   f'<td class="n">{i["rows"]}</td><td class="n">{s["violations_by_run"].get(i["run_id"], 0)}</td>'
                   f'<td class="n">{s["findings_by_run"].get(i["run_id"], 0)}</td>'
                   f'<td>{"<br>".join(escape(n) for n in notes)}</td></tr>')
    out.append("</table>")

    out.append("<h2>Violations</h2>")
    out.append(_listing(report["violations"], s["violations"], "violations"))
    out.append("<h2>Findings</h2>")
    if report.get("finding_events"):
        out.append("<h3>By cause</h3><p class=\"muted\">Findings of one kind, run and epoch within a second of "
                   "each other: one event.</p>")
        out.append(_events(report["finding_events"]))
        out.append("<h3>Each</h3>")
    out.append(_listing(report["findings"], s["findings"], "findings"))
    out.append("</body></html>\n")
    return "\n".join(out)
