"""The issue-18 levers wired into the service, end to end on the real stack (e5, tantivy,
SQLite, the service that bootstrap builds): the consistency re-scoring and RM3 feedback,
each switched per request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.retrieval.consistency_stage import ConsistencyStage
from ragsift.retrieval.service import RetrievalService

VACCINE = {  # one chunk each: short questions, as in a FAQ-like corpus
    "wrong-number.txt": "打完狂犬疫苗30天能喝酒吗？",
    "right-number.txt": "狂犬疫苗第3天能喝酒吗？",
    "during.txt": "狂犬疫苗接种期间不要饮酒。",
    "other-vaccine.txt": "打完乙肝疫苗多久可以喝酒？",
    "cold.txt": "感冒了能喝酒吗？",
}
VACCINE_QUERY = "打完狂犬疫苗3天能喝酒吗"
TRAVEL = {
    "limit.txt": "The hotel limit per night is 150 dollars. Keep the itemised invoice from the "
                 "travel desk.",
    "london.txt": "In London the hotel limit per night rises to 220 dollars; the travel desk "
                  "checks the itemised invoice.",
    "invoices.txt": "Every itemised invoice goes to the travel desk within thirty days of the "
                    "trip.",
    "firmware.txt": "Firmware 2.4.1 fixes error E-104 when Wi-Fi authentication fails.",
}
INVOICES = "Every itemised invoice"  # no query word: only the expanded query finds it


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Container, KnowledgeBase, KnowledgeBase]]:
    root = tmp_path_factory.mktemp("levers")
    # the exact-match lane off: it puts the chunk holding the query's rare number ("3") first
    # by itself, and these tests need fusion's own order to show what the levers change
    container = build(Settings(data_dir=root / "data", exact_match_max_df=0))
    kbs = []
    for name, documents in (("vaccine", VACCINE), ("travel", TRAVEL)):
        kb = container.ingestion.ensure_kb(name)
        for filename, text in documents.items():
            (root / filename).write_text(text, encoding="utf-8")
            outcome = container.ingestion.ingest_path(kb, root / filename)
            assert outcome.document.error is None, outcome.document.error
        kbs.append(kb)
    yield container, kbs[0], kbs[1]
    container.close()


def search(service: RetrievalService, kb: KnowledgeBase, query: str, **fields: Any
           ) -> RetrievalResult:
    request = SearchRequest(query=query, kb_id=kb.id, run_faq=False, small2big=False, **fields)
    return asyncio.run(service.search(request))


def texts(result: RetrievalResult) -> list[str]:
    return [hit.text for hit in result.hits]


def test_consistency_demotes_the_candidate_whose_number_contradicts_the_query(
    stack: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, vaccine, _ = stack
    off = search(container.retrieval, vaccine, VACCINE_QUERY, fusion="zscore")
    on = search(container.retrieval, vaccine, VACCINE_QUERY, fusion="zscore", consistency=True)

    assert texts(off)[:2] == [VACCINE["wrong-number.txt"], VACCINE["right-number.txt"]]
    assert texts(on)[:2] == [VACCINE["right-number.txt"], VACCINE["wrong-number.txt"]]
    assert off.trace.consistency.status == "off" and not off.trace.switches_applied.consistency
    assert on.trace.consistency.status == "applied" and on.trace.switches_applied.consistency
    wrong = off.hits[0].chunk_id
    assert on.trace.consistency.detail == {"penalised": 1,
                                           "notes": f"{wrong}: number 3天->30天 -1"}
    demoted = next(hit for hit in on.hits if hit.chunk_id == wrong)
    assert demoted.fusion_score == pytest.approx(off.hits[0].fusion_score - 1.0)
    assert "consistency" in on.trace.timings_ms and "consistency" not in off.trace.timings_ms
    # candidates without a clashing number keep their order and scores
    assert [(h.chunk_id, h.fusion_score) for h in on.hits[2:]] == [
        (h.chunk_id, h.fusion_score) for h in off.hits[2:]]


def test_the_consistency_default_comes_from_the_setting(
    stack: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, vaccine, _ = stack
    settings = container.settings.model_copy(update={"consistency_rescoring": True})
    service = RetrievalService(
        container.repository, container.index, container.embedder, settings,
        rescorers=(ConsistencyStage(settings),),
    )
    assert search(service, vaccine, VACCINE_QUERY).trace.consistency.status == "applied"
    assert search(service, vaccine, VACCINE_QUERY,
                  consistency=False).trace.consistency.status == "off"


def test_rm3_feedback_replaces_the_bm25_list_by_the_expanded_querys(
    stack: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, _, travel = stack
    off = search(container.retrieval, travel, "hotel limit", mode="sparse")
    on = search(container.retrieval, travel, "hotel limit", mode="sparse", feedback=True)

    assert not any(INVOICES in text for text in texts(off))
    assert texts(on)[:2] == texts(off)[:2]  # the hits that fed the expansion still lead
    assert any(INVOICES in text for text in texts(on))
    assert off.trace.feedback.status == "off" and not off.trace.switches_applied.feedback
    feedback = on.trace.feedback
    assert feedback.status == "applied" and on.trace.switches_applied.feedback
    assert feedback.detail["feedback_docs"] == 2 and feedback.detail["candidates"] == 3
    assert int(feedback.detail["terms"]) > 2  # the query's two terms and expansion terms
    assert [run.list_name for run in on.trace.channels] == ["sparse:original"]
    assert "feedback" in on.trace.timings_ms


def test_rm3_feedback_is_skipped_over_its_budget_and_without_a_bm25_list(
    stack: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, _, travel = stack
    settings = container.settings.model_copy(update={"prf_rm3": True, "prf_budget_ms": 1e-6})
    service = RetrievalService(container.repository, container.index, container.embedder,
                               settings)
    slow = search(service, travel, "hotel limit", mode="sparse")
    assert slow.trace.feedback.status == "skipped"
    assert "RAGSIFT_PRF_BUDGET_MS" in (slow.trace.feedback.reason or "")
    assert not any(INVOICES in text for text in texts(slow))
    dense = search(container.retrieval, travel, "hotel limit", mode="dense", feedback=True)
    assert dense.trace.feedback.status == "skipped"
    assert "no BM25 list" in (dense.trace.feedback.reason or "")
