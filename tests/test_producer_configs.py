"""The producer configs a scenario sets (``workload.producers[].configs``): linger.ms, batch.size,
max.in.flight.requests.per.connection, retries, request.timeout.ms, delivery.timeout.ms and the backoffs, as
Kafka 3.7's producer applies them; and the scenario's checks of them."""
from __future__ import annotations

import re
import textwrap

import pytest

from sim.producer_config import PRODUCER_CONFIGS, ProducerConfigError, producer_configs
from sim.scenario import ScenarioError, dump_scenario, parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


def scenario(producer: str, *, steps: str = "", duration: str = "6s", assignment: str = "[[0, 1], [1, 0]]") -> str:
    return textwrap.dedent(f"""
        name: producer configs
        duration: {duration}
        cluster:
          brokers: [0, 1]
          configs: {{zookeeper.session.timeout.ms: 6000}}
        network: {{latency: 2ms}}
        topics:
          - {{name: t, assignment: {assignment}}}
        workload:
          producers:
            - {producer}
        steps: {steps or "[]"}
        """)


def run(text: str) -> tuple[Simulation, dict]:
    sim = Simulation(parse_scenario(text, "<test>"), sink=lambda r: None)
    sim.run()
    return sim, sim.summary()


def test_the_defaults_are_kafkas():
    c = producer_configs({})
    assert c["batch.size"] == 16384 and c["linger.ms"] == 0 and c["max.in.flight.requests.per.connection"] == 5
    assert c["request.timeout.ms"] == 30000 and c["delivery.timeout.ms"] == 120000 and c["retries"] == 2**31 - 1
    assert c["retry.backoff.ms"] == 100 and c["metadata.max.age.ms"] == 300000


def test_linger_delays_a_batch_that_is_not_full_by_linger_ms():
    base = "{topics: [t], rate_per_s: 50, acks: all, start: 1s, stop: 5s"
    _, quick = run(scenario(base + "}"))
    _, lingering = run(scenario(base + ", configs: {linger.ms: 40}}"))
    q, s = quick["produce"]["latency_ms"], lingering["produce"]["latency_ms"]
    assert quick["produce"]["acknowledged_messages"] == lingering["produce"]["acknowledged_messages"] == 200
    # Five messages a tick never fill a 16 KiB batch: each waits its linger.ms before its leader is ready.
    assert s["p50"] == q["p50"] + 40 and s["max"] == q["max"] + 40


def test_a_full_batch_makes_its_leader_ready_and_every_batch_to_it_goes_along():
    # batch.size 2048 holds two 1 KiB messages; three a tick fill partition 0's batch, partition 1's holds one.
    # Both partitions are led by broker 0: the full batch makes it ready, and the lingering one goes with it.
    producer = ("{topics: [t], rate_per_s: 30, acks: all, start: 1s, stop: 2s, "
                "configs: {batch.size: 2048, linger.ms: 5000}}")
    _, s = run(scenario(producer, assignment="[[0, 1], [0, 1]]"))
    lat = s["produce"]["latency_ms"]
    assert s["produce"]["acknowledged_messages"] == 30 and lat["max"] < 100


def test_batch_size_zero_sends_one_message_per_batch():
    sim, s = run(scenario("{topics: [t], rate_per_s: 20, acks: 1, start: 1s, stop: 2s, configs: {batch.size: 0}}"))
    assert sim.producers[0].batches_made == s["produce"]["sent_messages"] == 20


def test_no_retries_fail_the_batches_a_dead_leader_had():
    steps = "[{at: 2s, action: kill_broker, broker: 0}]"
    producer = "{topics: [t], rate_per_s: 100, acks: all, start: 1s, stop: 4s%s}"
    _, retried = run(scenario(producer % "", steps=steps, duration="30s"))
    _, once = run(scenario(producer % ", configs: {retries: 0}", steps=steps, duration="30s"))
    assert retried["produce"]["failed_messages"] == 0
    assert once["produce"]["failed_messages"] > 0
    for s in (retried, once):
        p = s["produce"]
        assert p["sent_messages"] == p["acknowledged_messages"] + p["failed_messages"] + p["pending_messages"]


def in_flight_run(max_in_flight: int) -> tuple[int, int]:
    """(the most requests one broker had unanswered at once, messages acknowledged) of a run of one-message
    batches."""
    producer = ("{topics: [t], rate_per_s: 2000, acks: all, start: 1s, stop: 3s, "
                "configs: {batch.size: 1024, max.in.flight.requests.per.connection: %d}}" % max_in_flight)
    sim = Simulation(parse_scenario(scenario(producer), "<test>"), sink=lambda r: None)
    most = 0
    sim.start()
    while sim.loop.next_time() is not None and sim.loop.next_time() <= 6000:
        sim.run_until(sim.loop.next_time())
        most = max(most, max((len(r) for r in sim.producers[0].requests.values()), default=0))
    return most, sim.summary()["produce"]["acknowledged_messages"]


def test_max_in_flight_bounds_the_requests_a_broker_has_unanswered():
    # One-message batches, one batch per partition per request, one partition per leader: the requests in
    # flight bound the throughput.
    most_one, acked_one = in_flight_run(1)
    most_five, acked_five = in_flight_run(5)
    assert most_one == 1 and most_five == 5
    assert acked_one < acked_five


@pytest.mark.parametrize("configs, message", [
    ("{acks: 1}", "expected a producer config the simulation knows"),
    ("{linger.ms: -1}", "linger.ms: expected an integer >= 0"),
    ("{batch.size: 1.5}", "batch.size"),
    ("{delivery.timeout.ms: 1000}", "delivery.timeout.ms should be equal to or larger than linger.ms + "
                                    "request.timeout.ms"),
    ("{max.in.flight.requests.per.connection: 0}", "expected an integer >= 1"),
])
def test_bad_configs_are_scenario_errors_naming_the_line(configs, message):
    with pytest.raises(ScenarioError, match=re.escape(message)) as e:
        parse_scenario(scenario("{topics: [t], rate_per_s: 1, configs: %s}" % configs), "bad.yaml")
    assert "bad.yaml:" in str(e.value)


def test_an_unset_delivery_timeout_is_raised_to_linger_plus_request_timeout():
    c = producer_configs({"linger.ms": 100_000, "request.timeout.ms": 60_000})
    assert c["delivery.timeout.ms"] == 160_000
    with pytest.raises(ProducerConfigError, match="retries"):
        producer_configs({"retries": -1})


def test_configs_survive_the_scenario_dump():
    text = scenario("{topics: [t], rate_per_s: 5, configs: {linger.ms: 5, retries: 3}}")
    s = parse_scenario(text, "<test>")
    assert s.workload.producers[0].configs == (("linger.ms", 5), ("retries", 3))
    assert parse_scenario(dump_scenario(s), "<dump>").workload == s.workload
    assert set(PRODUCER_CONFIGS) >= {"linger.ms", "batch.size", "retries", "request.timeout.ms"}
