"""The audit's ZooKeeper-era checks written once, as SQL that DuckDB and Spark SQL both run.

Every check of :mod:`audit.local_engine` (what each means, and every decision about order, nulls and
scope, is in :mod:`audit.checks`) is here as plain SQL over a relation ``audit_rows`` in the shape of
:mod:`audit.rows` and one ``legal`` of (``machine``, ``from_state``, ``to_state``), the legal-transition
table derived from :func:`statemachines.states.legal_transition_rows` (:func:`legal_table`). The SQL is a
sequence of named steps (:data:`STEPS`), each reading ``audit_rows`` and the steps before it; an engine
makes each step a view or, for the small ones (``Step.small``: a few rows per run, topic or violation),
a table, and then reads :data:`FOUND`. :mod:`audit.duckdb_engine` runs them in process over Arrow or
Parquet, :func:`spark_audit` on Spark; :func:`report_of` turns what they find into the same
:class:`audit.checks.Report` as the local engine's (every ``Violation`` through
:func:`audit.checks.violation`, so the detail texts are the local engine's).

How the checks are written (the order of a run is ``(seq, source, position)``, nulls first; a row's
*era* is the number of controller epoch resets up to and including it, a row's *incarnation* the
number of its topic's ``topic_created`` / ``topic_deletion_completed`` rows before it)

- controller epochs: where each epoch is first seen in its run (``epoch_firsts``, an aggregation) and
  the first place of any higher epoch (``epoch_later``) find the rows below the highest epoch of the
  rows before them (``run_max``) with an equi-join, no sort; in a run without elections (any row may
  reset there, judged against the row before) a window does. Those rows are few (``epoch_marks``:
  resets, decreases, zombies). A reset is such a row at epoch 1 after an election at a higher epoch
  (``elections``: each election's previous one) in a run with elections, after a row at a higher epoch
  in a run without. Before a run's first reset the era's highest epoch is ``run_max``; after it (only
  runs with a reset) a window per (run, era) finds it. The resets as intervals of the run's order
  (``eras``) give every other row its era by a join;
- topics: a row's incarnation is a running count of its topic's create/delete rows (a window per (run,
  topic) over those rows and the rows checked: a log may create one topic's partitions tens of
  thousands of times, so intervals joined by range would be quadratic); the last create/delete row per
  (run, era, topic), when it is a deletion's completion, makes a deleted topic (``deletions``);
- transitions: legality is an anti-join with ``legal``; continuity one window per (run, era, entity)
  ordered by (controller epoch, incarnation, order): the row before is the predecessor when its epoch
  and incarnation are the same (``discontinuities``); each entity's last transition of the era, by an
  aggregation (``last_transitions``), is checked against deleted topics and for ReplicaDeletionIneligible;
- leaders, per (run, era, topic, incarnation, partition), in one query (``leader_marks``): the highest
  earlier leader epoch, the first leader per leader epoch (rows with a leader ordered first), the previous
  known ISR (``lag`` with the rows with an ISR ordered first); a leader not in its ISR and the findings
  (unclean, failed and refused transitions) are conditions on single rows.

Rows are ordered by their source's rank (``sources``) rather than its path wherever they are sorted: paths
sharing long beginnings made DuckDB's sorts several times slower.

Portability: only functions both engines have (``array_contains``, ``array_intersect``,
``array_distinct``, ``concat``, ``cardinality``, window ``lag``/``lead``/``first_value``/``max``), row
constructors ``(a, b)`` compared as structs (made of non-null fields, as both order nulls in structs
differently), ``IS NOT DISTINCT FROM`` for keys that may be null, and no lambdas or ``IGNORE NULLS``
(their syntaxes differ).
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from audit.checks import (
    ALL_FINDING_KINDS, ALL_VIOLATION_KINDS, CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET,
    DELETED_TOPIC_HAS_STATE, DELETION_STUCK, DISCONTINUITY, DUPLICATE_LEADER, EPOCH_KINDS, FAILED_ELECTION,
    FINDING_KINDS, FIRST_CONTROLLER_EPOCH, ILLEGAL_TRANSITION, ISR_NOT_IN_REPLICAS, LEADER_EPOCH_DECREASED,
    LEADER_KINDS, LEADER_NOT_IN_ISR, NON_EXISTENT, REFUSED_TRANSITION, TOPIC_BOUNDARY_KINDS, TRANSITION_KINDS,
    UNCLEAN_ELECTION, VIOLATION_KINDS, ZOMBIE_WRITE, Report, Violation, build_report, sort_key, violation,
)
from audit.rows import (
    COLUMNS, CONTROLLER_ELECTED, ENTITY_PARTITION, ENTITY_REPLICA, PARTITION_TRANSITION, REPLICA_TRANSITION,
    TOPIC_DELETION_COMPLETED, TRANSITION_FAILED, AuditRow,
)
from statemachines.states import ONLINE_PARTITION, REPLICA_DELETION_INELIGIBLE, legal_transition_rows

__all__ = ["FOUND", "FOUND_COLUMNS", "ILLEGAL_TRANSITIONS_COUNT_SQL", "ILLEGAL_TRANSITIONS_SQL", "STATS_SQL", "STEPS",
           "Step", "duckdb_connection", "duckdb_illegal_transitions", "legal_table", "listed_sql", "report_of",
           "spark_audit", "spark_illegal_transitions", "violations_of"]


class Step(NamedTuple):
    name: str      # the relation it defines
    sql: str       # a SELECT over audit_rows, legal and the steps before
    small: bool    # few rows: worth materializing (an engine may keep the others as views)


def _in(values) -> str:
    return "(" + ", ".join(f"'{v}'" for v in sorted(values)) + ")"


_ORDER = ("seq", "source", "position")
_BY_ORDER = "seq NULLS FIRST, source NULLS FIRST, position NULLS FIRST"
# The same order with the source's rank (``sources``) for the source: sorting ints, not long paths that share
# their beginnings, is several times faster.
_BY_RANK = "seq NULLS FIRST, src, position NULLS FIRST"
_BEFORE_ALL = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
_WHOLE = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


def _ord(p: str = "") -> str:
    """A row's order as one struct of non-null fields (the local engine's null-safe order): structs of
    non-null fields compare alike in both engines."""
    return (f"({p}seq IS NOT NULL, coalesce({p}seq, 0), {p}source IS NOT NULL, coalesce({p}source, ''), "
            f"{p}position IS NOT NULL, coalesce({p}position, 0))")




def _before(x: str, y: str, or_equal: bool) -> str:
    """SQL: the order of ``x`` (columns ``{x}seq``, ``{x}source``, ``{x}position``) is before (or the same as)
    ``y``'s, nulls first."""
    return f"{_ord(x)} {'<=' if or_equal else '<'} {_ord(y)}"


