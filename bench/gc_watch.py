"""GcWatch: how long Python's cyclic garbage collector ran (and how many full collections) while a block ran;
the benchmarks report it beside their timings."""
from __future__ import annotations

import gc
import time


class GcWatch:
    """Time spent in the cyclic garbage collector (and its full collections) while the block runs."""

    def __enter__(self):
        self.seconds, self.full, self._start = 0.0, 0, 0.0
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            self.full += info["generation"] == 2
        else:
            self.seconds += time.perf_counter() - self._start
