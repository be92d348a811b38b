"""The audit's one row shape: what every reader produces and every check consumes.

Our msgpack logs and Kafka's text logs are both turned into these rows, so the checks
(legality, continuity, invariants) never care where a transition came from. The same
columns serve three forms: :class:`AuditRow` tuples for the in-process engine, an Arrow
schema for batches handed to Spark, and a Spark DDL string.

Conventions
- ``seq`` orders rows within a run: the log offset for our logs, the line number for
  Kafka's files. ``position`` says where the row was read: the byte offset of the record in
  its segment file, or the line number in a text file (the same as ``seq`` there).
- States are the state bytes of ``statemachines.states`` (replica 1..7, partition 0..3);
  ``None`` when the source did not say (Kafka 0.8 prints no from-state for replicas).
- ``-1`` stands for "not applicable" in integer id columns (``replica`` of a partition
  row, ``partition`` of a topic-level row); ``None`` stands for "not known".
"""
from __future__ import annotations

from typing import NamedTuple

# Row kinds.
REPLICA_TRANSITION = "replica_transition"          # a replica changed state
PARTITION_TRANSITION = "partition_transition"      # a partition changed state (with leader/ISR when known)
TRANSITION_FAILED = "transition_failed"            # a refused or failed state change (error names why)
LEADER_AND_ISR_UPDATED = "leader_and_isr_updated"  # leader/ISR written without a state change (ISR shrink, epoch bump)
CONTROLLER_ELECTED = "controller_elected"          # a controller took over with this epoch
TOPIC_CREATED = "topic_created"                    # a topic (or partitions of it) came into being
TOPIC_DELETION_REQUESTED = "topic_deletion_requested"
TOPIC_DELETION_COMPLETED = "topic_deletion_completed"
KINDS = (REPLICA_TRANSITION, PARTITION_TRANSITION, TRANSITION_FAILED, LEADER_AND_ISR_UPDATED,
         CONTROLLER_ELECTED, TOPIC_CREATED, TOPIC_DELETION_REQUESTED, TOPIC_DELETION_COMPLETED)

ENTITY_REPLICA = "replica"
ENTITY_PARTITION = "partition"


class AuditRow(NamedTuple):
    run_id: str                  # one controller history: a log directory, or a Kafka file (per cluster)
    source: str                  # file the row was read from
    position: int                # byte offset in the segment, or line number in a text file
    seq: int                     # order within the run
    kind: str                    # one of KINDS
    controller_id: int           # -1 when the source does not say (Kafka before 1.0)
    controller_epoch: int        # -1 when not known
    time_ms: int | None          # simulated or wall time of the record, when known
    entity: str | None           # "replica" / "partition" for transitions and failures, else None
    topic: str | None
    partition: int               # -1 for topic-level rows
    replica: int                 # -1 unless the entity is a replica
    from_state: int | None
    to_state: int | None
    leader: int | None
    leader_epoch: int | None
    isr: list[int] | None
    replicas: list[int] | None
    unclean: bool | None         # the election chose a leader outside the ISR (None: no election / not known)
    error: str | None            # for transition_failed: Kafka's exception class or message kind


COLUMNS = AuditRow._fields

SPARK_DDL = (
    "run_id string, source string, position long, seq long, kind string, controller_id int, "
    "controller_epoch int, time_ms long, entity string, topic string, partition int, replica int, "
    "from_state int, to_state int, leader int, leader_epoch int, isr array<int>, replicas array<int>, "
    "unclean boolean, error string"
)


def arrow_schema(dictionary: bool = False):
    """The Arrow schema of a batch of rows (imported lazily: the local engine needs no pyarrow). With
    ``dictionary`` its string columns are dictionary-encoded (int32 codes), as the columnar engine reads them."""
    import pyarrow as pa
    if dictionary:
        text = pa.dictionary(pa.int32(), pa.string())
        return pa.schema([pa.field(f.name, text) if f.type == pa.string() else f for f in arrow_schema()])
    return pa.schema([
        ("run_id", pa.string()), ("source", pa.string()), ("position", pa.int64()), ("seq", pa.int64()),
        ("kind", pa.string()), ("controller_id", pa.int32()), ("controller_epoch", pa.int32()),
        ("time_ms", pa.int64()), ("entity", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
        ("replica", pa.int32()), ("from_state", pa.int32()), ("to_state", pa.int32()), ("leader", pa.int32()),
        ("leader_epoch", pa.int32()), ("isr", pa.list_(pa.int32())), ("replicas", pa.list_(pa.int32())),
        ("unclean", pa.bool_()), ("error", pa.string()),
    ])


def arrow_table(rows):
    """``rows`` (a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``) as a Table of the audit's columns in
    their order: what the Arrow engines take. A TypeError for anything else, a ValueError naming missing columns."""
    import pyarrow as pa
    if isinstance(rows, pa.RecordBatchReader):
        rows = rows.read_all()
    elif isinstance(rows, pa.RecordBatch):
        rows = pa.Table.from_batches([rows])
    if not isinstance(rows, pa.Table):
        raise TypeError(f"audit takes a pyarrow Table, RecordBatch or RecordBatchReader, not {type(rows).__name__}")
    missing = [c for c in COLUMNS if c not in rows.column_names]
    if missing:
        raise ValueError(f"the rows lack the audit columns {', '.join(missing)} (see audit.rows.arrow_schema)")
    return rows.select(list(COLUMNS))


def rows_to_arrow(rows: list[AuditRow]):
    """A ``pyarrow.RecordBatch`` of ``rows`` in :func:`arrow_schema`."""
    import pyarrow as pa
    columns = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
    schema = arrow_schema()
    return pa.RecordBatch.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)],
                                      schema=schema)
