"""Brokers apply a columnar LeaderAndIsr request with ``Replication.become_many`` (no record object per
partition); the per-record ``become_leader_or_follower`` is the reference. Runs of random scenarios and of the
examples give the same records, byte for byte, the same summary and the same data-plane state either way."""
from __future__ import annotations

from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from sim.replication import Replication
from sim.scenario import load_scenario, parse_scenario
from sim.simulation import Simulation
from test_data_plane_differential import scenarios

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def per_record(self, b, batch, rows):
    records = batch.records()
    for i in np.asarray(rows).tolist():
        self.become_leader_or_follower(b, records[i])


def state(sim: Simulation) -> dict:
    r = sim.replication
    replicas = {(b, tp): (rep.leader, rep.leader_epoch, rep.isr, rep.partition_epoch, rep.replicas,
                          dict(rep.follower_leo), rep.epoch_start, rep.pending_isr, rep.offline, rep.log_dir,
                          rep.min_isr, rep.fetching_from, len(rep.delayed))
                for b, reps in r.replicas.items() for tp, rep in reps.items()}
    logs = {(b, tp): (log.leo, log.hw, log.log_start, tuple(log.epochs))
            for b, disk in r.disks.items() for tp, log in disk.items()}
    sessions = {k: (s.state, tuple(s.partitions), tuple(s.dirty), {tp: tuple(w) for tp, w in s.watch.items()},
                    tuple(s.pending), tuple(s.hw_moved), s.caught_up_ms, s.last_fetch_ms, s.seq)
                for k, s in r.sessions.items()}
    led = {b: {f: tuple(tps) for f, tps in by.items()} for b, by in r.led_with.items()}
    return {"replicas": replicas, "logs": logs, "sessions": sessions, "led": led}


def run(scenario, monkeypatch, reference: bool) -> tuple[bytes, dict, dict]:
    records: list = []
    with monkeypatch.context() as m:
        if reference:
            m.setattr(Replication, "become_many", per_record)
        sim = Simulation(scenario, sink=records.append)
        sim.run()
        summary = sim.finish()
        st = state(sim)
    return b"".join(msgpack.packb(tuple(r), use_bin_type=True) for r in records), summary, st


def same(scenario, monkeypatch) -> None:
    fast = run(scenario, monkeypatch, False)
    ref = run(scenario, monkeypatch, True)
    assert fast[1] == ref[1]
    assert fast[2] == ref[2]
    assert fast[0] == ref[0]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_random_scenarios(monkeypatch, text):
    same(parse_scenario(text, "<become>"), monkeypatch)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_examples(monkeypatch, name):
    same(load_scenario(EXAMPLES / name), monkeypatch)
