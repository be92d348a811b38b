"""Writing a whole Cluster as a snapshot payload (the ClusterSnapshot record's body).

The format is described in ``controller.embedding.cluster_snapshot``, which reads it back
(``restore_cluster``). This module needs no import of the cluster itself, so ``cluster.py`` can
import it at the top (the reader imports the cluster, which would close a circle).
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING

import msgpack

from controller.embedding.broker_columns import image_state, table_state

if TYPE_CHECKING:
    from controller.embedding.cluster import BrokerServer, Cluster

FORMAT = 3


def _rng_state(rng: random.Random) -> list:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _broker_state(server: BrokerServer, images: dict[int, int], out: list) -> list:
    """One broker; its metadata cache is an index into ``out``, the caches of all brokers, each stored once
    (brokers that were sent the same UpdateMetadata requests hold the same cache object)."""
    image = server._metadata_image
    i = images.get(id(image))
    if i is None:
        i = images[id(image)] = len(out)
        out.append(image_state(server._columns, image))
    zk = server.zk
    return [server.broker_id, server.host, server.port, server.rack, server.alive, server.broker_epoch,
            zk.session_id, zk._registered_session_id,
            server.controller.to_state() if server.alive else None,
            server.controller_epoch, table_state(server.leader_and_isr),
            i, list(server.live_brokers), [list(r) for r in server.rejected]]


def cluster_state(cluster: Cluster, *, next_offset: int | None = None) -> bytes:
    """Serialize a settled cluster. ``next_offset``: the journal offset the restored cluster continues at
    (default: the current one)."""
    if cluster.settle():
        raise RuntimeError("the cluster had unprocessed events; snapshots are taken between actions")
    state = {
        "format": FORMAT,
        "now": cluster.now,
        "seed": cluster.seed,
        "configs": sorted(cluster.config.items()),
        "store_rng": _rng_state(cluster.store_rng),
        "next_offset": cluster.journal.next_offset if next_offset is None else next_offset,
        "cause_offset": cluster.journal.cause_offset,
        "view": cluster.view.to_snapshot(),
        "zk": cluster.zk.to_dict(),
        "admin": [cluster.admin.session_id, cluster.admin._registered_session_id],
    }
    images: list = []
    ids: dict[int, int] = {}
    state["brokers"] = [_broker_state(cluster.brokers[b], ids, images) for b in sorted(cluster.brokers)]
    state["metadata_caches"] = images
    log_dirs = [_log_dir_state(cluster.brokers[b]) for b in sorted(cluster.brokers)]
    state["log_dirs"] = [s for s in log_dirs if s is not None]
    return msgpack.packb(state, use_bin_type=True)


def _log_dir_state(server: BrokerServer) -> list | None:
    if not (server.replica_dirs or server.offline_dirs or server.offline_partitions):
        return None
    return [server.broker_id, sorted(server.offline_dirs),
            sorted([list(tp), d] for tp, d in server.replica_dirs.items()),
            sorted(list(tp) for tp in server.offline_partitions)]
