"""The search half of the composition root: what `build()` (every command and the server) and
`build_search()` (a one-shot CLI search) wire alike, so the two cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.bootstrap.models import build_embedder, build_reranker, build_rewriter
from ragsift.bootstrap.stores import build_search_index
from ragsift.embedder_dimension import resolve_dimension
from ragsift.kb_settings import defaults as kb_settings_defaults
from ragsift.kb_settings_service import KbSettingsService, KbSettingsStore
from ragsift.ports import Repository, SearchIndex, TunedFusionStore, VersionReader
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.service import RetrievalService

if TYPE_CHECKING:
    from ragsift.config import Settings
    from ragsift.observability.otel import RetrievalSpans


class SearchRepository(Repository, VersionReader, TunedFusionStore, KbSettingsStore, Protocol):
    """What a search's services take of the database: SqlRepository or the SQLite reader."""

    kb_setting_defaults: dict[str, Any]

    def close(self) -> None: ...


@dataclass(frozen=True)
class SearchStack:
    """The retrieval service and the parts it was built from."""

    kb_settings: KbSettingsService
    embedder: CachedEmbedder
    index: SearchIndex
    faq_index: SearchIndex
    spans: RetrievalSpans | None
    retrieval: RetrievalService


def build_observer(settings: Settings) -> RetrievalSpans | None:
    """OpenTelemetry spans of every retrieval when RAGSIFT_OTEL_EXPORTER is set."""
    if settings.otel_exporter == "none":
        return None
    # imported here: opentelemetry is the optional `otel` extra
    from ragsift.observability.otel import build_spans

    return build_spans(settings.otel_exporter, settings.otel_endpoint)


def build_search_stack(settings: Settings, repository: SearchRepository, *,
                       upgrade_sparse_layout: bool = False, follow: bool = False) -> SearchStack:
    """Embedder, both indexes and the retrieval service over an open `repository`
    (`upgrade_sparse_layout`, `follow`: as `bootstrap.build`)."""
    # sealed versions record the KB's effective settings: these under its overrides
    repository.kb_setting_defaults = kb_settings_defaults(settings)
    kb_settings = KbSettingsService(repository, settings)
    bare = build_embedder(settings)
    # a hosted embedder's dimension from a KB's record first: no startup call to it
    dimension = resolve_dimension(bare, repository)
    embedder = CachedEmbedder(bare, settings.data_dir / "cache" / "embeddings.sqlite",
                              query_cache_size=settings.query_cache_size)
    index = build_search_index(settings, "chunks", dimension, upgrade_sparse_layout, follow)
    # FAQ entries live in their own collection, so their top-k and scores stay apart.
    faq_index = build_search_index(settings, "faq", dimension, upgrade_sparse_layout, follow)
    spans = build_observer(settings)
    retrieval = RetrievalService(
        repository, index, embedder, settings,
        rewriter=build_rewriter(settings), reranker=build_reranker(settings), faq_index=faq_index,
        tuning=repository, versions=repository, observer=spans,
        # the swap check's idf comes from the embedded BM25 store (others: min_idf unchecked)
        rescorers=(ConsistencyStage(settings, getattr(index, "sparse_term_stats", None)),),
        kb_defaults=kb_settings.search_defaults,
    )
    return SearchStack(kb_settings, embedder, index, faq_index, spans, retrieval)
