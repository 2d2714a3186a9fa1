"""Plain text: one section with no heading path; blank lines separate paragraphs."""

from __future__ import annotations

from ragsift.ingestion.parsers.base import ParsedDocument, SectionBuilder
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget

MEDIA_TYPE = "text/plain"


def parse_txt(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a plain-text file; single line breaks are kept as they are."""
    builder = SectionBuilder(budget=TextBudget(limits))
    builder.add_block(decode_text(data))
    return ParsedDocument(media_type=MEDIA_TYPE, sections=builder.sections())