def _within(row: str, interval: str) -> str:
    """SQL: ``row``'s order lies in the interval ``[lo, hi)`` of ``interval`` (``hi`` absent: to the end)."""
    return (f"{_before(interval + 'lo_', row, True)} AND "
            f"(NOT {interval}has_hi OR {_before(row, interval + 'hi_', False)})")


def _same_row(x: str, y: str) -> str:
    return " AND ".join(f"{x}{c} IS NOT DISTINCT FROM {y}{c}" for c in ("run_id", *_ORDER))


def _last(value: str, order: str) -> str:
    """SQL: the aggregate ``value`` of the row with the largest ``order``, null or not. DuckDB's ``max_by`` passes
    over rows whose value is null, Spark's does not; the flag ``value IS NULL`` is never null, and when it says
    the last row's value is not null, that row is also the last of the rows with a value."""
    return f"CASE WHEN max_by({value} IS NULL, {order}) THEN NULL ELSE max_by({value}, {order}) END"


def _intervals(source: str, keys: str, number: str) -> str:
    """Each row of ``source`` as the start of an interval of its ``keys``' order, up to the next one's."""
    w = f"(PARTITION BY {keys} ORDER BY {_BY_ORDER})"
    return f"""
SELECT {keys}, seq AS lo_seq, source AS lo_source, position AS lo_position,
       lead(seq) OVER {w} AS hi_seq, lead(source) OVER {w} AS hi_source, lead(position) OVER {w} AS hi_position,
       coalesce(lead(TRUE) OVER {w}, FALSE) AS has_hi, row_number() OVER {w} AS {number}
FROM {source}"""


