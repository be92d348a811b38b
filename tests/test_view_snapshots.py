"""ViewSnapshot records: ClusterView.to_snapshot/from_snapshot, Cluster.checkpoint(), and
fold_log starting from the latest snapshot at or before its bound."""
from __future__ import annotations

import dataclasses

import msgpack
import pytest

from controller.embedding.cluster import Cluster
from events.log import FsyncPolicy, LogReader, LogWriter
from events.records import (
    BrokerStarted, ControllerElected, LeaderAndIsrUpdated, LiveBrokersChanged, PartitionsAdded, PartitionTransition,
    ReplicaAssignmentChanged, ReplicaTransition, StateDigest, TopicCreated, ViewSnapshot,
)
from events.segment import Batch
from statemachines.cluster_view import ClusterView, PartitionView, fold, fold_log, snapshot_record_body


def full_state(view: ClusterView) -> dict:
    """Every attribute of the view, with types, and dicts as ordered item lists (iteration order counts)."""
    def walk(x):
        if isinstance(x, dict):
            return ("dict", [(walk(k), walk(v)) for k, v in x.items()])
        if isinstance(x, (set, frozenset)):
            return (type(x).__name__, sorted(x))
        if isinstance(x, PartitionView):
            return ("PartitionView", [walk(getattr(x, f.name)) for f in dataclasses.fields(x)])
        if isinstance(x, (tuple, list)):
            return (type(x).__name__, [walk(i) for i in x])
        return (type(x).__name__, x)
    return {name: walk(value) for name, value in vars(view).items()}


def round_trip(view: ClusterView) -> ClusterView:
    return ClusterView.from_snapshot(view.to_snapshot())


# --- a real run --------------------------------------------------------------------------------------

def run(sink, checkpoint_views: bool = True) -> list:
    """A cluster run with checkpoints (with view snapshots) at several points; returns every record."""
    records: list = []

    def tee(record):
        records.append(record)
        if sink is not None:
            sink(record)

    cluster = Cluster(sink=tee, seed=7)

    def checkpoint():
        cluster.checkpoint(snapshot=checkpoint_views)

    cluster.start_brokers(range(4), at=100)
    cluster.create_topic("orders", 3, 2, at=1000)
    cluster.create_topic("audit", 2, 3, configs={"cleanup.policy": "compact"}, at=1100)
    checkpoint()
    cluster.kill_broker(1, at=5000)
    cluster.advance_to(30_000)
    checkpoint()
    cluster.set_config("topic", "orders", "retention.ms", 1000, at=31_000)
    cluster.add_partitions("orders", 5, at=32_000)
    checkpoint()
    checkpoint()  # two snapshots back to back
    cluster.kill_broker(cluster.controller_id, at=40_000)
    cluster.advance_to(70_000)
    checkpoint()
    cluster.start_broker(1, at=80_000)
    cluster.expire_session(2, at=90_000)
    cluster.advance_to(120_000)
    checkpoint()
    cluster.create_topic("late", 1, 1, at=130_000)
    cluster.advance_to(140_000)
    return records


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """(log directory, records) of the run, written in small batches over several segments."""
    log = tmp_path_factory.mktemp("snapshots") / "log"
    with LogWriter(log, fsync=FsyncPolicy.none(), batch_records=16, segment_bytes=4096) as writer:
        records = run(writer.append)
    return log, records


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


def snapshots(records) -> list:
    return [r for r in records if type(r) is ViewSnapshot]


def test_the_run_writes_snapshots_just_before_digests(logged):
    log, records = logged
    assert list(LogReader(log).records()) == records
    snaps = snapshots(records)
    assert len(snaps) == 6
    assert len(LogReader(log).segments()) > 3
    for snap in snaps:
        assert type(records[snap.offset + 1]) is StateDigest
        assert (snap.controller_id, snap.controller_epoch) == (-1, 0)
        restored = ClusterView.from_snapshot(snap.state)
        assert full_state(restored) == full_state(fold(records, at_offset=snap.offset - 1))
    # The run covers what the view holds: a failover, topic configs, dead brokers, several topics.
    final = fold(records)
    assert final.latest_epoch >= 2 and final.topic_configs["orders"] == {"retention.ms": "1000"}
    assert len(final.topics) == 3 and len(final.known_brokers) == 4


