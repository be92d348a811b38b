"""The two engines of the audit give identical reports on the same rows: audit.local_engine in process and
audit.spark_engine on Spark, compared exactly (every Violation, detail text included, and the summary).

The input is many logs at once, unioned into one DataFrame with distinct run ids (one Spark audit instead of
one per log): 48 runs of our engine (random cluster histories of different seeds and lengths, and scripted
runs), two variants of each with violations planted by seeded mutations (a transition dropped, states, leaders,
leader epochs, ISRs or controller epochs changed, elections inserted, a ZooKeeper wipe, election rows stripped,
nulls sprinkled over the columns), and the synthetic runs of test_audit_checks.py. The rows are shuffled: both
engines must order them themselves. Every violation kind is found, and none in the unmutated runs.
"""
from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from test_audit_checks import clean_run, history_rows, planted_run, scripted_rows

from audit import checks
from audit.checks import EPOCH_KINDS
from audit.local_engine import audit as local_audit
from audit.rows import (
    CONTROLLER_ELECTED, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION, REPLICA_TRANSITION, TOPIC_CREATED,
    TOPIC_DELETION_COMPLETED, AuditRow, rows_to_arrow,
)
from audit.spark_engine import audit as spark_audit
from controller.state_machine_harness import ScriptSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.usefixtures("quiet_engine_logs")]

TRANSITIONS = (REPLICA_TRANSITION, PARTITION_TRANSITION)
LEADERS = (PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED)


# --- mutations: each takes a run's rows (seqs spaced by 10, so rows can be inserted) and returns new rows -----

def _pick(rng, rows, test):
    candidates = [i for i, r in enumerate(rows) if test(r)]
    return rng.choice(candidates) if candidates else None


def _known(value) -> bool:
    return value is not None and value >= 0


def drop_transition(rng, rows):
    """Drop a transition that changed the state, between two of the same entity and controller epoch."""
    def between(order):
        seen, out = set(), set()
        for i in order:
            r = rows[i]
            if r.kind in TRANSITIONS:
                key = (r.controller_epoch, r.entity, r.topic, r.partition, r.replica)
                if key in seen and r.from_state != r.to_state:
                    out.add(i)
                seen.add(key)
        return out
    candidates = sorted(between(range(len(rows))) & between(range(len(rows) - 1, -1, -1)))
    if not candidates:
        return rows
    i = rng.choice(candidates)
    return rows[:i] + rows[i + 1:]


def change_state(rng, rows):
    i = _pick(rng, rows, lambda r: r.kind in TRANSITIONS)
    if i is None:
        return rows
    r = rows[i]
    field = rng.choice(("from_state", "to_state"))
    rows = list(rows)
    rows[i] = r._replace(**{field: rng.randint(0, 8)})
    return rows


def insert_after(rows, i, new):
    return rows[:i + 1] + [new._replace(seq=rows[i].seq + 5, position=rows[i].position + 5)] + rows[i + 1:]


def lower_leader_epoch(rng, rows):
    i = _pick(rng, rows, lambda r: r.kind in LEADERS and _known(r.leader_epoch) and r.leader_epoch >= 1)
    if i is None:
        return rows
    r = rows[i]
    return insert_after(rows, i, r._replace(kind=LEADER_AND_ISR_UPDATED, entity=None, from_state=None, to_state=None,
                                            replicas=None, unclean=None,
                                            leader_epoch=r.leader_epoch - rng.randint(1, r.leader_epoch)))


def another_leader(rng, rows):
    i = _pick(rng, rows, lambda r: r.kind in LEADERS and _known(r.leader) and _known(r.leader_epoch))
    if i is None:
        return rows
    r = rows[i]
    return insert_after(rows, i, r._replace(kind=LEADER_AND_ISR_UPDATED, entity=None, from_state=None, to_state=None,
                                            replicas=None, unclean=None, leader=r.leader + rng.randint(1, 3)))


def leader_out_of_isr(rng, rows):
    i = _pick(rng, rows, lambda r: r.kind in LEADERS and _known(r.leader) and r.isr)
    if i is None:
        return rows
    rows = list(rows)
    r = rows[i]
    rows[i] = r._replace(isr=[b for b in r.isr if b != r.leader], unclean=rng.choice((None, False)))
    return rows


