"""The documentation's examples run: every ```python block of docs/*.md and README.md is executed,
the blocks of one file in order and in one namespace. Generated diagrams must match the tables."""
from __future__ import annotations

import pathlib
import re

import pytest

from statemachines.diagrams import render_into

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path: pathlib.Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_doc_examples_run(path: pathlib.Path) -> None:
    namespace: dict = {"__name__": f"doc_{path.stem}"}
    for i, block in enumerate(python_blocks(path)):
        code = compile(block, f"{path.name} (python block {i + 1})", "exec")
        exec(code, namespace)  # noqa: S102 - the docs are ours


def test_state_machine_diagrams_are_current() -> None:
    doc = ROOT / "docs" / "state-machines.md"
    text = doc.read_text(encoding="utf-8")
    assert render_into(text) == text, (
        "docs/state-machines.md is stale: run python -m statemachines.diagrams --write docs/state-machines.md")


def test_event_log_format_doc_lists_every_record_field_in_order() -> None:
    """docs/event-log-format.md is what readers in other languages go by: it must match events.records."""
    from events.records import HEADER_FIELDS, HEADER_LEN, KINDS

    text = (ROOT / "docs" / "event-log-format.md").read_text(encoding="utf-8")
    header_rows = re.findall(r"^\| (\d) \| (\w+) \|", text.split("### The common header", 1)[1], re.M)[:HEADER_LEN]
    assert tuple(name for _, name in header_rows) == HEADER_FIELDS
    for code, cls in KINDS.items():
        m = re.search(rf"^\*\*{code} {cls.__name__}\*\*.*?\n\n(\|.*?)(?:\n\n|\Z)", text, re.S | re.M)
        assert m, f"no section '**{code} {cls.__name__}**' in docs/event-log-format.md"
        rows = re.findall(r"^\| (\d+) \| (\w+) \|", m.group(1), re.M)
        assert [(int(i), f) for i, f in rows] == list(enumerate(cls._fields))[HEADER_LEN:], cls.__name__
