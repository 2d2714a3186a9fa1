"""The scope stage's metadata filter over real SQLite facts: its cache of filter answers, and
what the trace may say about documents outside the request's scope."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsift.adapters.sql.repository import SqlRepository
from ragsift.domain.metadata_filter import parse_filter
from ragsift.domain.metadata_terms import AnyToken, document_tokens, fingerprint, scalar_token
from ragsift.domain.models import Document, DocumentScope, DocumentStatus, KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.retrieval.document_stages import ScopeOutcome, ScopeStage

KB = "kb"


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlRepository]:
    repository = SqlRepository(f"sqlite:///{Path(tmp_path_factory.mktemp('facts')) / 'f.db'}")
    repository.create_kb(KnowledgeBase(id=KB, name=KB, embedding_model="m", embedding_dim=8))
    documents: dict[str, tuple[DocumentScope, dict[str, Any]]] = {
        "flag-true": (DocumentScope(), {"flag": True}),
        "flag-one": (DocumentScope(), {"flag": 1}),
        "other-tenant": (DocumentScope(tenant_id="globex"), {"dept": "secret"}),
        "hr-only": (DocumentScope(allowed_roles=("hr",)), {"dept": "secret"}),
    }
    for doc_id, (scope, metadata) in documents.items():
        repository.add_document(Document(
            id=doc_id, kb_id=KB, filename=f"{doc_id}.md", media_type="text/markdown",
            sha256=None, size=0, status=DocumentStatus.READY, scope=scope))
        repository.set_metadata(doc_id, metadata)
    yield repository
    repository.close()


def _run(stage: ScopeStage, raw: dict[str, Any], **scope: Any) -> ScopeOutcome:
    request = SearchRequest(query="q", kb_id=KB, filter=raw, **scope)
    return asyncio.run(stage.run(request, None, None, parse_filter(raw)))


def _allowed(outcome: ScopeOutcome) -> frozenset[str]:
    return frozenset() if outcome.search_filter is None else (
        outcome.search_filter.document_ids or frozenset())


def test_a_cached_filter_answer_is_not_reused_for_a_filter_equal_only_in_python(
    facts: SqlRepository,
) -> None:
    """true and 1 are equal (and hash alike) in Python but not in the filter language."""
    stage = ScopeStage(facts, None)
    assert _allowed(_run(stage, {"flag": True})) == {"flag-true"}
    assert _allowed(_run(stage, {"flag": 1})) == {"flag-one"}
    assert _allowed(_run(stage, {"flag": {"$in": [0, 1]}})) == {"flag-one"}
    assert _allowed(_run(stage, {"flag": {"$in": [False, True]}})) == {"flag-true"}


@pytest.mark.parametrize(("scope", "visible"), [
    ({"tenant_ids": ["acme"]}, 0), ({"roles": ["sales"]}, 1), ({}, 1), ({"roles": ["hr"]}, 2)])
def test_the_filter_trace_counts_only_documents_within_the_requests_scope(
    facts: SqlRepository, scope: dict[str, Any], visible: int,
) -> None:
    """Two documents say dept=secret: one of tenant globex, one for the role hr. The count
    of matched documents (and the empty reason) would otherwise be an oracle on the metadata
    of documents the caller may not see."""
    stage = ScopeStage(facts, None)
    outcome = _run(stage, {"dept": "secret"}, **scope)
    assert outcome.decision.trace.filter_documents_matched == visible
    assert len(_allowed(outcome)) == visible
    if not visible:  # said as of a filter that matches no document at all
        nothing = _run(stage, {"dept": "absent"}, **scope)
        assert outcome.decision.trace.empty_reason == nothing.decision.trace.empty_reason


def test_a_repeated_filter_is_answered_with_the_same_set_until_a_document_changes(
    facts: SqlRepository,
) -> None:
    """The same set object each search lets the indexes' caches compare it by reference;
    a metadata change gives the next search a new answer at once."""
    facts.add_document(Document(id="moving", kb_id=KB, filename="moving.md",
                                media_type="text/markdown", sha256=None, size=0,
                                status=DocumentStatus.READY))
    facts.set_metadata("moving", {"phase": 1})
    stage = ScopeStage(facts, None)
    first, again = (_run(stage, {"phase": 1}, roles=["hr"]) for _ in range(2))
    assert _allowed(first) == {"moving"}
    assert first.search_filter is not None and again.search_filter is not None
    assert again.search_filter.document_ids is first.search_filter.document_ids
    facts.set_metadata("moving", {"phase": 2})
    assert _allowed(_run(stage, {"phase": 1}, roles=["hr"])) == frozenset()
    assert _allowed(_run(stage, {"phase": 2}, roles=["hr"])) == {"moving"}


def test_the_filter_goes_as_terms_the_same_object_until_a_document_changes(
    facts: SqlRepository,
) -> None:
    """A search of the KB as it is now carries the filter as terms (the same object while
    the documents are unchanged, so the index's caches compare one reference) with each
    document's metadata fingerprint; a request naming documents or a version does not."""
    facts.add_document(Document(id="terms", kb_id=KB, filename="terms.md",
                                media_type="text/markdown", sha256=None, size=0,
                                status=DocumentStatus.READY))
    facts.set_metadata("terms", {"stage": "draft"})
    stage = ScopeStage(facts, None)
    first, again = (_run(stage, {"stage": "draft"}) for _ in range(2))
    assert first.search_filter is not None and again.search_filter is not None
    terms = first.search_filter.metadata_terms
    assert terms is not None and again.search_filter.metadata_terms is terms
    assert terms.tree == AnyToken(frozenset({scalar_token("stage", "draft")}))
    assert terms.fingerprints["terms"] == fingerprint(document_tokens({"stage": "draft"}))
    facts.set_metadata("terms", {"stage": "final"})
    changed = _run(stage, {"stage": "final"}).search_filter
    assert changed is not None and changed.metadata_terms is not terms
    assert changed.metadata_terms is not None
    assert changed.metadata_terms.fingerprints["terms"] == fingerprint(
        document_tokens({"stage": "final"}))
    request = SearchRequest(query="q", kb_id=KB, filter={"stage": "final"},
                            document_ids=("terms",))
    named = asyncio.run(stage.run(request, ("terms",), None, parse_filter({"stage": "final"})))
    assert named.search_filter is not None and named.search_filter.metadata_terms is None
