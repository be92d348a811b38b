"""``kcontroller what-if FILE --kill 1,4 | --shutdown 1,4``: which partitions of a real cluster go
offline, and which fall under min.insync.replicas, if those brokers die or are shut down.

FILE is the text of ``kafka-topics.sh --describe`` (any version 0.8 to 4.x, pasted with its noise)
or a reassignment JSON; ``sim.describe_parser`` reads it, ``sim.whatif`` rebuilds the cluster
around the embedded controller and plays the scenario. ``--plan FILE`` writes the reassignment JSON that
moves a replica of each partition whose every replica is taken out to a broker that stays up (the file
``kafka-reassign-partitions.sh --execute`` reads); ``--racks``/``--kill-rack`` give the brokers' racks and
kill a whole rack. Exit status: 0, or 1 with ``--check`` when a partition goes offline or under
min.insync.replicas (a pre-maintenance gate), 2 on errors.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from controller.admin_files import format_reassignment_json
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


def _racks(text: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for item in text.replace(" ", "").split(","):
        broker, sep, rack = item.partition("=")
        if not sep or not rack or not broker.isdigit():
            raise argparse.ArgumentTypeError(f"expected broker racks like 0=a,1=a,2=b, got {item!r}")
        if int(broker) in out:
            raise argparse.ArgumentTypeError(f"broker {broker} is given two racks")
        out[int(broker)] = rack
    return out


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
    p.add_argument("--racks", type=_racks, default={}, metavar="ID=RACK,...",
                   help="the brokers' broker.rack, e.g. 0=a,1=a,2=b (a describe output does not show them)")
    p.add_argument("--kill-rack", action="append", default=[], metavar="RACK",
                   help="kill every broker of this rack (with --racks), as a rack or zone failure would; repeatable")
    p.add_argument("--plan", metavar="FILE",
                   help="write the reassignment that moves one replica of each partition whose every replica is on "
                        "the brokers taken out to a broker that stays up (kafka-reassign-partitions.sh's file: run "
                        "it with --execute --reassignment-json-file FILE before the maintenance)")
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
    kill = tuple(args.kill)
    for rack in args.kill_rack:
        members = [b for b, r in sorted(args.racks.items()) if r == rack]
        if not members:
            known = ", ".join(sorted(set(args.racks.values()))) or "none: give them with --racks"
            print(f"kcontroller: error: --kill-rack {rack}: no broker has this rack (racks: {known})", file=sys.stderr)
            return EXIT_ERROR
        kill += tuple(b for b in members if b not in kill)
    if args.plan is not None and (not args.plan or os.path.isdir(args.plan)):
        print(f"kcontroller: error: --plan {args.plan!r}: expected a file to write", file=sys.stderr)
        return EXIT_ERROR
    try:
        description = load_description(args.file, run=args.run)
        report = what_if(description, kill=kill, shutdown=args.shutdown,
                         min_insync_replicas=args.min_insync_replicas, unclean=args.unclean, racks=args.racks)
    except OSError as exc:
        print(f"kcontroller: error: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except (DescriptionError, WhatIfError) as exc:
        print(f"kcontroller: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    plan_line = None
    if args.plan is not None:
        if report.plan:
            try:
                with open(args.plan, "w", encoding="utf-8") as f:
                    f.write(format_reassignment_json(report.plan) + "\n")
            except OSError as exc:
                print(f"kcontroller: error: cannot write {args.plan}: {exc.strerror or exc}", file=sys.stderr)
                return EXIT_ERROR
            plan_line = (f"Wrote the reassignment of {len(report.plan)} partition(s) to {args.plan}: run it with "
                         f"kafka-reassign-partitions.sh (or kcontroller reassign LOG_DIR) --execute "
                         f"--reassignment-json-file {args.plan}, and --verify until it completes, before the "
                         f"maintenance.")
        else:
            plan_line = f"No partition needs a replica moved first: {args.plan} not written."
    if args.json:
        doc = report.to_json_dict()
        doc["plan_file"] = args.plan if report.plan and args.plan is not None else None
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for line in report.lines(all_partitions=args.all_partitions):
            print(line)
        if plan_line:
            print("")
            print(plan_line)
    totals = report.totals()
    if args.check and (totals["newly_offline"] or totals["newly_under_min_isr"]):
        return EXIT_CHECK_FAILED
    return EXIT_OK
