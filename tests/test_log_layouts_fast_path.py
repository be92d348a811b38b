"""The fast paths of audit.log_layouts give the items of the general way, line for line.

Kafka's layout and Strimzi's are read by one compiled pattern each that also splits the message's
bracketed prefix (``LineSplitter`` with its fast paths); a line they do not fit goes the general way
(the layout functions, then ``split_prefix``). Generated lines, most of them near misses of the
patterns (Unicode digits, other timestamps, blank space, brackets and parentheses where the prefix,
the logger and the thread are looked for, the dash layout's `` - ``), must come out as the same items,
read with the fast paths and without them (``LineSplitter(fast_paths=False)``).
"""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from audit.log_layouts import LOG, LineSplitter, split_prefix

STRIMZI_PRIMER = "2024-01-01 00:00:00,000 INFO primer (kafka.Primer) [main]"


def _read(lines: list[str], fast_paths: bool) -> tuple[list[tuple], dict]:
    splitter = LineSplitter(fast_paths=fast_paths)
    return list(splitter.split(lines, "<lines>")), dict(splitter.layouts)


def _same_both_ways(lines: list[str]) -> None:
    fast, fast_layouts = _read(lines, True)
    general, general_layouts = _read(lines, False)
    assert fast == general
    assert fast_layouts == general_layouts


DIGIT = st.sampled_from("0123456789" * 3 + "٣९")   # now and then a digit that is not ASCII


def _digits(n: int):
    return st.lists(DIGIT, min_size=n, max_size=n).map("".join)


VALID_TIMESTAMPS = st.builds(lambda day, sep, second, ms: f"2024-01-{day:02d}{sep}10:00:{second:02d},{ms:03d}",
                             st.integers(1, 28), st.sampled_from([" ", " ", "T"]), st.integers(0, 59),
                             st.integers(0, 999))
ODD_TIMESTAMPS = st.one_of(
    st.builds(lambda y, mo, d, sep, h, mi, s, frac: f"{y}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}",
              _digits(4), _digits(2), _digits(2), st.sampled_from([" ", "T"]), _digits(2), _digits(2),
              _digits(2), st.sampled_from([",000", ",123", ".123", ",12", ",1234", "", ",999Z", ",001+01:00"])),
    st.sampled_from(["2024-1-01 10:00:00,000", "2024-01-01  10:00:00,000"]),
)
LEVELS = st.sampled_from(["INFO"] * 3 + ["DEBUG", "TRACE", "WARN", "WARNING", "ERROR", "FATAL", "info", "NOTICE"])
SPACE = st.sampled_from([" "] * 8 + ["  ", "\t", " \u00a0"])
# Pieces of messages, chosen where the patterns look: prefixes, loggers, threads, the dash layout.
PIECES = st.sampled_from([
    "[Controller id=1 epoch=7] ", "[Controller id=1]: ", "[Topic Deletion Manager 3], ", "[Broker id=0]",
    "[QuorumController id=2] ", "[a[b] ", "[] ", "[x]:", "[x],", "]", "[", "(", ")", " (", ") [", " - ", "-",
    " (state.change.logger)", " (kafka.controller.KafkaController)", " (a)b)", " (a=b)", " (a b)", " ()",
    " [controller-event-thread]", " [a (b]", " []", " [x]y]", "Changed partition t-0 from New to Online",
    "KafkaController:76", "logger", "Foo", "=", ":", ",", " ", "  ", "\t", "\u00a0", "é", "x", "1",
    "Foo - ", "KafkaController:76 - ", "[t] Foo - ", "Foo:? - ", "a.b$C  -\t",
])
MESSAGES = st.lists(PIECES | st.text(alphabet="[]() :,=-\tab1", max_size=6), max_size=8).map("".join)
TAILS = st.sampled_from([""] * 8 + [" ", "\t", " (kafka.Foo) ", "\u00a0"])


def _near_miss(draw, ts: str, level: str, after_ts: str = " ", after_level: str = " ", tail: str = ""):
    """The parts of a line as the layout writes them, or (one time in three) with one of them changed."""
    change = draw(st.integers(0, 8))
    if change == 0:
        ts = draw(ODD_TIMESTAMPS)
    elif change == 1:
        after_ts = draw(SPACE)
    elif change == 2:
        after_level, level = draw(SPACE), draw(LEVELS)
    elif change == 3:
        tail = draw(TAILS)
    return ts, level, after_ts, after_level, tail


