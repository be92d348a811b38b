"""The auto leader rebalance check as arrays against Kafka's per-partition algorithm
(KafkaController.checkAndTriggerAutoLeaderRebalance, written here partition by partition): on random clusters
with brokers killed and back, topics queued for deletion and reassignments under way, the same elections are
asked for, for the same partitions, in the same order."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from controller.embedding.cluster import Cluster
from controller.controller_events import PREFERRED
from statemachines import election

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


def reference(controller) -> list[list[tuple]]:
    ctx = controller.context
    by_preferred: dict[int, list[tuple]] = {}
    for tp in ctx.all_partitions():
        if not ctx.is_topic_queued_up_for_deletion(tp[0]):
            replicas = ctx.partition_replica_assignment(tp)
            if replicas:
                by_preferred.setdefault(replicas[0], []).append(tp)
    threshold = controller.config.get_int("leader.imbalance.per.broker.percentage") / 100
    calls = []
    for broker in sorted(by_preferred):
        partitions = by_preferred[broker]
        elsewhere = [tp for tp in partitions if ctx.has_leadership_info(tp) and ctx.partition_leader(tp) != broker]
        if len(elsewhere) / len(partitions) > threshold:
            def can_lead(tp):
                assignment = ctx.partition_replica_assignment(tp)
                live = [r for r in assignment if ctx.is_replica_online(r, tp)]
                isr = ctx.partition_leadership_info(tp).leader_and_isr.isr
                return election.preferred_replica_leader(assignment, isr, live) is not None
            calls.append([tp for tp in elsewhere if not ctx.is_topic_queued_up_for_deletion(tp[0])
                          and tp[0] in ctx.all_topics and can_lead(tp)])
    return calls


@st.composite
def clusters(draw):
    brokers = draw(st.integers(3, 6))
    topics = draw(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 3)), min_size=1, max_size=4))
    kills = draw(st.lists(st.integers(0, brokers - 1), max_size=3, unique=True))
    back = draw(st.lists(st.booleans(), min_size=len(kills), max_size=len(kills)))
    delete = draw(st.booleans())
    percentage = draw(st.sampled_from([0, 10, 30, 60]))
    catch_up = draw(st.booleans())
    return brokers, topics, kills, back, delete, percentage, catch_up


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clusters())
def test_the_array_check_asks_for_kafkas_elections(monkeypatch, spec):
    brokers, topics, kills, back, delete, percentage, catch_up = spec
    cluster = Cluster(configs={"leader.imbalance.per.broker.percentage": percentage,
                               "auto.leader.rebalance.enable": "false"}, seed=len(topics))
    cluster.start_brokers(range(brokers))
    for i, (partitions, rf) in enumerate(topics):
        cluster.create_topic(f"t{i}", partitions, min(rf, brokers))
    for b in kills:
        if b != cluster.controller_id:
            cluster.kill_broker(b)
    cluster.advance(60_000)
    for b, up in zip(kills, back):
        if up and not cluster.brokers[b].alive:
            cluster.start_broker(b)
    if catch_up:
        cluster.catch_up_followers()
    if delete and len(topics) > 1 and kills:
        cluster.delete_topic("t0")
    cluster.advance(1_000)
    controller = cluster.brokers[cluster.controller_id].controller
    expected = reference(controller)
    seen: list = []
    monkeypatch.setattr(type(controller), "_on_replica_election",
                        lambda self, partitions, kind, trigger: seen.append((list(partitions), kind)))
    controller._check_and_trigger_auto_leader_rebalance()
    if controller.context.preferred_replica_imbalance_count == 0:
        assert seen == [] and all(not c for c in expected)
    else:
        assert [p for p, _ in seen] == expected
        assert all(kind == PREFERRED for _, kind in seen)


def test_a_broker_back_and_caught_up_gets_its_partitions_back():
    cluster = Cluster(configs={"auto.leader.rebalance.enable": "false"}, seed=1)
    cluster.start_brokers(range(3))
    cluster.create_topic("t", 6, 3)
    cluster.kill_broker(2)
    cluster.advance(60_000)
    cluster.start_broker(2)
    cluster.catch_up_followers()
    controller = cluster.brokers[cluster.controller_id].controller
    expected = reference(controller)
    assert expected and sum(map(len, expected)) == 2
    seen: list = []
    controller._on_replica_election = lambda partitions, kind, trigger: seen.append(list(partitions))
    controller._check_and_trigger_auto_leader_rebalance()
    assert seen == expected
