"""The audit's checks, in process (audit.local_engine): every violation kind planted and found with the right
fields, the decisions of audit.checks (continuity per controller epoch, topic incarnations, eras, ...), and
clean runs of our engine — failovers, broker kills, topic deletions and re-creations, reassignments, unclean
elections — audited without a single violation.

Rows come from real runs (``random_history`` drives a ``Cluster`` with seeded random operations and writes an
event log; ``log_rows`` turns the log into AuditRows with the small test-only converter ``record_row``) and from
the synthetic builders below. test_audit_differential.py reuses all of them.
"""
from __future__ import annotations

import os
import random
from collections import Counter

import pytest

from audit import checks
from audit.checks import Violation, format_violation, sort_key
from audit.local_engine import audit
from audit.rows import (
    CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION,
    REPLICA_TRANSITION, TOPIC_CREATED, TOPIC_DELETION_COMPLETED, TOPIC_DELETION_REQUESTED, TRANSITION_FAILED,
    AuditRow,
)
from controller.embedding.cluster import Cluster, ClusterError
from controller.store.kafka_zk_client import AdminError
from controller.state_machine_harness import ScriptSpec, run_scripted
from events import records as rec
from events.log import LogReader, LogWriter
from statemachines.states import (
    NEW_PARTITION, NEW_REPLICA, NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, OFFLINE_REPLICA,
    ONLINE_PARTITION, ONLINE_REPLICA, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
)

UNCLEAN = "unclean.leader.election.enable"
REFUSED = (ClusterError, AdminError)


pytestmark = pytest.mark.usefixtures("quiet_engine_logs")


# --- rows from our engine's logs ----------------------------------------------------------------------------

_ENTITY = {rec.ENTITY_REPLICA: ENTITY_REPLICA, rec.ENTITY_PARTITION: ENTITY_PARTITION}


def record_row(run_id: str, source: str, position: int, r) -> AuditRow | None:
    """The AuditRow of one record of our log (None for kinds the audit does not read). Test-only: the real
    reader is audit's; ``position`` here is the byte offset of the record's batch."""
    t = type(r)
    head = dict(run_id=run_id, source=source, position=position, seq=r.offset, controller_id=r.controller_id,
                controller_epoch=r.controller_epoch, time_ms=r.timestamp_ms)
    blank = dict(entity=None, topic=None, partition=-1, replica=-1, from_state=None, to_state=None, leader=None,
                 leader_epoch=None, isr=None, replicas=None, unclean=None, error=None)
    if t is rec.ReplicaTransition:
        body = dict(kind=REPLICA_TRANSITION, entity=ENTITY_REPLICA, topic=r.topic, partition=r.partition,
                    replica=r.replica, from_state=r.from_state, to_state=r.to_state)
    elif t is rec.PartitionTransition:
        body = dict(kind=PARTITION_TRANSITION, entity=ENTITY_PARTITION, topic=r.topic, partition=r.partition,
                    from_state=r.from_state, to_state=r.to_state, leader=r.leader, leader_epoch=r.leader_epoch,
                    isr=list(r.isr), replicas=list(r.replicas),
                    unclean=None if r.election == rec.ELECTION_NONE else r.election == rec.ELECTION_OFFLINE_UNCLEAN)
    elif t is rec.TransitionFailed:
        body = dict(kind=TRANSITION_FAILED, entity=_ENTITY[r.entity], topic=r.topic, partition=r.partition,
                    replica=r.replica, from_state=r.from_state, to_state=r.to_state, error=r.error)
    elif t is rec.LeaderAndIsrUpdated:
        body = dict(kind=LEADER_AND_ISR_UPDATED, topic=r.topic, partition=r.partition, leader=r.leader,
                    leader_epoch=r.leader_epoch, isr=list(r.isr))
    elif t is rec.ControllerElected:
        body = dict(kind=CONTROLLER_ELECTED)
    elif t is rec.TopicCreated:
        body = dict(kind=TOPIC_CREATED, topic=r.topic)
    elif t is rec.TopicDeletionRequested:
        body = dict(kind=TOPIC_DELETION_REQUESTED, topic=r.topic)
    elif t is rec.TopicDeletionCompleted:
        body = dict(kind=TOPIC_DELETION_COMPLETED, topic=r.topic)
    else:
        return None
    return AuditRow(**{**head, **blank, **body})


def log_rows(run_id: str, log_dir) -> list[AuditRow]:
    """The AuditRows of an event log directory, in log order."""
    out = []
    for batch in LogReader(log_dir).iter_batches():
        source = os.path.basename(batch.path)
        for r in batch.records():
            row = record_row(run_id, source, batch.position, r)
            if row is not None:
                out.append(row)
    return out


