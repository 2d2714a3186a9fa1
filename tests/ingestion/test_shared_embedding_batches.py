"""Small documents prepared in worker processes share embedder calls, and fail alone."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.domain.models import Document, DocumentStatus
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.pipeline import IngestionService

DIMENSION = 8
REFUSED = "拒绝这一行"


class CountingEmbedder:
    """Vectors from each text's hash; remembers its calls and refuses one text."""

    model_id = "test/hash"
    dimension = DIMENSION

    def __init__(self) -> None:
        self._tokens = E5Tokenizer()
        self.calls: list[list[str]] = []

    def count_tokens(self, text: str) -> int:
        return self._tokens.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        if any(REFUSED in text for text in texts):
            raise ValueError("refused")
        return np.stack([_vector(text) for text in texts])

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return _vector(text)


def _vector(text: str) -> NDArray[np.float32]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8])
    row = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    unit: NDArray[np.float32] = row / np.linalg.norm(row)
    return unit


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[IngestionService, CountingEmbedder, SqlRepository]]:
    repository = SqlRepository(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    embedder = CountingEmbedder()
    service = IngestionService(
        repository, EmbeddedIndex(tmp_path / "index", DIMENSION), embedder,
        LocalObjectStore(tmp_path / "objects"), Chunker(E5Tokenizer()),
        max_file_bytes=10**6, batch_size=4, workers=2,
    )
    try:
        yield service, embedder, repository
    finally:
        service.close()


def _ingest(service: IngestionService, lines: Sequence[str]) -> list[DocumentStatus]:
    kb = service.ensure_kb("kb")
    ids = [service.accept(kb, f"d{i}.txt", f"{line}\n".encode()).document.id
           for i, line in enumerate(lines)]
    return [outcome.document.status for outcome in service.process_many(ids)]


def test_one_line_documents_are_embedded_in_shared_batches(
    stack: tuple[IngestionService, CountingEmbedder, SqlRepository],
) -> None:
    service, embedder, _ = stack
    lines = [f"第{i}条简短的标题文本" for i in range(10)]
    assert _ingest(service, lines) == [DocumentStatus.READY] * 10
    assert [len(call) for call in embedder.calls] == [4, 4, 2]


def test_a_text_the_embedder_refuses_fails_only_its_document(
    stack: tuple[IngestionService, CountingEmbedder, SqlRepository],
) -> None:
    service, embedder, repository = stack
    lines = ["第一条标题", REFUSED, "第三条标题", "第四条标题"]
    statuses = _ingest(service, lines)
    assert statuses == [DocumentStatus.READY, DocumentStatus.FAILED,
                        DocumentStatus.READY, DocumentStatus.READY]
    kb = service.ensure_kb("kb")
    failed = repository.list_documents(kb.id, DocumentStatus.FAILED)
    assert [d.error for d in failed] == ["ValueError: refused"]
    assert len(embedder.calls[0]) == 4  # tried together first


class _CountingBatches(SqlRepository):
    """Records the size of every batched claim and status move."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.claims: list[int] = []
        self.moves: list[tuple[int, DocumentStatus]] = []

    def claim_documents(self, document_ids: Sequence[str], owner: str,
                        status: DocumentStatus) -> dict[str, Document]:
        self.claims.append(len(document_ids))
        return super().claim_documents(document_ids, owner, status)

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        self.moves.append((len(document_ids), status))
        super().set_statuses(document_ids, status)


def test_documents_are_claimed_and_staged_in_larger_batches_than_embedder_calls(
    tmp_path: Path,
) -> None:
    repository = _CountingBatches(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    embedder = CountingEmbedder()
    service = IngestionService(
        repository, EmbeddedIndex(tmp_path / "index", DIMENSION), embedder,
        LocalObjectStore(tmp_path / "objects"), Chunker(E5Tokenizer()),
        max_file_bytes=10**6, batch_size=4, workers=2, batch_documents=8,
    )
    try:
        lines = [f"第{i}条简短的标题文本" for i in range(11)]
        assert _ingest(service, lines) == [DocumentStatus.READY] * 11
    finally:
        service.close()
    assert repository.claims == [8, 3]
    assert [n for n, status in repository.moves if status == DocumentStatus.INDEXING] == [8, 3]
    assert [len(call) for call in embedder.calls] == [4, 4, 3]
