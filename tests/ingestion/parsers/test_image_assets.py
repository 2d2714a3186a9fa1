"""images.py: probing embedded images with Pillow under the limits, and the per-document
AssetCollector (dedupe, minimum size, asset limit, warnings)."""

from __future__ import annotations

import dataclasses
import io

import pytest
from PIL import Image

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers import ParseLimits
from ragsift.ingestion.parsers.images import (
    AssetCollector,
    ImageError,
    alt_text,
    check_image,
    probe_image,
)

LIMITS = ParseLimits()


def encoded(width: int, height: int, fmt: str = "PNG", color: str = "gray") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_probe_reads_the_real_format_and_size(fmt: str, media_type: str) -> None:
    assert probe_image(encoded(321, 123, fmt), LIMITS) == (media_type, 321, 123)


def test_garbage_and_truncated_images_are_corrupt() -> None:
    data = encoded(200, 200, color="red")
    for bad in (b"not an image at all", data[: len(data) // 2]):
        assert probe_image(bad, LIMITS) is None
        with pytest.raises(ImageError, match="image is corrupt or not a supported format"):
            check_image(bad, LIMITS)


def test_an_image_over_the_pixel_limit_is_refused_before_decoding() -> None:
    data = encoded(300, 200)  # 60,000 pixels
    with pytest.raises(ImageError, match=r"300x200 pixels, over 50,000 \(RAGSIFT_MAX_IMAGE_PIX"):
        check_image(data, ParseLimits(max_image_pixels=50_000))
    # over twice the limit, Pillow itself refuses it as a decompression bomb
    with pytest.raises(ImageError, match=r"over 20,000 pixels \(RAGSIFT_MAX_IMAGE_PIXELS\)"):
        check_image(data, ParseLimits(max_image_pixels=20_000))
    assert check_image(data, ParseLimits(max_image_pixels=60_000)) == ("image/png", 300, 200)


def test_a_format_without_a_web_media_type_is_refused() -> None:
    with pytest.raises(ImageError, match="image format QOI is not supported"):
        check_image(encoded(200, 200, "QOI"), LIMITS)


def test_alt_text_skips_empty_values_and_bare_file_names() -> None:
    assert alt_text(None, "  ", "IMG_0042.JPG", " Org  chart\n2024 ") == "Org chart 2024"
    assert alt_text("image.png") == ""


def add(collector: AssetCollector, data: bytes, what: str = "image 1") -> bool:
    return collector.add(data, what=what, locator=Locator(slide=1)) is not None


def test_the_collector_keeps_each_image_once_and_drops_small_ones() -> None:
    collector = AssetCollector(ParseLimits(min_asset_pixels=5_000))
    big, small = encoded(100, 60, color="blue"), encoded(50, 50)
    assert [add(collector, data) for data in (big, small, big)] == [True, False, False]
    assert [asset.data for asset in collector.assets] == [big]
    assert collector.warnings == ()


def test_the_collector_warns_once_per_bad_image_and_counts_those_over_the_limit() -> None:
    collector = AssetCollector(ParseLimits(max_assets=1))
    collector.add(b"junk", what="picture 'x' on slide 2", locator=Locator(slide=2))
    collector.add(b"junk", what="picture 'y' on slide 3", locator=Locator(slide=3))
    kept = [add(collector, encoded(120, 100 + n)) for n in range(3)]
    assert kept == [True, False, False]
    assert len(collector.warnings) == 2
    assert collector.warnings[0].startswith("picture 'x' on slide 2 skipped: image is corrupt")
    assert collector.warnings[1] == (
        "2 more image(s) not kept: at most 1 per document (RAGSIFT_MAX_ASSETS)"
    )


def test_replace_swaps_a_kept_asset_in_place() -> None:
    collector = AssetCollector(LIMITS)
    first = collector.add(encoded(200, 100), what="a", locator=Locator(page=1), section=0)
    second = collector.add(encoded(100, 200), what="b", locator=Locator(page=2))
    assert first is not None and second is not None
    read = dataclasses.replace(first, ocr_text="Request -> Approve", block=3)
    collector.replace(first, read)
    assert collector.assets == (read, second)
    with pytest.raises(ValueError, match="not kept"):
        collector.replace(first, read)