_SAME_RUN = "r.run_id IS NOT DISTINCT FROM {}.run_id"
_RANKED = "audit_rows r JOIN sources s ON r.source IS NOT DISTINCT FROM s.source"
_KEY = "run_id, seq, source, position"
_EPOCH_ROWS = f"r.kind IN {_in(EPOCH_KINDS)} AND r.controller_epoch >= 0"
_ELECTED = f"kind = '{CONTROLLER_ELECTED}'"
_GONE = (f"CASE entity WHEN '{ENTITY_REPLICA}' THEN {NON_EXISTENT[ENTITY_REPLICA]} "
         f"WHEN '{ENTITY_PARTITION}' THEN {NON_EXISTENT[ENTITY_PARTITION]} END")
_LEADER_KEY = "run_id, era, topic, inc, partition"
_ENTITY_KEY = "run_id, era, entity, topic, partition, replica"
_ELECTION = f"coalesce(entity = '{ENTITY_PARTITION}' AND to_state = {ONLINE_PARTITION}, FALSE)"
_LEADS = "leader_epoch >= 0 AND leader >= 0"


def _scoped(kinds, columns: str) -> str:
    """The rows of ``kinds`` with their source's rank, their era and their topic's incarnation (a running count of
    the topic's create/delete rows, over the run: within an era it differs from the era's count by a constant)."""
    cols = ", ".join(f"r.{c}" for c in columns.split(", "))
    boundary = f"CASE WHEN r.kind IN {_in(TOPIC_BOUNDARY_KINDS)} THEN 1 ELSE 0 END"
    return f"""
SELECT q.*, coalesce(z.era, 0) AS era FROM (
  SELECT r.kind, {cols}, s.src,
         CAST(coalesce(sum({boundary}) OVER (PARTITION BY r.run_id, r.topic ORDER BY r.seq NULLS FIRST, s.src,
                                             r.position NULLS FIRST {_BEFORE_ALL}), 0) AS BIGINT) AS inc
  FROM {_RANKED} WHERE r.kind IN {_in(set(kinds) | TOPIC_BOUNDARY_KINDS)}
) q LEFT JOIN eras z ON q.run_id IS NOT DISTINCT FROM z.run_id AND {_within('q.', 'z.')}
WHERE q.kind IN {_in(kinds)}"""


# An anti-join written as a left join (DuckDB plans NOT EXISTS here as a mark join over a copy of every
# column: measured 5x slower; Spark SQL runs either).
_ILLEGAL_FROM_WHERE = f"""
FROM audit_rows AS r
LEFT JOIN legal AS l ON l.machine = r.entity AND l.from_state = r.from_state AND l.to_state = r.to_state
WHERE r.kind IN ('{REPLICA_TRANSITION}', '{PARTITION_TRANSITION}')
  AND r.from_state IS NOT NULL AND r.to_state IS NOT NULL
  AND l.machine IS NULL
"""

ILLEGAL_TRANSITIONS_SQL = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + _ILLEGAL_FROM_WHERE
"""The rows of illegal transitions (every audit row column)."""

ILLEGAL_TRANSITIONS_COUNT_SQL = "SELECT count(*)" + _ILLEGAL_FROM_WHERE
"""How many transitions are illegal (what the benchmark times: the check without building violations)."""


