"""Metadata filters through the chunks' metadata terms: the same chunks and scores as the
whitelist, documents changed since they were indexed filtered by document, and an index
built before the terms still filtering by its whitelist."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import ANALYZER_FILE, kb_directory_name
from ragsift.adapters.embedded_index.bm25_schema import document, document_key, schema
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.adapters.embedded_index.bm25_terms import STALE_MAX
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.metadata import Value, decode_metadata
from ragsift.domain.metadata_filter import Node, parse_filter
from ragsift.domain.metadata_predicate import compile_predicate
from ragsift.domain.metadata_terms import (
    Distinct,
    MetadataTerms,
    compile_terms,
    document_tokens,
    fingerprint,
)
from ragsift.domain.results import ChannelHit

DOCUMENTS = [f"{n:032x}" for n in range(1, 9)]
ORPHAN = f"{99:032x}"
TOP = "travel meal allowance policy travel meal policy"  # the orphan's: first if admitted
QUERY = "travel meal allowance policy"
KB = "kb"

words = st.sampled_from(("hr", "it", "人事", "", "x\x1fy", "' or 1=1 --"))
scalars = st.one_of(words, st.integers(2022, 2025), st.sampled_from((2023.0, 2023.5)),
                    st.booleans(), st.sampled_from(({"$date": "2024-01-01"},)))
metadata = st.dictionaries(st.sampled_from(("dept", "year", "tags")),
                           st.one_of(scalars, st.lists(words, max_size=3)), max_size=3)
conditions = st.one_of(
    st.builds(lambda k, v: {k: v}, st.sampled_from(("dept", "year", "tags")), words),
    st.builds(lambda v: {"year": {"$gte": v}}, st.integers(2022, 2025)),
    st.builds(lambda v: {"tags": {"$contains": v}}, words),
    st.builds(lambda v: {"dept": {"$nin": v}}, st.lists(words, max_size=2)),
    st.builds(lambda b: {"year": {"$exists": b}}, st.booleans()),
    st.builds(lambda d: {"document_id": {"$in": d}}, st.lists(st.sampled_from(DOCUMENTS))),
)
filters = st.recursive(conditions, lambda inner: st.one_of(
    st.builds(lambda p: {"$or": p}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda p: {"$and": p}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda p: {"$not": p}, inner)), max_leaves=4)


def records(indexed: dict[str, dict[str, Value]]) -> list[IndexRecord]:
    """Three chunks of each document of `indexed`, with its metadata as their terms."""
    return [IndexRecord(f"c{i}-{j}", doc, KB, TOP if doc == ORPHAN else
                        f"travel meal allowance part {j} of policy {i}",
                        metadata_tokens=document_tokens(indexed[doc]))
            for i, doc in enumerate(indexed) for j in range(3)]


def filtered(node: Node, current: dict[str, dict[str, Value]]) -> SearchFilter:
    """The search filter the scope stage makes: the whitelist and the terms."""
    facts = {doc: {**values, "document_id": doc} for doc, values in current.items()}

    def documents(part: Node) -> frozenset[str]:
        holds = compile_predicate(part)
        return frozenset(doc for doc, record in facts.items() if holds(record))

    terms = MetadataTerms(compile_terms(node, Distinct(facts), documents),
                          {doc: fingerprint(document_tokens(v)) for doc, v in current.items()})
    return SearchFilter(kb_id=KB, document_ids=documents(node), metadata_terms=terms)


def scored(hits: list[ChannelHit]) -> list[tuple[str, float]]:
    return [(hit.chunk_id, round(hit.score, 5)) for hit in hits]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyBm25Store]:
    opened = TantivyBm25Store(tmp_path_factory.mktemp("terms"))
    yield opened
    opened.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(current=st.lists(metadata, min_size=8, max_size=8),
       before=st.lists(st.none() | metadata, min_size=8, max_size=8),
       orphan=st.none() | metadata, raw=filters)
def test_terms_keep_exactly_the_whitelists_chunks_with_its_scores(
    store: TantivyBm25Store, current: list[dict[str, Any]],
    before: list[dict[str, Any] | None], orphan: dict[str, Any] | None, raw: dict[str, Any],
) -> None:
    """Generated metadata now, the metadata each document was indexed with (its current one,
    or other metadata: changed since), maybe a document the index holds and the facts do not
    (a crash between the writes), generated filters: through the terms, BM25 returns the
    hits and scores of the whitelist alone."""
    now = {doc: decode_metadata(v) for doc, v in zip(DOCUMENTS, current, strict=True)}
    indexed = {doc: now[doc] if old is None else decode_metadata(old)
               for doc, old in zip(DOCUMENTS, before, strict=True)}
    store.delete_document(ORPHAN)
    if orphan is not None:
        indexed[ORPHAN] = decode_metadata(orphan)
    store.upsert(records(indexed))
    search_filter = filtered(parse_filter(raw), now)
    assert search_filter.document_ids is not None
    assert store.takes_terms(search_filter)
    whitelist = SearchFilter(kb_id=KB, document_ids=search_filter.document_ids)
    for limit in (100, 4):  # every match, and a page the wrong chunks would crowd
        by_terms = store.search(QUERY, search_filter, limit)
        assert scored(by_terms) == scored(store.search(QUERY, whitelist, limit))
    assert {hit.document_id for hit in store.search(QUERY, search_filter, 100)
            } == search_filter.document_ids


def test_a_document_changed_since_it_was_indexed_is_filtered_on_its_metadata_now(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path / "s")
    indexed: dict[str, dict[str, Value]] = {doc: {"dept": "hr"} for doc in DOCUMENTS}
    store.upsert(records(dict(indexed)))
    now: dict[str, dict[str, Value]] = {**indexed, DOCUMENTS[0]: {"dept": "it"}}
    it_filter = filtered(parse_filter({"dept": "it"}), now)
    hr_filter = filtered(parse_filter({"dept": "hr"}), now)
    assert store.takes_terms(it_filter)
    assert {h.document_id for h in store.search(QUERY, it_filter, 100)} == {DOCUMENTS[0]}
    assert {h.document_id for h in store.search(QUERY, hr_filter, 100)} == set(DOCUMENTS[1:])
    store.close()


def test_past_stale_max_changed_documents_the_whitelist_filters_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ragsift.adapters.embedded_index.bm25_terms.STALE_MAX", 1)
    store = TantivyBm25Store(tmp_path / "s")
    store.upsert(records({doc: {} for doc in DOCUMENTS}))
    now: dict[str, dict[str, Value]] = {doc: {"dept": "it"} for doc in DOCUMENTS}
    it_filter = filtered(parse_filter({"dept": "it"}), now)
    assert STALE_MAX > 1 and not store.takes_terms(it_filter)
    assert {h.document_id for h in store.search(QUERY, it_filter, 100)} == set(DOCUMENTS)
    store.close()


def test_an_index_built_before_metadata_terms_filters_by_its_whitelist(tmp_path: Path) -> None:
    directory = tmp_path / "older" / kb_directory_name(KB)
    directory.mkdir(parents=True)
    (directory / ANALYZER_FILE).write_text('{"version": 2}', encoding="utf-8")
    older = tantivy.Index(schema(keyed=True, terms=False), path=str(directory))
    writer = older.writer(heap_size=15_000_000, num_threads=1)
    for record in records({doc: {"dept": "hr"} for doc in DOCUMENTS}):
        writer.add_document(document(record, analyze_v2, keyed=True, terms=False))
    writer.commit()
    writer.wait_merging_threads()
    kb = KbIndex(directory, schema())
    assert kb.keyed and not kb.terms
    store = TantivyBm25Store(tmp_path / "older")
    now: dict[str, dict[str, Value]] = {doc: {"dept": "hr"} for doc in DOCUMENTS}
    now[DOCUMENTS[3]] = {"dept": "it"}
    it_filter = filtered(parse_filter({"dept": "it"}), now)
    assert not store.takes_terms(it_filter)
    assert {h.document_id for h in store.search(QUERY, it_filter, 100)} == {DOCUMENTS[3]}
    store.close()


def test_the_indexed_fingerprints_tell_a_document_indexed_with_two_metadata(
    tmp_path: Path,
) -> None:
    store = TantivyBm25Store(tmp_path / "s")
    indexed: dict[str, dict[str, Value]] = {doc: {"n": i} for i, doc in enumerate(DOCUMENTS)}
    store.upsert(records(indexed))
    store.upsert([IndexRecord("extra", DOCUMENTS[0], KB, "other metadata for one chunk",
                              metadata_tokens=document_tokens({"n": 99}))])
    found = KbIndex(tmp_path / "s" / kb_directory_name(KB), schema()).indexed_fingerprints()
    assert found is not None and len(found) == len(DOCUMENTS)
    assert found[document_key(DOCUMENTS[0])] == -1  # two fingerprints among its chunks
    assert found[document_key(DOCUMENTS[1])] == fingerprint(document_tokens({"n": 1}))
    store.close()


def test_a_search_meeting_the_fingerprints_being_read_goes_by_its_whitelist(
    tmp_path: Path,
) -> None:
    """Reading the fingerprints after a commit takes 40 ms at 100k chunks: one search pays
    it, one arriving meanwhile filters by its whitelist instead of waiting."""
    store = TantivyBm25Store(tmp_path / "s")
    store.upsert(records({doc: {"dept": "hr"} for doc in DOCUMENTS}))
    kb = store._kb(kb_directory_name(KB), create=False, kb_id=KB)
    assert kb is not None
    hr = filtered(parse_filter({"dept": "hr"}), {doc: {"dept": "hr"} for doc in DOCUMENTS})
    with kb._reading:
        assert kb.indexed_fingerprints() is None
        assert not store.takes_terms(hr)
        assert {h.document_id for h in store.search(QUERY, hr, 100)} == set(DOCUMENTS)
    assert store.takes_terms(hr)
    store.close()
