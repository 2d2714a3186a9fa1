"""What an index stores per chunk besides its vector."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnalyzedText:
    """A record's text as BM25 tokens (space-joined) and the analyzer version that made them.

    Ingestion analyzes in worker processes; an index uses the tokens only when `version` is
    the version it analyzes with, and analyzes `text` itself otherwise.
    """

    version: int
    tokens: str


@dataclass(frozen=True, slots=True)
class IndexRecord:
    """One indexable child chunk: its text for BM25 and the fields filters act on.

    `allowed_roles` empty = no role restriction. `valid_from_seq`/`valid_to_seq` are the
    knowledge-base versions the chunk belongs to (to 0 = still valid; 0/0 = every version).
    `metadata_tokens`: its document's metadata as index terms (metadata_terms.document_tokens).
    """

    chunk_id: str
    document_id: str
    kb_id: str
    text: str
    source: str | None = None
    tenant_id: str | None = None
    dataset_id: str | None = None
    visibility: str | None = None
    allowed_roles: tuple[str, ...] = ()
    valid_from_seq: int = 0
    valid_to_seq: int = 0
    analyzed: AnalyzedText | None = None
    metadata_tokens: tuple[str, ...] = ()
