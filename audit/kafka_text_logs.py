"""Read Kafka's own ``state-change.log`` and ``controller.log`` (Kafka 0.8 to 4.x) into audit rows.

One file is one run (``run_id`` derived from the file name); every row's ``position`` and
``seq`` are its 1-based line number, ``source`` the path. The file is streamed a block of lines at a
time (plain or gzip-compressed text, :func:`iter_text_blocks`), its lines taken apart by
``audit.log_layouts`` (any layout: Kafka's, Strimzi's, custom ones, docker-compose or Kubernetes
prefixes, JSON lines from log shippers) and read by :class:`audit.kafka_log_reader.KafkaLogReader`;
nothing on a bad line raises — lines not understood are counted and sampled. Lines may end with LF,
CRLF or, in a file with no LF at all, CR alone. :class:`KafkaLogError` is raised for a file that cannot
be read as text at all (missing, a directory, empty, binary content, a truncated or corrupt gzip
stream) and by :func:`read_kafka_log` for a file none of whose lines is understood (not a Kafka log,
or in a layout not known): such a file is not "clean with 0 rows".

Several files can be read as one run: a rotated set (``state-change.log``, ``.1``,
``.2024-01-01-10``, oldest first: :func:`read_kafka_logs`) or several brokers' files merged by
timestamp (``merge=True``). Rows then keep their own file and line as ``source`` and ``position``;
``seq`` numbers the lines of the run in reading order.

Rows made: replica and partition transitions (with leader, leader epoch and ISR when the line
prints them, assigned replicas for NewPartition), failed and refused transitions (the exception
class of the stack trace that follows as ``error``), leader/ISR rewrites without a state change
(ISR removals, accepted AlterIsr), controller elections and topic deletions. A partition's last
known ISR (from earlier rows and the controller's request lines) tells whether an election to
OnlinePartition was unclean. KRaft files (QuorumController, KRaft broker lines) have no controller
state machines: they make no audit rows but KRaft rows (``reading.kraft_rows``, :mod:`audit.kraft_rows`),
read by :mod:`audit.kraft_broker_lines` and :mod:`audit.kraft_controller_lines`.
"""
from __future__ import annotations

import gzip
import itertools
import os
import zlib
from collections.abc import Iterable, Iterator

from audit.kafka_log_reader import (
    ERA_0_8, ERA_1_0, ERA_2_6, ERA_KRAFT, SAMPLE_SIZE, KafkaLogReader, KafkaLogReading, LineCounts,
)
from audit.kraft_metadata_dump import ERA_KRAFT_METADATA, MetadataDumpReader, is_metadata_dump
from audit.log_layouts import LineSplitter, chain, merge_by_time, rotation_order, rotation_sets

__all__ = ["ERA_0_8", "ERA_1_0", "ERA_2_6", "ERA_KRAFT", "ERA_KRAFT_METADATA", "SAMPLE_SIZE", "KafkaLogError", "KafkaLogReader",
           "KafkaLogReading", "LineCounts", "iter_text_blocks", "iter_text_lines", "open_kafka_log", "open_kafka_logs",
           "read_kafka_lines", "read_kafka_log", "read_kafka_logs", "rotation_order", "rotation_sets", "run_id_for"]
_SNIFF_BYTES = 65536
_SNIFF_LINES = 64   # lines looked at to tell a decoded metadata log (kafka-dump-log output) from a log


