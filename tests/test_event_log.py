"""Tests of the segmented event log (events.log, events.segment): round trips, offsets, fsync
policies, torn-tail recovery and corruption detection."""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import struct
import tempfile

import google_crc32c
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import codec
from events.log import (
    FsyncPolicy, LogCorruptError, LogError, LogNotFoundError, LogReader, LogRecordError, LogWriter,
    Recovery, TornTail, read_log,
)
from events.records import (
    BrokerSessionExpired, BrokerStarted, ConfigChanged, ControllerElected, ReplicaTransition,
    TopicCreated,
)
from events.segment import (
    BATCH_HEADER_SIZE, SEGMENT_HEADER_SIZE, encode_batch_header, encode_segment_header, segment_name,
)


def record(offset: int):
    """A small record of one of several kinds, depending on the offset."""
    ts = 1_000 + offset // 3
    k = offset % 7
    if k == 1:
        return BrokerStarted.make(offset=offset, timestamp_ms=ts, cause_offset=offset, broker_id=offset % 5,
                                  host=f"broker-{offset % 5}", port=9092, rack=None if offset % 2 else "rack-a")
    if k == 2:
        return TopicCreated.make(offset=offset, timestamp_ms=ts, cause_offset=offset, topic="orders",
                                 assignment=((1, 2, 3), (2, 3, 1)), configs=(("cleanup.policy", "compact"),))
    if k == 3:
        return ConfigChanged.make(offset=offset, timestamp_ms=ts, cause_offset=offset, entity_type="topic",
                                  entity_name="orders", name="unclean.leader.election.enable",
                                  value=None if offset % 2 else "true")
    if k == 4:
        return BrokerSessionExpired.make(offset=offset, timestamp_ms=ts, cause_offset=offset, broker_id=2)
    if k == 5:
        return ControllerElected.make(offset=offset, controller_id=1, controller_epoch=3, timestamp_ms=ts,
                                      cause_offset=offset, epoch_zk_version=offset)
    return ReplicaTransition.make(offset=offset, controller_id=1, controller_epoch=3, topic=f"t{offset % 3}",
                                  partition=offset % 5, replica=offset % 4, from_state=2, to_state=3,
                                  timestamp_ms=ts, cause_offset=offset - 1)


def records(start: int, n: int) -> list:
    return [record(o) for o in range(start, start + n)]


def write_log(directory, n: int, *, start: int = 0, **options) -> list:
    options.setdefault("fsync", FsyncPolicy.none())
    recs = records(start, n)
    with LogWriter(directory, start_offset=start, **options) as w:
        for r in recs:
            w.append(r)
    return recs


def snapshot(directory) -> dict:
    """File name -> sha256 of its bytes."""
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))}


def segment_paths(directory) -> list[str]:
    return [path for path, _ in LogReader(directory).segments()]


def batch_spans(directory) -> list[tuple[str, int, int]]:
    """(segment path, start, end) of every batch."""
    return [(b.path, b.position, b.position + BATCH_HEADER_SIZE + len(b.payload))
            for b in LogReader(directory).iter_batches()]


def flip(path: str, position: int, mask: int = 0xFF) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ mask]))


