"""The audit's checks as Spark DataFrame expressions: for many or large logs, locally or on a cluster.

Gives exactly the report of :mod:`audit.local_engine` on the same rows (what is checked, and every
decision about order, nulls and scope, is written once in :mod:`audit.checks`). The input is any
DataFrame with the columns of ``audit.rows.SPARK_DDL`` (a reader's Python Data Source, Arrow
batches, a Parquet copy); nothing runs per row in Python — no UDF.

How it runs
- The rows are read once, numbered (``_id``) and persisted; every check reads them from there.
- Each check projects only the columns it needs and finds violations as small rows: the row's
  ``_id``, run and order, the kind, and what the check compared with (``a``, ``b``, ``prev_isr``).
  Only the violations listed (at most ``limit`` of each list) are looked up again for their whole
  rows; the counts by kind, run and source are aggregated in Spark, so they are exact.
- What changes rarely is collected once (one job) and handed to the checks as small tables: the
  runs that have elections (from the row counts), their elections, and each topic's create/delete
  rows. From them come the controller-epoch resets (eras), the topics' incarnations and their
  deletions. A row's era, or its topic's incarnation, is the number of resets, or of the topic's
  create/delete rows, up to it: a broadcast join with those boundaries as intervals of the run's
  order. The rows are never sorted by run: every window is keyed by run, topic and partition or
  finer, except the per-run pass over the runs without elections (a bare ``state-change.log``).

The checks
- controller epochs, in a run with elections: an election at epoch 1 after an election at a higher
  epoch is a reset (found among the collected elections); the highest epoch of earlier rows in an
  era steps up only where an epoch is first seen in the era, so the first position of each (run,
  era, epoch) — an aggregation — gives the steps, as intervals; a row below its interval's highest
  epoch is a zombie write (or a decreased election). In a run without elections any row may start an
  era, so a window over the run's rows with an epoch (a narrow projection) finds ``lag`` (the previous
  row's epoch), the running ``max``, the resets, their running ``sum`` (the era) and the highest epoch
  of earlier rows in the era (a running ``max`` of era and epoch packed in one long);
- legality: the (entity, from, to) code of a transition against the codes of the legal-transition
  table that :func:`statemachines.states.legal_transition_rows` derives from the one definition;
- continuity: one window per entity and era — (run, topic, partition, era, entity, replica) — ordered
  by (controller epoch, incarnation, seq, source, position): the row before a transition is its
  predecessor when it has the same controller epoch and incarnation (``lag`` of all three); the same
  window's whole-partition ``max`` of the position marks the entity's last transition in the era;
- per (run, era, topic, incarnation, partition): the running ``max`` of earlier leader epochs, the
  ``last`` earlier ISR (``array_except`` finds brokers that joined the ISR without being replicas),
  ``first(leader)`` per leader epoch, ``array_contains`` for the leader in its ISR;
- deleted topics: the topics whose last create/delete row in the era is a deletion (from the collected
  rows, joined by broadcast) against each entity's last transition in the era; the same last
  transitions find replicas stuck in ReplicaDeletionIneligible;
- findings (unclean, failed and refused transitions): conditions on the rows, as the violations.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from audit.checks import (
    CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, DELETED_TOPIC_HAS_STATE, DELETION_STUCK, DISCONTINUITY,
    DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION, FINDING_KINDS, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION,
    ISR_NOT_IN_REPLICAS, LEADER_EPOCH_DECREASED, LEADER_KINDS, LEADER_NOT_IN_ISR, LEGAL_TRANSITIONS, NON_EXISTENT,
    REFUSED_TRANSITION, SORT_COLUMNS, TOPIC_BOUNDARY_KINDS, TRANSITION_KINDS, UNCLEAN_ELECTION, VIOLATION_KINDS,
    ZOMBIE_WRITE, Report, Violation, build_report, violation,
)
from audit.rows import COLUMNS, CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, TOPIC_DELETION_COMPLETED, \
    TRANSITION_FAILED
from audit.timeline import bucket_width
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE

__all__ = ["TransitionTimeline", "audit"]

_ORDER = ("seq", "source", "position")
_ORDER_DDL = "struct<seq:long,source:string,position:long>"
_EPOCH_BITS = 32   # a controller epoch is an int: era and epoch share one long as (era << 32) + epoch
_LOOKUP_BATCH = 50_000   # ids per lookup of the listed violations' rows


@dataclass
class TransitionTimeline:
    """What the timeline of a report needs from the rows: the transitions with a time, counted in ``buckets``
    buckets of ``width`` ms from ``lo`` (the earliest; the last bucket reaches the latest). ``lo`` and
    ``width`` stay None when no transition has a time."""
    buckets: int
    lo: int | None = None
    width: int | None = None
    counts: dict[int, int] = field(default_factory=dict)   # bucket -> transitions


def audit(rows, *, limit: int | None = None, timeline: TransitionTimeline | None = None) -> Report:
    """Run every check over the DataFrame ``rows``; list at most ``limit`` violations and at most ``limit``
    findings (counts are exact). ``timeline``, if given, is filled in from the same persisted rows."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    col = F.col
    held = []

    def persisted(df):
        held.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    try:
        base = persisted(rows.select(*COLUMNS).withColumn("_id", F.monotonically_increasing_id()))
        stats = (base.groupBy("run_id", "kind", F.when(col("kind") == TRANSITION_FAILED, col("error")).alias("error"))
                 .agg(F.count(F.lit(1)).alias("count"), F.max("controller_epoch").alias("max_epoch")).collect())
        if timeline is not None:
            _fill_timeline(base, timeline)
        with_elections = sorted({r.run_id for r in stats if r.kind == CONTROLLER_ELECTED
                                 and r.max_epoch is not None and r.max_epoch >= 0}, key=lambda r: (r is not None, r))
        bare = any(r.run_id not in with_elections for r in stats)   # a run without elections
        found = persisted(_violation_keys(base, with_elections, bare, persisted))
        counts = {(r.violation, r.run_id, r.source): r["count"]
                  for r in found.groupBy("violation", "run_id", "source").count().collect()}
        keys = []
        for kinds in (VIOLATION_KINDS, FINDING_KINDS):   # each listed up to the limit, in report order
            picked = found.filter(col("violation").isin(*kinds))
            if limit is not None:
                picked = picked.orderBy(*[col(c).asc_nulls_first() for c in SORT_COLUMNS]).limit(limit)
            keys += picked.collect()
        whole = _rows_by_id(base, sorted({k._id for k in keys}))
        listed = [_to_violation(k, whole[k._id]) for k in keys]
    finally:
        for df in held:
            df.unpersist()

    rows_by_kind: Counter = Counter()
    failures: Counter = Counter()
    rows_by_run: Counter = Counter()
    for r in stats:
        rows_by_run[r.run_id] += r["count"]
        rows_by_kind[r.kind] += r["count"]
        if r.kind == TRANSITION_FAILED:
            failures[r.error] += r["count"]
    return build_report(listed, counts, rows_by_kind, failures, len(rows_by_run), limit, rows_by_run)


