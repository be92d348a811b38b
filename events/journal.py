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

    ``column_sink`` (optional; also a settable attribute) receives the
    :class:`events.columns.ColumnBatch` objects :meth:`emit_columns` builds, e.g.
    ``LogWriter.append_columns``. The contract: it must deliver into the same stream as
    ``sink``, in call order (a record emitted after a columnar batch follows that batch's
    records), and it must not need the records one by one. Without a column sink, every
    columnar batch is expanded into its records and each is handed to ``sink`` in offset
    order, so a sink that knows nothing of columns (a list, the cluster view fold, a replay
    comparison) receives exactly the records it would have received from :meth:`emit_rows`.
    """

    __slots__ = ("_sink", "records", "next_offset", "controller_id", "controller_epoch", "now_ms",
                 "cause_offset", "_header", "column_sink")

    def __init__(self, sink: Callable[[tuple], object] | None = None, *, next_offset: int = 0,
                 column_sink: Callable[[object], object] | None = None):
        self.records: list | None = None
        if sink is None:
            self.records = []
            sink = self.records.append
        self._sink = sink
        self.column_sink = column_sink
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

    def emit_columns(self, cls, n: int | None = None, **columns):
        """Append ``n`` output records of kind ``cls`` caused by the current input, given as one
        column per body field (see :meth:`events.columns.ColumnBatch.from_columns`: numpy
        arrays, lists, a DictColumn for strings, a ListColumn or a list of tuples for int
        tuples; ``n`` only for kinds without body fields).

        Reserves ``n`` consecutive offsets and stamps the current header on all of them. The
        :class:`events.columns.ColumnBatch` goes to :attr:`column_sink` if one is set;
        otherwise its records go to the record sink one by one, in offset order (see the class
        docstring). Returns the batch. Nothing is reserved or emitted if the columns are invalid
        (ColumnBatchError) or empty.
        """
        from events.columns import ColumnBatch
        return self._emit_batch(ColumnBatch.from_columns(cls, self.next_offset, self._header, n, **columns))

    def emit_stored(self, cls, n: int, columns: tuple):
        """``emit_columns`` for columns the engine built in their stored form (see
        :meth:`events.columns.ColumnBatch.from_stored`: not checked again), in field order."""
        from events.columns import ColumnBatch
        return self._emit_batch(ColumnBatch.from_stored(cls, self.next_offset, self._header, n, columns))

    def _emit_batch(self, batch):
        if not batch.n:
            return batch
        self.next_offset += batch.n
        if self.column_sink is not None:
            self.column_sink(batch)
        elif self.records is not None and self._sink == self.records.append:
            self.records.extend(batch.records())
        else:
            sink = self._sink
            for record in batch.records():
                sink(record)
        return batch

    def reserve(self, n: int) -> tuple[int, tuple, Callable[[tuple], object]]:
        """Claim ``n`` consecutive offsets for records the caller builds itself in a tight loop.

        Returns (first offset, header, sink): the caller must build each record as
        ``(KIND, SCHEMA_VERSION, offset) + header + body`` and pass all ``n`` to ``sink`` in order.
        """
        off = self.next_offset
        self.next_offset = off + n
        return off, self._header, self._sink
