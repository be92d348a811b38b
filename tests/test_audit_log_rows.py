"""Readers of our msgpack event logs for the audit: rows in process (audit.log_rows) and on Spark
(audit.spark_source), which must give exactly the same rows.

The Spark tests share one session: getOrCreate() reuses a session another module (or a shared
conftest fixture) already started, and only a session started here is stopped here.
"""
from __future__ import annotations

import json
import os
import sys

import msgpack
import pytest

from audit.log_rows import (
    LOCAL_CHUNK_RECORDS, ReadStats, discover_segments, iter_log_rows, read_log_rows, record_at, resolve_log_dirs,
)
from audit.rows import COLUMNS, KINDS, AuditRow
from controller.state_machine_harness import ScriptSpec, run_scripted
from events import records as R
from events.log import FsyncPolicy, LogCorruptError, LogNotFoundError, LogReader, LogRecordError, LogWriter
from events.segment import BATCH_HEADER, BATCH_HEADER_SIZE, SEGMENT_HEADER_SIZE

# ---------------------------------------------------------------------------------------------
# Logs to read
# ---------------------------------------------------------------------------------------------


def _write(directory, records, **options) -> None:
    """Write ``records`` (offsets are assigned here, in order) to a new log."""
    options.setdefault("fsync", FsyncPolicy.none())
    with LogWriter(directory, **options) as writer:
        for record in records:
            writer.append(record._replace(offset=writer.next_offset))


def _engine_log(directory, *, partitions=40, kill=(1, 2), seed=7, segment_bytes=4096, batch_records=25) -> None:
    """A real run of the state machines (transitions, LeaderAndIsr updates, requests), small
    batches and segments so that the log has many of both."""
    with LogWriter(directory, fsync=FsyncPolicy.none(), segment_bytes=segment_bytes,
                   batch_records=batch_records) as writer:
        run_scripted(ScriptSpec(brokers=5, partitions=partitions, kill=kill, seed=seed), writer.append)


def _mapped_count(records) -> int:
    """How many audit rows the records should give (topic_created: one per partition)."""
    n = 0
    for r in records:
        if type(r) is R.TopicCreated:
            n += max(1, len(r.assignment))
        elif type(r) is R.PartitionsAdded:
            n += max(1, len(r.assignment))
        elif type(r) in (R.ReplicaTransition, R.PartitionTransition, R.TransitionFailed, R.LeaderAndIsrUpdated,
                         R.ControllerElected, R.TopicDeletionRequested, R.TopicDeletionCompleted):
            n += 1
    return n


C = {"controller_id": 3, "controller_epoch": 9}

