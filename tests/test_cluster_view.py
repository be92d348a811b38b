"""Folding records into the cluster state (statemachines.cluster_view): meanings, bounds, logs, layout, digest."""
from __future__ import annotations

import gc
import hashlib
import json

import pytest

from controller.state_machine_harness import ScriptSpec, run_scripted
from events.log import FsyncPolicy, LogReader, LogRecordError, LogWriter
from events.records import (
    ELECTION_NEW_PARTITION, ELECTION_NONE, ELECTION_OFFLINE, UPDATE_OFFLINE_REPLICA, BrokerKilled,
    BrokerSessionExpired, BrokerStarted, ConfigChanged, ControllerElected, ControllerResigned, LeaderAndIsrPartition,
    LeaderAndIsrUpdated, LiveBrokersChanged, PartitionTransition, ReplicaTransition, RequestSent, TopicCreated,
)
from events.segment import Batch, encode_batch_header
from statemachines.cluster_view import ClusterView, PartitionView, fold, fold_log
from statemachines.states import PartitionState as P
from statemachines.states import ReplicaState as R

NEW, ONLINE, OFFLINE, GONE = P.NewPartition.byte, P.OnlinePartition.byte, P.OfflinePartition.byte, \
    P.NonExistentPartition.byte


class Script:
    """Builds records with consecutive offsets from 0; the header comes from the current writer and time."""

    def __init__(self) -> None:
        self.records: list = []
        self.controller_id, self.epoch, self.now = -1, 0, 0

    def at(self, now: int) -> Script:
        self.now = now
        return self

    def add(self, cls, **body):
        rec = cls.make(offset=len(self.records), controller_id=self.controller_id, controller_epoch=self.epoch,
                       timestamp_ms=self.now, cause_offset=len(self.records), **body)
        self.records.append(rec)
        return rec

    def elect(self, controller_id: int, epoch: int):
        self.controller_id, self.epoch = controller_id, epoch
        return self.add(ControllerElected, epoch_zk_version=epoch)

    def live(self, *ids: int, shutting_down: tuple = ()):
        return self.add(LiveBrokersChanged, live_brokers=tuple((b, 0x100 + b) for b in ids),
                        shutting_down=shutting_down)

    def partition(self, topic, p, frm, to, replicas, leader, leader_epoch, isr, partition_epoch=0,
                  election=ELECTION_NONE):
        return self.add(PartitionTransition, topic=topic, partition=p, from_state=frm, to_state=to,
                        replicas=replicas, leader=leader, leader_epoch=leader_epoch, isr=isr,
                        partition_epoch=partition_epoch, recovery_state=0, election=election)

    def replicas(self, topic, p, frm: R, to: R, *replicas: int):
        for r in replicas:
            self.add(ReplicaTransition, topic=topic, partition=p, replica=r, from_state=frm.byte, to_state=to.byte)

    def isr_shrink(self, topic, p, leader, leader_epoch, isr, partition_epoch, replica):
        return self.add(LeaderAndIsrUpdated, topic=topic, partition=p, leader=leader, leader_epoch=leader_epoch,
                        isr=isr, partition_epoch=partition_epoch, recovery_state=0, reason=UPDATE_OFFLINE_REPLICA,
                        replica=replica)


