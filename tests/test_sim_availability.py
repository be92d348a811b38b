"""Availability as clients see it: unavailable partition-seconds, produce latency, each fault's recovery for
producers, and the metrics' columnar batch path against their record-by-record path."""
from __future__ import annotations

import pytest

from events.records import ELECTION_OFFLINE, PartitionTransition
from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")

# Broker 2 leads partitions 1, 3 and 5 of t; broker 1 is the controller (it starts first).
CLUSTER = """
seed: 3
cluster:
  brokers: [1, 2, 3]
  configs: {zookeeper.session.timeout.ms: 6000}
network: {latency: 1ms, jitter: 0ms}
topics:
  - {name: t, assignment: [[1, 2, 3], [2, 3, 1], [3, 1, 2], [2, 1, 3], [1, 3, 2], [2, 3, 1]]}
workload:
  producers:
    - {topics: [t], rate_per_s: 600, acks: all}
"""


def start(text: str, until_ms: int) -> tuple[Simulation, list]:
    records: list = []
    sim = Simulation(parse_scenario(text, "<test>"), sink=records.append)
    sim.start()
    sim.run_until(until_ms)
    sim.metrics._advance(until_ms)
    return sim, records


def test_a_leader_killed_before_its_session_expires_is_unavailable_until_the_new_leaders_serve():
    sim, records = start("name: kill\nduration: 30s\n" + CLUSTER + """
steps:
  - {at: 10s, action: kill_broker, broker: 2}
""", 9_000)
    before = sim.metrics.unavailable_ms
    sim.run_until(30_000)
    s = sim.finish()
    # Heartbeats every 2 s (a third of the 6 s session): the last at 8 s, so the session expires at 14 s; the
    # controller (broker 1) hears of it 1 ms later and elects new leaders for the three partitions.
    elected = sorted((r.timestamp_ms, r.partition, r.leader) for r in records
                     if type(r) is PartitionTransition and r.election == ELECTION_OFFLINE)
    assert elected == [(14_001, 1, 3), (14_001, 3, 1), (14_001, 5, 3)]
    # A new leader serves once its LeaderAndIsr arrives: 1 ms over the network to broker 3, at once at the
    # controller itself. 2 partitions x 4.002 s + 1 x 4.001 s of partitions clients could not write to.
    assert sim.metrics.unavailable_ms - before == 2 * 4_002 + 1 * 4_001
    # The controller's view saw no partition offline: the outage only the client-side count shows.
    assert s["offline_partition_seconds"] == 0
    (fault,) = s["faults"]
    assert fault["recovered_after_s"] == 1.0                # today's figure: the second of the produce errors
    assert fault["producers_recovered_after_s"] == 4.002
    assert s["produce"]["errors"] == {"NETWORK_EXCEPTION": 2}


def test_a_leader_cut_off_from_the_clients_is_unavailable_until_the_network_heals():
    sim, _ = start("name: cut\nduration: 30s\n" + CLUSTER + """
steps:
  - {at: 10s, action: partition_network, isolate: 2, from: [clients]}
  - {at: 20s, action: heal_network}
""", 9_000)
    before = sim.metrics.unavailable_ms
    sim.run_until(30_000)
    s = sim.finish()
    # Broker 2 still reaches ZooKeeper and the other brokers: it stays the leader of its three partitions,
    # which clients cannot reach for 10 s.
    assert sim.metrics.unavailable_ms - before == 3 * 10_000
    assert s["offline_partition_seconds"] == 0 and s["elections"]["clean"] == 0
    assert s["faults"][0]["producers_recovered_after_s"] == 10.0
    assert s["at_end"]["unavailable"] == 0


def test_a_failed_log_dir_makes_its_leaders_unavailable_until_the_controller_moves_them():
    sim, records = start("name: dir\nduration: 20s\n" + CLUSTER.replace(
        "{zookeeper.session.timeout.ms: 6000}", "{zookeeper.session.timeout.ms: 6000, log.dirs: '/a,/b'}") + """
steps:
  - {at: 10s, action: fail_log_dir, broker: 2, dir: /b}
""", 9_000)
    before = sim.metrics.unavailable_ms
    in_b = sorted(tp for tp, rep in sim.replication.replicas[2].items() if rep.log_dir == "/b" and rep.leader == 2)
    sim.run_until(20_000)
    sim.finish()
    moved = {(r.topic, r.partition): r for r in records if type(r) is PartitionTransition
             and r.timestamp_ms >= 10_000 and r.election == ELECTION_OFFLINE}
    assert in_b and sorted(moved) == in_b
    # Each is unavailable from the failure until its new leader applies the LeaderAndIsr (1 ms on the
    # network, none at the controller, broker 1).
    expected = sum(r.timestamp_ms + (r.leader != 1) - 10_000 for r in moved.values())
    assert sim.metrics.unavailable_ms - before == expected


