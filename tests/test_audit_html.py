"""The audit's HTML report (audit/html_report.py, audit/templates/report.html.j2): its structure, read with
the standard library's HTML parser, and the page as a browser runs it (headless Chromium, when installed).

The audit is small and real: a simulated run with a ``start_time`` (so its event log's times must show on
that calendar) and a Kafka text log fixture (tests/data/layouts/base.log: a violation and two failed
elections of one cause).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest

from audit.checks import ALL_FINDING_KINDS, ALL_VIOLATION_KINDS
from audit.html_report import failure_meaning, render
from audit.runner import run_audit
from kcontroller.cli import main

REPO = Path(__file__).resolve().parent.parent
KAFKA_FIXTURE = REPO / "tests" / "data" / "layouts" / "base.log"
SECTIONS = ("summary", "timeline", "kinds", "inputs", "violations", "findings")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class Page(HTMLParser):
    """The parts of the page the tests look at: sections, lanes, tables (id, headings, rows of cell texts)."""

    def __init__(self, text: str):
        super().__init__()
        self.sections: list[str] = []
        self.lanes: list[str] = []
        self.tables: dict[str, dict] = {}
        self.scripts: list[dict] = []
        self.external: list[str] = []
        self._table = self._cell = None
        self._row: list[str] | None = None
        self._in_head = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for name in ("src", "href"):
            if a.get(name):
                self.external.append(a[name])
        if tag == "link":
            self.external.append(str(a))
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "div" and a.get("class") == "lane":
            self.lanes.append(a["data-run"])
        elif tag == "table" and "data" in (a.get("class") or "").split():
            self._table = self.tables.setdefault(a["id"], {"head": [], "rows": []})
        elif tag == "thead":
            self._in_head = True
        elif tag == "tbody":
            self._in_head = False
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "script":
            self.scripts.append(a)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._in_head:
                self._table["head"] = self._row
            else:
                self._table["rows"].append(dict(zip(self._table["head"], self._row)))
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> tuple[dict, Path]:
    """The JSON report of the small audit, and where its event log is."""
    tmp = tmp_path_factory.mktemp("html")
    scenario = (REPO / "examples" / "unclean-election-on.yaml").read_text()
    scenario = re.sub(r"^name:.*$", lambda m: m.group(0) + "\nstart_time: 2023-06-15T08:30:00Z", scenario,
                      count=1, flags=re.M)
    (tmp / "scenario.yaml").write_text(scenario)
    log = tmp / "log"
    assert main(["simulate", str(tmp / "scenario.yaml"), "--log-dir", str(log)]) == 0
    result = run_audit([str(log), str(KAFKA_FIXTURE)], engine="local")
    return result.to_json(), log


@pytest.fixture(scope="module")
def page(audited) -> str:
    return render(audited[0])


def test_the_template_is_package_data():
    assert resources.files("audit").joinpath("templates", "report.html.j2").is_file()


def test_the_page_has_its_sections_and_is_self_contained(page):
    p = Page(page)
    assert page.startswith("<!DOCTYPE html>")
    assert tuple(p.sections) == SECTIONS
    assert p.external == [] and all("src" not in s for s in p.scripts) and len(p.scripts) == 1
    assert set(p.tables) == {"violation-kinds", "finding-kinds", "violation-kinds-absent", "finding-kinds-absent",
                             "failures", "inputs-table", "violations-table", "events-table", "findings-table"}
    assert [r["count"] for r in p.tables["finding-kinds"]["rows"]] == ["2", "1"]       # found, most first
    assert {r["count"] for r in p.tables["finding-kinds-absent"]["rows"]} == {"0"}
    assert all(t["head"] and t["rows"] for t in p.tables.values())


def test_each_run_has_its_own_lane_on_its_own_calendar(audited, page):
    report, log = audited
    p = Page(page)
    assert p.lanes == [str(log), "kafka-log:base.log"]
    lanes = [lane.split("</svg>")[0] for lane in page.split('<div class="lane"')[1:]]
    # The simulation started at 2023-06-15T08:30:00Z (its unclean election ~1 min later); the Kafka file is
    # of 2024-01-01: neither lane's axis reaches the other's year.
    assert "2023-06-15 08:3" in lanes[0] and "2024" not in lanes[0]
    assert "2024-01-01 10:00:0" in lanes[1] and "2023" not in lanes[1]
    assert 'class="f warning"' in lanes[0] and 'class="v"' in lanes[1]


def test_findings_are_grouped_by_cause_and_every_meaning_is_said(page):
    p = Page(page)
    events = p.tables["events-table"]["rows"]
    failed, = [e for e in events if e["kind"] == "failed_election"]
    assert failed["count"] == "2" and failed["concerning"] == "orders-1, orders-2"
    assert failed["where"].startswith(f"{KAFKA_FIXTURE}:16") and failed["where"].endswith("… 21")
    for table in ("violation-kinds", "finding-kinds", "violation-kinds-absent", "finding-kinds-absent", "failures",
                  "events-table"):
        assert all(r["meaning"] for r in p.tables[table]["rows"]), table
    kinds = [r["violation"] for t in ("violation-kinds", "violation-kinds-absent") for r in p.tables[t]["rows"]]
    kinds += [r["finding"] for t in ("finding-kinds", "finding-kinds-absent") for r in p.tables[t]["rows"]]
    assert sorted(kinds) == sorted({**ALL_VIOLATION_KINDS, **ALL_FINDING_KINDS})    # each kind once, said
    assert all(ALL_VIOLATION_KINDS.values()) and all(ALL_FINDING_KINDS.values())
    assert failure_meaning("SomeExceptionNobodyKnows")
    where = {r["where"] for r in p.tables["violations-table"]["rows"]}
    assert f"{KAFKA_FIXTURE}:15" in where                  # file:line


def test_inputs_are_typed_by_what_they_are(tmp_path, audited):
    notes = tmp_path / "NOTES.md"
    notes.write_text("# Not a log\n\nJust notes about the cluster.\n")
    report = run_audit([str(KAFKA_FIXTURE), str(notes)], engine="local").to_json()
    assert [i["type"] for i in report["inputs"]] == ["kafka-log", "kafka-log"]    # the JSON's input kind
    rows = Page(render(report)).tables["inputs-table"]["rows"]
    assert [r["type"] for r in rows] == ["kafka-log", "not a Kafka log"]
    assert [r["type"] for r in Page(render(audited[0])).tables["inputs-table"]["rows"]] == ["event-log", "kafka-log"]


def _browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


# What a reader does, run after the page's own script: sort the findings by count (twice: largest first) and
# filter the inputs; the outcome lands in attributes of <body> that --dump-dom shows.
_CLICKS = """<script>
var th = Array.prototype.filter.call(document.querySelectorAll('#events-table th'),
                                     function (h) { return h.textContent === 'count'; })[0];