def scenario() -> list:
    """Three brokers, controller 0 epoch 1, topic t (1 partition, RF 3); broker 0 dies, then broker 1 (the leader)."""
    s = Script()
    for b in range(3):
        s.at(10 * b).add(BrokerStarted, broker_id=b, host=f"broker-{b}", port=9092, rack=None)
    s.at(100).elect(0, 1)
    s.live(0, 1, 2)                                                                       # offset 4
    s.at(1000).add(TopicCreated, topic="t", assignment=((1, 0, 2),), configs=(("cleanup.policy", "compact"),))
    s.partition("t", 0, GONE, NEW, (1, 0, 2), -1, -1, ())                                # offset 6
    s.replicas("t", 0, R.NonExistentReplica, R.NewReplica, 1, 0, 2)
    s.partition("t", 0, NEW, ONLINE, (1, 0, 2), 1, 0, (1, 0, 2), election=ELECTION_NEW_PARTITION)  # offset 10
    s.replicas("t", 0, R.NewReplica, R.OnlineReplica, 1, 0, 2)
    s.at(5000).add(BrokerKilled, broker_id=0)                                              # offset 14
    s.at(11000).add(BrokerSessionExpired, broker_id=0)
    s.live(1, 2)                                                                          # offset 16
    s.replicas("t", 0, R.OnlineReplica, R.OfflineReplica, 0)
    s.isr_shrink("t", 0, 1, 1, (1, 2), 1, replica=0)                                      # offset 18
    s.at(20000).add(BrokerSessionExpired, broker_id=1)
    s.live(2)                                                                             # offset 20
    s.partition("t", 0, ONLINE, OFFLINE, (1, 0, 2), 1, 1, (1, 2), 1)
    s.partition("t", 0, OFFLINE, ONLINE, (1, 0, 2), 2, 2, (2,), 2, election=ELECTION_OFFLINE)
    s.replicas("t", 0, R.OnlineReplica, R.OfflineReplica, 1)                               # offset 23
    return s.records


# --- what each record means ---------------------------------------------------------------------

def test_empty_view():
    assert ClusterView().to_json_dict() == {"controller": {"id": -1, "epoch": 0}, "brokers": [], "topics": []}


def test_exact_json_after_isr_shrink():
    assert fold(scenario(), at_offset=18).to_json_dict() == {
        "controller": {"id": 0, "epoch": 1},
        "brokers": [{"id": 0, "live": False}, {"id": 1, "live": True}, {"id": 2, "live": True}],
        "topics": [{"name": "t", "partitions": [{
            "partition": 0, "leader": 1, "leader_epoch": 1, "isr": [1, 2], "replicas": [1, 0, 2],
            "state": "OnlinePartition",
            "replica_states": {"0": "OfflineReplica", "1": "OnlineReplica", "2": "OnlineReplica"}}]}],
    }


def test_new_partition_then_online():
    records = scenario()
    new = fold(records, at_offset=6).to_json_dict()["topics"]
    assert new == [{"name": "t", "partitions": [{"partition": 0, "leader": -1, "leader_epoch": -1, "isr": [],
                                                 "replicas": [1, 0, 2], "state": "NewPartition",
                                                 "replica_states": {}}]}]
    online = fold(records, at_offset=13).to_json_dict()["topics"][0]["partitions"][0]
    assert (online["state"], online["leader"], online["isr"]) == ("OnlinePartition", 1, [1, 0, 2])
    assert online["replica_states"] == {"0": "OnlineReplica", "1": "OnlineReplica", "2": "OnlineReplica"}


def test_topics_reads_partition_views_of_columns_the_gc_does_not_scan_per_partition():
    view = fold(scenario(), at_offset=18)
    pv = view.topics["t"][0]
    assert type(pv) is PartitionView
    assert pv == PartitionView(ONLINE, (1, 0, 2), 1, 1, (1, 2), 1, 0)
    assert (pv.leader, pv.isr, pv.partition_epoch) == (1, (1, 2), 1)
    assert list(view.topics) == ["t"] and "t" in view.topics and "u" not in view.topics
    assert dict(view.topics["t"]) == {0: pv} and view.topics.get("u") is None and len(view.topics["t"]) == 1
    with pytest.raises(TypeError):
        view.topics["t"][0] = pv                       # read-only: the view changes by folding records
    gc.collect()
    before = len(gc.get_objects())
    big = fold(scenario(), at_offset=18)
    for p in range(1, 1000):
        big.apply(PartitionTransition.make(offset=100 + p, controller_id=0, controller_epoch=1, topic="t",
                                           partition=p, from_state=NEW, to_state=ONLINE, replicas=(1, 0, 2),
                                           leader=1, leader_epoch=0, isr=(1, 2), partition_epoch=0,
                                           recovery_state=0, election=ELECTION_NONE))
        big.apply(ReplicaTransition.make(offset=2000 + p, controller_id=0, controller_epoch=1, topic="t",
                                         partition=p, replica=1, from_state=R.NewReplica.byte,
                                         to_state=R.OnlineReplica.byte))
    gc.collect()
    assert len(big.topics["t"]) == 1000 and len(gc.get_objects()) - before < 100   # nothing per partition


