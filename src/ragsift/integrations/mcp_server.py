"""`ragsift mcp`: the retrieval service as a Model Context Protocol server (official `mcp` SDK).

Tools: `search`, `explain`, `list_knowledge_bases`, `get_chunk`; resource template
`ragsift://kb/{name}` (a knowledge base and its documents). Every result carries citations
(file, section, locator, chunk id); bad input is a tool error with its reason, never a crash.

Who may do what:
- stdio: the user who runs the process is trusted (they can read the data directory anyway).
  With an API key (`--api-key` / RAGSIFT_API_KEY) its KB and data scope are the ceiling of
  every call, checked again on each call, so a revoked key stops at once.
- streamable HTTP: every request needs `Authorization: Bearer KEY` (KeyService), answered 401
  without one; the key's scope is the ceiling, as in the REST API, and a session belongs to the
  key that opened it. Keys may be off only on a loopback address (the CLI refuses otherwise).

This module imports `mcp`: only `ragsift mcp` imports it (the `mcp` extra).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal, ParamSpec, TypeVar
from urllib.parse import parse_qs

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ragsift import __version__
from ragsift.api.auth import Principal
from ragsift.api.errors import ApiError
from ragsift.api.limits import TokenBuckets
from ragsift.auth.keys import ApiKey
from ragsift.auth.service import KeyService
from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput, NotFound, RagsiftError
from ragsift.domain.filters import roles_allow, valid_at
from ragsift.domain.models import Document, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.integrations.mcp_results import (
    KB_URI,
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

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
# where the HTTP middleware leaves the authenticated key for the tools
SCOPE_KEY = "ragsift.api_key"
_QUERY_KEY_NAMES = frozenset({"api_key", "apikey", "key", "token", "access_token"})
_BAD_KEY_LOG_EVERY_S = 10.0
_HIDDEN_STATUSES = frozenset({DocumentStatus.DELETING, DocumentStatus.RETIRED})

INSTRUCTIONS = (
    "ragsift searches knowledge bases of Chinese and English documents (dense + BM25 hybrid). "
    "Call list_knowledge_bases to see what exists, search for evidence, and cite each piece "
    "you use by its citation label (file, section, page). get_chunk returns a chunk with its "
    "section and neighbouring passages; explain shows why the evidence was chosen."
)

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


# ---- tool arguments (their JSON schemas are what clients see) --------------------------------

Query = Annotated[str, Field(
    description="The question or keywords, Chinese or English. Empty or over-long queries "
                "(RAGSIFT_MAX_QUERY_CHARS, 1000 by default) are refused.")]
KbArg = Annotated[str | None, Field(
    description="Knowledge base name (see list_knowledge_bases); may be left out when only one "
                "is visible.")]
KbsArg = Annotated[list[str] | None, Field(
    min_length=1, max_length=64,
    description="Several knowledge bases (names) searched with one ranking, instead of `kb`; "
                "each result names its knowledge base.")]
TopK = Annotated[int | None, Field(ge=1, le=50, description="How many results [5].")]
ModeArg = Annotated[Literal["dense", "sparse", "hybrid"] | None, Field(
    description="dense (embeddings), sparse (BM25 keywords, exact codes) or hybrid [hybrid].")]
FusionArg = Annotated[Literal["zscore", "weighted", "rrf"] | None, Field(
    description="How hybrid search fuses the two lists [zscore].")]
DocumentIds = Annotated[list[str] | None, Field(
    max_length=1000, description="Search only these documents (at most 50 ids).")]
Switch = Annotated[bool | None, Field(description="Override the server's default.")]
RerankArg = Annotated[bool | None, Field(
    description="Rerank the candidates [on when a reranker is configured].")]
RewriteArg = Annotated[bool | None, Field(
    description="Let the LLM rewrite the query [on when a chat server is configured].")]
Small2BigArg = Annotated[bool | None, Field(
    description="Add the neighbouring passages to each result as `context` [on].")]
MinScore = Annotated[float | None, Field(
    ge=-1e6, le=1e6, description="Drop results below this score.")]
FaqArg = Annotated[bool | None, Field(description="Also search the FAQ entries [on].")]
Values = Annotated[list[str] | None, Field(max_length=100)]
Roles = Annotated[list[str] | None, Field(
    max_length=100, description="The caller's roles: documents restricted to other roles are "
                                "left out; none given: only unrestricted documents.")]
KbVersion = Annotated[int | None, Field(
    ge=0, le=2**31 - 1, description="Search this retained version instead of the active one.")]
FilterArg = Annotated[dict[str, Any] | None, Field(
    description='A metadata filter, e.g. {"dept": "hr", "year": {"$gte": 2024}}: operators '
                "$eq $ne $gt $gte $lt $lte $in $nin $exists $contains $startswith $endswith, "
                "combined with $and $or $not; results carry each document's metadata.")]
ChunkId = Annotated[str, Field(min_length=1, max_length=200,
                               description="A chunk id from a citation.")]
Window = Annotated[int, Field(ge=0, le=5, description="Neighbouring passages on each side.")]

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)


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


def build_server(container: Container, api_key: str | None = None,
                 http_keys: bool = True) -> MCPServer[Any]:
    """The MCP server over `container`; `api_key` scopes the stdio transport, `http_keys`
    says whether HTTP requests must carry a key (KeyAuthMiddleware)."""
    tools = RagsiftTools(container, api_key, http_keys)
    server: MCPServer[Any] = MCPServer(
        "ragsift", title="ragsift retrieval", version=__version__, instructions=INSTRUCTIONS,
        # the SDK's logging.basicConfig, a no-op once the ragsift command configured stderr
        log_level="WARNING",
    )
    for name, fn, title in (
        ("search", tools.search, "Search a knowledge base"),
        ("explain", tools.explain, "Search and explain the ranking"),
        ("list_knowledge_bases", tools.list_knowledge_bases, "List knowledge bases"),
        ("get_chunk", tools.get_chunk, "Get a chunk with its context"),
    ):
        server.add_tool(fn, name=name, title=title, annotations=_READ_ONLY,
                        structured_output=True)
    server.resource(KB_URI, name="knowledge_base", title="Knowledge base",
                    mime_type="application/json")(tools.knowledge_base)

    server.custom_route(HEALTH_PATH, methods=["GET"])(_health)
    return server


async def _health(_request: Request) -> Response:
    return PlainTextResponse("ok")


# ---- streamable HTTP -------------------------------------------------------------------------

def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None
           ) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


class KeyAuthMiddleware:
    """Every HTTP request but /healthz needs `Authorization: Bearer KEY` (401 otherwise).

    The key is left in the ASGI scope for the tools, and as the scope's `user`, so the SDK
    binds each MCP session to the key that opened it. Per-key request rate and the rate of
    bad-key attempts per client follow the REST API's settings (429 beyond them).
    """

    def __init__(self, app: ASGIApp, keys: KeyService, rate_per_s: float, burst: int,
                 bad_rate_per_s: float, bad_burst: int) -> None:
        self.app = app
        self._keys = keys
        self._rate = TokenBuckets(rate_per_s, burst)
        self._bad = TokenBuckets(bad_rate_per_s, bad_burst)
        self._bad_count = 0
        self._bad_logged = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        key, refusal = await self._authenticate(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        assert key is not None
        wait_s = self._rate.take(key.id)
        if wait_s:
            await _error(429, "rate_limited", f"API key {key.name!r} is over its request rate "
                         "(RAGSIFT_KEY_RATE_PER_S)",
                         {"Retry-After": TokenBuckets.retry_after(wait_s)})(scope, receive, send)
            return
        token = AccessToken(token=key.id, client_id=key.id, scopes=[key.role.value])
        scope = {**scope, SCOPE_KEY: key, "user": AuthenticatedUser(token),
                 "auth": AuthCredentials([key.role.value])}
        await self.app(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> tuple[ApiKey | None, Response | None]:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if _QUERY_KEY_NAMES & {name.lower() for name in query}:
            return None, self._bad_attempt(
                scope, "API keys go in the Authorization header, never in the URL")
        header = Headers(scope=scope).get("authorization")
        if header is None:
            return None, self._bad_attempt(scope, "missing Authorization: Bearer header")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret or secret != secret.strip():
            return None, self._bad_attempt(scope, "the Authorization header must be 'Bearer KEY'")
        key = await anyio.to_thread.run_sync(self._keys.authenticate, secret)
        if key is None:
            return None, self._bad_attempt(scope, "the API key is unknown, revoked or expired")
        return key, None

    def _bad_attempt(self, scope: Scope, message: str) -> Response:
        client = scope.get("client")
        address = client[0] if client else "-"
        self._bad_count += 1  # one event loop: no lock needed
        now = time.monotonic()
        if now - self._bad_logged >= _BAD_KEY_LOG_EVERY_S:
            logger.warning("%d MCP request(s) with a missing or bad API key in the last %.0f s "
                           "(latest from %s: %s)", self._bad_count, _BAD_KEY_LOG_EVERY_S,
                           address, message)
            self._bad_count, self._bad_logged = 0, now
        wait_s = self._bad.take(address)
        if wait_s:
            return _error(429, "rate_limited", "too many requests with bad API keys",
                          {"Retry-After": TokenBuckets.retry_after(wait_s)})
        return _error(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})


def transport_security(hosts: Sequence[str], origins: Sequence[str]) -> TransportSecuritySettings:
    """Host and Origin checks (DNS rebinding): these names, on any port."""
    names = [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[pattern for name in names for pattern in (name, f"{name}:*")],
        allowed_origins=[*(f"{scheme}://{name}{port}" for name in names
                           for scheme in ("http", "https") for port in ("", ":*")), *origins],
    )


def http_app(container: Container, hosts: Sequence[str], require_keys: bool) -> ASGIApp:
    """The streamable-HTTP app at /mcp (and /healthz), keys required unless `require_keys`
    is False (the CLI allows that on loopback addresses only)."""
    app = keyed_app(container, hosts, require_keys)[0]
    if container.spans is None:
        return app
    from ragsift.observability.otel_http import TraceMiddleware  # the `otel` extra

    return TraceMiddleware(app, container.spans.provider)  # join the callers' traces


def keyed_app(container: Container, hosts: Sequence[str] | None, require_keys: bool
              ) -> tuple[ASGIApp, MCPServer[Any]]:
    """`http_app` and its server, whose `session_manager.run()` must be running while the app
    serves: its own lifespan runs it; `ragsift serve`, which routes /mcp to the app, runs it
    in its lifespan. `hosts` None: no Host or Origin check (in-process clients only)."""
    settings = container.settings
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    security = (TransportSecuritySettings(enable_dns_rebinding_protection=False)
                if hosts is None else transport_security(hosts, origins))
    server = build_server(container, http_keys=require_keys)
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH,
                                              transport_security=security)
    if not require_keys:
        return app, server
    return KeyAuthMiddleware(app, KeyService(container.repository), settings.key_rate_per_s,
                             settings.key_burst, settings.bad_key_rate_per_s,
                             settings.bad_key_burst), server


def run_stdio(container: Container, api_key: str | None) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    build_server(container, api_key).run("stdio")


def run_http(app: ASGIApp, host: str, port: int, graceful_s: float) -> bool:
    """Serve the streamable-HTTP app under uvicorn until SIGINT/SIGTERM; False if it never
    started (the port taken, say)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info",
                            timeout_graceful_shutdown=max(1, int(graceful_s)))
    server = uvicorn.Server(config)
    server.run()
    return bool(server.started)
