"""DOCX via python-docx: body paragraphs and tables in document order.

Paragraphs styled "Title" (level 0) or "Heading N" (also the localised "标题 N" some editors write)
become the heading path. Every other paragraph is a block of its own, except that consecutive list
paragraphs (a "List ..." style or Word numbering) form one block with a "- item" line each. Tables
are rendered a row per line with cells joined by " | "; a merged cell is written once. Headers,
footers, text boxes and content controls (e.g. a table of contents) are not read.

The package is checked against the ParseLimits before python-docx opens it (ooxml.py); the walk
then counts paragraphs and table rows against max_document_blocks and text against
max_document_chars. Style names are looked up once per style and tables walked row by row, since
python-docx's per-paragraph style lookup and its cells of vertically merged rows grow with the
size of the styles part and the height of the table.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.table import Table
from docx.text.paragraph import Paragraph

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.base import ParsedDocument, SectionBuilder, normalize_inline
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget
from ragsift.ingestion.parsers.ooxml import PackageRejected, check_package

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
_BLOCKS = "paragraphs and table rows"


def parse_docx(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a Word document into sections under its headings."""
    document = _open(data, limits)
    budget = TextBudget(limits)
    styles = _ParagraphStyles(document)
    builder = SectionBuilder(budget=budget)
    list_lines: list[str] = []
    for item in document.iter_inner_content():
        level = styles.heading_level(item) if isinstance(item, Paragraph) else None
        if isinstance(item, Paragraph):
            budget.add_block(_BLOCKS)
        if isinstance(item, Paragraph) and level is None and styles.is_list_item(item):
            # The package check bounded this text; it counts as characters with its block.
            if item.text.strip():
                list_lines.append("- " + item.text)
            continue
        if list_lines:
            builder.add_block("\n".join(list_lines))
            list_lines = []
        if isinstance(item, Table):
            builder.add_block(_table_text(item, budget))
            continue
        if level is None:
            builder.add_block(item.text)
        else:
            builder.heading(level, item.text)
    if list_lines:
        builder.add_block("\n".join(list_lines))
    sections = builder.sections()
    logger.debug("DOCX: %d sections", len(sections))
    return ParsedDocument(media_type=MEDIA_TYPE, sections=sections)


def _open(data: bytes, limits: ParseLimits) -> Any:
    """The python-docx Document, once the package has passed the limits."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_package(archive, limits)
    except zipfile.BadZipFile as exc:
        raise DocumentRejected(
            "file is not a DOCX document (not a ZIP package; legacy .doc?)"
        ) from exc
    except PackageRejected as exc:
        raise DocumentRejected(f"DOCX is corrupt or not a Word document ({exc})") from exc
    try:
        return docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx, zipfile and lxml each raise their own types
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DocumentRejected(f"DOCX is corrupt or not a Word document ({reason})") from exc


class _ParagraphStyles:
    """Paragraph style names by style id, read once (python-docx searches the styles part for
    every paragraph), resolved as python-docx does: an unknown id or one of another style type
    means the default paragraph style."""

    def __init__(self, document: Any) -> None:
        self._names: dict[str, str] = {}
        seen: set[str] = set()
        for style in document.styles:
            if style.style_id in seen:
                continue  # python-docx takes the first style of an id
            seen.add(style.style_id)
            if style.type == WD_STYLE_TYPE.PARAGRAPH:
                self._names[style.style_id] = (style.name or "").strip()
        default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
        self._default = (default.name or "").strip() if default is not None else ""

    def name(self, paragraph: Paragraph) -> str:
        style_id = paragraph._p.style
        return self._default if style_id is None else self._names.get(style_id, self._default)

    def heading_level(self, paragraph: Paragraph) -> int | None:
        name = self.name(paragraph)
        if name.lower() in _TITLE_STYLES:
            return 0
        match = _HEADING_STYLE.match(name)
        return int(match.group(1)) if match else None

    def is_list_item(self, paragraph: Paragraph) -> bool:
        if self.name(paragraph).lower().startswith("list"):
            return True
        properties = paragraph._p.pPr
        return properties is not None and properties.numPr is not None


def _table_text(table: Table, budget: TextBudget) -> str:
    """A row per line, cells joined by " | "; a cell spanning columns appears once.

    A cell continuing a vertical merge repeats the text of the cell above it, as python-docx's
    row.cells would give it; kept per grid column here, so each row costs its own cells only.
    """
    lines: list[str] = []
    above: dict[int, str] = {}  # grid column -> text of the cell there in the previous row
    for tr in table._tbl.tr_lst:
        budget.add_block(_BLOCKS)
        column = tr.grid_before
        cells: list[str] = []
        for tc in tr.tc_lst:
            if tc.vMerge == "continue":
                text = above.get(column, "")
            else:
                text = normalize_inline("\n".join(Paragraph(p, table).text for p in tc.p_lst))
            above[column] = text
            cells.append(text)
            column += tc.grid_span
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)