def test_round_trip_after_every_record_of_a_run(logged):
    _, records = logged
    view = ClusterView()
    pending_seen = False
    assert full_state(round_trip(view)) == full_state(view)
    for record in records:
        view.apply(record)
        pending_seen |= view._failover_pending is not None
        assert full_state(round_trip(view)) == full_state(view), record.offset
    assert pending_seen  # the failover marker went through a round trip too
    assert round_trip(view).digest() == view.digest()


def test_round_trip_of_shutting_down_brokers_and_no_controller():
    view = ClusterView()
    for i, rec in enumerate([
        BrokerStarted.make(offset=0, broker_id=5, host="h", port=1, rack=None),
        ControllerElected.make(offset=1, controller_id=5, controller_epoch=3, epoch_zk_version=3),
        LiveBrokersChanged.make(offset=2, controller_id=5, controller_epoch=3, timestamp_ms=9,
                                live_brokers=((5, 100), (6, 101)), shutting_down=(6,)),
        TopicCreated.make(offset=3, topic="t", assignment=((5, 6), (6, 5)), configs=(("a", "b"),)),
    ]):
        view.apply(rec)
    assert full_state(round_trip(view)) == full_state(view)
    restored = round_trip(view)
    assert restored.shutting_down == frozenset({6}) and restored.controller == (5, 3)
    assert restored.assignments == {"t": {0: (5, 6), 1: (6, 5)}}
    view.controller = None
    assert round_trip(view).controller is None


def test_from_snapshot_rejects_other_data():
    with pytest.raises(ValueError, match="format"):
        ClusterView.from_snapshot(msgpack.packb([4]))
    with pytest.raises(ValueError, match="fields"):
        ClusterView.from_snapshot(msgpack.packb([1, 2, 3]))
    with pytest.raises(ValueError):
        ClusterView.from_snapshot(b"\xc1")
    bad = list(msgpack.unpackb(ClusterView().to_snapshot()))
    bad[9] = [["t", [[0, 1]]]]  # a partition with 2 fields
    with pytest.raises(ValueError, match="layout"):
        ClusterView.from_snapshot(msgpack.packb(bad))


def test_snapshot_record_body():
    view = fold([BrokerStarted.make(offset=0, broker_id=1, host="h", port=1, rack=None)])
    assert snapshot_record_body(view) == (view.to_snapshot(),)


def test_folding_a_snapshot_changes_nothing_but_the_offset(logged):
    _, records = logged
    for snap in snapshots(records):
        before = fold(records, at_offset=snap.offset - 1)
        after = fold(records, at_offset=snap.offset)
        before_state, after_state = full_state(before), full_state(after)
        assert after.offset == snap.offset and after.timestamp_ms == snap.timestamp_ms
        for name in ("offset", "timestamp_ms"):
            del before_state[name], after_state[name]
        assert before_state == after_state


# --- checkpoint ---------------------------------------------------------------------------------------

def test_checkpoint_snapshots_the_view_of_every_record_so_far():
    cluster = Cluster(seed=1)
    cluster.start_brokers(range(3), at=10)
    cluster.create_topic("t", 2, 2, at=20)
    view = fold(cluster.journal.records)
    assert full_state(cluster.view) == full_state(view)    # the cluster folds its own records as it goes
    digest = cluster.checkpoint()
    snap, last = cluster.journal.records[-2:]
    assert type(snap) is ViewSnapshot and snap.offset == view.offset + 1
    assert type(last) is StateDigest and last.digest == digest
    assert full_state(ClusterView.from_snapshot(snap.state)) == full_state(view)


def test_checkpoint_without_a_snapshot_writes_only_the_digest():
    cluster = Cluster(seed=1)
    cluster.start_brokers(range(2), at=10)
    n = len(cluster.journal.records)
    cluster.checkpoint(snapshot=False)
    assert [type(r) for r in cluster.journal.records[n:]] == [StateDigest]


def test_a_log_with_snapshots_replays(logged):
    from controller.embedding.replay import replay_records
    _, records = logged
    assert sum(type(r) is ViewSnapshot for r in records) >= 2
    result = replay_records(records)
    assert result.ok, result.divergence


