"""The simulator's data plane (sim.replication, sim.producer, the lost-write accounting of sim.metrics),
scenario by scenario: small clusters, seconds of simulated time, exact expectations.

Every run here is traced (:func:`run`): each produce answer the clients get, with its time, and at
each acknowledgement a check that some replica's log holds the acknowledged records then.
"""
from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys
import textwrap

import pytest

from events.records import (
    AlterPartitionRequested, BrokerKilled, LeaderAndIsrUpdated, LogDirFailed, PartitionTransition,
)
from events.records import UPDATE_ALTER_PARTITION
from sim.replication import (
    KAFKA_STORAGE_ERROR, NETWORK_EXCEPTION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT,
)
from sim.scenario import load_scenario, parse_scenario
from sim.simulation import Simulation

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


class Trace:
    """What the clients saw: every acknowledgement and every error, with the time it arrived."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.acks: list[tuple] = []        # (t, tp, epoch, first, count)
        self.errors: list[tuple] = []      # (t, error, messages)
        self.unheld: list[tuple] = []      # acknowledged ranges no replica held at the time
        metrics = sim.metrics
        acknowledged, produce_error = metrics.acknowledged, metrics.produce_error

        def on_ack(tp, epoch, first, count):
            now = sim.loop.now
            self.acks.append((now, tp, epoch, first, count))
            if not any(d.get(tp) is not None and d[tp].holds(epoch, first, first + count) == count
                       for d in sim.replication.disks.values()):
                self.unheld.append((now, tp, epoch, first, count))
            acknowledged(tp, epoch, first, count)

        def on_error(error, messages, now, batches=1):
            self.errors.append((now, error, messages))
            produce_error(error, messages, now, batches)

        metrics.acknowledged = on_ack
        metrics.produce_error = on_error

    def errors_of(self, error: str) -> list[tuple]:
        return [(t, n) for t, e, n in self.errors if e == error]

    def acked_between(self, start: int, end: int, tp=None) -> int:
        return sum(a[4] for a in self.acks if start <= a[0] < end and (tp is None or a[1] == tp))


def run(text: str, seed: int | None = None) -> tuple[Simulation, list, Trace]:
    records: list = []
    sim = Simulation(parse_scenario(textwrap.dedent(text), "<test>"), seed=seed, sink=records.append)
    trace = Trace(sim)
    sim.run()
    assert trace.unheld == []
    return sim, records, trace


def run_example(name: str) -> tuple[Simulation, list, Trace]:
    records: list = []
    sim = Simulation(load_scenario(EXAMPLES / name), sink=records.append)
    trace = Trace(sim)
    sim.run()
    assert trace.unheld == []
    return sim, records, trace


def disk(sim: Simulation, broker: int, tp: tuple):
    return sim.replication.disks[broker][tp]


def pending(sim: Simulation) -> int:
    """The messages the producers still hold: in their accumulators (in-flight requests are counted
    by the callers that need them)."""
    return sum(batch[1] for p in sim.producers for batch in p.accumulator)


def check_conservation(sim: Simulation) -> dict:
    """Every message sent is acknowledged, failed, or still held by its producer (nothing in flight)."""
    p = sim.summary()["produce"]
    assert all(producer.in_flight == 0 for producer in sim.producers)
    assert p["sent_messages"] == p["acknowledged_messages"] + p["failed_messages"] + pending(sim)
    assert p["pending_messages"] == pending(sim)
    return p


def brute_force_lost(sim: Simulation, trace: Trace, leader_of: dict) -> dict:
    """Acknowledged records that the final log of each partition's leader lacks, offset by offset."""
    lost: dict = {}
    for _, tp, epoch, first, count in trace.acks:
        log = disk(sim, leader_of[tp], tp)
        gone = sum(1 for o in range(first, first + count) if log.epoch_at(o) != epoch)
        if gone:
            lost[tp] = lost.get(tp, 0) + gone
    return lost


def isr_changes(records, tp) -> list[tuple]:
    """(time, isr) of every accepted AlterPartition of ``tp``."""
    return [(r.timestamp_ms, tuple(r.isr)) for r in records
            if type(r) is LeaderAndIsrUpdated and (r.topic, r.partition) == tp and r.reason == UPDATE_ALTER_PARTITION]


def alter_requests(records, tp) -> list[tuple]:
    """(time, proposed isr) of every AlterPartition a leader sent for ``tp``."""
    return [(r.timestamp_ms, tuple(p[3])) for r in records if type(r) is AlterPartitionRequested
            for p in r.partitions if (p[0], p[1]) == tp]


# --- steady state -------------------------------------------------------------------------------------