def test_topic_created_alone_shows_no_partitions():
    view = fold(scenario(), at_offset=5)
    assert view.to_json_dict()["topics"] == []
    assert view.topic_configs == {"t": {"cleanup.policy": "compact"}}


def test_offline_election():
    view = fold(scenario())
    p0 = view.to_json_dict()["topics"][0]["partitions"][0]
    assert p0 == {"partition": 0, "leader": 2, "leader_epoch": 2, "isr": [2], "replicas": [1, 0, 2],
                  "state": "OnlinePartition",
                  "replica_states": {"0": "OfflineReplica", "1": "OfflineReplica", "2": "OnlineReplica"}}
    assert view.topics["t"][0].partition_epoch == 2
    offline = fold(scenario(), at_offset=21).to_json_dict()["topics"][0]["partitions"][0]
    assert (offline["state"], offline["leader"], offline["isr"]) == ("OfflinePartition", 1, [1, 2])


def test_liveness_changes_only_with_live_brokers_changed():
    records = scenario()

    def live(at):
        return [b["id"] for b in fold(records, at_offset=at).to_json_dict()["brokers"] if b["live"]]

    assert fold(records, at_offset=2).to_json_dict()["brokers"] == [
        {"id": 0, "live": False}, {"id": 1, "live": False}, {"id": 2, "live": False}]
    assert live(4) == [0, 1, 2]
    assert live(15) == [0, 1, 2]  # BrokerKilled and BrokerSessionExpired: the controller does not know yet
    assert live(16) == [1, 2]
    assert live(20) == [2]


def test_shutting_down_brokers_are_registered_but_not_live():
    s = Script()
    s.elect(0, 1)
    s.live(0, 1, 2, shutting_down=(1,))
    s.live(3)  # a broker the controller saw without a BrokerStarted record
    view = fold(s.records[:2])
    assert view.to_json_dict()["brokers"] == [
        {"id": 0, "live": True}, {"id": 1, "live": False}, {"id": 2, "live": True}]
    assert next(view.describe_lines()) == "# controller 0 epoch 1, live brokers 0,2, shutting down 1"
    assert fold(s.records).to_json_dict()["brokers"] == [
        {"id": 0, "live": False}, {"id": 1, "live": False}, {"id": 2, "live": False}, {"id": 3, "live": True}]


def test_resignation_and_an_old_epochs_resignation():
    s = Script()
    s.elect(0, 1)
    s.add(ControllerResigned)
    assert fold(s.records).to_json_dict()["controller"] == {"id": -1, "epoch": 1}
    s.elect(2, 2)
    s.controller_id, s.epoch = 0, 1
    s.add(ControllerResigned)  # broker 0 hears late that it lost: epoch 1 < the active epoch 2
    assert fold(s.records).to_json_dict()["controller"] == {"id": 2, "epoch": 2}
    s.controller_id, s.epoch = 2, 2
    s.add(ControllerResigned)
    assert fold(s.records).to_json_dict()["controller"] == {"id": -1, "epoch": 2}
    assert next(fold(s.records).describe_lines()) == "# controller none epoch 2, live brokers none"


