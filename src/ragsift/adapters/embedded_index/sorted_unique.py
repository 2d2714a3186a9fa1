"""The distinct values of an integer array, the ways a search can afford them.

numpy 2's `np.unique` finds integers' distinct values through a hash table and then sorts
them. On this machine (research/distinct_values_probe.py, twice): 500 row numbers (a
50-document whitelist's rows) 41-59 us, against 6-10 us for a sort and a comparison of
neighbours; 50,000 rows 8.8-9.4 ms against 0.7-0.9; the document codes of a 900k-row kb 21-25
ms, against 6-10 ms sorted and 2 ms counted (docs/benchmarks.md, "Distinct rows and codes
without np.unique").
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

IntpArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]


def sorted_unique(values: NDArray[np.integer]) -> IntpArray:
    """`np.unique(values)` as row numbers: sorted, each once."""
    ordered = np.sort(values).astype(np.intp, copy=False)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    found: IntpArray = ordered[keep]
    return found


def present_codes(codes: NDArray[np.integer], size: int) -> BoolArray:
    """By code (0 .. at least `size` - 1): whether `codes` (non-negative) holds it."""
    present: BoolArray = np.bincount(codes, minlength=size) > 0
    return present