# One record of every mapped kind (and some that give no row), with the rows they must give:
# (record, [row fields after run_id/source/position/seq, ...]).
_ROW_CASES = [
    (R.BrokerStarted.make(timestamp_ms=5, broker_id=1, host="h", port=9092, rack=None), []),
    (R.TopicCreated.make(timestamp_ms=10, topic="t", assignment=((1, 2), (2, 3)), configs=()),
     [("topic_created", -1, -1, 10, None, "t", 0, -1, None, None, None, None, None, [1, 2], None, None),
      ("topic_created", -1, -1, 10, None, "t", 1, -1, None, None, None, None, None, [2, 3], None, None)]),
    (R.ControllerElected.make(timestamp_ms=11, epoch_zk_version=4, **C),
     [("controller_elected", 3, 9, 11, None, None, -1, -1, None, None, None, None, None, None, None, None)]),
    (R.PartitionTransition.make(timestamp_ms=12, topic="t", partition=0, from_state=3, to_state=0, replicas=(1, 2),
                                leader=-1, leader_epoch=-1, isr=(), partition_epoch=0, recovery_state=0,
                                election=R.ELECTION_NONE, **C),
     [("partition_transition", 3, 9, 12, "partition", "t", 0, -1, 3, 0, None, None, None, [1, 2], None, None)]),
    (R.ReplicaTransition.make(timestamp_ms=13, topic="t", partition=0, replica=2, from_state=7, to_state=1, **C),
     [("replica_transition", 3, 9, 13, "replica", "t", 0, 2, 7, 1, None, None, None, None, None, None)]),
    (R.RequestSent.make(timestamp_ms=13, api=R.API_LEADER_AND_ISR, broker_id=1, broker_epoch=5, correlation_id=0,
                        partition_count=1, leader_count=1, delete_count=0, live_brokers=(), **C), []),
    (R.PartitionTransition.make(timestamp_ms=14, topic="t", partition=0, from_state=0, to_state=1, replicas=(1, 2),
                                leader=1, leader_epoch=0, isr=(1, 2), partition_epoch=0, recovery_state=0,
                                election=R.ELECTION_NEW_PARTITION, **C),
     [("partition_transition", 3, 9, 14, "partition", "t", 0, -1, 0, 1, 1, 0, [1, 2], [1, 2], False, None)]),
    (R.LeaderAndIsrUpdated.make(timestamp_ms=15, topic="t", partition=0, leader=1, leader_epoch=1, isr=(1,),
                                partition_epoch=1, recovery_state=0, reason=R.UPDATE_OFFLINE_REPLICA, replica=2, **C),
     [("leader_and_isr_updated", 3, 9, 15, None, "t", 0, 2, None, None, 1, 1, [1], None, None, None)]),
    (R.PartitionTransition.make(timestamp_ms=16, topic="t", partition=1, from_state=2, to_state=1, replicas=(2, 3),
                                leader=3, leader_epoch=4, isr=(3,), partition_epoch=5, recovery_state=1,
                                election=R.ELECTION_OFFLINE_UNCLEAN, **C),
     [("partition_transition", 3, 9, 16, "partition", "t", 1, -1, 2, 1, 3, 4, [3], [2, 3], True, None)]),
    (R.PartitionTransition.make(timestamp_ms=17, topic="t", partition=1, from_state=1, to_state=2, replicas=(2, 3),
                                leader=-1, leader_epoch=5, isr=(3,), partition_epoch=6, recovery_state=0,
                                election=R.ELECTION_NONE, **C),
     [("partition_transition", 3, 9, 17, "partition", "t", 1, -1, 1, 2, -1, 5, [3], [2, 3], None, None)]),
    (R.TransitionFailed.make(timestamp_ms=18, entity=R.ENTITY_REPLICA, topic="t", partition=1, replica=3,
                             from_state=2, to_state=5, error="IllegalStateException", message="bad", **C),
     [("transition_failed", 3, 9, 18, "replica", "t", 1, 3, 2, 5, None, None, None, None, None,
       "IllegalStateException")]),
    (R.TransitionFailed.make(timestamp_ms=19, entity=R.ENTITY_PARTITION, topic="t", partition=1, replica=-1,
                             from_state=2, to_state=1, error="StateChangeFailedException", message="no leader", **C),
     [("transition_failed", 3, 9, 19, "partition", "t", 1, -1, 2, 1, None, None, None, None, None,
       "StateChangeFailedException")]),
    (R.ClockAdvanced.make(timestamp_ms=20), []),
    (R.PartitionsAdded.make(timestamp_ms=21, topic="t", assignment=((2, (3, 1)), (3, (1, 2))), **C),
     [("topic_created", 3, 9, 21, None, "t", 2, -1, None, None, None, None, None, [3, 1], None, None),
      ("topic_created", 3, 9, 21, None, "t", 3, -1, None, None, None, None, None, [1, 2], None, None)]),
    (R.TopicCreated.make(timestamp_ms=22, topic="empty", assignment=(), configs=(), **C),
     [("topic_created", 3, 9, 22, None, "empty", -1, -1, None, None, None, None, None, None, None, None)]),
    (R.TopicDeletionRequested.make(timestamp_ms=23, topic="t", **C),
     [("topic_deletion_requested", 3, 9, 23, None, "t", -1, -1, None, None, None, None, None, None, None, None)]),
    (R.TopicDeletionCompleted.make(timestamp_ms=24, topic="t", **C),
     [("topic_deletion_completed", 3, 9, 24, None, "t", -1, -1, None, None, None, None, None, None, None, None)]),
]


