"""The journal: gives records their offsets and headers and hands them to a sink (a log writer, a list).

The engine never builds headers itself. Whoever processes an event tells the journal who is
writing (controller id and epoch), the simulated time, and which input is being handled;
every record emitted until the next change carries those values. Offsets are consecutive
across everything the journal emits, inputs and outputs alike.
"""
from __future__ import annotations

from collections.abc import Callable

from events.records import SCHEMA_VERSION

_new = tuple.__new__


class Journal:
    """Offset allocator and header stamper in front of a record sink.

    ``sink`` receives each record as it is emitted (``LogWriter.append``, ``list.append``, ...).
    With no sink the records are kept in ``self.records``.
    """

    __slots__ = ("_sink", "records", "next_offset", "controller_id", "controller_epoch", "now_ms",
                 "cause_offset", "_header")

    def __init__(self, sink: Callable[[tuple], object] | None = None, *, next_offset: int = 0):
        self.records: list | None = None
        if sink is None:
            self.records = []
            sink = self.records.append
        self._sink = sink
        self.next_offset = next_offset
        self.controller_id = -1
        self.controller_epoch = 0
        self.now_ms = 0
        self.cause_offset = -1
        self._header = (-1, 0, 0, -1)

    def _restamp(self) -> None:
        self._header = (self.controller_id, self.controller_epoch, self.now_ms, self.cause_offset)

    def set_writer(self, controller_id: int, controller_epoch: int) -> None:
        """Records emitted from now on are written by this controller at this epoch."""
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self._restamp()

    def set_time(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._restamp()

    def restore(self, next_offset: int, cause_offset: int, now_ms: int) -> None:
        """Continue a journal from a snapshot: the next offset, the current cause and time."""
        self.next_offset = next_offset
        self.cause_offset = cause_offset
        self.now_ms = now_ms
        self._restamp()

    def input(self, cls, *body) -> tuple:
        """Append an input record; it names itself as cause, and becomes the cause of what follows."""
        off = self.next_offset
        self.next_offset = off + 1
        self.cause_offset = off
        self._restamp()
        rec = _new(cls, (cls.KIND, SCHEMA_VERSION, off) + self._header + body)
        self._sink(rec)
        return rec

    def emit(self, cls, *body) -> tuple:
        """Append an output record caused by the current input."""
        off = self.next_offset
        self.next_offset = off + 1
        rec = _new(cls, (cls.KIND, SCHEMA_VERSION, off) + self._header + body)
        self._sink(rec)
        return rec

    def emit_rows(self, cls, rows) -> None:
        """Append one output record per body tuple in ``rows`` (the batched form of ``emit``)."""
        head = (cls.KIND, SCHEMA_VERSION)
        header = self._header
        sink = self._sink
        off = self.next_offset
        for body in rows:
            sink(_new(cls, head + (off,) + header + body))
            off += 1
        self.next_offset = off

    def reserve(self, n: int) -> tuple[int, tuple, Callable[[tuple], object]]:
        """Claim ``n`` consecutive offsets for records the caller builds itself in a tight loop.

        Returns (first offset, header, sink): the caller must build each record as
        ``(KIND, SCHEMA_VERSION, offset) + header + body`` and pass all ``n`` to ``sink`` in order.
        """
        off = self.next_offset
        self.next_offset = off + n
        return off, self._header, self._sink
