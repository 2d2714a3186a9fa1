"""Protocols the services depend on; adapters implement them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ragsift.domain.faq import FaqEntry
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase
from ragsift.domain.results import ChannelHit
from ragsift.domain.stages import RerankScore, RewriteProposal

Vectors = NDArray[np.float32]


class Tokenizer(Protocol):
    def count_tokens(self, text: str) -> int:
        """Tokens the embedder would spend on `text` (without prefix and special tokens)."""
        ...


class Embedder(Tokenizer, Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 rows, one per text."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One unit-length float32 vector."""
        ...


class QueryRewriter(Protocol):
    """Proposes at most one rewrite of a query (an LLM behind an HTTP API)."""

    def rewrite(self, query: str) -> RewriteProposal:
        """Raises UpstreamError when the server fails or answers something unusable."""
        ...


class Reranker(Protocol):
    """Scores passages against a query; scores order this batch only."""

    @property
    def model_id(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        """Scores for (some of) the passages, by index; raises UpstreamError on failure.

        The caller validates the answer (indices in range, no duplicates, not empty).
        """
        ...


class SearchIndex(Protocol):
    """Dense and BM25 search over child chunks, filtered by a SearchFilter."""

    def upsert(self, records: Sequence[IndexRecord], vectors: Vectors) -> None: ...

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def search_dense(
        self, vector: Vectors, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...

    def search_sparse(
        self, query: str, search_filter: SearchFilter, limit: int
    ) -> list[ChannelHit]: ...

    def count(self) -> int: ...

    def close(self) -> None: ...


class Repository(Protocol):
    """The relational store: the source of truth for knowledge bases, documents, chunks, FAQ."""

    def create_kb(self, kb: KnowledgeBase) -> KnowledgeBase: ...

    def get_kb(self, kb_id: str) -> KnowledgeBase | None: ...

    def get_kb_by_name(self, name: str) -> KnowledgeBase | None: ...

    def list_kbs(self) -> list[KnowledgeBase]: ...

    def delete_kb(self, kb_id: str) -> None: ...

    def add_document(self, document: Document) -> Document: ...

    def get_document(self, document_id: str) -> Document | None: ...

    def find_document_by_sha256(self, kb_id: str, sha256: str) -> Document | None: ...

    def list_documents(
        self, kb_id: str, status: DocumentStatus | None = None
    ) -> list[Document]: ...

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None: ...

    def replace_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def get_ready_chunks(self, kb_id: str, chunk_ids: Sequence[str]) -> list[tuple[Chunk, str]]:
        """(chunk, document filename) for chunks whose document is READY in `kb_id`, in order.

        The READY re-check and the hydration of hits in one query.
        """
        ...

    def list_chunks(self, document_id: str) -> list[Chunk]: ...

    def get_neighbours(self, anchors: Sequence[Chunk], window: int) -> list[Chunk]:
        """Chunks within `window` ordinals of each anchor in its document, level and parent.

        One SQL statement whatever the number of anchors (up to the largest top_k); the
        anchors themselves are not returned.
        """
        ...

    def get_ancestors(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Every ancestor (parent, grandparent, ...) of these chunks; one statement per 500 ids."""
        ...

    def delete_document(self, document_id: str) -> None: ...

    def ready_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY in `kb_id` right now."""
        ...

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        """Store the new entries, skipping pairs (by content hash) already held; how many added."""
        ...

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        """The FAQ entries that exist among `ids`, in the order given."""
        ...

    def list_faq_entries(self, kb_id: str) -> list[FaqEntry]: ...

    def count_faq_entries(self, kb_id: str) -> int: ...

    def delete_faq_entries(self, kb_id: str) -> int: ...

    def ping(self) -> None: ...


class ObjectStore(Protocol):
    """Keeps original files so documents can be re-parsed without re-upload."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def delete_prefix(self, prefix: str) -> None: ...
