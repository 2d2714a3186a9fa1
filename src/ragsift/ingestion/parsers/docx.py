"""DOCX via python-docx: body paragraphs and tables in document order.

Paragraphs styled "Title" (level 0) or "Heading N" (also the localised "标题 N" some editors write)
become the heading path. Every other paragraph is a block of its own, except that consecutive list
paragraphs (a "List ..." style or Word numbering) form one block with a "- item" line each. Tables
are rendered a row per line with cells joined by " | "; a merged cell is written once. Headers,
footers, text boxes and content controls (e.g. a table of contents) are not read.

Pictures drawn in the body (w:drawing with an embedded a:blip, inline or anchored, also in tables
and list items) become ParsedAssets (images.AssetCollector) with no page, captioned with their
alt text (wp:docPr descr, else title) or the nearest heading above, and linked to the section
and block they belong to (see _Images). VML pictures (w:pict) are not read.

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
from dataclasses import dataclass
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.table import Table
from docx.text.paragraph import Paragraph

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import ParsedDocument, SectionBuilder, normalize_inline
from ragsift.ingestion.parsers.images import AssetCollector, alt_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget
from ragsift.ingestion.parsers.ooxml import OfficeKind, check_office_file

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
_BLOCKS = "paragraphs and table rows"
_KIND = OfficeKind("DOCX", "a DOCX document", "a Word document", ".doc")


def parse_docx(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a Word document into sections under its headings, with its images as assets."""
    document = _open(data, limits)
    budget = TextBudget(limits)
    styles = _ParagraphStyles(document)
    builder = SectionBuilder(budget=budget)
    images = _Images(document, builder, limits)
    list_lines: list[str] = []
    list_images: list[_Image] = []
    for item in document.iter_inner_content():
        level = styles.heading_level(item) if isinstance(item, Paragraph) else None
        found = images.find(item._element)
        if isinstance(item, Paragraph):
            budget.add_block(_BLOCKS)
        if isinstance(item, Paragraph) and level is None and styles.is_list_item(item):
            # The package check bounded this text; it counts as characters with its block.
            if item.text.strip():
                list_lines.append("- " + item.text)
            list_images.extend(found)
            continue
        if list_lines or list_images:
            images.add_block("\n".join(list_lines), list_images)
            list_lines, list_images = [], []
        if isinstance(item, Table):
            images.add_block(_table_text(item, budget), found)
        elif level is None:
            images.add_block(item.text, found)
        else:
            images.heading(level, item.text, found)
    if list_lines or list_images:
        images.add_block("\n".join(list_lines), list_images)
    sections = builder.sections()
    images.finish()
    logger.debug("DOCX: %d sections, %d images", len(sections), len(images.collector.assets))
    return ParsedDocument(
        media_type=MEDIA_TYPE, sections=sections, assets=images.collector.assets,
        warnings=images.collector.warnings,
    )


def _open(data: bytes, limits: ParseLimits) -> Any:
    """The python-docx Document, once the package has passed the limits."""
    check_office_file(data, limits, _KIND)
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


@dataclass(frozen=True, slots=True)
class _Image:
    """A picture found in the body: its relationship id, alt text and the heading above it."""

    rel_id: str
    name: str
    caption: str


class _Images:
    """Turns the body's pictures into assets linked to the block they belong to.

    A picture in a paragraph (or table, or list) with text belongs to that block. A picture in a
    paragraph of its own belongs to the block before it in its section, else the next block of
    its section, else the last block of an earlier section (else the document's next block).
    """

    def __init__(self, document: Any, builder: SectionBuilder, limits: ParseLimits) -> None:
        self.collector = AssetCollector(limits)
        self._parts: dict[str, Any] = document.part.related_parts
        self._builder = builder
        self._heading = ""
        self._pending: list[_Image] = []  # waiting for the next block
        self._last: tuple[int, int] | None = None  # (section, block) of the last block added
        self._section_has_block = False
        # One search of the whole body spares a search per paragraph in a text-only document.
        self._any = bool(document.element.body.xpath("boolean(.//w:drawing)"))

    def find(self, element: Any) -> list[_Image]:
        """The pictures drawn inside a body element (w:drawing with an embedded a:blip)."""
        found: list[_Image] = []
        if not self._any:
            return found
        for drawing in element.xpath(".//w:drawing"):
            properties = drawing.xpath("./*/wp:docPr")
            attrib = properties[0].attrib if properties else {}
            caption = alt_text(attrib.get("descr"), attrib.get("title")) or self._heading
            name = normalize_inline(attrib.get("name") or "") or "picture"
            for rel_id in drawing.xpath(".//a:blip/@r:embed"):
                found.append(_Image(str(rel_id), name, caption))
        return found

    def add_block(self, text: str, found: list[_Image]) -> None:
        """Add a block to the builder, and link the pictures in it (or near it) to it."""
        position = self._builder.position()
        self._builder.add_block(text)
        if self._builder.position() == position:  # no text: the pictures stand on their own
            if self._section_has_block:
                self._link(found, self._last)
            else:
                self._pending.extend(found)
            return
        self._link([*self._pending, *found], position)
        self._pending = []
        self._last = position
        self._section_has_block = True

    def heading(self, level: int, title: str, found: list[_Image]) -> None:
        self.add_block("", found)  # a heading's own pictures belong with the text before it
        self._builder.heading(level, title)
        heading = normalize_inline(title)
        if heading:
            self._heading = heading
            self._section_has_block = False
            if self._last is not None:
                self._link(self._pending, self._last)
                self._pending = []

    def finish(self) -> None:
        self._link(self._pending, self._last)
        self._pending = []

    def _link(self, found: list[_Image], position: tuple[int, int] | None) -> None:
        section, block = position if position is not None else (None, None)
        for image in found:
            what = f"image {image.name!r}"
            part = self._parts.get(image.rel_id)
            blob = getattr(part, "blob", None)
            if not isinstance(blob, bytes):
                self.collector.warn(f"{what} skipped: its image part is missing")
                continue
            self.collector.add(
                blob, what=what, locator=Locator(), caption=image.caption, section=section,
                block=block,
            )