def test_steady_state_acks_all_everything_acknowledged_and_replicated():
    sim, records, trace = run("""
        name: steady
        duration: 12s
        cluster: {brokers: [0, 1, 2]}
        topics:
          - {name: t, assignment: [[0, 1, 2], [1, 2, 0], [2, 0, 1]], configs: {min.insync.replicas: 2}}
        workload:
          producers:
            - {topics: [t], rate_per_s: 600, acks: all, stop: 8s}
            - {topics: [t], rate_per_s: 300, acks: 1, message_bytes: 100, stop: 8s}
    """)
    s = sim.summary()
    p = check_conservation(sim)
    assert p["sent_messages"] == 600 * 8 + 300 * 8
    assert p["acknowledged_messages"] == p["sent_messages"] and p["errors"] == {}
    assert s["acknowledged_writes_lost"] == 0 and s["truncated_records"] == 0
    assert s["under_replicated_partition_seconds"] == 0 and s["under_min_isr_partition_seconds"] == 0
    assert not any(type(r) in (AlterPartitionRequested, LeaderAndIsrUpdated) for r in records)
    for p_ in range(3):
        tp = ("t", p_)
        logs = [disk(sim, b, tp) for b in (0, 1, 2)]
        assert {(log.leo, log.hw) for log in logs} == {(logs[0].leo, logs[0].leo)}
        assert all(log.epochs == [(0, 0)] for log in logs)
    assert sum(disk(sim, 0, ("t", p_)).leo for p_ in range(3)) == p["sent_messages"]
    # Every acknowledgement arrived within a few network round trips of its request.
    assert len(trace.acks) > 100


def test_acks_zero_messages_count_as_sent_and_are_not_followed():
    sim, _, trace = run("""
        name: acks0
        duration: 5s
        cluster: {brokers: [0, 1]}
        topics: [{name: t, assignment: [[0, 1]]}]
        workload:
          producers: [{topics: [t], rate_per_s: 200, acks: 0, stop: 3s}]
    """)
    p = check_conservation(sim)
    assert p["sent_messages"] == 600 == p["acknowledged_messages"]
    assert trace.acks == [] and sim.metrics.acked == {}
    assert disk(sim, 0, ("t", 0)).leo == disk(sim, 1, ("t", 0)).hw == 600


# --- acks=1 and acks=all on a leader's death -----------------------------------------------------------

def test_a_killed_leader_loses_the_acks_1_records_its_followers_had_not_fetched_and_no_acks_all_ones():
    # Both followers fetch slowly (every 0.7 s / 0.9 s, still in sync) when the leader, broker 0 (also
    # the controller), is killed; 1 becomes leader (first live ISR member) once 0's session expires.
    sim, records, trace = run("""
        name: leader killed
        duration: 30s
        cluster:
          brokers: [0, 1, 2]
          configs: {zookeeper.session.timeout.ms: 6000}
        network: {latency: 2ms}
        topics:
          - {name: one, assignment: [[0, 1, 2]]}
          - {name: all, assignment: [[0, 1, 2]]}
        workload:
          producers:
            - {topics: [one], rate_per_s: 1000, acks: 1, stop: 20s}
            - {topics: [all], rate_per_s: 1000, acks: all, stop: 20s}
        steps:
          - {at: 4s, action: slow_follower, broker: 1, delay: 700ms, until: 8s}
          - {at: 4s, action: slow_follower, broker: 2, delay: 900ms, until: 8s}
          - {at: 5050ms, action: kill_broker, broker: 0}
    """)
    one, all_ = ("one", 0), ("all", 0)
    old, new = disk(sim, 0, one), disk(sim, 1, one)
    # The new leader's epoch starts where its log ended: everything the old leader had past it is gone.
    (e0, _), (e1, start) = new.epochs
    assert e0 == 0 and e1 > 0 and old.epochs == [(0, 0)]
    assert 0 < start < old.leo
    lost = old.leo - start
    acked_past = sum(sum(1 for o in range(f, f + n) if o >= start) for _, tp, e, f, n in trace.acks
                     if tp == one and e == 0)
    assert acked_past == lost                        # acks=1: all of them had been acknowledged
    s = sim.summary()
    assert s["lost_by_partition"] == {"one-0": lost} and s["acknowledged_writes_lost"] == lost
    assert brute_force_lost(sim, trace, {one: 1, all_: 1}) == {one: lost}
    assert [e["partition"] for e in s["loss_events"]] == ["one-0"]
    # acks=all: nothing the old leader had past the new leader's log end was acknowledged. (Here it had
    # nothing more: its five requests in flight waited for broker 2, and broker 1 had fetched them all.)
    start_all = disk(sim, 1, all_).epochs[1][1]
    assert disk(sim, 0, all_).leo >= start_all
    assert not [a for a in trace.acks if a[1] == all_ and a[2] == 0 and a[3] + a[4] > start_all]
    # The requests waiting in the dead leader's purgatory were reset (NETWORK_EXCEPTION) and retried.
    assert trace.errors_of(NETWORK_EXCEPTION)
    p = check_conservation(sim)
    assert p["acknowledged_messages"] == p["sent_messages"] == 40_000


