"""The ``kcontroller`` command: ``demo`` runs the main job; ``log``, ``describe`` and ``replay`` read event logs
(``describe --quorum``, in ``kcontroller.cli_quorum``, shows a simulated run's KRaft metadata quorum); the commands
of ``kcontroller.cli_cluster`` drive the cluster a log describes (``new-cluster``, ``reassign``, ...)."""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys

from controller.embedding.cluster import ClusterError
from controller.embedding.demo import DemoSpec, run_demo
from events.log import LogError, LogReader
from kcontroller import cli_audit, cli_cluster, cli_export, cli_fold, cli_quorum, cli_simulate, cli_sweep, cli_whatif
from kcontroller import completion, progress, replay_many
from kcontroller.files import new_event_log
from kcontroller.logging_setup import LEVELS, RecordClock, configure_logging, use_clock
from statemachines.cluster_view import ClusterView, DescribeOptions, fold_log
from statemachines.errors import RecordValueError
from statemachines.kafka_log_format import DEFAULT_START_TIME, START_TIME_CONFIG, KafkaLogFormatter, StartTimeError
from statemachines.kafka_log_format import LEVELS as KAFKA_LEVELS
from statemachines.kafka_log_format import format_start_time, log_start_ms, parse_start_time

EXIT_OK, EXIT_ERROR = 0, 2

DESCRIPTION = """\
An event-sourced model of Apache Kafka's ZooKeeper-era controller (Kafka 3.7 behaviour).

  demo                  run the main job: a broker dies and comes back, told by the controller's log
  log, describe, replay read an event log: Kafka's state-change.log lines, kafka-topics.sh --describe,
                        a re-run that must write the same records
  new-cluster, reassign, elect-leaders, ...
                        drive the cluster a log describes, as Kafka's tools would, appending to the log
  simulate, sweep       run a scenario (brokers, producers, faults) once, or over many seeds
  audit, what-if        check logs (ours and Kafka's own); what killing brokers would do to a cluster
  export, fold          logs as Parquet rows; every run's state at a time or offset, offline intervals,
                        leader changes (in process on DuckDB, or on Spark)

Run 'kcontroller COMMAND --help' for a command's options."""


def _version() -> str:
    try:
        return importlib.metadata.version("kcontroller")
    except importlib.metadata.PackageNotFoundError:   # run from a checkout that is not installed
        return "(not installed)"


