"""A document's metadata changed after indexing reaches the BM25 index's metadata terms
(metadata_refresh.py), on a real container: the chunks are rewritten with their vectors
kept, only while the document is READY, never brought back once deleted, and a failing
index leaves the facts' change standing; several documents go in one index write; what
was changed in the facts alone is written at the next writer's recovery."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import tantivy

from api.api_helpers import HOTELS, LEAVE, SMALL_CHUNKS
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import SparseIndexBroken, kb_directory_name
from ragsift.adapters.embedded_index.bm25_schema import METADATA, schema
from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_terms import document_tokens, fingerprint, scalar_token
from ragsift.domain.models import Document, DocumentStatus
from ragsift.ingestion.metadata_refresh import heal_stale_metadata, refresh_metadata
from ragsift.ingestion.preparation import index_records


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    built = build(Settings(data_dir=tmp_path, **SMALL_CHUNKS))
    yield built
    built.close()


def indexed_with(container: Container, kb_id: str, key: str, value: str) -> int:
    """Chunks of the kb's BM25 index carrying one metadata term, as committed."""
    directory = container.settings.data_dir / "index" / "sparse" / kb_directory_name(kb_id)
    index = KbIndex(directory, schema())
    query = tantivy.Query.term_query(schema(), METADATA, scalar_token(key, value))
    return int(index.searcher.search(query, 1, count=True).count)


def hotels_with(container: Container, dept: str) -> Document:
    kb = container.ingestion.ensure_kb("docs")
    document = container.ingestion.ingest_bytes(kb, "hotels.md", HOTELS).document
    container.repository.set_metadata(document.id, {"dept": dept})
    return document


def test_a_changed_documents_chunks_carry_its_new_metadata_terms(
        container: Container) -> None:
    document = hotels_with(container, "finance")
    container.ingestion.refresh_metadata({document.id: {"dept": "finance"}})
    chunks = len([c for c in container.repository.list_chunks(document.id) if c.level == 1])
    assert indexed_with(container, document.kb_id, "dept", "finance") == chunks
    query = container.embedder.embed_query("hotel limit per night")
    dense_before = container.index.search_dense(query, SearchFilter(kb_id=document.kb_id), 10)
    container.repository.set_metadata(document.id, {"dept": "hr"})
    container.ingestion.refresh_metadata({document.id: {"dept": "hr"}})
    assert indexed_with(container, document.kb_id, "dept", "finance") == 0
    assert indexed_with(container, document.kb_id, "dept", "hr") == chunks
    # the vectors kept: the same dense answers, nothing re-embedded
    assert container.index.search_dense(
        query, SearchFilter(kb_id=document.kb_id), 10) == dense_before


