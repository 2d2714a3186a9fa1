"""Replacing a document under its key: same id, unchanged chunks kept (nothing re-embedded),
changed ones replaced, removed ones retired; the switch is atomic; a bad new file keeps the old."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ragsift.domain.models import CHILD_LEVEL, DocumentStatus
from ragsift.ingestion.revisions import DocumentBusy
from versions.version_stack import Stack, build_stack

OLD = ("# Parking\n\nparking costs ten cny a day\n\n# Canteen\n\nlunch starts at noon\n\n"
       "# Gym\n\nthe gym opens at seven\n")
NEW = ("# Parking\n\nparking costs fifteen cny a day\n\n# Canteen\n\nlunch starts at noon\n")


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    built = build_stack(tmp_path / "stack", chunk_tokens=16, parent_max_tokens=16)
    yield built  # type: ignore[misc]
    built.close()


def _replace(stack: Stack, kb_name: str, filename: str, text: str) -> object:
    kb = stack.kb(kb_name)
    accepted = stack.ingestion.accept(kb, filename, text.encode())
    assert accepted.replacing, accepted
    return stack.ingestion.replace(accepted.document.id, filename, text.encode())


def _texts(stack: Stack, kb: object, query: str) -> str:
    hits = stack.search(kb, query, top_k=10, candidate_k=10).hits  # type: ignore[arg-type]
    return " " + " ".join(hit.text for hit in hits) + " "


def _live_children(stack: Stack, document_id: str) -> dict[str, str]:
    return {c.id: c.text for c in stack.repository.list_chunks(document_id)
            if c.level == CHILD_LEVEL and c.valid_to_seq == 0}


def test_a_replacement_keeps_the_id_and_unchanged_chunks_and_embeds_only_the_changed(
    stack: Stack,
) -> None:
    kb = stack.kb("kb")
    document_id = stack.add(kb, "policy.md", OLD)
    before = _live_children(stack, document_id)
    stack.embedder.passages.clear()
    outcome = _replace(stack, "kb", "policy.md", NEW)
    after = _live_children(stack, document_id)
    kept = {cid for cid, text in before.items() if after.get(cid) == text}
    assert any("lunch" in before[cid] for cid in kept)  # unchanged: same id
    assert stack.embedder.passages and all("fifteen" in p for p in stack.embedder.passages)
    assert not any("gym" in text for text in after.values())  # removed: retired
    document = stack.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.READY
    assert document.key == "policy.md" and document.error is None
    found = _texts(stack, kb, "parking costs cny gym seven")
    assert "fifteen" in found and " ten " not in found and "gym" not in found
    assert getattr(outcome, "replaced", False)


def test_the_same_bytes_under_the_same_key_change_nothing(stack: Stack) -> None:
    kb = stack.kb("kb")
    document_id = stack.add(kb, "policy.md", OLD)
    again = stack.ingestion.accept(kb, "policy.md", OLD.encode())
    assert again.duplicate and again.document.id == document_id
    assert [d.id for d in stack.repository.list_documents(kb.id)] == [document_id]


def test_a_new_file_that_fails_to_parse_keeps_the_old_revision_searchable(stack: Stack) -> None:
    kb = stack.kb("kb")
    document_id = stack.add(kb, "policy.md", OLD)
    outcome = _replace(stack, "kb", "policy.md", "   \n")
    assert getattr(outcome, "replace_failed", False)
    document = stack.repository.get_document(document_id)
    assert document is not None and document.status == DocumentStatus.READY
    assert "previous content is kept" in (document.error or "")
    assert " ten " in _texts(stack, kb, "parking costs cny")


def test_a_second_replacement_while_one_runs_is_busy(stack: Stack) -> None:
    kb = stack.kb("kb")
    stack.add(kb, "policy.md", OLD)
    first = stack.ingestion.accept(kb, "policy.md", NEW.encode())
    assert first.replacing
    with pytest.raises(DocumentBusy):
        stack.ingestion.accept(kb, "policy.md", (NEW + "more\n").encode())


def test_searches_during_replacements_see_the_old_or_the_new_never_both_or_neither(
    stack: Stack,
) -> None:
    kb = stack.kb("kb")
    stack.add(kb, "policy.md", OLD)
    texts = [OLD, NEW] * 6
    stop = threading.Event()
    seen: list[tuple[bool, bool]] = []

    def search() -> None:
        while not stop.is_set():
            hits = stack.search(kb, "parking cny costs day", top_k=10, candidate_k=10)
            words = " ".join(hit.text for hit in hits.hits)
            seen.append(("ten" in words, "fifteen" in words))

    thread = threading.Thread(target=search)
    thread.start()
    try:
        for text in texts[1:]:
            _replace(stack, "kb", "policy.md", text)
    finally:
        stop.set()
        thread.join()
    assert seen and all(old != new for old, new in seen), set(seen)
