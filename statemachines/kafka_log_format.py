"""Render event-log records as the lines Kafka 3.7 writes to ``state-change.log``.

Each transition, failure and request record becomes the line Kafka's state.change.logger
would print for it, with Kafka's layout ``[%d] %p %m (%c)%n`` and the
``[Controller id=N epoch=E]`` prefix. Input records and controller elections belong to
controller.log, not state-change.log, so they print nothing here. TRACE lines (per replica,
per request partition) are dropped when ``min_level`` is INFO, as on Kafka 2.6+ defaults.

Simulated time has a date: records carry milliseconds since their run's start, and a run's *start
time* (ISO 8601, UTC) places them on the calendar when they are shown. The start time is a
presentation offset, never part of a record's time: a scenario gives it as ``start_time`` (journaled
with the scenario's text in ``SimulationStarted``), a cluster as the config ``kcontroller.start.time``
of its ``ClusterCreated`` record; :func:`log_start_ms` finds it in a log's first record, and a log
that gives none starts at :data:`DEFAULT_START_TIME` (a fixed date, so the same log always prints
the same lines).
"""
from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Iterator

import yaml

from events.records import (
    API_LEADER_AND_ISR, ClusterCreated, SimulationStarted, API_STOP_REPLICA, API_UPDATE_METADATA, ENTITY_REPLICA, UPDATE_OFFLINE_REPLICA,
    LeaderAndIsrPartition, LeaderAndIsrUpdated, PartitionTransition, ReplicaTransition, RequestSent,
    StopReplicaPartition, TransitionFailed,
)
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from statemachines.states import NEW_PARTITION, ONLINE_PARTITION, PARTITION_BY_BYTE, REPLICA_BY_BYTE

LEVELS = {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "ERROR": 4}

# Where Kafka's exception classes live, for the first line of the stack trace under an ERROR.
_EXCEPTION_PACKAGES = {
    "IllegalStateException": "java.lang.IllegalStateException",
    "StateChangeFailedException": "kafka.common.StateChangeFailedException",
    "ControllerMovedException": "org.apache.kafka.common.errors.ControllerMovedException",
}


def _ints(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


def _java_list(xs: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, xs)) + "]"


START_TIME_CONFIG = "kcontroller.start.time"   # the ClusterCreated config holding a cluster's start time
DEFAULT_START_TIME = "2024-01-01T00:00:00Z"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MAX_START = _dt.datetime(9000, 1, 1, tzinfo=_dt.timezone.utc)   # leaves room for any run's length


class StartTimeError(ValueError):
    """A start time that is not an ISO 8601 date and time (message: what was expected)."""


def parse_start_time(text: str) -> int:
    """Milliseconds since 1970-01-01T00:00:00Z of an ISO 8601 date and time: ``2024-03-01T09:00:00Z``,
    ``2024-03-01T10:00:00+01:00``, ``2024-03-01 09:00:00.250``, ``2024-03-01`` (no zone: UTC). Raises
    StartTimeError."""
    if not isinstance(text, str):
        raise StartTimeError(f"expected an ISO 8601 date and time such as 2024-03-01T09:00:00Z, got {text!r}")
    try:
        t = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise StartTimeError(f"expected an ISO 8601 date and time such as 2024-03-01T09:00:00Z, "
                             f"got {text!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    if not _EPOCH <= t < _MAX_START:
        raise StartTimeError(f"expected a start time from 1970-01-01T00:00:00Z to before 9000-01-01, got {text!r}")
    if t.microsecond % 1000:
        raise StartTimeError(f"expected a start time in whole milliseconds, got {text!r}")
    delta = t - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def format_start_time(ms: int) -> str:
    """The ISO 8601 text (UTC, ``Z``) of a start time in ms: ``2024-03-01T09:00:00Z`` (``.250Z`` with ms)."""
    t = _EPOCH + _dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ms % 1000:03d}" if ms % 1000 else "") + "Z"


DEFAULT_START_MS = parse_start_time(DEFAULT_START_TIME)


