"""The audit's readers of our logs (audit.log_rows, audit.spark_source) on logs holding columnar
batches: the same rows as the row form of the same records (every column but ``position``, which
is the columnar batch's byte for all its rows), built from the arrays; damage named as before."""
from __future__ import annotations

import pytest

from audit.log_rows import (
    ReadStats, RowError, discover_segments, iter_log_rows, read_log_rows, record_at, segment_rows,
)
from audit.rows import COLUMNS
from controller.state_machine_harness import ScriptSpec, run_scripted
from events import records as R
from events.columns import COLUMN_KINDS, ColumnBatch
from events.log import FsyncPolicy, LogReader, LogRecordError, LogWriter, read_log


def _pieces(records: list, min_run: int = 2) -> list:
    """The records with every run of >= min_run records of one columnar kind and one header as a ColumnBatch."""
    out, run = [], []

    def close():
        if len(run) >= min_run:
            out.append(ColumnBatch.from_records(run))
        else:
            out.extend(run)
        run.clear()
    for r in records:
        if run and (type(r) is not type(run[0]) or r[3:7] != run[0][3:7]):
            close()
        if r.kind in COLUMN_KINDS:
            run.append(r)
        else:
            close()
            out.append(r)
    close()
    return out


def _write(directory, pieces, **options) -> None:
    options.setdefault("fsync", FsyncPolicy.none())
    with LogWriter(directory, **options) as writer:
        for p in pieces:
            if isinstance(p, ColumnBatch):
                writer.append_columns(p)
            else:
                writer.append(p)


def _engine_records(partitions=40, seed=7) -> list:
    records: list = []
    run_scripted(ScriptSpec(brokers=5, partitions=partitions, kill=(1, 2), seed=seed), records.append)
    return records


# Records of every mapped columnar kind, with None-making values (no leadership yet, no election).
C = {"controller_id": 3, "controller_epoch": 9, "timestamp_ms": 50, "cause_offset": 0}
_CASES = [
    R.TopicCreated.make(timestamp_ms=10, topic="t", assignment=((1, 2), (2, 3)), configs=()),
    *[R.ControllerElected.make(epoch_zk_version=v, **C) for v in (4, 5)],
    *[R.PartitionTransition.make(topic="t", partition=p, from_state=3, to_state=s, replicas=(1, 2), leader=leader,
                                 leader_epoch=epoch, isr=isr, partition_epoch=0, recovery_state=0, election=election,
                                 **C)
      for p, s, leader, epoch, isr, election in [(0, 0, -1, -1, (), R.ELECTION_NONE),
                                                 (1, 1, 2, 0, (2,), R.ELECTION_OFFLINE_UNCLEAN),
                                                 (0, 1, 1, 3, (1, 2), R.ELECTION_OFFLINE)]],
    *[R.ReplicaTransition.make(topic=t, partition=p, replica=2, from_state=7, to_state=1, **C)
      for t, p in [("t", 0), ("u", 1), ("t", 1)]],
    *[R.TransitionFailed.make(entity=e, topic="t", partition=0, replica=r, from_state=1, to_state=2, error=err,
                              message="m", **C) for e, r, err in [(1, -1, "IllegalStateException"), (0, 2, "X")]],
    *[R.LeaderAndIsrUpdated.make(topic="t", partition=p, leader=1, leader_epoch=2, isr=(1,), partition_epoch=4,
                                 recovery_state=0, reason=R.UPDATE_OFFLINE_REPLICA, replica=2, **C) for p in (0, 1)],
    *[R.TopicDeletionRequested.make(topic=t, **C) for t in ("t", "u")],
    *[R.TopicDeletionCompleted.make(topic=t, **C) for t in ("t", "u")],
    R.RequestSent.make(api=R.API_LEADER_AND_ISR, broker_id=1, broker_epoch=5, correlation_id=0, partition_count=1,
                       leader_count=1, delete_count=0, live_brokers=(), **C),
]
CASES = [r._replace(offset=i) for i, r in enumerate(_CASES)]


def _without_position(rows) -> list:
    """The rows without run_id, source (the directories differ) and position."""
    return [row[3:] for row in rows]


@pytest.mark.parametrize("batch_records", [1, 5, 1000])
def test_columnar_rows_equal_the_row_form_rows(tmp_path, batch_records):
    pieces = _pieces(CASES)
    assert sum(isinstance(p, ColumnBatch) for p in pieces) == 7
    _write(tmp_path / "rows", CASES, batch_records=batch_records)
    _write(tmp_path / "cols", pieces, batch_records=batch_records)
    assert read_log(tmp_path / "cols") == CASES
    by_rows = list(iter_log_rows(tmp_path / "rows"))
    stats = ReadStats()
    by_columns = list(iter_log_rows(tmp_path / "cols", stats))
    assert _without_position(by_columns) == _without_position(by_rows)
    assert stats.records == len(CASES) and stats.records_by_kind["ReplicaTransition"] == 3
    for row in by_columns:
        assert record_at(row.source, row.position, row.seq) == CASES[row.seq]


