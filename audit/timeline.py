"""The report timeline's buckets, defined once: both engines' transition counts and the runner's chart use them.

The span of the transitions' times, from the earliest (``lo``) to the latest (``hi``), is cut into
``TIMELINE_BUCKETS`` buckets of a whole number of milliseconds; a time outside the span counts in the
first or last bucket.
"""
from __future__ import annotations

TIMELINE_BUCKETS = 60


def bucket_width(lo: int, hi: int, buckets: int = TIMELINE_BUCKETS) -> int:
    """The width in ms of each of ``buckets`` buckets that together cover ``lo`` .. ``hi``."""
    return max(1, -(-(hi - lo + 1) // buckets))


def bucket(t: int, lo: int, width: int, buckets: int = TIMELINE_BUCKETS) -> int:
    """The bucket of time ``t``."""
    return min(max((t - lo) // width, 0), buckets - 1)
