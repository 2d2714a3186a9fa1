"""Plain-text parsing: decoding (UTF-8, BOM, GB18030), binary detection, normalisation."""

from __future__ import annotations

import random

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import parse_document

CHINESE = "年假规定：员工累计工作满 1 年不满 10 年的，年休假 5 天；满 20 年的，年休假 15 天。"


def test_utf8_text_is_one_section_without_heading_or_locator() -> None:
    parsed = parse_document("notes.txt", b"Release v2.4.1\n\nFixed E-104.")
    assert len(parsed.sections) == 1
    section = parsed.sections[0]
    assert section.heading_path == ()
    assert section.locator == Locator()
    assert section.text == "Release v2.4.1\n\nFixed E-104."


def test_utf8_bom_is_stripped() -> None:
    parsed = parse_document("bom.txt", b"\xef\xbb\xbf" + CHINESE.encode("utf-8"))
    assert parsed.sections[0].text == CHINESE


def test_gb18030_encoded_chinese_text_is_decoded() -> None:
    data = CHINESE.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    parsed = parse_document("legacy.txt", data)
    assert parsed.sections[0].text == CHINESE


def test_gbk_encoded_text_is_decoded_as_gb18030() -> None:
    parsed = parse_document("gbk.txt", "报销须在 30 天内提交。".encode("gbk"))
    assert parsed.sections[0].text == "报销须在 30 天内提交。"


def test_utf16_text_with_bom_is_decoded() -> None:
    parsed = parse_document("utf16.txt", "密码每 90 天更换一次".encode("utf-16"))
    assert parsed.sections[0].text == "密码每 90 天更换一次"


def test_binary_file_named_txt_is_rejected_as_not_text() -> None:
    png_like = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    with pytest.raises(DocumentRejected, match=r"file is not text \(binary content\)"):
        parse_document("image.txt", png_like)


def test_random_bytes_without_nul_are_rejected_as_not_text() -> None:
    noise = bytes(b for b in random.Random(7).randbytes(4096) if b != 0)
    with pytest.raises(DocumentRejected, match="file is not text"):
        parse_document("noise.txt", noise)


def test_text_made_mostly_of_control_characters_is_rejected() -> None:
    with pytest.raises(DocumentRejected, match="binary content"):
        parse_document("ctl.txt", b"\x01\x02\x03\x04abc\x05\x06\x07\x08" * 50)


def test_bom_only_file_is_rejected_as_empty() -> None:
    with pytest.raises(DocumentRejected, match="file is empty"):
        parse_document("bom-only.txt", b"\xef\xbb\xbf \n")


def test_spaces_are_collapsed_and_blank_lines_squeezed_but_full_width_punctuation_kept() -> None:
    raw = "标题：  说明\t\t文字 ，（括号）  \r\n\r\n\r\n\r\nsecond   line   \n"
    parsed = parse_document("a.txt", raw.encode())
    assert parsed.sections[0].text == "标题： 说明 文字 ，（括号）\n\nsecond line"


def test_single_line_breaks_are_kept() -> None:
    parsed = parse_document("a.txt", b"line one\nline two\n\nnext paragraph")
    assert parsed.sections[0].text == "line one\nline two\n\nnext paragraph"