def append_bytes(path: str, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# ---------------------------------------------------------------------------------------------
# Round trips and offsets
# ---------------------------------------------------------------------------------------------

def test_round_trip_across_segments_and_batches(tmp_path):
    d = tmp_path / "log"
    recs = write_log(d, 250, segment_bytes=700, batch_records=7)
    reader = LogReader(d)
    segments = reader.segments()
    assert len(segments) >= 4
    assert read_log(d) == recs
    assert list(reader.raw_records()) == [tuple(r) for r in recs]
    assert reader.end_offset == 250 and reader.torn_tail is None

    batches = list(reader.iter_batches())
    assert [b.record_count for b in batches] == [7] * 35 + [5]
    assert [b.base_offset for b in batches] == list(range(0, 250, 7))
    for b in batches:
        assert b.first_timestamp_ms == recs[b.base_offset].timestamp_ms
        assert b.last_timestamp_ms == recs[b.end_offset - 1].timestamp_ms
    for path, base in segments:
        assert os.path.basename(path) == segment_name(base)
        in_segment = [b for b in batches if b.path == path]
        assert in_segment[0].base_offset == base and in_segment[0].position == SEGMENT_HEADER_SIZE
        assert os.path.getsize(path) <= 700 or len(in_segment) == 1


def test_a_batch_larger_than_segment_bytes_gets_a_segment_of_its_own(tmp_path):
    recs = write_log(tmp_path, 60, segment_bytes=100, batch_records=20)
    reader = LogReader(tmp_path)
    assert [base for _, base in reader.segments()] == [0, 20, 40]
    assert all(os.path.getsize(p) > 100 for p, _ in reader.segments())
    assert read_log(tmp_path) == recs


def test_reopen_continues_offsets(tmp_path):
    first = write_log(tmp_path, 30, batch_records=8)
    with LogWriter.open(tmp_path, batch_records=8, start_offset=12345) as w:  # start_offset: new logs only
        assert w.recovery is None
        assert w.next_offset == 30
        with pytest.raises(ValueError):
            w.append(record(0))
        second = records(30, 30)
        w.append_many(second)
        assert w.next_offset == 60
    assert read_log(tmp_path) == first + second
    assert LogReader(tmp_path).end_offset == 60


def test_new_log_may_start_at_any_offset(tmp_path):
    recs = write_log(tmp_path, 20, start=1000, batch_records=6)
    reader = LogReader(tmp_path)
    assert [os.path.basename(p) for p, _ in reader.segments()] == ["00000000000000001000.kclog"]
    assert list(reader.records()) == recs
    assert list(reader.records(1015)) == recs[15:]
    assert reader.end_offset == 1020


def test_offsets_must_be_consecutive(tmp_path):
    with LogWriter(tmp_path, batch_records=4) as w:
        with pytest.raises(ValueError, match="expected 0"):
            w.append(record(1))
        assert w.next_offset == 0
        w.append(record(0))
        with pytest.raises(ValueError, match="expected 1"):
            w.append(record(2))
        with pytest.raises(ValueError, match="record #2 has offset 4, expected 3"):
            w.append_many([record(1), record(2), record(4), record(5)])
        assert w.next_offset == 1  # all or nothing
        with pytest.raises(TypeError):
            w.append_many([record(1), 42])
        w.append_many(iter(records(1, 9)))
        assert w.next_offset == 10
        w.append_many([])
    assert read_log(tmp_path) == records(0, 10)


def test_append_many_splits_into_batches_after_buffered_records(tmp_path):
    with LogWriter(tmp_path, batch_records=4) as w:
        w.append(record(0))
        w.append_many(records(1, 13))  # fills the buffered batch, then 2 more, 2 left buffered
        assert [b.record_count for b in LogReader(tmp_path).iter_batches()] == [4, 4, 4]
    assert [b.record_count for b in LogReader(tmp_path).iter_batches()] == [4, 4, 4, 2]
    assert read_log(tmp_path) == records(0, 14)


def test_reads_from_a_start_offset(tmp_path):
    recs = write_log(tmp_path, 100, segment_bytes=500, batch_records=6)
    reader = LogReader(tmp_path)
    bases = [base for _, base in reader.segments()]
    assert len(bases) > 3
    for start in sorted({0, 1, 5, 6, 7, 50, 98, 99, 100, 150, *bases, *(b - 1 for b in bases[1:])}):
        assert list(reader.records(start)) == recs[start:], start
        assert list(reader.raw_records(start)) == [tuple(r) for r in recs[start:]], start
        batches = list(reader.iter_batches(start))
        if start < 100:
            assert batches[0].base_offset <= start < batches[0].end_offset
        else:
            assert batches == []
        assert reader.end_offset == 100


def test_missing_directory_and_empty_log(tmp_path):
    with pytest.raises(LogNotFoundError):
        LogReader(tmp_path / "nope")
    with pytest.raises(LogNotFoundError):
        read_log(tmp_path / "nope")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(LogNotFoundError):
        LogReader(tmp_path / "file")
    with pytest.raises(LogError):
        LogWriter(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    reader = LogReader(tmp_path / "empty")
    assert list(reader.records()) == [] and reader.end_offset == 0 and reader.torn_tail is None

    with LogWriter(tmp_path / "a" / "b") as w:  # created, parents included
        w.append(record(0))
    assert read_log(tmp_path / "a" / "b") == [record(0)]


def test_other_files_are_ignored_but_odd_segment_names_are_errors(tmp_path):
    recs = write_log(tmp_path, 10)
    (tmp_path / "README").write_text("notes")
    (tmp_path / "00000000000000000000.kclog.bak").write_bytes(b"junk")
    assert read_log(tmp_path) == recs
    (tmp_path / "12.kclog").write_bytes(b"junk")
    with pytest.raises(LogError, match="12.kclog"):
        read_log(tmp_path)


def test_only_one_writer_at_a_time(tmp_path):
    w = LogWriter(tmp_path, batch_records=2)
    try:
        with pytest.raises(LogError, match="already open for writing"):
            LogWriter(tmp_path)
        w.append_many(records(0, 3))
        assert read_log(tmp_path) == records(0, 2)  # readers see written batches meanwhile
    finally:
        w.close()
    with LogWriter(tmp_path) as w2:
        assert w2.next_offset == 3


def test_closed_writer_refuses_appends(tmp_path):
    w = LogWriter(tmp_path)
    w.append(record(0))
    w.close()
    w.close()  # idempotent
    with pytest.raises(LogError, match="closed"):
        w.append(record(1))
    with pytest.raises(LogError, match="closed"):
        w.flush()
    assert read_log(tmp_path) == [record(0)]


def test_one_write_call_per_batch(tmp_path, monkeypatch):
    real_write = os.write
    sizes = []

    def counting_write(fd, data):
        sizes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting_write)
    with LogWriter(tmp_path, batch_records=5, segment_bytes=10**6) as w:
        w.append_many(records(0, 23))
    monkeypatch.undo()
    spans = batch_spans(tmp_path)
    assert sizes == [SEGMENT_HEADER_SIZE] + [end - start for _, start, end in spans]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 80), batch_records=st.integers(1, 12),
       segment_bytes=st.integers(1, 1500))
