"""The layout of a log line, apart from what its message means: timestamp, level, logger, thread, message.

Kafka's own logs reach the audit in many layouts. This module takes any of them apart, line by line,
into the same pieces, so that the modules that give messages their meaning (the ZooKeeper-era
controller lines of ``audit.kafka_log_reader``, and any later one) never see a layout. Layouts read:

- ``kafka``: Kafka's default log4j layout ``[%d] %p %m (%c)%n`` (also what the Confluent images and
  the Bitnami images print: they ship Kafka's pattern), ``%d`` plain or ISO 8601;
- ``strimzi``: ``%d{ISO8601} %p %m (%c) [%t]%n`` (timestamp without brackets, thread at the end), and
  any ``%d %p %m`` with or without ``(%c)``;
- ``dash``: ``%d %p %c:%L - %m%n`` and its kin (``%d %-5p %c{1}:%L - %m``, ``%d [%t] %-5p %c - %m``);
- ``zookeeper``: ZooKeeper's own (``%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n``), as found
  beside Kafka's in a docker-compose log: read, and they are no controller's lines;
- ``bitnami-script``: the Bitnami start scripts' own lines (``kafka 10:41:22.69 INFO  ==> ...``);
- ``json``: JSON lines from log shippers: a raw line in a ``log``/``message`` field (Docker's json-file
  driver, Fluent Bit, Filebeat), or the pieces as fields, ECS style (``@timestamp``, ``log.level``,
  ``log.logger``, ``process.thread.name``, ``error.stack_trace``, flat or nested), Logstash style
  (``level``, ``logger_name``, ``thread_name``, ``stack_trace``) or log4j2's JsonLayout (``instant``/
  ``timeMillis``, ``loggerName``, ``thrown``);
- any of these behind a prefix: docker-compose (``kafka_1  | ``, colours stripped), Kubernetes' CRI
  files (``2024-01-01T00:00:00.000000000Z stdout F ``; ``P`` partial lines are joined), ``kubectl logs
  --timestamps`` and ``--prefix`` (``[pod/kafka-0/kafka] ``). A prefix names a *stream* (a container):
  a stack trace's lines belong to the last entry of their own stream, however streams interleave.

The layout is found per line (the last layout that fitted is tried first), so concatenated files of
different layouts read as well as one. Lines that continue an entry (stack traces, multi-line
messages) are told from lines no layout fits. Timestamps are returned as ``yyyy-MM-dd HH:mm:ss,SSS``
(the wall time as printed; a zone, when printed, is dropped), so that they compare as strings.

:func:`split_lines` turns one file's lines into *items*, tuples ``(kind, seq, source, line, text, ts,
level, logger, thread, stream, prefix, body)``: ``kind`` is LOG (``text`` is the message, without its
logger or thread), CONT (a continuation line), PART (a partial line joined to the next), BLANK (empty,
blank or a ``#`` comment) or UNKNOWN (``text`` is the line as read). A LOG item's message is also given
split (:func:`split_prefix`): ``prefix`` is the text of the bracket that opens it (Kafka's ``logIdent``,
``[Controller id=1 epoch=7] ``), or None, and ``body`` the rest; what a prefix means is not this
module's business. Other items have None in both.

Kafka's layout and Strimzi's, with their usual timestamps, are read by one compiled pattern each that
also splits the prefix off (the *fast paths*; Kafka's lines that print a logger by a pattern of their
own first); a line they do not fit exactly goes the general way (``tests/test_log_layouts_fast_path.py``
holds the two to the same items). A file read as blocks of lines (:meth:`LineSplitter.split_blocks`)
is not cut into lines first: the fast patterns are matched at each line's start in the block, and only
the lines they do not take are cut out of it (``tests/test_log_layouts_blocks.py`` holds the blocks to
the lines). :func:`rotation_order` orders a rotated set of files oldest first, :func:`chain` and
:func:`merge_by_time` read several files as one stream.
"""
from __future__ import annotations

import heapq
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from typing import NamedTuple

LOG, CONT, PART, BLANK, UNKNOWN = 0, 1, 2, 3, 4
LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "SEVERE"})
_LEVEL = r"(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)"
# A log4j timestamp: "2024-01-02 03:04:05,678", ISO 8601 with 'T', '.', 0-9 fraction digits, a zone.
_TS = r"(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,9})?)(?:Z|[+-]\d\d:?\d\d)?"
# Kafka's layout with its usual timestamp, in one match: what split_logger does, as a regex.
_KAFKA_FAST = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL) "
                         r"(?:(.*) \(([^\s()=]+)\)\s*|(.*))$")
# The fast paths: one match per line also splits the message's prefix (split_prefix, as a regex; inside
# each alternative, so that the logger is found as in the whole message). ASCII digits only ([0-9] is
# several times cheaper than \d, which takes any Unicode digit): a line they do not fit goes the general
# way, so each fast pattern has to give what the general way gives only for the lines it matches.
_D = "[0-9]"
_FAST_LEVEL = "(INFO|DEBUG|TRACE|WARN|ERROR|WARNING|FATAL)"


