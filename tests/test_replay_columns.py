"""Replay compares columnar batches as batches, and record by record wherever the bounds differ."""
from __future__ import annotations

import shutil
from pathlib import Path

import msgpack
import numpy as np

from controller.embedding.cluster import Cluster
from controller.embedding.replay import replay_log, replay_records
from events.columns import ColumnBatch
from events.log import FsyncPolicy, LogReader, LogWriter
from events.records import ClusterSnapshot, PartitionTransition


def _run(log_dir) -> None:
    with LogWriter(log_dir, fsync=FsyncPolicy.none()) as writer:
        c = Cluster(seed=3, sink=writer.append)
        c.start_brokers(range(4))
        c.create_topic("big", 300, 3)
        c.kill_broker(1, at=1_000)
        c.advance_to(40_000)
        c.start_broker(1, at=41_000)
        c.checkpoint()


def test_replay_of_columnar_log_compares_batches(tmp_path):
    _run(tmp_path)
    elements = list(LogReader(tmp_path).column_batches())
    assert any(type(e) is ColumnBatch for e in elements)
    result = replay_log(tmp_path)
    assert result.ok and result.records == LogReader(tmp_path).end_offset


def test_replay_of_the_same_log_as_rows(tmp_path):
    """A log holding the same records as rows (as written before a path became columnar) replays the same."""
    _run(tmp_path)
    result = replay_records(LogReader(tmp_path).records())
    assert result.ok and result.records == LogReader(tmp_path).end_offset


def test_a_changed_value_inside_a_columnar_batch_is_found_at_its_record(tmp_path):
    _run(tmp_path)
    elements = list(LogReader(tmp_path).column_batches())
    i = next(i for i, e in enumerate(elements) if type(e) is ColumnBatch and e.cls is PartitionTransition
             and e.n > 10)
    batch = elements[i]
    leader = np.array(batch.column("leader"), dtype=np.int64)
    leader[7] += 100
    columns = {f: c for f, c in zip(batch.fields, batch.columns)}
    columns["leader"] = leader
    elements[i] = ColumnBatch.from_columns(PartitionTransition, batch.first_offset, batch.header, **columns)
    result = replay_records(elements)
    assert not result.ok
    d = result.divergence
    assert d.offset == batch.first_offset + 7
    assert d.expected.leader == d.got.leader + 100


PRE_COLUMNAR = Path(__file__).parent / "data" / "logs" / "pre-columnar"


def test_a_log_written_before_the_columnar_formats_replays(tmp_path):
    """A log written by the version before columnar batches and snapshots (tests/data/logs/make_pre_columnar.py,
    run at commit e4954f9): its row records, ViewSnapshots and ClusterSnapshots (snapshot format 1) are what the
    replay writes now, the snapshots compared by what they hold."""
    shutil.copytree(PRE_COLUMNAR, tmp_path / "log")
    whole = replay_log(tmp_path / "log")
    assert whole.ok, whole.divergence
    assert whole.records == LogReader(tmp_path / "log").end_offset
    tail = replay_log(tmp_path / "log", from_snapshot=True)
    assert tail.ok and tail.records < whole.records


FORMAT_2 = Path(__file__).parent / "data" / "logs" / "snapshot-format-2"


def test_a_log_with_snapshots_of_format_2_replays(tmp_path):
    """A log written at commit cd57079 (tests/data/logs/make_pre_columnar.py run on that checkout): cluster
    snapshots of format 2 (int32 broker columns, int32 context columns, fixed-width store tables and a time per
    transaction) and state digests of format 2 replay whole and from the snapshot; the snapshots are compared by
    what they hold."""
    shutil.copytree(FORMAT_2, tmp_path / "log")
    snapshots = [r for r in LogReader(tmp_path / "log").records() if type(r) is ClusterSnapshot]
    assert snapshots and all(msgpack.unpackb(r.state, raw=False, strict_map_key=False)["format"] == 2
                             for r in snapshots)
    whole = replay_log(tmp_path / "log")
    assert whole.ok, whole.divergence
    tail = replay_log(tmp_path / "log", from_snapshot=True)
    assert tail.ok and tail.records < whole.records