class KafkaLogError(Exception):
    """A file that cannot be read as a Kafka log at all (missing, a directory, binary, nothing understood)."""

    def __init__(self, path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def run_id_for(path) -> str:
    """The stable run id of a Kafka text log: derived from its file name."""
    return "kafka-log:" + os.path.basename(os.fspath(path))


def open_kafka_log(path, *, run_id: str | None = None) -> KafkaLogReader:
    """A reader over one file, for streaming: ``for row in reader.rows()``, then ``reader.reading(...)``
    (check ``reading.understood``: :func:`read_kafka_log` raises when it is false).

    The file is opened and checked here (KafkaLogError if it cannot be read as text).
    """
    path = os.fspath(path)
    splitter = LineSplitter()
    return KafkaLogReader(path, None, run_id=run_id or run_id_for(path), splitter=splitter,
                          items=splitter.split_blocks(iter_text_blocks(path), path))


def open_kafka_logs(paths: Iterable, *, merge: bool = False, run_id: str | None = None) -> KafkaLogReader:
    """A reader over several files as one run: in the order given (a rotated set: see
    :func:`rotation_order`), or with ``merge`` interleaved by timestamp (several brokers' files). With
    ``merge``, an element of ``paths`` may itself be a list of files: a broker's rotated set, read in
    its order as one of the histories merged."""
    groups = [[os.fspath(p) for p in g] if isinstance(g, (list, tuple)) else [os.fspath(g)] for g in paths]
    flat = [p for g in groups for p in g]
    if not flat:
        raise ValueError("no file to read")
    splitter = LineSplitter()
    files = [splitter.split_blocks(iter_text_blocks(p), p) for p in flat]       # every file is checked here
    streams, at = [], 0
    for g in groups:
        streams.append(itertools.chain.from_iterable(files[at:at + len(g)]))
        at += len(g)
    items = merge_by_time(streams) if merge else chain(streams)
    return KafkaLogReader(flat[-1], None, run_id=run_id or run_id_for(flat[-1]), items=items, splitter=splitter,
                          sources=tuple(flat))


def read_kafka_log(path, *, run_id: str | None = None) -> KafkaLogReading:
    """Read one Kafka ``state-change.log`` / ``controller.log`` (or any Kafka log file) whole; a decoded
    metadata log (``kafka-dump-log.sh --cluster-metadata-decoder`` output) is told by its first lines and
    folded by :mod:`audit.kraft_metadata_dump`.

    KafkaLogError when no line of it is understood: it is not a Kafka log, or not in a layout known."""
    path = os.fspath(path)
    head, blocks, _ = _peek_blocks(iter_text_blocks(path))
    run_id = run_id or run_id_for(path)
    if is_metadata_dump(head):
        dump = MetadataDumpReader(path, run_id=run_id)
        dump.read(path, _lines_of(blocks))
        return _understood(dump.reading())
    splitter = LineSplitter()
    reader = KafkaLogReader(path, None, run_id=run_id, items=splitter.split_blocks(blocks, path), splitter=splitter)
    return _understood(reader.reading(list(reader.rows())))


def read_kafka_logs(paths: Iterable, *, merge: bool = False, run_id: str | None = None) -> KafkaLogReading:
    """Read several files as one run (see :func:`open_kafka_logs`); KafkaLogError as for one file. Decoded
    metadata logs (a snapshot's and segments' dumps) are folded in the order given, never merged."""
    groups = [list(g) if isinstance(g, (list, tuple)) else [g] for g in paths]
    flat = [os.fspath(p) for g in groups for p in g]
    if flat:
        peeked = [_peek_blocks(iter_text_blocks(p)) for p in flat]
        if all(is_metadata_dump(head) for head, _, _ in peeked):
            dump = MetadataDumpReader(flat[-1], run_id=run_id or run_id_for(flat[-1]), sources=tuple(flat))
            for p, (_, blocks, _) in zip(flat, peeked):
                dump.read(p, _lines_of(blocks))
            return _understood(dump.reading())
        for _, _, source in peeked:
            source.close()
    reader = open_kafka_logs(groups, merge=merge, run_id=run_id)
    return _understood(reader.reading(list(reader.rows())))


def read_kafka_lines(lines: Iterable[str], *, source: str = "<lines>", run_id: str | None = None
                     ) -> KafkaLogReading:
    """Read log lines already in memory (tests, other sources) as if they were the file ``source``.
    Nothing raises here: ``reading.understood`` tells whether any line was understood."""
    head, lines = _peek(iter(lines))
    if is_metadata_dump(head):
        dump = MetadataDumpReader(source, run_id=run_id or run_id_for(source))
        dump.read(source, lines)
        return dump.reading()
    reader = KafkaLogReader(source, lines, run_id=run_id or run_id_for(source))
    return reader.reading(list(reader.rows()))


def _peek(lines: Iterator[str]) -> tuple[list[str], Iterator[str]]:
    """The first lines of ``lines``, and all of them again."""
    head = list(itertools.islice(lines, _SNIFF_LINES))
    return head, itertools.chain(head, lines)


def _peek_blocks(blocks: Iterator) -> tuple[list[str], Iterator, Iterator]:
    """The first lines of a file read as blocks (see :func:`iter_text_blocks`), all its blocks again, and
    the blocks' source (to close)."""
    head: list[str] = []
    seen = []
    for block in blocks:
        seen.append(block)
        lines = block.split("\n", _SNIFF_LINES) if block.__class__ is str else block
        head += lines[:_SNIFF_LINES - len(head)]
        if len(head) >= _SNIFF_LINES:
            break
    return head, itertools.chain(seen, blocks), blocks


def _lines_of(blocks: Iterable) -> Iterator[str]:
    """The lines of blocks (see :func:`iter_text_blocks`)."""
    return itertools.chain.from_iterable(b.split("\n") if b.__class__ is str else b for b in blocks)


def _understood(reading: KafkaLogReading) -> KafkaLogReading:
    if reading.understood:
        return reading
    c = reading.counts
    if c.not_understood == 0:
        raise KafkaLogError(reading.path, f"no log lines to audit: {c.total} blank or comment line(s)")
    no, text = reading.not_understood_sample[0]
    shown = text if len(text) <= 120 else text[:117] + "..."
    raise KafkaLogError(reading.path, f"not a Kafka log: none of its {c.not_understood} line(s) is a log line in "
                                      f"a known layout (line {no}: {shown!r})")


# --- reading the file as text ------------------------------------------------------------------
def _open_binary(path: str):
    if not os.path.exists(path):
        raise KafkaLogError(path, "no such file")
    if os.path.isdir(path):
        raise KafkaLogError(path, "is a directory, not a log file")
    try:
        f = open(path, "rb")
        magic = f.read(2)
        f.seek(0)
    except OSError as exc:
        raise KafkaLogError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if magic == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")
    return f


def _check_text(path: str, sniff: bytes) -> None:
    """Refuse binary content: NUL bytes, or more than 1% control characters."""
    if b"\x00" in sniff:
        raise KafkaLogError(path, "binary content (NUL bytes), not a text log")
    try:
        sniff.decode("utf-8")
        return
    except UnicodeDecodeError as exc:
        if exc.start >= len(sniff) - 3:    # a character cut by the sniff window
            return
    controls = sum(1 for b in sniff if b < 0x20 and b not in (0x09, 0x0A, 0x0C, 0x0D, 0x1B))
    if controls > len(sniff) // 100:
        raise KafkaLogError(path, "binary content (undecodable, control characters), not a text log")


def iter_text_lines(path) -> Iterator[str]:
    """The file's lines without line ends; UTF-8, falling back to Latin-1 for a line that is not.

    The file is opened and its start checked at once; lines are then read as they are asked for.
    """
    return _lines_of(iter_text_blocks(path))


def iter_text_blocks(path, block_bytes: int = 0) -> Iterator:
    """The file's lines (as :func:`iter_text_lines`), a block of about ``block_bytes`` (a MiB) at a time:
    a ``str`` of whole lines joined by ``\\n``, holding no ``\\r`` (LF, CRLF and CR-only line ends alike),
    or, where that cannot be (a CR inside a line, a line that is not UTF-8), a list of lines. Read with
    ``LineSplitter.split_blocks``, which cuts a block string into lines only where it must.

    The file is opened and its start checked at once; blocks are then read as they are asked for.
    """
    path = os.fspath(path)
    f = _open_binary(path)
    try:
        try:
            sniff = f.read(_SNIFF_BYTES)
            f.seek(0)
        except _READ_ERRORS as exc:
            raise KafkaLogError(path, f"cannot be read ({_read_error(exc)})") from None
        if not sniff:
            raise KafkaLogError(path, "is empty: no log lines to audit")
        _check_text(path, sniff)
    except BaseException:
        f.close()
        raise
    sep = b"\r" if b"\n" not in sniff and b"\r" in sniff else b"\n"   # CR alone: old Mac line ends
    return _decoded_blocks(path, f, sep, block_bytes or _BLOCK_BYTES)


_READ_ERRORS = (OSError, EOFError, zlib.error)
_BLOCK_BYTES = 1 << 20


def _read_error(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return f"a truncated gzip stream: {exc}"
    if isinstance(exc, (zlib.error, gzip.BadGzipFile)):
        return f"a corrupt gzip stream: {exc}"
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


def _decoded_blocks(path: str, f, sep: bytes, block_bytes: int) -> Iterator:
    """The file's blocks (see :func:`iter_text_blocks`): decoding a block at once is several times faster
    than line by line."""
    try:
        try:
            rest = b""
            while True:
                chunk = f.read(block_bytes)
                if not chunk:
                    break
                chunk = rest + chunk if rest else chunk
                cut = chunk.rfind(sep)
                if cut < 0:
                    rest = chunk
                    continue
                rest = chunk[cut + 1:]
                yield _decode_block(chunk[:cut], sep)
            if rest:
                yield _decode_block(rest, sep)
        except _READ_ERRORS as exc:   # e.g. a truncated or corrupt gzip stream
            raise KafkaLogError(path, f"cannot be read ({_read_error(exc)})") from None
    finally:
        f.close()


def _decode_block(block: bytes, sep: bytes):
    """The lines of a block without line ends, as a ``str`` of lines joined by ``\\n`` holding no ``\\r``
    or else as a list; UTF-8, or Latin-1 for a line that is not (a list)."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        lines = []
        for raw in block.split(sep):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError:
                lines.append(raw.decode("latin-1").rstrip("\r\n"))
        return lines
    if sep == b"\r":
        return text.split("\r") if "\n" in text else text.replace("\r", "\n")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if text[-1:] == "\r":                  # the CR of the CRLF the block was cut at
            text = text.rstrip("\r")
        if "\r" in text:
            return text.split("\n")
    return text
