"""The simulation engine's control plane: brokers on a network with latency, sessions, failover."""
from __future__ import annotations

import msgpack
import pytest

from events.records import ControllerElected, LiveBrokersChanged, RequestSent
from sim.scenario import parse_scenario
from sim.simulation import Simulation, SimulationError

BASE = """
name: control plane
seed: 7
duration: 60s
cluster:
  brokers: [0, 1, 2]
  configs: {zookeeper.session.timeout.ms: 6000}
network: {latency: 5ms, jitter: 3ms}
"""


def run(text: str, seed: int | None = None) -> tuple[Simulation, list]:
    records: list = []
    sim = Simulation(parse_scenario(text, "<test>"), seed=seed, sink=records.append)
    sim.run()
    return sim, records


def test_brokers_elect_a_controller_and_learn_the_live_brokers_over_the_network():
    sim, records = run(BASE)
    assert sim.controller_id == 0
    assert [r.controller_id for r in records if type(r) is ControllerElected] == [0]
    for b in (0, 1, 2):
        assert sim.brokers[b].controller_epoch == 1
        assert sorted(sim.brokers[b].live_brokers) == [0, 1, 2]
    assert sim.network.sent > 0 and sim.loop.now == 60_000


def test_killing_the_controller_fails_over_when_its_session_times_out():
    sim, records = run(BASE + """
steps:
  - {at: 10s, action: kill_broker, controller: true}
""")
    elected = [(r.controller_id, r.controller_epoch, r.timestamp_ms) for r in records if type(r) is ControllerElected]
    assert elected[0][:2] == (0, 1)
    # Its session expires 6 s after its last heartbeat (every 2 s), so 4 to 6 s after the kill; the
    # broker whose /controller notification arrives first (network jitter) wins the race.
    assert elected[1][0] in (1, 2) and elected[1][1] == 2 and 14_000 <= elected[1][2] <= 16_100
    assert sorted(sim.brokers[2].live_brokers) == [1, 2] and sim.controller_id == elected[1][0]


def test_a_short_session_timeout_is_negotiated_up_to_two_ticks():
    sim, records = run(BASE.replace("zookeeper.session.timeout.ms: 6000", "zookeeper.session.timeout.ms: 1000") + """
steps:
  - {at: 10s, action: kill_broker, controller: true}
""")
    assert (sim.requested_session_timeout_ms, sim.session_timeout_ms) == (1_000, 4_000)
    assert sim.zk.session_timeout(sim.brokers[1].zk.session_id) == 4_000
    # ZooKeeper grants 4 s: the session expires 4 s after the last heartbeat (every 1.33 s), not after 1 s.
    elected = [(r.controller_id, r.controller_epoch, r.timestamp_ms) for r in records if type(r) is ControllerElected]
    assert elected[1][1] == 2 and 12_600 <= elected[1][2] <= 14_100


def test_a_controller_cut_off_from_the_store_is_replaced_and_its_requests_are_refused():
    sim, records = run(BASE + """
steps:
  - {at: 5s, action: partition_network, isolate: controller, from: [zk]}
  - {at: 30s, action: heal_network}
""")
    # The old controller's session expired about 6 s after its last heartbeat; broker 1 took over
    # with epoch 2. Broker 0 only learns of it when the network heals, then registers again.
    elected = [(r.controller_id, r.controller_epoch, r.timestamp_ms) for r in records if type(r) is ControllerElected]
    assert [e[1] for e in elected] == [1, 2] and elected[1][0] in (1, 2) and 9_000 <= elected[1][2] <= 11_100
    assert sim.controller_id == elected[1][0] and sim.brokers[2].controller_epoch == 2
    assert sim.brokers[0].controller_epoch == 2 and not sim.brokers[0].controller.is_active
    live = [r for r in records if type(r) is LiveBrokersChanged]
    assert dict(live[-1].live_brokers).keys() == {0, 1, 2} and live[-1].timestamp_ms >= 30_000


def test_same_seed_same_bytes_and_another_seed_other_timings():
    text = BASE + "steps:\n  - {at: 10s, action: kill_broker, controller: true}\n"
    _, a = run(text)
    _, b = run(text)
    assert [msgpack.packb(r) for r in a] == [msgpack.packb(r) for r in b]
    assert any(type(r) is RequestSent for r in a)