def _fast_patterns(nl: str, flags: int = 0) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """Kafka's (with a logger, and any) and Strimzi's fast patterns: for one line (``nl`` empty), or (``nl``
    ``\\n``, ``re.M``) to be matched at the start of a line in a block of lines joined by ``\\n``; there no
    class takes a line end and ``$`` is the line's end, so that on a line of a block each gives what it
    gives on the line alone."""
    space = r"[^\S\n]" if nl else r"\s"
    prefix = rf"(?:\[([^\[\]{nl}]*)\][:,]? ?)?"
    prefix_sep = rf"(\[([^\[\]{nl}]*)\][:,]? ?)?"         # with its separator, as a group of its own
    # Groups: ts, level, then (message, prefix, body, logger) with a logger, or (message, prefix, body) without.
    kafka = re.compile(
        rf"\[({_D}{{4}}-{_D}{_D}-{_D}{_D} {_D}{_D}:{_D}{_D}:{_D}{_D},{_D}{{3}})\] {_FAST_LEVEL} "
        rf"(?:({prefix}(.*)) \(([^\s()=]+)\){space}*|({prefix}(.*)))$", flags)
    # The first alternative of ``kafka`` alone (the lines that print a logger), its body's group ending after
    # the space before " (": a group that ends just before it keeps the regex engine from skipping from
    # space to space as it looks for the logger from the line's end (a quarter of the instructions of a
    # match). Cheaper still (a fifth): the logger in printable ASCII (a class the engine checks in a bitmap,
    # where ``\s`` is a call per character) and possessive repeats (``?+``, ``*+``: no state kept to
    # backtrack into them). A line it does not take for that reason (a logger in other characters, a prefix
    # that has to give up its separator or itself for the rest to fit) goes to ``kafka``, whose groups are
    # what this pattern's would have been. Groups: ts, level, prefix with its separator, prefix, body and a
    # space, logger.
    logged = re.compile(
        rf"\[({_D}{{4}}-{_D}{_D}-{_D}{_D} {_D}{_D}:{_D}{_D}:{_D}{_D},{_D}{{3}})\] {_FAST_LEVEL} "
        rf"(\[([^\[\]{nl}]*+)\][:,]? ?)?+(.* )\(([!-'*-<>-~]++)\){space}*+$", flags)
    # Strimzi's layout, "%d{ISO8601} %p %m (%c) [%t]", as _dated reads it when the dash layout does not fit
    # (the negative lookahead is DATED's dash alternative), with split_logger's logger and _dated's thread.
    # Groups: ts, level, prefix with its separator, prefix, logger, thread; the message starts at 25 +
    # len(level) and is cut by the lengths of the groups after it (no group just before " (" lets the regex
    # engine skip to the spaces when it looks for the logger from the end: measured faster here, not for
    # Kafka's layout).
    strimzi = re.compile(
        rf"({_D}{{4}}-{_D}{_D}-{_D}{_D}[ T]{_D}{_D}:{_D}{_D}:{_D}{_D},{_D}{{3}}) {_FAST_LEVEL} "
        rf"(?!{space}|(?:\[[^\]{nl}]*\]{space}+)?[A-Za-z_$][\w$.]*(?::(?:\d+|\?))?{space}+-{space})"
        rf"{prefix_sep}.* \(([^ (={nl}]+)\) \[([^\[\]{nl}]*)\]$", flags)
    return logged, kafka, strimzi


_KAFKA_LOGGED, _KAFKA_FASTEST, _STRIMZI_FAST = _fast_patterns("")
_KAFKA_LOGGED_BLOCK, _KAFKA_FASTEST_BLOCK, _STRIMZI_FAST_BLOCK = _fast_patterns(r"\n", re.M)

_TS_MATCH = re.compile(_TS).match
KAFKA = re.compile(r"\[" + _TS + r"\]\s+" + _LEVEL + r"\s+(?P<msg>.*)$")
# "%d %p %c:%L - %m" and kin (dash: "dmsg"), else "%d %p %m ..." (Strimzi's and kin: "msg"), in one match.
DATED = re.compile(_TS + r"\s+(?:\[(?P<t1>[^\]\d][^\]]*)\]\s+)?" + _LEVEL + r"\s+(?:(?:\[(?P<t2>[^\]]*)\]\s+)?"
                   r"(?P<logger>[A-Za-z_$][\w$.]*)(?::(?:\d+|\?))?\s+-\s(?P<dmsg>.*)|(?P<msg>.*))$")
