"""The batch path and the reference path of the state machines write the same log.

``ReplicaStateMachine.batch_path`` and ``PartitionStateMachine.batch_path`` (class attributes, default True)
choose between transitions on many partitions as array operations (the batch path) and one partition at a time
(the reference path). Whatever the path, a controller must write the same records, leave the same store and
reach the same state. Here random clusters (3 to 8 brokers, up to ~200 partitions) go through random programs of
operations — topic creations (RF 1 to 3, some with ``unclean.leader.election.enable``), broker kills with and
without their sessions timing out, restarts, controlled shutdowns (``stop_broker`` and single requests),
session expiries (the controller's too), controller failover, log directory failures, reassignments (API and
znode, cancellations), preferred and unclean elections (API and znode), topic deletions, partition additions,
config changes, followers catching up and AlterPartition ISR shrinks — once on each path, and the two runs must
give:

* the same records, in the same order, every field equal and of the same type (a numpy scalar where the
  reference path has an int is a difference: it would not encode the same);
* the same result (or the same refusal) for every action;
* the same store (``cluster.zk.dump()``), the same ``cluster.digest()`` and the same folded
  ``cluster.view.digest()``.

A failure names the first differing record (its index, both records, and the input that caused it) and the
program, as calls, that led there. Both runs get identical inputs: a program is a list of plain tuples, resolved
against the cluster as it runs (which broker is alive, which partitions exist), with every random choice drawn
from a ``random.Random`` seeded by the program itself.

``test_large_cluster_paths_agree`` is one deterministic larger case (12 brokers, 5,000 partitions).
"""
from __future__ import annotations

import random
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import msgpack
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from controller.embedding.cluster import BrokerServer, Cluster, ClusterError
from controller.store.kafka_zk_client import AdminError
from events.records import (
    ELECTION_NAMES, UPDATE_REASON_NAMES, LeaderAndIsrUpdated, PartitionTransition, ReplicaTransition,
    TransitionFailed,
)
from statemachines import partition_batch
from statemachines.partition_state_machine import PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine
from statemachines.states import ReplicaState

UNCLEAN = "unclean.leader.election.enable"
SESSION_TIMEOUT_MS = 18_000           # zookeeper.session.timeout.ms (default)
MAX_PARTITIONS = 200                  # partitions in the store at any time, at most
REFUSED = (ClusterError, AdminError)
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


# --- the switch ---------------------------------------------------------------------------------------------

@contextmanager
def path(batch: bool):
    """Both state machines on the batch path (True) or the reference path (False), put back after."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReplicaStateMachine, "batch_path", batch)
        mp.setattr(PartitionStateMachine, "batch_path", batch)
        mp.setattr(partition_batch, "BATCH_MIN", 1)   # small clusters take the batch paths too
        yield


pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


# --- one run ----------------------------------------------------------------------------------------------

@dataclass
class Run:
    """What one run of a program left: its records, the outcome of each action, the store and the digests."""
    records: list
    outcomes: list = field(default_factory=list)     # (call, result repr)
    dump: str = ""
    digest: str = ""
    view_digest: str = ""
    paths_seen: set = field(default_factory=set)     # the batch_path values the controllers' state machines had


def _outcome(result) -> str:
    """An action's result as text both runs can compare (a started broker by its state, not its address)."""
    if isinstance(result, BrokerServer):
        return f"BrokerServer({result.broker_id}, alive={result.alive}, broker_epoch={result.broker_epoch})"
    return _ADDRESS.sub("", repr(result))


