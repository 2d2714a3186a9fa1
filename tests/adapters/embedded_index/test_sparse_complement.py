"""BM25 under a broad document whitelist reads an unrestricted page or filters on the kb's
other documents instead (sparse_complement.py): the same hits as the whitelist, also when
the BM25 store holds a chunk the dense store does not know."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.sparse_complement import search_by_complement
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

DIM = 8
DOCUMENTS = 160  # a half is past the 64 whitelisted documents from which BM25 plans
WORDS = ("alpha", "beta", "gamma", "delta")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedIndex:
    records = [IndexRecord(chunk_id=f"c{i:03d}", document_id=f"d{i // 2}", kb_id="kb",
                           text=" ".join(WORDS[: 1 + i % 4]) + f" w{i % 7}")
               for i in range(DOCUMENTS * 2)]
    vectors = np.random.default_rng(3).standard_normal((len(records), DIM)).astype(np.float32)
    built = EmbeddedIndex(Path(tmp_path_factory.mktemp("complement")), DIM)
    built.upsert(records, vectors)
    return built


def _whitelist(left_out: set[int]) -> SearchFilter:
    return SearchFilter(kb_id="kb", document_ids=frozenset(
        f"d{d}" for d in range(DOCUMENTS) if d not in left_out))


@pytest.mark.parametrize("limit", [1, 5, 200])
@pytest.mark.parametrize("query", ["alpha", "delta w3", "gamma beta"])
def test_a_broad_whitelist_finds_what_the_whitelist_itself_finds(
    index: EmbeddedIndex, query: str, limit: int,
) -> None:
    search_filter = _whitelist({0, 3, 17, 40})
    assert index._dense.excluded_documents(search_filter) == {"d0", "d3", "d17", "d40"}
    expected = index._sparse.search(query, search_filter, limit)  # the whitelist's query
    assert index.search_sparse(query, search_filter, limit) == expected
    weighted = [(word, 1.5) for word in query.split()]
    assert index.search_sparse_weighted(weighted, search_filter, limit) == \
        index._sparse.search_weighted(weighted, search_filter, limit)


@pytest.mark.parametrize("limit", [1, 5, 30, 200])
@pytest.mark.parametrize("query", ["alpha", "delta w3", "gamma beta w1"])
def test_a_half_whitelist_read_off_an_unrestricted_page_finds_what_it_finds(
    index: EmbeddedIndex, query: str, limit: int,
) -> None:
    """Half the kb's documents: no shorter complement, so BM25 runs unrestricted on a longer
    page and keeps the whitelisted hits (or, when the page cannot tell, the whitelist)."""
    search_filter = _whitelist(set(range(1, DOCUMENTS, 2)))
    assert index._dense.whitelist_plan(search_filter) == (None, 0.5)
    expected = index._sparse.search(query, search_filter, limit)
    assert index.search_sparse(query, search_filter, limit) == expected


def test_a_narrow_whitelist_is_not_turned_into_a_complement(index: EmbeddedIndex) -> None:
    assert index._dense.excluded_documents(_whitelist(set(range(10, DOCUMENTS)))) is None
    assert index._dense.excluded_documents(_whitelist(set(range(40, DOCUMENTS)))) is None


def test_a_chunk_only_bm25_holds_is_not_let_through_by_the_complement(
    tmp_path: Path,
) -> None:
    """A crash between the two stores' writes can leave a chunk in BM25 only: its document
    is in no complement, so the hits are re-checked and the whitelist searched again."""
    index = EmbeddedIndex(tmp_path, DIM)
    records = [IndexRecord(chunk_id=f"c{i:03d}", document_id=f"d{i}", kb_id="kb",
                           text=f"alpha w{i}") for i in range(DOCUMENTS)]
    index.upsert(records, np.ones((DOCUMENTS, DIM), dtype=np.float32))
    index._sparse.upsert([IndexRecord(chunk_id="orphan", document_id="lost", kb_id="kb",
                                      text="alpha alpha alpha")])
    search_filter = _whitelist({5})
    excluded = index._dense.excluded_documents(search_filter)
    assert excluded == {"d5"}  # the complement lets the orphan through: re-checked below
    assert "orphan" in {h.chunk_id for h in index._sparse.search("alpha", search_filter, 3,
                                                                 excluded)}
    hits = index.search_sparse("alpha", search_filter, 3)
    assert "orphan" not in {hit.chunk_id for hit in hits}
    assert hits == index._sparse.search("alpha", search_filter, 3)
    index.close()


def _hit(doc: str, score: float) -> ChannelHit:
    return ChannelHit(chunk_id=f"{doc}-c", document_id=doc, score=score)


@pytest.mark.parametrize(("found", "searches"), [
    (["a", "b"], 1),            # every hit whitelisted
    (["a", "x"], 1),            # a short page: every match of the wider filter seen
    (["a", "x", "b"], 2),       # a full page lost a hit: the whitelist searched again
])
def test_the_whitelist_is_searched_again_only_when_a_full_page_lost_a_hit(
    found: list[str], searches: int,
) -> None:
    calls: list[frozenset[str] | None] = []

    def search(excluded: frozenset[str] | None, limit: int) -> list[ChannelHit]:
        calls.append(excluded)
        return [_hit(d, 1.0) for d in found if excluded is not None or d != "x"]

    allowed = SearchFilter(kb_id="kb", document_ids=frozenset({"a", "b"}))
    # share 0.3: the whitelist names documents the kb does not hold, so its complement in
    # the kb is the shorter list while it keeps too little for an unrestricted page
    hits = search_by_complement(search, allowed, (frozenset({"c"}), 0.3), 3)
    assert [hit.document_id for hit in hits] == [d for d in found if d != "x"]
    assert calls == [frozenset({"c"}), None][:searches]


@pytest.mark.parametrize(("page", "searches"), [
    ([("a", 5.0), ("b", 4.0), ("x", 3.0)], [frozenset()]),  # the page tells the top 2
    # four hits, one whitelisted: the page cannot tell, the complement (x) can
    ([("x", 5.0), ("x", 4.0), ("a", 3.0), ("x", 2.0), ("x", 1.0)],
     [frozenset(), frozenset({"x"})]),
])
def test_a_broad_whitelist_reads_an_unrestricted_page_before_its_complement(
    page: list[tuple[str, float]], searches: list[frozenset[str]],
) -> None:
    """Keeping 90 % of the kb, a page 1.67x longer costs less than excluding the other
    10 % by key (docs/benchmarks.md, 2026-12-07): the complement only when the page cannot
    tell the top exactly."""
    calls: list[frozenset[str] | None] = []

    def search(excluded: frozenset[str] | None, limit: int) -> list[ChannelHit]:
        calls.append(excluded)
        kept = [(d, s) for d, s in page if (d in "ab" if excluded is None else d not in excluded)]
        return [_hit(doc, score) for doc, score in kept[:limit]]

    allowed = SearchFilter(kb_id="kb", document_ids=frozenset({"a", "b"}))
    hits = search_by_complement(search, allowed, (frozenset({"x"}), 0.9), 2)
    assert calls == searches
    assert hits == [_hit(d, s) for d, s in page if d != "x"][:2]


@pytest.mark.parametrize(("scores", "searches"), [
    ([("a", 5.0), ("x", 4.0), ("b", 3.0), ("x", 2.0)], 1),  # 2 kept above the page's floor
    ([("a", 5.0), ("x", 4.0), ("b", 2.0), ("x", 2.0)], 2),  # the 2nd ties the page's floor
    ([("a", 5.0), ("b", 3.0), ("a", 3.0), ("x", 1.0)], 2),  # a tie at the cut
    ([("a", 5.0), ("x", 4.0), ("x", 3.0), ("x", 2.0)], 2),  # too few whitelisted on the page
    ([("a", 5.0), ("x", 4.0)], 1),                          # a short page: all matches seen
])
def test_an_unrestricted_page_is_used_only_when_it_tells_the_top_exactly(
    scores: list[tuple[str, float]], searches: int,
) -> None:
    calls: list[frozenset[str] | None] = []

    def search(excluded: frozenset[str] | None, limit: int) -> list[ChannelHit]:
        calls.append(excluded)
        page = scores if excluded is not None else [s for s in scores if s[0] != "x"]
        return [_hit(doc, score) for doc, score in page[:limit]]

    allowed = SearchFilter(kb_id="kb", document_ids=frozenset({"a", "b"}))
    # share 0.75: a page of ceil(2 x 1.5 / 0.75) = 4 hits
    hits = search_by_complement(search, allowed, (None, 0.75), 2)
    assert calls == [frozenset(), None][:searches]
    assert hits == [_hit(d, s) for d, s in scores if d != "x"][:2]


def _plan_by_names(index: EmbeddedIndex, search_filter: SearchFilter
                   ) -> tuple[frozenset[str] | None, float]:
    """whitelist_plan as the kb's live documents named one by one would make it."""
    snap = index._dense._snapshot
    held = frozenset(snap.row(r)[1] for r in range(snap.size)
                     if snap.alive[r] and snap.row(r)[2] == search_filter.kb_id)
    allowed = search_filter.document_ids or frozenset()
    left_out = held - allowed
    share = (len(held) - len(left_out)) / len(held) if held else 0.0
    return (left_out if len(left_out) < len(allowed) else None, share)


