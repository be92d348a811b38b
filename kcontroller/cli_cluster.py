"""``kcontroller`` subcommands that drive the cluster an event log describes, and append to that log.

``new-cluster`` starts a log; every other command here rebuilds the cluster from the log (its
latest ClusterSnapshot plus the tail, every record checked as ``replay`` checks it), carries out
one operator action as Kafka's tools would (``kafka-reassign-partitions.sh``,
``kafka-leader-election.sh``, ``kafka-topics.sh --delete``, a broker's shutdown, ...), appends
what happened to the log and prints the tool's answer. ``kcontroller log``/``describe`` then show it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys

from controller.admin_files import AdminFileError, parse_election_json, parse_reassignment_json, read_admin_file
from controller.assignment import InvalidReplicationFactorError
from controller.config import ConfigError
from controller.embedding.cluster import Cluster, ClusterError
from controller.embedding.replay import ResumeError, resume_log
from controller.store.kafka_zk_client import AdminError
from events.log import FsyncPolicy, LogWriter
from kcontroller.files import new_event_log
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
        yield resume_log(log_dir, pending)
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
        p.add_argument("--at", type=int, metavar="T", help="simulated time of the action in ms (default: the "
                                                           "log's current time)")
        return p

    p = sub.add_parser("new-cluster", help="start an event log with a new cluster: brokers, configs, topics")
    p.add_argument("log_dir", metavar="LOG_DIR", help="the directory of the new event log")
    p.add_argument("--brokers", type=int, default=3, help="broker ids 0..N-1 (default: %(default)s)")
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="broker config by Kafka name")
    p.add_argument("--topic", action="append", metavar="NAME:PARTITIONS:RF", help="a topic to create")
    p.add_argument("--seed", type=int, default=0, help="seed of the replica placement (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing log in LOG_DIR")

    p = cluster_cmd("create-topic", "kafka-topics.sh --create")
    p.add_argument("--topic", required=True, help="the topic's name")
    p.add_argument("--partitions", type=int, help="its partition count (default: the broker config num.partitions)")
    p.add_argument("--replication-factor", type=int,
                   help="its replication factor (default: the broker config default.replication.factor)")
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="topic config override")

    p = cluster_cmd("delete-topic", "kafka-topics.sh --delete: queue a topic for deletion")
    p.add_argument("--topic", required=True, help="the topic to delete")

    p = cluster_cmd("reassign", "kafka-reassign-partitions.sh --execute (or --cancel) with a reassignment JSON file")
    p.add_argument("--reassignment-json-file", required=True, metavar="FILE",
                   help='kafka-reassign-partitions.sh\'s file: {"version":1,"partitions":[{"topic":..., '
                        '"partition":..., "replicas":[...]}]}')
    p.add_argument("--cancel", action="store_true", help="cancel the reassignments of the file's partitions")
    p.add_argument("--via", choices=["api", "zk"], default="api",
                   help="AlterPartitionReassignments (api, the tool since 2.4) or /admin/reassign_partitions (zk)")

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
    with new_event_log(args.log_dir, overwrite=args.overwrite) as writer:
        cluster = Cluster(configs=configs, seed=args.seed, sink=writer.append)
        cluster.start_brokers(range(args.brokers))
        for name, partitions, rf in topics:
            cluster.create_topic(name, partitions, rf)
        cluster.checkpoint()
    print(f"cluster of {args.brokers} brokers (controller {cluster.controller_id}) with "
          f"{len(topics)} topics in {args.log_dir}: {cluster.journal.next_offset} records")
    return EXIT_OK


def _check_topic_sizes(partitions: int | None, rf: int | None) -> None:
    """The upper limits; Kafka's own errors (InvalidPartitionsException, ...) cover values below 1."""
    if partitions is not None and partitions > MAX_PARTITIONS:
        raise ClusterError(f"partitions must be at most {MAX_PARTITIONS}, got {partitions}")
    if rf is not None and rf > MAX_REPLICATION_FACTOR:
        raise ClusterError(f"replication factor must be at most {MAX_REPLICATION_FACTOR}, got {rf}")


def _run(args: argparse.Namespace, action) -> int:
    if getattr(args, "broker_id", None) is not None:
        check_range(args.broker_id, "--broker-id", 0, MAX_BROKER_ID)
    try:
        with continued_cluster(args.log_dir) as cluster:
            if args.at is not None:
                check_range(args.at, "--at", cluster.now, cluster.now + MAX_ADVANCE_MS)
            status = action(cluster)
            cluster.checkpoint()
    except _Refused as refused:
        for line in refused.lines:
            print(line, file=sys.stderr)
        return EXIT_FAILED
    print(f"# {args.log_dir} now holds {cluster.journal.next_offset} records (time {cluster.now} ms)")
    return status


def cmd_create_topic(args: argparse.Namespace) -> int:
    _check_topic_sizes(args.partitions, args.replication_factor)

    def act(cluster: Cluster) -> int:
        cluster.create_topic(args.topic, args.partitions, args.replication_factor,
                             configs=_config_pairs(args.config, "--config"), at=args.at)
        print(f"Created topic {args.topic}.")
        return EXIT_OK
    return _run(args, act)


