"""The main job: what happens to RF=1 and RF=3 partitions when a broker dies and comes back.

A cluster of three brokers has a topic with replication factor 1 and one with 3. Broker 1 is
killed; nothing happens until its ZooKeeper session times out; then the controller moves the
RF=3 leaders away at once, while the RF=1 partitions on broker 1 end with leader -1 and ISR
[1] (Kafka never shrinks an ISR of one) and stay offline until broker 1 returns — the story of
seed report 004 (a production incident). Each phase ends at a known log offset, so the
cluster can be described as it was at the end of each.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from controller.embedding.cluster import Cluster


@dataclass
class DemoSpec:
    brokers: int = 3
    rf1_topic: str = "events"
    rf1_partitions: int = 3
    rf3_topic: str = "orders"
    rf3_partitions: int = 3
    victim: int = 1
    kill_at_ms: int = 10_000
    restart_at_ms: int = 60_000
    seed: int = 42
    configs: Mapping[str, object] = field(default_factory=dict)


@dataclass
class Phase:
    title: str
    end_offset: int   # last record of the phase
    time_ms: int


def run_demo(spec: DemoSpec, sink: Callable[[tuple], object] | None = None) -> tuple[Cluster, list[Phase]]:
    """Run the story; every record goes to ``sink``. Returns the cluster and the phases."""
    cluster = Cluster(configs=spec.configs, seed=spec.seed, sink=sink)
    phases: list[Phase] = []

    def phase(title: str) -> None:
        phases.append(Phase(title, cluster.journal.next_offset - 1, cluster.now))

    cluster.start_brokers(range(spec.brokers))
    cluster.create_topic(spec.rf1_topic, spec.rf1_partitions, 1)
    cluster.create_topic(spec.rf3_topic, spec.rf3_partitions, min(3, spec.brokers))
    phase(f"{spec.brokers} brokers up; topic {spec.rf1_topic} (RF 1) and {spec.rf3_topic} "
          f"(RF {min(3, spec.brokers)}) created")

    cluster.snapshot()  # a restart point: `kcontroller replay --from-snapshot` starts here
    cluster.kill_broker(spec.victim, at=spec.kill_at_ms)
    phase(f"broker {spec.victim} killed at {spec.kill_at_ms} ms: its session is still alive, nothing moves yet")

    requested, timeout = cluster.config.get_int("zookeeper.session.timeout.ms"), cluster.session_timeout_ms
    cluster.advance_to(spec.kill_at_ms + timeout + 1_000)
    negotiated = "" if timeout == requested else f", negotiated to {timeout}"
    phase(f"broker {spec.victim}'s session expired at {spec.kill_at_ms + timeout} ms "
          f"(zookeeper.session.timeout.ms={requested}{negotiated}): the controller reacted")

    cluster.start_broker(spec.victim, at=spec.restart_at_ms)
    cluster.checkpoint()
    phase(f"broker {spec.victim} restarted at {spec.restart_at_ms} ms")
    return cluster, phases
