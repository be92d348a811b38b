"""``kcontroller`` subcommands that drive the cluster an event log describes, and append to that log.

``new-cluster`` starts a log; every other command here rebuilds the cluster from the log (its
latest ClusterSnapshot plus the tail, every record checked as ``replay`` checks it), carries out
one operator action as Kafka's tools would (``kafka-reassign-partitions.sh`` with its actions,
``kafka-leader-election.sh``, ``kafka-topics.sh --delete``, a broker's shutdown, ...), appends
what happened to the log and prints the tool's answer. ``kcontroller log``/``describe`` then show it.

Every command runs at the cluster's current time unless ``--at T`` (ms since the log's start) says
otherwise; ``advance`` lets time pass. ``--json`` prints, instead of the tool's text, one JSON document:
the command, the log, its records and time after the command, the exit status, the command's result
(per command, docs/operations.md#json-output) and the tool's text lines (``output``).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys

from controller import reassign_tool
from controller.admin_files import (
    AdminFileError, format_reassignment_json, parse_election_json, parse_reassignment_file, parse_topics_to_move_json,
    read_admin_file,
)
from controller.assignment import InvalidReplicationFactorError
from controller.config import ConfigError
from controller.embedding.cluster import Cluster, ClusterError
from controller.embedding.replay import ResumeError, resume_log
from controller.store.kafka_zk_client import AdminError
from events.log import FsyncPolicy, LogReader, LogWriter
from kcontroller.files import new_event_log
from kcontroller.logging_setup import use_clock
from statemachines.kafka_log_format import (
    DEFAULT_START_TIME, StartTimeError, format_start_time, log_start_ms, parse_start_time, wall_time,
)
from statemachines.leader_and_isr import TopicPartition

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2

# Sizes a user can give (docs/operations.md#limits).
MAX_BROKERS = 10_000
MAX_BROKER_ID = 2**31 - 1
MAX_PARTITIONS = 1_000_000      # per topic
MAX_REPLICATION_FACTOR = 32_767  # Kafka's replication factor is a Java short
MAX_ADVANCE_MS = 7 * 24 * 3600 * 1000
MAX_SEED = 2**64 - 1              # msgpack uint64
MAX_SWEEP_SEEDS = 100_000
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_range(value: int | None, what: str, low: int, high: int) -> None:
    """ClusterError (exit 2) for an option value outside ``low..high``."""
    if value is not None and not low <= value <= high:
        raise ClusterError(f"{what} must be in {low}..{high}, got {value}")


def _tps(partitions) -> str:
    return ",".join(str(TopicPartition(*tp)) for tp in partitions)


def _config_pairs(values: list[str] | None, what: str) -> dict[str, str]:
    out = {}
    for item in values or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ClusterError(f"{what} must look like NAME=VALUE, got {item!r}")
        out[name] = value
    return out


class _Pending:
    """The records a command produces, held until it has completed: a command refused half-way (an
    exception) appends nothing, so the log stays byte-identical."""

    def __init__(self):
        self.elements: list = []

    def __call__(self, record) -> None:
        self.elements.append(record)

    def append_columns(self, batch) -> None:
        self.elements.append(batch)

    def write_to(self, writer: LogWriter) -> None:
        for e in self.elements:
            if isinstance(e, tuple):
                writer.append(e)
            else:
                writer.append_columns(e)


@contextlib.contextmanager
def continued_cluster(log_dir: str):
    """The cluster of ``log_dir`` (its writer lock held), whose new records are appended to that log
    when the block completes, and dropped if it raises."""
    if not os.path.isdir(log_dir) or not os.listdir(log_dir):
        raise ClusterError(f"{log_dir} holds no event log; start one with kcontroller new-cluster")
    with LogWriter(log_dir, fsync=FsyncPolicy.per_batch()) as writer:
        pending = _Pending()
        cluster = resume_log(log_dir, pending)
        cluster.start_ms = log_start_ms(next(iter(LogReader(log_dir).records()), None))
        use_clock(cluster.clock, cluster.start_ms)
        yield cluster
        end = (writer.segment_path, os.path.getsize(writer.segment_path))
        try:
            pending.write_to(writer)
            writer.flush()
        except OSError:   # LogWriteError: disk full, ...
            _cut_back(log_dir, *end)
            raise


def _cut_back(log_dir: str, segment: str, size: int) -> None:
    """Remove what a failed command wrote (we still hold the writer lock): the log ends where it ended before,
    so it can be continued (a log ending half-way through a command's records would not replay)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(log_dir):
            path = os.path.join(log_dir, name)
            if name.endswith(".kclog") and name > os.path.basename(segment):
                os.unlink(path)
        with open(segment, "r+b") as f:
            f.truncate(size)
            os.fsync(f.fileno())


def add_parsers(sub) -> None:
    def cluster_cmd(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("log_dir", metavar="LOG_DIR", help="the event log of the cluster (kcontroller new-cluster "
                                                          "starts one); the command appends to it")
        p.add_argument("--at", type=int, metavar="T", help="simulated time of the action in ms since the log's "
                                                           "start (default: the log's current time)")
        p.add_argument("--json", action="store_true",
                       help="print the result as one JSON document instead of the tool's text")
        return p

    p = sub.add_parser("new-cluster", help="start an event log with a new cluster: brokers, configs, topics")
    p.add_argument("log_dir", metavar="LOG_DIR", help="the directory of the new event log")
    p.add_argument("--brokers", type=int, default=3, help="broker ids 0..N-1 (default: %(default)s)")
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="broker config by Kafka name")
    p.add_argument("--topic", action="append", metavar="NAME:PARTITIONS:RF", help="a topic to create")
    p.add_argument("--seed", type=int, default=0, help="seed of the replica placement (default: %(default)s)")
    p.add_argument("--racks", metavar="RACK,RACK,...",
                   help="broker.rack of brokers 0, 1, ... (one per broker; default: none)")
    p.add_argument("--start-time", metavar="ISO8601",
                   help="the date and time of the cluster's simulated time 0, e.g. 2024-03-01T09:00:00Z: how its "
                        f"log's times are shown (default: {DEFAULT_START_TIME})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing log in LOG_DIR")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = cluster_cmd("create-topic", "kafka-topics.sh --create")
    p.add_argument("--topic", required=True, help="the topic's name")
    p.add_argument("--partitions", type=int, help="its partition count (default: the broker config num.partitions)")
    p.add_argument("--replication-factor", type=int,
                   help="its replication factor (default: the broker config default.replication.factor)")
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="topic config override")

    p = cluster_cmd("delete-topic", "kafka-topics.sh --delete: queue a topic for deletion")
    p.add_argument("--topic", required=True, help="the topic to delete")

    p = cluster_cmd("reassign", "kafka-reassign-partitions.sh: --generate, --execute, --verify, --cancel or --list")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--generate", action="store_true",
                        help="propose an assignment of the partitions of --topics-to-move-json-file's topics over "
                             "--broker-list (it executes nothing and appends nothing to the log)")
    action.add_argument("--execute", action="store_true",
                        help="start the reassignments of --reassignment-json-file, after printing the current "
                             "assignment to save for a rollback (the default action when none is given)")
    action.add_argument("--verify", action="store_true",
                        help="the status of each reassignment of --reassignment-json-file; once none is in "
                             "progress, clear the throttles (unless --preserve-throttles)")
    action.add_argument("--cancel", action="store_true",
                        help="cancel the active reassignments of --reassignment-json-file's partitions, then clear the "
                             "throttles (unless --preserve-throttles)")
    action.add_argument("--list", action="store_true", help="list the partitions being reassigned")
    p.add_argument("--reassignment-json-file", metavar="FILE",
                   help='kafka-reassign-partitions.sh\'s file: {"version":1,"partitions":[{"topic":..., '
                        '"partition":..., "replicas":[...]}]} (with --execute, --verify, --cancel)')
    p.add_argument("--topics-to-move-json-file", metavar="FILE",
                   help='with --generate: the topics whose partitions move: {"version":1,"topics":[{"topic":...}]}')
    p.add_argument("--broker-list", metavar="IDS",
                   help='with --generate: the brokers to move them to, e.g. "0,1,2" (brokers not in the cluster are '
                        'left out, as Kafka does)')
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="with --generate: ignore the brokers' broker.rack")
    p.add_argument("--seed", type=int, metavar="N",
                   help="with --generate: the seed of the placement's first broker and replica shift, which Kafka "
                        "draws at random (default: the cluster's seed, so the same cluster proposes the same)")
    p.add_argument("--throttle", type=int, metavar="BYTES_PER_S",
                   help="with --execute: set leader/follower.replication.throttled.rate on the brokers that move "
                        "replicas and leader/follower.replication.throttled.replicas on their topics (recorded, not "
                        "enforced: the cluster has no data plane); --verify clears them")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, metavar="BYTES_PER_S",
                   help="with --execute: set replica.alter.log.dirs.io.max.bytes.per.second on the brokers whose "
                        "replicas the file moves between log directories")
    p.add_argument("--additional", action="store_true",
                   help="with --execute: start these reassignments although others are in progress")
    p.add_argument("--preserve-throttles", action="store_true",
                   help="with --verify or --cancel: leave the throttle configs as they are")
    p.add_argument("--via", choices=["api", "zk"],
                   help="with --execute: AlterPartitionReassignments (api, the tool since 2.4; the default) or "
                        "/admin/reassign_partitions (zk)")

    p = cluster_cmd("elect-leaders", "kafka-leader-election.sh")
    p.add_argument("--election-type", required=True, type=str.lower, choices=["preferred", "unclean"],
                   help="preferred: the first live ISR replica of the assignment; unclean: any live replica when "
                        "no ISR replica is live")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--path-to-json-file", metavar="FILE",
                       help='kafka-leader-election.sh\'s file: {"partitions":[{"topic":..., "partition":...}]}')
    which.add_argument("--topic", help="one partition of this topic (with --partition)")
    p.add_argument("--partition", type=int, help="with --topic")

    for name, help_text in (("start-broker", "start (or restart) a broker"),
                            ("kill-broker", "kill -9 a broker (its session times out later)"),
                            ("shutdown-broker", "shut a broker down: controlled shutdown with Kafka's retries, "
                                                "then stop")):
        p = cluster_cmd(name, help_text)
        p.add_argument("--broker-id", type=int, required=True, help="the broker's id")
        if name == "start-broker":
            p.add_argument("--rack", help="its broker.rack (default: the rack it had, if it ran before)")

    p = cluster_cmd("advance", "let simulated time pass (sessions time out, scheduled tasks run)")
    p.add_argument("--ms", type=int, required=True, help="how many milliseconds pass (from --at, if given)")

    cluster_cmd("catch-up", "followers rejoin the ISRs (each leader sends AlterPartition), completing "
                            "reassignments")


