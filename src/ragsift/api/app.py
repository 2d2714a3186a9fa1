"""create_app(container): the FastAPI app over one container (OpenAPI at /docs)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ragsift import __version__
from ragsift.api import (
    routes_assets,
    routes_chat,
    routes_conversations,
    routes_dify,
    routes_documents,
    routes_embeddings,
    routes_evaluation,
    routes_faq,
    routes_feedback,
    routes_health,
    routes_kb,
    routes_kb_settings,
    routes_keys,
    routes_labelled_sets,
    routes_maintenance,
    routes_openai,
    routes_query_history,
    routes_retrieval,
    routes_texts,
    routes_versions,
)
from ragsift.api.auth import AuditMiddleware, Authorizer
from ragsift.api.compat_errors import CompatErrorMiddleware
from ragsift.api.deps import AppState
from ragsift.api.errors import install_error_handlers
from ragsift.api.mcp_mount import mcp_mount
from ragsift.api.metrics import ApiMetrics
from ragsift.api.middleware import (
    BodyLimitMiddleware,
    ConcurrencyLimitMiddleware,
    ObserveMiddleware,
    RouteClass,
)
from ragsift.api.openapi import install_openapi_security
from ragsift.api.worker import IngestionWorker
from ragsift.bootstrap import Container, build_job_queue
from ragsift.config import Settings
from ragsift.domain.models import Document
from ragsift.ports import JobQueue
from ragsift.web import install_web

if TYPE_CHECKING:
    from ragsift.observability.otel import RetrievalSpans

logger = logging.getLogger(__name__)


def create_app(
    container: Container, recover: bool = True, *,
    shutdown_budget_s: Callable[[], float] | None = None, pause_after_parse_s: float = 0.0,
    allowed_hosts: Sequence[str] | None = None, ingest: bool = True,
) -> FastAPI:
    """The API over `container`; the caller keeps owning (and closes) the container.

    The background worker starts with the app; on shutdown it waits for the documents it is
    working on for `shutdown_budget_s()` seconds (default RAGSIFT_SHUTDOWN_TIMEOUT_S) and
    abandons those still running then (`worker.running()` names them: the caller should end
    the process rather than close the container under them). With `recover`, documents left
    unfinished are resumed on the next start. `pause_after_parse_s` is a test hook (see
    IngestionWorker). `allowed_hosts`: the Host names answered (others get 400); None answers
    any (in-process clients); `ragsift serve` always passes them. `ingest=False` (a search
    process of serve, whose index is read-only) starts no ingestion worker and recovers
    nothing: such a process forwards uploads to the main one.
    """
    metrics = ApiMetrics()

    def finished(document: Document) -> None:
        metrics.observe_document(document.status.value)

    settings = container.settings
    # database mode: uploads become jobs for `ragsift worker` processes, never run here
    queue = build_job_queue(settings) if settings.ingest_queue == "database" else None
    worker = IngestionWorker(
        container.ingestion, container.repository, container.settings.ingest_workers,
        on_finished=finished, queue=queue, max_attempts=settings.ingest_max_attempts,
        pause_after_parse_s=pause_after_parse_s,
    )

    def budget() -> float:
        return shutdown_budget_s() if shutdown_budget_s else settings.shutdown_timeout_s

    mcp = mcp_mount(container, allowed_hosts)
    lifespan = _lifespan(container, worker, queue, budget, recover=recover, ingest=ingest,
                         mcp=mcp.running if mcp is not None else None)
    docs = settings.api_docs
    app = FastAPI(
        title="ragsift",
        version=__version__,
        description="Hybrid retrieval for RAG over Chinese and English documents, with a trace "
                    "of every stage. Every error is JSON {code, message}. Every /api route "
                    "needs `Authorization: Bearer KEY` (see x-required-role) unless the server "
                    "runs with auth off.",
        lifespan=lifespan,
        docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None,
    )
    app.state.ragsift = AppState(container=container, worker=worker, metrics=metrics)
    authorizer = Authorizer(container, metrics)
    app.state.authorizer = authorizer
    install_error_handlers(app)
    guarded = [Depends(authorizer)]  # the one place every route's access is checked
    for module in (routes_kb, routes_documents, routes_assets, routes_faq, routes_retrieval,
                   routes_health, routes_chat, routes_conversations, routes_maintenance,
                   routes_versions, routes_keys, routes_dify, routes_openai,
                   routes_embeddings, routes_kb_settings, routes_feedback, routes_texts,
                   routes_query_history, routes_evaluation,
                   routes_labelled_sets):
        app.include_router(module.router, dependencies=guarded)
    app.include_router(routes_conversations.kb_router, dependencies=guarded)
    if mcp is not None:  # its own key check (the same keys), not the REST dependency
        app.router.routes.append(mcp.route)
    # the web pages: /web/debug, /web/chat (their API calls carry the key)
    install_web(app, api_docs=docs)
    install_openapi_security(app)
    _install_middleware(app, settings, metrics, authorizer, allowed_hosts, container.spans)
    return app


def _lifespan(
    container: Container, worker: IngestionWorker, queue: JobQueue | None,
    budget: Callable[[], float], *, recover: bool, ingest: bool,
    mcp: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's start (the worker, recovery, the MCP session manager) and shutdown (the
    worker's budget, the queue)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # the MCP sessions' task group outlives every request, and ends after the worker
        async with mcp() if mcp is not None else nullcontext(), work():
            yield

    @asynccontextmanager
    async def work() -> AsyncIterator[None]:
        if not ingest:
            yield
            return
        worker.start()
        if recover:
            await run_in_threadpool(worker.recover)
            await run_in_threadpool(container.chat.recover)  # turns cut off by a restart
        try:
            yield
        finally:
            timeout_s = budget()
            abandoned = await run_in_threadpool(worker.shutdown, timeout_s)
            if abandoned:
                logger.warning("shutdown: abandoned %d document(s) still being ingested after "
                               "%.1f s, left as they are for the next start to resume: %s",
                               len(abandoned), timeout_s, ", ".join(abandoned))
            if queue is not None:
                queue.close()  # only drops pooled connections: a restart reconnects

    return lifespan


def _install_middleware(
    app: FastAPI, settings: Settings, metrics: ApiMetrics, authorizer: Authorizer,
    allowed_hosts: Sequence[str] | None, spans: RetrievalSpans | None,
) -> None:
    """The middleware stack, added innermost first: metrics see every refusal; a 413 on the
    declared length takes no concurrency slot."""
    app.add_middleware(ConcurrencyLimitMiddleware, limits={
        RouteClass.SEARCH: settings.max_concurrent_search,
        RouteClass.CHAT: settings.max_concurrent_chat,
        RouteClass.UPLOAD: settings.max_concurrent_uploads,
    }, retry_after_s=settings.overload_retry_after_s, metrics=metrics)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_json_bytes)
    app.add_middleware(AuditMiddleware, keys=authorizer.keys)
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    if origins:  # no CORS at all unless origins are named
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["*"],
                           allow_headers=["Authorization", "Content-Type"])
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    app.add_middleware(CompatErrorMiddleware)  # Dify's and OpenAI's error formats on theirs
    app.add_middleware(ObserveMiddleware, metrics=metrics)
    if spans is not None:  # outermost: the server span covers every refusal too
        from ragsift.observability.otel_http import TraceMiddleware

        app.add_middleware(TraceMiddleware, provider=spans.provider)