def random_history(seed: int, n_actions: int, sink=None) -> Cluster:
    """A seeded history of cluster operations on 3-5 brokers: kills, restarts, session expiries, clock advances,
    controller failovers, clean stops, topic creations (also of deleted names), deletions, partition additions,
    unclean-election configs (broker and topic), preferred and unclean elections, reassignments and followers
    catching up. Operations the cluster refuses are skipped (nothing is journaled for them)."""
    rng = random.Random(seed)
    n = rng.choice((3, 4, 5))
    cluster = Cluster(seed=seed, sink=sink, configs={UNCLEAN: "true"} if rng.random() < 0.3 else {})
    names: list[str] = []

    def alive() -> list[int]:
        return sorted(b for b, s in cluster.brokers.items() if s.alive)

    def at() -> int:
        return cluster.now + rng.randint(0, 3_000)

    for b in range(n):
        cluster.start_broker(b, at=at())
    for _ in range(n_actions):
        r = rng.random()
        try:
            if r < 0.12:
                if alive():
                    cluster.kill_broker(rng.choice(alive()), at=at())
            elif r < 0.24:
                registered = set(cluster.admin.get_children("/brokers/ids"))
                dead = [b for b in range(n) if b not in alive() and str(b) not in registered]
                if dead:
                    cluster.start_broker(rng.choice(dead), at=at())
            elif r < 0.30:
                if alive():
                    cluster.expire_session(rng.choice(alive()), at=at())
            elif r < 0.38:
                cluster.advance_to(cluster.now + rng.choice((rng.randint(1, 5_000), 18_000 + rng.randint(0, 5_000))))
            elif r < 0.43:
                if cluster.controller is not None:           # the controller's broker dies: a failover
                    cluster.kill_broker(cluster.controller_id, at=at())
                    cluster.advance_to(cluster.now + 18_000 + rng.randint(0, 2_000))
            elif r < 0.47:
                if alive():
                    cluster.stop_broker(rng.choice(alive()), at=at())
            elif r < 0.60:
                gone = [t for t in names if not cluster.admin.topic_exists(t)]
                name = rng.choice(gone) if gone and rng.random() < 0.4 else f"t{len(names)}"
                if name not in names:
                    names.append(name)
                configs = {UNCLEAN: "true"} if rng.random() < 0.25 else {}
                partitions, rf = rng.randint(1, 3), rng.randint(1, 3)
                if rf <= len(alive()) and rng.random() < 0.6:
                    cluster.create_topic(name, partitions, rf, configs=configs, at=at())
                else:
                    assignment = [rng.sample(range(n), min(rf, n)) for _ in range(partitions)]
                    cluster.create_topic(name, assignment=assignment, configs=configs, at=at())
            elif r < 0.70:
                if names:
                    cluster.delete_topic(rng.choice(names), at=at())
            elif r < 0.74:
                if names:
                    topic = rng.choice(names)
                    existing = cluster.admin.get_full_replica_assignment_for_topics([topic])
                    if existing:
                        cluster.add_partitions(topic, assignment={len(existing): rng.sample(range(n), min(2, n))},
                                               at=at())
            elif r < 0.78:
                cluster.set_config("broker", "", UNCLEAN, rng.choice(("true", "false")), at=at())
            elif r < 0.84:
                cluster.elect_leaders(rng.choice(("preferred", "unclean")), None, at=at())
            elif r < 0.92:
                admin = cluster.admin
                assigned = admin.get_full_replica_assignment_for_topics(admin.get_all_topics_in_cluster())
                with_state = sorted(admin.get_topic_partition_states(sorted(assigned)))
                if with_state:
                    target = tuple(rng.sample(range(n), rng.randint(1, min(3, n))))
                    cluster.reassign_partitions({rng.choice(with_state): target}, at=at())
            else:
                cluster.catch_up_followers(at=at())
        except REFUSED:
            pass
    return cluster


def history_rows(seed: int, n_actions: int, directory, run_id: str | None = None) -> list[AuditRow]:
    """Run ``random_history`` into an event log in ``directory`` and read it back as rows."""
    with LogWriter(directory) as writer:
        random_history(seed, n_actions, writer.append)
    return log_rows(run_id or f"history-{seed}", directory)


def scripted_rows(spec: ScriptSpec, directory, run_id: str) -> list[AuditRow]:
    with LogWriter(directory) as writer:
        run_scripted(spec, writer.append)
    return log_rows(run_id, directory)


# --- synthetic rows -------------------------------------------------------------------------------------------

def row(kind: str, seq: int, *, run: str = "r", epoch: int | None = 1, **fields) -> AuditRow:
    values = dict(run_id=run, source=f"{run}.log", position=100 + seq, seq=seq, kind=kind, controller_id=0,
                  controller_epoch=epoch, time_ms=None, entity=None, topic=None, partition=-1, replica=-1,
                  from_state=None, to_state=None, leader=None, leader_epoch=None, isr=None, replicas=None,
                  unclean=None, error=None)
    values.update(fields)
    return AuditRow(**values)


def rt(seq, topic, partition, replica, from_state, to_state, **kw) -> AuditRow:
    return row(REPLICA_TRANSITION, seq, entity=ENTITY_REPLICA, topic=topic, partition=partition, replica=replica,
               from_state=from_state, to_state=to_state, **kw)


def pt(seq, topic, partition, from_state, to_state, *, leader=-1, leader_epoch=-1, isr=(), replicas=(0, 1, 2),
       **kw) -> AuditRow:
    return row(PARTITION_TRANSITION, seq, entity=ENTITY_PARTITION, topic=topic, partition=partition,
               from_state=from_state, to_state=to_state, leader=leader, leader_epoch=leader_epoch, isr=list(isr),
               replicas=list(replicas), **kw)


