"""Hostile files built in memory in well under a second each: ZIP and PDF bombs, entity
expansion, deep nesting, element floods.

Repeated data is deflated once per distinct piece: after a full flush zlib starts afresh, so a
repeated piece compresses to the same bytes every time and a 1 GiB member is a 1 KB block
written 1,024 times. ZIP files are written by hand, so a member can declare any size and CRC.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from docx import Document

GIB = 1024 * 1024 * 1024
MIB = 1024 * 1024
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


@dataclass(frozen=True)
class Member:
    """One ZIP member as written: compressed bytes and what the directory declares."""

    name: str
    compressed: bytes
    crc: int
    file_size: int
    method: int = zipfile.ZIP_DEFLATED


def deflated(name: str, pieces: Sequence[tuple[bytes, int]], level: int = 6) -> Member:
    """A deflated member holding each (chunk, times) piece in turn, declared truthfully."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)
    out: list[bytes] = []
    crc = size = 0
    for chunk, times in pieces:
        block = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
        out.append(block * times)
        for _ in range(times):
            crc = zlib.crc32(chunk, crc)
        size += len(chunk) * times
    out.append(compressor.flush())
    return Member(name, b"".join(out), crc, size)


def stored(name: str, data: bytes) -> Member:
    return Member(name, data, zlib.crc32(data), len(data), zipfile.ZIP_STORED)


def raw_zip(members: Sequence[Member]) -> bytes:
    """A ZIP archive of the members exactly as given (no ZIP64: members under 4 GiB)."""
    out = io.BytesIO()
    directory: list[bytes] = []
    for member in members:
        name = member.name.encode()
        offset = out.tell()
        sizes = (member.crc, len(member.compressed), member.file_size)
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, member.method, 0, 0x21, *sizes,
                              len(name), 0))
        out.write(name + member.compressed)
        directory.append(
            struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, member.method, 0, 0x21,
                        *sizes, len(name), 0, 0, 0, 0, 0, offset) + name
        )
    start = out.tell()
    out.write(b"".join(directory))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                          out.tell() - start, start, 0))
    return out.getvalue()


def docx_members(body: str = "<w:p><w:r><w:t>Hello</w:t></w:r></w:p>") -> list[Member]:
    """The members of python-docx's blank document, word/document.xml holding `body`."""
    buffer = io.BytesIO()
    Document().save(buffer)
    members = []
    with zipfile.ZipFile(buffer) as archive:
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename == "word/document.xml":
                data = document_xml(body)
            members.append(deflated(info.filename, [(data, 1)]))
    return members


def document_xml(body: str, prologue: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prologue}'
        f'<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>'
    ).encode()


def docx_replacing(name: str, member: Member, extra: Sequence[Member] = ()) -> bytes:
    """The blank document with member `name` replaced, plus `extra` members."""
    members = [member if old.name == name else old for old in docx_members()]
    return raw_zip([*members, *extra])


