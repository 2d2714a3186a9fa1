"""KB versions in the relational store, on SQLite and PostgreSQL: draft commits, seals,
atomic activation, hydration at a version, collection, diffs, and data from before versions."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command
from sql_factories import make_chunks, make_document, make_kb

from ragsift.adapters.sql import SqlRepository, upgrade_to_head
from ragsift.adapters.sql.migrate import alembic_config
from ragsift.adapters.sql.orm import make_engine
from ragsift.domain.errors import NotFound
from ragsift.domain.models import Chunk, DocumentStatus
from ragsift.domain.versions import DraftCommit, DraftMoved


def window(chunks: list[Chunk], valid_from: int) -> tuple[Chunk, ...]:
    return tuple(c.model_copy(update={"valid_from_seq": valid_from}) for c in chunks)


@pytest.fixture
def versioned(repo: SqlRepository) -> SqlRepository:
    """KB kb1 with documents d1, d2 (not yet with chunks) and a version state."""
    repo.create_kb(make_kb())
    for doc_id in ("d1", "d2"):
        repo.add_document(make_document(doc_id, status=DocumentStatus.INDEXING))
    repo.ensure_version_state("kb1", "staged", 3)
    return repo


def commit(repo: SqlRepository, doc_id: str, seq: int, add: tuple[Chunk, ...] = (),
           retire: tuple[str, ...] = (), basis: frozenset[str] = frozenset(),
           status: DocumentStatus = DocumentStatus.READY, **flags: bool) -> object:
    return repo.commit_draft([DraftCommit(
        kb_id="kb1", document_id=doc_id, draft_seq=seq, basis=basis, add=add, retire=retire,
        status=status)], **flags)


def test_a_sealed_version_counts_its_indexed_chunks(versioned: SqlRepository) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1", children=3), 1))
    assert repo.get_document("d1").status == DocumentStatus.READY  # type: ignore[union-attr]
    first = repo.seal_draft("kb1", note="first")
    assert first is not None and (first.seq, first.chunks, first.added, first.retired,
                                  first.note) == (1, 3, 3, 0, "first")
    assert repo.seal_draft("kb1") is None  # nothing changed since
    d1_live = frozenset(c.id for c in make_chunks("d1", children=3))
    commit(repo, "d1", 2, retire=("d1-c2",), basis=d1_live)
    commit(repo, "d2", 2, window(make_chunks("d2", children=2), 2))
    second = repo.seal_draft("kb1")
    assert second is not None and (second.chunks, second.added, second.retired) == (4, 2, 1)
    state = repo.get_version_state("kb1")
    assert state is not None and (state.active_seq, state.draft_seq) == (0, 3)


def test_a_commit_planned_against_an_outdated_draft_stores_nothing(
    versioned: SqlRepository,
) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1"), 1))
    repo.seal_draft("kb1")
    with pytest.raises(DraftMoved):
        commit(repo, "d2", 1, window(make_chunks("d2"), 1))  # the draft is 2 now
    with pytest.raises(DraftMoved):  # d1's live chunks are not the basis given
        commit(repo, "d1", 2, retire=("d1-c0",), basis=frozenset({"d1-c0"}))
    assert repo.list_chunks("d2") == []
    assert {c.valid_to_seq for c in repo.list_chunks("d1")} == {0}
    assert repo.get_version_state("kb1").draft_changes == 0  # type: ignore[union-attr]


def test_activation_is_one_switch_and_hydration_follows_the_version(
    versioned: SqlRepository,
) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1", children=2), 1))
    repo.seal_draft("kb1")
    live = frozenset(c.id for c in make_chunks("d1", children=2))
    commit(repo, "d1", 2, retire=tuple(live), basis=live, status=DocumentStatus.RETIRED)
    repo.seal_draft("kb1")
    assert repo.activate_version("kb1", 1, "activate") == 0
    assert repo.searchable_version("kb1") == 1
    assert repo.searchable_version("kb1", pinned=2) == 2
    with pytest.raises(NotFound, match=r"version 9 .* not retained \(retained: 1, 2; active: 1"):
        repo.searchable_version("kb1", pinned=9)
    with pytest.raises(NotFound):
        repo.activate_version("kb1", 9, "activate")
    assert repo.searchable_version("kb1") == 1  # the failed switch changed nothing
    ids = ["d1-c1", "d1-c0", "d1-p0"]
    # d1 is RETIRED (deleted from the draft) but version 1 still shows it
    assert [c.id for c, _ in repo.get_chunks_at("kb1", ids, 1)] == ids
    assert repo.get_chunks_at("kb1", ids, 2) == []
    assert repo.get_ready_chunks("kb1", ids) == []  # the plain READY check hides it
    assert repo.searchable_document_ids("kb1", ["d1", "d2", "x"]) == {"d1"}
    assert repo.activate_version("kb1", 2, "rollback") == 1
    activations = repo.list_activations("kb1")
    assert [(a.action, a.from_seq, a.to_seq) for a in activations] == [
        ("rollback", 1, 2), ("activate", 0, 1)]


def test_collection_keeps_the_newest_versions_and_the_active_one(
    versioned: SqlRepository,
) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1", children=1), 1))
    repo.seal_draft("kb1")  # 1: d1
    repo.activate_version("kb1", 1, "activate")
    live = frozenset(c.id for c in make_chunks("d1", children=1))
    commit(repo, "d1", 2, retire=tuple(live), basis=live, status=DocumentStatus.RETIRED)
    repo.seal_draft("kb1")  # 2: empty
    for seq in (3, 4):
        commit(repo, "d2", seq, window([make_chunks("d2", children=1)[seq - 3]], seq),
               basis=frozenset({"d2-p0"} if seq == 4 else ()))
        repo.seal_draft("kb1")
    collected = repo.collect_versions("kb1", retention=2)
    assert collected.versions == (2,)  # 4 and 3 are the newest, 1 is active
    assert collected.chunk_ids == () and collected.document_ids == ()
    repo.activate_version("kb1", 4, "activate")
    collected = repo.collect_versions("kb1", retention=2)
    assert collected.versions == (1,)
    assert sorted(collected.chunk_ids) == ["d1-c0", "d1-p0"]
    assert collected.document_ids == ("d1",)
    assert repo.get_document("d1") is None
    assert [v.seq for v in repo.list_versions("kb1")] == [3, 4]


def test_a_diff_counts_indexed_chunks_per_document(versioned: SqlRepository) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1", children=3), 1))
    repo.seal_draft("kb1")
    live = frozenset(c.id for c in make_chunks("d1", children=3))
    commit(repo, "d1", 2, retire=("d1-c0", "d1-c1"), basis=live)
    commit(repo, "d2", 2, window(make_chunks("d2", children=2), 2))
    repo.seal_draft("kb1")
    diff = repo.version_diff("kb1", 1, 2)
    assert [(d.document_id, d.filename, d.added, d.removed) for d in diff.documents] == [
        ("d1", "d1.pdf", 0, 2), ("d2", "d2.pdf", 2, 0)]
    backwards = repo.version_diff("kb1", 2, 1)
    assert [(d.document_id, d.added, d.removed) for d in backwards.documents] == [
        ("d1", 2, 0), ("d2", 0, 2)]


def test_deleting_a_kb_removes_its_version_rows(versioned: SqlRepository) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1"), 1), seal=True, activate=True)
    repo.delete_kb("kb1")
    assert repo.get_version_state("kb1") is None and repo.list_versions("kb1") == []
    assert repo.list_activations("kb1") == []


def test_data_from_before_the_migration_stays_searchable(db_url: str) -> None:
    command.upgrade(alembic_config(db_url), "0004")
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO knowledge_bases VALUES ('kb1', 'old', 'm', 3, '{}', "
                "'2024-01-01 00:00:00')"))
            connection.execute(sa.text(
                "INSERT INTO documents (id, kb_id, filename, media_type, sha256, size, status, "
                "metadata, created_at, updated_at) VALUES ('d1', 'kb1', 'a.txt', 'text/plain', "
                "'s', 1, 'READY', '{}', '2024-01-01 00:00:00', '2024-01-01 00:00:00')"))
            connection.execute(sa.text(
                "INSERT INTO chunks VALUES ('c1', 'd1', 'kb1', NULL, 1, 0, '[]', '{}', "
                "'old text', 2)"))
    finally:
        engine.dispose()
    upgrade_to_head(db_url)
    repo = SqlRepository(db_url)
    try:
        [chunk] = repo.list_chunks("d1")
        assert (chunk.valid_from_seq, chunk.valid_to_seq) == (0, 0)
        assert repo.get_document("d1").scope.allowed_roles == ()  # type: ignore[union-attr]
        assert repo.searchable_version("kb1") == 0
        assert [c.id for c, _ in repo.get_chunks_at("kb1", ["c1"], 0)] == ["c1"]
        assert [c.id for c, _ in repo.get_chunks_at("kb1", ["c1"], 7)] == ["c1"]
    finally:
        repo.close()


def test_a_diff_lists_a_metadata_only_change_with_its_keys(versioned: SqlRepository) -> None:
    repo = versioned
    commit(repo, "d1", 1, window(make_chunks("d1", children=1), 1))
    repo.set_metadata("d1", {"dept": "hr", "year": 2024, "draft": True})
    repo.seal_draft("kb1")
    repo.set_metadata("d1", {"dept": "it", "year": 2024, "draft": 1, "tags": ["a"]})
    assert repo.seal_draft("kb1") is not None  # the metadata change is the draft's change
    diff = repo.version_diff("kb1", 1, 2)
    assert diff.metadata_compared
    # true -> 1 is a change of type; year is the same
    assert [(d.document_id, d.added, d.removed, d.metadata_keys) for d in diff.documents] == [
        ("d1", 0, 0, ("dept", "draft", "tags"))]
    # from nothing sealed (version 0): every key of the new document is set
    assert repo.version_diff("kb1", 0, 1).documents[0].metadata_keys == (
        "dept", "draft", "year")