class Driver:
    """Carries out a program (a list of op tuples) on a fresh cluster. Every choice an op makes is either in
    the op or drawn from a ``random.Random`` seeded by the op, against the cluster's current state: two runs
    of the same program on clusters that behave the same make the same calls."""

    def __init__(self, n_brokers: int, seed: int, configs: dict):
        self.n_brokers = n_brokers
        self.cluster = Cluster(seed=seed, configs=configs)
        self.calls: list[str] = [f"cluster = Cluster(seed={seed}, configs={configs})"]
        self.outcomes: list[tuple[str, str]] = []
        self.paths_seen: set = set()
        self.topic_count = 0

    # --- bookkeeping ----------------------------------------------------------------------------------
    def do(self, call: str, fn, *args, **kwargs):
        self.calls.append(call)
        try:
            result = fn(*args, **kwargs)
            outcome = _outcome(result)
        except REFUSED as e:
            result, outcome = None, f"refused: {type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 — an engine error is an outcome to compare, not a crash here
            result, outcome = None, f"raised: {type(e).__name__}: {e}"
        if outcome.startswith(("refused", "raised")):
            self.calls[-1] += f"   # {outcome}"
            if outcome.startswith("raised"):
                event("an action raised")
        self.outcomes.append((call, outcome))
        controller = self.cluster.controller
        if controller is not None:
            self.paths_seen.add((type(controller.replica_state_machine).batch_path,
                                 type(controller.partition_state_machine).batch_path,
                                 controller.replica_state_machine.batch_path,
                                 controller.partition_state_machine.batch_path))
        return result

    def alive(self) -> list[int]:
        return sorted(b for b, s in self.cluster.brokers.items() if s.alive)

    def dead(self) -> list[int]:
        return [b for b in range(self.n_brokers) if b not in self.alive()]

    def registered(self) -> set[int]:
        return {int(c) for c in self.cluster.admin.get_children("/brokers/ids")}

    def partitions(self, with_state: bool = False) -> list[tuple]:
        admin = self.cluster.admin
        tps = sorted(admin.get_full_replica_assignment_for_topics(admin.get_all_topics_in_cluster()))
        if with_state:
            tps = sorted(admin.get_topic_partition_states(tps))
        return tps

    def topics(self) -> list[str]:
        return sorted(self.cluster.admin.get_all_topics_in_cluster())

    def at(self, dt: int) -> int:
        return self.cluster.now + dt

    def controller_broker(self) -> int | None:
        controller = self.cluster.controller
        return None if controller is None else controller.broker_id

    @staticmethod
    def pick(xs: list, i: int):
        return xs[i % len(xs)] if xs else None

    # --- the ops --------------------------------------------------------------------------------------
    def op_start(self, i: int, dt: int) -> None:
        """Start a broker that is not running (restarted before its old session expired, it exits at once)."""
        b = self.pick(self.dead(), i)
        if b is not None:
            self.do(f"cluster.start_broker({b}, at={self.at(dt)})", self.cluster.start_broker, b, at=self.at(dt))

    def op_restart_all(self, dt: int) -> None:
        """Let the sessions of killed brokers expire, then start every broker not running."""
        if self.registered() - set(self.alive()):
            t = self.at(SESSION_TIMEOUT_MS + dt)
            self.do(f"cluster.advance_to({t})", self.cluster.advance_to, t)
        for b in self.dead():
            self.do(f"cluster.start_broker({b})", self.cluster.start_broker, b)
        self.op_catch_up(0)

    def op_kill(self, i: int, dt: int, expire: bool) -> None:
        """kill -9 a broker; with ``expire``, let its session time out (advance past the session timeout)."""
        b = self.pick(self.alive(), i)
        if b is None:
            return
        t = self.at(dt)
        self.do(f"cluster.kill_broker({b}, at={t})", self.cluster.kill_broker, b, at=t)
        if expire:
            t = self.at(SESSION_TIMEOUT_MS + dt)
            self.do(f"cluster.advance_to({t})", self.cluster.advance_to, t)

    def op_stop(self, i: int, dt: int) -> None:
        """A clean stop: controlled shutdown (with Kafka's retries), then the broker stops."""
        b = self.pick(self.alive(), i)
        if b is not None:
            self.do(f"cluster.stop_broker({b}, at={self.at(dt)})", self.cluster.stop_broker, b, at=self.at(dt))

    def op_controlled_shutdown(self, i: int, dt: int) -> None:
        """One ControlledShutdown request; the broker keeps running."""
        b = self.pick(self.alive(), i)
        if b is not None:
            self.do(f"cluster.controlled_shutdown({b}, at={self.at(dt)})", self.cluster.controlled_shutdown, b,
                    at=self.at(dt))

    def op_expire(self, i: int, dt: int, controller: bool) -> None:
        b = self.controller_broker() if controller else self.pick(self.alive(), i)
        if b is not None:
            self.do(f"cluster.expire_session({b}, at={self.at(dt)})", self.cluster.expire_session, b, at=self.at(dt))

    def op_fail_over(self, dt: int) -> None:
        """The controller's broker dies and its session times out."""
        b = self.controller_broker()
        if b is not None:
            self.op_kill(self.alive().index(b), dt, True)

    def op_fail_log_dir(self, i: int, dt: int) -> None:
        b = self.pick(self.alive(), i)
        if b is not None:
            self.do(f"cluster.fail_log_dir({b}, at={self.at(dt)})", self.cluster.fail_log_dir, b, at=self.at(dt))

    def op_advance(self, dt: int) -> None:
        self.do(f"cluster.advance_to({self.at(dt)})", self.cluster.advance_to, self.at(dt))

    def op_create(self, partitions: int, rf: int, unclean: bool, explicit: bool, seed: int, dt: int) -> None:
        rf = min(rf, 3, self.n_brokers)
        partitions = min(partitions, MAX_PARTITIONS - len(self.partitions()))
        if partitions <= 0:
            return
        name = f"t{self.topic_count}"
        self.topic_count += 1
        configs = {UNCLEAN: "true"} if unclean else {}
        t = self.at(dt)
        if explicit or rf > len(self.alive()):
            rng = random.Random(seed)   # an explicit assignment, possibly on dead brokers
            assignment = [tuple(rng.sample(range(self.n_brokers), rf)) for _ in range(partitions)]
            self.do(f"cluster.create_topic({name!r}, assignment={assignment}, configs={configs}, at={t})",
                    self.cluster.create_topic, name, assignment=assignment, configs=configs, at=t)
        else:
            self.do(f"cluster.create_topic({name!r}, {partitions}, {rf}, configs={configs}, at={t})",
                    self.cluster.create_topic, name, partitions, rf, configs=configs, at=t)

    def op_add_partitions(self, i: int, more: int, explicit: bool, seed: int, dt: int) -> None:
        name = self.pick(self.topics(), i)
        if name is None:
            return
        more = min(more, MAX_PARTITIONS - len(self.partitions()))
        if more <= 0:
            return
        existing = self.cluster.admin.get_full_replica_assignment_for_topics([name])
        current = len(existing)
        rf = len(existing[(name, 0)].replicas) if (name, 0) in existing else 1
        t = self.at(dt)
        if explicit or rf > len(self.alive()) or not current:
            rng = random.Random(seed)
            assignment = {current + k: tuple(rng.sample(range(self.n_brokers), min(rf, self.n_brokers)))
                          for k in range(more)}
            self.do(f"cluster.add_partitions({name!r}, assignment={assignment}, at={t})",
                    self.cluster.add_partitions, name, assignment=assignment, at=t)
        else:
            self.do(f"cluster.add_partitions({name!r}, {current + more}, at={t})", self.cluster.add_partitions,
                    name, current + more, at=t)

    def op_delete(self, i: int, dt: int) -> None:
        name = self.pick(self.topics(), i) or "nope"
        self.do(f"cluster.delete_topic({name!r}, at={self.at(dt)})", self.cluster.delete_topic, name, at=self.at(dt))

    def op_unclean(self, i: int, broker_level: bool, value: bool, dt: int) -> None:
        text = "true" if value else "false"
        if broker_level:
            self.do(f"cluster.set_config('broker', '', {UNCLEAN!r}, {text!r}, at={self.at(dt)})",
                    self.cluster.set_config, "broker", "", UNCLEAN, text, at=self.at(dt))
            return
        name = self.pick(self.topics(), i) or "nope"
        self.do(f"cluster.set_config('topic', {name!r}, {UNCLEAN!r}, {text!r}, at={self.at(dt)})",
                self.cluster.set_config, "topic", name, UNCLEAN, text, at=self.at(dt))

    def op_reassign(self, k: int, seed: int, via_zk: bool, catch_up: bool, dt: int) -> None:
        # Only partitions with a /state znode (test_operations_random explains why).
        tps = self.partitions(with_state=True)
        if not tps:
            return
        rng = random.Random(seed)
        chosen = sorted(set(rng.choice(tps) for _ in range(k)))
        request = {}
        for tp in chosen:
            r = rng.random()
            if r < 0.8 or via_zk:
                request[tp] = tuple(rng.sample(range(self.n_brokers), rng.randint(1, min(3, self.n_brokers))))
            else:
                request[tp] = None                      # cancel
        via = "zk" if via_zk else "api"
        t = self.at(dt)
        self.do(f"cluster.reassign_partitions({request}, via={via!r}, at={t})", self.cluster.reassign_partitions,
                request, via=via, at=t)
        if catch_up:                                    # the new replicas join the ISR: the reassignment ends
            self.op_catch_up(0)

    def op_elect(self, unclean: bool, everything: bool, via_zk: bool, k: int, seed: int, dt: int) -> None:
        if not unclean:
            self.op_catch_up(0)                         # preferred replicas that restarted are back in the ISR
        kind = "unclean" if unclean else "preferred"
        via = "zk" if via_zk and not unclean else "api"
        partitions = None
        if not everything:
            tps = self.partitions()
            rng = random.Random(seed)
            partitions = sorted(set(rng.choice(tps) for _ in range(k))) if tps else [("nope", 0)]
        t = self.at(dt)
        self.do(f"cluster.elect_leaders({kind!r}, {partitions}, via={via!r}, at={t})", self.cluster.elect_leaders,
                kind, partitions, via=via, at=t)

    def op_catch_up(self, dt: int) -> None:
        self.do(f"cluster.catch_up_followers(at={self.at(dt)})", self.cluster.catch_up_followers, at=self.at(dt))

    def op_shrink_isr(self, seed: int, dt: int) -> None:
        """A running leader reports a smaller ISR (AlterPartition) for up to five of its partitions."""
        existing = set(self.partitions())
        rng = random.Random(seed)
        by_leader: dict[int, dict] = {}
        for b in self.alive():
            known = self.cluster.brokers[b].leader_and_isr
            for tp, (leader, leader_epoch, isr, partition_epoch) in sorted(known.items()):
                if leader == b and tp in existing:
                    new_isr = (b,) + tuple(r for r in isr if r != b and rng.random() < 0.5)
                    by_leader.setdefault(b, {})[tp] = (leader_epoch, new_isr, 0, partition_epoch)
        if not by_leader:
            return
        b = rng.choice(sorted(by_leader))
        items = sorted(by_leader[b].items())
        partitions = dict(rng.sample(items, min(5, len(items))))
        t = self.at(dt)
        self.do(f"cluster.alter_partition({b}, {partitions}, at={t})", self.cluster.alter_partition, b, partitions,
                at=t)

    def apply(self, op: tuple) -> None:
        getattr(self, "op_" + op[0])(*op[1:])

    # --- a whole run ----------------------------------------------------------------------------------
    def run(self, initial: list[int], program: list[tuple]) -> Run:
        for b in initial:
            self.do(f"cluster.start_broker({b})", self.cluster.start_broker, b)
        for op in program:
            self.apply(op)
        cluster = self.cluster
        return Run(records=list(cluster.journal.records), outcomes=self.outcomes, dump=cluster.zk.dump(),
                   digest=cluster.digest(), view_digest=cluster.view.digest(), paths_seen=self.paths_seen)


