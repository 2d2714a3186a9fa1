"""PDF: located paragraphs under headings, embedded images as assets, OCR of scanned pages.

pypdf checks the file first (a cheap pass: pages, encryption, the decoded size of the content
streams, see pdf_limits.py); PDFium (pypdfium2) then reads the text with positions and the
images. Sections never span pages: each holds the paragraphs of one page under one heading path
(Locator(page=N), from 1), one Block per paragraph located by the boxes of its lines (PDF
points, origin at the top left of the page as displayed; pdf_layout.py).

Headings: when the PDF has an outline (bookmarks), its titles are the headings, at the line of
their page that reads the same (else at the top of that page), levels from the outline's depth.
Otherwise lines whose font is clearly larger than the body text (the most common size, weighted
by characters), short and not ending like a sentence are headings, level 1 for the largest size.
Heading text is in the heading path, not in the section text.

Images (pdf_images.py) become ParsedAssets through images.AssetCollector (probed, deduplicated,
small ones dropped, at most max_assets, a corrupt one skipped with a warning), located by page
and box, captioned by a "Figure 1: ..." paragraph next to them or else the nearest heading, and
linked to that caption paragraph, else to the paragraph nearest to them. When OCR is available,
what it reads in an image of at least 200x100 pixels becomes a block of its own right after that
paragraph, "[图片] text" when the text has CJK characters and "[Image] text" otherwise (the
marker says where the text came from, in the document's language), and the asset names that
block.

Scanned pages: a page with fewer than ocr_min_chars characters in its text layer (and something
drawn on it) is rendered and OCRed (pdf_pages.ocr_pdf_page) within the document's OCR time
budget; its blocks replace the text layer and its scan image (an image covering most of the page)
is not kept as an asset. A PDF none of whose pages yields text is rejected, with the reason OCR
could not help (turned off, not installed, out of time) when that is why.

Limits: pages count against max_document_blocks before any is read, text against
max_document_chars; image pixels against max_image_pixels before they are decoded. PDFium runs
in-process; the preparation worker's time and memory caps bound what no setting does.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Box, Locator
from ragsift.ingestion.parsers import pdf_images, pdf_layout
from ragsift.ingestion.parsers.base import (
    CJK_CHARS,
    Block,
    ParsedAsset,
    ParsedDocument,
    Section,
    normalize_inline,
)
from ragsift.ingestion.parsers.images import AssetCollector
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject
from ragsift.ingestion.parsers.ocr import OcrBudget, OcrTimeout, ocr_unavailable_reason
from ragsift.ingestion.parsers.pdf_layout import Heading, Line, PageFrame
from ragsift.ingestion.parsers.pdf_limits import check_structure, reason_of
from ragsift.ingestion.parsers.pdf_pages import PDFIUM_LOCK, ocr_pdf_page

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/pdf"

SCAN_COVERAGE = 0.8  # an image covering this share of an OCRed page is the scan itself
_CJK_TEXT = f"[{CJK_CHARS}]"


def parse_pdf(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Located paragraphs of every page under their headings, and the images as assets."""
    if b"%PDF-" not in data[:1024]:
        raise DocumentRejected("file is not a PDF (no %PDF header)")
    check_structure(data, limits)
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise DocumentRejected(f"PDF is corrupt or truncated ({reason_of(exc)})") from exc
        pages = len(pdf)
    try:
        if pages > limits.max_document_blocks:  # PDFium may see more pages than pypdf did
            raise reject(
                f"PDF has {pages:,} pages, over the limit of {limits.max_document_blocks:,} "
                "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
            )
        return _Extraction(pdf, limits).run(pages)
    finally:
        with PDFIUM_LOCK:
            pdf.close()


@dataclass(slots=True)
class _Page:
    """What the first pass read of one page."""

    number: int
    size: tuple[float, float]  # as displayed
    lines: list[Line] = field(default_factory=list)
    ocr_blocks: list[Block] | None = None  # set when the page was OCRed
    images: list[tuple[ParsedAsset, Box]] = field(default_factory=list)


