"""ChatService: one turn = retrieval once -> numbered evidence -> streamed answer -> stored turn.

`prepare` does everything that can fail with a plain HTTP status (validation, unknown or busy
conversation, retrieval) and stores nothing. `run` stores the turn as generating, streams the
answer and stores how the turn ended: complete, failed (the chat model failed) or cancelled
(the consumer stopped iterating, e.g. the SSE client went away; the model's stream is closed).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ragsift.chat.assets import validate_answer
from ragsift.chat.citations import CitedAnswer, trim_unfinished_link
from ragsift.chat.evidence import evidence_from_hits
from ragsift.chat.extractive import extractive_answer
from ragsift.chat.faq import direct_answer_hit, direct_answer_text, faq_evidence, supporting_hits
from ragsift.chat.prompt import build_messages, conversation_is_chinese
from ragsift.chat.regenerate import check_regenerate
from ragsift.chat.replies import route_reply
from ragsift.chat.stream_check import CheckedStream
from ragsift.chat.turns import (
    AnswerDelta,
    ChatAnswer,
    ChatRequest,
    PreparedTurn,
    TurnEvent,
    TurnFinished,
    TurnStarted,
)
from ragsift.domain.chat import (
    ChatModelFailed,
    ConversationBusy,
    Evidence,
    NewConversation,
    TokenUsage,
    Turn,
    TurnOutcome,
    TurnStatus,
    conversation_title,
)
from ragsift.domain.errors import InvalidInput, NotFound, UpstreamError
from ragsift.domain.requests import HistoryMessage, SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.ports import ChatModel, ConversationStore
from ragsift.retrieval.query import validate_query

# the turn's records stay importable from here, where they were before turns.py
__all__ = [
    "CLIENT_GONE", "INTERRUPTED", "AnswerDelta", "ChatAnswer", "ChatOptions", "ChatRequest",
    "ChatService", "PreparedTurn", "Retriever", "TurnEvent", "TurnFinished", "TurnStarted",
]

logger = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the server stopped while this turn was generating"
CLIENT_GONE = "cancelled: the client went away while the answer was generating"


class Retriever(Protocol):
    """What chat needs of retrieval (the RetrievalService)."""

    async def search(self, request: SearchRequest) -> RetrievalResult: ...


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """Settings of the chat layer."""

    max_query_chars: int = 1000
    history_turns: int = 3
    extractive_sentences: int = 3
    extractive_max_chars: int = 1500
    # replies to turns routed away from the search, keyed <kind>.<zh|en> (chat/replies.py)
    route_replies: Mapping[str, str] = field(default_factory=dict)
    # below the direct-answer threshold, FAQ entries at this dense cosine or more join the
    # evidence (chat/faq.py)
    faq_evidence_min_score: float = 0.86


def _as_messages(history: list[tuple[str, str]]) -> tuple[HistoryMessage, ...]:
    """(question, answer) pairs as the messages a search reads, oldest first."""
    messages: list[HistoryMessage] = []
    for question, answer in history:
        messages.append(HistoryMessage(role="user", content=question[:20_000]))
        if answer:
            messages.append(HistoryMessage(role="assistant", content=answer[:20_000]))
    return tuple(messages)


def _now() -> datetime:
    return datetime.now(UTC)


class ChatService:
    """Answers a message from the evidence retrieval chose, and keeps the conversation."""

    def __init__(
        self, retriever: Retriever, store: ConversationStore, model: ChatModel | None,
        options: ChatOptions | None = None,
    ) -> None:
        self._retriever = retriever
        self._store = store
        self._model = model
        self._options = options or ChatOptions()

    @property
    def model_name(self) -> str | None:
        """The chat model's name; None when answers are extractive."""
        return None if self._model is None else self._model.model_name

    async def prepare(self, request: ChatRequest) -> PreparedTurn:
        """Validate, retrieve once, number the evidence and build the prompt; stores nothing.

        Raises InvalidInput, NotFound (unknown KB or conversation), ConversationBusy,
        RetrievalUnavailable (every channel failed).
        """
        question = validate_query(request.message, self._options.max_query_chars)
        history: list[tuple[str, str]] = []
        new_conversation: NewConversation | None = None
        if request.conversation_id is None:
            conversation_id = uuid.uuid4().hex
            new_conversation = NewConversation(
                id=conversation_id, kb_id=request.kb_id, title=conversation_title(question),
                owner_key=request.owner_key,
            )
            keep = self._options.history_turns
            history = list(request.history[-keep:]) if keep > 0 else []
        else:
            conversation_id = request.conversation_id
            history = await asyncio.to_thread(self._history, conversation_id, request.kb_id,
                                              request.regenerate_turn_id)
        if request.regenerate_turn_id is not None:
            await asyncio.to_thread(check_regenerate, self._store, request.conversation_id,
                                    request.regenerate_turn_id, question)
        result = await self._retriever.search(SearchRequest(
            query=question, kb_id=request.kb_id, kb_ids=request.kb_ids, mode=request.mode,
            top_k=request.top_k,
            document_ids=request.document_ids, rewrite=request.rewrite,
            rerank=request.rerank, small2big=request.small2big,
            tenant_ids=request.tenant_ids, dataset_ids=request.dataset_ids,
            visibilities=request.visibilities, roles=request.roles, route=request.route,
            history=_as_messages(history), filter=request.filter, run_doc=True,
        ))
        evidence, reply = self._evidence(question, history, result)
        messages = (
            build_messages(question, evidence, history)
            if self._model is not None and evidence and reply is None else ()
        )
        return PreparedTurn(
            conversation_id=conversation_id, turn_id=uuid.uuid4().hex,
            new_conversation=new_conversation, question=question, evidence=evidence,
            trace=result.trace, messages=messages, reply=reply,
            version_of=request.regenerate_turn_id,
        )

    def _evidence(
        self, question: str, history: list[tuple[str, str]], result: RetrievalResult
    ) -> tuple[tuple[Evidence, ...], str | None]:
        """The turn's evidence, and its whole answer when the plan gives one (a route's reply,
        a FAQ's standard answer); None: the model (or the extractive answer) answers."""
        route = result.trace.route
        if route.route in ("chitchat", "handoff", "out_of_scope"):
            return (), route_reply(route, self._options.route_replies)
        direct = direct_answer_hit(result)
        if direct is not None:
            item = faq_evidence(direct, 1)
            return (item,), direct_answer_text(item, conversation_is_chinese(question, history))
        faq = tuple(faq_evidence(hit, n) for n, hit in enumerate(
            supporting_hits(result.faq_hits, self._options.faq_evidence_min_score), start=1))
        return faq + evidence_from_hits(result.hits, start=len(faq) + 1), None

    def _history(
        self, conversation_id: str, kb_id: str, regenerate_turn_id: str | None = None
    ) -> list[tuple[str, str]]:
        summary = self._store.get_summary(conversation_id)
        if summary is None:
            raise NotFound(f"conversation {conversation_id!r} does not exist")
        if summary.kb_id != kb_id:
            raise InvalidInput(
                f"conversation {conversation_id!r} belongs to knowledge base {summary.kb_id!r}"
            )
        if summary.generating:
            raise ConversationBusy(f"conversation {conversation_id!r} is still answering")
        keep = self._options.history_turns
        turns = self._store.recent_turns(conversation_id, keep + 1 if regenerate_turn_id else keep)
        # a regenerated answer is built from the history before the turn it replaces
        turns = [turn for turn in turns if turn.id != regenerate_turn_id][-keep:] if keep else []
        return [(turn.question, turn.answer) for turn in turns]

    async def run(self, turn: PreparedTurn) -> AsyncGenerator[TurnEvent, None]:
        """Store the turn, stream the answer, store how it ended.

        Raises ChatModelFailed (after storing the turn as failed) when the model fails, and
        NotFound / ConversationBusy when the conversation was deleted or taken meanwhile.
        Closing the generator early stores the turn as cancelled and closes the model stream.
        """
        record = Turn(
            id=turn.turn_id, conversation_id=turn.conversation_id, question=turn.question,
            evidence=turn.evidence, trace=turn.trace, created_at=_now(),
            version_of=turn.version_of,
        )
        await self._start(record, turn.new_conversation)
        # a FAQ's standard answer is neither generated nor extracted
        extractive = not turn.faq_direct and (self._model is None or not turn.evidence)
        model = (None if self._model is None or extractive or turn.faq_direct
                 else self._model.model_name)
        parts: list[str] = []
        usage: list[TokenUsage] = []
        stored = False

        def partial() -> CitedAnswer:
            # an answer that stopped (or ended) inside a link keeps none of it
            return validate_answer(trim_unfinished_link("".join(parts)), turn.evidence)

        # a model's text is checked as it streams; ragsift's own (extractive, FAQ, routed
        # replies) comes whole and already checked
        checked = CheckedStream(turn.evidence) if turn.reply is None and model else None
        try:
            yield TurnStarted(turn)
            async with aclosing(self._deltas(turn, usage)) as deltas:
                async for delta in deltas:
                    parts.append(delta)
                    text = delta if checked is None else checked.feed(delta)
                    if text:
                        yield AnswerDelta(text)
            cited = partial()
            rest = "" if checked is None else checked.finish(cited.answer)
            if rest:
                yield AnswerDelta(rest)
            stored = True  # set first: a cancellation during the write must not overwrite it
            await asyncio.to_thread(
                self._finish, turn.turn_id, "complete", cited, extractive=extractive, model=model
            )
            yield TurnFinished(cited.answer, cited.citations, extractive=extractive, model=model,
                               assets=cited.assets, usage=usage[-1] if usage else None)
        except UpstreamError as exc:
            reason = f"the chat model failed: {exc}"
            self._finish(turn.turn_id, "failed", partial(), model=model, error=reason)
            raise ChatModelFailed(reason) from exc
        # The writes below are synchronous: an await in a cancelled task is cancelled again.
        except (asyncio.CancelledError, GeneratorExit):
            if not stored:
                self._finish(turn.turn_id, "cancelled", partial(), model=model, error=CLIENT_GONE)
            raise
        except Exception as exc:
            if not stored:
                reason = f"internal error: {type(exc).__name__}: {exc}"
                self._finish(turn.turn_id, "failed", partial(), model=model, error=reason)
            raise

    async def _start(self, record: Turn, new_conversation: NewConversation | None) -> None:
        write = asyncio.ensure_future(
            asyncio.to_thread(self._store.start_turn, record, new_conversation)
        )
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            # The insert completes in its thread anyway; once it has, the turn is cancelled,
            # so it never stays "generating" (which would keep the conversation busy).
            write.add_done_callback(lambda done: self._cancel_started(done, record.id))
            raise

    def _cancel_started(self, done: asyncio.Future[None], turn_id: str) -> None:
        if not done.cancelled() and done.exception() is None:
            self._finish(turn_id, "cancelled", CitedAnswer("", ()), error=CLIENT_GONE)

    async def _deltas(
        self, turn: PreparedTurn, usage: list[TokenUsage]
    ) -> AsyncGenerator[str, None]:
        """The answer's text pieces: the model's stream, or the extractive answer (or the
        reply of a turn routed away from the search) at once; the model's reported token
        usage is appended to `usage`."""
        if turn.reply is not None:
            yield turn.reply
            return
        if self._model is None or not turn.evidence:
            yield extractive_answer(
                turn.question, turn.evidence, self._options.extractive_sentences,
                self._options.extractive_max_chars,
            )
            return
        async with aclosing(self._model.stream(turn.messages)) as stream:
            async for delta in stream:
                if isinstance(delta, TokenUsage):
                    usage.append(delta)
                elif delta:
                    yield delta

    def _finish(
        self, turn_id: str, status: TurnStatus, cited: CitedAnswer, *, extractive: bool = False,
        model: str | None = None, error: str | None = None,
    ) -> None:
        if cited.removed:
            logger.info("turn %s: removed citation or image links outside the evidence: %s",
                        turn_id, ", ".join(cited.removed))
        outcome = TurnOutcome(
            status=status, answer=cited.answer, citations=cited.citations,
            extractive=extractive, model=model, error=error, assets=cited.assets,
        )
        try:
            self._store.finish_turn(turn_id, outcome)
        except Exception:
            # the conversation may have been deleted with its knowledge base meanwhile
            logger.exception("could not store the end of turn %s (%s)", turn_id, status)

    async def answer(self, turn: PreparedTurn) -> ChatAnswer:
        """Run a prepared turn to its end (the JSON endpoint)."""
        finished: TurnFinished | None = None
        async with aclosing(self.run(turn)) as events:
            async for event in events:
                if isinstance(event, TurnFinished):
                    finished = event
        assert finished is not None  # run ends with TurnFinished or raises
        return ChatAnswer(turn, finished)

    def recover(self) -> int:
        """Turns a stopped process left generating become failed; how many."""
        count = self._store.fail_generating(INTERRUPTED)
        if count:
            logger.warning("%d chat turn(s) were interrupted by a restart; marked failed", count)
        return count

