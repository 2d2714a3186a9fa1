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


def kb_id_of(container: Container, kb_id: str | None, name: str | None) -> str:
    """The id a request names a knowledge base by: its id, or its name (NotFound: 404)."""
    if kb_id is not None:
        return kb_id
    assert name is not None  # the request bodies require one of them
    kb = container.repository.get_kb_by_name(name)
    if kb is None:
        raise NotFound(f"knowledge base {name!r} does not exist")
    return kb.id


def kb_ids_of(container: Container, refs: list[str]) -> tuple[str, ...]:
    """The ids of the knowledge bases a request names by id or name, in its order (NotFound:
    404 for one that does not exist)."""
    found: list[str] = []
    for ref in refs:
        kb = container.repository.get_kb(ref) or container.repository.get_kb_by_name(ref)
        if kb is None:
            raise NotFound(f"knowledge base {ref!r} does not exist")
        found.append(kb.id)
    return tuple(found)


def resolve_kbs(
    container: Container, kb_id: str | None, name: str | None, refs: list[str] | None
) -> tuple[str, tuple[str, ...] | None]:
    """(the first KB's id, every KB's id when the request names several with `kbs`)."""
    if refs is None:
        return kb_id_of(container, kb_id, name), None
    ids = kb_ids_of(container, refs)
    return ids[0], ids


def require_document(container: Container, document_id: str) -> Document:
    """The document with this id, or NotFound (404)."""
    document = container.repository.get_document(document_id)
    if document is None:
        raise NotFound(f"document {document_id!r} does not exist")
    return document
