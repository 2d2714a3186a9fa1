"""Images drawn on PDF pages (PDFium image objects), their captions and their OCR text.

An image is located by its bounding box on the page (top-left origin, like the text lines; the
matrices of the form XObjects around it are applied). JPEG streams (DCTDecode alone, RGB or
grey) are kept as they are; any other image is decoded by PDFium and stored as PNG. The pixel
size an image declares is checked against max_image_pixels before it is decoded (a larger one is
skipped with a warning) and against min_asset_pixels (a smaller one is dropped unread), and a
stream that decodes to fewer bytes than its pixels need is corrupt (PDFium would draw it black):
skipped with a warning. The same stream drawn again (a logo on every page) is read once.

A caption is a paragraph starting "Figure 1", "Fig. 2", "Table 3", "图 1", "表 2" ... just below
(preferred) or above the image and overlapping it horizontally.
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
import re
import warnings as py_warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.domain.models import Box
from ragsift.ingestion.parsers.base import Block, normalize_inline
from ragsift.ingestion.parsers.limits import ParseLimits
from ragsift.ingestion.parsers.ocr import OcrBudget, lines_to_blocks, read_lines

if TYPE_CHECKING:
    from PIL import Image

    from ragsift.ingestion.parsers.pdf_layout import PageFrame

logger = logging.getLogger(__name__)

CAPTION_GAP = 36.0  # points between an image and its caption, at most
MAX_CAPTION_CHARS = 300
MIN_OCR_SIZE = (200, 100)  # smaller images are not OCRed (icons, small logos)
_CAPTION = re.compile(
    r"^(?:图|圖|表|figure|fig\.?|table|chart|diagram|exhibit)\s*[0-9一二三四五六七八九十IVX]",
    re.IGNORECASE,
)
_RGB_OR_GREY = (1, 2, 7)  # FPDF_COLORSPACE_DEVICEGRAY, _DEVICERGB, _ICCBASED
_KEEP_JPEG = (0, *_RGB_OR_GREY)  # ... and _UNKNOWN (PDFium could not read the JPEG's header)


class ImageSkipped(Exception):
    """An image that cannot be read; the message is the reason (for a warning)."""


@dataclass(frozen=True, slots=True)
class PageImage:
    what: str  # "image 2 on page 3", for warnings
    box: Box
    data: bytes  # JPEG or PNG


class PageImageReader:
    """Reads the images of a document's pages; a stream drawn again is read once."""

    def __init__(self, limits: ParseLimits, warn: Callable[[str], None]) -> None:
        self._limits = limits
        self._warn = warn
        self._seen: set[str] = set()

    def read(self, page: Any, frame: PageFrame, number: int) -> list[PageImage]:
        import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

        images: list[PageImage] = []
        for index, image in enumerate(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE])):
            what = f"image {index + 1} on page {number}"
            try:
                found = self._read(image, frame, what)
            except ImageSkipped as exc:
                self._warn(f"{what} skipped: {exc}")
                continue
            except Exception as exc:  # PdfiumError and what a broken stream makes of PDFium
                self._warn(f"{what} skipped: image is corrupt ({_reason(exc)})")
                continue
            if found is not None:
                images.append(found)
        return images

    def _read(self, image: Any, frame: PageFrame, what: str) -> PageImage | None:
        width, height = image.get_px_size()
        if width * height > self._limits.max_image_pixels:
            raise ImageSkipped(
                f"image is {width}x{height} pixels, over {self._limits.max_image_pixels:,} "
                "(RAGSIFT_MAX_IMAGE_PIXELS)"
            )
        if width * height < self._limits.min_asset_pixels:
            return None
        stream = bytes(image.get_data(decode_simple=False))
        digest = hashlib.sha256(f"{width}x{height}:".encode() + stream).hexdigest()
        if digest in self._seen:
            return None
        self._seen.add(digest)
        data = _encoded(image, width, height, self._limits)
        return PageImage(what, _page_box(image, frame), data)


def _page_box(image: Any, frame: PageFrame) -> Box:
    left, bottom, right, top = image.get_bounds()
    corners = [(left, bottom), (left, top), (right, bottom), (right, top)]
    container = image.container
    while container is not None:  # bounds are in the space of the form drawing the image
        matrix = container.get_matrix()
        corners = [matrix.on_point(x, y) for x, y in corners]
        container = container.container
    xs = [x for x, _ in corners]
    ys = [y for _, y in corners]
    return frame.box(min(xs), min(ys), max(xs), max(ys))


