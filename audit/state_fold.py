"""State folds at scale: the cluster state at a time or an offset for every run, and per-partition timelines,
written once as SQL over the audit's rows and run by DuckDB (in process) and by Spark SQL.

What ``kcontroller fold`` runs (:mod:`kcontroller.cli_fold`). The SQL reads one relation, ``audit_rows``, in
the shape of :mod:`audit.rows` (every reader produces it: event logs, a Parquet export), and gives three tables:

- **the state** (:func:`state_sql`, :data:`STATE_SCHEMA`) at a bound, ``time_ms <= T`` or ``seq <= N``: one row
  per (run_id, topic, partition) that exists there, with its partition state, leader, leader epoch, ISR,
  replicas and replica states (a list of (replica, state) sorted by replica), and the seq and time of the
  last row that changed it — what ``kcontroller describe --json`` shows of each partition, for every run;
- **offline intervals** (:func:`offline_intervals_sql`, :data:`OFFLINE_SCHEMA`): per (run, topic, partition)
  the intervals without a leader or in OfflinePartition, ``from_ms``..``to_ms``; one still open at the bound
  ends at the run's last time there (``open`` says so: a consumer with a later end of run extends it);
  intervals of 0 ms (a new partition elected in the millisecond it was created) are left out;
- **leader changes** (:func:`leader_changes_sql`, :data:`LEADER_CHANGES_SCHEMA`): every row that gave a
  partition another leader (-1: none), with the old and new leader, the leader epoch and ``unclean``.

How the rows are folded (the rules of :class:`statemachines.cluster_view.ClusterView`, as far as rows carry
them):

- Rows of a deposed controller are not the cluster's state: a state row (transition, leader/ISR update,
  deletion) whose controller epoch is below the highest epoch elected before it is dropped (a zombie's).
- A topic deleted and created again: only the rows after its last ``topic_deletion_completed`` (the live
  incarnation) count, as :mod:`audit.local_engine` separates incarnations.
- A partition's state and replicas are those of its last ``partition_transition``; a partition whose last one
  went NonExistentPartition is gone (a topic being deleted). Its leader, leader epoch and ISR come from the
  last ``partition_transition`` or ``leader_and_isr_updated`` row (an update before the partition has a state,
  or after it is gone, changes nothing). A NewPartition has leader -1, leader epoch -1 and an empty ISR.
- A replica's state is the to-state of its last ``replica_transition``; NonExistentReplica removes it.

What rows cannot carry (and the fold therefore does not show): topic configs, brokers and the controller,
reassignments in progress, the replica set a reassignment wrote without a partition transition
(``ReplicaAssignmentChanged`` has no audit row: replicas are those of the last partition transition), and
the states a new controller sets without a record when it takes over (``initializePartitionState``,
``initializeReplicaState``): from its election to the transitions its start-up logs, the fold shows the
states the previous controller left. ``tests/test_state_fold.py`` holds the fold to ``describe --json``
wherever else the records allow.

The SQL is plain SQL that both engines run; the few spellings they do not share (an empty int array, a struct,
collecting a list) are the ``dialect`` macros of :data:`DIALECTS`. The bound is an integer written into the SQL.
Joins with the small tables (elections, deletions, run ends) carry Spark's ``BROADCAST`` hint, a comment to DuckDB:
without it Spark plans them as sort-merge joins that shuffle every row.
DuckDB (a dependency) and Spark are imported only when called.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from audit.rows import (
    CONTROLLER_ELECTED, LEADER_AND_ISR_UPDATED, PARTITION_TRANSITION, REPLICA_TRANSITION, TOPIC_DELETION_COMPLETED,
)
from statemachines.states import (
    NON_EXISTENT_PARTITION, NON_EXISTENT_REPLICA, OFFLINE_PARTITION, PARTITION_BY_BYTE, REPLICA_BY_BYTE,
)

__all__ = ["Bound", "DIALECTS", "FoldError", "FoldResult", "LEADER_CHANGES_SCHEMA", "OFFLINE_SCHEMA",
           "STATE_SCHEMA", "duckdb_fold", "fold_paths", "leader_changes_sql", "offline_intervals_sql",
           "spark_fold", "state_sql"]

DUCKDB, SPARK = "duckdb", "spark"
DIALECTS = {
    DUCKDB: {"empty_ints": "CAST([] AS INTEGER[])",
             "empty_replica_states": "CAST([] AS STRUCT(replica INTEGER, state VARCHAR)[])",
             "replica_state": "struct_pack(replica := {0}, state := {1})"},
    SPARK: {"empty_ints": "CAST(array() AS array<int>)",
            "empty_replica_states": "CAST(array() AS array<struct<replica:int,state:string>>)",
            "replica_state": "named_struct('replica', {0}, 'state', {1})"},
}
# Partition states are 0..3: ``seq * 4 + state`` orders by seq and keeps the state (the last transition's
# state by a running max, where neither engine spells "last non-null value" the same way).
_STATE_CODES = 4
assert max(PARTITION_BY_BYTE) < _STATE_CODES


class FoldError(Exception):
    """Bad input to a fold (a path that is neither an event log nor an export, a bound beyond every run's end,
    an unknown engine, DuckDB missing); ``str`` says which and why."""


@dataclass(frozen=True)
class Bound:
    """The fold's bound: rows with ``time_ms <= value`` (``kind`` "time") or ``seq <= value`` ("offset")."""
    kind: str
    value: int

    def __post_init__(self):
        if self.kind not in ("time", "offset"):
            raise FoldError(f"a fold's bound is a time or an offset, not {self.kind!r}")
        if type(self.value) is not int or self.value < 0:
            raise FoldError(f"--{self.kind} must be an integer >= 0, got {self.value!r}")

    @property
    def predicate(self) -> str:
        return f"{'time_ms' if self.kind == 'time' else 'seq'} <= {int(self.value)}"

    def __str__(self) -> str:
        return f"time {self.value} ms" if self.kind == "time" else f"offset {self.value}"


