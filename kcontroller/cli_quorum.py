"""``kcontroller describe --quorum SOURCE [--time MS] [--replication] [--seed N]``: the KRaft metadata
quorum of a simulated run, as ``kafka-metadata-quorum.sh describe --status`` (``--replication``) prints it.

``SOURCE`` is a scenario file with a ``quorum`` section, run with its seed (or ``--seed``), or the
log directory of such a simulation (``kcontroller simulate``), which is run again from its
``SimulationStarted`` record, every record checked against the log. At ``--time`` (default: the
end of the run) the quorum leader serves one DescribeQuorum request — so, as in Kafka, observers
whose last fetch is 300 000 ms or more in the past are dropped first — exactly as a
``describe_quorum`` step at that time would, placed after the scenario's own steps of that
millisecond. Kafka's text comes out byte for byte for the scenario's version (3.7 or 3.9),
followed by ``#`` lines saying how long ago each observer last fetched. With ``--json``, the same
DescribeQuorum answer as one JSON document: ``time_ms`` and ``time`` (on the run's calendar, its
scenario's ``start_time``), ``version``, ``cluster_id``, ``leader_id``, ``leader_epoch``,
``high_watermark``, ``voters`` and ``observers`` (each ``replica_id``, ``directory_id``,
``log_end_offset``, ``last_fetch_timestamp``, ``last_caught_up_timestamp``, ``last_fetch_ago_ms``;
-1 for unknown, as Kafka's), and ``nodes`` (3.9: each voter's listeners).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from events.log import LogReader
from sim.scenario import ScenarioError, load_scenario, parse_scenario
from sim.sim_replay import is_simulation_log, rerun_simulation
from sim.simulation import Simulation, SimulationError
from statemachines.kafka_log_format import format_start_time

EXIT_OK, EXIT_ERROR = 0, 2


def add_options(describe: argparse.ArgumentParser) -> None:
    describe.add_argument("--quorum", action="store_true",
                          help="the KRaft metadata quorum instead, as kafka-metadata-quorum.sh describe --status "
                               "prints it (plus '#' lines: each observer's last fetch); LOG_DIR is then a scenario "
                               "file with a quorum section or a simulation's log directory, run up to --time")
    describe.add_argument("--replication", action="store_true",
                          help="with --quorum: describe --replication's table instead of --status")
    describe.add_argument("--seed", type=int, default=None,
                          help="with --quorum and a scenario file: the run's seed (default: the scenario's)")


def _fail(message: str) -> int:
    print(f"kcontroller: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def cmd_describe_quorum(args: argparse.Namespace) -> int:
    for flag, value in (("--at", args.at_offset_deprecated), ("--offset", args.offset)):
        if value is not None:
            return _fail(f"--quorum describes a time (--time MS), not a record offset ({flag})")
    if args.topic is not None or args.under_replicated_partitions or args.unavailable_partitions \
            or args.under_min_isr_partitions or args.at_min_isr_partitions or args.topics_with_overrides:
        return _fail("--quorum describes the metadata quorum: --topic and the partition filters are for the cluster")
    if args.time is not None and args.time < 0:
        return _fail(f"--time: expected a time >= 0 ms, got {args.time}")
    source = args.log_dir
    is_log = os.path.isdir(source)
    try:
        if is_log:
            if args.seed is not None:
                return _fail("--seed is for a scenario file; a simulation log runs again with its own seed")
            first = next(iter(LogReader(source).records()), None)
            if not is_simulation_log(first):
                return _fail(f"{source} is not a simulation's log (it does not start with SimulationStarted); "
                             f"--quorum needs a scenario file or the log of kcontroller simulate")
            scenario = parse_scenario(first.text, first.source)
        else:
            scenario = load_scenario(source)
    except ScenarioError as exc:
        return _fail(str(exc))
    if scenario.quorum is None:
        return _fail(f"{scenario.source}: the scenario has no quorum section, so no metadata quorum to describe "
                     f"(see docs/scenarios.md)")
    until = scenario.duration_ms if args.time is None else args.time
    if until > scenario.duration_ms:
        return _fail(f"--time {until}: the run of {scenario.name!r} lasts {scenario.duration_ms} ms")
    described: list = []

    def describe(sim: Simulation) -> None:
        if args.json:
            described.append(_quorum_json(sim.quorum.describe(), sim.loop.now, scenario.start_time_ms))
        else:
            described.append(sim.describe_quorum_text(args.replication))

    def describe_then(sim: Simulation) -> None:
        sim.loop.at(until, lambda: describe(sim), "kafka-metadata-quorum.sh describe")

    try:
        if is_log:
            rerun_simulation(LogReader(source).records(), until, started=describe_then)
        else:
            sim = Simulation(scenario, seed=args.seed, sink=lambda rec: None)
            sim.start()
            describe_then(sim)
            sim.run_until(until)
    except (SimulationError, ValueError) as exc:
        return _fail(f"{source}: {exc}")
    if args.json:
        json.dump(described[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(described[0])
    return EXIT_OK


def _quorum_json(result, now_ms: int, start_ms: int) -> dict:
    def replica(r) -> dict:
        return {"replica_id": r.replica_id, "directory_id": r.directory_id, "log_end_offset": r.log_end_offset,
                "last_fetch_timestamp": r.last_fetch_timestamp,
                "last_caught_up_timestamp": r.last_caught_up_timestamp,
                "last_fetch_ago_ms": None if r.last_fetch_timestamp < 0 else now_ms - r.last_fetch_timestamp}
    return {"time_ms": now_ms, "time": format_start_time(start_ms + now_ms), "version": result.version,
            "cluster_id": result.cluster_id, "leader_id": result.leader_id, "leader_epoch": result.leader_epoch,
            "high_watermark": result.high_watermark, "voters": [replica(r) for r in result.voters],
            "observers": [replica(r) for r in result.observers],
            "nodes": {str(n): [str(e) for e in endpoints] for n, endpoints in sorted(result.nodes.items())}}
