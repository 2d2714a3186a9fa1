"""Conversation queries beyond the basic store: search by title and content, rename, a turn's
feedback (stored in its row) and the feedback list, regenerated versions of a turn."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, or_, select, update
from sqlalchemy.orm import Session

from ragsift.adapters.sql.orm import ConversationRow, ConversationTurnRow
from ragsift.domain.chat import ConversationBusy, Turn
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.feedback import FeedbackRecord, Rating, TurnFeedback

_C = ConversationRow
_T = ConversationTurnRow
GENERATING = "generating"


def matching(query: Select[Any], text: str) -> Select[Any]:
    """Conversations whose title, or a question or answer of one of their turns, contains
    `text` (case-insensitive for ASCII on both backends; LIKE wildcards in `text` are literal)."""
    in_turns = select(_T.id).where(
        _T.conversation_id == _C.id,
        or_(_T.question.icontains(text, autoescape=True),
            _T.answer.icontains(text, autoescape=True)),
    ).exists()
    return query.where(or_(_C.title.icontains(text, autoescape=True), in_turns))


def rename(session: Session, conversation_id: str, title: str) -> None:
    """Set the title; NotFound when the conversation is unknown (updated_at is kept, so a
    rename does not move it to the top of the list)."""
    result = session.execute(update(_C).where(_C.id == conversation_id).values(title=title))
    if not result.rowcount:  # type: ignore[attr-defined]
        raise NotFound(f"conversation {conversation_id!r} does not exist")


def turn_row(session: Session, conversation_id: str, turn_id: str) -> ConversationTurnRow:
    """The turn of this conversation; NotFound otherwise."""
    row = session.get(_T, turn_id)
    if row is None or row.conversation_id != conversation_id:
        raise NotFound(f"turn {turn_id!r} does not exist in conversation {conversation_id!r}")
    return row


def store_feedback(session: Session, row: ConversationTurnRow,
                   feedback: TurnFeedback | None) -> None:
    """Replace the turn's feedback (None removes it)."""
    if row.status == GENERATING:
        raise ConversationBusy(f"turn {row.id!r} is still answering; rate it when it is done")
    row.feedback = None if feedback is None else feedback.model_dump(mode="json")
    row.feedback_rating = None if feedback is None else feedback.rating
    row.feedback_at = None if feedback is None else feedback.created_at


def feedback_of(row: ConversationTurnRow) -> TurnFeedback | None:
    return None if row.feedback is None else TurnFeedback.model_validate(row.feedback)


def feedback_query(owner_key: str | None, kb_id: str | None, rating: Rating | None
                   ) -> Select[ConversationTurnRow, str]:
    """Turns with feedback (and their conversation's KB), newest feedback first."""
    query = (select(_T, _C.kb_id).join(_C, _C.id == _T.conversation_id)
             .where(_T.feedback_rating.is_not(None))
             .order_by(_T.feedback_at.desc(), _T.id))
    if owner_key is not None:
        query = query.where(_C.owner_key == owner_key)
    if kb_id is not None:
        query = query.where(_C.kb_id == kb_id)
    if rating is not None:
        query = query.where(_T.feedback_rating == rating)
    return query


def count(session: Session, query: Select[ConversationTurnRow, str]) -> int:
    return int(session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
               or 0)


def feedback_record(row: ConversationTurnRow, kb_id: str) -> FeedbackRecord:
    feedback = feedback_of(row)
    assert feedback is not None  # the query selects rated turns only
    citations = row.citations or []
    return FeedbackRecord(
        conversation_id=row.conversation_id, turn_id=row.id, kb_id=kb_id,
        question=row.question, answer=row.answer,
        cited=tuple(str(c["chunk_id"]) for c in citations if c.get("kind", "chunk") == "chunk"),
        cited_faq=tuple(str(c["chunk_id"]) for c in citations if c.get("kind") == "faq"),
        feedback=feedback,
    )


def supersede(session: Session, turn: Turn) -> tuple[str, int]:
    """For a regenerated turn: check that the turn it re-answers is the conversation's latest
    current turn, mark it superseded, and return (first version's id, this version number)."""
    assert turn.version_of is not None
    previous = turn_row(session, turn.conversation_id, turn.version_of)
    latest = session.scalar(
        select(_T.id).where(_T.conversation_id == turn.conversation_id,
                            _T.superseded.is_(False))
        .order_by(_T.position.desc()).limit(1))
    if previous.superseded or latest != previous.id:
        raise InvalidInput(f"turn {previous.id!r} is not the conversation's last turn: only "
                           "the last answer can be regenerated")
    previous.superseded = True
    return previous.version_of or previous.id, previous.version + 1

