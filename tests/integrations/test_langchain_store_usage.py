"""RagsiftVectorStore beyond the standard suite, on the session's live server: filters and
as_retriever's search_kwargs, relevance as the score, keys' roles, one id per content, and the
runnable example."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document

from client.client_helpers import Served
from ragsift.client import ForbiddenError, KbOut, RagsiftClient
from ragsift.integrations.langchain_store import RagsiftVectorStore
from ragsift.integrations.texts import DuplicateTextError

EXAMPLE = Path(__file__).parents[2] / "examples" / "langchain_vectorstore.py"


@pytest.fixture(scope="module")
def notes_kb(retrieval_server: Served) -> Iterator[KbOut]:
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as admin:
        kb = admin.create_kb(f"notes-{uuid.uuid4().hex[:8]}")
        yield kb
        admin.delete_kb(kb.id)


@pytest.fixture(scope="module")
def store(retrieval_server: Served, notes_kb: KbOut) -> RagsiftVectorStore:
    store = RagsiftVectorStore(base_url=retrieval_server.url,
                               api_key=retrieval_server.editor_key, kb=notes_kb.name)
    store.add_documents([
        Document(page_content="Annual leave: five unused days carry over to March.",
                 metadata={"dept": "hr", "year": 2024}),
        Document(page_content="Leave for travel days is booked like annual leave.",
                 metadata={"dept": "travel", "year": 2023}),
    ], ids=["hr-1", "travel-1"])
    return store


def test_a_filter_and_as_retrievers_search_kwargs_narrow_the_search(
    store: RagsiftVectorStore,
) -> None:
    both = store.similarity_search_with_score("annual leave", k=2)
    hr = store.as_retriever(search_kwargs={"k": 2, "filter": {"dept": "hr"}}).invoke("leave")
    recent = store.similarity_search("leave", k=2, filter={"year": {"$gte": 2024}})

    assert {doc.id for doc, _ in both} == {"hr-1", "travel-1"}
    assert all(0.0 <= score <= 1.0 for _, score in both)
    assert [score for _, score in both] == sorted((s for _, s in both), reverse=True)
    assert [doc.id for doc in hr] == ["hr-1"] == [doc.id for doc in recent]
    assert hr[0].metadata == {"dept": "hr", "year": 2024}


def test_a_relevance_threshold_keeps_what_scores_above_it(store: RagsiftVectorStore) -> None:
    scored = store.similarity_search_with_relevance_scores("annual leave", k=2)
    threshold = min(score for _, score in scored) + 1e-6
    kept = store.as_retriever(search_type="similarity_score_threshold", search_kwargs={
        "k": 2, "score_threshold": threshold}).invoke("annual leave")

    assert [doc.id for doc in kept] == [doc.id for doc, score in scored if score >= threshold]


def test_a_reader_key_searches_but_cannot_write(
    retrieval_server: Served, notes_kb: KbOut, store: RagsiftVectorStore,
) -> None:
    reader = RagsiftVectorStore(base_url=retrieval_server.url,
                                api_key=retrieval_server.reader_key, kb_id=notes_kb.id)
    assert reader.get_by_ids(["hr-1"])[0].page_content.startswith("Annual leave")
    with pytest.raises(ForbiddenError):
        reader.add_texts(["a reader's note"], ids=["reader-1"])
    with pytest.raises(ForbiddenError):
        reader.delete(["hr-1"])


def test_a_text_stored_under_another_id_is_refused_not_aliased(
    store: RagsiftVectorStore,
) -> None:
    with pytest.raises(DuplicateTextError, match=r"'hr-2'.*'hr-1'"):
        store.add_texts(["Annual leave: five unused days carry over to March."], ids=["hr-2"])
    assert store.get_by_ids(["hr-2"]) == []


def test_the_example_writes_searches_reads_and_deletes(
    retrieval_server: Served, notes_kb: KbOut, store: RagsiftVectorStore,
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", retrieval_server.url,
         "--key", retrieval_server.editor_key, "--kb", notes_kb.name],
        capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stderr
    assert "note-hotel  The hotel limit in London" in done.stdout
    assert "note-laptop  {'dept': 'it', 'year': 2023}" in done.stdout
    assert "deleted 3 notes" in done.stdout
    assert store.get_by_ids(["note-hotel"]) == []