@pytest.mark.parametrize("kill_at", [5_000, 5_008])
def test_a_follower_killed_with_its_fetch_in_flight_catches_up_when_restarted(kill_at):
    # The 5 s tick's records reach the leader at 5003 and the followers at 5006; their next fetch is
    # in flight until 5009. At 5008 broker 2 dies with it: the leader's answer must not be taken for
    # the fetch of the restarted process (which would then never fetch again).
    sim, records, _ = run(f"""
        name: restart
        duration: 20s
        cluster:
          brokers: [0, 1, 2]
          configs: {{zookeeper.session.timeout.ms: 6000}}
        network: {{latency: 3ms}}
        topics: [{{name: t, assignment: [[0, 1, 2]]}}]
        workload:
          producers: [{{topics: [t], rate_per_s: 1000, acks: 1, stop: 16s}}]
        steps:
          - {{at: {kill_at}ms, action: kill_broker, broker: 2}}
          - {{at: 13s, action: start_broker, broker: 2}}
    """)
    tp = ("t", 0)
    assert {(disk(sim, b, tp).leo, disk(sim, b, tp).hw) for b in (0, 1, 2)} == {(16_000, 16_000)}
    assert sim.replication.replicas[0][tp].isr == (0, 1, 2)
    assert isr_changes(records, tp)[-1][1] == (0, 1, 2)


# --- min.insync.replicas and the high watermark (KAFKA-15583) ---------------------------------------------

MIN_ISR = """
    name: min isr
    duration: 14s
    cluster:
      brokers: [0, 1]
      configs: {{replica.lag.time.max.ms: 2000, inter.broker.protocol.version: "{ibp}"}}
    topics:
      - {{name: t, assignment: [[0, 1]], configs: {{min.insync.replicas: 2}}}}
    workload:
      producers:
        - {{topics: [t], rate_per_s: 100, acks: all, stop: 10s, configs: {{request.timeout.ms: 5000}}}}
    steps:
      - {{at: 3s, action: partition_network, isolate: 1, from: [0]}}
"""