def test_replica_to_non_existent_and_partition_and_topic_disappearance():
    s = Script()
    s.elect(0, 1)
    s.live(0, 1)
    for p in (0, 1):
        s.partition("d", p, GONE, NEW, (0, 1), -1, -1, ())
        s.replicas("d", p, R.NonExistentReplica, R.NewReplica, 0, 1)
        s.partition("d", p, NEW, ONLINE, (0, 1), 0, 0, (0, 1), election=ELECTION_NEW_PARTITION)
        s.replicas("d", p, R.NewReplica, R.OnlineReplica, 0, 1)
    # Topic deletion, in Kafka's order: partitions go away first, then their replicas are deleted.
    s.partition("d", 0, ONLINE, OFFLINE, (0, 1), 0, 0, (0, 1))
    s.partition("d", 0, OFFLINE, GONE, (0, 1), 0, 0, (0, 1))
    mid = len(s.records)
    s.partition("d", 1, ONLINE, OFFLINE, (0, 1), 0, 0, (0, 1))
    s.partition("d", 1, OFFLINE, GONE, (0, 1), 0, 0, (0, 1))
    gone = len(s.records)
    for p in (0, 1):
        for frm, to in ((R.OnlineReplica, R.OfflineReplica), (R.OfflineReplica, R.ReplicaDeletionStarted),
                        (R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful),
                        (R.ReplicaDeletionSuccessful, R.NonExistentReplica)):
            s.replicas("d", p, frm, to, 0, 1)

    partial = fold(s.records[:mid]).to_json_dict()["topics"]
    assert [p["partition"] for p in partial[0]["partitions"]] == [1]
    view = fold(s.records[:gone])
    assert view.to_json_dict()["topics"] == [] and list(view.describe_lines())[1:] == []
    assert view.partition_replica_states("d", 0) == {0: R.OnlineReplica.byte, 1: R.OnlineReplica.byte}
    assert fold(s.records).replica_states == {}  # every replica reached NonExistentReplica

    one = Script()
    one.partition("e", 0, GONE, NEW, (0,), -1, -1, ())
    one.replicas("e", 0, R.NonExistentReplica, R.NewReplica, 0)
    one.replicas("e", 0, R.NewReplica, R.OfflineReplica, 0)
    one.replicas("e", 0, R.OfflineReplica, R.ReplicaDeletionStarted, 0)
    one.replicas("e", 0, R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful, 0)
    assert fold(one.records).to_json_dict()["topics"][0]["partitions"][0]["replica_states"] == {
        "0": "ReplicaDeletionSuccessful"}
    one.replicas("e", 0, R.ReplicaDeletionSuccessful, R.NonExistentReplica, 0)
    assert fold(one.records).to_json_dict()["topics"][0]["partitions"][0]["replica_states"] == {}


def test_replica_states_keys_sort_numerically():
    s = Script()
    s.partition("t", 0, GONE, NEW, (10, 2, 1), -1, -1, ())
    s.replicas("t", 0, R.NonExistentReplica, R.NewReplica, 10, 2, 1)
    states = fold(s.records).to_json_dict()["topics"][0]["partitions"][0]["replica_states"]
    assert list(states) == ["1", "2", "10"]


def test_leader_and_isr_update_of_an_unknown_partition_is_ignored():
    s = Script()
    s.isr_shrink("t", 0, 1, 1, (1,), 1, replica=0)
    assert fold(s.records).to_json_dict()["topics"] == []


def test_requests_failures_and_other_inputs_change_nothing():
    records = scenario()
    noise = [
        LeaderAndIsrPartition.make(offset=99, broker_id=2, topic="t", partition=0, state_controller_epoch=1,
                                   leader=0, leader_epoch=9, isr=(0,), partition_epoch=9, replicas=(0,),
                                   adding_replicas=(), removing_replicas=(), is_new=False, recovery_state=0),
        RequestSent.make(offset=100, api=6, broker_id=2, broker_epoch=1, correlation_id=1, partition_count=1,
                         leader_count=0, delete_count=0, live_brokers=(0, 1, 2)),
        BrokerStarted.make(offset=101, broker_id=1, host="h", port=1, rack=None),
    ]
    assert fold(records + noise).to_json_dict() == fold(records).to_json_dict()


def test_topic_config_changes():
    s = Script()
    s.add(TopicCreated, topic="t", assignment=((0,),), configs=(("retention.ms", "1000"),))
    s.partition("t", 0, GONE, NEW, (0,), -1, -1, ())
    s.add(ConfigChanged, entity_type="topic", entity_name="t", name="cleanup.policy", value="compact")
    s.add(ConfigChanged, entity_type="topic", entity_name="t", name="retention.ms", value=None)
    s.add(ConfigChanged, entity_type="broker", entity_name="", name="min.insync.replicas", value="2")
    assert list(fold(s.records).describe_lines())[1] == \
        "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: cleanup.policy=compact"


# --- bounds ---------------------------------------------------------------------------------------

