"""PDF page rendering (pypdfium2): sizes, the pixel limit, bad input, and OCR of a page."""

from __future__ import annotations

import io
from typing import Any

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pytest
from PIL import Image
from pypdf import PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import pdf_pages
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.parsers.ocr import OcrBudget, OcrTimeout
from ragsift.ingestion.parsers.pdf_pages import (
    page_count,
    page_size,
    render_page,
    render_page_png,
)

A4_WIDTH, A4_HEIGHT = A4  # 595.3 x 841.9 points


def build_pdf(pages: int = 2, size: tuple[float, float] = A4, text: str = "Page") -> bytes:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=size)
    for number in range(1, pages + 1):
        pdf.setFont("Helvetica", 28)
        # baseline 100 pt below the top, 72 pt from the left edge
        pdf.drawString(72, size[1] - 100, f"{text} {number}")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def test_a_page_is_rendered_at_the_requested_width_keeping_its_aspect_ratio() -> None:
    image = render_page(build_pdf(), 2, width=400)
    assert image.mode == "RGB"
    assert image.width == 400
    assert image.height == pytest.approx(400 * A4_HEIGHT / A4_WIDTH, abs=1)


def test_without_a_width_a_page_is_rendered_at_the_dpi() -> None:
    image = render_page(build_pdf(), 1, dpi=144)
    assert image.size == pytest.approx((A4_WIDTH * 2, A4_HEIGHT * 2), abs=1)


def test_the_rendered_page_shows_its_content() -> None:
    image = render_page(build_pdf(), 1, width=600).convert("L")
    # the text sits about 100 pt below the top, from 72 pt in: dark pixels there, white below
    text_band = image.crop((72, 70, 250, 100))
    empty_band = image.crop((72, 400, 250, 430))
    assert text_band.getextrema()[0] < 100  # type: ignore[operator]
    assert empty_band.getextrema() == (255, 255)


def test_rendering_is_scaled_down_to_the_pixel_limit() -> None:
    limits = ParseLimits(max_image_pixels=100_000)
    image = render_page(build_pdf(), 1, width=3000, limits=limits)
    assert image.width * image.height <= 100_000
    assert image.width > 200  # scaled down to the limit, not far below it
    assert image.height / image.width == pytest.approx(A4_HEIGHT / A4_WIDTH, rel=0.02)


def test_a_huge_page_renders_within_the_default_pixel_limit() -> None:
    data = build_pdf(1, size=(14_400, 14_400))  # 200 x 200 inches: 2.9 G pixels at 300 dpi
    image = render_page(data, 1, dpi=300)
    assert image.width * image.height <= ParseLimits().max_image_pixels


@pytest.mark.parametrize("number", [0, 3, -1])
def test_a_page_out_of_range_is_rejected(number: int) -> None:
    with pytest.raises(DocumentRejected, match=r"page -?\d+ does not exist: the PDF has 2 page"):
        render_page(build_pdf(2), number)


def test_bytes_that_are_not_a_pdf_are_rejected() -> None:
    with pytest.raises(DocumentRejected, match="not a PDF"):
        render_page(b"GIF89a not a pdf", 1)
    with pytest.raises(DocumentRejected, match="not a PDF"):
        page_count(b"hello")


def test_a_corrupt_pdf_is_rejected() -> None:
    with pytest.raises(DocumentRejected, match="corrupt"):
        render_page(b"%PDF-1.7\n" + bytes(range(256)) * 4, 1)


def test_a_password_protected_pdf_is_rejected_as_encrypted() -> None:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(DocumentRejected, match="password required"):
        page_count(out.getvalue())


def test_png_rendering_gives_a_png_of_the_requested_width() -> None:
    png = render_page_png(build_pdf(), 1, width=320)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        assert image.width == 320


def test_width_and_dpi_must_be_positive() -> None:
    with pytest.raises(ValueError):
        render_page(build_pdf(), 1, width=0)


def test_page_count_counts_pages() -> None:
    assert page_count(build_pdf(3)) == 3


def test_page_size_is_in_points_and_follows_the_page_rotation() -> None:
    data = build_pdf(1, size=(300, 500))
    assert page_size(data, 1) == pytest.approx((300, 500))
    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.pages[0].rotate(90)
    out = io.BytesIO()
    writer.write(out)
    assert page_size(out.getvalue(), 1) == pytest.approx((500, 300))
    assert render_page(out.getvalue(), 1, dpi=72).size == (500, 300)
    with pytest.raises(DocumentRejected, match="page 2 does not exist"):
        page_size(data, 2)


# --- OCR of a page ---------------------------------------------------------------------------


def test_a_page_is_ocred_into_blocks_with_boxes_in_pdf_points() -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")
    pdf = pdfium.PdfDocument(build_pdf(2, text="Scanned notice"))
    try:
        limits = ParseLimits(ocr_render_dpi=150)
        [block] = pdf_pages.ocr_pdf_page(pdf, 1, limits, OcrBudget(limits))
    finally:
        pdf.close()
    assert block.text == "Scanned notice 2"
    assert block.locator.page == 2
    [(x0, y0, x1, y1)] = block.locator.boxes
    # Helvetica 28 pt at baseline 100 pt below the top: cap height ~20 pt above, descenders below
    assert x0 == pytest.approx(72, abs=6)
    assert y0 == pytest.approx(100 - 20, abs=6)
    assert y1 == pytest.approx(100 + 6, abs=6)
    assert x1 > x0 + 150


def test_a_spent_ocr_budget_skips_the_page_before_rendering_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_render(*_: Any) -> None:
        raise AssertionError("rendered although the budget was spent")

    monkeypatch.setattr(pdf_pages, "_render", no_render)
    pdf = pdfium.PdfDocument(build_pdf(1))
    limits = ParseLimits(ocr_timeout_s=1e-9)
    try:
        with pytest.raises(OcrTimeout):
            pdf_pages.ocr_pdf_page(pdf, 0, limits, OcrBudget(limits))
    finally:
        pdf.close()
