"""create_app(container): the FastAPI app over one container (OpenAPI at /docs)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from ragsift import __version__
from ragsift.api import (
    routes_chat,
    routes_conversations,
    routes_documents,
    routes_faq,
    routes_health,
    routes_kb,
    routes_maintenance,
    routes_retrieval,
    routes_versions,
)
from ragsift.api.deps import AppState
from ragsift.api.errors import install_error_handlers
from ragsift.api.metrics import ApiMetrics
from ragsift.api.middleware import ObserveMiddleware
from ragsift.api.worker import IngestionWorker
from ragsift.bootstrap import Container, build_job_queue
from ragsift.domain.models import Document
from ragsift.web import install_web

logger = logging.getLogger(__name__)


def create_app(container: Container, recover: bool = True) -> FastAPI:
    """The API over `container`; the caller keeps owning (and closes) the container.

    The background worker starts with the app; on shutdown it finishes the documents it is
    working on, and (with `recover`) documents left unfinished are resumed on the next start.
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
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        worker.start()
        if recover:
            await run_in_threadpool(worker.recover)
            await run_in_threadpool(container.chat.recover)  # turns cut off by a restart
        try:
            yield
        finally:
            await run_in_threadpool(worker.shutdown)
            if queue is not None:
                queue.close()  # only drops pooled connections: a restart reconnects

    app = FastAPI(
        title="ragsift",
        version=__version__,
        description="Hybrid retrieval for RAG over Chinese and English documents, with a trace "
                    "of every stage. Every error is JSON {code, message}.",
        lifespan=lifespan,
    )
    app.state.ragsift = AppState(container=container, worker=worker, metrics=metrics)
    install_error_handlers(app)
    for module in (routes_kb, routes_documents, routes_faq, routes_retrieval, routes_health):
        app.include_router(module.router)
    for module in (routes_chat, routes_conversations):
        app.include_router(module.router)
    app.include_router(routes_maintenance.router)
    app.include_router(routes_versions.router)  # KB versions and the quality gate
    install_web(app)  # the web pages: /web/debug, /web/chat
    app.add_middleware(ObserveMiddleware, metrics=metrics)
    return app
