"""The optional stages around the channels: query rewrite and rerank, with their traces."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import HistoryMessage
from ragsift.domain.retries import counting_retries
from ragsift.domain.stages import RewriteProposal
from ragsift.domain.trace import Degradation, QueryVariant, StageTrace
from ragsift.ports import QueryRewriter, Repository, Reranker, Tokenizer
from ragsift.retrieval.cross_lingual import CrossLingual, KbScripts, Language
from ragsift.retrieval.rerank import fitting_prefix, rerank_order, validate_scores
from ragsift.retrieval.rewrite import accept_rewrite

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    variant: QueryVariant | None
    trace: StageTrace
    degradation: Degradation | None = None


@runtime_checkable
class StandaloneWriter(Protocol):
    """A rewriter that can write a follow-up as a standalone question (OpenAIRewriter can)."""

    def standalone(self, query: str, history: Sequence[HistoryMessage]) -> RewriteProposal:
        """`query` rewritten to need no `history` (oldest first), method "standalone"."""
        ...


@runtime_checkable
class QueryTranslator(Protocol):
    """A rewriter that can also translate a query (OpenAIRewriter can)."""

    def translate(self, query: str, language: Language) -> RewriteProposal:
        """The query in `language` ("zh" or "en"), method "translation"."""
        ...


async def cross_lingual_decision(
    scripts: KbScripts, settings: Settings, rewriter: QueryRewriter | None, kb_id: str,
    query: str, version: int | None = None, *, second_dense: bool = False,
) -> CrossLingual | None:
    """The cross-lingual decision, when it can matter: a translation (the setting is on and a
    rewriter is configured) or a second dense channel that searches cross-lingual queries
    (`second_dense`, which also searches a mixed KB's other language); None otherwise, and no
    KB sample is read. `version`: the KB version searched (a new one: a new sample)."""
    if not (settings.cross_lingual and rewriter is not None) and not second_dense:
        return None
    mixed = settings.cross_lingual_mixed_share if second_dense else None
    return await scripts.decide(kb_id, query, settings.cross_lingual_min_share, mixed, version)


def kb_scripts(repository: Repository, settings: Settings) -> KbScripts:
    """The per-KB script sampler of a service, from the cross-lingual settings."""
    return KbScripts(repository, settings.cross_lingual_sample_documents,
                     settings.cross_lingual_sample_chars, settings.cross_lingual_ttl_s)


async def rewrite_stage(
    rewriter: QueryRewriter | None, wanted: bool, query: str, max_chars: int,
    cross_lingual: CrossLingual | None = None,
    history: Sequence[HistoryMessage] | None = None,
) -> RewriteOutcome:
    """At most one validated rewrite; a failing rewriter degrades to the original query.

    With `history` (a follow-up, and a rewriter that writes standalone questions), the one
    variant is the follow-up written as a standalone question. Else, with a `cross_lingual`
    decision that names a target language, the one variant is the query translated into it
    (even when a same-language rewrite was not requested): the original query still runs, so
    the translation only adds what the other script finds.
    """
    if history is not None and isinstance(rewriter, StandaloneWriter):
        return await _standalone(rewriter, query, max_chars, history)
    target = cross_lingual.target if cross_lingual is not None else None
    translate = (target is not None and rewriter is not None
                 and isinstance(rewriter, QueryTranslator))
    extra = cross_lingual.detail() if cross_lingual is not None else {}
    if not wanted and not translate:
        return RewriteOutcome(None, StageTrace(status="off", reason="not requested"))
    if rewriter is None:
        return RewriteOutcome(None, StageTrace(
            status="off", reason="no rewriter configured", detail=extra))
    with counting_retries() as tally:
        try:
            if translate:
                assert target is not None and isinstance(rewriter, QueryTranslator)
                proposal = await asyncio.to_thread(rewriter.translate, query, target)
            else:
                proposal = await asyncio.to_thread(rewriter.rewrite, query)
        except Exception as exc:  # cancellation (BaseException) propagates
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("rewrite failed: %s", reason)
            return RewriteOutcome(
                None,
                StageTrace(status="failed", reason=reason, retries=tally.retries, detail=extra),
                Degradation(code="rewrite_failed", reason=reason),
            )
    variant, why = accept_rewrite(query, proposal, max_chars)
    if variant is None:
        return RewriteOutcome(None, StageTrace(
            status="skipped", reason=why, retries=tally.retries, detail=extra,
        ))
    return RewriteOutcome(variant, StageTrace(
        status="applied", detail={"method": variant.method, **extra}, retries=tally.retries,
    ))


async def _standalone(
    rewriter: StandaloneWriter, query: str, max_chars: int, history: Sequence[HistoryMessage]
) -> RewriteOutcome:
    with counting_retries() as tally:
        try:
            proposal = await asyncio.to_thread(rewriter.standalone, query, history)
        except Exception as exc:  # cancellation (BaseException) propagates
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("standalone rewrite failed: %s", reason)
            return RewriteOutcome(
                None, StageTrace(status="failed", reason=reason, retries=tally.retries),
                Degradation(code="rewrite_failed", reason=reason),
            )
    variant, why = accept_rewrite(query, proposal, max_chars)
    if variant is None:
        return RewriteOutcome(None, StageTrace(status="skipped", reason=why,
                                               retries=tally.retries))
    return RewriteOutcome(variant, StageTrace(
        status="applied", detail={"method": variant.method}, retries=tally.retries))


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