def _names_case(column: str, names: dict) -> str:
    whens = " ".join(f"WHEN {b} THEN '{s.value}'" for b, s in sorted(names.items()))
    return f"CASE {column} {whens} END"


def _live_rows(bound: Bound, kinds: tuple[str, ...]) -> str:
    """CTEs ``bounded`` (the rows within the bound) and ``live`` (its rows of ``kinds`` not written by a deposed
    controller). A row's controller epoch is superseded from the first election of a higher epoch on."""
    in_kinds = ", ".join(f"'{k}'" for k in (*kinds, CONTROLLER_ELECTED))
    wanted = ", ".join(f"'{k}'" for k in kinds)
    return f"""
bounded AS (
  SELECT run_id, seq, kind, controller_epoch, time_ms, topic, partition, replica, from_state, to_state,
         leader, leader_epoch, isr, replicas, unclean
  FROM audit_rows
  WHERE {bound.predicate} AND kind IN ({in_kinds})
),
epochs AS (
  SELECT DISTINCT run_id, controller_epoch FROM bounded WHERE controller_epoch >= 0
),
superseded AS (
  SELECT /*+ BROADCAST(e) */ e.run_id, e.controller_epoch, min(c.seq) AS superseded_seq
  FROM epochs AS e
  JOIN bounded AS c ON c.run_id = e.run_id AND c.kind = '{CONTROLLER_ELECTED}' AND c.controller_epoch > e.controller_epoch
  GROUP BY e.run_id, e.controller_epoch
),
live AS (
  SELECT /*+ BROADCAST(s) */ b.* FROM bounded AS b
  LEFT JOIN superseded AS s ON s.run_id = b.run_id AND s.controller_epoch = b.controller_epoch
  WHERE b.kind IN ({wanted}) AND (s.superseded_seq IS NULL OR b.seq < s.superseded_seq)
)"""