def test_runs_with_and_without_view_snapshots_differ_only_by_the_snapshots(logged):
    _, with_views = logged
    without: list = []
    run(without.append, checkpoint_views=False)
    kept = [r for r in with_views if type(r) is not ViewSnapshot]
    assert len(kept) == len(without)
    def unplaced(r):  # all but offset and cause_offset, which the snapshots shift
        return r[:2] + r[3:6] + r[7:]
    assert list(map(unplaced, kept)) == list(map(unplaced, without))


# --- fold_log from snapshots ---------------------------------------------------------------------------

def test_fold_log_equals_fold_at_every_offset(logged):
    log, records = logged
    for at in [-1, *range(0, len(records) + 2)]:
        assert full_state(fold_log(log, at_offset=at)) == full_state(fold(records, at_offset=at)), at
    assert full_state(fold_log(log)) == full_state(fold(records))


def test_fold_log_equals_fold_at_times_around_each_snapshot(logged):
    log, records = logged
    times = {-1, 0, 10**12}
    for r in records:
        times.update((r.timestamp_ms - 1, r.timestamp_ms, r.timestamp_ms + 1))
    for t in sorted(times):
        assert full_state(fold_log(log, at_time=t)) == full_state(fold(records, at_time=t)), t
    for snap in snapshots(records):
        for at in (snap.offset - 1, snap.offset, snap.offset + 1):
            for t in (snap.timestamp_ms - 1, snap.timestamp_ms):
                assert full_state(fold_log(log, at_offset=at, at_time=t)) == \
                    full_state(fold(records, at_offset=at, at_time=t)), (at, t)


def test_fold_log_decodes_only_the_snapshot_batch_and_the_tail(logged, decodes):
    log, records = logged
    batches = [(b.base_offset, b.end_offset) for b in LogReader(log).iter_batches()]
    snaps = [s.offset for s in snapshots(records)]

    def batch_of(offset):
        return next(base for base, stop in batches if base <= offset < stop)

    for at in range(len(records) + 1):
        decodes.clear()
        fold_log(log, at_offset=at)
        usable = [s for s in snaps if s <= at]
        first = batch_of(usable[-1]) if usable else 0
        last = batch_of(min(at, len(records) - 1))
        assert sorted(decodes) == [base for base, _ in batches if first <= base <= last], at
        assert len(set(decodes)) == len(decodes), at  # no batch decoded twice
    decodes.clear()
    fold_log(log)
    assert len(decodes) == len(batches) - batches.index(next(b for b in batches if b[0] == batch_of(snaps[-1])))
    assert len(decodes) < len(batches) / 5


def test_fold_log_before_the_first_snapshot_decodes_from_the_start(logged, decodes):
    log, records = logged
    first = snapshots(records)[0].offset
    fold_log(log, at_offset=first - 1)
    assert sorted(decodes) == list(range(0, decodes[0] + 1, 16))  # the bound's batch, holding the snapshot, once


def test_fold_log_passes_over_a_snapshot_of_another_point(tmp_path, logged):
    """A ViewSnapshot whose view does not end just before it (a bad checkpoint) is not used."""
    _, records = logged
    snaps = snapshots(records)
    wrong = fold(records, at_offset=10).to_snapshot()
    bad = [r._replace(state=wrong) if r.offset == snaps[-1].offset else r for r in records]
    log = tmp_path / "log"
    with LogWriter(log, fsync=FsyncPolicy.none(), batch_records=16) as writer:
        writer.append_many(bad)
    assert full_state(fold_log(log)) == full_state(fold(records))
    assert full_state(fold_log(log, at_offset=snaps[-1].offset)) == \
        full_state(fold(records, at_offset=snaps[-1].offset))


def test_fold_log_survives_false_candidates(tmp_path, logged):
    """A payload holding the snapshot's first bytes inside a string is decoded, found empty, and skipped."""
    _, records = logged
    log = tmp_path / "log"
    # An 8-replica assignment starting with brokers 52, 2 encodes like the start of a ViewSnapshot (version 2).
    fake = TopicCreated.make(offset=len(records), timestamp_ms=records[-1].timestamp_ms, topic="wide",
                             assignment=((52, 2, 3, 4, 5, 6, 7, 8),), configs=())
    assert b"\x98\x34\x02" in msgpack.packb(fake)
    all_records = records + [fake]
    with LogWriter(log, fsync=FsyncPolicy.none(), batch_records=16) as writer:
        writer.append_many(all_records)
    assert full_state(fold_log(log)) == full_state(fold(all_records))


