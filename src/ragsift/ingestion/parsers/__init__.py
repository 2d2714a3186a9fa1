"""File parsers: bytes of a supported file to a ParsedDocument, or DocumentRejected with a reason.

Dispatch is by file extension, case-insensitive. Every failure, including an unexpected error
inside a parsing library, surfaces as DocumentRejected with a message a user can act on; the
original exception stays attached as its cause and is logged. What parsing one file may cost
(inflated bytes, elements, blocks, characters) is bounded by ParseLimits (limits.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers import (
    csvfile,
    docx,
    html,
    image,
    jsonrecords,
    markdown,
    pdf,
    pptx,
    txt,
    xlsx,
)
from ragsift.ingestion.parsers.base import ParsedDocument, Section
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "ParseLimits",
    "ParsedDocument",
    "Section",
    "media_type_for",
    "parse_document",
]

logger = logging.getLogger(__name__)

_Parser = Callable[[bytes, ParseLimits], ParsedDocument]

_FORMATS: dict[str, tuple[str, _Parser]] = {
    ".txt": (txt.MEDIA_TYPE, txt.parse_txt),
    ".md": (markdown.MEDIA_TYPE, markdown.parse_markdown),
    ".markdown": (markdown.MEDIA_TYPE, markdown.parse_markdown),
    ".html": (html.MEDIA_TYPE, html.parse_html),
    ".htm": (html.MEDIA_TYPE, html.parse_html),
    ".pdf": (pdf.MEDIA_TYPE, pdf.parse_pdf),
    ".docx": (docx.MEDIA_TYPE, docx.parse_docx),
    ".pptx": (pptx.MEDIA_TYPE, pptx.parse_pptx),
    ".xlsx": (xlsx.MEDIA_TYPE, xlsx.parse_xlsx),
    ".csv": (csvfile.MEDIA_TYPE, csvfile.parse_csv),
    ".json": (jsonrecords.MEDIA_TYPE, jsonrecords.parse_json),
    ".jsonl": (jsonrecords.JSONL_MEDIA_TYPE, jsonrecords.parse_jsonl),
    **{extension: (media, image.parse_image) for extension, media in image.MEDIA_TYPES.items()},
}

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_FORMATS)


def media_type_for(filename: str) -> str:
    """The media type ragsift parses a file as, from its extension."""
    return _FORMATS[_extension(filename)][0]


def parse_document(
    filename: str, data: bytes, limits: ParseLimits | None = None
) -> ParsedDocument:
    """Parse a file's bytes into sections; raises DocumentRejected with a human reason.

    `limits` bounds what parsing may cost (default: ParseLimits()); a file over one is rejected
    with the limit, its RAGSIFT_ setting and the numbers in the reason.
    """
    media_type, parser = _FORMATS[_extension(filename)]
    if not data or data.isspace():
        raise DocumentRejected("file is empty")
    try:
        parsed = parser(data, DEFAULT_LIMITS if limits is None else limits)
    except DocumentRejected as exc:
        logger.info("rejected %s: %s", filename, exc)
        raise
    except Exception as exc:
        logger.exception("unexpected error while parsing %s as %s", filename, media_type)
        raise DocumentRejected(f"could not parse the file as {media_type}: {exc}") from exc
    if not parsed.sections:
        raise DocumentRejected("no extractable text")
    logger.debug("parsed %s: %d sections", filename, len(parsed.sections))
    return parsed


def _extension(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    if "." not in name.strip("."):
        raise DocumentRejected(f"file name has no extension; supported: {supported}")
    extension = "." + name.rsplit(".", 1)[1].lower()
    if extension not in _FORMATS:
        raise DocumentRejected(f"unsupported file type {extension!r}; supported: {supported}")
    return extension
