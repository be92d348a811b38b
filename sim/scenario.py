"""Scenarios of the cluster simulator: the YAML format, its data classes, and its validation.

A scenario is one YAML file: a cluster, its topics, a workload, and timed steps (faults and
operator actions). ``load_scenario(path)`` reads and checks one; ``parse_scenario(text, source)``
does the same for text. Everything is checked before anything runs: a malformed scenario raises
:class:`ScenarioError`, whose message is ``"{file}:{line}: {what was expected}"``, the line being
the line of the offending key or value (nested ones included). ``python -m sim.scenario FILE...``
checks files from the command line. ``examples/*.yaml`` hold one scenario per story.

Format reference
================

Times
-----
Every time (``duration``, ``at``, ``start``, ``stop``, ``latency``, ``jitter``, ``delay``,
``until``, ``notice_after``, ``fetch_max_wait``) is an integer of milliseconds or a string with a
unit: ``250ms``, ``30s``, ``1.5s``, ``2m``, ``1h`` (``"250"`` without a unit is milliseconds
too). A time is never negative and must come out as a whole number of milliseconds. In the data
classes every time is an ``int`` of milliseconds in a field whose name ends in ``_ms`` (``at`` ->
``at_ms``, ``delay`` -> ``delay_ms``). ``at`` and ``until`` may also be relative: ``at: +5s`` is
5 s after the previous step (after 0 for the first), ``until: +20s`` is 20 s after the step's own
``at``.

Top level
---------
::

    name: unclean-election-on     # required, a non-empty string
    description: ...              # optional text (the story)
    seed: 7                       # optional, integer >= 0, default 0: the run is a function of it
    duration: 3m                  # required, > 0: the simulated time the run lasts
    start_time: 2024-03-01T09:00:00Z  # optional: the date and time of time 0 (default 2024-01-01T00:00:00Z)
    cluster: {...}                # required
    network: {...}                # optional
    quorum: {...}                 # optional: a KRaft metadata quorum beside the cluster
    topics: [...]                 # optional: the topics that exist at time 0
    workload: {...}               # optional
    steps: [...]                  # optional

``start_time`` is an ISO 8601 date and time (``2024-03-01T09:00:00Z``, ``2024-03-01T10:00:00+01:00``,
``2024-03-01``; without a zone, UTC), quoted or not. It only places the run on the calendar when it is
shown (``kcontroller log``'s ``[2024-03-01 09:00:28,000]``, ``describe --json``'s ``time``): records keep
their milliseconds since time 0, so it changes no record and no digest of the run. The default is a fixed
date, never the wall clock (:data:`statemachines.kafka_log_format.DEFAULT_START_TIME`). In the data class
it is ``start_time_ms``, milliseconds since 1970-01-01T00:00:00Z.

Unknown keys, and a key given twice in one mapping, are errors everywhere (YAML merge keys
``<<`` are not supported; anchors and aliases are).

``cluster``
-----------
::

    cluster:
      brokers: [0, 1, 2]          # required: unique broker ids (integers >= 0); they start at
                                  # time 0 in this order (the first to start becomes the controller)
      down: [3]                   # optional: brokers that do not start at time 0 (start_broker
                                  # starts them later)
      racks: {0: a, 1: b, 2: c}   # optional: broker.rack, for every broker or for none
      configs:                    # optional: broker configs by their Kafka names
        zookeeper.session.timeout.ms: 18000
        unclean.leader.election.enable: false

Config names are checked with :class:`controller.config.KafkaConfig`: a name close to a known one
(``unclean.leader.elections.enable``) is an error that suggests it; other unknown names are
kept (the engine may not use them). The values of known boolean and integer configs must be
booleans and integers. Values are kept as strings, as Kafka does (``false`` -> ``"false"``).

``network``
-----------
::

    network:
      latency: 1ms                # one-way latency of every link (default 1ms)
      jitter: 0ms                 # added uniformly at random in [0, jitter] (seeded; default 0)

The nodes of the network are the brokers (by id), ``zk`` (the ZooKeeper ensemble) and
``clients`` (the producers).

``quorum``
----------
::

    quorum:
      voters: [0]                 # required: the controllers' node ids (controller.quorum.voters);
                                  # not broker ids; the first is the leader, in epoch 1
      version: "3.9"              # "3.7" (default) or "3.9": the describe output's format
      fetch_max_wait: 500ms       # how long the leader holds a FETCH while its log does not grow
                                  # (default 500ms, KafkaRaftClient's MAX_FETCH_WAIT_MS)

With this section the simulation also runs the metadata log of a KRaft controller quorum
(:mod:`sim.kraft_quorum`): every running broker fetches it as an observer, and the
``describe_quorum`` step shows it as ``kafka-metadata-quorum.sh describe`` does. Voters are
dedicated controllers: node ids are shared by brokers and controllers in KRaft, and a voter
with a broker's id (combined mode) is not simulated.

``topics``
----------
A list of topics existing at time 0, each::

    - name: orders                # required, a legal Kafka topic name
      partitions: 3               # default num.partitions of the cluster configs (Kafka's 1)
      replication_factor: 3       # default default.replication.factor (Kafka's 1)
      configs: {min.insync.replicas: 2}   # optional topic configs by Kafka name
    - name: events
      assignment: [[1, 2], [2, 0], [0, 1]]  # or an explicit assignment: partition p's replicas,
                                            # preferred leader first (as --replica-assignment)

Without an assignment the engine places replicas as Kafka does (``partitions`` and
``replication_factor`` are then filled in, the assignment is ``None``); the replication factor
may not exceed the brokers up at time 0. With one, ``partitions`` and ``replication_factor``
are optional and must agree with it; all partitions need the same number of replicas, without
duplicates, on brokers of the cluster.

``workload``
------------
::

    workload:
      producers:
        - topics: [orders]        # required: a topic name or a list; topics of ``topics`` or
                                  # created by a create_topic step
          rate_per_s: 200         # required: messages per second (> 0), over the topics'
                                  # partitions
          acks: all               # 0, 1, all (or -1); default all (Kafka 3's default)
          message_bytes: 1024     # default 1024
          start: 0s               # default 0
          stop: 2m                # default: the end of the run; after start, within duration
          configs:                # producer configs (Kafka 3.7's defaults): batch.size, linger.ms,
            linger.ms: 5          # max.in.flight.requests.per.connection, request.timeout.ms,
                                  # delivery.timeout.ms, retries, retry.backoff.ms,
                                  # reconnect.backoff.ms, reconnect.backoff.max.ms, metadata.max.age.ms

``acks`` is kept as Kafka's integer: 0, 1 or -1 (all).

``steps``
---------
A list of steps, in time order (equal times run in file order), none after ``duration``::

    - at: 20s                     # required: when (absolute, or +relative to the previous step)
      action: kill_broker         # required: one of the actions below
      broker: 1                   # the action's arguments, at the same level
      note: kill -9, no controlled shutdown   # optional, on any step: shown in the run's summary

The actions and their arguments (``?``: optional). ``broker`` is a broker id of the cluster;
``partitions`` is a list of partitions, each ``topic-partition`` (``orders-0``, split at the
last ``-``) or ``{topic: orders, partition: 0}``. Topics must exist at the step's time:
declared in ``topics`` or created by an earlier step, and not deleted by an earlier step.

Brokers
  ``kill_broker {broker | controller: true}``
      kill -9: the process stops at once; ZooKeeper notices when its session times out
      (``zookeeper.session.timeout.ms``). ``controller: true`` kills whichever broker is the
      active controller then.
  ``start_broker {broker}``
      start (or restart) a broker that is not running. Restarted before ZooKeeper has expired the
      session of its killed process (``zookeeper.session.timeout.ms``, as ZooKeeper clamps it to
      4000-40000 ms, after its last heartbeat), it finds its ``/brokers/ids`` registration still
      there and exits (NodeExists), as Kafka does; the summary notes it. The broker may be started
      again later.
  ``controlled_shutdown {broker | controller: true}``
      a clean shutdown as ``kafka-server-stop.sh``: with ``controlled.shutdown.enable`` the broker
      first asks the controller to move its leaders away (with Kafka's retries), then stops.
  ``expire_session {broker | controller: true, notice_after?}``
      the broker's ZooKeeper session expires (its ephemeral znodes go; a new controller is elected
      if it was the controller) while the process keeps running. It learns of the expiry
      ``notice_after`` later (default 0): until then it acts on what it believes, a zombie
      controller if it was the controller. Then it re-registers, as Kafka does. With no session
      to expire (it expired already and the broker has not registered again, or the broker is
      not running after all) nothing happens, and the summary notes it.
  ``fail_log_dir {broker, dir?}``
      a log directory of the broker fails (KAFKA_STORAGE_ERROR for its replicas). ``dir``, when
      given, must be one of the cluster's ``log.dirs`` (if that config is set). The broker halts
      if it has no other log directory.

Network and replication
  ``partition_network {groups}`` or ``partition_network {isolate, from?}``
      cut links. ``groups: [[0, 1], [2, zk]]``: nodes in different groups cannot reach each other;
      the nodes named in no group form one more group together. ``isolate: 2`` (a broker, or
      ``controller``: the active controller then) cuts that broker from ``from``: a list of
      ``zk``, ``clients``, ``brokers`` (every other broker), ``all`` (default) and broker ids.
      Cuts add up until ``heal_network``.
  ``heal_network {}``
      every link works again.
  ``slow_follower {broker, delay | factor, until?}``
      the broker's follower fetches are slowed: each is delayed by ``delay``, or fetches
      ``factor`` (> 1) times slower; until ``until`` (absolute, or ``+relative`` to ``at``;
      after ``at``), a ``catch_up`` step, or the end of the run.
  ``catch_up {broker?}``
      end the slowing of ``broker`` (of every broker if omitted): its followers fetch at full
      speed again and rejoin ISRs once caught up.

Topics and partitions
  ``create_topic {name, partitions?, replication_factor? | assignment, configs?}``
      as ``kafka-topics.sh --create``; same arguments and defaults as an entry of ``topics``.
  ``delete_topic {topic}``
      as ``kafka-topics.sh --delete``: the topic is marked for deletion and counts as deleted for
      later steps (it may stay in the cluster while the deletion is stuck).
  ``add_partitions {topic, count? , assignment?}``
      as ``kafka-topics.sh --alter --partitions``: ``count`` is the new total (larger than the
      current count); ``assignment`` lists the replicas of the new partitions only (as many as
      the topic's replication factor). At least one of the two; both must agree.
  ``reassign {json | file}``
      as ``kafka-reassign-partitions.sh --execute``: ``json`` is Kafka's reassignment JSON inline
      (a YAML mapping, or a string of JSON), ``file`` a path to such a file, relative to the
      scenario. Checked with :func:`controller.admin_files.parse_reassignment_json`, then:
      topics existing, partitions in range, brokers of the cluster.
  ``cancel_reassignment {partitions}``
      as ``kafka-reassign-partitions.sh --cancel`` for those partitions.
  ``elect_preferred {partitions?}``
      as ``kafka-leader-election.sh --election-type preferred`` (all partitions if omitted).
  ``elect_unclean {partitions}``
      as ``kafka-leader-election.sh --election-type unclean``.
  ``set_config {entity, name?, config, value}``
      as ``kafka-configs.sh --alter``. ``entity: broker`` with ``name`` a broker id, or without
      ``name`` the cluster-wide default (``--entity-default``); ``entity: topic`` with ``name``
      an existing topic. ``value: null`` deletes the override. Broker configs Kafka only reads
      at start-up (read-only ones, such as ``zookeeper.session.timeout.ms``) cannot be set here.

Observation
  ``note {text}``
      a line in the run's timeline.
  ``describe {topics?}``
      record the partitions of ``topics`` (all if omitted) as ``kafka-topics.sh --describe``
      shows them at that time, in the summary. Deleted topics may be named.
  ``describe_quorum {replication?}``
      record the metadata quorum as ``kafka-metadata-quorum.sh describe --status`` shows it at
      that time (``--replication`` with ``replication: true``), in the summary. A DescribeQuorum
      request: it drops the observers that last fetched 300 s or more before. Needs ``quorum``.
  ``expect {partition, leader?, isr?, replicas?}``, ``expect {topic, exists}``, ``expect {controller}``
      a check reported in the summary (a failed expectation does not stop the run). ``leader``
      is a broker id or ``none`` (no leader; also ``null`` or -1, kept as -1); ``isr`` is
      compared as a set, ``replicas`` in order; ``exists`` whether the topic is still in the
      cluster (a topic whose deletion is stuck exists); ``controller`` the active controller's id.
      Deleted topics may be named.

There is no ``advance`` action: time passes between steps, and the run lasts ``duration``.

Data classes
------------
:class:`Scenario` holds a :class:`ClusterSpec`, a :class:`NetworkSpec`, a tuple of
:class:`TopicSpec`, a :class:`WorkloadSpec` of :class:`ProducerSpec` (or None), a tuple of
:class:`Step` and a :class:`QuorumSpec` (or None). A step's ``args`` holds every argument of its
action's schema, normalized: the names are the YAML keys (times with ``_ms``: ``delay_ms``,
``until_ms``, ``notice_after_ms``), arguments not given are None (``controller`` and
``replication`` False, ``notice_after_ms`` 0), partitions are ``(topic, partition)`` tuples,
broker lists tuples. In detail (``P`` a tuple of ``(topic, partition)``)::

    kill_broker, controlled_shutdown   {broker: int|None, controller: bool}
    expire_session                      {broker: int|None, controller: bool, notice_after_ms: int}
    start_broker                        {broker: int}
    fail_log_dir                        {broker: int, dir: str|None}
    partition_network                   {groups: tuple[tuple[int|'zk'|'clients', ...], ...]|None,
                                         isolate: int|'controller'|None,
                                         from: tuple[int|'zk'|'clients'|'brokers'|'all', ...]|None}
                                        (see cut_links)
    heal_network                        {}
    slow_follower                       {broker: int, delay_ms: int|None, factor: float|None,
                                         until_ms: int|None}
    catch_up                            {broker: int|None}
    create_topic                        {name, partitions, replication_factor, assignment, configs}
                                        (as TopicSpec's fields)
    delete_topic                        {topic: str}
    add_partitions                      {topic: str, count: int (the new total),
                                         assignment: tuple[tuple[int, ...], ...]|None}
    reassign                            {reassignment: {(topic, partition): tuple[int, ...]}}
    cancel_reassignment, elect_unclean  {partitions: P}
    elect_preferred                     {partitions: P|None}
    set_config                          {entity: 'broker'|'topic', name: int|str|None, config: str,
                                         value: str|None}
    note                                {text: str}
    describe                            {topics: tuple[str, ...]|None}
    describe_quorum                     {replication: bool}
    expect                              {partition: (str, int)|None, leader: int|None, isr: tuple|None,
                                         replicas: tuple|None, topic: str|None, exists: bool|None,
                                         controller: int|None}

:func:`dump_scenario` writes a scenario back as YAML that parses to an equal scenario (line
numbers aside); :func:`parse_time` and :func:`format_time` convert times.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import pathlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import yaml

from controller.admin_files import AdminFileError, parse_reassignment_json
from controller.embedding.cluster import READ_ONLY_BROKER_CONFIGS
from controller.config import DEFAULTS, ConfigError, KafkaConfig, check_config_name, check_config_value
from controller.store.kafka_zk_client import InvalidTopicError, validate_topic_name
from controller.store.zookeeper import negotiated_session_timeout
from sim.producer_config import PRODUCER_CONFIGS, ProducerConfigError, producer_configs
from statemachines.kafka_log_format import DEFAULT_START_MS, StartTimeError, format_start_time, parse_start_time

__all__ = [
    "ACTIONS", "QUORUM_VERSIONS", "ClusterSpec", "NetworkSpec", "ProducerSpec", "QuorumSpec", "Scenario",
    "ScenarioError", "Step", "TopicSpec", "WorkloadSpec", "cut_links", "dump_scenario", "format_time", "load_scenario", "parse_scenario", "parse_time",
]


# Sizes a scenario may give (docs/scenarios.md#limits): the run is bounded by them.
MAX_SCENARIO_BYTES = 1 << 20
MAX_DEPTH = 32                     # nesting of YAML collections
MAX_INT = 2**31 - 1                # ids, partitions, counts: Java ints
MAX_SEED = 2**64 - 1              # msgpack uint64
MAX_BROKERS = 1_000
MAX_PARTITIONS = 100_000           # per topic
MAX_TIME_MS = 7 * 24 * 3600 * 1000  # every time and the duration: 7 days
MAX_RATE_PER_S = 1_000_000
MAX_MESSAGE_BYTES = 100 * 2**20


class ScenarioError(ValueError):
    """A scenario that cannot run: ``"{file}:{line}: {what was expected}"``."""

    def __init__(self, source: str, line: int, detail: str):
        super().__init__(f"{source}:{line}: {detail}")
        self.source, self.line, self.detail = source, line, detail


# --- data classes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusterSpec:
    brokers: tuple[int, ...]
    configs: dict[str, str] = field(default_factory=dict)
    racks: dict[int, str] = field(default_factory=dict)
    down: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    assignment: tuple[tuple[int, ...], ...] | None = None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProducerSpec:
    topics: tuple[str, ...]
    rate_per_s: float
    acks: int            # 0, 1 or -1 (all)
    message_bytes: int
    start_ms: int
    stop_ms: int
    configs: tuple[tuple[str, int], ...] = ()   # producer configs set (sim.producer_config), sorted by name


@dataclass(frozen=True)
class WorkloadSpec:
    producers: tuple[ProducerSpec, ...]


@dataclass(frozen=True)
class NetworkSpec:
    latency_ms: int = 1
    jitter_ms: int = 0


QUORUM_VERSIONS = ("3.7", "3.9")


@dataclass(frozen=True)
class QuorumSpec:
    voters: tuple[int, ...]           # controller node ids; the first is the leader
    version: str = "3.7"              # one of QUORUM_VERSIONS
    fetch_max_wait_ms: int = 500      # KafkaRaftClient.MAX_FETCH_WAIT_MS


@dataclass(frozen=True)
class Step:
    at_ms: int
    action: str
    args: dict
    line: int = field(default=0, compare=False)
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    seed: int
    duration_ms: int
    cluster: ClusterSpec
    topics: tuple[TopicSpec, ...]
    workload: WorkloadSpec | None
    network: NetworkSpec
    steps: tuple[Step, ...]
    quorum: QuorumSpec | None = None
    start_time_ms: int = DEFAULT_START_MS   # ms since 1970 of the run's time 0: only how times are shown
    source: str = field(default="<string>", compare=False)
    text: str = field(default="", compare=False, repr=False)   # the YAML it was parsed from


# --- times ---------------------------------------------------------------------------------------

_TIME = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?", re.ASCII)
_UNIT_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_TIME_EXPECTED = "expected a time: an integer of ms or a string such as 250ms, 30s, 1.5s, 2m"


def parse_time(value: int | str) -> int:
    """Milliseconds from an integer (ms) or a string with a unit (``250ms``, ``30s``, ``1.5s``,
    ``2m``, ``1h``; none is ms). Raises ValueError saying what was expected."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{_TIME_EXPECTED}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a time cannot be negative, got {value}")
        return value
    text = value.strip()
    if text.startswith("-"):
        raise ValueError(f"a time cannot be negative, got {value!r}")
    m = _TIME.fullmatch(text)
    if not m:
        raise ValueError(f"{_TIME_EXPECTED}, got {value!r}")
    ms = Decimal(m.group(1)) * _UNIT_MS[m.group(2)]
    if ms != ms.to_integral_value():
        raise ValueError(f"a time must be a whole number of milliseconds, got {value!r}")
    return int(ms)