def state_sql(bound: Bound, dialect: str = DUCKDB) -> str:
    """The state at ``bound`` (:data:`STATE_SCHEMA`, ordered by run, topic, partition).

    Two aggregations over the live incarnation's rows: per (run, topic, partition, replica), the last of each kind
    (``max_by`` over a seq that is NULL for rows of other kinds: both engines skip those); then per partition, its
    own row (replica -1: its transitions and leader/ISR updates, whose ``replica`` may name the replica an update
    removed from the ISR) with the list of its replicas' states. Few stages: Spark does not materialise a CTE
    referenced twice, so each reference of the rows would read them again."""
    d = DIALECTS[dialect]
    empty = d["empty_ints"]
    pt, laiu, rt = PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED, REPLICA_TRANSITION
    replica_state = d["replica_state"].format("replica", _names_case("r_state", REPLICA_BY_BYTE))
    has_state = f"replica >= 0 AND r_state IS NOT NULL AND r_state <> {NON_EXISTENT_REPLICA}"
    return "WITH" + _live_rows(bound, (pt, laiu, rt, TOPIC_DELETION_COMPLETED)) + f""",
deleted AS (
  SELECT run_id, topic, max(seq) AS deleted_seq FROM live WHERE kind = '{TOPIC_DELETION_COMPLETED}'
  GROUP BY run_id, topic
),
entities AS (
  SELECT /*+ BROADCAST(d) */ l.run_id, l.topic, l.partition, CASE WHEN l.kind = '{rt}' THEN l.replica ELSE -1 END AS replica,
         max(CASE WHEN l.kind = '{pt}' THEN l.seq END) AS pt_seq,
         max_by(l.to_state, CASE WHEN l.kind = '{pt}' THEN l.seq END) AS p_state,
         max_by(coalesce(l.replicas, {empty}), CASE WHEN l.kind = '{pt}' THEN l.seq END) AS replicas,
         max_by(coalesce(l.leader, -1), CASE WHEN l.kind IN ('{pt}', '{laiu}') THEN l.seq END) AS leader,
         max_by(coalesce(l.leader_epoch, -1), CASE WHEN l.kind IN ('{pt}', '{laiu}') THEN l.seq END) AS leader_epoch,
         max_by(coalesce(l.isr, {empty}), CASE WHEN l.kind IN ('{pt}', '{laiu}') THEN l.seq END) AS isr,
         max_by(l.to_state, CASE WHEN l.kind = '{rt}' THEN l.seq END) AS r_state,
         max(l.seq) AS last_seq, max_by(l.time_ms, l.seq) AS last_time_ms
  FROM live AS l
  LEFT JOIN deleted AS d ON d.run_id = l.run_id AND d.topic = l.topic
  WHERE l.kind <> '{TOPIC_DELETION_COMPLETED}' AND (d.deleted_seq IS NULL OR l.seq > d.deleted_seq)
  GROUP BY l.run_id, l.topic, l.partition, CASE WHEN l.kind = '{rt}' THEN l.replica ELSE -1 END
)
SELECT run_id, topic, partition, {_names_case("max(p_state)", PARTITION_BY_BYTE)} AS state,
       max_by(leader, pt_seq) AS leader, max_by(leader_epoch, pt_seq) AS leader_epoch, max_by(isr, pt_seq) AS isr,
       max_by(replicas, pt_seq) AS replicas,
       coalesce(array_sort(array_agg({replica_state}) FILTER (WHERE {has_state})), {d["empty_replica_states"]})
         AS replica_states,
       max(last_seq) AS last_seq, max_by(last_time_ms, last_seq) AS last_time_ms
FROM entities
GROUP BY run_id, topic, partition
HAVING max(p_state) IS NOT NULL AND max(p_state) <> {NON_EXISTENT_PARTITION}
ORDER BY run_id, topic, partition
"""


def _timeline_rows(bound: Bound) -> str:
    """CTEs up to ``marked``: each partition row that the partition's state follows, with its ``status``
    (online / offline / gone) and the status and leader of the row before it."""
    pt, laiu = PARTITION_TRANSITION, LEADER_AND_ISR_UPDATED
    return "WITH" + _live_rows(bound, (pt, laiu)) + f""",
run_end AS (
  SELECT run_id, max(time_ms) AS end_ms FROM audit_rows WHERE {bound.predicate} GROUP BY run_id
),
coded AS (
  SELECT run_id, topic, partition, seq, time_ms, kind, coalesce(leader, -1) AS leader,
         coalesce(leader_epoch, -1) AS leader_epoch, unclean,
         max(CASE WHEN kind = '{pt}' THEN seq * {_STATE_CODES} + to_state END)
           OVER (PARTITION BY run_id, topic, partition ORDER BY seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS state_code
  FROM live
),
applied AS (
  SELECT run_id, topic, partition, seq, time_ms, kind, leader, leader_epoch, unclean,
         CASE WHEN state_code % {_STATE_CODES} = {NON_EXISTENT_PARTITION} THEN 'gone'
              WHEN leader < 0 OR state_code % {_STATE_CODES} = {OFFLINE_PARTITION} THEN 'offline'
              ELSE 'online' END AS status
  FROM coded
  WHERE state_code IS NOT NULL
    AND (kind = '{pt}' OR state_code % {_STATE_CODES} <> {NON_EXISTENT_PARTITION})
),
marked AS (
  SELECT a.*,
         lag(status) OVER w AS prev_status,
         coalesce(lag(CASE WHEN status = 'gone' THEN -1 ELSE leader END) OVER w, -1) AS prev_leader
  FROM applied AS a
  WINDOW w AS (PARTITION BY run_id, topic, partition ORDER BY seq)
)"""