def _encoded(image: Any, width: int, height: int, limits: ParseLimits) -> bytes:
    """The image as JPEG (its own stream) or PNG bytes."""
    from PIL import Image

    filters = image.get_filters(skip_simple=True)
    metadata = image.get_metadata()
    if filters == ["DCTDecode"] and metadata.colorspace in _KEEP_JPEG:
        data = bytes(image.get_data(decode_simple=True))
        _check_jpeg(data, limits)
        return data
    pixels: Image.Image | None = None
    if not filters:  # only simple filters (Flate, LZW ...): the decoded samples are at hand
        samples = bytes(image.get_data(decode_simple=True))
        bits = int(metadata.bits_per_pixel)
        if len(samples) < math.ceil(width * bits / 8) * height:
            raise ImageSkipped("image is corrupt (its stream decodes to too few bytes)")
        mode = {24: "RGB", 8: "L"}.get(bits)
        if mode is not None and metadata.colorspace in _RGB_OR_GREY:
            pixels = Image.frombytes(mode, (width, height), samples[: width * height * bits // 8])
    if pixels is None:
        try:
            bitmap = image.get_bitmap(render=False)
        except Exception as exc:  # PdfiumError: it says no more than that it failed
            raise ImageSkipped("image is corrupt (PDFium cannot decode it)") from exc
        pixels = bitmap.to_pil()
    out = io.BytesIO()
    # zlib level 1: 1.5-4x faster than Pillow's default 6 on diagrams and photos, files
    # within about 20 percent of its size (parse time is paid on every ingest)
    pixels.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _check_jpeg(data: bytes, limits: ParseLimits) -> None:
    """Decode a JPEG at 1/8 scale (cheap: the DCT scales down as it decodes) to find out
    whether it is whole; opening and verifying reads only its header."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels  # set per document (process-wide)
    try:
        with py_warnings.catch_warnings():
            py_warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                opened.draft(opened.mode, (opened.width // 8 or 1, opened.height // 8 or 1))
                opened.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageSkipped(
            f"image is over {limits.max_image_pixels:,} pixels (RAGSIFT_MAX_IMAGE_PIXELS)"
        ) from exc
    except Exception as exc:  # OSError, SyntaxError ... from a broken JPEG
        raise ImageSkipped(f"image is corrupt ({_reason(exc)})") from exc


def caption_block(box: Box, paragraphs: Sequence[Block]) -> int | None:
    """Index of a caption paragraph just below (else just above) the image; None if none."""
    below: list[tuple[float, int]] = []
    above: list[tuple[float, int]] = []
    for index, block in enumerate(paragraphs):
        if not _CAPTION.match(block.text) or not block.locator.boxes:
            continue
        extent = _union(block.locator.boxes)
        if extent[2] < box[0] or extent[0] > box[2]:
            continue
        if 0 <= extent[1] - box[3] <= CAPTION_GAP:
            below.append((extent[1] - box[3], index))
        elif 0 <= box[1] - extent[3] <= CAPTION_GAP:
            above.append((box[1] - extent[3], index))
    for found in (below, above):
        if found:
            return min(found)[1]
    return None


def caption_text(block: Block) -> str:
    return normalize_inline(block.text)[:MAX_CAPTION_CHARS]


def nearest_block(box: Box, paragraphs: Sequence[Block]) -> int | None:
    """Index of the paragraph whose lines come closest to the image; None if there are none."""
    best: tuple[float, int] | None = None
    for index, block in enumerate(paragraphs):
        if not block.locator.boxes:
            continue
        distance = min(_distance(box, line) for line in block.locator.boxes)
        if best is None or distance < best[0]:
            best = (distance, index)
    return None if best is None else best[1]


def ocr_text(data: bytes, limits: ParseLimits, budget: OcrBudget) -> str:
    """What OCR reads in an encoded image ("" for a small one); raises ocr.OcrTimeout."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels  # set per document (process-wide)
    try:
        with py_warnings.catch_warnings():
            py_warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                if opened.width < MIN_OCR_SIZE[0] or opened.height < MIN_OCR_SIZE[1]:
                    return ""
                pixels = opened.convert("RGB")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return ""  # AssetCollector checked the size already; a second opinion is not text
    blocks = lines_to_blocks(read_lines(pixels, budget))
    return "\n".join(block.text for block in blocks)


def _union(boxes: Sequence[Box]) -> Box:
    return (
        min(b[0] for b in boxes), min(b[1] for b in boxes),
        max(b[2] for b in boxes), max(b[3] for b in boxes),
    )


def _distance(a: Box, b: Box) -> float:
    dx = max(0.0, a[0] - b[2], b[0] - a[2])
    dy = max(0.0, a[1] - b[3], b[1] - a[3])
    return math.hypot(dx, dy)


def _reason(exc: Exception) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:120]