def _add_format_options(p: argparse.ArgumentParser, default_level: str = "TRACE") -> None:
    p.add_argument("--level", choices=list(KAFKA_LEVELS), default=default_level,
                   help="lowest state.change.logger level to print: TRACE as Kafka <= 2.5 wrote, INFO as 2.6+ "
                        f"writes by default (default: {default_level})")
    p.add_argument("--layout", choices=["log4j", "message"], default="log4j",
                   help="log4j: full '[time] LEVEL [Controller id=N epoch=E] ... (state.change.logger)' lines, "
                        "the time on the log's calendar (its start time plus the record's ms); message: only the "
                        "'[Controller id=N epoch=E] ...' part")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcontroller", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--log-level", choices=list(LEVELS), default=None,
                        help="level of the engine's own diagnostics on stderr (default: critical for demo and "
                             "replay, whose output already shows the controller's errors as Kafka logs them; "
                             "warning otherwise)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="a 3-broker cluster with an RF=1 and an RF=3 topic; broker 1 is killed, "
                                       "then restarted: prints the state-change log and the cluster after each phase")
    demo.add_argument("--log-dir", default="out/demo-log", help="where to write the event log (default: %(default)s)")
    demo.add_argument("--overwrite", action="store_true", help="replace an existing event log in --log-dir")
    demo.add_argument("--brokers", type=int, default=3, help="brokers in the cluster (default: %(default)s)")
    demo.add_argument("--partitions", type=int, default=3, help="partitions of each topic (default: 3)")
    demo.add_argument("--victim", type=int, default=1, help="the broker that is killed (default: 1)")
    # Removed: the demo's story is the same with it (see cmd_demo); kept hidden to say so to those who used it.
    demo.add_argument("--unclean-leader-election-enable", action="store_true", help=argparse.SUPPRESS)
    demo.add_argument("--seed", type=int, default=42, help="seed of the replica placement (default: 42)")
    demo.add_argument("--start-time", metavar="ISO8601",
                      help="the date and time of simulated time 0, e.g. 2024-03-01T09:00:00Z (default: "
                           f"{DEFAULT_START_TIME})")
    _add_format_options(demo, default_level="INFO")

    log = sub.add_parser("log", help="print an event log as Kafka state-change.log lines")
    log.add_argument("log_dir", metavar="LOG_DIR", help="an event log directory")
    log.add_argument("--from", dest="start_offset", type=int, default=0, metavar="OFFSET",
                     help="start at this record offset")
    _add_format_options(log)
    log.add_argument("--json", action="store_true",
                     help="JSON Lines instead: one object per line with time, time_ms, level, controller_id, "
                          "controller_epoch, offset, message (and exception)")
    progress.add_option(log)

    replay = sub.add_parser("replay", help="re-run a log's inputs on a fresh engine and check it writes the same "
                                           "records, byte for byte, and reaches the same state; exit 1 on any "
                                           "difference; many logs: a verdict per log, in process or on Spark")
    replay.add_argument("paths", nargs="+", metavar="PATH",
                        help="an event log directory, or directories holding many (searched recursively: a "
                             "sweep's output, a directory of runs)")
    replay.add_argument("--from-snapshot", action="store_true",
                        help="start from the log's latest ClusterSnapshot and replay only the tail after it")
    replay.add_argument("--json", action="store_true", help="print the result as JSON")
    replay_many.add_options(replay)
    progress.add_option(replay)

    describe = sub.add_parser("describe", help="the cluster as the log says it was, in the layout of "
                                               "kafka-topics.sh --describe (or JSON); with --quorum, a simulated "
                                               "run's KRaft metadata quorum as kafka-metadata-quorum.sh describe "
                                               "prints it")
    describe.add_argument("log_dir", metavar="LOG_DIR", help="an event log directory (with --quorum: also a "
                                                             "scenario file)")
    at = describe.add_mutually_exclusive_group()
    at.add_argument("--time", type=int, metavar="MS",
                    help="the cluster at simulated time MS (ms since the log's start), as --at means in the "
                         "operations commands")
    at.add_argument("--offset", type=int, metavar="OFFSET", help="the cluster after the record at this offset")
    at.add_argument("--at", type=int, metavar="OFFSET", dest="at_offset_deprecated",
                    help="deprecated name of --offset (in every other command --at is a time in ms)")
    describe.add_argument("--json", action="store_true",
                          help="print JSON instead of text: the cluster, with time_ms and time (no filters); "
                               "with --quorum, the DescribeQuorum answer")
    describe.add_argument("--topic", metavar="TOPIC",
                          help="only the topics this regular expression matches, whole name (commas separate "
                               "alternatives), as kafka-topics.sh --topic")
    describe.add_argument("--under-replicated-partitions", action="store_true",
                          help="only partitions whose ISR is smaller than the replication factor (during a "
                               "reassignment: the replicas minus the adding ones)")
    describe.add_argument("--unavailable-partitions", action="store_true",
                          help="only partitions without a leader, or whose leader's broker is not registered")
    describe.add_argument("--under-min-isr-partitions", action="store_true",
                          help="only partitions without a leader or whose ISR is smaller than min.insync.replicas")
    describe.add_argument("--at-min-isr-partitions", action="store_true",
                          help="only partitions whose ISR size equals min.insync.replicas")
    describe.add_argument("--topics-with-overrides", action="store_true",
                          help="only the topic lines of topics with config overrides")
    cli_quorum.add_options(describe)
    cli_cluster.add_parsers(sub)
    cli_whatif.add_parser(sub)
    cli_simulate.add_parser(sub)
    cli_audit.add_parser(sub)
    cli_export.add_parser(sub)
    cli_fold.add_parser(sub)
    cli_sweep.add_parser(sub)
    completion.add_parser(sub)
    return parser