STEPS: tuple[Step, ...] = (
    Step("sources", """
SELECT source, row_number() OVER (ORDER BY source NULLS FIRST) AS src FROM (SELECT DISTINCT source FROM audit_rows) d""",
         True),
    # The runs with elections (a known epoch): only elections start an era there.
    Step("election_runs", f"""
SELECT DISTINCT run_id, TRUE AS has_elections FROM audit_rows WHERE {_ELECTED} AND controller_epoch >= 0""", True),
    # Where each controller epoch is first seen in its run, and the first place of any higher epoch.
    Step("epoch_firsts", f"""
SELECT r.run_id, r.controller_epoch AS epoch, min({_ord('r.')}) AS first FROM audit_rows r WHERE {_EPOCH_ROWS}
GROUP BY r.run_id, r.controller_epoch""", True),
    Step("epoch_later", """
SELECT a.run_id, a.epoch, min(b.first) AS later_first
FROM epoch_firsts a JOIN epoch_firsts b ON a.run_id IS NOT DISTINCT FROM b.run_id AND b.epoch > a.epoch
GROUP BY a.run_id, a.epoch""", True),
    # Rows with a known epoch below the highest epoch of the run's rows before them (run_max): resets,
    # decreases, zombies. In a run with elections: the rows after the first place of a higher epoch (no sort);
    # in a run without (any row may reset there, judged against the row before): a window.
    Step("epoch_marks", f"""
SELECT c.run_id, c.seq, c.source, c.position, c.kind, c.epoch, TRUE AS has_elections,
       CAST(NULL AS INT) AS prev_epoch, max(f.epoch) AS run_max
FROM (SELECT r.run_id, r.seq, r.source, r.position, r.kind, r.controller_epoch AS epoch, {_ord('r.')} AS o
      FROM audit_rows r JOIN election_runs x ON {_SAME_RUN.format('x')}
      JOIN epoch_later l ON {_SAME_RUN.format('l')} AND r.controller_epoch = l.epoch
      WHERE {_EPOCH_ROWS} AND {_ord('r.')} > l.later_first) c
JOIN epoch_firsts f ON c.run_id IS NOT DISTINCT FROM f.run_id AND f.first < c.o
GROUP BY c.run_id, c.seq, c.source, c.position, c.kind, c.epoch
UNION ALL
SELECT run_id, seq, source, position, kind, epoch, FALSE AS has_elections, prev_epoch, run_max FROM (
  SELECT r.run_id, r.seq, r.source, r.position, r.kind, r.controller_epoch AS epoch,
         lag(r.controller_epoch) OVER (PARTITION BY r.run_id ORDER BY {_BY_RANK}) AS prev_epoch,
         max(r.controller_epoch) OVER (PARTITION BY r.run_id ORDER BY {_BY_RANK} {_BEFORE_ALL}) AS run_max
  FROM {_RANKED} LEFT JOIN election_runs x ON {_SAME_RUN.format('x')}
  WHERE {_EPOCH_ROWS} AND x.has_elections IS NULL
) b WHERE epoch < run_max""", True),
    Step("elections", f"""
SELECT {_KEY}, controller_epoch AS epoch,
       lag(controller_epoch) OVER (PARTITION BY run_id ORDER BY {_BY_ORDER}) AS prev_elected
FROM audit_rows WHERE {_ELECTED} AND controller_epoch >= 0""", True),
    Step("resets", f"""
SELECT m.run_id, m.seq, m.source, m.position,
       CASE WHEN m.has_elections THEN e.prev_elected ELSE m.prev_epoch END AS a, m.run_max AS b
FROM epoch_marks m LEFT JOIN elections e ON {_same_row('m.', 'e.')}
WHERE m.epoch = {FIRST_CONTROLLER_EPOCH} AND CASE WHEN m.has_elections
      THEN m.{_ELECTED} AND coalesce(e.prev_elected > {FIRST_CONTROLLER_EPOCH}, FALSE)
      ELSE coalesce(m.prev_epoch > {FIRST_CONTROLLER_EPOCH}, FALSE) END""", True),
    Step("eras", _intervals("resets", "run_id", "era"), True),
    # After a run's first reset (rare): the highest epoch of the earlier rows of the era, by a window.
    Step("epochs_after_reset", f"""
SELECT * FROM (
  SELECT r.run_id, r.seq, r.source, r.position, r.kind, r.controller_epoch AS epoch,
         max(r.controller_epoch) OVER (PARTITION BY r.run_id, z.era ORDER BY {_BY_ORDER} {_BEFORE_ALL}) AS era_max
  FROM audit_rows r JOIN eras z ON {_SAME_RUN.format('z')} AND {_within('r.', 'z.')}
  WHERE {_EPOCH_ROWS}
) a WHERE epoch < era_max""", True),
    Step("boundaries", f"""
SELECT r.run_id, r.topic, r.kind, r.seq, r.source, r.position, coalesce(z.era, 0) AS era
FROM audit_rows r LEFT JOIN eras z ON {_SAME_RUN.format('z')} AND {_within('r.', 'z.')}
WHERE r.kind IN {_in(TOPIC_BOUNDARY_KINDS)}""", True),
    # The topics whose last create/delete row in the era is a deletion's completion.
    Step("deletions", f"""
SELECT run_id, era, topic, {_last('seq', _ord())} AS deleted_at FROM boundaries WHERE topic IS NOT NULL
GROUP BY run_id, era, topic HAVING max_by(kind, {_ord()}) = '{TOPIC_DELETION_COMPLETED}'""", True),
    # Continuity: the row before a transition in its entity's window, ordered by (controller epoch, incarnation,
    # order), is its predecessor when its epoch and incarnation are the same.
    Step("discontinuities", f"""
SELECT * FROM (
  SELECT run_id, seq, source, position, to_state, from_state, lag(to_state) OVER w AS prev_to, lag(seq) OVER w AS prev_seq,
         coalesce(lag(inc) OVER w = inc AND lag(controller_epoch) OVER w IS NOT DISTINCT FROM controller_epoch, FALSE)
         AS same_scope
  FROM ({_scoped(TRANSITION_KINDS, "run_id, seq, source, position, entity, topic, partition, replica, from_state, "
                                   "to_state, controller_epoch")}) s
  WINDOW w AS (PARTITION BY {_ENTITY_KEY} ORDER BY controller_epoch NULLS FIRST, inc, {_BY_RANK})
) u WHERE same_scope AND from_state IS NOT NULL AND prev_to IS NOT NULL AND from_state <> prev_to""", True),
    # Each entity's last transition in the era (an aggregation: no sort): stuck in ReplicaDeletionIneligible, or
    # not NonExistent although its topic's last create/delete row is a deletion.
    Step("last_transitions", f"""
SELECT l.*, d.deleted_at, coalesce(d.deleted_at IS NOT NULL AND l.to_state IS NOT NULL AND l.gone IS NOT NULL
                                               AND l.to_state <> l.gone, FALSE) AS keeps_state
FROM (
  SELECT *, coalesce(entity = '{ENTITY_REPLICA}' AND to_state = {REPLICA_DELETION_INELIGIBLE}, FALSE) AS is_stuck,
         {_GONE} AS gone
  FROM (
    SELECT q.run_id, coalesce(z.era, 0) AS era, q.entity, q.topic, {_last('q.seq', 'q.o')} AS seq,
           {_last('q.source', 'q.o')} AS source, {_last('q.position', 'q.o')} AS position,
           {_last('q.to_state', 'q.o')} AS to_state
    FROM (SELECT r.run_id, r.seq, r.source, r.position, r.entity, r.topic, r.partition, r.replica, r.to_state,
                 (r.seq IS NOT NULL, coalesce(r.seq, 0), s.src, r.position IS NOT NULL, coalesce(r.position, 0)) AS o
          FROM {_RANKED} WHERE r.kind IN {_in(TRANSITION_KINDS)}) q
    LEFT JOIN eras z ON q.run_id IS NOT DISTINCT FROM z.run_id AND {_within('q.', 'z.')}
    GROUP BY q.run_id, coalesce(z.era, 0), q.entity, q.topic, q.partition, q.replica
  ) g
) l LEFT JOIN deletions d ON l.run_id IS NOT DISTINCT FROM d.run_id AND l.era = d.era AND l.topic = d.topic
WHERE l.is_stuck OR d.deleted_at IS NOT NULL""", True),
    # Leaders, per (run, era, topic, incarnation, partition): the highest earlier leader epoch, the first leader
    # of the leader epoch (rows with a leader first), the previous known ISR (rows with an ISR first). A broker
    # in the ISR that is neither a replica nor in the previous ISR: the ISR minus both is not empty.
    Step("leader_marks", f"""
SELECT * FROM (
  SELECT *, coalesce(leader_epoch < max_le, FALSE) AS epoch_down, coalesce(leader <> first_leader, FALSE) AS second,
         coalesce(replicas IS NOT NULL AND cardinality(array_intersect(isr, concat(replicas, coalesce(prev_isr, replicas))))
                  < cardinality(array_distinct(isr)), FALSE) AS stranger
  FROM (
    SELECT run_id, seq, source, position, leader, leader_epoch, isr, replicas,
           CASE WHEN leader_epoch >= 0 THEN max(CASE WHEN leader_epoch >= 0 THEN leader_epoch END)
                OVER (PARTITION BY {_LEADER_KEY} ORDER BY {_BY_RANK} {_BEFORE_ALL}) END AS max_le,
           CASE WHEN {_LEADS} THEN first_value(leader) OVER wl END AS first_leader,
           CASE WHEN {_LEADS} THEN first_value(seq) OVER wl END AS first_seq,
           CASE WHEN isr IS NOT NULL THEN lag(isr) OVER wi END AS prev_isr
    FROM ({_scoped(LEADER_KINDS, "run_id, seq, source, position, topic, partition, leader, leader_epoch, isr, "
                                 "replicas")}) s
    WINDOW wl AS (PARTITION BY {_LEADER_KEY}, leader_epoch ORDER BY CASE WHEN {_LEADS} THEN 0 ELSE 1 END, {_BY_RANK}),
           wi AS (PARTITION BY {_LEADER_KEY} ORDER BY CASE WHEN isr IS NULL THEN 1 ELSE 0 END, {_BY_RANK})
  ) u
) v WHERE epoch_down OR second OR stranger""", True),
)


