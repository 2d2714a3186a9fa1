"""The images of a chat turn in the relational store, on SQLite and PostgreSQL: the evidence
keeps each item's images and the turn the images its answer shows, exactly as stored; turns
from before migration 0012 (a NULL column) show none."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from sql_factories import make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.adapters.sql.orm import ConversationTurnRow, make_engine
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Evidence, NewConversation, Turn, TurnOutcome
from ragsift.domain.models import Locator
from ragsift.domain.trace import RetrievalTrace

T0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
CHART = AssetRef(id="a" * 32, media_type="image/png", width=640, height=480,
                 caption="Hotel limits 酒店", page=2)
SLIDE = AssetRef(id="b" * 32, media_type="image/jpeg", width=300, height=200, slide=4)
EVIDENCE = (
    Evidence(n=1, chunk_id="c1", document_id="d1", filename="hotels.pdf",
             locator=Locator(page=2, boxes=((72.0, 80.5, 300.0, 92.25),)),
             text="Limit 150 dollars.", score=0.5, assets=(CHART,)),
    Evidence(n=2, chunk_id="c2", document_id="d2", filename="deck.pptx",
             locator=Locator(slide=4), text="Slide text.", score=0.25, assets=(SLIDE,)),
)
TRACE = RetrievalTrace(request_id="r1", kb_id="kb1", query="q", mode="hybrid", fusion="rrf")
NEW = NewConversation(id="conv1", kb_id="kb1", title="q")


@pytest.fixture
def store(repo: SqlRepository, db_url: str) -> Iterator[SqlConversationStore]:
    repo.create_kb(make_kb("kb1"))
    conversations = SqlConversationStore(db_url, migrate=False)
    yield conversations
    conversations.close()


def _turn(turn_id: str) -> Turn:
    return Turn(id=turn_id, conversation_id="conv1", question="q", evidence=EVIDENCE,
                trace=TRACE, created_at=T0)


def _stored(store: SqlConversationStore, index: int = -1) -> Turn:
    conversation = store.get_conversation("conv1")
    assert conversation is not None
    return conversation.turns[index]


def test_a_turn_restores_the_images_of_its_answer_and_of_its_evidence(
    store: SqlConversationStore,
) -> None:
    store.start_turn(_turn("t1"), NEW)
    assert _stored(store).assets == ()  # generating: nothing shown yet
    answer = f"150 [1](citation://1)\n\n![chart](asset://{CHART.id})"
    store.finish_turn("t1", TurnOutcome(status="complete", answer=answer,
                                        assets=(CHART, SLIDE)))

    stored = _stored(store)
    assert stored.answer == answer
    assert stored.assets == (CHART, SLIDE)
    assert stored.evidence == EVIDENCE
    assert stored.evidence[0].locator is not None
    assert stored.evidence[0].locator.boxes == ((72.0, 80.5, 300.0, 92.25),)
    assert store.recent_turns("conv1", 1)[0].assets == (CHART, SLIDE)


def test_a_failed_turn_keeps_the_images_of_its_partial_answer(
    store: SqlConversationStore,
) -> None:
    store.start_turn(_turn("t1"), NEW)
    store.finish_turn("t1", TurnOutcome(status="failed", answer="partial", assets=(SLIDE,),
                                        error="the chat model failed"))
    assert (_stored(store).status, _stored(store).assets) == ("failed", (SLIDE,))


def test_a_turn_without_images_and_a_turn_from_before_0012_show_none(
    store: SqlConversationStore, db_url: str,
) -> None:
    store.start_turn(_turn("t1"), NEW)
    store.finish_turn("t1", TurnOutcome(status="complete", answer="no image"))
    store.start_turn(_turn("t2"))
    store.finish_turn("t2", TurnOutcome(status="complete", answer="x", assets=(CHART,)))
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            stored = connection.execute(sa.select(ConversationTurnRow.id,
                                                  ConversationTurnRow.assets)).all()
            # an old row: the column is NULL, as migration 0012 leaves existing turns
            connection.execute(sa.update(ConversationTurnRow)
                               .where(ConversationTurnRow.id == "t2").values(assets=None))
    finally:
        engine.dispose()

    assert {row.id: row.assets for row in stored}["t1"] is None  # NULL for none, not []
    conversation = store.get_conversation("conv1")
    assert conversation is not None
    assert [turn.assets for turn in conversation.turns] == [(), ()]