def test_deletion_halts_on_a_stopped_broker_and_completes_when_it_returns():
    from events.records import ControlledShutdownResponded, TopicDeletionCompleted, TopicQueuedForDeletion
    sim, records = run("""
name: deletion
seed: 2
duration: 90s
cluster: {brokers: [1, 2, 3]}
network: {latency: 2ms}
topics:
  - {name: old-events, assignment: [[1, 2], [2, 3], [3, 1]]}
  - {name: orders, assignment: [[1, 2, 3], [2, 3, 1], [3, 1, 2]]}
steps:
  - {at: 10s, action: controlled_shutdown, broker: 3}
  - {at: 20s, action: delete_topic, topic: old-events}
  - {at: 60s, action: start_broker, broker: 3}
  - {at: 75s, action: create_topic, name: old-events, partitions: 3, replication_factor: 3}
""")
    shutdown = [(r.broker_id, r.error, r.remaining, r.timestamp_ms) for r in records
                if type(r) is ControlledShutdownResponded]
    assert shutdown == [(3, "NONE", (), shutdown[0][3])] and 10_000 < shutdown[0][3] < 10_020
    assert [r.timestamp_ms for r in records if type(r) is TopicQueuedForDeletion] == [20_002]  # the watch's network latency
    done = [r.timestamp_ms for r in records if type(r) is TopicDeletionCompleted]
    assert len(done) == 1 and 60_000 < done[0] < 60_100          # only once broker 3 is back
    ctx = sim.brokers[sim.controller_id].controller.context
    assert len(ctx.partitions_for_topic("old-events")) == 3    # re-created at 75 s
    assert all(len(ctx.partition_replica_assignment(tp)) == 3 for tp in ctx.partitions_for_topic("old-events"))


def test_rf1_partitions_stay_offline_after_a_controlled_shutdown_rf3_ones_move():
    sim, _ = run("""
name: rf1
seed: 4
duration: 40s
cluster: {brokers: [0, 1, 2]}
topics:
  - {name: rf1, assignment: [[1], [2]]}
  - {name: rf3, assignment: [[1, 2, 0], [2, 0, 1]]}
steps:
  - {at: 10s, action: controlled_shutdown, broker: 1}
""")
    ctx = sim.brokers[sim.controller_id].controller.context
    assert ctx.partition_leader(("rf1", 0)) == -1
    assert ctx.partition_leadership_info(("rf1", 0)).leader_and_isr.isr == (1,)
    assert ctx.partition_leader(("rf3", 0)) == 2 and 1 not in ctx.partition_leadership_info(
        ("rf3", 0)).leader_and_isr.isr


# --- restarts racing the old session, expiries of sessions that are gone -------------------------------

def notes(sim: Simulation) -> list[tuple[float, int, str]]:
    return [(o["at_s"], o["line"], o["text"]) for o in sim.summary()["observations"] if o["kind"] == "note"]


def test_a_broker_restarted_before_its_killed_session_expires_exits_and_can_be_started_again():
    # Killed at 10 s, its session (6 s, heartbeats every 2 s) expires between 14 s and 16 s. Restarted at
    # 12 s it finds /brokers/ids/1 still owned by that session: KafkaServer.startup fails with NodeExists
    # and the process exits (Kafka 3.7 does not wait for the node to go). At 20 s it starts for good.
    from events.records import BrokerStarted
    sim, records = run(BASE + """
steps:
  - {at: 10s, action: kill_broker, broker: 1}
  - {at: 12s, action: start_broker, broker: 1}
  - {at: 20s, action: start_broker, broker: 1}
""")
    assert [r.timestamp_ms for r in records if type(r) is BrokerStarted and r.broker_id == 1] == [0, 12_000, 20_000]
    [(at_s, line, text)] = notes(sim)
    assert (at_s, line) == (12, 12) and "broker 1 did not start" in text and "NodeExists" in text
    # The failed process left nothing: the controller saw broker 1 go when the old session expired,
    # and come back at 20 s with a new registration.
    live = [(r.timestamp_ms, tuple(sorted(dict(r.live_brokers)))) for r in records if type(r) is LiveBrokersChanged]
    gone = [t for t, ids in live if ids == (0, 2)]
    assert gone and 14_000 <= gone[0] <= 16_100
    assert live[-1][1] == (0, 1, 2) and live[-1][0] >= 20_000
    assert sim.brokers[1].alive and sorted(sim.brokers[0].live_brokers) == [0, 1, 2]
    assert sim.zk.is_alive(sim.brokers[1].zk.session_id)