th.click(); th.click();
document.body.setAttribute('data-test-first-count', document.querySelector('#events-table tbody tr td.n').textContent);
document.body.setAttribute('data-test-sort', th.getAttribute('aria-sort'));
var box = document.querySelector('input[data-filter="inputs-table"]');
box.value = 'base.log'; box.dispatchEvent(new Event('input'));
document.body.setAttribute('data-test-visible', String(Array.prototype.filter.call(
    document.querySelectorAll('#inputs-table tbody tr'), function (r) { return !r.hidden; }).length));
</script>
</body>"""


@pytest.mark.skipif(_browser() is None, reason="no Chromium found (Debian: apt-get install chromium): the report "
                                               "is not checked in a browser here")
def test_the_page_runs_in_headless_chromium(tmp_path, page):
    html = tmp_path / "report.html"
    html.write_text(page)
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.replace("</body>", _CLICKS, 1))

    def dom(path: Path) -> str:
        run = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stdout

    shown = dom(html)
    tables = len(Page(page).tables)
    assert f'data-tables-ready="{tables}"' in shown                  # the inline script ran
    assert shown.count('data-sortable="yes"') == tables
    for section in SECTIONS:
        assert f'<section id="{section}">' in shown
    assert shown.count('<div class="lane"') == 2 and "<svg" in shown

    acted = dom(clicked)
    assert 'data-test-sort="descending"' in acted and 'data-test-first-count="2"' in acted
    assert 'data-test-visible="1"' in acted