def _rows_by_id(base, ids: list[int]) -> dict:
    from pyspark.sql import functions as F
    out = {}
    for i in range(0, len(ids), _LOOKUP_BATCH):
        for r in base.filter(F.col("_id").isin(ids[i:i + _LOOKUP_BATCH])).collect():
            out[r._id] = r
    return out


def _to_violation(keys, row) -> Violation:
    kind = keys.violation
    return violation(kind, row, keys.prev_isr if kind == ISR_NOT_IN_REPLICAS else keys.a, keys.b)


def _fill_timeline(base, timeline: TransitionTimeline) -> None:
    """The transitions with a time, per bucket (as the runner buckets the in-process engine's)."""
    from pyspark.sql import functions as F

    col = F.col
    times = base.filter(col("time_ms").isNotNull() & col("kind").isin(*TRANSITION_KINDS)).select("time_ms")
    lo, hi = times.agg(F.min("time_ms"), F.max("time_ms")).collect()[0]
    if lo is None:
        return
    n = timeline.buckets
    width = bucket_width(lo, hi, n)
    bucket = F.least(F.greatest(F.floor((col("time_ms") - F.lit(lo)) / F.lit(width)), F.lit(0)), F.lit(n - 1))
    timeline.lo, timeline.width = lo, width
    timeline.counts = {int(r.b): r["count"] for r in times.groupBy(bucket.alias("b")).count().collect()}