def test_fold_log_starts_at_the_snapshots_of_a_log_written_before_schema_version_2(tmp_path, logged, decodes):
    # Logs written before the columnar batches carry version 1 in every record: their snapshots count.
    _, records = logged
    old = tmp_path / "v1"
    with LogWriter(old, fsync=FsyncPolicy.none(), batch_records=16, segment_bytes=4096) as writer:
        for r in records:
            writer.append(r._replace(v=1))
    decodes.clear()
    assert full_state(fold_log(old)) == full_state(fold(records))
    batches = list(LogReader(old).iter_batches())
    assert len(decodes) < len(batches) / 5


# --- format 3, read as docs/event-log-format.md describes it (without the view's code) -------------------------

def _ints(data: bytes, n: int) -> list[int]:
    """n little-endian signed ints of len(data) / n bytes each."""
    if not n:
        assert data == b""
        return []
    w = len(data) // n
    assert w in (1, 2, 4) and w * n == len(data)
    return [int.from_bytes(data[i * w:(i + 1) * w], "little", signed=True) for i in range(n)]


def _split(counts: list[int], values: list[int]) -> list[list[int]]:
    out, at = [], 0
    for k in counts:
        out.append(values[at:at + k])
        at += k
    assert at == len(values)
    return out


def _partition_rows(n, ps, states, leaders, leader_epochs, partition_epochs, recovery_states, n_replicas,
                    replicas, n_isr, isr) -> list:
    n_replicas, n_isr = _ints(n_replicas, n), _ints(n_isr, n)
    return [list(row) for row in zip(
        _ints(ps, n), _ints(states, n), _split(n_replicas, _ints(replicas, sum(n_replicas))), _ints(leaders, n),
        _ints(leader_epochs, n), _split(n_isr, _ints(isr, sum(n_isr))), _ints(partition_epochs, n),
        _ints(recovery_states, n))]


def format_2_of_format_3(data: bytes) -> bytes:
    """The format-2 snapshot holding what a format-3 one holds, decoded by the documented layout."""
    state = msgpack.unpackb(data, raw=False)
    assert state[0] == 3 and len(state) == 15
    state[0] = 2
    state[9] = [[t, _partition_rows(*cols)] for t, *cols in state[9]]
    state[14] = [[t, _partition_rows(*cols)] for t, *cols in state[14]]
    state[10] = [[t, [[p, [list(pair) for pair in zip(reps, states)]]
                      for p, reps, states in zip(_ints(ps, n), _split(counts, _ints(replicas, sum(counts))),
                                                 _split(counts, _ints(states, sum(counts))))]]
                 for t, n, ps, counts, replicas, states in ((t, n, ps, _ints(c, n), r, s)
                                                            for t, n, ps, c, r, s in state[10])]
    state[12] = [[t, [[p, reps] for p, reps in zip(_ints(ps, n), _split(counts, _ints(replicas, sum(counts))))]]
                 for t, n, ps, counts, replicas in ((t, n, ps, _ints(c, n), r) for t, n, ps, c, r in state[12])]
    return msgpack.packb(state, use_bin_type=True)


