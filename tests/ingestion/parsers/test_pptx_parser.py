"""PPTX parsing: a section per slide (and its notes), reading order, tables, groups, pictures as
assets, and the limits and package checks a hostile deck meets."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.presentation import Presentation as PresentationObject
from pptx.slide import Slide
from pptx.util import Emu, Inches, Pt

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParsedDocument, ParseLimits, parse_document
from ragsift.ingestion.parsers.pptx import NOTES_HEADING
from support.hostile import GIB, MIB, Member, deflated, raw_zip

TITLE_AND_CONTENT = 1
TITLE_ONLY = 5
BLANK = 6
PICTURE_WITH_CAPTION = 8


def png(width: int = 200, height: int = 120, color: str = "navy") -> bytes:
    image = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(image).rectangle((0, 0, width - 1, height - 1), outline=color, width=2)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def deck(*builders: Callable[[PresentationObject], None]) -> bytes:
    presentation = Presentation()
    for build in builders:
        build(presentation)
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def titled(title: str, *lines: str, notes: str = "") -> Callable[[PresentationObject], None]:
    def build(presentation: PresentationObject) -> None:
        slide = presentation.slides.add_slide(presentation.slide_layouts[TITLE_AND_CONTENT])
        assert slide.shapes.title is not None
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        frame.text = lines[0] if lines else ""
        for line in lines[1:]:
            frame.add_paragraph().text = line
        if notes:
            assert slide.notes_slide.notes_text_frame is not None
            slide.notes_slide.notes_text_frame.text = notes

    return build


def blank(build_slide: Callable[[Slide], None]) -> Callable[[PresentationObject], None]:
    def build(presentation: PresentationObject) -> None:
        build_slide(presentation.slides.add_slide(presentation.slide_layouts[BLANK]))

    return build


def text_box(slide: Slide, text: str, left: float, top: float) -> None:
    slide.shapes.add_textbox(Inches(left), Inches(top), Inches(2), Inches(0.5)).text = text


def picture(slide: Slide, data: bytes, left: float = 1, top: float = 3, alt: str = "") -> None:
    shape = slide.shapes.add_picture(io.BytesIO(data), Inches(left), Inches(top))
    if alt:
        shape._element._nvXxPr.cNvPr.set("descr", alt)


def parse(data: bytes, limits: ParseLimits | None = None) -> ParsedDocument:
    return parse_document("deck.pptx", data, limits)


def test_slide_titles_become_heading_paths_and_untitled_slides_are_numbered() -> None:
    data = deck(
        titled("入职第一周", "领取工牌"),
        blank(lambda slide: text_box(slide, "Untitled body", 1, 1)),
        titled("Benefits", "Health insurance"),
    )
    sections = parse(data).sections
    assert [section.heading_path for section in sections] == [
        ("入职第一周",), ("Slide 2",), ("Benefits",)
    ]
    assert [section.locator for section in sections] == [
        Locator(slide=1), Locator(slide=2), Locator(slide=3)
    ]
    assert sections[0].text == "领取工牌"  # the title is the heading, not body text


def test_shapes_are_read_top_to_bottom_then_left_to_right() -> None:
    def build(slide: Slide) -> None:  # added in an order unlike the reading order
        text_box(slide, "bottom", 1, 5)
        text_box(slide, "top right", 5, 1)
        text_box(slide, "top left", 1, 1)
        text_box(slide, "middle", 3, 3)

    section = parse(deck(blank(build))).sections[0]
    assert [block.text for block in section.blocks] == ["top left", "top right", "middle", "bottom"]
    assert section.text == "top left\n\ntop right\n\nmiddle\n\nbottom"


def test_each_text_frame_is_one_block_with_a_line_per_paragraph_and_indented_bullets() -> None:
    def build(presentation: PresentationObject) -> None:
        titled("Checklist", "Day one", "Laptop", "Badge", "Day two")(presentation)
        frame = presentation.slides[0].placeholders[1].text_frame
        frame.paragraphs[1].level = 1
        frame.paragraphs[2].level = 2

    section = parse(deck(build)).sections[0]
    assert [block.text for block in section.blocks] == ["Day one\n- Laptop\n- Badge\nDay two"]


def test_tables_become_markdown_tables_with_escaped_pipes() -> None:
    rows = [["Role", "Equipment"], ["Engineer", "Laptop | 2 monitors"], ["销售", "手机"]]

    def build(slide: Slide) -> None:
        shape = slide.shapes.add_table(3, 2, Inches(1), Inches(1), Inches(6), Inches(2))
        for r, values in enumerate(rows):
            for c, value in enumerate(values):
                shape.table.cell(r, c).text = value

    section = parse(deck(blank(build))).sections[0]
    assert section.blocks[0].text == (
        "| Role | Equipment |\n| --- | --- |\n| Engineer | Laptop \\| 2 monitors |\n| 销售 | 手机 |"
    )


def test_merged_table_cells_are_written_once_and_keep_the_columns() -> None:
    def build(slide: Slide) -> None:
        table = slide.shapes.add_table(2, 3, Inches(1), Inches(1), Inches(6), Inches(2)).table
        table.cell(0, 0).merge(table.cell(0, 1))
        table.cell(0, 0).text = "Span"
        table.cell(0, 2).text = "C"
        for c, value in enumerate(["1", "2", "3"]):
            table.cell(1, c).text = value

    text = parse(deck(blank(build))).sections[0].text
    assert text == "| Span | | C |\n| --- | --- | --- |\n| 1 | 2 | 3 |"


def test_speaker_notes_are_a_section_of_their_own_right_after_their_slide() -> None:
    data = deck(
        titled("Welcome", "Agenda", notes="Greet everyone.\nMention the Wi-Fi password card."),
        titled("IT setup", "Laptop"),
        titled("安全培训", "必修课程", notes="提醒新人在第一周内完成。"),
    )
    sections = parse(data).sections
    assert [(section.heading_path, section.locator.slide) for section in sections] == [
        (("Welcome",), 1),
        (("Welcome", NOTES_HEADING), 1),
        (("IT setup",), 2),
        (("安全培训",), 3),
        (("安全培训", "Speaker notes"), 3),
    ]
    assert [block.text for block in sections[1].blocks] == [
        "Greet everyone.", "Mention the Wi-Fi password card."
    ]
    assert "Greet" not in sections[0].text


def test_group_shapes_are_recursed_and_read_as_one_unit_at_their_position() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "after the group", 1, 4)
        group = slide.shapes.add_group_shape()
        group.shapes.add_textbox(Inches(4), Inches(1), Inches(2), Inches(0.5)).text = "g right"
        group.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(0.5)).text = "g left"
        inner = group.shapes.add_group_shape()
        inner.shapes.add_textbox(Inches(1), Inches(2), Inches(2), Inches(0.5)).text = "nested"

    section = parse(deck(blank(build))).sections[0]
    assert [block.text for block in section.blocks] == [
        "g left", "g right", "nested", "after the group"
    ]


def test_footer_date_and_slide_number_placeholders_are_left_out() -> None:
    def build(presentation: PresentationObject) -> None:
        titled("Agenda", "Welcome")(presentation)
        slide = presentation.slides[0]
        for placeholder in slide.slide_layout.placeholders:
            if placeholder.placeholder_format.idx in (10, 11, 12):  # date, footer, number
                slide.shapes.clone_placeholder(placeholder)
        for shape in slide.placeholders:
            if shape.placeholder_format.idx in (10, 11, 12):
                shape.text_frame.text = f"Confidential {shape.placeholder_format.idx}"

    data = deck(build)
    assert b"Confidential 11" in zipfile.ZipFile(io.BytesIO(data)).read("ppt/slides/slide1.xml")
    assert [section.text for section in parse(data).sections] == ["Welcome"]


def test_a_slide_with_only_a_title_keeps_the_title_as_its_body() -> None:
    def build(presentation: PresentationObject) -> None:
        slide = presentation.slides.add_slide(presentation.slide_layouts[TITLE_ONLY])
        assert slide.shapes.title is not None
        slide.shapes.title.text = "Questions?"

    section = parse(deck(build)).sections[0]
    assert (section.heading_path, section.text) == (("Questions?",), "Questions?")


def test_pictures_become_assets_with_alt_text_or_the_slide_title() -> None:
    diagram, photo = png(300, 150, "red"), png(240, 160, "green")

    def build(presentation: PresentationObject) -> None:
        titled("Intro", "Read me")(presentation)
        slide = presentation.slides.add_slide(presentation.slide_layouts[TITLE_ONLY])
        assert slide.shapes.title is not None
        slide.shapes.title.text = "Approval flow"
        text_box(slide, "How a request moves", 1, 2)
        picture(slide, diagram, top=3, alt="Request -> Approve -> Ship")
        picture(slide, photo, top=5)

    parsed = parse(deck(build))
    assert [asset.data for asset in parsed.assets] == [diagram, photo]
    first, second = parsed.assets
    assert (first.media_type, first.width, first.height) == ("image/png", 300, 150)
    assert first.caption == "Request -> Approve -> Ship"
    assert second.caption == "Approval flow"  # no alt text (python-pptx wrote "image.png")
    assert first.locator == second.locator == Locator(slide=2)
    assert parsed.sections[first.section or 0].heading_path == ("Approval flow",)
    assert (first.section, first.block, second.block) == (1, 0, 0)
    assert parsed.warnings == ()


def test_a_picture_belongs_to_the_text_block_just_before_it_in_reading_order() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "below the picture", 1, 5)
        picture(slide, png(), top=3)
        text_box(slide, "first", 1, 1)
        text_box(slide, "second", 1, 2)

    parsed = parse(deck(blank(build)))
    assert [block.text for block in parsed.sections[0].blocks][1] == "second"
    assert parsed.assets[0].block == 1


def test_pictures_in_groups_and_picture_placeholders_are_kept() -> None:
    in_group, in_placeholder = png(200, 200, "blue"), png(220, 180, "purple")

    def build(presentation: PresentationObject) -> None:
        slide = presentation.slides.add_slide(presentation.slide_layouts[PICTURE_WITH_CAPTION])
        assert slide.shapes.title is not None
        slide.shapes.title.text = "Office map"
        placeholder = next(p for p in slide.placeholders if p.placeholder_format.idx == 1)
        placeholder.insert_picture(io.BytesIO(in_placeholder))
        group = slide.shapes.add_group_shape()
        group.shapes.add_picture(io.BytesIO(in_group), Inches(1), Inches(1))

    assets = parse(deck(build)).assets
    assert {asset.data for asset in assets} == {in_group, in_placeholder}
    assert {asset.caption for asset in assets} == {"Office map"}


def test_the_same_picture_on_several_slides_is_kept_once() -> None:
    logo = png(200, 100)

    def build(slide: Slide) -> None:
        text_box(slide, "a slide with the logo", 1, 1)
        picture(slide, logo)

    assets = parse(deck(blank(build), blank(build), blank(build))).assets
    assert len(assets) == 1
    assert assets[0].locator == Locator(slide=1)


def test_pictures_under_the_minimum_size_are_not_kept() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "icons", 1, 1)
        picture(slide, png(16, 16), top=2)  # 256 pixels
        picture(slide, png(99, 101), top=3)  # 9,999 pixels, just under the default
        picture(slide, png(100, 100), top=4)

    parsed = parse(deck(blank(build)))
    assert [(asset.width, asset.height) for asset in parsed.assets] == [(100, 100)]
    assert parsed.warnings == ()
    limits = ParseLimits(min_asset_pixels=200)
    assert len(parse(deck(blank(build)), limits).assets) == 3


def replace_member(data: bytes, prefix: str, replacement: bytes) -> bytes:
    """The package with every member under `prefix` holding `replacement` instead."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = replacement if info.filename.startswith(prefix) else source.read(info)
            target.writestr(info, body)
    return out.getvalue()


