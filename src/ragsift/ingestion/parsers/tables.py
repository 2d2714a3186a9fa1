"""Sheet rows to a Markdown table section, shared by the XLSX and CSV parsers.

A sheet becomes one section. Its first non-empty row is the table header: rendered as a Markdown
row plus the `| --- |` rule, it is the section's `header`, which the chunker repeats at the top
of every chunk so each one stands alone. Every later non-empty row is a Block of its own, a
Markdown row located by its A1 range (the used columns of the sheet on that row). Rows and
columns without any value are dropped; a sheet of a single row is that row as a block without
a header.

Limits: a sheet is cut at max_sheet_rows non-empty rows and max_sheet_columns columns with a
warning; non-empty cells of all sheets together count against max_sheet_cells (the document is
rejected once over), rows against max_document_blocks, rendered characters against
max_document_chars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragsift.domain.models import Locator
from ragsift.ingestion.locators import cell_range
from ragsift.ingestion.parsers.base import Block, Section, normalize_inline
from ragsift.ingestion.parsers.limits import ParseLimits, TextBudget, reject

_RULE_CELL = "---"
_BLOCKS = "sheet rows"


def cell_text(text: str) -> str:
    """A value as one Markdown table cell: whitespace and line breaks collapsed, `|` escaped."""
    # Most cells hold nothing normalize_inline would change (it only touches unprintable
    # characters, whitespace runs and line breaks): skip its regexes for them.
    if not (text.isprintable() and "  " not in text and text.strip(" ") == text):
        text = normalize_inline(text)
    return text.replace("|", "\\|")


def markdown_row(cells: Sequence[str]) -> str:
    """`| a | b |` (cells already made safe with cell_text)."""
    return "| " + " | ".join(cells) + " |"


class CellCount:
    """Non-empty cells read from all sheets of one document, against max_sheet_cells."""

    def __init__(self, limits: ParseLimits, kind: str) -> None:
        self._limit = limits.max_sheet_cells
        self._kind = kind
        self.cells = 0

    def add(self, count: int) -> None:
        self.cells += count
        if self.cells > self._limit:
            raise reject(
                f"{self._kind} has more than {self._limit:,} non-empty cells "
                "(RAGSIFT_MAX_SHEET_CELLS)"
            )


@dataclass(frozen=True, slots=True)
class _Row:
    number: int
    values: dict[int, str]  # column (from 1) -> cell text, non-empty only
    chars: int  # characters of the values, counted when the row was added


class SheetTable:
    """The non-empty rows of one sheet, read within the limits, then rendered as a Section.

    `label` names the sheet in warnings ("sheet 'Prices'", "CSV"); `sheet` goes into locators.
    """

    def __init__(
        self, label: str, sheet: str | None, limits: ParseLimits, cells: CellCount,
        budget: TextBudget,
    ) -> None:
        self._label = label
        self._sheet = sheet
        self._limits = limits
        self._cells = cells
        self._budget = budget
        self._rows: list[_Row] = []
        self._columns_cut = False
        self.warnings: list[str] = []

    def columns_cut(self) -> None:
        """Note that a row had a value past max_sheet_columns (warned once per sheet)."""
        if not self._columns_cut:
            self._columns_cut = True
            self.warnings.append(
                f"{self._label} cut at {self._limits.max_sheet_columns:,} columns "
                "(RAGSIFT_MAX_SHEET_COLUMNS)"
            )

    def add_row(self, number: int, values: Mapping[int, str]) -> bool:
        """Add row `number` (from 1) of cell texts by column (from 1, made with cell_text).

        Returns False once the sheet is cut at its row limit: the caller stops reading it.
        """
        kept = {column: text for column, text in values.items() if text}
        if any(column > self._limits.max_sheet_columns for column in kept):
            self.columns_cut()
            kept = {c: t for c, t in kept.items() if c <= self._limits.max_sheet_columns}
        if not kept:
            return True
        if len(self._rows) >= self._limits.max_sheet_rows:
            self.warnings.append(
                f"{self._label} cut at {self._limits.max_sheet_rows:,} rows "
                "(RAGSIFT_MAX_SHEET_ROWS)"
            )
            return False
        self._cells.add(len(kept))
        self._budget.add_block(_BLOCKS)
        chars = sum(len(text) for text in kept.values())
        self._budget.add_chars(chars)
        self._rows.append(_Row(number, kept, chars))
        return True

    def section(self, heading_path: tuple[str, ...]) -> Section | None:
        """The sheet as a section of row blocks under its header row; None when it is empty."""
        if not self._rows:
            return None
        columns = sorted({column for row in self._rows for column in row.values})
        first, last = columns[0], columns[-1]
        lines = [self._render(row, columns) for row in self._rows]
        blocks = [
            Block(line, Locator(sheet=self._sheet, cell_range=cell_range(
                row.number, first, row.number, last)))
            for row, line in zip(self._rows, lines, strict=True)
        ]
        header = ""
        if len(blocks) > 1:
            rule = markdown_row([_RULE_CELL] * len(columns))
            header = f"{blocks[0].text}\n{rule}"
            self._budget.add_chars(len(rule) + 1)
            blocks = blocks[1:]
        top, bottom = self._rows[0].number, self._rows[-1].number
        locator = Locator(sheet=self._sheet, cell_range=cell_range(top, first, bottom, last))
        return Section.of_blocks(heading_path, locator, blocks, header=header, separator="\n")

    def _render(self, row: _Row, columns: Sequence[int]) -> str:
        line = markdown_row([row.values.get(column, "") for column in columns])
        # The values were counted when the row was added; the rule and empty cells count now.
        self._budget.add_chars(len(line) - row.chars)
        return line
