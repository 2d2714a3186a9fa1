"""DOCX parsing: Title/Heading N paths, tables, lists, Chinese text and corrupt files."""

from __future__ import annotations

import io

import pytest
from docx import Document

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from support import hostile


def build_docx() -> bytes:
    document = Document()
    document.add_paragraph("差旅费用管理制度", style="Title")
    document.add_paragraph("适用于全体员工。")
    document.add_heading("1. Air travel", level=1)
    document.add_heading("1.1 Class of travel", level=2)
    document.add_paragraph("Economy for flights under 6 hours.")
    document.add_paragraph("Business class needs VP approval.")
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [["城市", "Tier", "住宿上限"], ["上海", "1", "CNY 900"], ["成都", "2", "CNY 650"]],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("2. 报销", level=1)
    document.add_paragraph("Submit within 30 days.", style="List Bullet")
    document.add_paragraph("发票须写明公司名称。", style="List Bullet")
    document.add_paragraph("Approved claims are paid within 10 working days.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def parse(data: bytes) -> ParsedDocument:
    return parse_document("policy.docx", data)


def test_title_and_heading_styles_become_nested_heading_paths() -> None:
    paths = [section.heading_path for section in parse(build_docx()).sections]
    assert paths == [
        ("差旅费用管理制度",),
        ("差旅费用管理制度", "1. Air travel", "1.1 Class of travel"),
        ("差旅费用管理制度", "2. 报销"),
    ]


def test_paragraphs_are_blocks_and_chinese_text_survives() -> None:
    sections = parse(build_docx()).sections
    assert sections[0].text == "适用于全体员工。"
    assert sections[0].locator == Locator()
    assert sections[1].text.startswith(
        "Economy for flights under 6 hours.\n\nBusiness class needs VP approval.\n\n"
    )


def test_table_rows_are_lines_with_pipe_separated_cells() -> None:
    assert parse(build_docx()).sections[1].text.endswith(
        "城市 | Tier | 住宿上限\n上海 | 1 | CNY 900\n成都 | 2 | CNY 650"
    )


def test_merged_cells_are_written_once() -> None:
    document = Document()
    document.add_heading("Rates", level=1)
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 2))
    merged.text = "Per diem 出差补助"
    for cell, value in zip(table.rows[1].cells, ["A", "B", "C"], strict=True):
        cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    assert parse(buffer.getvalue()).sections[0].text == "Per diem 出差补助\nA | B | C"


def test_consecutive_list_paragraphs_form_one_block() -> None:
    assert parse(build_docx()).sections[2].text == (
        "- Submit within 30 days.\n- 发票须写明公司名称。\n\n"
        "Approved claims are paid within 10 working days."
    )


def test_corrupt_docx_is_rejected() -> None:
    data = build_docx()
    with pytest.raises(DocumentRejected, match="DOCX"):
        parse(data[: len(data) // 2])


def test_legacy_doc_renamed_to_docx_is_rejected() -> None:
    ole_header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512
    with pytest.raises(DocumentRejected, match="not a DOCX document"):
        parse(ole_header)


def test_zip_that_is_not_a_word_document_is_rejected() -> None:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    with pytest.raises(DocumentRejected, match="DOCX is corrupt or not a Word document"):
        parse(buffer.getvalue())


def test_document_with_only_empty_paragraphs_has_no_text() -> None:
    document = Document()
    document.add_paragraph("   ")
    document.add_heading("Lonely heading", level=1)
    buffer = io.BytesIO()
    document.save(buffer)
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse(buffer.getvalue())


def test_a_vertically_merged_cell_repeats_its_text_on_every_row_it_spans() -> None:
    document = Document()
    document.add_heading("Rates", level=1)
    table = document.add_table(rows=3, cols=2)
    table.cell(0, 0).merge(table.cell(2, 0)).text = "Tier 1"
    for row, value in zip(table.rows, ["上海", "北京", "深圳"], strict=True):
        row.cells[1].text = value
    buffer = io.BytesIO()
    document.save(buffer)
    assert parse(buffer.getvalue()).sections[0].text == (
        "Tier 1 | 上海\nTier 1 | 北京\nTier 1 | 深圳"
    )


def test_a_tall_table_merged_down_its_whole_height_keeps_every_row() -> None:
    text = parse(hostile.merged_table_docx(rows=3_000, columns=3)).sections[0].text
    lines = text.split("\n")
    assert len(lines) == 3_000
    assert set(lines) == {"Group | c1 | c2"}


def test_a_paragraph_whose_style_id_is_unknown_is_body_text() -> None:
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Known</w:t></w:r></w:p>'
        '<w:p><w:pPr><w:pStyle w:val="NoSuchStyle"/></w:pPr><w:r><w:t>Body</w:t></w:r></w:p>'
    )
    sections = parse(hostile.docx_body(body)).sections
    assert [(section.heading_path, section.text) for section in sections] == [(("Known",), "Body")]


def test_paragraphs_and_table_rows_are_counted_against_the_block_limit() -> None:
    rows = "<w:tr><w:tc/></w:tr>" * 3  # cells without paragraphs: only the walk sees rows
    data = hostile.docx_body(f"<w:p><w:r><w:t>Intro</w:t></w:r></w:p><w:tbl>{rows}</w:tbl>")
    assert parse_document("rows.docx", data, ParseLimits(max_document_blocks=4)).sections
    with pytest.raises(
        DocumentRejected,
        match=r"more than 3 paragraphs and table rows \(RAGSIFT_MAX_DOCUMENT_BLOCKS\)",
    ):
        parse_document("rows.docx", data, ParseLimits(max_document_blocks=3))
