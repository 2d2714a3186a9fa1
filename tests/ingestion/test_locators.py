import pytest

from ragsift.domain.models import Locator
from ragsift.ingestion.locators import (
    cell_range,
    column_index,
    column_letters,
    merge_locators,
    union_ranges,
)


@pytest.mark.parametrize(("index", "letters"), [(1, "A"), (26, "Z"), (27, "AA"), (702, "ZZ"),
                                                (703, "AAA"), (16384, "XFD")])
def test_column_letters_and_index_are_inverse(index: int, letters: str) -> None:
    assert column_letters(index) == letters
    assert column_index(letters) == index


def test_cell_range_of_one_cell_is_the_cell() -> None:
    assert cell_range(3, 2, 3, 2) == "B3"
    assert cell_range(2, 1, 9, 4) == "A2:D9"


def test_union_of_row_ranges_is_their_bounding_range() -> None:
    assert union_ranges(["A2:D2", "A3:D3", "B7:E7"]) == "A2:E7"
    assert union_ranges(["C5"]) == "C5"


def test_union_is_none_for_a_range_that_is_not_a1_notation() -> None:
    assert union_ranges(["A2:D2", "row 3"]) is None
    assert union_ranges([]) is None


def test_merged_locator_keeps_the_section_fields_blocks_leave_unset() -> None:
    base = Locator(sheet="Q1", cell_range="A1:D20")
    merged = merge_locators(base, [Locator(cell_range="A2:D2"), Locator(cell_range="A4:D4")])
    assert merged == Locator(sheet="Q1", cell_range="A2:D4")


def test_merged_locator_concatenates_boxes_once_and_takes_the_first_record() -> None:
    first = Locator(page=2, boxes=((1.0, 2.0, 3.0, 4.0),), record=5, pointer="/items/5")
    second = Locator(page=2, boxes=((1.0, 2.0, 3.0, 4.0), (1.0, 6.0, 3.0, 8.0)), record=6)
    merged = merge_locators(Locator(page=2), [first, second])
    assert merged.boxes == ((1.0, 2.0, 3.0, 4.0), (1.0, 6.0, 3.0, 8.0))
    assert (merged.page, merged.record, merged.pointer) == (2, 5, "/items/5")


def test_no_parts_leave_the_section_locator() -> None:
    base = Locator(slide=3)
    assert merge_locators(base, []) is base
