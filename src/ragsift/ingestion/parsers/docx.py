"""DOCX via python-docx: body paragraphs and tables in document order.

Paragraphs styled "Title" (level 0) or "Heading N" (also the localised "标题 N" some editors write)
become the heading path. Every other paragraph is a block of its own, except that consecutive list
paragraphs (a "List ..." style or Word numbering) form one block with a "- item" line each. Tables
are rendered a row per line with cells joined by " | "; a merged cell is written once. Headers,
footers, text boxes and content controls (e.g. a table of contents) are not read.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.base import ParsedDocument, SectionBuilder, normalize_inline

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})


def parse_docx(data: bytes) -> ParsedDocument:
    """Parse a Word document into sections under its headings."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentRejected("file is not a DOCX document (not a ZIP package; legacy .doc?)")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx, zipfile and lxml each raise their own types
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise DocumentRejected(f"DOCX is corrupt or not a Word document ({reason})") from exc
    builder = SectionBuilder()
    list_lines: list[str] = []
    for item in document.iter_inner_content():
        level = _heading_level(item) if isinstance(item, Paragraph) else None
        if isinstance(item, Paragraph) and level is None and _is_list_item(item):
            if item.text.strip():
                list_lines.append("- " + item.text)
            continue
        if list_lines:
            builder.add_block("\n".join(list_lines))
            list_lines = []
        if isinstance(item, Table):
            builder.add_block(_table_text(item))
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


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "").strip() if style is not None else ""


def _heading_level(paragraph: Paragraph) -> int | None:
    name = _style_name(paragraph)
    if name.lower() in _TITLE_STYLES:
        return 0
    match = _HEADING_STYLE.match(name)
    return int(match.group(1)) if match else None


def _is_list_item(paragraph: Paragraph) -> bool:
    if _style_name(paragraph).lower().startswith("list"):
        return True
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _table_text(table: Table) -> str:
    """A row per line, cells joined by " | "; a cell spanning columns appears once."""
    lines: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(normalize_inline(cell.text))
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)
