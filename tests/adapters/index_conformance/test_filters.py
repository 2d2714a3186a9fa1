"""Every SearchFilter field, whitelists, KB isolation and hostile values, on both backends."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_corpus import HOSTILE, filter_id, grid, hostile
from metadata_cases import CHUNKS, DOCUMENTS, KB, filters, grid_documents, metadata

from ragsift.adapters.sql.repository import SqlRepository
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.metadata import decode_metadata
from ragsift.domain.metadata_filter import evaluate, parse_filter
from ragsift.domain.requests import SearchRequest
from ragsift.ports import SearchIndex
from ragsift.retrieval.document_stages import ScopeStage

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


@pytest.fixture(scope="module")
def grid_facts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SqlRepository,
                                                                          ScopeStage]]:
    """The grid KB's documents in SQLite, and one scope stage for every example: its cache of
    the documents' metadata must see each example's changes."""
    repository = grid_documents(tmp_path_factory.mktemp("facts"))
    yield repository, ScopeStage(repository, None)
    repository.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(stored=st.lists(metadata, min_size=len(DOCUMENTS), max_size=len(DOCUMENTS)),
       raw=filters)
def test_a_metadata_filter_keeps_exactly_the_chunks_the_reference_evaluator_passes(
    shared_index: SearchIndex, grid_facts: tuple[SqlRepository, ScopeStage],
    stored: list[dict[str, Any]], raw: dict[str, Any],
) -> None:
    """Generated metadata of the grid KB's documents (stored as a user sets it) and generated
    filters: the scope stage evaluates the filter on the stored documents and pushes the
    result down; both channels return the chunks of exactly the documents the reference
    evaluator (domain/metadata_filter.py) passes."""
    repository, stage = grid_facts
    for doc_id, values in zip(DOCUMENTS, stored, strict=True):
        repository.set_metadata(doc_id, values)
    node = parse_filter(raw)
    passing = {doc_id for doc_id, values in zip(DOCUMENTS, stored, strict=True)
               if evaluate(node, {**decode_metadata(values), "document_id": doc_id})}
    wanted = {chunk for chunk, doc_id in CHUNKS.items() if doc_id in passing}

    request = SearchRequest(query="alpha", kb_id=KB, filter=raw)
    scope = asyncio.run(stage.run(request, None, None, node))
    assert scope.decision.trace.filter_documents_matched == len(passing)
    if scope.search_filter is None:  # nothing passes: the search is not run at all
        assert not wanted and scope.decision.trace.empty_reason
        return
    assert both_channels(shared_index, scope.search_filter) == (wanted, wanted)
