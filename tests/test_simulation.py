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
