"""Calls to model servers (embeddings, rerank, rewrite, chat): timeouts and retries."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class ModelServerSettings(Concern):
    """Model-server calls."""

    http_timeout_s: float = Field(
        default=30.0, gt=0,
        description="timeout of one call to the embedding server",
    )
    # retries of model-server calls (embeddings, rerank, rewrite, chat): HTTP 429/502/503/504
    # and lost connections, after Retry-After or an exponential backoff with jitter
    http_retry_max_attempts: int = Field(
        default=3, ge=1, le=20,
        description="attempts in all (the first included) of a query-time call: rerank, "
        "rewrite, query embedding, opening a chat stream; each within its stage's timeout",
    )
    http_retry_backoff_s: float = Field(
        default=0.5, ge=0, le=60,
        description="first wait when the server sends no Retry-After; doubles per retry, plus "
        "up to as much again of jitter",
    )
    http_retry_backoff_max_s: float = Field(
        default=10.0, ge=0, le=600, description="longest wait without Retry-After"
    )
    embed_retry_budget_s: float = Field(
        default=120.0, gt=0, le=3600,
        description="seconds one passage-embedding batch (ingest) may spend retrying, so an "
        "ingest waits out a hosted embedder's minute of 429s",
    )
    embed_retry_max_attempts: int = Field(
        default=100, ge=1, le=1000,
        description="attempts in all of one passage-embedding batch (ingest)",
    )
    embed_query_retry_budget_s: float = Field(
        default=5.0, gt=0, le=600,
        description="seconds a query embedding may spend retrying; short: a request waits",
    )