def _found(kind, where: str, a: str = "NULL", b: str = "NULL", prev_isr: str = "NULL", source: str = "audit_rows",
           prefix: str = "") -> str:
    kind_sql = kind if kind.startswith("CASE") else f"'{kind}'"
    key = ", ".join(prefix + c for c in ("run_id", *_ORDER))
    return (f"SELECT {kind_sql} AS violation, {key}, CAST({a} AS BIGINT) AS a, CAST({b} AS BIGINT) AS b, "
            f"{prev_isr} AS prev_isr FROM {source} WHERE {where}")


_DECREASED_OR_ZOMBIE = f"CASE WHEN {_ELECTED} THEN '{CONTROLLER_EPOCH_DECREASED}' ELSE '{ZOMBIE_WRITE}' END"

FOUND = "\nUNION ALL\n".join((
    _found(ISR_NOT_IN_REPLICAS, "stranger", prev_isr="prev_isr", source="leader_marks"),
    "SELECT '" + ILLEGAL_TRANSITION + "' AS violation, r.run_id, r.seq, r.source, r.position, CAST(NULL AS BIGINT) AS a, "
    "CAST(NULL AS BIGINT) AS b, NULL AS prev_isr" + _ILLEGAL_FROM_WHERE,
    _found(CONTROLLER_EPOCH_RESET, "TRUE", "a", "b", source="resets"),
    # Before the run's first reset the era's highest epoch is the run's.
    _found(_DECREASED_OR_ZOMBIE.replace("kind", "m.kind"), f"z.era IS NULL OR {_before('m.', 'z.lo_', False)}",
           "m.run_max", source="epoch_marks m LEFT JOIN eras z ON m.run_id IS NOT DISTINCT FROM z.run_id AND z.era = 1",
           prefix="m."),
    _found(_DECREASED_OR_ZOMBIE, "TRUE", "era_max", source="epochs_after_reset"),
    _found(DISCONTINUITY, "TRUE", "prev_to", "prev_seq", source="discontinuities"),
    _found(DELETED_TOPIC_HAS_STATE, "keeps_state", "deleted_at", source="last_transitions"),
    _found(DELETION_STUCK, "is_stuck", source="last_transitions"),
    _found(LEADER_EPOCH_DECREASED, "epoch_down", "max_le", source="leader_marks"),
    _found(DUPLICATE_LEADER, "second", "first_leader", "first_seq", source="leader_marks"),
    _found(LEADER_NOT_IN_ISR, f"kind IN {_in(LEADER_KINDS)} AND leader >= 0 AND isr IS NOT NULL "
                              "AND NOT array_contains(isr, leader) AND NOT coalesce(unclean, FALSE)"),
    _found(UNCLEAN_ELECTION, f"kind IN {_in(LEADER_KINDS)} AND coalesce(unclean, FALSE)"),
    _found(f"CASE WHEN {_ELECTION} THEN '{FAILED_ELECTION}' ELSE '{REFUSED_TRANSITION}' END",
           f"kind = '{TRANSITION_FAILED}'"),
))
"""Every violation and finding: ``violation`` (the kind), the row's run and order, and what the check compared
it with (``a``, ``b``, ``prev_isr``: the values :func:`audit.checks.violation` takes)."""

