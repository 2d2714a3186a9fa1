"""SqlRepository.set_status_if: a document's status check and change as one statement."""

from __future__ import annotations

import threading

from sql_factories import make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.models import DocumentStatus

REINDEXABLE = (DocumentStatus.READY, DocumentStatus.FAILED)


def test_a_document_in_an_expected_status_moves_and_loses_its_error(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    repo.set_status("d1", DocumentStatus.FAILED, "pdf is encrypted")

    assert repo.set_status_if("d1", REINDEXABLE, DocumentStatus.PENDING) is True

    document = repo.get_document("d1")
    assert document is not None
    assert (document.status, document.error) == (DocumentStatus.PENDING, None)


def test_a_document_in_another_status_is_left_as_it_is(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    repo.set_status("d1", DocumentStatus.INDEXING, "kept")

    assert repo.set_status_if("d1", REINDEXABLE, DocumentStatus.PENDING) is False

    document = repo.get_document("d1")
    assert document is not None
    assert (document.status, document.error) == (DocumentStatus.INDEXING, "kept")


def test_an_unknown_document_does_not_move(repo: SqlRepository) -> None:
    assert repo.set_status_if("ghost", REINDEXABLE, DocumentStatus.PENDING) is False
    assert repo.get_document("ghost") is None


def test_of_concurrent_callers_exactly_one_moves_the_document(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", status=DocumentStatus.READY))
    callers = 8
    start = threading.Barrier(callers)
    results: list[bool] = []
    errors: list[BaseException] = []

    def claim() -> None:
        try:
            start.wait(timeout=30)
            results.append(repo.set_status_if("d1", REINDEXABLE, DocumentStatus.PENDING))
        except BaseException as exc:  # collected so the main thread can fail the test
            errors.append(exc)

    threads = [threading.Thread(target=claim) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(results) == [False] * (callers - 1) + [True]
