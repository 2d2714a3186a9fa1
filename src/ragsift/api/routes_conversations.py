"""Conversations: list, get (the stored turns, never searching again), delete."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State
from ragsift.api.errors import ERROR_RESPONSES, ApiError, ErrorBody
from ragsift.api.schemas_chat import ConversationDetailOut, ConversationOut
from ragsift.domain.chat import ConversationBusy
from ragsift.domain.errors import NotFound

router = APIRouter(prefix="/api/conversations", tags=["conversations"],
                   responses=ERROR_RESPONSES)


@router.get("")
def list_conversations(state: State, principal: CurrentPrincipal) -> list[ConversationOut]:
    """The conversations of the calling key (every one when auth is off), newest first."""
    return [
        ConversationOut.model_validate(summary.model_dump())
        for summary in state.container.conversations.list_conversations(principal.name)
    ]


@router.get("/{conversation_id}")
def get_conversation(conversation_id: str, state: State) -> ConversationDetailOut:
    """A conversation with every stored turn: answer, citations, evidence and trace."""
    conversation = state.container.conversations.get_conversation(conversation_id)
    if conversation is None:
        raise NotFound(f"conversation {conversation_id!r} does not exist")
    return ConversationDetailOut.of(conversation)


@router.delete("/{conversation_id}", status_code=204, response_class=Response, responses={
    409: {"model": ErrorBody, "description": "a turn of the conversation is still generating"},
})
def delete_conversation(conversation_id: str, state: State) -> None:
    """Delete a conversation and its turns; 409 while one of its turns is generating."""
    try:
        state.container.conversations.delete_conversation(conversation_id)
    except ConversationBusy as exc:
        raise ApiError(409, exc.code, str(exc)) from exc