def test_a_restart_that_may_fail_lets_the_scenario_start_the_broker_again_one_that_cannot_does_not():
    from sim.scenario import ScenarioError
    # Within the session timeout of the kill the start may fail: a later start_broker is accepted.
    parse_scenario(BASE + """
steps:
  - {at: 10s, action: kill_broker, broker: 1}
  - {at: 15s, action: start_broker, broker: 1}
  - {at: 30s, action: start_broker, broker: 1}
""", "<test>")
    # After a controlled shutdown (its session closed) or past the timeout, the broker is running.
    for first in ("{at: 10s, action: controlled_shutdown, broker: 1}", "{at: 10s, action: kill_broker, broker: 1}"):
        with pytest.raises(ScenarioError, match="expected a broker that is not running"):
            parse_scenario(BASE + f"""
steps:
  - {first}
  - {{at: 16s, action: start_broker, broker: 1}}
  - {{at: 30s, action: start_broker, broker: 1}}
""", "<test>")


def test_the_scenario_check_and_the_run_go_by_the_negotiated_session_timeout():
    # zookeeper.session.timeout.ms 1000 is granted as 4000: a start 3 s after a kill may fail (it does: the
    # session of the killed process lives until about 13.3 s), so a later start_broker is accepted.
    text = BASE.replace("zookeeper.session.timeout.ms: 6000", "zookeeper.session.timeout.ms: 1000") + """
steps:
  - {at: 10s, action: kill_broker, broker: 1}
  - {at: 13s, action: start_broker, broker: 1}
  - {at: 20s, action: start_broker, broker: 1}
"""
    sim, _ = run(text)
    [(at_s, line, note)] = notes(sim)
    assert at_s == 13 and "broker 1 did not start" in note and "timeout.ms 1000, negotiated to 4000" in note
    assert sim.brokers[1].alive


def test_expiring_a_session_that_already_expired_is_a_noted_no_op():
    # The first expiry reaches broker 1 only at 15 s (notice_after): at 12 s it has no session to expire.
    # Cut off from ZooKeeper from 25 s, its session expires about 6 s later while it cannot open a new
    # one: the expiry at 40 s finds nothing either. Healed at 45 s, it registers again; 50 s expires that.
    from events.records import BrokerSessionExpired
    sim, records = run(BASE + """
steps:
  - {at: 10s, action: expire_session, broker: 1, notice_after: 5s}
  - {at: 12s, action: expire_session, broker: 1}
  - {at: 25s, action: partition_network, isolate: 1, from: [zk]}
  - {at: 40s, action: expire_session, broker: 1}
  - {at: 45s, action: heal_network}
  - {at: 50s, action: expire_session, broker: 1}
""")
    assert [r.timestamp_ms for r in records if type(r) is BrokerSessionExpired] == [10_000, 50_000]
    assert [(at_s, line) for at_s, line, _ in notes(sim)] == [(12, 12), (40, 14)]
    assert all("has already expired" in text for _, _, text in notes(sim))
    assert sim.brokers[1].alive and sim.zk.is_alive(sim.brokers[1].zk.session_id)
    live = [(r.timestamp_ms, tuple(sorted(dict(r.live_brokers)))) for r in records if type(r) is LiveBrokersChanged]
    assert live[-1][1] == (0, 1, 2) and live[-1][0] > 50_000


def test_expiring_the_session_of_a_broker_whose_start_failed_is_a_noted_no_op():
    from events.records import BrokerSessionExpired
    sim, records = run(BASE + """
steps:
  - {at: 10s, action: kill_broker, broker: 1}
  - {at: 11s, action: start_broker, broker: 1}
  - {at: 12s, action: expire_session, broker: 1}
""")
    assert not any(type(r) is BrokerSessionExpired for r in records)
    assert [(at_s, text.split(":")[0]) for at_s, _, text in notes(sim)] == [(11, "broker 1 did not start"),
                                                                             (12, "expire_session")]
    assert "broker 1 is not running" in notes(sim)[1][2]
    assert not sim.brokers[1].alive
