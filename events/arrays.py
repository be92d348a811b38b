"""Array helpers the columnar paths share.

``factorize`` gives the distinct values of an integer array in the order they first occur and each
element's index among them — what ``np.unique(..., return_index=True, return_inverse=True)`` followed by a
re-ordering gives, in one hash pass (Arrow's dictionary encoding) instead of a sort: at a million
elements it is several times faster, and its output depends only on the values and their order.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_SMALL = 256   # below this many elements numpy's sort is cheaper than building an Arrow array


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of the 1-D integer array ``values`` in order of first occurrence, the int32 index of
    each element's value among them)."""
    values = np.asarray(values)
    if len(values) < _SMALL:
        uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(uniq), dtype=np.int32)
        rank[order] = np.arange(len(uniq), dtype=np.int32)
        return uniq[order], rank[inverse.reshape(-1)]
    encoded = pa.array(values).dictionary_encode()
    return encoded.dictionary.to_numpy(zero_copy_only=False), encoded.indices.to_numpy(zero_copy_only=False)
