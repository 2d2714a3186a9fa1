"""KB versions end to end on the real stores: publish modes, sharing by reference, pinning,
roll back, garbage collection, and data written before versions existed."""

from __future__ import annotations

import pytest

from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import CHILD_LEVEL, Chunk, Document, DocumentStatus
from versions.version_stack import Stack

LEAVE = "Employees get fifteen days of annual leave every year."
HOTEL = "The hotel limit per night is one hundred fifty dollars."
MEALS = "Meals on business trips are paid up to sixty dollars per day."


def live_chunks(stack: Stack, document_id: str) -> list[Chunk]:
    return [c for c in stack.repository.list_chunks(document_id) if c.valid_to_seq == 0]


def test_auto_mode_publishes_every_change_so_search_finds_it_at_once(stack: Stack) -> None:
    kb = stack.kb()
    leave = stack.add(kb, "leave.txt", LEAVE)
    assert stack.versions.state(kb).active_seq == 1
    assert stack.search(kb, "annual leave").hits[0].document_id == leave
    hotel = stack.add(kb, "hotel.txt", HOTEL)
    result = stack.search(kb, "hotel limit per night")
    assert result.hits[0].document_id == hotel and result.trace.kb_version == 2
    # retention 1 (the default) keeps only the active version
    assert [v.seq for v in stack.versions.versions(kb)] == [2]


def test_staged_changes_wait_in_the_draft_until_sealed_and_activated(stack: Stack) -> None:
    kb = stack.kb(mode="staged", retention=5)
    stack.add(kb, "leave.txt", LEAVE)
    assert stack.search(kb, "annual leave").hits == ()  # nothing published yet
    first = stack.versions.seal(kb, "leave")
    assert first is not None and (first.seq, first.chunks, first.added) == (1, 1, 1)
    stack.versions.activate(kb, 1)
    hotel = stack.add(kb, "hotel.txt", HOTEL)
    assert hotel not in {h.document_id for h in stack.search(kb, "hotel limit").hits}
    assert stack.versions.seal(kb) is not None
    assert stack.versions.seal(kb) is None  # an empty draft seals nothing
    pinned = stack.search(kb, "hotel limit", kb_version=2)
    assert pinned.hits[0].document_id == hotel and pinned.trace.kb_version == 2
    assert stack.search(kb, "hotel limit").trace.kb_version == 1
    outcome = stack.versions.activate(kb, 2)
    assert (outcome.from_seq, outcome.to_seq, outcome.gate) == (1, 2, None)
    assert stack.search(kb, "hotel limit").hits[0].document_id == hotel


def test_a_new_version_shares_unchanged_chunks_and_embeds_only_what_changed(
    stack: Stack,
) -> None:
    kb = stack.kb(mode="staged", retention=5)
    doc_id = stack.add(kb, "policy.txt", f"{LEAVE}\n\n{HOTEL}\n\n{MEALS}")
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    before = stack.repository.list_chunks(doc_id)
    children = [c for c in before if c.level == CHILD_LEVEL]
    assert len(children) >= 2
    document = stack.repository.get_document(doc_id)
    assert document is not None
    changed = children[-1].model_copy(update={"text": "Meals are paid up to ninety dollars."})
    stack.embedder.passages.clear()
    stack.ingestion._versions.write(  # type: ignore[union-attr]  # the writer a reindex uses
        document, [c for c in before if c.id != changed.id] + [changed], {})
    assert stack.embedder.passages == [changed.text]  # nothing else re-embedded
    sealed = stack.versions.seal(kb)
    assert sealed is not None and (sealed.added, sealed.retired) == (1, 1)
    rows = {c.id: c for c in stack.repository.list_chunks(doc_id)}
    for old in before:
        if old.id == changed.id:
            assert rows[old.id].valid_to_seq == 2
        else:  # shared: the same row, its window untouched
            assert (rows[old.id].valid_from_seq, rows[old.id].valid_to_seq) == (1, 0)
    new_rows = [c for c in rows.values() if c.valid_from_seq == 2]
    assert [c.text for c in new_rows] == [changed.text]
    assert stack.search(kb, "ninety dollars", kb_version=2).hits[0].chunk_id == new_rows[0].id
    assert changed.id in stack.chunk_ids(kb, "meals sixty dollars", kb_version=1)
    assert changed.id not in stack.chunk_ids(kb, "meals sixty dollars", kb_version=2)


def test_a_full_rebuild_with_the_same_chunking_changes_and_embeds_nothing(stack: Stack) -> None:
    kb = stack.kb(mode="staged")
    doc_id = stack.add(kb, "policy.txt", f"{LEAVE}\n\n{HOTEL}")
    stack.versions.seal(kb)
    before = stack.repository.list_chunks(doc_id)
    stack.embedder.passages.clear()
    assert stack.versions.rebuild(kb, stack.ingestion.reindex) is None
    assert stack.embedder.passages == [] and stack.repository.list_chunks(doc_id) == before


