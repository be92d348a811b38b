"""``kcontroller reassign`` as kafka-reassign-partitions.sh (Kafka 3.7's ReassignPartitionsCommand): --generate,
--execute (rollback JSON, --throttle configs), --verify (throttles cleared), --cancel, --list; the computations
against Kafka's own unit-test values; and ``what-if --plan`` / ``--kill-rack``."""
from __future__ import annotations

import json
import os
import random

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import assignment
from controller import reassign_tool as rt
from controller.admin_files import (
    AdminFileError, format_reassignment_json, parse_reassignment_file, parse_topics_to_move_json,
)
from controller.assignment import assign_replicas_to_brokers
from controller.embedding.replay import replay_log, resume_log
from events.log import LogReader
from kcontroller.cli import main
from statemachines.cluster_view import fold_log
from statemachines.leader_and_isr import ReplicaAssignment


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    structlog.reset_defaults()


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def _log_bytes(log: str) -> dict[str, bytes]:
    return {n: open(os.path.join(log, n), "rb").read() for n in sorted(os.listdir(log))}


@pytest.fixture
def log(tmp_path, capsys):
    path = str(tmp_path / "log")
    status, _, _ = run(capsys, "new-cluster", path, "--brokers", 4, "--topic", "t:4:3", "--topic", "one:2:1")
    assert status == 0
    return path


def _write(tmp_path, name: str, doc) -> str:
    f = tmp_path / name
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(f)


def _replicas(log: str, topic: str) -> list[list[int]]:
    topics = {t["name"]: t for t in fold_log(log).to_json_dict()["topics"]}
    return [p["replicas"] for p in topics[topic]["partitions"]]


def _cluster_configs(log: str):
    """The /config znodes of the log's cluster (brokers and topics), read through a replay."""
    cluster = resume_log(log, [].append)
    brokers = {b: cluster.admin.get_entity_configs("brokers", str(b)) for b in range(4)}
    topics = {t: cluster.admin.get_entity_configs("topics", t) for t in ("t", "one")}
    return brokers, topics


# --- the computations, against Kafka's unit tests ----------------------------------------------------------------
def test_move_map_and_throttles_as_kafkas_unit_test():
    """ReassignPartitionsUnitTest.testMoveMap."""
    ra = {("foo", 0): ((1, 2, 3, 4), (4,)), ("foo", 1): ((4, 5, 6, 7, 8), (7, 8)),
          ("foo", 2): ((1, 2, 3, 4), (3, 4)), ("foo", 3): ((1, 2, 3, 4), (3, 4)),
          ("foo", 4): ((1, 2, 3, 4), (3, 4)), ("foo", 5): ((1, 2, 3, 4), (3, 4))}
    proposed = {("foo", 0): (1, 2, 5), ("foo", 2): (3, 4), ("foo", 3): (5, 6), ("foo", 4): (3,),
                ("foo", 5): (3, 4, 5, 6), ("bar", 0): (1, 2, 3)}
    current = {("foo", 0): (1, 2, 3, 4), ("foo", 1): (4, 5, 6, 7, 8), ("foo", 2): (1, 2, 3, 4),
               ("foo", 3): (1, 2, 3, 4), ("foo", 4): (1, 2, 3, 4), ("foo", 5): (1, 2, 3, 4), ("bar", 0): (2, 3, 4),
               ("baz", 0): (1, 2, 3)}
    moves = rt.move_map(ra, proposed, current)
    m = rt.PartitionMove
    assert moves == {"foo": {0: m(frozenset({1, 2, 3}), frozenset({5})), 1: m(frozenset({4, 5, 6}), frozenset({7, 8})),
                             2: m(frozenset({1, 2}), frozenset({3, 4})), 3: m(frozenset({1, 2}), frozenset({5, 6})),
                             4: m(frozenset({1, 2}), frozenset({3})), 5: m(frozenset({1, 2}), frozenset({3, 4, 5, 6}))},
                     "bar": {0: m(frozenset({2, 3, 4}), frozenset({1}))}}
    assert rt.leader_throttles(moves) == {"foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2",
                                          "bar": "0:2,0:3,0:4"}
    assert rt.follower_throttles(moves) == {"foo": "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6", "bar": "0:1"}
    assert rt.reassigning_brokers(moves) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_rack_alternated_list_and_rack_aware_assignment_as_kafkas_unit_test():
    """AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers."""
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assignment.rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    assert assignment.rack_alternated_broker_list({b: r for b, r in racks.items() if b != 5}) == [0, 3, 1, 4, 2]
    assert assignment.assign_replicas_rack_aware(racks, 7, 3, fixed_start_index=0) == [
        (0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2)]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.integers(0, 30), st.sampled_from("abcd"), min_size=1, max_size=12),
       st.integers(1, 40), st.data(), st.integers(0, 2**32))
