"""PDF pages rendered to images with pypdfium2: page previews, and OCR of scanned pages.

Memory: a rendered page is a bitmap of 3 bytes per pixel, and a PDF page may declare any size up
to 14,400 x 14,400 points (200 inches), so every render is scaled down, before pdfium allocates
anything, to at most limits.max_image_pixels pixels (RAGSIFT_MAX_IMAGE_PIXELS; 40 M pixels, about
120 MB, by default). A requested width or resolution is a maximum, not a promise.

PDFium is not thread-safe: every pdfium call made here holds one process-wide lock (pages are
rendered one at a time per process; OCR of the rendered image runs outside it).
"""

from __future__ import annotations

import io
import logging
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.base import Block
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits
from ragsift.ingestion.parsers.ocr import OcrBudget, OcrTimeout, lines_to_blocks, read_lines

if TYPE_CHECKING:
    import pypdfium2  # type: ignore[import-untyped]
    from PIL import Image

logger = logging.getLogger(__name__)

POINTS_PER_INCH = 72
PDFIUM_LOCK = threading.RLock()  # held around every pdfium call of this module
_MAX_REASON = 160


def render_page(
    data: bytes, page_number: int, *, width: int | None = None, dpi: int = 150,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> Image.Image:
    """Render page `page_number` (from 1) as an RGB image, `width` pixels wide when given (else
    at `dpi`), scaled down further when it would exceed limits.max_image_pixels.

    DocumentRejected when the bytes are not a PDF, it cannot be opened, or the page does not
    exist.
    """
    return _render_sized(data, page_number, width, dpi, limits)[0]


def _render_sized(
    data: bytes, page_number: int, width: int | None, dpi: int, limits: ParseLimits
) -> tuple[Image.Image, tuple[float, float]]:
    """render_page(), and the page's size in points, from one opening of the PDF."""
    if (width is not None and width <= 0) or dpi <= 0:
        raise ValueError("width and dpi must be positive")
    with _opened(data) as pdf, PDFIUM_LOCK:
        page = _page(pdf, page_number)
        try:
            page_width, page_height = page.get_size()
            wanted = width / max(page_width, 1.0) if width is not None else dpi / POINTS_PER_INCH
            image = _render(page, _bounded_scale(wanted, page_width, page_height, limits))
            return image, (float(page_width), float(page_height))
        finally:
            page.close()


def render_preview(
    data: bytes, page_number: int, width: int, limits: ParseLimits = DEFAULT_LIMITS
) -> tuple[bytes, tuple[float, float]]:
    """PNG bytes of page `page_number` (from 1) `width` pixels wide (see render_page), and
    the page's width and height in points (see page_size), from one opening of the PDF."""
    image, size = _render_sized(data, page_number, width, 150, limits)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue(), size


def render_page_png(
    data: bytes, page_number: int, width: int, limits: ParseLimits = DEFAULT_LIMITS
) -> bytes:
    """Render page `page_number` (from 1) as PNG bytes `width` pixels wide (see render_page)."""
    return render_preview(data, page_number, width, limits)[0]


def ocr_pdf_page(
    pdf: pypdfium2.PdfDocument, page_index: int, limits: ParseLimits, budget: OcrBudget
) -> list[Block]:
    """OCR page `page_index` (from 0) rendered at limits.ocr_render_dpi (bounded by
    max_image_pixels): paragraph blocks with page=page_index+1 and boxes in PDF points, origin
    top-left of the page as displayed.

    Raises ocr.OcrTimeout, without rendering, when the budget is already spent; the caller
    skips the page and records budget.skipped_warning(...).
    """
    if budget.exhausted():
        # Checked before rendering too: a spent budget must not cost a render per page left.
        raise OcrTimeout(f"OCR time limit of {budget.limit_s:g} s spent")
    with PDFIUM_LOCK:
        page = pdf[page_index]
        try:
            page_width, page_height = page.get_size()
            wanted = limits.ocr_render_dpi / POINTS_PER_INCH
            scale = _bounded_scale(wanted, page_width, page_height, limits)
            image = _render(page, scale)
        finally:
            page.close()
    lines = read_lines(image, budget)
    logger.debug("OCR of PDF page %d: %d lines at scale %.2f", page_index + 1, len(lines), scale)
    return lines_to_blocks(lines, scale=scale, page=page_index + 1)


def page_size(data: bytes, page_number: int) -> tuple[float, float]:
    """Width and height of page `page_number` (from 1) in PDF points, as displayed (rotation
    applied): the space OCR boxes and render_page's pixels are measured in."""
    with _opened(data) as pdf, PDFIUM_LOCK:
        page = _page(pdf, page_number)
        try:
            width, height = page.get_size()
            return float(width), float(height)
        finally:
            page.close()


def page_count(data: bytes) -> int:
    """The number of pages of a PDF; DocumentRejected when it is not one or cannot be opened."""
    with _opened(data) as pdf, PDFIUM_LOCK:
        return len(pdf)


@contextmanager
def _opened(data: bytes) -> Iterator[Any]:
    if b"%PDF-" not in data[:1024]:
        raise DocumentRejected("file is not a PDF (no %PDF header)")
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            reason = " ".join(str(exc).split())[:_MAX_REASON]
            if "password" in reason.lower():
                raise DocumentRejected("PDF is encrypted (password required)") from exc
            raise DocumentRejected(f"PDF is corrupt or cannot be opened ({reason})") from exc
    try:
        yield pdf
    finally:
        with PDFIUM_LOCK:
            pdf.close()


def _page(pdf: Any, page_number: int) -> Any:
    count = len(pdf)
    if not 1 <= page_number <= count:
        raise DocumentRejected(f"page {page_number} does not exist: the PDF has {count} page(s)")
    return pdf[page_number - 1]


def _bounded_scale(
    wanted: float, page_width: float, page_height: float, limits: ParseLimits
) -> float:
    """`wanted` pixels per point, lowered so the bitmap stays within max_image_pixels."""
    # pdfium rounds each side up: leave room for that so the product stays within the limit.
    area = max(page_width, 1.0) * max(page_height, 1.0)
    fitting = math.sqrt(limits.max_image_pixels / area)
    while fitting > 0 and (
        math.ceil(page_width * fitting) * math.ceil(page_height * fitting)
        > limits.max_image_pixels
    ):
        fitting *= 0.999
    if wanted > fitting:
        logger.info(
            "page of %.0fx%.0f pt rendered at %.3f px/pt, not %.3f (RAGSIFT_MAX_IMAGE_PIXELS)",
            page_width, page_height, fitting, wanted,
        )
        return fitting
    return wanted


def _render(page: Any, scale: float) -> Image.Image:
    bitmap = page.render(scale=scale, rev_byteorder=True)  # RGB byte order: no conversion
    try:
        image: Image.Image = bitmap.to_pil()
        # to_pil may share the bitmap's buffer: copy out before the bitmap is closed.
        return image.convert("RGB") if image.mode != "RGB" else image.copy()
    finally:
        bitmap.close()
