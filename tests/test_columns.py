"""Columnar batches (events.columns) and how the log carries them (events.codec, events.segment,
events.log, events.journal): every columnar kind round-trips to exactly the records of the row form;
logs mixing row records and columnar batches read back in offset order; damage is found and named as
for row batches; logs of schema version 1 still read; the same batch always gives the same bytes."""
from __future__ import annotations

import os
import struct

import google_crc32c
import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import codec
from events.columns import (
    COLUMN_KINDS, EXT_COLUMNS, ColumnBatch, ColumnBatchError, DictColumn, ListColumn, arrow_schema, field_types,
    records_to_arrow,
)
from events.journal import Journal
from events.log import FsyncPolicy, LogCorruptError, LogReader, LogRecordError, LogWriter, read_log
from events.records import (
    HEADER_LEN, KINDS, SCHEMA_VERSION, LeaderAndIsrPartition, LeaderAndIsrUpdated, PartitionTransition,
    ReplicaTransition, RequestSent, StopReplicaPartition, TopicCreated, UpdateMetadataPartition,
)
from events.segment import BATCH_HEADER_SIZE, SEGMENT_HEADER_SIZE, encode_batch_header, encode_segment_header, \
    segment_name

# The kinds the brief names: transitions and requests with tuple and string fields.
TUPLE_AND_STRING_KINDS = [ReplicaTransition, PartitionTransition, LeaderAndIsrPartition, UpdateMetadataPartition,
                          StopReplicaPartition, LeaderAndIsrUpdated, RequestSent]
ALL_COLUMN_KINDS = [KINDS[k] for k in sorted(COLUMN_KINDS)]

# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------

INT_RANGES = [(0, 255), (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1), (-2, 7)]


@st.composite
def int_column(draw, n):
    lo, hi = draw(st.sampled_from(INT_RANGES))
    return draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))


@st.composite
def str_column(draw, n):
    pool = draw(st.lists(st.text(max_size=8), min_size=1, max_size=4))
    return draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))


@st.composite
def ints_column(draw, n):
    lo, hi = draw(st.sampled_from(INT_RANGES))
    return draw(st.lists(st.lists(st.integers(lo, hi), max_size=6).map(tuple), min_size=n, max_size=n))


def bool_column(n):
    return st.lists(st.booleans(), min_size=n, max_size=n)


COLUMN = {"int": int_column, "str": str_column, "ints": ints_column, "bool": bool_column}
header_strategy = st.tuples(st.integers(-1, 2**31), st.integers(0, 2**40), st.integers(-(2**63), 2**63 - 1),
                            st.integers(-1, 2**63 - 1))


@st.composite
def batch_spec(draw, cls, max_n=25, first_offset=None):
    """(cls, first offset, header, n, {field: list of values})."""
    n = draw(st.integers(1, max_n))
    first = draw(st.integers(0, 2**63 - max_n - 1)) if first_offset is None else first_offset
    header = draw(header_strategy)
    names = cls._fields[HEADER_LEN:]
    columns = {name: draw(COLUMN[t](n)) for name, t in zip(names, field_types(cls))}
    return cls, first, header, n, columns


def row_form(cls, first, header, n, columns) -> list:
    """The records the row form gives for the same values."""
    names = cls._fields[HEADER_LEN:]
    return [tuple.__new__(cls, (cls.KIND, SCHEMA_VERSION, first + i) + tuple(header)
                          + tuple(columns[name][i] for name in names)) for i in range(n)]


def assert_same_types(got: list, expected: list) -> None:
    for g, e in zip(got, expected):
        assert type(g) is type(e)
        for a, b in zip(g, e):
            assert type(a) is type(b), (a, b)
            if type(b) is tuple:
                assert [type(x) for x in a] == [type(x) for x in b]


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", TUPLE_AND_STRING_KINDS, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_batches_round_trip_to_the_row_form(cls, data):
    cls, first, header, n, columns = data.draw(batch_spec(cls, max_n=20))
    expected = row_form(cls, first, header, n, columns)
    batch = ColumnBatch.from_columns(cls, first, header, **columns)
    assert len(batch) == n and batch.kind == cls.KIND and batch.header == header
    records = batch.records()
    assert records == expected
    assert_same_types(records, expected)
    assert batch.raw_records() == [tuple(r) for r in expected]
    # The stored element, alone and through the codec beside the row form.
    element = batch.encode()
    assert element.code == EXT_COLUMNS
    decoded = ColumnBatch.decode(element.data)
    assert decoded == batch and decoded.records() == expected
    assert_same_types(decoded.records(), expected)
    payload = codec.encode_batch([batch])
    assert codec.decode_batch(payload) == codec.decode_batch(codec.encode_batch(expected)) == expected
    assert list(codec.decode_raw(payload)) == [tuple(r) for r in expected]
    assert codec.decode_elements(payload) == [batch]
    # Arrow, from the arrays.
    table = batch.to_arrow()
    assert table.schema.equals(arrow_schema(cls))
    as_lists = [{k: list(v) if isinstance(v, tuple) else v for k, v in r._asdict().items()} for r in expected]
    assert table.to_pylist() == as_lists
    assert records_to_arrow(cls, expected).to_pylist() == as_lists


