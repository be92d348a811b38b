"""The report timeline's buckets, defined once: both engines' transition counts and the runner's chart use them.

The span of the transitions' times, from the earliest (``lo``) to the latest (``hi``), is cut into
``TIMELINE_BUCKETS`` buckets of a whole number of milliseconds; a time outside the span counts in the
first or last bucket.

A run's calendar: a Kafka log's times are wall clock (ms since 1970); an event log's are simulated ms from
the run's start, whose date its first record gives (:func:`run_start_ms`).
"""
from __future__ import annotations

TIMELINE_BUCKETS = 60


def bucket_width(lo: int, hi: int, buckets: int = TIMELINE_BUCKETS) -> int:
    """The width in ms of each of ``buckets`` buckets that together cover ``lo`` .. ``hi``."""
    return max(1, -(-(hi - lo + 1) // buckets))


def bucket(t: int, lo: int, width: int, buckets: int = TIMELINE_BUCKETS) -> int:
    """The bucket of time ``t``."""
    return min(max((t - lo) // width, 0), buckets - 1)


def bucket_counts(times, counts=None, buckets: int = TIMELINE_BUCKETS) -> tuple[int, int, dict[int, int]] | None:
    """The span of ``times`` (a sequence or numpy array of ms; ``counts``: how often each occurs, default once)
    as (lo, width, {bucket: count} of the buckets that are not empty), with :func:`bucket`'s rule applied to
    every time at once; ``None`` when there are no times."""
    import numpy as np
    values = np.asarray(times, dtype=np.int64)
    if not len(values):
        return None
    lo, hi = int(values.min()), int(values.max())
    width = bucket_width(lo, hi, buckets)
    per_bucket = np.bincount(np.clip((values - lo) // width, 0, buckets - 1), weights=counts, minlength=buckets)
    return lo, width, {b: int(n) for b, n in enumerate(per_bucket.tolist()) if n}


WALL_CLOCK_MS = 10 ** 11   # a time above this (1973) is wall clock, not simulated ms from a run's start


def is_wall_clock(t: int) -> bool:
    return t >= WALL_CLOCK_MS


def run_start_ms(log_dir: str | None) -> int:
    """The start time (ms since 1970) of the event log in ``log_dir``, from its first record
    (``statemachines.kafka_log_format.log_start_ms``); the default start time when there is no log (``None``)
    or it cannot be read (it only decides how times are shown)."""
    from events.log import LogError, LogReader
    from statemachines.kafka_log_format import log_start_ms

    first = None
    if log_dir is not None:
        try:
            first = next(iter(LogReader(log_dir).records()), None)
        except (LogError, OSError):
            first = None
    return log_start_ms(first)
