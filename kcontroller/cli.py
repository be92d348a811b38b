"""The ``kcontroller`` command: ``demo`` runs the engine on a scripted scenario, ``log`` prints an event log."""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from controller.demo import DemoSpec, run_demo
from controller.describe import describe_lines
from events.log import FsyncPolicy, LogError, LogReader, LogWriter
from kcontroller.logging_setup import LEVELS, configure_logging
from statemachines.kafka_log_format import LEVELS as KAFKA_LEVELS
from statemachines.kafka_log_format import format_records

EXIT_OK, EXIT_ERROR = 0, 2


def _add_format_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--level", choices=list(KAFKA_LEVELS), default="TRACE",
                   help="lowest state.change.logger level to print: TRACE as Kafka <= 2.5 wrote, INFO as 2.6+ "
                        "writes by default (default: TRACE)")
    p.add_argument("--layout", choices=["log4j", "message"], default="log4j",
                   help="log4j: full '[time] LEVEL [Controller id=N epoch=E] ... (state.change.logger)' lines; "
                        "message: only the '[Controller id=N epoch=E] ...' part")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcontroller", description=__doc__)
    parser.add_argument("--log-level", choices=list(LEVELS), default="warning",
                        help="level of kcontroller's own diagnostics on stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the engine on a scripted scenario (brokers register, a topic is "
                                       "created, a broker dies), write the event log, read it back and print it")
    demo.add_argument("--log-dir", default="out/demo-log", help="where to write the event log (default: %(default)s)")
    demo.add_argument("--overwrite", action="store_true", help="replace an existing event log in --log-dir")
    demo.add_argument("--brokers", type=int, default=3)
    demo.add_argument("--topic", default="orders")
    demo.add_argument("--partitions", type=int, default=6)
    demo.add_argument("--replication-factor", type=int, default=3)
    demo.add_argument("--kill", type=int, nargs="*", default=[1], metavar="BROKER",
                      help="brokers whose sessions expire, in order (default: 1)")
    demo.add_argument("--unclean-leader-election-enable", action="store_true",
                      help="set the broker default unclean.leader.election.enable=true")
    demo.add_argument("--seed", type=int, default=42, help="seed of the replica assignment (default: 42)")
    _add_format_options(demo)

    log = sub.add_parser("log", help="print an event log as Kafka state-change.log lines")
    log.add_argument("log_dir", metavar="LOG_DIR")
    log.add_argument("--from", dest="start_offset", type=int, default=0, metavar="OFFSET",
                     help="start at this record offset")
    _add_format_options(log)
    return parser


def _print_log(log_dir: str, start_offset: int, level: str, layout: str) -> int:
    reader = LogReader(log_dir)
    out = sys.stdout
    for line in format_records(reader.records(start_offset), min_level=level, layout=layout):
        out.write(line + "\n")
    tail = reader.torn_tail
    if tail is not None:
        print(f"kcontroller: note: {tail}", file=sys.stderr)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    if os.path.isdir(args.log_dir) and os.listdir(args.log_dir):
        if not args.overwrite:
            print(f"kcontroller: error: {args.log_dir} is not empty; pass --overwrite to replace it",
                  file=sys.stderr)
            return EXIT_ERROR
        shutil.rmtree(args.log_dir)
    spec = DemoSpec(brokers=args.brokers, topic=args.topic, partitions=args.partitions,
                    replication_factor=args.replication_factor, kill=tuple(args.kill),
                    unclean_leader_election_enable=args.unclean_leader_election_enable, seed=args.seed)
    with LogWriter(args.log_dir, fsync=FsyncPolicy.per_batch()) as writer:
        engine = run_demo(spec, writer.append)
    _print_log(args.log_dir, 0, args.level, args.layout)
    print(f"\n# {engine.journal.next_offset} records in {args.log_dir}; cluster state after the run:",
          file=sys.stderr)
    for line in describe_lines(engine.context):
        print(line, file=sys.stderr)
    return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    return _print_log(args.log_dir, args.start_offset, args.level, args.layout)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    try:
        return {"demo": cmd_demo, "log": cmd_log}[args.command](args)
    except LogError as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (BrokenPipeError, KeyboardInterrupt):
        return EXIT_ERROR
