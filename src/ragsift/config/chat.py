"""Chat: the same OpenAI-compatible server as rewrite, streaming; extractive answers without one."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class ChatSettings(Concern):
    """Chat."""

    chat_model: str | None = Field(
        default=None, description="chat model name; default: llm_model"
    )
    chat_timeout_s: float = Field(
        default=60.0, gt=0, description="connecting, and each wait for the next streamed piece"
    )
    chat_max_tokens: int = Field(
        default=1024, ge=16, le=32768,
        description="most tokens of an answer the chat model may generate",
    )
    chat_temperature: float = Field(
        default=0.2, ge=0, le=2,
        description="sampling temperature of the chat model",
    )
    chat_history_turns: int = Field(
        default=3, ge=0, le=20, description="earlier complete turns replayed in the prompt"
    )
    chat_extractive_sentences: int = Field(
        default=3, ge=1, le=20, description="evidence items an extractive answer (no chat "
        "model) quotes from: a sentence, a table's matching rows or a list's matching items each"
    )
    chat_extractive_max_chars: int = Field(
        default=1500, ge=100, le=100_000, description="characters of quotes an extractive "
        "answer holds at most, cut only between whole quotes (each keeps its citation)"
    )