def test_round_trip_property(data, n, batch_records, segment_bytes):
    """Any mix of append, append_many, flush and reopen reads back as the records appended."""
    with tempfile.TemporaryDirectory() as d:
        offset = 0
        w = LogWriter(d, fsync=FsyncPolicy.none(), batch_records=batch_records, segment_bytes=segment_bytes)
        try:
            while offset < n:
                step = data.draw(st.integers(1, n - offset))
                action = data.draw(st.sampled_from(["append", "many", "flush", "reopen"]))
                if action == "append":
                    for r in records(offset, step):
                        w.append(r)
                else:
                    w.append_many(records(offset, step))
                    if action == "flush":
                        w.flush()
                    elif action == "reopen":
                        w.close()
                        w = LogWriter(d, fsync=FsyncPolicy.none(), batch_records=batch_records,
                                      segment_bytes=segment_bytes)
                        assert w.next_offset == offset + step
                offset += step
        finally:
            w.close()
        assert read_log(d) == records(0, n)
        spans = batch_spans(d)
        for path, _ in LogReader(d).segments():
            in_segment = [s for s in spans if s[0] == path]
            assert os.path.getsize(path) <= segment_bytes or len(in_segment) <= 1


# ---------------------------------------------------------------------------------------------
# fsync policies
# ---------------------------------------------------------------------------------------------

class FsyncRecorder:
    """Stands in for os.fsync, recording "file" or "dir" per call."""

    def __init__(self):
        self.calls: list[str] = []
        self._real = os.fsync

    def __call__(self, fd):
        self.calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        self._real(fd)

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def fsyncs(monkeypatch):
    recorder = FsyncRecorder()
    monkeypatch.setattr(os, "fsync", recorder)
    return recorder


def no_clock():
    raise AssertionError("the clock is read only by the interval policy")


