"""The KRaft metadata quorum inside a simulation (sim/kraft_quorum.py): brokers fetch as observers,
the leader's log grows, describe_quorum steps show it as kafka-metadata-quorum.sh does; deterministic."""
from __future__ import annotations

import base64
import hashlib
import random

import msgpack
import pytest

from sim.kraft_quorum import METADATA_RECORD_KINDS, QUORUM_REQUEST_TIMEOUT_MS, random_uuid
from sim.quorum import OBSERVER_SESSION_TIMEOUT_MS, canonical_directory_id
from sim.scenario import parse_scenario
from sim.simulation import Simulation

BASE = """
name: quorum
seed: 3
duration: 60s
cluster: {brokers: [1, 2, 3]}
network: {latency: 2ms, jitter: 3ms}
topics: [{name: t, assignment: [[1, 2, 3], [2, 3, 1]]}]
"""


def scenario(quorum: str = "{voters: [100]}", steps: str = "", duration: str = "60s"):
    text = BASE.replace("duration: 60s", f"duration: {duration}") + f"quorum: {quorum}\n"
    if steps:
        text += "steps:\n" + steps
    return parse_scenario(text, "<test>")


def run(s, seed: int | None = None) -> tuple[Simulation, list, dict]:
    records: list = []
    sim = Simulation(s, seed=seed, sink=records.append)
    sim.run()
    return sim, records, sim.finish()


def until(s, time_ms: int) -> Simulation:
    sim = Simulation(s, sink=lambda rec: None)
    sim.start()
    sim.run_until(time_ms)
    return sim


def described(summary: dict) -> list[dict]:
    return [o for o in summary["observations"] if o["kind"] == "describe_quorum"]


def ages(entry: dict) -> dict[int, int]:
    return {o["id"]: o["last_fetch_ago_ms"] for o in entry["observers"]}


# --- determinism ---------------------------------------------------------------------------------------

def test_the_same_scenario_and_seed_give_the_same_run_byte_for_byte():
    s = scenario("{voters: [100, 101, 102], version: '3.9'}",
                 "  - {at: 10s, action: kill_broker, broker: 2}\n  - {at: 20s, action: describe_quorum}\n"
                 "  - {at: 30s, action: start_broker, broker: 2}\n  - {at: 40s, action: describe_quorum}\n")

    def digest(records) -> str:
        return hashlib.sha256(b"".join(msgpack.packb(r) for r in records)).hexdigest()
    a, b = run(s), run(s)
    assert digest(a[1]) == digest(b[1]) and described(a[2]) == described(b[2])
    other = run(s, seed=4)[2]
    # Another seed draws other ids (cluster, directories) and other jitter; the story is the same.
    assert described(other)[0]["lines"][0] != described(a[2])[0]["lines"][0]
    assert [sorted(ages(e)) for e in described(other)] == [sorted(ages(e)) for e in described(a[2])]


def test_ids_are_kafka_uuids_drawn_from_the_seed():
    sim = until(scenario("{voters: [100], version: '3.9'}"), 0)
    for text in (sim.quorum.cluster_id, sim.quorum.directory_id(1), sim.quorum.directory_id(100)):
        assert len(text) == 22 and canonical_directory_id(text) == text and not text.startswith("-")
    assert sim.quorum.directory_id(1) != sim.quorum.directory_id(2)
    assert until(scenario("{voters: [100], version: '3.9'}"), 0).quorum.cluster_id == sim.quorum.cluster_id
    raw = base64.urlsafe_b64decode(random_uuid(random.Random(1)) + "==")
    assert raw[6] >> 4 == 4 and raw[8] >> 6 == 0b10                          # java.util.UUID.randomUUID's v4


def test_a_scenario_without_a_quorum_section_has_none():
    s = parse_scenario(BASE, "<test>")
    sim = Simulation(s, sink=lambda rec: None)
    assert sim.quorum is None and s.quorum is None


# --- the observers -------------------------------------------------------------------------------------

def test_every_running_broker_is_an_observer_that_fetched_within_the_last_500_ms():
    _, _, summary = run(scenario("{voters: [100, 101, 102]}", "  - {at: 30s, action: describe_quorum}\n"))
    (entry,) = described(summary)
    assert set(ages(entry)) == {1, 2, 3} and all(0 <= a <= 500 for a in ages(entry).values())
    lines = entry["lines"]
    assert lines[1:3] == ["LeaderId:               100", "LeaderEpoch:            1"]
    assert lines[6] == "CurrentVoters:          [100,101,102]"            # 3.7: ids only, HashMap order
    assert lines[7] == "CurrentObservers:       [1,2,3]"
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]


def test_a_killed_broker_stays_until_a_describe_300_s_after_its_last_fetch_then_comes_back_on_restart():
    s = scenario("{voters: [100]}", duration="10m", steps="""\
  - {at: 10s, action: kill_broker, broker: 3}
  - {at: 5m, action: describe_quorum}
  - {at: 309999ms, action: describe_quorum}
  - {at: 310s, action: describe_quorum}
  - {at: 6m, action: start_broker, broker: 3}
  - {at: 361s, action: describe_quorum}
""")
    _, _, summary = run(s)
    at_5m, just_before, at_310, at_361 = described(summary)
    # Its last fetch: the one it left waiting at the leader, taken at the NoOpRecord of 10 s.
    assert ages(at_5m)[3] == 290_000
    assert ages(just_before)[3] == OBSERVER_SESSION_TIMEOUT_MS - 1
    assert set(ages(at_310)) == {1, 2}                                       # 300,000 ms: dropped
    assert at_310["lines"][7] == "CurrentObservers:       [1,2]"
    assert set(ages(at_361)) == {1, 2, 3} and ages(at_361)[3] <= 500


