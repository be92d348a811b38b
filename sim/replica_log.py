"""One replica's log as the simulator keeps it: offsets, the high watermark and the leader-epoch cache.

Message payloads are not kept. A record is identified by its offset and the leader epoch it
was written in — only one leader writes in a given epoch, so two replicas hold the same record
at an offset exactly when they hold it with the same epoch. The log is therefore its log end
offset (LEO) and its leader-epoch cache: ``(epoch, start offset)`` entries, ascending, as in
Kafka's ``leader-epoch-checkpoint`` file. Everything Kafka decides from logs — where a follower
diverges from its leader (KIP-101/KIP-279, and the diverging epoch of Fetch v12+), what a
truncation removes, which acknowledged records survived — follows from those.
"""
from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter

_START = itemgetter(1)


class ReplicaLog:
    """A replica's log: ``leo``, ``hw``, ``log_start`` and the leader-epoch cache ``epochs``."""

    __slots__ = ("leo", "hw", "epochs", "log_start")

    def __init__(self) -> None:
        self.leo = 0
        self.hw = 0
        self.log_start = 0
        self.epochs: list[tuple[int, int]] = []     # (leader epoch, start offset), both ascending

    def __repr__(self) -> str:
        return f"ReplicaLog(leo={self.leo}, hw={self.hw}, epochs={self.epochs})"

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def assign_epoch_start(self, epoch: int) -> None:
        """A new leader records where its epoch starts (``maybeAssignEpochStartOffset``)."""
        if not self.epochs or self.epochs[-1][0] < epoch:
            if self.epochs and self.epochs[-1][1] == self.leo:
                self.epochs[-1] = (epoch, self.leo)     # an epoch with no records is superseded
            else:
                self.epochs.append((epoch, self.leo))

    def append(self, count: int, epoch: int) -> int:
        """The leader appends ``count`` records in ``epoch``; returns the first offset."""
        first = self.leo
        self.assign_epoch_start(epoch)
        self.leo = first + count
        return first

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer: (the largest epoch <= ``epoch`` in the cache, the offset
        its entries end at), or (-1, -1) when the cache has no epoch that old."""
        epochs = self.epochs
        i = bisect_right(epochs, (epoch, float("inf")))
        if i == 0:
            return -1, -1
        found = epochs[i - 1][0]
        end = epochs[i][1] if i < len(epochs) else self.leo
        return found, end

    def epoch_at(self, offset: int) -> int:
        """The epoch of the record at ``offset`` (-1 outside the log)."""
        if offset < self.log_start or offset >= self.leo:
            return -1
        i = bisect_right(self.epochs, offset, key=_START) - 1
        return self.epochs[i][0] if i >= 0 else -1

    def divergence_with(self, leader: ReplicaLog) -> int:
        """The first offset at which this log and ``leader``'s disagree (or the end of the shorter one)."""
        end = min(self.leo, leader.leo)
        mine, theirs = self.epochs, leader.epochs
        i = j = 0
        offset = max(self.log_start, leader.log_start)
        while offset < end:
            while i + 1 < len(mine) and mine[i + 1][1] <= offset:
                i += 1
            while j + 1 < len(theirs) and theirs[j + 1][1] <= offset:
                j += 1
            if i >= len(mine) or j >= len(theirs) or mine[i][0] != theirs[j][0]:
                return offset
            nxt_mine = mine[i + 1][1] if i + 1 < len(mine) else end
            nxt_theirs = theirs[j + 1][1] if j + 1 < len(theirs) else end
            offset = min(nxt_mine, nxt_theirs, end)
        return end

    def truncate_to(self, offset: int) -> int:
        """Remove the records at and after ``offset``; returns how many were removed."""
        # Epochs that start at or after the offset have no record left (one may have none already:
        # a replica that led an epoch without writing in it).
        while self.epochs and self.epochs[-1][1] >= offset:
            self.epochs.pop()
        if offset >= self.leo:
            return 0
        removed = self.leo - offset
        self.leo = offset
        self.hw = min(self.hw, offset)
        return removed

    def epochs_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """The epoch entries covering ``[start, end)`` (what a fetch response carries with its records)."""
        epochs = self.epochs
        i = max(0, bisect_right(epochs, start, key=_START) - 1)
        out = []
        for epoch, first in epochs[i:]:
            if first >= end:
                break
            out.append((epoch, max(first, start)))
        return out

    def copy_from(self, entries: list[tuple[int, int]], upto: int) -> int:
        """A follower appends the leader's records up to ``upto``, ``entries`` being the leader's epoch
        entries for them (``epochs_between``); returns how many."""
        start = self.leo
        if upto <= start:
            return 0
        for epoch, first in entries:
            if first >= upto:
                break
            first = max(first, start)
            if not self.epochs or self.epochs[-1][0] < epoch:
                if self.epochs and self.epochs[-1][1] >= first:
                    self.epochs[-1] = (epoch, first)     # an epoch with no records is superseded
                else:
                    self.epochs.append((epoch, first))
        self.leo = upto
        return upto - start

    def holds(self, epoch: int, start: int, end: int) -> int:
        """How many of the records ``[start, end)`` written in ``epoch`` this log still has."""
        end = min(end, self.leo)
        start = max(start, self.log_start)
        if start >= end:
            return 0
        epochs = self.epochs
        total = 0
        for k, (e, first) in enumerate(epochs):
            if e != epoch:
                continue
            last = epochs[k + 1][1] if k + 1 < len(epochs) else self.leo
            lo, hi = max(first, start), min(last, end)
            if hi > lo:
                total += hi - lo
        return total