def test_rolling_back_restores_exactly_the_results_of_that_version(stack: Stack) -> None:
    kb = stack.kb(mode="staged", retention=5)
    leave = stack.add(kb, "leave.txt", LEAVE)
    stack.add(kb, "hotel.txt", HOTEL)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    queries = ["annual leave days", "hotel dollars", "dollars per day"]
    v1 = {q: [(h.chunk_id, h.fusion_score) for h in stack.search(kb, q).hits] for q in queries}
    stack.ingestion.delete_document(leave)
    stack.add(kb, "meals.txt", MEALS)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 2)
    assert {h.document_id for h in stack.search(kb, "annual leave days").hits} == {
        h.document_id for h in stack.search(kb, "annual leave days", kb_version=2).hits}
    assert leave not in {h.document_id for h in stack.search(kb, "annual leave days").hits}
    outcome = stack.versions.rollback(kb)  # to the version active before
    assert (outcome.from_seq, outcome.to_seq) == (2, 1)
    after = {q: [(h.chunk_id, h.fusion_score) for h in stack.search(kb, q).hits] for q in queries}
    assert after == v1
    actions = [(a.action, a.from_seq, a.to_seq) for a in stack.versions.activations(kb)]
    assert actions == [("rollback", 2, 1), ("activate", 1, 2), ("activate", 0, 1)]


def test_a_deleted_document_stays_in_the_active_version_until_the_next_one(
    stack: Stack,
) -> None:
    kb = stack.kb(mode="staged", retention=3)
    leave = stack.add(kb, "leave.txt", LEAVE)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    stack.ingestion.delete_document(leave)
    document = stack.repository.get_document(leave)
    assert document is not None and document.status == DocumentStatus.RETIRED
    assert document.sha256 is None  # the same file may be ingested again meanwhile
    assert stack.search(kb, "annual leave").hits[0].document_id == leave
    stack.versions.seal(kb)
    stack.versions.activate(kb, 2)
    assert stack.search(kb, "annual leave").hits == ()
    assert stack.search(kb, "annual leave", kb_version=1).hits[0].document_id == leave
    again = stack.add(kb, "leave-again.txt", LEAVE)
    assert again != leave


def test_collection_removes_chunks_no_retained_version_holds_from_facts_and_indexes(
    stack: Stack,
) -> None:
    kb = stack.kb(mode="staged", retention=2)
    leave = stack.add(kb, "leave.txt", LEAVE)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    leave_chunks = [c.id for c in stack.repository.list_chunks(leave)]
    stack.ingestion.delete_document(leave)
    stack.versions.seal(kb)  # version 2: without the leave policy
    stack.add(kb, "hotel.txt", HOTEL)
    stack.versions.seal(kb)  # version 3
    stack.versions.activate(kb, 3)  # retention 2: versions 3 and 2 stay, 1 goes
    assert [v.seq for v in stack.versions.versions(kb)] == [2, 3]
    assert stack.repository.get_document(leave) is None
    assert stack.repository.get_chunks(leave_chunks) == []
    anything = SearchFilter(kb_id=kb.id)
    vector = stack.embedder.embed_query("annual leave")
    assert leave not in {h.document_id for h in stack.index.search_dense(vector, anything, 10)}
    assert stack.index.search_sparse("annual leave", anything, 10) == []
    with pytest.raises(NotFound, match=r"version 1 .* is not retained"):
        stack.search(kb, "annual leave", kb_version=1)


def test_deleting_in_auto_mode_with_retention_one_removes_the_document_at_once(
    stack: Stack,
) -> None:
    kb = stack.kb()
    leave = stack.add(kb, "leave.txt", LEAVE)
    stack.add(kb, "hotel.txt", HOTEL)
    stack.ingestion.delete_document(leave)
    assert stack.repository.get_document(leave) is None
    assert stack.repository.list_chunks(leave) == []
    assert stack.index.count() == 1


def test_activating_the_active_or_an_unknown_version_is_refused(stack: Stack) -> None:
    kb = stack.kb()
    stack.add(kb, "leave.txt", LEAVE)
    with pytest.raises(InvalidInput, match="already active"):
        stack.versions.activate(kb, 1)
    with pytest.raises(NotFound, match=r"version 7 .* not retained"):
        stack.versions.activate(kb, 7)
    with pytest.raises(NotFound, match="not retained"):
        stack.search(kb, "annual leave", kb_version=7)


def test_chunks_written_before_versions_are_found_in_every_version(stack: Stack) -> None:
    kb = stack.kb()
    # what the migration leaves: rows and index records with the window 0/0
    legacy = Document(id="old", kb_id=kb.id, filename="old.txt", media_type="text/plain",
                      sha256="x", size=1, status=DocumentStatus.READY)
    stack.repository.add_document(legacy)
    chunk = Chunk(id="old-1", document_id="old", kb_id=kb.id, parent_id=None,
                  level=CHILD_LEVEL, ordinal=0, text=MEALS, token_count=11)
    stack.repository.replace_chunks("old", [chunk])
    stack.index.upsert([IndexRecord("old-1", "old", kb.id, MEALS)],
                       stack.embedder.embed_passages([MEALS]))
    assert stack.chunk_ids(kb, "meals dollars") == ["old-1"]  # active version 0
    stack.add(kb, "leave.txt", LEAVE)
    assert stack.chunk_ids(kb, "meals dollars per day", top_k=1) == ["old-1"]
    assert stack.search(kb, "meals").trace.kb_version == 1
