"""structlog configuration for the command line (libraries never configure logging; the CLI does).

Diagnostic lines go to stderr, each stamped with the *simulated* time of the run that logged it (never
the wall clock), on the run's calendar: ``2024-01-01 00:00:28,000 [warning  ] ...``. A command that runs a
cluster or a simulation hands its clock over with :func:`use_clock` (or feeds the records it writes to a
:class:`RecordClock`); lines logged outside a run carry no time.
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import structlog

from statemachines.kafka_log_format import DEFAULT_START_MS, wall_time

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
          "critical": logging.CRITICAL}

_clock: Callable[[], int] | None = None
_start_ms: int = DEFAULT_START_MS


def use_clock(clock: Callable[[], int] | None, start_ms: int = DEFAULT_START_MS) -> None:
    """Stamp diagnostic lines with ``clock()`` (simulated ms) after ``start_ms`` (the run's start time, ms since
    1970); None: no time."""
    global _clock, _start_ms
    _clock, _start_ms = clock, start_ms


class RecordClock:
    """The simulated time as the records written so far tell it, for commands that do not hold the cluster's
    own clock (``demo``): ``sink(writer)`` is a sink for the cluster that notes each record's time and hands
    it to ``writer`` (a LogWriter; its columnar batches still go to ``writer.append_columns`` whole)."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def sink(self, writer) -> _NotingSink:
        return _NotingSink(self, writer)


class _NotingSink:
    def __init__(self, clock: RecordClock, writer):
        self.clock, self.writer = clock, writer

    def __call__(self, record: tuple) -> None:
        self.clock.now = record[5]   # a record's header: kind, v, offset, controller_id, controller_epoch, time
        self.writer.append(record)

    def append_columns(self, batch) -> None:
        self.clock.now = batch.timestamp_ms
        self.writer.append_columns(batch)


def _simulated_time(_logger, _name: str, event: dict) -> dict:
    if _clock is not None:
        try:
            event["timestamp"] = wall_time(_clock(), _start_ms)
        except (OverflowError, ValueError, TypeError):
            pass
    return event


class _Stderr:
    """Whatever ``sys.stderr`` is at write time (it may be replaced after configuration, e.g. by pytest)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str = "warning") -> None:
    """Human-readable log lines on stderr at ``level`` and above (stdout stays for the command's output)."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            _simulated_time,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),
        cache_logger_on_first_use=True,
    )
