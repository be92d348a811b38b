"""``describe`` as Kafka 3.7's ``kafka-topics.sh --describe`` prints it: reassignments (``Adding Replicas:``,
``Removing Replicas:``, TopicCommand's replication factor), topics queued for deletion (``MarkedForDeletion:
true``), TopicCommand's filters, and the simulator's describe step agreeing with ``kcontroller describe``."""
from __future__ import annotations

import json
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcontroller.cli import main
from statemachines.cluster_view import (
    ClusterView, DescribeOptions, PartitionDescription, describe_topic_lines, fold_log,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def reassigning(tmp_path, capsys):
    """A 4-broker cluster whose orders-0 is being moved from 0,1,2 to 0,2,3 (broker 3 not caught up yet)."""
    log = tmp_path / "ops"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0,
                                                              "replicas": [0, 2, 3]}]}))
    assert run(capsys, "new-cluster", log, "--brokers", 4, "--topic", "orders:2:3",
               "--config", "min.insync.replicas=2")[0] == 0
    assert run(capsys, "reassign", log, "--reassignment-json-file", plan)[0] == 0
    return log


def test_a_reassignment_prints_adding_and_removing_replicas_and_the_replication_factor_being_left(
        reassigning, capsys):
    code, out, _ = run(capsys, "describe", reassigning)
    assert code == 0
    assert out.splitlines()[0].startswith("# at ") and out.splitlines()[1].startswith("# controller ")
    assert out.splitlines()[2:] == [
        "Topic: orders\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: ",
        "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0,2,3,1\tIsr: 0,1,2\tAdding Replicas: 3"
        "\tRemoving Replicas: 1",
        "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3",
    ]
    # RF 3 (4 replicas - 1 adding) with an ISR of 3: not under-replicated, as TopicCommand says
    assert run(capsys, "describe", reassigning, "--under-replicated-partitions")[1].count("\n") == 2   # the comments


def test_a_completed_reassignment_prints_no_reassignment_columns(reassigning, capsys):
    assert run(capsys, "catch-up", reassigning)[0] == 0
    out = run(capsys, "describe", reassigning)[1]
    assert "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0,2,3\tIsr: 0,2,3\n" in out
    assert "Adding" not in out


def test_the_reassignment_survives_the_view_snapshot(reassigning):
    view = fold_log(reassigning)
    assert view.reassignments == {"orders": {0: ((3,), (1,))}}
    assert ClusterView.from_snapshot(view.to_snapshot()).reassignments == view.reassignments
    assert len(msgpack.unpackb(view.to_snapshot())) == 16
    view.reassignments.clear()
    assert len(msgpack.unpackb(view.to_snapshot())) == 15   # the bytes of earlier versions


def test_deprecated_at_still_reads_an_offset_and_says_so(reassigning, capsys):
    code, old, err = run(capsys, "describe", reassigning, "--at", 5)
    assert code == 0 and "deprecated, use --offset OFFSET" in err
    assert run(capsys, "describe", reassigning, "--offset", 5)[1] == old


def test_topic_filter_is_kafkas_include_list(reassigning, capsys):
    assert run(capsys, "describe", reassigning, "--topic", "ord.*")[1].count("Partition:") == 2
    assert run(capsys, "describe", reassigning, "--topic", "'orders'")[1].count("Partition:") == 2  # quotes dropped
    assert run(capsys, "describe", reassigning, "--topic", "x, orders")[1].count("Partition:") == 2
    code, _, err = run(capsys, "describe", reassigning, "--topic", "order")
    assert code == 2 and "Topic 'order' does not exist as expected" in err
    assert run(capsys, "describe", reassigning, "--json", "--topic", "orders")[0] == 2


