"""Image files as documents: OCR text in blocks, the image kept as an asset, and bad images."""

from __future__ import annotations

import io
import re
import struct
import sys
import time
import zlib
from typing import Any

import pytest
from PIL import Image, ImageFile

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import ParseLimits, media_type_for, ocr, parse_document
from ragsift.ingestion.parsers import image as image_parser
from ragsift.ingestion.parsers.image import parse_image
from support.text_images import cjk_font_path, draw_text, encoded

pytest.importorskip("rapidocr_onnxruntime", reason="needs the ocr extra")

NOTICE = [("Guest network XH-Guest", (60, 50)), ("password changes every Monday", (60, 100))]


def squeezed(text: str) -> str:
    return "".join(text.split())  # PP-OCR may drop a space between words


def notice_png() -> tuple[bytes, list[tuple[float, float, float, float]]]:
    picture, boxes = draw_text(NOTICE, size=(900, 260), font_size=36)
    return encoded(picture), boxes


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def declared_png(width: int, height: int) -> bytes:
    """A PNG whose header declares width x height RGB pixels, with one tiny IDAT."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + png_chunk(b"IEND", b"")
    )


def tiff_pages(*pages: list[tuple[str, tuple[int, int]]]) -> bytes:
    frames = [draw_text(page, size=(800, 200), font_size=36)[0] for page in pages]
    out = io.BytesIO()
    frames[0].save(out, format="TIFF", save_all=True, append_images=frames[1:])
    return out.getvalue()


# --- reading ---------------------------------------------------------------------------------


def test_a_png_becomes_one_section_of_ocr_blocks_with_boxes_in_pixels() -> None:
    data, drawn = notice_png()
    parsed = parse_document("wifi.png", data)
    assert parsed.media_type == "image/png"
    [section] = parsed.sections
    assert section.locator.page is None
    assert squeezed(section.text) == squeezed(" ".join(text for text, _ in NOTICE))
    boxes = [box for block in section.blocks for box in block.locator.boxes]
    assert len(boxes) == 2
    for box, expected in zip(boxes, drawn, strict=True):
        assert box == pytest.approx(expected, abs=12)
    assert all(block.locator.page is None for block in section.blocks)


def test_the_image_itself_is_kept_as_an_asset_with_its_ocr_text() -> None:
    data, _ = notice_png()
    parsed = parse_image(data)
    [asset] = parsed.assets
    assert asset.data == data
    assert (asset.media_type, asset.width, asset.height) == ("image/png", 900, 260)
    assert (asset.section, asset.block) == (0, None)
    assert asset.ocr_text == parsed.sections[0].text
    assert asset.locator.page is None


@pytest.mark.parametrize(
    ("name", "format", "media_type"),
    [("photo.jpg", "JPEG", "image/jpeg"), ("photo.JPEG", "JPEG", "image/jpeg"),
     ("photo.webp", "WEBP", "image/webp")],
)
def test_jpeg_and_webp_keep_their_bytes_and_media_type(
    name: str, format: str, media_type: str
) -> None:
    picture, _ = draw_text(NOTICE, size=(900, 260), font_size=36)
    data = encoded(picture, format, quality=95)
    parsed = parse_document(name, data)
    assert parsed.media_type == media_type
    assert parsed.assets[0].data == data
    assert parsed.assets[0].media_type == media_type
    assert "Monday" in parsed.sections[0].text


@pytest.mark.skipif(cjk_font_path() is None, reason="no CJK font on this machine (fc-list)")
def test_chinese_text_in_an_image_is_read() -> None:
    picture, _ = draw_text([("访客无线网络每周一更换密码", (60, 60))], size=(900, 200),
                           font_size=44, cjk=True)
    parsed = parse_image(encoded(picture))
    assert parsed.sections[0].text == "访客无线网络每周一更换密码"


def test_a_photo_is_read_upright_as_its_exif_orientation_says() -> None:
    picture, _ = draw_text(NOTICE, size=(900, 260), font_size=36)
    sideways = picture.rotate(90, expand=True)  # stored turned left: 260 x 900 pixels
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    data = encoded(sideways, "JPEG", quality=95, exif=exif.tobytes())
    parsed = parse_document("phone.jpg", data)
    assert "Monday" in parsed.sections[0].text
    [asset] = parsed.assets
    assert (asset.width, asset.height) == (900, 260)
    assert asset.data == data


def test_text_on_a_transparent_background_is_read() -> None:
    picture, _ = draw_text(NOTICE, size=(900, 260), font_size=36)
    # black text on fully transparent black: without flattening onto white it reads as black
    black = Image.new("L", picture.size, 0)
    alpha = picture.convert("L").point(lambda value: 255 - value)
    rgba = Image.merge("RGBA", (black, black, black, alpha))
    parsed = parse_image(encoded(rgba))
    assert "Monday" in parsed.sections[0].text


def test_each_tiff_page_is_a_section_with_its_page_number_and_a_png_asset() -> None:
    data = tiff_pages([("Badge office floor two", (40, 60))], [("Printer room 4711", (40, 60))])
    parsed = parse_document("scan.tiff", data)
    assert parsed.media_type == "image/tiff"
    assert [section.locator.page for section in parsed.sections] == [1, 2]
    assert squeezed(parsed.sections[0].text) == squeezed("Badge office floor two")
    assert squeezed(parsed.sections[1].text) == squeezed("Printer room 4711")
    assert [block.locator.page for block in parsed.sections[1].blocks] == [2]
    assert [(asset.locator.page, asset.section) for asset in parsed.assets] == [(1, 0), (2, 1)]
    for asset in parsed.assets:
        assert asset.media_type == "image/png"
        with Image.open(io.BytesIO(asset.data)) as png:
            assert (png.format, png.size) == ("PNG", (800, 200))


def test_image_extensions_are_registered() -> None:
    assert media_type_for("scan.TIF") == "image/tiff"
    assert media_type_for("a/b/photo.jpeg") == "image/jpeg"
    assert media_type_for("x.webp") == "image/webp"


# --- limits and bad images -------------------------------------------------------------------


def test_a_decompression_bomb_is_rejected_from_its_header_without_decoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_decoding(*_: Any) -> None:
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    bomb = declared_png(100_000, 100_000)  # 10 G pixels declared in 100 bytes
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_IMAGE_PIXELS"):
        parse_document("bomb.png", bomb)
    assert ParseLimits().max_image_pixels == Image.MAX_IMAGE_PIXELS


def test_a_decompression_bomb_reason_quotes_only_our_pixel_limit() -> None:
    """Pillow refuses from twice our limit and names its own threshold; the reason must quote
    one limit, the setting's, and the size the header declares."""
    bomb = declared_png(100_000, 100_000)
    with pytest.raises(DocumentRejected) as caught:
        parse_image(bomb, ParseLimits(max_image_pixels=1_000_000))
    reason = str(caught.value)
    assert "over the limit of 1,000,000 pixels" in reason
    assert "10,000,000,000" in reason  # what the header declares
    numbers = {n.replace(",", "") for n in re.findall(r"\d[\d,]*\d", reason)}
    assert "2000000" not in numbers  # Pillow's threshold, twice ours
    assert numbers <= {"1000000", "10000000000"}