def run_program(batch: bool, n_brokers: int, seed: int, configs: dict, initial: list[int],
                program: list[tuple]) -> tuple[Run, Driver]:
    with path(batch):
        driver = Driver(n_brokers, seed, configs)
        return driver.run(initial, program), driver


# --- the comparison ---------------------------------------------------------------------------------------

def _packed(value) -> bytes:
    """msgpack bytes of a record (or a list of them): equal values of other types (a numpy integer, a bool
    for an int) pack differently, a tuple and a list the same (``==`` tells those apart)."""
    return msgpack.packb(value, default=lambda o: f"<{type(o).__module__}.{type(o).__qualname__}> {o!r}")


def _first_difference(a: list, b: list) -> int | None:
    if a == b and _packed(a) == _packed(b):
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y or _packed(x) != _packed(y):
            return i
    return min(len(a), len(b))


def _show(records: list, i: int) -> str:
    if i >= len(records):
        return "(none: the run ended here)"
    rec = records[i]
    text = repr(rec)
    fields = getattr(rec, "_fields", None) or range(len(rec))
    odd = [f"{f}: {type(v).__name__}" for f, v in zip(fields, rec) if type(v).__module__ != "builtins"]
    return text + (f"  (non-builtin field types: {', '.join(odd)})" if odd else "")


