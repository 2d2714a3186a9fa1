"""Port of the conversation store."""

from __future__ import annotations

from typing import Protocol

from ragsift.domain.chat import (
    Conversation,
    ConversationSummary,
    NewConversation,
    Turn,
    TurnOutcome,
)
from ragsift.domain.feedback import FeedbackRecord, Rating, TurnFeedback


class ConversationStore(Protocol):
    """Conversations and their turns in the relational store."""

    def get_summary(self, conversation_id: str) -> ConversationSummary | None: ...

    def recent_turns(self, conversation_id: str, limit: int) -> list[Turn]:
        """The last `limit` complete turns, oldest first."""
        ...

    def start_turn(self, turn: Turn, new_conversation: NewConversation | None = None) -> None:
        """Store a generating turn (creating the conversation with it when new).

        NotFound when the conversation does not exist; ConversationBusy when another of
        its turns is still generating.
        """
        ...

    def finish_turn(self, turn_id: str, outcome: TurnOutcome) -> None: ...

    def conversation_owner(self, conversation_id: str) -> tuple[bool, str | None]:
        """(whether the conversation exists, the API key it belongs to)."""
        ...

    def list_conversations(
        self, owner_key: str | None = None, kb_id: str | None = None, text: str | None = None,
    ) -> list[ConversationSummary]:
        """Every conversation (filtered when given), most recently updated first."""
        ...

    def get_conversation(self, conversation_id: str) -> Conversation | None: ...

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn | None: ...

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """NotFound when unknown."""
        ...

    def set_feedback(
        self, conversation_id: str, turn_id: str, feedback: TurnFeedback | None
    ) -> None:
        """Replace the turn's feedback; NotFound, or ConversationBusy while it generates."""
        ...

    def list_feedback(
        self, owner_key: str | None = None, kb_id: str | None = None,
        rating: Rating | None = None, offset: int = 0, limit: int | None = None,
    ) -> tuple[list[FeedbackRecord], int]:
        """Rated turns, newest feedback first: one page and the total."""
        ...

    def delete_conversation(self, conversation_id: str) -> None:
        """NotFound when unknown; ConversationBusy while one of its turns is generating."""
        ...

    def fail_generating(self, reason: str) -> int:
        """Mark turns a stopped process left generating as failed; how many."""
        ...
