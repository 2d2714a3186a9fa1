"""The optional stages around the channels: query rewrite and rerank, with their traces."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.errors import InvalidInput
from ragsift.domain.retries import counting_retries
from ragsift.domain.trace import Degradation, QueryVariant, StageTrace
from ragsift.ports import QueryRewriter, Reranker, Tokenizer
from ragsift.retrieval.rerank import fitting_prefix, rerank_order, validate_scores
from ragsift.retrieval.rewrite import accept_rewrite

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    variant: QueryVariant | None
    trace: StageTrace
    degradation: Degradation | None = None


async def rewrite_stage(
    rewriter: QueryRewriter | None, wanted: bool, query: str, max_chars: int
) -> RewriteOutcome:
    """At most one validated rewrite; a failing rewriter degrades to the original query."""
    if not wanted:
        return RewriteOutcome(None, StageTrace(status="off", reason="not requested"))
    if rewriter is None:
        return RewriteOutcome(None, StageTrace(status="off", reason="no rewriter configured"))
    with counting_retries() as tally:
        try:
            proposal = await asyncio.to_thread(rewriter.rewrite, query)
        except Exception as exc:  # cancellation (BaseException) propagates
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("rewrite failed: %s", reason)
            return RewriteOutcome(
                None, StageTrace(status="failed", reason=reason, retries=tally.retries),
                Degradation(code="rewrite_failed", reason=reason),
            )
    variant, why = accept_rewrite(query, proposal, max_chars)
    if variant is None:
        return RewriteOutcome(
            None, StageTrace(status="skipped", reason=why, retries=tally.retries)
        )
    return RewriteOutcome(variant, StageTrace(
        status="applied", detail={"method": variant.method}, retries=tally.retries,
    ))


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    order: list[tuple[int, float | None]]  # (candidate index, rerank score) in the new order
    trace: StageTrace
    degradation: Degradation | None = None


@dataclass(frozen=True, slots=True)
class RerankLimits:
    budget_tokens: int
    margin_tokens: int
    max_query_tokens: int


def check_rerank_query(tokenizer: Tokenizer, query: str, limits: RerankLimits) -> int:
    """The query's token count; InvalidInput when it is over the reranker's limit."""
    tokens = tokenizer.count_tokens(query)
    if tokens > limits.max_query_tokens:
        raise InvalidInput(
            f"query is {tokens} tokens long; the reranker accepts {limits.max_query_tokens} "
            "(it is rejected rather than truncated)"
        )
    return tokens


async def rerank_stage(
    reranker: Reranker, tokenizer: Tokenizer, query: str, query_tokens: int,
    passages: Sequence[str], limits: RerankLimits,
) -> RerankOutcome:
    """One batch: the fused prefix that fits the token budget; failures keep fusion order."""
    keep: list[tuple[int, float | None]] = [(i, None) for i in range(len(passages))]
    counts = [tokenizer.count_tokens(text) for text in passages]
    sent = fitting_prefix(counts, query_tokens, limits.budget_tokens, limits.margin_tokens)
    if sent == 0:
        reason = "not even the first candidate fits the rerank token budget"
        return RerankOutcome(keep, StageTrace(status="skipped", reason=reason))
    with counting_retries() as tally:
        try:
            scores = await asyncio.to_thread(reranker.rerank, query, list(passages[:sent]))
            scores = validate_scores(scores, sent)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("rerank failed: %s", reason)
            return RerankOutcome(
                keep,
                StageTrace(
                    status="failed", reason=reason, detail={"sent": sent},
                    retries=tally.retries,
                ),
                Degradation(code="rerank_failed", reason=reason),
            )
    detail: dict[str, float | int | str] = {
        "sent": sent, "scored": len(scores), "model": reranker.model_id,
    }
    return RerankOutcome(
        rerank_order(len(passages), scores),
        StageTrace(status="applied", detail=detail, retries=tally.retries),
    )
