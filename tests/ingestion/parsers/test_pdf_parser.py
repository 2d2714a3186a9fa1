"""PDF parsing: page locators, Chinese CID text, paragraph recovery and every kind of bad PDF.

Tests that are not about OCR parse with OCR off: a page with a short text layer (under
ocr_min_chars) would otherwise be rendered and OCRed, which costs seconds and proves nothing here.
"""

from __future__ import annotations

import io
import zlib

import pytest
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfgen import canvas
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParseLimits, parse_document
from support import hostile

CJK_FONT = "STSong-Light"
pdfmetrics.registerFont(UnicodeCIDFont(CJK_FONT))

ENGLISH = (
    "The Aurora X200 needs a C wire for continuous power. Without it the display shows error "
    "E-101 and the thermostat does not connect to Wi-Fi networks at all."
)
CHINESE = (
    "密码长度至少 12 位，须包含大写字母、小写字母、数字和特殊字符中的至少三类。密码每 90 天必须"
    "更换一次，新密码不得与最近 5 次使用过的密码相同，连续输错 5 次账号锁定 30 分钟。"
)


def build_pdf(pages: list[list[tuple[str, str]]]) -> bytes:
    """A PDF with one page per list entry; each entry is (style, text) with style h or p."""
    base = getSampleStyleSheet()
    styles = {
        "h": ParagraphStyle("h", parent=base["Heading1"], fontName=CJK_FONT, fontSize=16),
        "p": ParagraphStyle(
            "p", parent=base["BodyText"], fontName=CJK_FONT, fontSize=10.5, leading=15,
            spaceBefore=8, wordWrap="CJK",
        ),
    }
    story: list[object] = []
    for index, page in enumerate(pages):
        if index:
            story.append(PageBreak())
        story.extend(Paragraph(text, styles[kind]) for kind, text in page)
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, invariant=1).build(story)
    return buffer.getvalue()


def blank_pdf() -> bytes:
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    page.rect(100, 100, 200, 200, fill=1)  # a drawing but no text, as in a scanned page
    page.showPage()
    page.save()
    return buffer.getvalue()


