"""Kafka's logs in every layout users have them in (audit.log_layouts): the same rows as Kafka's own layout.

A generator rewrites a log in Kafka's default layout into each other layout (Strimzi's, ``%c:%L - %m``,
docker-compose and Kubernetes prefixes, JSON lines of Docker, ECS, Logstash and log4j2, CRLF and CR line
ends, gzip, layouts mixed line by line) and the rows read from the rewrite must be the rows of the
original: on the small fixtures committed under tests/data/layouts (written by this generator:
``python tests/test_log_layouts.py --write-fixtures``), and on every real file of ../shared/real-logs
when it is there. Then rotated sets and brokers' files merged by time, interleaved streams, CRI partial
lines, and files none of whose lines is understood (an input error, exit 2).
"""
from __future__ import annotations

import calendar
import gzip
import json
import os
import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from audit.kafka_text_logs import (  # noqa: E402
    KafkaLogError, open_kafka_log, read_kafka_lines, read_kafka_log, read_kafka_logs, rotation_order,
    rotation_sets,
)
from audit.log_layouts import parse_line, rotation_key  # noqa: E402
from audit.rows import TOPIC_CREATED, TRANSITION_FAILED  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "layouts"
BASE = FIXTURES / "base.log"
REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or ROOT.parent / "shared" / "real-logs")
NOT_LOGS = {"INDEX.md", "confluentinc-examples-multiregion-describe-liveobservers.txt",
            "confluentinc-examples-multiregion-describe.txt",
            "ghshu-kafka-notes-describe-leader-none-broker-id-change.txt",
            "yunanjeong-kafka-test-consumer-offsets-reassignment.json"}
REAL_FILES = sorted(p.name for p in REAL_LOGS.glob("*") if p.name not in NOT_LOGS) if REAL_LOGS.is_dir() else []
needs_real_logs = pytest.mark.skipif(not REAL_FILES, reason=f"no real logs at {REAL_LOGS}")

# --- the generator -------------------------------------------------------------------------------------
# An original line in Kafka's layout, taken apart independently of the code under test.
KAFKA_LINE = re.compile(r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d),(?P<ms>\d{3})\] (?P<level>[A-Z]+) "
                        r"(?P<msg>.*?)(?: \((?P<logger>[^\s()=]+)\))?\s*$")
THREAD = "controller-event-thread"


class Entry:
    """A log line of the original with the lines that continue it (stack trace, dump)."""

    def __init__(self, m: re.Match, raw: str):
        self.raw, self.date, self.time, self.ms = raw, m["date"], m["time"], m["ms"]
        self.level, self.msg, self.logger = m["level"], m["msg"], m["logger"]
        self.more: list[str] = []

    @property
    def iso(self) -> str:
        return f"{self.date}T{self.time}"

    @property
    def epoch_ms(self) -> int:
        y, mo, d = map(int, self.date.split("-"))
        h, mi, s = map(int, self.time.split(":"))
        return calendar.timegm((y, mo, d, h, mi, s)) * 1000 + int(self.ms)


def entries(lines: list[str]) -> list:
    """The original's lines as Entry objects and, for lines before any entry or comment lines, strings."""
    out: list = []
    for line in lines:
        m = KAFKA_LINE.match(line) if line.startswith("[") else None
        if m is not None:
            out.append(Entry(m, line))
        elif line.startswith("#") or not line.strip() or not out or not isinstance(out[-1], Entry):
            out.append(line)
        else:
            out[-1].more.append(line)
    return out


def _per_line(fn):
    """A layout that rewrites each physical line (comments kept as they are)."""
    def rewrite(lines):
        out, last = [], None
        for item in entries(lines):
            if isinstance(item, str):
                out.append(item if item.startswith("#") or not item.strip() else fn(item, last))
                continue
            last = item
            out.append(fn(item.raw, item))
            out += [fn(x, item) for x in item.more]
        return out
    return rewrite