def _print_log(log_dir: str, start_offset: int, level: str, layout: str, mode: str | None = None) -> int:
    reader = LogReader(log_dir)
    start_ms = log_start_ms(next(iter(reader.records()), None))
    total = max(0, reader.end_offset - start_offset) if progress.shown(mode) else None
    formatter = KafkaLogFormatter(min_level=level, layout=layout, start_ms=start_ms)
    out = sys.stdout
    for line in formatter.format(progress.records(reader.records(start_offset), mode, total)):
        out.write(line + "\n")
    tail = reader.torn_tail
    if tail is not None:
        print(f"kcontroller: note: {tail}", file=sys.stderr)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    if args.unclean_leader_election_enable:
        print("kcontroller: error: demo --unclean-leader-election-enable was removed: it told the same story "
              "byte for byte (no partition of the demo has live replicas outside an ISR of dead brokers, so an "
              "unclean election never happens). The unclean-election story: kcontroller simulate "
              "examples/unclean-election-on.yaml (and unclean-election-off.yaml)", file=sys.stderr)
        return EXIT_ERROR
    cli_cluster.check_range(args.brokers, "--brokers", 1, cli_cluster.MAX_BROKERS)
    cli_cluster.check_range(args.partitions, "--partitions", 1, cli_cluster.MAX_PARTITIONS)
    cli_cluster.check_range(args.victim, "--victim", 0, cli_cluster.MAX_BROKER_ID)
    cli_cluster.check_range(args.seed, "--seed", 0, cli_cluster.MAX_SEED)
    configs = {}
    if args.start_time is not None:
        configs[START_TIME_CONFIG] = format_start_time(_start_time(args.start_time))
    spec = DemoSpec(brokers=args.brokers, rf1_partitions=args.partitions, rf3_partitions=args.partitions,
                    victim=args.victim, seed=args.seed, configs=configs)
    clock = RecordClock()
    start_ms = _start_time(args.start_time or DEFAULT_START_TIME)
    use_clock(clock, start_ms)
    with new_event_log(args.log_dir, overwrite=args.overwrite) as writer:
        cluster, phases = run_demo(spec, clock.sink(writer))
    use_clock(None)
    # Read the log back: everything printed below comes from the records.
    formatter = KafkaLogFormatter(min_level=args.level, layout=args.layout, start_ms=start_ms)
    view = ClusterView()
    records = LogReader(args.log_dir).records()
    out = sys.stdout
    for phase in phases:
        out.write(f"\n## {phase.title}\n\n")
        for rec in records:
            view.apply(rec)
            for line in formatter.feed(rec):
                out.write(line + "\n")
            if rec.offset >= phase.end_offset:
                break
        for line in formatter.flush():
            out.write(line + "\n")
        out.write("\n")
        for line in view.describe_lines():
            out.write(line + "\n")
    out.write(f"\n# {cluster.journal.next_offset} records in {args.log_dir}; "
              f"kcontroller log / describe / replay {args.log_dir} read them again\n")
    return EXIT_OK


def _start_time(text: str) -> int:
    try:
        return parse_start_time(text)
    except StartTimeError as e:
        raise ClusterError(f"--start-time: {e}") from None


def cmd_log(args: argparse.Namespace) -> int:
    layout = "json" if args.json else args.layout
    return _print_log(args.log_dir, args.start_offset, args.level, layout, args.progress)


def _replay_input(args: argparse.Namespace, items):
    """The records (or batches) a replay reads, counted on a progress bar (the log's end offset is the total)."""
    total = LogReader(args.log_dir).end_offset if progress.shown(args.progress) else None
    return progress.records(items, args.progress, total, desc="replayed")