def test_rack_aware_assignment_spreads_replicas_over_racks(racks, partitions, data, seed):
    rf = data.draw(st.integers(1, len(racks)))
    placed = assignment.assign_replicas(racks, partitions, rf, rng=random.Random(seed))
    assert len(placed) == partitions
    n_racks = len(set(racks.values()))
    for replicas in placed:
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= set(racks)
        assert len({racks[b] for b in replicas}) == min(rf, n_racks)   # every rack, or one replica per rack
    # without racks, the rack-unaware placement the cluster uses for new topics, from the same draws
    plain = assignment.assign_replicas(dict.fromkeys(racks), partitions, rf, rng=random.Random(seed))
    assert plain == assign_replicas_to_brokers(sorted(racks), partitions, rf, rng=random.Random(seed))


def test_broker_metadata_and_mixed_racks():
    assert rt.broker_metadata({0: "a", 1: "b", 2: None}, [0, 1, 7], True) == {0: "a", 1: "b"}
    with pytest.raises(rt.AdminOperationError, match="Not all brokers have rack information. Add --disable-rack"):
        rt.broker_metadata({0: "a", 1: None}, [0, 1], True)
    assert rt.broker_metadata({0: "a", 1: None}, [0, 1], False) == {0: None, 1: None}
    with pytest.raises(rt.AdminOperationError, match="Not all brokers have rack information for replica rack"):
        assignment.assign_replicas({0: "a", 1: None}, 1, 1, rng=random.Random(0))


def test_status_and_list_texts():
    states = rt.partition_states({("t", 0): (1, 2), ("t", 1): (3,), ("t", 2): (1,), ("gone", 0): (1,)},
                                 {("t", 1): (0, 3)}, {("t", 0): (1, 2), ("t", 1): (0, 3), ("t", 2): (2, 0)})
    assert rt.states_text(states) == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition gone-0, but replica set is  rather than 1.",
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition t-2, but replica set is 2,0 rather than 1."]
    # ReassignPartitionsUnitTest.testCurReassignmentsToString
    ongoing = {("foo", 1): ReplicaAssignment((1, 2, 3), (4, 5), (1, 2)), ("foo", 0): ReplicaAssignment((0, 1, 2), (4,), ()),
               ("bar", 0): ReplicaAssignment((2, 3, 0), (), (0,))}
    assert rt.reassignments_text(ongoing) == ["Current partition reassignments:",
                                              "bar-0: replicas: 2,3,0. removing: 0.",
                                              "foo-0: replicas: 0,1,2. adding: 4.",
                                              "foo-1: replicas: 1,2,3. adding: 4,5. removing: 1,2."]
    assert rt.reassignments_text({}) == ["No partition reassignments found."]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.tuples(st.text("abc._-", min_size=1, max_size=5), st.integers(0, 2**31 - 1)),
                       st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5, unique=True), min_size=1,
                       max_size=20))
def test_the_reassignment_json_round_trips(assignment):
    text = format_reassignment_json(assignment)
    assert parse_reassignment_file(text, "f.json") == ({tp: tuple(r) for tp, r in assignment.items()}, {})
    assert " " not in text   # Jackson's compact form, as the tool prints it
    doc = json.loads(text)
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == sorted(assignment)
    assert all(p["log_dirs"] == ["any"] * len(p["replicas"]) for p in doc["partitions"])


