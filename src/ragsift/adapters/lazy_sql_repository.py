"""The SqlRepository behind the SQLite reader of a CLI search, opened on its first use.

The reader (ragsift.adapters.sqlite_reader) answers a search's frequent reads on sqlite3, so
that a search need not import SQLAlchemy; every other method of the ports it stands for
(Repository, VersionReader, TunedFusionStore, the KB settings store) is written out here and
handed to a SqlRepository opened on the first such call: a rarer read, or a write (which a
follower refuses), gets SqlRepository's own answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragsift.domain.assets import Asset
from ragsift.domain.faq import FaqCommit, FaqCommitted, FaqEntry
from ragsift.domain.kb_settings import KbSettingsRecord
from ragsift.domain.metadata import MetadataUpdate
from ragsift.domain.models import Chunk, Document, DocumentStatus, KnowledgeBase, Revision
from ragsift.domain.tuning import TunedFusion

if TYPE_CHECKING:
    # typing only: importing it would import SQLAlchemy
    from ragsift.adapters.sql import SqlRepository

OpenSqlRepository = Callable[[], "SqlRepository"]


class LazySqlRepository:
    """The ports' methods the reader does not answer itself, each SqlRepository's."""

    def __init__(self, open_full: OpenSqlRepository) -> None:
        self._open_full = open_full
        self._full: SqlRepository | None = None
        self._full_lock = threading.Lock()
        self.kb_setting_defaults: dict[str, Any] = {}

    @property
    def opened_full(self) -> bool:
        """Whether some call needed SqlRepository (and so imported SQLAlchemy)."""
        return self._full is not None

    def _sql(self) -> SqlRepository:
        with self._full_lock:
            if self._full is None:
                self._full = self._open_full()
                self._full.kb_setting_defaults = self.kb_setting_defaults
            return self._full

    def close(self) -> None:
        if self._full is not None:
            self._full.close()

    # Repository

    def create_kb(self, kb: KnowledgeBase) -> KnowledgeBase:
        return self._sql().create_kb(kb)

    def delete_kb(self, kb_id: str) -> None:
        self._sql().delete_kb(kb_id)

    def add_document(self, document: Document, owner: str | None = None) -> Document:
        return self._sql().add_document(document, owner)

    def get_document(self, document_id: str) -> Document | None:
        return self._sql().get_document(document_id)

    def find_document_by_sha256(self, kb_id: str, sha256: str) -> Document | None:
        return self._sql().find_document_by_sha256(kb_id, sha256)

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None:
        self._sql().set_status(document_id, status, error)

    def replace_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None:
        self._sql().replace_chunks(document_id, chunks)

    def save_assets(self, document_id: str, assets: Sequence[Asset]) -> None:
        self._sql().save_assets(document_id, assets)

    def get_asset(self, asset_id: str) -> Asset | None:
        return self._sql().get_asset(asset_id)

    def get_assets(self, asset_ids: Iterable[str]) -> dict[str, Asset]:
        return self._sql().get_assets(asset_ids)

    def document_assets(self, document_id: str) -> list[Asset]:
        return self._sql().document_assets(document_id)

    def collect_assets(self, document_id: str) -> list[tuple[str, str]]:
        return self._sql().collect_assets(document_id)

    def unused_images(self, images: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return self._sql().unused_images(images)

    def kb_images(self, kb_id: str) -> set[tuple[str, str]]:
        return self._sql().kb_images(kb_id)

    def sweep_assets(self, kb_id: str) -> int:
        return self._sql().sweep_assets(kb_id)

    def set_warnings(self, document_id: str, warnings: Sequence[str]) -> None:
        self._sql().set_warnings(document_id, warnings)

    def get_ready_chunks(self, kb_id: str, chunk_ids: Sequence[str]) -> list[tuple[Chunk, str]]:
        return self._sql().get_ready_chunks(kb_id, chunk_ids)

    def get_ancestors(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return self._sql().get_ancestors(chunk_ids)

    def delete_document(self, document_id: str) -> None:
        self._sql().delete_document(document_id)

    def set_owner(self, document_id: str, owner: str | None) -> None:
        self._sql().set_owner(document_id, owner)

    def document_owner(self, document_id: str) -> str | None:
        return self._sql().document_owner(document_id)

    def find_document_by_key(self, kb_id: str, key: str) -> Document | None:
        return self._sql().find_document_by_key(kb_id, key)

    def documents_by_key(self, kb_id: str) -> dict[str, Document]:
        return self._sql().documents_by_key(kb_id)

    def claim_replace(self, document_id: str, stale: str | None, owner: str) -> bool:
        return self._sql().claim_replace(document_id, stale, owner)

    def replacing_owner(self, document_id: str) -> str | None:
        return self._sql().replacing_owner(document_id)

    def replacements(self, kb_id: str | None = None) -> list[tuple[str, str]]:
        return self._sql().replacements(kb_id)

    def set_source_mtime(self, document_id: str, source_mtime: float) -> None:
        self._sql().set_source_mtime(document_id, source_mtime)

    def finish_replace(
        self, document_id: str, revision: Revision | None, error: str | None = None
    ) -> None:
        self._sql().finish_replace(document_id, revision, error)

    def take_over(self, document_id: str, previous: str | None, owner: str) -> bool:
        return self._sql().take_over(document_id, previous, owner)

    def unfinished_documents(self, kb_id: str | None = None) -> list[tuple[Document, str | None]]:
        return self._sql().unfinished_documents(kb_id)

    def ready_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        return self._sql().ready_document_ids(kb_id, document_ids)

    def set_metadata(self, document_id: str, metadata: Mapping[str, Any]) -> None:
        self._sql().set_metadata(document_id, metadata)

    def update_metadata(
        self, document_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> MetadataUpdate:
        return self._sql().update_metadata(document_id, change)

    def filter_fields(self, kb_id: str) -> dict[str, dict[str, Any]]:
        return self._sql().filter_fields(kb_id)

    def filter_stamp(self, kb_id: str) -> tuple[int, str | None]:
        return self._sql().filter_stamp(kb_id)

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        return self._sql().get_documents(document_ids)

    def claim_documents(
        self, document_ids: Sequence[str], owner: str, status: DocumentStatus
    ) -> dict[str, Document]:
        return self._sql().claim_documents(document_ids, owner, status)

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        self._sql().set_statuses(document_ids, status)

    def list_chunks_of(self, document_ids: Sequence[str]) -> dict[str, list[Chunk]]:
        return self._sql().list_chunks_of(document_ids)

    def find_document_by_key_or_sha256(
        self, kb_id: str, key: str, sha256: str
    ) -> tuple[Document | None, list[Document]]:
        return self._sql().find_document_by_key_or_sha256(kb_id, key, sha256)

    def add_documents(
        self, documents: Sequence[Document], owner: str | None = None
    ) -> list[Document]:
        return self._sql().add_documents(documents, owner)

    def documents_by_keys_or_sha256(
        self, kb_id: str, keys: Sequence[str], shas: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        return self._sql().documents_by_keys_or_sha256(kb_id, keys, shas)

    def add_faq_entries(self, entries: Sequence[FaqEntry]) -> int:
        return self._sql().add_faq_entries(entries)

    def commit_faq(
        self, commit: FaqCommit, seal: bool = False, activate: bool = False,
        note: str | None = None,
    ) -> FaqCommitted:
        return self._sql().commit_faq(commit, seal, activate, note)

    def get_faq_entries(self, ids: Sequence[str]) -> list[FaqEntry]:
        return self._sql().get_faq_entries(ids)

    def live_faq_keys(self, kb_id: str, keys: Sequence[str]) -> dict[str, str]:
        return self._sql().live_faq_keys(kb_id, keys)

    def list_faq_entries(self, kb_id: str, live_only: bool = False) -> list[FaqEntry]:
        return self._sql().list_faq_entries(kb_id, live_only)

    def delete_faq_entries(self, kb_id: str) -> int:
        return self._sql().delete_faq_entries(kb_id)

    def ping(self) -> None:
        self._sql().ping()

    # VersionReader

    def searchable_document_ids(self, kb_id: str, document_ids: Iterable[str]) -> set[str]:
        return self._sql().searchable_document_ids(kb_id, document_ids)

    def version_metadata(self, kb_id: str, seq: int) -> dict[str, dict[str, Any]] | None:
        return self._sql().version_metadata(kb_id, seq)

    # TunedFusionStore

    def get_tuned_fusion(self, kb_id: str) -> TunedFusion | None:
        return self._sql().get_tuned_fusion(kb_id)

    def save_tuned_fusion(self, tuned: TunedFusion) -> None:
        self._sql().save_tuned_fusion(tuned)

    # KbSettingsStore

    def save_kb_settings(
        self, kb_id: str, overrides: dict[str, Any], built: dict[str, Any] | None
    ) -> KbSettingsRecord:
        return self._sql().save_kb_settings(kb_id, overrides, built)
