"""Pristine replicas kept as rows (``Replication.pristine``: a follower or a leader a large LeaderAndIsr makes, with
no log on disk, is a row until something touches it) against the eager data plane (every replica a Replica object
at once): random small clusters and fault sequences, and the examples, give the same records byte for byte, the
same summary (acknowledged offsets, losses, availability), and the same data-plane state once the rows are made
replicas — with the rows used for every LeaderAndIsr (``pristine_min_rows`` 0) and never, and with rows for
followers only (``pristine_leaders`` off)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from sim.replication import Replication
from sim.scenario import ScenarioError, load_scenario, parse_scenario
from sim.simulation import Simulation, SimulationError

pytestmark = pytest.mark.usefixtures("quiet_engine_logs")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@st.composite
def scenarios(draw) -> str:
    brokers = draw(st.integers(3, 5))
    topics = draw(st.integers(1, 3))
    rf = draw(st.integers(2, 3))
    two_dirs = draw(st.booleans())
    acks = draw(st.sampled_from(["1", "all"]))
    unclean = draw(st.booleans())
    steps = []
    down: set = set()
    cut = grown = created = False
    failed: set = set()
    at = 0
    for _ in range(draw(st.integers(0, 6))):
        at += draw(st.integers(1, 8))
        up = [b for b in range(brokers) if b not in down]
        kind = draw(st.sampled_from(["kill", "start", "shutdown", "cut", "heal", "slow", "elect", "min_isr", "grow",
                                     "create", "fail_dir"]))
        b = draw(st.sampled_from(up)) if up else 0
        if kind in ("kill", "shutdown") and len(up) > 1:
            steps.append(f"action: {'kill_broker' if kind == 'kill' else 'controlled_shutdown'}, broker: {b}")
            down.add(b)
        elif kind == "start" and down:
            b = draw(st.sampled_from(sorted(down)))
            steps.append(f"action: start_broker, broker: {b}")
            down.discard(b)
        elif kind == "cut" and not cut and up:
            steps.append(f"action: partition_network, isolate: {b}, from: {[x for x in range(brokers) if x != b]}")
            cut = True
        elif kind == "heal" and cut:
            steps.append("action: heal_network")
            cut = False
        elif kind == "slow" and up:
            steps.append(f"action: slow_follower, broker: {b}, delay: 700ms, until: {at + 5}s")
        elif kind == "elect":
            steps.append("action: elect_preferred")
        elif kind == "min_isr":
            steps.append(f"action: set_config, entity: topic, name: t0, config: min.insync.replicas, value: {1 + at % 2}")
        elif kind == "grow" and not grown and not down:
            steps.append("action: add_partitions, topic: t0, count: 160")
            grown = True
        elif kind == "create" and not created and not down:
            steps.append("action: create_topic, name: late, partitions: 70, replication_factor: 2")
            created = True
        elif kind == "fail_dir" and two_dirs and up and b not in failed:
            steps.append(f"action: fail_log_dir, broker: {b}, dir: /a")
            failed.add(b)
        else:
            continue
        steps[-1] = f"{{at: {at}s, {steps[-1]}}}"
    # A LeaderAndIsr of at least 64 partition states is columnar (controller.request_batch.COLUMN_MIN): the
    # only kind become_many applies.
    topic_lines = ", ".join(f"{{name: t{i}, partitions: {draw(st.sampled_from([1, 5, 64, 90]))}, "
                            f"replication_factor: {rf}}}"
                            for i in range(topics))
    dirs = ', log.dirs: "/a,/b"' if two_dirs else ""
    return textwrap.dedent(f"""
        name: pristine
        duration: 50s
        cluster:
          brokers: {list(range(brokers))}
          configs: {{zookeeper.session.timeout.ms: 6000, replica.lag.time.max.ms: 3000,
                    unclean.leader.election.enable: {str(unclean).lower()}{dirs}}}
        topics: [{topic_lines}]
        workload:
          producers:
            - {{topics: [{", ".join(f"t{i}" for i in range(topics))}], rate_per_s: 300, acks: {acks}, start: 1s,
               stop: 45s, configs: {{batch.size: 4096}}}}
        steps: [{", ".join(steps)}]
        """)


def state(sim: Simulation) -> dict:
    r = sim.replication
    for b in list(r.pristine):
        r.wake_all(b)
    replicas = {(b, tp): (rep.leader, rep.leader_epoch, rep.isr, rep.partition_epoch, rep.replicas,
                          dict(rep.follower_leo), rep.epoch_start, rep.pending_isr, rep.offline, rep.log_dir,
                          rep.min_isr, rep.fetching_from, len(rep.delayed), rep.order)
                for b, reps in r.replicas.items() for tp, rep in reps.items()}
    # No log on disk reads as an empty one (a row has none until it is made a replica).
    logs = {(b, tp): (log.leo, log.hw, log.log_start, tuple(log.epochs))
            for b, disk in r.disks.items() for tp, log in disk.items()
            if log.leo or log.hw or log.log_start or log.epochs}
    # The watches in order (their order is the order fetches and answers visit partitions); the sessions in the
    # order they were made. led_with as sets: only its members are read (the ISR check sorts what it finds).
    # (A watch's never-fetched tail, ``fresh``, is its last entries.)
    sessions = [(k, s.state, tuple(s.partitions), tuple(s.dirty),
                 [(tp, tuple(w)) for tp, w in list(s.watch.items()) + list(s.fresh.items())],
                 tuple(s.pending), tuple(s.hw_moved), s.caught_up_ms, s.last_fetch_ms, s.seq)
                for k, s in r.sessions.items()]
    led = {b: {f: frozenset(tps) for f, tps in by.items() if tps} for b, by in r.led_with.items()}
    led = {b: by for b, by in led.items() if by}
    return {"replicas": replicas, "logs": logs, "sessions": sessions, "led": led, "truncated": r.truncated}


def run(scenario, monkeypatch, rows: bool, leaders: bool = True) -> tuple[bytes, dict, dict]:
    records: list = []
    with monkeypatch.context() as m:
        m.setattr(Replication, "pristine_min_rows", 0 if rows else 1 << 62)
        m.setattr(Replication, "pristine_leaders", leaders)
        sim = Simulation(scenario, sink=records.append)
        sim.run()
        summary = sim.finish()
        st_ = state(sim)
    return b"".join(msgpack.packb(tuple(r), use_bin_type=True) for r in records), summary, st_


def same(scenario, monkeypatch, followers_only: bool = False) -> None:
    try:
        eager = run(scenario, monkeypatch, False)
    except SimulationError:
        # A drawn sequence the simulator refuses (a controlled shutdown that cannot finish across a cut link, then
        # the broker started again): nothing to compare.
        assume(False)
    for lazy in [run(scenario, monkeypatch, True)] + ([run(scenario, monkeypatch, True, False)] if followers_only else []):
        assert lazy[1] == eager[1]
        assert lazy[2] == eager[2]
        assert lazy[0] == eager[0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_random_clusters_and_faults(monkeypatch, text):
    try:
        scenario = parse_scenario(text, "<pristine>")
    except ScenarioError:
        assume(False)
    same(scenario, monkeypatch, followers_only=True)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_examples(monkeypatch, name):
    same(load_scenario(EXAMPLES / name), monkeypatch)



def _three_brokers_70_partitions(produce_from: str) -> Simulation:
    """Three brokers, one topic of 70 partitions (RF 3), a slow acks=all producer from ``produce_from`` on."""
    return Simulation(parse_scenario(textwrap.dedent(f"""
        name: rows
        duration: 6s
        cluster: {{brokers: [0, 1, 2]}}
        topics: [{{name: t, partitions: 70, replication_factor: 3}}]
        workload:
          producers: [{{topics: [t], rate_per_s: 20, acks: all, start: {produce_from}, configs: {{linger.ms: 0}}}}]
        steps: []
        """), "<rows>"), sink=lambda rec: None)

def test_rows_are_used_and_woken(monkeypatch):
    """The lazy path is taken (followers stay rows while nothing touches them) and a produce wakes only what it
    writes to."""
    monkeypatch.setattr(Replication, "pristine_min_rows", 0)
    sim = _three_brokers_70_partitions(produce_from="3s")
    sim.start()
    sim.run_until(2_900)
    r = sim.replication
    assert sum(len(rows) for rows in r.pristine.values()) == 210         # every replica, none touched
    assert sum(len(reps) for reps in r.replicas.values()) == 0
    sim.run_until(6_000)
    woken = sum(len(reps) for reps in r.replicas.values())
    assert 0 < woken < 210 and woken + sum(len(rows) for rows in r.pristine.values()) == 210


def test_a_failed_log_dir_a_config_change_and_a_deletion(monkeypatch):
    """The paths that look at all of a broker's replicas (a failed log directory, min.insync.replicas changed) and
    StopReplica with deletion, on rows that were never touched."""
    same(parse_scenario(textwrap.dedent("""
        name: rows under faults
        duration: 40s
        cluster:
          brokers: [0, 1, 2, 3]
          configs: {log.dirs: "/a,/b", replica.lag.time.max.ms: 3000, zookeeper.session.timeout.ms: 6000}
        topics:
          - {name: t0, partitions: 80, replication_factor: 3}
          - {name: t1, partitions: 70, replication_factor: 2}
        workload:
          producers: [{topics: [t0, t1], rate_per_s: 200, acks: all, start: 1s, stop: 35s}]
        steps:
          - {at: 3s, action: set_config, entity: topic, name: t0, config: min.insync.replicas, value: 2}
          - {at: 5s, action: fail_log_dir, broker: 1, dir: /a}
          - {at: 8s, action: kill_broker, broker: 2}
          - {at: 15s, action: start_broker, broker: 2}
          - {at: 20s, action: delete_topic, topic: t1}
          - {at: 22s, action: set_config, entity: broker, config: min.insync.replicas, value: 1}
          - {at: 25s, action: elect_preferred}
        """), "<rows under faults>"), monkeypatch, followers_only=True)


def test_a_restart_with_some_logs_on_disk(monkeypatch):
    """A restarted broker's LeaderAndIsr mixes followers with a log on disk (written to before) and without."""
    same(parse_scenario(textwrap.dedent("""
        name: restart
        duration: 30s
        cluster:
          brokers: [0, 1, 2, 3]
          configs: {replica.lag.time.max.ms: 3000, zookeeper.session.timeout.ms: 6000}
        topics: [{name: t0, partitions: 300, replication_factor: 3}, {name: t1, partitions: 200, replication_factor: 2}]
        workload:
          producers: [{topics: [t0, t1], rate_per_s: 100, acks: all, start: 1s, stop: 25s, configs: {linger.ms: 0}}]
        steps:
          - {at: 6s, action: kill_broker, broker: 1}
          - {at: 9s, action: start_broker, broker: 1}
          - {at: 14s, action: kill_broker, broker: 2}
          - {at: 16s, action: start_broker, broker: 2}
        """), "<restart>"), monkeypatch)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "add_copy", "wake", "find"]), st.integers(0, 7),
                          st.lists(st.integers(0, 9), max_size=20)), max_size=40))
