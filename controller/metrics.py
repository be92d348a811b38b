"""Minimal metrics for the controller: a ``Histogram`` and a rate-and-time ``Timer``.

Stand-ins for the Yammer metrics Kafka's controller exports. Updates are O(1) and cost a
few attribute operations, because they run once per controller event; the work (percentiles,
means, rates) happens when a snapshot is taken. Time comes from an injected clock returning
milliseconds, never from the wall clock.
"""
from __future__ import annotations

import math
from typing import Callable

Clock = Callable[[], float]
"""Returns the current time in milliseconds (real or simulated)."""

# Histogram percentiles are computed over the most recent samples only, like Dropwizard's
# SlidingWindowReservoir (Kafka's Yammer histograms use a reservoir biased to the last
# ~5 minutes). A power of two, so that the ring index is a mask.
WINDOW_SIZE = 1024
_WINDOW_MASK = WINDOW_SIZE - 1

PERCENTILES = (("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p98", 0.98), ("p99", 0.99),
               ("p999", 0.999))


class Histogram:
    """Count, sum, min and max of all values; percentiles of the last ``WINDOW_SIZE`` ones.

    An update stores the value in a ring and updates four fields; sorting waits for a
    snapshot. Percentiles interpolate like Yammer's ``Snapshot.getValue``.
    """

    __slots__ = ("count", "sum", "_min", "_max", "_window")

    def __init__(self) -> None:
        self._window = [0.0] * WINDOW_SIZE
        self.clear()

    def clear(self) -> None:
        self.count = 0
        self.sum = 0.0
        self._min = math.inf
        self._max = -math.inf

    def update(self, value: float) -> None:
        count = self.count
        self._window[count & _WINDOW_MASK] = value
        self.count = count + 1
        self.sum += value
        if value < self._min:
            self._min = value
        if value > self._max:
            self._max = value

    @property
    def min(self) -> float:
        return self._min if self.count else 0.0

    @property
    def max(self) -> float:
        return self._max if self.count else 0.0

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else 0.0

    def _recent_sorted(self) -> list[float]:
        return sorted(self._window[:min(self.count, WINDOW_SIZE)])

    def percentile(self, q: float) -> float:
        """The q-quantile (0 <= q <= 1) of the recent values; 0.0 when empty."""
        return _quantile(self._recent_sorted(), q)

    def snapshot(self) -> dict[str, float]:
        snap: dict[str, float] = {
            "count": self.count, "sum": self.sum, "min": self.min, "max": self.max,
            "mean": self.mean,
        }
        recent = self._recent_sorted()
        for key, q in PERCENTILES:
            snap[key] = _quantile(recent, q)
        return snap


def _quantile(values: list[float], q: float) -> float:
    """Yammer's ``Snapshot.getValue``: linear interpolation at rank q * (n + 1)."""
    if not values:
        return 0.0
    pos = q * (len(values) + 1)
    index = int(pos)
    if index < 1:
        return values[0]
    if index >= len(values):
        return values[-1]
    lower = values[index - 1]
    return lower + (pos - index) * (values[index] - lower)


class Timer:
    """Count, total and max of durations in ms, and the rate of events per second.

    The rate is ``count`` divided by the time elapsed on ``clock`` since the timer was made.
    """

    __slots__ = ("count", "total_ms", "max_ms", "_clock", "_start_ms")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._start_ms = clock()
        self.count = 0
        self.total_ms = 0.0
        self.max_ms = 0.0

    def update(self, duration_ms: float) -> None:
        self.count += 1
        self.total_ms += duration_ms
        if duration_ms > self.max_ms:
            self.max_ms = duration_ms

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.count if self.count else 0.0

    @property
    def rate_per_sec(self) -> float:
        elapsed_ms = self._clock() - self._start_ms
        return self.count * 1000.0 / elapsed_ms if elapsed_ms > 0 else 0.0

    def snapshot(self) -> dict[str, float]:
        return {
            "count": self.count, "total_ms": self.total_ms, "mean_ms": self.mean_ms,
            "max_ms": self.max_ms, "rate_per_sec": self.rate_per_sec,
        }
