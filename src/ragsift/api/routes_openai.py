"""OpenAI-compatible chat: `GET /v1/models` (the key's KBs as `kb:NAME`), `GET
/v1/models/{model}` and `POST /v1/chat/completions` (JSON, or `stream: true` server-sent chunks
ending `[DONE]`), with `usage`: the chat model server's token counts, else ragsift's count.

A completion is one turn of ragsift's chat (api/routes_chat.py): retrieval over the model's KB
(or KBs: `kb:handbook+policy` searches both with one ranking) within the key's scope, an
answer from that evidence with `[N](citation://N)` links, stored as a new conversation of the
key. The last message (the user's) is the question; the earlier user/assistant pairs are its
history (the last RAGSIFT_CHAT_HISTORY_TURNS of them). Errors are
OpenAI's `{"error": {...}}` (api/compat_errors.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal, Principal
from ragsift.api.compat_errors import openai_error_body
from ragsift.api.deps import AppState, State
from ragsift.api.errors import ApiError, status_for
from ragsift.api.schemas_openai import (
    MODEL_PREFIX,
    AssistantMessage,
    ChatCompletionBody,
    ChatCompletionOut,
    Choice,
    MessageIn,
    ModelList,
    ModelOut,
    OpenAIErrorBody,
    RagsiftTurn,
    Usage,
)
from ragsift.api.sse import EventStreamResponse
from ragsift.bootstrap import Container
from ragsift.chat.service import (
    AnswerDelta,
    ChatRequest,
    PreparedTurn,
    TurnFinished,
    TurnStarted,
)
from ragsift.domain.chat import ChatModelFailed
from ragsift.domain.errors import RagsiftError
from ragsift.domain.models import KnowledgeBase
from ragsift.ports import Tokenizer

logger = logging.getLogger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": OpenAIErrorBody, "description": description}
    for status, description in (
        (400, "invalid_request_error: invalid input (also what other APIs answer with 422)"),
        (401, "authentication_error: missing, unknown, revoked or expired key"),
        (403, "permission_error: the key may not use this knowledge base"),
        (404, "invalid_request_error: model_not_found, no such knowledge base"),
        (409, "invalid_request_error: embedding_model_mismatch"),
        (429, "rate_limit_error: over the key's rate or concurrency (Retry-After)"),
        (500, "server_error: internal error"),
        (502, "server_error: chat_model_failed (the turn is stored failed)"),
        (503, "server_error: overloaded, or every retrieval channel failed"),
    )
}
_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "chat.completion; with `stream: true`, text/event-stream of "
                       "chat.completion.chunk data lines (the last one with finish_reason "
                       "`stop` and `ragsift`), then `data: [DONE]`; a failure mid-answer is "
                       "a `data: {\"error\": {...}}` line instead of the rest",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
}

router = APIRouter(prefix="/v1", tags=["openai"], responses=_ERRORS)


def _model_id(kb: KnowledgeBase) -> str:
    return f"{MODEL_PREFIX}{kb.name}"


def _created(kb: KnowledgeBase) -> int:
    return int(kb.created_at.timestamp()) if kb.created_at is not None else 0


@router.get("/models")
def list_models(state: State, principal: CurrentPrincipal) -> ModelList:
    """The knowledge bases the key may use, as models `kb:NAME`."""
    kbs = state.container.repository.list_kbs()
    return ModelList(data=[ModelOut(id=_model_id(kb), created=_created(kb))
                           for kb in kbs if principal.allows_kb(kb.id)])


@router.get("/models/{model}")
def retrieve_model(model: str, state: State, principal: CurrentPrincipal) -> ModelOut:
    """One model of the list: `kb:NAME` (or a KB id); 404 for a KB the key may not use, as
    the list leaves it out."""
    kb = _knowledge_base(state.container, model)
    if not principal.allows_kb(kb.id):
        raise _not_found(model)
    return ModelOut(id=_model_id(kb), created=_created(kb))


def _not_found(model: str) -> ApiError:
    return ApiError(404, "model_not_found", f"the model {model!r} does not exist: models "
                    "are the knowledge bases as kb:NAME (GET /v1/models)")


def _knowledge_base(container: Container, model: str) -> KnowledgeBase:
    """`kb:NAME` (or a KB id after the prefix; the prefix may be left out)."""
    key = model.removeprefix(MODEL_PREFIX)
    kb = container.repository.get_kb_by_name(key) or container.repository.get_kb(key)
    if kb is None:
        raise _not_found(model)
    return kb


def knowledge_bases(container: Container, model: str) -> list[KnowledgeBase]:
    """The KBs a model id names: `kb:NAME`, or several joined by "+" (`kb:handbook+policy`,
    searched with one ranking). A KB whose own name holds "+" is found by its whole name
    first."""
    key = model.removeprefix(MODEL_PREFIX)
    whole = container.repository.get_kb_by_name(key) or container.repository.get_kb(key)
    if whole is not None or "+" not in key:
        return [_knowledge_base(container, model)]
    return [_knowledge_base(container, part) for part in key.split("+")]


def usage_of(turn: PreparedTurn, finished: TurnFinished, tokenizer: Tokenizer) -> Usage:
    """The model server's counts when it reported them; else the prompt's messages and the
    answer counted with `tokenizer` (no messages: an extractive answer, no model prompted)."""
    if finished.usage is not None:
        prompt, completion = finished.usage.prompt_tokens, finished.usage.completion_tokens
        return Usage(prompt_tokens=prompt, completion_tokens=completion,
                     total_tokens=prompt + completion, counted=False)
    prompt = sum(tokenizer.count_tokens(message.content) for message in turn.messages)
    completion = tokenizer.count_tokens(finished.answer) if finished.answer else 0
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 total_tokens=prompt + completion, counted=True)


def _text(message: MessageIn) -> str:
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    texts: list[str] = []
    for part in message.content:
        if part.type != "text" or part.text is None:
            raise ApiError(400, "unsupported_content",
                           f"only text content can be used; got a {part.type!r} part")
        texts.append(part.text)
    return "\n".join(texts)


def question_and_history(
    messages: list[MessageIn],
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The last message's text (it must be the user's) and the earlier (user, assistant)
    pairs, oldest first; system, developer and tool messages are left out."""
    last = messages[-1]
    if last.role != "user":
        raise ApiError(400, "invalid_request",
                       f"the last message must be the user's question, not {last.role!r}")
    pairs: list[tuple[str, str]] = []
    asked: str | None = None
    for message in messages[:-1]:
        if message.role == "user":
            text = _text(message)
            asked = text if asked is None else f"{asked}\n{text}"
        elif message.role == "assistant" and asked is not None:
            pairs.append((asked, _text(message)))
            asked = None
    return _text(last), tuple(pairs)


