"""CSV via the standard library: one Markdown table section, rendered as a sheet is (tables.py).

The bytes are decoded as a .txt file is (decoding.py: BOM, UTF-8, GB18030). The delimiter is
sniffed among `,` `;` tab and `|` on the first lines, falling back to `,`. The section has no
heading path; each record is a row of the sheet the file would be when opened in a spreadsheet,
so its blocks are located by A1 ranges ("A5:D5", the record number as the row) with no sheet
name. Rows and columns are cut at the sheet limits with a warning, as for XLSX.

A field longer than Python's csv field limit (131,072 characters) rejects the file: it is
almost always an unclosed quote that runs to the end of the file.
"""

from __future__ import annotations

import csv
import io
import logging
from collections import Counter

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.base import ParsedDocument
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget
from ragsift.ingestion.parsers.tables import CellCount, SheetTable, cell_text

logger = logging.getLogger(__name__)

MEDIA_TYPE = "text/csv"

_DELIMITERS = ",;\t|"
_SAMPLE_CHARS = 32 * 1024
_SAMPLE_LINES = 50


def parse_csv(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a CSV file into one table section (no sections when it holds no value)."""
    text = decode_text(data)
    delimiter = sniff_delimiter(text)
    budget = TextBudget(limits)
    table = SheetTable("CSV", None, limits, CellCount(limits, "CSV"), budget)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    number = 0
    try:
        for record in reader:
            number += 1
            values = {
                column: cell_text(field)
                for column, field in enumerate(record[: limits.max_sheet_columns], 1)
            }
            if any(field.strip() for field in record[limits.max_sheet_columns :]):
                table.columns_cut()
            if not table.add_row(number, values):
                break
    except csv.Error as exc:
        raise _rejected(exc, reader.line_num) from exc
    section = table.section(())
    for note in table.warnings:
        logger.info("CSV: %s", note)
    logger.debug("CSV: delimiter %r, %d records read", delimiter, number)
    sections = () if section is None else (section,)
    return ParsedDocument(media_type=MEDIA_TYPE, sections=sections, warnings=tuple(table.warnings))


def sniff_delimiter(text: str) -> str:
    """The delimiter among `,;\t|` that splits the first records most consistently.

    Each candidate reads the sample with the csv module (so quoted fields are honoured); the
    one whose records most often share the same number of fields, over one, wins, and then the
    one giving more fields. csv.Sniffer is not used: it gives up on a few short lines, and its
    quote rule misses a quoted last field before a CRLF line end.
    """
    lines = text[:_SAMPLE_CHARS].splitlines(keepends=True)
    if len(text) > _SAMPLE_CHARS and len(lines) > 1:
        lines.pop()  # cut short, the last line would disagree with the others
    sample = lines[:_SAMPLE_LINES]
    best, best_score = ",", (0.0, 0)
    for delimiter in _DELIMITERS:
        counts = Counter(
            len(record) for record in csv.reader(sample, delimiter=delimiter) if any(record)
        )
        if not counts:
            continue
        fields, records = max(counts.items(), key=lambda item: (item[1], item[0]))
        score = (records / sum(counts.values()), fields)
        if fields > 1 and score > best_score:
            best, best_score = delimiter, score
    return best


def _rejected(exc: csv.Error, line: int) -> DocumentRejected:
    if "field larger than field limit" in str(exc):
        return DocumentRejected(
            f"CSV line {line:,} has a field over {csv.field_size_limit():,} characters "
            "(an unclosed quote runs to the end of the file?)"
        )
    return DocumentRejected(f"CSV line {line:,} cannot be read ({exc})")