def test_at_offset_bound():
    records = scenario()
    for at in range(-1, len(records) + 2):
        expected = ClusterView()
        for rec in records[:max(at + 1, 0)]:
            expected.apply(rec)
        view = fold(records, at_offset=at)
        assert view.to_json_dict() == expected.to_json_dict()
        assert view.offset == min(at, len(records) - 1)


def test_at_time_bound_includes_every_record_at_that_time():
    records = scenario()
    assert fold(records, at_time=4999).offset == 13
    assert fold(records, at_time=5000).offset == 14
    assert fold(records, at_time=11000).offset == 18
    assert fold(records, at_time=-1).offset == -1
    # both bounds: the earlier one wins
    assert fold(records, at_offset=16, at_time=20000).offset == 16
    assert fold(records, at_offset=22, at_time=11000).offset == 18


def test_fold_stops_at_the_first_record_past_the_bound():
    consumed = []

    def stream():
        for rec in scenario():
            consumed.append(rec.offset)
            yield rec

    fold(stream(), at_offset=5)
    assert consumed == [0, 1, 2, 3, 4, 5, 6]


# --- from a log directory -------------------------------------------------------------------------

def write_log(path, records, batch_records=4, segment_bytes=700):
    with LogWriter(path, fsync=FsyncPolicy.none(), batch_records=batch_records, segment_bytes=segment_bytes) as w:
        w.append_many(records)
    return path


@pytest.fixture
def decodes(monkeypatch):
    """Base offsets of the batches whose payloads were decoded."""
    seen = []
    real = Batch.records

    def counting(batch):
        seen.append(batch.base_offset)
        return real(batch)

    monkeypatch.setattr(Batch, "records", counting)
    return seen


def test_fold_log_equals_fold(tmp_path):
    records = scenario()
    log = write_log(tmp_path / "log", records)
    assert len(LogReader(log).segments()) > 1
    for at in range(-1, len(records) + 1):
        assert fold_log(log, at_offset=at).to_json_dict() == fold(records, at_offset=at).to_json_dict()
    for t in (-1, 0, 10, 100, 1000, 4999, 5000, 11000, 19999, 20000, 10**9):
        assert fold_log(log, at_time=t).digest() == fold(records, at_time=t).digest()
        assert fold_log(log, at_offset=17, at_time=t).offset == fold(records, at_offset=17, at_time=t).offset
    assert fold_log(log).digest() == fold(records).digest()


def test_fold_log_decodes_no_batch_past_the_bound(tmp_path, decodes):
    log = write_log(tmp_path / "log", scenario())  # batches at 0, 4, 8, ..., 20
    assert fold_log(log, at_offset=9).offset == 9  # the bound falls inside the batch at 8
    assert decodes == [0, 4, 8]
    decodes.clear()
    assert fold_log(log, at_offset=11).offset == 11  # the bound is a batch's last record
    assert decodes == [0, 4, 8]
    decodes.clear()
    assert fold_log(log, at_time=5000).offset == 14  # batch 12..15 runs from 1000 to 11000
    assert decodes == [0, 4, 8, 12]
    decodes.clear()
    fold_log(log, at_time=-1)
    assert decodes == []


def test_fold_log_never_reads_a_bad_batch_past_the_bound(tmp_path):
    records = scenario()
    log = write_log(tmp_path / "log", records)
    # A batch with valid checksums whose payload is not msgpack: decoding it would raise.
    payload = b"\xc1"
    last = LogReader(log).segments()[-1].path
    with open(last, "ab") as f:
        f.write(encode_batch_header(len(records), 1, payload, 99_000, 99_000) + payload)
    with pytest.raises(LogRecordError):
        fold_log(log)
    assert fold_log(log, at_offset=len(records) - 1).digest() == fold(records).digest()
    assert fold_log(log, at_time=98_999).digest() == fold(records).digest()


# --- text layout ----------------------------------------------------------------------------------

