"""The audit's checks as Spark DataFrame expressions: for many or large logs, locally or on a cluster.

Gives exactly the report of :mod:`audit.local_engine` on the same rows (what is checked, and every
decision about order, nulls and scope, is written once in :mod:`audit.checks`). The input is any
DataFrame with the columns of ``audit.rows.SPARK_DDL`` (a reader's Python Data Source, Arrow
batches, a Parquet copy); nothing runs per row in Python — no UDF:

- per run, once (:func:`with_eras`, persisted): ``last`` and running ``max`` of earlier controller
  epochs, a running ``sum`` of resets numbering the eras, the running ``max`` within (run, era),
  and a running ``sum`` of create/delete rows per (run, era, topic) numbering topic incarnations;
- legality: a broadcast join of the transition rows with the legal-transition table that
  :func:`statemachines.states.legal_transition_rows` derives from the one definition;
- continuity: ``lag(to_state)`` over (run, era, controller epoch, topic incarnation, entity, topic,
  partition, replica) ordered by (seq, source, position);
- controller epochs: conditions on what ``with_eras`` found;
- per (run, era, topic, incarnation, partition): the running ``max`` of earlier leader epochs, the
  ``last`` earlier ISR (``array_except`` finds brokers that joined the ISR without being
  replicas), ``first(leader)`` per leader epoch, ``array_contains`` for the leader in its ISR;
- deleted topics: the last create/delete row per (run, era, topic) and the last transition per
  entity (``max_by`` on the order), joined; the same last transitions find replicas stuck in
  ReplicaDeletionIneligible;
- findings (unclean, failed and refused transitions): conditions on the rows, as the violations.

Every window and aggregation after the first is keyed by the run and more, so the rows are
shuffled once, by run; that puts one run in one task: one very long run is audited by one core,
many runs in parallel. The checks over the same rows and windows make one DataFrame whose rows
carry an array of the violations they are (``filter`` and ``explode``: higher-order SQL functions,
not Python); the four such DataFrames are one union. Only the violations are collected (at most
``limit``, the first in report order), and their counts by kind, run and source are aggregated in
Spark, so they are exact whatever ``limit`` is.
"""
from __future__ import annotations

from collections import Counter

from audit.checks import (
    CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, DELETED_TOPIC_HAS_STATE, DELETION_STUCK, DISCONTINUITY,
    DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION, FINDING_KINDS, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION,
    ISR_NOT_IN_REPLICAS, LEADER_EPOCH_DECREASED, LEADER_KINDS, LEADER_NOT_IN_ISR, NON_EXISTENT, REFUSED_TRANSITION,
    SORT_COLUMNS, TOPIC_BOUNDARY_KINDS, TRANSITION_KINDS, UNCLEAN_ELECTION, VIOLATION_KINDS, ZOMBIE_WRITE, Report,
    Violation, build_report, violation,
)
from audit.rows import COLUMNS, CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, TOPIC_DELETION_COMPLETED, \
    TRANSITION_FAILED
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE, legal_transition_rows

_ORDER = ("seq", "source", "position")


