"""XLSX via openpyxl in read-only streaming mode: each worksheet is a Markdown table section.

Every worksheet, hidden ones included, is a section under the sheet's title (chartsheets hold no
cells and are left out); tables.py renders its rows: the first non-empty row is the header
repeated in every chunk, each later row a block located by its A1 range. Values are the cached
results of formulas (a formula never calculated gives an empty cell), dates and times in ISO
8601 (2024-01-31, 2024-01-31 14:30:00), integral numbers without ".0", booleans TRUE/FALSE.
The top-left value of a merged range is repeated in every cell the range covers, so each row
stands alone; a row with no value of its own is still skipped. Read-only openpyxl does not give
merged ranges before the rows, so they are read from the sheet's `<mergeCells>` with lxml.

The package is checked against the ParseLimits first (ooxml.check_package: ZIP bombs, a DTD in
any part, nesting, elements and characters of all parts). RAGSIFT_MAX_XML_ELEMENTS therefore
bounds the sheets' XML too: a sheet over it is rejected before the row limit could cut it.
Rows are then streamed, never held as a sheet: reading stops at a sheet's row limit. (A sheet
without the `<dimension>` element Excel and openpyxl write is read once more by load_workbook,
which sizes it.)
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import warnings
import zipfile
from collections.abc import Generator, Iterator
from typing import Any

from lxml import etree

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.base import ParsedDocument, Section, normalize_inline
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject
from ragsift.ingestion.parsers.ooxml import OfficeKind, check_office_file
from ragsift.ingestion.parsers.tables import CellCount, SheetTable, cell_text

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

_KIND = "XLSX"
_OFFICE_KIND = OfficeKind("XLSX", "an XLSX workbook", "an Excel workbook", ".xls")
_READ_SIZE = 1024 * 1024
_MERGE_WORD = b"mergeCell"
# A merged range clipped to the columns read: first column, first row, last column, last row.
_Range = tuple[int, int, int, int]


def parse_xlsx(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse an Excel workbook into one table section per non-empty worksheet."""
    _check(data, limits)
    budget = TextBudget(limits)
    cells = CellCount(limits, _KIND)
    sections: list[Section] = []
    notes: list[str] = []
    # openpyxl warns about parts it drops (extensions, data validation, a missing default
    # style); none of them holds cell values.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workbook = _open(data)
        try:
            for sheet in workbook.worksheets:
                name = str(sheet.title)
                title = normalize_inline(name)
                budget.add_chars(len(title))
                table = SheetTable(f"sheet {name!r}", name, limits, cells, budget)
                _read_sheet(workbook, sheet, table, limits)
                section = table.section((title,) if title else ())
                notes.extend(table.warnings)
                if section is not None:
                    sections.append(section)
        finally:
            workbook.close()
    for note in notes:
        logger.info("XLSX: %s", note)
    logger.debug("XLSX: %d sections, %d cells", len(sections), cells.cells)
    return ParsedDocument(media_type=MEDIA_TYPE, sections=tuple(sections), warnings=tuple(notes))


def _check(data: bytes, limits: ParseLimits) -> None:
    check_office_file(data, limits, _OFFICE_KIND, streamed_prefix="xl/worksheets/")


def _open(data: bytes) -> Any:
    """The read-only openpyxl workbook, once the package has passed the limits."""
    try:
        import openpyxl  # type: ignore[import-untyped]
    except ImportError as exc:  # openpyxl is an optional dependency
        raise DocumentRejected("XLSX support needs openpyxl (pip install openpyxl)") from exc
    try:
        return openpyxl.load_workbook(
            io.BytesIO(data), read_only=True, data_only=True, keep_links=False
        )
    except Exception as exc:  # openpyxl, zipfile and the XML parsers each raise their own types
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DocumentRejected(f"XLSX is corrupt or not an Excel workbook ({reason})") from exc


def _read_sheet(workbook: Any, sheet: Any, table: SheetTable, limits: ParseLimits) -> None:
    """Stream one worksheet's rows into `table` until it ends or is cut at the row limit."""
    part: str = sheet._worksheet_path
    rows = _sheet_rows(workbook, sheet)
    try:
        merges = _MergeFill(_merged_ranges(workbook._archive, part, limits))
        _read_rows(rows, merges, table, limits.max_sheet_columns)
    except DocumentRejected:
        raise
    except Exception as exc:  # a cell openpyxl cannot convert, XML it cannot read
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DocumentRejected(f"XLSX sheet {sheet.title!r} cannot be read ({reason})") from exc
    finally:
        rows.close()  # closes the part's stream when reading stopped at the row limit


