"""The vectorised decoder of row batches (audit.row_columns) against the record-tuple path it falls back to: the
same audit rows, the same Arrow batches, the same errors, on logs of our engine and on random records of every
integer width, strings, int lists, and values outside the fast path."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_audit_checks import random_history

from audit.log_rows import CHUNK_RECORDS, LOCAL_CHUNK_RECORDS, chunk_rows, discover_segments, iter_segment_chunks
from audit.rows import arrow_schema
from audit.spark_source import arrow_batches
from controller.state_machine_harness import ScriptSpec, run_scripted
from events import records as R
from events.log import FsyncPolicy, LogError, LogWriter

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


def read(log, vectorised: bool, chunk: int = CHUNK_RECORDS):
    """(rows in log order, the Arrow table sorted by seq, used the fast path?) or the error raised."""
    try:
        rows, fast = [], False
        for ref in discover_segments([str(log)]):
            for c in iter_segment_chunks(ref, chunk, vectorised=vectorised):
                fast |= bool(c.row_groups)
                rows += chunk_rows(c)
        batches = [b for ref in discover_segments([str(log)]) for b in arrow_batches(ref, vectorised=vectorised)]
        table = pa.Table.from_batches(batches, schema=arrow_schema())
        table = table.take(pc.sort_indices(table, [("seq", "ascending"), ("position", "ascending"), ("partition", "ascending")]))
        return rows, table, fast
    except LogError as exc:
        return type(exc).__name__, str(exc)


def assert_same(log, chunk: int = CHUNK_RECORDS) -> bool:
    fast, slow = read(log, True, chunk), read(log, False, chunk)
    if isinstance(slow, tuple) and len(slow) == 2:
        assert fast == slow
        return False
    assert fast[0] == slow[0]
    assert fast[1].equals(slow[1])
    assert not slow[2]
    return fast[2]


@pytest.mark.parametrize("chunk", [CHUNK_RECORDS, LOCAL_CHUNK_RECORDS, 7])
def test_logs_of_our_engine_read_the_same(tmp_path, chunk):
    logs = []
    for seed in range(6):
        with LogWriter(tmp_path / f"h{seed}", fsync=FsyncPolicy.none(), batch_records=50 + seed * 40) as writer:
            random_history(seed, 60, writer.append)
        logs.append(tmp_path / f"h{seed}")
    with LogWriter(tmp_path / "s", fsync=FsyncPolicy.none(), segment_bytes=1 << 16, batch_records=100) as writer:
        run_scripted(ScriptSpec(brokers=5, partitions=150, kill=(1, 2), seed=3), writer.append)
    logs.append(tmp_path / "s")
    fast = [assert_same(log, chunk) for log in logs]
    assert fast[-1] and any(fast[:-1])    # the fast path was taken (random histories: few batches without
                                          # a record it leaves to the other path)


# --- random records ---------------------------------------------------------------------------------------

INT_EDGES = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1,
             -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63]
ints = st.one_of(st.sampled_from(INT_EDGES), st.integers(-2**63, 2**63 - 1), st.integers(-40, 300))
small = st.one_of(st.integers(-1, 6), ints, st.booleans())
text = st.one_of(st.sampled_from(["t", "topic-ä", "", "x" * 40, "y" * 300]), st.text(max_size=12))
int_lists = st.lists(st.one_of(st.integers(-1, 9), ints), max_size=5).map(tuple)


def body(cls):
    fields = {
        R.ReplicaTransition: [text, small, small, small, small],
        R.PartitionTransition: [text, small, small, small, int_lists, small, small, int_lists, small, small,
                                st.integers(0, 3)],
        R.LeaderAndIsrUpdated: [text, small, small, small, int_lists, small, small, small, small],
        R.TransitionFailed: [st.one_of(st.integers(0, 1), small), text, small, small, small, small, text, text],
        R.ControllerElected: [small],
        R.TopicDeletionRequested: [text],
        R.BrokerStarted: [small, text, small, st.one_of(st.none(), text)],
    }[cls]
    return st.tuples(*fields)


KINDS = [R.ReplicaTransition, R.PartitionTransition, R.LeaderAndIsrUpdated, R.TransitionFailed,
         R.ControllerElected, R.TopicDeletionRequested, R.BrokerStarted]
records = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(-1, 3), st.integers(-1, 2**40),
                             st.integers(0, 2**45), st.integers(-1, 50)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data(), header=records, batch=st.integers(1, 12))
def test_random_records_read_the_same(tmp_path_factory, data, header, batch):
    log = tmp_path_factory.mktemp("random")
    with LogWriter(log, fsync=FsyncPolicy.none(), batch_records=batch) as writer:
        for offset, (cls, cid, epoch, ts, cause) in enumerate(header):
            fields = data.draw(body(cls))
            writer.append(cls(cls.KIND, R.SCHEMA_VERSION, offset, cid, epoch, ts, cause, *fields))
    assert_same(log)
    assert_same(log, 3)