def cmd_new_cluster(args: argparse.Namespace) -> int:
    check_range(args.brokers, "--brokers", 1, MAX_BROKERS)
    check_range(args.seed, "--seed", 0, MAX_SEED)
    topics = []
    for spec in args.topic or ():
        parts = spec.split(":")
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            raise ClusterError(f"--topic must look like NAME:PARTITIONS:RF, got {spec!r}")
        name, partitions, rf = parts[0], int(parts[1]), int(parts[2])
        _check_topic_sizes(partitions, rf)
        topics.append((name, partitions, rf))
    configs = _config_pairs(args.config, "--config")
    start_time = None
    if args.start_time is not None:
        try:
            start_time = format_start_time(parse_start_time(args.start_time))
        except StartTimeError as e:
            raise ClusterError(f"--start-time: {e}") from None
    racks = [None] * args.brokers
    if args.racks is not None:
        racks = args.racks.split(",")
        if len(racks) != args.brokers or not all(racks):
            raise ClusterError(f"--racks must name one rack per broker ({args.brokers}), got {args.racks!r}")
    with new_event_log(args.log_dir, overwrite=args.overwrite) as writer:
        cluster = Cluster(configs=configs, seed=args.seed, sink=writer.append, start_time=start_time)
        start_ms = parse_start_time(start_time or DEFAULT_START_TIME)
        use_clock(cluster.clock, start_ms)
        for b in range(args.brokers):
            cluster.start_broker(b, rack=racks[b])
        for name, partitions, rf in topics:
            cluster.create_topic(name, partitions, rf)
        cluster.checkpoint()
    if args.json:
        _print_json({"command": "new-cluster", "log_dir": args.log_dir, "status": EXIT_OK,
                     "records": cluster.journal.next_offset, **_times(cluster.now, start_ms),
                     "start_time": format_start_time(start_ms),
                     "result": {"brokers": list(range(args.brokers)), "controller": cluster.controller_id,
                                "topics": [{"name": n, "partitions": p, "replication_factor": rf}
                                           for n, p, rf in topics]}})
        return EXIT_OK
    print(f"cluster of {args.brokers} brokers (controller {cluster.controller_id}) with "
          f"{len(topics)} topics in {args.log_dir}: {cluster.journal.next_offset} records "
          f"(time 0 is {wall_time(0, start_ms)})")
    return EXIT_OK