class _Extraction:
    """Reads the pages (text, OCR, images), then lays them out into sections."""

    def __init__(self, pdf: Any, limits: ParseLimits) -> None:
        self._pdf = pdf
        self._limits = limits
        self._budget = TextBudget(limits)
        self._assets = AssetCollector(limits)
        self._images = pdf_images.PageImageReader(limits, self._assets.warn)
        self._ocr_unavailable = ocr_unavailable_reason(limits)
        self._ocr_budget = OcrBudget(limits)
        self._failed = 0
        self._unread = 0  # pages without text that OCR could not read (unavailable)
        self._ocr_skipped = 0  # ... that were skipped once the OCR budget was spent
        self._ocr_empty = 0  # ... on which OCR found no text
        self._ocr_images_skipped = 0  # images not OCRed once the OCR budget was spent

    def run(self, count: int) -> ParsedDocument:
        pages = [page for page in map(self._read_page, range(count)) if page]
        sections = self._lay_out(pages)
        self._report(pages)
        if not sections:
            raise DocumentRejected(self._no_text_reason())
        return ParsedDocument(
            media_type=MEDIA_TYPE, sections=tuple(sections), assets=self._assets.assets,
            warnings=self._assets.warnings,
        )

    def _read_page(self, index: int) -> _Page | None:
        number = index + 1
        try:
            with PDFIUM_LOCK:  # PDFium is not thread-safe (pdf_pages.py)
                page = self._pdf[index]
                try:
                    frame = PageFrame(page.get_cropbox(), page.get_rotation())
                    textpage = page.get_textpage()
                    try:
                        lines = pdf_layout.read_lines(textpage, frame)
                    finally:
                        textpage.close()
                    images = self._images.read(page, frame, number)
                    draws = _draws_anything(page)
                finally:
                    page.close()
        except DocumentRejected:
            raise
        except Exception as exc:  # one unreadable page must not lose the others
            logger.warning("PDF page %d: text extraction failed (%s); page skipped", number, exc)
            self._failed += 1
            return None
        # Counted as read, so a document over the limit stops at the page that breaks it.
        self._budget.add_chars(sum(len(line.text) for line in lines))
        read = _Page(number, (frame.width, frame.height), lines)
        if draws:
            self._scan_ocr(read, index)
        self._keep_images(read, images)
        return read

    def _scan_ocr(self, read: _Page, index: int) -> None:
        """OCR the page when its text layer is (nearly) empty."""
        chars = sum(len(line.text) - line.text.count(" ") for line in read.lines)
        if chars >= self._limits.ocr_min_chars:
            return
        if self._ocr_unavailable is not None:
            self._unread += not read.lines
            return
        try:
            blocks = ocr_pdf_page(self._pdf, index, self._limits, self._ocr_budget)
        except OcrTimeout:
            self._ocr_skipped += 1
            return
        except DocumentRejected:
            raise
        except Exception as exc:  # OCR of one page must not lose the document
            self._assets.warn(f"OCR of page {read.number} failed: {reason_of(exc)}")
            return
        if blocks:
            self._budget.add_chars(sum(len(block.text) for block in blocks))
            read.ocr_blocks = blocks
        elif not read.lines:
            self._ocr_empty += 1

    def _keep_images(self, read: _Page, images: list[pdf_images.PageImage]) -> None:
        page_area = max(read.size[0] * read.size[1], 1.0)
        for image in images:
            box = image.box
            if read.ocr_blocks is not None:
                area = (box[2] - box[0]) * (box[3] - box[1])
                if area >= SCAN_COVERAGE * page_area:
                    continue  # the scan of an OCRed page: its text is the page's blocks
            locator = Locator(page=read.number, boxes=(box,))
            kept = self._assets.add(image.data, what=image.what, locator=locator)
            if kept is not None:
                read.images.append((kept, box))

    def _lay_out(self, pages: list[_Page]) -> list[Section]:
        with PDFIUM_LOCK:
            outline = _outline(self._pdf, self._limits)
        text_lines = [line for page in pages if page.ocr_blocks is None for line in page.lines]
        body = pdf_layout.body_size(text_lines)
        levels = pdf_layout.heading_levels(text_lines, body)
        level_of = functools.partial(pdf_layout.heading_level, levels=levels, body=body)
        builder = _Sections()
        for page in pages:
            titles = outline.get(page.number, []) if outline is not None else []
            entries: list[Heading | Block]
            if page.ocr_blocks is not None:
                entries = [*(Heading(level, title) for level, title in titles), *page.ocr_blocks]
            elif outline is not None:
                entries = _outline_entries(page, titles)
            else:
                entries = pdf_layout.page_entries(page.lines, page.number, level_of)
            self._place_images(page, entries, builder)
        return builder.sections

    def _place_images(
        self, page: _Page, entries: list[Heading | Block], builder: _Sections
    ) -> None:
        """Link each image to its nearest paragraph (adding its OCR block), then build."""
        links: list[tuple[ParsedAsset, str, Block | None, str]] = []
        for asset, box in page.images:
            blocks = [entry for entry in entries if isinstance(entry, Block)]
            # Linked to its caption when it has one (what describes it), else the nearest text.
            found = pdf_images.caption_block(box, blocks)
            caption = "" if found is None else pdf_images.caption_text(blocks[found])
            nearest = pdf_images.nearest_block(box, blocks) if found is None else found
            anchor = None if nearest is None else blocks[nearest]
            text = self._image_ocr(asset)
            if text:
                self._budget.add_chars(len(text))
                located = Locator(page=page.number, boxes=(box,))
                ocr_block = Block(f"{_marker(text)} {text}", located)
                at = len(entries) if anchor is None else _index_of(entries, anchor) + 1
                entries.insert(at, ocr_block)
                anchor = ocr_block
            links.append((asset, caption, anchor, text))
        placed = builder.add_page(page.number, entries)
        for asset, caption, anchor, text in links:
            section, block, path = (None, None, builder.path)
            if anchor is not None and id(anchor) in placed:
                section, block, path = placed[id(anchor)]
            final = dataclasses.replace(
                asset, caption=caption or (path[-1] if path else ""), ocr_text=text,
                section=section, block=block,
            )
            self._assets.replace(asset, final)

    def _image_ocr(self, asset: ParsedAsset) -> str:
        if self._ocr_unavailable is not None:
            return ""
        try:
            return pdf_images.ocr_text(asset.data, self._limits, self._ocr_budget)
        except OcrTimeout:
            self._ocr_images_skipped += 1
            return ""
        except Exception as exc:  # OCR of one image must not lose the document
            page = asset.locator.page
            self._assets.warn(f"OCR of an image on page {page} failed: {reason_of(exc)}")
            return ""

    def _report(self, pages: list[_Page]) -> None:
        if self._ocr_skipped:
            self._assets.warn(self._ocr_budget.skipped_warning(self._ocr_skipped))
        if self._ocr_images_skipped:
            self._assets.warn(
                self._ocr_budget.skipped_warning(self._ocr_images_skipped, "images")
            )
        if self._unread and self._ocr_unavailable is not None:
            self._assets.warn(
                f"{self._unread} page(s) without a text layer not read: {self._ocr_unavailable}"
            )
        logger.debug(
            "PDF: %d pages read, %d failed, %d OCRed", len(pages), self._failed,
            sum(page.ocr_blocks is not None for page in pages),
        )

    def _no_text_reason(self) -> str:
        if self._failed and not (self._unread or self._ocr_skipped or self._ocr_empty):
            return f"PDF is corrupt: text extraction failed on {self._failed} page(s)"
        if self._ocr_skipped:
            return f"no extractable text: {self._ocr_budget.skipped_warning(self._ocr_skipped)}"
        if self._unread and self._ocr_unavailable is not None:
            return f"no extractable text (scanned PDF?): {self._ocr_unavailable}"
        if self._ocr_empty:
            return f"no extractable text (OCR found no text on {self._ocr_empty} page(s))"
        return "no extractable text (scanned PDF?)"