def _read_rows(
    rows: Iterator[tuple[int, list[dict[str, Any]]]], merges: _MergeFill, table: SheetTable,
    max_columns: int,
) -> None:
    for number, row in rows:
        values: dict[int, str] = {}
        for cell in row:
            value = cell["value"]
            if value is None:
                continue
            if cell["column"] > max_columns:
                table.columns_cut()
                continue
            text = cell_text(_value_text(value))
            if text:
                values[cell["column"]] = text
        merges.fill(number, values)
        if values and not table.add_row(number, values):
            return


def _sheet_rows(workbook: Any, sheet: Any) -> Generator[tuple[int, list[dict[str, Any]]]]:
    """(row number, its cells) as the sheet's XML holds them: only the cells present.

    ReadOnlyWorksheet.iter_rows pads every row to the widest column (16,384 for one cell in
    column XFD), so its own parser is used the way iter_rows uses it, without the padding.
    """
    from openpyxl.worksheet._reader import WorkSheetParser  # type: ignore[import-untyped]

    with workbook._archive.open(sheet._worksheet_path) as source:
        parser = WorkSheetParser(
            source, sheet._shared_strings, data_only=True, epoch=workbook.epoch,
            date_formats=workbook._date_formats, timedelta_formats=workbook._timedelta_formats,
        )
        yield from parser.parse()


def _value_text(value: object) -> str:
    """A cell value as text: ISO dates, integral numbers without ".0", TRUE/FALSE."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.time):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):  # a duration format ([h]:mm:ss)
        seconds = round(value.total_seconds())
        sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
        return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g")  # Excel keeps 15 significant digits
    return str(value)


def _merged_ranges(archive: zipfile.ZipFile, part: str, limits: ParseLimits) -> list[_Range]:
    """The sheet's merged ranges of more than one cell, clipped to the columns read.

    `<mergeCells>` follows `<sheetData>`, so the whole part is read before the first row; a
    part that does not contain the word is not parsed at all (most sheets have no merges).
    """
    if not _contains(archive, part, _MERGE_WORD):
        return []
    from openpyxl.utils.cell import range_boundaries  # type: ignore[import-untyped]

    ranges: list[_Range] = []
    with archive.open(part) as source:
        # The package check refused any DTD; rows are dropped as they end, keeping no tree.
        events = etree.iterparse(
            source, events=("end",), tag=("{*}row", "{*}mergeCell"),
            resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
        )
        for _, element in events:
            if str(element.tag).endswith("}mergeCell"):
                try:
                    first_column, first_row, last_column, last_row = range_boundaries(
                        element.get("ref", ""))
                except (TypeError, ValueError):
                    continue  # not an A1 range: nothing to repeat
                last_column = min(last_column, limits.max_sheet_columns)
                if first_column <= last_column and (first_column, first_row) != (
                    last_column, last_row
                ):
                    ranges.append((first_column, first_row, last_column, last_row))
                if len(ranges) > limits.max_sheet_cells:
                    raise reject(
                        f"XLSX sheet has more than {limits.max_sheet_cells:,} merged ranges "
                        "(RAGSIFT_MAX_SHEET_CELLS)"
                    )
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]  # type: ignore[union-attr]
    return ranges


def _contains(archive: zipfile.ZipFile, part: str, word: bytes) -> bool:
    tail = b""
    with archive.open(part) as source:
        while piece := source.read(_READ_SIZE):
            if word in tail + piece[: len(word)] or word in piece:
                return True
            tail = piece[-len(word) :]
    return False


class _MergeFill:
    """Repeats each merged range's top-left value in the cells it covers, row by row.

    Rows arrive in sheet order. A range starts when its first row comes with a value in its
    top-left cell (otherwise it has nothing to repeat) and ends after its last row.
    """

    def __init__(self, ranges: list[_Range]) -> None:
        # Ranges not yet started, the next one last; started ones as (first, last column,
        # last row, value).
        self._pending = sorted(ranges, key=lambda bounds: bounds[1], reverse=True)
        self._active: list[tuple[int, int, int, str]] = []

    def fill(self, number: int, values: dict[int, str]) -> None:
        """Fill row `number`'s covered cells into `values` (column -> text), in place."""
        while self._pending and self._pending[-1][1] <= number:
            first_column, first_row, last_column, last_row = self._pending.pop()
            value = values.get(first_column) if first_row == number else None
            if value:
                self._active.append((first_column, last_column, last_row, value))
        if not values or not self._active:
            return
        active = []
        for first_column, last_column, last_row, value in self._active:
            if last_row < number:
                continue
            active.append((first_column, last_column, last_row, value))
            for column in range(first_column, last_column + 1):
                values[column] = value
        self._active = active
