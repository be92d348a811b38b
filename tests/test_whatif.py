"""What-if from a real cluster: the describe/JSON parser (every real sample, the formats of Kafka 0.8 to
4.x) and the scenarios (the RF=1 incident of ../shared/seeds/004_34d7787fd39b218f.txt, min.insync.replicas,
unclean elections, reproduction of non-preferred leaders, leaderless partitions and reassignments)."""
from __future__ import annotations

import argparse
import json
import pathlib

import pytest
import structlog

from controller.embedding.cluster import Cluster
from kcontroller import cli_whatif
from sim.describe_parser import (
    FORMAT_DESCRIBE, FORMAT_REASSIGNMENT_JSON, DescriptionError, load_description, parse_configs, parse_description,
)
from sim.whatif import WhatIfError, what_if

REAL_LOGS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "real-logs"
REQUIRED_SAMPLES = [
    "confluentinc-examples-multiregion-describe.txt",
    "confluentinc-examples-multiregion-describe-liveobservers.txt",
    "ghshu-kafka-notes-describe-leader-none-broker-id-change.txt",
    "yunanjeong-kafka-test-consumer-offsets-reassignment.json",
]


def _real(name: str) -> str:
    path = REAL_LOGS / name
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return str(path)


def _all_describe_samples() -> list[str]:
    found = {p.name for p in REAL_LOGS.glob("*describe*.txt")} | {p.name for p in REAL_LOGS.glob("*.json")}
    return sorted(found | set(REQUIRED_SAMPLES))


@pytest.fixture(autouse=True)
def _quiet_logging():
    """The controller logs its failed elections at ERROR; keep them off the test output, uncached."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50), cache_logger_on_first_use=False)
    yield
    structlog.configure(**saved)


# --- parsing: the real samples -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", _all_describe_samples())
def test_every_real_sample_parses(name):
    desc = load_description(_real(name))
    assert desc.topics and desc.partitions()
    for p in desc.partitions():
        assert p.replicas and set(p.isr) <= set(p.replicas)
        assert p.leader is None or p.leader in p.replicas
    assert desc.broker_ids()


def test_confluent_multiregion_sample():
    desc = load_description(_real("confluentinc-examples-multiregion-describe.txt"))
    assert desc.format == FORMAT_DESCRIBE and desc.runs == 4 and desc.run == 4
    assert desc.broker_ids() == [1, 2, 3, 4]
    assert desc.unparsed_count > 0 and desc.unparsed_sample[0][1] == "```"
    sync = desc.topics["multi-region-sync"]
    assert (sync.partition_count, sync.replication_factor) == (1, 4)
    assert sync.configs["min.insync.replicas"] == "1"
    constraints = json.loads(sync.configs["confluent.placement.constraints"])   # commas inside a value kept
    assert [r["constraints"]["rack"] for r in constraints["replicas"]] == ["west", "east"]
    assert (sync.partitions[0].leader, sync.partitions[0].isr) == (1, (3, 4, 2, 1))
    async0 = desc.topics["multi-region-async"].partitions[0]
    assert (async0.replicas, async0.isr, async0.observers, async0.offline) == ((2, 1, 3, 4), (2, 1), (3, 4), ())

    failed = load_description(_real("confluentinc-examples-multiregion-describe.txt"), run=2)
    single = failed.topics["single-region"].partitions[0]
    assert (single.leader, single.replicas, single.isr, single.offline) == (None, (2, 1), (1,), (2, 1))
    assert failed.topics["multi-region-sync"].partitions[0].leader == 3
    with pytest.raises(DescriptionError, match="run 5 asked, the file holds 4"):
        load_description(_real("confluentinc-examples-multiregion-describe.txt"), run=5)


def test_confluent_liveobservers_sample():
    desc = load_description(_real("confluentinc-examples-multiregion-describe-liveobservers.txt"))
    async0 = desc.topics["multi-region-async"].partitions[0]
    assert (async0.leader, async0.replicas, async0.isr, async0.live_observers) == (1, (1, 2, 4, 3), (2, 1), (4, 3))
    # The last run was pasted with its tabs turned into spaces.
    assert desc.topics["multi-region-sync"].partitions[0].isr == (3, 4, 2, 1)


def test_ghshu_sample_leader_none_and_wrapped_configs():
    path = _real("ghshu-kafka-notes-describe-leader-none-broker-id-change.txt")
    broken = load_description(path, run=1)
    assert broken.broker_ids() == [1001, 1002, 1003]
    parts = broken.topics["__consumer_offsets"].partitions
    assert len(parts) == 11 and all(p.leader is None and p.isr == (1003,) for p in parts.values())
    assert parts[0].replicas == (1002, 1003, 1001)
    healthy = load_description(path)
    topic = healthy.topics["__consumer_offsets"]
    assert healthy.broker_ids() == [0, 1, 2] and topic.partition_count == 50
    assert topic.configs == {"compression.type": "producer", "cleanup.policy": "compact", "flush.ms": "1000",
                             "segment.bytes": "104857600", "flush.messages": "10000",
                             "max.message.bytes": "1000012", "retention.bytes": "1073741824"}
    assert healthy.unparsed_count == 6 and (23, "...") in healthy.unparsed_sample
    assert any("PartitionCount 50 but 11" in n for n in healthy.notes)


def test_yunanjeong_reassignment_json_sample():
    desc = load_description(_real("yunanjeong-kafka-test-consumer-offsets-reassignment.json"))
    assert desc.format == FORMAT_REASSIGNMENT_JSON
    parts = desc.topics["__consumer_offsets"].partitions
    assert len(parts) == 50
    assert (parts[2].leader, parts[2].replicas, parts[2].isr) == (2, (2, 0), (2, 0))


# --- parsing: formats of every version, noise, errors -------------------------------------------------------
EDGE = """\
WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide.
[2024-03-01 10:00:00,000] WARN [AdminClient clientId=adminclient-1] Connection to node -1 could not be established. (org.apache.kafka.clients.NetworkClient)
Topic:old\tPartitionCount:2\tReplicationFactor:2\tConfigs:
\ttopic: old\tpartition: 0\tleader: 1\treplicas: 1,2\tisr: 1,2
\tTopic: old\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: 2