@pytest.mark.parametrize("cls", ALL_COLUMN_KINDS, ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_columnar_kind_round_trips(cls, data):
    cls, first, header, n, columns = data.draw(batch_spec(cls, max_n=6))
    expected = row_form(cls, first, header, n, columns)
    batch = ColumnBatch.from_columns(cls, first, header, n=n, **columns)
    assert codec.decode_batch(codec.encode_batch([batch])) == expected
    assert ColumnBatch.from_records(expected) == batch


def test_columns_from_numpy_dictionaries_and_lists_give_the_same_bytes_as_python_lists():
    n = 1000
    rng = np.random.default_rng(3)
    topics = [f"topic-{i}" for i in range(7)]
    codes = rng.integers(0, 7, n).astype(np.int32)
    lengths = rng.integers(0, 4, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.integers(0, 100, int(offsets[-1]))
    ints = {f: rng.integers(-5, 5000, n) for f in ("partition", "leader", "leader_epoch", "partition_epoch")}
    small = {f: rng.integers(0, 4, n) for f in ("from_state", "to_state", "recovery_state", "election")}
    arrays = ColumnBatch.from_columns(
        PartitionTransition, 10, (1, 2, 3, 4), topic=DictColumn(tuple(topics), codes),
        replicas=ListColumn(offsets, values), isr=ListColumn(offsets, values), **ints, **small)
    flat = values.tolist()
    tuples = [tuple(flat[a:b]) for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    lists = ColumnBatch.from_columns(
        PartitionTransition, 10, (1, 2, 3, 4), topic=[topics[c] for c in codes.tolist()], replicas=tuples,
        isr=tuples, **{k: v.tolist() for k, v in ints.items()}, **{k: v.tolist() for k, v in small.items()})
    # The dictionary given is kept in its order; built from strings it is in order of first appearance.
    assert arrays.records() == lists.records() and arrays == lists
    assert ColumnBatch.from_records(lists.records()).encode() == lists.encode()
    assert lists.encode() == lists.encode() == ColumnBatch.decode(lists.encode()).encode()  # same batch, same bytes


def test_dtypes_are_chosen_per_column_and_recorded():
    batch = ColumnBatch.from_columns(
        ReplicaTransition, 0, (-1, 0, 0, -1), topic=["a", "b", "a"], partition=[0, 70000, 1],
        replica=[1, 2, 2**40], from_state=[1, 2, 3], to_state=[7, 7, 7])
    assert [c.dtype.str for c in batch.columns[1:]] == ["<i4", "<i8", "|u1", "|u1"]
    assert batch.column("topic").dictionary == ("a", "b") and batch.column("topic").codes.tolist() == [0, 1, 0]
    tags = [c[:2] if c[0] == "int" else c[:1] for c in msgpack.unpackb(batch.encode().data)[8]]
    assert tags == [["str"], ["int", "i4"], ["int", "i8"], ["int", "u1"], ["int", "u1"]]
    with pytest.raises(ValueError):
        batch.column("partition")[0] = 5   # the arrays are the batch's own, read-only


def test_slices_hold_the_records_they_cover():
    recs = row_form(PartitionTransition, 100, (1, 2, 3, 4), 6, {
        "topic": list("abcabc"), "partition": list(range(6)), "from_state": [1] * 6, "to_state": [2] * 6,
        "replicas": [(1,), (), (1, 2), (3, 4, 5), (), (6,)], "leader": [1] * 6, "leader_epoch": [0] * 6,
        "isr": [(), (1,), (2,), (), (1, 2, 3), ()], "partition_epoch": [0] * 6, "recovery_state": [0] * 6,
        "election": [0] * 6})
    batch = ColumnBatch.from_records(recs)
    for start in range(7):
        for stop in range(start, 7):
            part = batch.slice(start, stop)
            assert part.records() == recs[start:stop]
            if stop > start:
                assert ColumnBatch.decode(part.encode()).records() == recs[start:stop]
                assert part.to_arrow().to_pylist() == batch.to_arrow().slice(start, stop - start).to_pylist()


# ---------------------------------------------------------------------------------------------
# Building and decoding errors
# ---------------------------------------------------------------------------------------------

def test_columns_that_do_not_make_a_batch_are_refused():
    good = {"topic": ["t"], "partition": [0], "replica": [1], "from_state": [1], "to_state": [2]}
    make = ColumnBatch.from_columns
    with pytest.raises(ColumnBatchError, match="missing fields \\['to_state'\\]"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), **{k: v for k, v in good.items() if k != "to_state"})
    with pytest.raises(ColumnBatchError, match="unknown fields \\['extra'\\]"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), extra=[1], **good)
    with pytest.raises(ColumnBatchError, match="differ in length"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), **{**good, "replica": [1, 2]})
    with pytest.raises(ColumnBatchError, match="column topic: expected strings"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), **{**good, "topic": [3]})
    with pytest.raises(ColumnBatchError, match="column partition: expected ints"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), **{**good, "partition": ["0"]})
    with pytest.raises(ColumnBatchError, match="outside the int64 range"):
        make(ReplicaTransition, 0, (1, 1, 1, 1), **{**good, "partition": [2**64]})
    with pytest.raises(ColumnBatchError, match="header must be 4 ints"):
        make(ReplicaTransition, 0, (1, 1, 1), **good)
    with pytest.raises(TypeError, match="TopicCreated has no columnar form"):
        make(TopicCreated, 0, (1, 1, 1, 1), topic=["t"], assignment=[((1,),)], configs=[()])