def _cause(records: list, i: int) -> str:
    """The input record that caused records[i] (the same in both runs up to i)."""
    if i >= len(records):
        return "?"
    cause = getattr(records[i], "cause_offset", -1)
    if 0 <= cause < len(records) and getattr(records[cause], "offset", None) == cause:
        text = repr(records[cause])
    else:
        text = next((repr(r) for r in records if getattr(r, "offset", None) == cause), f"offset {cause}")
    return text if len(text) <= 600 else text[:600] + " ...)"


def compare(batch: Run, reference: Run, calls: list[str]) -> None:
    """Fail with the first difference between the two runs (records first: it is where they part)."""
    program = "\n".join(f"  {i:3}: {c}" for i, c in enumerate(calls))
    i = _first_difference(batch.records, reference.records)
    if i is not None:
        pytest.fail(
            f"the paths part at record {i} (of {len(batch.records)} on the batch path, {len(reference.records)} on "
            f"the reference path):\n"
            f"  batch path:     {_show(batch.records, i)}\n"
            f"  reference path: {_show(reference.records, i)}\n"
            f"  caused by input: {_cause(reference.records, i)}\n"
            f"  previous record: {reference.records[i - 1] if 0 < i <= len(reference.records) else None!r}\n"
            f"the program, as calls on the reference path:\n{program}", pytrace=False)
    j = _first_difference(batch.outcomes, reference.outcomes)
    if j is not None:
        pytest.fail(f"same records, but action {j} had another outcome:\n  batch path:     "
                    f"{batch.outcomes[j] if j < len(batch.outcomes) else None}\n  reference path: "
                    f"{reference.outcomes[j] if j < len(reference.outcomes) else None}\n"
                    f"the program, as calls on the reference path:\n{program}", pytrace=False)
    if batch.dump != reference.dump:
        a, b = batch.dump.splitlines(), reference.dump.splitlines()
        k = _first_difference(a, b)
        pytest.fail(f"same records, but the stores differ at line {k}:\n  batch path:     "
                    f"{a[k] if k < len(a) else None!r}\n  reference path: {b[k] if k < len(b) else None!r}\n"
                    f"the program, as calls on the reference path:\n{program}", pytrace=False)
    assert batch.digest == reference.digest, f"same records and store, other cluster digests\n{program}"
    assert batch.view_digest == reference.view_digest, f"same records, other view digests\n{program}"
    assert batch.paths_seen <= {(True, True, True, True)}, batch.paths_seen
    assert reference.paths_seen <= {(False, False, False, False)}, reference.paths_seen


