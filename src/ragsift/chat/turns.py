"""The records of one chat turn (ChatService, service.py): the request, the turn prepared from
it, the events its run yields and the whole answer of the JSON endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import (
    ChatMessage,
    Citation,
    Evidence,
    NewConversation,
    TokenUsage,
)
from ragsift.domain.requests import Mode, RouteChoice
from ragsift.domain.trace import RetrievalTrace


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One message of a conversation (new when `conversation_id` is None) and search options."""

    kb_id: str
    message: str
    conversation_id: str | None = None
    # several KBs searched with one ranking (kb_id first); None: kb_id alone
    kb_ids: tuple[str, ...] | None = None
    mode: Mode | None = None
    top_k: int | None = None
    document_ids: tuple[str, ...] | None = None
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None
    route: RouteChoice | None = None  # None: the plan's rules decide
    # the data scope of the search (an API key's ceiling; roles None: none, so unrestricted
    # content only) and the key the conversation is for
    tenant_ids: tuple[str, ...] | None = None
    dataset_ids: tuple[str, ...] | None = None
    visibilities: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    owner_key: str | None = None
    # earlier (question, answer) pairs a stateless caller sends along (OpenAI-style messages);
    # used for a new conversation only: a stored one has its own turns
    history: tuple[tuple[str, str], ...] = ()
    # a metadata filter (domain/metadata_filter.py), ANDed with the scope
    filter: dict[str, Any] | None = None
    # answer the conversation's last turn again as a new version of it (the old one is kept);
    # `message` must be that turn's question
    regenerate_turn_id: str | None = None


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A turn whose evidence is chosen; nothing is stored yet."""

    conversation_id: str
    turn_id: str
    new_conversation: NewConversation | None
    question: str
    evidence: tuple[Evidence, ...]
    trace: RetrievalTrace
    messages: tuple[ChatMessage, ...]
    # the whole answer of a turn the plan routed away from the search (a greeting, a
    # request for a person: no evidence) or answered by a FAQ entry (its evidence); no model
    reply: str | None = None
    # the turn this one is a new version of (regenerate)
    version_of: str | None = None

    @property
    def faq_direct(self) -> bool:
        """Answered with a FAQ entry's own answer (the plan's route `faq_direct`)."""
        return self.reply is not None and self.trace.route.route == "faq_direct"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """The turn is stored as generating; its evidence and trace are final."""

    turn: PreparedTurn


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    """A piece of the answer: the model's text checked as it streams (chat/stream_check.py),
    so the pieces together are the final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The validated answer, the evidence it cites and the images it shows; the turn is
    stored as complete."""

    answer: str
    citations: tuple[Citation, ...]
    extractive: bool
    model: str | None
    assets: tuple[AssetRef, ...] = ()
    # the model call's tokens as its server reported them (None: not reported, or no model)
    usage: TokenUsage | None = None


TurnEvent = TurnStarted | AnswerDelta | TurnFinished


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """A whole turn at once (the JSON endpoint)."""

    turn: PreparedTurn
    finished: TurnFinished