def _element(kind=ReplicaTransition.KIND, v=SCHEMA_VERSION, first=0, n=2, columns=None):
    if columns is None:
        columns = [["str", ["t"], np.zeros(n, "<i4").tobytes()], ["int", "u1", bytes(n)], ["int", "i4", bytes(4 * n)],
                   ["int", "u1", bytes([1] * n)], ["int", "u1", bytes([2] * n)]]
    return msgpack.ExtType(EXT_COLUMNS, msgpack.packb([kind, v, first, 1, 2, 3, 0, n, columns]))


@pytest.mark.parametrize("element, message", [
    (_element(), None),
    (_element(kind=TopicCreated.KIND), "unknown or non-columnar kind 3"),
    (_element(v=1), "schema version 1"),
    (_element(n=0), "malformed header"),
    (_element(columns=[]), "has 0 columns, expected 5"),
    (_element(columns=[["int", "u1", b"\0\0"]] * 5), "column topic: expected a 'str' column"),
    (_element(columns=[["str", ["t"], bytes(8)], ["int", "u2", bytes(4)]] + [["int", "u1", bytes(2)]] * 3),
     "column partition: unknown dtype 'u2'"),
    (_element(columns=[["str", ["t"], bytes(8)], ["int", "i4", bytes(6)]] + [["int", "u1", bytes(2)]] * 3),
     "column partition: 6 bytes of i4, expected 2 values"),
    (_element(columns=[["str", ["t"], np.array([0, 1], "<i4").tobytes()]] + [["int", "u1", bytes(2)]] * 4),
     "column topic: dictionary codes outside 0..0"),
    (_element(columns=[["str", [1], bytes(8)]] + [["int", "u1", bytes(2)]] * 4),
     "column topic: the dictionary must be an array of strings"),
    (msgpack.ExtType(EXT_COLUMNS, b"\xc1"), "not valid msgpack"),
    (msgpack.ExtType(7, b""), "ext type 7 is not a columnar batch"),
])
def test_columnar_elements_that_break_the_format_are_named(element, message):
    payload = msgpack.packb([element])
    if message is None:
        assert len(codec.decode_batch(payload)) == 2
        return
    with pytest.raises(codec.RecordDecodeError, match=message) as caught:
        codec.decode_batch(payload)
    assert caught.value.index == 0
    with pytest.raises(codec.RecordDecodeError, match=message):
        codec.decode_raw(payload)


