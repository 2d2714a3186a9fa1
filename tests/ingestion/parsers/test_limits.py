"""ParseLimits: defaults that match Settings, the ZIP directory check, and the text budget that
every parser's extracted text is counted against."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from collections.abc import Callable

import pytest
from docx import Document
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from ragsift.config import Settings
from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ParseLimits, parse_document
from ragsift.ingestion.parsers.limits import TextBudget, check_zip_container
from support.hostile import GIB, MIB, Member, deflated, raw_zip


def test_settings_defaults_are_the_parse_limits_defaults() -> None:
    assert ParseLimits.from_settings(Settings()) == ParseLimits()


# numeric limits; `ocr` (auto/off) is a switch, tested on its own
NUMERIC = [field.name for field in dataclasses.fields(ParseLimits) if field.name != "ocr"]


def test_every_limit_but_the_ratio_grace_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [name for name in NUMERIC if name != "ratio_grace_bytes"]
    for number, name in enumerate(names, start=60):  # 60+: over the render dpi's minimum
        monkeypatch.setenv(f"RAGSIFT_{name.upper()}", str(number))
    monkeypatch.setenv("RAGSIFT_OCR", "off")
    limits = ParseLimits.from_settings(Settings())
    assert [getattr(limits, name) for name in names] == list(range(60, len(names) + 60))
    assert limits.ocr == "off"


def test_ocr_is_auto_or_off() -> None:
    with pytest.raises(ValueError, match="ocr"):
        ParseLimits(ocr="on")


@pytest.mark.parametrize("field", NUMERIC)
def test_a_limit_that_is_not_positive_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ParseLimits(**{field: 0})


def test_declared_sizes_are_checked_without_inflating_anything() -> None:
    # The data is not deflate at all: inflating it would fail with a zlib error instead.
    liar = Member("word/document.xml", b"not deflate data", crc=0, file_size=GIB)
    with zipfile.ZipFile(io.BytesIO(raw_zip([liar]))) as archive, pytest.raises(
        DocumentRejected,
        match=r"DOCX would inflate to 1,073,741,824 bytes, over the limit of 209,715,200 "
        r"\(RAGSIFT_MAX_UNCOMPRESSED_BYTES\)",
    ):
        check_zip_container(archive, ParseLimits(), "DOCX")


def test_a_well_compressed_small_member_is_not_a_ratio_bomb() -> None:
    small = deflated("word/styles.xml", [(b"<w:style/>" * 50_000, 1)])  # 500 KB
    assert small.file_size / len(small.compressed) > 100
    with zipfile.ZipFile(io.BytesIO(raw_zip([small]))) as archive:
        check_zip_container(archive, ParseLimits(), "DOCX")


def test_the_ratio_is_checked_once_a_member_is_over_the_grace_size() -> None:
    member = deflated("word/media/blob.bin", [(bytes(2 * MIB), 1)])
    with zipfile.ZipFile(io.BytesIO(raw_zip([member]))) as archive, pytest.raises(
        DocumentRejected, match=r"'word/media/blob.bin' is compressed [\d,]+:1 .* over the limit "
        r"of 100:1 \(RAGSIFT_MAX_COMPRESSION_RATIO\)",
    ):
        check_zip_container(archive, ParseLimits(), "DOCX")


def test_the_text_budget_rejects_the_first_character_over_the_limit() -> None:
    budget = TextBudget(ParseLimits(max_document_chars=10))
    budget.add_chars(10)
    with pytest.raises(DocumentRejected, match=r"exceeds 10 characters"):
        budget.add_chars(1)


def test_the_block_budget_names_what_it_counts() -> None:
    budget = TextBudget(ParseLimits(max_document_blocks=1))
    budget.add_block("pages")
    with pytest.raises(DocumentRejected, match=r"than 1 pages \(RAGSIFT_MAX_DOCUMENT_BLOCKS\)"):
        budget.add_block("pages")


def _docx(text: str) -> bytes:
    document = Document()
    document.add_heading("Heading", level=1)
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pdf(text: str) -> bytes:
    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=A4)
    page.drawString(72, 720, text)
    page.showPage()
    page.save()
    return buffer.getvalue()


FORMATS: dict[str, Callable[[str], bytes]] = {
    "a.txt": str.encode,
    "a.md": lambda text: f"# Heading\n\n{text}\n".encode(),
    "a.html": lambda text: f"<h1>Heading</h1><p>{text}</p>".encode(),
    "a.docx": _docx,
    "a.pdf": _pdf,
}


@pytest.mark.parametrize("filename", FORMATS)
def test_every_format_counts_its_extracted_text_against_the_character_limit(
    filename: str,
) -> None:
    data = FORMATS[filename]("x" * 200)
    assert parse_document(filename, data, ParseLimits(max_document_chars=300)).sections
    with pytest.raises(DocumentRejected, match=r"RAGSIFT_MAX_DOCUMENT_CHARS"):
        parse_document(filename, data, ParseLimits(max_document_chars=150))


def test_parse_document_applies_the_default_limits_when_given_none() -> None:
    text = b"x" * (ParseLimits().max_document_chars + 1)
    with pytest.raises(DocumentRejected, match=r"exceeds 20,000,000 characters"):
        parse_document("big.txt", text)
