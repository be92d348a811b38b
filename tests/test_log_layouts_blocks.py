"""Reading a file a block at a time gives the items of reading it line by line.

``audit.kafka_text_logs.iter_text_blocks`` reads a file in blocks of whole lines (a ``str`` of lines joined
by ``\\n`` holding no ``\\r``, else a list of lines), and ``LineSplitter.split_blocks`` matches Kafka's and
Strimzi's fast patterns at each line's start in a block string, cutting out only the lines they do not
fit. Generated lines (the fast-path tests' near misses, every fixture layout's lines, stack traces, blank
space, line ends of other kinds, CR inside lines, bytes that are not UTF-8), grouped into blocks anyhow
and written to files with LF, CRLF or CR line ends (gzip-compressed or not) and read with block sizes
that cut lines anywhere, must come out as the items ``LineSplitter.split`` gives for the lines.
"""
from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from test_log_layouts_fast_path import STRIMZI_PRIMER, kafka_lines, strimzi_lines

from audit.kafka_text_logs import KafkaLogError, iter_text_blocks, iter_text_lines, read_kafka_lines, read_kafka_log
from audit.log_layouts import LineSplitter

FIXTURES = Path(__file__).parent / "data" / "layouts"
FIXTURE_LINES = sorted({line for p in sorted(FIXTURES.glob("*.log"))
                        for line in p.read_text(encoding="utf-8").split("\n")})
ODD_LINES = st.sampled_from([
    "", " ", "\t", "  \t ", "#", "# a comment", "\tat kafka.Foo.bar(Foo.scala:1)", "    at x.Y.z(Unknown Source)",
    "Caused by: java.io.IOException: x", "\t... 12 more", "java.lang.IllegalStateException: y", "kafka.common.X",
    "plain text", "[", "[2024-01-01 10:00:00,000]", "[2024-01-01 10:00:00,000] INFO", STRIMZI_PRIMER,
    "[2024-01-01 10:00:00,000] INFO msg (state.change.logger)\x0b", "[2024-01-01 10:00:00,000] INFO m (a)\x1c",
    "[2024-01-01 10:00:00,000] INFO [pfx\x85 x] m (a)\u2028", "2024-01-01 10:00:00,000 INFO m (a) [t]\x0c",
    "[2024-01-01 10:00:00,000] INFO [a (b) c] (d)", "[2024-01-01 10:00:00,000] INFO [x]", "é \u00a0 ü",
])
LINES = st.one_of(kafka_lines(), strimzi_lines(), st.sampled_from(FIXTURE_LINES), ODD_LINES)


def _items(splitter: LineSplitter, items) -> tuple[list, dict]:
    return list(items), dict(splitter.layouts)


def _by_lines(lines: list[str], fast_paths: bool = True) -> tuple[list, dict]:
    splitter = LineSplitter(fast_paths=fast_paths)
    return _items(splitter, splitter.split(lines, "<f>"))


def _by_blocks(blocks: list, fast_paths: bool = True) -> tuple[list, dict]:
    splitter = LineSplitter(fast_paths=fast_paths)
    return _items(splitter, splitter.split_blocks(blocks, "<f>"))


@st.composite
def grouped(draw, lines: list[str]) -> list:
    """``lines`` in blocks: strings of lines joined by \\n (when none holds a \\r), or lists."""
    blocks, at = [], 0
    while at < len(lines):
        n = draw(st.integers(1, max(1, len(lines) - at)))
        group = lines[at:at + n]
        at += n
        if draw(st.integers(0, 3)) or any("\r" in x for x in group):
            blocks.append("\n".join(group) if not any("\r" in x for x in group) else group)
        else:
            blocks.append(group)
    return blocks


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.lists(LINES | st.sampled_from(["a\rb", "[2024-01-01 10:00:00,000] INFO x\r (y)"]),
                           min_size=1, max_size=12), st.booleans())
@example(None, ["[2024-01-01 10:00:00,000] INFO [pfx", "x] m (a)"], True)
@example(None, [STRIMZI_PRIMER, "2024-01-01 10:00:00,000 INFO m (a", "b) [t]"], True)
def test_blocks_give_the_items_of_lines(data, lines, fast_paths):
    blocks = ["\n".join(lines)] if data is None else data.draw(grouped(lines))
    assert _by_blocks(blocks, fast_paths) == _by_lines(lines, fast_paths)


def _reference_lines(raw: bytes) -> list[str]:
    """The lines of a file as read line by line: split at LF (at CR in a file with no LF), UTF-8 or Latin-1."""
    sep = b"\r" if b"\n" not in raw[:65536] and b"\r" in raw else b"\n"
    pieces = raw.split(sep)
    if pieces[-1] == b"":
        pieces.pop()
    out = []
    for piece in pieces:
        try:
            out.append(piece.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(piece.decode("latin-1"))
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES | st.sampled_from(["a\rb", "x\xff".encode("latin-1").decode("latin-1")]), min_size=1,
                max_size=14),
       st.sampled_from(["\n", "\r\n", "\r"]), st.booleans(), st.booleans(), st.integers(1, 400), st.data())
def test_a_file_read_in_blocks_cut_anywhere_gives_the_items_of_its_lines(lines, end, last_end, gz, block_bytes,
                                                                         data):
    if end == "\r":
        lines = [x.replace("\r", "") for x in lines]
    text = end.join(lines) + (end if last_end else "")
    raw = text.encode("utf-8")
    if data.draw(st.booleans()):                 # now and then a byte that is not UTF-8
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff" + raw[at:]
    assume(raw)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state-change.log" + (".gz" if gz else ""))
        with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
            f.write(raw)
        try:
            blocks = list(iter_text_blocks(path, block_bytes))
        except KafkaLogError:                    # binary-looking content: refused both ways
            return
        for block in blocks:
            assert block.__class__ is list or "\r" not in block
        assert _by_blocks(blocks) == _by_lines(_reference_lines(raw))
        assert list(iter_text_lines(path)) == [x for b in blocks
                                               for x in (b.split("\n") if b.__class__ is str else b)]


def test_crlf_and_cr_files_are_read_as_block_strings(tmp_path):
    lines = ["[2024-01-01 10:00:00,000] INFO [Controller id=1 epoch=2] Resigned (kafka.controller.KafkaController)",
             "\tat x.Y.z(Y.java:1)", ""] * 50
    for end in ("\n", "\r\n", "\r"):
        path = tmp_path / "controller.log"
        path.write_bytes(end.join(lines).encode())          # the last line is empty: the file ends with an end
        blocks = list(iter_text_blocks(path, 1000))
        assert len(blocks) > 1 and all(b.__class__ is str for b in blocks)
        assert _by_blocks(blocks) == _by_lines(lines[:-1])


def test_a_file_reads_as_its_lines_in_memory(tmp_path):
    lines = [x for p in sorted(FIXTURES.glob("*.log")) for x in p.read_text(encoding="utf-8").split("\n")] + ["x"]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines))
    by_file, in_memory = read_kafka_log(path), read_kafka_lines(lines, source=str(path))
    assert by_file.rows == in_memory.rows and by_file.counts == in_memory.counts
    assert by_file.layouts == in_memory.layouts and by_file.not_understood_sample == in_memory.not_understood_sample


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1 << 20])
def test_a_fixture_read_with_any_block_size(block_bytes):
    for p in sorted(FIXTURES.glob("*.log")):
        lines = p.read_text(encoding="utf-8").split("\n")
        if lines[-1] == "":
            lines.pop()
        assert _by_blocks(list(iter_text_blocks(p, block_bytes))) == _by_lines(lines), p.name
