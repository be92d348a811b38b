"""Replay of a simulation's log: run the same scenario with the same seed and compare every record.

A simulation's log starts with a SimulationStarted record holding the scenario's YAML text and
the seed. Re-running it must write the same records, byte for byte (the simulation is a
function of the scenario and the seed); the first difference is reported with its offset.
``rerun_simulation`` runs a log's simulation again up to a time, checking it along the way, to
look at the simulated cluster then (``kcontroller describe --quorum LOG_DIR --time MS``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import msgpack

from controller.embedding.replay import Divergence, ReplayResult, _Diverged
from events.records import SimulationStarted
from sim.scenario import parse_scenario
from sim.simulation import Simulation


class _Compare:
    def __init__(self, expected: Iterator):
        self.expected = expected
        self.count = 0
        self.inputs = 0

    def __call__(self, rec) -> None:
        want = next(self.expected, None)
        if want is None or msgpack.packb(want) != msgpack.packb(rec):
            raise _Diverged(Divergence(rec.offset, want, rec))
        self.count += 1
        self.inputs += rec.is_input


def is_simulation_log(first_record) -> bool:
    return type(first_record) is SimulationStarted


def replay_simulation(records: Iterable[tuple]) -> ReplayResult:
    """Re-run the simulation whose records these are; compare everything it writes with them."""
    it = iter(records)
    first = next(it, None)
    if not is_simulation_log(first):
        raise ValueError("not a simulation log: it does not start with SimulationStarted")
    scenario = parse_scenario(first.text, first.source)
    cmp = _Compare(_chain(first, it))
    try:
        sim = Simulation(scenario, seed=first.seed, sink=cmp)
        sim.run()
        sim.finish()
    except _Diverged as d:
        return ReplayResult(cmp.count, cmp.inputs, d.divergence, None)
    rest = next(cmp.expected, None)
    if rest is not None:
        return ReplayResult(cmp.count, cmp.inputs, Divergence(rest.offset, rest, None), None)
    return ReplayResult(cmp.count, cmp.inputs, None, None)


def _chain(first, it: Iterator) -> Iterator:
    yield first
    yield from it


def rerun_simulation(records: Iterable[tuple], until_ms: int | None = None,
                     started: Callable[[Simulation], object] | None = None) -> Simulation:
    """The simulation whose records these are, run again up to ``until_ms`` (default: its duration)
    and stopped there, every record it writes on the way compared with the log's; ``started(sim)``
    is called once the scenario is scheduled, before anything runs. Raises ValueError if the records
    are not a simulation log, ``until_ms`` is past the run, or the run diverges."""
    it = iter(records)
    first = next(it, None)
    if not is_simulation_log(first):
        raise ValueError("not a simulation log: it does not start with SimulationStarted")
    scenario = parse_scenario(first.text, first.source)
    until_ms = scenario.duration_ms if until_ms is None else until_ms
    if not 0 <= until_ms <= scenario.duration_ms:
        raise ValueError(f"the run lasts {scenario.duration_ms} ms: {until_ms} ms is not within it")
    cmp = _Compare(_chain(first, it))
    try:
        sim = Simulation(scenario, seed=first.seed, sink=cmp)
        sim.start()
        if started is not None:
            started(sim)
        sim.run_until(until_ms)
    except _Diverged as d:
        raise ValueError(f"the log does not replay (it was written by another engine, or changed): after "
                         f"{cmp.count} identical records, {d.divergence}") from None
    return sim
