"""Removing what an interrupted or failed write left in an index but not in the facts.

The facts are the source of truth: index rows of a document that no chunk row names were
written by an attempt that never committed (a kill, a full disk, an exception). Searches
already drop them (the READY and version re-checks), but they hold space and skew counts,
so a failure or the next process removes them.
"""

from __future__ import annotations

import logging

from ragsift.domain.models import Document
from ragsift.ports import ChunkListable, Repository, SearchIndex

logger = logging.getLogger(__name__)


def discard_unstored(repository: Repository, index: SearchIndex, document: Document) -> int:
    """Delete the document's index rows that its chunk rows in the facts do not hold."""
    stored = {chunk.id for chunk in repository.list_chunks(document.id)}
    if not isinstance(index, ChunkListable):
        if not stored:  # nothing of it is kept by any version: all of it can go
            index.delete_document(document.id)
        return 0
    stray = index.document_chunk_ids(document.kb_id, document.id) - stored
    if stray:
        index.delete_chunks(sorted(stray))
        logger.info("removed %d half-written index rows of document %s", len(stray),
                    document.id)
    return len(stray)