def laiu(seq, topic, partition, *, leader, leader_epoch, isr, **kw) -> AuditRow:
    return row(LEADER_AND_ISR_UPDATED, seq, topic=topic, partition=partition, leader=leader,
               leader_epoch=leader_epoch, isr=None if isr is None else list(isr), **kw)


def elected(seq, epoch, controller_id=0, **kw) -> AuditRow:
    return row(CONTROLLER_ELECTED, seq, epoch=epoch, controller_id=controller_id, **kw)


def created(seq, topic, **kw) -> AuditRow:
    return row(TOPIC_CREATED, seq, topic=topic, epoch=0, controller_id=-1, **kw)


def deleted(seq, topic, **kw) -> AuditRow:
    return row(TOPIC_DELETION_COMPLETED, seq, topic=topic, **kw)


def failed(seq, topic, partition, replica, from_state, to_state, error="IllegalStateException", **kw) -> AuditRow:
    entity = ENTITY_PARTITION if replica == -1 else ENTITY_REPLICA
    return row(TRANSITION_FAILED, seq, entity=entity, topic=topic, partition=partition, replica=replica,
               from_state=from_state, to_state=to_state, error=error, **kw)


def topic_life(start: int, topic: str = "t", replicas=(0, 1), *, delete: bool = True, epoch: int = 1,
               run: str = "r") -> list[AuditRow]:
    """A clean, Kafka-shaped life of a one-partition topic from seq ``start``: creation (leader epoch 0), a
    leader change (epoch 1, after replicas[0] drops out of the ISR), and, with ``delete``, its deletion."""
    kw = dict(epoch=epoch, run=run)
    lead, other = replicas[0], replicas[-1]
    out = [created(start, topic, run=run),
           pt(start + 1, topic, 0, NON_EXISTENT_PARTITION, NEW_PARTITION, replicas=replicas, **kw)]
    out += [rt(start + 2 + i, topic, 0, r, NON_EXISTENT_REPLICA, NEW_REPLICA, **kw) for i, r in enumerate(replicas)]
    s = start + 2 + len(replicas)
    out.append(pt(s, topic, 0, NEW_PARTITION, ONLINE_PARTITION, leader=lead, leader_epoch=0, isr=replicas,
                  replicas=replicas, **kw))
    out += [rt(s + 1 + i, topic, 0, r, NEW_REPLICA, ONLINE_REPLICA, **kw) for i, r in enumerate(replicas)]
    s += 1 + len(replicas)
    out.append(laiu(s, topic, 0, leader=other, leader_epoch=1, isr=(other,), **kw))
    out.append(rt(s + 1, topic, 0, lead, ONLINE_REPLICA, OFFLINE_REPLICA, **kw))
    s += 2
    if delete:
        out.append(row(TOPIC_DELETION_REQUESTED, s, topic=topic, epoch=0, run=run))
        out.append(pt(s + 1, topic, 0, ONLINE_PARTITION, OFFLINE_PARTITION, leader=other, leader_epoch=1,
                      isr=(other,), replicas=replicas, **kw))
        out.append(pt(s + 2, topic, 0, OFFLINE_PARTITION, NON_EXISTENT_PARTITION, leader=other, leader_epoch=1,
                      isr=(other,), replicas=replicas, **kw))
        s += 3
        for r in replicas:
            states = [OFFLINE_REPLICA, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL, NON_EXISTENT_REPLICA]
            if r != lead:
                states.insert(0, ONLINE_REPLICA)
            for a, b in zip(states, states[1:]):
                out.append(rt(s, topic, 0, r, a, b, **kw))
                s += 1
        out.append(deleted(s, topic, **kw))
    return out


def clean_run(run: str = "r") -> list[AuditRow]:
    """Two controller epochs, a topic created, deleted and created again, another topic that lives on."""
    rows = [elected(1, 1, run=run)]
    rows += topic_life(10, "t", (0, 1), run=run)
    rows += topic_life(50, "u", (1, 2, 0), delete=False, run=run)
    rows.append(elected(80, 2, controller_id=1, run=run))
    # The new controller re-derives states: its first transitions need no predecessor in epoch 2.
    rows.append(rt(81, "u", 0, 1, OFFLINE_REPLICA, OFFLINE_REPLICA, epoch=2, run=run))
    rows += topic_life(90, "t", (2, 0), epoch=2, run=run)   # "t" again: leader epochs start over at 0
    return rows


def found(rows, **kw) -> list[Violation]:
    return audit(rows, **kw).violations


def where(v: Violation) -> tuple:
    """A violation without its time and detail text."""
    return v[:-2]


# --- clean runs ---------------------------------------------------------------------------------------------

def test_a_clean_synthetic_run_has_no_violations():
    report = audit(clean_run())
    assert report.violations == [] and report.summary["violations"] == 0
    assert report.summary["rows"] == len(clean_run()) and report.summary["runs"] == 1


def test_scripted_runs_have_no_violations(tmp_path):
    specs = [ScriptSpec(brokers=4, partitions=12, kill=(1, 2)),
             ScriptSpec(brokers=3, partitions=6, replication_factor=2, kill=(0, 1, 2),
                        unclean_leader_election_enable=True, seed=7, extra_topics={"logs": (4, 1), "metrics": (3, 3)}),
             ScriptSpec(brokers=5, partitions=20, kill=(), seed=3)]
    for i, spec in enumerate(specs):
        rows = scripted_rows(spec, tmp_path / str(i), f"scripted-{i}")
        report = audit(rows)
        assert report.summary["transitions"] > 30 and report.violations == [], [format_violation(v)
                                                                                for v in report.violations]


