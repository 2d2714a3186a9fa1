"""FaqService: pages of live entries within a scope, reads by id, and what an update may change.

The real container (e5, tantivy, SQLite) on a temporary data directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.faq import FaqChanges
from ragsift.domain.filters import SearchFilter
from ragsift.ingestion.faq_import import FaqRow


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Container]:
    container = build(Settings(data_dir=tmp_path / "data"))
    yield container
    container.close()


def rows() -> list[FaqRow]:
    return [FaqRow(f"Question {i}?", f"Answer {i}.", None, i + 1,
                   tenant_id="acme" if i % 2 else None) for i in range(5)]


def test_a_page_holds_live_entries_oldest_first_with_the_total(app: Container) -> None:
    kb = app.ingestion.ensure_kb("hr")
    app.faq.import_rows(kb, rows())
    page = app.faq.page(kb, offset=3, limit=10)
    assert [e.question for e in page.entries] == ["Question 3?", "Question 4?"]
    assert (page.total, page.offset, page.limit) == (5, 3, 10)
    assert len(app.faq.page(kb).entries) == 5  # no limit: every entry


def test_a_page_within_a_scope_counts_only_what_the_scope_sees(app: Container) -> None:
    kb = app.ingestion.ensure_kb("hr")
    app.faq.import_rows(kb, rows())
    page = app.faq.page(kb, visible=SearchFilter(kb_id=kb.id, tenant_ids=frozenset({"acme"})))
    assert [e.question for e in page.entries] == ["Question 1?", "Question 3?"]
    assert page.total == 2


@pytest.mark.parametrize(("offset", "limit"), [(-1, None), (0, 0), (0, 501)])
def test_page_bounds_are_checked(app: Container, offset: int, limit: int | None) -> None:
    kb = app.ingestion.ensure_kb("hr")
    with pytest.raises(InvalidInput, match="limit 1-500"):
        app.faq.page(kb, offset, limit)


def test_an_entry_is_read_only_through_its_own_knowledge_base(app: Container) -> None:
    hr, it = app.ingestion.ensure_kb("hr"), app.ingestion.ensure_kb("it")
    app.faq.import_rows(hr, rows()[:1])
    (entry,) = app.faq.page(hr).entries
    assert app.faq.get(hr, entry.id) == entry
    with pytest.raises(NotFound, match="does not exist in knowledge base 'it'"):
        app.faq.get(it, entry.id)


def test_an_update_cannot_empty_the_question_or_the_answer(app: Container) -> None:
    kb = app.ingestion.ensure_kb("hr")
    app.faq.import_rows(kb, rows()[:1])
    (entry,) = app.faq.page(kb).entries
    for changes in (FaqChanges(question=None), FaqChanges(answer="   ")):
        with pytest.raises(InvalidInput, match="cannot be empty"):
            app.faq.update(kb, entry.id, changes)
    cleaned = app.faq.update(kb, entry.id, FaqChanges(
        tenant_id="  ", visibility=" internal ", allowed_roles=(" hr", "hr", "")))
    assert (cleaned.tenant_id, cleaned.visibility, cleaned.allowed_roles) == (
        None, "internal", ("hr",))
