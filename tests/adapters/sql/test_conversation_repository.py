"""Conversations and turns in the relational store, on SQLite and PostgreSQL: a turn restores
exactly as stored, busy conversations refuse a second turn and deletion, ends are final."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sql_factories import make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.domain.chat import (
    Citation,
    ConversationBusy,
    Evidence,
    NewConversation,
    Turn,
    TurnOutcome,
    conversation_title,
)
from ragsift.domain.errors import NotFound
from ragsift.domain.models import Locator
from ragsift.domain.trace import Degradation, RetrievalTrace, StageTrace

T0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
EVIDENCE = (
    Evidence(n=1, chunk_id="c1", document_id="d1", filename="hotels.md",
             heading_path=("Travel", "Hotels"), locator=Locator(page=2),
             text="Limit 150 dollars.", context_text="Intro. Limit 150 dollars.", score=0.0325),
    Evidence(n=2, chunk_id="c2", document_id="d2", filename="年假.md", heading_path=(),
             locator=None, text="年假最多结转五天。", score=0.5),
)
TRACE = RetrievalTrace(
    request_id="req1", kb_id="kb1", query="hotel limit", mode="hybrid", fusion="rrf",
    degradations=(Degradation(code="rewrite_failed", reason="timeout"),),
    rerank=StageTrace(status="off", reason="no reranker configured"),
    timings_ms={"channels": 1.5, "total": 3.25}, returned_count=2,
)


def turn(turn_id: str, conversation_id: str = "conv1", question: str = "hotel limit?",
         minutes: int = 0) -> Turn:
    return Turn(id=turn_id, conversation_id=conversation_id, question=question,
                evidence=EVIDENCE, trace=TRACE, created_at=T0 + timedelta(minutes=minutes))


def done(answer: str = "150 dollars [1](citation://1).") -> TurnOutcome:
    citation = Citation(n=1, chunk_id="c1", document_id="d1", filename="hotels.md",
                        locator=Locator(page=2), heading_path=("Travel", "Hotels"),
                        text="Limit 150 dollars.")
    return TurnOutcome(status="complete", answer=answer, citations=(citation,),
                       model="qwen-plus")


NEW = NewConversation(id="conv1", kb_id="kb1", title=conversation_title("hotel limit?"))


@pytest.fixture
def store(repo: SqlRepository, db_url: str) -> Iterator[SqlConversationStore]:
    repo.create_kb(make_kb("kb1"))
    conversations = SqlConversationStore(db_url, migrate=False)
    yield conversations
    conversations.close()


def test_a_stored_turn_restores_exactly_with_evidence_trace_and_citations(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("t1"), NEW)
    assert store.get_summary("conv1").generating is True  # type: ignore[union-attr]
    store.finish_turn("t1", done())

    conversation = store.get_conversation("conv1")
    assert conversation is not None
    assert (conversation.title, conversation.kb_id, conversation.generating) == (
        "hotel limit?", "kb1", False)
    [stored] = conversation.turns
    assert stored.evidence == EVIDENCE
    assert stored.trace == TRACE
    assert stored.citations == done().citations
    assert (stored.question, stored.answer, stored.status, stored.model, stored.extractive) == (
        "hotel limit?", "150 dollars [1](citation://1).", "complete", "qwen-plus", False)
    assert stored.created_at == T0 and stored.finished_at is not None
    assert stored.finished_at.tzinfo is not None


def test_turns_keep_their_order_and_recent_turns_are_the_last_complete_ones(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("t1", question="q1"), NEW)
    store.finish_turn("t1", done("a1"))
    for number, status in ((2, "failed"), (3, "complete"), (4, "complete")):
        store.start_turn(turn(f"t{number}", question=f"q{number}", minutes=number))
        store.finish_turn(f"t{number}", TurnOutcome(status=status, answer=f"a{number}"))

    conversation = store.get_conversation("conv1")
    assert conversation is not None
    assert [t.id for t in conversation.turns] == ["t1", "t2", "t3", "t4"]
    assert [t.question for t in store.recent_turns("conv1", 2)] == ["q3", "q4"]
    assert [t.question for t in store.recent_turns("conv1", 10)] == ["q1", "q3", "q4"]
    assert store.recent_turns("conv1", 0) == []
    assert store.get_summary("conv1").turn_count == 4  # type: ignore[union-attr]


def test_a_second_turn_while_one_is_generating_is_refused(store: SqlConversationStore) -> None:
    store.start_turn(turn("t1"), NEW)
    with pytest.raises(ConversationBusy):
        store.start_turn(turn("t2"))
    store.finish_turn("t1", done())
    store.start_turn(turn("t2"))
    assert store.get_summary("conv1").turn_count == 2  # type: ignore[union-attr]


def test_only_one_of_many_concurrent_turns_starts(store: SqlConversationStore) -> None:
    store.start_turn(turn("t0"), NEW)
    store.finish_turn("t0", done())
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def start(number: int) -> None:
        barrier.wait()
        try:
            store.start_turn(turn(f"t{number + 1}"))
            outcomes.append("started")
        except ConversationBusy:
            outcomes.append("busy")

    threads = [threading.Thread(target=start, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["busy", "busy", "busy", "started"]


def test_delete_is_refused_while_generating_then_removes_everything(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("t1"), NEW)
    with pytest.raises(ConversationBusy):
        store.delete_conversation("conv1")
    store.finish_turn("t1", done())
    store.delete_conversation("conv1")
    assert store.get_conversation("conv1") is None
    assert store.list_conversations() == []
    with pytest.raises(NotFound):
        store.delete_conversation("conv1")


def test_unknown_conversation_or_knowledge_base_is_not_found(
    store: SqlConversationStore,
) -> None:
    with pytest.raises(NotFound, match="conversation 'nope'"):
        store.start_turn(turn("t1", conversation_id="nope"))
    with pytest.raises(NotFound, match="knowledge base 'kb9'"):
        store.start_turn(turn("t1"), NewConversation(id="conv1", kb_id="kb9", title="x"))
    assert store.get_summary("nope") is None and store.get_conversation("nope") is None
    assert store.list_conversations() == []


def test_a_turn_ends_once(store: SqlConversationStore) -> None:
    store.start_turn(turn("t1"), NEW)
    store.finish_turn("t1", TurnOutcome(status="cancelled", answer="partial", error="gone"))
    store.finish_turn("t1", done())  # too late: already ended
    store.finish_turn("missing", done())  # gone: nothing to do
    [stored] = store.get_conversation("conv1").turns  # type: ignore[union-attr]
    assert (stored.status, stored.answer, stored.error) == ("cancelled", "partial", "gone")


def test_list_is_newest_first_with_generating_flags_and_counts(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("a1", conversation_id="a"), NewConversation("a", "kb1", "first"))
    store.finish_turn("a1", done())
    store.start_turn(turn("b1", conversation_id="b"), NewConversation("b", "kb1", "second"))

    listed = store.list_conversations()
    assert [(c.id, c.title, c.generating, c.turn_count) for c in listed] == [
        ("b", "second", True, 1), ("a", "first", False, 1)]
    store.finish_turn("b1", done())
    store.start_turn(turn("a2", conversation_id="a"))  # a is updated last now
    assert [c.id for c in store.list_conversations()] == ["a", "b"]


def test_turns_left_generating_by_a_stopped_process_become_failed(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("a1", conversation_id="a"), NewConversation("a", "kb1", "a"))
    store.start_turn(turn("b1", conversation_id="b"), NewConversation("b", "kb1", "b"))
    store.finish_turn("b1", done())
    assert store.fail_generating("interrupted") == 1
    [stored] = store.get_conversation("a").turns  # type: ignore[union-attr]
    assert (stored.status, stored.error) == ("failed", "interrupted")
    store.delete_conversation("a")  # no longer busy


def test_deleting_the_knowledge_base_deletes_its_conversations(
    store: SqlConversationStore, repo: SqlRepository,
) -> None:
    store.start_turn(turn("t1"), NEW)
    store.finish_turn("t1", done())
    repo.delete_kb("kb1")
    assert store.list_conversations() == []


def test_nul_characters_in_a_model_answer_are_stored_visibly(
    store: SqlConversationStore,
) -> None:
    store.start_turn(turn("t1"), NEW)
    store.finish_turn("t1", TurnOutcome(status="complete", answer="a\x00b"))
    [stored] = store.get_conversation("conv1").turns  # type: ignore[union-attr]
    assert stored.answer == "a\ufffdb"