BITNAMI_SCRIPT = re.compile(r"(?P<name>[\w.-]+) (?P<ts>\d\d:\d\d:\d\d\.\d\d) " + _LEVEL + r"\s+==> ?(?P<msg>.*)$")
ZOOKEEPER = re.compile(_TS + r" \[myid:[^\]]*\] - " + _LEVEL + r"\s+\[(?P<thread>[^\]]*?):(?P<cls>[\w$]+)@\d+\] - "
                       r"(?P<msg>.*)$")

COMPOSE_PREFIX = re.compile(r"(?P<stream>[A-Za-z0-9][\w.-]*)\s*\| ?(?P<rest>.*)$")
CRI_PREFIX = re.compile(r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) "
                        r"(?P<stream>stdout|stderr) (?P<tag>[FP]) ?(?P<rest>.*)$")
TIMESTAMP_PREFIX = re.compile(r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?P<rest>.*)$")
KUBECTL_PREFIX = re.compile(r"\[pod/(?P<stream>[^/\]\s]+)/[^\]\s]+\] (?P<rest>.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Lines that continue the previous entry: stack frames and indented message lines, an exception's
# head ("java.io.IOException: ..." / "java.lang.InterruptedException"), its causes.
CONTINUATION = re.compile(
    r"(?:\s|Caused by: |Suppressed: |\.\.\. \d+ more|"
    r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?::|\s*$))")
# The parts of a stack trace that cannot be anything else, even with no log line before them
# (a file cut in the middle of a trace).
STACK_TRACE_LINE = re.compile(r"(?:\s+at [\w$.<>/]+\(.*\)\s*$|\s*Caused by: |\s*\.\.\. \d+ more\s*$)")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[\w$]+)+$")


class LayoutLine(NamedTuple):
    """One log line taken apart (see :func:`parse_line`)."""
    layout: str          # "kafka", "strimzi", "dash", "json", ... with its prefixes: "compose+kafka"
    ts: str | None       # yyyy-MM-dd HH:mm:ss,SSS, or None when the line prints none
    level: str
    logger: str | None   # None when the layout prints no logger
    thread: str | None
    message: str
    stream: str | None   # the container a prefix named, if any