def _replay_report(args: argparse.Namespace, doc: dict, text: str, ok: bool) -> int:
    if args.json:
        json.dump({"log_dir": args.log_dir, "ok": ok, **doc}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(text)
    return EXIT_OK if ok else 1


def cmd_replay(args: argparse.Namespace) -> int:
    args.log_dir = replay_many.single_log(args)
    if args.log_dir is None:
        return replay_many.cmd_replay_many(args)
    from controller.embedding.replay import latest_cluster_snapshot, replay_records
    from sim.sim_replay import is_simulation_log, replay_simulation
    first = next(iter(LogReader(args.log_dir).records()), None)
    use_clock(None)
    if is_simulation_log(first):
        if args.from_snapshot:
            print("kcontroller: error: a simulation log replays from its start (--from-snapshot is for cluster logs)",
                  file=sys.stderr)
            return EXIT_ERROR
        result = replay_simulation(_replay_input(args, LogReader(args.log_dir).records()))
        doc = {"kind": "simulation", "scenario": first.scenario, "seed": first.seed, "records": result.records,
               "divergence": None if result.ok else str(result.divergence)}
        if result.ok:
            return _replay_report(args, doc, f"replay of {args.log_dir}: simulation {first.scenario!r} (seed "
                                             f"{first.seed}) run again: {result.records} records identical", True)
        return _replay_report(args, doc, f"replay of {args.log_dir} diverged after {result.records} identical "
                                         f"records at {result.divergence}", False)
    start = latest_cluster_snapshot(args.log_dir) if args.from_snapshot else None
    result = replay_records(_replay_input(args, LogReader(args.log_dir).column_batches(start or 0)))
    doc = {"kind": "cluster", "records": result.records, "inputs": result.inputs,
           "digest": result.digest if result.ok else None, "divergence": None if result.ok else str(result.divergence)}
    if result.ok:
        return _replay_report(args, doc, f"replay of {args.log_dir}: {result.records} records identical "
                                         f"({result.inputs} inputs re-applied); final state digest {result.digest}",
                              True)
    return _replay_report(args, doc, f"replay of {args.log_dir} diverged after {result.records} identical records "
                                     f"at {result.divergence}", False)


def cmd_describe(args: argparse.Namespace) -> int:
    if args.quorum:
        return cli_quorum.cmd_describe_quorum(args)
    if args.replication or args.seed is not None:
        print(f"kcontroller: error: {'--replication' if args.replication else '--seed'} goes with --quorum",
              file=sys.stderr)
        return EXIT_ERROR
    offset = args.offset
    if args.at_offset_deprecated is not None:
        print("kcontroller: warning: describe --at OFFSET is deprecated, use --offset OFFSET "
              "(--at is a time in ms in the operations commands; describe's time is --time MS)", file=sys.stderr)
        offset = args.at_offset_deprecated
    options = DescribeOptions(topic=args.topic, under_replicated=args.under_replicated_partitions,
                              unavailable=args.unavailable_partitions, under_min_isr=args.under_min_isr_partitions,
                              at_min_isr=args.at_min_isr_partitions, topics_with_overrides=args.topics_with_overrides)
    if args.json and options != DescribeOptions():
        print("kcontroller: error: --json prints the whole cluster: leave out --topic and the partition filters",
              file=sys.stderr)
        return EXIT_ERROR
    view = fold_log(args.log_dir, at_offset=offset, at_time=args.time,
                    broker_configs=options.under_min_isr or options.at_min_isr)
    if args.json:
        start_ms = log_start_ms(next(iter(LogReader(args.log_dir).records()), None))
        time_ms = args.time if args.time is not None else (view.timestamp_ms or 0)
        doc = {"time_ms": time_ms, "time": format_start_time(start_ms + time_ms), "offset": view.offset,
               **view.to_json_dict()}
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    try:
        lines = list(view.describe_lines(options))
    except ValueError as exc:   # --topic matched nothing, or is not a regular expression
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    # When, on the run's calendar, as a comment line of its own: the lines after it are what the simulator's
    # describe step prints for the same cluster (and readers of kafka-topics output skip comments).
    start_ms = log_start_ms(next(iter(LogReader(args.log_dir).records()), None))
    time_ms = args.time if args.time is not None else (view.timestamp_ms or 0)
    lines.insert(0, f"# at {format_start_time(start_ms + time_ms)} ({time_ms} ms into the run, offset {view.offset})")
    sys.stdout.write("".join(line + "\n" for line in lines))
    return EXIT_OK


def _error_line(exc: BaseException) -> str:
    """One line: Kafka's exception name first for the errors Kafka's tools report by name."""
    kafka_name = getattr(exc, "kafka_name", None) or _KAFKA_NAMES.get(type(exc).__name__)
    text = " ".join(str(exc).split("\n"))
    if kafka_name and not text.startswith("org.apache.kafka"):
        return f"{kafka_name}: {text}"
    return text


_KAFKA_NAMES = {"InvalidReplicationFactorError": "org.apache.kafka.common.errors.InvalidReplicationFactorException",
                "ConfigError": "org.apache.kafka.common.config.ConfigException"}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet = ("demo", "replay", "simulate", "sweep", *cli_cluster.COMMANDS)  # their output, and the log, already show the controller's errors
    if args.command == "describe" and args.quorum:
        quiet = (*quiet, "describe")  # it runs a simulation, as simulate does
    configure_logging(args.log_level or ("critical" if args.command in quiet else "warning"))
    try:
        commands = {"demo": cmd_demo, "log": cmd_log, "replay": cmd_replay, "describe": cmd_describe,
                    "what-if": cli_whatif.cmd_what_if, "simulate": cli_simulate.cmd_simulate,
                    "audit": cli_audit.cmd_audit, "export": cli_export.cmd_export, "fold": cli_fold.cmd_fold,
                    "sweep": cli_sweep.cmd_sweep, "completion": completion.cmd_completion,
                    **cli_cluster.COMMANDS}
        return commands[args.command](args)
    except RecordValueError as exc:   # a record of the log read: name the log too
        where = getattr(args, "log_dir", None)
        print(f"kcontroller: error: {f'{where}: ' if where else ''}{_error_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except (LogError, ClusterError, *cli_cluster.ERRORS) as exc:
        print(f"kcontroller: error: {_error_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader (| head) has what it wanted: stop quietly, as cat does. Point stdout at /dev/null so
        # that the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_ERROR
