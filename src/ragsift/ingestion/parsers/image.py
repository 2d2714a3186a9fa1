"""Image files (.png .jpg .jpeg .webp .tif .tiff) as documents: their text, read by OCR.

Pillow opens the file with only the decoders of these four formats (a file of any other format,
whatever its name, is rejected before another decoder sees it), and its decompression-bomb limit
is set to limits.max_image_pixels (RAGSIFT_MAX_IMAGE_PIXELS): the size declared in the header is
checked before any pixel is decoded. Each frame of a multi-page TIFF is a page; other formats are
read by their first frame (an animated PNG or WebP is a picture, not pages).

OCR is optional (ocr.py): without it, or with RAGSIFT_OCR=off, an image file is rejected with
the reason. OCR time per document is bounded by limits.ocr_timeout_s; TIFF pages that would
start after it are skipped with a warning.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import ParsedAsset, ParsedDocument, Section
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject
from ragsift.ingestion.parsers.ocr import (
    OcrBudget,
    OcrTimeout,
    lines_to_blocks,
    ocr_unavailable_reason,
    read_lines,
)

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

MEDIA_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
}
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "TIFF": "image/tiff"}
# PNG can hold these modes as they are; other frames (CMYK, 16-bit) are stored as RGB.
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA"})
_ORIENTATION = 0x0112  # the EXIF tag
_MAX_REASON = 160
# Pillow's DecompressionBombError text: "Image size (N pixels) exceeds limit of M pixels, ..."
_PILLOW_SIZE = re.compile(r"Image size \((\d+) pixels\)")


def parse_image(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """OCR an image file: one Section per frame (a TIFF's frame N is page N), made of the
    paragraph blocks of its OCR lines, plus the image itself as a ParsedAsset per frame.

    Boxes are in the image's pixels (origin top-left). A single image has no page: its section,
    blocks and asset have page None; TIFF pages have page N, from 1. The asset keeps the
    original bytes of a PNG, JPEG or WebP; a TIFF page is converted to PNG (browsers show no
    TIFF). It is kept whatever its size (it is the document, not an icon in one). A photo with
    an EXIF orientation is read upright, and boxes, width and height are those of the upright
    image (as browsers display the original bytes).
    """
    image = _open(data, limits)
    reason = ocr_unavailable_reason(limits)
    if reason is not None:
        raise DocumentRejected(f"cannot read text from an image: {reason}")
    pages = _Pages(data, _FORMATS[str(image.format)], image.format == "TIFF", limits)
    for number in _frames(image, pages.multipage, pages.text_budget, pages.warnings):
        pages.add(image, number)
    return pages.document()


class _Pages:
    """The sections, assets and warnings of an image document, frame by frame."""

    def __init__(self, data: bytes, media_type: str, multipage: bool, limits: ParseLimits):
        self.data, self.media_type, self.limits = data, media_type, limits
        self.multipage = multipage
        self.ocr_budget, self.text_budget = OcrBudget(limits), TextBudget(limits)
        self.sections: list[Section] = []
        self.assets: list[ParsedAsset] = []
        self.warnings: list[str] = []
        self.skipped = 0
        self._assets_cut = False
        self._unit = "pages" if multipage else "images"

    def add(self, image: Image.Image, number: int) -> None:
        """OCR the current frame of `image` (page `number`) unless the OCR budget is spent."""
        page = number if self.multipage else None
        if self.skipped or self.ocr_budget.exhausted():
            self.skipped += 1
            return
        try:
            _check_size(image, self.limits)  # each TIFF page declares its own size
            frame = _decoded(image)
        except DocumentRejected:
            raise
        except Exception as exc:
            if number == 1:
                raise DocumentRejected(f"image is corrupt or truncated ({_reason(exc)})") from exc
            self.warnings.append(f"page {number} of the image is corrupt and was skipped")
            return
        try:
            blocks = lines_to_blocks(read_lines(frame, self.ocr_budget), page=page)
        except OcrTimeout:
            self.skipped += 1
            return
        section = Section.of_blocks((), Locator(page=page), blocks)
        index: int | None = None
        if section.blocks:
            self.text_budget.add_chars(len(section.text))
            index = len(self.sections)
            self.sections.append(section)
        self._add_asset(image, frame, page, section.text, index)

    def _add_asset(
        self, image: Image.Image, frame: Image.Image, page: int | None, text: str,
        section: int | None,
    ) -> None:
        if len(self.assets) >= self.limits.max_assets:
            if not self._assets_cut:
                self._assets_cut = True
                self.warnings.append(f"more than {self.limits.max_assets} pages: only the "
                                     "first kept as images (RAGSIFT_MAX_ASSETS)")
            return
        if self.multipage:
            # `image` is still at this page: keep its own mode when PNG can hold it (a 1-bit
            # scan stays 1-bit) and it needs no turning upright, else the decoded RGB frame.
            as_is = image.mode in _PNG_MODES and image.size == frame.size
            data = _png_bytes(image if as_is and _upright(image) else frame)
        else:
            data = self.data
        media_type = "image/png" if self.multipage else self.media_type
        self.assets.append(ParsedAsset(
            data, media_type, frame.width, frame.height, Locator(page=page), ocr_text=text,
            section=section,
        ))

    def document(self) -> ParsedDocument:
        if self.skipped:
            self.warnings.append(self.ocr_budget.skipped_warning(self.skipped, self._unit))
        if not self.sections:
            if self.skipped:
                raise reject(self.ocr_budget.skipped_warning(self.skipped, self._unit))
            raise DocumentRejected("no text found in the image by OCR")
        return ParsedDocument(
            self.media_type, tuple(self.sections), tuple(self.assets), tuple(self.warnings)
        )


def _open(data: bytes, limits: ParseLimits) -> Image.Image:
    """Open the image (header only) and check its declared size against max_image_pixels."""
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels
    try:
        with warnings.catch_warnings(record=True) as caught:
            # Pillow warns from the limit to twice it, raises above: _check_size rejects both.
            warnings.simplefilter("always")
            image = Image.open(io.BytesIO(data), formats=list(_FORMATS))
        for warning in caught:  # e.g. "Corrupt EXIF data": the pixels may still be good
            logger.debug("Pillow: %s", warning.message)
    except Image.DecompressionBombError as exc:
        raise reject(_bomb_reason(exc, limits)) from exc
    except UnidentifiedImageError as exc:  # Pillow reports any failure to read a header so
        if any(data.startswith(signature) for signature in _SIGNATURES) or _is_webp(data):
            raise DocumentRejected("image is corrupt (its header cannot be read)") from exc
        raise DocumentRejected(
            "file is not an image of a supported format (PNG, JPEG, WebP, TIFF)"
        ) from exc
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError... for bad headers
        raise DocumentRejected(f"image is corrupt or truncated ({_reason(exc)})") from exc
    _check_size(image, limits)
    return image


def _check_size(image: Image.Image, limits: ParseLimits) -> None:
    pixels = image.width * image.height
    if pixels > limits.max_image_pixels:
        raise reject(
            f"image is {image.width:,} x {image.height:,} = {pixels:,} pixels, over the limit "
            f"of {limits.max_image_pixels:,} (RAGSIFT_MAX_IMAGE_PIXELS)"
        )


def _bomb_reason(exc: BaseException, limits: ParseLimits) -> str:
    """The reason for an image Pillow refused as a bomb, quoting our limit only: Pillow's own
    message names its error threshold (twice ours), a second limit that would confuse."""
    declared = _PILLOW_SIZE.search(str(exc))
    size = f" (it declares {int(declared.group(1)):,})" if declared else ""
    return (
        f"image is over the limit of {limits.max_image_pixels:,} pixels{size} "
        "(RAGSIFT_MAX_IMAGE_PIXELS)"
    )


def _frames(
    image: Image.Image, multipage: bool, budget: TextBudget, warnings_: list[str]
) -> Iterator[int]:
    """Seek `image` to each of its frames in turn, yielding its number from 1 (a TIFF's pages,
    counted against max_document_blocks; other formats: the first frame only)."""
    number = 1
    while True:
        if multipage:
            budget.add_block("pages")
        yield number
        if not multipage:
            return
        try:
            image.seek(number)
        except EOFError:
            return
        except Exception as exc:  # a broken page directory: keep the pages before it
            warnings_.append(f"pages after {number} of the image are unreadable ({_reason(exc)})")
            return
        number += 1


def _decoded(image: Image.Image) -> Image.Image:
    """The current frame decoded as RGB, turned upright as its EXIF orientation says (as a
    browser shows it, so boxes match what is displayed); transparency is flattened onto white."""
    from PIL import Image, ImageOps

    image.load()
    image = ImageOps.exif_transpose(image)
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, "white")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def _upright(image: Image.Image) -> bool:
    return bool(image.getexif().get(_ORIENTATION, 1) == 1)


def _is_webp(data: bytes) -> bool:
    return data[:4] == b"RIFF" and data[8:12] == b"WEBP"


def _png_bytes(frame: Image.Image) -> bytes:
    out = io.BytesIO()
    frame.save(out, format="PNG")
    return out.getvalue()


def _reason(exc: BaseException) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:_MAX_REASON]