# ---------------------------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_records", [1, 4, 1000])
def test_every_mapped_kind_gives_its_rows_and_other_kinds_none(tmp_path, batch_records):
    log = tmp_path / "log"
    _write(log, [record for record, _ in _ROW_CASES], batch_records=batch_records)
    stats = ReadStats()
    rows = list(iter_log_rows(log, stats))

    expected = [(offset, fields) for offset, (_, out) in enumerate(_ROW_CASES) for fields in out]
    assert [(row.seq, tuple(row[4:])) for row in rows] == expected
    assert {row.kind for row in rows} == set(KINDS)
    assert all(type(row) is AuditRow and row.run_id == str(log) for row in rows)
    assert stats.records == len(_ROW_CASES)
    assert stats.skipped == 3                       # BrokerStarted, RequestSent, ClockAdvanced
    assert stats.rows == len(rows) == 16
    assert stats.records_by_kind["PartitionTransition"] == 4
    assert stats.logs == 1 and stats.torn_tails == []


def test_rows_follow_a_real_run_and_positions_point_at_their_records(tmp_path):
    log = tmp_path / "run"
    _engine_log(log)
    records = list(LogReader(log).records())
    stats = ReadStats()
    rows = list(iter_log_rows(log, stats))
    assert len(stats.records_by_kind) > 5 and stats.skipped > 0   # requests and metadata were skipped
    assert stats.segments == len(LogReader(log).segments()) > 5
    assert len(rows) == _mapped_count(records)
    assert [row.seq for row in rows] == sorted(row.seq for row in rows)  # log order

    by_offset = {r.offset: r for r in records}
    segment_files = {os.path.join(str(log), os.path.basename(p)) for p, _ in LogReader(log).segments()}
    for row in rows:
        assert row.source in segment_files
        record = record_at(row.source, row.position)
        assert record == by_offset[row.seq]
        # The bytes at the position are the record's own msgpack array, whatever reads them.
        with open(row.source, "rb") as f:
            f.seek(row.position)
            raw = msgpack.Unpacker(f, use_list=False, raw=False).unpack()
        assert raw == tuple(record)
        assert row.time_ms == record.timestamp_ms and row.controller_id == record.controller_id
        if row.kind in ("replica_transition", "partition_transition", "leader_and_isr_updated"):
            assert (row.topic, row.partition) == (record.topic, record.partition)
        elif row.kind == "topic_created":
            assert row.topic == record.topic and row.replicas == list(record.assignment[row.partition])
        if row.kind == "replica_transition":
            assert (row.replica, row.from_state, row.to_state) == (record.replica, record.from_state,
                                                                  record.to_state)
    # Killing two brokers forced elections: the run has clean ones, and no unclean one.
    unclean = [row.unclean for row in rows if row.kind == "partition_transition" and row.unclean is not None]
    assert unclean and not any(unclean)


def test_record_at_refuses_a_position_where_no_record_starts(tmp_path):
    log = tmp_path / "log"
    _write(log, [record for record, _ in _ROW_CASES])
    row = next(iter_log_rows(log))
    with pytest.raises(Exception, match=f"no record starts at byte {row.position + 1}"):
        record_at(row.source, row.position + 1)


def test_many_directories_and_globs_give_one_run_id_each(tmp_path):
    for name, seed in [("a/run-1", 1), ("a/run-2", 2), ("b/run-3", 3)]:
        _engine_log(tmp_path / name, partitions=10, seed=seed)
    (tmp_path / "a" / "notes.txt").write_text("not a log")  # a file the glob matches: ignored

    paths = [str(tmp_path / "a" / "*"), str(tmp_path / "b" / "run-3"), str(tmp_path / "a" / "run-1")]
    assert resolve_log_dirs(paths) == [str(tmp_path / n) for n in ("a/run-1", "a/run-2", "b/run-3")]
    rows = list(read_log_rows(paths))
    run_ids = [row.run_id for row in rows]
    assert list(dict.fromkeys(run_ids)) == [str(tmp_path / n) for n in ("a/run-1", "a/run-2", "b/run-3")]
    for run_id in set(run_ids):
        assert [row for row in rows if row.run_id == run_id] == list(iter_log_rows(run_id))
    segments = discover_segments(paths)
    assert [(s.run_id, s.path) for s in segments] == [
        (run_id, os.path.join(run_id, os.path.basename(p))) for run_id in dict.fromkeys(run_ids)
        for p, _ in LogReader(run_id).segments()]
    assert [s.next_base_offset for s in segments if s.run_id == run_ids[0]][-1] is None
    # "a/./run-1/" and "a/run-1" are the same run.
    assert {row.run_id for row in read_log_rows(str(tmp_path / "a" / "." / "run-1") + "/")} == {
        str(tmp_path / "a" / "run-1")}


