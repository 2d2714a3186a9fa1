"""MaintenanceService on a real container: BM25 rebuilt from the facts while searches run, and
reindex from the stored originals."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.api_helpers import FIRMWARE, HOTELS, LEAVE, SMALL_CHUNKS
from ragsift.bootstrap import Container, build, build_maintenance
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import CHILD_LEVEL, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.faq_import import FaqRow

QUERIES = ["hotel limit per night", "年假 结转", "error E-104 firmware", "invoice London Tokyo"]


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    built = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    yield built
    built.close()


def ingest(container: Container) -> KnowledgeBase:
    kb = container.ingestion.ensure_kb("docs")
    for name, data in (("hotels.md", HOTELS), ("leave.md", LEAVE), ("fw.txt", FIRMWARE)):
        assert container.ingestion.ingest_bytes(kb, name, data).document.status == "READY"
    container.faq.import_rows(kb, [
        FaqRow("How much is the hotel limit?", "150 dollars per night.", None, 1),
        FaqRow("年假可以结转吗？", "最多结转五天。", None, 2),
    ])
    return kb


def sparse_answers(container: Container, kb: KnowledgeBase) -> list[list[tuple[str, float]]]:
    answers = []
    for query in QUERIES:
        request = SearchRequest(query=query, kb_id=kb.id, mode="sparse", top_k=10,
                                small2big=False, run_faq=True)
        result = asyncio.run(container.retrieval.search(request))
        answers.append([(hit.chunk_id, hit.sparse_score or 0.0) for hit in result.hits]
                       + [(hit.faq_id, hit.sparse_score or 0.0) for hit in result.faq_hits])
    return answers


def child_count(container: Container, kb: KnowledgeBase) -> int:
    return sum(
        1 for d in container.repository.list_documents(kb.id)
        for c in container.repository.list_chunks(d.id) if c.level == CHILD_LEVEL
    )


def test_a_rebuild_from_the_facts_keeps_every_answer_while_searches_run(
    container: Container,
) -> None:
    kb = ingest(container)
    expected = sparse_answers(container, kb)
    assert all(expected)
    maintenance = build_maintenance(container)
    done = threading.Event()
    wrong: list[object] = []
    checked = [0, 0]

    def search(slot: int) -> None:
        while not done.is_set():
            try:
                got = sparse_answers(container, kb)
            except BaseException as exc:  # pragma: no cover - reported below
                wrong.append(exc)
                return
            if got != expected:
                wrong.append(got)
                return
            checked[slot] += 1

    threads = [threading.Thread(target=search, args=(slot,)) for slot in range(2)]
    for thread in threads:
        thread.start()
    try:
        reports = [maintenance.rebuild_sparse(kb) for _ in range(3)]
    finally:
        done.set()
        for thread in threads:
            thread.join()

    assert wrong == []
    assert min(checked) > 0
    assert {(r.chunks, r.faq_entries) for r in reports} == {(child_count(container, kb), 2)}
    assert sparse_answers(container, kb) == expected


def test_a_rebuild_repairs_a_bm25_index_that_lost_a_kb(container: Container) -> None:
    kb = ingest(container)
    expected = sparse_answers(container, kb)
    with container.index.rebuild_sparse(kb.id):  # type: ignore[attr-defined]
        pass  # an empty rebuild: the kb's BM25 index is now empty, the facts are not
    assert container.index.sparse_count() == 0  # type: ignore[attr-defined]
    assert sparse_answers(container, kb) != expected

    build_maintenance(container).rebuild_sparse(kb)

    assert sparse_answers(container, kb) == expected


def test_reindex_reparses_every_document_from_its_original_with_the_same_chunk_ids(
    container: Container,
) -> None:
    kb = ingest(container)
    before = {d.id: [c.id for c in container.repository.list_chunks(d.id)]
              for d in container.repository.list_documents(kb.id)}
    expected = sparse_answers(container, kb)

    outcomes = build_maintenance(container).reindex(kb)

    assert {o.document.id: o.document.status for o in outcomes} == {
        document_id: DocumentStatus.READY for document_id in before
    }
    after = {d: [c.id for c in container.repository.list_chunks(d)] for d in before}
    assert after == before
    assert container.index.count() == child_count(container, kb)
    assert sparse_answers(container, kb) == expected


def test_reindex_skips_a_document_without_its_original_and_names_unknown_ones(
    container: Container,
) -> None:
    kb = ingest(container)
    hotels = next(d for d in container.repository.list_documents(kb.id)
                  if d.filename == "hotels.md")
    shutil.rmtree(container.settings.data_dir / "objects" / kb.id / hotels.id)
    maintenance = build_maintenance(container)

    (outcome,) = maintenance.reindex(kb, [hotels.id])

    assert outcome.skipped is not None and outcome.skipped.startswith("no stored object")
    document = container.repository.get_document(hotels.id)
    assert document is not None and document.status == DocumentStatus.READY  # untouched
    with pytest.raises(InvalidInput, match="'nope' is not in knowledge base 'docs'"):
        maintenance.reindex(kb, ["nope"])


GUIDE = b"""# Guide

## Travel

### Hotels

The hotel limit per night is 150 dollars. In London it rises to 220 dollars.

### Meals

Meals are reimbursed up to 60 dollars per day. Alcohol is not reimbursed.

## Leave

Annual leave is fifteen days a year.
"""


def test_reindex_brings_the_section_level_to_a_kb_chunked_with_two(tmp_path: Path) -> None:
    two = build(Settings(data_dir=tmp_path, chunk_sections=False, **SMALL_CHUNKS))
    try:
        kb = two.ingestion.ensure_kb("docs")
        document = two.ingestion.ingest_bytes(kb, "guide.md", GUIDE).document
        assert {c.level for c in two.repository.list_chunks(document.id)} == {0, 1}
    finally:
        two.close()
    three = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    try:
        [outcome] = build_maintenance(three).reindex(kb)
        assert outcome.document.status == DocumentStatus.READY
        chunks = {c.id: c for c in three.repository.list_chunks(document.id)}
        [travel] = [c for c in chunks.values() if c.level == -1]
        assert travel.heading_path == ("Guide", "Travel")
        children = [c for c in chunks.values() if c.level == CHILD_LEVEL
                    and c.heading_path[-1] in ("Hotels", "Meals")]
        assert {chunks[chunks[c.parent_id].parent_id].id  # type: ignore[index]
                for c in children} == {travel.id}
        assert three.index.count() == child_count(three, kb)
    finally:
        three.close()