async def _prepare(
    state: AppState, body: ChatCompletionBody, principal: Principal
) -> PreparedTurn:
    kbs = await run_in_threadpool(knowledge_bases, state.container, body.model)
    for kb in kbs:
        principal.check_kb(kb.id)
    ids = tuple(dict.fromkeys(kb.id for kb in kbs))
    question, history = question_and_history(body.messages)
    options = body.ragsift
    scope = principal.ceiling(None, None, None, None)
    request = ChatRequest(
        kb_id=ids[0], kb_ids=ids if len(ids) > 1 else None, message=question,
        history=history, owner_key=principal.name,
        mode=options.mode if options else None, top_k=options.top_k if options else None,
        document_ids=tuple(options.document_ids) if options and options.document_ids else None,
        rewrite=options.rewrite if options else None,
        rerank=options.rerank if options else None,
        small2big=options.small2big if options else None,
        tenant_ids=scope["tenant_ids"], dataset_ids=scope["dataset_ids"],
        visibilities=scope["visibilities"], roles=scope["roles"],
    )
    turn = await state.container.chat.prepare(request)
    state.metrics.observe_retrieval(turn.trace)
    return turn


def _extension(turn: PreparedTurn, finished: TurnFinished) -> RagsiftTurn:
    return RagsiftTurn(
        conversation_id=turn.conversation_id, turn_id=turn.turn_id, answer=finished.answer,
        citations=list(finished.citations), assets=list(finished.assets),
        evidence=list(turn.evidence), trace=turn.trace,
        extractive=finished.extractive, chat_model=finished.model,
    )


@router.post("/chat/completions", response_model=ChatCompletionOut, responses=_STREAM_DOC)
async def chat_completions(
    body: ChatCompletionBody, state: State, principal: CurrentPrincipal
) -> ChatCompletionOut | Response:
    """An answer from the model's knowledge base with `[N](citation://N)` citations, as
    OpenAI's chat.completion (or its chunks with `stream: true`) plus a `ragsift` object."""
    turn = await _prepare(state, body, principal)
    completion_id, created = f"chatcmpl-{turn.turn_id}", int(time.time())
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return EventStreamResponse(
            _chunks(state.container, turn, completion_id, created, body.model, include_usage))
    try:
        answer = await state.container.chat.answer(turn)
    except ChatModelFailed as exc:
        raise ApiError(502, exc.code, f"{exc} (turn {turn.turn_id} of conversation "
                       f"{turn.conversation_id} is stored as failed)") from exc
    return ChatCompletionOut(
        id=completion_id, created=created, model=body.model,
        choices=[Choice(message=AssistantMessage(content=answer.finished.answer))],
        usage=await run_in_threadpool(usage_of, turn, answer.finished, state.container.embedder),
        ragsift=_extension(turn, answer.finished),
    )


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


async def _chunks(
    container: Container, turn: PreparedTurn, completion_id: str, created: int, model: str,
    include_usage: bool = False,
) -> AsyncGenerator[str, None]:
    """chat.completion.chunk lines, then `[DONE]`; a failure is an error line instead. With
    `include_usage`, a last chunk without choices carries `usage` (as OpenAI's)."""

    def chunk(delta: dict[str, str] | None, finish_reason: str | None = None,
              extension: RagsiftTurn | None = None, usage: Usage | None = None) -> str:
        payload: dict[str, Any] = {
            "id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model,
            "choices": [] if delta is None else [
                {"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if extension is not None:
            payload["ragsift"] = extension.model_dump(mode="json")
        if usage is not None:
            payload["usage"] = usage.model_dump(mode="json")
        return _data(payload)

    try:
        async with aclosing(container.chat.run(turn)) as events:
            async for event in events:
                if isinstance(event, TurnStarted):
                    yield chunk({"role": "assistant", "content": ""})
                elif isinstance(event, AnswerDelta):
                    yield chunk({"content": event.text})
                else:
                    yield chunk({}, "stop", _extension(turn, event))
                    if include_usage:
                        usage = await run_in_threadpool(usage_of, turn, event, container.embedder)
                        yield chunk(None, usage=usage)
        yield "data: [DONE]\n\n"
    except RagsiftError as exc:  # the chat model failed, or the KB was deleted meanwhile
        yield _data(openai_error_body(exc.code, str(exc), status_for(exc)))
    except Exception:
        logger.exception("chat completion %s failed", completion_id)
        yield _data(openai_error_body("internal_error", "internal error; see the server log"))