def _times(now_ms: int, start_ms: int) -> dict:
    return {"time_ms": now_ms, "time": format_start_time(start_ms + now_ms)}


def _print_json(doc: dict) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _check_topic_sizes(partitions: int | None, rf: int | None) -> None:
    """The upper limits; Kafka's own errors (InvalidPartitionsException, ...) cover values below 1."""
    if partitions is not None and partitions > MAX_PARTITIONS:
        raise ClusterError(f"partitions must be at most {MAX_PARTITIONS}, got {partitions}")
    if rf is not None and rf > MAX_REPLICATION_FACTOR:
        raise ClusterError(f"replication factor must be at most {MAX_REPLICATION_FACTOR}, got {rf}")


def _run(args: argparse.Namespace, action, record: bool = True, result: dict | None = None) -> int:
    """Carry out ``action`` on the log's cluster and append what it did. With ``record=False`` (a command that
    only reads, unless it has something to change) nothing is appended, nor said, when it changed nothing.
    With ``--json`` the tool's text is collected, and printed as the ``output`` of a JSON document that holds
    ``result`` (what ``action`` put there) too; errors still go to stderr."""
    if getattr(args, "broker_id", None) is not None:
        check_range(args.broker_id, "--broker-id", 0, MAX_BROKER_ID)
    text = io.StringIO() if args.json else None
    cluster = None
    changed = False
    try:
        with continued_cluster(args.log_dir) as cluster:
            if args.at is not None:
                check_range(args.at, "--at", cluster.now, cluster.now + MAX_ADVANCE_MS)
            start = cluster.journal.next_offset
            with contextlib.redirect_stdout(text) if text is not None else contextlib.nullcontext():
                status = action(cluster)
            changed = record or cluster.journal.next_offset != start
            if changed:
                cluster.checkpoint()
    except _Refused as refused:
        for line in refused.lines:
            print(line, file=sys.stderr)
        status = EXIT_FAILED
        if text is None or cluster is None:
            return status
        result = {**(result or {}), "error": list(refused.lines)}
    if text is not None:
        _print_json({"command": args.command, "log_dir": args.log_dir, "status": status,
                     "appended": changed, "records": cluster.journal.next_offset,
                     **_times(cluster.now, cluster.start_ms), "result": result or {},
                     "output": text.getvalue().splitlines()})
    elif changed:
        print(f"# {args.log_dir} now holds {cluster.journal.next_offset} records (time {cluster.now} ms, "
              f"{wall_time(cluster.now, cluster.start_ms)})")
    return status


