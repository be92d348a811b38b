"""The simulation and the cyclic garbage collector: while ``run_until`` runs, what existed before and what a broker's
first LeaderAndIsr makes in bulk is frozen out of the collector's scans (gc.freeze), and unfrozen after; a program
that froze objects itself is left as it was. Freezing changes no outcome."""
from __future__ import annotations

import gc

import pytest

from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")

# 7,000 partitions on 3 brokers at RF 2: each broker's first LeaderAndIsr has over 4,096 rows (the bulk path).
TEXT = """
name: gc
seed: 3
duration: 8s
cluster:
  brokers: [0, 1, 2]
topics:
  - {name: t, partitions: 7000, replication_factor: 2}
workload:
  producers:
    - {topics: [t], rate_per_s: 2000, acks: all, start: 1s}
steps:
  - {at: 4s, action: kill_broker, broker: 1}
  - {at: 6s, action: start_broker, broker: 1}
"""


def run(monkeypatch, seen: list) -> list:
    records: list = []
    sim = Simulation(parse_scenario(TEXT, "<test>"), sink=records.append)
    made_in_bulk = sim.made_in_bulk

    def spy() -> None:
        before = gc.get_freeze_count()
        made_in_bulk()
        seen.append((before, gc.get_freeze_count()))
    monkeypatch.setattr(sim, "made_in_bulk", spy)
    thresholds = gc.get_threshold()
    sim.start()
    sim.run_until(3000)
    sim.run_until(8000)
    assert gc.get_threshold() == thresholds
    return records


def test_bulk_objects_are_frozen_during_a_run_and_unfrozen_after(monkeypatch):
    assert gc.get_freeze_count() == 0
    seen: list = []
    records = run(monkeypatch, seen)
    assert len(seen) >= 3 and all(0 < before < after for before, after in seen)  # each broker's first LeaderAndIsr
    assert gc.get_freeze_count() == 0
    # A program that froze objects itself: nothing is frozen or unfrozen for it, and the run is the same. (Frozen
    # objects still die when nothing refers to them: the count may only go down.)
    keep = [[] for _ in range(10)]      # tracked objects, frozen and kept alive
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        seen_user: list = []
        assert run(monkeypatch, seen_user) == records
        assert seen_user and all(after <= before <= frozen for before, after in seen_user)
        assert len(keep) <= gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
    del keep