Topic: new\tTopicId: 3tXeRvvNRz6c7fRmWkK0qA\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,leader.replication.throttled.replicas=0:1,0:2,cleanup.policy=compact
\tTopic: new\tPartition: 0\tLeader: -1\tReplicas: 1,2,3\tIsr: 3\tElr: 2\tLastKnownElr: 1
\tTopic: new\tPartition: 1\tLeader: 2\tReplicas: 2,3,4,1\tIsr: 1,2,3\tAdding Replicas: 4\tRemoving Replicas: 1
    Topic: new  Partition: 2  Leader: 3  Replicas: 3,1,2  Isr: 3,1,2  Offline:   MarkedForDeletion: true
Error while executing topic command : something
"""


def test_edge_formats():
    desc = parse_description(EDGE, source="edge.txt")
    old, new = desc.topics["old"], desc.topics["new"]
    assert (old.partition_count, old.replication_factor, old.configs) == (2, 2, {})
    assert (old.partitions[0].leader, old.partitions[0].replicas, old.partitions[0].isr) == (1, (1, 2), (1, 2))
    assert (old.partitions[1].leader, old.partitions[1].isr) == (None, (2,))
    assert new.topic_id == "3tXeRvvNRz6c7fRmWkK0qA"
    assert new.configs == {"min.insync.replicas": "2", "leader.replication.throttled.replicas": "0:1,0:2",
                           "cleanup.policy": "compact"}
    p0, p1, p2 = (new.partitions[n] for n in range(3))
    assert (p0.leader, p0.isr, p0.elr, p0.last_known_elr) == (None, (3,), (2,), (1,))
    assert (p1.replicas, p1.adding_replicas, p1.removing_replicas) == ((2, 3, 4, 1), (4,), (1,))
    assert p1.being_reassigned
    assert (p2.leader, p2.isr, p2.offline, p2.marked_for_deletion) == (3, (3, 1, 2), (), True)
    assert desc.unparsed_count == 3
    assert [n for n, _ in desc.unparsed_sample] == [1, 2, 11]


def test_configs_split_only_before_a_name():
    assert parse_configs('a=1,b={"x":[1,2],"y":"z"},c=0:1,0:2,') == {"a": "1", "b": '{"x":[1,2],"y":"z"}',
                                                                     "c": "0:1,0:2"}
    assert parse_configs("") == {}


def test_headerless_under_replicated_output_and_repeated_partitions():
    text = ("\tTopic: t\tPartition: 3\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
            "\tTopic: t\tPartition: 5\tLeader: 2\tReplicas: 2,1\tIsr: 2\n")
    desc = parse_description(text)
    assert sorted(desc.topics["t"].partitions) == [3, 5] and desc.topics["t"].partition_count is None


def test_nothing_parses_names_file_and_line():
    with pytest.raises(DescriptionError, match=r"notes\.md:2: no kafka-topics.sh --describe line.*'hello world'"):
        parse_description("# a comment\nhello world\nLeader: what\n", source="notes.md")
    with pytest.raises(DescriptionError, match="empty"):
        parse_description("\n\n", source="empty.txt")
    with pytest.raises(DescriptionError, match=r"bad\.json:3:\d+: not valid JSON"):
        parse_description('# header\n{"version": 1,\n "partitions": [}\n', source="bad.json")


def test_reassign_tool_output_uses_the_current_assignment():
    text = ("Current partition replica assignment\n\n"
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}\n\n'
            "Proposed partition reassignment configuration\n\n"
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4],"log_dirs":["any","any"]}]}\n')
    desc = parse_description(text, source="generate.out")
    assert desc.format == FORMAT_REASSIGNMENT_JSON and desc.topics["t"].partitions[0].replicas == (1, 2)


def test_kcontroller_describe_output_round_trips():
    cluster = Cluster(seed=0)
    cluster.start_brokers([0, 1, 2])
    cluster.create_topic("t", assignment=[[1, 0, 2], [0, 1, 2]], configs={"min.insync.replicas": 2})
    cluster.create_topic("one", assignment=[[2]])
    cluster.kill_broker(2, at=1_000)
    cluster.advance_to(30_000)
    desc = parse_description("\n".join(cluster.view.describe_lines()), source="kcontroller-describe")
    assert desc.live_brokers == (0, 1)
    report = what_if(desc, kill=[1])
    assert report.offline_in_description == [2]
    assert report.deviations == []
    by_tp = {p.tp: p for p in report.partitions}
    assert by_tp[("one", 0)].offline_before and by_tp[("t", 0)].before_leader == 1
    assert by_tp[("t", 0)].after_leader == 0 and by_tp[("t", 0)].under_min_isr_after


# --- what-if ------------------------------------------------------------------------------------------------
def _describe(topics: dict) -> str:
    """kafka-topics.sh --describe text: {topic: (configs, [(leader, replicas, isr), ...])}."""
    lines = []
    for name, (configs, parts) in topics.items():
        cfg = ",".join(f"{k}={v}" for k, v in configs.items())
        lines.append(f"Topic: {name}\tPartitionCount: {len(parts)}\tReplicationFactor: {len(parts[0][1])}\t"
                     f"Configs: {cfg}")
        for n, (leader, replicas, isr) in enumerate(parts):
            lines.append(f"\tTopic: {name}\tPartition: {n}\tLeader: {leader}\tReplicas: "
                         f"{','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}")
    return "\n".join(lines) + "\n"


INCIDENT_004 = _describe({
    # RF=1 "to save replication traffic", as in the post.
    "dw_test_kafka_0816000": ({}, [(1, [1], [1]), (2, [2], [2]), (3, [3], [3]), (1, [1], [1])]),
    "orders": ({"min.insync.replicas": 2}, [(1, [1, 2, 3], [1, 2, 3]), (2, [2, 3, 1], [2, 3, 1]),
                                           (3, [3, 1, 2], [3, 1, 2])]),
})


@pytest.mark.parametrize("how", ["shutdown", "kill"])
def test_004_rf1_partitions_on_the_broker_go_offline_rf3_move(how):
    desc = parse_description(INCIDENT_004, source="004")
    report = what_if(desc, **{how: [1]})
    by_tp = {p.tp: p for p in report.partitions}
    assert report.deviations == []
    for n in (0, 3):    # RF=1 on broker 1: offline, leader -1, the ISR keeps broker 1 (the post's /state)
        p = by_tp[("dw_test_kafka_0816000", n)]
        assert (p.offline_before, p.offline_after, p.after_leader, p.after_isr) == (False, True, -1, (1,))
    assert not by_tp[("dw_test_kafka_0816000", 1)].offline_after
    moved = by_tp[("orders", 0)]
    assert (moved.before_leader, moved.after_leader, moved.after_isr) == (1, 2, (2, 3))
    assert moved.election == ("controlled_shutdown" if how == "shutdown" else "offline")
    assert not moved.under_min_isr_after and not moved.unclean
    assert report.offline_after() == [("dw_test_kafka_0816000", 0), ("dw_test_kafka_0816000", 3)]
    assert report.rf1_on_affected == [("dw_test_kafka_0816000", 0, 1), ("dw_test_kafka_0816000", 3, 1)]
    assert "reassign before shutting down" in report.to_json_dict()["rf1_advice"]
    totals = report.totals()
    assert (totals["newly_offline"], totals["leaders_moved"], totals["unclean_elections"]) == (2, 1, 0)
    if how == "shutdown":
        assert report.controlled_shutdown == {1: True}    # RF=1 partitions are never in the answer
    text = "\n".join(report.lines())
    assert "GOES OFFLINE" in text and "RF=1 partitions on brokers 1" in text


def test_min_insync_replicas_two_brokers_lost():
    desc = parse_description(INCIDENT_004, source="004")
    report = what_if(desc, kill=[1, 2])
    orders = [p for p in report.partitions if p.topic == "orders"]
    assert all(p.min_isr == 2 and not p.offline_after and p.after_isr == (3,) and p.under_min_isr_after
               for p in orders)
    assert all(not p.under_min_isr_before for p in orders)
    # The RF=1 topic has no config: Kafka's default 1, or the default given.
    rf1 = [p for p in report.partitions if p.topic != "orders"]
    assert {p.min_isr for p in rf1} == {1}
    given = what_if(desc, kill=[1, 2], min_insync_replicas=3)
    assert {p.min_isr for p in given.partitions if p.topic != "orders"} == {3}
    assert report.totals()["newly_under_min_isr"] == 3 and report.totals()["newly_offline"] == 3
    assert report.under_min_isr_after() == [("orders", 0), ("orders", 1), ("orders", 2)]


def test_json_path_consumer_offsets_losing_a_broker():
    desc = load_description(_real("yunanjeong-kafka-test-consumer-offsets-reassignment.json"))
    report = what_if(desc, kill=[0], min_insync_replicas=2)
    totals = report.totals()
    assert (totals["partitions"], totals["offline_after"], totals["newly_under_min_isr"]) == (50, 0, 33)
    p0 = next(p for p in report.partitions if p.partition == 0)
    assert (p0.before_leader, p0.after_leader, p0.after_isr) == (0, 1, (1,))
    assert report.deviations == []


def test_unclean_election_only_when_enabled():
    text = _describe({"t": ({}, [(1, [1, 2, 3], [1])]),
                      "u": ({"unclean.leader.election.enable": "true"}, [(1, [1, 2, 3], [1])])})
    desc = parse_description(text)
    clean = {p.topic: p for p in what_if(desc, kill=[1]).partitions}
    assert clean["t"].offline_after and not clean["t"].unclean
    assert (clean["u"].after_leader, clean["u"].unclean) == (2, True)        # the topic's own config
    dirty = {p.topic: p for p in what_if(desc, kill=[1], unclean=True).partitions}
    assert (dirty["t"].after_leader, dirty["t"].unclean, dirty["t"].election) == (2, True, "offline_unclean")


def test_non_preferred_leader_and_isr_order_are_reproduced():
    desc = parse_description(_describe({"t": ({}, [(3, [1, 2, 3], [3, 1]), (2, [2, 3, 1], [2, 3, 1])])}))
    report = what_if(desc, kill=[3])
    p0, p1 = report.partitions
    assert report.deviations == []
    assert (p0.replicas, p0.before_leader, p0.before_isr) == ((1, 2, 3), 3, (3, 1))
    assert (p0.after_leader, p0.after_isr) == (1, (1,))          # first live ISR replica in assignment order
    assert (p1.before_leader, p1.after_leader, p1.after_isr) == (2, 2, (2, 1))


def test_leaderless_and_offline_brokers_are_reproduced():
    desc = load_description(_real("confluentinc-examples-multiregion-describe.txt"), run=2)
    report = what_if(desc, kill=[3])
    assert report.offline_in_description == [1, 2]
    assert [d for d in report.deviations if "observers" not in d] == []
    by_topic = {p.topic: p for p in report.partitions}
    single = by_topic["single-region"]
    assert (single.offline_before, single.before_isr, single.offline_after) == (True, (1,), True)
    sync = by_topic["multi-region-sync"]
    assert (sync.before_leader, sync.before_isr, sync.after_leader, sync.after_isr) == (3, (3, 4), 4, (4,))
    assert report.controller_before == 3 and report.controller_after == 4


def test_west_region_failure_matches_what_confluent_saw():
    """Run 4 (all healthy) with brokers 1 and 2 killed gives the state run 2 of the same file shows."""
    path = _real("confluentinc-examples-multiregion-describe.txt")
    report = what_if(load_description(path, run=1), kill=[1, 2])
    seen = {p.topic: p for p in load_description(path, run=2).partitions()}
    for p in report.partitions:
        assert (None if p.offline_after else p.after_leader) == seen[p.topic].leader
        assert p.after_isr == seen[p.topic].isr


def test_ongoing_reassignment_mixed_rf_and_gaps():
    text = ("Topic: r\tPartitionCount: 1\tReplicationFactor: 3\tConfigs:\n"
            "\tTopic: r\tPartition: 0\tLeader: 1\tReplicas: 2,3,4,1\tIsr: 1,2,3\tAdding Replicas: 4\t"
            "Removing Replicas: 1\n"
            "Topic: m\tPartitionCount: 4\tReplicationFactor: 2\tConfigs:\n"
            "\tTopic: m\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
            "\tTopic: m\tPartition: 1\tLeader: 3\tReplicas: 2,3,4\tIsr: 3,2\n"
            "\tTopic: m\tPartition: 3\tLeader: 4\tReplicas: 4\tIsr: 4\n")
    report = what_if(parse_description(text), shutdown=[4])
    by_tp = {p.tp: p for p in report.partitions}
    assert sorted(by_tp) == [("m", 0), ("m", 1), ("m", 3), ("r", 0)]          # the placeholder m-2 not reported
    assert [d for d in report.deviations if "placeholders" not in d] == []
    assert any("partitions 2 not described" in d for d in report.deviations)
    assert (by_tp[("r", 0)].replicas, by_tp[("r", 0)].before_leader) == ((2, 3, 4, 1), 1)
    assert (by_tp[("m", 1)].replicas, by_tp[("m", 1)].before_isr) == ((2, 3, 4), (3, 2))
    assert by_tp[("m", 3)].offline_after and report.rf1_on_affected == [("m", 3, 4)]


def test_deterministic():
    desc = parse_description(INCIDENT_004)
    assert what_if(desc, kill=[2], shutdown=[1]).to_json_dict() == what_if(desc, kill=[2], shutdown=[1]).to_json_dict()


def test_scenario_errors():
    desc = parse_description(INCIDENT_004)
    with pytest.raises(WhatIfError, match="broker.*9 not in the description"):
        what_if(desc, kill=[9])
    with pytest.raises(WhatIfError, match="both killed and shut down"):
        what_if(desc, kill=[1], shutdown=[1])


# --- the command ---------------------------------------------------------------------------------------------
def _cli(capsys, *argv) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="kcontroller")
    parser.add_argument("--log-level", default="critical")
    cli_whatif.add_parser(parser.add_subparsers(dest="command", required=True))
    status = cli_whatif.cmd_what_if(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_text_json_and_check(tmp_path, capsys):
    f = tmp_path / "describe.txt"
    f.write_text(INCIDENT_004)
    status, out, _ = _cli(capsys, "what-if", str(f), "--shutdown", "1")
    assert status == 0 and "Offline partitions:        0 -> 2  (+2)" in out
    assert "dw_test_kafka_0816000-0" in out and "reassign before shutting down" in out
    status, out, _ = _cli(capsys, "what-if", str(f), "--kill", "1,2", "--json", "--check")
    doc = json.loads(out)
    assert status == 1 and doc["under_min_isr_after"] == ["orders-0", "orders-1", "orders-2"]
    assert doc["scenario"]["kill"] == [1, 2] and doc["totals"]["newly_offline"] == 3
    status, _, err = _cli(capsys, "what-if", str(f), "--kill", "7")
    assert status == 2 and "not in the description" in err
    status, _, err = _cli(capsys, "what-if", str(tmp_path / "missing.txt"), "--kill", "1")
    assert status == 2 and "cannot read" in err