@st.composite
def kafka_lines(draw):
    ts, level, after_ts, after_level, tail = _near_miss(draw, draw(VALID_TIMESTAMPS).replace("T", " "),
                                                        draw(LEVELS))
    logger = draw(st.sampled_from(["", " (state.change.logger)", " (state.change.logger)", " (a.B$C)"]))
    return f"[{ts}]{after_ts}{level}{after_level}{draw(MESSAGES)}{logger}{tail}"


@st.composite
def strimzi_lines(draw):
    ts, level, after_ts, after_level, tail = _near_miss(draw, draw(VALID_TIMESTAMPS), draw(LEVELS))
    logger = draw(st.sampled_from([" (state.change.logger)"] * 4 + ["", " (kafka.Foo)", " (a)b)", " (a=b)", "(x)"]))
    thread = draw(st.sampled_from([" [controller-event-thread]"] * 4 + [
        "", " []", " [a (b]", " [a]b]", "[t]", " [kafka-0-metadata-loader-event-handler]"]))
    return f"{ts}{after_ts}{level}{after_level}{draw(MESSAGES)}{logger}{thread}{tail}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(kafka_lines(), min_size=1, max_size=4))
@example(["[2024-01-01 10:00:00,000] INFO [x] (state.change.logger)"])
@example(["[2024-01-01 10:00:00,000] INFO [x]: (L)"])
@example(["[2024-01-01 10:00:00,000] INFO [a (b]c)"])
@example(["[2024-01-01 10:00:00,000] INFO msg (a)b)"])
@example(["[2024-01-01 1٣:00:00,000] INFO msg (a)b)"])
def test_kafka_layout_fast_path_gives_the_general_items(lines):
    _same_both_ways(lines)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(strimzi_lines(), min_size=1, max_size=4))
@example(["2024-01-01 10:00:00,000 INFO Foo - bar (kafka.Foo) [main]"])
@example(["2024-01-01 10:00:00,000 INFO [t] Foo:12 - bar (kafka.Foo) [main]"])
@example(["2024-01-01 10:00:00,000 INFO  two spaces (kafka.Foo) [main]"])
@example(["2024-01-01T10:00:00,000 INFO [Controller id=1] x (a)b) [a (b]"])
def test_strimzi_layout_fast_path_gives_the_general_items(lines):
    _same_both_ways([STRIMZI_PRIMER] + lines)


@settings(max_examples=150, deadline=None)
@given(st.lists(kafka_lines() | strimzi_lines(), min_size=1, max_size=6))
def test_layouts_changing_from_line_to_line(lines):
    _same_both_ways(lines)


def test_the_fast_paths_are_taken_and_split_the_prefix():
    lines = ["[2024-01-01 10:00:00,000] INFO [Controller id=1 epoch=7] Changed x (state.change.logger)",
             STRIMZI_PRIMER,
             "2024-01-01T10:00:00,000 WARN [Broker id=0]: Follower t-0 starts (state.change.logger) [main]"]
    items, layouts = _read(lines, True)
    assert layouts == {"kafka": 1, "strimzi": 2}
    assert [it[0] for it in items] == [LOG, LOG, LOG]
    assert items[0][4:] == ("[Controller id=1 epoch=7] Changed x", "2024-01-01 10:00:00,000", "INFO",
                            "state.change.logger", None, None, "Controller id=1 epoch=7", "Changed x")
    assert items[2][4:] == ("[Broker id=0]: Follower t-0 starts", "2024-01-01 10:00:00,000", "WARN",
                            "state.change.logger", "main", None, "Broker id=0", "Follower t-0 starts")


def test_split_prefix():
    assert split_prefix("[Controller id=1 epoch=7] Changed") == ("Controller id=1 epoch=7", "Changed")
    assert split_prefix("[Controller 1]: Changed") == ("Controller 1", "Changed")
    assert split_prefix("[Topic Deletion Manager 3], Deletion") == ("Topic Deletion Manager 3", "Deletion")
    assert split_prefix("[x]:y") == ("x", "y")
    assert split_prefix("[] y") == ("", "y")
    assert split_prefix("[a[b] y") == (None, "[a[b] y")
    assert split_prefix("[no close") == (None, "[no close")
    assert split_prefix("no prefix [x]") == (None, "no prefix [x]")