def test_a_cluster_with_failover_kills_unclean_election_deletion_and_reassignment_has_no_violations(tmp_path):
    with LogWriter(tmp_path) as writer:
        cluster = Cluster(seed=3, sink=writer.append)
        cluster.start_brokers([0, 1, 2, 3])
        cluster.create_topic("t", assignment=[[1, 2], [2, 3]])
        cluster.create_topic("u", 2, 3)
        cluster.set_config("broker", "", UNCLEAN, "true", at=500)       # a ConfigChanged input
        cluster.kill_broker(2, at=1_000)
        cluster.advance_to(10_000)
        cluster.kill_broker(1, at=11_000)
        cluster.advance_to(20_000)
        cluster.start_broker(2, at=21_000)
        cluster.kill_broker(cluster.controller_id, at=22_000)            # failover
        cluster.advance_to(42_000)
        cluster.reassign_partitions({("u", 0): (3,)}, at=43_000)
        cluster.delete_topic("t", at=44_000)
        cluster.advance_to(50_000)
        cluster.start_broker(1, at=51_000)
        cluster.start_broker(0, at=52_000)
        cluster.advance_to(60_000)
        cluster.create_topic("t", assignment=[[0, 1]], at=61_000)        # the deleted name again
        cluster.stop_broker(3, at=62_000)
    rows = log_rows("scenario", tmp_path)
    kinds = Counter(r.kind for r in rows)
    assert kinds[CONTROLLER_ELECTED] >= 2 and kinds[TOPIC_DELETION_COMPLETED] == 1 and kinds[TOPIC_CREATED] == 3
    assert any(r.unclean for r in rows), "no unclean election happened"
    report = audit(rows)
    assert report.violations == [], [format_violation(v) for v in report.violations]
    assert report.summary["failures"] == kinds[TRANSITION_FAILED]


def test_random_cluster_histories_have_no_violations(tmp_path):
    """40 seeded histories of 80 operations; they do reach the paths the checks care about."""
    totals: Counter = Counter()
    for seed in range(40):
        rows = history_rows(seed, 80, tmp_path / str(seed))
        report = audit(rows)
        assert report.violations == [], (seed, [format_violation(v) for v in report.violations[:10]])
        epochs = {r.controller_epoch for r in rows if r.kind == CONTROLLER_ELECTED}
        totals["failovers"] += len(epochs) - 1
        totals["unclean"] += sum(bool(r.unclean) for r in rows)
        totals["deletions"] += report.summary["rows_by_kind"].get(TOPIC_DELETION_COMPLETED, 0)
        totals["failures"] += report.summary["failures"]
        created_names = Counter(r.topic for r in rows if r.kind == TOPIC_CREATED)
        totals["recreated"] += sum(n > 1 for n in created_names.values())
        # Kafka narrows the replicas before the ISR in a reassignment (checks.ISR_NOT_IN_REPLICAS).
        totals["isr_wider"] += sum(r.kind == PARTITION_TRANSITION and bool(set(r.isr) - set(r.replicas))
                                   for r in rows)
    assert totals["failovers"] > 150 and totals["unclean"] > 80 and totals["deletions"] > 50, totals
    assert totals["failures"] > 1000 and totals["recreated"] > 20 and totals["isr_wider"] > 0, totals


# --- each kind, planted --------------------------------------------------------------------------------------

def test_illegal_transition():
    rows = clean_run()
    last = max(r.seq for r in rows)
    # Replica 2 of u-0 is OnlineReplica; NewReplica can only be entered from NonExistentReplica. (Its first
    # transition in controller epoch 2: no continuity to break.)
    rows.append(rt(last + 1, "u", 0, 2, ONLINE_REPLICA, NEW_REPLICA, epoch=2))
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("illegal_transition", "r", "replica", "u", 0, 2, ONLINE_REPLICA, NEW_REPLICA, 2, "r.log", 100 + last + 1,
         last + 1)]
    assert violations[0].detail == "replica 2 of u-0: OnlineReplica -> NewReplica is not a legal transition of the " \
                                   "ReplicaStateMachine"


def test_illegal_partition_transition_and_unknown_states():
    rows = [pt(1, "t", 0, NON_EXISTENT_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=0, isr=(0,)),
            pt(2, "t", 0, ONLINE_PARTITION, 9),                 # no such partition state
            rt(3, "t", 0, 0, None, ONLINE_REPLICA),             # from-state not logged: not checked
            rt(4, "t", 0, 1, NEW_REPLICA, None)]
    violations = found(rows)
    assert [(v.kind, v.seq) for v in violations] == [("illegal_transition", 1), ("illegal_transition", 2)]
    assert "NonExistentPartition -> OnlinePartition" in violations[0].detail
    assert "OnlinePartition -> state 9" in violations[1].detail


