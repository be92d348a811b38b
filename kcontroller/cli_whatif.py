"""``kcontroller what-if FILE --kill 1,4 | --shutdown 1,4``: which partitions of a real cluster go
offline, and which fall under min.insync.replicas, if those brokers die or are shut down.

FILE is the text of ``kafka-topics.sh --describe`` (any version 0.8 to 4.x, pasted with its noise)
or a reassignment JSON; ``sim.describe_parser`` reads it, ``sim.whatif`` rebuilds the cluster
around the embedded controller and plays the scenario. Exit status: 0, or 1 with ``--check`` when a
partition goes offline or under min.insync.replicas (a pre-maintenance gate), 2 on errors.
"""
from __future__ import annotations

import argparse
import json
import sys

from kcontroller.logging_setup import configure_logging

EXIT_OK, EXIT_CHECK_FAILED, EXIT_ERROR = 0, 1, 2


def _broker_ids(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(b) for b in text.replace(" ", "").split(",") if b != "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,4, got {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("expected at least one broker id")
    return ids


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "what-if",
        help="from a real cluster's kafka-topics.sh --describe output (or a reassignment JSON): which partitions "
             "go offline, and which fall under min.insync.replicas, if brokers die (--kill) or are shut down "
             "(--shutdown)")
    p.add_argument("file", metavar="FILE", help="kafka-topics.sh --describe output, or a reassignment JSON")
    p.add_argument("--kill", type=_broker_ids, default=(), metavar="IDS",
                   help="brokers that die at once (kill -9; their ZooKeeper sessions then time out), e.g. 1,4")
    p.add_argument("--shutdown", type=_broker_ids, default=(), metavar="IDS",
                   help="brokers shut down one after the other (controlled shutdown), e.g. 1,4")
    p.add_argument("--min-insync-replicas", type=int, metavar="N",
                   help="min.insync.replicas of topics without their own (default: Kafka's 1)")
    p.add_argument("--unclean", action="store_true",
                   help="the brokers' unclean.leader.election.enable=true (topic configs still override it)")
    p.add_argument("--run", type=int, metavar="K",
                   help="for a file holding several describe runs, the cluster as run K saw it (default: the last)")
    p.add_argument("--all-partitions", action="store_true", help="list every partition, not only those in trouble")
    p.add_argument("--check", action="store_true",
                   help="exit 1 if a partition goes offline or falls under min.insync.replicas")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def cmd_what_if(args: argparse.Namespace) -> int:
    if getattr(args, "log_level", None) is None:
        # The report shows what the controller did; its own ERROR lines (failed elections) are noise here.
        configure_logging("critical")
    try:
        from sim.describe_parser import DescriptionError, load_description
        from sim.whatif import WhatIfError, what_if
    except ImportError as exc:   # the sim package missing from an installed copy
        print(f"kcontroller: error: what-if needs the sim package ({exc})", file=sys.stderr)
        return EXIT_ERROR
    try:
        description = load_description(args.file, run=args.run)
        report = what_if(description, kill=args.kill, shutdown=args.shutdown,
                         min_insync_replicas=args.min_insync_replicas, unclean=args.unclean)
    except OSError as exc:
        print(f"kcontroller: error: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except (DescriptionError, WhatIfError) as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        json.dump(report.to_json_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for line in report.lines(all_partitions=args.all_partitions):
            print(line)
    totals = report.totals()
    if args.check and (totals["newly_offline"] or totals["newly_under_min_isr"]):
        return EXIT_CHECK_FAILED
    return EXIT_OK
