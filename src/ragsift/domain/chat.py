"""Chat values: the evidence of a turn, citations, turns, conversations and their errors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragsift.domain.assets import AssetRef
from ragsift.domain.errors import RagsiftError
from ragsift.domain.feedback import TurnFeedback
from ragsift.domain.models import Locator
from ragsift.domain.trace import RetrievalTrace

ChatRole = Literal["system", "user", "assistant"]
# generating: the model is answering; complete: answered; failed: the chat model failed
# (or the server stopped meanwhile); cancelled: the client went away mid-answer.
TurnStatus = Literal["generating", "complete", "failed", "cancelled"]
TITLE_CHARS = 60


class ChatMessage(BaseModel):
    """One message of the prompt sent to a chat model."""

    model_config = ConfigDict(frozen=True)

    role: ChatRole
    content: str


CitationKind = Literal["chunk", "faq"]
FAQ_FILENAME = "FAQ"


class Citation(BaseModel):
    """Evidence the answer actually cites, as the citation link `[n](citation://n)` names it.

    `kind` "faq": a FAQ entry, not a chunk. Its chunk and document ids are the entry's id,
    `filename` is "FAQ", `heading_path` its question and `text` its answer (so a client that
    knows only chunks still shows it sensibly); `question` and `source` are the entry's own.
    """

    model_config = ConfigDict(frozen=True)

    n: int = Field(ge=1)
    chunk_id: str
    document_id: str
    filename: str
    heading_path: tuple[str, ...] = ()
    locator: Locator | None = None
    text: str
    # the knowledge base of the chunk (several searched at once: which one; None: stored
    # before KBs were named, or a FAQ entry)
    kb_id: str | None = None
    kind: CitationKind = "chunk"
    question: str | None = None
    source: str | None = None
    # the hit's calibrated 0..1 relevance (RetrievalHit.relevance; None: a FAQ entry, or a
    # turn stored before it was kept)
    relevance: float | None = None


class Evidence(Citation):
    """One piece of evidence of a turn, numbered from 1 in the order given to the model."""

    context_text: str | None = None
    # the score it was finally ordered by: rerank when rerank ran, else fusion
    score: float
    # the score of each stage (None: the stage did not score it, or a turn stored before
    # these were kept); fusion scores can be negative (z-score fusion)
    dense_score: float | None = None
    sparse_score: float | None = None
    fusion_score: float | None = None
    rerank_score: float | None = None
    # the images of the evidence's chunk: the prompt lists them as `asset://ID`
    assets: tuple[AssetRef, ...] = ()


class Turn(BaseModel):
    """One question and its answer, with the evidence snapshot and trace it was built from."""

    model_config = ConfigDict(frozen=True)

    id: str
    conversation_id: str
    question: str
    answer: str = ""
    citations: tuple[Citation, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    # the images the answer shows (`![caption](asset://ID)`), each of this turn's evidence
    assets: tuple[AssetRef, ...] = ()
    trace: RetrievalTrace
    extractive: bool = False
    model: str | None = None
    status: TurnStatus = "generating"
    error: str | None = None
    created_at: datetime
    finished_at: datetime | None = None
    # regenerated answers (0014): every version is its own turn; `version_of` is the first
    # version's id (None for a first version), `version` counts from 1, and a `superseded`
    # version is kept and shown but left out of the next prompt's history
    version_of: str | None = None
    version: int = 1
    superseded: bool = False
    feedback: TurnFeedback | None = None


class ConversationSummary(BaseModel):
    """A conversation as the list shows it."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    kb_id: str
    created_at: datetime
    updated_at: datetime
    generating: bool
    turn_count: int


class Conversation(BaseModel):
    """A conversation with every stored turn, oldest first."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    kb_id: str
    created_at: datetime
    updated_at: datetime
    generating: bool
    turns: tuple[Turn, ...] = ()


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """The tokens of one chat model call, as the model's server reported them."""

    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class NewConversation:
    """A conversation created together with its first turn."""

    id: str
    kb_id: str
    title: str
    owner_key: str | None = None  # the API key it belongs to (None: auth off)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended: what is stored when it stops generating."""

    status: TurnStatus
    answer: str
    citations: tuple[Citation, ...] = ()
    extractive: bool = False
    model: str | None = None
    error: str | None = None
    assets: tuple[AssetRef, ...] = ()


def conversation_title(first_message: str) -> str:
    """The title of a conversation: its first message on one line, cut to 60 characters."""
    return " ".join(first_message.split())[:TITLE_CHARS]


class ConversationBusy(RagsiftError):
    """A turn of the conversation is still generating (HTTP 409)."""

    code = "conversation_busy"


class ChatModelFailed(RagsiftError):
    """The chat model failed while answering; the turn is stored as failed (HTTP 502)."""

    code = "chat_model_failed"