def test_list_columns_with_bad_offsets_and_bools_other_than_0_1_are_refused():
    def stop_replica(delete: bytes):
        cols = [["int", "u1", bytes(2)], ["str", ["t"], bytes(8)], ["int", "u1", bytes(2)], ["int", "u1", bytes(2)],
                ["bool", delete]]
        return msgpack.packb([msgpack.ExtType(EXT_COLUMNS, msgpack.packb(
            [StopReplicaPartition.KIND, SCHEMA_VERSION, 0, 1, 2, 3, 0, 2, cols]))])
    assert [r.delete_partition for r in codec.decode_batch(stop_replica(b"\x00\x01"))] == [False, True]
    with pytest.raises(codec.RecordDecodeError, match="bool values must be 0 or 1"):
        codec.decode_batch(stop_replica(b"\x00\x02"))
    batch = ColumnBatch.from_columns(LeaderAndIsrUpdated, 5, (1, 2, 3, 4), topic=["t", "t"], partition=[0, 1],
                                     leader=[1, 2], leader_epoch=[0, 0], isr=[(1, 2), (2,)], partition_epoch=[0, 0],
                                     recovery_state=[0, 0], reason=[1, 1], replica=[-1, -1])
    inner = msgpack.unpackb(batch.encode().data)
    inner[8][4][2] = np.array([0, 2, 1], "<i4").tobytes()   # isr offsets that go back
    with pytest.raises(codec.RecordDecodeError, match="column isr: list offsets must rise from 0"):
        codec.decode_batch(msgpack.packb([msgpack.ExtType(EXT_COLUMNS, msgpack.packb(inner))]))


def test_an_older_reader_refuses_a_columnar_batch_rather_than_misreading_it():
    """What a version-1 reader did with any element that is not a record array: an error, never a record."""
    payload = codec.encode_batch([ColumnBatch.from_columns(ReplicaTransition, 0, (1, 2, 3, 0), topic=["t"],
                                                           partition=[0], replica=[1], from_state=[1], to_state=[2])])
    element = msgpack.unpackb(payload)[0]     # no ext hook: msgpack's ExtType, a pair (code, data)
    assert isinstance(element, msgpack.ExtType) and len(element) == 2 < HEADER_LEN


# ---------------------------------------------------------------------------------------------
# Logs mixing row records and columnar batches
# ---------------------------------------------------------------------------------------------

def _rows(first: int, n: int) -> list:
    """Row records of offsets first.. whose values depend on the offset alone (one header for all)."""
    return [ReplicaTransition.make(offset=o, controller_id=1, controller_epoch=2, timestamp_ms=100, cause_offset=0,
                                   topic=f"r{o % 3}", partition=o, replica=o % 4, from_state=1, to_state=2)
            for o in range(first, first + n)]


@st.composite
def mixed_log(draw):
    """A list of pieces — row record lists and columnar batches — with consecutive offsets."""
    pieces, offset = [], 0
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            n = draw(st.integers(1, 12))
            pieces.append(_rows(offset, n))
        else:
            cls = draw(st.sampled_from(TUPLE_AND_STRING_KINDS))
            cls, first, header, n, columns = draw(batch_spec(cls, max_n=30, first_offset=offset))
            pieces.append(ColumnBatch.from_columns(cls, first, header, **columns))
        offset += len(pieces[-1])
    return pieces


def _write_pieces(directory, pieces, **options) -> list:
    options.setdefault("fsync", FsyncPolicy.none())
    expected = []
    with LogWriter(directory, **options) as writer:
        for piece in pieces:
            if isinstance(piece, ColumnBatch):
                writer.append_columns(piece)
                expected.extend(piece.records())
            elif len(piece) % 2:
                writer.append_many(piece)
                expected.extend(piece)
            else:
                for r in piece:
                    writer.append(r)
                expected.extend(piece)
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(pieces=mixed_log(), batch_records=st.integers(1, 40), segment_bytes=st.sampled_from([300, 2000, 1 << 20]),
       start=st.integers(0, 200))
