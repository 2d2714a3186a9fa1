"""ChatService orchestration: retrieval once -> evidence -> streamed answer -> stored turn.

The retriever and the chat model are scripted fakes (the service is the unit under test); the
conversation store is the real SQLite one. The real model server and e5 run in tests/api.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime

import pytest

from chat.chat_factories import FIRMWARE, HOTEL, result
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.chat.extractive import EXTRACTIVE_NOTE_EN
from ragsift.chat.prompt import NO_EVIDENCE_EN, SYSTEM_PROMPT
from ragsift.chat.service import (
    INTERRUPTED,
    AnswerDelta,
    ChatOptions,
    ChatRequest,
    ChatService,
    PreparedTurn,
    TurnEvent,
    TurnFinished,
    TurnStarted,
)
from ragsift.domain.chat import ChatMessage, ChatModelFailed, ConversationBusy, Turn
from ragsift.domain.errors import InvalidInput, NotFound, RetrievalUnavailable, UpstreamError
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult


class Retriever:
    """Answers every search with the same hits; records the requests."""

    def __init__(self, *texts: str, fail: bool = False) -> None:
        self.texts = texts
        self.fail = fail
        self.requests: list[SearchRequest] = []

    async def search(self, request: SearchRequest) -> RetrievalResult:
        self.requests.append(request)
        if self.fail:
            raise RetrievalUnavailable("every retrieval channel failed: disk gone")
        return result(*self.texts, query=request.query, kb_id=request.kb_id)


class Model:
    """Streams scripted deltas; can fail after some, and records prompts and closing."""

    model_name = "fake-chat"

    def __init__(self, deltas: Sequence[str], fail_after: int | None = None,
                 delay_s: float = 0.0) -> None:
        self.deltas = list(deltas)
        self.fail_after = fail_after
        self.delay_s = delay_s
        self.prompts: list[tuple[ChatMessage, ...]] = []
        self.closed_early = False

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncGenerator[str, None]:
        self.prompts.append(tuple(messages))
        sent = 0
        try:
            for sent, delta in enumerate(self.deltas):
                if sent == self.fail_after:
                    raise UpstreamError("chat model failed mid-answer: overloaded")
                await asyncio.sleep(self.delay_s)
                yield delta
            sent = len(self.deltas)
        finally:
            self.closed_early = sent < len(self.deltas)


def _events(service: ChatService, turn: PreparedTurn) -> list[TurnEvent]:
    async def run() -> list[TurnEvent]:
        return [event async for event in service.run(turn)]

    return asyncio.run(run())


def _turn(store: SqlConversationStore, conversation_id: str, index: int = -1) -> Turn:
    conversation = store.get_conversation(conversation_id)
    assert conversation is not None
    return conversation.turns[index]


def test_a_turn_retrieves_once_streams_deltas_and_stores_the_validated_answer(
    store: SqlConversationStore,
) -> None:
    retriever = Retriever(HOTEL, FIRMWARE)
    deltas = ["The limit is 150 [", "1](citation://1) and E-104 [2](cit", "ation://2)[7](ci",
              "tation://7)."]
    model = Model(deltas)
    service = ChatService(retriever, store, model)
    request = ChatRequest(kb_id="kb1", message="  hotel limit and E-104?  ", mode="sparse",
                          top_k=2, document_ids=("doc1",), rewrite=False, rerank=True,
                          small2big=False)

    turn = asyncio.run(service.prepare(request))
    events = _events(service, turn)

    assert [r.model_dump(exclude_none=True) for r in retriever.requests] == [{
        "query": "hotel limit and E-104?", "kb_id": "kb1", "mode": "sparse", "top_k": 2,
        "document_ids": ("doc1",), "rewrite": False, "rerank": True, "small2big": False,
        "run_doc": True, "history": (),
    }]
    assert [e.n for e in turn.evidence] == [1, 2] and turn.new_conversation is not None
    assert events[0] == TurnStarted(turn)
    final = events[-1]
    assert isinstance(final, TurnFinished)
    expected = "The limit is 150 [1](citation://1) and E-104 [2](citation://2)."
    # checked as they stream: the link to evidence 7 (there is none) never goes out
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == expected
    assert (final.answer, [c.n for c in final.citations], final.extractive, final.model) == (
        expected, [1, 2], False, "fake-chat")

    stored = _turn(store, turn.conversation_id)
    assert (stored.id, stored.question, stored.answer, stored.status) == (
        turn.turn_id, "hotel limit and E-104?", expected, "complete")
    assert stored.evidence == turn.evidence and stored.trace == turn.trace
    assert stored.citations == final.citations and stored.model == "fake-chat"
    conversation = store.get_summary(turn.conversation_id)
    assert conversation is not None and conversation.title == "hotel limit and E-104?"


def test_the_prompt_numbers_the_evidence_and_replays_earlier_turns_without_links(
    store: SqlConversationStore,
) -> None:
    model = Model(["It is 150 [1](citation://1)."])
    service = ChatService(Retriever(HOTEL), store, model, ChatOptions(history_turns=1))
    first = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))
    _events(service, first)
    second = asyncio.run(service.prepare(ChatRequest(
        kb_id="kb1", message="and in Tokyo?", conversation_id=first.conversation_id)))
    _events(service, second)

    assert second.new_conversation is None
    system, asked, answered, current = model.prompts[1]
    assert system.content == SYSTEM_PROMPT
    assert (asked.role, asked.content) == ("user", "hotel limit?")
    assert (answered.role, answered.content) == ("assistant", "It is 150 .")
    assert current.content.startswith("Evidence:\n\n[1] hotels.md › Policy (page 1)\n")
    assert current.content.endswith("Question: and in Tokyo?")
    assert [t.question for t in store.get_conversation(first.conversation_id).turns] == [  # type: ignore[union-attr]
        "hotel limit?", "and in Tokyo?"]


def test_a_model_failure_mid_answer_stores_the_turn_failed_with_the_partial_answer(
    store: SqlConversationStore,
) -> None:
    service = ChatService(Retriever(HOTEL), store, Model(["150 [1](citation://1) ", "and"],
                                                         fail_after=1))
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))
    received: list[TurnEvent] = []

    async def run() -> None:
        async for event in service.run(turn):
            received.append(event)

    with pytest.raises(ChatModelFailed, match="overloaded"):
        asyncio.run(run())
    assert [type(e) for e in received] == [TurnStarted, AnswerDelta]
    stored = _turn(store, turn.conversation_id)
    assert (stored.status, stored.answer, [c.n for c in stored.citations]) == (
        "failed", "150 [1](citation://1) ", [1])
    assert stored.error == "the chat model failed: chat model failed mid-answer: overloaded"
    assert store.get_summary(turn.conversation_id).generating is False  # type: ignore[union-attr]


def test_closing_the_turn_early_closes_the_model_stream_and_stores_it_cancelled(
    store: SqlConversationStore,
) -> None:
    model = Model([f"part{i} " for i in range(50)], delay_s=0.01)
    service = ChatService(Retriever(HOTEL), store, model)
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))

    async def two_deltas() -> None:
        events = service.run(turn)
        assert isinstance(await anext(events), TurnStarted)
        await anext(events)
        await anext(events)
        await events.aclose()

    asyncio.run(two_deltas())
    assert model.closed_early
    stored = _turn(store, turn.conversation_id)
    assert (stored.status, stored.answer) == ("cancelled", "part0 part1 ")
    assert stored.error is not None and "client went away" in stored.error


def test_a_task_cancelled_while_the_turn_is_being_stored_still_ends_cancelled(
    store: SqlConversationStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = store.start_turn

    def slow_start(*args: object) -> None:
        time.sleep(0.3)
        started(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "start_turn", slow_start)
    service = ChatService(Retriever(HOTEL), store, Model(["never"]))
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))

    async def cancel_during_start() -> None:
        task = asyncio.create_task(anext(service.run(turn)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the insert finishes in its thread, then the callback runs: wait for it rather than
        # for a fixed time a loaded machine may not keep to
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _stored_as(store, turn.conversation_id,
                                                             "cancelled"):
            await asyncio.sleep(0.05)

    asyncio.run(cancel_during_start())
    assert _turn(store, turn.conversation_id).status == "cancelled"


def _stored_as(store: SqlConversationStore, conversation_id: str, status: str) -> bool:
    conversation = store.get_conversation(conversation_id)
    return conversation is not None and bool(conversation.turns) and (
        conversation.turns[-1].status == status)


def test_without_a_model_the_answer_is_extractive_and_says_so(
    store: SqlConversationStore,
) -> None:
    service = ChatService(Retriever(HOTEL), store, None)
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit in Tokyo")))
    events = _events(service, turn)
    assert turn.messages == ()
    [delta] = [e for e in events if isinstance(e, AnswerDelta)]
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.answer == delta.text and final.answer.startswith(EXTRACTIVE_NOTE_EN)
    assert final.answer.endswith("rises to 220 dollars. [Source 1](citation://1)")
    assert (final.extractive, final.model, [c.n for c in final.citations]) == (True, None, [1])
    assert _turn(store, turn.conversation_id).extractive is True
    assert service.model_name is None


def test_without_evidence_the_model_is_not_asked(store: SqlConversationStore) -> None:
    model = Model(["should not be used"])
    service = ChatService(Retriever(), store, model)
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))
    final = _events(service, turn)[-1]
    assert isinstance(final, TurnFinished)
    assert (final.answer, final.citations, final.extractive) == (NO_EVIDENCE_EN, (), True)
    assert model.prompts == []


def test_prepare_rejects_bad_messages_unknown_busy_or_foreign_conversations(
    store: SqlConversationStore,
) -> None:
    retriever = Retriever(HOTEL)
    service = ChatService(retriever, store, Model(["x"], delay_s=0.01))

    def prepare(**fields: object) -> PreparedTurn:
        return asyncio.run(service.prepare(ChatRequest(**{"kb_id": "kb1", **fields})))  # type: ignore[arg-type]

    with pytest.raises(InvalidInput, match="empty"):
        prepare(message="   ")
    with pytest.raises(NotFound, match="conversation 'nope'"):
        prepare(message="hotel?", conversation_id="nope")
    turn = prepare(message="hotel?")

    async def start_only() -> None:
        events = service.run(turn)
        await anext(events)  # stored as generating; left open on purpose
        with pytest.raises(ConversationBusy):
            await service.prepare(ChatRequest(kb_id="kb1", message="again?",
                                              conversation_id=turn.conversation_id))
        await events.aclose()

    asyncio.run(start_only())
    with pytest.raises(InvalidInput, match="belongs to knowledge base 'kb1'"):
        prepare(message="hotel?", kb_id="kb2", conversation_id=turn.conversation_id)
    assert len(retriever.requests) == 1  # nothing retrieved for a request that fails first


def test_retrieval_failure_propagates_and_stores_nothing(store: SqlConversationStore) -> None:
    service = ChatService(Retriever(fail=True), store, None)
    with pytest.raises(RetrievalUnavailable):
        asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel?")))
    assert store.list_conversations() == []


def test_closing_right_after_the_start_event_stores_the_turn_cancelled(
    store: SqlConversationStore,
) -> None:
    service = ChatService(Retriever(HOTEL), store, Model(["x"]))
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel?")))

    async def start_only() -> None:
        events = service.run(turn)
        assert isinstance(await anext(events), TurnStarted)
        await events.aclose()

    asyncio.run(start_only())
    assert _turn(store, turn.conversation_id).status == "cancelled"


def test_recover_fails_turns_a_stopped_process_left_generating(
    store: SqlConversationStore,
) -> None:
    service = ChatService(Retriever(HOTEL), store, None)
    turn = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel?")))
    # what a process that died mid-answer leaves behind: the turn stored as generating
    assert turn.new_conversation is not None
    store.start_turn(Turn(id=turn.turn_id, conversation_id=turn.conversation_id,
                          question=turn.question, trace=turn.trace,
                          created_at=datetime.now(UTC)), turn.new_conversation)

    assert service.recover() == 1
    stored = _turn(store, turn.conversation_id)
    assert (stored.status, stored.error) == ("failed", INTERRUPTED)
    assert service.recover() == 0


def test_a_regenerated_answer_is_built_from_the_history_before_the_turn_it_replaces(
    store: SqlConversationStore,
) -> None:
    retriever = Retriever(HOTEL)
    service = ChatService(retriever, store, Model(["It is 150 [1](citation://1)."]),
                          ChatOptions(history_turns=2))
    first = asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message="hotel limit?")))
    _events(service, first)
    second = asyncio.run(service.prepare(ChatRequest(
        kb_id="kb1", message="and in Tokyo?", conversation_id=first.conversation_id)))
    _events(service, second)
    with pytest.raises(InvalidInput, match="the turn's own question"):
        asyncio.run(service.prepare(ChatRequest(
            kb_id="kb1", message="something else", conversation_id=first.conversation_id,
            regenerate_turn_id=second.turn_id)))

    again = asyncio.run(service.prepare(ChatRequest(
        kb_id="kb1", message="and in Tokyo?", conversation_id=first.conversation_id,
        regenerate_turn_id=second.turn_id)))
    _events(service, again)

    # the search saw the first turn only, not the answer being replaced
    assert [m.content for m in retriever.requests[-1].history] == [
        "hotel limit?", "It is 150 [1](citation://1)."]
    turns = store.get_conversation(first.conversation_id).turns  # type: ignore[union-attr]
    assert [(t.id, t.version, t.superseded) for t in turns] == [
        (first.turn_id, 1, False), (second.turn_id, 1, True), (again.turn_id, 2, False)]
