"""Cluster state in the layout of ``kafka-topics.sh --describe``, read from a controller context."""
from __future__ import annotations

from collections.abc import Iterator

from events.records import NO_EPOCH


def _ints(xs) -> str:
    return ",".join(map(str, xs))


def describe_lines(context) -> Iterator[str]:
    """``Topic: t  Partition: 0  Leader: 1  Replicas: 1,2,3  Isr: 1,2`` per partition, plus ``Offline:``
    when replicas are offline; the leader prints ``none`` when there is none, as kafka-topics does."""
    is_online = context.online_replica_filter()
    for topic in sorted(context.topics):
        ts = context.topics[topic]
        yield f"Topic: {topic}\tPartitionCount: {len(ts)}\tReplicationFactor: {len(ts.replicas[0]) if len(ts) else 0}"
        for p in range(len(ts)):
            replicas = ts.replicas[p]
            has_info = ts.leader_epoch[p] != NO_EPOCH
            leader = ts.leader[p] if has_info and ts.leader[p] >= 0 else "none"
            isr = ts.isr[p] if has_info else ()
            offline = [r for r in replicas if not is_online(r, (topic, p))]
            line = f"\tTopic: {topic}\tPartition: {p}\tLeader: {leader}\tReplicas: {_ints(replicas)}\tIsr: {_ints(isr)}"
            if offline:
                line += f"\tOffline: {_ints(offline)}"
            yield line
