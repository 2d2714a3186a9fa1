"""Records analyzed ahead (in ingestion workers) are indexed with their tokens only when the
tokens come from the kb index's own analyzer version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyze_v1, analyze_v2
from ragsift.adapters.embedded_index.bm25_layout import ANALYZER_FILE, kb_directory_name
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import AnalyzedText, IndexRecord

KB = SearchFilter(kb_id="kb")
TEXTS = {"a": "Running servers restart nightly 服务器每晚重启", "b": "报销申请 30 天内提交 reports"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TantivyBm25Store]:
    store = TantivyBm25Store(tmp_path / "sparse")
    yield store
    store.close()


def record(chunk_id: str, analyzed: AnalyzedText | None = None) -> IndexRecord:
    return IndexRecord(chunk_id=chunk_id, document_id="d", kb_id="kb", text=TEXTS[chunk_id],
                       analyzed=analyzed)


def scores(store: TantivyBm25Store, query: str) -> list[tuple[str, float]]:
    return [(hit.chunk_id, hit.score) for hit in store.search(query, KB, 10)]


def test_a_new_kb_analyzes_with_the_current_version(store: TantivyBm25Store) -> None:
    version, analyze = store.analyzer("kb")
    assert (version, analyze) == (CURRENT_VERSION, analyze_v2)


def test_tokens_of_the_index_version_are_indexed_as_given(store: TantivyBm25Store) -> None:
    # tokens that are not the analysis of the text prove the given tokens were used
    store.upsert([record("a", AnalyzedText(CURRENT_VERSION, "zebra quokka"))])
    assert [c for c, _ in scores(store, "zebra")] == ["a"]
    assert scores(store, "servers") == []


def test_tokens_of_another_version_are_ignored_and_the_text_analyzed(
    store: TantivyBm25Store,
) -> None:
    store.upsert([record("a", AnalyzedText(CURRENT_VERSION + 1, "zebra quokka"))])
    assert scores(store, "zebra") == []
    assert [c for c, _ in scores(store, "server restart")] == ["a"]


def test_pre_analyzed_records_score_exactly_like_records_analyzed_here(tmp_path: Path) -> None:
    plain, ahead = TantivyBm25Store(tmp_path / "plain"), TantivyBm25Store(tmp_path / "ahead")
    try:
        plain.upsert([record(c) for c in TEXTS])
        version, analyze = ahead.analyzer("kb")
        ahead.upsert([record(c, AnalyzedText(version, " ".join(analyze(TEXTS[c]))))
                      for c in TEXTS])
        for query in ("server restarts", "服务器重启", "报销 report", "30 天"):
            assert scores(ahead, query) == scores(plain, query) != []
    finally:
        plain.close()
        ahead.close()


def test_an_index_built_with_version_1_reports_and_keeps_version_1(tmp_path: Path) -> None:
    root = tmp_path / "sparse"
    (root / kb_directory_name("kb")).mkdir(parents=True)
    (root / kb_directory_name("kb") / ANALYZER_FILE).write_text(json.dumps({"version": 1}))
    store = TantivyBm25Store(root)
    try:
        store.upsert([record("a")])
        assert store.analyzer("kb") == (1, analyze_v1)
        # v2 tokens (stems) sent to a v1 index are re-analyzed with v1 (no stemming)
        store.upsert([record("b", AnalyzedText(2, " ".join(analyze_v2(TEXTS["b"]))))])
        assert [c for c, _ in scores(store, "reports")] == ["b"]
    finally:
        store.close()
