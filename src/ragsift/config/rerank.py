"""Rerank of the fused candidates (on when a reranker is configured)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator


class RerankSettings(BaseModel):
    """Rerank."""

    rerank: bool = True
    reranker: Literal["none", "http", "cross-encoder"] = "none"
    rerank_base_url: str | None = None
    rerank_api_key: str | None = None
    rerank_model: str = "bge-reranker-v2-m3"
    rerank_style: Literal["cohere", "tei", "dashscope"] = "cohere"
    rerank_model_path: str | None = None
    rerank_timeout_s: float = Field(default=20.0, gt=0)
    rerank_budget_tokens: int = Field(
        default=16384, ge=64, description="tokens one rerank request may carry in all"
    )
    rerank_margin_tokens: int = Field(default=8, ge=0, description="per pair, for specials")
    rerank_max_query_tokens: int = Field(default=256, ge=8)

    @model_validator(mode="after")
    def _reranker_checks(self) -> Self:
        if self.reranker == "http" and not self.rerank_base_url:
            raise ValueError("reranker=http needs RAGSIFT_RERANK_BASE_URL")
        if self.reranker == "cross-encoder" and not self.rerank_model_path:
            raise ValueError("reranker=cross-encoder needs RAGSIFT_RERANK_MODEL_PATH")
        return self
