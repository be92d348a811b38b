"""``encode_topic_rows`` (a reassignment's topic znode written from the context's columns) gives the bytes
``encode_topic`` gives for the same assignment: Kafka's TopicZNode JSON, keys in Scala's mutable.Map order."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from controller.store.zk_data import encode_topic, encode_topic_rows
from statemachines.leader_and_isr import ReplicaAssignment

ids = st.lists(st.integers(0, 40), max_size=4, unique=True).map(tuple)


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, max_size=400), st.data(), st.sampled_from([None, "AAAAAAAAAAAAAAAAAAAAAA"]))
def test_rows_encode_as_the_assignment_map(replicas, data, topic_id):
    n = len(replicas)
    moving = data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=n, unique=True)) if n else []
    adding = {p: data.draw(ids) for p in moving}
    removing = {p: data.draw(ids) for p in moving}
    expected = encode_topic(topic_id, {p: ReplicaAssignment(replicas[p], adding.get(p, ()), removing.get(p, ()))
                                       for p in range(n)})
    assert encode_topic_rows(topic_id, replicas, adding, removing) == expected


def test_many_partitions_moving_at_once():
    replicas = [(p % 7, (p + 1) % 7, (p + 2) % 7) for p in range(3000)]
    adding = {p: ((p + 3) % 7,) for p in range(0, 3000, 2)}
    removing = {p: (p % 7,) for p in reversed(range(0, 3000, 2))}     # insertion order does not matter
    expected = encode_topic("id", {p: ReplicaAssignment(replicas[p], adding.get(p, ()), removing.get(p, ()))
                                   for p in range(3000)})
    assert encode_topic_rows("id", replicas, adding, removing) == expected
