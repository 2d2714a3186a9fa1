"""Resource limits for parsing untrusted files, and the checks that enforce them.

RAGSIFT_MAX_FILE_BYTES bounds what is read, not what parsing makes of it: a DOCX (a ZIP
container) inflates to whatever its members hold, PDF streams are compressed, and the markup
parsers build object trees far larger than their input (about 170 bytes per XML element in lxml,
1 KB per HTML element in BeautifulSoup, 2 KB per Markdown line in markdown-it). Each limit below
is checked before or while the work it bounds is done, never after; a breach is a
DocumentRejected naming the limit, its setting and the numbers.
"""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ragsift.domain.errors import DocumentRejected

if TYPE_CHECKING:
    from ragsift.config import Settings

logger = logging.getLogger(__name__)

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """What one document may cost to parse; every field is a RAGSIFT_ setting of the same name.

    - max_uncompressed_bytes: a DOCX's members together (as its ZIP directory declares them),
      and a PDF's decoded page content streams together.
    - max_compression_ratio: inflated / compressed size of one ZIP member, for members larger
      than ratio_grace_bytes (small XML parts of repeated markup legitimately compress well).
    - max_container_members: entries in a ZIP container.
    - max_xml_depth: element nesting in any XML part of a DOCX (libxml2 itself stops at 256).
    - max_xml_elements: XML elements in all parts of a DOCX together (lxml builds a tree of them).
    - max_html_elements: elements of an HTML file, or of the HTML blocks of a Markdown file.
    - max_document_blocks: DOCX paragraphs and table rows, PDF pages, non-blank Markdown lines.
    - max_document_chars: characters of extracted text, every format.
    - max_sheet_rows / max_sheet_columns / max_sheet_cells: rows and columns read of one sheet
      (xlsx, csv) and cells of all sheets together; a sheet over a row or column limit is cut
      there with a warning, a document over the cell limit is rejected.
    - max_slides: slides of a deck.
    - max_image_pixels: pixels of one image (embedded or a file; Pillow's decompression-bomb
      limit is set to it); a larger embedded image is skipped with a warning, a larger image
      file rejected.
    - min_asset_pixels: smaller embedded images (icons, bullets, rules) are not kept as assets.
    - max_assets: embedded images kept per document (the rest skipped with a warning).
    - ocr: "auto" (OCR scanned pages and images when rapidocr is installed), "off".
    - ocr_min_chars: a PDF page with fewer text-layer characters than this is OCRed.
    - ocr_timeout_s: OCR time per document; pages past it are skipped with a warning.
    - ocr_render_dpi: resolution PDF pages are rendered at for OCR.
    """

    max_uncompressed_bytes: int = 200 * MIB
    max_compression_ratio: float = 100.0
    max_container_members: int = 10_000
    max_xml_depth: int = 128
    max_xml_elements: int = 2_000_000
    max_html_elements: int = 500_000
    max_document_blocks: int = 200_000
    max_document_chars: int = 20_000_000
    max_sheet_rows: int = 100_000
    max_sheet_columns: int = 200
    max_sheet_cells: int = 2_000_000
    max_slides: int = 2_000
    max_image_pixels: int = 40_000_000
    min_asset_pixels: int = 10_000  # 100 x 100
    max_assets: int = 500
    ocr: str = "auto"
    ocr_min_chars: int = 20
    ocr_timeout_s: float = 120.0
    ocr_render_dpi: int = 150
    ratio_grace_bytes: int = 1 * MIB

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, str):
                continue
            if value <= 0:
                raise ValueError(f"ParseLimits.{field.name} must be positive")
        if self.ocr not in ("auto", "off"):
            raise ValueError("ParseLimits.ocr must be 'auto' or 'off'")

    @classmethod
    def from_settings(cls, settings: Settings) -> ParseLimits:
        """The limits a Settings object configures (ratio_grace_bytes keeps its default)."""
        return cls(
            max_uncompressed_bytes=settings.max_uncompressed_bytes,
            max_compression_ratio=settings.max_compression_ratio,
            max_container_members=settings.max_container_members,
            max_xml_depth=settings.max_xml_depth,
            max_xml_elements=settings.max_xml_elements,
            max_html_elements=settings.max_html_elements,
            max_document_blocks=settings.max_document_blocks,
            max_document_chars=settings.max_document_chars,
            max_sheet_rows=settings.max_sheet_rows,
            max_sheet_columns=settings.max_sheet_columns,
            max_sheet_cells=settings.max_sheet_cells,
            max_slides=settings.max_slides,
            max_image_pixels=settings.max_image_pixels,
            min_asset_pixels=settings.min_asset_pixels,
            max_assets=settings.max_assets,
            ocr=settings.ocr,
            ocr_min_chars=settings.ocr_min_chars,
            ocr_timeout_s=settings.ocr_timeout_s,
            ocr_render_dpi=settings.ocr_render_dpi,
        )


DEFAULT_LIMITS = ParseLimits()


def reject(reason: str) -> DocumentRejected:
    """A DocumentRejected for a breached limit, logged as a warning (likely hostile input)."""
    logger.warning("parse limit exceeded: %s", reason)
    return DocumentRejected(reason)


def check_zip_container(archive: zipfile.ZipFile, limits: ParseLimits, kind: str) -> None:
    """Check a ZIP's central directory against the limits before any member is inflated.

    This bounds what reading the members costs only once each member is known to hold what it
    declares (ooxml.check_package reads them in small pieces to find out).
    """
    members = archive.infolist()
    if len(members) > limits.max_container_members:
        raise reject(
            f"{kind} has {len(members):,} members, over the limit of "
            f"{limits.max_container_members:,} (RAGSIFT_MAX_CONTAINER_MEMBERS)"
        )
    total = sum(member.file_size for member in members)
    if total > limits.max_uncompressed_bytes:
        raise reject(
            f"{kind} would inflate to {total:,} bytes, over the limit of "
            f"{limits.max_uncompressed_bytes:,} (RAGSIFT_MAX_UNCOMPRESSED_BYTES)"
        )
    for member in members:
        if member.file_size <= limits.ratio_grace_bytes:
            continue
        ratio = member.file_size / max(member.compress_size, 1)
        if ratio > limits.max_compression_ratio:
            raise reject(
                f"{kind} member {member.filename!r} is compressed {ratio:,.0f}:1 "
                f"({member.file_size:,} bytes from {member.compress_size:,}), over the limit of "
                f"{limits.max_compression_ratio:,g}:1 (RAGSIFT_MAX_COMPRESSION_RATIO)"
            )


class TextBudget:
    """Counts the blocks and characters a parser extracts; rejects the document once over."""

    def __init__(self, limits: ParseLimits) -> None:
        self._limits = limits
        self.chars = 0
        self.blocks = 0

    def add_chars(self, count: int) -> None:
        self.chars += count
        if self.chars > self._limits.max_document_chars:
            raise reject(
                f"extracted text exceeds {self._limits.max_document_chars:,} characters "
                "(RAGSIFT_MAX_DOCUMENT_CHARS)"
            )

    def add_block(self, unit: str) -> None:
        """Count one block; `unit` names what is counted ("pages", "paragraphs and rows")."""
        self.blocks += 1
        if self.blocks > self._limits.max_document_blocks:
            raise reject(
                f"document has more than {self._limits.max_document_blocks:,} {unit} "
                "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
            )