def test_fsync_per_batch(tmp_path, fsyncs):
    w = LogWriter(tmp_path, fsync=FsyncPolicy.per_batch(), batch_records=10, clock=no_clock)
    assert fsyncs.take() == ["file", "dir"]  # new segment: its header, then its directory entry
    w.append_many(records(0, 25))
    assert fsyncs.take() == ["file", "file"]
    w.flush()
    assert fsyncs.take() == ["file"]
    w.flush()
    w.close()
    assert fsyncs.take() == []  # nothing left unsynced


def test_fsync_per_batch_on_roll_and_new_directory(tmp_path, fsyncs):
    with LogWriter(tmp_path / "new", fsync=FsyncPolicy.per_batch(), batch_records=10, segment_bytes=300,
                   clock=no_clock) as w:
        assert fsyncs.take() == ["dir", "file", "dir"]  # the parent of the new log directory first
        w.append_many(records(0, 20))
        assert fsyncs.take() == ["file", "file", "dir", "file"]  # batch, new segment, batch


def test_fsync_none_never_syncs_until_sync(tmp_path, fsyncs):
    w = LogWriter(tmp_path / "log", fsync=FsyncPolicy.none(), batch_records=10, segment_bytes=300,
                  clock=no_clock)
    w.append_many(records(0, 45))
    assert len(LogReader(tmp_path / "log").segments()) > 1
    assert fsyncs.take() == []
    w.sync()  # forced: the rolled segments, the directory and the current segment
    calls = fsyncs.take()
    assert calls.count("dir") == 1 and calls[-1] == "file"
    assert calls.count("file") == len(LogReader(tmp_path / "log").segments())
    w.sync()
    assert fsyncs.take() == []
    w.append(record(45))
    w.close()
    assert fsyncs.take() == []
    assert read_log(tmp_path / "log") == records(0, 46)


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def test_fsync_interval(tmp_path, fsyncs):
    clock = FakeClock()
    w = LogWriter(tmp_path, fsync=FsyncPolicy.interval(100), batch_records=2, clock=clock)
    assert fsyncs.take() == ["file", "dir"]
    w.append_many(records(0, 2))      # t=0: 0 ms since the segment was synced
    clock.now = 0.05
    w.append_many(records(2, 2))      # 50 ms
    assert fsyncs.take() == []
    clock.now = 0.1
    w.append_many(records(4, 2))      # 100 ms: sync
    assert fsyncs.take() == ["file"]
    clock.now = 0.15
    w.append_many(records(6, 2))
    w.flush()                         # nothing buffered, 50 ms: no sync
    assert fsyncs.take() == []
    clock.now = 0.2
    w.flush()                         # nothing buffered but unsynced data 100 ms after the last sync
    assert fsyncs.take() == ["file"]
    clock.now = 0.25
    w.flush()                         # nothing unsynced
    assert fsyncs.take() == []
    w.append(record(8))
    w.close()                         # flushes the batch (50 ms: no sync) then syncs on close
    assert fsyncs.take() == ["file"]
    assert read_log(tmp_path) == records(0, 9)


def test_fsync_interval_syncs_a_segment_before_rolling_away_from_it(tmp_path, fsyncs):
    clock = FakeClock()
    with LogWriter(tmp_path, fsync=FsyncPolicy.interval(1000), batch_records=10, segment_bytes=300,
                   clock=clock) as w:
        fsyncs.take()
        w.append_many(records(0, 20))
        assert fsyncs.take() == ["file", "file", "dir"]  # old segment, new segment header, directory


def test_bytes_written_do_not_depend_on_fsync_policy_or_clock(tmp_path):
    snapshots = []
    for i, policy in enumerate([FsyncPolicy.per_batch(), FsyncPolicy.interval(5), FsyncPolicy.none()]):
        clock = FakeClock()
        with LogWriter(tmp_path / str(i), fsync=policy, batch_records=3, segment_bytes=400, clock=clock) as w:
            for r in records(0, 40):
                clock.now += 0.003
                w.append(r)
        snapshots.append(snapshot(tmp_path / str(i)))
    assert snapshots[0] == snapshots[1] == snapshots[2]


