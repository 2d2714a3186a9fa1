"""What every router needs: the container, the worker and the metrics of the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends, Request

from ragsift.api.metrics import ApiMetrics
from ragsift.api.worker import IngestionWorker
from ragsift.bootstrap import Container
from ragsift.domain.errors import NotFound
from ragsift.domain.models import Document, KnowledgeBase


@dataclass(frozen=True, slots=True)
class AppState:
    """Held on `app.state.ragsift`: built once per app."""

    container: Container
    worker: IngestionWorker
    metrics: ApiMetrics


def _state(request: Request) -> AppState:
    return cast(AppState, request.app.state.ragsift)


State = Annotated[AppState, Depends(_state)]


def require_kb(container: Container, kb_id: str) -> KnowledgeBase:
    """The knowledge base with this id, or NotFound (404)."""
    kb = container.repository.get_kb(kb_id)
    if kb is None:
        raise NotFound(f"knowledge base {kb_id!r} does not exist")
    return kb


def require_document(container: Container, document_id: str) -> Document:
    """The document with this id, or NotFound (404)."""
    document = container.repository.get_document(document_id)
    if document is None:
        raise NotFound(f"document {document_id!r} does not exist")
    return document
