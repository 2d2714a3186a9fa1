"""SqlRepository's batched reads and moves for ingestion: many documents, one statement each."""

from __future__ import annotations

import pytest
from sql_factories import make_chunks, make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import DocumentStatus


def _stored(repo: SqlRepository, *ids: str) -> None:
    repo.create_kb(make_kb())
    for document_id in ids:
        repo.add_document(make_document(document_id))


def test_claimed_documents_come_back_as_they_were_and_are_moved_and_owned(
    repo: SqlRepository,
) -> None:
    _stored(repo, "d1", "d2")
    repo.set_status("d2", DocumentStatus.FAILED, "an old error")

    before = repo.claim_documents(["d1", "d2", "gone"], "me/b/1/2", DocumentStatus.PARSING)

    assert {i: d.status for i, d in before.items()} == {
        "d1": DocumentStatus.PENDING, "d2": DocumentStatus.FAILED}
    for document_id in ("d1", "d2"):
        now = repo.get_document(document_id)
        assert now is not None
        assert (now.status, now.error) == (DocumentStatus.PARSING, None)
        assert repo.document_owner(document_id) == "me/b/1/2"


def test_set_statuses_moves_every_document_named_and_no_other(repo: SqlRepository) -> None:
    _stored(repo, "d1", "d2", "d3")

    repo.set_statuses(["d1", "d3"], DocumentStatus.INDEXING)

    statuses = {d.id: d.status for d in repo.list_documents("kb1")}
    assert statuses == {"d1": DocumentStatus.INDEXING, "d2": DocumentStatus.PENDING,
                        "d3": DocumentStatus.INDEXING}


def test_chunks_of_several_documents_match_list_chunks_of_each(repo: SqlRepository) -> None:
    _stored(repo, "d1", "d2", "d3")
    repo.replace_chunks("d1", make_chunks("d1", children=3))
    repo.replace_chunks("d2", make_chunks("d2", children=1))

    found = repo.list_chunks_of(["d2", "d1", "d3"])

    assert found == {"d1": repo.list_chunks("d1"), "d2": repo.list_chunks("d2"), "d3": []}
    assert [len(found[i]) for i in ("d1", "d2")] == [4, 2]


def test_one_query_finds_the_document_under_a_key_and_the_one_with_the_bytes(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("keyed").model_copy(update={"key": "a/b.md"}))
    repo.add_document(make_document("hashed", sha256="cafe"))

    keyed, hashed = repo.find_document_by_key_or_sha256("kb1", "a/b.md", "cafe")
    assert (keyed and keyed.id, [d.id for d in hashed]) == ("keyed", ["hashed"])
    assert repo.find_document_by_key_or_sha256("kb1", "other", "beef") == (None, [])
    taken = repo.documents_by_keys_or_sha256("kb1", ["a/b.md", "free"], ["cafe", "beef"])
    assert taken == ({"a/b.md"}, {"cafe"})


def test_documents_added_together_are_all_stored_with_their_owner(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())

    added = repo.add_documents([make_document("d1"), make_document("d2")], owner="me/b/1/2")

    assert [d.id for d in added] == ["d1", "d2"]
    assert all(d.created_at is not None for d in added)
    assert sorted(repo.get_documents(["d1", "d2", "d3"])) == ["d1", "d2"]
    assert repo.document_owner("d2") == "me/b/1/2"


def test_a_clash_in_documents_added_together_stores_none_of_them(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("old").model_copy(update={"key": "a.md"}))
    clashing = make_document("new2").model_copy(update={"key": "a.md"})  # the stored key

    with pytest.raises(InvalidInput):
        repo.add_documents([make_document("new1"), clashing])

    assert [d.id for d in repo.list_documents("kb1")] == ["old"]