def test_fsync_policy_validation(tmp_path):
    with pytest.raises(ValueError):
        FsyncPolicy.interval(-1)
    with pytest.raises(ValueError):
        FsyncPolicy("sometimes")
    with pytest.raises(TypeError):
        LogWriter(tmp_path, fsync="none")
    with pytest.raises(ValueError):
        LogWriter(tmp_path, batch_records=0)


# ---------------------------------------------------------------------------------------------
# Torn tails: recovered on open-for-write, tolerated (and never touched) by readers
# ---------------------------------------------------------------------------------------------

def test_truncation_at_every_byte_of_the_last_batch_and_segment_header(tmp_path):
    template = tmp_path / "template"
    recs = write_log(template, 40, batch_records=4, segment_bytes=600)
    spans = batch_spans(template)
    last_path, last_start, last_end = spans[-1]
    assert sum(1 for s in spans if s[0] == last_path) >= 2
    name = os.path.basename(last_path)
    last_base = int(name.split(".")[0])
    cases = [(cut, last_start) for cut in range(last_start, last_end)]  # inside the last batch
    cases += [(cut, 0) for cut in range(SEGMENT_HEADER_SIZE)]           # inside its segment header
    for cut, complete_end in cases:
        d = tmp_path / "cut"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(template, d)
        path = os.path.join(d, name)
        os.truncate(path, cut)
        kept = recs[:36] if complete_end else recs[:last_base]
        dropped = cut - complete_end
        torn = cut > complete_end or cut < SEGMENT_HEADER_SIZE  # an empty file lacks its header too

        before = snapshot(d)
        reader = LogReader(d)
        assert list(reader.records()) == kept, cut
        assert reader.torn_tail == (TornTail(path, complete_end, dropped) if torn else None), cut
        assert reader.end_offset == kept[-1].offset + 1
        assert snapshot(d) == before

        with LogWriter(d, fsync=FsyncPolicy.none(), batch_records=4, segment_bytes=600) as w:
            if torn:
                assert w.recovery == Recovery(path, complete_end, dropped, header_rewritten=complete_end == 0)
            else:
                assert w.recovery is None
            assert os.path.getsize(path) == max(complete_end, SEGMENT_HEADER_SIZE)
            assert w.next_offset == len(kept)
            w.append_many(records(len(kept), 5))
        assert read_log(d) == kept + records(len(kept), 5), cut


def test_zero_filled_tail_is_torn(tmp_path):
    recs = write_log(tmp_path, 20, batch_records=6)
    path = segment_paths(tmp_path)[-1]
    size = os.path.getsize(path)
    for zeros in (5, 40, 4096):
        os.truncate(path, size)
        append_bytes(path, bytes(zeros))
        before = snapshot(tmp_path)
        reader = LogReader(tmp_path)
        assert list(reader.records()) == recs
        assert reader.torn_tail == TornTail(path, size, zeros)
        assert snapshot(tmp_path) == before
        with LogWriter(tmp_path) as w:
            assert w.recovery == Recovery(path, size, zeros, header_rewritten=False)
        assert os.path.getsize(path) == size


def test_zero_filled_new_segment_is_a_torn_header(tmp_path):
    recs = write_log(tmp_path, 20, batch_records=6)
    path = os.path.join(tmp_path, segment_name(20))
    with open(path, "wb") as f:
        f.write(bytes(4096))
    reader = LogReader(tmp_path)
    assert list(reader.records()) == recs and reader.torn_tail == TornTail(path, 0, 4096)
    with LogWriter(tmp_path) as w:
        assert w.recovery == Recovery(path, 0, 4096, header_rewritten=True)
        w.append(record(20))
    assert read_log(tmp_path) == recs + [record(20)]
    assert [base for _, base in LogReader(tmp_path).segments()] == [0, 20]