def stranger_in_isr(rng, rows):
    i = _pick(rng, rows, lambda r: r.kind == PARTITION_TRANSITION and r.isr is not None and r.replicas is not None)
    if i is None:
        return rows
    rows = list(rows)
    rows[i] = rows[i]._replace(isr=list(rows[i].isr) + [rng.choice((7, 8, 9))])
    return rows


def older_controller_epoch(rng, rows):
    i = _pick(rng, rows, lambda r: _known(r.controller_epoch) and r.controller_epoch >= 2 and r.kind in EPOCH_KINDS
              and r.kind != CONTROLLER_ELECTED)
    if i is None:
        return rows
    rows = list(rows)
    rows[i] = rows[i]._replace(controller_epoch=rows[i].controller_epoch - rng.randint(1, rows[i].controller_epoch))
    return rows


def insert_election(rng, rows):
    i = _pick(rng, rows, lambda r: True)
    epoch = rng.choice((0, 1, 1, 2, 3, 5))
    return insert_after(rows, i, rows[i]._replace(kind=CONTROLLER_ELECTED, controller_epoch=epoch, entity=None,
                                                  topic=None, partition=-1, replica=-1, from_state=None,
                                                  to_state=None, leader=None, leader_epoch=None, isr=None,
                                                  replicas=None, unclean=None, error=None))


def zookeeper_wipe(rng, rows):
    """From an election of epoch e >= 3 on, every epoch is e - 1 lower: the history starts over at 1."""
    i = _pick(rng, rows, lambda r: r.kind == CONTROLLER_ELECTED and r.controller_epoch >= 3)
    if i is None:
        return rows
    shift = rows[i].controller_epoch - 1
    return rows[:i] + [r._replace(controller_epoch=r.controller_epoch - shift) if r.controller_epoch > shift else r
                       for r in rows[i:]]


def strip_elections(rng, rows):
    return [r for r in rows if r.kind != CONTROLLER_ELECTED]


def keep_deleted_state(rng, rows):
    """Drop the last transition (to NonExistent...) of a replica or partition of a deleted topic."""
    last_boundary, last = {}, {}
    for i, r in enumerate(rows):
        if r.kind in (TOPIC_CREATED, TOPIC_DELETION_COMPLETED):
            last_boundary[r.topic] = r.kind
        elif r.kind in TRANSITIONS:
            last[(r.entity, r.topic, r.partition, r.replica)] = i
    candidates = sorted(i for (_, topic, _, _), i in last.items()
                        if last_boundary.get(topic) == TOPIC_DELETION_COMPLETED)
    if not candidates:
        return rows
    i = rng.choice(candidates)
    return rows[:i] + rows[i + 1:]


_NULLABLE = ("entity", "topic", "partition", "replica", "from_state", "to_state", "leader", "leader_epoch", "isr",
             "replicas", "unclean", "error", "controller_epoch", "time_ms")


