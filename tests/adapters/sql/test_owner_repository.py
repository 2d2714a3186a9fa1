"""SqlRepository: the owner of an unfinished document, and taking one over exactly once."""

from __future__ import annotations

import threading

import pytest
from sql_factories import make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import DocumentStatus, Revision


def test_an_added_document_names_its_owner_until_another_takes_it_over(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", status=DocumentStatus.PENDING), owner="host/b/1/2")
    assert repo.document_owner("d1") == "host/b/1/2"
    assert not repo.take_over("d1", "someone/else/3/4", "me/b/5/6")
    assert repo.take_over("d1", "host/b/1/2", "me/b/5/6")
    assert repo.document_owner("d1") == "me/b/5/6"
    assert repo.unfinished_documents("kb1")[0][1] == "me/b/5/6"


def test_a_finished_document_cannot_be_taken_over(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", status=DocumentStatus.READY), owner=None)
    assert not repo.take_over("d1", None, "me/b/5/6")
    assert repo.unfinished_documents() == []


def test_of_many_processes_taking_over_one_document_exactly_one_wins(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", status=DocumentStatus.PARSING), owner="dead/b/1/2")
    barrier = threading.Barrier(8)
    won: list[bool] = []

    def take(i: int) -> None:
        barrier.wait()
        won.append(repo.take_over("d1", "dead/b/1/2", f"p{i}/b/{i}/1"))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]


def test_documents_are_found_by_key_and_a_key_is_unique_in_its_kb(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    keyed = make_document("d1", status=DocumentStatus.READY).model_copy(
        update={"key": "hr/parking.md", "source_mtime": 12.5})
    repo.add_document(keyed)
    found = repo.find_document_by_key("kb1", "hr/parking.md")
    assert found is not None and (found.id, found.source_mtime) == ("d1", 12.5)
    assert set(repo.documents_by_key("kb1")) == {"hr/parking.md"}
    with pytest.raises(InvalidInput):
        repo.add_document(make_document("d2").model_copy(update={"key": "hr/parking.md"}))
    repo.add_document(make_document("d3"))  # no key: never collides
    repo.set_source_mtime("d1", 99.0)
    assert repo.documents_by_key("kb1")["hr/parking.md"].source_mtime == 99.0


def test_a_replacement_is_claimed_once_and_finishing_it_records_the_revision(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", sha256="old", status=DocumentStatus.READY))
    assert repo.claim_replace("d1", None, "me/b/1/1")
    assert not repo.claim_replace("d1", None, "other/b/2/2")
    document = repo.get_document("d1")
    assert document is not None and document.replacing
    assert repo.replacements("kb1") == [("d1", "me/b/1/1")]
    assert repo.claim_replace("d1", "me/b/1/1", "heir/b/3/3")  # the dead claim taken over
    repo.finish_replace("d1", Revision(sha256="new", size=7, filename="b.md",
                                       media_type="text/markdown", source_mtime=1.0))
    document = repo.get_document("d1")
    assert document is not None and not document.replacing
    assert (document.sha256, document.size, document.filename) == ("new", 7, "b.md")
    repo.claim_replace("d1", None, "me/b/1/1")
    repo.finish_replace("d1", None, "replacement failed, the previous content is kept: x")
    kept = repo.get_document("d1")
    assert kept is not None and kept.sha256 == "new" and "previous content" in (kept.error or "")


def test_an_unfinished_document_cannot_be_claimed_for_a_replacement(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", status=DocumentStatus.INDEXING))
    assert not repo.claim_replace("d1", None, "me/b/1/1")
