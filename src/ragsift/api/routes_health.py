"""Liveness, readiness (the stores answer) and Prometheus metrics."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from ragsift.api.deps import State
from ragsift.api.error_body import ErrorBody
from ragsift.api.schemas import HealthOut, ReadyOut
from ragsift.bootstrap import Container
from ragsift.ports import RemoteEmbedder, SparseHealthReporting

logger = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> HealthOut:
    """The process is up."""
    return HealthOut(status="ok")


@router.get("/readyz", response_model=ReadyOut,
            responses={503: {"model": ReadyOut, "description": "a store failed"}})
def readyz(state: State) -> JSONResponse:
    """Every store answers: the relational facts, the document index and the FAQ index.

    A knowledge base whose BM25 index cannot be read makes the service `degraded` (still
    200: every other KB works, and hybrid search of that one runs on its dense channel). So
    does a hosted embedder that does not answer (`embedder: down: ...`): sparse searches
    work, and hybrid ones run on BM25 with `dense_retrieval_failed` in their trace.
    """
    container = state.container
    checks: dict[str, str] = {}
    probes = {
        "database": container.repository.ping,
        "index": container.index.count,
        "faq_index": container.faq_index.count,
    }
    for name, probe in probes.items():
        try:
            probe()
            checks[name] = "ok"
        except Exception as exc:
            logger.warning("readiness check %s failed: %s", name, exc)
            checks[name] = f"{type(exc).__name__}: {exc}"
    ok = all(value == "ok" for value in checks.values())
    embedder_down = _report_embedder(container, checks)
    degraded = ok and (_report_sparse_problems(container, checks) or embedder_down)
    status = "degraded" if degraded else "ok" if ok else "unavailable"
    body = ReadyOut(status=status, checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


def _report_embedder(container: Container, checks: dict[str, str]) -> bool:
    """A hosted embedder's check (one short call); whether it is down. The in-process e5
    cannot be down alone, so it has no check."""
    embedder = getattr(container.embedder, "inner", container.embedder)
    if not isinstance(embedder, RemoteEmbedder):
        return False
    try:
        embedder.ping()
    except Exception as exc:
        logger.warning("readiness check embedder failed: %s", exc)
        checks["embedder"] = f"down: {exc}"
        return True
    checks["embedder"] = "ok"
    return False


def _report_sparse_problems(container: Container, checks: dict[str, str]) -> bool:
    """Name each KB whose BM25 index cannot be read in its index's check; whether any."""
    kbs = {kb.id: kb.name for kb in container.repository.list_kbs()}
    found = False
    for name, index in (("index", container.index), ("faq_index", container.faq_index)):
        if not isinstance(index, SparseHealthReporting):
            continue
        problems = index.sparse_problems(kbs)
        if problems:
            found = True
            checks[name] = "degraded: " + "; ".join(
                f"the BM25 index of knowledge base {kbs[kb_id]!r} cannot be read ({reason}); "
                f"rebuild it with POST /api/kbs/{kb_id}/rebuild-sparse (or `ragsift "
                f"rebuild-sparse --kb {kbs[kb_id]}` with the server stopped)"
                for kb_id, reason in sorted(problems.items())
            )
    return found


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}, 500: {"model": ErrorBody}})
def metrics(state: State) -> Response:
    """Prometheus text format: requests, latencies, retrieval stages, degradations."""
    payload, content_type = state.metrics.render()
    return Response(payload, media_type=content_type)
