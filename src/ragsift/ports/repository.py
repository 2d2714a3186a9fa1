"""Ports of the stores of facts: the relational repository, original files, tuned fusion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ragsift.domain.assets import Asset
from ragsift.domain.faq import FaqCommit, FaqCommitted, FaqEntry
from ragsift.domain.metadata import MetadataUpdate
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase, Revision
from ragsift.domain.tuning import TunedFusion


class Repository(Protocol):
    """The relational store: the source of truth for knowledge bases, documents, chunks, FAQ."""

    def create_kb(self, kb: KnowledgeBase) -> KnowledgeBase: ...

    def get_kb(self, kb_id: str) -> KnowledgeBase | None: ...

    def get_kb_by_name(self, name: str) -> KnowledgeBase | None: ...

    def list_kbs(self) -> list[KnowledgeBase]: ...

    def delete_kb(self, kb_id: str) -> None: ...

    def add_document(self, document: Document, owner: str | None = None) -> Document: ...

    def get_document(self, document_id: str) -> Document | None: ...

    def find_document_by_sha256(self, kb_id: str, sha256: str) -> Document | None: ...

    def list_documents(
        self, kb_id: str, status: DocumentStatus | None = None
    ) -> list[Document]: ...

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None: ...

    def replace_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None: ...

    # assets: images of documents (adapters/sql/asset_repository.py)

    def save_assets(self, document_id: str, assets: Sequence[Asset]) -> None: ...

    def get_asset(self, asset_id: str) -> Asset | None: ...

    def get_assets(self, asset_ids: Iterable[str]) -> dict[str, Asset]: ...

    def document_assets(self, document_id: str) -> list[Asset]: ...

    def collect_assets(self, document_id: str) -> list[tuple[str, str]]: ...

    def unused_images(self, images: Iterable[tuple[str, str]]) -> list[tuple[str, str]]: ...

    def kb_images(self, kb_id: str) -> set[tuple[str, str]]: ...

    def sweep_assets(self, kb_id: str) -> int: ...

    def set_warnings(self, document_id: str, warnings: Sequence[str]) -> None: ...

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

    def set_owner(self, document_id: str, owner: str | None) -> None:
        """Record the process now working on the document (ragsift.processes)."""
        ...

    def document_owner(self, document_id: str) -> str | None: ...

    def find_document_by_key(self, kb_id: str, key: str) -> Document | None: ...

    def documents_by_key(self, kb_id: str) -> dict[str, Document]: ...

    def claim_replace(self, document_id: str, stale: str | None, owner: str) -> bool:
        """Start replacing a READY or FAILED document's content (atomic)."""
        ...

    def replacing_owner(self, document_id: str) -> str | None: ...

    def replacements(self, kb_id: str | None = None) -> list[tuple[str, str]]:
        """(document id, owner) of every replacement under way."""
        ...

    def set_source_mtime(self, document_id: str, source_mtime: float) -> None: ...

    def finish_replace(
        self, document_id: str, revision: Revision | None, error: str | None = None
    ) -> None: ...

    def take_over(self, document_id: str, previous: str | None, owner: str) -> bool:
        """Become the owner of an unfinished document still owned by `previous` (atomic)."""
        ...

    def unfinished_documents(self, kb_id: str | None = None) -> list[tuple[Document, str | None]]:
        """Documents in PENDING, PARSING, INDEXING or DELETING with their owners."""
        ...

    def ready_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        """The subset of `document_ids` that is READY in `kb_id` right now."""
        ...

    # the user's metadata (adapters/sql/metadata_repository.py), in its JSON form

    def set_metadata(self, document_id: str, metadata: Mapping[str, Any]) -> None:
        """Replace a document's (validated) metadata; NotFound when it does not exist."""
        ...

    def update_metadata(self, document_id: str,
                        change: Callable[[dict[str, Any]], dict[str, Any]]) -> MetadataUpdate:
        """Write `change(current metadata)` atomically (no concurrent change is lost): the
        result, and whether it differs from the metadata it replaced (same_metadata);
        NotFound when the document does not exist."""
        ...

    def filter_fields(self, kb_id: str) -> dict[str, dict[str, Any]]:
        """document id -> its metadata plus scope fields, for every document of the KB."""
        ...

    def document_metadata(self, document_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """document id -> its metadata, for those that exist."""
        ...

    def filter_stamp(self, kb_id: str) -> tuple[int, str | None]:
        """Changes whenever filter_fields(kb_id) may have changed (a cache key)."""
        ...

    # many documents per statement, for the ingest pipeline (adapters/sql/ingest_batches.py)

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """The documents that exist among `document_ids`, by id."""
        ...

    def claim_documents(
        self, document_ids: Sequence[str], owner: str, status: DocumentStatus
    ) -> dict[str, Document]:
        """Own these documents and move them to `status` (one transaction); as they were."""
        ...

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        """set_status() of several documents (errors cleared) in one transaction."""
        ...

    def list_chunks_of(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        """list_chunks() of each document, by id."""
        ...

    def find_document_by_key_or_sha256(
        self, kb_id: str, key: str, sha256: str
    ) -> tuple[Document | None, list[Document]]:
        """(document with this key, documents with this content hash, oldest first) in
        `kb_id`: one query."""
        ...

    def add_documents(
        self, documents: Sequence[Document], owner: str | None = None
    ) -> list[Document]:
        """add_document() of several documents in one transaction (InvalidInput on a clash)."""
        ...

    def documents_by_keys_or_sha256(
        self, kb_id: str, keys: Sequence[str], shas: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        """(keys, sha256s) among these that documents of `kb_id` hold already."""
        ...

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        """Store the new entries, skipping pairs (by content hash) already held; how many added."""
        ...

    def commit_faq(
        self, commit: FaqCommit, seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> FaqCommitted:
        """Store FAQ changes to a KB's draft in one transaction (and seal / activate it);
        DraftMoved when the plan is outdated."""
        ...

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        """The FAQ entries that exist among `ids` (retired ones too), in the order given."""
        ...

    def live_faq_keys(self, kb_id: str, keys: Sequence[str]) -> dict[str, str]:
        """Content key -> id of the live FAQ entries of `kb_id` among `keys`."""
        ...

    def list_faq_entries(self, kb_id: str, live_only: bool = False) -> list[FaqEntry]: ...

    def count_faq_entries(self, kb_id: str, version_seq: int | None = None) -> int:
        """Live FAQ entries of `kb_id`, or those valid in `version_seq`."""
        ...

    def delete_faq_entries(self, kb_id: str) -> int: ...

    def ping(self) -> None: ...


class ObjectStore(Protocol):
    """Keeps original files so documents can be re-parsed without re-upload."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def delete_prefix(self, prefix: str) -> None: ...


class TunedFusionStore(Protocol):
    """Where the fusion settings fitted to a knowledge base (`ragsift tune`) are kept."""

    def get_tuned_fusion(self, kb_id: str) -> TunedFusion | None: ...

    def save_tuned_fusion(self, tuned: TunedFusion) -> None: ...
