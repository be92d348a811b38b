"""Spark smoke test: the legal-transition table joins against transitions read from our event log.

It proves the PySpark + Java set-up works on this machine and that the tables derived from the
state-machine definition serve the audit as they are (the full audit is built on this). The ``spark``
fixture is the session-wide one of conftest.py.
"""
from __future__ import annotations

import pytest

from controller.state_machine_harness import ScriptSpec, run_scripted
from events.log import LogReader, LogWriter
from events.records import ReplicaTransition
from statemachines.states import legal_transition_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_transitions_of_a_run_are_all_legal_and_a_planted_one_is_caught(spark, tmp_path):
    with LogWriter(tmp_path) as writer:
        run_scripted(ScriptSpec(brokers=4, partitions=12, kill=(1, 2)), writer.append)
    rows = [(r.offset, r.topic, r.partition, r.replica, r.from_state, r.to_state)
            for r in LogReader(tmp_path).records() if type(r) is ReplicaTransition]
    rows.append((10**9, "planted", 0, 1, 2, 5))  # OnlineReplica -> ReplicaDeletionSuccessful: illegal
    transitions = spark.createDataFrame(rows, "offset long, topic string, partition int, replica int, "
                                              "from_state int, to_state int")
    legal = spark.createDataFrame([r for r in legal_transition_rows() if r[0] == "replica"],
                                  "machine string, from_name string, to_name string, from_state int, to_state int")
    illegal = transitions.join(legal, ["from_state", "to_state"], "left_anti").collect()
    assert [(r.topic, r.from_state, r.to_state) for r in illegal] == [("planted", 2, 5)]
    assert transitions.count() == len(rows) > 50