def run_both(n_brokers: int, seed: int, configs: dict, initial: list[int], program: list[tuple]) -> Run:
    batch, _ = run_program(True, n_brokers, seed, configs, initial, program)
    reference, driver = run_program(False, n_brokers, seed, configs, initial, program)
    compare(batch, reference, driver.calls)
    return reference


# --- the programs -----------------------------------------------------------------------------------------

_dt = st.integers(0, 3_000)
_i = st.integers(0, 7)
_seed = st.integers(0, 2**16)

# (weight, op): the weights make broker failures, restarts and the operations that move leaders common.
WEIGHTED_OPS = (
    (3, st.tuples(st.just("create"), st.integers(1, 40), st.integers(1, 3), st.booleans(), st.booleans(), _seed,
                  _dt)),
    (5, st.tuples(st.just("kill"), _i, _dt, st.booleans())),
    (3, st.tuples(st.just("start"), _i, _dt)),
    (2, st.tuples(st.just("restart_all"), _dt)),
    (3, st.tuples(st.just("stop"), _i, _dt)),
    (1, st.tuples(st.just("controlled_shutdown"), _i, _dt)),
    (2, st.tuples(st.just("expire"), _i, _dt, st.booleans())),
    (1, st.tuples(st.just("fail_over"), _dt)),
    (1, st.tuples(st.just("fail_log_dir"), _i, _dt)),
    (2, st.tuples(st.just("advance"), st.sampled_from((1, 1_000, SESSION_TIMEOUT_MS + 1, 60_000, 320_000)))),
    (2, st.tuples(st.just("add_partitions"), _i, st.integers(1, 20), st.booleans(), _seed, _dt)),
    (2, st.tuples(st.just("delete"), _i, _dt)),
    (2, st.tuples(st.just("unclean"), _i, st.booleans(), st.booleans(), _dt)),
    (3, st.tuples(st.just("reassign"), st.integers(1, 8), _seed, st.booleans(), st.booleans(), _dt)),
    (3, st.tuples(st.just("elect"), st.booleans(), st.booleans(), st.booleans(), st.integers(1, 10), _seed, _dt)),
    (3, st.tuples(st.just("catch_up"), _dt)),
    (2, st.tuples(st.just("shrink_isr"), _seed, _dt)),
)
OPS = st.one_of(*(op for weight, op in WEIGHTED_OPS for _ in range(weight)))


