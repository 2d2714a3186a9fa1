"""CSV parsing: encodings, sniffed delimiters, one table section located by A1 ranges, limits."""

from __future__ import annotations

import csv
import io

import pytest

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from ragsift.ingestion.parsers.csvfile import MEDIA_TYPE, parse_csv, sniff_delimiter

ROWS = [
    ["城市", "住宿上限", "备注"],
    ["上海", "900", "含税"],
    ["成都", "650", "合住按一间报销"],
]


def csv_bytes(rows: list[list[str]], delimiter: str = ",", encoding: str = "utf-8") -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode(encoding)


def parse(data: bytes, limits: ParseLimits | None = None) -> ParsedDocument:
    return parse_document("limits.csv", data, limits)


def block_texts(parsed: ParsedDocument) -> list[str]:
    return [block.text for block in parsed.sections[0].blocks]


def test_a_csv_is_one_table_section_with_its_header_repeated() -> None:
    parsed = parse(csv_bytes(ROWS))
    assert parsed.media_type == MEDIA_TYPE
    [section] = parsed.sections
    assert section.heading_path == ()
    assert section.header == "| 城市 | 住宿上限 | 备注 |\n| --- | --- | --- |"
    assert block_texts(parsed) == ["| 上海 | 900 | 含税 |", "| 成都 | 650 | 合住按一间报销 |"]
    assert section.locator == Locator(cell_range="A1:C3")
    assert [block.locator for block in section.blocks] == [
        Locator(cell_range="A2:C2"), Locator(cell_range="A3:C3"),
    ]


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed(delimiter: str) -> None:
    rows = [["name", "price", "note"], ["Pen", "2,50", "blue; black"], ["Ink", "7", "a|b"]]
    data = csv_bytes(rows, delimiter=delimiter)
    assert sniff_delimiter(data.decode()) == delimiter
    texts = block_texts(parse(data))
    assert texts[0] == "| Pen | 2,50 | blue; black |"
    assert texts[1] == "| Ink | 7 | a\\|b |"


def test_a_single_column_falls_back_to_the_comma() -> None:
    assert sniff_delimiter("name\nPen\nInk\n") == ","
    assert block_texts(parse(b"name\nPen\nInk\n")) == ["| Pen |", "| Ink |"]


@pytest.mark.parametrize("encoding", ["gb18030", "utf-8-sig", "utf-8", "utf-16"])
def test_chinese_csv_in_any_supported_encoding_reads_the_same(encoding: str) -> None:
    parsed = parse(csv_bytes(ROWS, encoding=encoding))
    assert parsed.sections[0].header.startswith("| 城市 | 住宿上限 | 备注 |")
    assert block_texts(parsed)[1] == "| 成都 | 650 | 合住按一间报销 |"


def test_quoted_fields_keep_delimiters_and_line_breaks_on_one_row() -> None:
    data = b'item,note\r\nPen,"blue, or\r\nblack"\r\nInk,"say ""hi"""\r\n'
    parsed = parse(data)
    assert block_texts(parsed) == ["| Pen | blue, or black |", '| Ink | say "hi" |']
    # Records, not physical lines, are the rows.
    assert parsed.sections[0].blocks[1].locator == Locator(cell_range="A3:B3")


def test_empty_rows_and_columns_are_skipped() -> None:
    data = b"a,,b\n,,\n1,,2\n\n3,,\n"
    parsed = parse(data)
    assert parsed.sections[0].header.splitlines()[0] == "| a | b |"
    assert block_texts(parsed) == ["| 1 | 2 |", "| 3 |  |"]
    assert [block.locator.cell_range for block in parsed.sections[0].blocks] == ["A3:C3", "A5:C5"]


def test_rows_and_columns_over_the_limits_are_cut_with_warnings() -> None:
    rows = [[f"r{row}c{column}" for column in range(8)] for row in range(20)]
    parsed = parse(csv_bytes(rows), ParseLimits(max_sheet_rows=5, max_sheet_columns=3))
    assert parsed.sections[0].header.splitlines()[0] == "| r0c0 | r0c1 | r0c2 |"
    assert len(parsed.sections[0].blocks) == 4
    assert parsed.warnings == (
        "CSV cut at 3 columns (RAGSIFT_MAX_SHEET_COLUMNS)",
        "CSV cut at 5 rows (RAGSIFT_MAX_SHEET_ROWS)",
    )


def test_empty_fields_past_the_column_limit_give_no_warning() -> None:
    parsed = parse(b"a,b,,,\n1,2,,,\n", ParseLimits(max_sheet_columns=2))
    assert parsed.warnings == ()


def test_a_csv_over_the_cell_limit_is_rejected() -> None:
    data = csv_bytes([["a", "b"], ["1", "2"], ["3", ""]])
    assert parse(data, ParseLimits(max_sheet_cells=5)).sections
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_SHEET_CELLS"):
        parse(data, ParseLimits(max_sheet_cells=4))


def test_characters_count_against_the_document_limit() -> None:
    data = csv_bytes([["a", "b"], ["x" * 50, "y" * 50]])
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_DOCUMENT_CHARS"):
        parse(data, ParseLimits(max_document_chars=80))


def test_a_huge_field_is_rejected_naming_its_line() -> None:
    data = b'name,text\nPen,ok\nInk,"' + b"x" * (csv.field_size_limit() + 10) + b'"\n'
    with pytest.raises(DocumentRejected, match=r"CSV line 3 has a field over 131,072 characters"):
        parse(data)


def test_a_csv_without_values_has_no_extractable_text() -> None:
    assert parse_csv(b",,\n,,\n").sections == ()
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse(b",,\n,,\n")


def test_an_uppercase_extension_is_parsed_as_csv() -> None:
    assert parse_document("LIMITS.CSV", csv_bytes(ROWS)).media_type == "text/csv"
