"""Request and response bodies of chat and conversations (coord/CHAT_API.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ragsift.api.schemas import Body, Id, Name, Text
from ragsift.chat.turns import ChatAnswer, ChatRequest
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Citation, Conversation, Evidence, Turn, TurnStatus
from ragsift.domain.feedback import TurnFeedback
from ragsift.domain.requests import Mode, RouteChoice
from ragsift.domain.trace import RetrievalTrace

# Every piece of evidence goes into the prompt, so chat asks for fewer than search may.
MAX_CHAT_TOP_K = 20


class ChatBody(Body):
    """One message: a new conversation when `conversation_id` is null, and search options."""

    conversation_id: Id | None = Field(
        default=None, description="null: a new conversation is created with this message"
    )
    kb_id: Id | None = None
    kb: Name | None = Field(default=None, description="knowledge base name (instead of kb_id)")
    kbs: list[Text] | None = Field(
        default=None, min_length=1, max_length=64,
        description="several knowledge bases (names or ids, at most RAGSIFT_SEARCH_MAX_KBS) "
        "searched with one ranking, instead of kb_id / kb; every citation names its kb_id; "
        "the conversation belongs to the first")
    message: Text = Field(description="the question; empty or over-long messages are rejected")
    mode: Mode | None = None
    top_k: int | None = Field(default=None, ge=1, le=MAX_CHAT_TOP_K)
    document_ids: list[Id] | None = Field(default=None, max_length=1000)
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None
    route: RouteChoice | None = Field(
        default=None, description="auto (default): greetings, thanks, requests for a "
        "person and messages outside the KB's declared domain get a short reply without a "
        "search; search: search anyway")
    filter: dict[str, Any] | None = Field(
        default=None, description="a metadata filter, as in /api/retrieval/search")
    regenerate_turn_id: Id | None = Field(
        default=None, description="answer this turn (the conversation's last) again as a new "
        "version of it; the old version is kept. `message` must be its question")

    @model_validator(mode="after")
    def _one_kb(self) -> ChatBody:
        if sum(ref is not None for ref in (self.kb_id, self.kb, self.kbs)) != 1:
            raise ValueError("give exactly one of kb_id, kb and kbs")
        return self

    def to_request(self, kb_id: str, kb_ids: tuple[str, ...] | None = None) -> ChatRequest:
        """The chat request for the resolved knowledge base id (`kb_ids`: those of kbs)."""
        return ChatRequest(
            kb_id=kb_id, kb_ids=kb_ids, message=self.message, conversation_id=self.conversation_id,
            mode=self.mode, top_k=self.top_k,
            document_ids=None if self.document_ids is None else tuple(self.document_ids),
            rewrite=self.rewrite, rerank=self.rerank, small2big=self.small2big,
            route=self.route, filter=self.filter, regenerate_turn_id=self.regenerate_turn_id,
        )


class ChatOut(BaseModel):
    """A whole turn: the validated answer, the evidence it cites, the images it shows, all
    evidence and the trace."""

    conversation_id: str
    turn_id: str
    answer: str
    citations: list[Citation]
    assets: list[AssetRef] = Field(description="the images the answer shows as "
                                   "`![caption](asset://ID)` (GET /api/assets/{id})")
    evidence: list[Evidence]
    trace: RetrievalTrace
    extractive: bool
    model: str | None

    @classmethod
    def of(cls, answer: ChatAnswer) -> ChatOut:
        turn, finished = answer.turn, answer.finished
        return cls(
            conversation_id=turn.conversation_id, turn_id=turn.turn_id, answer=finished.answer,
            citations=list(finished.citations), assets=list(finished.assets),
            evidence=list(turn.evidence), trace=turn.trace,
            extractive=finished.extractive, model=finished.model,
        )


class TraceEvent(BaseModel):
    """SSE `trace`: the turn's ids, its retrieval trace and evidence (before any delta)."""

    conversation_id: str
    turn_id: str
    trace: RetrievalTrace
    evidence: list[Evidence]


class DeltaEvent(BaseModel):
    """SSE `delta`: a piece of the answer, checked as it streams (the pieces together are
    the checked answer)."""

    text: str


class CitationsEvent(BaseModel):
    """SSE `citations`: the validated final answer, the evidence it cites and the images it
    shows."""

    citations: list[Citation]
    answer: str
    assets: list[AssetRef] = Field(default_factory=list)


class DoneEvent(BaseModel):
    """SSE `done`: the turn is stored as complete."""

    conversation_id: str
    turn_id: str
    extractive: bool


class ConversationOut(BaseModel):
    """A conversation in the list."""

    id: str
    title: str
    kb_id: str
    created_at: datetime
    updated_at: datetime
    generating: bool
    turn_count: int


class TurnOut(BaseModel):
    """A stored turn, exactly as it was answered."""

    id: str
    question: str
    answer: str
    citations: list[Citation]
    assets: list[AssetRef] = Field(description="the images the answer shows")
    evidence: list[Evidence]
    trace: RetrievalTrace
    extractive: bool
    created_at: datetime
    status: TurnStatus
    version_of: str | None = Field(description="regenerated: the first version's turn id")
    version: int = Field(description="1 for the first answer, then 2, 3... per regenerate")
    superseded: bool = Field(description="a later version replaced it (kept, not in the "
                             "next prompt's history)")
    feedback: TurnFeedback | None = Field(description="the user's feedback, if any")

    @classmethod
    def of(cls, turn: Turn) -> TurnOut:
        return cls(
            id=turn.id, question=turn.question, answer=turn.answer,
            citations=list(turn.citations), assets=list(turn.assets),
            evidence=list(turn.evidence), trace=turn.trace,
            extractive=turn.extractive, created_at=turn.created_at, status=turn.status,
            version_of=turn.version_of, version=turn.version, superseded=turn.superseded,
            feedback=turn.feedback,
        )


class ConversationDetailOut(BaseModel):
    """A conversation with its stored turns, oldest first."""

    id: str
    title: str
    kb_id: str
    created_at: datetime
    updated_at: datetime
    generating: bool
    turns: list[TurnOut]

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationDetailOut:
        return cls(
            id=conversation.id, title=conversation.title, kb_id=conversation.kb_id,
            created_at=conversation.created_at, updated_at=conversation.updated_at,
            generating=conversation.generating,
            turns=[TurnOut.of(turn) for turn in conversation.turns],
        )