def audit(rows, *, limit: int | None = None, also=None) -> Report:
    """Run every check over the DataFrame ``rows``; list at most ``limit`` violations (counts are exact).

    ``also``, if given, is called with the rows (and the columns of :func:`with_eras`) while they are
    cached, for more queries over the same input without reading it again."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    base = with_eras(rows.select(*COLUMNS)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if also is not None:
            also(base)
        stats = base.groupBy("run_id", "kind", F.when(F.col("kind") == TRANSITION_FAILED, F.col("error"))
                             .alias("error")).count().collect()
        found = violation_candidates(base)
        if limit is None:
            listed = [_to_violation(r) for r in found.collect()]
            counts = Counter((v.kind, v.run_id, v.source) for v in listed)
        else:
            found = found.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                counts = {(r.violation, r.run_id, r.source): r["count"]
                          for r in found.groupBy("violation", "run_id", "source").count().collect()}
                listed = []
                for kinds in (VIOLATION_KINDS, FINDING_KINDS):  # each listed up to the limit
                    first = (found.filter(F.col("violation").isin(*kinds))
                             .orderBy(*[F.col(c).asc_nulls_first() for c in SORT_COLUMNS]).limit(limit))
                    listed += [_to_violation(r) for r in first.collect()]
            finally:
                found.unpersist()
    finally:
        base.unpersist()
    rows_by_kind: Counter = Counter()
    failures: Counter = Counter()
    rows_by_run: Counter = Counter()
    for r in stats:
        rows_by_run[r.run_id] += r["count"]
        rows_by_kind[r.kind] += r["count"]
        if r.kind == TRANSITION_FAILED:
            failures[r.error] += r["count"]
    return build_report(listed, counts, rows_by_kind, failures, len(rows_by_run), limit, rows_by_run)


def _to_violation(r) -> Violation:
    kind = r.violation
    return violation(kind, r, r.prev_isr if kind == ISR_NOT_IN_REPLICAS else r.a, r.b)


def with_eras(rows):
    """``rows`` with what the per-run windows find: ``_eb`` (the row counts for controller epochs), ``_prev``
    (the epoch a reset is judged against), ``_run_max`` and ``_era_max`` (highest epoch of earlier rows in
    the run, in the era), ``_reset``, ``_era`` (resets up to and including the row) and ``_inc`` (the topic's
    incarnation: its create/delete rows so far in the era). Partitioned by run: every later window and
    aggregation keyed by run (and more) needs no shuffle."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col = F.col
    epoch = col("controller_epoch")
    elected = col("kind") == CONTROLLER_ELECTED
    ordered = [col(c) for c in _ORDER]
    before = (Window.unboundedPreceding, -1)
    upto = (Window.unboundedPreceding, Window.currentRow)
    w_run = Window.partitionBy("run_id").orderBy(*ordered)
    eb = F.coalesce(col("kind").isin(*EPOCH_KINDS) & (epoch >= 0), F.lit(False))
    df = (rows.withColumn("_eb", eb)
          .withColumn("_ep", F.when(col("_eb"), epoch))
          .withColumn("_prev_row", F.last("_ep", ignorenulls=True).over(w_run.rowsBetween(*before)))
          .withColumn("_prev_elected", F.last(F.when(elected, col("_ep")), ignorenulls=True)
                      .over(w_run.rowsBetween(*before)))
          .withColumn("_run_max", F.max("_ep").over(w_run.rowsBetween(*before)))
          .withColumn("_elections", F.max((elected & col("_eb")).cast("int"))
                      .over(w_run.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))))
    df = (df.withColumn("_prev", F.when(elected, col("_prev_elected")).when(col("_elections") == 0, col("_prev_row")))
          .withColumn("_reset", F.coalesce(col("_eb") & (epoch == FIRST_CONTROLLER_EPOCH)
                                           & (col("_prev") > FIRST_CONTROLLER_EPOCH), F.lit(False)))
          .withColumn("_era", F.sum(col("_reset").cast("int")).over(w_run.rowsBetween(*upto))))
    boundary = col("kind").isin(*TOPIC_BOUNDARY_KINDS).cast("int")
    return (df.withColumn("_era_max", F.max("_ep").over(
                Window.partitionBy("run_id", "_era").orderBy(*ordered).rowsBetween(*before)))
            .withColumn("_inc", F.coalesce(F.sum(boundary).over(
                Window.partitionBy("run_id", "_era", "topic").orderBy(*ordered).rowsBetween(*upto)), F.lit(0)))
            .drop("_ep", "_prev_row", "_prev_elected", "_elections"))


