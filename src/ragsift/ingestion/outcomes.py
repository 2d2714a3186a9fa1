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
    # under an existing key with other bytes: `conflict` when replacing was not asked for,
    # `replacing` accepted for a replacement (the caller runs it), `replaced` done,
    # `replace_failed` the new content was refused (the old one is kept)
    conflict: bool = False
    # with `conflict`: the key is held by a document of another access scope, which this
    # file must neither change nor be reported as (its caller might not find it)
    other_scope: bool = False
    replacing: bool = False
    replaced: bool = False
    replace_failed: bool = False
