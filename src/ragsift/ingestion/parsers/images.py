"""Images embedded in a document, kept as ParsedAssets: probing and per-document bookkeeping.

Every parser that keeps images (DOCX, PPTX, PDF, OCR) goes through AssetCollector, so the rules
are the same everywhere:

- An image is probed with Pillow (`check_image`): its real format, width and height, read from
  its own bytes (the media type a package declares for a part is not trusted). Pillow's
  decompression-bomb limit is set to limits.max_image_pixels first; a larger image, a corrupt
  one and a format without a web media type (EMF, WMF) are skipped with a warning.
- Images under limits.min_asset_pixels (width * height: icons, bullets, rules) are dropped
  without a warning.
- The same bytes (sha256) are kept once per document: the first place they appear wins.
- At most limits.max_assets are kept; the rest are counted in one warning.

Pillow is imported when the first image is probed, so `import ragsift` does not load it.

    collector = AssetCollector(limits)
    collector.add(blob, what="image on slide 3", locator=Locator(slide=3), caption="Flow",
                  section=4)
    ParsedDocument(..., assets=collector.assets, warnings=collector.warnings)
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import warnings as py_warnings

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import ParsedAsset, normalize_inline
from ragsift.ingestion.parsers.limits import ParseLimits

logger = logging.getLogger(__name__)

# What editors write as a picture's description when nobody wrote one: its file name.
_FILE_NAME = re.compile(
    r"^[\w\-. ()]+\.(?:png|jpe?g|gif|bmp|tiff?|emf|wmf|svg|webp|heic)$", re.IGNORECASE
)


class ImageError(Exception):
    """An image that cannot be kept; the message is the reason (for a warning)."""


def check_image(data: bytes, limits: ParseLimits) -> tuple[str, int, int]:
    """(media type, width, height) of an encoded image; ImageError(reason) if unusable.

    The image is opened and verified (PNG chunk checksums, truncation), not decoded, so this
    costs little memory whatever the image's size.
    """
    from PIL import Image

    # Pillow's limit is process-wide, so it is set from this document's limits before every
    # open. Over twice the limit Pillow raises; between once and twice it only warns, and the
    # explicit check below (before any verification work) refuses the image instead.
    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels
    try:
        with py_warnings.catch_warnings():
            py_warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image_format = image.format or "unknown"
                media_type = Image.MIME.get(image_format, "")
                width, height = image.size
                if width * height > limits.max_image_pixels:
                    raise ImageError(
                        f"image is {width}x{height} pixels, over {limits.max_image_pixels:,} "
                        "(RAGSIFT_MAX_IMAGE_PIXELS)"
                    )
                image.verify()
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(
            f"image is over {limits.max_image_pixels:,} pixels (RAGSIFT_MAX_IMAGE_PIXELS)"
        ) from exc
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, struct.error...
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise ImageError(f"image is corrupt or not a supported format ({reason})") from exc
    if not media_type.startswith("image/"):
        raise ImageError(f"image format {image_format} is not supported")
    return media_type, width, height


def alt_text(*candidates: str | None) -> str:
    """The first candidate that is real alt text, normalised; a bare file name is not."""
    for candidate in candidates:
        text = normalize_inline(candidate or "")
        if text and not _FILE_NAME.match(text):
            return text
    return ""


def probe_image(data: bytes, limits: ParseLimits) -> tuple[str, int, int] | None:
    """check_image, or None for an unusable image (the reason is logged at debug level)."""
    try:
        return check_image(data, limits)
    except ImageError as exc:
        logger.debug("image skipped: %s", exc)
        return None


class AssetCollector:
    """The assets and warnings of one document, in the order the images were added."""

    def __init__(self, limits: ParseLimits) -> None:
        self._limits = limits
        self._assets: list[ParsedAsset] = []
        self._warnings: list[str] = []
        self._seen: set[str] = set()
        self._over_limit = 0

    @property
    def assets(self) -> tuple[ParsedAsset, ...]:
        return tuple(self._assets)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings added so far, with one for the images over max_assets if any."""
        if not self._over_limit:
            return tuple(self._warnings)
        return (*self._warnings, (
            f"{self._over_limit:,} more image(s) not kept: at most {self._limits.max_assets:,} "
            "per document (RAGSIFT_MAX_ASSETS)"
        ))

    def warn(self, message: str) -> None:
        """Record a warning of the document (the parser's own as well as the collector's)."""
        logger.info("document warning: %s", message)
        self._warnings.append(message)

    def add(
        self, data: bytes, *, what: str, locator: Locator, caption: str = "",
        section: int | None = None, block: int | None = None, ocr_text: str = "",
    ) -> ParsedAsset | None:
        """Keep an image; None when it is a duplicate, too small, over the limit or unusable.

        `what` names the image in a warning ("image 'logo.png' on slide 3").
        """
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._seen:
            return None
        self._seen.add(digest)  # a repeated bad or tiny image is judged (and warned of) once
        if len(self._assets) >= self._limits.max_assets:
            self._over_limit += 1
            return None
        try:
            media_type, width, height = check_image(data, self._limits)
        except ImageError as exc:
            self.warn(f"{what} skipped: {exc}")
            return None
        if width * height < self._limits.min_asset_pixels:
            logger.debug("%s not kept: %dx%d is under min_asset_pixels", what, width, height)
            return None
        asset = ParsedAsset(
            data=data, media_type=media_type, width=width, height=height, locator=locator,
            caption=caption, ocr_text=ocr_text, section=section, block=block,
        )
        self._assets.append(asset)
        return asset

    def replace(self, old: ParsedAsset, new: ParsedAsset) -> None:
        """Put `new` in the place of the kept asset `old` (e.g. once OCR has read it)."""
        for index, asset in enumerate(self._assets):
            if asset is old:
                self._assets[index] = new
                return
        raise ValueError("asset was not kept by this collector")