def test_reassignment_file_log_dirs_and_topics_file():
    text = ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3],'
            '"log_dirs":["/tmp/a","any","/tmp/c"]}]}')
    assert parse_reassignment_file(text) == ({("foo", 0): (1, 2, 3)}, {("foo", 0, 1): "/tmp/a", ("foo", 0, 3): "/tmp/c"})
    assert parse_topics_to_move_json('{"version":1,"topics":[{"topic":"b"},{"topic":"a"}]}') == ["b", "a"]
    for bad, message in [('{"topics":[{"topic":"a"},{"topic":"a"}]}', "duplicate entries: [a]"),
                         ('{"version":2,"topics":[{"topic":"a"}]}', "Not supported version field value 2"),
                         ('{"topics":[]}', "empty"), ('{"topics":[{"name":"a"}]}', "topics[0]"),
                         ('{"partitions":[]}', 'expected a "topics" array'), ("{", "f.json:1:2: not valid JSON")]:
        with pytest.raises(AdminFileError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
            parse_topics_to_move_json(bad, "f.json")
        assert str(e.value).startswith("f.json")


# --- --generate -----------------------------------------------------------------------------------------------
def test_generate_prints_current_and_proposed_and_appends_nothing(tmp_path, capsys, log):
    topics = _write(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "t"}]})
    before = _log_bytes(log)
    status, out, err = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics,
                           "--broker-list", "0,1,2")
    assert status == 0, err
    lines = out.split("\n")
    assert lines[0] == "Current partition replica assignment"
    assert lines[2] == "" and lines[3] == "Proposed partition reassignment configuration" and lines[5] == ""
    current, proposed = parse_reassignment_file(lines[1])[0], parse_reassignment_file(lines[4])[0]
    assert [list(current[("t", p)]) for p in range(4)] == _replicas(log, "t")
    assert sorted(proposed) == sorted(current)
    assert all(len(r) == 3 and set(r) <= {0, 1, 2} for r in proposed.values())
    assert _log_bytes(log) == before   # nothing appended, no "# ... now holds" line
    # deterministic: the cluster's seed, unless --seed
    assert run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics,
               "--broker-list", "0,1,2")[1] == out
    seeds = {run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics, "--broker-list",
                 "0,1,2,3", "--seed", s)[1].split("\n")[4] for s in range(8)}
    assert len(seeds) > 1


def test_generate_is_rack_aware_when_the_brokers_have_racks(tmp_path, capsys):
    log = str(tmp_path / "log")
    assert run(capsys, "new-cluster", log, "--brokers", 4, "--racks", "a,a,b,b", "--topic", "t:8:2")[0] == 0
    topics = _write(tmp_path, "topics.json", {"topics": [{"topic": "t"}]})
    status, out, _ = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics,
                         "--broker-list", "0,1,2,3")
    assert status == 0
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    proposed = parse_reassignment_file(out.split("\n")[4])[0]
    assert all({racks[b] for b in r} == {"a", "b"} for r in proposed.values())
    # a broker restarted without --rack keeps its rack; one with another rack changes it
    assert run(capsys, "kill-broker", log, "--broker-id", 3)[0] == 0
    assert run(capsys, "advance", log, "--ms", 20_000)[0] == 0
    assert run(capsys, "start-broker", log, "--broker-id", 3)[0] == 0
    assert resume_log(log, [].append).brokers[3].rack == "b"


def test_generate_refusals(tmp_path, capsys, log):
    topics = _write(tmp_path, "topics.json", {"topics": [{"topic": "t"}]})
    status, _, err = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics,
                         "--broker-list", "0,9")
    assert status == 1 and err.strip() == "Error: Replication factor: 3 larger than available brokers: 1."
    missing = _write(tmp_path, "missing.json", {"topics": [{"topic": "nope"}]})
    status, _, err = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", missing,
                         "--broker-list", "0,1,2")
    assert status == 1 and err.strip() == ("Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                                           "Topic nope not found.")
    for args, message in [(["--broker-list", "0,0,1"], "Broker list contains duplicate entries: [0]"),
                          (["--broker-list", "0,x"], "--broker-list must be broker ids like 0,1,2"),
                          ([], 'Missing required argument "[broker-list]"'),
                          (["--broker-list", "0,1,2", "--throttle", "5"],
                           'Option "[throttle]" can\'t be used with action "[generate]"')]:
        status, _, err = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics, *args)
        assert status == 2 and message in err, err


def test_generate_with_mixed_racks_needs_disable_rack_aware(tmp_path, capsys):
    log = str(tmp_path / "log")
    assert run(capsys, "new-cluster", log, "--brokers", 3, "--topic", "t:2:2")[0] == 0
    assert run(capsys, "start-broker", log, "--broker-id", 3, "--rack", "x")[0] == 0
    topics = _write(tmp_path, "topics.json", {"topics": [{"topic": "t"}]})
    status, _, err = run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics,
                         "--broker-list", "0,1,2,3")
    assert status == 1 and err.strip() == ("Error: Not all brokers have rack information. Add --disable-rack-aware in "
                                           "command line to make replica assignment without rack information.")
    assert run(capsys, "reassign", log, "--generate", "--topics-to-move-json-file", topics, "--broker-list",
               "0,1,2,3", "--disable-rack-aware")[0] == 0


