"""SqlRepository.update_metadata: a read-modify-write of a document's metadata that concurrent
changes cannot interleave (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sql_factories import make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import InvalidInput, NotFound


def _merge(key: str, value: int,
           started: threading.Event | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(current: dict[str, Any]) -> dict[str, Any]:
        if started is not None:
            started.set()
            time.sleep(0.3)  # the other change arrives while this one has read
        return {**current, key: value}
    return change


def test_two_concurrent_changes_of_different_keys_keep_both(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document())
    repo.set_metadata("doc1", {"kept": True})
    started = threading.Event()
    errors: list[BaseException] = []

    def run(change: Any) -> None:
        try:
            repo.update_metadata("doc1", change)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    first = threading.Thread(target=run, args=(_merge("dept", 1, started),))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=run, args=(_merge("year", 2024),))
    second.start()
    first.join(30)
    second.join(30)

    assert errors == []
    document = repo.get_document("doc1")
    assert document is not None
    assert document.metadata == {"kept": True, "dept": 1, "year": 2024}


def test_a_change_that_raises_writes_nothing_and_a_missing_document_is_not_found(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document())
    repo.set_metadata("doc1", {"a": 1})

    def refuse(current: dict[str, Any]) -> dict[str, Any]:
        raise InvalidInput("no")

    with pytest.raises(InvalidInput):
        repo.update_metadata("doc1", refuse)
    with pytest.raises(NotFound):
        repo.update_metadata("nope", lambda current: current)
    document = repo.get_document("doc1")
    assert document is not None and document.metadata == {"a": 1}


@pytest.mark.parametrize(("first", "then"), [
    (True, 1), (1, True), (False, 0.0), (0, False), (1, 1.0), ([1], [True])])
def test_a_value_of_another_type_that_python_calls_equal_is_written(
    repo: SqlRepository, first: Any, then: Any,
) -> None:
    """True == 1 and 0.0 == False in Python, but not in a filter (`$eq: true` passes true
    only): setting the other one changes the stored value and the document's updated_at."""
    repo.create_kb(make_kb())
    repo.add_document(make_document())
    repo.set_metadata("doc1", {"final": first})
    stamp = repo.filter_stamp("kb1")
    repo.set_metadata("doc1", {"final": then})
    document = repo.get_document("doc1")
    assert document is not None
    assert document.metadata == {"final": then}
    assert type(document.metadata["final"]) is type(then)
    if isinstance(then, list):
        assert type(document.metadata["final"][0]) is type(then[0])
    assert repo.filter_stamp("kb1") != stamp


def test_setting_the_same_metadata_again_is_no_change(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document())
    repo.set_metadata("doc1", {"b": 1, "a": [True, "x"]})
    stamp = repo.filter_stamp("kb1")
    repo.set_metadata("doc1", {"a": [True, "x"], "b": 1})
    assert repo.filter_stamp("kb1") == stamp


def test_an_update_says_whether_it_changed_what_it_replaced(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document())
    first = repo.update_metadata("doc1", lambda current: {"a": 1})
    assert first.changed and first.metadata == {"a": 1}
    again = repo.update_metadata("doc1", lambda current: {"a": 1})
    assert not again.changed and again.metadata == {"a": 1}
    retyped = repo.update_metadata("doc1", lambda current: {"a": True})
    assert retyped.changed and retyped.metadata == {"a": True}
