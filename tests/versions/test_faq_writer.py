"""FAQ entries carry KB versions like chunks: written into the draft, searched at the version a
request reads, kept for the older retained versions after an update or delete, collected after.

The real version stack (SQLite, tantivy, the dense matrix) with a word-hash embedder.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragsift.domain.errors import NotFound
from ragsift.domain.faq import FaqChanges, FaqConflict, FaqEntry
from ragsift.domain.models import DocumentScope
from ragsift.domain.versions import DraftMoved
from ragsift.ingestion.faq_import import FaqRow
from versions.version_stack import Stack


def answers(stack: Stack, kb: Any, query: str, **fields: Any) -> list[str]:
    return [hit.answer for hit in stack.faq_hits(kb, query, **fields)]


def ids(stack: Stack, kb: Any, query: str, **fields: Any) -> list[str]:
    return [hit.faq_id for hit in stack.faq_hits(kb, query, **fields)]


def stored(stack: Stack, faq_id: str) -> FaqEntry:
    (entry,) = stack.repository.get_faq_entries([faq_id])
    return entry


def test_an_imported_entry_is_written_into_a_version_and_found_at_once(stack: Stack) -> None:
    kb = stack.kb()
    faq_id = stack.add_faq(kb, "hotel limit per night", "500 per night")
    assert ids(stack, kb, "hotel limit") == [faq_id]
    assert stack.versions.state(kb).active_seq == 1
    entry = stored(stack, faq_id)
    assert (entry.valid_from_seq, entry.valid_to_seq) == (1, 0)
    assert stack.versions.versions(kb)[-1].note == "FAQ: 1 entry added"


def test_staged_entries_wait_in_the_draft_until_their_version_is_activated(
    stack: Stack,
) -> None:
    kb = stack.kb(mode="staged", retention=3)
    faq_id = stack.add_faq(kb, "hotel limit per night", "500 per night")
    assert ids(stack, kb, "hotel limit") == []
    sealed = stack.versions.seal(kb)
    assert sealed is not None and sealed.seq == 1
    assert ids(stack, kb, "hotel limit", kb_version=1) == [faq_id]
    assert ids(stack, kb, "hotel limit") == []  # version 0 is still the active one
    stack.versions.activate(kb, 1)
    assert ids(stack, kb, "hotel limit") == [faq_id]


def test_an_update_gets_a_new_id_and_the_older_version_keeps_the_old_entry(
    stack: Stack,
) -> None:
    kb = stack.kb(retention=3)
    old = stack.add_faq(kb, "hotel limit per night", "400 per night")
    new = stack.faq.update(kb, old, FaqChanges(answer="500 per night"))
    assert new.id != old and (new.valid_from_seq, new.valid_to_seq) == (2, 0)
    assert answers(stack, kb, "hotel limit") == ["500 per night"]
    assert answers(stack, kb, "hotel limit", kb_version=1) == ["400 per night"]
    retired = stack.faq.get(kb, old)
    assert (retired.valid_to_seq, retired.live) == (2, False)
    assert [e.id for e in stack.faq.page(kb).entries] == [new.id]
    assert new.created_at == retired.created_at  # the listing keeps its place
    with pytest.raises(NotFound, match="deleted or replaced"):
        stack.faq.update(kb, old, FaqChanges(answer="600 per night"))
    stack.versions.configure(kb, retention=1)  # version 1 is collected, and the old entry
    assert stack.repository.get_faq_entries([old]) == []
    assert stack.faq_index.count() == 1


def test_a_deleted_entry_leaves_the_draft_and_an_import_again_is_a_new_entry(
    stack: Stack,
) -> None:
    kb = stack.kb(retention=3)
    stack.add_faq(kb, "hotel limit per night", "500 per night")
    gone = stack.add_faq(kb, "meal budget per day", "60 per day")  # version 2
    stack.faq.delete(kb, gone)  # version 3
    assert gone not in ids(stack, kb, "meal budget")
    assert gone in ids(stack, kb, "meal budget", kb_version=2)
    with pytest.raises(NotFound):
        stack.faq.delete(kb, gone)
    again = stack.add_faq(kb, "meal budget per day", "60 per day")  # version 4
    assert again != gone
    assert ids(stack, kb, "meal budget")[:1] == [again]
    assert gone in ids(stack, kb, "meal budget", kb_version=2)
    assert {e.id for e in stack.repository.list_faq_entries(kb.id)} >= {gone, again}


def test_with_the_default_retention_a_deleted_entry_leaves_facts_and_index_at_once(
    stack: Stack,
) -> None:
    kb = stack.kb()
    faq_id = stack.add_faq(kb, "hotel limit per night", "500 per night")
    stack.faq.delete(kb, faq_id)
    assert stack.repository.get_faq_entries([faq_id]) == []
    assert stack.faq_index.count() == 0
    assert stack.faq_hits(kb, "hotel limit") == []


def test_clear_retires_every_live_entry(stack: Stack) -> None:
    kb = stack.kb(retention=2)
    first = stack.add_faq(kb, "hotel limit per night", "500 per night")
    second = stack.add_faq(kb, "meal budget per day", "60 per day")
    assert stack.faq.clear(kb) == 2
    assert stack.faq.page(kb).total == 0 and stack.repository.count_faq_entries(kb.id) == 0
    assert set(ids(stack, kb, "hotel meal", kb_version=2)) == {first, second}
    assert stack.faq.clear(kb) == 0


def test_an_update_that_changes_nothing_keeps_the_entry_and_makes_no_version(
    stack: Stack,
) -> None:
    kb = stack.kb()
    faq_id = stack.add_faq(kb, "hotel limit per night", "500 per night")
    same = stack.faq.update(kb, faq_id, FaqChanges(answer="  500 per night "))
    assert same.id == faq_id
    assert stack.versions.state(kb).active_seq == 1


def test_an_update_identical_to_another_live_entry_is_a_conflict(stack: Stack) -> None:
    kb = stack.kb()
    first = stack.add_faq(kb, "hotel limit per night", "see the travel policy")
    second = stack.add_faq(kb, "meal budget per day", "see the travel policy")
    with pytest.raises(FaqConflict, match=first):
        stack.faq.update(kb, second, FaqChanges(question="hotel limit per night"))
    assert {e.id for e in stack.faq.page(kb).entries} == {first, second}
    # the same pair in another scope is another entry
    moved = stack.faq.update(kb, second, FaqChanges(question="hotel limit per night",
                                                    tenant_id="t2"))
    assert (moved.question, moved.tenant_id) == ("hotel limit per night", "t2")


def test_a_draft_only_entry_is_replaced_outright_in_staged_mode(stack: Stack) -> None:
    kb = stack.kb(mode="staged")
    faq_id = stack.add_faq(kb, "hotel limit per night", "500", DocumentScope(source="old"))
    updated = stack.faq.update(kb, faq_id, FaqChanges(source="new"))
    # same question, answer and scope in the same draft: the same id, and no retired row
    assert updated.id == faq_id
    assert stack.repository.list_faq_entries(kb.id) == [updated]
    sealed = stack.versions.seal(kb)
    assert sealed is not None
    stack.versions.activate(kb, sealed.seq)
    (hit,) = stack.faq_hits(kb, "hotel limit")
    assert (hit.faq_id, hit.source) == (faq_id, "new")
    assert stack.faq_index.count() == 1


def test_documents_and_faq_are_searched_at_the_same_version(stack: Stack) -> None:
    kb = stack.kb(mode="staged", retention=3)
    stack.add(kb, "hotel.txt", "hotel limit per night is 500")
    first = stack.add_faq(kb, "hotel limit per night", "500 per night")
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    second = stack.add_faq(kb, "hotel booking desk", "the travel desk books hotels")
    stack.versions.seal(kb)  # version 2, not active
    active = stack.search(kb, "hotel", run_faq=True)
    assert active.trace.kb_version == 1 and active.hits
    assert [h.faq_id for h in active.faq_hits] == [first]
    pinned = stack.search(kb, "hotel", run_faq=True, kb_version=2)
    assert pinned.trace.kb_version == 2
    assert {h.faq_id for h in pinned.faq_hits} == {first, second}


def test_a_failed_commit_leaves_no_index_rows_behind(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = stack.kb()
    stack.add_faq(kb, "hotel limit per night", "500 per night")

    def down(*_: object, **__: object) -> None:
        raise RuntimeError("database gone")

    monkeypatch.setattr(stack.repository, "commit_faq", down)
    with pytest.raises(RuntimeError, match="database gone"):
        stack.faq.import_rows(kb, [FaqRow("meal budget per day?", "60", None, 1)])
    assert stack.faq_index.count() == 1


def test_a_draft_sealed_meanwhile_is_planned_again_in_the_next_draft(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = stack.kb(mode="staged", retention=3)
    stack.add(kb, "hotel.txt", "hotel limit per night is 500")  # a change to seal
    commit = stack.repository.commit_faq
    calls: list[int] = []

    def seal_first(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            stack.versions.seal(kb)  # another writer seals draft 1 in between
        return commit(*args, **kwargs)

    monkeypatch.setattr(stack.repository, "commit_faq", seal_first)
    faq_id = stack.add_faq(kb, "meal budget per day", "60 per day")
    assert len(calls) == 2
    assert stored(stack, faq_id).valid_from_seq == 2
    assert stack.faq_index.count() == 1  # the first attempt's row was removed


def test_a_draft_that_keeps_moving_gives_up(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = stack.kb()

    def moved(*_: object, **__: object) -> None:
        raise DraftMoved("moved")

    monkeypatch.setattr(stack.repository, "commit_faq", moved)
    with pytest.raises(DraftMoved, match="kept moving"):
        stack.faq.import_rows(kb, [FaqRow("meal budget per day?", "60", None, 1)])
    assert stack.faq_index.count() == 0


def test_changing_only_the_source_of_a_published_entry_still_writes_a_new_one(
    stack: Stack,
) -> None:
    kb = stack.kb(retention=2)
    old = stack.add_faq(kb, "hotel limit per night", "500", DocumentScope(source="old"))
    new = stack.faq.update(kb, old, FaqChanges(source="new"))
    assert new.id != old and new.sha256 == stored(stack, old).sha256
    assert [h.source for h in stack.faq_hits(kb, "hotel limit")] == ["new"]
    assert [h.source for h in stack.faq_hits(kb, "hotel limit", kb_version=1)] == ["old"]
