"""The session-based data plane against a per-partition reference: the same scenario with one fetch session per
(follower, leader) — every partition a follower follows there in one session, as Kafka fetches — and with one
session per partition (each partition fetched on its own) gives the same acknowledged offsets, the same
acknowledged writes lost, the same records in every replica's log. The fault sequences are drawn at random (hypothesis) on small
clusters; faults come after the producers stop, and a follower cut off from the start never fetches, so what is
acknowledged and what survives does not depend on how fetches interleave — only on the data plane's rules."""
from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sim.replication import Replication
from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


@st.composite
def scenarios(draw) -> str:
    brokers = draw(st.integers(3, 4))
    rf = draw(st.integers(2, 3))
    partitions = draw(st.integers(1, 6))
    acks = draw(st.sampled_from(["1", "all"]))
    unclean = draw(st.booleans())
    cut = draw(st.sampled_from([None, *range(brokers)]))
    victim = draw(st.integers(0, brokers - 1))
    restart = draw(st.booleans())
    elect = draw(st.booleans())
    steps = []
    if cut is not None:
        others = [b for b in range(brokers) if b != cut]
        steps.append(f"{{at: 0s, action: partition_network, isolate: {cut}, from: {others}}}")
        steps.append("{at: 12s, action: heal_network}")
    steps.append(f"{{at: 14s, action: kill_broker, broker: {victim}}}")
    if restart:
        steps.append(f"{{at: 30s, action: start_broker, broker: {victim}}}")
    if elect:
        steps.append("{at: 40s, action: elect_preferred}")
    return textwrap.dedent(f"""
        name: differential
        duration: 50s
        cluster:
          brokers: {list(range(brokers))}
          configs: {{zookeeper.session.timeout.ms: 6000, replica.lag.time.max.ms: 3000,
                    unclean.leader.election.enable: {str(unclean).lower()}}}
        topics:
          - {{name: t, partitions: {partitions}, replication_factor: {rf}}}
        workload:
          producers:
            - {{topics: [t], rate_per_s: 300, acks: {acks}, start: 1s, stop: 8s, configs: {{batch.size: 4096}}}}
        steps: [{", ".join(steps)}]
        """)


def merged(ranges) -> list[tuple[int, int, int]]:
    """Acknowledged (epoch, first, end) ranges as sorted, merged intervals: requests in flight together may be
    answered in either order."""
    out: list[list[int]] = []
    for epoch, first, end in sorted(tuple(r) for r in ranges):
        if out and out[-1][0] == epoch and out[-1][2] == first:
            out[-1][2] = end
        else:
            out.append([epoch, first, end])
    return [tuple(r) for r in out]


def written_epochs(log) -> tuple:
    """The leader-epoch cache entries that hold records: how many leader epochs a replica went through without
    writing depends on when elections happened (a follower's catch-up time decides when it rejoins the ISR)."""
    ends = [start for _, start in log.epochs[1:]] + [log.leo]
    return tuple((epoch, start) for (epoch, start), end in zip(log.epochs, ends) if end > start)


def run(text: str, per_partition: bool, monkeypatch) -> dict:
    with monkeypatch.context() as m:
        if per_partition:
            ids: dict = {}
            m.setattr(Replication, "fetcher_id", lambda self, tp: ids.setdefault(tp, len(ids)))
        sim = Simulation(parse_scenario(text, "<differential>"), sink=lambda r: None)
        sim.run()
        summary = sim.summary()
        sessions = sim.replication.sessions
        logs = {(b, tp): (log.leo, written_epochs(log)) for b, disk in sim.replication.disks.items()
                for tp, log in disk.items()}
    acked = {tp: merged(ranges) for tp, ranges in sim.metrics.acked.items()}
    return {"summary": summary, "acked": acked, "logs": logs, "sessions": len(sessions)}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_sessions_and_per_partition_fetching_agree(monkeypatch, text):
    shared = run(text, False, monkeypatch)
    alone = run(text, True, monkeypatch)
    a, b = shared["summary"], alone["summary"]
    for key in ("sent_messages", "acknowledged_messages", "failed_messages"):
        assert a["produce"][key] == b["produce"][key], key
    assert a["acknowledged_writes_lost"] == b["acknowledged_writes_lost"]
    assert a["lost_by_partition"] == b["lost_by_partition"]
    assert shared["acked"] == alone["acked"]
    assert shared["logs"] == alone["logs"]
