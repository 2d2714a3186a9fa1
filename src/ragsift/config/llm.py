"""Query rewrite on an OpenAI-compatible chat server (off when none is configured); chat uses the
same server."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class LlmSettings(Concern):
    """Query rewrite."""

    rewrite: bool = Field(
        default=True,
        description="rewrite queries with the LLM (needs RAGSIFT_LLM_BASE_URL); a request's "
        "`rewrite` overrides it",
    )
    llm_base_url: str | None = Field(
        default=None,
        description="base URL of the OpenAI-compatible chat server for rewrite and chat, e.g. "
        "http://host:8000/v1; unset: no rewrite, extractive chat answers",
    )
    llm_api_key: str | None = Field(
        default=None,
        description="API key of the chat server (sent as Bearer)",
    )
    llm_model: str = Field(
        default="qwen2.5-7b-instruct",
        description="model name for rewrite (and chat unless chat_model is set)",
    )
    llm_timeout_s: float = Field(default=20.0, gt=0, description="timeout of one rewrite call")