def test_without_a_describe_a_dead_observer_is_never_dropped():
    s = scenario("{voters: [100], version: '3.9'}", duration="20m",
                 steps="  - {at: 10s, action: controlled_shutdown, broker: 2}\n")
    sim = until(s, 20 * 60_000)
    assert sorted(b for b, _ in sim.quorum.state.tracked_observers()) == [1, 2, 3]
    assert sim.quorum.state.tracked_observers()[0][1] is not None            # 3.9: keyed with directory ids
    text = sim.describe_quorum_text()                                       # one describe drops it
    assert sorted(b for b, _ in sim.quorum.state.tracked_observers()) == [1, 3]
    assert '"id": 2' not in text


def test_a_restarted_broker_resumes_from_its_own_offset_with_the_same_directory_id():
    # (restarted after its ZooKeeper session expired, so that it can register again)
    s = scenario("{voters: [100], version: '3.9'}", "  - {at: 10s, action: kill_broker, broker: 1}\n"
                                                   "  - {at: 40s, action: start_broker, broker: 1}\n")
    sim = until(s, 39_999)
    before = sim.quorum.replica_offsets[1]
    assert before > 0 and sim.quorum.state.replica(1, sim.quorum.directory_id(1)).log_end_offset == before
    sim.run_until(40_003)
    # Its first FETCH after the restart asks from where it stopped.
    assert sim.quorum.state.replica(1, sim.quorum.directory_id(1)).log_end_offset == before
    assert sim.quorum.state.replica(1, sim.quorum.directory_id(1)).last_fetch_timestamp > 39_999
    sim.run_until(40_010)
    entries = [o for o in sim.quorum.state.tracked_observers() if o[0] == 1]
    assert entries == [(1, sim.quorum.directory_id(1))]                     # one entry: the same disk
    assert sim.quorum.replica_offsets[1] > before


def test_a_broker_cut_off_from_zk_cannot_fetch_and_fetches_again_once_healed():
    s = scenario("{voters: [100]}", """\
  - {at: 10s, action: partition_network, isolate: 2, from: [zk]}
  - {at: 39s, action: describe_quorum}
  - {at: 40s, action: heal_network}
  - {at: 45s, action: describe_quorum}
""")
    _, _, summary = run(s)
    cut, healed = described(summary)
    assert 28_500 <= ages(cut)[2] <= 29_100 and ages(cut)[1] <= 500
    assert ages(healed)[2] <= QUORUM_REQUEST_TIMEOUT_MS + 500               # its retried FETCH got through


def test_fetch_max_wait_bounds_the_age_of_a_live_brokers_last_fetch():
    # The leader answers a parked FETCH empty after fetch_max_wait, without taking it; the broker
    # asks again at once, and that FETCH is taken when it arrives.
    _, _, summary = run(scenario("{voters: [100], fetch_max_wait: 100ms}",
                                 "  - {at: 30250ms, action: describe_quorum}\n"))
    assert all(a <= 100 + 10 for a in ages(described(summary)[0]).values())


# --- the leader's log ------------------------------------------------------------------------------------

def test_the_log_grows_by_a_no_op_every_500_ms_and_a_record_per_metadata_change():
    s = scenario("{voters: [100]}", "  - {at: 10s, action: kill_broker, broker: 1}\n"
                                    "  - {at: 20s, action: create_topic, name: u, partitions: 2, "
                                    "replication_factor: 2}\n")
    sim, records, _ = run(s)
    metadata = sum(1 for r in records if r[0] in METADATA_RECORD_KINDS)
    assert metadata > 10
    assert sim.quorum.end_offset == 1 + 60_000 // 500 + metadata             # LeaderChangeMessage, NoOps, changes


def test_three_voters_replicate_and_the_high_watermark_follows_the_majority():
    sim = until(scenario("{voters: [100, 101, 102], version: '3.9'}"), 30_100)
    result = sim.quorum.describe()
    assert [v.replica_id for v in result.voters] == [100, 101, 102]
    assert result.high_watermark == sim.quorum.end_offset
    assert all(v.log_end_offset == sim.quorum.end_offset for v in result.voters)
    assert sorted(o.replica_id for o in result.observers) == [1, 2, 3]      # voters fetch as voters
    text = sim.describe_quorum_text()
    assert '"endpoints": ["CONTROLLER://controller-101:9093"]' in text
    assert text.splitlines()[4] == "MaxFollowerLag:         0"


def test_replication_table_in_a_step():
    _, _, summary = run(scenario("{voters: [100, 101]}",
                                 "  - {at: 5s, action: describe_quorum, replication: true}\n"))
    lines = described(summary)[0]["lines"]
    assert lines[0] == "NodeId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t"
    statuses = [line.split("\t")[-2].strip() for line in lines[1:] if not line.startswith("#")]
    assert statuses == ["Leader", "Follower", "Observer", "Observer", "Observer"]


@pytest.mark.parametrize("version", ["3.7", "3.9"])
def test_the_summary_prints_each_describe(version):
    from sim.metrics import format_summary
    _, _, summary = run(scenario(f"{{voters: [100], version: '{version}'}}",
                                 "  - {at: 5s, action: describe_quorum}\n"))
    text = format_summary(summary)
    assert "  describe quorum at 5s (line 10):\n    ClusterId:              " in text
    assert "    # observer 1" in text
