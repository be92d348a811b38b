"""The controller's auto leader rebalance task runs in a simulation with Kafka's timing: 5 s after a controller
takes over, then every ``leader.imbalance.check.interval.seconds`` (300 by default); a broker back after a
controlled shutdown gets its preferred leaderships back at the first check after its return."""
from __future__ import annotations

import pytest

from events.records import ELECTION_PREFERRED, ControllerElected, PartitionTransition
from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")

ASSIGNMENT = "[[1, 2, 0], [1, 0, 2], [2, 1, 0], [0, 1, 2]]"


def scenario(configs: str = "", duration: str = "320s", steps: str = "", topics: str = "") -> str:
    return f"""
name: rebalance
seed: 3
duration: {duration}
cluster:
  brokers: [0, 1, 2]
  configs: {{zookeeper.session.timeout.ms: 6000{configs}}}
topics:
  - {{name: t, assignment: {ASSIGNMENT}}}
{topics}
steps:
  - {{at: 10s, action: controlled_shutdown, broker: 1}}
  - {{at: 20s, action: start_broker, broker: 1}}
{steps}"""


def start(text: str) -> tuple[Simulation, list]:
    records: list = []
    sim = Simulation(parse_scenario(text, "<test>"), sink=records.append)
    sim.start()
    return sim, records


def leaders(sim: Simulation) -> dict[int, int]:
    ctx = sim.brokers[sim.controller_id].controller.context
    return {p: ctx.partition_leader(("t", p)) for p in range(4)}


def preferred_elections(records: list) -> list[tuple[int, int]]:
    return [(r.timestamp_ms, r.partition) for r in records
            if type(r) is PartitionTransition and r.election == ELECTION_PREFERRED]


def test_with_kafkas_defaults_the_leaderships_come_back_at_the_check_after_300_s():
    sim, records = start(scenario())
    sim.run_until(25_000)
    assert leaders(sim)[0] != 1 and leaders(sim)[1] != 1      # moved away by the controlled shutdown
    sim.run_until(300_000)
    assert leaders(sim)[0] != 1 and preferred_elections(records) == []
    sim.run_until(320_000)
    assert leaders(sim) == {0: 1, 1: 1, 2: 2, 3: 0}
    activated = next(r.timestamp_ms for r in records if type(r) is ControllerElected)
    # KafkaController.onControllerFailover schedules the first check 5 s after it takes over, then every 300 s.
    assert {t for t, _ in preferred_elections(records)} == {activated + 5_000 + 300_000}
    assert sorted(p for _, p in preferred_elections(records)) == [0, 1]


def test_a_shorter_check_interval_brings_them_back_sooner():
    sim, records = start(scenario(", leader.imbalance.check.interval.seconds: 30", duration="60s"))
    sim.run_until(60_000)
    activated = next(r.timestamp_ms for r in records if type(r) is ControllerElected)
    assert leaders(sim) == {0: 1, 1: 1, 2: 2, 3: 0}
    assert {t for t, _ in preferred_elections(records)} == {activated + 5_000 + 30_000}


def test_disabled_it_never_runs():
    sim, records = start(scenario(", auto.leader.rebalance.enable: false, leader.imbalance.check.interval.seconds: 30",
                                  duration="200s"))
    sim.run_until(200_000)
    assert preferred_elections(records) == []
    assert leaders(sim)[0] != 1


def test_below_the_imbalance_percentage_nothing_moves():
    # Broker 1 prefers t-0, t-1 and u-0; u-0 lives on broker 1 alone, so broker 1 leads it again once it
    # returns, and its imbalance is 2 of 3 (67 %): not above 70 %.
    rf1 = "  - {name: u, assignment: [[1]]}\n"
    sim, records = start(scenario(", leader.imbalance.check.interval.seconds: 30, "
                                  "leader.imbalance.per.broker.percentage: 70", duration="60s", topics=rf1))
    sim.run_until(60_000)
    assert preferred_elections(records) == []
    assert leaders(sim)[0] != 1 and leaders(sim)[1] != 1
    # At 60 % the same imbalance is above the threshold: both come back.
    sim, records = start(scenario(", leader.imbalance.check.interval.seconds: 30, "
                                  "leader.imbalance.per.broker.percentage: 60", duration="60s", topics=rf1))
    sim.run_until(60_000)
    assert sorted(p for _, p in preferred_elections(records)) == [0, 1]


def test_a_new_controller_checks_5_s_after_it_takes_over():
    sim, records = start(scenario(", leader.imbalance.check.interval.seconds: 1000", duration="60s",
                                  steps="  - {at: 30s, action: kill_broker, broker: 0}\n"))
    sim.run_until(60_000)
    elected = [r for r in records if type(r) is ControllerElected]
    assert len(elected) == 2
    assert {t for t, _ in preferred_elections(records)} == {elected[1].timestamp_ms + 5_000}

