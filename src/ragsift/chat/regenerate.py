"""Regenerate: a new version of a conversation's last turn, answering the same question again
(the store checks that it is the last turn, and keeps the old version as superseded)."""

from __future__ import annotations

from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.ports import ConversationStore


def check_regenerate(store: ConversationStore, conversation_id: str | None, turn_id: str,
                     question: str) -> None:
    """InvalidInput without a conversation or for another question; NotFound for another
    conversation's (or an unknown) turn."""
    if conversation_id is None:
        raise InvalidInput("regenerate needs the conversation_id of the turn")
    turn = store.get_turn(conversation_id, turn_id)
    if turn is None:
        raise NotFound(f"turn {turn_id!r} does not exist in conversation {conversation_id!r}")
    if turn.question != question:
        raise InvalidInput("regenerate answers the turn's own question again: send it as "
                           "the message (a new question is a new turn)")
