"""Re-scoring of the fused top-k and pseudo-relevance feedback (issue 18; measured in
docs/quality.md "Quality levers"): off unless switched on."""

from __future__ import annotations

from pydantic import Field

from ragsift.config.concern import Concern


class RescoringSettings(Concern):
    """Re-scoring and feedback."""

    consistency_rescoring: bool = Field(
        default=False, description="penalise fused candidates whose numbers (3天 vs 30天) or "
        "one swapped word (胃炎 vs 肠炎) contradict the query (retrieval/consistency.py); a "
        "request's `consistency` overrides it")
    consistency_top_k: int = Field(
        default=30, ge=1, le=1000,
        description="fused candidates that consistency re-scoring looks at",
    )
    consistency_number_penalty: float = Field(
        default=1.0, ge=0, le=100,
        description="penalty, in fused-score units, for a number contradicting the query's",
    )
    consistency_swap_penalty: float = Field(
        default=0.0, ge=0, le=100, description="penalty for a one-word swap; 0 (off) by "
        "default: 1.0 helped afqmc-faq but hurt kuake-qtr, whose swaps are mostly synonyms")
    consistency_swap_min_idf: float = Field(
        default=5.0, ge=0, description="a swapped query word must be at least this rare in "
        "the KB (BM25 idf) to count; 0 counts every swap")
    consistency_max_candidate_chars: int = Field(
        default=200, ge=1, description="longer candidates (passages, not questions or titles) "
        "are not re-scored")
    prf_rm3: bool = Field(default=False, description="RM3 expansion of the BM25 query from "
                          "the fused top hits, then a second BM25 search (retrieval/feedback.py; "
                          "neutral on the dev sets, so off); a request's `feedback` overrides it")
    prf_rm3_docs: int = Field(
        default=10, ge=1, le=100,
        description="fused top hits the RM3 expansion terms are drawn from",
    )
    prf_rm3_terms: int = Field(
        default=20, ge=1, le=200,
        description="expansion terms added to the BM25 query",
    )
    prf_rm3_weight: float = Field(
        default=0.3, ge=0, le=10,
        description="total weight of the expansion terms, relative to the query's",
    )
    prf_budget_ms: float = Field(
        default=50.0, gt=0, description="feedback is skipped for a query whose first BM25 "
        "search took longer than this (the second search would cost about as much again)")
