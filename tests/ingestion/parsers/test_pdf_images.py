"""PDF images as assets (box, caption, dedupe, limits, corrupt streams) and OCR of scans."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from PIL import Image, ImageDraw
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, NumberObject
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ParseLimits, parse_document
from support.text_images import draw_text

WIDTH, HEIGHT = A4
NO_OCR = ParseLimits(ocr="off")
INTRO = "The diagram below shows how the office LAN reaches the data centre through the VPN."
AFTER = "Traffic from the branch offices takes the same route over the encrypted tunnel."
CAPTION = "Figure 1: Office LAN, firewall and VPN gateway"


def diagram(size: tuple[int, int] = (400, 300), colour: str = "#1f5f9f") -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    margin = min(size) // 10
    draw.rectangle((margin, margin, size[0] - margin, size[1] - margin), outline=colour, width=6)
    draw.line((margin, margin, size[0] - margin, size[1] - margin), fill=colour, width=4)
    return image


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def jpeg(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def page_with_image(
    pdf: canvas.Canvas, image: bytes, box: tuple[float, float, float, float],
    caption: str | None = CAPTION,
) -> None:
    """INTRO above the image, the caption just below it, AFTER further down (PDF space)."""
    x, y, w, h = box
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, y + h + 30, INTRO)
    pdf.drawImage(ImageReader(io.BytesIO(image)), x, y, width=w, height=h)
    if caption:
        pdf.drawString(x, y - 14, caption)
    pdf.drawString(72, y - 120, AFTER)
    pdf.showPage()


def build(pages: list[bytes], box: tuple[float, float, float, float] = (100, 400, 200, 150),
          caption: str | None = CAPTION) -> bytes:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    for image in pages:
        page_with_image(pdf, image, box, caption)
    pdf.save()
    return out.getvalue()


def with_broken_image_stream(data: bytes, stored: bytes, image_filter: str) -> bytes:
    """The PDF with each image stream's stored bytes replaced by `stored` under one filter."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for page in writer.pages:
        xobjects: Any = page["/Resources"]["/XObject"]  # type: ignore[index]
        for reference in xobjects.values():
            image = reference.get_object()
            image._data = stored  # as stored in the file: pypdf re-encodes nothing on write
            image[NameObject("/Filter")] = NameObject(image_filter)
            image[NameObject("/Length")] = NumberObject(len(stored))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_an_image_becomes_an_asset_with_its_box_caption_and_paragraph() -> None:
    parsed = parse_document("net.pdf", build([png(diagram())]), NO_OCR)
    [asset] = parsed.assets
    assert (asset.media_type, asset.width, asset.height) == ("image/png", 400, 300)
    assert asset.locator.page == 1
    [box] = asset.locator.boxes
    assert box == pytest.approx((100, HEIGHT - 550, 300, HEIGHT - 400), abs=0.5)
    assert asset.caption == CAPTION
    assert asset.ocr_text == ""
    assert asset.section is not None and asset.block is not None
    linked = parsed.sections[asset.section].blocks[asset.block]
    assert linked.text == CAPTION  # the paragraph nearest to the image
    with Image.open(io.BytesIO(asset.data)) as stored:
        assert stored.size == (400, 300)
        assert stored.convert("RGB").getpixel((200, 32)) == (31, 95, 159)  # the frame's colour
    assert parsed.warnings == ()


def test_an_image_inside_a_form_xobject_is_located_on_the_page() -> None:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.beginForm("logo")  # drawn at the form's origin; the form is placed by the page
    pdf.drawImage(ImageReader(io.BytesIO(png(diagram()))), 0, 0, width=100, height=50)
    pdf.endForm()
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 760, INTRO)
    pdf.translate(200, 300)
    pdf.doForm("logo")
    pdf.showPage()
    pdf.save()
    [asset] = parse_document("logo.pdf", out.getvalue(), NO_OCR).assets
    [box] = asset.locator.boxes
    assert box == pytest.approx((200, HEIGHT - 350, 300, HEIGHT - 300), abs=0.5)


def test_an_image_is_linked_to_its_caption_even_when_other_text_is_closer() -> None:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 555, INTRO)  # 5 points above the image's top edge at 550
    pdf.drawImage(ImageReader(io.BytesIO(png(diagram()))), 100, 400, width=200, height=150)
    pdf.drawString(100, 380, CAPTION)  # 20 points below its bottom edge
    pdf.drawString(72, 280, AFTER)
    pdf.showPage()
    pdf.save()
    parsed = parse_document("net.pdf", out.getvalue(), NO_OCR)
    [asset] = parsed.assets
    assert asset.caption == CAPTION
    assert parsed.sections[asset.section or 0].blocks[asset.block or 0].text == CAPTION


def test_a_jpeg_image_is_kept_as_its_own_stream() -> None:
    original = jpeg(diagram())
    [asset] = parse_document("net.pdf", build([original]), NO_OCR).assets
    assert asset.media_type == "image/jpeg"
    assert asset.data == original


def test_without_a_caption_the_image_is_captioned_by_its_heading() -> None:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 780, "Remote access")
    page_with_image(pdf, png(diagram()), (100, 400, 200, 150), caption=None)
    pdf.save()
    parsed = parse_document("net.pdf", out.getvalue(), NO_OCR)
    [asset] = parsed.assets
    assert asset.caption == "Remote access"
    assert parsed.sections[asset.section or 0].heading_path == ("Remote access",)


def test_the_same_image_on_two_pages_is_kept_once() -> None:
    image = png(diagram())
    parsed = parse_document("net.pdf", build([image, image]), NO_OCR)
    assert [asset.locator.page for asset in parsed.assets] == [1]
    assert {section.locator.page for section in parsed.sections} == {1, 2}


