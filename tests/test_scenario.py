"""The scenario format (sim/scenario.py): the examples load, malformed scenarios fail with the
file, the line and what was expected, times parse, and scenarios survive a dump and a parse."""
from __future__ import annotations

import pathlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.scenario as scenario_module
from sim.scenario import (
    ACTIONS, QUORUM_VERSIONS, ClusterSpec, NetworkSpec, ProducerSpec, QuorumSpec, Scenario, ScenarioError, Step,
    TopicSpec, WorkloadSpec, cut_links, dump_scenario, format_time, load_scenario, main, parse_scenario, parse_time,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


# --- the examples ----------------------------------------------------------------------------------

def test_there_is_an_example_for_each_story() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "rf1-broker-kill.yaml", "rf1-reassign-before-shutdown.yaml", "unclean-election-on.yaml",
        "unclean-election-off.yaml", "controller-failover-zombie.yaml", "deletion-stuck-on-dead-broker.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_loads_and_tells_its_story(path: pathlib.Path) -> None:
    s = load_scenario(path)
    assert s.name == path.stem
    assert s.source == str(path)
    header = path.read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert header.startswith("# ") and "What to look for" in header and re.search(r"the reports? of seeds? 0", header)
    # (the KRaft observer story needs five minutes after its kill: the observer session timeout)
    assert 3 <= len(s.cluster.brokers) <= 5 and 10_000 <= s.duration_ms <= 330_000
    assert s.workload is not None and s.steps
    assert parse_scenario(dump_scenario(s), "dumped") == s


def test_unclean_examples_differ_only_in_the_topic_config_and_the_expectations() -> None:
    on, off = (load_scenario(ROOT / "examples" / f"unclean-election-{x}.yaml") for x in ("on", "off"))
    assert on.topics[0].configs == {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    assert off.topics[0].configs == {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    assert on.topics[0].replication_factor == off.topics[0].replication_factor == 3
    assert on.workload == off.workload and on.workload.producers[0].acks == -1
    assert [s for s in on.steps if s.action not in ("expect", "describe")] == \
        [s for s in off.steps if s.action not in ("expect", "describe")]


def test_zombie_example_expires_the_controller_session_with_a_delay() -> None:
    s = load_scenario(ROOT / "examples" / "controller-failover-zombie.yaml")
    expire = next(step for step in s.steps if step.action == "expire_session")
    assert expire.args == {"broker": None, "controller": True, "notice_after_ms": 10_000}


def test_a_reference_example_parses_to_these_data_classes() -> None:
    s = load_scenario(ROOT / "examples" / "rf1-reassign-before-shutdown.yaml")
    assert s.cluster == ClusterSpec((0, 1, 2), {}, {}, ())
    assert s.network == NetworkSpec(1, 0)
    assert s.topics[0] == TopicSpec("app-logs", 6, 1, ((0,), (1,), (2,), (0,), (1,), (2,)), {})
    assert s.workload == WorkloadSpec((ProducerSpec(("app-logs",), 300.0, 1, 512, 0, 120_000),
                                       ProducerSpec(("orders",), 50.0, -1, 1024, 0, 120_000)))
    reassign = s.steps[0]
    assert (reassign.at_ms, reassign.action, reassign.line) == (20_000, "reassign", 42)
    assert reassign.args == {"reassignment": {("app-logs", 1): (2,), ("app-logs", 4): (0,)}}
    assert reassign.note == "kafka-reassign-partitions.sh --execute"
    assert s.steps[1].args == {"partition": ("app-logs", 1), "leader": None, "isr": None, "replicas": (2,),
                               "topic": None, "exists": None, "controller": None}


def test_the_command_line_checks_files(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration: 1m\ncluster: {brokers: [1]}\nsteps: [{at: 1s, action: boom}]\n")
    assert main([str(EXAMPLES[0])]) == 0
    assert main([str(EXAMPLES[0]), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{EXAMPLES[0]}: ok: ")
    assert out[-1] == f"{bad}:4: steps[0].action: unknown action 'boom'; expected one of: {', '.join(ACTIONS)}"


# --- malformed scenarios --------------------------------------------------------------------------

BASE = """\
name: t
duration: 60s
cluster:
  brokers: [1, 2, 3]
topics:
  - name: orders
    partitions: 2
    replication_factor: 3
"""


def quorum(*lines: str) -> str:
    """BASE with a quorum section (its first key on line 10)."""
    return BASE + "quorum:\n" + "".join(f"  {line}\n" for line in lines)


def steps(*lines: str) -> str:
    """BASE with a steps section (its first step on line 10)."""
    return BASE + "steps:\n" + "".join(f"  {line}\n" for line in lines)


MALFORMED = [
    # YAML itself
    ("", "1: expected a scenario: a mapping with name, duration, cluster, ...; the file is empty"),
    ("- a\n", "1: scenario: expected a scenario: a mapping with name, duration, cluster, ..., got a list"),
    ("name: t\n  bad: [\n", "2: not valid YAML: mapping values are not allowed here"),
    ("name: a\n---\nname: b\n", "2: not valid YAML: expected a single document in the stream but found another "
                                "document"),
    ("name: a\nname: b\n", "2: scenario: duplicate key 'name' (first given at line 1)"),
    (BASE + "workload:\n  producers:\n    - topics: [orders]\n      rate_per_s: 10\n      rate_per_s: 20\n",
     "13: workload.producers[0]: duplicate key 'rate_per_s' (first given at line 12)"),
    (BASE + "    configs: &c {min.insync.replicas: 2}\n  - name: other\n    configs:\n      <<: *c\n",
     "12: topics[1].configs: merge keys (<<) are not supported; write the keys out"),
    # top level
    ("name: t\ncluster: {brokers: [1]}\n", "1: scenario: missing 'duration'"),
    (BASE + "stepz: []\n", "9: scenario: unknown key 'stepz'; did you mean 'steps'? expected one of: name, "
                           "description, seed, duration, start_time, cluster, network, quorum, topics, workload, steps"),
    (BASE.replace("name: t", "name: ''"), "1: name: expected a non-empty name, got an empty string"),
    (BASE + "seed: -1\n", "9: seed: expected an integer >= 0, got -1"),
    (BASE + "seed: 0x10\n", "9: seed: expected an integer >= 0 written in decimal, got 0x10"),
    (BASE.replace("60s", "60 sec"),
     "2: duration: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m, got '60 sec'"),
    (BASE.replace("60s", "-5s"), "2: duration: a time cannot be negative, got '-5s'"),
    (BASE.replace("60s", "0.5ms"), "2: duration: a time must be a whole number of milliseconds, got '0.5ms'"),
    (BASE.replace("60s", "1.5"),
     "2: duration: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m, got 1.5"),
    (BASE.replace("60s", "1:30"),
     "2: duration: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m, got 1:30"),
    (BASE.replace("60s", "0"), "2: duration: expected a time > 0"),
    # cluster
    (BASE.replace("[1, 2, 3]", "[1, 2, 2]"), "4: cluster.brokers[2]: broker 2 is listed twice"),
    (BASE.replace("[1, 2, 3]", "[1, -2]"), "4: cluster.brokers[1]: expected a broker id (an integer >= 0), got -2"),
    (BASE.replace("[1, 2, 3]", "[]"), "4: cluster.brokers: expected a list of broker ids (integers >= 0), got an "
                                      "empty list"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  down: [1, 2, 3]"),
     "5: cluster.down: expected at least one broker up at time 0"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  racks: {1: a, 2: b}"),
     "5: cluster.racks: expected a rack for every broker or for none; missing 3"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  racks: {1: a, 2: b, 4: c}"),
     "5: cluster.racks: expected a broker id of the cluster (1, 2, 3), got 4"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  configs:\n    unclean.leader.elections.enable: true"),
     "6: cluster.configs.unclean.leader.elections.enable: unknown config 'unclean.leader.elections.enable'; "
     "did you mean 'unclean.leader.election.enable'?"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  configs:\n    zookeeper.session.timeout.ms: 18s"),
     "6: cluster.configs.zookeeper.session.timeout.ms: expected an integer, got '18s'"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  configs:\n    unclean.leader.election.enable: 1"),
     "6: cluster.configs.unclean.leader.election.enable: expected true or false, got 1"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  configs:\n    log.dirs: [a, b]"),
     "6: cluster.configs.log.dirs: expected a value (a string, a number or a boolean), got a list"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  flavour: zk"),
     "5: cluster: unknown key 'flavour'; expected one of: brokers, down, racks, configs"),
    (BASE + "network: {latency: fast}\n",
     "9: network.latency: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m, got 'fast'"),
    # topics
    (BASE.replace("replication_factor: 3", "replication_factor: 4"),
     "8: topics[0].replication_factor: expected at most 3, the brokers up at 0s, got 4"),
    (BASE.replace("replication_factor: 3", "replication_factor: 0"),
     "8: topics[0].replication_factor: expected an integer >= 1, got 0"),
    (BASE.replace("name: orders", "name: 'a b'"),
     "6: topics[0].name: expected a legal topic name: Topic name \"a b\" is illegal, it contains a character "
     "other than ASCII alphanumerics, '.', '_' and '-'"),
    (BASE + "  - name: orders\n", "9: topics[1].name: expected a new topic; 'orders' already exists (line 6)"),
    (BASE.replace("name: orders", "name: my.topic") + "  - name: my_topic\n",
     "9: topics[1].name: topic 'my_topic' collides with existing topic 'my.topic' ('.' and '_' collide in "
     "metric names)"),
    (BASE.replace("partitions: 2\n    replication_factor: 3", "assignment: [[1, 2], [2, 7]]"),
     "7: topics[0].assignment[1][1]: expected a broker id of the cluster (1, 2, 3), got 7"),
    (BASE.replace("partitions: 2\n    replication_factor: 3", "assignment: [[1, 2], [2]]"),
     "7: topics[0].assignment[1]: expected 2 replicas (all partitions of a topic have the same replication "
     "factor), got 1"),
    (BASE.replace("partitions: 2\n    replication_factor: 3", "assignment: [[1, 1]]"),
     "7: topics[0].assignment[0][1]: broker 1 is listed twice"),
    (BASE.replace("replication_factor: 3", "assignment:\n      - [1, 2]"),
     "7: topics[0].partitions: expected 1, the partitions of the assignment, got 2"),
    (BASE + "    configs: {min.insync.replica: 2}\n",
     "9: topics[0].configs.min.insync.replica: unknown config 'min.insync.replica'; did you mean "
     "'min.insync.replicas'?"),
    (BASE + "    configs: {min.insync.replicas: two}\n",
     "9: topics[0].configs.min.insync.replicas: expected an integer, got 'two'"),
    # workload
    (BASE + "workload:\n  producers:\n    - topics: orders\n      rate_per_s: 10\n      acks: 2\n",
     "13: workload.producers[0].acks: expected 0, 1 or all (or -1), got 2"),
    (BASE + "workload:\n  producers:\n    - topics: [nope]\n      rate_per_s: 10\n",
     "11: workload.producers[0].topics[0]: expected a topic of the scenario (declared in topics or created by a "
     "step: orders), got 'nope'"),
    (BASE + "workload:\n  producers:\n    - topics: orders\n      rate_per_s: 0\n",
     "12: workload.producers[0].rate_per_s: expected a number of messages per second > 0, got 0"),
    (BASE + "workload:\n  producers:\n    - topics: orders\n",
     "11: workload.producers[0]: missing 'rate_per_s'"),
    (BASE + "workload:\n  producers:\n    - topics: orders\n      rate_per_s: 1\n      stop: 2m\n",
     "13: workload.producers[0].stop: expected a time after start (0s) and at most the duration (1m), got 2m"),
    (BASE + "workload:\n  - topics: orders\n",
     "10: workload: expected a mapping with producers, got a list"),
    # steps: the step itself
    (steps("- at: 1s"), "10: steps[0]: missing 'action'"),
    (steps("- at: 1s", "  action: kill_brokr", "  broker: 1"),
     "11: steps[0].action: unknown action 'kill_brokr'; did you mean 'kill_broker'? expected one of: "
     + ", ".join(ACTIONS)),
    (steps("- at: 1s", "  action: kill_broker", "  brokr: 1"),
     "12: steps[0]: unknown key 'brokr'; did you mean 'broker'? expected one of: at, action, note, broker, "
     "controller"),
    (steps("- action: heal_network"), "10: steps[0]: missing 'at'"),
    (steps("- at: 10s", "  action: heal_network", "- at: 5s", "  action: heal_network"),
     "12: heal_network.at: expected steps in time order: 5s is before the previous step's 10s (line 10)"),
    (steps("- at: 61s", "  action: heal_network"),
     "10: heal_network.at: expected a time within the duration (1m), got 61s"),
    (steps("- at: 10s", "  action: heal_network", "- at: +55s", "  action: heal_network"),
     "12: heal_network.at: expected a time within the duration (1m), got 65s"),
    (steps("- at: -1", "  action: heal_network"), "10: heal_network.at: a time cannot be negative, got '-1'"),
    (steps("- at: 1s", "  action: note", "  text: ''"), "12: note.text: expected a string, got an empty string"),
    # brokers and their liveness
    (steps("- at: 1s", "  action: kill_broker"), "10: kill_broker: missing 'broker' or 'controller'"),
    (steps("- at: 1s", "  action: kill_broker", "  broker: 7"),
     "12: kill_broker.broker: expected a broker id of the cluster (1, 2, 3), got 7"),
    (steps("- at: 1s", "  action: kill_broker", "  broker: '1'"),
     "12: kill_broker.broker: expected a broker id of the cluster (1, 2, 3), got '1'"),
    (steps("- at: 1s", "  action: kill_broker", "  broker: 1", "  controller: true"),
     "13: kill_broker: expected one of 'broker' or 'controller', not 'broker' and 'controller'"),
    (steps("- at: 1s", "  action: kill_broker", "  controller: false"),
     "12: kill_broker.controller: expected true (or give 'broker' instead)"),
    (steps("- at: 10s", "  action: kill_broker", "  broker: 1", "- at: 15s", "  action: kill_broker", "  broker: 1"),
     "15: kill_broker: expected a running broker; broker 1 is not running at 15s (down since 10s, line 10)"),
    (steps("- at: 10s", "  action: controlled_shutdown", "  broker: 2", "- at: 15s", "  action: expire_session",
           "  broker: 2"),
     "15: expire_session: expected a running broker; broker 2 is not running at 15s (down since 10s, line 10)"),
    (steps("- at: 10s", "  action: start_broker", "  broker: 1"),
     "12: start_broker.broker: expected a broker that is not running; broker 1 is running at 10s (since the "
     "start)"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  down: [3]").replace("replication_factor: 3",
                                                                                  "replication_factor: 2")
     + "steps:\n  - at: 1s\n    action: fail_log_dir\n    broker: 3\n",
     "13: fail_log_dir: expected a running broker; broker 3 is not running at 1s (in cluster.down)"),
    (BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3]\n  configs: {log.dirs: '/d1,/d2'}")
     + "steps:\n  - at: 1s\n    action: fail_log_dir\n    broker: 3\n    dir: /d3\n",
     "14: fail_log_dir.dir: expected one of the cluster's log.dirs (/d1, /d2), got '/d3'"),
    (steps("- at: 1s", "  action: expire_session", "  broker: 1", "  notice_after: soon"),
     "13: expire_session.notice_after: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, "
     "2m, got 'soon'"),
    # network and replication
    (steps("- at: 10s", "  action: partition_network", "  groups: [[1, 2], [2, zk]]"),
     "12: partition_network.groups[1][0]: 2 is already in group 0; the groups must not overlap"),
    (steps("- at: 10s", "  action: partition_network", "  groups: [[1, 2, 3, zk, clients]]"),
     "12: partition_network.groups: expected at least two groups; one group of every node cuts nothing"),
    (steps("- at: 10s", "  action: partition_network", "  groups: [[1, kafka]]"),
     "12: partition_network.groups[0][1]: expected a broker id or one of zk, clients, got 'kafka'"),
    (steps("- at: 10s", "  action: partition_network", "  isolate: 1", "  from: [1]"),
     "13: partition_network.from[0]: expected nodes other than the isolated broker, got 1"),
    (steps("- at: 10s", "  action: partition_network", "  groups: [[1], [2]]", "  from: [zk]"),
     "13: partition_network.from: expected only with 'isolate', not with 'groups'"),
    (steps("- at: 10s", "  action: slow_follower", "  broker: 1", "  delay: 1s", "  factor: 3"),
     "14: slow_follower: expected one of 'delay' or 'factor', not 'delay' and 'factor'"),
    (steps("- at: 10s", "  action: slow_follower", "  broker: 1", "  factor: 0.5"),
     "13: slow_follower.factor: expected a slow-down factor > 1, got 0.5"),
    (steps("- at: 10s", "  action: slow_follower", "  broker: 1", "  delay: 1s", "  until: 5s"),
     "14: slow_follower.until: expected a time after the step's 10s, got 5s"),
    (steps("- at: 10s", "  action: slow_follower", "  broker: 1"), "10: slow_follower: missing 'delay' or 'factor'"),
    # topics along the steps
    (steps("- at: 10s", "  action: delete_topic", "  topic: ordres"),
     "12: delete_topic.topic: expected a topic that exists at 10s (orders), got 'ordres'"),
    (steps("- at: 10s", "  action: delete_topic", "  topic: orders", "- at: 12s", "  action: elect_preferred",
           "  partitions: [orders-0]"),
     "15: elect_preferred.partitions[0]: expected a topic that exists at 12s; 'orders' was deleted at 10s "
     "(line 10)"),
    (steps("- at: 10s", "  action: elect_unclean", "  partitions: [orders-2]"),
     "12: elect_unclean.partitions[0]: expected a partition of 'orders' (0 to 1 at 10s), got 2"),
    (steps("- at: 10s", "  action: elect_unclean", "  partitions: [orders]"),
     "12: elect_unclean.partitions[0]: expected a partition: topic-partition (orders-0) or {topic: orders, "
     "partition: 0}, got 'orders'"),
    (steps("- at: 10s", "  action: cancel_reassignment", "  partitions:", "    - {topic: orders, partition: 5}"),
     "13: cancel_reassignment.partitions[0]: expected a partition of 'orders' (0 to 1 at 10s), got 5"),
    (steps("- at: 10s", "  action: elect_unclean", "  partitions: [orders-0, orders-0]"),
     "12: elect_unclean.partitions[1]: partition orders-0 is listed twice"),
    (steps("- at: 10s", "  action: elect_unclean"), "10: elect_unclean: missing 'partitions'"),
    (steps("- at: 10s", "  action: create_topic", "  name: orders"),
     "12: create_topic.name: expected a new topic; 'orders' already exists (line 6)"),
    (steps("- at: 10s", "  action: kill_broker", "  broker: 1", "- at: 20s", "  action: create_topic",
           "  name: t2", "  partitions: 1", "  replication_factor: 3"),
     "17: create_topic.replication_factor: expected at most 2, the brokers up at 20s, got 3"),
    (steps("- at: 10s", "  action: add_partitions", "  topic: orders", "  count: 2"),
     "13: add_partitions.count: expected a new total larger than the 2 partitions of 'orders', got 2"),
    (steps("- at: 10s", "  action: add_partitions", "  topic: orders", "  assignment: [[1, 2]]"),
     "13: add_partitions.assignment[0]: expected 3 replicas (all partitions of a topic have the same "
     "replication factor), got 2"),
    (steps("- at: 10s", "  action: add_partitions", "  topic: orders", "  count: 5", "  assignment: [[1, 2, 3]]"),
     "14: add_partitions.assignment: expected 3 new partitions (count 5 - 2), got 1"),
    (steps("- at: 10s", "  action: add_partitions", "  topic: orders"),
     "10: add_partitions: missing 'count' or 'assignment'"),
    # reassignment JSON
    (steps("- at: 10s", "  action: reassign", "  json:", "    version: 1", "    partitions:",
           "      - {topic: orders, partition: 0, replicas: [1, 2]}",
           "      - {topic: orders, partition: 1, replicas: []}"),
     "16: reassign.json: partitions[1]: Partition replica list cannot be empty"),
    (steps("- at: 10s", "  action: reassign", "  json:", "    partitions:",
           "      - {topic: orders, partition: 0, replicas: [1, 9]}"),
     "14: reassign.json: partitions[0]: expected broker ids of the cluster (1, 2, 3), got 9"),
    (steps("- at: 10s", "  action: reassign", "  json:", "    partitions:",
           "      - {topic: orders, partition: 0, replicas: [1]}",
           "      - {topic: orders, partition: 0, replicas: [2]}"),
     "15: reassign.json: partitions[1]: Partition reassignment contains duplicate topic partitions: orders-0"),
    (steps("- at: 10s", "  action: reassign", "  json:", "    partitions:",
           "      - {topic: events, partition: 0, replicas: [1]}"),
     "14: reassign.json: partitions[0]: expected a topic that exists at 10s (orders), got 'events'"),
    (steps("- at: 10s", "  action: reassign", "  json:", "    version: 2", "    partitions: []"),
     "13: reassign.json: unsupported reassignment file version 2 (expected 1)"),
    (steps("- at: 10s", "  action: reassign", "  json: '{\"partitions\": [}'"),
     "12: reassign.json:1:17: not valid JSON: Expecting value"),
    (steps("- at: 10s", "  action: reassign", "  json: {partitions: []}", "  file: r.json"),
     "13: reassign: expected one of 'json' or 'file', not 'json' and 'file'"),
    # configs
    (steps("- at: 10s", "  action: set_config", "  entity: broker", "  config: zookeeper.session.timeout.ms",
           "  value: 1000"),
     "13: set_config.config: expected a dynamic broker config; zookeeper.session.timeout.ms is read-only (Kafka "
     "reads it at start-up only): set it in cluster.configs"),
    (steps("- at: 10s", "  action: set_config", "  entity: topic", "  name: orders", "  config: min.insync.replica",
           "  value: 2"),
     "14: set_config.config: unknown config 'min.insync.replica'; did you mean 'min.insync.replicas'?"),
    (steps("- at: 10s", "  action: set_config", "  entity: topic", "  name: orders",
           "  config: unclean.leader.election.enable", "  value: maybe"),
     "15: set_config.value: expected true or false, got 'maybe'"),
    (steps("- at: 10s", "  action: set_config", "  entity: cluster", "  config: x", "  value: 1"),
     "12: set_config.entity: expected broker or topic, got 'cluster'"),
    (steps("- at: 10s", "  action: set_config", "  entity: topic", "  config: x", "  value: 1"),
     "10: set_config: missing 'name'"),
    (steps("- at: 10s", "  action: set_config", "  entity: broker", "  name: 4", "  config: x", "  value: 1"),
     "13: set_config.name: expected a broker id of the cluster (1, 2, 3), got 4"),
    # observation
    (steps("- at: 10s", "  action: expect", "  partition: orders-0", "  exists: true"),
     "13: expect.exists: expected only with 'topic'"),
    (steps("- at: 10s", "  action: expect", "  topic: orders", "  leader: 1"),
     "13: expect.leader: expected only with 'partition'"),
    (steps("- at: 10s", "  action: expect", "  partition: orders-0"),
     "10: expect: missing 'leader', 'isr' or 'replicas' (what to check)"),
    (steps("- at: 10s", "  action: expect", "  topic: orders"), "10: expect: missing 'exists'"),
    (steps("- at: 10s", "  action: expect", "  partition: orders-0", "  leader: nobody"),
     "13: expect.leader: expected a broker id of the cluster (1, 2, 3), got 'nobody'"),
    (steps("- at: 10s", "  action: expect", "  controller: 1", "  topic: orders"),
     "13: expect: expected one of 'partition', 'topic' or 'controller', not 'controller' and 'topic'"),
    (steps("- at: 10s", "  action: describe", "  topics: [nope]"),
     "12: describe.topics[0]: expected a topic that exists at 10s (orders), got 'nope'"),
    # the metadata quorum
    (steps("- at: 10s", "  action: describe_quorum"),
     "10: describe_quorum: expected a quorum section in the scenario (the metadata quorum to describe); there "
     "is none"),
    (quorum("voters: [0]") + "steps:\n  - {at: 10s, action: describe_quorum, replication: yes please}\n",
     "12: describe_quorum.replication: expected true or false, got 'yes please'"),
    (quorum("voters: [0]") + "steps:\n  - {at: 10s, action: describe_quorum, replicaton: true}\n",
     "12: steps[0]: unknown key 'replicaton'; did you mean 'replication'? expected one of: at, action, note, "
     "replication"),
    (quorum("voters: []"), "10: quorum.voters: expected a list of controller node ids (integers >= 0), got an "
                           "empty list"),
    (quorum("voters: 0"), "10: quorum.voters: expected a list of controller node ids (integers >= 0), got 0"),
    (quorum("version: '3.9'"), "10: quorum: missing 'voters'"),
    (quorum("voters: [0, -1]"), "10: quorum.voters[1]: expected a controller node id (an integer >= 0), got -1"),
    (quorum("voters: [0, 4, 0]"), "10: quorum.voters[2]: voter 0 is listed twice"),
    (quorum("voters:", "    - 0", "    - 2"),
     "12: quorum.voters[1]: expected a controller node id that is not a broker's (1, 2, 3), got 2: brokers and "
     "controllers share node ids, and a broker that is also a voter (combined mode) is not simulated"),
    (quorum("voters: [0]", "version: 4.0"), "11: quorum.version: expected 3.7 or 3.9, got 4.0"),
    (quorum("voters: [0]", "version: [3.7]"), "11: quorum.version: expected 3.7 or 3.9, got a list"),
    (quorum("voters: [0]", "fetch_max_wait: 0ms"), "11: quorum.fetch_max_wait: expected a time > 0"),
    (quorum("voters: [0]", "fetch_max_wait: soon"),
     "11: quorum.fetch_max_wait: expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m, "
     "got 'soon'"),
    (quorum("voters: [0]", "fetch_interval: 1s"),
     "11: quorum: unknown key 'fetch_interval'; expected one of: voters, version, fetch_max_wait"),
]


@pytest.mark.parametrize("text, expected", MALFORMED, ids=[m[1][:60] for m in MALFORMED])
def test_malformed_scenario_fails_with_file_line_and_what_was_expected(text: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "s.yaml")
    assert str(info.value) == f"s.yaml:{expected}"
    assert info.value.source == "s.yaml" and str(info.value.line) == expected.split(":", 1)[0]


def test_base_of_the_malformed_table_is_well_formed() -> None:
    s = parse_scenario(steps("- at: 1s", "  action: heal_network"), "s.yaml")
    assert s.topics == (TopicSpec("orders", 2, 3, None, {}),) and s.steps == (Step(1000, "heal_network", {}),)
    assert s.steps[0].line == 10


def test_load_names_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BASE.replace("[1, 2, 3]", "[1, x]"), encoding="utf-8")
    with pytest.raises(ScenarioError, match=re.escape(f"{path}:4: cluster.brokers[1]: expected a broker id")):
        load_scenario(path)
    with pytest.raises(ScenarioError, match=re.escape(f"{tmp_path / 'missing.yaml'}:0: expected a readable")):
        load_scenario(tmp_path / "missing.yaml")


# --- well-formed details ----------------------------------------------------------------------------

def test_reassignment_file_is_read_relative_to_the_scenario(tmp_path: pathlib.Path) -> None:
    (tmp_path / "moves").mkdir()
    (tmp_path / "moves" / "r.json").write_text(
        '{"version": 1, "partitions": [{"topic": "orders", "partition": 1, "replicas": [3, 1],'
        ' "log_dirs": ["any", "any"]}]}')
    path = tmp_path / "s.yaml"
    path.write_text(steps("- at: 10s", "  action: reassign", "  file: moves/r.json"))
    assert load_scenario(path).steps[0].args == {"reassignment": {("orders", 1): (3, 1)}}
    (tmp_path / "moves" / "r.json").write_text('{"partitions": [{"topic": "orders", "partition": 1, "replicas": '
                                               '[3, 3]}]}')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (f"{path}:12: reassign.file moves/r.json: partitions[0]: Partition replica lists may "
                               f"not contain duplicate entries: orders-1 contains [3, 3]")


def test_args_are_normalized() -> None:
    s = parse_scenario(BASE.replace("brokers: [1, 2, 3]", "brokers: [1, 2, 3, 4]\n  down: [4]") + """\
steps:
  - {at: 1s, action: kill_broker, controller: true}
  - {at: 2s, action: start_broker, broker: 4}
  - {at: 3s, action: expire_session, broker: 2}
  - {at: 4s, action: partition_network, groups: [[1, zk], [2, clients]]}
  - {at: 5s, action: partition_network, isolate: controller, from: [zk, brokers]}
  - {at: 6s, action: slow_follower, broker: 3, factor: 4, until: +1m}
  - {at: 6s, action: catch_up}
  - {at: 7s, action: create_topic, name: logs, assignment: [[1], [2]], configs: {retention.ms: 1000}}
  - {at: 8s, action: add_partitions, topic: logs, assignment: [[3]]}
  - {at: 9s, action: set_config, entity: topic, name: logs, config: unclean.leader.election.enable, value: true}
  - {at: 9s, action: set_config, entity: broker, config: min.insync.replicas, value: null}
  - {at: 10s, action: elect_preferred}
  - {at: 11s, action: expect, partition: {topic: logs, partition: 2}, leader: none, isr: [3]}
  - {at: 12s, action: delete_topic, topic: logs}
  - {at: 13s, action: describe, topics: [logs]}
  - {at: 13s, action: expect, topic: logs, exists: true}
  - {at: 14s, action: fail_log_dir, broker: 1}
  - {at: 15s, action: kill_broker, broker: 1, note: allowed - the checker cannot know broker 1 still runs}
""")
    assert [(st.at_ms, st.action, st.args) for st in s.steps] == [
        (1000, "kill_broker", {"broker": None, "controller": True}),
        (2000, "start_broker", {"broker": 4}),
        (3000, "expire_session", {"broker": 2, "controller": False, "notice_after_ms": 0}),
        (4000, "partition_network", {"groups": ((1, "zk"), (2, "clients")), "isolate": None, "from": None}),
        (5000, "partition_network", {"groups": None, "isolate": "controller", "from": ("zk", "brokers")}),
        (6000, "slow_follower", {"broker": 3, "delay_ms": None, "factor": 4.0, "until_ms": 66_000}),
        (6000, "catch_up", {"broker": None}),
        (7000, "create_topic", {"name": "logs", "partitions": 2, "replication_factor": 1,
                                "assignment": ((1,), (2,)), "configs": {"retention.ms": "1000"}}),
        (8000, "add_partitions", {"topic": "logs", "count": 3, "assignment": ((3,),)}),
        (9000, "set_config", {"entity": "topic", "name": "logs", "config": "unclean.leader.election.enable",
                              "value": "true"}),
        (9000, "set_config", {"entity": "broker", "name": None, "config": "min.insync.replicas", "value": None}),
        (10_000, "elect_preferred", {"partitions": None}),
        (11_000, "expect", {"partition": ("logs", 2), "leader": -1, "isr": (3,), "replicas": None, "topic": None,
                            "exists": None, "controller": None}),
        (12_000, "delete_topic", {"topic": "logs"}),
        (13_000, "describe", {"topics": ("logs",)}),
        (13_000, "expect", {"partition": None, "leader": None, "isr": None, "replicas": None, "topic": "logs",
                            "exists": True, "controller": None}),
        (14_000, "fail_log_dir", {"broker": 1, "dir": None}),
        (15_000, "kill_broker", {"broker": 1, "controller": False}),
    ]
    assert s.steps[-1].note == "allowed - the checker cannot know broker 1 still runs"
    assert parse_scenario(dump_scenario(s)) == s


def test_topic_defaults_follow_the_cluster_configs_and_a_deleted_name_can_be_reused() -> None:
    s = parse_scenario("""\
name: t
duration: 1m
cluster:
  brokers: [1, 2]
  configs: {num.partitions: 4, default.replication.factor: 2, unclean.leader.election.enable: True}
topics: [{name: a}, {name: "2024"}]
workload:
  producers: [{topics: [a, b], rate_per_s: 2.5, acks: -1, start: 1s, stop: 50s}]
steps:
  - {at: 1s, action: delete_topic, topic: a}
  - {at: 2s, action: create_topic, name: a, partitions: 1}
  - {at: 3s, action: create_topic, name: b, replication_factor: 1}
""")
    assert s.cluster.configs == {"num.partitions": "4", "default.replication.factor": "2",
                                 "unclean.leader.election.enable": "true"}
    assert s.topics == (TopicSpec("a", 4, 2), TopicSpec("2024", 4, 2))
    assert s.steps[1].args["partitions"] == 1 and s.steps[1].args["replication_factor"] == 2
    assert s.workload.producers == (ProducerSpec(("a", "b"), 2.5, -1, 1024, 1000, 50_000),)


def test_cut_links() -> None:
    brokers = (1, 2, 3)
    groups = {"groups": ((1, "zk"), (2,)), "isolate": None, "from": None}
    # 3 and clients, in no group, form a third group
    assert cut_links(groups, brokers) == {frozenset(x) for x in [
        (1, 2), (1, 3), (1, "clients"), ("zk", 2), ("zk", 3), ("zk", "clients"), (2, 3), (2, "clients")]}
    isolate = {"groups": None, "isolate": "controller", "from": ("zk", "brokers")}
    assert cut_links(isolate, brokers, controller=2) == {frozenset(x) for x in [(2, "zk"), (2, 1), (2, 3)]}
    everything = {"groups": None, "isolate": 3, "from": ("all",)}
    assert cut_links(everything, brokers) == {frozenset((3, x)) for x in (1, 2, "zk", "clients")}
    with pytest.raises(ValueError):
        cut_links(isolate, brokers)


# --- times ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, ms", [
    (0, 0), (250, 250), ("250", 250), ("250ms", 250), ("30s", 30_000), ("1.5s", 1500), ("2m", 120_000),
    ("1h", 3_600_000), ("0.25s", 250), (" 5 s ", 5000), ("1.0005s", None), ("0.5ms", None), ("-1s", None),
    (-1, None), ("5 sec", None), ("", None), ("s", None), (1.5, None), (True, None), (None, None), ("1e3", None),
])
def test_parse_time(text, ms) -> None:
    if ms is None:
        with pytest.raises(ValueError):
            parse_time(text)
    else:
        assert parse_time(text) == ms


@pytest.mark.parametrize("ms, text", [(0, "0s"), (250, "250ms"), (1500, "1.5s"), (30_000, "30s"), (120_000, "2m"),
                                      (90_000, "90s"), (1250, "1250ms"), (3_600_000, "60m")])
def test_format_time(ms: int, text: str) -> None:
    assert format_time(ms) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_format_time_round_trips(ms: int) -> None:
    assert parse_time(format_time(ms)) == ms


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from([("ms", 1), ("s", 1000), ("m", 60_000)]))
def test_units(n: int, unit) -> None:
    assert parse_time(f"{n}{unit[0]}") == n * unit[1]


