"""Windows of long texts and length-bucketed batches of the ONNX e5 route (no model)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragsift.adapters.onnx_e5.batching import length_batches, windows


def test_a_text_longer_than_the_window_is_cut_into_consecutive_windows_without_overlap() -> None:
    rows = windows([list(range(7)), [42]], width=3, bos=0, eos=2)
    assert [(row.text, row.ids, row.weight) for row in rows] == [
        (0, [0, 0, 1, 2, 2], 3), (0, [0, 3, 4, 5, 2], 3), (0, [0, 6, 2], 1), (1, [0, 42, 2], 1),
    ]


def test_a_text_without_tokens_still_gets_one_window() -> None:
    rows = windows([[]], width=3, bos=0, eos=2)
    assert [(row.ids, row.weight) for row in rows] == [([0, 2], 1)]


def test_batches_are_sorted_by_length_and_pad_at_most_the_token_budget() -> None:
    lengths = [30, 5, 12, 5, 40, 6]
    batches = length_batches(lengths, max_tokens=48)
    assert [[lengths[i] for i in batch] for batch in batches] == [[5, 5, 6, 12], [30], [40]]


def test_a_row_longer_than_the_budget_gets_a_batch_of_its_own() -> None:
    assert length_batches([100, 3, 3], max_tokens=10) == [[1, 2], [0]]


@given(st.lists(st.integers(min_value=1, max_value=600), max_size=60),
       st.integers(min_value=1, max_value=5000))
def test_every_row_is_in_exactly_one_batch_within_budget_or_alone(
    lengths: list[int], budget: int
) -> None:
    batches = length_batches(lengths, budget)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= budget or len(batch) == 1
