"""The real version stack (SQLite, tantivy, the dense matrix, the object store, every service)
over a deterministic bag-of-words embedder: version tests are about which chunks a search
may see, so they need exact, repeatable rankings, not the e5 model's quality."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.config import Settings
from ragsift.domain.models import DocumentScope, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FaqHit, RetrievalResult
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.faq_import import FaqRow
from ragsift.ingestion.faq_service import FaqService
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ports import Vectors
from ragsift.retrieval.service import RetrievalService
from ragsift.versions.service import VersionService
from ragsift.versions.writer import DraftWriter, VersionDefaults

DIM = 64


class WordEmbedder:
    """Hashed bag of words: deterministic unit vectors; records every passage it embeds."""

    model_id = "words-64"
    dimension = DIM

    def __init__(self) -> None:
        self.passages: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _vector(self, text: str) -> Vectors:
        vector = np.full(DIM, 0.01, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % DIM] += 1.0
        unit: Vectors = vector / np.linalg.norm(vector)
        return unit

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passages.extend(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIM),
                                                                                np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._vector(text)


@dataclass
class Stack:
    settings: Settings
    repository: SqlRepository
    index: EmbeddedIndex
    embedder: WordEmbedder
    ingestion: IngestionService
    retrieval: RetrievalService
    versions: VersionService
    faq_index: EmbeddedIndex
    faq: FaqService

    def close(self) -> None:
        self.index.close()
        self.faq_index.close()
        self.repository.close()

    def kb(self, name: str = "kb", **policy: Any) -> KnowledgeBase:
        """The KB `name`, with its version policy changed when `policy` is given."""
        kb = self.ingestion.ensure_kb(name)
        if policy:
            self.versions.configure(kb, **policy)
        return kb

    def add(self, kb: KnowledgeBase, name: str, text: str, scope: DocumentScope | None = None
            ) -> str:
        """Ingest one text file; its document id."""
        outcome = self.ingestion.ingest_bytes(kb, name, text.encode(), scope)
        assert outcome.document.error is None, outcome.document.error
        return outcome.document.id

    def search(self, kb: KnowledgeBase, query: str, **fields: Any) -> RetrievalResult:
        request = SearchRequest.model_validate(
            {"query": query, "kb_id": kb.id, "small2big": False, **fields})
        return asyncio.run(self.retrieval.search(request))

    def chunk_ids(self, kb: KnowledgeBase, query: str, **fields: Any) -> list[str]:
        return [hit.chunk_id for hit in self.search(kb, query, **fields).hits]

    def faq_hits(self, kb: KnowledgeBase, query: str, **fields: Any) -> list[FaqHit]:
        """The FAQ hits of a FAQ-only search."""
        found = self.search(kb, query, run_doc=False, run_faq=True, **fields).faq_hits
        return list(found)

    def add_faq(self, kb: KnowledgeBase, question: str, answer: str,
                scope: DocumentScope | None = None) -> str:
        """Import one entry; its id."""
        outcome = self.faq.import_rows(kb, [FaqRow(question, answer, None, 1)], defaults=scope)
        assert outcome.added == 1
        (entry,) = [e for e in self.repository.list_faq_entries(kb.id, live_only=True)
                    if (e.question, e.answer) == (question, answer)
                    and (scope is None or e.tenant_id == scope.tenant_id)]
        return entry.id


def build_stack(root: Path, **overrides: Any) -> Stack:
    """Every service over stores under `root`; `overrides` are Settings values."""
    # RRF 1/1: on a two-document KB the bag-of-words dense scores are nearly tied, and a
    # score-normalised fusion would turn that tie into a full-scale win for one of them.
    values: dict[str, Any] = {"data_dir": root, "chunk_tokens": 16, "chunk_overlap_tokens": 0,
                              "parent_max_tokens": 64, "run_faq": False, "fusion": "rrf",
                              "sparse_weight": 1.0, **overrides}
    settings = Settings(**values)
    root.mkdir(parents=True, exist_ok=True)
    embedder = WordEmbedder()
    repository = SqlRepository(f"sqlite:///{root / 'facts.sqlite'}")
    index = EmbeddedIndex(root / "index", DIM)
    objects = LocalObjectStore(root / "objects")
    drafts = DraftWriter(repository, index, embedder,
                         VersionDefaults(settings.kb_publish_mode, settings.kb_version_retention))
    chunker = Chunker(embedder, chunk_tokens=settings.chunk_tokens,
                      overlap_tokens=settings.chunk_overlap_tokens,
                      parent_max_tokens=settings.parent_max_tokens)
    ingestion = IngestionService(repository, index, embedder, objects, chunker,
                                 max_file_bytes=settings.max_file_bytes, versions=drafts)
    faq_index = EmbeddedIndex(root / "faq_index", DIM)
    retrieval = RetrievalService(repository, index, embedder, settings, versions=repository,
                                 faq_index=faq_index)
    versions = VersionService(repository, index, retrieval, objects, drafts, settings,
                              faq_index=faq_index)
    faq = FaqService(repository, faq_index, embedder, drafts,
                     max_file_bytes=settings.max_file_bytes)
    return Stack(settings, repository, index, embedder, ingestion, retrieval, versions,
                 faq_index, faq)