def _per_entry(first, more=None):
    """A layout that rewrites each entry's first line (``first(entry)``) and its other lines."""
    def rewrite(lines):
        out = []
        for item in entries(lines):
            if isinstance(item, str):
                out.append(item)
            else:
                out += first(item) if more is None else [first(item)] + [more(x, item) for x in item.more]
        return out
    return rewrite


def _logger_part(e, fmt):
    return fmt.format(e.logger) if e.logger else ""


def strimzi(e):
    return f"{e.date} {e.time},{e.ms} {e.level} {e.msg}{_logger_part(e, ' ({})')} [{THREAD}]"


def strimzi_log4j2(e):
    return f"{e.date}T{e.time},{e.ms} {e.level} {e.msg}{_logger_part(e, ' ({})')} [{THREAD}]"


def kafka_iso(e):
    return f"[{e.iso}.{e.ms}Z] {e.level} {e.msg}{_logger_part(e, ' ({})')}"


def dash(e):
    if not e.logger:                # a line whose logger is printed after its dump: no logger to print
        return f"{e.date} {e.time},{e.ms} {e.level:<5} {e.msg}"
    return f"{e.date} {e.time},{e.ms} {e.level:<5} {e.logger}:76 - {e.msg}"


def dash_thread(e):
    if not e.logger:
        return f"{e.date} {e.time}.{e.ms} {e.level:<5} {e.msg}"
    return f"{e.date} {e.time}.{e.ms} [{THREAD}] {e.level:<5} {e.logger} - {e.msg}"


def dash_short(e):
    """``%d %-5p %c{1}:%L - %m%n``: the logger's last part only."""
    if not e.logger:
        return f"{e.date} {e.time},{e.ms} {e.level:<5} {e.msg}"
    return f"{e.date} {e.time},{e.ms} {e.level:<5} {e.logger.rsplit('.', 1)[-1]}:76 - {e.msg}"


def _cri_ts(e):
    return f"{e.iso}.{e.ms}000000Z" if e is not None else "2024-01-01T00:00:00.000000000Z"


def cri(lines):
    """CRI files: long lines split in a partial (P) and a full (F) part."""
    out = []
    for line in _per_line(lambda x, e: x)(lines):
        if line.startswith("#") or not line.strip():
            out.append(line)
            continue
        ts = "2024-05-16T14:01:01.116000000Z"
        m = KAFKA_LINE.match(line)
        if m is not None:
            ts = f"{m['date']}T{m['time']}.{m['ms']}000000Z"
        if len(line) > 80:
            out.append(f"{ts} stdout P {line[:60]}")
            out.append(f"{ts} stdout F {line[60:]}")
        else:
            out.append(f"{ts} stdout F {line}")
    return out


def _message_and_more(e):
    return "\n".join([e.msg] + e.more)


def ecs(e):
    obj = {"@timestamp": f"{e.iso}.{e.ms}Z", "log.level": e.level, "message": e.msg, "ecs.version": "1.2.0",
           "process.thread.name": THREAD}
    if e.logger:
        obj["log.logger"] = e.logger
    if e.more:
        obj["error.stack_trace"] = "\n".join(e.more)
    return [json.dumps(obj)]


def ecs_nested(e):
    obj = {"@timestamp": f"{e.iso}.{e.ms}Z", "log": {"level": e.level.lower()}, "message": _message_and_more(e),
           "process": {"thread": {"name": THREAD}}, "service": {"name": "kafka"}}
    if e.logger:
        obj["log"]["logger"] = e.logger
    return [json.dumps(obj)]


def logstash(e):
    obj = {"@timestamp": f"{e.iso}.{e.ms}+00:00", "@version": "1", "message": e.msg, "thread_name": THREAD,
           "level": e.level, "level_value": 20000}
    if e.logger:
        obj["logger_name"] = e.logger
    if e.more:
        obj["stack_trace"] = "\n".join(e.more) + "\n"
    return [json.dumps(obj)]