def test_a_real_run_written_as_columns_gives_the_same_rows_in_every_chunking(tmp_path):
    records = _engine_records()
    pieces = _pieces(records)
    assert sum(len(p) for p in pieces if isinstance(p, ColumnBatch)) > len(records) // 2
    _write(tmp_path / "rows", records, segment_bytes=4096, batch_records=25)
    _write(tmp_path / "cols", pieces, segment_bytes=4096, batch_records=25)
    expected = _without_position(iter_log_rows(tmp_path / "rows"))
    assert _without_position(iter_log_rows(tmp_path / "cols")) == expected
    refs = discover_segments(str(tmp_path / "cols"))
    for chunk_records in (1, 7, 1 << 20):
        rows = [row for ref in refs for row in segment_rows(ref, chunk_records=chunk_records)]
        assert _without_position(rows) == expected


def _normalised(rows):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in row[:2] + row[3:]) for row in rows)


@pytest.mark.parametrize("chunk_records", [3, 65536])
def test_arrow_batches_of_columnar_batches_hold_the_same_rows(tmp_path, chunk_records):
    pa = pytest.importorskip("pyarrow")
    from audit.rows import arrow_schema
    from audit.spark_source import arrow_batches
    records = _engine_records(partitions=25, seed=3)
    _write(tmp_path / "cases", _pieces(CASES), batch_records=4)
    _write(tmp_path / "run", _pieces(records), segment_bytes=8192, batch_records=25)
    paths = [str(tmp_path / "cases"), str(tmp_path / "run")]
    batches = [b for ref in discover_segments(paths) for b in arrow_batches(ref, chunk_records)]
    assert all(b.schema.equals(arrow_schema()) for b in batches)
    table = pa.Table.from_batches(batches, schema=arrow_schema())
    arrow_rows = [tuple(d[c] for c in COLUMNS) for d in table.to_pylist()]
    assert _normalised(arrow_rows) == _normalised(read_log_rows(paths))
    # Dictionary-encoded strings (what the columnar engine reads): the same rows.
    encoded = [b for ref in discover_segments(paths) for b in arrow_batches(ref, chunk_records, dictionary=True)]
    assert all(b.schema.equals(arrow_schema(dictionary=True)) for b in encoded)
    assert pa.Table.from_batches(encoded).cast(arrow_schema()).equals(table)


def test_a_columnar_record_that_cannot_be_a_row_names_the_batch_byte_and_its_offset(tmp_path):
    bad = [CASES[0], *(r._replace(offset=1 + i) for i, r in enumerate(CASES[9:11]))]
    bad[2] = bad[2]._replace(entity=7)
    log = tmp_path / "log"
    _write(log, [bad[0], ColumnBatch.from_records(bad[1:])])
    with pytest.raises(RowError) as caught:
        list(iter_log_rows(log))
    assert caught.value.offset == 2 and record_at(caught.value.path, caught.value.position, 2) == bad[2]
    assert f"record at byte {caught.value.position} (record offset 2): TransitionFailed names entity 7" \
        in str(caught.value)


def test_arrow_batches_name_the_columnar_record_whose_value_does_not_fit(tmp_path):
    pytest.importorskip("pyarrow")
    from audit.spark_source import arrow_batches
    rows = [r._replace(offset=i, partition=2**40 if i == 1 else 0) for i, r in enumerate(CASES[6:9])]
    log = tmp_path / "log"
    _write(log, [ColumnBatch.from_records(rows)])
    local = list(iter_log_rows(log))
    assert local[1].partition == 2**40
    with pytest.raises(RowError, match=f"record at byte {local[1].position} \\(record offset 1\\): partition value"):
        list(arrow_batches(discover_segments(str(log))[0]))


def test_a_columnar_batch_that_does_not_decode_is_an_error_naming_batch_and_offset(tmp_path):
    import msgpack

    from events.columns import EXT_COLUMNS
    from events.segment import encode_batch_header, encode_segment_header, segment_name
    inner = msgpack.unpackb(ColumnBatch.from_records([r._replace(offset=1 + i) for i, r in
                                                      enumerate(CASES[6:9])]).encode().data)
    inner[8][1][2] = inner[8][1][2][:-1]          # partition: one byte short
    payload = msgpack.packb([CASES[0], msgpack.ExtType(EXT_COLUMNS, msgpack.packb(inner))])
    log = tmp_path / "log"
    log.mkdir()
    head = encode_segment_header(0)
    (log / segment_name(0)).write_bytes(head + encode_batch_header(0, 4, payload, 0, 0) + payload)
    with pytest.raises(LogRecordError, match="column partition: 2 bytes of u1, expected 3 values") as caught:
        list(iter_log_rows(log))
    assert caught.value.position == len(head) and caught.value.offset == 1
    with pytest.raises(LogRecordError, match="column partition"):
        list(LogReader(log).records())


@pytest.mark.spark
@pytest.mark.slow
def test_spark_source_reads_columnar_logs_as_the_local_reader_does(spark, tmp_path):
    from audit.spark_source import read_logs_df
    _write(tmp_path / "runs" / "cases", _pieces(CASES), batch_records=4)
    _write(tmp_path / "runs" / "run", _pieces(_engine_records(partitions=30, seed=5)), segment_bytes=8192,
           batch_records=25)
    paths = [str(tmp_path / "runs" / "*")]
    local = list(read_log_rows(paths))
    df = read_logs_df(spark, paths, batch_rows=50)
    assert sorted(tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in df.collect()) == \
        sorted(tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in local)
