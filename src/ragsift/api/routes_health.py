"""Liveness, readiness (the stores answer) and Prometheus metrics."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from ragsift.api.deps import State
from ragsift.api.errors import ErrorBody
from ragsift.api.schemas import HealthOut, ReadyOut

logger = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> HealthOut:
    """The process is up."""
    return HealthOut(status="ok")


@router.get("/readyz", response_model=ReadyOut,
            responses={503: {"model": ReadyOut, "description": "a store failed"}})
def readyz(state: State) -> JSONResponse:
    """Every store answers: the relational facts, the document index and the FAQ index."""
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
    body = ReadyOut(status="ok" if ok else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}, 500: {"model": ErrorBody}})
def metrics(state: State) -> Response:
    """Prometheus text format: requests, latencies, retrieval stages, degradations."""
    payload, content_type = state.metrics.render()
    return Response(payload, media_type=content_type)
