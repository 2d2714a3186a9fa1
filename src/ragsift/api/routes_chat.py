"""Chat: one turn as JSON (`POST /api/chat`) or as server-sent events (`/api/chat/stream`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.deps import AppState, State, resolve_kbs
from ragsift.api.error_body import ErrorBody
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.api.schemas_chat import (
    ChatBody,
    ChatOut,
    CitationsEvent,
    DeltaEvent,
    DoneEvent,
    TraceEvent,
)
from ragsift.api.sse import EventStreamResponse, sse_event
from ragsift.bootstrap import Container
from ragsift.chat.service import AnswerDelta, PreparedTurn, TurnStarted
from ragsift.domain.chat import ChatModelFailed, ConversationBusy
from ragsift.domain.errors import NotFound, RagsiftError

logger = logging.getLogger(__name__)

_CHAT_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    409: {"model": ErrorBody, "description": "a turn of the conversation is still generating "
          "(conversation_busy), or the KB was built with another embedding model "
          "(embedding_model_mismatch)"},
    503: {"model": ErrorBody, "description": "every requested retrieval channel failed"},
}
_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "events in this order: trace, delta (zero or more), citations (the "
                       "validated answer, its citations and images), done; or error instead "
                       "of the remaining ones",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
}

router = APIRouter(prefix="/api/chat", tags=["chat"], responses=_CHAT_ERRORS)


async def _prepare(state: AppState, body: ChatBody, principal: Principal) -> PreparedTurn:
    kb_id, kb_ids = await run_in_threadpool(
        resolve_kbs, state.container, body.kb_id, body.kb, body.kbs)
    for each in kb_ids or (kb_id,):  # every KB a request names is within the key's scope
        principal.check_kb(each)
    if body.conversation_id is not None and principal.key is not None:
        exists, owner = await run_in_threadpool(
            state.container.conversations.conversation_owner, body.conversation_id)
        if exists and owner != principal.name:
            raise NotFound(f"conversation {body.conversation_id!r} does not exist")
    scope = principal.ceiling(None, None, None, None)
    request = dataclasses.replace(
        body.to_request(kb_id, kb_ids), owner_key=principal.name,
        tenant_ids=scope["tenant_ids"], dataset_ids=scope["dataset_ids"],
        visibilities=scope["visibilities"], roles=scope["roles"])
    try:
        turn = await state.container.chat.prepare(request)
    except ConversationBusy as exc:
        raise ApiError(409, exc.code, str(exc)) from exc
    state.metrics.observe_retrieval(turn.trace)
    return turn


@router.post("", responses={
    502: {"model": ErrorBody, "description": "the chat model failed; the turn is stored failed"},
})
async def chat(body: ChatBody, state: State, principal: CurrentPrincipal) -> ChatOut:
    """Answer one message from the evidence retrieval chose, with validated citations."""
    turn = await _prepare(state, body, principal)
    try:
        answer = await state.container.chat.answer(turn)
    except ConversationBusy as exc:  # taken by another request since prepare
        raise ApiError(409, exc.code, str(exc)) from exc
    except ChatModelFailed as exc:
        raise ApiError(
            502, exc.code, f"{exc} (turn {turn.turn_id} of conversation "
            f"{turn.conversation_id} is stored as failed)",
        ) from exc
    return ChatOut.of(answer)


@router.post("/stream", status_code=200, response_class=EventStreamResponse,
             responses=_STREAM_DOC)
async def chat_stream(
    body: ChatBody, state: State, principal: CurrentPrincipal
) -> EventStreamResponse:
    """The same turn as server-sent events; closing the connection stops the answer."""
    turn = await _prepare(state, body, principal)
    return EventStreamResponse(_events(state.container, turn))


async def _events(container: Container, turn: PreparedTurn) -> AsyncGenerator[str, None]:
    """The SSE events of one turn; a failure becomes an `error` event and ends the stream."""
    try:
        async with aclosing(container.chat.run(turn)) as events:
            async for event in events:
                if isinstance(event, TurnStarted):
                    yield sse_event("trace", TraceEvent(
                        conversation_id=turn.conversation_id, turn_id=turn.turn_id,
                        trace=turn.trace, evidence=list(turn.evidence),
                    ))
                elif isinstance(event, AnswerDelta):
                    yield sse_event("delta", DeltaEvent(text=event.text))
                else:
                    yield sse_event("citations", CitationsEvent(
                        citations=list(event.citations), answer=event.answer,
                        assets=list(event.assets),
                    ))
                    yield sse_event("done", DoneEvent(
                        conversation_id=turn.conversation_id, turn_id=turn.turn_id,
                        extractive=event.extractive,
                    ))
    except RagsiftError as exc:  # chat model failed, conversation busy or deleted meanwhile
        yield sse_event("error", ErrorBody(code=exc.code, message=str(exc)))
    except Exception:
        logger.exception("chat turn %s failed", turn.turn_id)
        yield sse_event("error", ErrorBody(
            code="internal_error", message="internal error; see the server log"
        ))