def test_a_failed_transition_is_not_checked_but_counted_by_error():
    rows = clean_run() + [failed(200, "u", 0, 1, ONLINE_REPLICA, NEW_REPLICA, epoch=2),
                          failed(201, "u", 0, -1, OFFLINE_PARTITION, ONLINE_PARTITION, "StateChangeFailedException",
                                 epoch=2),
                          failed(202, "u", 0, -1, OFFLINE_PARTITION, ONLINE_PARTITION, None, epoch=2)]
    report = audit(rows)
    assert report.violations == []
    assert report.summary["failures"] == 3
    assert report.summary["failures_by_error"] == {"IllegalStateException": 1, "StateChangeFailedException": 1,
                                                   "unknown": 1}


def test_discontinuity():
    rows = clean_run()
    # Drop a replica's Online -> Offline: its deletion then starts from a state it was never in.
    i = next(i for i, r in enumerate(rows)
             if r.kind == REPLICA_TRANSITION and r.topic == "t" and r.replica == 1 and r.to_state == OFFLINE_REPLICA)
    dropped = rows.pop(i)
    nxt = rows[i]
    assert (nxt.replica, nxt.from_state) == (1, OFFLINE_REPLICA)
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("discontinuity", "r", "replica", "t", 0, 1, OFFLINE_REPLICA, REPLICA_DELETION_STARTED, 1, "r.log",
         nxt.position, nxt.seq)]
    previous = max(r.seq for r in rows if r.kind == REPLICA_TRANSITION and r.replica == 1 and r.topic == "t"
                   and r.seq < dropped.seq)
    assert violations[0].detail == (f"replica 1 of t-0: moved from OfflineReplica, but its previous transition in "
                                    f"controller epoch 1 (seq {previous}) left it in OnlineReplica")


def test_continuity_restarts_with_each_controller_epoch_and_skips_unknown_from_states():
    rows = [rt(1, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA),
            rt(2, "t", 0, 0, NEW_REPLICA, ONLINE_REPLICA),
            elected(3, 2),
            rt(4, "t", 0, 0, OFFLINE_REPLICA, OFFLINE_REPLICA, epoch=2),   # re-derived at failover: no predecessor
            rt(5, "t", 0, 0, None, ONLINE_REPLICA, epoch=2),               # not checked, sets OnlineReplica
            rt(6, "t", 0, 0, OFFLINE_REPLICA, OFFLINE_REPLICA, epoch=2),   # but OnlineReplica was the state
            rt(7, "t", 0, 1, NEW_REPLICA, ONLINE_REPLICA, epoch=2)]        # another replica: first in its epoch
    violations = found(rows)
    assert [(v.kind, v.seq, v.replica) for v in violations] == [("discontinuity", 6, 0)]
    assert "left it in OnlineReplica" in violations[0].detail and "(seq 5)" in violations[0].detail


def test_leader_epoch_decreased_within_a_topic_incarnation_only():
    rows = clean_run()
    # "t" went back to leader epoch 0 when it was created again (no violation); "u" reached leader epoch 1.
    last = max(r.seq for r in rows)
    rows.append(laiu(last + 1, "u", 0, leader=1, leader_epoch=0, isr=(1,), epoch=2))
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("leader_epoch_decreased", "r", None, "u", 0, -1, None, None, 2, "r.log", 100 + last + 1, last + 1)]
    assert violations[0].detail == "partition u-0: leader epoch 0 (leader 1) after leader epoch 1 of the same " \
                                   "topic incarnation"


def test_leader_epochs_reset_at_creation_and_at_deletion_completion():
    rows = [created(1, "t"),
            pt(2, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=5, isr=(0,)),
            deleted(3, "t"),
            pt(4, "t", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=2, isr=(1,)),  # no create row
            created(5, "t"),
            laiu(6, "t", 0, leader=2, leader_epoch=0, isr=(2,)),
            laiu(7, "t", 0, leader=2, leader_epoch=-1, isr=(2,)),     # -1: no leadership, not counted
            laiu(8, "t", 1, leader=2, leader_epoch=0, isr=(2,)),      # another partition
            laiu(9, "u", 0, leader=0, leader_epoch=9, isr=(0,)),
            laiu(10, "t", 0, leader=2, leader_epoch=3, isr=(2,)),
            laiu(11, "t", 0, leader=2, leader_epoch=1, isr=(2,)),
            laiu(12, "t", 0, leader=2, leader_epoch=2, isr=(2,))]     # still below 3
    assert [(v.kind, v.seq) for v in found(rows)] == [("leader_epoch_decreased", 11), ("leader_epoch_decreased", 12)]
    assert "after leader epoch 3" in found(rows)[1].detail


def test_duplicate_leader():
    rows = [pt(1, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=0, isr=(0, 1)),
            laiu(2, "t", 0, leader=0, leader_epoch=0, isr=(0,)),          # same leader, ISR shrink: fine
            laiu(3, "t", 0, leader=-1, leader_epoch=0, isr=(0,)),         # no leader: does not count
            laiu(4, "t", 0, leader=1, leader_epoch=0, isr=(0, 1)),        # a second leader at epoch 0
            laiu(5, "t", 0, leader=0, leader_epoch=0, isr=(0, 1)),        # the first one again: fine
            laiu(6, "t", 0, leader=1, leader_epoch=1, isr=(0, 1)),
            created(7, "t"),                                              # a new incarnation
            laiu(8, "t", 0, leader=2, leader_epoch=0, isr=(2,)),
            laiu(9, "t", 1, leader=-1, leader_epoch=2, isr=(2,)),         # no leader first ...
            laiu(10, "t", 1, leader=2, leader_epoch=2, isr=(2,)),         # ... then the first leader
            laiu(11, "t", 1, leader=3, leader_epoch=2, isr=(3,))]
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("duplicate_leader", "r", None, "t", 0, -1, None, None, 1, "r.log", 104, 4),
        ("duplicate_leader", "r", None, "t", 1, -1, None, None, 1, "r.log", 111, 11)]
    assert violations[0].detail == "partition t-0: leader 1 at leader epoch 0, but broker 0 was leader at that " \
                                   "leader epoch (seq 1)"