def format_time(ms: int) -> str:
    """The shortest unit string for ``ms`` (``parse_time(format_time(ms)) == ms``)."""
    if ms and ms % 60_000 == 0:
        return f"{ms // 60_000}m"
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    if ms > 1000 and ms % 100 == 0:
        return f"{ms // 1000}.{ms % 1000 // 100}s"
    return f"{ms}ms"


# --- the action table ----------------------------------------------------------------------------

#: action -> its argument keys (besides ``at``, ``action`` and ``note``), as written in YAML.
ACTIONS: dict[str, tuple[str, ...]] = {
    "kill_broker": ("broker", "controller"),
    "start_broker": ("broker",),
    "controlled_shutdown": ("broker", "controller"),
    "expire_session": ("broker", "controller", "notice_after"),
    "fail_log_dir": ("broker", "dir"),
    "partition_network": ("groups", "isolate", "from"),
    "heal_network": (),
    "slow_follower": ("broker", "delay", "factor", "until"),
    "catch_up": ("broker",),
    "create_topic": ("name", "partitions", "replication_factor", "assignment", "configs"),
    "delete_topic": ("topic",),
    "add_partitions": ("topic", "count", "assignment"),
    "reassign": ("json", "file"),
    "cancel_reassignment": ("partitions",),
    "elect_preferred": ("partitions",),
    "elect_unclean": ("partitions",),
    "set_config": ("entity", "name", "config", "value"),
    "note": ("text",),
    "describe": ("topics",),
    "describe_quorum": ("replication",),
    "expect": ("partition", "leader", "isr", "replicas", "topic", "exists", "controller"),
}