def test_a_stuck_deletion_is_listed_marked_for_deletion_and_the_simulator_agrees(tmp_path, capsys):
    log = tmp_path / "deletion"
    code, out, _ = run(capsys, "simulate", EXAMPLES / "deletion-stuck-on-dead-broker.yaml", "--log-dir", log,
                       "--json")
    assert code == 0
    summary = json.loads(out)
    step = next(o for o in summary["observations"] if o["kind"] == "describe")
    described = run(capsys, "describe", log, "--time", int(step["at_s"] * 1000), "--topic", "old-events")[1]
    when, *rest = described.splitlines()
    assert when.startswith("# at 2024-01-01T00:00:") and rest == step["lines"]
    assert step["lines"][1] == ("Topic: old-events\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: "
                                "\tMarkedForDeletion: true")
    assert all(line.split("\t")[6] == "MarkedForDeletion: true" for line in step["lines"][2:])


P = PartitionDescription
BROKERS = {0, 1, 2, 3}


def lines(partitions, options=DescribeOptions(), min_isr=2, configs=None):
    return list(describe_topic_lines("t", partitions, configs or {}, min_isr, False, BROKERS, BROKERS, options))


def test_filters_follow_topic_commands_partition_description():
    parts = [P(0, 0, (0, 1, 2), (0, 1, 2)),              # healthy
             P(1, 1, (1, 2, 3), (1, 2)),                 # under-replicated, at min ISR
             P(2, -1, (2, 3, 0), (2,)),                  # no leader: unavailable, under min ISR
             P(3, 7, (7, 0, 1), (7, 0, 1)),              # a leader DescribeCluster does not list
             P(4, 0, (0, 2, 3, 1), (0, 1, 2), (3,), (1,))]  # reassigning: RF 3, ISR 3

    def numbers(**flags):
        return [int(line.split("\t")[2].split(": ")[1]) for line in lines(parts, DescribeOptions(**flags))
                if line.startswith("\t")]

    assert numbers() == [0, 1, 2, 3, 4]
    assert numbers(under_replicated=True) == [1, 2]
    assert numbers(unavailable=True) == [2, 3]
    assert numbers(under_min_isr=True) == [2, 3]
    assert numbers(at_min_isr=True) == [1]
    assert numbers(under_replicated=True, unavailable=True) == [1, 2, 3]
    assert not any(line.startswith("Topic:") for line in lines(parts, DescribeOptions(at_min_isr=True)))


def test_topics_with_overrides_prints_only_topic_lines_of_topics_with_overrides():
    parts = [P(0, 0, (0, 1), (0, 1))]
    assert lines(parts, DescribeOptions(topics_with_overrides=True)) == []
    assert lines(parts, DescribeOptions(topics_with_overrides=True), configs={"retention.ms": "1"}) == [
        "Topic: t\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: retention.ms=1"]


replica_sets = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)


@st.composite
def partitions(draw):
    out = []
    for p in range(draw(st.integers(1, 6))):
        replicas = draw(replica_sets)
        isr = tuple(r for r in replicas if draw(st.booleans()))
        leader = draw(st.sampled_from([-1, *replicas]))
        moving = draw(st.booleans()) and len(replicas) > 1
        out.append(P(p, leader, tuple(replicas), isr, tuple(replicas[-1:]) if moving else None,
                     tuple(replicas[:1]) if moving else None))
    return out


@settings(max_examples=200, deadline=None)
@given(partitions(), st.integers(1, 3), st.sets(st.sampled_from(
    ["under_replicated", "unavailable", "under_min_isr", "at_min_isr"]), min_size=1))
def test_several_filters_print_the_partitions_any_one_of_them_prints(parts, min_isr, flags):
    together = lines(parts, DescribeOptions(**dict.fromkeys(flags, True)), min_isr)
    alone = {line for flag in flags for line in lines(parts, DescribeOptions(**{flag: True}), min_isr)}
    assert set(together) == alone and len(together) == len(set(together))
    everything = lines(parts, min_isr=min_isr)
    assert [line for line in everything[1:] if line in alone] == together   # in partition order