def test_a_restarted_leader_serves_nothing_until_it_is_told():
    sim, records = start("name: restart\nduration: 40s\n" + CLUSTER + """
steps:
  - {at: 10s, action: kill_broker, broker: 3}
  - {at: 20s, action: start_broker, broker: 3}
""", 40_000)
    s = sim.finish()
    assert s["at_end"]["unavailable"] == 0 and s["unavailable_partition_seconds"] > s["offline_partition_seconds"]
    # Broker 3 came back with a new process: the metrics count it as serving only what it was made leader of.
    m = sim.metrics
    assert m._inc[3] == 1 and m._unserved.get(3, 0) == 0


def test_produce_latency_percentiles_of_a_small_run():
    sim, _ = start("""
name: latency
seed: 3
duration: 10s
cluster: {brokers: [1, 2, 3]}
network: {latency: 1ms, jitter: 0ms}
topics:
  - {name: a, assignment: [[1, 2, 3], [2, 3, 1]]}
  - {name: b, assignment: [[3, 1, 2]]}
workload:
  producers:
    - {topics: [a], rate_per_s: 100, acks: 1, start: 2s}
    - {topics: [b], rate_per_s: 100, acks: all, start: 2s}
""", 10_000)
    s = sim.finish()
    # Every batch is sent at the tick that makes it. acks=1: 1 ms to the leader and 1 ms back. acks=all: the
    # append wakes the followers' parked fetches (1 ms), they fetch again (1 ms) and the leader's high
    # watermark passes the batch, the answer takes 1 ms: 4 ms. 790 messages of each acknowledged.
    assert sim.metrics.latency == {2: 790, 4: 790}
    assert s["produce"]["latency_ms"] == {"p50": 2, "p99": 4, "max": 4}     # nearest rank: the 790th of 1,580
    sim2, _ = start("""
name: latency
seed: 3
duration: 10s
cluster: {brokers: [1, 2, 3]}
network: {latency: 1ms, jitter: 0ms}
topics:
  - {name: a, assignment: [[1, 2, 3]]}
workload:
  producers:
    - {topics: [a], rate_per_s: 100, acks: 1, start: 2s}
""", 10_000)
    assert sim2.finish()["produce"]["latency_ms"] == {"p50": 2, "p99": 2, "max": 2}


def test_percentiles_are_nearest_rank():
    from sim.metrics import percentile
    h = {1: 50, 2: 49, 100: 1}
    assert (percentile(h, 0.5), percentile(h, 0.99), percentile(h, 1.0)) == (1, 2, 100)
    assert percentile({}, 0.5) is None and percentile({7: 1}, 0.01) == 7


BIG = """
name: batches
seed: 5
duration: 80s
cluster:
  brokers: [1, 2, 3, 4]
  configs: {zookeeper.session.timeout.ms: 6000, log.dirs: "/a,/b"}
network: {latency: 2ms, jitter: 1ms}
topics:
  - {name: x, partitions: 120, replication_factor: 3, configs: {min.insync.replicas: 2}}
  - {name: y, partitions: 90, replication_factor: 2}
  - {name: z, partitions: 70, replication_factor: 1}
workload:
  producers:
    - {topics: [x, y, z], rate_per_s: 2000, acks: all}
steps:
  - {at: 5s, action: kill_broker, broker: 2}
  - {at: 15s, action: start_broker, broker: 2}
  - {at: 20s, action: controlled_shutdown, broker: 3}
  - {at: 25s, action: partition_network, isolate: 4, from: [clients]}
  - {at: 28s, action: heal_network}
  - {at: 30s, action: start_broker, broker: 3}
  - {at: 35s, action: set_config, entity: topic, name: y, config: min.insync.replicas, value: "2"}
  - {at: 40s, action: fail_log_dir, broker: 1, dir: /a}
  - {at: 45s, action: delete_topic, topic: z}
  - {at: 50s, action: elect_preferred}
  - {at: 55s, action: add_partitions, topic: y, count: 200}
  - {at: 60s, action: expire_session, controller: true}
"""


def test_the_columnar_batches_count_as_their_records_do():
    """The metrics fed columnar batches (the simulation's column sink) and fed every record one by one
    (no column sink: the journal expands each batch) see the same run."""
    from sim.series import series

    def run(columnar: bool):
        records: list = []
        sim = Simulation(parse_scenario(BIG, "<test>"), sink=records.append)
        seen = []
        if columnar:
            observe_batch = sim.metrics.observe_batch
            sim.metrics.observe_batch = lambda batch: (seen.append(batch.n), observe_batch(batch))
            sim.journal.column_sink = sim._column_sink(records.append, None)
        else:
            sim.journal.column_sink = None
        sim.run()
        return sim, sim.finish(), records, seen

    sim_a, a, records_a, batches = run(True)
    sim_b, b, records_b, _ = run(False)
    assert sum(batches) >= 1000                     # most transitions came as columnar batches
    assert records_a == records_b
    assert a == b
    assert series(sim_a.metrics) == series(sim_b.metrics)
    assert a["unavailable_partition_seconds"] > a["offline_partition_seconds"] > 0
