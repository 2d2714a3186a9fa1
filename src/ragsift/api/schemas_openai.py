"""Bodies of the OpenAI-compatible chat API (`/v1/models`, `/v1/chat/completions`).

Requests follow OpenAI's Chat Completions: parameters ragsift has no use for (temperature,
max_tokens, user, ...) are accepted and ignored, since OpenAI clients send them freely; tools
and `n` > 1 are refused. Every answer carries a `ragsift` object: the turn's ids, its evidence,
the evidence its citations name, the checked answer and the retrieval trace.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragsift.api.schemas import Body, Id, Text
from ragsift.api.schemas_chat import MAX_CHAT_TOP_K
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Citation, Evidence
from ragsift.domain.requests import Mode
from ragsift.domain.trace import RetrievalTrace

MODEL_PREFIX = "kb:"


class OpenAIBody(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class ContentPart(OpenAIBody):
    """A part of a message's content; only `text` parts can be used."""

    type: str
    text: Text | None = None


class MessageIn(OpenAIBody):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Text | list[ContentPart] | None = None


class RagsiftOptions(Body):
    """ragsift's own search options for the turn (`extra_body={"ragsift": {...}}` in the SDK)."""

    mode: Mode | None = None
    top_k: int | None = Field(default=None, ge=1, le=MAX_CHAT_TOP_K)
    document_ids: list[Id] | None = Field(default=None, max_length=1000)
    rewrite: bool | None = None
    rerank: bool | None = None
    small2big: bool | None = None


class StreamOptions(OpenAIBody):
    include_usage: bool | None = Field(
        default=None, description="a last chunk, with no choices, carries `usage`")


class ChatCompletionBody(OpenAIBody):
    """A chat completion: the model is `kb:NAME`; the last message, the user's, is the question;
    earlier user/assistant pairs are the conversation so far (system messages are ignored:
    ragsift's own instructions keep the answer to the evidence)."""

    model: Text = Field(min_length=1, max_length=300, description="kb:NAME (see /v1/models)")
    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: int | None = Field(default=None, ge=1, le=1, description="only 1 is supported")
    tools: list[Any] | None = Field(default=None, max_length=0,
                                    description="not supported: ragsift calls no tools")
    functions: list[Any] | None = Field(default=None, max_length=0,
                                        description="not supported")
    ragsift: RagsiftOptions | None = None


class ModelOut(BaseModel):
    """A knowledge base the key may use, as a model `kb:NAME`."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "ragsift"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class RagsiftTurn(BaseModel):
    """The `ragsift` extension: the stored turn, its evidence, citations, checked answer and
    retrieval trace (in the final chunk when streaming)."""

    conversation_id: str
    turn_id: str
    answer: str = Field(description="the answer with citation links outside the evidence "
                                    "removed (a stream's deltas together are this text)")
    citations: list[Citation]
    assets: list[AssetRef] = Field(default_factory=list, description="the images the answer "
                                   "shows as `![caption](asset://ID)` (GET /api/assets/{id})")
    evidence: list[Evidence]
    trace: RetrievalTrace
    extractive: bool
    chat_model: str | None = Field(description="the model that wrote the answer; null when "
                                               "it is extractive")


class Usage(BaseModel):
    """The chat model's tokens: as its server reported them, else counted with the embedder's
    tokenizer (`counted: true`; an extractive answer prompts no model: prompt_tokens 0)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    counted: bool = Field(description="ragsift's count, not the model server's")


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletionOut(BaseModel):
    """OpenAI's chat.completion, with the `ragsift` extension."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    ragsift: RagsiftTurn


class OpenAIError(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """OpenAI's error shape."""

    error: OpenAIError