class _Sections:
    """Cuts the pages' entries into sections: a heading or a new page starts one."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self.sections: list[Section] = []

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._stack)

    def add_page(
        self, number: int, entries: list[Heading | Block]
    ) -> dict[int, tuple[int, int, tuple[str, ...]]]:
        """Add a page; returns where each of its blocks went: id -> (section, block, path)."""
        placed: dict[int, tuple[int, int, tuple[str, ...]]] = {}
        blocks: list[Block] = []
        for entry in entries:
            if isinstance(entry, Heading):
                title = normalize_inline(entry.title)
                if not title:
                    continue
                self._flush(number, blocks)
                while self._stack and self._stack[-1][0] >= entry.level:
                    self._stack.pop()
                self._stack.append((entry.level, title))
            elif entry.text.strip():
                placed[id(entry)] = (len(self.sections), len(blocks), self.path)
                blocks.append(entry)
        self._flush(number, blocks)
        return placed

    def _flush(self, number: int, blocks: list[Block]) -> None:
        if blocks:
            self.sections.append(Section.of_blocks(self.path, Locator(page=number), blocks))
            blocks.clear()


def _outline(pdf: Any, limits: ParseLimits) -> dict[int, list[tuple[int, str]]] | None:
    """Page number -> (level, title) of the outline's entries; None without an outline."""
    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for count, bookmark in enumerate(pdf.get_toc(max_depth=pdf_layout.MAX_HEADING_LEVELS)):
            if count >= limits.max_document_blocks:
                break
            title = normalize_inline(bookmark.get_title() or "")
            dest = bookmark.get_dest()
            if dest is None:  # a GoTo action rather than a destination
                action = pdfium_c.FPDFBookmark_GetAction(bookmark)
                raw = pdfium_c.FPDFAction_GetDest(pdf, action) if action else None
                index = pdfium_c.FPDFDest_GetDestPageIndex(pdf, raw) if raw else -1
            else:
                index = dest.get_index()
            if title and isinstance(index, int) and index >= 0:
                found.setdefault(index + 1, []).append((bookmark.level + 1, title))
    except Exception as exc:  # a broken outline: fall back to font sizes
        logger.info("PDF outline not read (%s); headings from font sizes", exc)
        return None
    return found or None


def _outline_entries(page: _Page, titles: list[tuple[int, str]]) -> list[Heading | Block]:
    """The page laid out with the outline's titles as headings (unmatched ones on top)."""
    pending = list(titles)

    def level_of(line: Line) -> int | None:
        key = _key(line.text)
        for index, (level, title) in enumerate(pending):
            if _key(title) == key:
                del pending[index]
                return level
        return None

    entries = pdf_layout.page_entries(page.lines, page.number, level_of)
    return [*(Heading(level, title) for level, title in pending), *entries]


def _key(text: str) -> str:
    return "".join(text.split()).casefold()


def _draws_anything(page: Any) -> bool:
    import pypdfium2.raw as pdfium_c

    return int(pdfium_c.FPDFPage_CountObjects(page)) > 0


def _marker(text: str) -> str:
    return "[图片]" if re.search(_CJK_TEXT, text) else "[Image]"


def _index_of(entries: list[Heading | Block], anchor: Block) -> int:
    return next(index for index, entry in enumerate(entries) if entry is anchor)
