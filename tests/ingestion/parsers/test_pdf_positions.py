"""PDF text positions: each paragraph block carries the boxes of its lines, top-left origin."""

from __future__ import annotations

import io
import itertools

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import RectangleObject
from reportlab.lib.pagesizes import A4
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen import canvas

from ragsift.domain.models import Box
from ragsift.ingestion.parsers import ParseLimits, parse_document

WIDTH, HEIGHT = A4  # 595.3 x 841.9 points
NO_OCR = ParseLimits(ocr="off")  # short test pages would otherwise be OCRed as scans
FIRST = "Positions are measured in points from the top left corner."
SECOND = "A second paragraph lower down the page."


def drawn(lines: list[tuple[float, float, str]], size: float = 12) -> bytes:
    """One A4 page with each (x, baseline y in PDF space, text) drawn in Helvetica."""
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", size)
    for x, y, text in lines:
        pdf.drawString(x, y, text)
    pdf.showPage()
    pdf.save()
    return out.getvalue()


def modified(data: bytes, rotate: int = 0, cropbox: tuple[float, ...] | None = None) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    page = writer.pages[0]
    if rotate:
        page.rotate(rotate)
    if cropbox is not None:
        page.cropbox = RectangleObject(cropbox)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def boxes_of(data: bytes) -> list[tuple[str, tuple[Box, ...]]]:
    parsed = parse_document("page.pdf", data, NO_OCR)
    return [
        (block.text, block.locator.boxes) for section in parsed.sections for block in section.blocks
    ]


def close(actual: Box, expected: Box, tolerance: float = 2.0) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


def test_a_line_box_is_where_the_text_was_drawn_with_y_measured_from_the_top() -> None:
    [(text, boxes)] = boxes_of(drawn([(72, 720, FIRST)]))
    assert text == FIRST
    [box] = boxes
    baseline = HEIGHT - 720  # 121.9 points below the top edge
    cap_height = 0.718 * 12  # Helvetica's capitals rise 718/1000 of the font size
    right = 72 + stringWidth(FIRST, "Helvetica", 12)
    assert close(box, (72, baseline - cap_height, right, baseline + 0.21 * 12), tolerance=2.5)
    assert box[1] < baseline < box[3]


def test_lines_lower_on_the_page_have_larger_y() -> None:
    data = drawn([(72, 720, FIRST), (72, 600, SECOND)])
    [(_, [upper]), (_, [lower])] = boxes_of(data)
    assert lower[1] - upper[1] == pytest.approx(120, abs=1.5)
    assert lower[0] == pytest.approx(72, abs=1.5)


def test_a_wrapped_paragraph_is_one_block_with_a_box_per_line() -> None:
    texts = ["Each line of", "this paragraph keeps", "its own box", "for highlighting"]
    lines = [(72.0, 720.0 - 14 * i, text) for i, text in enumerate(texts)]
    lines.append((72, 600, SECOND))
    blocks = boxes_of(drawn(lines))
    assert [len(boxes) for _, boxes in blocks] == [4, 1]
    tops = [box[1] for box in blocks[0][1]]
    assert tops == sorted(tops)
    assert [round(b - a) for a, b in itertools.pairwise(tops)] == [14, 14, 14]


def test_a_rotated_page_reports_boxes_on_the_page_as_displayed() -> None:
    data = drawn([(72, 720, FIRST)])
    [(_, [upright])] = boxes_of(data)
    [(_, [turned])] = boxes_of(modified(data, rotate=90))
    # Turned 90 degrees clockwise: the page is 841.9 wide, the text runs down its right side.
    x0, y0, x1, y1 = upright
    assert close(turned, (HEIGHT - y1, x0, HEIGHT - y0, x1), tolerance=0.5)
    [(_, [upside_down])] = boxes_of(modified(data, rotate=180))
    assert close(upside_down, (WIDTH - x1, HEIGHT - y1, WIDTH - x0, HEIGHT - y0), tolerance=0.5)


def test_a_cropbox_moves_the_origin_to_its_top_left_corner() -> None:
    data = drawn([(72, 720, FIRST)])
    [(_, [full])] = boxes_of(data)
    [(_, [cropped])] = boxes_of(modified(data, cropbox=(50, 40, 560, 800)))
    shift_down = HEIGHT - 800  # the crop box's top is 41.9 points below the media box's
    assert close(
        cropped, (full[0] - 50, full[1] - shift_down, full[2] - 50, full[3] - shift_down), 0.5
    )


def test_a_table_row_keeps_its_cells_apart_and_its_line_break() -> None:
    rows = [("Terminal", "Function"), ("R", "24 VAC power"), ("C", "24 VAC common")]
    lines = [(72.0, 720.0 - 16 * i, cell) for i, (cell, _) in enumerate(rows)]
    lines += [(300.0, 720.0 - 16 * i, cell) for i, (_, cell) in enumerate(rows)]
    lines.sort(key=lambda line: (-line[1], line[0]))  # drawn row by row
    [(text, boxes)] = boxes_of(drawn(lines, size=10))
    assert text == "Terminal | Function\nR | 24 VAC power\nC | 24 VAC common"
    assert len(boxes) == 3 and all(box[2] > 300 for box in boxes)  # a row's box spans its cells


def test_text_in_a_scaled_coordinate_system_gets_its_rendered_box() -> None:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, invariant=1)
    pdf.translate(72, 600)
    pdf.scale(2, 2)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(0, 0, "Twice the size")
    pdf.showPage()
    pdf.save()
    [(_, [box])] = boxes_of(out.getvalue())
    right = 72 + 2 * stringWidth("Twice the size", "Helvetica", 10)
    assert close(box, (72, HEIGHT - 600 - 2 * 7.18, right, HEIGHT - 600), tolerance=2.5)