def cmd_create_topic(args: argparse.Namespace) -> int:
    _check_topic_sizes(args.partitions, args.replication_factor)

    result: dict = {}

    def act(cluster: Cluster) -> int:
        cluster.create_topic(args.topic, args.partitions, args.replication_factor,
                             configs=_config_pairs(args.config, "--config"), at=args.at)
        assignment = cluster.admin.get_full_replica_assignment_for_topics([args.topic])
        result.update(topic=args.topic, partitions=len(assignment),
                      replication_factor=len(next(iter(assignment.values())).replicas) if assignment else 0)
        print(f"Created topic {args.topic}.")
        return EXIT_OK
    return _run(args, act, result=result)


def cmd_delete_topic(args: argparse.Namespace) -> int:
    result: dict = {}

    def act(cluster: Cluster) -> int:
        cluster.delete_topic(args.topic, at=args.at)
        gone = args.topic not in cluster.admin.get_all_topics_in_cluster()
        result.update(topic=args.topic, marked_for_deletion=True, deletion_completed=gone)
        print(f"Topic {args.topic} is marked for deletion." + (" Deletion completed." if gone else
              " Deletion is halted until the brokers of its replicas are back (or its reassignment completes)."))
        return EXIT_OK
    return _run(args, act, result=result)


_REASSIGN_ACTIONS = ("generate", "execute", "verify", "cancel", "list")
# ReassignPartitionsCommand.validateAndParseArgs: what each action requires and permits.
_REASSIGN_REQUIRED = {"generate": ("topics_to_move_json_file", "broker_list"), "execute": ("reassignment_json_file",),
                      "verify": ("reassignment_json_file",), "cancel": ("reassignment_json_file",), "list": ()}
_REASSIGN_PERMITTED = {"generate": ("disable_rack_aware", "seed"),
                       "execute": ("additional", "throttle", "replica_alter_log_dirs_throttle", "via", "at"),
                       "verify": ("preserve_throttles", "at"), "cancel": ("preserve_throttles", "at"), "list": ()}
_REASSIGN_OPTIONS = ("reassignment_json_file", "topics_to_move_json_file", "broker_list", "disable_rack_aware", "seed",
                     "throttle", "replica_alter_log_dirs_throttle", "additional", "preserve_throttles", "via", "at")
MAX_THROTTLE = 2**63 - 1   # a Java long


def _reassign_action(args: argparse.Namespace) -> str:
    """The action, and Kafka's checks of the options it requires and permits (ClusterError, exit 2)."""
    action = next((a for a in _REASSIGN_ACTIONS if getattr(args, a)), "execute")
    for name in _REASSIGN_REQUIRED[action]:
        if getattr(args, name) is None:
            raise ClusterError(f'Missing required argument "[{name.replace("_", "-")}]" (reassign --{action})')
    for name in _REASSIGN_OPTIONS:
        value = getattr(args, name)
        if value not in (None, False) and name not in _REASSIGN_REQUIRED[action] + _REASSIGN_PERMITTED[action]:
            raise ClusterError(f'Option "[{name.replace("_", "-")}]" can\'t be used with action "[{action}]"')
    return action


