"""Feedback on a turn, checked against the turn: the sources a user marks wrong must be the
turn's own evidence, named by citation number ([n]) or by chunk id."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ragsift.domain.chat import Turn
from ragsift.domain.errors import InvalidInput
from ragsift.domain.feedback import FEEDBACK_TEXT_CHARS, Rating, TurnFeedback


def _text(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    cleaned = value.replace("\x00", "").strip()
    if len(cleaned) > FEEDBACK_TEXT_CHARS:
        raise InvalidInput(f"{name} is {len(cleaned)} characters; at most "
                           f"{FEEDBACK_TEXT_CHARS} are kept")
    return cleaned or None


def resolve_sources(turn: Turn, named: Sequence[int | str]) -> tuple[str, ...]:
    """The chunk ids (FAQ entry ids for FAQ evidence) of the evidence `named` names, in the
    order given, each once; InvalidInput names what is not this turn's evidence."""
    by_number = {item.n: item.chunk_id for item in turn.evidence}
    ids = {item.chunk_id for item in turn.evidence}
    resolved: dict[str, None] = {}
    unknown: list[str] = []
    for name in named:
        if isinstance(name, int) and name in by_number:
            resolved.setdefault(by_number[name], None)
        elif isinstance(name, str) and name in ids:
            resolved.setdefault(name, None)
        else:
            unknown.append(repr(name))
    if unknown:
        known = (f"citation numbers 1..{len(turn.evidence)} or their chunk ids"
                 if turn.evidence else "none: the turn has no evidence")
        raise InvalidInput(f"wrong_sources: {', '.join(unknown)} is not a source of turn "
                           f"{turn.id!r} (its sources: {known})")
    return tuple(resolved)


def turn_feedback(
    turn: Turn, rating: Rating, comment: str | None = None,
    wrong_sources: Sequence[int | str] = (), missing: str | None = None,
    now: datetime | None = None,
) -> TurnFeedback:
    """A turn's feedback, validated (InvalidInput with the reason)."""
    return TurnFeedback(
        rating=rating, comment=_text("comment", comment),
        wrong_sources=resolve_sources(turn, wrong_sources),
        missing=_text("missing", missing), created_at=now or datetime.now(UTC),
    )