def test_a_log_mixing_rows_and_columnar_batches_reads_back_in_offset_order(tmp_path_factory, pieces, batch_records,
                                                                           segment_bytes, start):
    directory = tmp_path_factory.mktemp("mixed") / "log"
    expected = _write_pieces(directory, pieces, batch_records=batch_records, segment_bytes=segment_bytes)
    reader = LogReader(directory)
    assert read_log(directory) == expected
    assert [r.offset for r in expected] == list(range(len(expected)))
    assert list(reader.raw_records()) == [tuple(r) for r in expected]
    assert list(reader.records(start)) == expected[start:]
    assert list(reader.raw_records(start)) == [tuple(r) for r in expected[start:]]
    assert reader.end_offset == len(expected) and reader.torn_tail is None
    elements = list(reader.column_batches(start))
    assert [r for e in elements for r in (e.records() if isinstance(e, ColumnBatch) else [e])] == expected[start:]
    assert all(len(e) > 0 for e in elements if isinstance(e, ColumnBatch))
    for b in reader.iter_batches():
        assert b.first_timestamp_ms == expected[b.base_offset].timestamp_ms
        assert b.last_timestamp_ms == expected[b.end_offset - 1].timestamp_ms


def test_columnar_batches_share_written_batches_with_rows_and_are_never_split(tmp_path):
    d = tmp_path / "log"
    big = ColumnBatch.from_records(_rows(3, 25))
    with LogWriter(d, fsync=FsyncPolicy.none(), batch_records=10) as w:
        w.append_many(_rows(0, 3))
        assert w.next_offset == 3
        w.append_columns(big)          # 3 + 25 >= 10: written at once, with the three rows
        assert w.next_offset == 28
        small = ColumnBatch.from_records(_rows(28, 4))
        w.append_columns(small)        # 4 records buffered
        w.append_many(_rows(32, 8))    # 4 + 6 fill a batch, 2 stay
        w.append(_rows(40, 1)[0])
    batches = [(b.base_offset, b.record_count) for b in LogReader(d).iter_batches()]
    assert batches == [(0, 28), (28, 10), (38, 3)]
    elements = [[type(e).__name__ for e in b.elements()] for b in LogReader(d).iter_batches()]
    assert elements == [["ReplicaTransition"] * 3 + ["ColumnBatch"], ["ColumnBatch"] + ["ReplicaTransition"] * 6,
                        ["ReplicaTransition"] * 3]
    assert read_log(d) == _rows(0, 41)


def test_append_columns_checks_offsets_as_append_does(tmp_path):
    with LogWriter(tmp_path / "log", fsync=FsyncPolicy.none()) as w:
        w.append_many(_rows(0, 2))
        with pytest.raises(ValueError, match="first offset 3, expected 2"):
            w.append_columns(ColumnBatch.from_records(_rows(3, 2)))
        with pytest.raises(TypeError, match="takes a ColumnBatch"):
            w.append_columns(_rows(2, 2))
        assert w.next_offset == 2
        w.append_columns(ColumnBatch.from_columns(ReplicaTransition, 2, (1, 1, 1, 1), topic=[], partition=[],
                                                  replica=[], from_state=[], to_state=[]))   # empty: ignored
        w.append_columns(ColumnBatch.from_records(_rows(2, 2)))
        assert w.next_offset == 4
    assert read_log(tmp_path / "log") == _rows(0, 4)


def test_iter_arrow_gives_one_kind_from_columns_and_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    d = tmp_path / "log"
    batch = ColumnBatch.from_records(_rows(5, 20))
    with LogWriter(d, fsync=FsyncPolicy.none(), batch_records=7) as w:
        w.append_many(_rows(0, 5))
        w.append_columns(batch)
        w.append(RequestSent.make(offset=25, api=4, broker_id=1, broker_epoch=1, correlation_id=0, partition_count=1,
                                  leader_count=1, delete_count=0, live_brokers=(1, 2)))
        w.append_many(_rows(26, 3))
    reader = LogReader(d)
    table = pa.Table.from_batches(list(reader.iter_arrow(ReplicaTransition)))
    assert table.column("offset").to_pylist() == list(range(25)) + [26, 27, 28]
    assert table.to_pylist() == records_to_arrow(ReplicaTransition, _rows(0, 25) + _rows(26, 3)).to_pylist()
    assert pa.Table.from_batches(list(reader.iter_arrow(ReplicaTransition, 12))).column("offset")[0].as_py() == 12
    assert [b.num_rows for b in reader.iter_arrow(RequestSent.KIND)] == [1]
    with pytest.raises(TypeError, match="no columnar form"):
        list(reader.iter_arrow(TopicCreated))


