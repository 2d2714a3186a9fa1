"""Values exchanged with the optional stages: query rewrite and rerank."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# "translation": the query in the script most of the KB is written in (cross-lingual queries)
# "standalone": a follow-up written as a question that needs no conversation (history-aware)
RewriteMethod = Literal["step_back", "hyde", "expand", "translation", "standalone", "none"]


class RewriteProposal(BaseModel):
    """What a rewriter model proposes; validated before it becomes a query variant."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    method: RewriteMethod
    text: str = Field(max_length=4000)


class RerankScore(BaseModel):
    """One reranked passage: its index in the batch that was sent, and the model's score."""

    model_config = ConfigDict(frozen=True)

    index: int
    score: float
