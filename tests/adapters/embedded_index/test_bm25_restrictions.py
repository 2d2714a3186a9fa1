"""How a filter reaches BM25: the roles clause only where an index holds a restricted chunk
(dropped elsewhere: same hits, same scores), a complement as a MUST_NOT beside the text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from ragsift.adapters.embedded_index.bm25_kb import KbIndex
from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
from ragsift.adapters.embedded_index.bm25_schema import filter_clauses, holds_restricted, schema
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

OPEN = [
    IndexRecord("c1", "d1", "kb", "travel meal allowance for domestic trips"),
    IndexRecord("c2", "d2", "kb", "travel meal allowance abroad and per diem"),
    IndexRecord("c3", "d3", "kb", "router firmware upgrade steps"),
]
RESTRICTED = IndexRecord("hr1", "d4", "kb", "travel meal allowance for executives",
                         allowed_roles=("hr",))
NO_ROLES = SearchFilter(kb_id="kb")  # the default: a caller without roles


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TantivyBm25Store]:
    bm25 = TantivyBm25Store(tmp_path)
    bm25.upsert(OPEN)
    yield bm25
    bm25.close()


def searcher_of(tmp_path: Path) -> tantivy.Searcher:
    return KbIndex(tmp_path / kb_directory_name("kb"), schema()).searcher


def test_an_index_without_restricted_chunks_searches_without_the_roles_clause(
    store: TantivyBm25Store, tmp_path: Path
) -> None:
    restrictions = filter_clauses(schema(), NO_ROLES)
    assert restrictions is not None and restrictions.roles is not None
    searcher = searcher_of(tmp_path)
    assert not holds_restricted(searcher)
    assert restrictions.on(searcher) == []


def test_dropping_the_clause_keeps_every_hit_and_score(store: TantivyBm25Store) -> None:
    everyone = store.search("travel meal allowance", SearchFilter(kb_id="kb", roles=None), 10)
    assert {h.chunk_id for h in everyone} == {"c1", "c2"}
    assert store.search("travel meal allowance", NO_ROLES, 10) == everyone


def test_a_restricted_chunk_brings_the_clause_back(
    store: TantivyBm25Store, tmp_path: Path
) -> None:
    store.upsert([RESTRICTED])
    searcher = searcher_of(tmp_path)
    assert holds_restricted(searcher)
    restrictions = filter_clauses(schema(), NO_ROLES)
    assert restrictions is not None and len(restrictions.on(searcher)) == 1
    without_roles = {h.chunk_id for h in store.search("travel meal allowance", NO_ROLES, 10)}
    assert without_roles == {"c1", "c2"}
    hr = SearchFilter(kb_id="kb", roles=frozenset({"hr"}))
    assert "hr1" in {h.chunk_id for h in store.search("travel meal allowance", hr, 10)}


def test_other_clauses_stay_when_the_roles_clause_is_dropped(store: TantivyBm25Store) -> None:
    only_d2 = SearchFilter(kb_id="kb", document_ids=frozenset({"d2"}))
    assert [h.chunk_id for h in store.search("travel meal allowance", only_d2, 10)] == ["c2"]


def test_excluded_documents_are_left_out_without_changing_the_others_scores(
    store: TantivyBm25Store,
) -> None:
    everyone = {h.chunk_id: h.score for h in store.search("travel meal allowance", NO_ROLES, 10)}
    kept = store.search("travel meal allowance", NO_ROLES, 10, frozenset({"d1"}))
    assert [(h.chunk_id, h.score) for h in kept] == [("c2", everyone["c2"])]


def test_the_complement_is_a_must_not_beside_the_text_not_a_scan_of_every_chunk() -> None:
    restrictions = filter_clauses(schema(), NO_ROLES, frozenset({"d1"}))
    assert restrictions is not None
    assert restrictions.clauses == () and restrictions.excluded is not None