# --- --execute, --verify, --cancel, --list ------------------------------------------------------------------------
def test_execute_with_throttle_then_verify_clears_the_throttles(tmp_path, capsys, log):
    before = _replicas(log, "t")
    assert before[0] == [1, 3, 0]   # the placement of seed 0
    plan = _write(tmp_path, "plan.json", {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [2, 3, 0]}, {"topic": "t", "partition": 1, "replicas": before[1][::-1]}]})
    status, out, err = run(capsys, "reassign", log, "--execute", "--reassignment-json-file", plan,
                           "--throttle", 50_000_000)
    assert status == 0, err
    rollback = format_reassignment_json({("t", 0): before[0], ("t", 1): before[1]})
    assert out.split("\n")[:9] == [
        "Current partition replica assignment", "", rollback, "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is "
        "removed.",
        "The inter-broker throttle limit was set to 50000000 B/s",
        "Successfully started partition reassignments for t-0,t-1",
        f"# {log} now holds " + out.split("\n")[8].split(" now holds ")[1]]
    brokers, topics = _cluster_configs(log)
    # t-0 moves 1 -> 2 (sources 1,3,0; destination 2); t-1 is reordered (its replicas are sources, no destination)
    assert topics["t"] == {"leader.replication.throttled.replicas":
                           ",".join(sorted([f"0:{b}" for b in (0, 1, 3)] + [f"1:{b}" for b in before[1]])),
                           "follower.replication.throttled.replicas": "0:2"}
    assert topics["one"] == {}
    for b in range(4):
        assert brokers[b] == {"leader.replication.throttled.rate": "50000000",
                              "follower.replication.throttled.rate": "50000000"}
    described = "\n".join(run(capsys, "describe", log, "--topic", "t")[1].split("\n")[:3])   # when, controller, topic
    assert "leader.replication.throttled.replicas=" in described  # kafka-topics --describe shows them as configs

    status, out, _ = run(capsys, "reassign", log, "--verify", "--reassignment-json-file", plan)
    assert status == 0 and out == ("Status of partition reassignment:\n"
                                   "Reassignment of partition t-0 is still in progress.\n"
                                   "Reassignment of partition t-1 is completed.\n\n")
    assert _cluster_configs(log)[1]["t"]   # not cleared while in progress

    assert run(capsys, "catch-up", log)[0] == 0
    status, out, _ = run(capsys, "reassign", log, "--verify", "--reassignment-json-file", plan)
    assert status == 0 and out.split("\n")[:6] == [
        "Status of partition reassignment:", "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is completed.", "", "Clearing broker-level throttles on brokers 0,1,2,3",
        "Clearing topic-level throttles on topic t"]
    brokers, topics = _cluster_configs(log)
    assert all(c == {} for c in brokers.values()) and topics["t"] == {}
    # the rollback JSON is a file --execute takes: it brings the replicas back
    back = _write(tmp_path, "rollback.json", rollback)
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", back)[0] == 0
    assert run(capsys, "catch-up", log)[0] == 0
    assert _replicas(log, "t")[:2] == before[:2]
    assert replay_log(log).ok


