"""Bad input to the commands (issue 17): one clean error line and exit 1/2, never a traceback; a refused
command leaves the log directory byte-identical; the writer lock covers every command that writes a log."""
from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest
import structlog

from events.log import LogError, LogReader, LogWriter
from events.records import TopicCreated
from kcontroller.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    structlog.reset_defaults()


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def tree_hash(directory) -> str:
    """Names and bytes of every file under ``directory`` (missing: a fixed value)."""
    h = hashlib.sha256()
    if not os.path.exists(directory):
        return "missing"
    for base, dirs, files in sorted(os.walk(directory)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            h.update(os.path.relpath(path, directory).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def assert_clean_error(status: int, err: str, expected_status: int = 2, contains: str = "") -> None:
    assert status == expected_status, err
    assert "Traceback" not in err
    if contains:
        assert contains in err


@pytest.fixture
def cluster_log(tmp_path, capsys):
    log = str(tmp_path / "log")
    status, _, _ = run(capsys, "new-cluster", log, "--brokers", "4", "--topic", "t:4:3", "--topic", "one:2:1")
    assert status == 0
    return log


def _topics(log: str) -> list[str]:
    return [r.topic for r in LogReader(log).records() if type(r) is TopicCreated]


# --- a refused command changes nothing ----------------------------------------------------------------------------

@pytest.mark.parametrize("entries, message", [
    ([{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}, {"topic": "t", "partition": 1, "replicas": [1, 7]}],
     "Unknown broker id 7"),
    ([{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}, {"topic": "nope", "partition": 0, "replicas": [1]}],
     "nope-0: UNKNOWN_TOPIC_OR_PARTITION"),
    ([{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}, {"topic": "t", "partition": 9, "replicas": [1]}],
     "t-9: UNKNOWN_TOPIC_OR_PARTITION"),
    ([{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}, {"topic": "t", "partition": 1, "replicas": [1, -1]}],
     "Unknown broker id -1"),
    ([{"topic": "t", "partition": 0, "replicas": [3, 2, 1]}, {"topic": "a/b", "partition": 1, "replicas": [1]}],
     "a/b-1: UNKNOWN_TOPIC_OR_PARTITION"),
])
def test_reassign_checks_every_entry_before_sending_anything(tmp_path, capsys, cluster_log, entries, message):
    f = tmp_path / "plan.json"
    f.write_text(json.dumps({"version": 1, "partitions": entries}))
    before = tree_hash(cluster_log)
    status, out, err = run(capsys, "reassign", cluster_log, "--reassignment-json-file", f)
    assert_clean_error(status, err, 1, message)
    assert "Successfully" not in out
    assert tree_hash(cluster_log) == before


BAD_JSON = {
    "utf16": '{"partitions": []}'.encode("utf-16"),
    "latin1": b'{"partitions": [{"topic": "t\xe9", "partition": 0, "replicas": [1]}]}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "deep_inside": b'{"partitions": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "long_number": b'{"partitions": [{"topic": "t", "partition": ' + b"9" * 100_000 + b', "replicas": [1]}]}',
    "partition_2_70": b'{"partitions": [{"topic": "t", "partition": %d, "replicas": [1]}]}' % 2**70,
    "broker_2_31": b'{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, %d]}]}' % 2**31,
    "nan": b'{"partitions": [{"topic": "t", "partition": NaN, "replicas": [1]}]}',
    "empty": b"",
    "nul": b"\0\0\0",
    "array": b"[1, 2]",
}


@pytest.mark.parametrize("name", sorted(BAD_JSON))
@pytest.mark.parametrize("command", ["reassign", "elect-leaders"])
def test_bad_admin_files_are_one_line_errors(tmp_path, capsys, cluster_log, name, command):
    if command == "elect-leaders" and name == "broker_2_31":
        pytest.skip("an election file has no replicas")
    f = tmp_path / f"{name}.json"
    f.write_bytes(BAD_JSON[name])
    before = tree_hash(cluster_log)
    if command == "reassign":
        status, _, err = run(capsys, "reassign", cluster_log, "--reassignment-json-file", f)
    else:
        status, _, err = run(capsys, "elect-leaders", cluster_log, "--election-type", "preferred",
                             "--path-to-json-file", f)
    assert_clean_error(status, err, 2, str(f))
    assert err.count("\n") == 1
    assert tree_hash(cluster_log) == before


@pytest.mark.parametrize("args, message", [
    (["--topic", "t", "--partitions", "1", "--replication-factor", "1"],
     "TopicExistsException: Topic 't' already exists."),
    (["--topic", "a/b", "--partitions", "1", "--replication-factor", "1"], "InvalidTopicException: Topic name"),
    (["--topic", "x", "--partitions", "1", "--replication-factor", "9"],
     "InvalidReplicationFactorException: Replication factor: 9 larger than available brokers: 4."),
    (["--topic", "x", "--partitions", "0", "--replication-factor", "0"],
     "InvalidPartitionsException: Number of partitions must be larger than 0."),
    (["--topic", "x", "--partitions", "1", "--replication-factor", "0"],
     "InvalidReplicationFactorException: Replication factor must be larger than 0."),
    (["--topic", "x", "--partitions", "-3"], "InvalidPartitionsException"),
    (["--topic", "x", "--partitions", "1", "--config", "min.insync.replicas=abc"],
     "Invalid value abc for configuration min.insync.replicas: Not a number of type INT"),
    (["--topic", "x", "--partitions", "1", "--config", "min.insync.replicas=0"],
     "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    (["--topic", "x", "--partitions", "1", "--config", "unclean.leader.election.enable=yes"],
     "Expected value to be either true or false"),
    (["--topic", "x", "--partitions", "100000000"], "partitions must be at most 1000000"),
    (["--topic", "x", "--partitions", "1", "--at", str(2**63)], "--at must be in"),
])
def test_create_topic_errors(capsys, cluster_log, args, message):
    before = tree_hash(cluster_log)
    status, _, err = run(capsys, "create-topic", cluster_log, *args)
    assert_clean_error(status, err, 2, message)
    assert err.count("\n") == 1
    assert tree_hash(cluster_log) == before


@pytest.mark.parametrize("command, args, message", [
    ("advance", ["--ms", str(2**63)], "--ms must be in 0..604800000"),
    ("advance", ["--ms", "-5"], "--ms must be in"),
    ("kill-broker", ["--broker-id", str(2**40)], "--broker-id must be in"),
    ("kill-broker", ["--broker-id", "77"], "broker 77 is not running"),
    ("elect-leaders", ["--election-type", "preferred", "--topic", "t", "--partition", str(2**70)], "--partition"),
])
def test_sizes_out_of_range_are_refused(capsys, cluster_log, command, args, message):
    before = tree_hash(cluster_log)
    status, _, err = run(capsys, command, cluster_log, *args)
    assert_clean_error(status, err, 2, message)
    assert tree_hash(cluster_log) == before


@pytest.mark.parametrize("args, message", [
    (["--brokers", "0"], "--brokers must be in 1..10000"),
    (["--brokers", "1000000000"], "--brokers must be in 1..10000"),
    (["--config", "min.insync.replicas=abc"], "Not a number of type INT"),
    (["--config", "num.partitions=0"], "Value must be at least 1"),
    (["--config", "inter.broker.protocol.version=banana"], "is not a valid version"),
    (["--topic", "x:0:1"], "InvalidPartitionsException"),
    (["--topic", "x:1:5"], "InvalidReplicationFactorException"),
    (["--topic", "x:1"], "NAME:PARTITIONS:RF"),
])
def test_new_cluster_refused_leaves_nothing_behind(tmp_path, capsys, args, message):
    log = tmp_path / "new"
    status, _, err = run(capsys, "new-cluster", log, "--brokers", "3", *args)
    assert_clean_error(status, err, 2, message)
    assert os.listdir(tmp_path) == []


def test_new_cluster_overwrite_refused_keeps_the_old_log(capsys, cluster_log):
    before = tree_hash(cluster_log)
    status, _, err = run(capsys, "new-cluster", cluster_log, "--overwrite", "--topic", "x:1:9")
    assert_clean_error(status, err, 2, "InvalidReplicationFactorException")
    assert tree_hash(cluster_log) == before
    assert sorted(os.listdir(os.path.dirname(cluster_log))) == ["log"]


# --- the writer lock ------------------------------------------------------------------------------------------------

def test_overwrite_refuses_while_another_command_writes(capsys, cluster_log):
    with LogWriter(cluster_log):
        before = tree_hash(cluster_log)
        status, _, err = run(capsys, "new-cluster", cluster_log, "--overwrite")
        assert_clean_error(status, err, 2, "is open for writing by another command")
        status, _, err = run(capsys, "create-topic", cluster_log, "--topic", "x", "--partitions", "1")
        assert_clean_error(status, err, 2, "already open for writing")
        assert tree_hash(cluster_log) == before
    assert sorted(os.listdir(os.path.dirname(cluster_log))) == ["log"]
    status, _, _ = run(capsys, "new-cluster", cluster_log, "--overwrite", "--topic", "fresh:1:1")
    assert status == 0 and _topics(cluster_log) == ["fresh"]


def test_a_writer_that_opened_a_replaced_directory_writes_to_the_new_log(tmp_path, capsys, cluster_log):
    old_fd = os.open(cluster_log, os.O_RDONLY | os.O_DIRECTORY)
    try:
        status, _, _ = run(capsys, "new-cluster", cluster_log, "--overwrite", "--topic", "fresh:1:1")
        assert status == 0
        # A LogWriter opened now locks the directory at the path, never the replaced one.
        with LogWriter(cluster_log) as w:
            held = os.fstat(w._dir_fd)
            assert (held.st_dev, held.st_ino) == (os.stat(cluster_log).st_dev, os.stat(cluster_log).st_ino)
            assert (held.st_dev, held.st_ino) != (os.fstat(old_fd).st_dev, os.fstat(old_fd).st_ino)
    finally:
        os.close(old_fd)


def _kc(*argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kcontroller", *map(str, argv)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(p: subprocess.Popen) -> tuple[int, str, float]:
    _, err = p.communicate(timeout=120)
    return p.returncode, err, time.monotonic()


@pytest.mark.slow
def test_no_acknowledged_write_is_lost_to_a_concurrent_overwrite(tmp_path):
    """create-topic and new-cluster --overwrite race on one log. Every outcome is one of the serial ones: the
    topic is in the final log, or create-topic was refused, or it finished before the overwrite did (and the
    overwrite, which then replaced the log, found it unlocked)."""
    log = tmp_path / "log"
    subprocess.run([sys.executable, "-m", "kcontroller", "new-cluster", log, "--topic", "base:1:1"],
                   cwd=ROOT, check=True, capture_output=True)
    outcomes = set()
    for i in range(12):
        create = _kc("create-topic", log, "--topic", f"x{i}", "--partitions", "1")
        if i % 2:
            time.sleep(0.05 * (i % 5))
        overwrite = _kc("new-cluster", log, "--overwrite", "--topic", "base:1:1")
        c_status, c_err, c_end = _finish(create)
        o_status, o_err, o_end = _finish(overwrite)
        assert "Traceback" not in c_err + o_err
        assert c_status in (0, 2) and o_status in (0, 2), c_err + o_err
        topics = _topics(str(log))   # the final log is whole and readable
        if c_status == 0 and f"x{i}" not in topics:
            assert o_status == 0      # only a replacement removes an acknowledged topic ...
            assert c_end <= o_end     # ... and only one that finished after it
        outcomes.add((c_status, o_status, f"x{i}" in topics))
        assert not [n for n in os.listdir(tmp_path) if n != "log"]   # no leftover temporary directories


def test_concurrent_writers_never_lose_an_acknowledged_topic(tmp_path):
    log = tmp_path / "log"
    subprocess.run([sys.executable, "-m", "kcontroller", "new-cluster", log], cwd=ROOT, check=True,
                   capture_output=True)
    procs = {f"c{i}": _kc("create-topic", log, "--topic", f"c{i}", "--partitions", "1") for i in range(3)}
    results = {name: _finish(p) for name, p in procs.items()}
    topics = set(_topics(str(log)))
    for name, (status, err, _) in results.items():
        assert "Traceback" not in err
        if status == 0:
            assert name in topics
        else:
            assert status == 2 and "already open for writing" in err and name not in topics


# --- OS errors on write -------------------------------------------------------------------------------------------

def test_disk_full_on_new_cluster_is_a_clean_error_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    real_write = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    status, _, err = run(capsys, "new-cluster", tmp_path / "log")
    monkeypatch.setattr(os, "write", real_write)
    assert_clean_error(status, err, 2, "No space left on device")
    assert os.listdir(tmp_path) == []


def test_disk_full_on_create_topic_keeps_the_log_readable(capsys, cluster_log, monkeypatch):
    before = tree_hash(cluster_log)
    records = list(LogReader(cluster_log).raw_records())
    real_write, real_writev = os.write, os.writev

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "writev", full)
    status, _, err = run(capsys, "create-topic", cluster_log, "--topic", "x", "--partitions", "1")
    monkeypatch.setattr(os, "write", real_write)
    monkeypatch.setattr(os, "writev", real_writev)
    assert_clean_error(status, err, 2, "No space left on device")
    assert tree_hash(cluster_log) == before
    assert list(LogReader(cluster_log).raw_records()) == records
    assert all(os.path.getsize(os.path.join(cluster_log, n)) > 0 for n in os.listdir(cluster_log))


def test_a_failed_segment_creation_leaves_no_empty_segment(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(LogError, match="No space left on device"):
        LogWriter(tmp_path / "log")
    monkeypatch.undo()
    assert os.listdir(tmp_path / "log") == []


# --- scenarios ----------------------------------------------------------------------------------------------------

_BASE = "name: x\nduration: 10s\ncluster: {brokers: [1, 2]}\n"
BAD_SCENARIOS = {
    "control character": ("name: x\x07y\nduration: 10s\ncluster: {brokers: [1, 2]}\n", ":1: not valid YAML: character"),
    "NUL": (_BASE + "description: a\0b\n", ":4: not valid YAML: character '\\x00'"),
    "deep flow": (_BASE + "topics: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested at most 32 deep"),
    "deep block": (_BASE + "topics:\n" + "".join("  " * i + "- \n" for i in range(200)), "nested at most 32 deep"),
    "deep mapping": (_BASE + "network: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n", "nested at most 32 deep"),
    "broker id 2^64": ("name: x\nduration: 10s\ncluster: {brokers: [1, %d]}\n" % 2**64, "at most 2147483647"),
    "seed 2^64": (_BASE + "seed: %d\n" % 2**64, "at most 18446744073709551615"),
    "step broker 2^64": (_BASE + "steps: [{at: 1s, action: kill_broker, broker: %d}]\n" % 2**64, "kill_broker.broker"),
    "a billion partitions": (_BASE + "topics: [{name: t, partitions: 1000000000}]\n", "at most 100000"),
    "num.partitions default": ("name: x\nduration: 10s\ncluster: {brokers: [1], configs: {num.partitions: 2000000}}\n"
                               "topics: [{name: t}]\n", "num.partitions"),
    "duration 10^32": ("name: x\nduration: %d\ncluster: {brokers: [1, 2]}\n" % 10**32, "at most 10080m"),
    "duration in hours": ("name: x\nduration: 100000h\ncluster: {brokers: [1, 2]}\n", "at most 10080m"),
    "rate": (_BASE + "topics: [{name: t}]\nworkload: {producers: [{topics: t, rate_per_s: 1.0e+12}]}\n",
             "at most 1000000 messages"),
    "brokers": ("name: x\nduration: 10s\ncluster: {brokers: [%s]}\n" % ",".join(map(str, range(5000))),
                "at most 1000 brokers"),
    "config value": ("name: x\nduration: 10s\ncluster: {brokers: [1], configs: {min.insync.replicas: 0}}\n",
                     "Value must be at least 1"),
    "reassign date": (_BASE + "topics: [{name: t}]\nsteps: [{at: 1s, action: reassign, json: {version: 2001-12-14, "
                              "partitions: []}}]\n", "version"),
}


@pytest.mark.parametrize("name", sorted(BAD_SCENARIOS))
def test_bad_scenarios_are_one_line_errors_and_leave_no_log(tmp_path, capsys, name):
    text, message = BAD_SCENARIOS[name]
    f = tmp_path / "s.yaml"
    f.write_text(text)
    status, _, err = run(capsys, "simulate", f, "--log-dir", tmp_path / "out")
    assert_clean_error(status, err, 2, message)
    assert err.startswith(f"kcontroller: error: {f}:") and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["s.yaml"]


def test_oversized_and_non_utf8_scenarios(tmp_path, capsys):
    big = tmp_path / "big.yaml"
    big.write_text("name: x\nduration: 10s\ncluster: {brokers: [" + "1, " * 2_000_000)
    status, _, err = run(capsys, "simulate", big, "--log-dir", tmp_path / "out")
    assert_clean_error(status, err, 2, "at most 1048576 bytes")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\nduration: 10s\ncluster: {brokers: [1]}\n")
    status, _, err = run(capsys, "simulate", latin, "--log-dir", tmp_path / "out")
    assert_clean_error(status, err, 2, f"{latin}:1: expected a UTF-8 text file")
    assert not os.path.exists(tmp_path / "out")


# --- audit inputs -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def state_change_lines(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("demo")
    subprocess.run([sys.executable, "-m", "kcontroller", "demo", "--log-dir", d / "log"], cwd=ROOT, check=True,
                   capture_output=True)
    return subprocess.run([sys.executable, "-m", "kcontroller", "log", d / "log"], cwd=ROOT, check=True,
                          capture_output=True).stdout


@pytest.mark.parametrize("cut", [20, 200, "late"])
def test_audit_of_a_truncated_gzip_is_a_clean_error(tmp_path, capsys, state_change_lines, cut):
    data = gzip.compress(state_change_lines * 200)   # well past the 64 KiB sniffed at open
    cut = len(data) * 2 // 3 if cut == "late" else cut
    f = tmp_path / "state-change.log.gz"
    f.write_bytes(data[:cut])
    status, out, err = run(capsys, "audit", f)
    assert_clean_error(status, err + out, 2, "truncated gzip stream")


def test_audit_of_an_empty_file_is_not_clean(tmp_path, capsys):
    f = tmp_path / "state-change.log"
    f.write_bytes(b"")
    status, out, err = run(capsys, "audit", f)
    assert_clean_error(status, err + out, 2, "is empty")


def test_audit_reads_cr_only_line_ends(tmp_path, capsys, state_change_lines):
    lf, cr = tmp_path / "lf.log", tmp_path / "cr.log"
    lf.write_bytes(state_change_lines)
    cr.write_bytes(state_change_lines.replace(b"\n", b"\r"))
    _, lf_out, _ = run(capsys, "audit", lf, "--report", tmp_path / "lf.json")
    status, cr_out, err = run(capsys, "audit", cr, "--report", tmp_path / "cr.json")
    assert "Traceback" not in err
    rows = [json.loads((tmp_path / n).read_text())["inputs"][0] for n in ("lf.json", "cr.json")]
    assert rows[0]["rows"] > 0 and rows[0]["rows"] == rows[1]["rows"]


# --- forged records -----------------------------------------------------------------------------------------------

def _forge(src: str, dst, field: str, value) -> None:
    import shutil

    from events.records import TopicCreated
    shutil.copytree(src, dst)
    with LogWriter(dst) as w:
        n = w.next_offset
        rec = list(TopicCreated.make(offset=n, timestamp_ms=10**9, cause_offset=n, topic="forged",
                                     assignment=((0,),), configs=()))
        rec[TopicCreated._fields.index(field)] = value
        w.append(tuple(rec))


@pytest.mark.parametrize("field, value, message", [
    ("topic", 7, "field topic is int 7, expected str"),
    ("assignment", "abc", "field assignment is str 'abc', expected tuple"),
    ("configs", {"a": 1}, "field configs is dict"),
    ("configs", 1.5, "field configs is float"),
    ("configs", None, "field configs is NoneType"),
    ("controller_id", "x", "field controller_id is str"),
    ("configs", "msgpack-ext-5", "holds a msgpack ext value"),
    ("configs", "msgpack-ext-1", "holds a msgpack ext value"),
    ("assignment", "nested-ext", "holds a msgpack ext value"),
])
@pytest.mark.parametrize("command", ["log", "describe", "replay", "create-topic"])
def test_forged_records_are_errors_naming_segment_and_byte(tmp_path, capsys, cluster_log, field, value, message,
                                                           command):
    import msgpack
    value = {"msgpack-ext-5": msgpack.ExtType(5, b"abc"), "msgpack-ext-1": msgpack.ExtType(1, b"abcdefgh"),
             "nested-ext": ((msgpack.ExtType(9, b""),),)}.get(value, value) if isinstance(value, str) else value
    forged = tmp_path / "forged"
    _forge(cluster_log, forged, field, value)
    before = tree_hash(forged)
    extra = ["--topic", "x", "--partitions", "1"] if command == "create-topic" else []
    status, _, err = run(capsys, command, forged, *extra)
    assert_clean_error(status, err, 2, message)
    assert "event log segment" in err and "batch at byte" in err
    assert tree_hash(forged) == before


@pytest.mark.parametrize("field, value, message", [
    ("topic", 7, "field topic is int 7, expected str"),
    ("configs", 1.5, "field configs is float"),
])
def test_the_audit_reports_a_forged_record_as_an_input_error(tmp_path, capsys, cluster_log, field, value, message):
    forged = tmp_path / "forged"
    _forge(cluster_log, forged, field, value)
    status, out, err = run(capsys, "audit", forged, "--engine", "local")
    assert_clean_error(status, out + err, 2, message)
    assert "INPUT ERRORS" in out and "event log segment" in out and "batch at byte" in out


@pytest.mark.parametrize("argv, message", [
    (["demo", "--brokers", "100000000"], "--brokers must be in 1..10000"),
    (["demo", "--partitions", "0"], "--partitions must be in"),
    (["demo", "--victim", "99"], "broker 99 is not running"),
    (["demo", "--seed", str(2**64)], "--seed must be in"),
    (["new-cluster", "--seed", str(2**64)], "--seed must be in"),
])
def test_demo_and_new_cluster_sizes(tmp_path, capsys, argv, message):
    command, *options = argv
    target = ["--log-dir", tmp_path / "log"] if command == "demo" else [tmp_path / "log"]
    status, _, err = run(capsys, command, *target, *options)
    assert_clean_error(status, err, 2, message)
    assert os.listdir(tmp_path) == []


def test_sweep_and_simulate_sizes(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\nduration: 10s\ncluster: {brokers: [1]}\n")
    status, _, err = run(capsys, "sweep", f, "--seeds", 10**12, "--out", tmp_path / "out", "--engine", "local")
    assert_clean_error(status, err, 2, "--seeds must be in 1..100000")
    status, _, err = run(capsys, "simulate", f, "--seed", 2**64, "--log-dir", tmp_path / "out")
    assert_clean_error(status, err, 2, "--seed must be in")
    assert sorted(os.listdir(tmp_path)) == ["s.yaml"]


def test_disk_full_half_way_through_a_command_leaves_the_log_as_it_was(capsys, cluster_log, monkeypatch):
    before = tree_hash(cluster_log)
    real_write, real_writev = os.write, os.writev
    calls = []

    def full_after_one(fd, data):
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return (real_write if isinstance(data, (bytes, bytearray, memoryview)) else real_writev)(fd, data)

    monkeypatch.setattr(os, "write", full_after_one)
    monkeypatch.setattr(os, "writev", full_after_one)
    status, _, err = run(capsys, "create-topic", cluster_log, "--topic", "big", "--partitions", "3000",
                         "--replication-factor", "3")
    monkeypatch.undo()
    assert len(calls) > 1
    assert_clean_error(status, err, 2, "No space left on device")
    assert tree_hash(cluster_log) == before
    status, _, _ = run(capsys, "create-topic", cluster_log, "--topic", "big", "--partitions", "3")
    assert status == 0 and "big" in _topics(cluster_log)


@pytest.mark.parametrize("text, message", [
    ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[' + "1" * 100_000 + "]}]}",
     "a number of 100000 digits"),
    ("{" * 100_000, "nested more than 64 deep"),
])
def test_what_if_on_json_it_cannot_read(tmp_path, capsys, text, message):
    path = tmp_path / "plan.json"
    path.write_text(text)
    status, _, err = run(capsys, "what-if", path)
    assert_clean_error(status, err, 2, message)


@pytest.mark.parametrize("field, value", [("assignment", ((0, "x"),)), ("assignment", ((2**40,),))])
@pytest.mark.parametrize("command", ["describe", "replay"])
def test_a_record_value_the_engine_cannot_hold_is_an_error_naming_the_record(tmp_path, capsys, cluster_log, field,
                                                                            value, command):
    forged = tmp_path / "forged"
    _forge(cluster_log, forged, field, value)
    status, _, err = run(capsys, command, forged)
    assert_clean_error(status, err, 2, "TopicCreated at offset")
    assert str(forged) in err