def test_several_documents_are_rewritten_in_one_index_write(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = container.ingestion.ensure_kb("docs")
    ids = [container.ingestion.ingest_bytes(kb, name, data).document.id
           for name, data in (("hotels.md", HOTELS), ("leave.md", LEAVE))]
    writes: list[int] = []
    original = EmbeddedIndex.update_records

    def counted(self: EmbeddedIndex, records: Sequence[IndexRecord]) -> None:
        writes.append(len(records))
        original(self, records)

    monkeypatch.setattr(EmbeddedIndex, "update_records", counted)
    container.ingestion.refresh_metadata({doc_id: {"dept": "legal"} for doc_id in ids})
    chunks = sum(1 for doc_id in ids for c in container.repository.list_chunks(doc_id)
                 if c.level == 1)
    assert writes == [chunks]
    assert indexed_with(container, kb.id, "dept", "legal") == chunks


def test_a_document_not_ready_or_deleted_is_not_written(container: Container) -> None:
    document = hotels_with(container, "finance")
    container.repository.set_status(document.id, DocumentStatus.PARSING, None)
    assert refresh_metadata(container.repository, container.index,
                            {document.id: {"dept": "hr"}}) == 0
    container.repository.set_status(document.id, DocumentStatus.READY, None)
    # chunks the index no longer holds (a delete racing the refresh) are not brought back
    container.index.delete_document(document.id)
    assert refresh_metadata(container.repository, container.index,
                            {document.id: {"dept": "hr"}}) > 0
    assert indexed_with(container, document.kb_id, "dept", "finance") == 0
    assert container.index.count() == 0


def test_an_index_without_metadata_terms_is_left_alone(container: Container) -> None:
    document = hotels_with(container, "finance")

    class NoTerms:  # a SearchIndex that cannot rewrite records in place (as Milvus)
        pass

    assert refresh_metadata(container.repository, NoTerms(),  # type: ignore[arg-type]
                            {document.id: {"dept": "hr"}}) == 0


def test_a_failing_index_write_is_logged_and_the_change_stands(
        container: Container, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    document = hotels_with(container, "finance")

    def broken(self: EmbeddedIndex, records: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(EmbeddedIndex, "update_records", broken)
    with caplog.at_level(logging.ERROR):
        container.ingestion.refresh_metadata({document.id: {"dept": "hr"}})
    assert "writing the new metadata" in caplog.text and "disk gone" in caplog.text
    kept = container.repository.get_document(document.id)
    assert kept is not None and kept.metadata == {"dept": "finance"}


def _child_count(container: Container, document_id: str) -> int:
    return sum(1 for c in container.repository.list_chunks(document_id) if c.level == 1)


@pytest.mark.parametrize("one_kb", [True, False])
def test_recovery_writes_the_metadata_changed_in_the_facts_alone(
        container: Container, one_kb: bool) -> None:
    """A PATCH killed between its two writes, or `docs meta`, leaves the facts' metadata
    ahead of the terms: the next writer's start (ingest, sync: one KB; serve: every KB)
    writes it into the index."""
    document = hotels_with(container, "finance")  # facts alone: the index holds no dept
    chunks = _child_count(container, document.id)
    assert indexed_with(container, document.kb_id, "dept", "finance") == 0
    container.ingestion.recover(document.kb_id if one_kb else None)
    assert indexed_with(container, document.kb_id, "dept", "finance") == chunks


def test_only_documents_whose_terms_differ_are_stale_and_rewritten(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = container.ingestion.ensure_kb("docs")
    hotels = container.ingestion.ingest_bytes(kb, "hotels.md", HOTELS).document
    leave = container.ingestion.ingest_bytes(kb, "leave.md", LEAVE).document
    container.repository.set_metadata(leave.id, {"dept": "hr"})
    printed = {doc.id: fingerprint(document_tokens(decode_metadata(doc.metadata)))
               for doc in container.repository.list_documents(kb.id)}
    printed["not-indexed"] = 7  # a document the index does not hold is not stale
    assert container.index.stale_metadata(kb.id, printed) == {leave.id}
    writes: list[set[str]] = []
    original = EmbeddedIndex.update_records

    def counted(self: EmbeddedIndex, records: Sequence[IndexRecord]) -> None:
        writes.append({record.document_id for record in records})
        original(self, records)

    monkeypatch.setattr(EmbeddedIndex, "update_records", counted)
    assert heal_stale_metadata(container.repository, container.index, kb.id) == \
        _child_count(container, leave.id)
    assert writes == [{leave.id}]  # hotels, unchanged, not rewritten
    assert heal_stale_metadata(container.repository, container.index, kb.id) == 0
    assert writes == [{leave.id}] and hotels.id not in writes[0]


def test_a_broken_index_at_recovery_is_logged_and_recovery_goes_on(
        container: Container, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    document = hotels_with(container, "finance")

    def broken(self: EmbeddedIndex, kb_id: str, fingerprints: object) -> set[str]:
        raise SparseIndexBroken("the BM25 index of knowledge base docs cannot be read")

    monkeypatch.setattr(EmbeddedIndex, "stale_metadata", broken)
    with caplog.at_level(logging.WARNING):
        assert container.ingestion.recover(document.kb_id) == []
    assert "stays out of its index" in caplog.text and "cannot be read" in caplog.text


def _facts_reads(container: Container, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The KBs whose documents' metadata the heal reads from the facts from now on."""
    reads: list[str] = []
    original = container.repository.filter_fields

    def counted(kb_id: str) -> dict[str, dict[str, object]]:
        reads.append(kb_id)
        return original(kb_id)

    monkeypatch.setattr(container.repository, "filter_fields", counted)
    return reads


def test_a_start_after_nothing_changed_skips_the_check(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads every document's metadata (O(documents)); once the index agreed
    with the facts, a start finding neither written since does not read them."""
    document = hotels_with(container, "finance")
    container.ingestion.recover(document.kb_id)  # heals, and notes the agreement
    reads = _facts_reads(container, monkeypatch)
    container.ingestion.recover(document.kb_id)
    container.ingestion.recover(None)
    assert reads == []
    assert indexed_with(container, document.kb_id, "dept", "finance") == \
        _child_count(container, document.id)


def test_metadata_changed_in_the_facts_after_a_check_is_healed_at_the_next_start(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    document = hotels_with(container, "finance")
    container.ingestion.recover(document.kb_id)
    reads = _facts_reads(container, monkeypatch)
    container.repository.set_metadata(document.id, {"dept": "hr"})  # `docs meta`: facts alone
    container.ingestion.recover(document.kb_id)
    assert reads == [document.kb_id]
    assert indexed_with(container, document.kb_id, "dept", "hr") == \
        _child_count(container, document.id)


def test_an_index_written_after_a_check_is_checked_again(container: Container) -> None:
    """The agreement noted holds for the index as committed then: a later write (here one
    that does not follow the facts, as a restored or foreign index might) is checked."""
    document = hotels_with(container, "finance")
    container.ingestion.recover(document.kb_id)
    children = [c for c in container.repository.list_chunks(document.id) if c.level == 1]
    other = document.model_copy(update={"metadata": {"dept": "legal"}})
    container.index.update_records(index_records(other, children))  # type: ignore[attr-defined]
    assert indexed_with(container, document.kb_id, "dept", "legal") == len(children)
    container.ingestion.recover(document.kb_id)
    assert indexed_with(container, document.kb_id, "dept", "legal") == 0
    assert indexed_with(container, document.kb_id, "dept", "finance") == len(children)