def test_an_image_just_over_the_pixel_limit_is_rejected() -> None:
    picture = Image.new("RGB", (40, 30), "white")  # 1,200 pixels: over 1,000, under 2,000
    with pytest.raises(DocumentRejected, match=r"40 x 30 = 1,200 pixels.*RAGSIFT_MAX_IMAGE"):
        parse_image(encoded(picture), ParseLimits(max_image_pixels=1_000))


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n" + bytes(range(200)), b"\xff\xd8\xff\xe0" + bytes(100),
     b"II*\x00" + bytes(range(100))],
)
def test_a_corrupt_image_is_rejected(data: bytes) -> None:
    with pytest.raises(DocumentRejected, match="image is corrupt"):
        parse_document("broken.png", data)


def test_a_truncated_image_is_rejected() -> None:
    data, _ = notice_png()
    with pytest.raises(DocumentRejected, match="corrupt or truncated"):
        parse_document("cut.png", data[: len(data) // 2])


def test_a_file_of_another_format_under_an_image_name_is_rejected() -> None:
    gif = encoded(Image.new("P", (200, 200)), "GIF")
    with pytest.raises(DocumentRejected, match="not an image of a supported format"):
        parse_document("animation.png", gif)


def test_an_image_without_text_is_rejected() -> None:
    blank = encoded(Image.new("RGB", (400, 300), "white"))
    with pytest.raises(DocumentRejected, match="no text found in the image by OCR"):
        parse_document("blank.png", blank)


def test_ocr_turned_off_rejects_an_image_naming_the_setting() -> None:
    data, _ = notice_png()
    with pytest.raises(DocumentRejected, match="RAGSIFT_OCR=off"):
        parse_image(data, ParseLimits(ocr="off"))


def test_ocr_not_installed_rejects_an_image_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    data, _ = notice_png()
    with pytest.raises(DocumentRejected, match=r"pip install 'ragsift\[ocr\]'"):
        parse_document("wifi.png", data)


def test_tiff_pages_count_against_the_block_limit() -> None:
    data = tiff_pages([("Page one", (40, 60))], [("Page two", (40, 60))])
    with pytest.raises(DocumentRejected, match="RAGSIFT_MAX_DOCUMENT_BLOCKS"):
        parse_image(data, ParseLimits(max_document_blocks=1))


def test_tiff_pages_over_the_asset_limit_are_not_kept_as_images_with_one_warning() -> None:
    data = tiff_pages(
        [("Page one", (40, 60))], [("Page two", (40, 60))], [("Page three", (40, 60))]
    )
    parsed = parse_image(data, ParseLimits(max_assets=1))
    assert len(parsed.sections) == 3
    assert [asset.locator.page for asset in parsed.assets] == [1]
    assert [warning for warning in parsed.warnings if "RAGSIFT_MAX_ASSETS" in warning] == [
        "more than 1 pages: only the first kept as images (RAGSIFT_MAX_ASSETS)"
    ]


def test_an_image_is_rejected_when_its_ocr_budget_is_spent_before_it_starts() -> None:
    data, _ = notice_png()
    with pytest.raises(DocumentRejected, match="RAGSIFT_OCR_TIMEOUT_S"):
        parse_image(data, ParseLimits(ocr_timeout_s=1e-9))


def test_ocr_taking_longer_than_its_limit_skips_the_remaining_pages_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_read_lines = ocr.read_lines

    def slow_read_lines(*args: Any, **kwargs: Any) -> Any:
        lines = real_read_lines(*args, **kwargs)
        time.sleep(0.6)  # this page's OCR overruns the document's 0.5 s budget
        return lines

    monkeypatch.setattr(image_parser, "read_lines", slow_read_lines)
    data = tiff_pages(
        [("Page one", (40, 60))], [("Page two", (40, 60))], [("Page three", (40, 60))]
    )
    parsed = parse_image(data, ParseLimits(ocr_timeout_s=0.5))
    assert [section.locator.page for section in parsed.sections] == [1]
    assert parsed.warnings == (
        "OCR stopped after its time limit of 0.5 s (RAGSIFT_OCR_TIMEOUT_S): 2 pages not read",
    )
