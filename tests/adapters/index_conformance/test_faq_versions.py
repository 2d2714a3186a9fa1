"""FAQ entries with scope and versions on both index backends as the FAQ collection: an update
retires the old row (rewritten in place, or again from the embedding cache where the backend
cannot update records), searches at each version and scope see the right entry, and collection
removes the retired rows from the index."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from index_backends import Backend

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.faq import FaqChanges
from ragsift.domain.models import DocumentScope, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.faq_import import FaqRow
from ragsift.ingestion.faq_service import FaqService
from ragsift.retrieval.service import RetrievalService
from ragsift.versions.service import VersionService
from ragsift.versions.writer import DraftWriter, VersionDefaults
from versions.version_stack import WordEmbedder


def test_faq_versions_and_scope_hold_on_either_backend(backend: Backend, tmp_path: Path) -> None:
    model = WordEmbedder()
    embedder = CachedEmbedder(model, tmp_path / "cache.sqlite")
    faq_index = backend.open(tmp_path / "faq", 64)
    chunks = EmbeddedIndex(tmp_path / "chunks", 64)
    repository = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    try:
        settings = Settings(data_dir=tmp_path, fusion="rrf")
        drafts = DraftWriter(repository, chunks, embedder, VersionDefaults(retention=3))
        retrieval = RetrievalService(repository, chunks, embedder, settings,
                                     versions=repository, faq_index=faq_index)
        versions = VersionService(repository, chunks, retrieval,
                                  LocalObjectStore(tmp_path / "objects"), drafts, settings,
                                  faq_index=faq_index)
        faq = FaqService(repository, faq_index, embedder, drafts, max_file_bytes=10_000)
        kb = repository.create_kb(KnowledgeBase(id="kb", name="kb",
                                                embedding_model=model.model_id,
                                                embedding_dim=64))
        for tenant, answer in (("acme", "parking costs ten cny"),
                               ("globex", "parking is free")):
            faq.import_rows(kb, [FaqRow("what does parking cost", answer, None, 1)],
                            defaults=DocumentScope(tenant_id=tenant))  # versions 1, 2
        acme, globex = faq.page(kb).entries

        def answers(**fields: Any) -> list[str]:
            request = SearchRequest.model_validate({
                "query": "parking cost", "kb_id": kb.id, "run_doc": False, **fields})
            return [hit.answer for hit in asyncio.run(retrieval.search(request)).faq_hits]

        assert sorted(answers()) == ["parking costs ten cny", "parking is free"]
        assert answers(tenant_ids=["acme"]) == ["parking costs ten cny"]
        model.passages.clear()
        updated = faq.update(kb, acme.id, FaqChanges(answer="parking costs fifteen cny"))
        assert model.passages == []  # same question: its vector came from the cache
        faq.delete(kb, globex.id)  # version 4
        assert answers(tenant_ids=["acme"]) == ["parking costs fifteen cny"]
        assert answers(tenant_ids=["acme"], kb_version=2) == ["parking costs ten cny"]
        assert answers(tenant_ids=["globex"]) == []
        assert answers(tenant_ids=["globex"], kb_version=3) == ["parking is free"]
        assert answers(tenant_ids=["t2"], roles=[]) == []

        versions.configure(kb, retention=1)  # the retired rows leave facts and index
        assert [e.id for e in repository.list_faq_entries(kb.id)] == [updated.id]
        assert faq_index.count() == 1
        assert answers() == ["parking costs fifteen cny"]
    finally:
        faq_index.close()
        chunks.close()
        repository.close()
        embedder.close()
