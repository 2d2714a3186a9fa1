"""Knowledge bases: create, list, get, delete."""

from __future__ import annotations

import contextlib

from fastapi import APIRouter, Response

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas import KbCreate, KbOut
from ragsift.bootstrap import Container
from ragsift.domain.errors import NotFound
from ragsift.domain.models import DocumentStatus, KnowledgeBase

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"], responses=ERROR_RESPONSES)


def _out(container: Container, kb: KnowledgeBase) -> KbOut:
    documents = container.repository.list_documents(kb.id)
    return KbOut(
        id=kb.id, name=kb.name, embedding_model=kb.embedding_model,
        embedding_dim=kb.embedding_dim, created_at=kb.created_at, documents=len(documents),
        ready=sum(1 for d in documents if d.status == DocumentStatus.READY),
        faq=container.repository.count_faq_entries(kb.id),
    )


@router.post("", status_code=201, responses={409: {"model": ErrorBody}})
def create_kb(body: KbCreate, state: State) -> KbOut:
    """Create a knowledge base with the configured embedder; 409 if the name is taken."""
    container = state.container
    if container.repository.get_kb_by_name(body.name) is not None:
        raise ApiError(409, "kb_exists", f"a knowledge base named {body.name!r} already exists")
    return _out(container, container.ingestion.ensure_kb(body.name))


@router.get("")
def list_kbs(state: State, principal: CurrentPrincipal) -> list[KbOut]:
    """The knowledge bases the calling key may use, by name, with document and FAQ counts."""
    container = state.container
    return [_out(container, kb) for kb in container.repository.list_kbs()
            if principal.allows_kb(kb.id)]


@router.get("/{kb_id}")
def get_kb(kb_id: str, state: State) -> KbOut:
    """One knowledge base."""
    return _out(state.container, require_kb(state.container, kb_id))


@router.delete("/{kb_id}", status_code=204, response_class=Response)
def delete_kb(kb_id: str, state: State) -> None:
    """Delete a knowledge base: its documents (facts, indexes, originals) and FAQ entries."""
    container = state.container
    kb = require_kb(container, kb_id)
    # every document, with the chunks only older versions still hold, leaves at once
    container.versions.forget_kb(kb)
    for document in container.repository.list_documents(kb.id):
        with contextlib.suppress(NotFound):  # deleted meanwhile
            container.ingestion.delete_document(document.id)
    container.faq.delete_all(kb)
    container.repository.delete_kb(kb.id)