# ---------------------------------------------------------------------------------------------
# Damage
# ---------------------------------------------------------------------------------------------

def _columnar_log(directory) -> tuple[list, list]:
    """Rows, then a columnar batch of 30 in a batch of its own; returns (records, batch spans)."""
    records = _write_pieces(directory, [_rows(0, 5), ColumnBatch.from_records(_rows(5, 30))], batch_records=5)
    spans = [(b.path, b.position, b.position + BATCH_HEADER_SIZE + len(b.payload))
             for b in LogReader(directory).iter_batches()]
    return records, spans


@pytest.mark.parametrize("cut", [1, BATCH_HEADER_SIZE - 1, BATCH_HEADER_SIZE + 10, -1])
def test_a_torn_columnar_batch_is_a_torn_tail(tmp_path, cut):
    d = tmp_path / "log"
    records, spans = _columnar_log(d)
    path, start, end = spans[-1]
    os.truncate(path, start + cut if cut > 0 else end + cut)
    reader = LogReader(d)
    assert list(reader.records()) == records[:5]
    assert reader.torn_tail is not None and reader.torn_tail.position == start
    with LogWriter(d, fsync=FsyncPolicy.none()) as w:
        assert w.recovery.truncated_at == start and w.next_offset == 5
        w.append_columns(ColumnBatch.from_records(_rows(5, 30)))
    assert read_log(d) == records


@pytest.mark.parametrize("where", ["header", "payload"])
def test_a_damaged_columnar_batch_is_corruption_naming_its_byte(tmp_path, where):
    d = tmp_path / "log"
    records, spans = _columnar_log(d)
    path, start, end = spans[-1]
    at = start + 3 if where == "header" else end - 7    # a byte of the last column's array
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x10]))
    reader = LogReader(d)
    got = []
    with pytest.raises(LogCorruptError) as caught:
        for r in reader.records():
            got.append(r)
    assert got == records[:5] and caught.value.path == path and caught.value.position == start
    with pytest.raises(LogCorruptError):
        list(LogReader(d).column_batches())
    with pytest.raises(LogCorruptError):
        LogWriter(d)


def test_a_checksum_valid_columnar_batch_that_does_not_decode_names_batch_and_offset(tmp_path):
    d = tmp_path / "log"
    d.mkdir()
    bad = _element(first=3, n=4, columns=[["str", ["t"], bytes(16)], ["int", "u1", bytes(4)],
                                          ["int", "i4", bytes(15)], ["int", "u1", bytes(4)], ["int", "u1", bytes(4)]])
    payload = msgpack.packb([*_rows(0, 3), bad])
    data = encode_segment_header(0)
    position = len(data)
    data += encode_batch_header(0, 7, payload, 100, 103) + payload
    (d / segment_name(0)).write_bytes(data)
    for read in (lambda r: list(r.records()), lambda r: list(r.raw_records()), lambda r: list(r.column_batches())):
        with pytest.raises(LogRecordError, match="column replica: 15 bytes of i4, expected 4 values") as caught:
            read(LogReader(d))
        assert caught.value.position == position and caught.value.offset == 3


def test_a_columnar_batch_with_the_wrong_offsets_or_count_is_an_error(tmp_path):
    d = tmp_path / "log"
    d.mkdir()
    payload = codec.encode_batch(_rows(0, 2) + [ColumnBatch.from_records(_rows(3, 4))])   # offset 2 is missing
    (d / segment_name(0)).write_bytes(encode_segment_header(0) + encode_batch_header(0, 6, payload, 0, 0) + payload)
    with pytest.raises(LogRecordError, match="offset 3, expected 2"):
        list(LogReader(d).records())
    with pytest.raises(LogRecordError, match="columnar batch of 4 records starting at record #2 of the batch has "
                                             "offset 3, expected 2"):
        list(LogReader(d).column_batches())
    payload = codec.encode_batch(_rows(0, 2) + [ColumnBatch.from_records(_rows(2, 4))])
    (d / segment_name(0)).write_bytes(encode_segment_header(0) + encode_batch_header(0, 5, payload, 0, 0) + payload)
    for read in (lambda r: list(r.records()), lambda r: list(r.column_batches())):
        with pytest.raises(LogRecordError, match="payload holds 6 records, batch header says 5"):
            read(LogReader(d))


# ---------------------------------------------------------------------------------------------
# Logs of schema version 1
# ---------------------------------------------------------------------------------------------

