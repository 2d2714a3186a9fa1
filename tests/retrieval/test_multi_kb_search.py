"""One search over several knowledge bases on the real stack (e5, tantivy, SQLite): each KB
searched with its own indexes, one ranking, the KB of every hit in the hits and the trace."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from retrieval.real_stack import QUIET, ServiceFactory, ids, search

FACILITIES = """# Facilities

## Parking

Staff park in garage B under the north tower. A parking permit costs 40 dollars per month and
is renewed every January at the reception desk.

## Bicycles

Bicycles are stored in the locked cage beside garage B. Showers are on the second floor.
"""


@pytest.fixture(scope="module")
def facilities(stack: Container, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """A second KB beside the session's `policies`, with one document of its own."""
    kb = stack.ingestion.ensure_kb("multi-kb-facilities")
    path = tmp_path_factory.mktemp("facilities") / "facilities.md"
    path.write_text(FACILITIES, encoding="utf-8")
    assert stack.ingestion.ingest_path(kb, path).document.error is None
    return kb


def search_kbs(stack: Container, kbs: list[KnowledgeBase], query: str,
               **fields: object) -> RetrievalResult:
    request = SearchRequest.model_validate({
        "query": query, "kb_id": kbs[0].id, "kb_ids": [k.id for k in kbs], **QUIET, **fields})
    return asyncio.run(stack.retrieval.search(request))


def test_a_question_answered_in_the_second_kb_finds_it_first(
    stack: Container, kb: KnowledgeBase, facilities: KnowledgeBase,
) -> None:
    result = search_kbs(stack, [kb, facilities], "how much does a parking permit cost")

    top = result.hits[0]
    assert "40 dollars per month" in top.text
    assert top.kb_id == facilities.id
    assert result.trace.hit_kbs == {hit.chunk_id: hit.kb_id for hit in result.hits}
    assert {part.kb_id for part in result.trace.kbs} == {kb.id, facilities.id}
    assert sum(part.returned_count for part in result.trace.kbs) == len(result.hits)
    assert {hit.kb_id for hit in result.hits} == {kb.id, facilities.id}  # one ranking of both


def test_a_second_kb_leaves_the_first_kbs_answers_on_top(
    stack: Container, kb: KnowledgeBase, facilities: KnowledgeBase,
) -> None:
    for query in ("hotel limit per night in London", "年假可以结转几天", "error E-104"):
        alone = search(stack.retrieval, kb, query, **QUIET)
        both = search_kbs(stack, [kb, facilities], query)

        assert ids(both)[:2] == ids(alone)[:2], query
        assert both.hits[0].kb_id == kb.id


def test_kbs_of_another_embedding_model_are_refused_unless_the_search_is_sparse(
    stack: Container, kb: KnowledgeBase,
) -> None:
    other = stack.repository.create_kb(KnowledgeBase(
        id=uuid.uuid4().hex, name="multi-kb-bge", embedding_model="openai:bge-m3",
        embedding_dim=stack.embedder.dimension, created_at=datetime.now(UTC)))

    with pytest.raises(InvalidInput, match="different embedding models"):
        search_kbs(stack, [kb, other], "hotel limit")
    sparse = search_kbs(stack, [kb, other], "hotel limit", mode="sparse")

    assert sparse.hits and all(hit.kb_id == kb.id for hit in sparse.hits)


def test_more_kbs_than_the_setting_allows_are_refused(
    stack: Container, kb: KnowledgeBase, facilities: KnowledgeBase,
    service_with: ServiceFactory,
) -> None:
    service = service_with(search_max_kbs=1)
    request = SearchRequest(query="parking", kb_id=kb.id, kb_ids=(kb.id, facilities.id))

    with pytest.raises(InvalidInput, match="RAGSIFT_SEARCH_MAX_KBS"):
        asyncio.run(service.search(request))


def test_several_kbs_cannot_pin_a_version_or_ask_for_the_faq(
    stack: Container, kb: KnowledgeBase, facilities: KnowledgeBase,
) -> None:
    with pytest.raises(InvalidInput, match="kb_version"):
        search_kbs(stack, [kb, facilities], "parking", kb_version=1)
    with pytest.raises(InvalidInput, match="run_faq"):
        search_kbs(stack, [kb, facilities], "parking", run_faq=True)