def cmd_reassign(args: argparse.Namespace) -> int:
    action = _reassign_action(args)
    check_range(args.throttle, "--throttle", -1, MAX_THROTTLE)
    check_range(args.replica_alter_log_dirs_throttle, "--replica-alter-log-dirs-throttle", -1, MAX_THROTTLE)
    check_range(args.seed, "--seed", 0, MAX_SEED)
    result: dict = {"action": action}
    if action == "generate":
        return _run(args, _generate_action(args, result), record=False, result=result)
    if action == "list":
        def act_list(cluster: Cluster) -> int:
            ongoing = _ongoing(cluster, "ListPartitionReassignments")
            result["reassignments"] = [
                {"topic": t, "partition": p, "replicas": list(a.replicas), "adding_replicas": list(a.adding_replicas),
                 "removing_replicas": list(a.removing_replicas)} for (t, p), a in sorted(ongoing.items())]
            for line in reassign_tool.reassignments_text(ongoing):
                print(line)
            return EXIT_OK
        return _run(args, act_list, record=False, result=result)
    path = args.reassignment_json_file
    targets, log_dirs = parse_reassignment_file(read_admin_file(path), path)
    if action == "verify":
        return _run(args, lambda cluster: _verify(cluster, args, targets, result), record=False, result=result)
    if action == "cancel":
        return _run(args, lambda cluster: _cancel(cluster, args, targets, result), record=False, result=result)
    return _run(args, lambda cluster: _execute(cluster, args, targets, log_dirs, result), result=result)


def _partition_list(tps) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in sorted(tps)]


def _ongoing(cluster: Cluster, request: str, partitions=None) -> dict:
    """ListPartitionReassignments, or _Refused when no controller answers."""
    ongoing = cluster.list_reassignments(partitions)
    if ongoing is None:
        raise _Refused(f"Error: no controller answered the {request} request")
    return ongoing


def _current_replicas(cluster: Cluster, tps) -> dict[tuple, tuple[int, ...]]:
    topics = sorted({t for t, _ in tps if _TOPIC_NAME.fullmatch(t)})  # no other name can exist
    assignments = cluster.admin.get_full_replica_assignment_for_topics(topics)
    return {tp: tuple(assignments[tp].replicas) for tp in tps if tp in assignments}


def _live_brokers(cluster: Cluster) -> dict[int, str | None]:
    """DescribeCluster: the running brokers and their broker.rack."""
    return {b: server.rack for b, server in sorted(cluster.brokers.items()) if server.alive}


def _generate_action(args: argparse.Namespace, result: dict):
    topics_path = args.topics_to_move_json_file
    topics = parse_topics_to_move_json(read_admin_file(topics_path), topics_path)
    try:
        broker_list = [int(b) for b in args.broker_list.split(",")]
    except ValueError:
        raise ClusterError(f"--broker-list must be broker ids like 0,1,2, got {args.broker_list!r}") from None
    for b in broker_list:
        check_range(b, "a broker id of --broker-list", 0, MAX_BROKER_ID)
    duplicates = sorted({b for b in broker_list if broker_list.count(b) > 1})
    if duplicates:
        raise ClusterError(f"Broker list contains duplicate entries: [{', '.join(map(str, duplicates))}]")

    def act(cluster: Cluster) -> int:
        existing = set(cluster.admin.get_all_topics_in_cluster())
        missing = [t for t in topics if t not in existing]
        if missing:
            raise _Refused(f"Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic "
                           f"{missing[0]} not found.")
        current = _current_replicas(cluster, [tp for tp in cluster.admin.get_full_replica_assignment_for_topics(
            sorted(topics))])
        seed = cluster.seed if args.seed is None else args.seed
        try:
            brokers = reassign_tool.broker_metadata(_live_brokers(cluster), broker_list, not args.disable_rack_aware)
            proposed = reassign_tool.propose(current, brokers, seed)
        except (reassign_tool.AdminOperationError, InvalidReplicationFactorError) as e:
            raise _Refused(f"Error: {e}") from None
        result.update(current=json.loads(format_reassignment_json(current)),
                      proposed=json.loads(format_reassignment_json(proposed)))
        print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
        print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")
        return EXIT_OK
    return act