def sprinkle_nulls(rng, rows):
    rows = list(rows)
    for _ in range(max(3, len(rows) // 50)):
        i = rng.randrange(len(rows))
        field = rng.choice(_NULLABLE)
        value = None if field != "controller_epoch" or rng.random() < 0.5 else -1
        rows[i] = rows[i]._replace(**{field: value})
    return rows


MUTATIONS = (drop_transition, change_state, lower_leader_epoch, another_leader, leader_out_of_isr, stranger_in_isr,
             older_controller_epoch, insert_election, zookeeper_wipe, strip_elections, keep_deleted_state,
             sprinkle_nulls)


def variants(rows: list[AuditRow], seed: int, n: int) -> list[list[AuditRow]]:
    """``n`` mutated copies of a run, each with its own run id: the first with one mutation (``seed`` picks
    which, in turn), the others with 2-4 random ones."""
    rng = random.Random(seed)
    spaced = [r._replace(seq=r.seq * 10) for r in rows]
    out = []
    for k in range(n):
        if k == 0:   # the first mutation, in turn from MUTATIONS[seed], that changes something in this run
            for j in range(len(MUTATIONS)):
                chosen = [MUTATIONS[(seed + j) % len(MUTATIONS)]]
                mutated = chosen[0](rng, spaced)
                if mutated != spaced:
                    break
        else:
            chosen = rng.sample(MUTATIONS, rng.randint(2, 4))
            mutated = spaced
            for mutate in chosen:
                mutated = mutate(rng, mutated)
        run_id = f"{rows[0].run_id}~{k}:" + "+".join(m.__name__ for m in chosen)
        out.append([r._replace(run_id=run_id) for r in mutated])
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[AuditRow]:
    return build_corpus(tmp_path_factory.mktemp("audit-differential"))


def build_corpus(base) -> list[AuditRow]:
    """The rows of every run (module docstring), shuffled; event logs are written under ``base``."""
    runs = [history_rows(seed, 30 + (seed * 7) % 70, base / f"h{seed}") for seed in range(44)]
    specs = [ScriptSpec(brokers=4, partitions=8, kill=(1, 2)),
             ScriptSpec(brokers=3, partitions=6, kill=(0, 1, 2), unclean_leader_election_enable=True, seed=5),
             ScriptSpec(brokers=5, partitions=10, replication_factor=2, kill=(4,), seed=9,
                        extra_topics={"logs": (3, 1)}),
             ScriptSpec(brokers=3, partitions=4, kill=(), seed=2)]
    runs += [scripted_rows(spec, base / f"s{i}", f"scripted-{i}") for i, spec in enumerate(specs)]
    rows = [r for run in runs for r in run]
    for i, run in enumerate(runs):
        for variant in variants(run, 1000 + i, 2):
            rows += variant
    rows += clean_run("synthetic-clean") + planted_run("synthetic-planted")
    rows += [r for v in variants(planted_run("synthetic-mutated"), 7, 3) for r in v]
    random.Random(0).shuffle(rows)
    return rows


def assert_same(local, spark) -> None:
    if spark.violations != local.violations:
        only_local = sorted(set(local.violations) - set(spark.violations), key=checks.sort_key)[:5]
        only_spark = sorted(set(spark.violations) - set(local.violations), key=checks.sort_key)[:5]
        pytest.fail(f"the engines disagree: only local {only_local}, only spark {only_spark}")
    assert spark.findings == local.findings
    assert spark.summary == local.summary


def test_both_engines_give_identical_reports(spark, corpus):
    df = spark.createDataFrame(pa.Table.from_batches([rows_to_arrow(corpus)]))
    local = local_audit(corpus)
    on_spark = spark_audit(df)
    assert_same(local, on_spark)

    # The comparison means something: many runs, every kind found, nothing in the runs our engine wrote.
    summary = local.summary
    assert summary["runs"] == 48 * 3 + 2 + 3 and summary["rows"] == len(corpus) > 30_000, summary
    assert all(n > 0 for n in summary["violations_by_kind"].values()), summary["violations_by_kind"]
    assert all(n > 0 for n in summary["findings_by_kind"].values()), summary["findings_by_kind"]
    assert all("~" in run or run == "synthetic-planted" for run in summary["violations_by_run"]), \
        sorted(summary["violations_by_run"])
    assert sum("~" in run for run in summary["violations_by_run"]) > 60

    # With a limit: the first violations in report order, and the same exact counts.
    limited = spark_audit(df, limit=40)
    assert_same(local_audit(corpus, limit=40), limited)
    assert limited.violations == local.violations[:40] and limited.summary["listed"] == 40
    assert limited.findings == local.findings[:40] and limited.summary["findings_listed"] == 40
    assert limited.summary["violations"] == summary["violations"] > 40


def test_kinds_found_per_mutation(corpus):
    """Each mutation plants what it is meant to (checked on the local engine; the engines agree above)."""
    expected = {"drop_transition": {"discontinuity"},
                "older_controller_epoch": {"zombie_write"},
                "lower_leader_epoch": {"leader_epoch_decreased"},
                "another_leader": {"duplicate_leader"},
                "leader_out_of_isr": {"leader_not_in_isr"},
                "stranger_in_isr": {"isr_not_in_replicas"},
                "zookeeper_wipe": {"controller_epoch_reset"},
                "keep_deleted_state": {"deleted_topic_has_state"}}
    report = local_audit(corpus)
    by_run: dict[str, set] = {}
    for v in report.violations:
        by_run.setdefault(v.run_id, set()).add(v.kind)
    hits: Counter = Counter()
    tries: Counter = Counter()
    for run in {r.run_id for r in corpus if "~" in r.run_id and not r.run_id.startswith("synthetic-")}:
        names = run.split(":", 1)[1].split("+")
        if len(names) != 1 or names[0] not in expected:
            continue
        tries[names[0]] += 1
        hits[names[0]] += bool(by_run.get(run, set()) & expected[names[0]])
    assert set(tries) == set(expected) and hits == tries, (dict(hits), dict(tries))