def test_paths_that_name_no_log_are_errors(tmp_path):
    with pytest.raises(LogNotFoundError, match="does not exist"):
        list(read_log_rows([str(tmp_path / "missing")]))
    with pytest.raises(LogNotFoundError, match="no event log directory matches"):
        list(read_log_rows(str(tmp_path / "nothing-*")))
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogNotFoundError, match="is not a directory"):
        list(iter_log_rows(tmp_path / "file"))


def test_an_empty_directory_is_an_empty_log(tmp_path):
    (tmp_path / "empty").mkdir()
    stats = ReadStats()
    assert list(read_log_rows(str(tmp_path / "empty"), stats)) == []
    assert (stats.logs, stats.segments, stats.records) == (1, 0, 0)
    assert discover_segments(str(tmp_path / "empty")) == []
    LogWriter(tmp_path / "header-only", fsync=FsyncPolicy.none()).close()   # one segment, no batch
    assert list(iter_log_rows(tmp_path / "header-only")) == []


def _batches(path):
    """(position, base offset, count) of every batch of a segment file."""
    data = open(path, "rb").read()
    pos, out = SEGMENT_HEADER_SIZE, []
    while pos < len(data):
        base, count, length, *_ = BATCH_HEADER.unpack_from(data, pos)
        out.append((pos, base, count))
        pos += BATCH_HEADER_SIZE + length
    return out


def test_a_corrupt_record_in_the_middle_is_an_error_naming_file_and_byte(tmp_path):
    log = tmp_path / "run"
    _engine_log(log)
    all_rows = list(iter_log_rows(log))
    # A batch in the middle of a segment (not the last) whose segment has rows before it.
    victim, position, base = next(
        (path, position, base) for path, segment_base in LogReader(log).segments()[1:-1]
        for position, base, _ in _batches(path)[1:]
        if any(segment_base <= row.seq < base for row in all_rows))
    with open(victim, "r+b") as f:  # one byte of the batch's payload
        f.seek(position + BATCH_HEADER_SIZE + 3)
        byte = f.read(1)
        f.seek(position + BATCH_HEADER_SIZE + 3)
        f.write(bytes([byte[0] ^ 0x40]))

    got = []
    with pytest.raises(LogCorruptError) as caught:
        for row in iter_log_rows(log):
            got.append(row)
    assert caught.value.path == victim and caught.value.position == position
    assert f"{victim}, byte {position}: batch payload checksum mismatch" in str(caught.value)
    assert got == [row for row in all_rows if row.seq < base]  # everything before the damaged batch


def test_a_record_that_does_not_decode_is_an_error_naming_its_offset(tmp_path):
    log = tmp_path / "log"
    good = [record for record, _ in _ROW_CASES]
    with LogWriter(log, fsync=FsyncPolicy.none(), batch_records=4) as writer:
        for record in good[:6]:
            writer.append(record._replace(offset=writer.next_offset))
        writer.append((99, 1, writer.next_offset, 3, 9, 30, -1, "unknown kind"))  # a kind no reader knows
        writer.append(good[6]._replace(offset=writer.next_offset))
    position = _batches(LogReader(log).segments()[0].path)[1][0]
    with pytest.raises(LogRecordError) as caught:
        list(iter_log_rows(log))
    assert (caught.value.position, caught.value.offset) == (position, 6)
    assert "unknown kind 99" in str(caught.value) and str(log) in str(caught.value)


def test_a_record_that_cannot_be_a_row_is_an_error_naming_its_byte(tmp_path):
    import pickle

    from audit.log_rows import RowError
    log = tmp_path / "log"
    bad = R.TransitionFailed.make(entity=7, topic="t", partition=0, replica=1, from_state=1, to_state=2,
                                  error="IllegalStateException", message="", **C)
    _write(log, [_ROW_CASES[0][0], _ROW_CASES[1][0], bad])
    with pytest.raises(RowError) as caught:
        list(iter_log_rows(log))
    assert caught.value.offset == 2 and record_at(caught.value.path, caught.value.position).offset == 2
    assert f"record at byte {caught.value.position} (record offset 2): TransitionFailed names entity 7" \
        in str(caught.value)
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)


