"""Bodies of conversation rename and turn feedback (issue 38)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, StringConstraints

from ragsift.api.schemas import Body
from ragsift.domain.feedback import FEEDBACK_TEXT_CHARS, FeedbackRecord, Rating, TurnFeedback

TITLE_MAX_CHARS = 200
MAX_WRONG_SOURCES = 50


def _no_nul(value: str) -> str:
    value.encode("utf-8")  # lone surrogates: a UnicodeEncodeError is a ValueError
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return value


Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                         max_length=TITLE_MAX_CHARS), AfterValidator(_no_nul)]
FeedbackText = Annotated[str, StringConstraints(max_length=FEEDBACK_TEXT_CHARS),
                         AfterValidator(_no_nul)]
SourceName = int | Annotated[str, StringConstraints(min_length=1, max_length=200)]


class RenameBody(Body):
    """A conversation's new title (1 to 200 characters, surrounding spaces dropped)."""

    title: Title


class FeedbackBody(Body):
    """Feedback on one answer. A second POST on the same turn replaces the first."""

    rating: Rating
    comment: FeedbackText | None = Field(default=None, description="optional free text")
    wrong_sources: list[SourceName] = Field(
        default_factory=list, max_length=MAX_WRONG_SOURCES,
        description="sources of this turn that were wrong: citation numbers (the n of "
                    "[n]) or chunk ids of the turn's evidence")
    missing: FeedbackText | None = Field(
        default=None, description="what the answer lacked (e.g. the document it should have "
                                  "cited)")


class TurnFeedbackOut(BaseModel):
    """The stored feedback with the turn it is about."""

    conversation_id: str
    turn_id: str
    feedback: TurnFeedback


class FeedbackPage(BaseModel):
    """One page of rated turns, newest feedback first."""

    total: int
    offset: int
    items: list[FeedbackRecord]
