"""A chunk's locator from the locators of the blocks it holds.

A child that packs several sheet rows covers the bounding A1 range of their ranges; one that
packs several PDF paragraphs keeps every line box of them; records and pointers are those of
its first block. Fields a block leaves unset come from the section's locator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragsift.domain.models import Box, Locator

_CELL = re.compile(r"^([A-Z]{1,3})([0-9]{1,7})$")


def column_letters(index: int) -> str:
    """1 -> A, 26 -> Z, 27 -> AA (spreadsheet column names)."""
    if index < 1:
        raise ValueError("column index starts at 1")
    letters = ""
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def column_index(letters: str) -> int:
    """A -> 1, AA -> 27."""
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - ord("A") + 1
    return index


def cell_range(first_row: int, first_column: int, last_row: int, last_column: int) -> str:
    """A1 notation of a rectangle of cells, "B2:D9" (one cell: "B2")."""
    start = f"{column_letters(first_column)}{first_row}"
    end = f"{column_letters(last_column)}{last_row}"
    return start if start == end else f"{start}:{end}"


def _bounds(text: str) -> tuple[int, int, int, int] | None:
    cells = []
    for part in text.upper().split(":"):
        match = _CELL.match(part.strip())
        if match is None:
            return None
        cells.append((int(match.group(2)), column_index(match.group(1))))
    rows = [row for row, _ in cells]
    columns = [column for _, column in cells]
    return min(rows), min(columns), max(rows), max(columns)


def union_ranges(ranges: Sequence[str]) -> str | None:
    """The bounding A1 range of several ranges; None when there are none or one is not A1."""
    bounds = [_bounds(text) for text in ranges]
    if not bounds or any(bound is None for bound in bounds):
        return None
    known = [bound for bound in bounds if bound is not None]
    return cell_range(
        min(b[0] for b in known), min(b[1] for b in known),
        max(b[2] for b in known), max(b[3] for b in known),
    )


def merge_locators(base: Locator, parts: Sequence[Locator]) -> Locator:
    """The locator of a chunk made of blocks located by `parts`, within a section at `base`."""
    if not parts:
        return base
    ranges = [part.cell_range for part in parts if part.cell_range]
    boxes: list[Box] = []
    seen: set[Box] = set()
    for part in parts:
        for box in part.boxes:
            if box not in seen:
                seen.add(box)
                boxes.append(box)
    first = parts[0]
    merged = union_ranges(ranges) if ranges else None
    return Locator(
        page=first.page if first.page is not None else base.page,
        sheet=first.sheet if first.sheet is not None else base.sheet,
        cell_range=merged if merged is not None else base.cell_range,
        slide=first.slide if first.slide is not None else base.slide,
        boxes=tuple(boxes) if boxes else base.boxes,
        record=first.record if first.record is not None else base.record,
        pointer=first.pointer if first.pointer is not None else base.pointer,
    )
