"""The distinct-value helpers equal numpy's own answers, whatever the input's order, type and
repeats."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.adapters.embedded_index.sorted_unique import present_codes, sorted_unique


@pytest.mark.parametrize("size", [0, 1, 2, 7, 500, 5_000])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.intp])
def test_sorted_unique_is_numpys_unique_as_row_numbers(size: int, dtype: type) -> None:
    values = np.random.default_rng(size).integers(0, max(1, size // 3), size).astype(dtype)
    found = sorted_unique(values)
    assert found.dtype == np.intp
    np.testing.assert_array_equal(found, np.unique(values))


def test_sorted_unique_of_rows_already_distinct_keeps_them_all() -> None:
    np.testing.assert_array_equal(sorted_unique(np.array([9, 2, 5])), [2, 5, 9])


def test_sorted_unique_leaves_its_input_as_it_was() -> None:
    values = np.array([3, 1, 3, 2])
    sorted_unique(values)
    np.testing.assert_array_equal(values, [3, 1, 3, 2])


@pytest.mark.parametrize("size", [0, 1, 100, 10_000])
def test_present_codes_marks_exactly_the_codes_held(size: int) -> None:
    codes = np.random.default_rng(size).integers(0, 50, size).astype(np.int32)
    present = present_codes(codes, 60)
    assert present.shape == (60,)
    np.testing.assert_array_equal(np.flatnonzero(present), np.unique(codes))


def test_present_codes_grows_past_size_for_a_larger_code() -> None:
    present = present_codes(np.array([0, 7], dtype=np.int32), 3)
    np.testing.assert_array_equal(np.flatnonzero(present), [0, 7])
