"""The simulation's clock and event heap: discrete events ordered by (time, sequence number).

Nothing here reads the wall clock or a global random source. Time is an integer number of
milliseconds that only moves when the loop takes the next event off the heap; events due at the
same time run in the order they were scheduled (the sequence number breaks ties), and the one
``random.Random(seed)`` the loop owns is the only randomness a simulation may draw from. So a
scenario run twice with the same seed makes the same calls in the same order.

A scheduled event can be cancelled through the handle ``at``/``after`` return; cancelled events
stay in the heap and are skipped when they come up (cheaper than removing them).
"""
from __future__ import annotations

import heapq
import random
from collections.abc import Callable


class Timer:
    """The handle of one scheduled event."""

    __slots__ = ("time", "cancelled", "name")

    def __init__(self, time: int, name: str):
        self.time = time
        self.cancelled = False
        self.name = name

    def cancel(self) -> None:
        self.cancelled = True

    def __repr__(self) -> str:
        return f"Timer({self.name!r} at {self.time}{', cancelled' if self.cancelled else ''})"


_LIVE = Timer(0, "a message")    # the handle every posted event shares: a posted event is never cancelled


class EventLoop:
    """A discrete-event loop: ``now`` in ms, a heap of callbacks, one seeded random source."""

    def __init__(self, seed: int = 0, start_ms: int = 0):
        self.now = int(start_ms)
        self.rng = random.Random(seed)
        self._heap: list[tuple[int, int, Timer, Callable[[], object]]] = []
        self._seq = 0
        self.events_run = 0

    def clock(self) -> int:
        """The current time in ms (pass this where the engine takes a clock)."""
        return self.now

    def at(self, time_ms: int, fn: Callable[[], object], name: str = "") -> Timer:
        """Run ``fn`` at ``time_ms`` (not before now)."""
        time_ms = int(time_ms)
        if time_ms < self.now:
            raise ValueError(f"cannot schedule {name or fn!r} at {time_ms} ms: it is already {self.now} ms")
        self._seq += 1
        timer = Timer(time_ms, name)
        heapq.heappush(self._heap, (time_ms, self._seq, timer, fn))
        return timer

    def post(self, time_ms: int, fn: Callable[[], object]) -> None:
        """Run ``fn`` at ``time_ms`` (not before now), with no handle to cancel it: what a message in flight
        is (the network's deliveries, thousands a simulated second, make no handle each)."""
        if time_ms < self.now:
            raise ValueError(f"cannot schedule {fn!r} at {time_ms} ms: it is already {self.now} ms")
        self._seq += 1
        heapq.heappush(self._heap, (time_ms, self._seq, _LIVE, fn))

    def after(self, delay_ms: int, fn: Callable[[], object], name: str = "") -> Timer:
        if delay_ms < 0:
            raise ValueError(f"negative delay {delay_ms} for {name or fn!r}")
        return self.at(self.now + int(delay_ms), fn, name)

    def next_time(self) -> int | None:
        """When the next live event is due (None when nothing is scheduled)."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def step(self) -> bool:
        """Run the next event; False when there is none."""
        heap = self._heap
        while heap:
            time_ms, _, timer, fn = heapq.heappop(heap)
            if timer.cancelled:
                continue
            self.now = time_ms
            self.events_run += 1
            fn()
            return True
        return False

    def run_until(self, time_ms: int) -> None:
        """Run every event due at or before ``time_ms``, then set the clock to ``time_ms``."""
        while True:
            nxt = self.next_time()
            if nxt is None or nxt > time_ms:
                break
            self.step()
        self.now = max(self.now, int(time_ms))

    def pending(self) -> int:
        return sum(1 for _, _, timer, _ in self._heap if not timer.cancelled)
