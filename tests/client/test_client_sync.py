"""RagsiftClient against a live `ragsift serve` with keys: every resource, typed answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.api_helpers import CORRUPT_PDF, FIRMWARE, HOTELS, LEAVE
from client.client_helpers import Handbook
from ragsift.client import (
    ChatOut,
    CitationsEvent,
    ConversationDetailOut,
    DeltaEvent,
    Document,
    DocumentStatus,
    DoneEvent,
    ErrorBody,
    ExplainOut,
    KbOut,
    NotFoundError,
    RagsiftClient,
    RetrievalHit,
    RetrievalTrace,
    TraceEvent,
)


def test_knowledge_bases_are_created_listed_got_and_deleted(admin: RagsiftClient) -> None:
    created = admin.create_kb("kb-crud")

    assert isinstance(created, KbOut)
    assert (created.name, created.documents, created.faq) == ("kb-crud", 0, 0)
    assert created.id in [kb.id for kb in admin.list_kbs()]
    assert admin.get_kb(created.id) == created

    admin.delete_kb(created.id)
    with pytest.raises(NotFoundError):
        admin.get_kb(created.id)


def test_upload_reports_progress_and_wait_until_ready_settles_each_document(
    admin: RagsiftClient, tmp_path: Path,
) -> None:
    kb = admin.create_kb("uploads")
    on_disk = tmp_path / "hotels.md"
    on_disk.write_bytes(HOTELS)
    progress: list[tuple[int, int]] = []

    uploaded = admin.upload_documents(
        kb.id, [on_disk, ("年假.md", LEAVE), ("broken.pdf", CORRUPT_PDF)],
        progress=lambda sent, total: progress.append((sent, total)),
        tenant_id="acme", allowed_roles=["hr", "ops"],
    )
    settled = admin.wait_until_ready(uploaded, timeout=120)

    assert [d.filename for d in uploaded] == ["hotels.md", "年假.md", "broken.pdf"]
    assert all(d.status == DocumentStatus.PENDING and not d.duplicate for d in uploaded)
    # from nothing to the whole body (the files plus the multipart framing), never backwards
    total = progress[-1][1]
    assert progress[0] == (0, total) and progress[-1] == (total, total)
    assert total > len(HOTELS) + len(LEAVE) + len(CORRUPT_PDF)
    assert [sent for sent, _ in progress] == sorted(sent for sent, _ in progress)
    assert [d.id for d in settled] == [d.id for d in uploaded]
    assert all(isinstance(d, Document) for d in settled)
    assert [d.status for d in settled] == ["READY", "READY", "FAILED"]
    assert settled[2].error
    assert settled[0].scope.tenant_id == "acme"
    assert settled[0].scope.allowed_roles == ("hr", "ops")
    ready = admin.list_documents(kb.id, status=DocumentStatus.READY)
    assert sorted(d.filename for d in ready) == ["hotels.md", "年假.md"]
    assert [d.filename for d in admin.list_documents(kb.id, status="FAILED")] == ["broken.pdf"]


def test_the_same_bytes_uploaded_again_are_the_live_duplicate(
    admin: RagsiftClient, handbook: Handbook,
) -> None:
    again = admin.upload_document(handbook.kb.id, ("hotels-copy.md", HOTELS))

    assert again.duplicate and again.id == handbook.hotels.id


def test_a_document_is_reindexed_and_deleted(admin: RagsiftClient) -> None:
    kb = admin.create_kb("reindex")
    [ready] = admin.wait_until_ready(admin.upload_document(kb.id, ("fw.txt", FIRMWARE)))

    reindexed = admin.reindex_document(ready.id)
    assert reindexed.status == DocumentStatus.PENDING
    [again] = admin.wait_until_ready(ready.id)
    assert again.status == DocumentStatus.READY

    admin.delete_document(ready.id)
    with pytest.raises(NotFoundError):
        admin.get_document(ready.id)


def test_metadata_is_uploaded_changed_and_filtered_on_through_the_sdk(
    admin: RagsiftClient,
) -> None:
    kb = admin.create_kb("meta")
    [fw] = admin.wait_until_ready(admin.upload_document(
        kb.id, ("fw.txt", FIRMWARE), metadata={"dept": "it", "year": 2024}))
    assert fw.metadata == {"dept": "it", "year": 2024}
    changed = admin.set_metadata(fw.id, {"year": None, "issued": {"$date": "2024-05-01"}})
    assert changed.metadata == {"dept": "it", "issued": {"$date": "2024-05-01"}}
    [hit] = admin.search("E-104", kb_id=kb.id, mode="sparse", top_k=1,
                         filter={"issued": {"$gte": {"$date": "2024-01-01"}}})
    assert hit.document_id == fw.id and hit.metadata == changed.metadata
    assert admin.search("E-104", kb_id=kb.id, mode="sparse", filter={"dept": "hr"}) == []


def test_search_and_explain_answer_with_the_api_models(
    reader: RagsiftClient, handbook: Handbook,
) -> None:
    hits = reader.search("hotel limit per night", kb="handbook", top_k=2)
    explained = reader.explain("年假可以结转几天", kb_id=handbook.kb.id, mode="sparse")

    assert 1 <= len(hits) <= 2
    assert all(isinstance(hit, RetrievalHit) for hit in hits)
    assert hits[0].document_id == handbook.hotels.id
    assert isinstance(explained, ExplainOut)
    assert isinstance(explained.trace, RetrievalTrace)
    assert explained.results[0].document_id == handbook.leave.id
    assert explained.trace.mode == "sparse"


def test_chat_answers_as_json_and_as_stream_events_in_one_stored_conversation(
    reader: RagsiftClient, handbook: Handbook,
) -> None:
    first = reader.chat("What is the hotel limit per night?", kb="handbook")
    events = list(reader.chat_stream("年假可以结转几天？", kb_id=handbook.kb.id,
                                     conversation_id=first.conversation_id))

    # no chat model is configured: extractive answers that cite their evidence
    assert isinstance(first, ChatOut)
    assert first.extractive and first.model is None
    assert first.citations and first.citations[0].document_id == handbook.hotels.id
    trace, *deltas, citations, done = events
    assert isinstance(trace, TraceEvent) and trace.conversation_id == first.conversation_id
    assert deltas and all(isinstance(delta, DeltaEvent) for delta in deltas)
    assert isinstance(citations, CitationsEvent) and citations.citations
    assert citations.citations[0].document_id == handbook.leave.id
    assert isinstance(done, DoneEvent) and done.extractive
    assert not any(isinstance(event, ErrorBody) for event in events)

    conversation = reader.get_conversation(first.conversation_id)
    assert isinstance(conversation, ConversationDetailOut)
    assert [turn.id for turn in conversation.turns] == [first.turn_id, done.turn_id]
    assert [turn.status for turn in conversation.turns] == ["complete", "complete"]
    assert conversation.turns[1].answer == citations.answer
    listed = {c.id: c for c in reader.list_conversations()}
    assert listed[first.conversation_id].turn_count == 2

    reader.delete_conversation(first.conversation_id)
    with pytest.raises(NotFoundError):
        reader.get_conversation(first.conversation_id)


def test_faq_import_counts_new_and_known_pairs_and_explain_finds_them(
    admin: RagsiftClient, tmp_path: Path,
) -> None:
    kb = admin.create_kb("faq")
    faq = tmp_path / "faq.jsonl"
    rows = [{"question": "How do I reset my VPN token?", "answer": "Use the self-service portal."},
            {"question": "Who approves travel?", "answer": "Your line manager.", "source": "hr"}]
    faq.write_text("\n".join(json.dumps(row) for row in rows) + "\n")

    imported = admin.import_faq(kb.id, faq)
    again = admin.import_faq(kb.id, ("faq.jsonl", faq.read_bytes()))

    assert (imported.rows, imported.added, imported.duplicates) == (2, 2, 0)
    assert (again.rows, again.added, again.duplicates) == (2, 0, 2)
    found = admin.explain("reset VPN token", kb_id=kb.id)
    assert found.faq[0].answer == "Use the self-service portal."
    assert admin.get_kb(kb.id).faq == 2
