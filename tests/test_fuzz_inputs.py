"""Property-based fuzzing of every input parser and of the commands (issue 17): any input is parsed or refused with
the parser's own error type, never another exception; a command exits 0, 1 or 2 without a traceback, and a command
refused with exit 2 leaves the log directory byte-identical."""
from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout

import pytest
import structlog
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from audit.kafka_text_logs import KafkaLogError, iter_text_lines, read_kafka_lines
from controller.admin_files import AdminFileError, parse_election_json, parse_reassignment_json
from events.log import LogError, LogReader
from events.segment import SEGMENT_HEADER_SIZE, encode_segment_header, segment_name
from kcontroller.cli import main
from sim.describe_parser import DescriptionError, parse_description
from sim.scenario import ScenarioError, parse_scenario
from test_robustness import tree_hash

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))

# JSON-ish values: what a hostile file may hold where Kafka's tools expect their JSON.
json_leaf = (st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80)
             | st.floats(allow_nan=False) | st.text(max_size=8))
json_value = st.recursive(json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                           max_size=4), max_leaves=20)
entry = st.fixed_dictionaries({}, optional={
    "topic": st.sampled_from(["t", "one", "", "nope", "a/b", "x" * 300]) | json_value,
    "partition": st.integers(min_value=-2, max_value=2**40) | json_value,
    "replicas": st.lists(st.integers(min_value=-2, max_value=2**33), max_size=5) | json_value,
    "log_dirs": st.lists(st.sampled_from(["any", "/d"]), max_size=4) | json_value,
})
plan = st.fixed_dictionaries({"partitions": st.lists(entry, max_size=4) | json_value},
                             optional={"version": st.sampled_from([1, 2, "1", None])})


def text_variants(doc) -> st.SearchStrategy[bytes]:
    return st.sampled_from(["utf-8", "utf-16", "latin-1"]).map(
        lambda enc: json.dumps(doc, ensure_ascii=False).encode(enc, "replace"))


# --- parsers ---------------------------------------------------------------------------------------------------

@FAST
@given(st.binary(max_size=300) | st.text(max_size=300) | plan.flatmap(text_variants))
def test_admin_json_parsers_refuse_with_their_error(data):
    for parse in (parse_reassignment_json, parse_election_json):
        try:
            parse(data, "f.json")
        except AdminFileError as e:
            assert str(e).startswith("f.json")


@FAST
@given(plan)
def test_parsed_plans_hold_only_java_ints(doc):
    try:
        out = parse_reassignment_json(json.dumps(doc), "f.json")
    except AdminFileError:
        return
    for (topic, partition), replicas in out.items():
        assert isinstance(topic, str) and 0 <= partition < 2**31
        assert all(-2**31 <= b < 2**31 for b in replicas) and len(set(replicas)) == len(replicas)


VALID_SCENARIO = """\
name: fuzz
duration: 30s
cluster: {brokers: [1, 2, 3]}
topics:
  - {name: t, partitions: 2, replication_factor: 2}
workload:
  producers: [{topics: t, rate_per_s: 10}]
steps:
  - {at: 5s, action: kill_broker, broker: 1}
  - {at: 10s, action: start_broker, broker: 1}
  - {at: 12s, action: reassign, json: {version: 1, partitions: [{topic: t, partition: 0, replicas: [2, 3]}]}}
"""

yaml_noise = st.sampled_from(["\0", "\x07", "\t", "[", "]", "{", "}", ":", "- ", "&a ", "*a", "<<: ", "!!python/int ",
                              "99999999999999999999999", "-1", "1e309", "null", "\n  ", "'", '"', "#", "%YAML 1.1\n",
                              "---\n", "\ufeff", "\udcff"])


@st.composite
def mutated_scenario(draw) -> str:
    text = VALID_SCENARIO
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:i] + draw(yaml_noise | st.text(max_size=4)) + text[i + cut:]
    return text


@FAST
@given(mutated_scenario() | st.text(max_size=200))
def test_scenario_parser_refuses_with_scenario_error(text):
    try:
        parse_scenario(text, "s.yaml")
    except ScenarioError as e:
        assert str(e).startswith("s.yaml:")


@FAST
@given(st.text(max_size=400) | st.lists(st.sampled_from([
    "Topic: t\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: ",
    "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2",
    "\tTopic: t\tPartition: 99999999999999999999\tLeader: none\tReplicas: \tIsr: x",
    "\tTopic: t\tPartition: -1\tLeader: 1\tReplicas: 1,1\tIsr: 3", '{"version":1,"partitions":[', "\0", "\r"]),
    max_size=6).map("\n".join))
def test_describe_parser_refuses_with_description_error(text):
    try:
        parse_description(text, "d.txt")
    except DescriptionError:
        pass


@FAST
@given(st.binary(max_size=400) | st.lists(st.sampled_from([
    b"[2024-01-01 00:00:00,000] TRACE [Controller id=0 epoch=1] Changed partition t-0 from NewPartition to "
    b"OnlinePartition with state LeaderAndIsr(leader=0, leaderEpoch=0, isr=List(0), zkVersion=0) "
    b"(state.change.logger)", b"\x1f\x8b\x08", b"\r", b"\0", b"\xff\xfe", b"[2024-99-99 99:99:99,999] TRACE"]),
    max_size=6).map(b"\n".join))