def encrypt(data: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


NO_OCR = ParseLimits(ocr="off")
TWO_PAGES = build_pdf([[("h", "1. Power"), ("p", ENGLISH)], [("h", "第五章 密码"), ("p", CHINESE)]])


def test_each_page_starts_a_section_with_a_page_locator_from_one() -> None:
    parsed = parse_document("manual.pdf", TWO_PAGES)
    assert parsed.media_type == "application/pdf"
    assert [s.locator for s in parsed.sections] == [Locator(page=1), Locator(page=2)]
    # The 16 pt headings are larger than the 10.5 pt body: they head their page's section.
    assert [s.heading_path for s in parsed.sections] == [("1. Power",), ("第五章 密码",)]


def test_chinese_text_in_a_cid_font_is_extracted_exactly() -> None:
    section = parse_document("policy.pdf", TWO_PAGES).sections[1]
    assert section.heading_path == ("第五章 密码",)
    assert section.text == CHINESE  # wrapped lines are joined again without spaces


def test_english_wrapped_lines_are_joined_into_their_sentence() -> None:
    text = parse_document("manual.pdf", TWO_PAGES).sections[0].text
    assert ENGLISH in text


def test_paragraphs_are_blocks_separated_by_blank_lines_under_their_heading() -> None:
    data = build_pdf(
        [[("h", "Wi-Fi setup"), ("p", ENGLISH), ("p", ENGLISH), ("h", "E-104"), ("p", CHINESE)]]
    )
    sections = parse_document("manual.pdf", data).sections
    assert [s.heading_path for s in sections] == [("Wi-Fi setup",), ("E-104",)]
    assert sections[0].text == f"{ENGLISH}\n\n{ENGLISH}"
    assert [block.text for block in sections[0].blocks] == [ENGLISH, ENGLISH]
    assert sections[1].text == CHINESE


def test_pages_without_text_are_skipped_but_keep_their_page_numbers() -> None:
    writer = PdfWriter()
    for source in (blank_pdf(), TWO_PAGES):
        writer.append(PdfReader(io.BytesIO(source)))
    buffer = io.BytesIO()
    writer.write(buffer)
    parsed = parse_document("mixed.pdf", buffer.getvalue(), NO_OCR)
    assert [s.locator.page for s in parsed.sections] == [2, 3]


def test_pdf_without_extractable_text_is_rejected_as_probably_scanned() -> None:
    with pytest.raises(
        DocumentRejected, match=r"no extractable text \(scanned PDF\?\): .*RAGSIFT_OCR=off"
    ):
        parse_document("scan.pdf", blank_pdf(), NO_OCR)


def test_truncated_pdf_is_rejected_as_corrupt() -> None:
    with pytest.raises(DocumentRejected, match="PDF is corrupt or truncated") as caught:
        parse_document("broken.pdf", TWO_PAGES[: len(TWO_PAGES) // 2])
    assert caught.value.__cause__ is not None


def test_file_without_pdf_header_is_rejected() -> None:
    with pytest.raises(DocumentRejected, match="not a PDF"):
        parse_document("fake.pdf", b"This is a text file renamed to .pdf")


def test_password_protected_pdf_is_rejected_as_encrypted() -> None:
    with pytest.raises(DocumentRejected, match="PDF is encrypted"):
        parse_document("secret.pdf", encrypt(TWO_PAGES, user_password="s3cret"))


def test_pdf_encrypted_with_empty_user_password_is_read() -> None:
    parsed = parse_document("restricted.pdf", encrypt(TWO_PAGES, user_password=""))
    assert CHINESE in parsed.sections[1].text


def test_pdf_whose_pages_all_fail_to_extract_is_rejected_as_corrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragsift.ingestion.parsers import pdf_layout

    def broken(*args: object, **kwargs: object) -> str:
        raise ValueError("bad content stream")

    monkeypatch.setattr(pdf_layout, "read_lines", broken)
    with pytest.raises(DocumentRejected, match="text extraction failed on 2 page"):
        parse_document("broken.pdf", TWO_PAGES)


def test_a_content_stream_inflating_to_a_gibibyte_is_stopped_by_pypdf_and_rejected() -> None:
    data = hostile.pdf_stream_bomb()
    assert len(data) < 2 * hostile.MIB
    with pytest.raises(
        DocumentRejected, match=r"PDF page 2 exceeds a parsing limit of pypdf \(Limit reached"
    ):
        parse_document("bomb.pdf", data)


def test_pages_each_under_pypdfs_limit_are_bounded_by_the_document_budget() -> None:
    data = hostile.pdf_pages_bomb(pages=4, mib_per_page=1)
    limits = ParseLimits(max_uncompressed_bytes=3 * hostile.MIB)
    allowed = ParseLimits(max_uncompressed_bytes=5 * hostile.MIB, ocr="off")
    assert parse_document("ok.pdf", data, allowed)
    with pytest.raises(
        DocumentRejected,
        match=r"PDF content streams decode to more than 3,145,728 bytes "
        r"\(RAGSIFT_MAX_UNCOMPRESSED_BYTES\)",
    ):
        parse_document("bomb.pdf", data, limits)


def test_a_stream_shared_by_pages_is_counted_once() -> None:
    page = b"BT /F1 12 Tf 72 720 Td (Shared page text.) Tj ET\n"
    data = hostile.pdf_with_contents([zlib.compress(page)], pages=[0, 0, 0])
    limits = ParseLimits(max_uncompressed_bytes=len(page), ocr="off")
    assert len(parse_document("shared.pdf", data, limits).sections) == 3
    with pytest.raises(DocumentRejected, match=r"RAGSIFT_MAX_UNCOMPRESSED_BYTES"):
        parse_document("shared.pdf", data, ParseLimits(max_uncompressed_bytes=len(page) - 1))


def test_more_pages_than_the_block_limit_are_rejected_before_extraction() -> None:
    data = build_pdf([[("p", ENGLISH)]] * 3)
    with pytest.raises(
        DocumentRejected,
        match=r"PDF has 3 pages, over the limit of 2 \(RAGSIFT_MAX_DOCUMENT_BLOCKS\)",
    ):
        parse_document("long.pdf", data, ParseLimits(max_document_blocks=2))
