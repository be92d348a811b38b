"""Controller handlers not covered by Kafka's integration test: BrokerModifications and the
pre-AlterPartition ISR change notifications."""
from __future__ import annotations

import json

from controller.embedding.cluster import Cluster
from events.records import (
    API_UPDATE_METADATA, UPDATE_ISR_NOTIFICATION, LeaderAndIsrUpdated, RequestSent, UpdateMetadataPartition,
)


def after(cluster: Cluster, offset: int, cls) -> list:
    return [r for r in cluster.journal.records if r.offset > offset and isinstance(r, cls)]


def test_broker_modifications_update_the_store_and_the_brokers():
    cluster = Cluster(seed=3)
    cluster.start_brokers([0, 1, 2])
    cluster.create_topic("t", assignment=[[1, 2]])
    mark = cluster.journal.next_offset
    cluster.modify_broker(1, host="broker-1.new", port=19092)
    registration = json.loads(cluster.admin.get_data_and_stat("/brokers/ids/1")[0])
    assert registration["host"] == "broker-1.new" and registration["port"] == 19092
    assert cluster.controller.context.broker_info[1].host == "broker-1.new"
    # onBrokerUpdate: an UpdateMetadata (no partitions) to every live broker, and nothing else.
    sent = after(cluster, mark, RequestSent)
    assert [(r.api, r.broker_id, r.partition_count) for r in sent] == [(API_UPDATE_METADATA, b, 0) for b in (0, 1, 2)]
    assert not after(cluster, mark, LeaderAndIsrUpdated)


def test_broker_modification_without_a_change_sends_nothing():
    cluster = Cluster(seed=3)
    cluster.start_brokers([0, 1])
    mark = cluster.journal.next_offset
    cluster.modify_broker(1)
    assert not after(cluster, mark, RequestSent)


def test_isr_change_notification_is_read_propagated_and_deleted():
    cluster = Cluster(seed=3)
    cluster.start_brokers([0, 1, 2])
    cluster.create_topic("t", assignment=[[1, 2, 0]])
    tp = ("t", 0)
    before = cluster.admin.get_topic_partition_states([tp])[tp].leader_and_isr
    mark = cluster.journal.next_offset
    cluster.notify_isr_change(1, {tp: (1, 2)})
    stored = cluster.admin.get_topic_partition_states([tp])[tp].leader_and_isr
    assert (stored.isr, stored.leader_epoch, stored.partition_epoch) == ((1, 2), before.leader_epoch,
                                                                         before.partition_epoch + 1)
    ctx = cluster.controller.context
    assert ctx.partition_leadership_info(tp).leader_and_isr == stored
    updates = after(cluster, mark, LeaderAndIsrUpdated)
    assert {(r.controller_id, r.reason, r.isr) for r in updates} == {(-1, UPDATE_ISR_NOTIFICATION, (1, 2)),
                                                                     (0, UPDATE_ISR_NOTIFICATION, (1, 2))}
    um = after(cluster, mark, UpdateMetadataPartition)
    assert [(r.topic, r.partition, r.isr, r.brokers) for r in um] == [("t", 0, (1, 2), (0, 1, 2))]
    assert cluster.admin.get_all_isr_change_notifications() == []
    for b in (0, 1, 2):
        assert cluster.brokers[b].metadata[tp].isr == (1, 2)
