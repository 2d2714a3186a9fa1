"""What reading one file may cost: sizes, counts and depths past which a file is cut or FAILED."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class ParseLimitSettings(Concern):
    """Parse limits."""

    max_file_bytes: int = Field(
        default=50 * 1024 * 1024, ge=1,
        description="largest file accepted, in bytes; a larger one is refused",
    )
    # what parsing one file may cost (ragsift.ingestion.parsers.limits.ParseLimits); a file
    # under max_file_bytes can still inflate without bound
    max_uncompressed_bytes: int = Field(
        default=200 * 1024 * 1024, ge=1,
        description="a DOCX's members together as its ZIP directory declares them, and a PDF's "
        "decoded content streams together",
    )
    max_compression_ratio: float = Field(
        default=100.0, gt=1, description="inflated / compressed size of one DOCX member over 1 MiB"
    )
    max_container_members: int = Field(default=10_000, ge=1, description="entries of a DOCX")
    max_xml_depth: int = Field(
        default=128, ge=1, description="XML element nesting in a DOCX part (libxml2 stops at 256)"
    )
    max_xml_elements: int = Field(
        default=2_000_000, ge=1, description="XML elements of a DOCX's parts together"
    )
    max_html_elements: int = Field(
        default=500_000, ge=1, description="elements of an HTML file or a Markdown file's HTML"
    )
    max_document_blocks: int = Field(
        default=200_000, ge=1,
        description="DOCX paragraphs and table rows, PDF pages, non-blank Markdown lines",
    )
    max_document_chars: int = Field(
        default=20_000_000, ge=1, description="characters of text extracted from one file"
    )
    max_sheet_rows: int = Field(
        default=100_000, ge=1, description="rows read of one sheet (xlsx, csv); cut with a warning"
    )
    max_sheet_columns: int = Field(
        default=200, ge=1, description="columns read of one sheet; cut with a warning"
    )
    max_sheet_cells: int = Field(
        default=2_000_000, ge=1, description="cells of all sheets of a file; over it, FAILED"
    )
    max_slides: int = Field(default=2_000, ge=1, description="slides of a deck; over it, FAILED")
    max_image_pixels: int = Field(
        default=40_000_000, ge=1,
        description="pixels of one image (Pillow's decompression-bomb limit is set to it)",
    )
    min_asset_pixels: int = Field(
        default=10_000, ge=1, description="smaller embedded images (icons, rules) are not kept"
    )
    max_assets: int = Field(default=500, ge=1, description="embedded images kept per document")