def _execute(cluster: Cluster, args: argparse.Namespace, targets: dict, log_dirs: dict, result: dict) -> int:
    """ReassignPartitionsCommand.executeAssignment (``result``: the rollback assignment, the partitions started,
    the throttles, the errors)."""
    via = args.via or "api"
    ongoing = _ongoing(cluster, "ListPartitionReassignments") if via == "api" else {}
    if ongoing and not args.additional:
        raise _Refused(reassign_tool.CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE)
    if via == "api":
        _verify_reassignment(cluster, targets)
    current = _current_replicas(cluster, targets)
    result.update(rollback=json.loads(format_reassignment_json(current)), throttle=args.throttle,
                  replica_alter_log_dirs_throttle=args.replica_alter_log_dirs_throttle, started=[], errors={})
    print(f"Current partition replica assignment\n\n{format_reassignment_json(current)}\n\n"
          f"Save this to use as the --reassignment-json-file option during rollback")
    throttle = -1 if args.throttle is None else args.throttle
    dirs_throttle = -1 if args.replica_alter_log_dirs_throttle is None else args.replica_alter_log_dirs_throttle
    at = args.at
    if throttle >= 0 or dirs_throttle >= 0:
        print(reassign_tool.YOU_MUST_RUN_VERIFY_PERIODICALLY_MESSAGE)
        if throttle >= 0:
            moves = reassign_tool.move_map({tp: (a.replicas, a.adding_replicas) for tp, a in ongoing.items()},
                                           targets, current)
            leaders, followers = reassign_tool.leader_throttles(moves), reassign_tool.follower_throttles(moves)
            for topic in sorted(moves):
                cluster.set_config("topic", topic, reassign_tool.LEADER_REPLICAS, leaders[topic], at=at)
                cluster.set_config("topic", topic, reassign_tool.FOLLOWER_REPLICAS, followers[topic])
                at = None
            for b in reassign_tool.reassigning_brokers(moves):
                cluster.set_config("broker", str(b), reassign_tool.LEADER_RATE, throttle, at=at)
                cluster.set_config("broker", str(b), reassign_tool.FOLLOWER_RATE, throttle)
                at = None
            print(f"The inter-broker throttle limit was set to {throttle} B/s")
        if dirs_throttle >= 0:
            for b in sorted({b for _, _, b in log_dirs}):
                cluster.set_config("broker", str(b), reassign_tool.LOG_DIRS_RATE, dirs_throttle, at=at)
                at = None
            print(f"The replica-alter-dir throttle limit was set to {dirs_throttle} B/s")
    response = cluster.reassign_partitions(targets, via=via, at=at)
    if via == "zk":
        result["started"] = _partition_list(targets)
        print(f"Successfully started partition reassignment{reassign_tool.plural(len(targets))} for "
              f"{reassign_tool.tps_text(targets)}")
        return EXIT_OK
    if response is None:
        print("Error: no controller answered the AlterPartitionReassignments request", file=sys.stderr)
        return EXIT_FAILED
    error, results = response
    if error != "NONE":
        result["errors"] = {"": error}
        print(f"Error: {error}", file=sys.stderr)
        return EXIT_FAILED
    failed = {tp: e for tp, e in results.items() if e != "NONE"}
    if failed:
        result["errors"] = {str(TopicPartition(*tp)): e for tp, e in sorted(failed.items())}
        print("Error reassigning partition(s):", file=sys.stderr)
        for tp in sorted(failed):
            print(f"{TopicPartition(*tp)}: {failed[tp]}", file=sys.stderr)
        return EXIT_FAILED
    result["started"] = _partition_list(targets)
    print(f"Successfully started partition reassignment{reassign_tool.plural(len(targets))} for "
          f"{reassign_tool.tps_text(targets)}")
    if log_dirs:
        print(f"kcontroller: note: moving replicas between log directories (log_dirs other than \"any\": "
              f"{len(log_dirs)} replica(s)) is not simulated; the reassignment ignores them", file=sys.stderr)
    return EXIT_OK


def _verify(cluster: Cluster, args: argparse.Namespace, targets: dict, result: dict) -> int:
    """ReassignPartitionsCommand.verifyAssignment."""
    ongoing = _ongoing(cluster, "ListPartitionReassignments")
    states = reassign_tool.partition_states(targets, {tp: a.replicas for tp, a in ongoing.items()},
                                            _current_replicas(cluster, targets))
    result["partitions"] = [
        {"topic": t, "partition": p, "status": "in_progress" if not st.done else
         "completed" if st.current_replicas == st.target_replicas else "not_active",
         "current_replicas": list(st.current_replicas), "target_replicas": list(st.target_replicas)}
        for (t, p), st in sorted(states.items())]
    result["throttles_cleared"] = not ongoing and not args.preserve_throttles
    for line in reassign_tool.states_text(states):
        print(line)
    print()   # Kafka prints the (here empty) status of the log directory moves on a line of its own
    if not ongoing and not args.preserve_throttles:
        _clear_all_throttles(cluster, targets, args.at)
    return EXIT_OK


