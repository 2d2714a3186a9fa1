"""SqlRepository: the owner of an unfinished document, and taking one over exactly once."""

from __future__ import annotations

import threading

from sql_factories import make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.models import DocumentStatus


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
