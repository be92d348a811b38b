"""The example scenarios tell the seeds' stories, and each run is pinned by a golden digest.

Every example in examples/ runs to the end; its summary shows the story with numbers (asserted
below), its expectations hold, and the SHA-256 of its records (msgpack bytes, in order) equals
the one committed in examples/golden-digests.json — so a change of behaviour shows up in
review. After an intended change, regenerate the digests with
``KCONTROLLER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_examples.py`` and commit them.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import msgpack
import pytest

from sim.scenario import parse_scenario
from sim.simulation import Simulation

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GOLDEN = EXAMPLES / "golden-digests.json"
_runs: dict[str, tuple] = {}


def run(name: str):
    if name not in _runs:
        records: list = []
        # The source (recorded in SimulationStarted) is named relative to the repository, so the
        # digest does not depend on where the checkout is.
        text = (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")
        sim = Simulation(parse_scenario(text, f"examples/{name}.yaml"), sink=records.append)
        sim.run()
        summary = sim.finish()
        digest = hashlib.sha256(b"".join(msgpack.packb(r) for r in records)).hexdigest()
        _runs[name] = (sim, summary, digest, records)
    return _runs[name]


NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("name", NAMES)
def test_every_expectation_of_the_example_holds(name):
    _, summary, _, _ = run(name)
    failed = [o for o in summary["observations"] if o["kind"] == "expect" and not o["ok"]]
    assert failed == []
    p = summary["produce"]
    assert p["sent_messages"] == p["acknowledged_messages"] + p["failed_messages"] + p["pending_messages"]


@pytest.mark.parametrize("name", NAMES)
def test_the_example_run_matches_its_golden_digest(name):
    _, _, digest, _ = run(name)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("KCONTROLLER_UPDATE_GOLDEN"):
        golden[name] = digest
        GOLDEN.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    assert golden.get(name) == digest, (
        f"{name}: the run's records changed. If the change is intended, regenerate the digests "
        f"(KCONTROLLER_UPDATE_GOLDEN=1 pytest tests/test_examples.py) and commit them.")


def test_rf1_broker_kill_takes_the_rf1_partitions_offline_until_the_broker_returns():
    _, s, _, _ = run("rf1-broker-kill")
    assert s["offline_partition_seconds"] > 0 and s["acknowledged_writes_lost"] == 0
    assert s["elections"]["clean"] > 0 and s["at_end"]["offline"] == 0


def test_reassigning_before_the_shutdown_keeps_every_partition_online():
    _, killed, _, _ = run("rf1-broker-kill")
    _, s, _, _ = run("rf1-reassign-before-shutdown")
    assert s["offline_partition_seconds"] == 0 < killed["offline_partition_seconds"]
    assert s["elections"]["reassignment"] > 0 and s["elections"]["controlled_shutdown"] > 0


def test_unclean_election_trades_acknowledged_writes_for_availability():
    _, on, _, _ = run("unclean-election-on")
    _, off, _, _ = run("unclean-election-off")
    assert on["elections"]["unclean"] == 1 and off["elections"]["unclean"] == 0
    assert on["acknowledged_writes_lost"] > 0 == off["acknowledged_writes_lost"]
    assert on["offline_partition_seconds"] == 0 < off["offline_partition_seconds"]
    (event,) = on["loss_events"]
    assert event["partition"] == "payments-0" and event["lost"] == on["acknowledged_writes_lost"]


def test_the_zombie_controller_loses_only_its_acks_1_writes():
    sim, s, _, _ = run("controller-failover-zombie")
    assert s["controller_failovers"] == 1
    assert s["acknowledged_writes_lost"] > 0
    assert all(p.startswith("clicks-") for p in s["lost_by_partition"])   # acks=1; orders is acks=all


def test_deletion_stuck_on_a_dead_broker_completes_when_it_returns():
    sim, s, _, records = run("deletion-stuck-on-dead-broker")
    from events.records import ReplicaTransition, TopicCreated, TopicDeletionCompleted
    from statemachines.states import REPLICA_DELETION_INELIGIBLE
    (done,) = [r for r in records if type(r) is TopicDeletionCompleted]
    assert done.topic == "old-events" and done.timestamp_ms >= 60_000          # after broker 3 returned
    stuck = [r for r in records if type(r) is ReplicaTransition and r.to_state == REPLICA_DELETION_INELIGIBLE]
    assert stuck and {r.replica for r in stuck} == {3} and all(r.timestamp_ms < 60_000 for r in stuck)
    recreated = [r for r in records if type(r) is TopicCreated and r.topic == "old-events"]
    assert len(recreated) == 2 and recreated[1].offset > done.offset      # the name is free again
    assert s["acknowledged_writes_lost"] == 0


def test_a_killed_broker_stays_a_kraft_observer_until_a_describe_300_s_after_its_last_fetch():
    _, s, _, _ = run("kraft-observer-expiry")
    described = {o["at_s"]: o for o in s["observations"] if o["kind"] == "describe_quorum"}

    def last_fetch_ago(at_s: float) -> dict[int, int]:
        return {o["id"]: o["last_fetch_ago_ms"] for o in described[at_s]["observers"]}

    def current_observers(at_s: float) -> str:
        return next(line for line in described[at_s]["lines"] if line.startswith("CurrentObservers:"))

    assert all(age < 500 for age in last_fetch_ago(15).values()) and set(last_fetch_ago(15)) == {1, 2, 3}
    # Killed at 20 s: the fetch it left waiting at the leader was taken at the 20 s NoOpRecord.
    assert last_fetch_ago(30)[2] == 10_000                      # the seed's describe: still listed
    assert '{"id": 2, ' in current_observers(30)
    assert "# observer 2 (directoryId " in "\n".join(described[30]["lines"])
    assert "last fetch 10,000 ms ago (dropped by a describe 290,000 ms or more from now)" in \
        "\n".join(described[30]["lines"])
    assert last_fetch_ago(319)[2] == 299_000                    # one second short of the timeout
    assert set(last_fetch_ago(321)) == {1, 3} and '"id": 2' not in current_observers(321)
    assert set(last_fetch_ago(330)) == {1, 2, 3}                # back with its first fetch after the restart
    assert described[330]["replication"] and described[330]["lines"][0].startswith("NodeId\tDirectoryId")
    high_watermarks = [int(line.split()[1]) for o in described.values() for line in o["lines"]
                       if line.startswith("HighWatermark:")]
    assert high_watermarks == sorted(high_watermarks) and high_watermarks[0] > 0