def _cancel(cluster: Cluster, args: argparse.Namespace, targets: dict, result: dict) -> int:
    """ReassignPartitionsCommand.cancelAssignment."""
    ongoing = _ongoing(cluster, "ListPartitionReassignments", sorted(targets))
    cancelling = sorted(tp for tp, a in ongoing.items() if not a.adding_replicas or a.removing_replicas)
    result.update(cancelled=[], throttles_cleared=not args.preserve_throttles)
    at = args.at
    if cancelling:
        response = cluster.reassign_partitions({tp: None for tp in cancelling}, at=at)
        at = None
        if response is None:
            print("Error: no controller answered the AlterPartitionReassignments request", file=sys.stderr)
            return EXIT_FAILED
        error, results = response
        failed = {tp: results.get(tp, error) for tp in cancelling if results.get(tp, error) != "NONE"}
        if failed:
            print(f"Error cancelling partition reassignment{reassign_tool.plural(len(failed))} for:", file=sys.stderr)
            for tp in sorted(failed):
                print(f"{TopicPartition(*tp)}: {failed[tp]}", file=sys.stderr)
            return EXIT_FAILED
        result["cancelled"] = _partition_list(cancelling)
        print(f"Successfully cancelled partition reassignment{reassign_tool.plural(len(cancelling))} for: "
              f"{reassign_tool.tps_text(cancelling)}")
    else:
        print("None of the specified partition reassignments are active.")
    # Kafka prints this without a line break (System.out.print), so the next line follows on the same line.
    sys.stdout.write("None of the specified partition moves are active.")
    if args.preserve_throttles:
        sys.stdout.write("\n")
    else:
        _clear_all_throttles(cluster, targets, at)
    return EXIT_OK


def _clear_all_throttles(cluster: Cluster, targets: dict, at: int | None) -> None:
    """ReassignPartitionsCommand.clearAllThrottles: the three broker-level throttles on every broker of the cluster
    and of the file, the two topic-level ones on the file's topics. Only configs that are set are deleted (a
    delete of an absent config changes nothing, so it is not recorded)."""
    brokers = sorted(set(_live_brokers(cluster)) | {b for replicas in targets.values() for b in replicas})
    print(f"Clearing broker-level throttles on broker{reassign_tool.plural(len(brokers))} "
          f"{','.join(map(str, brokers))}")
    for b in brokers:
        configs = cluster.admin.get_entity_configs("brokers", str(b))
        for name in reassign_tool.BROKER_LEVEL_THROTTLES:
            if name in configs:
                cluster.set_config("broker", str(b), name, None, at=at)
                at = None
    topics = sorted({t for t, _ in targets})
    print(f"Clearing topic-level throttles on topic{reassign_tool.plural(len(topics))} {','.join(topics)}")
    existing = set(cluster.admin.get_all_topics_in_cluster())
    for topic in topics:
        configs = cluster.admin.get_entity_configs("topics", topic) if topic in existing else {}
        for name in reassign_tool.TOPIC_LEVEL_THROTTLES:
            if name in configs:
                cluster.set_config("topic", topic, name, None, at=at)
                at = None


class _Refused(Exception):
    """The tool refuses the command after reading the cluster, before sending anything: ``lines`` go to
    stderr and the command exits 1, as Kafka's tools do; nothing is appended to the log."""

    def __init__(self, *lines: str):
        super().__init__("\n".join(lines))
        self.lines = lines


def _verify_reassignment(cluster: Cluster, reassignment: dict) -> None:
    """kafka-reassign-partitions.sh's checks before it sends anything: every broker id is a broker of the
    cluster (verifyBrokerIds: the brokers DescribeCluster lists), and every partition exists
    (getReplicaAssignmentForPartitions). Raises _Refused."""
    live = {b for b, server in cluster.brokers.items() if server.alive}
    unknown = sorted({b for replicas in reassignment.values() if replicas for b in replicas} - live)
    if unknown:
        raise _Refused(f"Error: Unknown broker id {unknown[0]}")
    topics = {t for t, _ in reassignment if _TOPIC_NAME.fullmatch(t)}  # no other name can exist
    existing = cluster.admin.get_full_replica_assignment_for_topics(sorted(topics))
    missing = sorted(tp for tp in reassignment if tp not in existing)
    if missing:
        raise _Refused("Error reassigning partition(s):",
                       *(f"{TopicPartition(*tp)}: UNKNOWN_TOPIC_OR_PARTITION" for tp in missing))


