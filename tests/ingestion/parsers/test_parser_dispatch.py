"""parse_document / media_type_for: dispatch by extension and the rejections shared by formats."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS, media_type_for, parse_document


def test_supported_extensions_cover_every_format() -> None:
    assert {".txt", ".md", ".markdown", ".html", ".htm", ".pdf", ".docx", ".xlsx", ".csv",
            ".json", ".jsonl", ".pptx", ".png", ".jpg", ".jpeg", ".webp", ".tif",
            ".tiff"} == SUPPORTED_EXTENSIONS


@pytest.mark.parametrize(
    ("filename", "media_type"),
    [
        ("notes.txt", "text/plain"),
        ("README.md", "text/markdown"),
        ("guide.markdown", "text/markdown"),
        ("faq.html", "text/html"),
        ("faq.htm", "text/html"),
        ("manual.pdf", "application/pdf"),
        (
            "policy.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
    ],
)
def test_media_type_follows_the_extension(filename: str, media_type: str) -> None:
    assert media_type_for(filename) == media_type


def test_extension_match_ignores_case_and_directories() -> None:
    assert media_type_for("Reports/2024/Q1.PDF") == "application/pdf"
    assert media_type_for(r"C:\Users\li\员工手册.MD") == "text/markdown"


@pytest.mark.parametrize("filename", ["setup.exe", "data.xyz", "archive.tar.gz"])
def test_unsupported_extension_is_rejected_naming_it_and_the_supported_ones(filename: str) -> None:
    with pytest.raises(DocumentRejected) as caught:
        media_type_for(filename)
    message = str(caught.value)
    assert filename.rsplit(".", 1)[1] in message
    assert ".pdf" in message and ".docx" in message and ".md" in message


def test_parse_document_rejects_unsupported_extension_before_reading_content() -> None:
    with pytest.raises(DocumentRejected, match=r"unsupported file type '\.exe'"):
        parse_document("installer.exe", b"MZ\x90\x00")


def test_file_without_extension_is_rejected() -> None:
    with pytest.raises(DocumentRejected, match="no extension"):
        media_type_for("Makefile")


@pytest.mark.parametrize("filename", ["a.txt", "a.md", "a.html", "a.pdf", "a.docx"])
@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n "])
def test_empty_or_blank_file_is_rejected_as_empty(filename: str, data: bytes) -> None:
    with pytest.raises(DocumentRejected, match="file is empty"):
        parse_document(filename, data)


def test_dispatch_returns_the_parsed_sections_with_the_media_type() -> None:
    parsed = parse_document("Notes.TXT", "第一段。\n\nSecond paragraph.".encode())
    assert parsed.media_type == "text/plain"
    assert [section.text for section in parsed.sections] == ["第一段。\n\nSecond paragraph."]


def test_markup_without_any_text_is_rejected_as_having_no_text() -> None:
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse_document("blank.html", b"<html><body><script>x()</script></body></html>")


def test_unexpected_library_error_becomes_a_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsift.ingestion import parsers

    def explode(data: bytes, limits: parsers.ParseLimits) -> parsers.ParsedDocument:
        raise RuntimeError("boom")

    monkeypatch.setitem(parsers._FORMATS, ".txt", ("text/plain", explode))
    with pytest.raises(DocumentRejected, match="could not parse the file as text/plain") as caught:
        parse_document("a.txt", b"hello")
    assert isinstance(caught.value.__cause__, RuntimeError)