_TOP_KEYS = ("name", "description", "seed", "duration", "start_time", "cluster", "network", "quorum", "topics",
             "workload", "steps")
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_NODES = ("zk", "clients")
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
_MERGE = "tag:yaml.org,2002:merge"


def _kind_of_default(name: str) -> str | None:
    default = DEFAULTS.get(name)
    if default is None:
        return None
    if default in ("true", "false"):
        return "bool"
    return "int" if re.fullmatch(r"-?\d+", default) else None


def _alternatives(keys: Sequence[str]) -> str:
    quoted = [repr(k) for k in keys]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- the parser ----------------------------------------------------------------------------------

class _Parser:
    """Reads the composed YAML nodes (so every value has its line) into the data classes."""

    def __init__(self, text: str, source: str):
        self.source = source
        self.text = text
        if len(text) > MAX_SCENARIO_BYTES:
            self.fail(1, f"expected a scenario of at most {MAX_SCENARIO_BYTES} characters, got {len(text)}")
        try:
            self.loader = yaml.SafeLoader(text)
        except yaml.YAMLError as e:
            self.yaml_error(e)

    # errors and plain values
    def fail(self, where: yaml.Node | int, detail: str):
        line = where if isinstance(where, int) else where.start_mark.line + 1
        raise ScenarioError(self.source, line, detail)

    def document(self) -> yaml.Node | None:
        try:
            root = self.loader.get_single_node()
        except yaml.YAMLError as e:
            self.yaml_error(e)
        except RecursionError:
            self.fail(1, f"expected YAML nested at most {MAX_DEPTH} deep")
        self.check_depth(root)
        return root

    def yaml_error(self, e: yaml.YAMLError):
        if isinstance(e, yaml.MarkedYAMLError):
            mark = e.problem_mark or e.context_mark
            problem = " ".join(x for x in (e.context, e.problem) if x)
            self.fail(mark.line + 1 if mark else 1, f"not valid YAML: {problem}")
        if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow (control, NUL)
            line = self.text.count("\n", 0, e.position) + 1 if isinstance(self.text, str) else 1
            char = e.character if isinstance(e.character, str) else chr(e.character)
            self.fail(line, f"not valid YAML: character {char!r} (U+{ord(char):04X}) is not allowed; "
                            "expected printable text")
        self.fail(1, f"not valid YAML: {e}")

    def check_depth(self, root: yaml.Node | None) -> None:
        """Refuse collections nested deeper than MAX_DEPTH (aliases may share nodes: each counted once a level)."""
        level = [root] if root is not None else []
        depth = 0
        while level:
            depth += 1
            if depth > MAX_DEPTH:
                self.fail(level[0], f"expected YAML nested at most {MAX_DEPTH} deep")
            nxt: dict[int, yaml.Node] = {}
            for node in level:
                if isinstance(node, yaml.SequenceNode):
                    nxt.update((id(c), c) for c in node.value if not isinstance(c, yaml.ScalarNode))
                elif isinstance(node, yaml.MappingNode):
                    for k, v in node.value:
                        nxt.update((id(c), c) for c in (k, v) if not isinstance(c, yaml.ScalarNode))
            level = list(nxt.values())

    def value(self, node: yaml.Node):
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as e:     # a tag the safe loader has no constructor for (!!python/int ...)
            self.yaml_error(e)

    @staticmethod
    def line(node: yaml.Node) -> int:
        return node.start_mark.line + 1

    def shown(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        if node.tag == _NULL:
            return "nothing"
        if node.tag == _STR:
            return repr(node.value)
        return node.value

    def pairs(self, node: yaml.Node, what: str, expected: str) -> list[tuple[yaml.Node, object, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, f"{what}: expected {expected}, got {self.shown(node)}")
        seen: dict[object, int] = {}
        out = []
        for knode, vnode in node.value:
            if knode.tag == _MERGE:
                self.fail(knode, f"{what}: merge keys (<<) are not supported; write the keys out")
            if not isinstance(knode, yaml.ScalarNode):
                self.fail(knode, f"{what}: expected a plain key, got {self.shown(knode)}")
            key = self.value(knode)
            if key in seen:
                self.fail(knode, f"{what}: duplicate key {key!r} (first given at line {seen[key]})")
            seen[key] = self.line(knode)
            out.append((knode, key, vnode))
        return out

    def fields(self, node: yaml.Node, what: str, allowed: Sequence[str], required: Sequence[str] = (),
               expected: str | None = None) -> dict[str, yaml.Node]:
        expected = expected or f"a mapping with {', '.join(allowed)}"
        out: dict[str, yaml.Node] = {}
        for knode, key, vnode in self.pairs(node, what, expected):
            if key not in allowed or not isinstance(key, str):
                close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.fail(knode, f"{what}: unknown key {key!r}; {hint}expected one of: {', '.join(allowed)}")
            out[key] = vnode
        for key in required:
            if key not in out:
                self.fail(node, f"{what}: missing {key!r}")
        return out

    def sequence(self, node: yaml.Node, what: str, expected: str, nonempty: bool = True) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, f"{what}: expected {expected}, got {self.shown(node)}")
        if nonempty and not node.value:
            self.fail(node, f"{what}: expected {expected}, got an empty list")
        return list(node.value)

    def scalar(self, node: yaml.Node, what: str, expected: str, tags: Sequence[str]) -> yaml.ScalarNode:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
            self.fail(node, f"{what}: expected {expected}, got {self.shown(node)}")
        return node

    def integer(self, node: yaml.Node, what: str, minimum: int | None = None, expected: str | None = None,
                maximum: int = MAX_INT) -> int:
        expected = expected or ("an integer" if minimum is None else f"an integer >= {minimum}")
        node = self.scalar(node, what, expected, (_INT,))
        if not re.fullmatch(r"[-+]?\d+", node.value):
            self.fail(node, f"{what}: expected {expected} written in decimal, got {node.value:.60}")
        if len(node.value) > 40:
            self.fail(node, f"{what}: expected {expected}, at most {maximum}, got a number of {len(node.value)} "
                            "digits")
        value = int(node.value)
        if minimum is not None and value < minimum:
            self.fail(node, f"{what}: expected {expected}, got {value}")
        if not -maximum - 1 <= value <= maximum:
            self.fail(node, f"{what}: expected {expected}, at most {maximum}, got {value}")
        return value

    def number(self, node: yaml.Node, what: str, expected: str) -> float:
        node = self.scalar(node, what, expected, (_INT, _FLOAT))
        value = self.value(node)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(node, f"{what}: expected {expected}, got {node.value}")
        return float(value)

    def string(self, node: yaml.Node, what: str, expected: str = "a string", nonempty: bool = True) -> str:
        node = self.scalar(node, what, expected, (_STR, _INT, _FLOAT))
        if nonempty and not node.value.strip():
            self.fail(node, f"{what}: expected {expected}, got an empty string")
        return node.value

    def boolean(self, node: yaml.Node, what: str) -> bool:
        return self.value(self.scalar(node, what, "true or false", (_BOOL,)))

    def time(self, node: yaml.Node, what: str, base: int | None = None) -> int:
        """A time; ``+t`` is ``base + t`` when ``base`` is given (relative times)."""
        expected = _TIME_EXPECTED[len("expected "):]
        if base is not None:
            expected += ", or +time for a relative one"
        node = self.scalar(node, what, expected, (_INT, _STR))
        text = node.value.strip()
        offset = 0
        if base is not None and text.startswith("+"):
            text, offset = text[1:], base
        if node.tag == _INT and not re.fullmatch(r"[-+]?\d+", text):
            self.fail(node, f"{what}: {_TIME_EXPECTED}, got {node.value:.60}")
        if len(text) > 40:
            self.fail(node, f"{what}: expected a time of at most {format_time(MAX_TIME_MS)}, got {node.value:.60}")
        try:
            ms = offset + parse_time(text)
        except ValueError as e:
            self.fail(node, f"{what}: {e}")
        if ms > MAX_TIME_MS:
            self.fail(node, f"{what}: expected a time of at most {format_time(MAX_TIME_MS)}, got {node.value:.60}")
        return ms

    def configs(self, node: yaml.Node, what: str, allow_null: bool = False) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for knode, name, vnode in self.pairs(node, what, "a mapping of Kafka config names to values"):
            if not isinstance(name, str):
                self.fail(knode, f"{what}: expected a Kafka config name, got {knode.value}")
            self.config_name(knode, name, f"{what}.{name}")
            out[name] = self.config_value(name, vnode, f"{what}.{name}", allow_null)
        return out

    def producer_configs(self, node: yaml.Node, what: str) -> tuple[tuple[str, int], ...]:
        """A producer's ``configs``: Kafka producer config names (sim.producer_config) to integers."""
        values: dict[str, int] = {}
        for knode, name, vnode in self.pairs(node, what, "a mapping of producer config names to values"):
            if not isinstance(name, str) or name not in PRODUCER_CONFIGS:
                known = ", ".join(sorted(PRODUCER_CONFIGS))
                self.fail(knode, f"{what}: expected a producer config the simulation knows ({known}; acks is the "
                                 f"producer's own field), got {knode.value}")
            d = PRODUCER_CONFIGS[name]
            values[name] = self.integer(vnode, f"{what}.{name}", d.minimum, maximum=d.maximum)
            if values[name] > d.maximum:
                self.fail(vnode, f"{what}.{name}: expected at most {d.maximum}, got {values[name]}")
        try:
            producer_configs(values)
        except ProducerConfigError as e:
            self.fail(node, f"{what}: {e}")
        return tuple(sorted(values.items()))

    def config_name(self, node: yaml.Node, name: str, what: str) -> None:
        """A misspelt known config name is an error (KafkaConfig suggests the right one)."""
        try:
            check_config_name(name)
        except ConfigError as e:
            self.fail(node, f"{what}: {e}")

    def config_value(self, name: str, vnode: yaml.Node, what: str, allow_null: bool = False) -> str | None:
        if allow_null and isinstance(vnode, yaml.ScalarNode) and vnode.tag == _NULL:
            return None
        expected = "a value (a string, a number or a boolean)" + (", or null" if allow_null else "")
        node = self.scalar(vnode, what, expected, (_STR, _INT, _FLOAT, _BOOL))
        value = str(self.value(node)).lower() if node.tag == _BOOL else node.value
        kind = _kind_of_default(name)
        if kind == "bool" and value.strip().lower() not in ("true", "false"):
            self.fail(vnode, f"{what}: expected true or false, got {self.shown(vnode)}")
        if kind == "int" and not re.fullmatch(r"\s*-?\d+\s*", value):
            self.fail(vnode, f"{what}: expected an integer, got {self.shown(vnode)}")
        try:
            check_config_value(name, value)
        except ConfigError as e:
            self.fail(vnode, f"{what}: {e}")
        return value


# --- the world along the steps -------------------------------------------------------------------

@dataclass
class _Topic:
    partitions: int
    rf: int            # partition 0's replication factor (what add_partitions must match)
    line: int
    deleted_at: tuple[int, int] | None = None    # (at_ms, line)


class _World:
    """What the steps may refer to at each point: which brokers run, which topics exist."""

    def __init__(self, cluster: ClusterSpec):
        self.cluster = cluster
        self.brokers = cluster.brokers
        # broker -> (state, at_ms, line): state "up", "down" or "unknown" (after killing "the
        # controller", a log-dir failure that may halt the broker, or a start that may fail)
        self.state: dict[int, tuple[str, int, int]] = {
            b: ("down" if b in cluster.down else "up", 0, 0) for b in cluster.brokers}
        # broker -> when a process of it may have died leaving its ZooKeeper session to time out
        self.session_left: dict[int, int] = {}
        self.topics: dict[str, _Topic] = {}

    def live_count(self) -> int:
        return sum(1 for s, _, _ in self.state.values() if s != "down")

    def existing(self) -> list[str]:
        return sorted(t for t, info in self.topics.items() if info.deleted_at is None)


SESSION_TIMEOUT = "zookeeper.session.timeout.ms"


def _since(at_ms: int, line: int) -> str:
    return "since the start" if line == 0 else f"since {format_time(at_ms)}, line {line}"


class _ScenarioParser(_Parser):
    def __init__(self, text: str, source: str):
        super().__init__(text, source)
        self.base_dir = pathlib.Path(source).parent if source and not source.startswith("<") else pathlib.Path(".")

    # ids, topics, partitions
    def broker(self, node: yaml.Node, what: str) -> int:
        brokers = self.world.brokers
        expected = f"a broker id of the cluster ({', '.join(map(str, brokers))})"
        b = self.integer(node, what, expected=expected)
        if b not in brokers:
            self.fail(node, f"{what}: expected {expected}, got {b}")
        return b

    def broker_list(self, node: yaml.Node, what: str) -> tuple[int, ...]:
        items = self.sequence(node, what, "a list of broker ids")
        out: list[int] = []
        for i, n in enumerate(items):
            b = self.broker(n, f"{what}[{i}]")
            if b in out:
                self.fail(n, f"{what}[{i}]: broker {b} is listed twice")
            out.append(b)
        return tuple(out)

    def assignment(self, node: yaml.Node, what: str, expected_rf: int | None = None) -> tuple[tuple[int, ...], ...]:
        rows = self.sequence(node, what, "a list of replica lists, one per partition, such as [[1, 2], [2, 0]]")
        out = []
        for p, row in enumerate(rows):
            replicas = self.broker_list(row, f"{what}[{p}]")
            rf = expected_rf if expected_rf is not None else len(out[0]) if out else None
            if rf is not None and len(replicas) != rf:
                self.fail(row, f"{what}[{p}]: expected {_plural(rf, 'replica')} (all partitions of a topic have "
                               f"the same replication factor), got {len(replicas)}")
            out.append(replicas)
        return tuple(out)

    def topic_name(self, node: yaml.Node, what: str) -> str:
        name = self.string(node, what, "a topic name")
        try:
            validate_topic_name(name)
        except InvalidTopicError as e:
            self.fail(node, f"{what}: expected a legal topic name: {e}")
        return name

    def topic(self, node: yaml.Node, what: str, at_ms: int, allow_deleted: bool = False) -> str:
        name = self.string(node, what, "a topic name")
        info = self.world.topics.get(name)
        if info is None:
            known = ", ".join(self.world.existing()) or "none"
            self.fail(node, f"{what}: expected a topic that exists at {format_time(at_ms)} ({known}), "
                            f"got {name!r}")
        if info.deleted_at is not None and not allow_deleted:
            when, line = info.deleted_at
            self.fail(node, f"{what}: expected a topic that exists at {format_time(at_ms)}; {name!r} was "
                            f"deleted at {format_time(when)} (line {line})")
        return name

    def partition(self, node: yaml.Node, what: str, at_ms: int, allow_deleted: bool = False) -> tuple[str, int]:
        expected = "a partition: topic-partition (orders-0) or {topic: orders, partition: 0}"
        if isinstance(node, yaml.MappingNode):
            f = self.fields(node, what, ("topic", "partition"), ("topic", "partition"), expected=expected)
            topic = self.topic(f["topic"], f"{what}.topic", at_ms, allow_deleted)
            pnode = f["partition"]
            p = self.integer(pnode, f"{what}.partition", minimum=0)
        else:
            snode = self.scalar(node, what, expected, (_STR,))
            topic, _, index = snode.value.rpartition("-")
            if not topic or not re.fullmatch(r"\d+", index):
                self.fail(node, f"{what}: expected {expected}, got {snode.value!r}")
            info = self.world.topics.get(topic)
            if info is None or (info.deleted_at is not None and not allow_deleted):
                fake = yaml.ScalarNode(_STR, topic, snode.start_mark, snode.end_mark)
                self.topic(fake, what, at_ms, allow_deleted)
            pnode, p = node, int(index)
        count = self.world.topics[topic].partitions
        if p >= count:
            self.fail(pnode, f"{what}: expected a partition of {topic!r} (0 to {count - 1} at "
                             f"{format_time(at_ms)}), got {p}")
        return topic, p

    def partitions(self, node: yaml.Node, what: str, at_ms: int, allow_deleted: bool = False) -> tuple:
        items = self.sequence(node, what, "a list of partitions (such as [orders-0, orders-1])")
        out: list[tuple[str, int]] = []
        for i, n in enumerate(items):
            tp = self.partition(n, f"{what}[{i}]", at_ms, allow_deleted)
            if tp in out:
                self.fail(n, f"{what}[{i}]: partition {tp[0]}-{tp[1]} is listed twice")
            out.append(tp)
        return tuple(out)

    # sections
    def scenario(self) -> Scenario:
        root = self.document()
        if root is None:
            self.fail(1, "expected a scenario: a mapping with name, duration, cluster, ...; the file is empty")
        f = self.fields(root, "scenario", _TOP_KEYS, ("name", "duration", "cluster"),
                        expected="a scenario: a mapping with name, duration, cluster, ...")
        name = self.string(f["name"], "name", "a non-empty name")
        description = self.string(f["description"], "description", nonempty=False) if "description" in f else ""
        seed = self.integer(f["seed"], "seed", minimum=0, maximum=MAX_SEED) if "seed" in f else 0
        duration = self.time(f["duration"], "duration")
        if duration <= 0:
            self.fail(f["duration"], "duration: expected a time > 0")
        self.duration = duration
        start_ms = self.start_time(f["start_time"]) if "start_time" in f else DEFAULT_START_MS
        cluster = self.cluster(f["cluster"])
        self.world = _World(cluster)
        network = self.network(f["network"]) if "network" in f else NetworkSpec()
        self.quorum_spec = self.quorum(f["quorum"]) if "quorum" in f else None
        topics = self.initial_topics(f["topics"]) if "topics" in f else ()
        steps = self.steps(f["steps"]) if "steps" in f else ()
        workload = self.workload(f["workload"]) if "workload" in f else None
        return Scenario(name, description, seed, duration, cluster, topics, workload, network, steps,
                        quorum=self.quorum_spec, start_time_ms=start_ms, source=self.source)

    def start_time(self, node: yaml.Node) -> int:
        expected = "an ISO 8601 date and time such as 2024-03-01T09:00:00Z"
        node = self.scalar(node, "start_time", expected, (_STR, _TIMESTAMP))
        try:
            return parse_start_time(node.value)
        except StartTimeError as e:
            self.fail(node, f"start_time: {e}")

    def cluster(self, node: yaml.Node) -> ClusterSpec:
        f = self.fields(node, "cluster", ("brokers", "down", "racks", "configs"), ("brokers",))
        items = self.sequence(f["brokers"], "cluster.brokers", "a list of broker ids (integers >= 0)")
        if len(items) > MAX_BROKERS:
            self.fail(f["brokers"], f"cluster.brokers: expected at most {MAX_BROKERS} brokers, got {len(items)}")
        brokers: list[int] = []
        for i, n in enumerate(items):
            b = self.integer(n, f"cluster.brokers[{i}]", minimum=0, expected="a broker id (an integer >= 0)")
            if b in brokers:
                self.fail(n, f"cluster.brokers[{i}]: broker {b} is listed twice")
            brokers.append(b)
        self.world = _World(ClusterSpec(tuple(brokers)))
        down: tuple[int, ...] = ()
        if "down" in f:
            down = self.broker_list(f["down"], "cluster.down") if f["down"].value else ()
            if len(down) == len(brokers):
                self.fail(f["down"], "cluster.down: expected at least one broker up at time 0")
        racks: dict[int, str] = {}
        if "racks" in f:
            for knode, key, vnode in self.pairs(f["racks"], "cluster.racks", "a mapping of broker id to rack"):
                b = self.broker(knode, "cluster.racks")
                racks[b] = self.string(vnode, f"cluster.racks.{b}", "a rack name")
            missing = [b for b in brokers if b not in racks]
            if missing:
                self.fail(f["racks"], f"cluster.racks: expected a rack for every broker or for none; "
                                      f"missing {', '.join(map(str, missing))}")
        configs = self.configs(f["configs"], "cluster.configs") if "configs" in f else {}
        return ClusterSpec(tuple(brokers), configs, racks, down)

    def network(self, node: yaml.Node) -> NetworkSpec:
        f = self.fields(node, "network", ("latency", "jitter"))
        latency = self.time(f["latency"], "network.latency") if "latency" in f else NetworkSpec.latency_ms
        jitter = self.time(f["jitter"], "network.jitter") if "jitter" in f else NetworkSpec.jitter_ms
        return NetworkSpec(latency, jitter)

    def quorum(self, node: yaml.Node) -> QuorumSpec:
        f = self.fields(node, "quorum", ("voters", "version", "fetch_max_wait"), ("voters",))
        items = self.sequence(f["voters"], "quorum.voters", "a list of controller node ids (integers >= 0)")
        brokers = self.world.brokers
        voters: list[int] = []
        for i, n in enumerate(items):
            what = f"quorum.voters[{i}]"
            v = self.integer(n, what, minimum=0, expected="a controller node id (an integer >= 0)")
            if v in voters:
                self.fail(n, f"{what}: voter {v} is listed twice")
            if v in brokers:
                self.fail(n, f"{what}: expected a controller node id that is not a broker's "
                             f"({', '.join(map(str, brokers))}), got {v}: brokers and controllers share node ids, "
                             f"and a broker that is also a voter (combined mode) is not simulated")
            voters.append(v)
        version = QuorumSpec.version
        if "version" in f:
            expected = " or ".join(QUORUM_VERSIONS)
            vnode = self.scalar(f["version"], "quorum.version", expected, (_STR, _FLOAT))
            version = vnode.value.strip()
            if version not in QUORUM_VERSIONS:
                self.fail(vnode, f"quorum.version: expected {expected}, got {vnode.value}")
        max_wait = QuorumSpec.fetch_max_wait_ms
        if "fetch_max_wait" in f:
            max_wait = self.time(f["fetch_max_wait"], "quorum.fetch_max_wait")
            if max_wait <= 0:
                self.fail(f["fetch_max_wait"], "quorum.fetch_max_wait: expected a time > 0")
        return QuorumSpec(tuple(voters), version, max_wait)

    def topic_spec(self, node: yaml.Node, what: str, f: dict[str, yaml.Node], at_ms: int, line: int) -> TopicSpec:
        name = self.topic_name(f["name"], f"{what}.name")
        info = self.world.topics.get(name)
        if info is not None and info.deleted_at is None:
            self.fail(f["name"], f"{what}.name: expected a new topic; {name!r} already exists (line {info.line})")
        collides = [t for t in self.world.existing() if t != name and t.replace(".", "_") == name.replace(".", "_")]
        if collides:
            self.fail(f["name"], f"{what}.name: topic {name!r} collides with existing topic {collides[0]!r} "
                                 f"('.' and '_' collide in metric names)")
        partitions = (self.integer(f["partitions"], f"{what}.partitions", minimum=1, maximum=MAX_PARTITIONS)
                      if "partitions" in f else None)
        rf = (self.integer(f["replication_factor"], f"{what}.replication_factor", minimum=1)
              if "replication_factor" in f else None)
        configs = self.configs(f["configs"], f"{what}.configs") if "configs" in f else {}
        assignment = None
        if "assignment" in f:
            assignment = self.assignment(f["assignment"], f"{what}.assignment")
            if partitions is not None and partitions != len(assignment):
                self.fail(f["partitions"], f"{what}.partitions: expected {len(assignment)}, the partitions of the "
                                           f"assignment, got {partitions}")
            if rf is not None and rf != len(assignment[0]):
                self.fail(f["replication_factor"], f"{what}.replication_factor: expected {len(assignment[0])}, the "
                                                   f"replicas per partition of the assignment, got {rf}")
            partitions, rf = len(assignment), len(assignment[0])
        else:
            config = KafkaConfig(self.world.cluster.configs)
            partitions = partitions if partitions is not None else config.get_int("num.partitions")
            rf = rf if rf is not None else config.get_int("default.replication.factor")
            if not 1 <= partitions <= MAX_PARTITIONS:
                self.fail(node, f"{what}.partitions (num.partitions): expected 1 to {MAX_PARTITIONS}, got {partitions}")
            if rf < 1:
                self.fail(node, f"{what}.replication_factor (default.replication.factor): expected at least 1, "
                                f"got {rf}")
            live = self.world.live_count()
            if rf > live:
                where, key = (f["replication_factor"], ".replication_factor") if "replication_factor" in f else (
                    node, " (default.replication.factor)")
                self.fail(where, f"{what}{key}: expected at most {live}, the brokers up at {format_time(at_ms)}, "
                                 f"got {rf}")
        self.world.topics[name] = _Topic(partitions, rf, line)
        return TopicSpec(name, partitions, rf, assignment, configs)

    def initial_topics(self, node: yaml.Node) -> tuple[TopicSpec, ...]:
        out = []
        for i, n in enumerate(self.sequence(node, "topics", "a list of topics", nonempty=False)):
            what = f"topics[{i}]"
            f = self.fields(n, what, ACTIONS["create_topic"], ("name",))
            out.append(self.topic_spec(n, what, f, 0, self.line(n)))
        return tuple(out)

    def workload(self, node: yaml.Node) -> WorkloadSpec:
        f = self.fields(node, "workload", ("producers",), ("producers",))
        producers = []
        for i, n in enumerate(self.sequence(f["producers"], "workload.producers", "a list of producers")):
            what = f"workload.producers[{i}]"
            pf = self.fields(n, what, ("topics", "rate_per_s", "acks", "message_bytes", "start", "stop", "configs"),
                             ("topics", "rate_per_s"))
            tnode = pf["topics"]
            tnodes = [tnode] if isinstance(tnode, yaml.ScalarNode) else self.sequence(
                tnode, f"{what}.topics", "a topic name or a list of topic names")
            topics: list[str] = []
            for j, t in enumerate(tnodes):
                tw = f"{what}.topics" if t is tnode else f"{what}.topics[{j}]"
                name = self.string(t, tw, "a topic name")
                if name not in self.world.topics:
                    known = ", ".join(sorted(self.world.topics)) or "none"
                    self.fail(t, f"{tw}: expected a topic of the scenario (declared in topics or created by a "
                                 f"step: {known}), got {name!r}")
                if name in topics:
                    self.fail(t, f"{tw}: topic {name!r} is listed twice")
                topics.append(name)
            rate = self.number(pf["rate_per_s"], f"{what}.rate_per_s", "a number of messages per second > 0")
            if rate <= 0:
                self.fail(pf["rate_per_s"], f"{what}.rate_per_s: expected a number of messages per second > 0, "
                                            f"got {pf['rate_per_s'].value:.60}")
            if rate > MAX_RATE_PER_S:
                self.fail(pf["rate_per_s"], f"{what}.rate_per_s: expected at most {MAX_RATE_PER_S} messages per "
                                            f"second, got {pf['rate_per_s'].value:.60}")
            acks = -1
            if "acks" in pf:
                anode = self.scalar(pf["acks"], f"{what}.acks", "0, 1 or all (or -1)", (_INT, _STR))
                table = {"0": 0, "1": 1, "all": -1, "-1": -1}
                if anode.value.strip().lower() not in table:
                    self.fail(anode, f"{what}.acks: expected 0, 1 or all (or -1), got {anode.value}")
                acks = table[anode.value.strip().lower()]
            size = (self.integer(pf["message_bytes"], f"{what}.message_bytes", minimum=1, maximum=MAX_MESSAGE_BYTES)
                    if "message_bytes" in pf else 1024)
            start = self.time(pf["start"], f"{what}.start") if "start" in pf else 0
            stop = self.time(pf["stop"], f"{what}.stop") if "stop" in pf else self.duration
            if start >= self.duration:
                self.fail(pf["start"], f"{what}.start: expected a time before the end of the run "
                                       f"({format_time(self.duration)}), got {format_time(start)}")
            if stop <= start or stop > self.duration:
                self.fail(pf["stop"], f"{what}.stop: expected a time after start ({format_time(start)}) and at most "
                                      f"the duration ({format_time(self.duration)}), got {format_time(stop)}")
            configs = self.producer_configs(pf["configs"], f"{what}.configs") if "configs" in pf else ()
            producers.append(ProducerSpec(tuple(topics), rate, acks, size, start, stop, configs))
        return WorkloadSpec(tuple(producers))

    def steps(self, node: yaml.Node) -> tuple[Step, ...]:
        out: list[Step] = []
        previous = (0, 0)    # (at_ms, line)
        for i, n in enumerate(self.sequence(node, "steps", "a list of steps", nonempty=False)):
            what = f"steps[{i}]"
            pairs = self.pairs(n, what, "a step: a mapping with at, action and the action's arguments")
            keys = {k: v for _, k, v in pairs}
            if "action" not in keys:
                self.fail(n, f"{what}: missing 'action'")
            anode = keys["action"]
            action = self.string(anode, f"{what}.action", "an action name")
            if action not in ACTIONS:
                close = difflib.get_close_matches(action, ACTIONS, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.fail(anode, f"{what}.action: unknown action {action!r}; {hint}expected one of: "
                                 f"{', '.join(ACTIONS)}")
            f = self.fields(n, what, ("at", "action", "note") + ACTIONS[action], ("at",))
            what = action
            at = self.time(f["at"], f"{what}.at", base=previous[0])
            if at < previous[0]:
                self.fail(f["at"], f"{what}.at: expected steps in time order: {format_time(at)} is before the "
                                   f"previous step's {format_time(previous[0])} (line {previous[1]})")
            if at > self.duration:
                self.fail(f["at"], f"{what}.at: expected a time within the duration ({format_time(self.duration)}), "
                                   f"got {format_time(at)}")
            note = self.string(f["note"], f"{what}.note", nonempty=False) if "note" in f else ""
            args_f = {k: v for k, v in f.items() if k not in ("at", "action", "note")}
            args = getattr(self, f"step_{action}")(n, what, args_f, at)
            out.append(Step(at, action, args, self.line(n), note))
            previous = (at, self.line(n))
        return tuple(out)

    # --- actions ---------------------------------------------------------------------------------
    def require(self, node: yaml.Node, what: str, f: dict, key: str) -> yaml.Node:
        if key not in f:
            self.fail(node, f"{what}: missing {key!r}")
        return f[key]

    def one_of(self, node: yaml.Node, what: str, f: dict, keys: Sequence[str]) -> str:
        """The one of ``keys`` that is given (an error if none or several are)."""
        given = sorted((k for k in keys if k in f), key=lambda k: self.line(f[k]))
        if len(given) > 1:
            self.fail(f[given[-1]], f"{what}: expected one of {_alternatives(keys)}, "
                                    f"not {' and '.join(map(repr, given))}")
        if not given:
            self.fail(node, f"{what}: missing {_alternatives(keys)}")
        return given[0]

    def set_state(self, b: int, state: str, at_ms: int, line: int) -> None:
        self.world.state[b] = (state, at_ms, line)

    def running(self, node: yaml.Node, what: str, b: int, at_ms: int) -> None:
        state, when, line = self.world.state[b]
        if state == "down":
            self.fail(node, f"{what}: expected a running broker; broker {b} is not running at "
                            f"{format_time(at_ms)} ({'down ' + _since(when, line) if line else 'in cluster.down'})")

    def target(self, node: yaml.Node, what: str, f: dict, at_ms: int) -> tuple[int | None, bool]:
        """``broker`` or ``controller: true``."""
        key = self.one_of(node, what, f, ("broker", "controller"))
        if key == "controller":
            if not self.boolean(f["controller"], f"{what}.controller"):
                self.fail(f["controller"], f"{what}.controller: expected true (or give 'broker' instead)")
            if self.world.live_count() == 0:
                self.fail(f["controller"], f"{what}: expected a running broker to be the controller; none is "
                                           f"running at {format_time(at_ms)}")
            return None, True
        b = self.broker(f["broker"], f"{what}.broker")
        self.running(f["broker"], what, b, at_ms)
        return b, False

    def stop_target(self, node, what, f, at_ms, kill: bool) -> dict:
        b, controller = self.target(node, what, f, at_ms)
        if controller:
            for x, (state, _, _) in self.world.state.items():
                if state == "up":
                    self.set_state(x, "unknown", at_ms, self.line(node))
                    if kill:
                        self.world.session_left[x] = at_ms
        else:
            self.set_state(b, "down", at_ms, self.line(node))
            if kill:
                self.world.session_left[b] = at_ms
            else:
                self.world.session_left.pop(b, None)
        return {"broker": b, "controller": controller}

    def step_kill_broker(self, node, what, f, at_ms) -> dict:
        return self.stop_target(node, what, f, at_ms, kill=True)

    def step_controlled_shutdown(self, node, what, f, at_ms) -> dict:
        return self.stop_target(node, what, f, at_ms, kill=False)

    def step_start_broker(self, node, what, f, at_ms) -> dict:
        bnode = self.require(node, what, f, "broker")
        b = self.broker(bnode, f"{what}.broker")
        state, when, line = self.world.state[b]
        if state == "up":
            self.fail(bnode, f"{what}.broker: expected a broker that is not running; broker {b} is running at "
                             f"{format_time(at_ms)} ({_since(when, line)})")
        # Within the session timeout of a kill, the old registration may still be there: the start may
        # fail (known only when the run gets there).
        died = self.world.session_left.pop(b, None)
        # the session's timeout as the simulation's ZooKeeper (default bounds) negotiates it
        timeout = negotiated_session_timeout(int(self.world.cluster.configs.get(SESSION_TIMEOUT,
                                                                                 DEFAULTS[SESSION_TIMEOUT])))
        self.set_state(b, "unknown" if died is not None and at_ms - died < timeout else "up", at_ms, self.line(node))
        return {"broker": b}

    def step_expire_session(self, node, what, f, at_ms) -> dict:
        b, controller = self.target(node, what, f, at_ms)
        notice = self.time(f["notice_after"], f"{what}.notice_after") if "notice_after" in f else 0
        return {"broker": b, "controller": controller, "notice_after_ms": notice}

    def step_fail_log_dir(self, node, what, f, at_ms) -> dict:
        bnode = self.require(node, what, f, "broker")
        b = self.broker(bnode, f"{what}.broker")
        self.running(bnode, what, b, at_ms)
        directory = None
        if "dir" in f:
            directory = self.string(f["dir"], f"{what}.dir", "a log directory")
            dirs = [d.strip() for d in self.world.cluster.configs.get("log.dirs", "").split(",") if d.strip()]
            if dirs and directory not in dirs:
                self.fail(f["dir"], f"{what}.dir: expected one of the cluster's log.dirs ({', '.join(dirs)}), "
                                    f"got {directory!r}")
        self.set_state(b, "unknown", at_ms, self.line(node))
        self.world.session_left[b] = at_ms      # it may halt
        return {"broker": b, "dir": directory}

    def net_node(self, node: yaml.Node, what: str, extra: Sequence[str] = ()) -> int | str:
        names = _NODES + tuple(extra)
        expected = f"a broker id or one of {', '.join(names)}"
        if isinstance(node, yaml.ScalarNode) and node.tag == _STR:
            if node.value not in names:
                self.fail(node, f"{what}: expected {expected}, got {node.value!r}")
            return node.value
        return self.broker(node, what)

    def step_partition_network(self, node, what, f, at_ms) -> dict:
        key = self.one_of(node, what, f, ("groups", "isolate"))
        if key == "groups":
            if "from" in f:
                self.fail(f["from"], f"{what}.from: expected only with 'isolate', not with 'groups'")
            gnode = f["groups"]
            groups: list[tuple] = []
            seen: dict = {}
            for i, g in enumerate(self.sequence(gnode, f"{what}.groups", "a list of groups of nodes, such as "
                                                                          "[[0, 1], [2, zk]]")):
                members = []
                for j, m in enumerate(self.sequence(g, f"{what}.groups[{i}]", "a list of nodes (broker ids, zk, "
                                                                               "clients)")):
                    x = self.net_node(m, f"{what}.groups[{i}][{j}]")
                    if x in seen:
                        self.fail(m, f"{what}.groups[{i}][{j}]: {x!r} is already in group {seen[x]}; the groups "
                                     f"must not overlap")
                    seen[x] = i
                    members.append(x)
                groups.append(tuple(members))
            rest = [x for x in self.world.brokers + _NODES if x not in seen]
            if len(groups) == 1 and not rest:
                self.fail(gnode, f"{what}.groups: expected at least two groups; one group of every node cuts nothing")
            return {"groups": tuple(groups), "isolate": None, "from": None}
        inode = f["isolate"]
        isolate = (inode.value if isinstance(inode, yaml.ScalarNode) and inode.value == "controller"
                   else self.broker(inode, f"{what}.isolate"))
        sources: tuple = ("all",)
        if "from" in f:
            items = self.sequence(f["from"], f"{what}.from", "a list of zk, clients, brokers, all or broker ids")
            out: list = []
            for i, m in enumerate(items):
                x = self.net_node(m, f"{what}.from[{i}]", ("brokers", "all"))
                if x == isolate:
                    self.fail(m, f"{what}.from[{i}]: expected nodes other than the isolated broker, got {x}")
                if x in out:
                    self.fail(m, f"{what}.from[{i}]: {x!r} is listed twice")
                out.append(x)
            sources = tuple(out)
        return {"groups": None, "isolate": isolate, "from": sources}

    def step_heal_network(self, node, what, f, at_ms) -> dict:
        return {}

    def step_slow_follower(self, node, what, f, at_ms) -> dict:
        bnode = self.require(node, what, f, "broker")
        b = self.broker(bnode, f"{what}.broker")
        key = self.one_of(node, what, f, ("delay", "factor"))
        delay = factor = None
        if key == "delay":
            delay = self.time(f["delay"], f"{what}.delay")
            if delay <= 0:
                self.fail(f["delay"], f"{what}.delay: expected a time > 0")
        else:
            factor = self.number(f["factor"], f"{what}.factor", "a slow-down factor > 1")
            if factor <= 1:
                self.fail(f["factor"], f"{what}.factor: expected a slow-down factor > 1, got {f['factor'].value}")
        until = None
        if "until" in f:
            until = self.time(f["until"], f"{what}.until", base=at_ms)
            if until <= at_ms:
                self.fail(f["until"], f"{what}.until: expected a time after the step's {format_time(at_ms)}, "
                                      f"got {format_time(until)}")
        return {"broker": b, "delay_ms": delay, "factor": factor, "until_ms": until}

    def step_catch_up(self, node, what, f, at_ms) -> dict:
        return {"broker": self.broker(f["broker"], f"{what}.broker") if "broker" in f else None}

    def step_create_topic(self, node, what, f, at_ms) -> dict:
        self.require(node, what, f, "name")
        spec = self.topic_spec(node, what, f, at_ms, self.line(node))
        return {"name": spec.name, "partitions": spec.partitions, "replication_factor": spec.replication_factor,
                "assignment": spec.assignment, "configs": spec.configs}

    def step_delete_topic(self, node, what, f, at_ms) -> dict:
        topic = self.topic(self.require(node, what, f, "topic"), f"{what}.topic", at_ms)
        self.world.topics[topic].deleted_at = (at_ms, self.line(node))
        return {"topic": topic}

    def step_add_partitions(self, node, what, f, at_ms) -> dict:
        topic = self.topic(self.require(node, what, f, "topic"), f"{what}.topic", at_ms)
        info = self.world.topics[topic]
        if "count" not in f and "assignment" not in f:
            self.fail(node, f"{what}: missing 'count' or 'assignment'")
        count = None
        if "count" in f:
            count = self.integer(f["count"], f"{what}.count", minimum=1, maximum=MAX_PARTITIONS)
            if count <= info.partitions:
                self.fail(f["count"], f"{what}.count: expected a new total larger than the {info.partitions} "
                                      f"partitions of {topic!r}, got {count}")
        assignment = None
        if "assignment" in f:
            assignment = self.assignment(f["assignment"], f"{what}.assignment", expected_rf=info.rf)
            if count is not None and count != info.partitions + len(assignment):
                self.fail(f["assignment"], f"{what}.assignment: expected {count - info.partitions} new partitions "
                                           f"(count {count} - {info.partitions}), got {len(assignment)}")
            count = info.partitions + len(assignment)
        info.partitions = count
        return {"topic": topic, "count": count, "assignment": assignment}

    def step_reassign(self, node, what, f, at_ms) -> dict:
        key = self.one_of(node, what, f, ("json", "file"))
        vnode = f[key]
        lines: dict[int, int] = {}
        if key == "json":
            if isinstance(vnode, yaml.MappingNode):
                text = json.dumps(self.value(vnode), default=str)
                for k, v in vnode.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == "partitions" and isinstance(v, yaml.SequenceNode):
                        lines.update((i, self.line(e)) for i, e in enumerate(v.value))
                    elif isinstance(k, yaml.ScalarNode) and k.value == "version":
                        lines[-1] = self.line(v)
            else:
                text = self.string(vnode, f"{what}.json", "Kafka's reassignment JSON (a mapping, or a string of JSON)")
            source = f"{what}.json"
        else:
            name = self.string(vnode, f"{what}.file", "a path to a reassignment JSON file")
            path = self.base_dir / name
            try:
                with open(path, "rb") as fh:
                    text = fh.read(MAX_SCENARIO_BYTES + 1)
            except OSError as e:
                self.fail(vnode, f"{what}.file: expected a readable reassignment JSON file, got {name!r} "
                                 f"({e.strerror}: {path})")
            source = f"{what}.file {name}"
        try:
            reassignment = parse_reassignment_json(text, source)
        except AdminFileError as e:
            m = re.search(r"partitions\[(\d+)\]", str(e))
            line = lines.get(int(m.group(1))) if m else lines.get(-1) if "version" in str(e) else None
            self.fail(line or vnode, str(e))
        for i, ((topic, p), replicas) in enumerate(reassignment.items()):
            where = lines.get(i) or vnode
            entry = f"{source}: partitions[{i}]"
            info = self.world.topics.get(topic)
            if info is None or info.deleted_at is not None:
                self.fail(where, f"{entry}: expected a topic that exists at {format_time(at_ms)} "
                                 f"({', '.join(self.world.existing()) or 'none'}), got {topic!r}")
            if p >= info.partitions:
                self.fail(where, f"{entry}: expected a partition of {topic!r} (0 to {info.partitions - 1}), got {p}")
            unknown = [b for b in replicas if b not in self.world.brokers]
            if unknown:
                self.fail(where, f"{entry}: expected broker ids of the cluster "
                                 f"({', '.join(map(str, self.world.brokers))}), got {unknown[0]}")
            if p == 0:
                info.rf = len(replicas)
        return {"reassignment": dict(sorted(reassignment.items()))}

    def step_cancel_reassignment(self, node, what, f, at_ms) -> dict:
        return {"partitions": self.partitions(self.require(node, what, f, "partitions"), f"{what}.partitions", at_ms)}

    def step_elect_preferred(self, node, what, f, at_ms) -> dict:
        return {"partitions": self.partitions(f["partitions"], f"{what}.partitions", at_ms)
                if "partitions" in f else None}

    def step_elect_unclean(self, node, what, f, at_ms) -> dict:
        return {"partitions": self.partitions(self.require(node, what, f, "partitions"), f"{what}.partitions", at_ms)}

    def step_set_config(self, node, what, f, at_ms) -> dict:
        enode = self.require(node, what, f, "entity")
        entity = self.string(enode, f"{what}.entity", "broker or topic")
        if entity not in ("broker", "topic"):
            self.fail(enode, f"{what}.entity: expected broker or topic, got {entity!r}")
        name: int | str | None = None
        if entity == "topic":
            name = self.topic(self.require(node, what, f, "name"), f"{what}.name", at_ms)
        elif "name" in f:
            name = self.broker(f["name"], f"{what}.name")
        cnode = self.require(node, what, f, "config")
        config = self.string(cnode, f"{what}.config", "a Kafka config name")
        if entity == "broker" and config in READ_ONLY_BROKER_CONFIGS:
            self.fail(cnode, f"{what}.config: expected a dynamic broker config; {config} is read-only (Kafka reads "
                             f"it at start-up only): set it in cluster.configs")
        self.config_name(cnode, config, f"{what}.config")
        value = self.config_value(config, self.require(node, what, f, "value"), f"{what}.value", allow_null=True)
        return {"entity": entity, "name": name, "config": config, "value": value}

    def step_note(self, node, what, f, at_ms) -> dict:
        return {"text": self.string(self.require(node, what, f, "text"), f"{what}.text")}

    def step_describe(self, node, what, f, at_ms) -> dict:
        if "topics" not in f:
            return {"topics": None}
        items = self.sequence(f["topics"], f"{what}.topics", "a list of topic names")
        topics = tuple(self.topic(n, f"{what}.topics[{i}]", at_ms, allow_deleted=True) for i, n in enumerate(items))
        return {"topics": topics}

    def step_describe_quorum(self, node, what, f, at_ms) -> dict:
        if self.quorum_spec is None:
            self.fail(node, f"{what}: expected a quorum section in the scenario (the metadata quorum to describe); "
                            f"there is none")
        return {"replication": self.boolean(f["replication"], f"{what}.replication") if "replication" in f else False}

    def step_expect(self, node, what, f, at_ms) -> dict:
        out = dict.fromkeys(ACTIONS["expect"])
        key = self.one_of(node, what, f, ("partition", "topic", "controller"))
        allowed = {"partition": ("leader", "isr", "replicas"), "topic": ("exists",), "controller": ()}[key]
        for k in f:     # (one_of has refused a second subject)
            if k != key and k not in allowed:
                self.fail(f[k], f"{what}.{k}: expected only with {'topic' if k == 'exists' else 'partition'!r}")
        if key == "controller":
            out["controller"] = self.broker(f["controller"], f"{what}.controller")
        elif key == "topic":
            out["topic"] = self.topic(f["topic"], f"{what}.topic", at_ms, allow_deleted=True)
            out["exists"] = self.boolean(self.require(node, what, f, "exists"), f"{what}.exists")
        else:
            out["partition"] = self.partition(f["partition"], f"{what}.partition", at_ms, allow_deleted=True)
            if not any(k in f for k in allowed):
                self.fail(node, f"{what}: missing 'leader', 'isr' or 'replicas' (what to check)")
            if "leader" in f:
                lnode = f["leader"]
                if isinstance(lnode, yaml.ScalarNode) and (lnode.tag == _NULL or lnode.value in ("none", "-1")):
                    out["leader"] = -1
                else:
                    out["leader"] = self.broker(lnode, f"{what}.leader")
            if "isr" in f:
                out["isr"] = self.broker_list(f["isr"], f"{what}.isr")
            if "replicas" in f:
                out["replicas"] = self.broker_list(f["replicas"], f"{what}.replicas")
        return out


# --- entry points --------------------------------------------------------------------------------

def parse_scenario(text: str, source: str = "<string>") -> Scenario:
    """The scenario of a YAML text; ``source`` names it in errors (and ``reassign.file`` paths are
    relative to its directory). Raises :class:`ScenarioError`."""
    parser = _ScenarioParser(text, source)
    try:
        return dataclasses.replace(parser.scenario(), text=text)
    finally:
        parser.loader.dispose()


def load_scenario(path: str | pathlib.Path) -> Scenario:
    """The scenario of a YAML file. Raises :class:`ScenarioError`."""
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise ScenarioError(str(path), 0, f"expected a readable scenario file ({e.strerror})") from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(str(path), 1, f"expected a scenario file of at most {MAX_SCENARIO_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ScenarioError(str(path), line, f"expected a UTF-8 text file (byte {e.start}: {e.reason})") from None
    return parse_scenario(text, str(path))


def cut_links(args: dict, brokers: Sequence[int], controller: int | None = None) -> frozenset[frozenset]:
    """The links a ``partition_network`` step cuts, as ``frozenset({a, b})`` of nodes (broker ids,
    ``"zk"``, ``"clients"``); ``controller`` resolves ``isolate: controller``."""
    nodes = tuple(brokers) + _NODES
    if args["groups"] is not None:
        group = {x: i for i, g in enumerate(args["groups"]) for x in g}
        rest = len(args["groups"])
        return frozenset(frozenset((a, b)) for i, a in enumerate(nodes) for b in nodes[i + 1:]
                         if group.get(a, rest) != group.get(b, rest))
    isolated = controller if args["isolate"] == "controller" else args["isolate"]
    if isolated is None:
        raise ValueError("isolate: controller needs the active controller's id")
    others: set = set()
    for x in args["from"]:
        if x == "all":
            others.update(n for n in nodes if n != isolated)
        elif x == "brokers":
            others.update(b for b in brokers if b != isolated)
        else:
            others.add(x)
    others.discard(isolated)
    return frozenset(frozenset((isolated, x)) for x in others)


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _ref(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def _topic_yaml(spec: TopicSpec) -> dict:
    out: dict = {"name": spec.name}
    if spec.assignment is not None:
        out["assignment"] = _plain(spec.assignment)
    else:
        out["partitions"] = spec.partitions
        out["replication_factor"] = spec.replication_factor
    if spec.configs:
        out["configs"] = dict(spec.configs)
    return out


def _step_yaml(step: Step) -> dict:
    out: dict = {"at": format_time(step.at_ms), "action": step.action}
    args = step.args
    if step.action == "create_topic":
        out.update(_topic_yaml(TopicSpec(**args)))
    elif step.action == "reassign":
        out["json"] = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)}
                                                    for (t, p), r in args["reassignment"].items()]}
    else:
        for key, value in args.items():
            if (key == "controller" and value is False) or (
                    value is None and not (step.action == "set_config" and key == "value")):
                continue
            if key.endswith("_ms"):
                key, value = key[:-3], format_time(value)
            elif key == "partition":
                value = _ref(value)
            elif key == "partitions":
                value = [_ref(tp) for tp in value]
            elif key == "leader" and value == -1:
                value = "none"
            out[key] = _plain(value)
    if step.note:
        out["note"] = step.note
    return out


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as YAML that :func:`parse_scenario` reads back to an equal scenario."""
    doc: dict = {"name": scenario.name}
    if scenario.description:
        doc["description"] = scenario.description
    doc["seed"] = scenario.seed
    doc["duration"] = format_time(scenario.duration_ms)
    if scenario.start_time_ms != DEFAULT_START_MS:
        doc["start_time"] = format_start_time(scenario.start_time_ms)
    cluster: dict = {"brokers": list(scenario.cluster.brokers)}
    if scenario.cluster.down:
        cluster["down"] = list(scenario.cluster.down)
    if scenario.cluster.racks:
        cluster["racks"] = dict(scenario.cluster.racks)
    if scenario.cluster.configs:
        cluster["configs"] = dict(scenario.cluster.configs)
    doc["cluster"] = cluster
    doc["network"] = {"latency": format_time(scenario.network.latency_ms),
                      "jitter": format_time(scenario.network.jitter_ms)}
    if scenario.quorum is not None:
        q = scenario.quorum
        doc["quorum"] = {"voters": list(q.voters), "version": q.version,
                         "fetch_max_wait": format_time(q.fetch_max_wait_ms)}
    if scenario.topics:
        doc["topics"] = [_topic_yaml(t) for t in scenario.topics]
    if scenario.workload is not None:
        doc["workload"] = {"producers": [
            {"topics": list(p.topics), "rate_per_s": p.rate_per_s, "acks": {0: 0, 1: 1, -1: "all"}[p.acks],
             "message_bytes": p.message_bytes, "start": format_time(p.start_ms), "stop": format_time(p.stop_ms),
             **({"configs": dict(p.configs)} if p.configs else {})}
            for p in scenario.workload.producers]}
    if scenario.steps:
        doc["steps"] = [_step_yaml(s) for s in scenario.steps]
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sim.scenario FILE...``: check scenarios; one line per file; exit 1 if any is malformed."""
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print("usage: python -m sim.scenario SCENARIO.yaml...", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            s = load_scenario(path)
        except ScenarioError as e:
            print(e)
            status = 1
            continue
        producers = len(s.workload.producers) if s.workload else 0
        print(f"{path}: ok: {s.name}, {_plural(len(s.cluster.brokers), 'broker')}, {_plural(len(s.topics), 'topic')}, "
              f"{_plural(producers, 'producer')}, {_plural(len(s.steps), 'step')}, {format_time(s.duration_ms)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
