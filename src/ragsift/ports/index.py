"""Ports of the search index: dense and BM25 search, and what some indexes can do besides."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit
from ragsift.ports.models import Vectors


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


class SparseRebuild(Protocol):
    """A BM25 index being built beside the live one (see SparseRebuildable)."""

    def add(self, records: Sequence[IndexRecord]) -> None: ...


@runtime_checkable
class SparseRebuildable(Protocol):
    """An index whose BM25 side can be rebuilt from the facts without re-embedding."""

    def rebuild_sparse(self, kb_id: str) -> AbstractContextManager[SparseRebuild]:
        """Build a new BM25 index of one kb from what the block adds, then switch to it.

        Writes made meanwhile reach the live index and are replayed onto the new one
        before the switch; searches keep running on the live one until then. An exception
        in the block discards the new index.
        """
        ...

    @property
    def sparse_upgrade_pending(self) -> bool:
        """Whether an outdated BM25 layout was set aside and every kb must be rebuilt."""
        ...

    def finish_sparse_upgrade(self) -> None:
        """Every kb was rebuilt after a layout upgrade: the index opens normally again."""
        ...


@runtime_checkable
class SparseHealthReporting(Protocol):
    """An index whose BM25 side can be unreadable for some kbs while the rest works."""

    def sparse_problems(self, kb_ids: Iterable[str]) -> dict[str, str]:
        """kb_id -> why its BM25 index cannot be read, for those of `kb_ids` that cannot."""
        ...


@runtime_checkable
class RecordUpdatable(Protocol):
    """An index that can rewrite the filter fields of chunks it holds without their vectors."""

    def update_records(self, records: Sequence[IndexRecord]) -> None: ...


@runtime_checkable
class MetadataTermsHeld(Protocol):
    """An index holding each document's metadata as terms with a fingerprint of them
    (domain/metadata_terms.py), which tells the documents whose terms are not their
    metadata now. It also keeps the facts' stamp (Repository.filter_stamp, as JSON) its
    terms were last found to agree with, forgotten at its next write, so a check of an
    unchanged kb is skipped."""

    def stale_metadata(self, kb_id: str, fingerprints: Mapping[str, int]) -> set[str]: ...

    def metadata_checked(self, kb_id: str) -> str | None: ...

    def record_metadata_checked(self, kb_id: str, facts: str) -> None: ...


@runtime_checkable
class ChunkListable(Protocol):
    """An index that can list what it holds of one document (to remove half-written rows)."""

    def document_chunk_ids(self, kb_id: str, document_id: str) -> set[str]: ...


@runtime_checkable
class SparsePreAnalyzable(Protocol):
    """An index whose BM25 analysis can run before the write, in a worker process.

    Returns (analyzer version, analyzer) for a kb; the analyzer must pickle (a module-level
    function). Records carry the result as `IndexRecord.analyzed`.
    """

    def sparse_analyzer(self, kb_id: str) -> tuple[int, Callable[[str], list[str]]]: ...