FOUND_COLUMNS = ("violation", "run_id", "seq", "source", "position", "a", "b", "prev_isr")

STATS_SQL = f"""
SELECT run_id, kind, CASE WHEN kind = '{TRANSITION_FAILED}' THEN error END AS error, count(*) AS n
FROM audit_rows GROUP BY run_id, kind, CASE WHEN kind = '{TRANSITION_FAILED}' THEN error END"""
"""The rows counted by run, kind and (failures) error: the report's summary."""

COUNTS_SQL = "SELECT violation, run_id, source, count(*) AS n FROM found GROUP BY violation, run_id, source"


def listed_sql(kinds, limit: int | None) -> str:
    """The found rows of ``kinds`` in report order (at most ``limit``), joined with their whole audit rows."""
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    picked = (f"SELECT * FROM found WHERE violation IN {_in(kinds)} "
              f"ORDER BY run_id NULLS FIRST, {_BY_ORDER}, violation{cut}")
    return ("SELECT f.violation, f.a, f.b, f.prev_isr, " + ", ".join(f"r.{c}" for c in COLUMNS) +
            f" FROM ({picked}) f JOIN audit_rows r ON {_same_row('f.', 'r.')}")


def report_of(listed, counts, stats, limit: int | None) -> Report:
    """The report from what an engine found: ``listed`` (rows of :func:`listed_sql`'s columns, as tuples),
    ``counts`` ((violation, run_id, source, n) tuples of ``COUNTS_SQL``), ``stats`` ((run_id, kind, error, n)
    tuples of :data:`STATS_SQL`)."""
    found = []
    seen = set()
    for kind, a, b, prev_isr, *row in listed:
        row = AuditRow(*row)
        key = (kind, row.run_id, row.seq, row.source, row.position)
        if key in seen:
            raise ValueError(f"two rows of run {row.run_id!r} share seq {row.seq}, source {row.source!r} and position "
                             f"{row.position}: (run_id, seq, source, position) must be unique (audit.checks)")
        seen.add(key)
        found.append(violation(kind, row, prev_isr if kind == ISR_NOT_IN_REPLICAS else a, b))
    rows_by_kind: Counter = Counter()
    failures: Counter = Counter()
    rows_by_run: Counter = Counter()
    for run_id, kind, error, n in stats:
        rows_by_run[run_id] += n
        rows_by_kind[kind] += n
        if kind == TRANSITION_FAILED:
            failures[error] += n
    return build_report(found, {(k, run, source): n for k, run, source, n in counts}, rows_by_kind, failures,
                        len(rows_by_run), limit, rows_by_run)


