"""The msgpack codec: every record kind round-trips exactly; bad payloads give clear errors."""
from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.codec import RecordDecodeError, decode_batch, decode_raw, encode_batch
from events.records import HEADER_LEN, KINDS, SCHEMA_VERSION, ReplicaTransition

ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small = st.integers(min_value=-2, max_value=2**31 - 1)
ids = st.tuples() | st.lists(small, max_size=6).map(tuple)
text = st.text(max_size=30)

SPECIAL = {
    ("TopicCreated", "assignment"): st.lists(ids, max_size=5).map(tuple),
    ("TopicCreated", "configs"): st.lists(st.tuples(text, text), max_size=4).map(tuple),
    ("PartitionsAdded", "assignment"): st.lists(st.tuples(small, ids), max_size=4).map(tuple),
    ("ReassignmentRequested", "partitions"): st.lists(st.tuples(text, small, st.none() | ids), max_size=4).map(tuple),
    ("ControlledShutdownResponded", "remaining"): st.lists(st.tuples(text, small), max_size=4).map(tuple),
    ("LeaderElectionResponded", "results"): st.lists(st.tuples(text, small, text, ints), max_size=4).map(tuple),
    ("ReassignmentResponded", "results"): st.lists(st.tuples(text, small, text), max_size=4).map(tuple),
}
BY_ANNOTATION = {"int": ints, "str": text, "bool": st.booleans(), "tuple": ids, "str | None": st.none() | text,
                 "tuple | None": st.none() | st.lists(st.tuples(text, small), max_size=4).map(tuple),
                 "bytes": st.binary(max_size=64)}


def _annotation(cls, field: str) -> str:
    a = cls.__annotations__[field]
    return getattr(a, "__forward_arg__", a)


def record_strategy(cls):
    fields = cls._fields[HEADER_LEN:]
    body = [SPECIAL[(cls.__name__, f)] if (cls.__name__, f) in SPECIAL else BY_ANNOTATION[_annotation(cls, f)]
            for f in fields]
    header = st.tuples(ints, small, small, ints, ints)  # offset, controller id, epoch, time, cause
    return st.builds(lambda h, b: tuple.__new__(cls, (cls.KIND, SCHEMA_VERSION) + h + b), header, st.tuples(*body))


any_record = st.one_of([record_strategy(cls) for cls in KINDS.values()])


@settings(max_examples=300)
@given(st.lists(any_record, max_size=20))
def test_every_record_kind_round_trips(records):
    decoded = decode_batch(encode_batch(records))
    assert decoded == records
    assert [type(r) for r in decoded] == [type(r) for r in records]
    assert list(decode_raw(encode_batch(records))) == [tuple(r) for r in records]


@pytest.mark.parametrize("cls", list(KINDS.values()), ids=lambda c: c.__name__)
def test_each_kind_is_covered_and_well_formed(cls):
    assert cls.KIND in KINDS and KINDS[cls.KIND] is cls
    assert all(f in cls.__annotations__ for f in cls._fields)


def test_make_builds_records_by_name():
    r = ReplicaTransition.make(offset=5, topic="t", partition=0, replica=1, from_state=2, to_state=3)
    assert r.kind == ReplicaTransition.KIND and r.v == SCHEMA_VERSION and r.offset == 5 and r.cause_offset == -1
    with pytest.raises(TypeError, match="missing fields"):
        ReplicaTransition.make(topic="t")


@pytest.mark.parametrize("payload, message", [
    (b"\xc1", "not valid msgpack"),
    (msgpack.packb({"a": 1}), "expected an array of records"),
    (msgpack.packb([[999, 1, 0, 0, 0, 0, 0]]), "unknown kind 999"),
    (msgpack.packb([[41, 3, 0, 0, 0, 0, 0, "t", 0, 1, 2, 3]]), "schema version 3"),
    (msgpack.packb([[41, 1, 0, 0, 0, 0, 0, "t"]]), "has 8 fields, expected 12"),
    (msgpack.packb([[41]]), "not an array of at least 7 fields"),
])
def test_bad_payloads_are_named(payload, message):
    with pytest.raises(RecordDecodeError, match=message):
        decode_batch(payload)


def test_a_batch_of_one_kind_is_checked_record_by_record_as_any_other():
    """decode_batch builds a one-kind batch in one pass; a record of it with a field of the wrong type, or the
    wrong length, is still found at its index."""
    import msgpack
    from events.codec import RecordDecodeError, decode_batch, encode_batch
    from events.records import ReplicaTransition
    recs = [ReplicaTransition.make(offset=i, topic="t", partition=i, replica=1, from_state=1, to_state=2)
            for i in range(10)]
    assert decode_batch(encode_batch(recs)) == recs
    for bad, what in (((*recs[5][:7], 9, *recs[5][8:]), "field topic is int"), (recs[5][:-1], "record #5")):
        payload = msgpack.packb([*recs[:5], bad, *recs[6:]], use_bin_type=True)
        with pytest.raises(RecordDecodeError, match=what) as info:
            decode_batch(payload)
        assert info.value.index == 5