def test_arrow_batches_name_the_record_whose_value_does_not_fit(tmp_path):
    pytest.importorskip("pyarrow")
    from audit.log_rows import RowError
    from audit.spark_source import arrow_batches
    log = tmp_path / "log"
    _write(log, [_ROW_CASES[4][0], _ROW_CASES[4][0]._replace(partition=2**40), _ROW_CASES[4][0]])
    rows = list(iter_log_rows(log))          # Python ints have no width: the local rows are fine
    assert rows[1].partition == 2**40
    with pytest.raises(RowError, match=f"record at byte {rows[1].position} \\(record offset 1\\): partition value"):
        list(arrow_batches(discover_segments(str(log))[0]))


def test_a_missing_segment_is_an_error_naming_the_next_one(tmp_path):
    log = tmp_path / "run"
    _engine_log(log)
    segments = LogReader(log).segments()
    os.remove(segments[3].path)
    with pytest.raises(LogCorruptError, match="offsets must be consecutive") as caught:
        list(iter_log_rows(log))
    assert caught.value.path == segments[4].path and caught.value.position == 0


def test_a_torn_tail_ends_the_log_cleanly_as_the_log_reader_does(tmp_path):
    log = tmp_path / "run"
    _engine_log(log)
    rows = list(iter_log_rows(log))
    last = LogReader(log).segments()[-1].path
    size = os.path.getsize(last)
    with open(last, "ab") as f:
        f.write(b"\x00\x00\x01")  # the start of a batch header, cut short by a crash
    stats = ReadStats()
    assert list(iter_log_rows(log, stats)) == rows
    assert [(t.path, t.position, t.size) for t in stats.torn_tails] == [(last, size, 3)]
    assert LogReader(log).torn_tail == stats.torn_tails[0]


def test_local_chunks_do_not_change_the_rows(tmp_path):
    from audit.log_rows import segment_rows
    log = tmp_path / "run"
    _engine_log(log, segment_bytes=1 << 20, batch_records=7)
    refs = discover_segments(str(log))
    expected = list(iter_log_rows(log))
    for chunk_records in (1, 50, LOCAL_CHUNK_RECORDS, 1 << 20):
        assert [row for ref in refs for row in segment_rows(ref, chunk_records=chunk_records)] == expected


# ---------------------------------------------------------------------------------------------
# Arrow batches (what the Spark reader hands over), without Spark
# ---------------------------------------------------------------------------------------------

def _normalised(rows):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in rows)


@pytest.mark.parametrize("chunk_records", [10, 65536])
def test_arrow_batches_hold_the_same_rows(tmp_path, chunk_records):
    pa = pytest.importorskip("pyarrow")
    from audit.rows import arrow_schema
    from audit.spark_source import arrow_batches
    _write(tmp_path / "cases", [record for record, _ in _ROW_CASES], batch_records=3)
    _engine_log(tmp_path / "run")
    refs = discover_segments([str(tmp_path / "cases"), str(tmp_path / "run")])
    batches = [b for ref in refs for b in arrow_batches(ref, chunk_records)]
    assert all(b.schema.equals(arrow_schema()) for b in batches)
    table = pa.Table.from_batches(batches, schema=arrow_schema())
    arrow_rows = [tuple(d[c] for c in COLUMNS) for d in table.to_pylist()]
    assert _normalised(arrow_rows) == _normalised(read_log_rows([str(tmp_path / "cases"), str(tmp_path / "run")]))