def log4j2_json(e):
    obj = {"instant": {"epochSecond": e.epoch_ms // 1000, "nanoOfSecond": e.epoch_ms % 1000 * 1_000_000},
           "thread": THREAD, "level": e.level, "message": _message_and_more(e), "endOfBatch": False}
    if e.logger:
        obj["loggerName"] = e.logger
    return [json.dumps(obj)]


def docker_json(line, e):
    return json.dumps({"log": line + "\n", "stream": "stdout", "time": _cri_ts(e)})


def mixed(lines):
    """Layouts changing from entry to entry (concatenated files): Kafka's, Strimzi's, dash, kubectl's timestamps,
    ECS. (Not a container's prefix: that names a stream of its own, see the interleaving test.)"""
    rng = random.Random(16)
    out = []
    for item in entries(lines):
        if isinstance(item, str):
            out.append(item)
            continue
        kind = rng.randrange(5)
        if kind == 0:
            out += [item.raw] + item.more
        elif kind == 1:
            out += [strimzi(item)] + item.more
        elif kind == 2:
            out += [dash(item)] + item.more
        elif kind == 3:
            out += [f"{_cri_ts(item)} {x}" for x in [item.raw] + item.more]
        else:
            out += ecs(item)
    return out


# name -> (rewrite of the lines, line end, gzip)
LAYOUTS = {
    "kafka-crlf": (lambda lines: list(lines), "\r\n", False),
    "kafka-cr": (lambda lines: list(lines), "\r", False),
    "kafka-gzip": (lambda lines: list(lines), "\n", True),
    "kafka-iso8601": (_per_entry(kafka_iso, lambda x, e: x), "\n", False),
    "strimzi": (_per_entry(strimzi, lambda x, e: x), "\n", False),
    "strimzi-log4j2": (_per_entry(strimzi_log4j2, lambda x, e: x), "\n", False),
    "dash": (_per_entry(dash, lambda x, e: x), "\n", False),
    "dash-thread": (_per_entry(dash_thread, lambda x, e: x), "\n", False),
    "dash-short-logger": (_per_entry(dash_short, lambda x, e: x), "\n", False),
    "compose": (_per_line(lambda x, e: f"kafka_1  | {x}"), "\n", False),
    "compose-v2-colour": (_per_line(lambda x, e: f"\x1b[36mkafka-1  |\x1b[0m {x}"), "\n", False),
    "compose-strimzi": (lambda lines: [x if x.startswith("#") or not x.strip() else f"kafka-0  | {x}"
                                       for x in _per_entry(strimzi, lambda x, e: x)(lines)], "\n", False),
    "cri": (cri, "\n", False),
    "kubectl-timestamps": (_per_line(lambda x, e: f"{_cri_ts(e)} {x}"), "\n", False),
    "kubectl-prefix": (_per_line(lambda x, e: f"[pod/kafka-0/kafka] {x}"), "\n", False),
    "docker-json": (_per_line(docker_json), "\n", False),
    "ecs": (_per_entry(ecs), "\n", False),
    "ecs-nested": (_per_entry(ecs_nested), "\n", False),
    "logstash": (_per_entry(logstash), "\n", False),
    "log4j2-json": (_per_entry(log4j2_json), "\n", False),
    "mixed": (mixed, "\n", False),
}


def write_variant(lines: list[str], layout: str, path: Path) -> Path:
    rewrite, end, gz = LAYOUTS[layout]
    data = "".join(x + end for x in rewrite(lines)).encode("utf-8")
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def fixture_path(layout: str) -> Path:
    return FIXTURES / f"{layout}.log"


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def meaning(reading) -> list[tuple]:
    """The rows without where they were read (file, line): what the log says, in the order of the lines
    (``seq``; a row waiting for a stack trace in one container's stream is emitted when that stream goes on)."""
    return [(r.kind, r.controller_id, r.controller_epoch, r.time_ms, r.entity, r.topic, r.partition, r.replica,
             r.from_state, r.to_state, r.leader, r.leader_epoch, r.isr, r.replicas, r.unclean, r.error)
            for r in sorted(reading.rows, key=lambda r: r.seq)]


# --- the fixtures (no ../shared needed) -----------------------------------------------------------------
def test_the_base_fixture_reads_as_written():
    reading = read_kafka_log(BASE)
    assert reading.counts.not_understood == 0 and reading.layouts == {"kafka": 13}
    kinds = [r.kind for r in reading.rows]
    assert kinds.count(TRANSITION_FAILED) == 2 and TOPIC_CREATED in kinds
    assert [r.error for r in reading.rows if r.kind == TRANSITION_FAILED] == [
        "StateChangeFailedException", "NoReplicaOnlineException"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_fixture_in_each_layout_gives_the_rows_of_the_original(layout):
    expected = read_kafka_log(BASE)
    path = fixture_path(layout)
    if LAYOUTS[layout][2]:
        path = path.with_name(path.name + ".gz")
    reading = read_kafka_log(path)
    assert meaning(reading) == meaning(expected)
    assert reading.counts.not_understood == 0, reading.not_understood_sample
    assert (reading.era, reading.kraft, reading.version_hints) == (expected.era, expected.kraft,
                                                                   expected.version_hints)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_fixtures_are_what_the_generator_writes(layout, tmp_path):
    written = write_variant(read_lines(BASE), layout, tmp_path / f"{layout}.log")
    committed = FIXTURES / written.name
    if written.suffix == ".gz":
        assert gzip.decompress(written.read_bytes()) == gzip.decompress(committed.read_bytes())
    else:
        assert written.read_bytes() == committed.read_bytes()


def test_the_layout_of_single_lines():
    cases = {
        "[2024-01-01 10:00:00,000] INFO hello (kafka.Foo)": ("kafka", "2024-01-01 10:00:00,000", "INFO", "kafka.Foo",
                                                             None, "hello", None),
        "2024-01-01 10:00:00,000 WARN hello (kafka.Foo) [main]": ("strimzi", "2024-01-01 10:00:00,000", "WARN",
                                                                  "kafka.Foo", "main", "hello", None),
        "2024-01-01T10:00:00.5Z ERROR state.change.logger:76 - [Controller id=0 epoch=1] x":
            ("dash", "2024-01-01 10:00:00,500", "ERROR", "state.change.logger", None,
             "[Controller id=0 epoch=1] x", None),
        "kafka_2  | [2024-01-01 10:00:00,000] INFO hello (kafka.Foo)": ("compose+kafka", "2024-01-01 10:00:00,000",
                                                                        "INFO", "kafka.Foo", None, "hello", "kafka_2"),
        "2024-01-01T00:00:00.000000000Z stdout F [2024-01-01 10:00:00,000] INFO hi (a.B)":
            ("cri+kafka", "2024-01-01 10:00:00,000", "INFO", "a.B", None, "hi", None),
        '{"@timestamp":"2024-01-01T10:00:00.123Z","log.level":"INFO","message":"hi","log.logger":"a.B"}':
            ("json", "2024-01-01 10:00:00,123", "INFO", "a.B", None, "hi", None),
        '{"log":"[2024-01-01 10:00:00,000] INFO hi (a.B)\\n","stream":"stdout"}':
            ("json+kafka", "2024-01-01 10:00:00,000", "INFO", "a.B", None, "hi", None),
        '{"timeMillis":1704103200123,"level":"DEBUG","loggerName":"a.B","message":"hi","thread":"t"}':
            ("json", "2024-01-01 10:00:00,123", "DEBUG", "a.B", "t", "hi", None),
        "kafka 10:41:22.69 INFO  ==> ** Starting Kafka setup **": ("bitnami-script", None, "INFO", "bitnami.kafka",
                                                                   None, "** Starting Kafka setup **", None),
    }
    for text, expected in cases.items():
        assert tuple(parse_line(text)) == expected, text
    deep = '{"message":' * 100_000 + '"x"' + "}" * 100_000        # JSON nested beyond the decoder's recursion
    for text in ("hello world", "| a | b |", "{not json", '{"a": 1}', "\tat x.y(Z.java:1)", "2024-01-01 nothing",
                 deep):
        assert parse_line(text) is None, text


def test_a_stack_trace_stays_with_its_stream_when_containers_interleave():
    ts = "[2024-01-01 10:00:06,000]"
    lines = [f"kafka_1  | {ts} INFO [Controller id=0] 0 successfully elected as the controller. Epoch incremented "
             f"to 1 and epoch zk version is now 1 (kafka.controller.KafkaController)",
             f"kafka_1  | {ts} ERROR [Controller id=0 epoch=1] Controller 0 epoch 1 failed to change state for "
             f"partition t-1 from OfflinePartition to OnlinePartition (state.change.logger)",
             f"kafka_2  | {ts} INFO [Broker id=2] Follower t-0 starts at leader epoch 0 from offset 0 with high "
             f"watermark 0. Previous leader epoch was -1. (state.change.logger)",
             "zookeeper_1  | 2024-01-01 10:00:06,001 [myid:1] - INFO  [main:QuorumPeer@1] - hello",
             "kafka_2  | \tat kafka.server.ReplicaManager.foo(ReplicaManager.scala:1)",
             "kafka_1  | kafka.common.NoReplicaOnlineException: No replica in ISR for partition t-1 is alive",
             "kafka_1  | \tat kafka.controller.OfflinePartitionLeaderSelector.selectLeader(P.scala:75)"]
    reading = read_kafka_lines(lines, source="compose.log")
    failed, = [r for r in reading.rows if r.kind == TRANSITION_FAILED]
    assert (failed.topic, failed.partition, failed.error, failed.position) == ("t", 1, "NoReplicaOnlineException", 2)
    assert reading.counts.continuation == 3 and reading.counts.not_understood == 0
    assert reading.layouts == {"compose+kafka": 3, "compose+zookeeper": 1}


def test_cri_partial_lines_are_joined():
    line = ("[2024-01-01 10:00:08,000] INFO [Controller id=0 epoch=1] Changed partition t-2 from OfflinePartition "
            "to OnlinePartition with state LeaderAndIsr(leader=0, leaderEpoch=3, isr=List(0), zkVersion=4) "
            "(state.change.logger)")
    parts = [line[:30], line[30:90], line[90:]]
    lines = [f"2024-01-01T10:00:08.000000000Z stdout P {parts[0]}",
             "2024-01-01T10:00:08.000000000Z stderr F {not this stream}",
             f"2024-01-01T10:00:08.000000000Z stdout P {parts[1]}",
             f"2024-01-01T10:00:08.000000000Z stdout F {parts[2]}"]
    reading = read_kafka_lines(lines)
    row, = reading.rows
    assert (row.topic, row.partition, row.leader, row.leader_epoch, row.isr, row.position) == ("t", 2, 0, 3, [0], 4)
    assert reading.counts.continuation == 2 and reading.counts.not_understood == 1
    # A file cut in the middle of a line: what there is of it is read, at the last line.
    row, = read_kafka_lines(lines[:1] + lines[2:3] + [f"2024-01-01T10:00:08.000000000Z stdout P {parts[2]}"]).rows
    assert (row.topic, row.partition, row.leader_epoch, row.position) == ("t", 2, 3, 3)


def test_a_file_none_of_whose_lines_is_understood_is_an_input_error(tmp_path):
    from audit.runner import run_audit
    notes = tmp_path / "notes.txt"
    notes.write_text("# a comment\nTopic: t  Partition: 0  Leader: 1  Replicas: 1,2  Isr: 1\nnothing here\n")
    with pytest.raises(KafkaLogError, match=r"not a Kafka log: none of its 2 line\(s\) is a log line in a known "
                                            r"layout \(line 2: 'Topic: t"):
        read_kafka_log(notes)
    comments = tmp_path / "comments.log"
    comments.write_text("# only\n\n# comments\n")
    with pytest.raises(KafkaLogError, match="no log lines to audit: 3 blank or comment"):
        read_kafka_log(comments)
    reader = open_kafka_log(notes)                 # streaming: the reading says so, it does not raise
    assert not reader.reading(list(reader.rows())).understood
    result = run_audit([str(notes), str(BASE)], engine="local")
    assert result.exit_status == 2
    assert [i.error is not None for i in result.inputs] == [True, False]
    assert result.inputs[1].reading.rows and result.report.summary["rows"] > 0   # the other input is audited


JSON_KEYS = ["@timestamp", "timestamp", "time", "timeMillis", "instant", "message", "msg", "log", "log.level", "level",
             "severity", "log.logger", "logger_name", "loggerName", "thread", "process", "error.stack_trace",
             "stack_trace", "exception", "thrown", "error"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
    | st.sampled_from(["INFO", "warn", "2024-01-01T10:00:00.123Z", "[2024-01-01 10:00:00,000] INFO x (a.B)",
                       "\tat a.b(C.java:1)", "x\ny"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(JSON_KEYS + ["name", "epochSecond",
                                                                                            "nanoOfSecond"]),
                                                                 inner, max_size=4),
    max_leaves=8)
PREFIXES = st.sampled_from(["", "kafka_1  | ", "2024-01-01T00:00:00.000000000Z stdout F ",
                            "2024-01-01T00:00:00.000000000Z stdout P ", "2024-01-01T00:00:00Z ",
                            "[pod/kafka-0/kafka] ", "\x1b[36mk |\x1b[0m "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.dictionaries(st.sampled_from(JSON_KEYS), JSON_VALUES, max_size=6).map(json.dumps),
    st.tuples(PREFIXES, st.sampled_from(read_lines(BASE)) | st.text(max_size=60)).map("".join),
), max_size=12))
def test_any_line_in_any_layout_is_read_without_raising(lines):
    reading = read_kafka_lines(lines)
    assert reading.counts.total >= len(lines)


# --- several files as one ----------------------------------------------------------------------------------
def test_rotated_sets_are_ordered_oldest_first():
    names = ["state-change.log", "state-change.log.1", "state-change.log.2.gz", "state-change.log.10",
             "controller.log.2024-01-01-11", "controller.log.2024-01-01-09.gz", "controller.log"]
    assert rotation_order(names) == ["controller.log.2024-01-01-09.gz", "controller.log.2024-01-01-11",
                                     "controller.log", "state-change.log.10", "state-change.log.2.gz",
                                     "state-change.log.1", "state-change.log"]
    assert [rotation_order(s) for s in rotation_sets(names)] == [
        ["state-change.log.10", "state-change.log.2.gz", "state-change.log.1", "state-change.log"],
        ["controller.log.2024-01-01-09.gz", "controller.log.2024-01-01-11", "controller.log"]]
    assert rotation_key("server.log")[0] == "server.log" and rotation_key("kafka-2.8.0.log")[0] == "kafka-2.8.0.log"


def _chunks(lines: list[str], n: int) -> list[list[str]]:
    """The lines cut in ``n`` pieces at entries whose time is above every time before it and below every
    time after it (so that merging by time gives the original order back)."""
    items = entries(lines)
    times = [x.raw[1:24] if isinstance(x, Entry) else None for x in items]
    cuts = []
    for k in range(1, len(items)):
        before = [t for t in times[:k] if t]
        after = [t for t in times[k:] if t]
        if times[k] and before and after and max(before) < min(after):
            cuts.append(k)
    picked = [cuts[len(cuts) * i // n] for i in range(1, n)] if len(cuts) >= n else cuts[:1]
    out, start = [], 0
    for k in [*picked, len(items)]:
        part = []
        for x in items[start:k]:
            part += [x] if isinstance(x, str) else [x.raw] + x.more
        out.append(part)
        start = k
    return out


def _check_sets(lines: list[str], tmp_path: Path) -> None:
    expected = meaning(read_kafka_lines(lines))
    pieces = _chunks(lines, 3)
    # A rotated set: the oldest piece in the highest number.
    names = [f"state-change.log.{len(pieces) - 1 - i}" if i < len(pieces) - 1 else "state-change.log"
             for i in range(len(pieces))]
    paths = []
    for name, piece in zip(names, pieces):
        (tmp_path / name).write_text("".join(x + "\n" for x in piece))
        paths.append(tmp_path / name)
    shuffled = paths[::-1]
    ordered = rotation_order(shuffled)
    assert ordered == paths
    reading = read_kafka_logs(ordered)
    assert meaning(reading) == expected
    assert {r.source for r in reading.rows} <= {str(p) for p in paths}
    assert [r.seq for r in reading.rows] == sorted(r.seq for r in reading.rows)
    # Brokers' files, each in its own layout, merged by time.
    layouts = ["strimzi", "compose", "ecs"]
    brokers = []
    for i, piece in enumerate(pieces):
        d = tmp_path / f"broker-{i}"
        d.mkdir()
        brokers.append(write_variant(piece, layouts[i % 3], d / "state-change.log"))
    merged = read_kafka_logs(brokers[::-1], merge=True)
    assert meaning(merged) == expected
    assert merged.sources == tuple(str(p) for p in brokers[::-1])
    # A broker's rotated set among the histories merged: its files in order, as one history.
    assert meaning(read_kafka_logs([brokers[2], [brokers[0], brokers[1]]], merge=True)) == expected


def test_a_rotated_set_and_brokers_files_merged_by_time_read_as_the_whole(tmp_path):
    _check_sets(read_lines(BASE), tmp_path)


# --- the real files in every layout ---------------------------------------------------------------------
@needs_real_logs
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_real_file_in_each_layout_gives_the_rows_of_the_original(layout, tmp_path):
    for name in REAL_FILES:
        original = read_kafka_log(REAL_LOGS / name)
        lines = read_lines(REAL_LOGS / name)
        path = write_variant(lines, layout, tmp_path / name)
        reading = read_kafka_log(path)
        assert meaning(reading) == meaning(original), name
        assert reading.counts.not_understood == 0, (name, reading.not_understood_sample)
        assert (reading.era, reading.kraft, reading.version_hints) == (
            original.era, original.kraft, original.version_hints), name


@needs_real_logs
@pytest.mark.parametrize("name", ["vishalbb27-kafka-3.2.1-state-change-part3.log",
                                  "andreastraut-kafka-2.8.0-state-change-2021-04-28-part1.log",
                                  "bitterdone-k2.3.1-state-change-deletion-retry.log",
                                  "citypulse-kafka-1.0-controller.log"])
def test_real_files_as_rotated_sets_and_merged_brokers(name, tmp_path):
    _check_sets(read_lines(REAL_LOGS / name), tmp_path)


def write_fixtures() -> None:
    lines = read_lines(BASE)
    for layout in LAYOUTS:
        for old in (fixture_path(layout), fixture_path(layout).with_name(f"{layout}.log.gz")):
            old.unlink(missing_ok=True)
        path = write_variant(lines, layout, fixture_path(layout))
        if path.suffix == ".gz":                     # a reproducible gzip: no name, no time in its header
            path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), mtime=0))
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-fixtures"]:
        sys.exit("usage: python tests/test_log_layouts.py --write-fixtures")
    write_fixtures()