@pytest.mark.parametrize("ibp", ["3.7", "3.6"])
def test_under_min_isr_new_produces_fail_and_waiting_ones_time_out_or_fail_after_append(ibp):
    sim, records, trace = run(MIN_ISR.format(ibp=ibp))
    tp = ("t", 0)
    # The follower stopped fetching at 3 s; the leader dropped it between lag and 1.5 x lag later.
    [(shrunk_at, isr)] = isr_changes(records, tp)
    assert isr == (0,) and 5_000 < shrunk_at <= 6_000
    leader, follower = disk(sim, 0, tp), disk(sim, 1, tp)
    # After the cut the producer sends five requests of 10 messages, then no more while they wait in
    # the purgatory (max.in.flight.requests.per.connection).
    appended_after_cut = leader.leo - follower.leo
    assert appended_after_cut == 5 * 10 and follower.leo == trace.acked_between(0, 3_010)
    # Nothing is acknowledged after the cut; new produces fail with NOT_ENOUGH_REPLICAS once the ISR shrank.
    assert trace.acked_between(3_010, 14_000) == 0
    nes = trace.errors_of(NOT_ENOUGH_REPLICAS)
    assert nes and min(t for t, _ in nes) > shrunk_at
    if ibp == "3.7":
        # KAFKA-15583: the HW is frozen under min ISR: the waiting requests time out, 5 s after their append.
        assert leader.hw == follower.leo
        timed_out = trace.errors_of(REQUEST_TIMED_OUT)
        assert sum(n for _, n in timed_out) == appended_after_cut
        assert all(8_000 < t <= 11_002 for t, _ in timed_out)
        assert all((t - 2) % 100 == 0 for t, _ in timed_out)   # tick + 1 ms + 5000 ms + 1 ms
        assert not trace.errors_of(NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    else:
        # Before 3.7 the HW moves on with the leader alone: the waiting requests fail after the append.
        assert leader.hw == leader.leo
        after_append = trace.errors_of(NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        assert sum(n for _, n in after_append) == appended_after_cut
        assert {t for t, _ in after_append} == {shrunk_at + 1}
        assert not trace.errors_of(REQUEST_TIMED_OUT)
    assert sim.summary()["acknowledged_writes_lost"] == 0


def test_a_min_insync_replicas_change_applies_to_the_leader_at_once():
    sim, records, trace = run("""
        name: min isr raised
        duration: 10s
        cluster:
          brokers: [0, 1]
          configs: {replica.lag.time.max.ms: 2000}
        topics: [{name: t, assignment: [[0, 1]]}]
        workload:
          producers: [{topics: [t], rate_per_s: 100, acks: all, stop: 8s}]
        steps:
          - {at: 2s, action: partition_network, isolate: 1, from: [0]}
          - {at: 6s, action: set_config, entity: topic, name: t, config: min.insync.replicas, value: 2}
    """)
    tp = ("t", 0)
    [(shrunk_at, isr)] = isr_changes(records, tp)
    assert isr == (0,) and 4_000 < shrunk_at <= 5_000
    # ISR [0] with min ISR 1 until 6 s: acknowledged once the shrink let the HW move; then refused.
    assert trace.acked_between(shrunk_at, 6_000) > 0 and trace.acked_between(6_002, 10_000) == 0
    nes = trace.errors_of(NOT_ENOUGH_REPLICAS)
    assert nes and min(t for t, _ in nes) == 6_002
    assert disk(sim, 0, tp).leo == disk(sim, 0, tp).hw == trace.acked_between(0, 10_000)


# --- ISR shrink and expansion -----------------------------------------------------------------------------

SHRINK = """
    name: shrink
    duration: {duration}
    cluster:
      brokers: [0, 1, 2]
      configs: {{replica.lag.time.max.ms: 4000}}
    topics:
      - {{name: t, assignment: [[0, 1, 2]]}}
    workload:
      producers:
        - {{topics: [t], rate_per_s: 200, acks: 1, stop: {stop}}}
    steps:
{steps}
"""


@pytest.mark.parametrize("fault", [
    "      - {at: 3s, action: kill_broker, broker: 2}",
    "      - {at: 3s, action: partition_network, isolate: 2, from: [0]}",
])
def test_isr_shrinks_between_the_lag_and_one_and_a_half_lags_after_a_follower_stops(fault):
    sim, records, _ = run(SHRINK.format(duration="12s", stop="12s", steps=fault))
    tp = ("t", 0)
    # (zookeeper.session.timeout.ms is 18 s: the controller does not notice a dead broker 2 before the end.)
    [(alter_at, isr)] = alter_requests(records, tp)
    assert isr == (0, 1) and 3_000 + 4_000 < alter_at <= 3_000 + 6_000
    assert isr_changes(records, tp) == [(alter_at, (0, 1))]
    assert sim.replication.replicas[0][tp].isr == (0, 1)
    assert {disk(sim, b, tp).leo for b in (0, 1)} == {disk(sim, 0, tp).hw}


def test_a_stopped_follower_at_the_log_end_of_an_idle_partition_stays_in_sync():
    sim, records, _ = run(SHRINK.format(duration="15s", stop="2s",
                                        steps="      - {at: 3s, action: kill_broker, broker: 2}"))
    tp = ("t", 0)
    assert disk(sim, 2, tp).leo == disk(sim, 0, tp).leo == 400
    assert alter_requests(records, tp) == []          # Replica.isCaughtUp: LEO == leader's LEO
    assert sim.replication.replicas[0][tp].isr == (0, 1, 2)


def test_a_follower_that_catches_up_rejoins_the_isr_through_alter_partition():
    sim, records, trace = run(SHRINK.format(duration="20s", stop="18s", steps="""\
      - {at: 3s, action: partition_network, isolate: 2, from: [0]}
      - {at: 12s, action: heal_network}"""))
    tp = ("t", 0)
    requests = alter_requests(records, tp)
    assert [isr for _, isr in requests] == [(0, 1), (0, 1, 2)]
    assert isr_changes(records, tp) == requests       # both accepted as proposed, at once (same broker)
    shrunk_at, expanded_at = (t for t, _ in requests)
    assert 7_000 < shrunk_at <= 9_000
    # After the heal the follower's next fetch (within the 1 s fetch backoff) finds it at the HW.
    assert 12_000 < expanded_at <= 13_100
    assert sim.replication.replicas[0][tp].isr == (0, 1, 2)
    for b in (1, 2):
        assert disk(sim, b, tp).leo == disk(sim, 0, tp).leo == 3600


def test_a_slow_follower_is_removed_and_rejoins_after_catch_up():
    sim, records, trace = run("""
        name: slow
        duration: 25s
        cluster:
          brokers: [0, 1, 2]
          configs: {replica.lag.time.max.ms: 3000}
        topics: [{name: t, assignment: [[0, 1, 2]], configs: {min.insync.replicas: 2}}]
        workload:
          producers: [{topics: [t], rate_per_s: 200, acks: all, stop: 22s}]
        steps:
          - {at: 2s, action: slow_follower, broker: 2, delay: 5s}
          - {at: 15s, action: catch_up, broker: 2}
    """)
    tp = ("t", 0)
    requests = alter_requests(records, tp)
    assert [isr for _, isr in requests] == [(0, 1), (0, 1, 2)]
    shrunk_at, expanded_at = (t for t, _ in requests)
    # Its last fetch before slowing down caught it up at ~2 s: out between 5 s and 6.5 s.
    assert 5_000 < shrunk_at <= 6_500
    # catch_up: the delayed fetch goes at once and the next one or two bring it to the HW.
    assert 15_000 < expanded_at <= 15_100
    # acks=all waited for it from its last fetch (1.9 s) until the shrink released the five requests in
    # flight (max.in.flight.requests.per.connection) at once; the backlog went out within a tick; nothing failed.
    assert trace.errors == []
    assert trace.acked_between(2_000, shrunk_at) == 0
    assert len([a for a in trace.acks if a[0] == shrunk_at + 1]) == 5
    assert trace.acked_between(0, shrunk_at + 100) == 200 * shrunk_at // 1000
    assert sim.summary()["produce"]["acknowledged_messages"] == 200 * 22
    assert {disk(sim, b, tp).leo for b in (0, 1, 2)} == {4400}


# --- a leader partitioned from its followers ----------------------------------------------------------

def test_a_leader_cut_off_from_its_followers_shrinks_to_itself_stalls_acks_all_and_recovers_on_heal():
    # Broker 0 is the controller, out of the partition's replicas; leader 1 still reaches it and zk.
    sim, records, trace = run("""
        name: leader cut off
        duration: 25s
        cluster:
          brokers: [0, 1, 2, 3]
          configs: {replica.lag.time.max.ms: 3000}
        topics: [{name: t, assignment: [[1, 2, 3]], configs: {min.insync.replicas: 2}}]
        workload:
          producers: [{topics: [t], rate_per_s: 100, acks: all, stop: 22s}]
        steps:
          - {at: 4s, action: partition_network, isolate: 1, from: [2, 3]}
          - {at: 14s, action: heal_network}
    """)
    tp = ("t", 0)
    assert not any(type(r) is PartitionTransition and r.timestamp_ms > 1000 for r in records)
    changes = isr_changes(records, tp)
    assert [isr for _, isr in changes] == [(1,), (1, 2), (1, 2, 3)] or \
        [isr for _, isr in changes] == [(1,), (1, 3), (1, 3, 2)]
    (shrunk_at, _), (back_at, _), (full_at, _) = changes
    assert 7_000 < shrunk_at <= 8_500 and 14_000 < back_at <= full_at <= 15_100
    # acks=all stalled from the cut: the five requests in flight (max.in.flight.requests.per.connection,
    # 10 messages each) waited in the purgatory, the producer sending no more, until a follower was back
    # in the ISR (well within request.timeout.ms); then the backlog went out within a tick. Nothing failed.
    assert trace.acked_between(4_010, back_at) == 0
    stalled = trace.acked_between(back_at, back_at + 5)
    assert stalled == 5 * 10
    assert trace.acked_between(0, 14_100) == 100 * 14      # all made by 14 s, before the 14.1 s tick's answer
    assert trace.errors == []
    s = sim.summary()
    assert s["acknowledged_writes_lost"] == 0
    assert check_conservation(sim)["acknowledged_messages"] == 2200
    assert {(disk(sim, b, tp).leo, disk(sim, b, tp).hw) for b in (1, 2, 3)} == {(2200, 2200)}


def test_a_leader_cut_off_from_its_followers_and_the_controller_cannot_shrink_its_isr():
    # The controller (broker 0) is one of the followers: the leader's AlterPartition is lost and
    # retried; its ISR stays, acks=all waits (request.timeout.ms 30 s is longer than the cut).
    sim, records, trace = run("""
        name: leader cut off
        duration: 25s
        cluster:
          brokers: [0, 1, 2]
          configs: {replica.lag.time.max.ms: 3000}
        topics: [{name: t, assignment: [[1, 0, 2]], configs: {min.insync.replicas: 2}}]
        workload:
          producers: [{topics: [t], rate_per_s: 100, acks: all, stop: 22s}]
        steps:
          - {at: 4s, action: partition_network, isolate: 1, from: [0, 2]}
          - {at: 14s, action: heal_network}
    """)
    tp = ("t", 0)
    assert alter_requests(records, tp) == [] and isr_changes(records, tp) == []
    assert sim.replication.replicas[1][tp].isr == (1, 0, 2)
    assert trace.acked_between(4_010, 14_000) == 0 and trace.errors == []
    assert check_conservation(sim)["acknowledged_messages"] == 2200


# --- leader epochs without records (KIP-279) -------------------------------------------------------------

def test_a_replica_that_led_an_epoch_without_writing_follows_again():
    # Broker 1 leads epoch 1 (controlled shutdown of 0) but nothing is produced then; when 0 leads
    # again (epoch 2) broker 1's cache ends with (1, 500), an epoch 0 never had.
    sim, _, trace = run("""
        name: kip-279
        duration: 40s
        cluster: {brokers: [0, 1, 2]}
        topics: [{name: t, assignment: [[0, 1, 2]]}]
        workload:
          producers:
            - {topics: [t], rate_per_s: 100, acks: all, stop: 5s}
            - {topics: [t], rate_per_s: 100, acks: all, start: 30s, stop: 35s}
        steps:
          - {at: 10s, action: controlled_shutdown, broker: 0}
          - {at: 15s, action: start_broker, broker: 0}
          - {at: 25s, action: elect_preferred}
    """)
    tp = ("t", 0)
    assert sim.summary()["produce"]["acknowledged_messages"] == 1000
    assert trace.errors == []
    for b in (0, 1, 2):
        assert disk(sim, b, tp).epochs == [(0, 0), (2, 500)]
        assert (disk(sim, b, tp).leo, disk(sim, b, tp).hw) == (1000, 1000)


# --- unclean election, the zombie, log directories ------------------------------------------------------

def test_unclean_election_loses_exactly_the_acknowledged_records_past_the_new_leaders_log_end():
    sim, records, trace = run_example("unclean-election-on.yaml")
    tp = ("payments", 0)
    new = disk(sim, 3, tp)
    [unclean] = [r for r in records if type(r) is PartitionTransition and r.election == 3]   # OFFLINE_UNCLEAN
    assert unclean.leader == 3
    # Broker 3's log ended at `start` when it was elected: its new epoch starts there.
    start = dict(new.epochs)[unclean.leader_epoch]
    old_epoch_acks = [(f, n) for _, tp_, e, f, n in trace.acks if tp_ == tp and e == 0]
    last_acked = max(f + n for f, n in old_epoch_acks)
    window = sum(max(0, min(f + n, last_acked) - max(f, start)) for f, n in old_epoch_acks)
    s = sim.summary()
    assert window > 0 and s["acknowledged_writes_lost"] == window
    assert brute_force_lost(sim, trace, {tp: 3}) == {tp: window}
    # Every replica ends with the new leader's log (broker 2 truncated when it came back).
    assert {tuple(disk(sim, b, tp).epochs) for b in (1, 2, 3)} == {tuple(new.epochs)}
    assert s["elections"]["unclean"] == 1
    off, _, off_trace = run_example("unclean-election-off.yaml")
    o = off.summary()
    assert o["acknowledged_writes_lost"] == 0 and o["offline_partition_seconds"] > 0
    assert o["elections"]["unclean"] == 0
    assert brute_force_lost(off, off_trace, {tp: 2}) == {}


def test_the_zombie_leader_acks_1_writes_are_lost_and_its_acks_all_writes_never_acknowledged():
    sim, records, trace = run_example("controller-failover-zombie.yaml")
    s = sim.summary()
    ctx = sim.brokers[sim.controller_id].controller.context
    lost = brute_force_lost(sim, trace, {tp: ctx.partition_leader(tp) for tp in sim.metrics.acked})
    assert {f"{t}-{p}": n for (t, p), n in lost.items()} == s["lost_by_partition"]
    assert all(t == "clicks" for t, _ in lost)        # acks=all: nothing lost
    # Broker 0 kept acknowledging clicks-0 (acks=1) in its old epoch for 10 s after its session
    # expired (20 s), past what broker 1, the new leader, had: all of that is lost.
    clicks = ("clicks", 0)
    old_epoch = disk(sim, 0, clicks).epochs[0][0]
    zombie = [(f, n) for t, tp, e, f, n in trace.acks if tp == clicks and e == old_epoch and t > 20_100]
    assert sum(n for _, n in zombie) > 300
    final = disk(sim, 0, clicks)
    assert all(final.holds(old_epoch, f, f + n) == 0 for f, n in zombie)
    assert s["lost_by_partition"]["clicks-0"] >= sum(n for _, n in zombie)
    zombie_orders = [a for a in trace.acks if a[1] == ("orders", 0) and 20_100 < a[0] < 30_000
                     and a[2] == disk(sim, 1, ("orders", 0)).epochs[0][0]]
    assert zombie_orders == []


def test_a_failed_log_dir_fails_its_replicas_with_kafka_storage_error_and_the_others_work_on():
    # Broker 0 keeps t-0 and t-2 in /a, t-1 in /b (the directory with the fewest partitions); it leads
    # t-0 and t-1 and follows t-2 (led by 1).
    sim, records, trace = run("""
        name: log dir
        duration: 20s
        cluster:
          brokers: [0, 1, 2]
          configs: {log.dirs: "/a,/b", replica.lag.time.max.ms: 3000}
        topics: [{name: t, assignment: [[0, 1, 2], [0, 2, 1], [1, 0, 2]]}]
        workload:
          producers: [{topics: [t], rate_per_s: 300, acks: all, stop: 18s}]
        steps:
          - {at: 5s, action: fail_log_dir, broker: 0, dir: /a}
    """)
    assert [sim.log_dir_of(0, ("t", p)) for p in range(3)] == ["/a", "/b", "/a"]
    assert [(r.broker_id, r.log_dir, r.timestamp_ms) for r in records if type(r) is LogDirFailed] == [(0, "/a", 5_000)]
    assert not any(type(r) is BrokerKilled for r in records)
    storage = trace.errors_of(KAFKA_STORAGE_ERROR)
    assert storage and min(t for t, _ in storage) > 5_000
    # t-1 (in /b) keeps being acknowledged by broker 0; t-0's replica on 0 took no record after the failure.
    assert trace.acked_between(6_000, 20_000, ("t", 1)) > 0
    t0 = disk(sim, 0, ("t", 0))
    assert all(f + n <= t0.leo for t, tp, e, f, n in trace.acks if tp == ("t", 0) and e == 0)
    # The controller, notified through /log_dir_event_notification, learnt of the offline replicas from
    # the KAFKA_STORAGE_ERROR answers to its LeaderAndIsr: t-0 moved to broker 1, broker 0 left the ISR
    # of t-0 and t-2 (its replicas offline, not stopped), and t-0 is acknowledged again.
    ctx = sim.brokers[sim.controller_id].controller.context
    assert [ctx.partition_leader(("t", p)) for p in range(3)] == [1, 0, 1]
    for p in (0, 2):
        assert sim.replication.replicas[1][("t", p)].isr == (1, 2)
        assert sim.replication.replicas[0][("t", p)].offline
    assert trace.acked_between(6_000, 20_000, ("t", 0)) > 0
    assert disk(sim, 1, ("t", 2)).leo > disk(sim, 0, ("t", 2)).leo
    assert sim.summary()["acknowledged_writes_lost"] == 0
    # A produce to a replica in the failed directory: KAFKA_STORAGE_ERROR, leader or not.
    answers = []
    sim.replication.produce(0, 1, [(("t", 2), 1), (("t", 0), 1), (("t", 1), 1)], answers.append)
    assert [r[0] for r in answers[0]] == [KAFKA_STORAGE_ERROR, KAFKA_STORAGE_ERROR, "NONE"]


def test_the_broker_halts_when_its_only_log_dir_fails():
    sim, records, trace = run("""
        name: one log dir
        duration: 20s
        cluster:
          brokers: [0, 1, 2]
          configs: {zookeeper.session.timeout.ms: 6000}
        topics: [{name: t, assignment: [[1, 0, 2]]}]
        workload:
          producers: [{topics: [t], rate_per_s: 100, acks: all, stop: 18s}]
        steps:
          - {at: 5s, action: fail_log_dir, broker: 1}
    """)
    # The failure is the input; the halt (Exit.halt(1)) is its consequence, not a kill of its own.
    assert [(r.broker_id, r.timestamp_ms) for r in records if type(r) is LogDirFailed] == [(1, 5_000)]
    assert not any(type(r) is BrokerKilled for r in records)
    assert not sim.brokers[1].alive and 1 not in sim.replication.replicas
    tp = ("t", 0)
    ctx = sim.brokers[sim.controller_id].controller.context
    assert ctx.partition_leader(tp) == 0
    s = sim.summary()
    assert s["acknowledged_writes_lost"] == 0
    assert s["produce"]["acknowledged_messages"] == s["produce"]["sent_messages"] == 1800
    check_conservation(sim)


# --- conservation and determinism ----------------------------------------------------------------------

def test_messages_are_conserved_through_failures_and_delivery_timeouts():
    # An RF=1 partition whose broker dies for good: its messages fail after delivery.timeout.ms (120 s);
    # min ISR 2 with the follower cut off: requests wait the whole request.timeout.ms in purgatory and
    # their retries fail the delivery timeout too.
    sim, _, trace = run("""
        name: conservation
        duration: 135s
        cluster:
          brokers: [0, 1, 2]
          configs: {zookeeper.session.timeout.ms: 6000, replica.lag.time.max.ms: 2000}
        topics:
          - {name: rf1, assignment: [[2], [0]]}
          - {name: isr, assignment: [[0, 1]], configs: {min.insync.replicas: 2}}
        workload:
          producers:
            - {topics: [rf1], rate_per_s: 50, acks: 1, stop: 8s, configs: {request.timeout.ms: 119900}}
            - {topics: [isr], rate_per_s: 20, acks: all, stop: 8s, configs: {request.timeout.ms: 119900}}
        steps:
          - {at: 4s, action: kill_broker, broker: 2}
          - {at: 4s, action: partition_network, isolate: 1, from: [0]}
    """)
    p = check_conservation(sim)
    assert p["failed_messages"] > 0 and pending(sim) == 0
    assert p["sent_messages"] == 50 * 8 + 20 * 8
    # The requests that waited in purgatory from 4 s timed out with their messages counted.
    timed_out = trace.errors_of(REQUEST_TIMED_OUT)
    assert timed_out and all(n > 0 for _, n in timed_out)
    assert sum(n for _, n in timed_out) == disk(sim, 0, ("isr", 0)).leo - disk(sim, 1, ("isr", 0)).leo
    assert p["error_messages"]["DELIVERY_TIMEOUT"] == p["failed_messages"]
    # An RF=1 partition's high watermark follows its log end, whatever the acks.
    rf1 = disk(sim, 0, ("rf1", 1))
    assert rf1.hw == rf1.leo > 0


DIGEST = """
import hashlib, logging, sys
import msgpack, structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
from sim.scenario import load_scenario
from sim.simulation import Simulation
records = []
sim = Simulation(load_scenario(sys.argv[1]), sink=records.append)
sim.run()
h = hashlib.sha256()
for r in records:
    h.update(msgpack.packb(r))
h.update(repr(sorted(sim.summary().items())).encode())
h.update(repr(sorted((b, sorted((tp, log.leo, log.hw, tuple(log.epochs)) for tp, log in d.items()))
                     for b, d in sim.replication.disks.items())).encode())
print("DIGEST", len(records), h.hexdigest())
"""


def test_same_scenario_same_bytes_in_processes_with_different_hash_seeds():
    out = []
    for hash_seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-c", DIGEST, str(EXAMPLES / "controller-failover-zombie.yaml")],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out.append([line for line in proc.stdout.splitlines() if line.startswith("DIGEST")])
    assert out[0] == out[1] and len(out[0]) == 1


# --- random faults -------------------------------------------------------------------------------------

def random_faults(seed: int) -> str:
    """A scenario with random faults from 2 s to 40 s, all healed and restarted by the end of it: kills,
    restarts, controlled shutdowns, network cuts, slow followers, session expiries (with and without
    a zombie window), preferred elections. Broker restarts wait out the old session (and a controlled
    shutdown's retries); no session is expired while links are cut."""
    rng = random.Random(seed)
    up = dict.fromkeys(range(4), True)
    back_at: dict = {}
    cut = False
    steps = []
    t = 2000
    while (t := t + rng.randint(300, 6000)) <= 40_000:
        action, b = rng.choice(("kill", "start", "shutdown", "cut", "heal", "slow", "catch_up", "expire",
                                "elect")), rng.randrange(4)
        if action in ("kill", "shutdown") and up[b] and sum(up.values()) > 2 and not (action == "shutdown" and cut):
            steps.append(f"{{at: {t}ms, action: {'kill_broker' if action == 'kill' else 'controlled_shutdown'}, "
                         f"broker: {b}}}")
            up[b], back_at[b] = False, t + (8_000 if action == "kill" else 25_000)
        elif action == "start" and not up[b] and t >= back_at[b]:
            steps.append(f"{{at: {t}ms, action: start_broker, broker: {b}}}")
            up[b] = True
        elif action == "cut" and up[b]:
            others = rng.choice(("[zk]", "[brokers]", "[all]", f"[{(b + 1) % 4}]", "[clients]", f"[{(b + 1) % 4}, zk]"))
            steps.append(f"{{at: {t}ms, action: partition_network, isolate: {b}, from: {others}}}")
            cut = True
        elif action == "heal":
            steps.append(f"{{at: {t}ms, action: heal_network}}")
            cut = False
        elif action == "slow":
            steps.append(f"{{at: {t}ms, action: slow_follower, broker: {b}, delay: {rng.choice((200, 2000, 8000))}ms}}")
        elif action == "catch_up":
            steps.append(f"{{at: {t}ms, action: catch_up}}")
        elif action == "expire" and up[b] and not cut:
            steps.append(f"{{at: {t}ms, action: expire_session, broker: {b}, notice_after: {rng.choice((0, 3000))}ms}}")
        elif action == "elect":
            steps.append(f"{{at: {t}ms, action: elect_preferred}}")
    end = max([42_000, *back_at.values()])
    steps += [f"{{at: {end}ms, action: heal_network}}", f"{{at: {end}ms, action: catch_up}}"]
    steps += [f"{{at: {end}ms, action: start_broker, broker: {b}}}" for b in sorted(up) if not up[b]]
    ibp = rng.choice(("3.7", "3.6"))
    return f"""
name: random faults {seed}
seed: {seed}
duration: 90s
cluster:
  brokers: [0, 1, 2, 3]
  configs: {{zookeeper.session.timeout.ms: 6000, replica.lag.time.max.ms: 3000, inter.broker.protocol.version: "{ibp}"}}
network: {{latency: 2ms, jitter: 2ms}}
topics:
  - {{name: safe, partitions: 4, replication_factor: 3, configs: {{min.insync.replicas: 2}}}}
  - {{name: fast, partitions: 2, replication_factor: 2}}
workload:
  producers:
    - {{topics: [safe], rate_per_s: 400, acks: all, stop: 45s}}
    - {{topics: [fast], rate_per_s: 300, acks: 1, stop: 45s, message_bytes: 300}}
steps:
""" + "".join(f"  - {s}\n" for s in steps)


@pytest.mark.parametrize("seed", range(8))
def test_random_faults_lose_no_acks_all_write_and_everything_converges(seed):
    # acks=all with min.insync.replicas 2 and clean elections only: nothing acknowledged is lost, whatever
    # the faults. Once they are over, every message is acknowledged or failed, every replica is back in
    # the ISR and at its leader's log end, with the high watermark there.
    sim, _, trace = run(random_faults(seed))
    s = sim.summary()
    assert not [k for k in s["lost_by_partition"] if k.startswith("safe-")]
    check_conservation(sim)
    assert pending(sim) == 0
    assert (s["at_end"]["offline"], s["at_end"]["under_replicated"]) == (0, 0)
    for p in range(4):
        tp = ("safe", p)
        logs = [d[tp] for d in sim.replication.disks.values() if tp in d]
        assert len(logs) == 3 and len({(log.leo, log.hw, tuple(log.epochs)) for log in logs}) == 1
        assert logs[0].hw == logs[0].leo
