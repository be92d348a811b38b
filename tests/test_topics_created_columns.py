"""topic_created rows built as arrays (audit.log_rows._topics_created: C-level passes over the assignments,
numpy) against the record-by-record path it falls back to: the same rows, the same Arrow columns, the same
RowError, for random TopicCreated / PartitionsAdded records as the reader decodes them (plain tuples), with
empty, wide and malformed assignments."""
from __future__ import annotations

import msgpack
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.log_rows import (
    Const, RowError, SegmentRef, _small_int_lists, _topic_assignment_bytes, _topics_created, _topics_created_by_record,
    column_values,
)
from audit.rows import arrow_schema
from audit.spark_source import _arrow_column, _misfit
from events import records as R

REF = SegmentRef("run", "run/00000000000000000000.kclog", 0, None, "/abs/run/00000000000000000000.kclog")
SCHEMAS = (arrow_schema(), arrow_schema(dictionary=True))

INT_EDGES = [0, 1, 15, 16, 127, 128, 255, 256, -1, -32, -33, -129, 2**31 - 1, 2**31, -2**31 - 1, 2**63 - 1,
             2**63, 2**64 - 1, -2**63, -2**63 - 1]
ints = st.one_of(st.integers(-1, 9), st.integers(-40, 300), st.integers(-2**63, 2**63 - 1), st.sampled_from(INT_EDGES))
odd = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.floats(allow_nan=False), st.binary(max_size=2))
replica_tuples = st.lists(ints, max_size=18).map(tuple)
small_tuples = st.lists(st.integers(-32, 127), max_size=16).map(tuple)   # the one-byte form, mostly
one_byte_tuples = st.lists(st.integers(-32, 127), max_size=15).map(tuple)
bad_replicas = st.one_of(odd, ints, st.lists(st.one_of(ints, odd, replica_tuples), max_size=4).map(tuple),
                         st.lists(ints, max_size=3))   # a list, not a tuple: the record-by-record path takes it
replicas = st.one_of(replica_tuples, replica_tuples, bad_replicas)


def assignment(kind, clean: bool):
    if kind == R.TopicCreated.KIND:
        good = st.one_of(st.lists(replica_tuples, max_size=40), st.lists(small_tuples, max_size=40),
                         st.lists(one_byte_tuples, min_size=64, max_size=90),       # read from its bytes
                         st.lists(st.lists(ints, max_size=2).map(tuple), min_size=64, max_size=66)).map(tuple)
        mixed = st.lists(replicas, max_size=20).map(tuple)
    else:
        partitions = st.one_of(st.integers(0, 70), ints)
        pair = st.tuples(partitions, st.one_of(replica_tuples, small_tuples))
        good = st.lists(pair, max_size=30).map(tuple)
        bad_pair = st.one_of(st.tuples(st.one_of(partitions, odd), replicas), st.tuples(partitions),
                             st.tuples(partitions, replica_tuples, ints), odd, replica_tuples, st.text(max_size=2))
        mixed = st.lists(st.one_of(pair, bad_pair), max_size=12).map(tuple)
    if clean:   # of the usual form (the values may still be beyond int64 or int32)
        return st.one_of(good, good, st.just(()))
    return st.one_of(good, mixed, odd, st.just(()))


header_ints = st.sampled_from([-1, 0, 1, 2, 3, 4, 5] * 4 + [2**31, 2**63 - 1, 2**63, -2**63 - 1])


@st.composite
def records(draw):
    """(positions, records, raw): raw as Chunk.raw, the bytes from each TopicCreated record on (followed by
    other bytes, as in a payload), or None."""
    kind = draw(st.sampled_from([R.TopicCreated.KIND, R.PartitionsAdded.KIND]))
    count = draw(st.integers(1, 4))
    clean = draw(st.booleans())
    recs, positions = [], []
    offset = draw(st.integers(0, 1000))
    for i in range(count):
        head = (kind, R.SCHEMA_VERSION, offset + i, draw(header_ints), draw(header_ints),
                draw(st.one_of(st.integers(0, 2**45), header_ints)), draw(st.integers(-1, 9)),
                draw(st.sampled_from(["t", "u", "topic-ä"])), draw(assignment(kind, clean)))
        recs.append(head + ((),) if kind == R.TopicCreated.KIND else head)
        positions.append(24 + 40 * i)
    raw = None
    if kind == R.TopicCreated.KIND and draw(st.booleans()):
        raw = {}
        for p, r in zip(positions, recs):
            try:
                raw[p] = memoryview(msgpack.packb(r, use_bin_type=True) + draw(st.binary(max_size=40)))
            except (OverflowError, TypeError, ValueError):   # beyond what msgpack stores: not from a log
                pass
    return positions, recs, raw


def rows_of(columns):
    """The columns as rows of Python values (lists for int lists), with each value's type."""
    n = len(columns[2])
    values = [[c.value] * n if type(c) is Const else column_values(c) for c in columns]
    values = [[list(v) if type(v) is tuple else v for v in col] for col in values]
    return [tuple((type(v).__name__, v) for v in row) for row in zip(*values)]


def arrow_of(columns, schema):
    """The Arrow batch the Spark reader makes of the columns, or the RowError it raises."""
    n = len(columns[2])
    try:
        arrays = [_arrow_column(c, n, f.type, pa) for c, f in zip(columns, schema)]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        return str(_misfit(REF, columns, schema, exc, pa))
    return pa.RecordBatch.from_arrays(arrays, schema=schema).to_pylist()


def build(builder, positions, recs, *raw):
    try:
        return builder(REF, positions, recs, *raw)
    except RowError as exc:
        return str(exc)