# --- the checks ----------------------------------------------------------------------------------------------

def _ord():
    from pyspark.sql import functions as F
    return F.struct(*[F.col(c) for c in _ORDER])


def _finding(kind: str, a=None, b=None, prev_isr=None):
    from pyspark.sql import functions as F
    lit = F.lit
    return F.struct(lit(kind).alias("violation"),
                    (lit(None) if a is None else a).cast("long").alias("a"),
                    (lit(None) if b is None else b).cast("long").alias("b"),
                    (lit(None) if prev_isr is None else prev_isr).cast("array<int>").alias("prev_isr"))


def _violations(df, *checks):
    """A row per (row of ``df``, check it fails): ``_id``, ``violation``, run and order, ``a``, ``b``,
    ``prev_isr``. ``checks`` are (condition, finding) pairs."""
    from pyspark.sql import functions as F
    if len(checks) == 1:
        (condition, found), = checks
        picked = df.filter(condition).select("_id", "run_id", *_ORDER, found.alias("_v"))
    else:
        failed = F.filter(F.array(*[F.when(c, f) for c, f in checks]), lambda v: v.isNotNull())
        picked = df.select("_id", "run_id", *_ORDER, F.explode(failed).alias("_v"))
    return picked.select("_id", "_v.violation", "run_id", *_ORDER, "_v.a", "_v.b", "_v.prev_isr")


def _intervals(spark, bounds: list[tuple], key_ddl: str):
    """Boundaries (keys..., order) as a small DataFrame of intervals of the order: (keys..., ``_lo``, ``_hi``,
    ``_idx``), from each boundary up to the next one of the same keys, numbered from 1; None when there are
    none."""
    if not bounds:
        return None
    by_key = defaultdict(set)
    for *key, seq, source, position in bounds:
        by_key[tuple(key)].add((seq, source, position))
    out = []
    for key, ords in by_key.items():
        ords = sorted(ords, key=_order_key)
        for i, o in enumerate(ords):
            out.append((*key, o, ords[i + 1] if i + 1 < len(ords) else None, i + 1))
    return spark.createDataFrame(out, f"{key_ddl}, _lo {_ORDER_DDL}, _hi {_ORDER_DDL}, _idx long")


def _numbered(df, intervals, keys: tuple[str, ...], name: str):
    """``df`` with ``name``: the number of the interval of ``intervals`` holding the row (0 before the first)."""
    from pyspark.sql import functions as F
    if intervals is None:
        return df.withColumn(name, F.lit(0).cast("long"))
    iv = intervals.select(*[F.col(k).alias("_k_" + k) for k in keys], "_lo", "_hi", F.col("_idx").alias(name))
    o = _ord()
    on = [df[k].eqNullSafe(iv["_k_" + k]) for k in keys] + [o >= iv["_lo"], iv["_hi"].isNull() | (o < iv["_hi"])]
    return (df.join(F.broadcast(iv), on, "left").drop(*["_k_" + k for k in keys], "_lo", "_hi")
            .withColumn(name, F.coalesce(F.col(name), F.lit(0).cast("long"))))


