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
        """Kafka's OffsetsForLeaderEpoch answer (``LeaderEpochFileCache.endOffsetFor``): the latest epoch
        ends at the log end; an older one answers (the largest cached epoch <= ``epoch``, where the next
        cached epoch starts) — (``epoch``, that start) when no cached epoch is that old; (-1, -1) for
        an undefined epoch or one newer than every cached epoch."""
        epochs = self.epochs
        if epoch < 0 or not epochs:
            return -1, -1
        if epochs[-1][0] == epoch:
            return epoch, self.leo
        i = bisect_right(epochs, (epoch, float("inf")))
        if i == len(epochs):
            return -1, -1
        return (epochs[i - 1][0] if i > 0 else epoch), epochs[i][1]

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
        """Remove the records at and after ``offset``; returns how many were removed. At or past the log
        end no record goes, but an epoch entry starting at the log end does (``UnifiedLog.truncateTo``
        truncates the cache from the log end: a replica that led an epoch without writing in it keeps
        no entry for it once it follows — else it would diverge from its leader on every fetch)."""
        offset = min(offset, self.leo)
        while self.epochs and self.epochs[-1][1] >= offset:
            self.epochs.pop()
        removed = self.leo - offset
        self.leo = offset
        self.hw = min(self.hw, offset)
        return removed

    def epochs_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """The epoch entries covering ``[start, end)`` (what a fetch response carries with its records)."""
        epochs = self.epochs
        if epochs and epochs[-1][1] <= start:
            return [(epochs[-1][0], start)]     # all in the latest epoch: what nearly every fetch reads
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
            # LeaderEpochFileCache.assign: entries not below the new one go (an epoch without records,
            # even a newer one this replica led and never wrote in).
            while self.epochs and (self.epochs[-1][0] > epoch or self.epochs[-1][1] >= first):
                self.epochs.pop()
            if not self.epochs or self.epochs[-1][0] < epoch:
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