def inflating_document_xml(size: int = GIB) -> Member:
    """word/document.xml of `size` bytes, nearly all of it whitespace inside one paragraph."""
    head, tail = document_xml("<w:p><w:r><w:t>x</w:t></w:r>\u0000</w:p>").split("\u0000".encode())
    filler = b" " * MIB
    return deflated(
        "word/document.xml",
        [(head, 1), (filler, (size - len(head) - len(tail)) // MIB), (tail, 1)],
    )


# --- DOCX -----------------------------------------------------------------------------------


def zip_bomb_docx() -> bytes:
    """About 1 MB on disk, word/document.xml inflating to 1 GiB."""
    return docx_replacing("word/document.xml", inflating_document_xml(GIB))


def ratio_bomb_docx() -> bytes:
    """A 64 MiB media member (under the total limit) compressed about 1,000:1."""
    filler = deflated("word/media/filler.bin", [(bytes(MIB), 64)])
    return raw_zip([*docx_members(), filler])


def many_members_docx(count: int = 10_001) -> bytes:
    return raw_zip(
        [*docx_members(), *(stored(f"customXml/item{i}.bin", b"x") for i in range(count))]
    )


def lying_size_docx() -> bytes:
    """word/document.xml declares 2 KiB but inflates to 1 GiB (the CRC is of all of it)."""
    honest = inflating_document_xml(GIB)
    liar = Member(honest.name, honest.compressed, honest.crc, 2048)
    return docx_replacing("word/document.xml", liar)


def billion_laughs_docx() -> bytes:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol;" if i == 1 else f"&lol{i - 1};") * 10}">' for i in range(1, 10)
    )
    xml = document_xml(
        "<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>", f"<!DOCTYPE w:document [{entities}]>"
    )
    return docx_replacing("word/document.xml", deflated("word/document.xml", [(xml, 1)]))


def deep_docx(levels: int = 60) -> bytes:
    """Tables nested `levels` deep: three elements (tbl, tr, tc) per level."""
    body = "<w:tbl><w:tr><w:tc>" * levels + "<w:p/>" + "</w:tc></w:tr></w:tbl>" * levels
    return docx_body(body + "<w:p><w:r><w:t>After the table.</w:t></w:r></w:p>")


def _rsids(count: int) -> list[str]:
    """Revision ids as Word writes them on paragraphs and runs, so the XML compresses about as
    well as Word's own (a few to 20:1), not 1,000:1 like repeated identical markup."""
    pool = [f"{value:08X}" for value in random.Random(7).sample(range(1 << 32), 4096)]
    return random.Random(count).choices(pool, k=count)


def many_paragraphs_docx(count: int = 200_001) -> bytes:
    return docx_body(
        "".join(f'<w:p w:rsidR="{rsid}"><w:r><w:t>p</w:t></w:r></w:p>' for rsid in _rsids(count))
    )


def many_elements_docx(count: int = 2_000_001) -> bytes:
    """One paragraph of `count` empty runs: few paragraphs, many elements."""
    runs = "".join(f'<w:r w:rsidR="{rsid}"/>' for rsid in _rsids(count))
    return docx_body(f"<w:p>{runs}</w:p>")


def long_text_docx(chars: int = 20_000_001) -> bytes:
    """One paragraph of `chars` characters of hexadecimal noise (compresses about 2:1)."""
    text = random.Random(chars).randbytes(chars // 2 + 1).hex()[:chars]
    return docx_body(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")


def merged_table_docx(rows: int = 3_000, columns: int = 4) -> bytes:
    """A table whose first column is one cell merged down every row (vMerge)."""
    def cell(text: str, merge: str = "") -> str:
        paragraph = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" if text else "<w:p/>"
        return f"<w:tc><w:tcPr>{merge}</w:tcPr>{paragraph}</w:tc>"

    first = cell("Group", '<w:vMerge w:val="restart"/>')
    below = cell("", "<w:vMerge/>")
    cells = "".join(cell(f"c{column}") for column in range(1, columns))
    grid = "<w:tblGrid>" + "<w:gridCol/>" * columns + "</w:tblGrid>"
    body_rows = [f"<w:tr>{first}{cells}</w:tr>"] + [f"<w:tr>{below}{cells}</w:tr>"] * (rows - 1)
    return docx_body(f"<w:tbl>{grid}{''.join(body_rows)}</w:tbl>")


def docx_body(body: str) -> bytes:
    xml = document_xml(body)
    return docx_replacing("word/document.xml", deflated("word/document.xml", [(xml, 1)]))


# --- HTML -----------------------------------------------------------------------------------


def html_nesting_bomb(depth: int = 1_000_000) -> bytes:
    """Unclosed <div>s: 5 MB that html.parser nests `depth` deep."""
    return b"<html><body>" + b"<div>" * depth + b"deep</body></html>"


# --- PDF ------------------------------------------------------------------------------------


def pdf_with_contents(streams: Sequence[bytes], pages: Sequence[int] | None = None) -> bytes:
    """A PDF of FlateDecode content streams (already compressed), Helvetica; page i shows
    stream pages[i] (default: one page per stream), so pages can share a stream."""
    shown = list(range(len(streams))) if pages is None else list(pages)
    first_page, first_stream = 4, 4 + len(shown)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(f"{first_page + i} 0 R".encode() for i in range(len(shown)))
        + f"] /Count {len(shown)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index in shown:
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
            f"<< /F1 3 0 R >> >> /Contents {first_stream + index} 0 R >>".encode()
        )
    for data in streams:
        objects.append(
            f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode()
            + data + b"\nendstream"
        )
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write(b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets))
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def zlib_repeated(chunk: bytes, times: int) -> bytes:
    """zlib data (as PDF's FlateDecode wants) of `chunk` repeated `times` times."""
    member = deflated("", [(chunk, times)])
    adler = 1
    for _ in range(times):
        adler = zlib.adler32(chunk, adler)
    return b"\x78\xda" + member.compressed + struct.pack(">I", adler)


def text_page() -> bytes:
    return zlib.compress(b"BT /F1 12 Tf 72 720 Td (A normal page of text.) Tj ET\n")


def pdf_stream_bomb() -> bytes:
    """One page whose content stream inflates to 1 GiB of zeros (about 1 MB on disk)."""
    return pdf_with_contents([text_page(), zlib_repeated(bytes(MIB), 1024)])


def pdf_pages_bomb(pages: int = 10, mib_per_page: int = 70) -> bytes:
    """Pages each under pypdf's 75 MB stream limit, together far over any document budget."""
    return pdf_with_contents([text_page()] + [zlib_repeated(bytes(MIB), mib_per_page)] * pages)
