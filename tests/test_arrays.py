"""events.arrays.factorize: the distinct values in order of first occurrence and each element's index among
them, the same on both of its paths (small arrays by sorting, large ones by Arrow's hash encoding)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from events.arrays import factorize


def reference(values: list[int]) -> tuple[list[int], list[int]]:
    seen: dict[int, int] = {}
    codes = [seen.setdefault(v, len(seen)) for v in values]
    return list(seen), codes


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-5, 5), max_size=700),
       st.sampled_from([np.int64, np.int32, np.uint8]))
def test_factorize_is_first_seen_order(values, dtype):
    info = np.iinfo(dtype)
    values = [min(max(v, int(info.min)), int(info.max)) for v in values]
    uniq, codes = factorize(np.array(values, dtype=dtype))
    expected_uniq, expected_codes = reference(values)
    assert uniq.tolist() == expected_uniq and codes.tolist() == expected_codes
    assert codes.dtype == np.int32


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-200, 200) | st.integers(-40000, 40000), max_size=50))
def test_narrow_bytes_round_trip_in_the_narrowest_width(values):
    from events.arrays import from_narrow_bytes, narrow_bytes
    data = narrow_bytes(np.array(values, dtype=np.int64))
    assert from_narrow_bytes(data, len(values), "v").tolist() == values
    if values:
        lo, hi = min(values), max(values)
        width = 1 if -128 <= lo and hi <= 127 else 2 if -2**15 <= lo and hi < 2**15 else 4 if -2**31 <= lo and hi < 2**31 else 8
        assert len(data) == width * len(values)


def test_from_narrow_bytes_refuses_what_it_cannot_read():
    import pytest
    from events.arrays import from_narrow_bytes
    for data, n in ((b"abc", 2), (b"abc", 1), (b"", 1), (b"x", 0), ("text", 1)):
        with pytest.raises(ValueError, match="col"):
            from_narrow_bytes(data, n, "col")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3), max_size=40))
def test_distinct_and_unique_are_numpys(values):
    from events.arrays import distinct, unique
    a = np.array(values, dtype=np.int64)
    assert distinct(a) == (len(set(values)) == len(values))
    assert unique(a).tolist() == np.unique(a).tolist() == sorted(set(values))
