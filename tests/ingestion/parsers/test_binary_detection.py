"""Binary detection of the text formats: stray controls in real text pass, binary files do not."""

from __future__ import annotations

import struct
import zlib

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import parse_document
from ragsift.ingestion.parsers.decoding import decode_text

# A kuake-qtr title as it is in the corpus: the \x1a at its end made it "binary content".
KUAKE_TITLE = "宝宝拉肚子能吃苹果泥吗\x1a"


def _png() -> bytes:
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + header
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(header)) + chunk
            + struct.pack(">I", zlib.crc32(chunk)) + zlib.compress(b"\x00\x00"))


def _zip() -> bytes:
    name = b"notes.txt"
    body = "年假规定".encode()
    return (b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", 20, 0, 0, 0, 0, zlib.crc32(body),
                                        len(body), len(body), len(name), 0) + name + body)


def _elf() -> bytes:
    return b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + struct.pack("<HHI", 2, 62, 1) + b"ld.so" * 20


def test_the_kuake_title_with_a_sub_character_is_text_and_its_chunk_text_drops_it() -> None:
    assert decode_text(KUAKE_TITLE.encode()) == KUAKE_TITLE
    parsed = parse_document("title.txt", KUAKE_TITLE.encode())
    assert parsed.sections[0].text == KUAKE_TITLE.rstrip("\x1a")


def test_the_kuake_title_in_gb18030_is_text_too() -> None:
    assert decode_text(KUAKE_TITLE.encode("gb18030")) == KUAKE_TITLE


@pytest.mark.parametrize("control", ["\x01", "\x08", "\x1b", "\x1f", "\x7f"])
def test_a_short_line_with_one_stray_control_is_text(control: str) -> None:
    line = f"报销须在 30 天内提交{control}"
    assert decode_text(line.encode()) == line


def test_a_log_with_escape_sequences_and_a_few_backspaces_is_text() -> None:
    log = "".join(f"\x1b[32mINFO\x1b[0m job {i} done\n" for i in range(200)) + "x\x08y\x08z\n"
    assert decode_text(log.encode()) == log


def test_four_stray_controls_are_allowed_in_a_short_text_and_five_are_not() -> None:
    assert decode_text(b"ab\x01\x02\x03\x04") == "ab\x01\x02\x03\x04"
    with pytest.raises(DocumentRejected, match=r"binary content"):
        decode_text(b"ab\x01\x02\x03\x04\x05")


def test_beyond_the_allowance_the_share_of_stray_controls_decides() -> None:
    text = "年" * 1000
    assert decode_text((text + "\x02" * 49).encode())  # 4.7 % of the characters
    with pytest.raises(DocumentRejected, match=r"binary content"):
        decode_text((text + "\x02" * 60).encode())  # 5.7 %


def test_mojibake_with_c1_controls_is_still_text() -> None:
    mojibake = "don’t stop".encode().decode("latin-1")  # holds U+0080-U+009F characters
    assert any("\x80" <= c <= "\x9f" for c in mojibake)
    assert decode_text(mojibake.encode()) == mojibake


def test_utf16_text_with_a_bom_and_a_sub_character_is_text() -> None:
    parsed = parse_document("utf16.txt", (KUAKE_TITLE + "\n第二行").encode("utf-16"))
    assert parsed.sections[0].text == KUAKE_TITLE.rstrip("\x1a") + "\n第二行"


def test_utf16_without_a_bom_is_refused_for_its_nul_bytes() -> None:
    with pytest.raises(DocumentRejected, match=r"binary content"):
        decode_text("plain ascii".encode("utf-16-le"))


@pytest.mark.parametrize("data", [_png(), _zip(), _elf()], ids=["png", "zip", "elf"])
def test_png_zip_and_elf_files_named_txt_are_refused(data: bytes) -> None:
    with pytest.raises(DocumentRejected, match=r"file is not text \(binary content\)"):
        parse_document("data.txt", data)


@pytest.mark.parametrize("data", [_png(), _zip(), _elf()], ids=["png", "zip", "elf"])
def test_binary_headers_without_their_nul_bytes_are_still_refused(data: bytes) -> None:
    with pytest.raises(DocumentRejected, match="file is not text"):
        decode_text(data.replace(b"\x00", b"\x01"))
