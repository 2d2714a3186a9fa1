"""Conversation rename, search, per-turn feedback and regenerated versions in the relational
store, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sql_factories import make_kb
from test_conversation_repository import NEW, done, turn

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.domain.chat import NewConversation, Turn, TurnOutcome
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.feedback import TurnFeedback

T1 = datetime(2025, 3, 2, tzinfo=UTC)


@pytest.fixture
def store(repo: SqlRepository, db_url: str) -> Iterator[SqlConversationStore]:
    repo.create_kb(make_kb("kb1"))
    repo.create_kb(make_kb("kb2"))
    conversations = SqlConversationStore(db_url, migrate=False)
    yield conversations
    conversations.close()


def _complete(store: SqlConversationStore, record: Turn, answer: str,
              new: NewConversation | None = None) -> None:
    store.start_turn(record, new)
    store.finish_turn(record.id, TurnOutcome(status="complete", answer=answer,
                                             citations=done().citations))


def test_search_matches_title_question_or_answer_the_list_filters_by_kb_and_rename_keeps_order(
    store: SqlConversationStore,
) -> None:
    _complete(store, turn("t1", question="hotel limit?"), "150 dollars", NEW)
    _complete(store, turn("t2", conversation_id="conv2", question="年假怎么算"), "最多结转五天",
              NewConversation(id="conv2", kb_id="kb2", title="年假怎么算"))
    _complete(store, turn("t3", conversation_id="conv3", question="50%_off?"), "none",
              NewConversation(id="conv3", kb_id="kb1", title="discounts"))

    def ids(**kwargs: str) -> set[str]:
        return {c.id for c in store.list_conversations(**kwargs)}  # type: ignore[arg-type]

    assert ids(text="HOTEL") == {"conv1"}  # title, any case
    assert ids(text="dollars") == {"conv1"}  # an answer
    assert ids(text="结转") == {"conv2"}
    assert ids(text="%_") == {"conv3"}  # wildcards are literal
    assert ids(text="nowhere") == set()
    assert ids(kb_id="kb1") == {"conv1", "conv3"}
    assert ids(kb_id="kb2", text="hotel") == set()
    before = store.get_summary("conv1")
    store.rename_conversation("conv1", "Hotels in Tokyo")
    after = store.get_summary("conv1")
    assert after is not None and before is not None
    assert (after.title, after.updated_at) == ("Hotels in Tokyo", before.updated_at)
    assert ids(text="tokyo") == {"conv1"}
    with pytest.raises(NotFound):
        store.rename_conversation("nope", "x")


def test_feedback_is_stored_with_the_turn_replaced_by_a_second_and_listed_by_kb_and_rating(
    store: SqlConversationStore,
) -> None:
    _complete(store, turn("t1"), "a", NEW)
    _complete(store, turn("t2", conversation_id="conv2"), "b",
              NewConversation(id="conv2", kb_id="kb2", title="other", owner_key="alice"))
    store.set_feedback("conv1", "t1", TurnFeedback(rating="down", wrong_sources=("c1",),
                                                   created_at=T1))
    store.set_feedback("conv1", "t1", TurnFeedback(rating="up", comment="good",
                                                   created_at=T1 + timedelta(minutes=1)))
    store.set_feedback("conv2", "t2", TurnFeedback(rating="down", missing="the 2024 policy",
                                                   created_at=T1))

    stored = store.get_turn("conv1", "t1")
    assert stored is not None and stored.feedback is not None
    assert (stored.feedback.rating, stored.feedback.comment, stored.feedback.wrong_sources) == (
        "up", "good", ())
    records, total = store.list_feedback()
    assert total == 2 and [r.turn_id for r in records] == ["t1", "t2"]  # newest first
    assert records[0].cited == ("c1",) and records[0].kb_id == "kb1"
    assert [r.turn_id for r in store.list_feedback(kb_id="kb2")[0]] == ["t2"]
    assert [r.turn_id for r in store.list_feedback(rating="down")[0]] == ["t2"]
    assert [r.turn_id for r in store.list_feedback(owner_key="alice")[0]] == ["t2"]
    page, total = store.list_feedback(offset=1, limit=1)
    assert (total, [r.turn_id for r in page]) == (2, ["t2"])
    with pytest.raises(NotFound):
        store.set_feedback("conv2", "t1", None)  # a turn of another conversation


def test_a_regenerated_turn_is_a_new_version_and_the_old_one_leaves_the_history(
    store: SqlConversationStore,
) -> None:
    _complete(store, turn("t1", question="q1"), "a1", NEW)
    _complete(store, turn("t2", question="q2", minutes=1), "a2")
    with pytest.raises(InvalidInput, match="last answer"):
        store.start_turn(turn("x", question="q1", minutes=2).model_copy(
            update={"version_of": "t1"}))
    _complete(store, turn("t3", question="q2", minutes=2).model_copy(
        update={"version_of": "t2"}), "a2 again")
    _complete(store, turn("t4", question="q2", minutes=3).model_copy(
        update={"version_of": "t3"}), "a2 third")

    conversation = store.get_conversation("conv1")
    assert conversation is not None
    assert [(t.id, t.version_of, t.version, t.superseded) for t in conversation.turns] == [
        ("t1", None, 1, False), ("t2", None, 1, True), ("t3", "t2", 2, True),
        ("t4", "t2", 3, False)]
    assert [t.answer for t in store.recent_turns("conv1", 5)] == ["a1", "a2 third"]