def cmd_elect_leaders(args: argparse.Namespace) -> int:
    partitions = None
    if args.path_to_json_file:
        partitions = parse_election_json(read_admin_file(args.path_to_json_file), args.path_to_json_file)
    elif args.topic:
        if args.partition is None:
            raise ClusterError("--topic needs --partition")
        check_range(args.partition, "--partition", 0, 2**31 - 1)
        partitions = [(args.topic, args.partition)]
    kind = args.election_type.upper()
    result: dict = {"election_type": args.election_type}

    def act(cluster: Cluster) -> int:
        results = cluster.elect_leaders(args.election_type, partitions, at=args.at)
        if results is None:
            print("Error: no controller answered the ElectLeaders request", file=sys.stderr)
            return EXIT_FAILED
        done = [tp for tp, (e, _) in results.items() if e == "NONE"]
        not_needed = [tp for tp, (e, _) in results.items() if e == "ELECTION_NOT_NEEDED"]
        failed = {tp: e for tp, (e, _) in results.items() if e not in ("NONE", "ELECTION_NOT_NEEDED")}
        result.update(elected=_partition_list(done), not_needed=_partition_list(not_needed),
                      failed=[{"topic": t, "partition": p, "error": failed[(t, p)]} for t, p in sorted(failed)])
        if done:
            print(f"Successfully completed leader election ({kind}) for partitions {_tps(done)}")
        if not_needed:
            print(f"Valid replica already elected for partitions {_tps(not_needed)}")
        for tp, e in failed.items():
            print(f"Error completing leader election ({kind}) for partition: {TopicPartition(*tp)}: {e}",
                  file=sys.stderr)
        return EXIT_FAILED if failed else EXIT_OK
    return _run(args, act, result=result)


def cmd_broker(args: argparse.Namespace) -> int:
    result: dict = {"broker_id": args.broker_id}

    def act(cluster: Cluster) -> int:
        b = args.broker_id
        if args.command == "start-broker":
            before = cluster.brokers.get(b)
            rack = args.rack if args.rack is not None else (before.rack if before is not None else None)
            cluster.start_broker(b, rack=rack, at=args.at)
            result.update(alive=cluster.brokers[b].alive, broker_epoch=cluster.brokers[b].broker_epoch, rack=rack)
            print(f"broker {b} started (broker epoch {cluster.brokers[b].broker_epoch})")
        elif args.command == "kill-broker":
            cluster.kill_broker(b, at=args.at)
            requested, timeout = cluster.config.get_int("zookeeper.session.timeout.ms"), cluster.session_timeout_ms
            negotiated = "" if timeout == requested else f", negotiated to {timeout} ms"
            result.update(session_timeout_ms=timeout)
            print(f"broker {b} killed; its session times out after zookeeper.session.timeout.ms "
                  f"({requested} ms{negotiated})")
        else:
            ok = cluster.stop_broker(b, at=args.at)
            result.update(controlled_shutdown_succeeded=ok)
            print(f"broker {b}: controlled shutdown {'succeeded' if ok else 'failed; it shut down anyway'}")
        return EXIT_OK
    return _run(args, act, result=result)


def cmd_advance(args: argparse.Namespace) -> int:
    check_range(args.ms, "--ms", 0, MAX_ADVANCE_MS)

    def act(cluster: Cluster) -> int:
        cluster.advance_to((args.at if args.at is not None else cluster.now) + args.ms)
        print(f"time is now {cluster.now} ms ({wall_time(cluster.now, cluster.start_ms)})")
        return EXIT_OK
    return _run(args, act)


def cmd_catch_up(args: argparse.Namespace) -> int:
    result: dict = {}

    def act(cluster: Cluster) -> int:
        responses = cluster.catch_up_followers(at=args.at)
        n = sum(len(r.partitions) for r in responses.values() if r is not None)
        result.update(partitions=n, leaders=len(responses))
        print(f"{n} partitions had followers rejoin their ISR ({len(responses)} leaders sent AlterPartition)")
        return EXIT_OK
    return _run(args, act, result=result)


COMMANDS = {
    "new-cluster": cmd_new_cluster, "create-topic": cmd_create_topic, "delete-topic": cmd_delete_topic,
    "reassign": cmd_reassign, "elect-leaders": cmd_elect_leaders, "start-broker": cmd_broker,
    "kill-broker": cmd_broker, "shutdown-broker": cmd_broker, "advance": cmd_advance, "catch-up": cmd_catch_up,
}
ERRORS = (AdminFileError, ResumeError, AdminError, InvalidReplicationFactorError, ConfigError)