def test_leader_not_in_isr_unless_unclean():
    rows = [pt(1, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=0, isr=(0, 1)),
            pt(2, "t", 0, ONLINE_PARTITION, OFFLINE_PARTITION, leader=-1, leader_epoch=1, isr=(1,)),
            pt(3, "t", 0, OFFLINE_PARTITION, ONLINE_PARTITION, leader=2, leader_epoch=2, isr=(1,), unclean=True),
            pt(4, "t", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=3, isr=(1, 2), unclean=False),
            laiu(5, "t", 0, leader=0, leader_epoch=3, isr=(1,)),
            laiu(6, "t", 0, leader=1, leader_epoch=4, isr=None)]         # ISR not known: not checked
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("leader_not_in_isr", "r", "partition", "t", 0, -1, ONLINE_PARTITION, ONLINE_PARTITION, 1, "r.log", 104, 4),
        ("leader_not_in_isr", "r", None, "t", 0, -1, None, None, 1, "r.log", 105, 5)]
    assert violations[0].detail == "partition t-0: leader 0 (leader epoch 3) is not in the ISR [1, 2] and the " \
                                   "election was not unclean"


def test_isr_not_in_replicas_when_a_broker_joins_the_isr():
    rows = [pt(1, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=0, isr=(0, 3), replicas=(0, 1, 2)),
            # A reassignment to (1,) elects 1 with the replicas narrowed and the ISR not yet shrunk: fine.
            pt(2, "u", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=0, isr=(0, 1), replicas=(0, 1)),
            pt(3, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=1, isr=(0, 1), replicas=(1,)),
            laiu(4, "u", 0, leader=1, leader_epoch=2, isr=(1, 7)),       # no replicas on the row: not checked
            # ... but 7 is in the previous ISR now, so a transition carrying it is not held against:
            pt(5, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=3, isr=(1, 7), replicas=(1,)),
            pt(6, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=4, isr=(1, 8, 8, 9),
               replicas=(1, 9)),
            laiu(7, "u", 0, leader=1, leader_epoch=5, isr=None),         # ISR not known: the last known stays
            pt(8, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=6, isr=(1, 8), replicas=(1, 9))]
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("isr_not_in_replicas", "r", "partition", "t", 0, -1, NEW_PARTITION, ONLINE_PARTITION, 1, "r.log", 101, 1),
        ("isr_not_in_replicas", "r", "partition", "u", 0, -1, ONLINE_PARTITION, ONLINE_PARTITION, 1, "r.log", 106, 6)]
    assert violations[0].detail == "partition t-0: [3] joined the ISR [0, 3] (previous ISR none) without being " \
                                   "among the replicas [0, 1, 2]"
    assert violations[1].detail == "partition u-0: [8] joined the ISR [1, 8, 8, 9] (previous ISR [1, 7]) without " \
                                   "being among the replicas [1, 9]"


def test_a_reassignment_shows_an_isr_wider_than_its_replicas_without_a_violation(tmp_path):
    """Kafka's steps B2-B4: the replicas are the target's before the removed replicas leave the ISR."""
    with LogWriter(tmp_path) as writer:
        cluster = Cluster(seed=1, sink=writer.append)
        cluster.start_brokers([0, 1, 2])
        cluster.create_topic("t", assignment=[[0, 1, 2]])
        cluster.reassign_partitions({("t", 0): (2,)}, at=1_000)
    rows = log_rows("reassign", tmp_path)
    wider = [r for r in rows if r.kind == PARTITION_TRANSITION and set(r.isr) - set(r.replicas)]
    assert [(r.leader, r.isr, r.replicas) for r in wider] == [(2, [0, 1, 2], [2])]
    assert found(rows) == []
    # The row is checked all the same: a broker that joins the ISR there must be a replica.
    i = rows.index(wider[0])
    rows[i] = wider[0]._replace(isr=[0, 1, 2, 9])
    assert [(v.kind, v.seq, v.detail) for v in found(rows)] == [
        ("isr_not_in_replicas", wider[0].seq, "partition t-0: [9] joined the ISR [0, 1, 2, 9] (previous ISR [0, 1, 2]) "
                                              "without being among the replicas [2]")]


