"""FAQ entries in the relational store: bulk add with dedupe, ordered reads, KB isolation,
scope and version windows, versioned commits into a KB's draft, collection, the migration."""

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
from ragsift.domain.faq import (
    FaqCommit,
    FaqConflict,
    FaqContent,
    FaqEntry,
    faq_entry_id,
    faq_sha256,
)
from ragsift.domain.versions import DraftMoved


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


# ---- scope, versions and commits ------------------------------------------------------------


def content(question: str, answer: str = "answer", **scope: object) -> FaqContent:
    return FaqContent.model_validate({"question": question, "answer": answer, **scope})


@pytest.fixture
def staged(faq_repo: SqlRepository) -> SqlRepository:
    faq_repo.ensure_version_state("kb1", "staged", 5)
    return faq_repo


def test_scope_and_window_are_stored_and_read_back(faq_repo: SqlRepository) -> None:
    scoped = content("scoped?", source="HR", tenant_id="acme", dataset_id="hr",
                     visibility="internal", allowed_roles=("hr", "finance")).entry("kb1", 3)
    faq_repo.add_faq_entries([scoped.model_copy(update={"valid_to_seq": 5})])
    (back,) = faq_repo.get_faq_entries([scoped.id])
    assert back.model_copy(update={"created_at": None}) == scoped.model_copy(
        update={"valid_to_seq": 5})
    assert (back.valid_from_seq, back.valid_to_seq, back.allowed_roles) == (
        3, 5, ("hr", "finance"))


def test_the_same_pair_in_another_scope_is_another_entry(faq_repo: SqlRepository) -> None:
    plain = entry("leave?", "15 days")
    acme = content("leave?", "15 days", tenant_id="acme").entry("kb1", 0)
    again = content("leave?", "15 days", tenant_id="acme", source="other").entry("kb1", 0)
    assert plain.sha256 == faq_sha256("leave?", "15 days")  # keys from before scopes
    assert faq_repo.add_faq_entries([plain, acme]) == 2
    assert faq_repo.add_faq_entries([again]) == 0  # the source is not part of the key


def test_a_commit_adds_new_keys_counts_the_change_and_skips_live_ones(
    staged: SqlRepository,
) -> None:
    first = content("a?").entry("kb1", 1)
    done = staged.commit_faq(FaqCommit("kb1", 1, add=(first, content("b?").entry("kb1", 1))))
    assert len(done.added) == 2 and done.sealed is None
    state = staged.get_version_state("kb1")
    assert state is not None and state.draft_changes == 2
    again = staged.commit_faq(FaqCommit("kb1", 1, add=(first,)))
    assert again.added == ()
    assert staged.live_faq_keys("kb1", [first.sha256]) == {first.sha256: first.id}


def test_a_strict_add_of_a_live_key_is_a_conflict_and_stores_nothing(
    staged: SqlRepository,
) -> None:
    first = content("a?").entry("kb1", 1)
    staged.commit_faq(FaqCommit("kb1", 1, add=(first,)))
    with pytest.raises(FaqConflict, match=first.id):
        staged.commit_faq(FaqCommit("kb1", 1, add=(content("c?").entry("kb1", 1), first),
                                    strict=True))
    assert staged.count_faq_entries("kb1") == 1


def test_a_commit_planned_on_an_old_draft_is_refused(staged: SqlRepository) -> None:
    staged.commit_faq(FaqCommit("kb1", 1, add=(content("a?").entry("kb1", 1),)))
    assert staged.seal_draft("kb1") is not None
    with pytest.raises(DraftMoved, match="no longer version 1"):
        staged.commit_faq(FaqCommit("kb1", 1, add=(content("b?").entry("kb1", 1),)))
    assert staged.count_faq_entries("kb1") == 1


def test_retiring_keeps_the_row_for_older_versions_and_frees_its_key(
    staged: SqlRepository,
) -> None:
    old = content("a?", "old").entry("kb1", 1)
    staged.commit_faq(FaqCommit("kb1", 1, add=(old,)))
    staged.seal_draft("kb1")
    readded = content("a?", "old").entry("kb1", 2)
    assert readded.id != old.id and readded.sha256 == old.sha256
    done = staged.commit_faq(FaqCommit("kb1", 2, add=(readded,), retire=(old.id,)))
    assert done.added == (readded.id,)
    (retired,) = staged.get_faq_entries([old.id])
    assert (retired.valid_from_seq, retired.valid_to_seq) == (1, 2)
    assert [e.id for e in staged.list_faq_entries("kb1", live_only=True)] == [readded.id]
    assert {e.id for e in staged.list_faq_entries("kb1")} == {old.id, readded.id}
    assert staged.count_faq_entries("kb1") == 1
    assert staged.count_faq_entries("kb1", version_seq=1) == 1
    assert staged.count_faq_entries("kb1", version_seq=2) == 1
    assert staged.count_faq_entries("kb1", version_seq=0) == 0


