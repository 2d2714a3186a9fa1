"""The one way a chunk is made from a section's text, shared by both chunkers.

Its own module so that the block packer (blocks.py) and the sentence chunker (chunking.py),
which hands it sections, need not import each other.
"""

from __future__ import annotations

from ragsift.domain.models import Chunk, Locator, chunk_id
from ragsift.ingestion.parsers.base import Section


def make_chunk(
    document_id: str, kb_id: str, parent_id: str | None, level: int, ordinal: int,
    section: Section, text: str, tokens: int, locator: Locator | None = None,
) -> Chunk:
    """A chunk of `section`, located where the section is unless `locator` is given."""
    return Chunk(
        id=chunk_id(document_id, level, ordinal, text),
        document_id=document_id,
        kb_id=kb_id,
        parent_id=parent_id,
        level=level,
        ordinal=ordinal,
        heading_path=section.heading_path,
        locator=section.locator if locator is None else locator,
        text=text,
        token_count=tokens,
    )