def legal_table():
    """The legal-transition table as Arrow: (machine, from_state, to_state), machine = the row's ``entity``."""
    import pyarrow as pa
    rows = legal_transition_rows()
    return pa.table({"machine": pa.array([m for m, *_ in rows], pa.string()),
                     "from_state": pa.array([f for *_, f, _ in rows], pa.int32()),
                     "to_state": pa.array([t for *_, t in rows], pa.int32())})


def violations_of(columns: dict) -> list[Violation]:
    """Illegal-transition violations (report order) from the result's columns (name -> list of values)."""
    rows = [AuditRow(*values) for values in zip(*(columns[c] for c in COLUMNS))]
    return sorted((violation(ILLEGAL_TRANSITION, r) for r in rows), key=sort_key)


def duckdb_connection(rows, *, threads: int | None = None):
    """A DuckDB connection with ``audit_rows`` (an Arrow table or record batch reader in
    :func:`audit.rows.arrow_schema`; scanned in place, not copied) and ``legal`` registered."""
    import duckdb
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    con.register("audit_rows", rows)
    con.register("legal", legal_table())
    return con


def duckdb_illegal_transitions(rows, *, threads: int | None = None) -> list[Violation]:
    """The illegal-transition violations of ``rows`` (Arrow, :func:`audit.rows.arrow_schema`), on DuckDB."""
    con = duckdb_connection(rows, threads=threads)
    try:
        return violations_of(con.sql(ILLEGAL_TRANSITIONS_SQL).to_arrow_table().to_pydict())
    finally:
        con.close()