def normalize_ts(ts: str) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` from a log4j/ISO 8601 timestamp (zone already cut)."""
    if len(ts) == 23 and ts[10] == " " and ts[19] == ",":
        return ts
    frac = ts[20:23] if len(ts) > 19 else ""
    return f"{ts[:10]} {ts[11:19]},{frac.ljust(3, '0')}"


def split_logger(msg: str) -> tuple[str | None, str]:
    """(logger, message) from ``message (logger)``; (None, msg) when no logger is printed."""
    if not msg.endswith(")"):
        msg_r = msg.rstrip()
        if not msg_r.endswith(")"):
            return None, msg
        msg = msg_r
    start = msg.rfind(" (")
    logger = msg[start + 2:-1]
    if start < 0 or not logger or " " in logger or "(" in logger or "=" in logger:
        return None, msg
    return logger, msg[:start]


def split_prefix(msg: str) -> tuple[str | None, str]:
    """(prefix, body) of a message: ``[prefix] body``, ``[prefix]: body``, ``[prefix], body`` (the text in
    the first bracket, which holds no other ``[``); (None, msg) when the message opens with none."""
    if msg[:1] == "[":
        close = msg.find("]")
        if close > 0:
            prefix = msg[1:close]
            if "[" not in prefix:
                end = close + 1
                if msg[end:end + 1] in (":", ","):
                    end += 1
                if msg[end:end + 1] == " ":
                    end += 1
                return prefix, msg[end:]
    return None, msg


# --- the message layouts: text -> (layout, ts, level, logger, thread, message) or None --------------
def _kafka(text: str):
    if text[:1] != "[":
        return None
    m = _KAFKA_FAST.match(text)
    if m is not None:
        ts, level, msg, logger, bare = m.groups()
        return "kafka", ts, level, logger, None, bare if msg is None else msg
    m = KAFKA.match(text)
    if m is None:
        return None
    logger, msg = split_logger(m["msg"])
    return "kafka", normalize_ts(m["ts"]), m["level"], logger, None, msg


def _dated(text: str):
    """The layouts that open with a bare timestamp: dash (``%c:%L - %m``), else Strimzi's and kin."""
    if not text[:1].isdigit():
        return None
    m = DATED.match(text)
    if m is None:
        return None
    ts, t1, level, t2, logger, dmsg, msg = m.groups()
    if dmsg is not None:
        return "dash", normalize_ts(ts), level, logger, t1 or t2, dmsg
    thread = t1
    msg = msg.rstrip()
    if msg[-1:] == "]":                              # "... (logger) [thread]"
        at = msg.rfind(") [")
        if at >= 0 and "[" not in msg[at + 3:-1] and "]" not in msg[at + 3:-1]:
            thread, msg = msg[at + 3:-1], msg[:at + 1]
    logger, msg = split_logger(msg)
    return "strimzi", normalize_ts(ts), level, logger, thread, msg


def _zookeeper(text: str):
    m = ZOOKEEPER.match(text)
    if m is None:
        return None
    return ("zookeeper", normalize_ts(m["ts"]), m["level"], "org.apache.zookeeper." + m["cls"], m["thread"],
            m["msg"])


def _bitnami_script(text: str):
    m = BITNAMI_SCRIPT.match(text)
    if m is None:
        return None
    return "bitnami-script", None, m["level"], "bitnami." + m["name"], None, m["msg"]


_LAYOUTS = (_kafka, _dated, _zookeeper, _bitnami_script)


def _message_layout(text: str, first):
    """The first message layout that fits ``text`` (``first`` is tried first), or None."""
    parts = first(text)
    if parts is not None:
        return parts, first
    for layout in _LAYOUTS:
        if layout is not first:
            parts = layout(text)
            if parts is not None:
                return parts, layout
    return None, first


# --- JSON lines -------------------------------------------------------------------------------------
def _field(obj: dict, *names):
    """The first of ``names`` present in ``obj``: ``a.b.c`` is the flat key or a nested one."""
    for name in names:
        value = obj.get(name)
        if value is None and "." in name:
            head, _, tail = name.partition(".")
            inner = obj.get(head)
            if isinstance(inner, dict):
                value = _field(inner, tail)
        if value is not None and value != "":
            return value
    return None


def _json_ts(obj: dict) -> str | None:
    try:
        return _json_ts_of(obj)
    except (TypeError, ValueError, OverflowError, OSError):    # a field of another type, a time out of range
        return None


def _json_ts_of(obj: dict) -> str | None:
    value = _field(obj, "@timestamp", "timestamp", "time", "ts", "date")
    if isinstance(value, str):
        m = _TS_MATCH(value.strip())
        return normalize_ts(m["ts"]) if m else None
    millis = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        millis = value if value > 1e11 else value * 1000
    instant = obj.get("instant")
    if isinstance(instant, dict) and "epochSecond" in instant:
        millis = instant["epochSecond"] * 1000 + instant.get("nanoOfSecond", 0) // 1_000_000
    elif isinstance(obj.get("timeMillis"), (int, float)):
        millis = obj["timeMillis"]
    if millis is None:
        return None
    millis = int(millis)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(millis // 1000)) + f",{millis % 1000:03d}"


def _json_stack(obj: dict) -> list[str]:
    stack = _field(obj, "error.stack_trace", "stack_trace", "stacktrace", "exception")
    if isinstance(stack, str):
        return stack.splitlines()
    thrown = obj.get("thrown")
    if isinstance(thrown, dict) and isinstance(thrown.get("name"), str):
        return [thrown["name"] + (f": {thrown['message']}" if thrown.get("message") else "")]
    if isinstance(stack, dict) and isinstance(stack.get("class"), str):   # {"exception": {"class": ..}}
        return [stack["class"] + (f": {stack['message']}" if stack.get("message") else "")]
    return []


class _Json(NamedTuple):
    raw: str | None                      # a whole line in some layout, as a shipper forwarded it
    parts: tuple | None                  # (ts, level, logger, thread, message) given as fields
    more: list                           # further lines: the message's, then the stack trace's


_STACK_KEYS = ("error.stack_trace", "error", "stack_trace", "stacktrace", "exception", "thrown")
_json_decode = json.JSONDecoder().decode


def _json_line(text: str) -> _Json | None:
    try:
        obj = _json_decode(text)
    except (ValueError, RecursionError):           # not JSON, or nested beyond reason
        return None
    if obj.__class__ is not dict:
        return None
    message = obj.get("message")
    if message is None or message == "":
        message = _field(obj, "msg", "log")
    if not isinstance(message, str):               # none, or ECS's nested "log": {...} and no message
        return None
    message = message.rstrip("\r\n")
    if "\n" in message:
        lines = message.split("\n")
        first, more = lines[0].rstrip("\r"), [x.rstrip("\r") for x in lines[1:]]
    else:
        first, more = message.rstrip("\r"), []
    for key in _STACK_KEYS:
        if key in obj:
            more += _json_stack(obj)
            break
    level = obj.get("log.level") or obj.get("level")
    if level is None:
        level = _field(obj, "log.level", "severity", "loglevel")
    if not isinstance(level, str) or level.upper() not in LEVELS:
        return _Json(first, None, more)
    logger = _field(obj, "log.logger", "logger_name", "loggerName", "logger")
    thread = _field(obj, "process.thread.name", "thread_name", "thread")
    return _Json(None, (_json_ts(obj), level.upper(), logger if isinstance(logger, str) else None,
                        thread if isinstance(thread, str) else None, first), more)


# --- one file's lines -> items ----------------------------------------------------------------------
class LineSplitter:
    """Splits the lines of one or more files into items (see the module docstring); ``layouts`` counts
    the log lines read in each layout (``compose+kafka``: Kafka's layout behind a docker-compose prefix).
    ``fast_paths=False`` reads every line the general way (for tests: the fast paths must agree with it)."""

    __slots__ = ("layouts", "_first", "_streams", "_partial", "_prefix_first", "_fast_paths")

    def __init__(self, fast_paths: bool = True):
        self._fast_paths = fast_paths
        self.layouts: dict[str, int] = {}
        self._first = _kafka
        self._streams: set = set()           # streams that have had a log line (continuations follow it)
        self._partial: dict = {}             # stream -> the text of its CRI partial lines so far
        self._prefix_first = False           # whether the last line was behind a prefix (or JSON)

    def split(self, lines: Iterable[str], source: str) -> Iterator[tuple]:
        """Items of one file's lines; ``seq`` and ``line`` are the 1-based line number."""
        return self._split(lines, source, 0, True)

    def _split(self, lines: Iterable[str], source: str, no: int, whole: bool):
        """Items of lines ``no + 1``...; ``whole``: they end the file. Returns the last line's number."""
        # The loop reads Kafka's own layout and indented continuation lines inline: they are nearly
        # every line of a Kafka log, and a call per line would halve the reading speed.
        kafka, dated, layouts, parse, streams = _kafka, _dated, self.layouts, self._parse, self._streams
        if self._fast_paths:
            logged_match, fastest_match, fast_match = _KAFKA_LOGGED.match, _KAFKA_FASTEST.match, _KAFKA_FAST.match
            strimzi_match = _STRIMZI_FAST.match
        else:
            logged_match = fastest_match = fast_match = strimzi_match = _no_match
        stack_line = STACK_TRACE_LINE.match
        fast = strimzi = 0
        try:
            for no, text in enumerate(lines, no + 1):
                last = text[-1:]
                if last == "\n" or last == "\r":
                    text = text.rstrip("\r\n")
                first = text[:1]
                if first == "[" and self._first is kafka:
                    m = logged_match(text)
                    if m is not None:
                        if not fast:
                            streams.add(None)
                        fast += 1
                        ts, level, full, prefix, body, logger = m.groups()
                        body = body[:-1]
                        yield (LOG, no, source, no, body if full is None else full + body, ts, level, logger, None,
                               None, prefix, body)
                        continue
                    m = fastest_match(text)
                    if m is not None:
                        if not fast:
                            streams.add(None)
                        fast += 1
                        ts, level, msg, prefix, body, logger, bare, prefix2, body2 = m.groups()
                        if msg is None:
                            yield (LOG, no, source, no, bare, ts, level, None, None, None, prefix2, body2)
                        else:
                            yield (LOG, no, source, no, msg, ts, level, logger, None, None, prefix, body)
                        continue
                    m = fast_match(text)
                    if m is not None:
                        if not fast:
                            streams.add(None)
                        fast += 1
                        ts, level, msg, logger, bare = m.groups()
                        if msg is None:
                            msg = bare
                        yield (LOG, no, source, no, msg, ts, level, logger, None, None, *split_prefix(msg))
                        continue
                elif (first == "\t" or first == " ") and not text.isspace():
                    # No layout opens with blank space: a continuation, or a line not understood.
                    if None in streams or stack_line(text):
                        yield (CONT, no, source, no, text, None, None, None, None, None, None, None)
                    else:
                        yield (UNKNOWN, no, source, no, text, None, None, None, None, None, None, None)
                    continue
                elif self._prefix_first:              # as the line before: behind a prefix, or JSON
                    items = self._prefixed(no, text, source, 0, None, "") if text else None
                    if items is not None:
                        yield from items
                        continue
                elif self._first is not kafka and text:   # as the line before: another layout
                    if self._first is dated:
                        m = strimzi_match(text)
                        if m is not None:
                            if not strimzi:
                                streams.add(None)
                            strimzi += 1
                            ts, level, full, prefix, logger, thread = m.groups()
                            if ts[10] == "T":
                                ts = f"{ts[:10]} {ts[11:]}"
                            start = 25 + len(level)
                            end = len(text) - len(thread) - len(logger) - 6
                            msg = text[start:end]
                            body = msg if full is None else text[start + len(full):end]
                            yield (LOG, no, source, no, msg, ts, level, logger, thread, None, prefix, body)
                            continue
                    parts = self._first(text)
                    if parts is not None:
                        streams.add(None)
                        name = parts[0]
                        layouts[name] = layouts.get(name, 0) + 1
                        msg = parts[5]
                        yield (LOG, no, source, no, msg, parts[1], parts[2], parts[3], parts[4], None,
                               *split_prefix(msg))
                        continue
                yield from parse(no, text, source)
            if whole and self._partial:
                yield from self._unended(no, source)
        finally:
            if fast:
                layouts["kafka"] = layouts.get("kafka", 0) + fast
            if strimzi:
                layouts["strimzi"] = layouts.get("strimzi", 0) + strimzi
        return no

    def split_blocks(self, blocks: Iterable, source: str) -> Iterator[tuple]:
        """The items :meth:`split` gives for a file's lines, given a block of lines at a time: a ``str``, the
        lines joined by ``\\n`` (none holding a ``\\r``), or a list of lines.

        A block string is not cut into lines first: Kafka's and Strimzi's fast patterns are matched at each
        line's start in the block, and only the lines they do not fit are cut out of it (a line string
        fewer for nearly every line of a Kafka log). Everything else about a line is as in :meth:`split`."""
        kafka, dated, layouts, streams = _kafka, _dated, self.layouts, self._streams
        if self._fast_paths:
            logged_match, fastest_match = _KAFKA_LOGGED_BLOCK.match, _KAFKA_FASTEST_BLOCK.match
            strimzi_match = _STRIMZI_FAST_BLOCK.match
        else:
            logged_match = fastest_match = strimzi_match = _no_match
        stack_line, line_items = STACK_TRACE_LINE.match, self._line_items
        no = fast = strimzi = 0
        try:
            for block in blocks:
                if block.__class__ is not str:
                    no = yield from self._split(block, source, no, False)
                    continue
                find = block.find
                pos, end = 0, len(block)
                while pos <= end:
                    no += 1
                    first = block[pos:pos + 1]
                    if first == "[":
                        if self._first is kafka:
                            m = logged_match(block, pos)
                            if m is not None:
                                if not fast:
                                    streams.add(None)
                                fast += 1
                                ts, level, full, prefix, body, logger = m.groups()
                                body = body[:-1]
                                yield (LOG, no, source, no, body if full is None else full + body, ts, level, logger,
                                       None, None, prefix, body)
                                pos = m.end() + 1
                                continue
                            m = fastest_match(block, pos)
                            if m is not None:
                                if not fast:
                                    streams.add(None)
                                fast += 1
                                ts, level, msg, prefix, body, logger, bare, prefix2, body2 = m.groups()
                                if msg is None:
                                    yield (LOG, no, source, no, bare, ts, level, None, None, None, prefix2, body2)
                                else:
                                    yield (LOG, no, source, no, msg, ts, level, logger, None, None, prefix, body)
                                pos = m.end() + 1
                                continue
                    elif first == "\t" or first == " ":
                        cut = find("\n", pos)
                        if cut < 0:
                            cut = end
                        text = block[pos:cut]
                        pos = cut + 1
                        if not text.isspace():
                            # No layout opens with blank space: a continuation, or a line not understood.
                            if None in streams or stack_line(text):
                                yield (CONT, no, source, no, text, None, None, None, None, None, None, None)
                            else:
                                yield (UNKNOWN, no, source, no, text, None, None, None, None, None, None, None)
                            continue
                        yield from line_items(no, text, source)
                        continue
                    elif self._first is dated and not self._prefix_first:
                        m = strimzi_match(block, pos)
                        if m is not None:
                            if not strimzi:
                                streams.add(None)
                            strimzi += 1
                            ts, level, full, prefix, logger, thread = m.groups()
                            if ts[10] == "T":
                                ts = f"{ts[:10]} {ts[11:]}"
                            start = pos + 25 + len(level)
                            cut = m.end()
                            stop = cut - len(thread) - len(logger) - 6
                            msg = block[start:stop]
                            body = msg if full is None else block[start + len(full):stop]
                            yield (LOG, no, source, no, msg, ts, level, logger, thread, None, prefix, body)
                            pos = cut + 1
                            continue
                    cut = find("\n", pos)
                    if cut < 0:
                        cut = end
                    text = block[pos:cut]
                    pos = cut + 1
                    yield from line_items(no, text, source)
            if self._partial:
                yield from self._unended(no, source)
        finally:
            if fast:
                layouts["kafka"] = layouts.get("kafka", 0) + fast
            if strimzi:
                layouts["strimzi"] = layouts.get("strimzi", 0) + strimzi

    def _line_items(self, no: int, text: str, source: str) -> list[tuple]:
        """The items of one line as :meth:`_split` reads it, for the lines of a block string that the
        fast patterns of :meth:`split_blocks` did not take (Kafka's fastest pattern left out: it did not fit)."""
        first = text[:1]
        if first == "[" and self._first is _kafka:
            m = _KAFKA_FAST.match(text) if self._fast_paths else None
            if m is not None:
                self._streams.add(None)
                self.layouts["kafka"] = self.layouts.get("kafka", 0) + 1
                ts, level, msg, logger, bare = m.groups()
                if msg is None:
                    msg = bare
                return [(LOG, no, source, no, msg, ts, level, logger, None, None, *split_prefix(msg))]
        elif (first == "\t" or first == " ") and not text.isspace():
            kind = CONT if None in self._streams or STACK_TRACE_LINE.match(text) else UNKNOWN
            return [(kind, no, source, no, text, None, None, None, None, None, None, None)]
        elif self._prefix_first:
            items = self._prefixed(no, text, source, 0, None, "") if text else None
            if items is not None:
                return items
        elif self._first is not _kafka and text:
            if self._first is _dated and self._fast_paths:
                m = _STRIMZI_FAST.match(text)
                if m is not None:
                    self._streams.add(None)
                    self.layouts["strimzi"] = self.layouts.get("strimzi", 0) + 1
                    ts, level, full, prefix, logger, thread = m.groups()
                    if ts[10] == "T":
                        ts = f"{ts[:10]} {ts[11:]}"
                    start = 25 + len(level)
                    end = len(text) - len(thread) - len(logger) - 6
                    msg = text[start:end]
                    body = msg if full is None else text[start + len(full):end]
                    return [(LOG, no, source, no, msg, ts, level, logger, thread, None, prefix, body)]
            parts = self._first(text)
            if parts is not None:
                self._streams.add(None)
                name = parts[0]
                self.layouts[name] = self.layouts.get(name, 0) + 1
                msg = parts[5]
                return [(LOG, no, source, no, msg, parts[1], parts[2], parts[3], parts[4], None, *split_prefix(msg))]
        return self._parse(no, text, source)

    def _unended(self, no: int, source: str) -> list[tuple]:
        """The items of the CRI partial lines that never ended (a file cut mid-line)."""
        partial, self._partial = self._partial, {}
        out = []
        for (stream, _), rest in partial.items():
            items = self._inner(no, rest, source, 0, stream, "cri+") if rest else None
            out += items or [(UNKNOWN, no, source, no, rest, None, None, None, None, stream, None, None)]
        return out

    def _parse(self, no: int, text: str, source: str, depth: int = 0, stream=None, prefix: str = "",
               outer_ts: str | None = None) -> list[tuple]:
        if not text or text.isspace() or (text[0] == "#" and not depth):
            return [(BLANK, no, source, no, text, None, None, None, None, stream, None, None)]
        if not depth and self._prefix_first:          # the line before was behind a prefix: so is this one
            inner = self._prefixed(no, text, source, depth, stream, prefix)
            if inner is not None:
                return inner
            self._prefix_first = False
        parts, self._first = _message_layout(text, self._first)
        if parts is not None:
            self._streams.add(stream)
            name = prefix + parts[0]
            self.layouts[name] = self.layouts.get(name, 0) + 1
            ts = parts[1] if parts[1] is not None else outer_ts
            msg = parts[5]
            return [(LOG, no, source, no, msg, ts, parts[2], parts[3], parts[4], stream, *split_prefix(msg))]
        if depth < 3:
            inner = self._prefixed(no, text, source, depth, stream, prefix)
            if inner is not None:
                if not depth:
                    self._prefix_first = True
                return inner
        if STACK_TRACE_LINE.match(text) or (stream in self._streams and CONTINUATION.match(text)):
            return [(CONT, no, source, no, text, None, None, None, None, stream, None, None)]
        return [(UNKNOWN, no, source, no, text, None, None, None, None, stream, None, None)]

    def _prefixed(self, no, text, source, depth, stream, prefix) -> list | None:
        """The items of a line behind a prefix or in JSON; None if it is neither (or its inside is not
        a log line, nor a continuation of its stream's)."""
        first = text[0]
        if first == "{":
            return self._json(no, text, source, depth, stream, prefix)
        if "\x1b[" in text:
            text = _ANSI.sub("", text)
        m = None
        if first.isdigit():
            m = CRI_PREFIX.match(text)
            if m is not None:
                key = (stream, m["stream"])
                rest = self._partial.pop(key, "") + m["rest"]
                if m["tag"] == "P":
                    self._partial[key] = rest
                    return [(PART, no, source, no, text, None, None, None, None, stream, None, None)]
                return self._inner(no, rest, source, depth, stream, prefix + "cri+", _cri_ts(m["ts"]))
            m = TIMESTAMP_PREFIX.match(text)
            if m is not None:
                return self._inner(no, m["rest"], source, depth, stream, prefix + "timestamped+", _cri_ts(m["ts"]))
        if first == "[":
            m = KUBECTL_PREFIX.match(text)
            if m is not None:
                return self._inner(no, m["rest"], source, depth, m["stream"], prefix + "kubectl+")
        m = COMPOSE_PREFIX.match(text)
        if m is not None:
            return self._inner(no, m["rest"], source, depth, m["stream"], prefix + "compose+")
        return None

    def _inner(self, no, rest, source, depth, stream, prefix, outer_ts=None) -> list | None:
        items = self._parse(no, rest, source, depth + 1, stream, prefix, outer_ts)
        if items[0][0] == UNKNOWN and all(item[0] == UNKNOWN for item in items):
            return None
        return items

    def _json(self, no, text, source, depth, stream, prefix) -> list | None:
        parsed = _json_line(text)
        if parsed is None:
            return None
        if parsed.raw is not None:
            if not parsed.raw or parsed.raw.isspace():
                items = [(BLANK, no, source, no, parsed.raw, None, None, None, None, stream, None, None)]
            else:
                items = self._inner(no, parsed.raw, source, depth, stream, prefix + "json+")
                if items is None:
                    return None
        else:
            ts, level, logger, thread, message = parsed.parts
            self._streams.add(stream)
            name = prefix + "json"
            self.layouts[name] = self.layouts.get(name, 0) + 1
            items = [(LOG, no, source, no, message, ts, level, logger, thread, stream, *split_prefix(message))]
        for line in parsed.more:
            if line and not line.isspace():
                items.append((CONT, no, source, no, line, None, None, None, None, stream, None, None))
        return items


def _no_match(text: str, pos: int = 0) -> None:
    return None


def _cri_ts(ts: str) -> str | None:
    m = _TS_MATCH(ts)
    return normalize_ts(m["ts"]) if m else None


def split_lines(lines: Iterable[str], source: str, splitter: LineSplitter | None = None) -> Iterator[tuple]:
    """The items of one file's lines (see the module docstring)."""
    return (splitter or LineSplitter()).split(lines, source)


def parse_line(text: str) -> LayoutLine | None:
    """One line taken apart, in whichever layout it is; None when it is not a log line."""
    splitter = LineSplitter()
    for item in list(splitter.split([text], "<line>")):
        if item[0] == LOG:
            layout, = splitter.layouts
            return LayoutLine(layout, item[5], item[6], item[7], item[8], item[4], item[9])
    return None


# --- several files as one stream ------------------------------------------------------------------
_DATED_SUFFIX = re.compile(r"\.(\d{4}-\d\d-\d\d(?:-\d\d(?:-\d\d)?)?)$")
_NUMBERED_SUFFIX = re.compile(r"\.(\d+)$")


def rotation_key(path) -> tuple[str, tuple]:
    """(base name, order within the set): ``state-change.log.2024-01-01-10`` (DailyRollingFileAppender)
    is older than ``state-change.log.2024-01-01-11``, ``.2`` (RollingFileAppender) older than ``.1``,
    and the base file is the newest. A ``.gz`` ending is ignored."""
    name = os.path.basename(os.fspath(path))
    if name.endswith(".gz"):
        name = name[:-3]
    m = _DATED_SUFFIX.search(name)
    if m is not None:
        return name[:m.start()], (0, m.group(1), 0)
    m = _NUMBERED_SUFFIX.search(name)
    if m is not None and "." in name[:m.start()]:
        return name[:m.start()], (1, "", -int(m.group(1)))
    return name, (2, "", 0)


def rotation_sets(paths: Iterable) -> list[list]:
    """The paths grouped into rotated sets (same directory and base name), each ordered oldest first;
    sets in the order of their first path."""
    groups: dict[tuple, list] = {}
    for p in paths:
        base, _ = rotation_key(p)
        groups.setdefault((os.path.dirname(os.path.abspath(os.fspath(p))), base), []).append(p)
    return [rotation_order(g) for g in groups.values()]


def rotation_order(paths: Iterable) -> list:
    """A rotated set's files, oldest first (by name; see :func:`rotation_key`); files of several sets
    come set by set, in the order of their base names."""
    return sorted(paths, key=rotation_key)


def chain(streams: Iterable[Iterable[tuple]]) -> Iterator[tuple]:
    """Several files' items one after the other (a rotated set, oldest first), ``seq`` renumbered."""
    seq = 0
    for items in streams:
        for item in items:
            seq += 1
            yield (item[0], seq) + item[2:]


def _entries(items: Iterable[tuple]) -> Iterator[tuple]:
    """(time, items) per entry: a log line with the lines that continue it. Lines before the first log
    line take the time of nothing (they come first); a log line without a time, its predecessor's."""
    ts, entry = "", []
    for item in items:
        if item[0] == LOG and entry:
            yield ts, entry
            entry = []
        if item[0] == LOG and item[5] is not None:
            ts = item[5]
        entry.append(item)
    if entry:
        yield ts, entry


def merge_by_time(streams: Iterable[Iterable[tuple]]) -> Iterator[tuple]:
    """Several brokers' files as one stream ordered by time, entry by entry (a stack trace stays with
    its line; entries of equal time keep the order of ``streams``), ``seq`` renumbered."""
    merged = heapq.merge(*(_entries(s) for s in streams), key=lambda e: e[0])
    seq = 0
    for _, entry in merged:
        for item in entry:
            seq += 1
            yield (item[0], seq) + item[2:]