def test_dropping_deletes_an_entry_only_the_draft_holds(staged: SqlRepository) -> None:
    draft_only = content("a?").entry("kb1", 1)
    staged.commit_faq(FaqCommit("kb1", 1, add=(draft_only,)))
    staged.commit_faq(FaqCommit("kb1", 1, drop=(draft_only.id,)))
    assert staged.get_faq_entries([draft_only.id]) == []


def test_retired_dropped_or_unknown_targets_are_an_outdated_plan(staged: SqlRepository) -> None:
    sealed = content("a?").entry("kb1", 1)
    staged.commit_faq(FaqCommit("kb1", 1, add=(sealed,)))
    staged.seal_draft("kb1")
    for commit in (FaqCommit("kb1", 2, drop=(sealed.id,)),  # it is in version 1: retire it
                   FaqCommit("kb1", 2, retire=("unknown",))):
        with pytest.raises(DraftMoved, match="changed meanwhile"):
            staged.commit_faq(commit)
    staged.commit_faq(FaqCommit("kb1", 2, retire=(sealed.id,)))
    with pytest.raises(DraftMoved):  # retired already
        staged.commit_faq(FaqCommit("kb1", 2, retire=(sealed.id,)))


def test_a_commit_can_seal_and_activate_its_version(staged: SqlRepository) -> None:
    done = staged.commit_faq(FaqCommit("kb1", 1, add=(content("a?").entry("kb1", 1),)),
                             seal=True, activate=True, note="FAQ: 1 entry added")
    assert done.sealed is not None and done.sealed.seq == 1
    assert done.sealed.note == "FAQ: 1 entry added"
    assert staged.searchable_version("kb1") == 1
    nothing = staged.commit_faq(FaqCommit("kb1", 2), seal=True, activate=True)
    assert nothing.sealed is None and staged.searchable_version("kb1") == 1


def test_collection_removes_retired_entries_no_retained_version_holds(
    staged: SqlRepository,
) -> None:
    old = content("a?", "old").entry("kb1", 1)
    staged.commit_faq(FaqCommit("kb1", 1, add=(old,)), seal=True, activate=True)
    new = content("a?", "new").entry("kb1", 2)
    staged.commit_faq(FaqCommit("kb1", 2, add=(new,), retire=(old.id,)), seal=True,
                      activate=True)
    assert staged.collect_versions("kb1", retention=2).faq_ids == ()
    collected = staged.collect_versions("kb1", retention=1)
    assert collected.faq_ids == (old.id,) and collected.versions == (1,)
    assert [e.id for e in staged.list_faq_entries("kb1")] == [new.id]


def test_a_database_at_0009_keeps_its_faq_entries_valid_everywhere_and_unscoped(
    db_url: str,
) -> None:
    command.upgrade(alembic_config(db_url), "0009")
    engine = make_engine(db_url)
    created = bindparam("created", type_=DateTime(timezone=True))
    old = entry("q?", kb_id="k")
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO knowledge_bases VALUES ('k', 'n', 'm', 3, '{}', "
                              ":created)").bindparams(created),
                         {"created": datetime(2024, 1, 1, tzinfo=UTC)})
            conn.execute(text("INSERT INTO faq_entries VALUES (:id, 'k', 'q?', 'answer', NULL, "
                              ":sha, :created)").bindparams(created),
                         {"id": old.id, "sha": old.sha256,
                          "created": datetime(2024, 1, 2, tzinfo=UTC)})
    finally:
        engine.dispose()
    upgrade_to_head(db_url)
    repository = SqlRepository(db_url)
    try:
        (back,) = repository.get_faq_entries([old.id])
        assert (back.valid_from_seq, back.valid_to_seq, back.tenant_id, back.allowed_roles) == (
            0, 0, None, ())
        assert repository.count_faq_entries("k", version_seq=7) == 1
        assert repository.live_faq_keys("k", [old.sha256]) == {old.sha256: old.id}
        # no unique key any more: a retired row may share its key with a live one
        retired = old.model_copy(update={"id": "retired", "valid_to_seq": 1})
        assert repository.add_faq_entries([retired]) == 1
    finally:
        repository.close()