def write_v1_log(directory, records: list, batch_records: int = 4) -> list:
    """A log as version 1 wrote it, byte by byte: the records with v = 1, row batches only."""
    os.makedirs(directory, exist_ok=True)
    v1 = [r._replace(v=1) for r in records]
    data = encode_segment_header(0)
    for i in range(0, len(v1), batch_records):
        part = v1[i:i + batch_records]
        payload = msgpack.packb([list(r) for r in part], use_bin_type=True)
        data += encode_batch_header(i, len(part), payload, part[0].timestamp_ms, part[-1].timestamp_ms) + payload
    with open(os.path.join(directory, segment_name(0)), "wb") as f:
        f.write(data)
    return v1


def test_a_version_1_log_still_reads_and_takes_version_2_records(tmp_path):
    d = tmp_path / "v1"
    old = write_v1_log(d, _rows(0, 10) + [TopicCreated.make(offset=10, topic="t", assignment=((1, 2),), configs=())])
    assert old[0].v == 1 and struct.unpack(">H", open(d / segment_name(0), "rb").read()[4:6]) == (1,)
    assert read_log(d) == old and all(r.v == 1 for r in read_log(d))
    assert list(LogReader(d).raw_records()) == [tuple(r) for r in old]
    assert list(LogReader(d).column_batches()) == old
    with LogWriter(d, fsync=FsyncPolicy.none()) as w:
        w.append_many(_rows(11, 2))
        w.append_columns(ColumnBatch.from_records(_rows(13, 5)))
    records = read_log(d)
    assert records == old + _rows(11, 7) and [r.v for r in records] == [1] * 11 + [2] * 7


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------

def test_the_same_batches_give_the_same_log_bytes(tmp_path):
    def write(name):
        d = tmp_path / name
        _write_pieces(d, [_rows(0, 3), ColumnBatch.from_records(_rows(3, 50)), _rows(53, 4)], batch_records=8,
                      segment_bytes=600)
        return {p.name: p.read_bytes() for p in sorted(d.iterdir())}
    first, second = write("a"), write("b")
    assert first == second and len(first) > 1
    crc = google_crc32c.value(b"".join(first.values()))
    assert crc == google_crc32c.value(b"".join(write("c").values()))


# ---------------------------------------------------------------------------------------------
# The journal
# ---------------------------------------------------------------------------------------------

def _emit(journal: Journal) -> None:
    journal.set_writer(3, 9)
    journal.set_time(500)
    journal.input(TopicCreated, "t", ((1, 2), (2, 3), (3, 1)), ())
    journal.emit_columns(ReplicaTransition, topic=["t"] * 6, partition=np.repeat(np.arange(3), 2),
                         replica=[1, 2, 2, 3, 3, 1], from_state=np.ones(6, np.uint8), to_state=[2] * 6)
    journal.emit(ReplicaTransition, "t", 0, 1, 2, 3)
    journal.emit_columns(PartitionTransition, topic=DictColumn(("t",), np.zeros(3, np.int32)), partition=[0, 1, 2],
                         from_state=[0] * 3, to_state=[1] * 3, replicas=[(1, 2), (2, 3), (3, 1)], leader=[1, 2, 3],
                         leader_epoch=[0] * 3, isr=[(1, 2), (2, 3), (3, 1)], partition_epoch=[0] * 3,
                         recovery_state=[0] * 3, election=[1] * 3)
    journal.emit_columns(ReplicaTransition, topic=[], partition=[], replica=[], from_state=[], to_state=[])


def test_emit_columns_without_a_column_sink_gives_the_records_emit_rows_gives(tmp_path):
    by_rows = Journal()
    by_rows.set_writer(3, 9)
    by_rows.set_time(500)
    by_rows.input(TopicCreated, "t", ((1, 2), (2, 3), (3, 1)), ())
    by_rows.emit_rows(ReplicaTransition, [("t", p, r, 1, 2) for p, r in
                                          zip([0, 0, 1, 1, 2, 2], [1, 2, 2, 3, 3, 1])])
    by_rows.emit(ReplicaTransition, "t", 0, 1, 2, 3)
    by_rows.emit_rows(PartitionTransition, [("t", p, 0, 1, reps, reps[0], 0, reps, 0, 0, 1)
                                            for p, reps in enumerate([(1, 2), (2, 3), (3, 1)])])
    listed = Journal()
    _emit(listed)
    assert listed.records == by_rows.records and listed.next_offset == by_rows.next_offset == 11
    assert_same_types(listed.records, by_rows.records)
    sunk: list = []
    _emit(Journal(sunk.append))
    assert sunk == by_rows.records
    d = tmp_path / "log"
    with LogWriter(d, fsync=FsyncPolicy.none()) as w:
        journal = Journal(w.append, column_sink=w.append_columns)
        _emit(journal)
    assert read_log(d) == by_rows.records
    assert [type(e).__name__ for e in LogReader(d).column_batches()] == \
        ["TopicCreated", "ColumnBatch", "ReplicaTransition", "ColumnBatch"]


