"""Rerank scores that are not finite (JSON Infinity / NaN) fail the rerank instead of
reordering the hits or dropping them under min_score; the fusion order and scores stand."""

from __future__ import annotations

from typing import Any

import pytest

from ragsift.domain.models import KnowledgeBase
from retrieval.real_stack import ServiceFactory, ranking, search
from support.fixtures import LLMServer

QUERY = "hotel limit per night"
WINDOW: dict[str, Any] = {"candidate_k": 6, "top_k": 6, "rewrite": False, "small2big": False}


def _answer(*scores: str) -> str:
    """A Cohere rerank answer with score literals as written (Infinity, NaN, 0.5 ...)."""
    rows = ", ".join(
        f'{{"index": {index}, "relevance_score": {score}}}' for index, score in enumerate(scores)
    )
    return f'{{"results": [{rows}]}}'


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_score_under_min_score_keeps_every_hit_compared_by_fusion_score(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory, literal: str
) -> None:
    service = service_with()
    # below every fusion score: nothing is dropped when fusion scores are compared
    fused = search(service, kb, QUERY, rerank=False, min_score=-1000.0, **WINDOW)
    assert len(fused.hits) == 6
    llm_server.control(rerank={"raw_body": _answer("0.9", "0.8", literal, "0.6", "0.5", "0.4")})
    result = search(service, kb, QUERY, min_score=-1000.0, **WINDOW)
    assert ranking(result) == ranking(fused)
    assert all(hit.rerank_score is None for hit in result.hits)
    assert result.trace.rerank.status == "failed"
    assert "non-finite score" in (result.trace.rerank.reason or "")
    assert [d.code for d in result.trace.degradations] == ["rerank_failed"]
    assert result.trace.threshold.detail["compared_with"] == "fusion_score"
    assert result.trace.threshold.detail["dropped"] == 0
    assert not result.trace.switches_applied.rerank
