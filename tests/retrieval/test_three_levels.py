"""Auto-merge over three levels on the real stack (e5, the embedded index, SQLite): children
merge into parents, parents into their section when its own threshold is met and the section
fits the Small2Big budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragsift.bootstrap import Container
from ragsift.domain.models import SECTION_LEVEL, KnowledgeBase
from ragsift.domain.results import RetrievalResult
from retrieval.real_stack import QUIET, ServiceFactory, search

GUIDE = """# Staff guide

## Travel

### Hotels

Hotel rooms are booked through the travel desk. The hotel limit per night is 150 dollars in
most cities. In London and Tokyo the hotel limit per night rises to 220 dollars.

### Meals

Meals on business trips are reimbursed up to 60 dollars per day. Alcohol is never reimbursed.
Client dinners need the approval of a director before the trip starts.

## Leave

Annual leave is fifteen days a year. Five unused days carry over to the next year. Leave is
requested one week ahead through the portal.
"""
WINDOW: dict[str, Any] = {**QUIET, "candidate_k": 20, "top_k": 5, "auto_merge": True}
QUERY = "hotel limit per night and meals reimbursed per day on business trips"


@pytest.fixture(scope="module")
def guide_kb(stack: Container, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    kb = stack.ingestion.ensure_kb("three-levels")
    path = Path(tmp_path_factory.mktemp("guide")) / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    outcome = stack.ingestion.ingest_path(kb, path)
    assert outcome.document.error is None, outcome.document.error
    return kb


def _sections(stack: Container, result: RetrievalResult) -> list[str]:
    chunks = stack.repository.get_chunks([hit.chunk_id for hit in result.hits])
    return [chunk.heading_path[-1] for chunk in chunks if chunk.level == SECTION_LEVEL]


def test_parents_climb_into_their_section_at_the_section_threshold(
    stack: Container, guide_kb: KnowledgeBase, service_with: ServiceFactory
) -> None:
    service = service_with(auto_merge_section_threshold=2)
    result = search(service, guide_kb, QUERY, **WINDOW)
    assert _sections(stack, result) == ["Travel"]
    [travel] = [hit for hit in result.hits if hit.text.startswith("Hotel rooms")]
    travel_children = [c.id for c in stack.repository.list_chunks(travel.document_id)
                       if c.level == 1 and c.heading_path[-1] in ("Hotels", "Meals")]
    assert sorted(travel.merged_from) == sorted(travel_children)
    assert "Client dinners" in travel.text  # the whole section, both parents
    assert result.trace.auto_merge.detail["merged_sections"] == 1


def test_sections_stay_unmerged_by_default_and_over_the_small2big_budget(
    stack: Container, guide_kb: KnowledgeBase, service_with: ServiceFactory
) -> None:
    default = search(service_with(), guide_kb, QUERY, **WINDOW)
    assert _sections(stack, default) == []
    assert int(default.trace.auto_merge.detail["merged_parents"]) >= 2
    [document] = stack.repository.list_documents(guide_kb.id)
    [section] = [c for c in stack.repository.list_chunks(document.id)
                 if c.level == SECTION_LEVEL]
    # a section one token over the Small2Big budget does not fit the context: the parents stay
    budget = section.token_count - 1
    tight = search(service_with(auto_merge_section_threshold=2, small2big_budget_tokens=budget),
                   guide_kb, QUERY, **{**WINDOW, "small2big": True})
    assert _sections(stack, tight) == []
    assert int(tight.trace.auto_merge.detail["merged_parents"]) >= 2
    fits = search(service_with(auto_merge_section_threshold=2,
                               small2big_budget_tokens=section.token_count),
                  guide_kb, QUERY, **{**WINDOW, "small2big": True})
    assert _sections(stack, fits) == ["Travel"]