def test_the_data_source_reader_plans_a_partition_per_segment_and_honours_batch_rows(tmp_path):
    pytest.importorskip("pyspark.sql.datasource")
    from pyspark.sql.datasource import InputPartition

    from audit.spark_source import KControllerReader
    _engine_log(tmp_path / "run", segment_bytes=1 << 20, batch_records=10)
    (tmp_path / "empty").mkdir()
    options = {"batchRows": "10", "PATHS": json.dumps([str(tmp_path / "*")])}   # Spark lower-cases keys
    reader = KControllerReader(options)
    partitions = reader.partitions()
    assert [p.value[1] for p in partitions] == [s.path for s in discover_segments(str(tmp_path / "run"))]
    batches = [b for p in partitions for b in reader.read(p)]
    # A batch holds the rows of one kind from a chunk of 10 records (topic_created: a row per partition).
    assert max(b.num_rows for b in batches if b.column("kind")[0].as_py() != "topic_created") <= 10
    default = [b for p in partitions for b in KControllerReader({"paths": options["PATHS"]}).read(p)]
    assert len(default) < 10 < len(batches)
    assert sum(b.num_rows for b in batches) == sum(1 for _ in iter_log_rows(tmp_path / "run"))
    assert list(KControllerReader({"path": str(tmp_path / "empty")}).partitions()) == []
    assert list(reader.read(InputPartition(None))) == []
    with pytest.raises(ValueError, match="needs log directories"):
        KControllerReader({}).partitions()


# ---------------------------------------------------------------------------------------------
# On Spark
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark():
    pyspark_sql = pytest.importorskip("pyspark.sql")
    already = pyspark_sql.SparkSession.getActiveSession()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)   # workers need this interpreter's packages
    session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("kcontroller-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    if already is None:
        session.stop()


@pytest.fixture(scope="module")
def spark_logs(tmp_path_factory):
    """Three log directories of several segments each (and an empty one)."""
    root = tmp_path_factory.mktemp("spark-logs")
    for name, seed, partitions in [("runs/run-1", 1, 30), ("runs/run-2", 2, 20), ("other/run-3", 3, 25)]:
        _engine_log(root / name, partitions=partitions, seed=seed)
    _write(root / "runs" / "run-4", [record for record, _ in _ROW_CASES], batch_records=2, segment_bytes=300)
    (root / "runs" / "run-5").mkdir()
    return root


def _df_rows(df):
    return [tuple(row) for row in df.collect()]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_rows_equal_the_local_rows(spark, spark_logs):
    from audit.spark_source import read_logs_df
    paths = [str(spark_logs / "runs" / "run-*"), str(spark_logs / "other" / "run-3")]
    local = list(read_log_rows(paths))
    assert len({row.run_id for row in local}) == 4 and len(local) > 500
    df = read_logs_df(spark, paths, batch_rows=100)
    assert df.rdd.getNumPartitions() == len(discover_segments(paths)) > 12   # one per segment
    assert _normalised(_df_rows(df)) == _normalised(local)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_format_with_path_and_paths_options(spark, spark_logs):
    from audit.spark_source import FORMAT, register
    register(spark)
    one, empty = str(spark_logs / "runs" / "run-4"), str(spark_logs / "runs" / "run-5")
    df = spark.read.format(FORMAT).load(one)
    assert _normalised(_df_rows(df)) == _normalised(iter_log_rows(one))
    assert _normalised(_df_rows(spark.read.format(FORMAT).load([one, empty]))) == _normalised(iter_log_rows(one))
    assert spark.read.format(FORMAT).load(empty).count() == 0   # no segment at all: Spark's one empty partition
    paths = [str(spark_logs / "runs" / "run-1"), str(spark_logs / "other" / "*")]
    counted = (spark.read.format(FORMAT).option("paths", json.dumps(paths)).load()
               .groupBy("run_id").count().collect())
    assert {r["run_id"]: r["count"] for r in counted} == {
        run: sum(1 for _ in iter_log_rows(run)) for run in resolve_log_dirs(paths)}


@pytest.mark.spark
@pytest.mark.slow
def test_spark_read_of_a_corrupt_segment_fails_naming_file_and_byte(spark, tmp_path):
    from audit.spark_source import read_logs_df
    log = tmp_path / "run"
    _engine_log(log, partitions=10)
    victim = LogReader(log).segments()[1].path
    position = _batches(victim)[0][0]
    with open(victim, "r+b") as f:
        f.seek(position + 5)        # inside the first batch header: its checksum no longer matches
        f.write(b"\xff")
    with pytest.raises(Exception, match=f"{victim}, byte {position}: batch header checksum mismatch"):
        read_logs_df(spark, str(log)).count()