def offline_intervals_sql(bound: Bound, dialect: str = DUCKDB) -> str:
    """The offline intervals up to ``bound`` (:data:`OFFLINE_SCHEMA`, ordered by run, topic, partition, time)."""
    return _timeline_rows(bound) + """,
changes AS (
  SELECT run_id, topic, partition, seq, time_ms, status,
         lead(time_ms) OVER w AS next_ms, lead(seq) OVER w AS next_seq
  FROM marked
  WHERE prev_status IS NULL OR status <> prev_status
  WINDOW w AS (PARTITION BY run_id, topic, partition ORDER BY seq)
)
SELECT /*+ BROADCAST(e) */ c.run_id, c.topic, c.partition, c.time_ms AS from_ms, coalesce(c.next_ms, e.end_ms) AS to_ms,
       coalesce(c.next_ms, e.end_ms) - c.time_ms AS duration_ms, c.seq AS from_seq, c.next_seq AS to_seq,
       c.next_ms IS NULL AS open
FROM changes AS c JOIN run_end AS e ON e.run_id = c.run_id
WHERE c.status = 'offline' AND NOT (c.next_ms IS NOT NULL AND c.next_ms = c.time_ms)
ORDER BY c.run_id, c.topic, c.partition, c.seq
"""


def leader_changes_sql(bound: Bound, dialect: str = DUCKDB) -> str:
    """The leader changes up to ``bound`` (:data:`LEADER_CHANGES_SCHEMA`, ordered by run, topic, partition, seq)."""
    return _timeline_rows(bound) + """
SELECT run_id, topic, partition, seq, time_ms, prev_leader AS old_leader, leader AS new_leader, leader_epoch,
       unclean, kind
FROM marked
WHERE status <> 'gone' AND leader <> prev_leader
ORDER BY run_id, topic, partition, seq
"""


