"""The composition root: the one place that reads settings and wires adapters into services.

This module builds the container; the model clients are built in bootstrap/models.py, the
indexes, the object store and the job queue in bootstrap/stores.py.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.thread_budget import configure as configure_thread_budget
from ragsift.bootstrap.models import (
    build_chat_model,
    build_embedder,
    build_local_embedder,
    build_reranker,
    build_rewriter,
    retry_policy,
)
from ragsift.bootstrap.retrieval import build_observer, build_search_stack
from ragsift.bootstrap.stores import (
    ann_settings,
    build_job_queue,
    build_object_store,
    build_search_index,
    second_dense_encoder,
)
from ragsift.config import Settings
from ragsift.kb_settings_service import KbSettingsService
from ragsift.ports import ObjectStore, SearchIndex
from ragsift.retrieval.service import RetrievalService

if TYPE_CHECKING:
    from ragsift.adapters.sql import SqlRepository
    from ragsift.adapters.sql.conversation_repository import SqlConversationStore
    from ragsift.chat.service import ChatService
    from ragsift.ingestion.faq_service import FaqService
    from ragsift.ingestion.maintenance import MaintenanceService
    from ragsift.ingestion.pipeline import IngestionService
    from ragsift.observability.otel import RetrievalSpans
    from ragsift.versions.service import VersionService
    from ragsift.versions.writer import DraftWriter

# the builders of the model clients and of the stores, importable from here as before
__all__ = [
    "Container", "ann_settings", "build", "build_chat_model", "build_embedder",
    "build_ingestion", "build_job_queue", "build_local_embedder", "build_maintenance",
    "build_object_store", "build_observer", "build_reranker", "build_rewriter",
    "build_search_index", "retry_policy", "second_dense_encoder",
]



@dataclass
class Container:
    """Everything a command or the API needs, built once from settings.

    The ingestion and FAQ services are built on first use, once (under a lock): they bring
    the parsers (bs4, pypdf, python-docx, ...), which a search never needs.
    """

    settings: Settings
    repository: SqlRepository
    index: SearchIndex
    embedder: CachedEmbedder
    retrieval: RetrievalService
    faq_index: SearchIndex
    conversations: SqlConversationStore
    chat: ChatService
    versions: VersionService
    # KB versions: documents and FAQ entries are written into their KB's draft by reference
    drafts: DraftWriter
    object_store: ObjectStore
    # a KB's own settings (ragsift/kb_settings.py): the process settings are its defaults
    kb_settings: KbSettingsService
    # OpenTelemetry (RAGSIFT_OTEL_EXPORTER): the retrieval spans, whose provider the API's
    # server spans share; None when tracing is off
    spans: RetrievalSpans | None = None
    _ingestion: IngestionService | None = field(default=None, init=False, repr=False)
    _faq: FaqService | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def ingestion(self) -> IngestionService:
        with self._lock:
            if self._ingestion is None:
                self._ingestion = build_ingestion(self)
            return self._ingestion

    @property
    def faq(self) -> FaqService:
        with self._lock:
            if self._faq is None:
                from ragsift.ingestion.faq_service import FaqService

                self._faq = FaqService(
                    self.repository, self.faq_index, self.embedder, self.drafts,
                    max_file_bytes=self.settings.max_file_bytes,
                    batch_size=self.settings.embedding_batch_size,
                )
            return self._faq

    def close(self) -> None:
        if self._ingestion is not None:
            self._ingestion.close()
        self.conversations.close()
        self.index.close()
        self.faq_index.close()
        self.embedder.close()


def build_maintenance(container: Container, settle_s: float = 0.0) -> MaintenanceService:
    """BM25 rebuilds and reindexing over a container (settle_s: see MaintenanceService)."""
    from ragsift.ingestion.maintenance import MaintenanceService

    return MaintenanceService(
        container.repository, container.index, container.faq_index, container.ingestion,
        settle_s=settle_s,
    )


def build(settings: Settings, upgrade_sparse_layout: bool = False,
          follow: bool = False) -> Container:
    """Wire the embedded default (SQLite + tantivy + on-disk matrix) from settings.

    `upgrade_sparse_layout` is for `ragsift rebuild-sparse` alone: an outdated BM25 layout
    is moved aside instead of refused, and every KB must then be rebuilt. `follow`, for
    processes that only read (searches, listings, MCP): both indexes open read-only beside
    a writer that holds the data directory (`ragsift serve`, an ingest), following its
    commits; their writes raise IndexReadOnly. The SQL database serves both processes.
    """
    # SQLAlchemy, the chat and the versions are imported here, not with this module: a CLI
    # search (bootstrap.search, which imports this package) needs none of them
    from ragsift.adapters.sql import SqlRepository
    from ragsift.adapters.sql.conversation_repository import SqlConversationStore
    from ragsift.chat.service import ChatOptions, ChatService
    from ragsift.versions.service import VersionService
    from ragsift.versions.writer import DraftWriter, VersionDefaults

    data_dir: Path = settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    configure_thread_budget(settings.blas_threads)
    repository = SqlRepository(settings.resolved_database_url)
    stack = build_search_stack(settings, repository,
                               upgrade_sparse_layout=upgrade_sparse_layout, follow=follow)
    drafts = DraftWriter(
        repository, stack.index, stack.embedder,
        VersionDefaults(settings.kb_publish_mode, settings.kb_version_retention),
        batch_size=settings.embedding_batch_size,
    )
    object_store = build_object_store(settings)
    versions = VersionService(repository, stack.index, stack.retrieval, object_store, drafts,
                              settings, faq_index=stack.faq_index)
    # the repository above migrated the schema already
    conversations = SqlConversationStore(settings.resolved_database_url, migrate=False)
    chat = ChatService(
        stack.retrieval, conversations, build_chat_model(settings),
        ChatOptions(
            max_query_chars=settings.max_query_chars,
            history_turns=settings.chat_history_turns,
            extractive_sentences=settings.chat_extractive_sentences,
            extractive_max_chars=settings.chat_extractive_max_chars,
            route_replies=settings.chat_route_replies,
            faq_evidence_min_score=settings.chat_faq_evidence_min_score,
        ),
    )
    return Container(
        settings, repository, stack.index, stack.embedder, stack.retrieval, stack.faq_index,
        conversations=conversations, chat=chat, versions=versions, drafts=drafts,
        object_store=object_store, kb_settings=stack.kb_settings, spans=stack.spans,
    )


def tokenize_small_ingest(settings: Settings, total_bytes: int) -> bool:
    """For a one-shot ingest of `total_bytes` of files: when they are few, tokenize from e5's
    word list rather than load the whole vocabulary (e5_tokenizer.use_light_route); whether
    it is on."""
    from ragsift.adapters.e5_tokenizer import use_light_route
    from ragsift.adapters.onnx_e5.cache import default_cache_dir

    limit = settings.ingest_light_tokenizer_chars
    on = 0 < total_bytes <= limit
    use_light_route(settings.embedder_cache_dir or default_cache_dir() if on else None,
                    2 * limit)
    return on


def build_ingestion(container: Container) -> IngestionService:
    """The ingestion service over a container's stores (Container.ingestion builds it once)."""
    # imported here: the parsers come with these, and only ingestion needs them
    from ragsift.ingestion.chunking import Chunker
    from ragsift.ingestion.parsers.limits import ParseLimits
    from ragsift.ingestion.pipeline import IngestionService
    from ragsift.ingestion.preparation import WorkerLimits

    settings = container.settings
    # Both embedders count tokens with e5's tokenizer; the bare one pickles into the
    # ingestion worker processes (and shares the vocabulary loaded in this process).
    chunker = Chunker(
        E5Tokenizer(),
        chunk_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        parent_max_tokens=settings.parent_max_tokens,
        sections=settings.chunk_sections,
    )
    return IngestionService(
        repository=container.repository,
        index=container.index,
        embedder=container.embedder,
        object_store=container.object_store,
        chunker=chunker,
        max_file_bytes=settings.max_file_bytes,
        batch_size=settings.embedding_batch_size,
        batch_documents=settings.ingest_batch_documents,
        embed_concurrency=(settings.openai_embedding_concurrency
                           if settings.embedder == "openai" else 1),
        versions=container.drafts,
        data_dir=settings.data_dir,
        workers=settings.prepare_workers,
        isolate=settings.prepare_isolation,
        limits=WorkerLimits(
            timeout_s=settings.prepare_timeout_s,
            memory_bytes=settings.prepare_memory_mb * 1024 * 1024,
            parse=ParseLimits.from_settings(settings),
        ),
        profile=container.kb_settings.profile,
    )