def wall_time(ms: int, start_ms: int = 0) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` (log4j's default date layout, UTC) of simulated time ``ms`` of a run that
    started at ``start_ms`` (ms since 1970)."""
    return _timestamp(start_ms + ms)


def scenario_start_time(text: str) -> str | None:
    """The top-level ``start_time`` of a scenario's YAML text as written, or None when it has none (the text
    was checked when it was journaled; here only that key is read)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "start_time" and isinstance(value, yaml.ScalarNode):
            return value.value
    return None


def log_start_ms(first: tuple | None) -> int:
    """The start time (ms since 1970) of the log whose first record is ``first``: a simulation's scenario
    ``start_time``, a cluster's ``kcontroller.start.time`` config, else :data:`DEFAULT_START_TIME`. A value
    that does not parse (a forged log) falls back to the default too: it only decides how times are shown."""
    text = None
    if type(first) is SimulationStarted:
        text = scenario_start_time(first.text)
    elif type(first) is ClusterCreated:
        text = dict(first.configs).get(START_TIME_CONFIG)
    if text is None:
        return DEFAULT_START_MS
    try:
        return parse_start_time(text)
    except StartTimeError:
        return DEFAULT_START_MS


def _timestamp(ms: int) -> str:
    t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


class KafkaLogFormatter:
    """Turns a stream of records into state-change.log lines.

    ``layout="log4j"`` prints full log4j lines, each stamped with the record's time plus ``start_ms`` (the
    run's start time, ms since 1970: :func:`log_start_ms`); ``layout="message"`` prints only the
    ``[Controller id=N epoch=E] message`` part; ``layout="json"`` prints each line as one JSON object
    (``time``, ``time_ms``, ``level``, ``logger``, ``controller_id``, ``controller_epoch``, ``offset`` of the
    record, ``message``, and an ERROR's ``exception``): JSON Lines.
    """

    def __init__(self, *, min_level: str = "TRACE", layout: str = "log4j", start_ms: int = 0):
        if min_level not in LEVELS:
            raise ValueError(f"unknown level {min_level!r}; choose one of {', '.join(LEVELS)}")
        if layout not in ("log4j", "message", "json"):
            raise ValueError(f"unknown layout {layout!r}; choose log4j, message or json")
        self.min_level = LEVELS[min_level]
        self.layout = layout
        self.start_ms = start_ms
        self._stamp = (None, "")   # the last record time formatted: runs of records share one
        self._pending_update_metadata: list[RequestSent] = []

    def format(self, records: Iterable[tuple]) -> Iterator[str]:
        for rec in records:
            yield from self.feed(rec)
        yield from self.flush()

    def feed(self, rec: tuple) -> list[str]:
        out: list[str] = []
        pending = self._pending_update_metadata
        # One UpdateMetadata round = consecutive RequestSent records for ascending brokers.
        if pending and not (type(rec) is RequestSent and rec.api == API_UPDATE_METADATA
                            and rec.partition_count == pending[0].partition_count
                            and rec.cause_offset == pending[0].cause_offset and rec.broker_id > pending[-1].broker_id):
            out.extend(self.flush())
        t = type(rec)
        if t is ReplicaTransition:
            self._line(out, rec, "TRACE", f"Changed state of replica {rec.replica} for partition "
                       f"{rec.topic}-{rec.partition} from {REPLICA_BY_BYTE[rec.from_state]} to "
                       f"{REPLICA_BY_BYTE[rec.to_state]}")
        elif t is PartitionTransition:
            self._partition_transition(out, rec)
        elif t is TransitionFailed:
            self._failure(out, rec)
        elif t is LeaderAndIsrUpdated:
            if rec.reason == UPDATE_OFFLINE_REPLICA:
                info = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(rec.leader, rec.leader_epoch, rec.isr, rec.recovery_state, rec.partition_epoch),
                    rec.controller_epoch)
                self._line(out, rec, "INFO", f"Partition {rec.topic}-{rec.partition} state changed to "
                           f"{info.kafka_str()} after removing replica {rec.replica} from the ISR as part of "
                           f"transition to OfflineReplica")
        elif t is LeaderAndIsrPartition:
            kind = "become-leader" if rec.leader == rec.broker_id else "become-follower"
            state = (f"LeaderAndIsrPartitionState(topicName='{rec.topic}', partitionIndex={rec.partition}, "
                     f"controllerEpoch={rec.state_controller_epoch}, leader={rec.leader}, "
                     f"leaderEpoch={rec.leader_epoch}, isr={_java_list(rec.isr)}, partitionEpoch={rec.partition_epoch}, "
                     f"replicas={_java_list(rec.replicas)}, addingReplicas={_java_list(rec.adding_replicas)}, "
                     f"removingReplicas={_java_list(rec.removing_replicas)}, isNew={str(rec.is_new).lower()}, "
                     f"leaderRecoveryState={rec.recovery_state})")
            self._line(out, rec, "TRACE", f"Sending {kind} LeaderAndIsr request {state} to broker {rec.broker_id} "
                       f"for partition {rec.topic}-{rec.partition}")
        elif t is StopReplicaPartition:
            state = (f"StopReplicaPartitionState(partitionIndex={rec.partition}, leaderEpoch={rec.leader_epoch}, "
                     f"deletePartition={str(rec.delete_partition).lower()})")
            self._line(out, rec, "TRACE", f"Sending StopReplica request {state} to broker {rec.broker_id} for "
                       f"partition {rec.topic}-{rec.partition}")
        elif t is RequestSent:
            if rec.api == API_LEADER_AND_ISR:
                self._line(out, rec, "INFO", f"Sending LeaderAndIsr request to broker {rec.broker_id} with "
                           f"{rec.leader_count} become-leader and {rec.partition_count - rec.leader_count} "
                           f"become-follower partitions")
            elif rec.api == API_STOP_REPLICA:
                self._line(out, rec, "INFO", f"Sending StopReplica request for {rec.partition_count} replicas to "
                           f"broker {rec.broker_id}")
            elif rec.api == API_UPDATE_METADATA:
                # Kafka logs one line for all brokers of an UpdateMetadata round.
                self._pending_update_metadata.append(rec)
        return out

    def flush(self) -> list[str]:
        pending = self._pending_update_metadata
        if not pending:
            return []
        self._pending_update_metadata = []
        out: list[str] = []
        brokers = ", ".join(str(r.broker_id) for r in pending)
        self._line(out, pending[0], "INFO", f"Sending UpdateMetadata request to brokers HashSet({brokers}) for "
                   f"{pending[0].partition_count} partitions")
        return out

    # --- helpers ----------------------------------------------------------------------------
    def _partition_transition(self, out: list, rec: PartitionTransition) -> None:
        tp = f"{rec.topic}-{rec.partition}"
        frm = PARTITION_BY_BYTE[rec.from_state]
        if rec.to_state == NEW_PARTITION:
            self._line(out, rec, "INFO", f"Changed partition {tp} state from {frm} to NewPartition with assigned "
                       f"replicas {_ints(rec.replicas)}")
        elif rec.to_state == ONLINE_PARTITION:
            lai = LeaderAndIsr(rec.leader, rec.leader_epoch, rec.isr, rec.recovery_state, rec.partition_epoch)
            self._line(out, rec, "INFO", f"Changed partition {tp} from {frm} to OnlinePartition with state "
                       f"{lai.kafka_str()}")
        else:
            self._line(out, rec, "TRACE", f"Changed partition {tp} state from {frm} to "
                       f"{PARTITION_BY_BYTE[rec.to_state]}")

    def _failure(self, out: list, rec: TransitionFailed) -> None:
        tp = f"{rec.topic}-{rec.partition}"
        if rec.entity == ENTITY_REPLICA:
            msg = (f"Controller {rec.controller_id} epoch {rec.controller_epoch} initiated state change of replica "
                   f"{rec.replica} for partition {tp} from {REPLICA_BY_BYTE[rec.from_state]} to "
                   f"{REPLICA_BY_BYTE[rec.to_state]} failed")
        else:
            msg = (f"Controller {rec.controller_id} epoch {rec.controller_epoch} failed to change state for partition "
                   f"{tp} from {PARTITION_BY_BYTE[rec.from_state]} to {PARTITION_BY_BYTE[rec.to_state]}")
        exception = f"{_EXCEPTION_PACKAGES.get(rec.error, rec.error)}: {rec.message}"
        if self._line(out, rec, "ERROR", msg, exception) and self.layout != "json":
            out.append(exception)

    def _line(self, out: list, rec: tuple, level: str, message: str, exception: str | None = None) -> bool:
        if LEVELS[level] < self.min_level:
            return False
        prefix = f"[Controller id={rec.controller_id} epoch={rec.controller_epoch}] "
        if self.layout == "message":
            out.append(prefix + message)
            return True
        ms = rec.timestamp_ms
        if self._stamp[0] != ms:
            self._stamp = (ms, _timestamp(self.start_ms + ms))
        if self.layout == "json":
            entry = {"time": self._stamp[1], "time_ms": ms,
                     "level": level, "logger": "state.change.logger", "controller_id": rec.controller_id,
                     "controller_epoch": rec.controller_epoch, "offset": rec.offset, "message": prefix + message}
            if exception is not None:
                entry["exception"] = exception
            out.append(json.dumps(entry))
        else:
            out.append(f"[{self._stamp[1]}] {level} {prefix}{message} (state.change.logger)")
        return True


def format_records(records: Iterable[tuple], *, min_level: str = "TRACE", layout: str = "log4j",
                   start_ms: int = 0) -> Iterator[str]:
    """State-change.log lines for ``records`` (see KafkaLogFormatter)."""
    return KafkaLogFormatter(min_level=min_level, layout=layout, start_ms=start_ms).format(records)


