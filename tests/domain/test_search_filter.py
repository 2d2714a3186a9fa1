"""SearchFilter takes a checked frozenset as it is: a metadata filter's whitelist of
thousands of document ids is neither copied nor re-checked element by element each search,
and the indexes' caches keyed on the filter then compare it by reference."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragsift.domain.filters import SearchFilter


def test_a_frozenset_of_strings_is_kept_as_the_same_object() -> None:
    ids = frozenset(f"d{i}" for i in range(5_000))
    first = SearchFilter(kb_id="kb", document_ids=ids, tenant_ids=frozenset({"t"}))
    assert first.document_ids is ids
    assert SearchFilter(kb_id="kb", document_ids=ids).document_ids is ids


@pytest.mark.parametrize("bad", [frozenset({"d1", 2}), frozenset({None})])
def test_a_frozenset_holding_other_values_is_still_refused(bad: frozenset[object]) -> None:
    with pytest.raises(ValidationError):
        SearchFilter(kb_id="kb", document_ids=bad)
    ids = frozenset({"d1"})
    SearchFilter(kb_id="kb", document_ids=ids)  # checked once ...
    with pytest.raises(ValidationError):  # ... and a different object is checked again
        SearchFilter(kb_id="kb", sources=bad)


def test_other_collections_are_validated_into_a_frozenset() -> None:
    assert SearchFilter(kb_id="kb", document_ids=["a", "b", "a"]).document_ids == {"a", "b"}
    assert SearchFilter(kb_id="kb", sources=set()).sources == frozenset()
