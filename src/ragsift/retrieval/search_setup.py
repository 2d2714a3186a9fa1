"""What a search settles before any stage runs (RetrievalService, service.py): the KB or the
several KBs it covers and the version of each, the KB's own search defaults, the embedder
check, the metadata filter and the resolved options."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass

from ragsift.config import Settings, filter_limits
from ragsift.domain.errors import EmbeddingModelMismatch, InvalidInput, NotFound
from ragsift.domain.metadata_filter import Node, parse_filter
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.kb_settings import SearchDefaults, with_kb_defaults
from ragsift.ports import Embedder, Repository, TunedFusionStore, VersionReader
from ragsift.retrieval.multi_kb import KbTarget, check_models, unique_kbs
from ragsift.retrieval.options import Options, resolve_options, wants_tuned_fusion
from ragsift.retrieval.plan import VersionOf
from ragsift.retrieval.query import validate_query
from ragsift.retrieval.scope import check_document_ids


@dataclass(frozen=True, slots=True)
class Resolved:
    """A request with the KB's defaults applied (one KB), what the plan reads its version
    with, and, for one KB, the KB (None: unknown, or several KBs) and its FAQ threshold."""

    request: SearchRequest
    version_of: VersionOf
    targets: tuple[KbTarget, ...] | None = None  # several KBs, each at its version
    kb: KnowledgeBase | None = None
    faq_threshold: float | None = None


class SearchSetup:
    """Checks a request and reads its KBs, versions and defaults, once per search."""

    def __init__(
        self, repository: Repository, embedder: Embedder, settings: Settings,
        query_tokens: Callable[[str, Options], int],
        tuning: TunedFusionStore | None = None, versions: VersionReader | None = None,
        kb_defaults: Callable[[str], SearchDefaults | None] | None = None,
    ) -> None:
        """`query_tokens`: a query's tokens for the reranker (InvalidInput over its limit);
        `kb_defaults`: a KB's own search defaults (ragsift/kb_settings.py) by kb id."""
        self._repository = repository
        self._embedder = embedder
        self._settings = settings
        self._query_tokens = query_tokens
        self._tuning = tuning
        self._versions = versions  # None: no KB versions (every chunk in every search)
        self._kb_defaults = kb_defaults

    async def resolve(self, request: SearchRequest) -> Resolved:
        """The KB(s) of a search and their versions, each read once, in one hop to a thread:
        the KB for the embedder check here, the version for the plan (see version)."""
        self.metadata_filter(request)  # a bad filter is refused whatever the route
        kb_ids = unique_kbs(request.kb_ids or (request.kb_id,), self._settings.search_max_kbs)
        if len(kb_ids) > 1:
            # several KBs: the request's own options (no one KB's defaults), no domain judge
            request, several = await asyncio.to_thread(self.targets, request, kb_ids)
            return Resolved(request, functools.partial(first_version, targets=several),
                            targets=several)
        kb, version, defaults = await asyncio.to_thread(self.kb_and_version, request)
        request = with_kb_defaults(request, defaults)
        self.check_embedder(request, kb)
        return Resolved(
            request, functools.partial(self.version, kb=kb, read=version), kb=kb,
            faq_threshold=None if defaults is None else defaults.faq_direct_threshold)

    def targets(
        self, request: SearchRequest, kb_ids: tuple[str, ...]
    ) -> tuple[SearchRequest, tuple[KbTarget, ...]]:
        """A search over several KBs: each KB checked (NotFound, the embedding models) and
        its active version read once; the request with the FAQ search off (it covers one
        KB) and the first KB as kb_id."""
        if request.kb_version is not None:
            raise InvalidInput("kb_version pins one knowledge base's version: it cannot be "
                               "given with several knowledge bases")
        if request.run_faq:
            raise InvalidInput("the FAQ search covers one knowledge base: run_faq cannot be "
                               "true with several knowledge bases")
        kbs = [self._repository.get_kb(kb_id) for kb_id in kb_ids]
        check_models(kbs, kb_ids, self._embedder.model_id,
                     (request.mode or self._settings.mode) == "sparse")
        targets = tuple(KbTarget(kb.id, None if self._versions is None
                                 else self._versions.searchable_version(kb.id, None), kb.name)
                        for kb in kbs if kb is not None)
        return request.model_copy(update={"kb_id": kb_ids[0], "kb_ids": kb_ids,
                                          "run_faq": False}), targets

    def metadata_filter(self, request: SearchRequest) -> Node | None:
        """The request's metadata filter parsed (InvalidInput naming the bad part), or None."""
        if request.filter is None:
            return None
        return parse_filter(request.filter, filter_limits(self._settings))

    def check_embedder(self, request: SearchRequest, kb: KnowledgeBase | None) -> None:
        """Refuse a dense search whose query vector would come from another model than the
        KB's vectors: their cosines mean nothing, and fusing them would do so silently.

        BM25 needs no embedding, so mode "sparse" is allowed; an unknown KB is left to the
        search itself (NotFound).
        """
        if (request.mode or self._settings.mode) == "sparse":
            return
        model = self._embedder.model_id
        if kb is not None and kb.embedding_model != model:
            raise EmbeddingModelMismatch(
                f"knowledge base {kb.name!r} was built with the embedding model "
                f"{kb.embedding_model}, but the configured embedder is {model}: their vectors "
                "cannot be compared. Configure the KB's model, re-ingest the KB with this one, "
                "or search it in mode sparse (BM25 needs no embedding)."
            )

    async def prepare(
        self, request: SearchRequest
    ) -> tuple[str, Options, tuple[str, ...] | None, int]:
        """Everything checked before any stage runs: (query, options, document whitelist,
        query tokens for the reranker); InvalidInput for what no stage could search."""
        settings = self._settings
        query = validate_query(request.query, settings.max_query_chars)
        tuned = None
        if self._tuning is not None and wants_tuned_fusion(request, settings):
            tuned = await asyncio.to_thread(self._tuning.get_tuned_fusion, request.kb_id)
        options = resolve_options(request, settings, tuned)
        requested_ids = check_document_ids(request.document_ids, settings.max_document_ids)
        return query, options, requested_ids, self._query_tokens(query, options)


    def kb_and_version(
        self, request: SearchRequest
    ) -> tuple[KnowledgeBase | None, int | Exception | None, SearchDefaults | None]:
        """The KB, the version a search of it reads (or why none could be read: raised
        by version, after the plan's own checks, as when it was read there), and the KB's
        own search defaults."""
        kb = self._repository.get_kb(request.kb_id)
        if kb is None:
            return kb, None, None
        defaults = None if self._kb_defaults is None else self._kb_defaults(kb.id)
        if self._versions is None:
            return kb, None, defaults
        try:
            return (kb, self._versions.searchable_version(request.kb_id, request.kb_version),
                    defaults)
        except Exception as exc:  # NotFound for a version not retained, or a database error
            return kb, exc, defaults

    async def version(
        self, request: SearchRequest, kb: KnowledgeBase | None, read: int | Exception | None
    ) -> int | None:
        """The KB version this request searches: the active one, or the one it pins.

        Read once, at the start of the search (`read`, by kb_and_version): the documents and
        the FAQ search that one version, so an activation meanwhile never mixes two versions
        into one answer. NotFound for an unknown KB (`kb`: the KB as resolve() read it).
        """
        if kb is None:
            raise NotFound(f"knowledge base {request.kb_id!r} does not exist")
        if self._versions is None:
            if request.kb_version is not None:
                raise InvalidInput("this service keeps no knowledge-base versions")
            return None
        if isinstance(read, Exception):
            raise read
        return read


async def first_version(_request: SearchRequest, targets: tuple[KbTarget, ...]) -> int | None:
    """The plan's version of a search over several KBs: the first KB's (its FAQ side is
    off, so no other search reads it)."""
    return targets[0].version