def wide_view() -> ClusterView:
    """A view whose columns need every width: ids past 127 and 32767, negative ones, long and empty lists."""
    view = ClusterView()
    recs = [
        TopicCreated.make(offset=0, topic="w", assignment=((1, 200, 70_000), (), (5,)), configs=(("k", "v"),)),
        PartitionsAdded.make(offset=1, topic="w", assignment=((40_000, (3, -2)), (1, (9,)), (40_000, (4,)))),
        PartitionTransition.make(offset=2, topic="w", partition=40_000, from_state=0, to_state=1,
                                 replicas=(3, -2, 2**31 - 1), leader=-1, leader_epoch=-1, isr=(), partition_epoch=0,
                                 recovery_state=0, election=0),
        PartitionTransition.make(offset=3, topic="w", partition=2, from_state=0, to_state=1, replicas=(5,),
                                 leader=5, leader_epoch=300, isr=(5,), partition_epoch=2**31 - 1,
                                 recovery_state=1, election=0),
        LeaderAndIsrUpdated.make(offset=4, topic="w", partition=2, leader=5, leader_epoch=40_000, isr=(5, 6, 7, 8),
                                 partition_epoch=1, recovery_state=0, reason=1, replica=-1),
        ReplicaAssignmentChanged.make(offset=5, topic="w", partition=2, replicas=(5, 6, 7, 8, 9),
                                      adding_replicas=(), removing_replicas=()),
        ReplicaTransition.make(offset=6, topic="w", partition=40_000, replica=-2, from_state=1, to_state=2),
        ReplicaTransition.make(offset=7, topic="w", partition=40_000, replica=200, from_state=1, to_state=3),
        ReplicaTransition.make(offset=8, topic="w", partition=3, replica=1, from_state=1, to_state=2),
        TopicCreated.make(offset=9, topic="empty", assignment=(), configs=()),
    ]
    for rec in recs:
        view.apply(rec)
    return view


def test_format_3_reads_as_documented_after_every_record_of_a_run(logged):
    _, records = logged
    view = ClusterView()
    for record in records:
        view.apply(record)
        snap = view.to_snapshot()
        assert snap == view.to_snapshot(format=3)
        assert format_2_of_format_3(snap) == view.to_snapshot(format=2), record.offset
        assert ClusterView.from_snapshot(view.to_snapshot(format=2)).to_snapshot() == snap, record.offset


def test_format_3_of_wide_values():
    view = wide_view()
    snap = view.to_snapshot()
    assert format_2_of_format_3(snap) == view.to_snapshot(format=2)
    restored = ClusterView.from_snapshot(snap)
    assert full_state(restored) == full_state(view)
    assert restored.to_snapshot() == snap
    assert ClusterView.from_snapshot(view.to_snapshot(format=2)).to_snapshot() == snap
    assert list(restored.assignments["w"].items()) == [(0, (1, 200, 70_000)), (1, (9,)), (2, (5, 6, 7, 8, 9)),
                                                       (40_000, (4,))]
    assert dict(restored.assignments["empty"]) == {} and list(restored.assignments) == ["w", "empty"]
    state = msgpack.unpackb(snap, raw=False)
    w = state[9][0]
    assert w[:3] == ["w", 2, (40_000).to_bytes(4, "little") + (2).to_bytes(4, "little")]   # past 32767: 4 bytes
    assert w[3] == b"\x01\x01"   # states: 1 byte
    assert len(w[9]) == 8 * 4    # replicas (3, -2, 2**31 - 1) and (5, 6, 7, 8, 9): 4 bytes
    assert len(w[5]) == 2 * 4    # leader epochs -1 and 40_000: 4 bytes
    # replica states' replicas -2, 200 (partition 40_000) and 1 (partition 3): 2 bytes
    assert state[10][0][4] == (-2).to_bytes(2, "little", signed=True) + (200).to_bytes(2, "little") + b"\x01\x00"


def test_the_assignments_read_as_the_dicts_they_were():
    view = wide_view()
    a = view.assignments
    assert a == {"w": {0: (1, 200, 70_000), 1: (9,), 2: (5, 6, 7, 8, 9), 40_000: (4,)}, "empty": {}}
    assert a["w"][40_000] == (4,) and 3 not in a["w"] and "x" not in a["w"] and a["w"].get(7) is None
    assert len(a["w"]) == 4 and list(a["w"].values())[0] == (1, 200, 70_000)
    with pytest.raises(KeyError):
        a["w"][3]
    with pytest.raises(TypeError):
        a["w"][0] = (1,)


def test_assignment_records_the_view_cannot_hold_are_errors():
    with pytest.raises(ValueError, match="PartitionsAdded at offset 0: partition -1"):
        fold([PartitionsAdded.make(offset=0, topic="t", assignment=((-1, (1,)),))])
    with pytest.raises(ValueError, match="TopicCreated at offset 0: .*2147483648"):
        fold([TopicCreated.make(offset=0, topic="t", assignment=((2**31,),), configs=())])


def _broken(index: int, entry: int, column: int, value) -> bytes:
    state = msgpack.unpackb(wide_view().to_snapshot(), raw=False)
    state[index][entry][column] = value
    return msgpack.packb(state, use_bin_type=True)


