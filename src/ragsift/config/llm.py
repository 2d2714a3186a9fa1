"""Query rewrite on an OpenAI-compatible chat server (off when none is configured); chat uses the
same server."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LlmSettings(BaseModel):
    """Query rewrite and the LLM server."""

    rewrite: bool = True
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "qwen2.5-7b-instruct"
    llm_timeout_s: float = Field(default=20.0, gt=0)