@st.composite
def scenarios(draw):
    n_brokers = draw(st.integers(3, 8))
    configs = {}
    if draw(st.booleans()):
        configs["log.dirs"] = "/d1,/d2"                 # fail_log_dir takes one of two offline, not the broker
    if draw(st.integers(0, 4)) == 0:
        configs[UNCLEAN] = "true"
    # Most brokers start; broker 0 always (it becomes the controller).
    initial = [0] + [b for b in range(1, n_brokers) if draw(st.integers(0, 9)) > 0]
    topics = draw(st.lists(st.tuples(st.just("create"), st.integers(1, 60), st.integers(1, 3), st.booleans(),
                                     st.just(False), _seed, st.just(0)), min_size=1, max_size=4))
    program = topics + draw(st.lists(OPS, min_size=3, max_size=30))
    return n_brokers, draw(_seed), configs, initial, program


def _events(run: Run) -> None:
    """Hypothesis statistics (pytest --hypothesis-show-statistics): which paths the examples reached."""
    seen = set()
    for r in run.records:
        t = type(r)
        if t is PartitionTransition and r.election:
            seen.add(f"election: {ELECTION_NAMES.get(r.election, r.election)}")
        elif t is LeaderAndIsrUpdated:
            seen.add(f"LeaderAndIsrUpdated: {UPDATE_REASON_NAMES.get(r.reason, r.reason)}")
        elif t is ReplicaTransition:
            seen.add(f"replica -> {ReplicaState.from_byte(r.to_state)}")
        elif t is TransitionFailed:
            seen.add("TransitionFailed")
    for name in sorted(seen):
        event(name)
    event(f"records: {len(run.records) // 1000 * 1000}+")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_batch_and_reference_paths_write_the_same_log(scenario):
    n_brokers, seed, configs, initial, program = scenario
    _events(run_both(n_brokers, seed, configs, initial, program))


# --- one larger case --------------------------------------------------------------------------------------

def test_large_cluster_paths_agree():
    """12 brokers, 5,000 partitions at RF 3 (one topic of three with unclean leader election enabled): two
    brokers killed one after the other (each session expires: ISR shrinks, offline elections), a third stopped
    with a controlled shutdown, then all three started again, caught up, and a preferred election."""
    n, seed = 12, 11

    def scenario(batch: bool) -> tuple[Run, Driver]:
        with path(batch):
            d = Driver(n, seed, {})
            c = d.cluster
            for b in range(n):
                d.do(f"cluster.start_broker({b})", c.start_broker, b)
            for name, count in (("big0", 2_000), ("big1", 2_000), ("big2", 1_000)):
                cfg = {UNCLEAN: "true"} if name == "big1" else {}
                d.do(f"cluster.create_topic({name!r}, {count}, 3, configs={cfg})", c.create_topic, name, count, 3,
                     configs=cfg)
            for b in (3, 7):
                d.op_kill(d.alive().index(b), 1_000, True)
            d.op_stop(d.alive().index(5), 1_000)
            for b in (3, 7, 5):
                d.op_start(d.dead().index(b), 500)
            assert d.alive() == list(range(n))
            d.op_elect(False, True, False, 0, 0, 1_000)     # catches the followers up first
            d.op_advance(1_000)
            run = Run(records=list(c.journal.records), outcomes=d.outcomes, dump=c.zk.dump(), digest=c.digest(),
                      view_digest=c.view.digest(), paths_seen=d.paths_seen)
            return run, d

    batch, _ = scenario(True)
    reference, driver = scenario(False)
    compare(batch, reference, driver.calls)
    # The case reaches the paths it is meant to exercise.
    kinds = {ELECTION_NAMES[r.election] for r in reference.records if type(r) is PartitionTransition}
    assert {"new_partition", "offline", "controlled_shutdown", "preferred"} <= kinds, kinds
    shrinks = sum(type(r) is LeaderAndIsrUpdated and UPDATE_REASON_NAMES[r.reason] == "offline_replica"
                  for r in reference.records)
    assert shrinks > 1_000, shrinks