def test_rows_found_by_key_identity_as_by_the_dict(ops):
    """PristineRows.find answers as ``pristine.get(tp, -1)`` per key: keys that are a live row's own object (found by
    id), equal copies of them, woken rows, rows made again for a key once woken (with the same object or a copy),
    keys never rows."""
    from sim.replication import PristineRows
    rows, pristine = PristineRows(), {}
    objects = {p: ("t", p) for p in range(10)}         # the interned keys
    for op, p, asked in ops:
        if op in ("add", "add_copy") and objects[p] not in pristine:
            key = objects[p] if op == "add" else ("t", p)
            pristine[key] = rows.add(0, 0, (0,), 0, (0,), 1, "/a", len(rows.order) + 1, key)
        elif op == "wake" and objects[p] in pristine:
            rows.woken.append(pristine.pop(objects[p]))
        elif op == "find" and pristine and asked:
            keys = [objects[q] if q % 3 else ("t", q) for q in asked]
            assert rows.find(keys, pristine).tolist() == [pristine.get(k, -1) for k in keys]


def test_the_first_fetches_find_rows_by_identity(monkeypatch):
    """The set-up's first full fetches (at the follower and at the leader) find their pristine rows as arrays."""
    from sim.replication import PristineRows
    found = []
    real = PristineRows.find

    def spy(self, keys, pristine):
        rows = real(self, keys, pristine)
        found.append((len(keys), int((rows >= 0).sum())))
        return rows
    monkeypatch.setattr(PristineRows, "find", spy)
    monkeypatch.setattr(Replication, "pristine_min_rows", 0)
    sim = _three_brokers_70_partitions(produce_from="1s")
    sim.start()
    sim.run_until(3_000)
    assert sum(hits for _, hits in found) >= 2 * 140 * 0.9      # (followers' rows, then the leaders')
    # The rows' arrays, mirrored from the LeaderAndIsr's columns as they were appended, are the rows' own.
    for rows in sim.replication.rows.values():
        n = len(rows.order)
        assert rows._mirrored == n > 0
        # ... and the ids the LeaderAndIsr's keys came with are their own.
        ids = np.concatenate(rows._id_chunks + [np.array(rows._id_tail, dtype=np.int64)])
        assert ids.tolist() == [id(key) for key in rows.keys]
        assert [column[:n].tolist() for column in rows.arrays()] == [
            rows.leader, rows.leader_epoch, [sum(1 << r for r in isr) for isr in rows.isr]]
