"""Feedback on a chat turn: a rating, an optional comment, the cited sources a user marked
wrong and what they say was missing. Stored with the turn (one per turn: a new one replaces it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

Rating = Literal["up", "down"]
FEEDBACK_TEXT_CHARS = 2000  # comment and missing, each


class TurnFeedback(BaseModel):
    """What a user said about one answer; `wrong_sources` are chunk ids of the turn's evidence
    (FAQ entry ids for FAQ evidence)."""

    model_config = ConfigDict(frozen=True)

    rating: Rating
    comment: str | None = None
    wrong_sources: tuple[str, ...] = ()
    missing: str | None = None
    created_at: datetime


class FeedbackRecord(BaseModel):
    """A turn's feedback with the turn it is about (GET /api/feedback, the eval export)."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    turn_id: str
    kb_id: str
    question: str
    answer: str
    # the chunk ids the answer cited, in citation order, and whether each is a FAQ entry
    cited: tuple[str, ...] = ()
    cited_faq: tuple[str, ...] = ()
    feedback: TurnFeedback