def _spark_legal(spark):
    legal = [(m, f, t) for m, _, _, f, t in legal_transition_rows()]
    spark.createDataFrame(legal, "machine string, from_state int, to_state int").createOrReplaceTempView("legal")


def spark_illegal_transitions(df) -> list[Violation]:
    """The same SQL on Spark, over a DataFrame of audit rows (``audit.rows.SPARK_DDL``)."""
    spark = df.sparkSession
    df.createOrReplaceTempView("audit_rows")
    _spark_legal(spark)
    found = spark.sql(ILLEGAL_TRANSITIONS_SQL).collect()
    return violations_of({c: [r[c] for r in found] for c in COLUMNS})


def spark_audit(df, *, limit: int | None = None) -> Report:
    """Every check of :data:`STEPS` and :data:`FOUND` on Spark SQL, over a DataFrame of audit rows
    (``audit.rows.SPARK_DDL``): the rows are persisted once, the small steps checkpointed (kept in the executors,
    their lineage cut)."""
    from pyspark import StorageLevel
    spark = df.sparkSession
    held = [df.select(*COLUMNS).persist(StorageLevel.MEMORY_AND_DISK)]
    try:
        held[0].createOrReplaceTempView("audit_rows")
        _spark_legal(spark)
        for step in STEPS:
            frame = spark.sql(step.sql)
            if step.small:   # computed once, its plan cut off (the plans of the steps after it stay short)
                frame = frame.localCheckpoint(eager=True)
            frame.createOrReplaceTempView(step.name)
        spark.sql(FOUND).localCheckpoint(eager=True).createOrReplaceTempView("found")
        counts = [tuple(r) for r in spark.sql(COUNTS_SQL).collect()]
        listed = [tuple(r) for kinds in (ALL_VIOLATION_KINDS, ALL_FINDING_KINDS)
                  for r in spark.sql(listed_sql(kinds, limit)).collect()]
        stats = [tuple(r) for r in spark.sql(STATS_SQL).collect()]
    finally:
        for frame in held:
            frame.unpersist()
    return report_of(listed, counts, stats, limit)


assert set(VIOLATION_KINDS) | set(FINDING_KINDS) == {
    ILLEGAL_TRANSITION, DISCONTINUITY, LEADER_EPOCH_DECREASED, DUPLICATE_LEADER, LEADER_NOT_IN_ISR, ISR_NOT_IN_REPLICAS,
    CONTROLLER_EPOCH_DECREASED, CONTROLLER_EPOCH_RESET, ZOMBIE_WRITE, DELETED_TOPIC_HAS_STATE, UNCLEAN_ELECTION,
    FAILED_ELECTION, REFUSED_TRANSITION, DELETION_STUCK}, "a check of audit.checks is missing from audit.sql_checks"