def violation_candidates(base):
    """One DataFrame of every violation found in ``base`` (``with_eras`` of the rows): the columns of
    SPARK_DDL, ``violation`` naming the kind, and what the check compared with: ``a``, ``b``, ``prev_isr``
    (see audit.checks.violation). Each group of checks over the same rows and windows is one branch of
    the union, whose rows carry an array of what they violate, exploded."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col, lit = F.col, F.lit
    spark = base.sparkSession
    ordered = [col(c) for c in _ORDER]
    before = (Window.unboundedPreceding, -1)
    upto = (Window.unboundedPreceding, Window.currentRow)

    def finding(kind: str, a=None, b=None, prev_isr=None):
        return F.struct(lit(kind).alias("violation"),
                        (lit(None) if a is None else a).cast("long").alias("a"),
                        (lit(None) if b is None else b).cast("long").alias("b"),
                        (lit(None) if prev_isr is None else prev_isr).cast("array<int>").alias("prev_isr"))

    def violations(df, *checks):
        """A row per (row of ``df``, check it fails); ``checks`` are (condition, finding) pairs."""
        failed = F.filter(F.array(*[F.when(condition, found) for condition, found in checks]), lambda v: v.isNotNull())
        return (df.select(*COLUMNS, F.explode(failed).alias("_v"))
                .select(col("_v.violation").alias("violation"), *COLUMNS, "_v.a", "_v.b", "_v.prev_isr"))

    # Transitions: legality (a broadcast join with the legal-transition table) and continuity (the
    # previous to-state of the entity within the controller epoch and era).
    legal = (spark.createDataFrame([(m, f, t) for m, _, _, f, t in legal_transition_rows()],
                                   "entity string, from_state int, to_state int")
             .withColumn("_legal", lit(True)))
    w = Window.partitionBy("run_id", "_era", "controller_epoch", "_inc", "entity", "topic", "partition", "replica") \
        .orderBy(*ordered)
    transitions = (base.filter(col("kind").isin(*TRANSITION_KINDS))
                   .join(F.broadcast(legal), ["entity", "from_state", "to_state"], "left")
                   .withColumn("_prev_to", F.lag("to_state").over(w))
                   .withColumn("_prev_seq", F.lag("seq").over(w)))
    from_state = col("from_state")
    transition_violations = violations(
        transitions,
        (from_state.isNotNull() & col("to_state").isNotNull() & col("_legal").isNull(), finding(ILLEGAL_TRANSITION)),
        (from_state.isNotNull() & col("_prev_to").isNotNull() & (from_state != col("_prev_to")),
         finding(DISCONTINUITY, col("_prev_to"), col("_prev_seq"))))

    # Controller epochs: what with_eras found.
    elected = col("kind") == CONTROLLER_ELECTED
    lower = ~col("_reset") & (col("controller_epoch") < col("_era_max"))
    epoch_violations = violations(
        base.filter(col("_eb")),
        (col("_reset"), finding(CONTROLLER_EPOCH_RESET, col("_prev"), col("_run_max"))),
        (lower & elected, finding(CONTROLLER_EPOCH_DECREASED, col("_era_max"))),
        (lower & ~elected, finding(ZOMBIE_WRITE, col("_era_max"))))

    # Leaders, leader epochs and ISRs, per (era, topic incarnation, partition).
    leader, leader_epoch, isr = col("leader"), col("leader_epoch"), col("isr")
    w_part = Window.partitionBy("run_id", "_era", "topic", "_inc", "partition").orderBy(*ordered).rowsBetween(*before)
    w_epoch = Window.partitionBy("run_id", "_era", "topic", "_inc", "partition", "leader_epoch").orderBy(*ordered) \
        .rowsBetween(*upto)
    leads = (leader_epoch >= 0) & (leader >= 0)
    leaders = (base.filter(col("kind").isin(*LEADER_KINDS))
               .withColumn("_max_le", F.max(F.when(leader_epoch >= 0, leader_epoch)).over(w_part))
               .withColumn("_prev_isr", F.last("isr", ignorenulls=True).over(w_part))
               .withColumn("_first", F.first(F.when(leads, leader), ignorenulls=True).over(w_epoch))
               .withColumn("_first_seq", F.first(F.when(leads, col("seq")), ignorenulls=True).over(w_epoch)))
    joined = F.when(col("_prev_isr").isNull(), isr).otherwise(F.array_except(isr, "_prev_isr"))
    leader_violations = violations(
        leaders,
        ((leader_epoch >= 0) & (leader_epoch < col("_max_le")), finding(LEADER_EPOCH_DECREASED, col("_max_le"))),
        (leads & (leader != col("_first")), finding(DUPLICATE_LEADER, col("_first"), col("_first_seq"))),
        ((leader >= 0) & isr.isNotNull() & ~F.array_contains(isr, leader) & ~F.coalesce(col("unclean"), lit(False)),
         finding(LEADER_NOT_IN_ISR)),
        (isr.isNotNull() & col("replicas").isNotNull() & (F.size(F.array_except(joined, "replicas")) > 0),
         finding(ISR_NOT_IN_REPLICAS, prev_isr=col("_prev_isr"))),
        (F.coalesce(col("unclean"), lit(False)), finding(UNCLEAN_ELECTION)))

    # Failed and refused transitions (findings).
    election = F.coalesce((col("entity") == ENTITY_PARTITION) & (col("to_state") == ONLINE_PARTITION), lit(False))
    failure_findings = violations(base.filter(col("kind") == TRANSITION_FAILED),
                                  (election, finding(FAILED_ELECTION)), (~election, finding(REFUSED_TRANSITION)))

    # Deleted topics end with no state: the last create/delete row per (run, era, topic), the last
    # transition per entity.
    last_boundary = (base.filter(col("kind").isin(*TOPIC_BOUNDARY_KINDS) & col("topic").isNotNull())
                     .groupBy("run_id", "_era", "topic")
                     .agg(F.max_by(F.struct("kind", "seq"), F.struct(*ordered)).alias("_b"))
                     .filter(col("_b.kind") == TOPIC_DELETION_COMPLETED)
                     .select("run_id", "_era", "topic", col("_b.seq").alias("_deleted_at")))
    last = (base.filter(col("kind").isin(*TRANSITION_KINDS))
            .groupBy("run_id", "_era", "topic", "entity", "partition", "replica")
            .agg(F.max_by(F.struct(*COLUMNS), F.struct(*ordered)).alias("_t"))
            .select("_era", "_t.*"))
    gone = (F.when(col("entity") == ENTITY_REPLICA, NON_EXISTENT[ENTITY_REPLICA])
            .when(col("entity") == ENTITY_PARTITION, NON_EXISTENT[ENTITY_PARTITION]))
    deleted_violations = violations(
        last.join(last_boundary, ["run_id", "_era", "topic"]),
        (col("to_state").isNotNull() & gone.isNotNull() & (col("to_state") != gone),
         finding(DELETED_TOPIC_HAS_STATE, col("_deleted_at"))))

    stuck_findings = violations(
        last, ((col("entity") == ENTITY_REPLICA) & (col("to_state") == REPLICA_DELETION_INELIGIBLE),
               finding(DELETION_STUCK)))

    return (transition_violations.unionByName(epoch_violations).unionByName(leader_violations)
            .unionByName(deleted_violations).unionByName(failure_findings).unionByName(stuck_findings))
