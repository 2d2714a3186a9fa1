"""A document replaced under its key, on both index backends: unchanged chunks keep their ids
and index rows (nothing re-embedded), removed ones leave the search, stray rows are removed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from index_backends import Backend

from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.models import CHILD_LEVEL
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ports import ChunkListable
from ragsift.retrieval.service import RetrievalService
from ragsift.versions.writer import DraftWriter, VersionDefaults
from versions.version_stack import WordEmbedder

OLD = "# Parking\n\nparking costs ten cny a day\n\n# Gym\n\nthe gym opens at seven\n"
NEW = "# Parking\n\nparking costs fifteen cny a day\n\n# Gym\n\nthe gym opens at seven\n"


def test_a_replacement_keeps_unchanged_rows_on_either_backend(
    backend: Backend, tmp_path: Path
) -> None:
    model = WordEmbedder()  # records what the model embeds; the cache is ragsift's own
    embedder = CachedEmbedder(model, tmp_path / "cache.sqlite")
    index = backend.open(tmp_path / "index", 64)
    repository = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    try:
        settings = Settings(data_dir=tmp_path, chunk_tokens=16, chunk_overlap_tokens=0,
                            parent_max_tokens=16, run_faq=False, fusion="rrf")
        drafts = DraftWriter(repository, index, embedder, VersionDefaults())
        chunker = Chunker(embedder, chunk_tokens=16, overlap_tokens=0, parent_max_tokens=16)
        ingestion = IngestionService(repository, index, embedder,
                                     LocalObjectStore(tmp_path / "objects"), chunker,
                                     max_file_bytes=10_000, versions=drafts)
        retrieval = RetrievalService(repository, index, embedder, settings, versions=repository)
        kb = ingestion.ensure_kb("kb")
        document_id = ingestion.ingest_bytes(kb, "policy.md", OLD.encode()).document.id
        gym = {c.id for c in repository.list_chunks(document_id)
               if c.level == CHILD_LEVEL and "gym" in c.text}
        model.passages.clear()

        accepted = ingestion.accept(kb, "policy.md", NEW.encode())
        assert accepted.replacing
        assert ingestion.replace(document_id, "policy.md", NEW.encode()).replaced

        # only the changed chunk met the model (Milvus rewrites retired rows from the cache)
        assert model.passages and all("fifteen" in p for p in model.passages)
        live = {c.id for c in repository.list_chunks(document_id)
                if c.level == CHILD_LEVEL and c.valid_to_seq == 0}
        assert gym <= live  # the unchanged chunk kept its id
        request = SearchRequest(query="parking costs cny", kb_id=kb.id, mode="sparse",
                                small2big=False)
        texts = " ".join(h.text for h in asyncio.run(retrieval.search(request)).hits)
        assert "fifteen" in texts and " ten " not in f" {texts} "
        if isinstance(index, ChunkListable):
            stored = {c.id for c in repository.list_chunks(document_id)}
            assert index.document_chunk_ids(kb.id, document_id) <= stored
    finally:
        index.close()
        repository.close()
        embedder.close()
