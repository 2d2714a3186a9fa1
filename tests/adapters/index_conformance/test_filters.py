"""Every SearchFilter field, whitelists, KB isolation and hostile values, on both backends."""

from __future__ import annotations

import numpy as np
import pytest
from index_corpus import HOSTILE, filter_id, grid, hostile

from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.ports import SearchIndex

FILTERS = [
    SearchFilter(kb_id="grid1"),
    SearchFilter(kb_id="grid2", sources=frozenset({"", "faq"})),
    SearchFilter(kb_id="grid1", sources=frozenset({"wiki"})),
    SearchFilter(kb_id="grid1", tenant_ids=frozenset({"t1"})),
    SearchFilter(kb_id="grid2", dataset_ids=frozenset({"ds2", "ds3"})),
    SearchFilter(kb_id="grid1", visibilities=frozenset({"secret"})),
    SearchFilter(kb_id="grid1", tenant_ids=frozenset({"t1"}), visibilities=frozenset({"secret"})),
    SearchFilter(kb_id="grid2", document_ids=frozenset({"gd6", "gd9", "gd0"})),
    SearchFilter(kb_id="grid1", dataset_ids=frozenset({"ds2"}), sources=frozenset({"wiki"})),
    SearchFilter(
        kb_id="grid2",
        document_ids=frozenset({"gd7", "gd8", "gd10"}),
        sources=frozenset({"wiki", "faq", ""}),
        tenant_ids=frozenset({"t1"}),
        dataset_ids=frozenset({"ds", "ds3"}),
        visibilities=frozenset({"public"}),
    ),
]


def allowed(records: list[IndexRecord], search_filter: SearchFilter) -> set[str]:
    """The chunk ids a filter admits, evaluated field by field in Python."""
    return {
        r.chunk_id
        for r in records
        if r.kb_id == search_filter.kb_id
        and (search_filter.document_ids is None or r.document_id in search_filter.document_ids)
        and all(getattr(r, name) in values for name, values in search_filter.scope_fields().items())
    }


def both_channels(index: SearchIndex, search_filter: SearchFilter) -> tuple[set[str], set[str]]:
    """Chunk ids found by dense and by BM25 ("alpha" is in every chunk of the grid)."""
    vector = np.ones(8, dtype=np.float32)
    dense = {h.chunk_id for h in index.search_dense(vector, search_filter, 100)}
    sparse = {h.chunk_id for h in index.search_sparse("alpha", search_filter, 100)}
    return dense, sparse


@pytest.mark.parametrize("search_filter", FILTERS, ids=filter_id)
def test_both_channels_return_exactly_what_the_filter_admits(
    shared_index: SearchIndex, search_filter: SearchFilter
) -> None:
    records, _ = grid()
    expected = allowed(records, search_filter)
    assert expected  # every case admits something, so an empty answer cannot pass
    dense, sparse = both_channels(shared_index, search_filter)
    assert dense == sparse == expected


def test_a_none_scope_value_never_matches_while_an_empty_string_does(
    shared_index: SearchIndex,
) -> None:
    records, _ = grid()
    empty = SearchFilter(kb_id="grid1", sources=frozenset({""}))
    dense, sparse = both_channels(shared_index, empty)
    assert dense == sparse == {r.chunk_id for r in records if r.kb_id == "grid1" and r.source == ""}
    for sentinel in ("None", "null", "NULL", "\x00"):
        absent = SearchFilter(kb_id="grid1", sources=frozenset({sentinel}))
        assert both_channels(shared_index, absent) == (set(), set())


def test_an_empty_whitelist_admits_nothing(shared_index: SearchIndex) -> None:
    nothing = SearchFilter(kb_id="grid1", document_ids=frozenset())
    assert both_channels(shared_index, nothing) == (set(), set())
    no_source = SearchFilter(kb_id="grid1", sources=frozenset())
    assert both_channels(shared_index, no_source) == (set(), set())


def test_a_whitelist_naming_documents_of_another_kb_finds_nothing(
    shared_index: SearchIndex,
) -> None:
    # gd0 belongs to grid1; asking grid2 for it must not reach into grid1.
    foreign = SearchFilter(kb_id="grid2", document_ids=frozenset({"gd0", "gd1"}))
    assert both_channels(shared_index, foreign) == (set(), set())


def test_knowledge_bases_are_isolated(shared_index: SearchIndex) -> None:
    records, _ = grid()
    for kb in ("grid1", "grid2"):
        dense, sparse = both_channels(shared_index, SearchFilter(kb_id=kb))
        assert dense == sparse == {r.chunk_id for r in records if r.kb_id == kb}
    for kb in ("grid", "grid1 ", "GRID1", "missing", "docs"):
        dense, sparse = both_channels(shared_index, SearchFilter(kb_id=kb))
        assert not (dense | sparse) & {r.chunk_id for r in records}


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_in_every_string_field_match_only_themselves(
    shared_index: SearchIndex, value: str
) -> None:
    records, _ = hostile()
    [owner] = [r.chunk_id for r in records if r.kb_id == "hostile" and r.source == value]
    for field in ("document_ids", "sources", "tenant_ids", "dataset_ids", "visibilities"):
        search_filter = SearchFilter.model_validate({"kb_id": "hostile", field: {value}})
        assert both_channels(shared_index, search_filter) == ({owner}, {owner}), field
        # ... and together with a plain value still nothing else
        widened = SearchFilter.model_validate({"kb_id": "hostile", field: {value, "zzz"}})
        assert both_channels(shared_index, widened) == ({owner}, {owner}), field
    # A kb named by the hostile value holds exactly its own chunk: nothing leaks across kbs.
    [in_kb] = [r.chunk_id for r in records if r.kb_id == value]
    assert both_channels(shared_index, SearchFilter(kb_id=value)) == ({in_kb}, {in_kb})


def test_expression_syntax_as_a_kb_id_reaches_no_other_kb(shared_index: SearchIndex) -> None:
    for kb in ['x" or kb_id != "', "x' or kb_id != '", 'grid1" or "1" == "1', "grid1\\"]:
        assert both_channels(shared_index, SearchFilter(kb_id=kb)) == (set(), set())