def test_reader_never_modifies_files(tmp_path):
    write_log(tmp_path, 50, batch_records=6, segment_bytes=400)
    last = segment_paths(tmp_path)[-1]
    append_bytes(last, encode_batch_header(50, 3, b"\x93" * 30, 0, 0)[:BATCH_HEADER_SIZE] + b"\x93" * 7)
    before = snapshot(tmp_path)
    stats = {p: os.stat(p).st_mtime_ns for p in segment_paths(tmp_path)}
    reader = LogReader(tmp_path)
    assert len(list(reader.records())) == 50
    assert len(list(reader.raw_records(10))) == 40
    assert reader.verify() == 50
    assert reader.torn_tail.position == os.path.getsize(last) - BATCH_HEADER_SIZE - 7
    assert snapshot(tmp_path) == before
    assert {p: os.stat(p).st_mtime_ns for p in segment_paths(tmp_path)} == stats


def test_failed_batch_write_leaves_a_tail_that_reopening_recovers(tmp_path, monkeypatch):
    w = LogWriter(tmp_path, fsync=FsyncPolicy.none(), batch_records=5)
    w.append_many(records(0, 10))
    path, size = w.segment_path, os.path.getsize(w.segment_path)
    real_write = os.write

    def disk_full(fd, data):
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(OSError):
        w.append_many(records(10, 5))
    monkeypatch.undo()
    with pytest.raises(LogError, match="reopen"):
        w.append(record(15))
    w.close()  # releases the log without writing
    assert read_log(tmp_path) == records(0, 10)
    with LogWriter(tmp_path) as w:
        assert w.recovery.truncated_at == size and w.recovery.bytes_dropped > 0
        assert w.recovery.path == path
        w.append_many(records(10, 5))
    assert read_log(tmp_path) == records(0, 15)


# ---------------------------------------------------------------------------------------------
# Corruption: always an error naming segment and byte, never skipped, never repaired
# ---------------------------------------------------------------------------------------------

def assert_corrupt(directory, path: str, low: int, high: int, match: str | None = None) -> LogCorruptError:
    """Reading and opening for write both fail at a position in [low, high] of ``path``; no file changes."""
    before = snapshot(directory)
    with pytest.raises(LogCorruptError, match=match) as read_error:
        LogReader(directory).verify()
    with pytest.raises(LogCorruptError, match=match) as write_error:
        LogWriter(directory, fsync=FsyncPolicy.none())
    for exc in (read_error.value, write_error.value):
        assert exc.path == path
        assert low <= exc.position <= high, (exc, low, high)
        assert str(exc).startswith(f"event log segment {path}, byte {exc.position}: ")
    assert snapshot(directory) == before
    return read_error.value


@pytest.fixture(scope="module")
def flip_template(tmp_path_factory):
    """A 3-segment log and its units: (segment path, unit start, unit end) for headers and batches."""
    d = tmp_path_factory.mktemp("flip-template")
    write_log(d, 40, batch_records=3, segment_bytes=450)
    units = [(path, 0, SEGMENT_HEADER_SIZE) for path in segment_paths(d)] + batch_spans(d)
    sizes = [(path, os.path.getsize(path)) for path in segment_paths(d)]
    assert len(sizes) >= 3
    return d, sorted(units), sizes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_flipped_byte_is_reported(flip_template, data):
    template, units, sizes = flip_template
    total = sum(size for _, size in sizes)
    at = data.draw(st.integers(0, total - 1), label="position in the concatenated log")
    mask = data.draw(st.integers(1, 255), label="xor mask")
    for index, (template_path, size) in enumerate(sizes):
        if at < size:
            break
        at -= size
    name = os.path.basename(template_path)
    start = max(s for p, s, e in units if p == template_path and s <= at)
    with tempfile.TemporaryDirectory() as d:
        shutil.rmtree(d)
        shutil.copytree(template, d)
        path = os.path.join(d, name)
        flip(path, at, mask)
        assert_corrupt(d, path, start, at)


def test_every_flipped_byte_of_a_small_log_is_reported(tmp_path):
    """Exhaustive version of the property above on a tiny log, flipping in place and back."""
    write_log(tmp_path, 24, batch_records=3, segment_bytes=400)
    paths = segment_paths(tmp_path)
    assert len(paths) >= 3
    units = [(p, 0) for p in paths] + [(p, s) for p, s, _ in batch_spans(tmp_path)]
    for path in paths:
        for at in range(os.path.getsize(path)):
            start = max(s for p, s in units if p == path and s <= at)
            flip(path, at)
            assert_corrupt(tmp_path, path, start, at)
            flip(path, at)
    assert read_log(tmp_path) == records(0, 24)


