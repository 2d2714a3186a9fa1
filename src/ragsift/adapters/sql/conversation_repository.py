"""The ConversationStore port on SQLAlchemy: conversations and turns, SQLite or PostgreSQL.

A turn keeps its evidence snapshot (with each item's images), citations, the images its answer
shows and its trace as JSON, so reading a conversation back never searches again. "Busy" (a
turn still generating) is decided inside the writing transaction, after the conversation row
is locked by an UPDATE: on PostgreSQL that row lock makes concurrent writers to one
conversation wait for each other, on SQLite the write lock does.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql import conversation_extras as extras
from ragsift.adapters.sql.migrate import upgrade_to_head
from ragsift.adapters.sql.orm import (
    ConversationRow,
    ConversationTurnRow,
    KnowledgeBaseRow,
    make_engine,
    storable,
    storable_message,
    to_utc,
)
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import (
    Citation,
    Conversation,
    ConversationBusy,
    ConversationSummary,
    Evidence,
    NewConversation,
    Turn,
    TurnOutcome,
)
from ragsift.domain.errors import NotFound
from ragsift.domain.feedback import FeedbackRecord, Rating, TurnFeedback
from ragsift.domain.trace import RetrievalTrace

logger = logging.getLogger(__name__)

GENERATING = "generating"
_C = ConversationRow
_T = ConversationTurnRow


def _now() -> datetime:
    return datetime.now(UTC)


def _summaries() -> Select[Any]:
    """Conversation rows with their `generating` flag and turn count (correlated subqueries)."""
    generating = (
        select(_T.id).where(_T.conversation_id == _C.id, _T.status == GENERATING).exists()
    )
    turn_count = (
        select(func.count()).select_from(_T).where(_T.conversation_id == _C.id)
        .scalar_subquery()
    )
    return select(_C, generating.label("generating"), turn_count.label("turn_count"))


def _summary(row: ConversationRow, generating: bool, turn_count: int) -> ConversationSummary:
    return ConversationSummary(
        id=row.id, title=row.title, kb_id=row.kb_id, created_at=to_utc(row.created_at),
        updated_at=to_utc(row.updated_at), generating=bool(generating),
        turn_count=int(turn_count),
    )


def turn_from_row(row: ConversationTurnRow) -> Turn:
    """The domain value of a stored turn."""
    return Turn(
        id=row.id, conversation_id=row.conversation_id, question=row.question,
        answer=row.answer,
        citations=tuple(Citation.model_validate(item) for item in row.citations),
        evidence=tuple(Evidence.model_validate(item) for item in row.evidence),
        assets=tuple(AssetRef.model_validate(item) for item in row.assets or ()),
        trace=RetrievalTrace.model_validate(row.trace), extractive=row.extractive,
        model=row.model, status=row.status,  # type: ignore[arg-type]  # written from TurnStatus
        error=row.error, created_at=to_utc(row.created_at),
        finished_at=None if row.finished_at is None else to_utc(row.finished_at),
        version_of=row.version_of, version=row.version or 1, superseded=bool(row.superseded),
        feedback=extras.feedback_of(row),
    )


class SqlConversationStore:
    """Conversations and their turns in the relational store; thread-safe."""

    def __init__(self, url: str, migrate: bool = True) -> None:
        """`migrate=False` when the schema is known to be at head (the repository did it)."""
        self._engine = make_engine(url)
        if migrate:
            upgrade_to_head(url, self._engine)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)

    def close(self) -> None:
        """Release every pooled connection."""
        self._engine.dispose()

    def get_summary(self, conversation_id: str) -> ConversationSummary | None:
        """The conversation as the list shows it, or None."""
        with self._sessions() as session:
            found = session.execute(_summaries().where(_C.id == conversation_id)).one_or_none()
        return None if found is None else _summary(*found)

    def recent_turns(self, conversation_id: str, limit: int) -> list[Turn]:
        """The last `limit` complete turns, oldest first (the history of the next prompt)."""
        if limit <= 0:
            return []
        query = (
            select(_T).where(_T.conversation_id == conversation_id, _T.status == "complete",
                             _T.superseded.is_(False))
            .order_by(_T.position.desc()).limit(limit)
        )
        with self._sessions() as session:
            rows = list(session.scalars(query))
        return [turn_from_row(row) for row in reversed(rows)]

    def start_turn(self, turn: Turn, new_conversation: NewConversation | None = None) -> None:
        """Store a generating turn, creating the conversation with it when `new_conversation`.

        NotFound for an unknown conversation (or knowledge base of a new one);
        ConversationBusy when another turn of the conversation is still generating.
        """
        try:
            with storable("chat turn"), self._sessions.begin() as session:
                position = self._next_position(session, turn, new_conversation)
                root, version = (None, 1) if turn.version_of is None else extras.supersede(
                    session, turn)
                session.add(_T(
                    id=turn.id, conversation_id=turn.conversation_id, position=position,
                    question=turn.question, answer="", citations=[],
                    evidence=[item.model_dump(mode="json") for item in turn.evidence],
                    assets=None,
                    trace=turn.trace.model_dump(mode="json"), extractive=False, model=None,
                    status=GENERATING, error=None, created_at=to_utc(turn.created_at),
                    finished_at=None, version_of=root, version=version, superseded=False,
                ))
        except IntegrityError as exc:
            if new_conversation is not None and not self._kb_exists(new_conversation.kb_id):
                raise NotFound(
                    f"knowledge base {new_conversation.kb_id!r} does not exist"
                ) from exc
            if self.get_summary(turn.conversation_id) is None:  # deleted meanwhile
                raise NotFound(f"conversation {turn.conversation_id!r} does not exist") from exc
            raise

    @staticmethod
    def _next_position(
        session: Session, turn: Turn, new_conversation: NewConversation | None
    ) -> int:
        now = _now()
        if new_conversation is not None:
            session.add(_C(
                id=new_conversation.id, kb_id=new_conversation.kb_id,
                title=new_conversation.title, created_at=now, updated_at=now,
                owner_key=new_conversation.owner_key,
            ))
            session.flush()
            return 0
        _lock(session, turn.conversation_id, now)
        _check_idle(session, turn.conversation_id)
        last = session.scalar(
            select(func.max(_T.position)).where(_T.conversation_id == turn.conversation_id)
        )
        return 0 if last is None else int(last) + 1

    def _kb_exists(self, kb_id: str) -> bool:
        with self._sessions() as session:
            return session.get(KnowledgeBaseRow, kb_id) is not None

    def finish_turn(self, turn_id: str, outcome: TurnOutcome) -> None:
        """Store how a generating turn ended; a turn that already ended (or is gone) is kept."""
        now = _now()
        values: dict[str, Any] = {
            "status": outcome.status,
            "answer": storable_message(outcome.answer) or "",
            "citations": [item.model_dump(mode="json") for item in outcome.citations],
            "assets": [item.model_dump(mode="json") for item in outcome.assets] or None,
            "extractive": outcome.extractive,
            "model": outcome.model,
            "error": storable_message(outcome.error),
            "finished_at": now,
        }
        with storable("chat answer"), self._sessions.begin() as session:
            conversation_id = session.scalar(
                select(_T.conversation_id).where(_T.id == turn_id)
            )
            changed = session.execute(
                update(_T).where(_T.id == turn_id, _T.status == GENERATING).values(**values)
            ).rowcount  # type: ignore[attr-defined]
            if not changed:
                logger.info("turn %s had already ended or is gone; kept as it was", turn_id)
                return
            session.execute(update(_C).where(_C.id == conversation_id).values(updated_at=now))

    def list_conversations(
        self, owner_key: str | None = None, kb_id: str | None = None, text: str | None = None,
    ) -> list[ConversationSummary]:
        """Every conversation (of `owner_key`, of `kb_id`, whose title or turns contain `text`,
        when given), most recently updated first."""
        query = _summaries().order_by(_C.updated_at.desc(), _C.id.desc())
        if owner_key is not None:
            query = query.where(_C.owner_key == owner_key)
        if kb_id is not None:
            query = query.where(_C.kb_id == kb_id)
        if text:
            query = extras.matching(query, text)
        with self._sessions() as session:
            return [_summary(*found) for found in session.execute(query)]

    def conversation_owner(self, conversation_id: str) -> tuple[bool, str | None]:
        """(whether the conversation exists, the API key it belongs to)."""
        with self._sessions() as session:
            row = session.get(_C, conversation_id)
            return (row is not None, None if row is None else row.owner_key)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        """The conversation with every stored turn, oldest first; None when unknown."""
        with self._sessions() as session:
            found = session.execute(_summaries().where(_C.id == conversation_id)).one_or_none()
            if found is None:
                return None
            rows = list(session.scalars(
                select(_T).where(_T.conversation_id == conversation_id).order_by(_T.position)
            ))
        summary = _summary(*found)
        return Conversation(
            id=summary.id, title=summary.title, kb_id=summary.kb_id,
            created_at=summary.created_at, updated_at=summary.updated_at,
            generating=summary.generating, turns=tuple(turn_from_row(row) for row in rows),
        )

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """Set the conversation's title; NotFound when unknown."""
        with self._sessions.begin() as session:
            extras.rename(session, conversation_id, title)

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn | None:
        """The turn of this conversation, or None."""
        with self._sessions() as session:
            try:
                return turn_from_row(extras.turn_row(session, conversation_id, turn_id))
            except NotFound:
                return None

    def set_feedback(
        self, conversation_id: str, turn_id: str, feedback: TurnFeedback | None
    ) -> None:
        """Store (replace) the turn's feedback; NotFound for an unknown turn, ConversationBusy
        while it is generating."""
        with storable("feedback"), self._sessions.begin() as session:
            extras.store_feedback(
                session, extras.turn_row(session, conversation_id, turn_id), feedback)

    def list_feedback(
        self, owner_key: str | None = None, kb_id: str | None = None,
        rating: Rating | None = None, offset: int = 0, limit: int | None = None,
    ) -> tuple[list[FeedbackRecord], int]:
        """Rated turns (of `owner_key`'s conversations, of `kb_id`, with `rating`, when given),
        newest feedback first: one page and the total."""
        query = extras.feedback_query(owner_key, kb_id, rating)
        with self._sessions() as session:
            total = extras.count(session, query)
            page = query.offset(offset)
            if limit is not None:
                page = page.limit(limit)
            records = [extras.feedback_record(row, kb) for row, kb in session.execute(page)]
        return records, total

    def delete_conversation(self, conversation_id: str) -> None:
        """Remove a conversation and its turns; NotFound, or ConversationBusy while generating."""
        with self._sessions.begin() as session:
            _lock(session, conversation_id, None)
            _check_idle(session, conversation_id)
            session.execute(delete(_T).where(_T.conversation_id == conversation_id))
            session.execute(delete(_C).where(_C.id == conversation_id))

    def fail_generating(self, reason: str) -> int:
        """Mark every turn still generating as failed with `reason`; how many."""
        with self._sessions.begin() as session:
            result = session.execute(
                update(_T).where(_T.status == GENERATING)
                .values(status="failed", error=reason, finished_at=_now())
            )
            return int(result.rowcount)  # type: ignore[attr-defined]


def _lock(session: Session, conversation_id: str, now: datetime | None) -> None:
    """Lock the conversation row for this transaction (an UPDATE); NotFound when unknown."""
    value = _C.updated_at if now is None else now
    result = session.execute(update(_C).where(_C.id == conversation_id).values(updated_at=value))
    if not result.rowcount:  # type: ignore[attr-defined]
        raise NotFound(f"conversation {conversation_id!r} does not exist")


def _check_idle(session: Session, conversation_id: str) -> None:
    busy = session.scalar(
        select(_T.id).where(_T.conversation_id == conversation_id, _T.status == GENERATING)
        .limit(1)
    )
    if busy is not None:
        raise ConversationBusy(
            f"conversation {conversation_id!r} is still answering (turn {busy}); "
            "wait for it to finish"
        )