def test_different_images_are_all_kept_in_page_order() -> None:
    images = [png(diagram(colour=colour)) for colour in ("#aa0000", "#00aa00")]
    parsed = parse_document("net.pdf", build(images), NO_OCR)
    assert [asset.locator.page for asset in parsed.assets] == [1, 2]


def test_a_tiny_image_is_not_kept_and_not_warned_about() -> None:
    parsed = parse_document("net.pdf", build([png(diagram(size=(40, 20)))]), NO_OCR)
    assert parsed.assets == ()
    assert parsed.warnings == ()
    assert INTRO in parsed.sections[0].text


def test_an_image_over_the_pixel_limit_is_skipped_with_a_warning_before_decoding() -> None:
    limits = ParseLimits(ocr="off", max_image_pixels=100_000)
    parsed = parse_document("net.pdf", build([png(diagram(size=(400, 300)))]), limits)
    assert parsed.assets == ()
    [warning] = parsed.warnings
    assert "image 1 on page 1 skipped" in warning and "RAGSIFT_MAX_IMAGE_PIXELS" in warning


def test_a_corrupt_image_is_skipped_with_a_warning_and_the_text_still_ingests() -> None:
    garbage = b"this is not a deflate stream " * 40
    data = with_broken_image_stream(build([png(diagram())]), garbage, "/FlateDecode")
    parsed = parse_document("net.pdf", data, NO_OCR)
    assert parsed.assets == ()
    [warning] = parsed.warnings
    assert re.search(r"image 1 on page 1 skipped: image is corrupt", warning)
    text = parsed.sections[0].text
    assert INTRO in text and CAPTION in text and AFTER in text


def test_a_corrupt_jpeg_is_skipped_with_a_warning() -> None:
    broken = jpeg(diagram())[:200] + b"\x00" * 50  # a JPEG header, then nothing decodable
    data = with_broken_image_stream(build([jpeg(diagram())]), broken, "/DCTDecode")
    parsed = parse_document("net.pdf", data, NO_OCR)
    assert parsed.assets == ()
    [warning] = parsed.warnings
    assert warning.startswith("image 1 on page 1 skipped: image is corrupt")
    assert AFTER in parsed.sections[0].text


def test_more_images_than_max_assets_are_counted_in_one_warning() -> None:
    images = [png(diagram(colour=colour)) for colour in ("#aa0000", "#00aa00", "#0000aa")]
    parsed = parse_document("net.pdf", build(images), ParseLimits(ocr="off", max_assets=2))
    assert [asset.locator.page for asset in parsed.assets] == [1, 2]
    assert any("RAGSIFT_MAX_ASSETS" in warning for warning in parsed.warnings)


# --- OCR ---------------------------------------------------------------------------------


def scanned_pdf(lines: list[str]) -> bytes:
    """An image-only PDF page (what a scanner writes): text drawn by Pillow, saved as PDF."""
    placed = [(text, (120, 150 + 90 * index)) for index, text in enumerate(lines)]
    image, _ = draw_text(placed, size=(1240, 1754), font_size=48)  # A4 at 150 dpi
    out = io.BytesIO()
    image.save(out, format="PDF", resolution=150.0)
    return out.getvalue()


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def test_a_scanned_pdf_without_ocr_is_rejected_naming_the_setting() -> None:
    with pytest.raises(DocumentRejected, match=r"no extractable text.*RAGSIFT_OCR=off"):
        parse_document("scan.pdf", scanned_pdf(["Quarterly network report"]), NO_OCR)


def test_a_scanned_page_is_read_by_ocr_with_boxes_on_the_page() -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")
    parsed = parse_document("scan.pdf", scanned_pdf(["Quarterly network report", "VPN uptime"]))
    [section] = parsed.sections
    assert section.locator.page == 1
    assert "quarterlynetworkreport" in squeezed(section.text)
    assert "vpnuptime" in squeezed(section.text)
    first = section.blocks[0].locator
    assert first.page == 1 and first.boxes
    x0, y0, _, _ = first.boxes[0]
    # Drawn at pixel (120, 150) of a 150 dpi page: (57.6, 72) points from the top left.
    assert x0 == pytest.approx(57.6, abs=8) and y0 == pytest.approx(72, abs=10)
    assert parsed.assets == ()  # the scan itself is not kept as an image


def test_scanned_pages_past_the_ocr_time_limit_are_rejected_with_the_reason() -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")
    limits = ParseLimits(ocr_timeout_s=1e-9)
    with pytest.raises(DocumentRejected, match=r"OCR stopped after its time limit.*1 pages"):
        parse_document("scan.pdf", scanned_pdf(["Quarterly network report"]), limits)


def test_text_in_an_image_is_ocred_into_a_block_after_its_paragraph() -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")
    image, _ = draw_text([("VPN GATEWAY", (40, 60)), ("FIREWALL", (40, 180))], size=(600, 300),
                         font_size=56)
    parsed = parse_document("net.pdf", build([png(image)]))
    [asset] = parsed.assets
    assert "vpngateway" in squeezed(asset.ocr_text)
    assert asset.section is not None and asset.block is not None
    blocks = parsed.sections[asset.section].blocks
    ocr_block = blocks[asset.block]
    assert ocr_block.text.startswith("[Image] ") and "FIREWALL" in ocr_block.text.upper()
    assert ocr_block.locator.boxes == asset.locator.boxes
    assert blocks[asset.block - 1].text == CAPTION  # right after the image's nearest paragraph