def test_emit_columns_reserves_nothing_when_the_columns_are_bad():
    journal = Journal()
    with pytest.raises(ColumnBatchError):
        journal.emit_columns(ReplicaTransition, topic=["t"], partition=[0, 1], replica=[1], from_state=[1],
                             to_state=[2])
    assert journal.next_offset == 0 and journal.records == []


# ---------------------------------------------------------------------------------------------
# The pieces the writer writes are the bytes msgpack writes
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 8, 15, 16, 17, 255, 256, 65535, 65536, 70000])
def test_msgpack_framing_is_msgpacks(size):
    from events.columns import _array_header, _bin_header, _ext_header
    data = b"x" * size
    assert msgpack.packb(data) == _bin_header(size) + data
    if size:
        assert msgpack.packb(msgpack.ExtType(EXT_COLUMNS, data)) == _ext_header(EXT_COLUMNS, size) + data
    assert msgpack.packb([0] * size) == _array_header(size) + b"\0" * size


@settings(max_examples=30, deadline=None)
@given(pieces=mixed_log(), split=st.integers(0, 40))
def test_payload_pieces_join_to_the_payload(pieces, split):
    elements = [e for p in pieces for e in ([p] if isinstance(p, ColumnBatch) else p)]
    elements = elements[:split] + elements[split:]
    assert b"".join(codec.encode_batch_pieces(elements)) == codec.encode_batch(elements)
    for e in elements:
        if isinstance(e, ColumnBatch):
            assert b"".join(e.encode_pieces()) == msgpack.packb(e.encode())
            assert b"".join(ColumnBatch.decode(e.encode()).encode_pieces()) == msgpack.packb(e.encode())


# ---------------------------------------------------------------------------------------------
# The format document
# ---------------------------------------------------------------------------------------------

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "event-log-format.md")


def _doc_section(title: str) -> str:
    text = open(DOC, encoding="utf-8").read()
    return text.split(title, 1)[1]


def test_the_documented_example_is_what_the_writer_writes():
    import re
    block = _doc_section("### Example").split("```", 2)[1]
    data = b""
    for line in block.splitlines():
        for token in re.findall(r'"[^"]*"|\S+', line):
            if token.startswith('"'):
                data += token[1:-1].encode()
            elif re.fullmatch(r"(?:[0-9a-f]{2})+", token):
                data += bytes.fromhex(token)
            else:
                break   # the comment
    batch = ColumnBatch.from_columns(ReplicaTransition, 5, (1, 3, 1000, 4), topic=["orders", "orders", "audit"],
                                     partition=[0, 1, 0], replica=[2, 2, 300], from_state=[1, 1, 1], to_state=[2, 2, 2])
    assert data == codec.encode_batch([batch]) and len(data) == 110


def test_the_documented_columnar_kinds_are_the_columnar_kinds():
    import re
    text = " ".join(_doc_section("**Kinds with a columnar form**").split("\n\n", 1)[0].split())
    inputs, outputs = re.search(r"inputs ([\d, ]+?) and outputs ([\d, ]+)\.", text).groups()
    documented = [int(k) for k in (inputs + ", " + outputs).split(", ")]
    assert documented == sorted(COLUMN_KINDS)
    listed = text.split('The "array of int" fields are: ', 1)[1].split(".", 1)[0]
    documented_fields = {(cls_name, field) for part in listed.split("; ") for cls_name, fields in [part.split(" ", 1)]
                         for field in re.findall(r"`(\w+)`", fields)}
    assert documented_fields == {(KINDS[k].__name__, f) for k in COLUMN_KINDS
                                 for f, t in zip(KINDS[k]._fields[HEADER_LEN:], COLUMN_KINDS[k]) if t == "ints"}
