"""Role restrictions and KB-version windows filter both channels alike, on both backends."""

from __future__ import annotations

import numpy as np
import pytest
from index_corpus import filter_id, scoped

from ragsift.domain.filters import SearchFilter, roles_allow, valid_at
from ragsift.ports import SearchIndex

FILTERS = [
    SearchFilter(kb_id="scoped", roles=frozenset({"hr"})),
    SearchFilter(kb_id="scoped", roles=frozenset({"admin", "finance"})),
    SearchFilter(kb_id="scoped", roles=frozenset()),
    SearchFilter(kb_id="scoped", roles=frozenset({"nobody"})),
    SearchFilter(kb_id="scoped", version_seq=0),
    SearchFilter(kb_id="scoped", version_seq=1),
    SearchFilter(kb_id="scoped", version_seq=2),
    SearchFilter(kb_id="scoped", version_seq=3),
    SearchFilter(kb_id="scoped", version_seq=9),
    SearchFilter(kb_id="scoped", version_seq=2, roles=frozenset({"hr"})),
    SearchFilter(kb_id="scoped", version_seq=3, roles=frozenset(), document_ids=frozenset({"sd1"})),
]


def expected(search_filter: SearchFilter) -> set[str]:
    records, _ = scoped()
    return {
        r.chunk_id
        for r in records
        if roles_allow(r.allowed_roles, search_filter.roles)
        and (
            search_filter.version_seq is None
            or valid_at(r.valid_from_seq, r.valid_to_seq, search_filter.version_seq)
        )
        and (search_filter.document_ids is None or r.document_id in search_filter.document_ids)
    }


@pytest.mark.parametrize("search_filter", FILTERS, ids=filter_id)
def test_both_channels_keep_exactly_the_allowed_chunks_of_the_version(
    shared_index: SearchIndex, search_filter: SearchFilter
) -> None:
    wanted = expected(search_filter)
    assert wanted
    dense = shared_index.search_dense(np.ones(8, dtype=np.float32), search_filter, 100)
    sparse = shared_index.search_sparse("alpha", search_filter, 100)
    assert {h.chunk_id for h in dense} == {h.chunk_id for h in sparse} == wanted


def test_hostile_role_names_are_literal(shared_index: SearchIndex) -> None:
    for role in ['hr"]) or array_length(allowed_roles) > 0 or ("', "hr' or '1", "\\"]:
        search_filter = SearchFilter(kb_id="scoped", roles=frozenset({role}))
        unrestricted = expected(SearchFilter(kb_id="scoped", roles=frozenset()))
        found = shared_index.search_sparse("alpha", search_filter, 100)
        assert {h.chunk_id for h in found} == unrestricted
