"""The MCP tools and the knowledge-base resource over one container (mcp_server.py serves them).

Every result carries citations (file, section, locator, chunk id); bad input is a tool error
with its reason, never a crash. Who calls is resolved on every call: the HTTP request's key
(left in the ASGI scope by mcp_http.KeyAuthMiddleware), else the stdio key, else the trusted
local user.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import ValidationError

from ragsift.api.auth import Principal
from ragsift.api.errors import ApiError
from ragsift.auth.keys import ApiKey
from ragsift.auth.service import KeyService
from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput, NotFound, RagsiftError
from ragsift.domain.filters import roles_allow, valid_at
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.integrations.mcp_arguments import (
    ChunkId,
    DocumentIds,
    FaqArg,
    FilterArg,
    FusionArg,
    KbArg,
    KbsArg,
    KbVersion,
    MinScore,
    ModeArg,
    Query,
    RerankArg,
    RewriteArg,
    Roles,
    Small2BigArg,
    Switch,
    TopK,
    Values,
    Window,
)
from ragsift.integrations.mcp_results import (
    ChunkInContext,
    ExplainResult,
    KnowledgeBaseList,
    SearchResult,
    chunk_view,
    explain_result,
    kb_info,
    kb_resource,
    search_result,
)

# where the HTTP middleware leaves the authenticated key for the tools
SCOPE_KEY = "ragsift.api_key"
_HIDDEN_STATUSES = frozenset({DocumentStatus.DELETING, DocumentStatus.RETIRED})

P = ParamSpec("P")
T = TypeVar("T")


def _tool_errors(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Anticipated failures become tool errors that say what is wrong (no server crash)."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except ToolError:
            raise
        except ApiError as exc:  # a key's scope refusing a KB, tenant, ...
            raise ToolError(f"{exc.code}: {exc}") from exc
        except InvalidInput as exc:  # NotFound is one; a subclass with its own code names it
            plain = type(exc) in (InvalidInput, NotFound)
            raise ToolError(str(exc) if plain else f"{exc.code}: {exc}") from exc
        except RagsiftError as exc:
            raise ToolError(f"{exc.code}: {exc}") from exc

    return call


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


def document_visible(document: Document, key: ApiKey | None) -> bool:
    """Whether a key's data scope reaches a document (no key: everything)."""
    if key is None:
        return True
    scope, own = key.scope, document.scope
    for allowed, value in ((scope.tenant_ids, own.tenant_id), (scope.dataset_ids, own.dataset_id),
                           (scope.visibilities, own.visibility)):
        if allowed and value not in allowed:
            return False
    roles = frozenset(scope.data_roles) if scope.data_roles else None
    return roles_allow(own.allowed_roles, roles)


