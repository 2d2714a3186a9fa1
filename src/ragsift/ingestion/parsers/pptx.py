"""PPTX via python-pptx: one section per slide, its speaker notes in a section of their own.

Slides are numbered from 1 in deck order (hidden slides included) and located by Locator(slide=N).
A slide's heading path is (its title,) when its title placeholder holds text, else ("Slide N",).
Its body is one Block per text frame or table, in reading order: shapes sorted top to bottom,
then left to right, by their position; a group shape is sorted as one shape at its own position
and its members sorted inside it. A text frame keeps a line per paragraph; an indented paragraph
(level 1 and deeper) or one with an explicit bullet gets a "- " prefix. A table is a Markdown
table: its first row as the header, a "| --- |" rule, then the other rows; "|" in a cell is
escaped and the cells a merge covers are left empty. A slide whose only text is its title gets
the title as its body, so the slide is still found. Date, footer and slide-number placeholders
(the same on every slide), charts, SmartArt and embedded objects are not read.

Speaker notes follow their slide as a section with heading path (title, "Speaker notes") and the
same locator, one Block per paragraph.

Pictures (picture shapes and filled picture placeholders, also inside groups) become
ParsedAssets of the slide's section (images.AssetCollector: probed, deduplicated, small ones
dropped, a corrupt one skipped with a warning). The caption is the picture's alt text (the
description, else the title, of its cNvPr; a bare file name is not alt text), else the slide
title. The asset's block is the text block just before the picture in reading order (the one
just after for a picture that comes first).

Limits: the package is checked like a DOCX (ooxml.check_package) before python-pptx opens it,
slides count against max_slides before any is read, blocks (text frames, tables, notes
paragraphs) against max_document_blocks and their text against max_document_chars.
python-pptx is imported when the first presentation is parsed.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import (
    Block,
    ParsedDocument,
    Section,
    normalize_inline,
    normalize_text,
)
from ragsift.ingestion.parsers.images import AssetCollector, alt_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject
from ragsift.ingestion.parsers.ooxml import OfficeKind, check_office_file

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pptx.presentation import Presentation
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide
    from pptx.table import Table
    from pptx.text.text import TextFrame

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
NOTES_HEADING = "Speaker notes"
_KIND = OfficeKind("PPTX", "a PPTX presentation", "a PowerPoint deck", ".ppt")

_BLOCKS = "text frames, tables and notes paragraphs"
_BULLETS = ("buChar", "buAutoNum", "buBlip")
_MAX_REASON = 160


@dataclass(slots=True)
class _SlideContent:
    """What one slide yields: its body blocks and its pictures (with the block count before)."""

    blocks: list[Block] = field(default_factory=list)
    pictures: list[tuple[BaseShape, int]] = field(default_factory=list)


def parse_pptx(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a PowerPoint deck into a section per slide (and one per slide's notes)."""
    presentation = _open(data, limits)
    slides = presentation.slides
    if len(slides) > limits.max_slides:
        raise reject(
            f"presentation has {len(slides):,} slides, over the limit of "
            f"{limits.max_slides:,} (RAGSIFT_MAX_SLIDES)"
        )
    budget = TextBudget(limits)
    assets = AssetCollector(limits)
    sections: list[Section] = []
    for number, slide in enumerate(slides, start=1):
        locator = Locator(slide=number)
        title = _title(slide, budget)
        heading = (title or f"Slide {number}",)
        content = _SlideContent()
        title_id = slide.shapes.title.shape_id if title else None
        _walk(slide.shapes, content, budget, title_id)
        if not content.blocks and title:
            content.blocks.append(Block(title))
        index: int | None = None
        if content.blocks:
            index = len(sections)
            sections.append(Section.of_blocks(heading, locator, content.blocks))
        for shape, before in content.pictures:
            _add_picture(assets, shape, number, title, index, _nearest(before, content.blocks))
        notes = _notes(slide, budget)
        if notes:
            sections.append(Section.of_blocks((*heading, NOTES_HEADING), locator, notes))
    logger.debug("PPTX: %d slides, %d sections", len(slides), len(sections))
    return ParsedDocument(
        media_type=MEDIA_TYPE, sections=tuple(sections), assets=assets.assets,
        warnings=assets.warnings,
    )


def _open(data: bytes, limits: ParseLimits) -> Presentation:
    """The python-pptx Presentation, once the package has passed the limits."""
    check_office_file(data, limits, _KIND)
    import pptx

    try:
        return pptx.Presentation(io.BytesIO(data))
    except Exception as exc:  # python-pptx, zipfile and lxml each raise their own types
        raise DocumentRejected(
            f"PPTX is corrupt or not a PowerPoint deck ({_reason(exc)})"
        ) from exc