def test_verify_preserve_throttles_and_a_partition_that_differs(tmp_path, capsys, log):
    plan = _write(tmp_path, "plan.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3, 0]}]})
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", plan, "--throttle", 1000)[0] == 0
    assert run(capsys, "catch-up", log)[0] == 0
    before = _log_bytes(log)
    status, out, _ = run(capsys, "reassign", log, "--verify", "--reassignment-json-file", plan, "--preserve-throttles")
    assert status == 0 and out == "Status of partition reassignment:\nReassignment of partition t-0 is completed.\n\n"
    assert _log_bytes(log) == before and _cluster_configs(log)[1]["t"]
    other = _write(tmp_path, "other.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 3, 0]}]})
    status, out, _ = run(capsys, "reassign", log, "--verify", "--reassignment-json-file", other)
    assert out.split("\n")[1] == ("There is no active reassignment of partition t-0, but replica set is 2,3,0 rather "
                                  "than 1,3,0.")
    assert "Clearing topic-level throttles on topic t" in out and _cluster_configs(log)[1]["t"] == {}


def test_execute_refused_while_another_reassignment_runs_unless_additional(tmp_path, capsys, log):
    first = _write(tmp_path, "first.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3, 0]}]})
    second = _write(tmp_path, "second.json", {"partitions": [{"topic": "one", "partition": 0, "replicas": [3]}]})
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", first)[0] == 0
    before = _log_bytes(log)
    status, out, err = run(capsys, "reassign", log, "--execute", "--reassignment-json-file", second, "--throttle", 9)
    assert status == 1 and out == "" and err.strip() == rt.CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE
    assert _log_bytes(log) == before   # a refused command changes nothing
    status, out, _ = run(capsys, "reassign", log, "--execute", "--reassignment-json-file", second, "--throttle", 9,
                         "--additional")
    assert status == 0 and "Successfully started partition reassignment for one-0" in out
    # --additional: the throttles cover the ongoing reassignment too (calculateProposedMoveMap)
    topics = _cluster_configs(log)[1]
    assert topics["t"] == {"leader.replication.throttled.replicas": "0:0,0:1,0:3",
                           "follower.replication.throttled.replicas": "0:2"}
    assert topics["one"] == {"leader.replication.throttled.replicas": "0:0",
                             "follower.replication.throttled.replicas": "0:3"}
    status, out, _ = run(capsys, "reassign", log, "--list")
    assert status == 0 and out == ("Current partition reassignments:\n"
                                   "one-0: replicas: 3,0. adding: 3. removing: 0.\n"
                                   "t-0: replicas: 2,3,0,1. adding: 2. removing: 1.\n")


def test_cancel(tmp_path, capsys, log):
    # t-0 moves; t-1 is reordered, which completes at once: nothing of it to cancel
    plan = _write(tmp_path, "plan.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3, 0]},
                                                        {"topic": "t", "partition": 1, "replicas": [0, 1, 2]}]})
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", plan, "--throttle", 5)[0] == 0
    status, out, _ = run(capsys, "reassign", log, "--cancel", "--reassignment-json-file", plan)
    assert status == 0
    assert out.split("\n")[:3] == [
        "Successfully cancelled partition reassignment for: t-0",
        "None of the specified partition moves are active.Clearing broker-level throttles on brokers 0,1,2,3",
        "Clearing topic-level throttles on topic t"]
    # Kafka's cancel goes back to the replicas minus the adding ones, in the reassignment's order (2,3,0,1 - 2)
    assert _replicas(log, "t")[0] == [3, 0, 1]
    brokers, topics = _cluster_configs(log)
    assert all(c == {} for c in brokers.values()) and topics["t"] == {}
    before = _log_bytes(log)
    status, out, _ = run(capsys, "reassign", log, "--cancel", "--reassignment-json-file", plan, "--preserve-throttles")
    assert status == 0 and out == ("None of the specified partition reassignments are active.\n"
                                   "None of the specified partition moves are active.\n")
    assert _log_bytes(log) == before
    assert run(capsys, "reassign", log, "--list")[1] == "No partition reassignments found.\n"
    assert replay_log(log).ok


def test_reassign_bad_input_is_exit_2_naming_the_file_and_changes_nothing(tmp_path, capsys, log):
    before = _log_bytes(log)
    bad = _write(tmp_path, "bad.json", '{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}')
    cases = [
        (["--execute", "--reassignment-json-file", bad], f"{bad}: partitions[0]: Partition replica list cannot be empty"),
        (["--verify", "--reassignment-json-file", str(tmp_path / "nope.json")], f"cannot read {tmp_path / 'nope.json'}"),
        (["--verify"], 'Missing required argument "[reassignment-json-file]"'),
        (["--verify", "--reassignment-json-file", bad, "--throttle", "5"],
         'Option "[throttle]" can\'t be used with action "[verify]"'),
        (["--list", "--at", "5"], 'Option "[at]" can\'t be used with action "[list]"'),
        (["--execute", "--reassignment-json-file", bad, "--preserve-throttles"], 'Option "[preserve-throttles]"'),
        (["--execute", "--reassignment-json-file", bad, "--throttle", "-2"], "--throttle must be in -1.."),
    ]
    for args, message in cases:
        status, out, err = run(capsys, "reassign", log, *args)
        assert status == 2 and message in err and out == "", (args, err)
    with pytest.raises(SystemExit) as e:   # two actions: argparse's usage error
        main(["reassign", log, "--verify", "--cancel", "--reassignment-json-file", bad])
    assert e.value.code == 2
    assert _log_bytes(log) == before


def test_execute_without_an_action_flag_still_executes(tmp_path, capsys, log):
    plan = _write(tmp_path, "plan.json", {"partitions": [{"topic": "one", "partition": 1, "replicas": [0]}]})
    status, out, _ = run(capsys, "reassign", log, "--reassignment-json-file", plan)
    assert status == 0 and "Successfully started partition reassignment for one-1" in out
    assert out.startswith("Current partition replica assignment\n\n")


def test_throttle_configs_survive_a_snapshot_and_replay(tmp_path, capsys, log):
    plan = _write(tmp_path, "plan.json", {"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3, 0]}]})
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", plan, "--throttle", 7)[0] == 0
    # the next command resumes from the log: the configs are in its cluster
    status, out, _ = run(capsys, "reassign", log, "--verify", "--reassignment-json-file", plan)
    assert "still in progress" in out
    assert _cluster_configs(log)[0][3] == {"leader.replication.throttled.rate": "7",
                                           "follower.replication.throttled.rate": "7"}
    assert [r.entity_name for r in LogReader(log).records() if type(r).__name__ == "ConfigChanged"] == \
        ["t", "t", "0", "0", "1", "1", "2", "2", "3", "3"]


# --- what-if --plan, --kill-rack ------------------------------------------------------------------------------------
def test_what_if_plan_writes_the_reassignment_that_removes_the_risk(tmp_path, capsys, log):
    describe = tmp_path / "describe.txt"
    status, out, _ = run(capsys, "describe", log)
    describe.write_text(out)
    one = _replicas(log, "one")
    victim = one[0][0]
    plan = str(tmp_path / "fix.json")
    status, out, _ = run(capsys, "what-if", describe, "--shutdown", victim, "--plan", plan)
    assert status == 0
    assert f"Wrote the reassignment of 1 partition(s) to {plan}" in out
    assert f"  one-0: {victim} -> " in out
    targets = parse_reassignment_file(open(plan).read(), plan)[0]
    assert list(targets) == [("one", 0)] and targets[("one", 0)][0] != victim
    # the file is one kcontroller reassign (and kafka-reassign-partitions.sh) executes; then the risk is gone
    assert run(capsys, "reassign", log, "--execute", "--reassignment-json-file", plan)[0] == 0
    assert run(capsys, "catch-up", log)[0] == 0
    assert "is completed" in run(capsys, "reassign", log, "--verify", "--reassignment-json-file", plan)[1]
    describe.write_text(run(capsys, "describe", log)[1])
    again = str(tmp_path / "again.json")
    status, out, _ = run(capsys, "what-if", describe, "--shutdown", victim, "--plan", again, "--check")
    assert status == 0 and f"No partition needs a replica moved first: {again} not written." in out
    assert not os.path.exists(again)


def test_what_if_kill_rack_and_plan_in_json(tmp_path, capsys, log):
    describe = tmp_path / "describe.txt"
    describe.write_text(run(capsys, "describe", log)[1])
    plan = str(tmp_path / "fix.json")
    status, out, _ = run(capsys, "what-if", describe, "--racks", "0=a,1=a,2=b,3=b", "--kill-rack", "a",
                         "--plan", plan, "--json")
    assert status == 0
    doc = json.loads(out)
    assert doc["scenario"]["kill"] == [0, 1] and doc["racks"] == {"0": "a", "1": "a", "2": "b", "3": "b"}
    on_a = [(p, r) for p, r in enumerate(_replicas(log, "one")) if r[0] in (0, 1)]
    assert [(e["topic"], e["partition"]) for e in doc["plan"]] == [("one", p) for p, _ in on_a]
    assert all(e["replicas"][0] in (2, 3) for e in doc["plan"]) and doc["plan_file"] == plan
    assert parse_reassignment_file(open(plan).read())[0] == {(e["topic"], e["partition"]): tuple(e["replicas"])
                                                              for e in doc["plan"]}
    status, out, _ = run(capsys, "what-if", describe, "--racks", "0=a,1=a,2=b,3=b", "--kill-rack", "a")
    assert out.startswith("What if: kill 0,1 (rack a)")
    for args, message in [(["--kill-rack", "z", "--racks", "0=a"], "--kill-rack z: no broker has this rack (racks: a)"),
                          (["--kill-rack", "z"], "none: give them with --racks"),
                          (["--racks", "9=a", "--kill", "1"], "racks given for broker(s) 9 not in the description"),
                          (["--kill", "1", "--plan", str(tmp_path)], "expected a file to write")]:
        status, _, err = run(capsys, "what-if", describe, *args)
        assert status == 2 and message in err, err
    with pytest.raises(SystemExit):
        main(["what-if", str(describe), "--racks", "0:a"])
