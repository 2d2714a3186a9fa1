"""The lighter wiring of a one-shot CLI search: the retrieval service and what it reads.

`ragsift search` builds neither chat, versions, drafts nor the conversation store, and on a
SQLite file at the newest schema reads the database through the standard library's sqlite3
(ragsift.adapters.sqlite_reader): SQLAlchemy's import was ~0.55 CPU-s of the command's
~2.5. Any read the reader lacks opens SqlRepository on first use, so the hits and scores are
those of the full container (tests/test_cli.py compares them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.sqlite_reader import open_database
from ragsift.adapters.thread_budget import configure as configure_thread_budget
from ragsift.bootstrap import (
    build_embedder,
    build_observer,
    build_reranker,
    build_rewriter,
    build_search_index,
)
from ragsift.embedder_dimension import resolve_dimension
from ragsift.kb_settings import defaults as kb_settings_defaults
from ragsift.kb_settings_service import KbSettingsService, KbSettingsStore
from ragsift.ports import Repository, TunedFusionStore, VersionReader
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.service import RetrievalService

if TYPE_CHECKING:
    from ragsift.config import Settings
    from ragsift.ports import SearchIndex


class SearchRepository(Repository, VersionReader, TunedFusionStore, KbSettingsStore, Protocol):
    """What a search's services take of the database: the SQLite reader or a SqlRepository."""

    kb_setting_defaults: dict[str, Any]

    def close(self) -> None: ...


@dataclass
class SearchContainer:
    """What one search reads; `repository` is the SQLite reader or a SqlRepository."""

    settings: Settings
    repository: SearchRepository
    index: SearchIndex
    faq_index: SearchIndex
    embedder: CachedEmbedder
    retrieval: RetrievalService

    def close(self) -> None:
        self.index.close()
        self.faq_index.close()
        self.embedder.close()
        self.repository.close()


def build_search(settings: Settings) -> SearchContainer:
    """The retrieval service over the data directory, read-only beside a writer (`follow`)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    configure_thread_budget(settings.blas_threads)
    repository: SearchRepository = open_database(settings.resolved_database_url)
    repository.kb_setting_defaults = kb_settings_defaults(settings)
    kb_settings = KbSettingsService(repository, settings)
    bare = build_embedder(settings)
    dimension = resolve_dimension(bare, repository)
    embedder = CachedEmbedder(bare, settings.data_dir / "cache" / "embeddings.sqlite",
                              query_cache_size=settings.query_cache_size)
    index = build_search_index(settings, "chunks", dimension, follow=True)
    faq_index = build_search_index(settings, "faq", dimension, follow=True)
    retrieval = RetrievalService(
        repository, index, embedder, settings,
        rewriter=build_rewriter(settings), reranker=build_reranker(settings), faq_index=faq_index,
        tuning=repository, versions=repository, observer=build_observer(settings),
        rescorers=(ConsistencyStage(settings, getattr(index, "sparse_term_stats", None)),),
        kb_defaults=kb_settings.search_defaults,
    )
    return SearchContainer(settings, repository, index, faq_index, embedder, retrieval)
