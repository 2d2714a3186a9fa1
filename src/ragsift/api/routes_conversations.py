"""Conversations: list (filtered by KB, searched by title and content), get (the stored turns,
never searching again), rename, delete; also under their knowledge base."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State, require_kb
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas_chat import ConversationDetailOut, ConversationOut
from ragsift.api.schemas_feedback import RenameBody
from ragsift.domain.chat import ConversationBusy
from ragsift.domain.errors import NotFound

router = APIRouter(prefix="/api/conversations", tags=["conversations"],
                   responses=ERROR_RESPONSES)


SearchText = Annotated[str | None, Query(
    max_length=200, description="only conversations whose title, or a question or answer of "
    "one of their turns, contains this text (case-insensitive)")]
KbFilter = Annotated[str | None, Query(max_length=200, description="only this KB's")]


@router.get("")
def list_conversations(
    state: State, principal: CurrentPrincipal, q: SearchText = None, kb_id: KbFilter = None,
) -> list[ConversationOut]:
    """The conversations of the calling key (every one when auth is off), newest first."""
    if kb_id is not None:
        principal.check_kb(kb_id)
    text = q.strip() if q else None
    return [
        ConversationOut.model_validate(summary.model_dump())
        for summary in state.container.conversations.list_conversations(
            principal.name, kb_id=kb_id, text=text or None)
    ]


@router.get("/{conversation_id}")
def get_conversation(conversation_id: str, state: State) -> ConversationDetailOut:
    """A conversation with every stored turn: answer, citations, evidence and trace."""
    conversation = state.container.conversations.get_conversation(conversation_id)
    if conversation is None:
        raise NotFound(f"conversation {conversation_id!r} does not exist")
    return ConversationDetailOut.of(conversation)


@router.patch("/{conversation_id}")
def rename_conversation(
    conversation_id: str, body: RenameBody, state: State
) -> ConversationOut:
    """Rename a conversation (its list position is kept)."""
    conversations = state.container.conversations
    conversations.rename_conversation(conversation_id, body.title)
    summary = conversations.get_summary(conversation_id)
    if summary is None:  # deleted meanwhile
        raise NotFound(f"conversation {conversation_id!r} does not exist")
    return ConversationOut.model_validate(summary.model_dump())


@router.delete("/{conversation_id}", status_code=204, response_class=Response, responses={
    409: {"model": ErrorBody, "description": "a turn of the conversation is still generating"},
})
def delete_conversation(conversation_id: str, state: State) -> None:
    """Delete a conversation and its turns; 409 while one of its turns is generating."""
    try:
        state.container.conversations.delete_conversation(conversation_id)
    except ConversationBusy as exc:
        raise ApiError(409, exc.code, str(exc)) from exc


# The same conversations under their knowledge base: /api/kbs/{kb_id}/conversations[/{id}].
# A conversation of another KB is not there (404), as another key's is not.
kb_router = APIRouter(prefix="/api/kbs/{kb_id}/conversations", tags=["conversations"],
                      responses=ERROR_RESPONSES)


def _of_kb(state: State, kb_id: str, conversation_id: str) -> None:
    require_kb(state.container, kb_id)
    summary = state.container.conversations.get_summary(conversation_id)
    if summary is None or summary.kb_id != kb_id:
        raise NotFound(f"conversation {conversation_id!r} does not exist in knowledge base "
                       f"{kb_id!r}")


@kb_router.get("")
def list_kb_conversations(
    kb_id: str, state: State, principal: CurrentPrincipal
) -> list[ConversationOut]:
    """The knowledge base's conversations of the calling key (every one when auth is off),
    newest first."""
    require_kb(state.container, kb_id)
    return list_conversations(state, principal, kb_id=kb_id)


@kb_router.get("/{conversation_id}")
def get_kb_conversation(kb_id: str, conversation_id: str, state: State) -> ConversationDetailOut:
    """A conversation of this knowledge base with every stored turn."""
    _of_kb(state, kb_id, conversation_id)
    return get_conversation(conversation_id, state)


@kb_router.delete("/{conversation_id}", status_code=204, response_class=Response, responses={
    409: {"model": ErrorBody, "description": "a turn of the conversation is still generating"},
})
def delete_kb_conversation(kb_id: str, conversation_id: str, state: State) -> None:
    """Delete a conversation of this knowledge base; 409 while a turn is generating."""
    _of_kb(state, kb_id, conversation_id)
    delete_conversation(conversation_id, state)