def _schemas():
    import pyarrow as pa
    key = [("run_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32())]
    state = pa.schema(key + [
        ("state", pa.string()), ("leader", pa.int32()), ("leader_epoch", pa.int32()), ("isr", pa.list_(pa.int32())),
        ("replicas", pa.list_(pa.int32())),
        ("replica_states", pa.list_(pa.struct([("replica", pa.int32()), ("state", pa.string())]))),
        ("last_seq", pa.int64()), ("last_time_ms", pa.int64())])
    offline = pa.schema(key + [
        ("from_ms", pa.int64()), ("to_ms", pa.int64()), ("duration_ms", pa.int64()), ("from_seq", pa.int64()),
        ("to_seq", pa.int64()), ("open", pa.bool_())])
    leaders = pa.schema(key + [
        ("seq", pa.int64()), ("time_ms", pa.int64()), ("old_leader", pa.int32()), ("new_leader", pa.int32()),
        ("leader_epoch", pa.int32()), ("unclean", pa.bool_()), ("kind", pa.string())])
    return state, offline, leaders


def __getattr__(name: str):
    # The Arrow schemas, built on first use (pyarrow is imported lazily, as in audit.rows).
    schemas = dict(zip(("STATE_SCHEMA", "OFFLINE_SCHEMA", "LEADER_CHANGES_SCHEMA"), _schemas()))
    if name in schemas:
        return schemas[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class FoldResult:
    """The fold's tables (Arrow, in the schemas above; the timelines None unless asked for)."""
    bound: Bound
    engine: str
    state: object
    offline: object = None
    leader_changes: object = None
    runs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ends: dict = field(default_factory=dict)   # run -> its last row's seq (offset bounds only)


def _queries(bound: Bound, dialect: str, timelines: bool, state: bool = True) -> list[tuple[str, str]]:
    out = [("state", state_sql(bound, dialect))] if state else []
    if timelines:
        out += [("offline", offline_intervals_sql(bound, dialect)), ("leader_changes", leader_changes_sql(bound, dialect))]
    return out


def _cast(name: str, table):
    schema = {"state": _schemas()[0], "offline": _schemas()[1], "leader_changes": _schemas()[2]}[name]
    return table.select(schema.names).cast(schema)


# The columns the SQL reads (the others, source, position, controller_id, entity, error, are not needed).
FOLD_COLUMNS = ("run_id", "seq", "kind", "controller_epoch", "time_ms", "topic", "partition", "replica", "from_state",
                "to_state", "leader", "leader_epoch", "isr", "replicas", "unclean")

_RUN_ENDS_SQL = "SELECT run_id, max(seq) AS end_seq FROM audit_rows GROUP BY run_id ORDER BY run_id"


def duckdb_fold(con, bound: Bound, *, timelines: bool = False, state: bool = True) -> FoldResult:
    """The fold on a DuckDB connection that has ``audit_rows`` (a table or a view); ``state`` False leaves the
    state table out (None), for the timelines alone."""
    result = FoldResult(bound, DUCKDB, None)
    if bound.kind == "offset":
        result.ends = dict(con.sql(_RUN_ENDS_SQL).fetchall())
    for name, sql in _queries(bound, DUCKDB, timelines, state):
        setattr(result, name, _cast(name, con.sql(sql).to_arrow_table()))
    return result


def spark_fold(df, bound: Bound, *, timelines: bool = False, state: bool = True) -> FoldResult:
    """The fold on Spark, over a DataFrame of audit rows (``audit.rows.SPARK_DDL``); tables collected as Arrow.

    The rows' needed columns are cached for the fold's queries (each reads ``audit_rows`` several times: without
    the cache, each would read the logs again) and released after."""
    spark = df.sparkSession
    rows = df.select(*FOLD_COLUMNS).persist()
    try:
        rows.createOrReplaceTempView("audit_rows")
        result = FoldResult(bound, SPARK, None)
        if bound.kind == "offset":
            result.ends = {r[0]: r[1] for r in spark.sql(_RUN_ENDS_SQL).collect()}
        for name, sql in _queries(bound, SPARK, timelines, state):
            setattr(result, name, _cast(name, spark.sql(sql).toArrow()))
    finally:
        rows.unpersist()
    return result


# --- from PATHs ----------------------------------------------------------------------------------------------

def _inputs(paths: list[str]):
    """(event log directories, Parquet files) named by ``paths``; FoldError for anything else."""
    from audit.export import ParquetInputError, check_schema
    from audit.runner import EVENT_LOG, PARQUET, resolve_inputs
    inputs, errors = resolve_inputs(paths)
    if errors:
        raise FoldError("; ".join(f"{e.path}: {e.reason}" for e in errors))
    logs, parquet = [], []
    # A file found in a directory that is not rows (a sweep's sweep.json, a README) is passed over; one named
    # on the command line is an error.
    named = {os.path.normpath(p) for p in paths}
    for i in inputs:
        if i.type == EVENT_LOG:
            logs.append(i.path)
        elif i.type == PARQUET:
            try:
                for f in i.parquet.files:
                    check_schema(f)
            except ParquetInputError as exc:
                raise FoldError(str(exc)) from None
            parquet += [os.path.abspath(f) for f in i.parquet.files]
        elif os.path.normpath(i.path) in named:
            raise FoldError(f"{i.path}: not an event log directory nor a Parquet export of audit rows (a fold reads "
                            f"event logs: kcontroller simulate/sweep/demo output, or kcontroller export --parquet)")
    if not logs and not parquet:
        raise FoldError(f"{', '.join(paths) or '(no path)'}: no event log and no Parquet export in it")
    return logs, parquet


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise FoldError("the local engine needs DuckDB: pip install duckdb (or pip install 'kcontroller[duckdb]'), "
                        "or run on Spark with --engine spark") from None
    return duckdb


def _duckdb_connection(logs: list[str], parquet: list[str], threads: int | None, tables: tuple = ()):
    """A connection whose ``audit_rows`` holds the logs' rows (read once into a DuckDB table), the
    Parquet files' (a view: DuckDB scans the files as the queries need them) and those of ``tables`` (Arrow
    tables of audit rows, e.g. Kafka logs' rows)."""
    import pyarrow as pa

    from audit.log_rows import discover_segments
    from audit.rows import arrow_schema
    from audit.spark_source import arrow_batches
    duckdb = _duckdb()
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    columns = ", ".join(FOLD_COLUMNS)
    parts = []
    if logs:
        refs = discover_segments(logs)
        reader = pa.RecordBatchReader.from_batches(arrow_schema(), (b for ref in refs for b in arrow_batches(ref)))
        con.register("log_batches", reader)
        con.execute(f"CREATE TEMP TABLE log_rows AS SELECT {columns} FROM log_batches")
        con.unregister("log_batches")
        parts.append("SELECT * FROM log_rows")
    if parquet:
        files = ", ".join("'" + f.replace("'", "''") + "'" for f in parquet)
        parts.append(f"SELECT {columns} FROM read_parquet([{files}])")
    for n, table in enumerate(tables):
        con.register(f"more_rows_{n}", table.select(list(FOLD_COLUMNS)))
        parts.append(f"SELECT {columns} FROM more_rows_{n}")
    if not parts:
        con.register("no_rows", arrow_schema().empty_table().select(list(FOLD_COLUMNS)))
        parts.append(f"SELECT {columns} FROM no_rows")
    con.execute("CREATE TEMP VIEW audit_rows AS " + " UNION ALL ".join(parts))
    return con


def _spark_rows(logs: list[str], parquet: list[str], master: str | None, conf: dict | None):
    from audit.rows import COLUMNS, SPARK_DDL
    from audit.spark_session import spark_session
    from audit.spark_source import read_logs_df
    spark = spark_session(master, app_name="kcontroller-fold", conf=conf)
    frames = []
    if logs:
        frames.append(read_logs_df(spark, logs))
    if parquet:
        frames.append(spark.read.schema(SPARK_DDL).parquet(*parquet).select(*COLUMNS))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df


def _check_offset(bound: Bound, ends: dict[str, int], logs: list[str]) -> list[str]:
    """FoldError when an offset lies beyond the end of every run; notes naming the runs it passes the end of.
    A run's end is its last row's seq, or for an event log whose last records are not rows, its end offset."""
    if bound.kind != "offset" or not ends:
        return []
    if bound.value > max(ends.values()):
        from events.log import LogError, LogReader
        for log in logs:
            if os.path.normpath(log) in ends:
                try:
                    ends[os.path.normpath(log)] = max(ends[os.path.normpath(log)], LogReader(log).end_offset - 1)
                except LogError:
                    pass
    last = max(ends.values())
    if bound.value > last:
        raise FoldError(f"offset {bound.value} is beyond the end of every run (the last record of any is at offset "
                        f"{last}): nothing to fold there")
    past = sorted(run for run, end in ends.items() if bound.value > end)
    return [f"offset {bound.value} is beyond the end of {len(past)} run(s) ({', '.join(past[:3])}"
            f"{' ...' if len(past) > 3 else ''}): their state is the one at their end"] if past else []


def fold_paths(paths, bound: Bound, *, engine: str = "local", timelines: bool = False, master: str | None = None,
               conf: dict | None = None, threads: int | None = None) -> FoldResult:
    """The fold of every run named by ``paths`` (event-log directories, directories of them such as a sweep's
    output, a Parquet export or one of its runs, globs) on ``engine`` ("local": DuckDB, "spark").
    FoldError for bad input (the message names the path)."""
    paths = [os.fspath(p) for p in paths]
    if engine not in ("local", DUCKDB, SPARK):
        raise FoldError(f"unknown engine {engine!r}: local (DuckDB) or spark")
    logs, parquet = _inputs(paths)
    if engine == SPARK:
        result = spark_fold(_spark_rows(logs, parquet, master, conf), bound, timelines=timelines)
    else:
        con = _duckdb_connection(logs, parquet, threads)
        try:
            result = duckdb_fold(con, bound, timelines=timelines)
        finally:
            con.close()
    notes = _check_offset(bound, result.ends, logs)
    result.notes = notes
    result.runs = sorted(set(result.state.column("run_id").to_pylist()))
    return result
