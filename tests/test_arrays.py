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
