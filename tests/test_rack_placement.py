"""New topics and added partitions are placed as Kafka's AdminUtils.assignReplicasToBrokers places them:
rack-aware when every live broker has a rack (broker.rack), in a simulation and in an embedded cluster."""
from __future__ import annotations

import pytest

from controller.embedding.cluster import Cluster, ClusterError
from sim.scenario import parse_scenario
from sim.simulation import Simulation

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")

def test_topics_of_a_cluster_with_racks_are_placed_rack_aware():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    sim = Simulation(parse_scenario(f"""
name: racks
duration: 5s
cluster:
  brokers: [0, 1, 2, 3, 4, 5]
  racks: {racks}
topics:
  - {{name: t, partitions: 12, replication_factor: 3}}
""", "<test>"), sink=lambda r: None)
    sim.run()
    ctx = sim.brokers[sim.controller_id].controller.context
    for p in range(12):
        assert len({racks[b] for b in ctx.partition_replica_assignment(("t", p))}) == 3
    cluster = Cluster(seed=2)
    for b, rack in racks.items():
        cluster.start_broker(b, rack=rack)
    cluster.create_topic("u", 12, 3)
    cluster.add_partitions("u", 18)
    ctx = cluster.brokers[cluster.controller_id].controller.context
    for p in range(18):
        assert len({racks[b] for b in ctx.partition_replica_assignment(("u", p))}) == 3


def test_racks_on_some_brokers_only_refuse_the_placement():
    cluster = Cluster(seed=2)
    cluster.start_broker(0, rack="a")
    cluster.start_broker(1)
    with pytest.raises(ClusterError, match="Not all brokers have rack information"):
        cluster.create_topic("u", 2, 1)
