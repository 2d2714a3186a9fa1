"""What became of one file given to ingestion."""

from __future__ import annotations

from dataclasses import dataclass

from ragsift.domain.models import Document, DocumentStatus

UNFINISHED = (DocumentStatus.PENDING, DocumentStatus.PARSING, DocumentStatus.INDEXING)


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What became of one file: `duplicate` of a READY document, `busy` in another live
    process, `resumed` when an interrupted earlier attempt is taken over."""

    document: Document
    duplicate: bool = False
    chunks: int = 0
    busy: bool = False
    resumed: bool = False
