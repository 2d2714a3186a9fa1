"""numpy 2's np.unique against a sort with a neighbour comparison and a count of codes.

The dense store asks for the distinct values of integer arrays on its search paths: a
whitelist's rows (hundreds), a graph search's candidates with the tail (tens), and the
document codes of a kb's rows (up to all of them). Timed with timeit, best of 5, per call.

Usage: python research/distinct_values_probe.py
"""

from __future__ import annotations

import timeit

import numpy as np


def by_sort(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values)
    keep = np.empty(ordered.size, dtype=np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def best_us(call: object, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}\n\n| values | np.unique us | sort + neighbours us | "
          "count of codes us |\n|---|---:|---:|---:|")
    cases = [(f"{n:,} row numbers", rng.integers(0, 200_000, n).astype(np.intp))
             for n in (60, 500, 5_000, 50_000)]
    cases += [(f"{n:,} document codes, 10 rows each", np.arange(n, dtype=np.int32) // 10 + 1)
              for n in (90_000, 900_000)]
    for name, values in cases:
        number = max(3, 200_000 // values.size)
        assert np.array_equal(by_sort(values), np.unique(values))
        unique = best_us(lambda v=values: np.unique(v), number)
        sort = best_us(lambda v=values: by_sort(v), number)
        count = best_us(lambda v=values: np.bincount(v) > 0, number)
        print(f"| {name} | {unique:,.1f} | {sort:,.1f} | {count:,.1f} |")


if __name__ == "__main__":
    main()
