"""The DOCX package check: ZIP bombs, lying members, entity expansion, deep nesting and element
floods end in DocumentRejected naming the limit, before python-docx reads the package."""

from __future__ import annotations

import io
import zipfile

import pytest
from docx import Document

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ParseLimits, parse_document
from support import hostile
from support.hostile import Member, deflated, raw_zip


def parse(data: bytes, limits: ParseLimits | None = None) -> None:
    parse_document("hostile.docx", data, limits)


def test_a_member_inflating_to_a_gibibyte_is_rejected_from_the_directory() -> None:
    data = hostile.zip_bomb_docx()
    assert len(data) < 2 * hostile.MIB
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX would inflate to 1,07\d,\d{3},\d{3} bytes, over the limit of 209,715,200 "
        r"\(RAGSIFT_MAX_UNCOMPRESSED_BYTES\)",
    ):
        parse(data)


def test_a_member_compressed_a_thousand_to_one_is_rejected() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"member 'word/media/filler.bin' is compressed 1,0\d\d:1 \(67,108,864 bytes from "
        r"[\d,]+\), over the limit of 100:1 \(RAGSIFT_MAX_COMPRESSION_RATIO\)",
    ):
        parse(hostile.ratio_bomb_docx())


def test_a_package_of_too_many_members_is_rejected() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX has 10,0\d\d members, over the limit of 10,000 "
        r"\(RAGSIFT_MAX_CONTAINER_MEMBERS\)",
    ):
        parse(hostile.many_members_docx())


def test_a_member_inflating_past_its_declared_size_is_rejected_naming_it() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"member 'word/document.xml' does not match its declared size or checksum",
    ):
        parse(hostile.lying_size_docx())


def test_a_member_cut_short_of_its_declared_size_is_rejected_naming_it() -> None:
    honest = deflated("word/document.xml", [(hostile.document_xml("<w:p/>"), 1)])
    liar = Member(honest.name, honest.compressed, honest.crc, honest.file_size + 100)
    with pytest.raises(DocumentRejected, match=r"member 'word/document.xml' does not match"):
        parse(hostile.docx_replacing("word/document.xml", liar))


def test_entity_expansion_is_refused_at_the_dtd() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX part 'word/document.xml' declares a DTD \(<!DOCTYPE w:document>\)",
    ):
        parse(hostile.billion_laughs_docx())


def test_a_dtd_in_a_relationships_part_is_refused_too() -> None:
    rels = (
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "y">]>'
        b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>'
    )
    data = hostile.docx_replacing("_rels/.rels", deflated("_rels/.rels", [(rels, 1)]))
    with pytest.raises(DocumentRejected, match=r"part '_rels/.rels' declares a DTD"):
        parse(data)


def test_xml_nested_deeper_than_the_limit_is_rejected() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"part 'word/document.xml' nests XML elements more than 128 deep "
        r"\(RAGSIFT_MAX_XML_DEPTH\)",
    ):
        parse(hostile.deep_docx(levels=60))  # 180 deep: under libxml2's own 256


def test_xml_nested_within_the_limit_parses() -> None:
    parsed = parse_document("nested.docx", hostile.deep_docx(levels=40))  # 120 deep
    assert parsed.sections[0].text == "After the table."


def test_more_paragraphs_than_the_limit_are_rejected_before_python_docx_runs() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX has more than 200,000 paragraphs \(RAGSIFT_MAX_DOCUMENT_BLOCKS\)",
    ):
        parse(hostile.many_paragraphs_docx(200_001))


def test_more_xml_elements_than_the_limit_are_rejected() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX has more than 50,000 XML elements \(RAGSIFT_MAX_XML_ELEMENTS\)",
    ):
        parse(hostile.many_elements_docx(50_000), ParseLimits(max_xml_elements=50_000))


def test_more_text_than_the_character_limit_is_rejected_while_scanning() -> None:
    with pytest.raises(
        DocumentRejected,
        match=r"DOCX holds more than 20,000,000 characters of text \(RAGSIFT_MAX_DOCUMENT_CHARS\)",
    ):
        parse(hostile.long_text_docx(20_000_001))


def test_an_svg_image_with_a_doctype_is_not_parsed_as_a_package_part() -> None:
    svg = (
        b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
        b'"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"><svg/>'
    )
    members = hostile.docx_members("<w:p><w:r><w:t>Logo below</w:t></w:r></w:p>")
    types = next(member for member in members if member.name == "[Content_Types].xml")
    with zipfile.ZipFile(io.BytesIO(raw_zip([types]))) as archive:
        xml = archive.read(types.name).replace(
            b"</Types>", b'<Default Extension="svg" ContentType="image/svg+xml"/></Types>'
        )
    members = [deflated(types.name, [(xml, 1)]) if m is types else m for m in members]
    data = raw_zip([*members, deflated("word/media/logo.svg", [(svg, 1)])])
    assert parse_document("logo.docx", data).sections[0].text == "Logo below"


def test_an_encrypted_member_is_rejected_naming_it() -> None:
    buffer = io.BytesIO()
    Document().save(buffer)
    data = bytearray(buffer.getvalue())
    # Set the "encrypted" flag of the first central directory entry.
    entry = data.index(b"PK\x01\x02")
    data[entry + 8] |= 0x01
    with pytest.raises(DocumentRejected, match=r"member '\[Content_Types\].xml' is encrypted"):
        parse(bytes(data))


def test_a_package_without_content_types_is_not_a_word_document() -> None:
    data = raw_zip([deflated("word/document.xml", [(hostile.document_xml("<w:p/>"), 1)])])
    with pytest.raises(DocumentRejected, match=r"not a Word document \(no \[Content_Types\]"):
        parse(data)


def test_a_normal_document_passes_the_package_check_unchanged() -> None:
    document = Document()
    document.add_heading("Travel", level=1)
    document.add_paragraph("Economy for flights under 6 hours.")
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = parse_document("policy.docx", buffer.getvalue())
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Travel",), "Economy for flights under 6 hours.")
    ]