def test_corrupt_batch_in_the_middle_of_a_segment_is_never_skipped(tmp_path):
    recs = write_log(tmp_path, 15, batch_records=3)
    spans = batch_spans(tmp_path)
    path, start, end = spans[2]
    flip(path, end - 3)  # a payload byte of the third of five batches
    seen = []
    with pytest.raises(LogCorruptError, match="payload checksum mismatch") as err:
        for r in LogReader(tmp_path).records():
            seen.append(r)
    assert seen == recs[:6]
    assert (err.value.path, err.value.position) == (path, start)
    assert_corrupt(tmp_path, path, start, start)


def test_garbage_after_the_last_batch_is_corruption_not_a_torn_tail(tmp_path):
    write_log(tmp_path, 10)
    path = segment_paths(tmp_path)[-1]
    size = os.path.getsize(path)
    append_bytes(path, b"\xab" * 100)
    assert_corrupt(tmp_path, path, size, size, "batch header checksum mismatch")


def test_torn_tail_in_a_segment_that_is_not_the_last_is_corruption(tmp_path):
    write_log(tmp_path, 30, batch_records=3, segment_bytes=300)
    first, second = segment_paths(tmp_path)[:2]
    end = os.path.getsize(first)
    last_start = max(s for p, s, _ in batch_spans(tmp_path) if p == first)
    os.truncate(first, end - 5)
    assert_corrupt(tmp_path, first, last_start, last_start, "runs past the end of the segment")
    os.truncate(first, last_start + 10)
    assert_corrupt(tmp_path, first, last_start, last_start, "into a 40-byte batch header")
    os.truncate(first, last_start)  # a clean batch boundary: the offsets no longer continue
    assert_corrupt(tmp_path, second, 0, 0, "previous segment ends at offset")
    os.truncate(first, 7)
    assert_corrupt(tmp_path, first, 0, 0, "shorter than its 20-byte header")


def test_zero_tail_in_a_segment_that_is_not_the_last_is_corruption(tmp_path):
    write_log(tmp_path, 30, batch_records=3, segment_bytes=300)
    first = segment_paths(tmp_path)[0]
    size = os.path.getsize(first)
    append_bytes(first, bytes(100))
    assert_corrupt(tmp_path, first, size, size)


def test_missing_or_renamed_segments_are_corruption(tmp_path):
    write_log(tmp_path / "a", 40, batch_records=3, segment_bytes=300)
    paths = segment_paths(tmp_path / "a")
    assert len(paths) >= 3
    os.remove(paths[1])
    assert_corrupt(tmp_path / "a", paths[2], 0, 0, "previous segment ends at offset")

    write_log(tmp_path / "b", 10)
    renamed = os.path.join(tmp_path / "b", segment_name(9999))
    os.rename(segment_paths(tmp_path / "b")[0], renamed)
    assert_corrupt(tmp_path / "b", renamed, 0, 0, "header base offset is 0, but the file name says 9999")


def write_segment(path, header: bytes, *batches: tuple[int, int, list]) -> None:
    """A segment built by hand: header bytes, then (base offset, record count, records) batches."""
    with open(path, "wb") as f:
        f.write(header)
        for base, count, recs in batches:
            payload = codec.encode_batch(recs)
            f.write(encode_batch_header(base, count, payload, 0, 0) + payload)


def segment_header(base: int, *, magic=b"KCLG", version=1, flags=0) -> bytes:
    head = struct.pack(">4sHHQ", magic, version, flags, base)
    return head + struct.pack(">I", google_crc32c.value(head))


@pytest.mark.parametrize("header, message", [
    (segment_header(0, version=2), "unsupported format version 2, expected 1"),
    (segment_header(0, flags=1), "unknown segment flags 0x0001"),
    (segment_header(0, magic=b"KCLX"), "bad magic"),
    (segment_header(0)[:-1] + b"\x00", "segment header checksum mismatch"),
])
def test_bad_segment_headers(tmp_path, header, message):
    path = os.path.join(tmp_path, segment_name(0))
    write_segment(path, header, (0, 2, records(0, 2)))
    assert_corrupt(tmp_path, path, 0, 0, message)