def cmd_delete_topic(args: argparse.Namespace) -> int:
    def act(cluster: Cluster) -> int:
        cluster.delete_topic(args.topic, at=args.at)
        gone = args.topic not in cluster.admin.get_all_topics_in_cluster()
        print(f"Topic {args.topic} is marked for deletion." + (" Deletion completed." if gone else
              " Deletion is halted until the brokers of its replicas are back (or its reassignment completes)."))
        return EXIT_OK
    return _run(args, act)


def cmd_reassign(args: argparse.Namespace) -> int:
    path = args.reassignment_json_file
    reassignment = parse_reassignment_json(read_admin_file(path), path)
    if args.cancel:
        reassignment = {tp: None for tp in reassignment}

    def act(cluster: Cluster) -> int:
        if not args.cancel and args.via == "api":
            _verify_reassignment(cluster, reassignment)
        response = cluster.reassign_partitions(reassignment, via=args.via, at=args.at)
        if args.via == "zk":
            print(f"Successfully started partition reassignment for {_tps(sorted(reassignment))}")
            return EXIT_OK
        if response is None:
            print("Error: no controller answered the AlterPartitionReassignments request", file=sys.stderr)
            return EXIT_FAILED
        error, results = response
        if error != "NONE":
            print(f"Error: {error}", file=sys.stderr)
            return EXIT_FAILED
        ok = [tp for tp, e in results.items() if e == "NONE"]
        failed = {tp: e for tp, e in results.items() if e != "NONE"}
        verb = "cancelled" if args.cancel else "started"
        if ok:
            print(f"Successfully {verb} partition reassignment{'s' if len(ok) > 1 else ''} for {_tps(ok)}")
        for tp, e in failed.items():
            print(f"Error reassigning partition(s):\n{TopicPartition(*tp)}: {e}", file=sys.stderr)
        return EXIT_FAILED if failed else EXIT_OK
    return _run(args, act)


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

    def act(cluster: Cluster) -> int:
        results = cluster.elect_leaders(args.election_type, partitions, at=args.at)
        if results is None:
            print("Error: no controller answered the ElectLeaders request", file=sys.stderr)
            return EXIT_FAILED
        done = [tp for tp, (e, _) in results.items() if e == "NONE"]
        not_needed = [tp for tp, (e, _) in results.items() if e == "ELECTION_NOT_NEEDED"]
        failed = {tp: e for tp, (e, _) in results.items() if e not in ("NONE", "ELECTION_NOT_NEEDED")}
        if done:
            print(f"Successfully completed leader election ({kind}) for partitions {_tps(done)}")
        if not_needed:
            print(f"Valid replica already elected for partitions {_tps(not_needed)}")
        for tp, e in failed.items():
            print(f"Error completing leader election ({kind}) for partition: {TopicPartition(*tp)}: {e}",
                  file=sys.stderr)
        return EXIT_FAILED if failed else EXIT_OK
    return _run(args, act)


def cmd_broker(args: argparse.Namespace) -> int:
    def act(cluster: Cluster) -> int:
        b = args.broker_id
        if args.command == "start-broker":
            cluster.start_broker(b, at=args.at)
            print(f"broker {b} started (broker epoch {cluster.brokers[b].broker_epoch})")
        elif args.command == "kill-broker":
            cluster.kill_broker(b, at=args.at)
            requested, timeout = cluster.config.get_int("zookeeper.session.timeout.ms"), cluster.session_timeout_ms
            negotiated = "" if timeout == requested else f", negotiated to {timeout} ms"
            print(f"broker {b} killed; its session times out after zookeeper.session.timeout.ms "
                  f"({requested} ms{negotiated})")
        else:
            ok = cluster.stop_broker(b, at=args.at)
            print(f"broker {b}: controlled shutdown {'succeeded' if ok else 'failed; it shut down anyway'}")
        return EXIT_OK
    return _run(args, act)


def cmd_advance(args: argparse.Namespace) -> int:
    check_range(args.ms, "--ms", 0, MAX_ADVANCE_MS)

    def act(cluster: Cluster) -> int:
        cluster.advance_to((args.at if args.at is not None else cluster.now) + args.ms)
        print(f"time is now {cluster.now} ms")
        return EXIT_OK
    return _run(args, act)


def cmd_catch_up(args: argparse.Namespace) -> int:
    def act(cluster: Cluster) -> int:
        responses = cluster.catch_up_followers(at=args.at)
        n = sum(len(r.partitions) for r in responses.values() if r is not None)
        print(f"{n} partitions had followers rejoin their ISR ({len(responses)} leaders sent AlterPartition)")
        return EXIT_OK
    return _run(args, act)


COMMANDS = {
    "new-cluster": cmd_new_cluster, "create-topic": cmd_create_topic, "delete-topic": cmd_delete_topic,
    "reassign": cmd_reassign, "elect-leaders": cmd_elect_leaders, "start-broker": cmd_broker,
    "kill-broker": cmd_broker, "shutdown-broker": cmd_broker, "advance": cmd_advance, "catch-up": cmd_catch_up,
}
ERRORS = (AdminFileError, ResumeError, AdminError, InvalidReplicationFactorError, ConfigError)