# --- scenarios round trip ----------------------------------------------------------------------------

NOTE_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20).filter(
    str.strip)
TOPIC_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)


@st.composite
def scenarios(draw) -> Scenario:
    brokers = tuple(draw(st.lists(st.integers(0, 20), min_size=1, max_size=5, unique=True)))
    down = tuple(b for b in brokers[1:] if draw(st.booleans()))
    configs = draw(st.dictionaries(st.sampled_from(["num.partitions", "replica.lag.time.max.ms", "custom.a"]),
                                   st.integers(1, 3).map(str), max_size=2))
    racks = {b: f"r{b % 2}" for b in brokers} if draw(st.booleans()) else {}
    duration = draw(st.integers(1, 600_000))
    live = [b for b in brokers if b not in down]
    up = {b: b in live for b in brokers}
    topics: dict[str, list] = {}        # name -> [partitions, deleted]
    quorum = None
    if draw(st.booleans()):
        quorum = QuorumSpec(tuple(draw(st.lists(st.integers(21, 3000), min_size=1, max_size=5, unique=True))),
                            draw(st.sampled_from(QUORUM_VERSIONS)), draw(st.integers(1, 10**6)))
    specs = []
    for name in draw(st.lists(TOPIC_NAMES, max_size=3, unique=True)):
        if any(t.replace(".", "_") == name for t in topics):
            continue
        if draw(st.booleans()):
            rf = draw(st.integers(1, len(brokers)))
            assignment = tuple(tuple(draw(st.permutations(brokers))[:rf]) for _ in range(draw(st.integers(1, 3))))
            spec = TopicSpec(name, len(assignment), rf, assignment, {})
        else:
            spec = TopicSpec(name, draw(st.integers(1, 4)), draw(st.integers(1, len(live))), None,
                             draw(st.dictionaries(st.just("min.insync.replicas"), st.just("2"))))
        specs.append(spec)
        topics[name] = [spec.partitions, False]
    steps = []
    at = 0
    for _ in range(draw(st.integers(0, 8))):
        at = draw(st.integers(at, duration))
        existing = sorted(t for t, (_, deleted) in topics.items() if not deleted)
        choices = ["note", "heal_network", "catch_up", "slow_follower", "isolate", "kill_or_start", "expire"]
        if quorum is not None:
            choices.append("describe_quorum")
        if existing:
            choices += ["elect", "set_config", "delete", "expect", "describe"]
        kind = draw(st.sampled_from(choices))
        if kind == "note":
            action, args = "note", {"text": draw(NOTE_TEXT)}
        elif kind == "describe_quorum":
            action, args = "describe_quorum", {"replication": draw(st.booleans())}
        elif kind == "heal_network":
            action, args = "heal_network", {}
        elif kind == "catch_up":
            action, args = "catch_up", {"broker": draw(st.none() | st.sampled_from(brokers))}
        elif kind == "slow_follower":
            delay = draw(st.none() | st.integers(1, 10**6))
            action, args = "slow_follower", {
                "broker": draw(st.sampled_from(brokers)), "delay_ms": delay,
                "factor": draw(st.floats(1.01, 1000)) if delay is None else None,
                "until_ms": draw(st.none() | st.integers(at + 1, at + 10**6))}
        elif kind == "isolate":
            action, args = "partition_network", {
                "groups": None, "isolate": draw(st.sampled_from(brokers + ("controller",))),
                "from": tuple(draw(st.lists(st.sampled_from(["zk", "clients", "brokers", "all"]), min_size=1,
                                            unique=True)))}
        elif kind == "kill_or_start":
            b = draw(st.sampled_from(brokers))
            if up[b]:
                action = draw(st.sampled_from(["kill_broker", "controlled_shutdown"]))
                args = {"broker": b, "controller": False}
            else:
                action, args = "start_broker", {"broker": b}
            up[b] = not up[b]
        elif kind == "expire":
            running = [b for b in brokers if up[b]]
            if not running:
                continue
            action, args = "expire_session", {"broker": draw(st.sampled_from(running)), "controller": False,
                                              "notice_after_ms": draw(st.integers(0, 10**5))}
        elif kind == "elect":
            t = draw(st.sampled_from(existing))
            parts = tuple((t, p) for p in sorted(draw(st.sets(st.integers(0, topics[t][0] - 1), min_size=1))))
            action = draw(st.sampled_from(["elect_preferred", "elect_unclean", "cancel_reassignment"]))
            args = {"partitions": parts}
        elif kind == "set_config":
            action, args = "set_config", {"entity": "topic", "name": draw(st.sampled_from(existing)),
                                          "config": "min.insync.replicas",
                                          "value": draw(st.none() | st.integers(1, 3).map(str))}
        elif kind == "delete":
            t = draw(st.sampled_from(existing))
            topics[t][1] = True
            action, args = "delete_topic", {"topic": t}
        elif kind == "expect":
            t = draw(st.sampled_from(existing))
            args = dict.fromkeys(ACTIONS["expect"])
            args.update(partition=(t, draw(st.integers(0, topics[t][0] - 1))),
                        leader=draw(st.sampled_from((-1,) + brokers)),
                        isr=tuple(draw(st.lists(st.sampled_from(brokers), unique=True, min_size=1))))
            action = "expect"
        else:
            action, args = "describe", {"topics": draw(st.none() | st.just(tuple(existing)))}
        steps.append(Step(at, action, args, note=draw(st.just("") | NOTE_TEXT)))
    workload = None
    if specs and draw(st.booleans()):
        start = draw(st.integers(0, duration - 1))
        workload = WorkloadSpec((ProducerSpec(
            (specs[0].name,), draw(st.floats(0.01, 10**6)), draw(st.sampled_from([0, 1, -1])),
            draw(st.integers(1, 10**6)), start, draw(st.integers(start + 1, duration))),))
    return Scenario(draw(NOTE_TEXT), draw(st.just("") | NOTE_TEXT), draw(st.integers(0, 2**63)), duration,
                    ClusterSpec(brokers, configs, racks, down), tuple(specs), workload,
                    NetworkSpec(draw(st.integers(0, 1000)), draw(st.integers(0, 1000))), tuple(steps), quorum)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_dump_then_parse_gives_the_same_scenario(s: Scenario) -> None:
    assert parse_scenario(dump_scenario(s), "dumped.yaml") == s


# --- the documentation ---------------------------------------------------------------------------------

def test_every_action_is_documented() -> None:
    doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    for action in ACTIONS:
        assert f"``{action} " in scenario_module.__doc__ or f"``{action}``" in scenario_module.__doc__, action
        assert f"| `{action}` |" in doc, action
    assert set(re.findall(r"^\| `(\w+)` \| ", doc.split("### `steps`", 1)[1], re.M)) == set(ACTIONS)


def test_the_docs_complete_example_is_a_valid_scenario() -> None:
    doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = doc.split("## A complete example", 1)[1]
    block = re.search(r"^```yaml\n(.*?)^```", example, re.S | re.M).group(1)
    s = parse_scenario(block, "docs/scenarios.md")
    assert {st.action for st in s.steps} >= {"slow_follower", "kill_broker", "expect", "reassign"}
    assert [st.at_ms for st in s.steps][:4] == [10_000, 30_000, 50_000, 75_000]
