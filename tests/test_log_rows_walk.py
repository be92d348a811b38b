"""The walk of a batch payload that decodes columnar batches where they lie (audit.log_rows._walk_elements)
against msgpack's Unpacker reading the whole payload (_unpack_elements): the same elements, positions and ext
count whenever the walk gives an answer, and an error wherever it raises — on payloads of records, columnar
batches, other ext values of every size form, nested exts, and damaged payloads (random bytes, cut,
changed, extended)."""
from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.log_rows import _ExtHook, _unpack_elements, _walk_elements
from events import records as R
from events.columns import EXT_COLUMNS, ColumnBatch

small = st.integers(-40, 300)


def replica_transitions(n: int, first: int):
    return [R.ReplicaTransition(R.ReplicaTransition.KIND, R.SCHEMA_VERSION, first + i, 1, 2, 3, 0, "t", i % 7,
                                i % 3, 1, 2) for i in range(n)]


columnar = st.builds(lambda n, first: ColumnBatch.from_records(replica_transitions(n, first)).encode(),
                     st.integers(1, 40), st.integers(0, 100))
broken_columnar = st.builds(lambda ext, cut: msgpack.ExtType(EXT_COLUMNS, ext.data[:cut]), columnar,
                            st.integers(0, 60))
other_ext = st.builds(msgpack.ExtType, st.integers(0, 127),
                      st.one_of(st.sampled_from([1, 2, 4, 8, 16, 0, 3, 255, 256, 65535, 65536]),
                                st.integers(0, 40)).map(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)))
record = st.tuples(st.integers(0, 30), st.integers(0, 2), st.integers(0, 2**40), small, small,
                   st.one_of(small, st.text(max_size=4),
                             st.lists(st.one_of(small, st.tuples(small, small)), max_size=5).map(tuple),
                             st.binary(max_size=4), st.none(), st.booleans(), other_ext, columnar))
element = st.one_of(record, record, columnar, columnar, broken_columnar, other_ext, small, st.text(max_size=3))


@st.composite
def payloads(draw):
    elements = draw(st.lists(element, max_size=14))
    payload = msgpack.packb(elements, use_bin_type=True)
    damage = draw(st.sampled_from(["none", "none", "cut", "byte", "extend", "count", "random"]))
    if damage == "cut" and payload:
        payload = payload[:draw(st.integers(0, len(payload) - 1))]
    elif damage == "byte" and payload:
        i = draw(st.integers(0, len(payload) - 1))
        payload = payload[:i] + bytes([draw(st.integers(0, 255))]) + payload[i + 1:]
    elif damage == "extend":
        payload += draw(st.binary(min_size=1, max_size=6))
    elif damage == "count":
        payload = msgpack.packb(elements + draw(st.lists(element, min_size=1, max_size=2)),
                                use_bin_type=True)[:len(payload) + draw(st.integers(-3, 3))]
    elif damage == "random":
        payload = draw(st.binary(max_size=40))
    return payload


def reference(payload: bytes):
    hook = _ExtHook()
    try:
        return _unpack_elements(payload, hook), hook.count
    except Exception:
        return "error"


@settings(max_examples=500, deadline=None)
@given(payloads())
def test_the_walk_reads_what_the_unpacker_reads(payload):
    hook = _ExtHook()
    try:
        walked = _walk_elements(payload, hook)
    except Exception:
        assert reference(payload) == "error"
        return
    if walked is None:
        return
    expected = reference(payload)
    assert expected != "error"
    (start, ends, elements), count = expected
    assert (walked[0], walked[1], hook.count) == (start, ends, count)
    assert len(walked[2]) == len(elements)
    for got, want in zip(walked[2], elements):
        assert type(got) is type(want) and got == want


def test_columnar_batches_are_views_of_the_payload():
    ext = ColumnBatch.from_records(replica_transitions(5, 0)).encode()
    payload = msgpack.packb([ext, (1, 2), ext], use_bin_type=True)
    hook = _ExtHook()
    start, ends, elements = _walk_elements(payload, hook)
    assert hook.count == 2 and start == 1 and ends[-1] == len(payload)
    assert elements[0] == elements[2] == ColumnBatch.decode(ext) and elements[1] == (1, 2)
    assert elements[0].column("partition").base is not None


@pytest.mark.parametrize("payload", [b"", b"\x80", b"\xdc\x00", b"\xc0"])
def test_a_payload_that_is_not_an_array_is_left_to_the_unpacker(payload):
    assert _walk_elements(payload, _ExtHook()) is None