def _title(slide: Slide, budget: TextBudget) -> str:
    shape = slide.shapes.title
    if shape is None or not shape.has_text_frame:
        return ""
    title = normalize_inline(shape.text_frame.text)
    budget.add_chars(len(title))
    return title


def _walk(
    shapes: Iterable[BaseShape], content: _SlideContent, budget: TextBudget, skip: int | None
) -> None:
    """Add the shapes' text and pictures to `content` in reading order, groups recursed."""
    from pptx.shapes.group import GroupShape
    from pptx.shapes.picture import Picture

    for shape in sorted(shapes, key=_position):
        if shape.is_placeholder and (shape.shape_id == skip or _is_boilerplate(shape)):
            continue
        if isinstance(shape, GroupShape):
            _walk(shape.shapes, content, budget, skip)
        elif isinstance(shape, Picture):
            content.pictures.append((shape, len(content.blocks)))
        elif getattr(shape, "has_table", False):
            _add_block(content, _table_markdown(shape.table), budget)  # type: ignore[attr-defined]
        elif shape.has_text_frame:
            _add_block(content, _frame_text(shape.text_frame), budget)  # type: ignore[attr-defined]


def _is_boilerplate(shape: BaseShape) -> bool:
    """A date, footer or slide-number placeholder: the same on every slide, not content."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    kind = shape.placeholder_format.type
    return kind in (PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER)


def _position(shape: BaseShape) -> tuple[int, int]:
    # A placeholder without its own position inherits its layout's; None if neither has one.
    return (shape.top or 0, shape.left or 0)


def _add_block(content: _SlideContent, text: str, budget: TextBudget) -> None:
    text = normalize_text(text)
    if text:
        budget.add_block(_BLOCKS)
        budget.add_chars(len(text))
        content.blocks.append(Block(text))


def _frame_text(frame: TextFrame) -> str:
    """A line per paragraph; "- " before an indented paragraph or one with its own bullet."""
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = normalize_inline(paragraph.text.replace("\v", " "))
        if text:
            lines.append("- " + text if _is_bullet(paragraph) else text)
    return "\n".join(lines)


def _is_bullet(paragraph: object) -> bool:
    level: int = getattr(paragraph, "level", 0)
    properties = paragraph._p.pPr  # type: ignore[attr-defined]
    if properties is None:
        return level > 0
    names = {child.tag.rsplit("}", 1)[-1] for child in properties}
    if "buNone" in names:
        return False
    return level > 0 or any(name in names for name in _BULLETS)


def _table_markdown(table: Table) -> str:
    """The table as Markdown: first row as the header, then a rule, then the other rows."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells = [
            "" if cell.is_spanned else normalize_inline(cell.text).replace("|", "\\|")
            for cell in row.cells
        ]
        rows.append(cells)
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    lines.insert(1, "| " + " | ".join(["---"] * width) + " |")
    return "\n".join(lines)


def _notes(slide: Slide, budget: TextBudget) -> list[Block]:
    """The speaker notes, a Block per paragraph; none when the slide has no notes page."""
    if not slide.has_notes_slide:  # reading notes_slide would create an empty one
        return []
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        return []
    blocks: list[Block] = []
    for paragraph in frame.paragraphs:
        text = normalize_text(paragraph.text)
        if text:
            budget.add_block(_BLOCKS)
            budget.add_chars(len(text))
            blocks.append(Block(text))
    return blocks


def _nearest(before: int, blocks: list[Block]) -> int | None:
    """The block just before a picture (the first block for a picture that comes first)."""
    if not blocks:
        return None
    return max(before - 1, 0)


def _add_picture(
    assets: AssetCollector, shape: BaseShape, number: int, title: str, section: int | None,
    block: int | None,
) -> None:
    what = f"picture {shape.name!r} on slide {number}"
    try:
        blob: bytes = shape.image.blob  # type: ignore[attr-defined]
    except Exception as exc:  # a linked (not embedded) image, or a missing image part
        assets.warn(f"{what} skipped: its image cannot be read ({_reason(exc)})")
        return
    assets.add(
        blob, what=what, locator=Locator(slide=number), caption=_alt_text(shape) or title,
        section=section, block=block if section is not None else None,
    )


def _alt_text(shape: BaseShape) -> str:
    """The shape's description (else its title) from its cNvPr; a file name does not count."""
    properties = shape._element._nvXxPr.cNvPr
    return alt_text(properties.get("descr"), properties.get("title"))


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:_MAX_REASON] or type(exc).__name__