@pytest.mark.parametrize("index, column, value, message", [
    (9, 3, b"\x01", r"partitions of topic 'w': states: 1 bytes are not 2 ints"),
    (9, 2, [1, 2], r"partitions of topic 'w': partitions is not a bin"),
    (9, 2, b"\x01\x01", r"partitions of topic 'w': a partition number appears twice"),
    (9, 2, b"\x01\xff", r"partition -1"),
    (9, 1, -1, r"row count -1"),
    (9, 8, b"\x03\x00", r"replicas: 32 bytes are not 3 ints"),
    (9, 8, b"\x05\xff", r"replicas counts: a negative count"),
    (9, 3, b"\x01\xff", r"states: value -1 outside 0..255"),
    (10, 5, b"\x02\x03\x02\x03", r"replica states of topic 'w': replica states: 4 bytes are not 3 ints"),
    (10, 4, b"\xfe\xfe\x01", r"a partition lists a replica's state twice"),
    (12, 4, b"", r"assignment of topic 'w': replicas: 0 bytes are not 10 ints"),
    (14, 0, "x", r"deleted partitions"),
])
def test_from_snapshot_refuses_broken_format_3(index, column, value, message):
    if index == 14:
        state = msgpack.unpackb(wide_view().to_snapshot(), raw=False)
        state[14] = [["x", 0]]
        data = msgpack.packb(state, use_bin_type=True)
    else:
        data = _broken(index, 0, column, value)
    with pytest.raises(ValueError, match=message):
        ClusterView.from_snapshot(data)


def test_the_documented_format_3_example():
    view = fold([PartitionsAdded.make(offset=0, topic="t", assignment=((1, (3, 200)), (0, (5,))))])
    state = msgpack.unpackb(view.to_snapshot(), raw=False)
    assert state[12] == [["t", 2, b"\x01\x00", b"\x02\x01", b"\x03\x00\xc8\x00\x05\x00"]]


def test_format_1_and_2_snapshots_read_and_are_written_again_as_format_3(logged):
    _, records = logged
    view = fold(records)
    snap_2 = view.to_snapshot(format=2)
    state = msgpack.unpackb(snap_2, raw=False)
    assert state[0] == 2 and state[13] == [] and state[14] == []
    snap_1 = msgpack.packb([1] + state[1:13], use_bin_type=True)   # format 1: no deletion state
    for snap in (snap_1, snap_2):
        restored = ClusterView.from_snapshot(snap)
        assert full_state(restored) == full_state(view)
        assert restored.to_snapshot() == view.to_snapshot()
    with pytest.raises(ValueError, match="format 4: this writer knows 2 and 3"):
        view.to_snapshot(format=4)
    with pytest.raises(ValueError, match="format True"):
        ClusterView.from_snapshot(msgpack.packb([True] + state[1:]))


def test_a_view_snapshot_written_before_the_reassignments_field_replays():
    """A ViewSnapshot taken during a reassignment by a version before the 16th field (the reassignments in
    progress) holds the first 15 fields; the replay, which writes 16, takes it as the same snapshot."""
    import msgpack

    from controller.embedding.cluster import Cluster
    from controller.embedding.replay import replay_records
    from events.records import ViewSnapshot
    c = Cluster(seed=2)
    c.start_brokers([0, 1, 2, 3])
    c.create_topic("t", 2, 2, assignment=[(0, 1), (1, 2)])
    c.reassign_partitions({("t", 0): (0, 3)}, at=1_000)   # in progress until broker 3 joins the ISR
    c.checkpoint()
    records = list(c.journal.records)
    i = max(k for k, r in enumerate(records) if type(r) is ViewSnapshot)
    state = msgpack.unpackb(records[i].state, raw=False)
    assert len(state) == 16 and state[15]
    old = records[:i] + [records[i]._replace(state=msgpack.packb(state[:15]))] + records[i + 1:]
    assert replay_records(records).ok
    assert replay_records(old).ok
    wrong = state[:15]
    wrong[2] += 1   # another time: not the same snapshot
    assert not replay_records(records[:i] + [records[i]._replace(state=msgpack.packb(wrong))] + records[i + 1:]).ok
