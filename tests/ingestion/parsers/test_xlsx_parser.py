"""XLSX parsing: Markdown rows under a repeated header, A1 locators, merges, formulas, limits."""

from __future__ import annotations

import datetime as dt
import io
import time
import zipfile
from collections.abc import Sequence

import pytest
from openpyxl import Workbook

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from ragsift.ingestion.parsers.xlsx import MEDIA_TYPE, parse_xlsx
from support import hostile

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"


def workbook_bytes(workbook: Workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def sheet_of(rows: Sequence[Sequence[object]], title: str = "Prices") -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = title
    for row in rows:
        sheet.append(list(row))
    return workbook_bytes(workbook)


def package_members(sheets: Sequence[tuple[str, hostile.Member]]) -> list[hostile.Member]:
    """A minimal workbook whose sheet parts are given as written (no styles, no strings)."""
    overrides = "".join(
        f'<Override PartName="/{member.name}" ContentType="{SHEET_TYPE}"/>' for _, member in sheets
    )
    types = (
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-'
        'package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
        f'officedocument.spreadsheetml.sheet.main+xml"/>{overrides}</Types>'
    )
    root_rels = (
        f'<Relationships xmlns="{PKG_REL_NS}"><Relationship Id="rId1" Type="{REL_NS}/'
        'officeDocument" Target="xl/workbook.xml"/></Relationships>'
    )
    entries = "".join(
        f'<sheet name="{title}" sheetId="{index}" r:id="rId{index}"/>'
        for index, (title, _) in enumerate(sheets, 1)
    )
    workbook = (
        f'<workbook xmlns="{MAIN_NS}" xmlns:r="{REL_NS}"><sheets>{entries}</sheets></workbook>'
    )
    rels = "".join(
        f'<Relationship Id="rId{index}" Type="{REL_NS}/worksheet" '
        f'Target="{member.name.removeprefix("xl/")}"/>'
        for index, (_, member) in enumerate(sheets, 1)
    )
    return [
        hostile.stored("[Content_Types].xml", types.encode()),
        hostile.stored("_rels/.rels", root_rels.encode()),
        hostile.stored("xl/workbook.xml", workbook.encode()),
        hostile.stored(
            "xl/_rels/workbook.xml.rels",
            f'<Relationships xmlns="{PKG_REL_NS}">{rels}</Relationships>'.encode(),
        ),
        *(member for _, member in sheets),
    ]


def sheet_xml(rows: str, tail: str = "", prologue: str = "") -> bytes:
    return (
        f'<?xml version="1.0"?>{prologue}<worksheet xmlns="{MAIN_NS}"><sheetData>{rows}'
        f"</sheetData>{tail}</worksheet>"
    ).encode()


def raw_workbook(rows: str, tail: str = "", prologue: str = "") -> bytes:
    member = hostile.stored("xl/worksheets/sheet1.xml", sheet_xml(rows, tail, prologue))
    return hostile.raw_zip(package_members([("Data", member)]))


def parse(data: bytes, limits: ParseLimits | None = None) -> ParsedDocument:
    return parse_document("prices.xlsx", data, limits)


def block_texts(parsed: ParsedDocument, section: int = 0) -> list[str]:
    return [block.text for block in parsed.sections[section].blocks]


def test_each_sheet_is_a_section_under_its_title_with_its_header_row_repeated() -> None:
    workbook = Workbook()
    travel = workbook.active
    assert travel is not None
    travel.title = "差旅标准"
    for row in [["城市", "住宿上限", "伙食补助"], ["一线城市", 600, 100], ["二线城市", 450, 80]]:
        travel.append(row)
    equipment = workbook.create_sheet("Equipment")
    for row in [["Device", "Max price"], ["Laptop", 1600]]:
        equipment.append(row)
    parsed = parse(workbook_bytes(workbook))
    assert parsed.media_type == MEDIA_TYPE
    assert [section.heading_path for section in parsed.sections] == [("差旅标准",), ("Equipment",)]
    first = parsed.sections[0]
    assert first.header == "| 城市 | 住宿上限 | 伙食补助 |\n| --- | --- | --- |"
    assert block_texts(parsed) == ["| 一线城市 | 600 | 100 |", "| 二线城市 | 450 | 80 |"]
    assert first.text == "| 一线城市 | 600 | 100 |\n| 二线城市 | 450 | 80 |"
    assert parsed.sections[1].header == "| Device | Max price |\n| --- | --- |"
    assert parsed.warnings == ()


def test_rows_are_located_by_their_range_over_the_used_columns() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Prices"
    sheet["B3"], sheet["C3"], sheet["E3"] = "Item", "Price", "Note"
    sheet["B4"], sheet["C4"] = "Pen", 2
    sheet["E6"] = "only a note"
    parsed = parse(workbook_bytes(workbook))
    section = parsed.sections[0]
    assert section.locator == Locator(sheet="Prices", cell_range="B3:E6")
    assert [block.locator for block in section.blocks] == [
        Locator(sheet="Prices", cell_range="B4:E4"),
        Locator(sheet="Prices", cell_range="B6:E6"),
    ]
    # Column D is empty everywhere, so it is not rendered; row 5 is empty and skipped.
    assert section.header.splitlines()[0] == "| Item | Price | Note |"
    assert block_texts(parsed) == ["| Pen | 2 |  |", "|  |  | only a note |"]


def test_merged_cells_repeat_their_value_in_every_row() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in [
        ["Tier", "City", "Hotel", "Meals"],
        ["First", "Beijing", 600, 100],
        [None, "Shanghai", 650, 100],
        ["Second", "Chengdu", "Limits apply from 2024", None],
    ]:
        sheet.append(row)
    sheet.merge_cells("A2:A3")
    sheet.merge_cells("C4:D4")
    parsed = parse(workbook_bytes(workbook))
    assert block_texts(parsed) == [
        "| First | Beijing | 600 | 100 |",
        "| First | Shanghai | 650 | 100 |",
        "| Second | Chengdu | Limits apply from 2024 | Limits apply from 2024 |",
    ]


def test_a_merge_over_rows_without_values_of_their_own_adds_no_rows() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in [["Name", "Note"], ["Pen", "blue"], [None, None], ["Ink", "black"]]:
        sheet.append(row)
    sheet.merge_cells("B2:B3")
    assert block_texts(parse(workbook_bytes(workbook))) == ["| Pen | blue |", "| Ink | black |"]


def test_formulas_give_their_cached_value_and_none_without_one() -> None:
    rows = (
        '<row r="1"><c r="A1" t="inlineStr"><is><t>Item</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>Total</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>Hotel</t></is></c>'
        '<c r="B2"><f>SUM(C2:D2)</f><v>780</v></c></row>'
        '<row r="3"><c r="A3" t="inlineStr"><is><t>Taxi</t></is></c>'
        '<c r="B3"><f>SUM(C3:D3)</f></c></row>'
        '<row r="4"><c r="A4" t="inlineStr"><is><t>Label</t></is></c>'
        '<c r="B4" t="str"><f>A2&amp;"!"</f><v>Hotel!</v></c></row>'
    )
    assert block_texts(parse(raw_workbook(rows))) == [
        "| Hotel | 780 |", "| Taxi |  |", "| Label | Hotel! |",
    ]


def test_values_render_as_iso_dates_plain_numbers_and_booleans() -> None:
    parsed = parse(sheet_of([
        ["Date", "Time", "Count", "Rate", "Open", "Text"],
        [dt.date(2024, 1, 31), dt.datetime(2024, 1, 31, 14, 30), 3.0, 2.5, True, "a|b\nc"],
        [dt.datetime(2024, 2, 1), dt.time(9, 15), 1234567, 0.1 + 0.2, False, "  spaced  "],
    ]))
    assert block_texts(parsed) == [
        "| 2024-01-31 | 2024-01-31 14:30:00 | 3 | 2.5 | TRUE | a\\|b c |",
        "| 2024-02-01 | 09:15:00 | 1234567 | 0.3 | FALSE | spaced |",
    ]


def test_a_sheet_of_one_row_is_that_row_without_a_header() -> None:
    parsed = parse(sheet_of([["Price list valid from July"]]))
    section = parsed.sections[0]
    assert section.header == ""
    assert block_texts(parsed) == ["| Price list valid from July |"]
    assert section.blocks[0].locator == Locator(sheet="Prices", cell_range="A1")


def test_hidden_sheets_are_read_and_empty_sheets_give_no_section() -> None:
    workbook = Workbook()
    visible = workbook.active
    assert visible is not None
    visible.title = "Empty"
    hidden = workbook.create_sheet("Hidden")
    hidden.append(["Key", "Value"])
    hidden.append(["a", 1])
    hidden.sheet_state = "hidden"
    parsed = parse(workbook_bytes(workbook))
    assert [section.heading_path for section in parsed.sections] == [("Hidden",)]


def test_a_workbook_of_empty_sheets_has_no_extractable_text() -> None:
    workbook = Workbook()
    workbook.create_sheet("Second")
    data = workbook_bytes(workbook)
    assert parse_xlsx(data).sections == ()
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse(data)


def test_a_sheet_over_the_row_limit_is_cut_with_a_warning() -> None:
    rows = [["n", "square"], *([n, n * n] for n in range(1, 30))]
    parsed = parse(sheet_of(rows, "Squares"), ParseLimits(max_sheet_rows=10))
    assert len(parsed.sections[0].blocks) == 9  # the header row counts as one of the 10
    assert parsed.sections[0].blocks[-1].text == "| 9 | 81 |"
    assert parsed.warnings == ("sheet 'Squares' cut at 10 rows (RAGSIFT_MAX_SHEET_ROWS)",)


def test_a_16k_column_sheet_is_cut_at_the_column_limit_with_a_warning() -> None:
    cells = "".join(f"<c><v>{column}</v></c>" for column in range(1, 16_385))
    parsed = parse(raw_workbook(f"<row>{cells}</row><row>{cells}</row>"))
    section = parsed.sections[0]
    assert section.locator.cell_range == "A1:GR2"  # 200 columns
    assert section.blocks[0].text.startswith("| 1 | 2 | 3 |")
    assert section.blocks[0].text.endswith("| 199 | 200 |")
    assert parsed.warnings == ("sheet 'Data' cut at 200 columns (RAGSIFT_MAX_SHEET_COLUMNS)",)


def test_a_value_past_the_column_limit_alone_is_dropped_with_a_warning() -> None:
    rows = '<row r="1"><c r="A1"><v>1</v></c><c r="XFD1"><v>2</v></c></row>'
    rows += '<row r="2"><c r="A2"><v>3</v></c></row>'
    parsed = parse(raw_workbook(rows), ParseLimits(max_sheet_columns=5))
    assert parsed.sections[0].header.splitlines()[0] == "| 1 |"
    assert len(parsed.warnings) == 1


def test_a_workbook_over_the_cell_limit_is_rejected() -> None:
    rows = [[f"r{row}c{column}" for column in range(3)] for row in range(4)]
    data = sheet_of(rows)
    assert parse(data, ParseLimits(max_sheet_cells=12)).sections
    with pytest.raises(DocumentRejected, match=r"more than 11 non-empty cells.*MAX_SHEET_CELLS"):
        parse(data, ParseLimits(max_sheet_cells=11))


def million_row_sheet(bad_row: int | None = None) -> bytes:
    """10**6 rows of one number, as raw XML (openpyxl would take minutes to write it).

    `bad_row` holds a reference to a shared string that does not exist: reading it fails.
    """
    row = b"<row><c><v>7</v></c></row>"
    bad = b'<row><c t="s"><v>99</v></c></row>'
    # Excel and openpyxl write the dimension; without it openpyxl reads the whole sheet once
    # at load_workbook to size it.
    start = sheet_xml("").split(b"<sheetData>")[0]
    pieces = [(start + b'<dimension ref="A1:A1000000"/><sheetData>', 1)]
    if bad_row is None:
        pieces.append((row, 1_000_000))
    else:
        pieces += [(row, bad_row - 1), (bad, 1), (row, 1_000_000 - bad_row)]
    pieces.append((b"</sheetData></worksheet>", 1))
    member = hostile.deflated("xl/worksheets/sheet1.xml", pieces)
    return hostile.raw_zip(package_members([("Big", member)]))


def test_a_million_row_sheet_is_read_only_up_to_the_row_limit() -> None:
    # The row past the limit would fail if it were read: reading stops at the limit.
    data = million_row_sheet(bad_row=500_000)
    limits = ParseLimits(max_sheet_rows=10_000)
    started = time.monotonic()
    parsed = parse(data, limits)
    assert time.monotonic() - started < 60
    assert len(parsed.sections[0].blocks) == 9_999
    assert parsed.sections[0].locator.cell_range == "A1:A10000"
    assert parsed.warnings == ("sheet 'Big' cut at 10,000 rows (RAGSIFT_MAX_SHEET_ROWS)",)


def test_a_million_row_sheet_is_cut_at_the_default_row_limit_not_its_xml_elements() -> None:
    # worksheets are streamed: their elements do not count against RAGSIFT_MAX_XML_ELEMENTS
    parsed = parse(million_row_sheet())
    assert len(parsed.sections[0].blocks) == ParseLimits().max_sheet_rows - 1
    assert parsed.warnings == ("sheet 'Big' cut at 100,000 rows (RAGSIFT_MAX_SHEET_ROWS)",)


def test_a_zip_bomb_is_rejected_before_openpyxl_reads_it() -> None:
    padding = hostile.deflated(
        "xl/worksheets/sheet1.xml",
        [(sheet_xml("").split(b"</sheetData>")[0], 1), (b" " * hostile.MIB, 100),
         (b"</sheetData></worksheet>", 1)],
    )
    data = hostile.raw_zip(package_members([("Data", padding)]))
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_COMPRESSION_RATIO"):
        parse(data)


def test_entity_expansion_in_a_sheet_is_rejected() -> None:
    prologue = (
        '<!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    )
    rows = '<row r="1"><c r="A1" t="inlineStr"><is><t>&b;</t></is></c></row>'
    with pytest.raises(DocumentRejected, match="DTD"):
        parse(raw_workbook(rows, prologue=prologue))


def test_a_legacy_xls_or_another_package_is_rejected_with_a_reason() -> None:
    with pytest.raises(DocumentRejected, match=r"not a ZIP package; legacy \.xls\?"):
        parse(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    docx = hostile.raw_zip(hostile.docx_members())
    with pytest.raises(DocumentRejected, match="not an Excel workbook"):
        parse(docx)


def test_an_uppercase_extension_is_parsed_as_xlsx() -> None:
    parsed = parse_document("PRICES.XLSX", sheet_of([["a", "b"], [1, 2]]))
    assert parsed.media_type == MEDIA_TYPE
    assert block_texts(parsed) == ["| 1 | 2 |"]


def test_a_sheet_without_merges_is_not_scanned_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("iterparse called")

    monkeypatch.setattr("lxml.etree.iterparse", fail)
    assert block_texts(parse(sheet_of([["a"], ["b"]]))) == ["| b |"]
    with zipfile.ZipFile(io.BytesIO(sheet_of([["a"]]))) as archive:
        assert b"mergeCell" not in archive.read("xl/worksheets/sheet1.xml")


def test_a_cell_openpyxl_cannot_read_rejects_the_file_naming_its_sheet() -> None:
    rows = '<row r="1"><c r="A1" t="s"><v>5</v></c></row>'  # there are no shared strings
    with pytest.raises(DocumentRejected, match=r"XLSX sheet 'Data' cannot be read"):
        parse(raw_workbook(rows))
