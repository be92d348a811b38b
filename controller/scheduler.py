"""The controller's scheduler (Kafka's KafkaScheduler as the controller uses it), on simulated time.

Kafka's controller schedules one-shot tasks by name, e.g. "auto-leader-rebalance-task", which
puts an event on the controller's queue when it fires. Here time is the injected clock: the
scheduler only remembers when each task is due, and whoever drives time (``controller.embedding.cluster``
or a simulation) asks for ``next_deadline`` and calls ``run_due`` when it gets there. Tasks due at
the same time run in the order they were scheduled, so runs are deterministic.
"""
from __future__ import annotations

from collections.abc import Callable


class ControllerScheduler:
    """One-shot tasks by name; scheduling a name again replaces its pending run."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._tasks: dict[str, tuple[int, int, Callable[[], object]]] = {}  # name -> (due, seq, fn)
        self._seq = 0
        self.running = False

    def startup(self) -> None:
        self.running = True

    def shutdown(self) -> None:
        """Cancel everything (KafkaScheduler.shutdown at controller resignation)."""
        self.running = False
        self._tasks.clear()

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int) -> None:
        if not self.running:
            raise RuntimeError(f"scheduler is not running; cannot schedule {name}")
        self._seq += 1
        self._tasks[name] = (int(self._clock()) + int(delay_ms), self._seq, fn)

    def next_deadline(self) -> int | None:
        return min((due for due, _, _ in self._tasks.values()), default=None)

    def run_due(self, now: int) -> int:
        """Run every task due at or before ``now``; returns how many ran."""
        ran = 0
        while True:
            due = sorted((due, seq, name) for name, (due, seq, _) in self._tasks.items() if due <= now)
            if not due:
                return ran
            _, _, name = due[0]
            fn = self._tasks.pop(name)[2]
            fn()
            ran += 1

    def pending(self) -> list[tuple[str, int]]:
        """(name, due time) of every pending task, in due order (for snapshots and tests)."""
        return [(name, due) for name, (due, _, _) in sorted(self._tasks.items(), key=lambda kv: kv[1][:2])]