def test_kafka_log_reader_refuses_with_kafka_log_error(data):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "state-change.log")
        with open(path, "wb") as f:
            f.write(data)
        try:
            read_kafka_lines(list(iter_text_lines(path)), source=path)
        except KafkaLogError:
            pass


@FAST
@given(st.binary(max_size=200), st.integers(0, 300))
def test_event_log_reader_refuses_with_log_error(noise, keep):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, segment_name(0))
        with open(path, "wb") as f:
            f.write((encode_segment_header(0) + noise)[:max(keep, SEGMENT_HEADER_SIZE // 2)])
        try:
            list(LogReader(d).records())
        except LogError:
            pass


# --- the commands ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base_log(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz") / "log"
    assert _main(["new-cluster", str(d), "--brokers", "3", "--topic", "t:3:2", "--topic", "one:1:1"])[0] == 0
    return str(d)


def _main(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            status = main(argv)
    except SystemExit as e:   # argparse: a usage error
        status = e.code
    finally:
        structlog.reset_defaults()
    return status, err.getvalue()


small_int = st.integers(-3, 5) | st.sampled_from([2**31, 2**63, -2**63, 10**30])
name = st.sampled_from(["t", "one", "new", "", "a/b", "..", "x" * 250, "t\0", "\u00e9"])
config = st.tuples(st.sampled_from(["min.insync.replicas", "unclean.leader.election.enable", "num.partitions",
                                    "inter.broker.protocol.version", "foo", "min.insync.replica"]),
                   st.sampled_from(["1", "0", "abc", "true", "yes", "3.7", "", "9" * 30])).map("=".join)

commands = st.one_of(
    st.tuples(st.just("create-topic"), st.builds(lambda n, p, r, c: ["--topic", n, "--partitions", str(p),
                                                                       "--replication-factor", str(r), "--config", c],
                                                  name, small_int, small_int, config)),
    st.tuples(st.just("delete-topic"), name.map(lambda n: ["--topic", n])),
    st.tuples(st.sampled_from(["start-broker", "kill-broker", "shutdown-broker"]),
              small_int.map(lambda b: ["--broker-id", str(b)])),
    st.tuples(st.just("advance"), small_int.map(lambda ms: ["--ms", str(ms)])),
    st.tuples(st.just("catch-up"), st.just([])),
    st.tuples(st.just("elect-leaders"), st.builds(lambda k, n, p: ["--election-type", k, "--topic", n, "--partition",
                                                                   str(p)],
                                                  st.sampled_from(["preferred", "unclean", "PREFERRED", "x"]), name,
                                                  small_int)),
    st.tuples(st.just("reassign-file"), plan),
    st.tuples(st.just("elect-file"), plan),
    st.tuples(st.sampled_from(["log", "describe", "replay"]), st.just([])),
)


def _run_command(log: str, command: str, args, workdir: str) -> tuple[int, str]:
    if command in ("reassign-file", "elect-file"):
        f = os.path.join(workdir, "plan.json")
        with open(f, "w") as fh:
            json.dump(args, fh)
        argv = (["reassign", log, "--reassignment-json-file", f] if command == "reassign-file" else
                ["elect-leaders", log, "--election-type", "preferred", "--path-to-json-file", f])
    else:
        argv = [command, log, *args]
    return _main(argv)


def _check_commands(base_log: str, steps) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        log = os.path.join(workdir, "log")
        shutil.copytree(base_log, log)
        for command, args in steps:
            before = tree_hash(log)
            status, err = _run_command(log, command, args, workdir)
            assert status in (0, 1, 2), (command, args, status, err)
            assert "Traceback" not in err
            if status == 2:
                assert tree_hash(log) == before, (command, args, err)
                assert err.strip(), (command, args)
        assume(True)


@FAST
@given(st.lists(commands, min_size=1, max_size=3))
def test_commands_exit_0_1_or_2_and_a_refused_one_changes_nothing(base_log, steps):
    _check_commands(base_log, steps)


@pytest.mark.slow
@SLOW
@given(st.lists(commands, min_size=1, max_size=6))
def test_commands_exit_0_1_or_2_and_a_refused_one_changes_nothing_long(base_log, steps):
    _check_commands(base_log, steps)


@FAST
@given(st.lists(st.tuples(st.sampled_from(["--brokers", "--topic", "--config", "--seed"]),
                          st.sampled_from(["0", "3", "-1", "1000000000", "t:1:1", "t:0:1", "a/b:1:1", "t:2:9", "x",
                                           "min.insync.replicas=abc", "num.partitions=2", str(2**64)])), max_size=3))
def test_new_cluster_exits_cleanly_and_leaves_nothing_when_refused(options):
    with tempfile.TemporaryDirectory() as workdir:
        log = os.path.join(workdir, "log")
        status, err = _main(["new-cluster", log, *[x for pair in options for x in pair]])
        assert status in (0, 2) and "Traceback" not in err
        if status != 0:
            assert os.listdir(workdir) == []


@FAST
@given(mutated_scenario())
def test_simulate_exits_cleanly_and_leaves_no_log_when_refused(text):
    with tempfile.TemporaryDirectory() as workdir:
        f = os.path.join(workdir, "s.yaml")
        with open(f, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        try:
            parse_scenario(text, f)
        except ScenarioError:
            status, err = _main(["simulate", f, "--log-dir", os.path.join(workdir, "out")])
            assert status == 2 and "Traceback" not in err
            assert sorted(os.listdir(workdir)) == ["s.yaml"]
