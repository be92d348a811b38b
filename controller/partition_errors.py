"""A response's per-partition errors as columns: ``{(topic, partition): error name}`` without a Python
object per partition until someone iterates it.

A broker that applies a columnar request (an ``events.columns.ColumnBatch``) answers with a
:class:`PartitionErrors`: the request's ``topic`` and ``partition`` columns and one error code per
row, codes indexing a short tuple of error names. It is a read-only ``Mapping``; the tests its
consumers make are cheap — ``len``, and ``name in errors.values()`` (the controller's "any
KAFKA_STORAGE_ERROR?") is one array compare — and a dict is built only when it is iterated or
indexed. It equals a dict with the same items (``Mapping.__eq__``).
"""
from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView

import numpy as np

__all__ = ["PartitionErrors"]


class PartitionErrors(Mapping):
    """``(topic, partition) -> error name`` of rows ``i``: topic ``topic.dictionary[topic.codes[i]]``,
    partition ``partition[i]``, error ``names[codes[i]]``. The rows' (topic, partition) pairs must be
    distinct (a request names each partition once)."""

    __slots__ = ("_topic", "_partition", "_codes", "_names", "_dict")

    def __init__(self, topic, partition: np.ndarray, codes: np.ndarray, names: tuple[str, ...]):
        """``topic``: an ``events.columns.DictColumn``; ``codes``: ints indexing ``names``, one per row."""
        if not (len(topic.codes) == len(partition) == len(codes)):
            raise ValueError(f"PartitionErrors columns differ in length: topic {len(topic.codes)}, "
                             f"partition {len(partition)}, codes {len(codes)}")
        self._topic = topic
        self._partition = partition
        self._codes = codes
        self._names = tuple(names)
        self._dict: dict | None = None

    @classmethod
    def uniform(cls, topic, partition: np.ndarray, name: str) -> PartitionErrors:
        """Every row has error ``name``."""
        return cls(topic, partition, np.zeros(len(partition), dtype=np.uint8), (name,))

    def _as_dict(self) -> dict:
        d = self._dict
        if d is None:
            names = self._names
            tps = zip(self._topic.values(), self._partition.tolist())
            d = self._dict = dict(zip(tps, map(names.__getitem__, self._codes.tolist())))
        return d

    def __getitem__(self, tp):
        return self._as_dict()[tp]

    def __contains__(self, tp) -> bool:
        return tp in self._as_dict()

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._codes)

    def values(self) -> _Values:
        return _Values(self)

    def items(self) -> ItemsView:
        return self._as_dict().items()

    def has_error(self, name: str) -> bool:
        """Whether some partition has error ``name`` (one array compare)."""
        try:
            code = self._names.index(name)
        except ValueError:
            return False
        return bool(np.any(self._codes == code))

    def __repr__(self) -> str:
        return f"PartitionErrors({self._as_dict()!r})"


class _Values(ValuesView):
    """The error names; ``in`` compares codes, without building the dict."""

    __slots__ = ()

    def __contains__(self, name) -> bool:
        return self._mapping.has_error(name)

    def __iter__(self):
        names = self._mapping._names
        return iter(list(map(names.__getitem__, self._mapping._codes.tolist())))