def test_a_corrupt_picture_is_skipped_with_a_warning_and_the_deck_still_parses() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "Body text survives", 1, 1)
        picture(slide, png(), top=2)

    data = replace_member(deck(blank(build)), "ppt/media/", b"\x89PNG\r\n\x1a\n not really")
    parsed = parse(data)
    assert parsed.sections[0].text == "Body text survives"
    assert parsed.assets == ()
    assert len(parsed.warnings) == 1
    assert "on slide 1 skipped: image is corrupt" in parsed.warnings[0]


def test_a_picture_over_the_pixel_limit_is_skipped_with_a_warning() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "Big picture", 1, 1)
        picture(slide, png(400, 300))

    parsed = parse(deck(blank(build)), ParseLimits(max_image_pixels=100_000))
    assert parsed.assets == ()
    assert "RAGSIFT_MAX_IMAGE_PIXELS" in parsed.warnings[0]


def test_pictures_past_the_asset_limit_are_counted_in_one_warning() -> None:
    def build(slide: Slide) -> None:
        text_box(slide, "Gallery", 1, 1)
        for n in range(5):
            picture(slide, png(120 + n, 100), top=2 + n * 0.1)

    parsed = parse(deck(blank(build)), ParseLimits(max_assets=2))
    assert [asset.width for asset in parsed.assets] == [120, 121]
    assert parsed.warnings == (
        "3 more image(s) not kept: at most 2 per document (RAGSIFT_MAX_ASSETS)",
    )


