"""Document whitelists through 48-bit document keys: the same hits and scores as through the
document ids, a collision never lets a chunk in, and an index built before the keys keeps
working (filtering by document id) until it is rebuilt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from ragsift.adapters.embedded_index import bm25_schema
from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import ANALYZER_FILE, kb_directory_name
from ragsift.adapters.embedded_index.bm25_schema import DOCUMENT_KEY, document, schema
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

DOCUMENTS = [f"{n:032x}" for n in range(1, 9)]  # 32-hex, as ragsift's document ids
RECORDS = [
    IndexRecord(f"c{i}-{j}", doc, "kb", f"travel meal allowance part {j} of policy {i}")
    for i, doc in enumerate(DOCUMENTS) for j in range(3)
]
QUERY = "travel meal allowance policy"
ALLOWED = frozenset(DOCUMENTS[1:4])


def scored(hits: list[ChannelHit]) -> list[tuple[str, float]]:
    return [(hit.chunk_id, round(hit.score, 5)) for hit in hits]


def legacy_kb(root: Path, records: list[IndexRecord]) -> None:
    """A kb index as ragsift wrote it before document keys (the schema without the field)."""
    directory = root / kb_directory_name("kb")
    directory.mkdir(parents=True)
    (directory / ANALYZER_FILE).write_text('{"version": 2}', encoding="utf-8")
    index = tantivy.Index(schema(keyed=False), path=str(directory))
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for record in records:
        writer.add_document(document(record, analyze_v2, keyed=False))
    writer.commit()
    writer.wait_merging_threads()


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[TantivyBm25Store]:
    store = TantivyBm25Store(tmp_path / "keyed")
    store.upsert(RECORDS)
    yield store
    store.close()


@pytest.fixture
def legacy(tmp_path: Path) -> Iterator[TantivyBm25Store]:
    legacy_kb(tmp_path / "legacy", RECORDS)
    store = TantivyBm25Store(tmp_path / "legacy")
    yield store
    store.close()


def test_a_new_index_holds_each_chunks_document_key(
    keyed: TantivyBm25Store, tmp_path: Path
) -> None:
    kb = KbIndex(tmp_path / "keyed" / kb_directory_name("kb"), schema())
    assert kb.keyed
    key = bm25_schema.document_key(DOCUMENTS[2])
    assert 0 <= key < 2**48
    found = kb.searcher.search(tantivy.Query.term_query(kb._schema, DOCUMENT_KEY, key), 10)
    assert found.count == 3


def test_whitelists_and_complements_by_key_equal_those_by_document_id(
    keyed: TantivyBm25Store, legacy: TantivyBm25Store
) -> None:
    whitelist = SearchFilter(kb_id="kb", document_ids=ALLOWED)
    by_key = keyed.search(QUERY, whitelist, 10)
    assert {hit.document_id for hit in by_key} == ALLOWED
    assert scored(by_key) == scored(legacy.search(QUERY, whitelist, 10))
    left_out = frozenset(DOCUMENTS) - ALLOWED
    complement = keyed.search(QUERY, SearchFilter(kb_id="kb"), 30, excluded=left_out)
    assert scored(complement) == scored(
        legacy.search(QUERY, SearchFilter(kb_id="kb"), 30, excluded=left_out))
    assert {hit.document_id for hit in complement} == ALLOWED
    unfiltered = keyed.search(QUERY, SearchFilter(kb_id="kb"), 30)
    assert scored(unfiltered) == scored(legacy.search(QUERY, SearchFilter(kb_id="kb"), 30))


def test_a_key_collision_never_lets_another_documents_chunk_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_schema, "document_key", lambda document_id: 7)  # all collide
    # the keys of whitelists seen before were remembered: none here
    monkeypatch.setattr(bm25_schema, "document_keys", bm25_schema.WhitelistKeys(held=100))
    store = TantivyBm25Store(tmp_path)
    try:
        store.upsert(RECORDS)
        hits = store.search(QUERY, SearchFilter(kb_id="kb", document_ids=ALLOWED), 30)
    finally:
        store.close()
    assert hits and {hit.document_id for hit in hits} == ALLOWED


def test_an_index_built_before_the_keys_opens_searches_and_takes_new_chunks(
    legacy: TantivyBm25Store, tmp_path: Path
) -> None:
    legacy.upsert([IndexRecord("new", DOCUMENTS[1], "kb", "travel meal allowance update")])
    hits = legacy.search(QUERY, SearchFilter(kb_id="kb", document_ids=ALLOWED), 30)
    assert "new" in {hit.chunk_id for hit in hits}
    assert {hit.document_id for hit in hits} == ALLOWED
    legacy.close()
    assert not KbIndex(tmp_path / "legacy" / kb_directory_name("kb"), schema()).keyed


def test_a_rebuild_gives_an_index_built_before_the_keys_its_keys(
    legacy: TantivyBm25Store, tmp_path: Path
) -> None:
    whitelist = SearchFilter(kb_id="kb", document_ids=ALLOWED)
    before = scored(legacy.search(QUERY, whitelist, 30))
    with legacy.rebuild("kb") as rebuild:
        rebuild.add(RECORDS)
    assert scored(legacy.search(QUERY, whitelist, 30)) == before
    legacy.close()
    assert KbIndex(tmp_path / "legacy" / kb_directory_name("kb"), schema()).keyed


def test_opening_an_index_without_keys_says_so_once_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    legacy_kb(tmp_path, RECORDS)
    directory = tmp_path / kb_directory_name("kb")
    with caplog.at_level("INFO", logger="ragsift.adapters.embedded_index.bm25_kb"):
        KbIndex(directory, schema())
        KbIndex(directory, schema())
    told = [r.getMessage() for r in caplog.records if "predates document keys" in r.getMessage()]
    assert len(told) == 1 and "rebuild-sparse" in told[0]


@pytest.mark.parametrize("size", [1, 256, 257, 299])
def test_whitelists_as_term_queries_or_as_a_term_set_keep_the_same_chunks(
    tmp_path: Path, size: int
) -> None:
    """Up to 256 documents a whitelist goes as SHOULD term queries, past it as a term set
    (documents_clause): the same hits and scores either way, keyed or by document id."""
    documents = [f"{n:032x}" for n in range(1, 301)]
    records = [IndexRecord(f"c{i}", doc, "kb", f"meal allowance policy {i % 7} w{i}")
               for i, doc in enumerate(documents)]
    legacy_kb(tmp_path / "legacy", records)
    stores = [TantivyBm25Store(tmp_path / "keyed"), TantivyBm25Store(tmp_path / "legacy")]
    stores[0].upsert(records)
    allowed = frozenset(documents[::-1][:size])
    try:
        found = [store.search("meal policy", SearchFilter(kb_id="kb", document_ids=allowed),
                              400) for store in stores]
    finally:
        for store in stores:
            store.close()
    assert {hit.document_id for hit in found[0]} == allowed
    assert scored(found[0]) == scored(found[1])