def test_batch_header_invariants(tmp_path):
    path = os.path.join(tmp_path, segment_name(0))
    write_segment(path, encode_segment_header(0), (0, 2, records(0, 2)), (3, 2, records(3, 2)))
    second = batch_spans_unchecked(path)[1]
    assert_corrupt(tmp_path, path, second, second, "batch base offset is 3, expected 2")
    write_segment(path, encode_segment_header(0), (0, 2, records(0, 2)), (2, 0, []))
    assert_corrupt(tmp_path, path, second, second, "batch header says 0 records")


def batch_spans_unchecked(path) -> list[int]:
    """Batch positions in a segment, following the length fields only."""
    data = open(path, "rb").read()
    pos, out = SEGMENT_HEADER_SIZE, []
    while pos < len(data):
        out.append(pos)
        pos += BATCH_HEADER_SIZE + struct.unpack_from(">I", data, pos + 12)[0]
    return out


@pytest.mark.parametrize("payload, offset, message", [
    (codec.encode_batch([record(0), (99, 1, 1, -1, 0, 0, -1)]), 1, "unknown kind 99"),
    (codec.encode_batch([record(0), record(2)]), 1, "record #1 of the batch has offset 2, expected 1"),
    (codec.encode_batch([record(0)]), None, "payload holds 1 records, batch header says 2"),
    (b"\xc1\xc1", None, "not valid msgpack"),
    (msgpack.packb([record(0), ({}, 1, 1, -1, 0, 0, -1)]), 1, "unknown kind"),
])
def test_undecodable_records_in_a_checksum_valid_batch(tmp_path, payload, offset, message):
    path = os.path.join(tmp_path, segment_name(0))
    with open(path, "wb") as f:
        f.write(encode_segment_header(0) + encode_batch_header(0, 2, payload, 0, 0) + payload)
    assert LogReader(tmp_path).verify() == 2  # checksums are fine
    with LogWriter(tmp_path):
        pass
    with pytest.raises(LogRecordError, match=message) as err:
        read_log(tmp_path)
    assert not isinstance(err.value, LogCorruptError)
    assert (err.value.path, err.value.position, err.value.offset) == (path, SEGMENT_HEADER_SIZE, offset)
    where = "payload" if offset is None else f"record offset {offset}"
    assert str(err.value).startswith(f"event log segment {path}, batch at byte 20, {where}: ")


# ---------------------------------------------------------------------------------------------
# The documented byte layout (docs/event-log-format.md), parsed without our reader
# ---------------------------------------------------------------------------------------------

def test_crc32c_check_value():
    assert google_crc32c.value(b"123456789") == 0xE3069283


def test_files_follow_the_documented_layout(tmp_path):
    recs = write_log(tmp_path, 10, start=7, batch_records=4)
    path = os.path.join(tmp_path, "00000000000000000007.kclog")
    data = open(path, "rb").read()
    assert data[:20] == b"KCLG\x00\x01\x00\x00" + (7).to_bytes(8, "big") + \
        google_crc32c.value(data[:16]).to_bytes(4, "big")
    pos, offset, decoded = 20, 7, []
    while pos < len(data):
        base, count, length, first_ts, last_ts, payload_crc, header_crc = struct.unpack_from(">QIIqqII", data, pos)
        assert header_crc == google_crc32c.value(data[pos:pos + 36])
        payload = data[pos + 40:pos + 40 + length]
        assert payload_crc == google_crc32c.value(payload)
        assert base == offset
        arrays = msgpack.unpackb(payload, use_list=False)
        assert len(arrays) == count
        assert (first_ts, last_ts) == (arrays[0][5], arrays[-1][5])
        decoded += arrays
        pos, offset = pos + 40 + length, offset + count
    assert pos == len(data)
    assert decoded == [tuple(r) for r in recs]
