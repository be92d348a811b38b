"""num.replica.fetchers: a follower fetches from each leader in one fetch session per fetcher thread, a
partition going to fetcher ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers`` as Kafka's
AbstractFetcherManager.getFetcherId puts it."""
from __future__ import annotations

import textwrap

import pytest

from sim.replication import java_abs, java_string_hash, to_int32
from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


def test_java_string_hash_and_abs():
    assert java_string_hash("") == 0 and java_string_hash("t") == 116
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31          # the famous Integer.MIN_VALUE hash
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00      # UTF-16 code units, as Java hashes them
    assert java_abs(-2**31) == 0 and java_abs(-5) == 5 and to_int32(2**31) == -2**31


def scenario(fetchers: int, steps: str = "[]") -> str:
    return textwrap.dedent(f"""
        name: fetchers
        duration: 40s
        cluster:
          brokers: [0, 1, 2]
          configs: {{num.replica.fetchers: {fetchers}, zookeeper.session.timeout.ms: 6000,
                    replica.lag.time.max.ms: 4000}}
        topics:
          - {{name: orders, partitions: 12, replication_factor: 3}}
        workload:
          producers:
            - {{topics: [orders], rate_per_s: 400, acks: all, stop: 30s, configs: {{batch.size: 4096}}}}
        steps: {steps}
        """)


def run(text: str) -> Simulation:
    sim = Simulation(parse_scenario(text, "<test>"), sink=lambda r: None)
    sim.run()
    return sim


def test_each_partition_is_fetched_by_its_fetcher_thread():
    # (With three brokers and three fetchers each leader's partitions, every third one, would all hash to one
    # fetcher: the same in Kafka.)
    sim = run(scenario(2))
    r = sim.replication
    for (follower, leader, fetcher), s in r.sessions.items():
        assert 0 <= fetcher < 2
        for topic, p in s.partitions:
            assert fetcher == java_abs(to_int32(31 * java_string_hash(topic) + p)) % 2
    pairs = {(f, l) for f, l, _ in r.sessions}
    assert len(r.sessions) > len(pairs)       # several sessions per (follower, leader)
    summary = sim.summary()["produce"]
    assert summary["acknowledged_messages"] == summary["sent_messages"] == 400 * 30


def test_one_fetcher_keeps_one_session_per_leader():
    sim = run(scenario(1))
    assert {k[2] for k in sim.replication.sessions} == {0}


def test_a_dead_follower_leaves_the_isr_of_every_fetcher_session():
    # Killed at 5 s and never back: no ISR keeps it, whichever thread fetched each partition, and no
    # acknowledged write is lost or fails.
    sim = run(scenario(2, "[{at: 5s, action: kill_broker, broker: 2}]"))
    ctx = sim.brokers[sim.controller_id].controller.context
    for p in range(12):
        assert 2 not in ctx.partition_leadership_info(("orders", p)).leader_and_isr.isr
    s = sim.summary()["produce"]
    assert s["sent_messages"] == s["acknowledged_messages"] + s["failed_messages"] + s["pending_messages"]
    assert s["failed_messages"] == 0


def test_the_fetcher_count_is_a_checked_broker_config():
    with pytest.raises(Exception, match="num.replica.fetchers"):
        parse_scenario(scenario(0).replace("num.replica.fetchers: 0", "num.replica.fetchers: many"), "<test>")


def test_a_follower_cut_off_from_a_leader_is_shrunk_out_in_every_fetcher_session():
    sim = run(scenario(2, "[{at: 5s, action: partition_network, isolate: 2, from: [0]}]"))
    ctx = sim.brokers[sim.controller_id].controller.context
    led_by_0 = [p for p in range(12) if ctx.partition_leader(("orders", p)) == 0]
    fetchers = {sim.replication.fetcher_id(("orders", p)) for p in led_by_0
                if 2 in ctx.partition_replica_assignment(("orders", p))}
    assert fetchers == {0, 1}
    for p in led_by_0:
        assert 2 not in ctx.partition_leadership_info(("orders", p)).leader_and_isr.isr
    for p in range(12):
        if ctx.partition_leader(("orders", p)) == 1:
            assert 2 in ctx.partition_leadership_info(("orders", p)).leader_and_isr.isr