def test_describe_lines_layout():
    records = scenario()
    assert list(fold(records, at_offset=18).describe_lines()) == [
        "# controller 0 epoch 1, live brokers 1,2",
        "Topic: t\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: cleanup.policy=compact",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,0,2\tIsr: 1,2\tOffline: 0",
    ]
    assert list(fold(records, at_offset=13).describe_lines())[2] == \
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,0,2\tIsr: 1,0,2"
    assert list(fold(records, at_offset=6).describe_lines())[2] == \
        "\tTopic: t\tPartition: 0\tLeader: none\tReplicas: 1,0,2\tIsr: "


def test_describe_lines_leaderless_partition_and_no_configs():
    s = Script()
    s.elect(0, 3)
    s.live(0)
    for p, replicas in ((1, (1, 2)), (0, (0, 1))):
        s.partition("b", p, GONE, NEW, replicas, -1, -1, ())
        s.partition("b", p, NEW, ONLINE, replicas, replicas[0], 0, replicas)
    s.add(LeaderAndIsrUpdated, topic="b", partition=1, leader=-1, leader_epoch=1, isr=(1,), partition_epoch=1,
          recovery_state=0, reason=UPDATE_OFFLINE_REPLICA, replica=1)
    s.partition("a", 0, GONE, NEW, (0,), -1, -1, ())
    assert list(fold(s.records).describe_lines()) == [
        "# controller 0 epoch 3, live brokers 0",
        "Topic: a\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        "\tTopic: a\tPartition: 0\tLeader: none\tReplicas: 0\tIsr: ",
        "Topic: b\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: ",
        "\tTopic: b\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1\tOffline: 1",
        "\tTopic: b\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 1\tOffline: 1,2",
    ]
    assert fold(s.records).to_json_dict()["topics"][1]["partitions"][1]["leader"] == -1


# --- digest ---------------------------------------------------------------------------------------

def test_digest_is_sha256_of_canonical_json():
    view = fold(scenario(), at_offset=18)
    canonical = json.dumps(view.to_json_dict(), sort_keys=True, separators=(",", ":")).encode()
    assert view.digest() == hashlib.sha256(canonical).hexdigest()
    assert fold(scenario(), at_offset=18).digest() == view.digest()


def test_digest_changes_exactly_when_the_view_does():
    records = scenario()
    views = [fold(records, at_offset=at) for at in range(-1, len(records))]
    for before, after in zip(views, views[1:]):
        assert (before.digest() == after.digest()) == (before.to_json_dict() == after.to_json_dict())
    assert len({v.digest() for v in views}) > 10
    final = fold(records).digest()
    for i, change in ((22, dict(isr=(2, 1))), (22, dict(leader=1)), (22, dict(leader_epoch=3)),
                      (23, dict(replica=0)), (20, dict(live_brokers=((1, 0x101),))), (3, dict(controller_epoch=2))):
        changed = records[:i] + [records[i]._replace(**change)] + records[i + 1:]
        assert fold(changed).digest() != final, (i, change)


# --- end to end: the demo's records against the engine's context -----------------------------------

@pytest.mark.parametrize("spec", [
    ScriptSpec(),
    ScriptSpec(kill=(1, 2), replication_factor=2),
    ScriptSpec(brokers=5, partitions=8, kill=(1, 2, 3), extra_topics={"audit": (3, 2)}),
], ids=["default", "leaderless", "extra-topic"])
def test_demo_records_fold_to_the_engine_context(spec):
    records: list = []
    engine = run_scripted(spec, sink=records.append)
    ctx = engine.context
    view = fold(records)
    assert {(t, p) for t, parts in view.topics.items() for p in parts} == set(ctx.all_partitions())
    for tp in ctx.all_partitions():
        pv = view.topics[tp[0]][tp[1]]
        assert pv.state == ctx.partition_state(tp)
        assert pv.replicas == tuple(ctx.partition_replica_assignment(tp))
        info = ctx.partition_leadership_info(tp).leader_and_isr
        assert (pv.leader, pv.leader_epoch, tuple(pv.isr), pv.partition_epoch, pv.recovery_state) == \
            (info.leader, info.leader_epoch, tuple(info.isr), info.partition_epoch, info.recovery_state)
        assert view.partition_replica_states(*tp) == {r: ctx.replica_state((*tp, r)) for r in pv.replicas}
    assert view.controller == (spec.controller_id, 1)
