"""Rerank of the fused candidates (on when a reranker is configured)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern


class RerankSettings(Concern):
    """Rerank."""

    rerank: bool = Field(
        default=True,
        description="rerank the fused candidates when a reranker is configured; a request's "
        "`rerank` overrides it",
    )
    reranker: Literal["none", "http", "cross-encoder"] = Field(
        default="none",
        description="none; http: a rerank server (RAGSIFT_RERANK_BASE_URL); cross-encoder: a "
        "local sentence-transformers CrossEncoder (extra `cross-encoder`, "
        "RAGSIFT_RERANK_MODEL_PATH)",
    )
    rerank_base_url: str | None = Field(
        default=None,
        description="the rerank server: its root for cohere and tei, the full service URL for "
        "dashscope",
    )
    rerank_api_key: str | None = Field(
        default=None,
        description="API key of the rerank server (sent as Bearer)",
    )
    rerank_model: str = Field(
        default="bge-reranker-v2-m3",
        description="model name sent to the rerank server",
    )
    rerank_style: Literal["cohere", "tei", "dashscope"] = Field(
        default="cohere",
        description="the rerank server's API: cohere (POST {base}/rerank), tei (Hugging Face "
        "text-embeddings-inference) or dashscope",
    )
    rerank_model_path: str | None = Field(
        default=None,
        description="folder of the local cross-encoder model (a path, never a hub name)",
    )
    rerank_timeout_s: float = Field(default=20.0, gt=0, description="timeout of one rerank call")
    rerank_budget_tokens: int = Field(
        default=16384, ge=64, description="tokens one rerank request may carry in all"
    )
    rerank_margin_tokens: int = Field(default=8, ge=0, description="per pair, for specials")
    rerank_max_query_tokens: int = Field(
        default=256, ge=8,
        description="tokens of the query sent to the reranker; a longer one is cut",
    )

    @model_validator(mode="after")
    def _reranker_checks(self) -> Self:
        if self.reranker == "http" and not self.rerank_base_url:
            raise ValueError("reranker=http needs RAGSIFT_RERANK_BASE_URL")
        if self.reranker == "cross-encoder" and not self.rerank_model_path:
            raise ValueError("reranker=cross-encoder needs RAGSIFT_RERANK_MODEL_PATH")
        return self