@settings(max_examples=400, deadline=None)
@given(records())
def test_arrays_give_the_rows_and_errors_of_the_record_by_record_path(case):
    positions, recs, raw = case
    fast = build(_topics_created, positions, recs, raw)
    slow = build(_topics_created_by_record, positions, recs)
    if isinstance(slow, str):
        assert fast == slow
        return
    assert not isinstance(fast, str)
    assert rows_of(fast) == rows_of(slow)
    for schema in SCHEMAS:
        assert arrow_of(fast, schema) == arrow_of(slow, schema)


@pytest.mark.parametrize("lists", [
    (), ((),), ((1, 2, 3),), ((0,) * 15, (127, -32)), tuple((i % 100, 1, 2) for i in range(70000)),
    ((1, 2, 3),) * 20, ((-1,),) * 16,
])
def test_the_one_byte_form_is_read_exactly(lists):
    column = _small_int_lists(lists)
    if not lists:
        assert column is None
        return
    assert column is not None
    assert column.tuples() == list(lists)


@pytest.mark.parametrize("lists", [
    ((128,),), ((-33,),), ((0,) * 16,), ((True,),), ((1, (2,)),), ((1.0,),), (("a",),), ((None,),),
    ((2**64 - 1,),), ((1,), 2), (((1,),),),
])
def test_anything_else_is_left_to_the_general_path(lists):
    assert _small_int_lists(lists) is None


def topic_created(assignment, topic="topic-ä" * 9, header=(7, 2**40, -1, 2**62, 300)):
    return (R.TopicCreated.KIND, R.SCHEMA_VERSION, *header, topic, assignment, (("a", "b"),))


@pytest.mark.parametrize("assignment", [
    tuple((i % 100, 1, 2) for i in range(64)), tuple((i % 128,) * (i % 16) for i in range(300)),
    tuple((-32, -1, 0, 127) for _ in range(70000)),
])
def test_an_assignment_in_the_one_byte_form_is_read_from_its_bytes(assignment):
    data = memoryview(msgpack.packb(topic_created(assignment), use_bin_type=True) + b"\x93\x01\x02\x03")
    column = _topic_assignment_bytes(data, len(assignment))
    assert column is not None and column.tuples() == list(assignment)


@pytest.mark.parametrize("assignment", [
    tuple((1, 2, 3) for _ in range(63)) + ((128,),), tuple((1,) * 16 for _ in range(64)),
    tuple((1, 2) for _ in range(63)) + ((-33,),), tuple((1, 2) for _ in range(63)) + ((1, (2,)),),
    tuple((1, 2) for _ in range(63)) + ((True,),), tuple((1, 2) for _ in range(63)) + (("a",),),
])
def test_an_assignment_in_another_form_is_not_read_from_its_bytes(assignment):
    data = memoryview(msgpack.packb(topic_created(assignment), use_bin_type=True))
    assert _topic_assignment_bytes(data, len(assignment)) is None


# --- end to end: logs whose TopicCreated records sit in row batches and beside columnar batches -------------

def _log_records(offset: int = 0) -> list:
    created = R.TopicCreated.make(offset=offset, controller_id=1, controller_epoch=3, timestamp_ms=5, topic="big",
                                  assignment=tuple((i % 7, (i + 1) % 7, (i + 2) % 7)[:1 + i % 3] for i in range(300)),
                                  configs=())
    wide = R.TopicCreated.make(offset=offset + 1, topic="wide", assignment=tuple((200 + i, i) for i in range(80)),
                               configs=())
    added = R.PartitionsAdded.make(offset=offset + 2, controller_id=1, controller_epoch=3, topic="big",
                                   assignment=tuple((300 + i, (i % 5,)) for i in range(70)))
    return [created, wide, added]


def _transitions(first: int, n: int):
    from events.columns import ColumnBatch
    return ColumnBatch.from_records([
        R.ReplicaTransition(R.ReplicaTransition.KIND, R.SCHEMA_VERSION, first + i, 1, 3, 6, 0, "big", i, i % 7, 1, 2)
        for i in range(n)])


@pytest.mark.parametrize("columnar", [False, True])
def test_logs_give_one_row_per_assigned_partition(tmp_path, monkeypatch, columnar):
    import audit.log_rows as log_rows
    from audit.log_rows import discover_segments, read_log_rows
    from audit.rows import TOPIC_CREATED
    from audit.spark_source import arrow_batches
    from events.log import FsyncPolicy, LogWriter
    records = _log_records(1 if columnar else 0)
    with LogWriter(tmp_path / "log", fsync=FsyncPolicy.none(), batch_records=100) as writer:
        if columnar:
            writer.append_columns(_transitions(0, 1))
        for r in records:
            writer.append(r)
        if columnar:
            writer.append_columns(_transitions(4, 5))
    expected = [(r.topic, r.offset, p, list(reps)) for r in records
                for p, reps in (enumerate(r.assignment) if type(r) is R.TopicCreated else r.assignment)]
    read_from_bytes = []
    original = log_rows._topic_assignment_bytes
    monkeypatch.setattr(log_rows, "_topic_assignment_bytes",
                        lambda *a: read_from_bytes.append(original(*a)) or read_from_bytes[-1])
    rows = [r for r in read_log_rows([tmp_path / "log"]) if r.kind == TOPIC_CREATED]
    assert [(r.topic, r.seq, r.partition, r.replicas) for r in rows] == expected
    assert [c is not None for c in read_from_bytes] == [True, False]   # "wide": replica 200 is two bytes
    for dictionary in (False, True):
        table = pa.Table.from_batches([b for ref in discover_segments([str(tmp_path / "log")])
                                       for b in arrow_batches(ref, dictionary=dictionary)])
        got = [(d["topic"], d["seq"], d["partition"], d["replicas"]) for d in table.to_pylist()
               if d["kind"] == TOPIC_CREATED]
        assert got == expected