def test_controller_epoch_decreased_and_zombie_writes():
    rows = [elected(1, 3),
            rt(2, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=3),
            elected(3, 4, controller_id=1),
            rt(4, "t", 0, 1, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=3),   # the deposed controller writes on
            created(5, "u"),                                              # an input (epoch 0): not a write
            failed(6, "t", 0, 0, NEW_REPLICA, NEW_REPLICA, epoch=3),
            elected(7, 2, controller_id=2),                               # an election going backwards
            deleted(8, "u", epoch=-1),                                    # epoch not known: not checked
            elected(9, 5, controller_id=0)]
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("zombie_write", "r", "replica", "t", 0, 1, NON_EXISTENT_REPLICA, NEW_REPLICA, 3, "r.log", 104, 4),
        ("zombie_write", "r", "replica", "t", 0, 0, NEW_REPLICA, NEW_REPLICA, 3, "r.log", 106, 6),
        ("controller_epoch_decreased", "r", None, None, -1, -1, None, None, 2, "r.log", 107, 7)]
    assert violations[0].detail == "replica_transition of replica 1 of t-0 by controller 0 with epoch 3 after " \
                                   "epoch 4 was seen: written by a deposed controller"
    assert violations[2].detail == "controller 2 elected with epoch 2 after epoch 4 was seen: elections only " \
                                   "increase the controller epoch"


def test_a_controller_epoch_reset_starts_a_new_history():
    """ZooKeeper wiped: the next controller is elected with epoch 1 again (as real logs show)."""
    rows = [elected(1, 8), rt(2, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=8),
            elected(3, 9, controller_id=1),
            rt(4, "t", 0, 0, NEW_REPLICA, ONLINE_REPLICA, epoch=9),
            rt(5, "t", 0, 0, ONLINE_REPLICA, OFFLINE_REPLICA, epoch=1),    # before the reset: a zombie of epoch 1
            elected(6, 1, controller_id=2),                               # the reset
            rt(7, "t", 0, 0, OFFLINE_REPLICA, ONLINE_REPLICA, epoch=1),    # the new history: fine
            elected(8, 2, controller_id=0),
            rt(9, "t", 0, 0, ONLINE_REPLICA, OFFLINE_REPLICA, epoch=1)]    # a zombie of the new history
    violations = found(rows)
    assert [(v.kind, v.seq, v.controller_epoch) for v in violations] == [
        ("zombie_write", 5, 1), ("controller_epoch_reset", 6, 1), ("zombie_write", 9, 1)]
    assert violations[1].detail.startswith("controller_elected by controller 2 at epoch 1 after epoch 9 (highest "
                                           "so far 9): the controller epoch started over")
    assert "after epoch 2 was seen" in violations[2].detail


def test_a_reset_starts_every_check_over():
    """The wipe that resets the controller epoch loses topics, leader epochs and ISRs too: a new era."""
    rows = [elected(1, 1), rt(2, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA),
            pt(3, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=0, leader_epoch=4, isr=(0,)),
            elected(4, 2), deleted(5, "t", epoch=2),        # "t" deleted, its states left: judged as era 0 ends
            elected(6, 1),                                 # the reset: era 1
            rt(7, "t", 0, 0, OFFLINE_REPLICA, ONLINE_REPLICA),  # epoch 1 again, but no predecessor in this era
            pt(8, "t", 0, NEW_PARTITION, ONLINE_PARTITION, leader=1, leader_epoch=0, isr=(1,))]  # leader epoch 0
    assert [(v.kind, v.seq) for v in found(rows)] == [
        ("deleted_topic_has_state", 2), ("deleted_topic_has_state", 3), ("controller_epoch_reset", 6)]


def test_without_elections_in_the_run_any_row_can_reset_the_epoch():
    """A bare state-change.log has no election rows: the first row back at epoch 1 starts the new history."""
    rows = [rt(1, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=9),
            rt(2, "t", 0, 0, NEW_REPLICA, ONLINE_REPLICA, epoch=9),
            rt(3, "t", 0, 0, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=1),
            rt(4, "t", 0, 0, NEW_REPLICA, ONLINE_REPLICA, epoch=1),
            rt(5, "t", 0, 1, NON_EXISTENT_REPLICA, NEW_REPLICA, epoch=2),
            rt(6, "t", 0, 1, NEW_REPLICA, ONLINE_REPLICA, epoch=1)]
    violations = found(rows)
    assert [(v.kind, v.seq) for v in violations] == [("controller_epoch_reset", 3), ("controller_epoch_reset", 6)]
    assert "after epoch 9 (highest so far 9)" in violations[0].detail
    assert "after epoch 2 (highest so far 9)" in violations[1].detail


def test_deleted_topic_has_state():
    rows = clean_run()
    # "t" was deleted the second time in epoch 2: leave one replica short of NonExistentReplica.
    i = max(i for i, r in enumerate(rows) if r.kind == REPLICA_TRANSITION and r.topic == "t" and r.replica == 0)
    assert rows[i].to_state == NON_EXISTENT_REPLICA
    rows.pop(i)
    left = rows[i - 1]
    assert (left.replica, left.to_state) == (0, REPLICA_DELETION_SUCCESSFUL)
    completed = next(r for r in reversed(rows) if r.kind == TOPIC_DELETION_COMPLETED)
    violations = found(rows)
    assert [where(v) for v in violations] == [
        ("deleted_topic_has_state", "r", "replica", "t", 0, 0, REPLICA_DELETION_STARTED, REPLICA_DELETION_SUCCESSFUL,
         2, "r.log", left.position, left.seq)]
    assert violations[0].detail == (f"replica 0 of t-0: topic t was deleted (deletion completed at seq "
                                    f"{completed.seq}), but the last transition of this replica leaves it in "
                                    f"ReplicaDeletionSuccessful")


