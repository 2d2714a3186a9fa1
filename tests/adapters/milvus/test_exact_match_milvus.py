"""Issue 34 on the Milvus backend: its BM25 has no per-term document frequencies, so the
exact-match lane is skipped and the trace says so; the padding of a short BM25 list is pure
fusion and still keeps the only exact match on top under the default z-score."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.requests import SearchRequest
from ragsift.evaluation.corpus_index import CorpusIndexer
from ragsift.evaluation.datasets import Passage
from support.identifier_set import generate

pytestmark = pytest.mark.slow

MARKER = "zqxmarker123kw"


def test_milvus_skips_the_lane_visibly_and_padding_keeps_the_only_match_first(
    milvus_lite: None, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, index_uri=str(tmp_path / "milvus.db"),
                        query_cache_size=0)
    container = build(settings)
    try:
        docs, _ = generate(documents=40, queries=1, seed=3)
        passages = [Passage(id=d.name, title="", text=d.text) for d in docs]
        passages[17] = Passage(id=docs[17].name, title="", text=f"{docs[17].text} {MARKER}")
        kb = container.ingestion.ensure_kb("c")
        CorpusIndexer(container.repository, container.index, container.embedder).build(
            kb, passages)
        result = asyncio.run(container.retrieval.search(
            SearchRequest(query=MARKER, kb_id=kb.id, top_k=5)))
        names = {d.id: d.filename for d in container.repository.list_documents(kb.id)}
        assert names[result.hits[0].document_id] == docs[17].name
        assert result.trace.exact_match.status == "skipped"
        assert "term statistics" in (result.trace.exact_match.reason or "")
        assert result.trace.fusion_padding.status == "applied"
    finally:
        container.close()