def test_a_deck_over_the_slide_limit_is_rejected() -> None:
    data = deck(*(titled(f"Slide {n}", "text") for n in range(4)))
    assert len(parse(data, ParseLimits(max_slides=4)).sections) == 4
    with pytest.raises(DocumentRejected, match=r"4 slides, over the limit of 3 \(RAGSIFT_MAX_SLID"):
        parse(data, ParseLimits(max_slides=3))


def test_text_over_the_character_limit_is_rejected() -> None:
    data = deck(titled("Long", "x" * 500))
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_DOCUMENT_CHARS"):
        parse(data, ParseLimits(max_document_chars=200))


def hostile_deck(slide: Member) -> bytes:
    """A one-slide deck whose ppt/slides/slide1.xml is the given hand-written member."""
    source = deck(titled("Hostile", "text"))
    members = []
    with zipfile.ZipFile(io.BytesIO(source)) as archive:
        for info in archive.infolist():
            if info.filename == "ppt/slides/slide1.xml":
                members.append(slide)
            else:
                members.append(deflated(info.filename, [(archive.read(info), 1)]))
    return raw_zip(members)


def test_a_slide_inflating_to_a_gibibyte_is_rejected_before_python_pptx_reads_it() -> None:
    filler = deflated("ppt/slides/slide1.xml", [(b"<p:sld>", 1), (b" " * MIB, GIB // MIB)])
    data = hostile_deck(filler)
    assert len(data) < 2 * MIB
    with pytest.raises(DocumentRejected, match=r"PPTX would inflate to .* bytes.*UNCOMPRESSED"):
        parse(data)


def test_a_slide_declaring_a_dtd_is_rejected() -> None:
    xml = (
        b'<?xml version="1.0"?><!DOCTYPE p:sld [<!ENTITY lol "lol">]>'
        b'<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>'
    )
    with pytest.raises(DocumentRejected, match=r"PPTX part 'ppt/slides/slide1.xml' declares a DTD"):
        parse(hostile_deck(deflated("ppt/slides/slide1.xml", [(xml, 1)])))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xd0\xcf\x11\xe0 legacy binary PowerPoint", "not a ZIP package; legacy .ppt?"),
        (raw_zip([deflated("readme.txt", [(b"hi", 1)])]), "PPTX is corrupt"),
    ],
)
def test_files_that_are_not_pptx_packages_are_rejected(data: bytes, reason: str) -> None:
    with pytest.raises(DocumentRejected, match=reason.replace("?", r"\?").replace(".", r"\.")):
        parse(data)


def test_a_word_document_named_pptx_is_rejected() -> None:
    from docx import Document

    buffer = io.BytesIO()
    Document().save(buffer)
    with pytest.raises(DocumentRejected, match="PPTX is corrupt or not a PowerPoint deck"):
        parse(buffer.getvalue())


def test_an_empty_deck_has_no_extractable_text() -> None:
    with pytest.raises(DocumentRejected, match="no extractable text"):
        parse(deck())


def test_font_sizes_and_emu_positions_do_not_leak_into_text() -> None:
    def build(slide: Slide) -> None:
        box = slide.shapes.add_textbox(Emu(0), Emu(0), Inches(3), Inches(1))
        run = box.text_frame.paragraphs[0].add_run()
        run.text = "  Spaced\u3000 out  "
        run.font.size = Pt(40)

    assert parse(deck(blank(build))).sections[0].text == "Spaced out"


def test_the_onboarding_sample_deck_has_slides_notes_a_table_and_its_diagram() -> None:
    path = Path(__file__).resolve().parents[3] / "samples" / "onboarding-deck.pptx"
    parsed = parse_document(path.name, path.read_bytes())
    slides = [section for section in parsed.sections if section.heading_path[-1] != NOTES_HEADING]
    notes = [section for section in parsed.sections if section.heading_path[-1] == NOTES_HEADING]
    assert 4 <= len(slides) <= 6
    assert len(notes) >= 2
    assert any("入职" in section.heading_path[0] for section in slides)
    table = next(section for section in slides if "| --- |" in section.text)
    assert table.heading_path == ("办公设备申领 Equipment by role",)
    (diagram,) = parsed.assets
    assert "Request -> Approve -> Ship" in diagram.caption
    assert diagram.media_type == "image/png"
    assert diagram.locator == parsed.sections[diagram.section or 0].locator