def test_deleted_topic_state_is_judged_by_the_last_transition_and_the_last_create_or_delete():
    rows = topic_life(1, "t", (0, 1))
    last = max(r.seq for r in rows)
    # A transition after the deletion completed (a replica coming back) leaves state behind ...
    back = rows + [rt(last + 1, "t", 0, 1, NON_EXISTENT_REPLICA, NEW_REPLICA)]
    assert [(v.kind, v.seq) for v in found(back)] == [("deleted_topic_has_state", last + 1)]
    # ... unless the topic was created again; a deletion request alone changes nothing.
    again = back + [created(last + 2, "t"), row(TOPIC_DELETION_REQUESTED, last + 3, topic="t", epoch=0)]
    assert found(again) == []
    # A partition left in OfflinePartition is state too.
    partition_left = [r for r in rows if not (r.kind == PARTITION_TRANSITION and r.to_state == NON_EXISTENT_PARTITION)]
    assert [(v.kind, v.entity, v.to_state) for v in found(partition_left)] == [
        ("deleted_topic_has_state", "partition", OFFLINE_PARTITION)]


# --- the report ---------------------------------------------------------------------------------------------

def planted_run(run: str) -> list[AuditRow]:
    """A run with a violation of every kind."""
    rows = clean_run(run)
    last = max(r.seq for r in rows)
    kw = dict(run=run, epoch=2)
    rows += [rt(last + 1, "u", 0, 0, ONLINE_REPLICA, REPLICA_DELETION_SUCCESSFUL, **kw),      # illegal
             rt(last + 2, "u", 0, 0, ONLINE_REPLICA, OFFLINE_REPLICA, **kw),                  # discontinuity
             laiu(last + 3, "u", 0, leader=2, leader_epoch=0, isr=(2,), **kw),                # epoch down, dup
             laiu(last + 4, "u", 0, leader=2, leader_epoch=5, isr=(0,), **kw),                # not in ISR
             pt(last + 5, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=2, leader_epoch=6, isr=(2, 5),
                replicas=(0, 1, 2), **kw),                                                    # 5 not a replica
             rt(last + 6, "t", 0, 2, NON_EXISTENT_REPLICA, NEW_REPLICA, **kw),                # deleted topic
             elected(last + 7, 1, controller_id=3, run=run),                                  # a reset
             elected(last + 8, 3, run=run), elected(last + 9, 2, run=run),                    # decreased
             rt(last + 10, "u", 0, 1, ONLINE_REPLICA, ONLINE_REPLICA, run=run, epoch=2),      # zombie
             # no leader first at a leader epoch, then two (another zombie each)
             laiu(last + 11, "v", 0, leader=-1, leader_epoch=3, isr=(1,), **kw),
             laiu(last + 12, "v", 0, leader=1, leader_epoch=3, isr=(1,), **kw),
             laiu(last + 13, "v", 0, leader=2, leader_epoch=3, isr=(2,), **kw),              # duplicate
             # an ISR not known in between: 5 was in the ISR before
             laiu(last + 14, "u", 0, leader=2, leader_epoch=7, isr=None, **kw),
             pt(last + 15, "u", 0, ONLINE_PARTITION, ONLINE_PARTITION, leader=2, leader_epoch=8, isr=(2, 5),
                replicas=(0, 1, 2), **kw)]
    return rows


def test_every_kind_in_one_run_sorted_with_exact_counts_and_a_limit():
    rows = planted_run("p")
    report = audit(rows)
    kinds = Counter(v.kind for v in report.violations)
    assert set(kinds) == set(checks.VIOLATION_KINDS), kinds
    assert report.violations == sorted(report.violations, key=sort_key)
    assert report.summary["violations"] == len(report.violations) == sum(report.summary["violations_by_kind"].values())
    assert report.summary["violations_by_kind"] == {k: kinds[k] for k in checks.VIOLATION_KINDS}
    assert report.summary["violations_by_run"] == {"p": len(report.violations)}
    assert report.summary["violations_by_source"] == {"p.log": len(report.violations)}
    limited = audit(rows, limit=3)
    assert limited.violations == report.violations[:3]
    assert {k: v for k, v in limited.summary.items() if k != "listed"} == \
        {k: v for k, v in report.summary.items() if k != "listed"}
    assert limited.summary["listed"] == 3
    assert all(format_violation(v).startswith("p.log@") for v in report.violations)


def test_runs_are_independent_and_input_order_does_not_matter():
    a, b = planted_run("a"), clean_run("b")
    # The same violations whether run "a" is audited alone or with "b", in any order of the input.
    alone = audit(a)
    mixed = a + b
    random.Random(5).shuffle(mixed)
    together = audit(mixed)
    assert together.violations == alone.violations
    assert together.summary["runs"] == 2 and together.summary["rows"] == len(a) + len(b)
    assert together.summary["violations_by_run"] == {"a": len(alone.violations)}
    # Plain tuples in the AuditRow column order are rows too.
    assert audit([tuple(r) for r in mixed]) == together


def test_an_empty_input_gives_an_empty_report():
    report = audit([])
    assert report.violations == [] and report.summary["runs"] == 0 and report.summary["rows"] == 0
    assert set(report.summary["violations_by_kind"]) == set(checks.VIOLATION_KINDS)
