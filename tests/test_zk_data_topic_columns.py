"""Topic znodes as columns (zk_data): ``encode_topic_matrix`` writes the bytes ``encode_topic`` writes,
``decode_topic_columns`` reads what ``decode_topic`` reads, and the columns remembered for bytes this process
wrote give ``decode_topic`` the same dict as a JSON parse."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.store import zk_data
from controller.store.zk_data import (
    decode_topic, decode_topic_columns, encode_topic, encode_topic_matrix, java_hash,
)
from statemachines.leader_and_isr import ReplicaAssignment


def _forget():
    zk_data._TOPIC_COLUMNS.clear()
    zk_data._TOPIC_COLUMNS_ROWS[0] = 0


@settings(max_examples=60, deadline=None)
@given(n=st.one_of(st.integers(0, 40), st.sampled_from([100, 767, 768, 3000])), rf=st.integers(0, 4),
       top=st.sampled_from([4, 30, 2000, 0x7FFFFFFF]), topic_id=st.sampled_from([None, "AAAAAAAAAAAAAAAAAAAAAQ"]),
       seed=st.integers(0, 1000))
def test_a_matrix_encodes_as_the_dict_and_reads_back(n, rf, top, topic_id, seed):
    m = np.random.default_rng(seed).integers(0, top, size=(n, rf), endpoint=True).astype(np.int64)
    assignment = {p: ReplicaAssignment(tuple(r)) for p, r in enumerate(m.tolist())}
    _forget()
    data = encode_topic_matrix(topic_id, m)
    assert data == encode_topic(topic_id, assignment)
    remembered = decode_topic("t", data)
    _forget()
    parsed = decode_topic("t", data)
    assert remembered == parsed and list(remembered.assignment) == list(parsed.assignment)
    cols = decode_topic_columns(data)
    assert cols.topic_id == topic_id and cols.partitions.tolist() == list(range(n))
    assert cols.replicas.shape == (n, rf if n else 0) or not n
    if n and rf:
        assert (cols.replicas == m).all()
    assert not cols.replicas.flags.writeable


def test_the_partition_key_order_is_scala_mutable_map_order():
    n = 5000
    order, prefixes = zk_data._consecutive_key_prefixes(n)
    expected = zk_data.scala_mutable_order([str(p) for p in range(n)], java_hash, 16)
    assert [str(p) for p in order.tolist()] == expected
    assert prefixes[:3] == [f'"{p}":' for p in expected[:3]]
    ids = np.array([0, 9, 10, 99, 100, 12345, 999999999, 1000000000, 0x7FFFFFFF], dtype=np.int64)
    assert zk_data._java_hash_of_ids(ids).tolist() == [java_hash(str(p)) for p in ids.tolist()]


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 40), st.tuples(
    st.lists(st.integers(0, 9), max_size=4), st.lists(st.integers(0, 9), max_size=2),
    st.lists(st.integers(0, 9), max_size=2)), max_size=12), st.sampled_from([None, "id"]))
def test_columns_of_any_body_read_as_decode_topic(parts, topic_id):
    body = {"version": 3, "partitions": {str(p): r for p, (r, _, _) in parts.items()},
            "adding_replicas": {str(p): a for p, (_, a, _) in parts.items() if a},
            "removing_replicas": {str(p): d for p, (_, _, d) in parts.items() if d}}
    if topic_id is not None:
        body["topic_id"] = topic_id
    data = json.dumps(body).encode()
    _forget()
    cols = decode_topic_columns(data)
    ref = decode_topic("t", json.dumps(body).encode())   # other bytes of equal content: not the remembered ones
    assert cols.topic_id == ref.topic_id
    strip = lambda row: tuple(x for x in row if x >= 0)  # noqa: E731
    got = {("t", p): (strip(r), strip(a), strip(d)) for p, r, a, d in zip(
        cols.partitions.tolist(), cols.replicas.tolist(), cols.adding.tolist(), cols.removing.tolist())}
    assert got == {tp: tuple(ra) for tp, ra in ref.assignment.items()}
    assert decode_topic("t", data) == ref              # from the remembered columns


def test_bodies_the_columns_cannot_hold():
    assert decode_topic_columns(b"not json") is None and decode_topic_columns(None) is None
    with pytest.raises(ValueError, match="cannot be read as columns"):
        decode_topic_columns(b'{"partitions":{"0":[-1,2]}}')
    with pytest.raises(ValueError, match="cannot be read as columns"):
        decode_topic_columns(b'{"partitions":{"0":["x"]}}')
    _forget()
    data = encode_topic_matrix(None, np.array([[3, -1]]))   # written, but not remembered: read by parsing
    assert data not in zk_data._TOPIC_COLUMNS
    assert decode_topic("t", data).assignment[("t", 0)].replicas == (3, -1)
    with pytest.raises(ValueError, match="integer matrix"):
        encode_topic_matrix(None, np.array([1.5]))


def _parsed_columns(data: bytes):
    """decode_topic_columns by the JSON parse alone (the array reader switched off)."""
    _forget()
    reader = zk_data._written_topic_columns
    zk_data._written_topic_columns = lambda data: None
    try:
        return decode_topic_columns(data)
    except ValueError as e:
        return type(e)
    finally:
        zk_data._written_topic_columns = reader


def _same_columns(a, b) -> bool:
    if a is None or b is None or isinstance(a, type) or isinstance(b, type):
        return a is b
    return (a.topic_id == b.topic_id and all(x.shape == y.shape and (x == y).all()
                                             for x, y in zip(a[1:], b[1:])))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 300), rf=st.integers(1, 4), top=st.sampled_from([9, 30, 2000, 0x7FFFFFFF]),
       topic_id=st.sampled_from([None, "AAAAAAAAAAAAAAAAAAAAAQ", "x-_9"]), seed=st.integers(0, 1000),
       edit=st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.sampled_from(
           [b"", b" ", b"0", b"1", b"-", b",", b'"', b"]", b"[", b"true", b"1.5", b"{}", b"\xff"]))))
def test_the_array_reader_reads_what_the_json_parse_reads_and_nothing_else(n, rf, top, topic_id, seed, edit):
    """A body as encode_topic_matrix writes it is read as arrays, to the same columns as the JSON parse; a body
    changed anywhere (a byte replaced or inserted) is read as the JSON parse reads it, or refused as it is."""
    m = np.random.default_rng(seed).integers(0, top, size=(n, rf), endpoint=True).astype(np.int64)
    data = encode_topic_matrix(topic_id, m)
    if edit is None:
        _forget()
        cols = zk_data._written_topic_columns(data)
        assert cols is not None and (cols.replicas == m).all() and cols.topic_id == topic_id
    else:
        at, piece = edit
        at %= len(data)
        replace = seed % 2 == 0
        data = data[:at] + piece + data[at + (1 if replace else 0):]
    _forget()
    try:
        got = decode_topic_columns(data)
    except ValueError as e:
        got = type(e)
    assert _same_columns(got, _parsed_columns(data))


def test_a_reassigned_topic_or_rows_of_different_lengths_are_left_to_the_json_parse():
    ragged = encode_topic(None, {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((3,))})
    moving = encode_topic(None, {0: ReplicaAssignment((1, 2, 3), (3,), (1,)), 1: ReplicaAssignment((2, 3))})
    for data in (ragged, moving):
        assert zk_data._written_topic_columns(data) is None
        _forget()
        assert _same_columns(decode_topic_columns(data), _parsed_columns(data))


def test_a_body_whose_first_key_lost_its_quote_is_not_read_as_arrays():
    """Found by the hypothesis test above: '{"partitions":{ 0":[...]}' is not JSON, and not the encoding."""
    data = encode_topic_matrix("x-_9", np.array([[1453, 1887, 1763, 1023]]))
    broken = data.replace(b'{"0":', b'{ 0":')
    assert broken != data
    _forget()
    assert zk_data._written_topic_columns(broken) is None
    assert decode_topic_columns(broken) is None
