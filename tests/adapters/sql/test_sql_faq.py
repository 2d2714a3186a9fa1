"""FAQ entries in the relational store: bulk add with dedupe, ordered reads, KB isolation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from sql_factories import make_kb
from sqlalchemy import DateTime, bindparam, text

from ragsift.adapters.sql import SqlRepository, upgrade_to_head
from ragsift.adapters.sql.migrate import alembic_config
from ragsift.adapters.sql.orm import make_engine
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.faq import FaqEntry, faq_entry_id, faq_sha256


def entry(question: str, answer: str = "answer", kb_id: str = "kb1",
          source: str | None = None) -> FaqEntry:
    return FaqEntry(id=faq_entry_id(kb_id, question, answer), kb_id=kb_id, question=question,
                    answer=answer, source=source)


@pytest.fixture
def faq_repo(repo: SqlRepository) -> SqlRepository:
    repo.create_kb(make_kb("kb1"))
    repo.create_kb(make_kb("kb2"))
    return repo


def test_add_returns_the_number_added_and_skips_pairs_already_stored(
    faq_repo: SqlRepository,
) -> None:
    first = [entry("年假有多少天？", "十五天", source="HR"), entry("What is E-104?")]
    assert faq_repo.add_faq_entries(first) == 2
    again = [entry("What is E-104?"), entry("What is E-105?")]
    assert faq_repo.add_faq_entries(again) == 1
    assert faq_repo.count_faq_entries("kb1") == 3


def test_a_pair_repeated_within_one_batch_is_stored_once(faq_repo: SqlRepository) -> None:
    same = entry("How do I reset the router?", "Hold the button for ten seconds.")
    assert faq_repo.add_faq_entries([same, same, same]) == 1


def test_dedupe_is_by_question_and_answer_content_not_by_id(faq_repo: SqlRepository) -> None:
    original = entry("Q?", "A.")
    renamed = original.model_copy(update={"id": "another-id", "question": "  Q?  "})
    other_answer = entry("Q?", "B.")
    assert faq_repo.add_faq_entries([original]) == 1
    assert faq_repo.add_faq_entries([renamed, other_answer]) == 1
    assert {e.answer for e in faq_repo.list_faq_entries("kb1")} == {"A.", "B."}
    assert faq_sha256(" Q? ", "A.\n") == faq_sha256("Q?", "A.")


def test_get_keeps_the_order_asked_and_skips_unknown_ids(faq_repo: SqlRepository) -> None:
    a, b, c = entry("a?"), entry("b?"), entry("c?", source="manual p.3")
    faq_repo.add_faq_entries([a, b, c])
    found = faq_repo.get_faq_entries([c.id, "missing", a.id, c.id])
    assert [e.id for e in found] == [c.id, a.id]
    assert found[0].source == "manual p.3" and found[0].created_at is not None
    assert found[0].created_at.tzinfo is not None


def test_list_returns_entries_in_the_order_they_were_added(faq_repo: SqlRepository) -> None:
    questions = [f"question {i}?" for i in (5, 1, 9, 3, 7)]
    faq_repo.add_faq_entries([entry(q) for q in questions[:3]])
    faq_repo.add_faq_entries([entry(q) for q in questions[3:]])
    assert [e.question for e in faq_repo.list_faq_entries("kb1")] == questions


def test_knowledge_bases_keep_their_own_entries(faq_repo: SqlRepository) -> None:
    # The same pair in two KBs is two entries with two ids.
    assert faq_repo.add_faq_entries([entry("shared?", kb_id="kb1"),
                                     entry("shared?", kb_id="kb2")]) == 2
    faq_repo.add_faq_entries([entry("only one?", kb_id="kb1")])
    assert [e.question for e in faq_repo.list_faq_entries("kb2")] == ["shared?"]
    assert faq_repo.delete_faq_entries("kb1") == 2
    assert faq_repo.count_faq_entries("kb1") == 0
    assert faq_repo.count_faq_entries("kb2") == 1


def test_adding_to_an_unknown_knowledge_base_is_not_found(faq_repo: SqlRepository) -> None:
    with pytest.raises(NotFound, match="nope"):
        faq_repo.add_faq_entries([entry("q?", kb_id="nope")])
    assert faq_repo.count_faq_entries("nope") == 0


def test_deleting_a_knowledge_base_removes_its_faq(faq_repo: SqlRepository) -> None:
    kept = entry("stays?", kb_id="kb2")
    faq_repo.add_faq_entries([entry("goes?"), kept])
    faq_repo.delete_kb("kb1")
    assert faq_repo.count_faq_entries("kb1") == 0
    assert [e.id for e in faq_repo.get_faq_entries([kept.id])] == [kept.id]


def test_adding_nothing_adds_nothing(faq_repo: SqlRepository) -> None:
    assert faq_repo.add_faq_entries([]) == 0


def test_text_postgresql_cannot_store_is_invalid_input_there(
    faq_repo: SqlRepository, backend: str
) -> None:
    # A JSONL import can carry "\u0000"; PostgreSQL text cannot hold NUL, SQLite can.
    bad = entry("before\x00after?")
    if backend == "postgresql":
        with pytest.raises(InvalidInput, match=r"FAQ entries cannot be stored: .*NUL"):
            faq_repo.add_faq_entries([bad, entry("fine?")])
        assert faq_repo.count_faq_entries("kb1") == 0  # all or nothing
    else:
        assert faq_repo.add_faq_entries([bad]) == 1


def test_a_database_at_the_first_schema_gains_the_faq_table_and_keeps_its_data(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0001")
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO knowledge_bases VALUES ('k', 'n', 'm', 3, '{}', :created)"
                ).bindparams(bindparam("created", type_=DateTime(timezone=True))),
                {"created": datetime(2024, 1, 1, tzinfo=UTC)},
            )
    finally:
        engine.dispose()
    upgrade_to_head(db_url)
    repository = SqlRepository(db_url)
    try:
        assert [kb.id for kb in repository.list_kbs()] == ["k"]
        assert repository.add_faq_entries([entry("q?", kb_id="k")]) == 1
    finally:
        repository.close()
