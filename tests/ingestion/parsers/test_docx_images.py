"""DOCX pictures as assets: alt text or the nearest heading as caption, linked to the section and
block they belong to; duplicates, tiny, corrupt and missing images."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from docx import Document
from docx.shared import Inches
from PIL import Image

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from support import hostile


def png(width: int = 160, height: int = 120, color: str = "teal") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def add_picture(paragraph: Any, data: bytes, alt: str = "", title: str = "") -> None:
    shape = paragraph.add_run().add_picture(io.BytesIO(data), width=Inches(1))
    if alt:
        shape._inline.docPr.set("descr", alt)
    if title:
        shape._inline.docPr.set("title", title)


def save(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def parse(data: bytes, limits: ParseLimits | None = None) -> ParsedDocument:
    return parse_document("guide.docx", data, limits)


def test_an_inline_picture_is_an_asset_with_its_alt_text_linked_to_its_paragraph() -> None:
    chart = png(300, 200, "orange")
    document = Document()
    document.add_heading("Setup", level=1)
    document.add_paragraph("Unpack the laptop.")
    paragraph = document.add_paragraph("Connect the dock as shown: ")
    add_picture(paragraph, chart, alt="Dock wiring diagram")
    document.add_paragraph("Then sign in.")
    parsed = parse(save(document))

    assert len(parsed.assets) == 1
    asset = parsed.assets[0]
    assert (asset.data, asset.media_type, asset.width, asset.height) == (
        chart, "image/png", 300, 200
    )
    assert asset.caption == "Dock wiring diagram"
    assert asset.locator == Locator()  # DOCX has no pages
    assert (asset.section, asset.block) == (0, 1)
    section = parsed.sections[asset.section or 0]
    assert section.heading_path == ("Setup",)
    assert section.text.split("\n\n")[asset.block or 0] == "Connect the dock as shown:"
    assert parsed.warnings == ()


def test_a_picture_without_alt_text_is_captioned_with_the_nearest_heading() -> None:
    document = Document()
    document.add_heading("办公室地图", level=1)
    document.add_paragraph("三楼东侧。")
    add_picture(document.add_paragraph(), png())
    asset = parse(save(document)).assets[0]
    assert asset.caption == "办公室地图"


def test_the_docpr_title_is_used_when_there_is_no_description() -> None:
    document = Document()
    add_picture(document.add_paragraph("Logo: "), png(), title="Company logo")
    assert parse(save(document)).assets[0].caption == "Company logo"


def test_a_picture_in_a_paragraph_of_its_own_belongs_to_the_block_before_it() -> None:
    document = Document()
    document.add_heading("First", level=1)
    document.add_paragraph("One.")
    document.add_paragraph("Two.")
    add_picture(document.add_paragraph(), png())
    document.add_heading("Second", level=1)
    document.add_paragraph("Three.")
    asset = parse(save(document)).assets[0]
    assert (asset.section, asset.block) == (0, 1)


def test_a_picture_between_two_paragraphs_belongs_to_the_one_before_it() -> None:
    document = Document()
    document.add_paragraph("Zero.")
    document.add_paragraph("One.")
    add_picture(document.add_paragraph(), png())
    document.add_paragraph("Two.")
    asset = parse(save(document)).assets[0]
    assert (asset.section, asset.block) == (0, 1)


def test_a_picture_first_in_its_section_belongs_to_the_next_block_of_that_section() -> None:
    document = Document()
    document.add_heading("First", level=1)
    document.add_paragraph("One.")
    document.add_heading("Second", level=1)
    add_picture(document.add_paragraph(), png())
    document.add_paragraph("Below the picture.")
    parsed = parse(save(document))
    asset = parsed.assets[0]
    assert (asset.section, asset.block) == (1, 0)
    assert asset.caption == "Second"


def test_a_picture_under_a_heading_without_text_belongs_to_the_block_before_it() -> None:
    document = Document()
    document.add_heading("Intro", level=1)
    document.add_paragraph("Hello.")
    document.add_heading("Gallery", level=1)
    add_picture(document.add_paragraph(), png())
    document.add_heading("Next", level=1)
    document.add_paragraph("After.")
    asset = parse(save(document)).assets[0]
    assert (asset.section, asset.block) == (0, 0)
    assert asset.caption == "Gallery"


def test_a_picture_inside_a_table_belongs_to_the_table_block() -> None:
    document = Document()
    document.add_paragraph("Equipment:")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Dock"
    add_picture(table.cell(0, 1).paragraphs[0], png(), alt="Dock photo")
    parsed = parse(save(document))
    asset = parsed.assets[0]
    assert (asset.section, asset.block, asset.caption) == (0, 1, "Dock photo")


def test_a_picture_in_a_list_item_belongs_to_the_list_block() -> None:
    document = Document()
    document.add_paragraph("Steps:")
    document.add_paragraph("Open the lid", style="List Bullet")
    add_picture(document.add_paragraph("Press power", style="List Bullet"), png())
    parsed = parse(save(document))
    assert parsed.sections[0].text == "Steps:\n\n- Open the lid\n- Press power"
    assert (parsed.assets[0].section, parsed.assets[0].block) == (0, 1)


def test_the_same_picture_twice_is_kept_once_and_a_file_name_is_not_alt_text() -> None:
    logo = png()
    document = Document()
    add_picture(document.add_paragraph("Top "), logo, alt="logo.png")
    add_picture(document.add_paragraph("Bottom "), logo, alt="Logo again")
    assets = parse(save(document)).assets
    assert len(assets) == 1
    assert (assets[0].block, assets[0].caption) == (0, "")


def test_tiny_pictures_are_not_kept() -> None:
    document = Document()
    add_picture(document.add_paragraph("Bullet icon "), png(12, 12))
    parsed = parse(save(document))
    assert (parsed.assets, parsed.warnings) == ((), ())


def test_a_corrupt_picture_is_skipped_with_a_warning() -> None:
    document = Document()
    add_picture(document.add_paragraph("Text stays. "), png())
    data = save(document)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = source.read(info)
            target.writestr(info, b"GIF89a garbage" if info.filename.startswith("word/media/")
                            else body)
    parsed = parse(out.getvalue())
    assert parsed.sections[0].text == "Text stays."
    assert parsed.assets == ()
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith("image 'Picture 1' skipped: image is corrupt")


def test_a_picture_pointing_at_a_missing_part_is_skipped_with_a_warning() -> None:
    body = (
        '<w:p><w:r><w:t>Broken picture</w:t></w:r><w:r><w:drawing>'
        '<wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/'
        'wordprocessingDrawing"><wp:docPr id="1" name="Ghost"/>'
        '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
        '<a:graphicData><a:blip xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships" r:embed="rId99"/></a:graphicData></a:graphic></wp:inline>'
        "</w:drawing></w:r></w:p>"
    )
    parsed = parse(hostile.docx_body(body))
    assert parsed.sections[0].text == "Broken picture"
    assert parsed.warnings == ("image 'Ghost' skipped: its image part is missing",)


def test_a_document_without_pictures_has_no_assets_or_warnings() -> None:
    document = Document()
    document.add_paragraph("Just text.")
    parsed = parse(save(document))
    assert (parsed.assets, parsed.warnings) == ((), ())
