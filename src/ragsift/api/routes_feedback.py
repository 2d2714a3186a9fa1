"""Feedback on chat turns: one per turn, stored with it (a second POST replaces the first),
listed in the turn (GET /api/conversations/{id}) and in GET /api/feedback."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State, kb_id_of
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas_feedback import FeedbackBody, FeedbackPage, TurnFeedbackOut
from ragsift.chat.feedback import turn_feedback
from ragsift.domain.chat import ConversationBusy
from ragsift.domain.errors import NotFound
from ragsift.domain.feedback import Rating

router = APIRouter(tags=["conversations"], responses=ERROR_RESPONSES)


@router.post("/api/conversations/{conversation_id}/turns/{turn_id}/feedback", responses={
    409: {"model": ErrorBody, "description": "the turn is still generating"},
})
def post_feedback(
    conversation_id: str, turn_id: str, body: FeedbackBody, state: State
) -> TurnFeedbackOut:
    """Rate one answer (up or down), optionally with a comment, the cited sources that were
    wrong (citation numbers or chunk ids of the turn's evidence) and what was missing.
    A second POST on the same turn replaces the first."""
    conversations = state.container.conversations
    turn = conversations.get_turn(conversation_id, turn_id)
    if turn is None:
        raise NotFound(f"turn {turn_id!r} does not exist in conversation {conversation_id!r}")
    feedback = turn_feedback(turn, body.rating, body.comment, body.wrong_sources, body.missing)
    try:
        conversations.set_feedback(conversation_id, turn_id, feedback)
    except ConversationBusy as exc:
        raise ApiError(409, exc.code, str(exc)) from exc
    return TurnFeedbackOut(conversation_id=conversation_id, turn_id=turn_id, feedback=feedback)


@router.get("/api/feedback")
async def list_feedback(
    state: State, principal: CurrentPrincipal,
    kb_id: Annotated[str | None, Query(max_length=200)] = None,
    kb: Annotated[str | None, Query(max_length=200, description="KB name (or kb_id)")] = None,
    rating: Rating | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> FeedbackPage:
    """Rated turns of the calling key's conversations (every one when auth is off), newest
    feedback first; filtered by knowledge base and rating."""
    resolved = None
    if kb_id is not None or kb is not None:
        resolved = await run_in_threadpool(kb_id_of, state.container, kb_id, kb)
        principal.check_kb(resolved)
    items, total = await run_in_threadpool(
        state.container.conversations.list_feedback, principal.name, resolved, rating,
        offset, limit)
    return FeedbackPage(total=total, offset=offset, items=items)