def _bare_epochs(rows):
    """The rows with a controller epoch of runs *without elections*, with what the per-run pass finds:
    ``_prev`` (the previous row's epoch: what a reset is judged against there), ``_run_max`` (the highest epoch
    of earlier rows in the run), ``_reset``, ``_era`` (resets up to and including the row) and ``_era_max``
    (the highest epoch of earlier rows in the era)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col = F.col
    epoch = col("_e")
    w = Window.partitionBy("run_id").orderBy(*[col(c) for c in _ORDER])
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    df = (rows.filter(col("kind").isin(*EPOCH_KINDS) & (col("controller_epoch") >= 0))
          .select("_id", "run_id", *_ORDER, col("controller_epoch").alias("_e"))
          .withColumn("_prev", F.lag(epoch).over(w))
          .withColumn("_run_max", F.max(epoch).over(before)))
    df = (df.withColumn("_reset", F.coalesce((epoch == FIRST_CONTROLLER_EPOCH) & (col("_prev") > FIRST_CONTROLLER_EPOCH),
                                           F.lit(False)))
          .withColumn("_era", F.sum(col("_reset").cast("long")).over(w.rowsBetween(Window.unboundedPreceding, 0))))
    m = F.max(F.shiftleft(col("_era"), _EPOCH_BITS) + epoch).over(before)
    return (df.withColumn("_m", m)
            .withColumn("_era_max", F.when(F.shiftright(col("_m"), _EPOCH_BITS) == col("_era"),
                                           col("_m").bitwiseAND(F.lit((1 << _EPOCH_BITS) - 1)))))


_VIOLATION_DDL = ("_id long, violation string, run_id string, seq long, source string, position long, a long, "
                  "b long, prev_isr array<int>")


def _elections_in(with_elections: list):
    """A condition on ``run_id``: the run is one of ``with_elections`` (which may hold None)."""
    from pyspark.sql import functions as F
    known = [r for r in with_elections if r is not None]
    condition = F.col("run_id").isin(*known) if known else F.lit(False)
    return condition | F.col("run_id").isNull() if None in with_elections else condition


def _order_key(o: tuple) -> tuple:
    return tuple((v is not None, v) for v in o)   # nulls first, as Spark orders


def _controller_epochs(base, with_elections: list, bare: bool, elected: list, persisted):
    """(the controller-epoch violations, the resets: (run_id, seq, source, position) each, the eras: the resets
    as intervals (see :func:`_intervals`)).

    ``elected``: the ``controller_elected`` rows with a known epoch of the runs ``with_elections``; ``bare``:
    whether some run has none.

    Runs without elections (a bare ``state-change.log``) go through :func:`_bare_epochs`: any row may start an era
    there, so each row needs the one before it. In a run with elections only elections start an era, and
    elections are few: they are collected, and the resets found here. The highest epoch of earlier rows in an
    era then steps up only where an epoch is first seen in the era: from the first position of each (era,
    epoch), an aggregation, the steps become small intervals, and a row below its interval's highest epoch is
    a zombie write or a decreased election (a broadcast join; no sort of the rows)."""
    from pyspark.sql import functions as F

    col = F.col
    spark = base.sparkSession
    has_epoch = col("kind").isin(*EPOCH_KINDS) & (col("controller_epoch") >= 0)
    elections = _elections_in(with_elections)

    # Runs without elections: the per-run window pass.
    violations = spark.createDataFrame([], _VIOLATION_DDL)
    resets = []
    if bare:   # (no elections there: a row below the era's highest epoch is a zombie write)
        windowed = persisted(_bare_epochs(base.filter(~elections)))
        violations = _violations(
            windowed,
            (col("_reset"), _finding(CONTROLLER_EPOCH_RESET, col("_prev"), col("_run_max"))),
            (~col("_reset") & (col("_e") < col("_era_max")), _finding(ZOMBIE_WRITE, col("_era_max"))))
        resets = [tuple(r) for r in windowed.filter(col("_reset")).select("run_id", *_ORDER).collect()]
    if not with_elections:
        return violations, resets, _intervals(spark, resets, "run_id string")

    # Runs with elections: an election at epoch 1 after one at a higher epoch is a reset.
    by_run = defaultdict(list)
    for r in elected:
        by_run[r.run_id].append(r)
    reset_rows = []   # (row, the previous election's epoch)
    for rows in by_run.values():
        rows.sort(key=lambda r: _order_key((r.seq, r.source, r.position)))
        for before, r in zip([None, *rows], rows):
            if r.controller_epoch == FIRST_CONTROLLER_EPOCH and before is not None \
                    and before.controller_epoch > FIRST_CONTROLLER_EPOCH:
                reset_rows.append((r, before.controller_epoch))
    resets += [(r.run_id, r.seq, r.source, r.position) for r, _ in reset_rows]
    eras = _intervals(spark, resets, "run_id string")

    # Where each epoch is first seen, per (run, era): the steps of the highest epoch so far.
    epoch_rows = _numbered(base.filter(elections & has_epoch)
                           .select("_id", "run_id", *_ORDER, "kind", col("controller_epoch").alias("_e")),
                           eras, ("run_id",), "_era")
    firsts = defaultdict(list)
    for r in epoch_rows.groupBy("run_id", "_era", "_e").agg(F.min(_ord()).alias("_f")).collect():
        firsts[(r.run_id, r._era)].append((_order_key(tuple(r._f)), tuple(r._f), r._e))
    steps = []   # (run_id, era, from (exclusive), to (inclusive) or None, highest epoch of the rows before)
    for (run_id, era), seen in firsts.items():
        seen.sort()
        highest = None
        for i, (_key, first, epoch) in enumerate(seen):
            highest = epoch if highest is None else max(highest, epoch)
            steps.append((run_id, era, first, seen[i + 1][1] if i + 1 < len(seen) else None, highest))
    run_firsts = defaultdict(list)
    for (run_id, _era), seen in firsts.items():
        run_firsts[run_id] += [(key, epoch) for key, _first, epoch in seen]

    reset_violations = []
    for r, previous in reset_rows:
        at = _order_key((r.seq, r.source, r.position))
        run_max = max((e for key, e in run_firsts[r.run_id] if key < at), default=None)
        reset_violations.append((r._id, CONTROLLER_EPOCH_RESET, r.run_id, r.seq, r.source, r.position, previous,
                                 run_max, None))
    violations = violations.unionByName(spark.createDataFrame(reset_violations, _VIOLATION_DDL))
    if steps:
        highest = spark.createDataFrame(steps, f"_k_run_id string, _k_era long, _lo {_ORDER_DDL}, _hi {_ORDER_DDL}, "
                                               "_highest int")
        o = _ord()
        on = [epoch_rows["run_id"].eqNullSafe(highest["_k_run_id"]), epoch_rows["_era"] == highest["_k_era"],
              o > highest["_lo"], highest["_hi"].isNull() | (o <= highest["_hi"])]
        below = epoch_rows.join(F.broadcast(highest), on).filter(col("_e") < col("_highest"))
        violations = violations.unionByName(_violations(
            below, (col("kind") == CONTROLLER_ELECTED, _finding(CONTROLLER_EPOCH_DECREASED, col("_highest"))),
            (col("kind") != CONTROLLER_ELECTED, _finding(ZOMBIE_WRITE, col("_highest")))))
    return violations, resets, eras


def _violation_keys(base, with_elections: list, bare: bool, persisted):
    """Every violation and finding in ``base`` (see :func:`_violations` for the columns). ``with_elections``: the
    runs with elections; ``bare``: whether a run has none; ``persisted`` persists a DataFrame until the audit
    ends."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col, lit = F.col, F.lit
    spark = base.sparkSession
    ordered = [col(c) for c in _ORDER]

    # The few rows that say what changes rarely, in one job: the elections of the runs that have them, and
    # the topics' create/delete rows (one per record). The controller epochs' resets make the eras of every
    # row, the create/delete rows each topic's incarnations and its deletions.
    elected_rows = (base.filter(_elections_in(with_elections) & (col("kind") == CONTROLLER_ELECTED)
                                & (col("controller_epoch") >= 0))
                    .select("_id", "run_id", "topic", "kind", *_ORDER, "controller_epoch"))
    boundary_rows = (base.filter(col("kind").isin(*TOPIC_BOUNDARY_KINDS))
                     .select(lit(None).cast("long").alias("_id"), "run_id", "topic", "kind", *_ORDER,
                             "controller_epoch").distinct())
    small = elected_rows.unionByName(boundary_rows).collect()
    elected = [r for r in small if r._id is not None]
    boundaries = [r for r in small if r._id is None]
    epoch_violations, resets, eras = _controller_epochs(base, with_elections, bare, elected, persisted)
    incarnations = _intervals(spark, [(r.run_id, r.topic, r.seq, r.source, r.position) for r in boundaries],
                              "run_id string, topic string")
    deletions = spark.createDataFrame(_deletions(boundaries, resets),
                                      "_k_run_id string, _k_era long, _k_topic string, _deleted_at long")

    def scoped(df, incarnation: bool = True):
        df = _numbered(df, eras, ("run_id",), "_era")
        return _numbered(df, incarnations, ("run_id", "topic"), "_inc") if incarnation else df

    # Transitions: legality and continuity (the previous to-state of the entity in the controller epoch, era
    # and topic incarnation).
    legal = sorted(_transition_code(m, f, t) for m, f, t in LEGAL_TRANSITIONS)
    code = (F.when(col("entity") == ENTITY_REPLICA, _transition_code(ENTITY_REPLICA, 0, 0))
            .when(col("entity") == ENTITY_PARTITION, _transition_code(ENTITY_PARTITION, 0, 0))
            + col("from_state") * 256 + col("to_state"))
    # One sort serves them all: each entity's transitions in the era, ordered by controller epoch, incarnation
    # and position, so the row before one of the same epoch and incarnation is its predecessor, and the
    # highest position in the era is its last transition (deleted topics, stuck deletions).
    transitions = scoped(base.filter(col("kind").isin(*TRANSITION_KINDS))
                         .select("_id", "run_id", *_ORDER, "entity", "topic", "partition", "replica", "from_state",
                                 "to_state", "controller_epoch"))
    w = Window.partitionBy("run_id", "topic", "partition", "_era", "entity", "replica") \
        .orderBy("controller_epoch", "_inc", *ordered)
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    continued = (transitions.withColumn("_prev_to", F.lag("to_state").over(w)).withColumn("_prev_seq", F.lag("seq").over(w))
                 .withColumn("_prev_epoch", F.lag("controller_epoch").over(w)).withColumn("_prev_inc", F.lag("_inc").over(w))
                 .withColumn("_last", F.max(_ord()).over(whole) == _ord()))
    on = [continued["run_id"].eqNullSafe(deletions["_k_run_id"]), continued["_era"] == deletions["_k_era"],
          continued["topic"] == deletions["_k_topic"]]
    from_state = col("from_state")
    same = col("_prev_epoch").eqNullSafe(col("controller_epoch")) & (col("_prev_inc") == col("_inc"))
    gone = (F.when(col("entity") == ENTITY_REPLICA, NON_EXISTENT[ENTITY_REPLICA])
            .when(col("entity") == ENTITY_PARTITION, NON_EXISTENT[ENTITY_PARTITION]))
    transition_violations = _violations(
        continued.join(F.broadcast(deletions), on, "left"),
        (from_state.isNotNull() & col("to_state").isNotNull() & ~F.coalesce(code.isin(*legal), lit(False)),
         _finding(ILLEGAL_TRANSITION)),
        (same & from_state.isNotNull() & col("_prev_to").isNotNull() & (from_state != col("_prev_to")),
         _finding(DISCONTINUITY, col("_prev_to"), col("_prev_seq"))),
        (col("_last") & col("_deleted_at").isNotNull() & col("to_state").isNotNull() & gone.isNotNull()
         & (col("to_state") != gone), _finding(DELETED_TOPIC_HAS_STATE, col("_deleted_at"))),
        (col("_last") & (col("entity") == ENTITY_REPLICA) & (col("to_state") == REPLICA_DELETION_INELIGIBLE),
         _finding(DELETION_STUCK)))

    # Leaders, leader epochs and ISRs, per (era, topic incarnation, partition).
    leader, leader_epoch, isr = col("leader"), col("leader_epoch"), col("isr")
    leader_rows = scoped(base.filter(col("kind").isin(*LEADER_KINDS))
                         .select("_id", "run_id", *_ORDER, "topic", "partition", "leader", "leader_epoch", "isr",
                                 "replicas", "unclean"))
    w_part = Window.partitionBy("run_id", "topic", "partition", "_era", "_inc").orderBy(*ordered) \
        .rowsBetween(Window.unboundedPreceding, -1)
    w_epoch = Window.partitionBy("run_id", "topic", "partition", "_era", "_inc", "leader_epoch").orderBy(*ordered) \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    leads = (leader_epoch >= 0) & (leader >= 0)
    leaders = (leader_rows.withColumn("_max_le", F.max(F.when(leader_epoch >= 0, leader_epoch)).over(w_part))
               .withColumn("_prev_isr", F.last("isr", ignorenulls=True).over(w_part))
               .withColumn("_first", F.first(F.when(leads, leader), ignorenulls=True).over(w_epoch))
               .withColumn("_first_seq", F.first(F.when(leads, col("seq")), ignorenulls=True).over(w_epoch)))
    joined = F.when(col("_prev_isr").isNull(), isr).otherwise(F.array_except(isr, "_prev_isr"))
    leader_violations = _violations(
        leaders,
        ((leader_epoch >= 0) & (leader_epoch < col("_max_le")), _finding(LEADER_EPOCH_DECREASED, col("_max_le"))),
        (leads & (leader != col("_first")), _finding(DUPLICATE_LEADER, col("_first"), col("_first_seq"))),
        ((leader >= 0) & isr.isNotNull() & ~F.array_contains(isr, leader) & ~F.coalesce(col("unclean"), lit(False)),
         _finding(LEADER_NOT_IN_ISR)),
        (isr.isNotNull() & col("replicas").isNotNull() & (F.size(F.array_except(joined, "replicas")) > 0),
         _finding(ISR_NOT_IN_REPLICAS, prev_isr=col("_prev_isr"))),
        (F.coalesce(col("unclean"), lit(False)), _finding(UNCLEAN_ELECTION)))

    # Failed and refused transitions (findings).
    election = F.coalesce((col("entity") == ENTITY_PARTITION) & (col("to_state") == ONLINE_PARTITION), lit(False))
    failure_findings = _violations(base.filter(col("kind") == TRANSITION_FAILED),
                                   (election, _finding(FAILED_ELECTION)), (~election, _finding(REFUSED_TRANSITION)))

    return (transition_violations.unionByName(epoch_violations).unionByName(leader_violations)
            .unionByName(failure_findings))


def _deletions(boundaries: list, resets: list) -> list[tuple]:
    """(run_id, era, topic, seq) of each topic whose last create/delete row in the era is its deletion's
    completion (``boundaries``: those rows; ``resets``: (run_id, seq, source, position) of each reset)."""
    starts = defaultdict(list)
    for run_id, *at in resets:
        starts[run_id].append(_order_key(tuple(at)))
    for keys in starts.values():
        keys.sort()
    last = {}
    for r in boundaries:
        if r.topic is None:
            continue
        at = _order_key((r.seq, r.source, r.position))
        key = (r.run_id, bisect_right(starts.get(r.run_id, ()), at), r.topic)
        if key not in last or last[key][0] < at:
            last[key] = (at, r)
    return [(*key, r.seq) for key, (_at, r) in last.items() if r.kind == TOPIC_DELETION_COMPLETED]


def _transition_code(entity: str, from_state: int, to_state: int) -> int:
    """One int for (entity, from, to): states are bytes."""
    return (0 if entity == ENTITY_REPLICA else 1 << 16) + from_state * 256 + to_state
