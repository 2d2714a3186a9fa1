"""The lighter wiring of a one-shot CLI search: the retrieval service and what it reads.

`ragsift search` builds neither chat, versions, drafts nor the conversation store, and on a
SQLite file at the newest schema reads the database through the standard library's sqlite3
(ragsift.adapters.sqlite_reader): SQLAlchemy's import was ~0.55 CPU-s of the command's
~2.5. Any read the reader lacks opens SqlRepository on first use, so the hits and scores are
those of the full container (tests/test_cli.py compares them). Its query is cut by jieba from
the dictionary words it holds (adapters/embedded_index/query_jieba.py), not rjieba's whole
dictionary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragsift.adapters.embedded_index.analyzer import cut_short_texts_from_cache
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.onnx_e5.cache import default_cache_dir
from ragsift.adapters.sqlite_reader import open_database
from ragsift.adapters.thread_budget import configure as configure_thread_budget
from ragsift.bootstrap.retrieval import SearchRepository, build_search_stack
from ragsift.retrieval.service import RetrievalService

if TYPE_CHECKING:
    from ragsift.config import Settings
    from ragsift.ports import SearchIndex

__all__ = ["SearchContainer", "SearchRepository", "build_search"]


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
    # one query to cut: from the words it holds, not rjieba's whole dictionary (same tokens)
    cut_short_texts_from_cache(settings.embedder_cache_dir or default_cache_dir())
    repository: SearchRepository = open_database(settings.resolved_database_url)
    stack = build_search_stack(settings, repository, follow=True)
    return SearchContainer(settings, repository, stack.index, stack.faq_index, stack.embedder,
                           stack.retrieval)