class RagsiftTools:
    """The tools and resources over one container; who calls is resolved on every call."""

    def __init__(self, container: Container, api_key: str | None = None,
                 http_keys: bool = True) -> None:
        self._container = container
        self._repository = container.repository
        self._keys = KeyService(container.repository)
        self._stdio_secret = api_key
        self._http_keys = http_keys

    # ---- who calls ---------------------------------------------------------------------------

    async def principal(self, ctx: Context[Any, Any]) -> Principal:
        """The key of this call: the HTTP request's (left by KeyAuthMiddleware), else the
        stdio key (checked again now), else nobody (the trusted local user)."""
        request = ctx.request_context.request
        if request is not None:
            key = getattr(request, "scope", {}).get(SCOPE_KEY)
            if isinstance(key, ApiKey):
                return Principal(key)
            if self._http_keys:  # KeyAuthMiddleware missing: never serve without a key
                raise ToolError("unauthorized: this server requires an API key")
            return Principal(None)
        if self._stdio_secret is None:
            return Principal(None)
        key = await anyio.to_thread.run_sync(self._keys.authenticate, self._stdio_secret)
        if key is None:
            raise ToolError("unauthorized: the API key (--api-key / RAGSIFT_API_KEY) is unknown, "
                            "revoked or expired")
        return Principal(key)

    def _visible_kbs(self, principal: Principal) -> list[KnowledgeBase]:
        return [kb for kb in self._repository.list_kbs() if principal.allows_kb(kb.id)]

    def _kb(self, principal: Principal, name: str | None) -> KnowledgeBase:
        """The KB named (or with that id), checked against the key; the only one if None."""
        if name is None:
            visible = self._visible_kbs(principal)
            if len(visible) == 1:
                return visible[0]
            if not visible:
                raise InvalidInput("there is no knowledge base yet (ingest documents with "
                                   "`ragsift ingest FILES --kb NAME`)")
            raise InvalidInput("name a knowledge base (`kb`): "
                               + ", ".join(kb.name for kb in visible))
        kb = self._repository.get_kb_by_name(name) or self._repository.get_kb(name)
        if kb is None:
            known = ", ".join(k.name for k in self._visible_kbs(principal)) or "none"
            raise NotFound(f"unknown knowledge base {name!r} (known: {known})")
        principal.check_kb(kb.id)
        return kb

    # ---- tools -------------------------------------------------------------------------------

    def _kbs(self, principal: Principal, kb: str | None, kbs: list[str] | None
             ) -> list[KnowledgeBase]:
        """The KB of a call, or its several KBs (`kbs`), each checked against the key."""
        if kbs is None:
            return [self._kb(principal, kb)]
        if kb is not None:
            raise InvalidInput("give kb or kbs, not both")
        return [self._kb(principal, name) for name in kbs]

    async def _retrieve(self, ctx: Context[Any, Any], kb: str | None, fields: dict[str, Any],
                        kbs: list[str] | None = None) -> tuple[str, RetrievalResult]:
        """(the KB's name, or the names joined by "+", and the result)."""
        principal = await self.principal(ctx)
        found = await anyio.to_thread.run_sync(self._kbs, principal, kb, kbs)
        ids = tuple(dict.fromkeys(k.id for k in found))
        values = {name: value for name, value in fields.items() if value is not None}
        if len(ids) > 1:
            values["kb_ids"] = ids
        for name in ("document_ids", "sources", "tenant_ids", "dataset_ids", "visibilities",
                     "roles"):
            if name in values:
                values[name] = tuple(values[name])
        try:
            request = SearchRequest.model_validate({"kb_id": found[0].id, **values})
        except ValidationError as exc:
            raise InvalidInput(_validation_message(exc)) from exc
        # the key's scope is the ceiling: a call may narrow it, never widen it
        request = request.model_copy(update=principal.ceiling(
            request.tenant_ids, request.dataset_ids, request.visibilities, request.roles))
        name = "+".join(dict.fromkeys(k.name for k in found))
        return name, await self._container.retrieval.search(request)

    @_tool_errors
    async def search(
        self, query: Query, ctx: Context[Any, Any], kb: KbArg = None, top_k: TopK = None,
        mode: ModeArg = None, document_ids: DocumentIds = None, rerank: RerankArg = None,
        rewrite: RewriteArg = None, small2big: Small2BigArg = None, min_score: MinScore = None,
        faq: FaqArg = None, sources: Values = None, tenant_ids: Values = None,
        dataset_ids: Values = None, visibilities: Values = None, roles: Roles = None,
        kb_version: KbVersion = None, filter: FilterArg = None, kbs: KbsArg = None,
    ) -> SearchResult:
        """Search a knowledge base for the evidence to answer a question.

        Returns the best passages, each with a citation (file, section, page or other
        locator, chunk id), and matching FAQ answers. Cite evidence by its citation label.
        """
        kb_found, result = await self._retrieve(ctx, kb, {
            "query": query, "top_k": top_k, "mode": mode, "document_ids": document_ids,
            "rerank": rerank, "rewrite": rewrite, "small2big": small2big,
            "min_score": min_score, "run_faq": faq, "sources": sources,
            "tenant_ids": tenant_ids, "dataset_ids": dataset_ids,
            "visibilities": visibilities, "roles": roles, "kb_version": kb_version,
            "filter": filter,
        }, kbs)
        return search_result(kb_found, result)

    @_tool_errors
    async def explain(
        self, query: Query, ctx: Context[Any, Any], kb: KbArg = None, top_k: TopK = None,
        mode: ModeArg = None, fusion: FusionArg = None, document_ids: DocumentIds = None,
        rerank: RerankArg = None, rewrite: RewriteArg = None, small2big: Small2BigArg = None,
        auto_merge: Switch = None, min_score: MinScore = None, faq: FaqArg = None,
        sources: Values = None, tenant_ids: Values = None, dataset_ids: Values = None,
        visibilities: Values = None, roles: Roles = None, kb_version: KbVersion = None,
        filter: FilterArg = None, kbs: KbsArg = None,
    ) -> ExplainResult:
        """Search like `search` and show why: every result's dense, BM25, fusion and rerank
        ranks and scores, and a summary of the retrieval trace (query variants, channels,
        what each stage did, degradations, timings)."""
        kb_found, result = await self._retrieve(ctx, kb, {
            "query": query, "top_k": top_k, "mode": mode, "fusion": fusion,
            "document_ids": document_ids, "rerank": rerank, "rewrite": rewrite,
            "small2big": small2big, "auto_merge": auto_merge, "min_score": min_score,
            "run_faq": faq, "sources": sources, "tenant_ids": tenant_ids,
            "dataset_ids": dataset_ids, "visibilities": visibilities, "roles": roles,
            "kb_version": kb_version, "filter": filter,
        }, kbs)
        return explain_result(kb_found, result)

    @_tool_errors
    async def list_knowledge_bases(self, ctx: Context[Any, Any]) -> KnowledgeBaseList:
        """The knowledge bases you may search, with their document and FAQ counts."""
        principal = await self.principal(ctx)

        def listed() -> KnowledgeBaseList:
            return KnowledgeBaseList(knowledge_bases=[
                kb_info(kb, self._documents(kb, principal),
                        self._repository.count_faq_entries(kb.id))
                for kb in self._visible_kbs(principal)])

        return await anyio.to_thread.run_sync(listed)

    @_tool_errors
    async def get_chunk(
        self, chunk_id: ChunkId, ctx: Context[Any, Any], kb: KbArg = None, window: Window = 1,
        kb_version: KbVersion = None,
    ) -> ChunkInContext:
        """A chunk by id (from a citation) with its context: the section it belongs to and
        the neighbouring passages before and after it, each with its citation."""
        principal = await self.principal(ctx)
        return await anyio.to_thread.run_sync(
            self._chunk_in_context, principal, chunk_id, kb, window, kb_version)

    def _chunk_in_context(self, principal: Principal, chunk_id: str, kb: str | None,
                          window: int, kb_version: int | None) -> ChunkInContext:
        missing = NotFound(f"chunk {chunk_id!r} does not exist or is not searchable")
        stored = self._repository.get_chunks([chunk_id])
        if not stored:
            raise missing
        knowledge_base = self._kb(principal, kb if kb is not None else stored[0].kb_id)
        if knowledge_base.id != stored[0].kb_id:
            raise NotFound(f"chunk {chunk_id!r} is not in knowledge base {knowledge_base.name!r}")
        version = self._repository.searchable_version(knowledge_base.id, kb_version)
        found = self._repository.get_chunks_at(knowledge_base.id, [chunk_id], version)
        document = self._repository.get_document(stored[0].document_id)
        if not found or document is None or not document_visible(document, principal.key):
            raise missing
        chunk, filename = found[0]
        parent = None
        if chunk.parent_id is not None:
            parents = self._repository.get_chunks_at(knowledge_base.id, [chunk.parent_id], version)
            parent = chunk_view(*parents[0]) if parents else None
        neighbours = [n for n in self._repository.get_neighbours([chunk], window)
                      if valid_at(n.valid_from_seq, n.valid_to_seq, version)]
        return ChunkInContext(
            kb=knowledge_base.name, chunk=chunk_view(chunk, filename), parent=parent,
            previous=[chunk_view(n, filename) for n in neighbours if n.ordinal < chunk.ordinal],
            next=[chunk_view(n, filename) for n in neighbours if n.ordinal > chunk.ordinal],
        )

    # ---- resources ---------------------------------------------------------------------------

    def _documents(self, kb: KnowledgeBase, principal: Principal) -> list[Document]:
        return [d for d in self._repository.list_documents(kb.id)
                if d.status not in _HIDDEN_STATUSES and document_visible(d, principal.key)]

    async def knowledge_base(self, name: str, ctx: Context[Any, Any]) -> str:
        """A knowledge base: its embedding model, FAQ count and documents (status, errors)."""
        try:
            principal = await self.principal(ctx)
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc

        def described() -> str:
            kb = self._kb(principal, name)
            body = kb_resource(kb, self._documents(kb, principal),
                               self._repository.count_faq_entries(kb.id))
            return json.dumps(body.model_dump(mode="json"), ensure_ascii=False, indent=2)

        try:
            return await anyio.to_thread.run_sync(described)
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except (ApiError, RagsiftError) as exc:
            raise ResourceError(str(exc)) from exc