@pytest.mark.parametrize("left_out", [set(), {3}, set(range(0, DOCUMENTS, 3)),
                                      set(range(70, DOCUMENTS))])
def test_the_whitelist_plan_counted_in_codes_is_the_plan_by_names(
    tmp_path: Path, left_out: set[int]
) -> None:
    records = [IndexRecord(chunk_id=f"c{i:03d}", document_id=f"d{i // 2}",
                           kb_id="kb" if i % 10 else "other", text="alpha")
               for i in range(DOCUMENTS * 2)]
    vectors = np.random.default_rng(5).standard_normal((len(records), DIM)).astype(np.float32)
    built = EmbeddedIndex(tmp_path, DIM)
    built.upsert(records, vectors)
    for gone in ("d7", "d8", "d100"):  # deleted documents are not held
        built.delete_document(gone)
    search_filter = SearchFilter(kb_id="kb", document_ids=frozenset(
        [f"d{d}" for d in range(DOCUMENTS) if d not in left_out] + ["unknown", "d8"]))
    plan = built._dense.whitelist_plan(search_filter)
    assert plan == _plan_by_names(built, search_filter)
    assert plan[1] > 0  # planned, not below the whitelist length that plans
    built.close()


def test_a_plan_after_a_write_sees_the_write_and_another_whitelist_its_own_documents(
    tmp_path: Path,
) -> None:
    records = [IndexRecord(chunk_id=f"c{i:03d}", document_id=f"d{i // 2}", kb_id="kb",
                           text="alpha") for i in range(DOCUMENTS * 2)]
    vectors = np.random.default_rng(6).standard_normal((len(records), DIM)).astype(np.float32)
    built = EmbeddedIndex(tmp_path, DIM)
    built.upsert(records, vectors)
    first, second = _whitelist(set(range(100, DOCUMENTS))), _whitelist({1, 2, 3})
    for search_filter in (first, second):  # the kb's documents counted once, read twice
        assert built._dense.whitelist_plan(search_filter) == _plan_by_names(built, search_filter)
    built.delete_document("d2")
    built.upsert([IndexRecord(chunk_id="new", document_id="d-new", kb_id="kb", text="beta")],
                 vectors[:1])
    for search_filter in (first, second):
        assert built._dense.whitelist_plan(search_filter) == _plan_by_names(built, search_filter)
    assert "d-new" in (built._dense.whitelist_plan(second)[0] or ())
    built.close()
