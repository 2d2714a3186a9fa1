"""SqlRepository's labelled sets (migration 0019) on SQLite and PostgreSQL: saved once per
name, bounded per KB, read back with their labels, scoped to their KB, gone with the KB."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sql_factories import make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import NotFound
from ragsift.domain.labelled_sets import LabelledSet, LabelledSetExists, TooManyLabelledSets

LABELS = '{"query": "年假", "relevant": ["handbook.md"]}\n'


def _set(set_id: str, name: str, kb_id: str = "kb1") -> LabelledSet:
    return LabelledSet(id=set_id, kb_id=kb_id, name=name, labels=LABELS, queries=1,
                       size_bytes=len(LABELS.encode()), key_name="ops",
                       created_at=datetime(2026, 12, 6, 12, 0, tzinfo=UTC))


def test_a_saved_set_is_listed_without_its_labels_and_read_back_with_them(
        repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.save_labelled_set(_set("s1", "leave"), max_sets=5)
    listed = repo.list_labelled_sets("kb1")
    assert [(s.id, s.name, s.labels, s.queries) for s in listed] == [("s1", "leave", "", 1)]
    got = repo.get_labelled_set("kb1", "s1")
    assert got.labels == LABELS and got.key_name == "ops"
    assert got.created_at == datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def test_a_name_is_used_once_per_kb_and_the_count_is_bounded(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.create_kb(make_kb("kb2"))
    repo.save_labelled_set(_set("s1", "leave"), max_sets=2)
    with pytest.raises(LabelledSetExists):
        repo.save_labelled_set(_set("s2", "leave"), max_sets=2)
    repo.save_labelled_set(_set("s3", "leave", kb_id="kb2"), max_sets=2)  # another KB's name
    repo.save_labelled_set(_set("s4", "travel"), max_sets=2)
    with pytest.raises(TooManyLabelledSets):
        repo.save_labelled_set(_set("s5", "third"), max_sets=2)


def test_another_kbs_set_is_not_found_and_a_deleted_kb_takes_its_sets(
        repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.create_kb(make_kb("kb2"))
    repo.save_labelled_set(_set("s1", "leave"), max_sets=5)
    with pytest.raises(NotFound):
        repo.get_labelled_set("kb2", "s1")
    with pytest.raises(NotFound):
        repo.delete_labelled_set("kb2", "s1")
    repo.delete_kb("kb1")
    assert repo.list_labelled_sets("kb1") == []
    with pytest.raises(NotFound):
        repo.save_labelled_set(_set("s2", "leave"), max_sets=5)
