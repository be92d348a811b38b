"""Snapshots of a whole Cluster, so that a run (or its replay) can restart from a point of its log.

A snapshot is taken between actions, when every event queue is empty. It holds the store
(ZooKeeper model with sessions and armed watches), the clock, both random sources, the
journal's position, the cluster view, and for each broker its registration, session, the
metadata it accepted from controllers and its controller (context, handlers, correlation ids).
``restore_cluster`` rebuilds a Cluster that carries on exactly as the original would have: the
same actions then write the same records, byte for byte (tests check it).

The payload of the ClusterSnapshot record is msgpack of a map with these keys: ``format`` (3; formats 1
and 2 are still read), ``now``, ``seed``, ``configs`` ([name, value] of every broker config), ``store_rng``
(Python's ``random.Random.getstate()``), ``next_offset``, ``cause_offset``,
``view`` (a ClusterView snapshot), ``zk`` (``ZooKeeper.to_dict()``), ``admin`` ([session id,
registered session id]), ``brokers`` (one array per broker, see ``snapshot_state._broker_state``),
``metadata_caches`` (the brokers' UpdateMetadata caches, each stored once; a broker names its own by
index) and ``log_dirs`` (optional: ``[broker id, offline dirs, [[topic, partition], dir] of each placed
replica, offline [topic, partition]s]`` of each broker that placed replicas or lost a log directory).

A broker's LeaderAndIsr state and a metadata cache are columns (``broker_columns.table_state`` and
``image_state``): the topic names and the row count, then msgpack bins of little-endian arrays with a
row per partition in (topic, partition) order — the topic's index, the partition, for a cache the
record offset, and a matrix of the state's fields, where tuples (ISRs, replica lists) and record
headers are indexes into lists stored after the arrays — each array in the narrowest of 1, 2, 4 or 8
bytes that holds its values (``events.arrays.narrow_bytes``). Format 2 stored the same arrays as i4
(offsets i8) without the row count; format 1 stored the LeaderAndIsr state as ``[[topic, partition],
[leader, leader_epoch, isr, partition_epoch]]`` pairs and each cache as indexes into
``metadata_records``, a record batch of the UpdateMetadata partition records. The controllers'
contexts and the store's tables narrow their columns the same way (``ControllerContext.to_state``,
``ZooKeeper.to_dict``).
"""
from __future__ import annotations

import random
from collections.abc import Callable

import msgpack

from controller.config import KafkaConfig
from controller.embedding.broker_columns import LeaderAndIsrTable, MetadataImage, image_from_state, table_from_state
from controller.embedding.cluster import BrokerServer, Cluster
from controller.embedding.snapshot_state import FORMAT, cluster_state
from controller.kafka_controller import KafkaController
from controller.store.kafka_zk_client import KafkaZkClient
from controller.store.zookeeper import ZooKeeper
from events.codec import decode_batch
from statemachines.cluster_view import ClusterView

__all__ = ["FORMAT", "READABLE_FORMATS", "cluster_state", "restore_cluster"]

READABLE_FORMATS = (1, 2, FORMAT)


def _set_rng_state(rng: random.Random, state: list) -> None:
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))


def restore_cluster(data: bytes, *, sink: Callable[[tuple], object] | None = None) -> Cluster:
    """A cluster that continues from the snapshot ``data`` (the payload of a ClusterSnapshot record)."""
    state = msgpack.unpackb(data, raw=False, strict_map_key=False)
    version = state.get("format")
    if version not in READABLE_FORMATS:
        raise ValueError(f"cluster snapshot format {version!r}; this version reads "
                         f"{', '.join(map(str, READABLE_FORMATS))}")
    configs = dict(state["configs"])
    cluster = Cluster(configs=configs, seed=state["seed"], sink=sink, start_time_ms=state["now"],
                      record_creation=False)
    cluster.config = KafkaConfig(configs)
    _set_rng_state(cluster.store_rng, state["store_rng"])
    cluster.zk = zk = ZooKeeper.from_dict(state["zk"], cluster.clock)
    timeout = cluster.config.get_int("zookeeper.session.timeout.ms")
    admin_session, admin_registered = state["admin"]
    cluster.admin = KafkaZkClient(zk, session_timeout_ms=timeout, clock=cluster.clock, rng=cluster.store_rng,
                                  session_id=admin_session)
    cluster.admin._registered_session_id = admin_registered
    # The journal's tee holds the cluster's own view object: fill that one in.
    cluster.view.__dict__.update(vars(ClusterView.from_snapshot(state["view"])))
    caches = _BrokerCaches(state, version)
    for (broker_id, host, port, rack, alive, broker_epoch, session_id, registered, controller_state,
         controller_epoch, leader_and_isr, metadata, live_brokers, rejected) in state["brokers"]:
        server = BrokerServer(cluster, broker_id, host, port, rack)
        cluster.brokers[broker_id] = server
        server.alive, server.broker_epoch = alive, broker_epoch
        server.zk = KafkaZkClient(zk, session_timeout_ms=timeout, clock=cluster.clock, rng=cluster.store_rng,
                                  session_id=session_id)
        server.zk._registered_session_id = registered
        if not alive:
            server.zk.abandon()
        server.controller = KafkaController(broker_id, cluster.config, server.zk, cluster.journal, cluster.clock,
                                            send=cluster._deliver, register_broker=server._register)
        if controller_state is not None:
            server.controller.load_state(controller_state)
        else:
            server.controller.event_manager.close()
        server.controller_epoch = controller_epoch
        server.leader_and_isr = caches.leader_and_isr(server, leader_and_isr)
        server._metadata_image = caches.metadata(server, metadata)
        server.live_brokers = tuple(live_brokers)
        server.rejected = [tuple(r) for r in rejected]
    for broker_id, offline_dirs, replica_dirs, offline_partitions in state.get("log_dirs", ()):
        server = cluster.brokers[broker_id]
        server.offline_dirs = set(offline_dirs)
        server.replica_dirs = {tuple(tp): d for tp, d in replica_dirs}
        server.dir_counts = dict.fromkeys((d for d in server.log_dirs if d not in server.offline_dirs), 0)
        for d in server.replica_dirs.values():
            server.dir_counts[d] += 1
        server.offline_partitions = {tuple(tp) for tp in offline_partitions}
    cluster.journal.restore(state["next_offset"], state["cause_offset"], state["now"])
    return cluster


class _BrokerCaches:
    """The brokers' LeaderAndIsr states and metadata caches of a snapshot, in its format; brokers that
    shared a cache share it again."""

    def __init__(self, state: dict, version: int):
        self.version = version
        self.images: dict = {}
        if version == 1:
            self.records = decode_batch(state["metadata_records"])
        else:
            self.caches = state["metadata_caches"]

    def leader_and_isr(self, server: BrokerServer, state):
        if self.version == 1:
            table = LeaderAndIsrTable(server._columns)
            table.update({tuple(tp): (v[0], v[1], tuple(v[2]), v[3]) for tp, v in state})
            return table
        return table_from_state(server._columns, state)

    def metadata(self, server: BrokerServer, ref) -> MetadataImage:
        key = tuple(ref) if self.version == 1 else ref
        image = self.images.get(key)
        if image is None:
            shared = server._columns
            if self.version == 1:
                image = shared.empty_image.with_records(shared, [self.records[i] for i in ref])
            else:
                image = image_from_state(shared, self.caches[ref])
            self.images[key] = image
        return image
