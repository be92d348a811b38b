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


_LE_INTS = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"), 8: np.dtype("<i8")}


def narrow_bytes(a: np.ndarray) -> bytes:
    """Integers as little-endian signed ints of the narrowest of 1, 2, 4 or 8 bytes that holds them all (the
    width follows from the values, so equal arrays give equal bytes; a reader knows it from the count)."""
    a = np.asarray(a)
    if not a.size:
        return b""
    lo, hi = int(a.min()), int(a.max())
    w = (1 if -128 <= lo and hi <= 127 else 2 if -32768 <= lo and hi <= 32767
         else 4 if -(1 << 31) <= lo and hi < 1 << 31 else 8)
    return a.astype(_LE_INTS[w]).tobytes()


def from_narrow_bytes(data, n: int, what: str) -> np.ndarray:
    """The ``n`` ints ``narrow_bytes`` wrote (a read-only view of ``data``); ValueError naming ``what`` if
    ``data`` cannot be that."""
    if type(data) is not bytes:
        raise ValueError(f"{what} is not a bin but {type(data).__name__}")
    if not n:
        if data:
            raise ValueError(f"{what}: {len(data)} bytes for no values")
        return np.zeros(0, dtype=np.int32)
    w, rest = divmod(len(data), n)
    if rest or w not in _LE_INTS:
        raise ValueError(f"{what}: {len(data)} bytes are not {n} ints of 1, 2, 4 or 8 bytes")
    return np.frombuffer(data, dtype=_LE_INTS[w])


# numpy 2.4's np.unique without return_* flags hashes, and its hash is slow where most values are distinct
# (0.8 s for a million int64s, against 0.03 s to sort them): these two sort instead.
def distinct(a: np.ndarray) -> bool:
    """Are the values of the 1-D array ``a`` all different?"""
    if len(a) < 2 or bool(np.all(a[1:] > a[:-1])):
        return True
    s = np.sort(a)
    return bool(np.all(s[1:] != s[:-1]))


def unique(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, ascending (``np.unique(a)``)."""
    s = np.sort(np.asarray(a).ravel())
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s
