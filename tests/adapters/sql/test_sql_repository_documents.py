"""SqlRepository: knowledge bases, documents and their status lifecycle."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sql_factories import make_chunks, make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import DocumentScope, DocumentStatus


def test_created_kb_reads_back_by_id_and_by_name(repo: SqlRepository) -> None:
    created = repo.create_kb(make_kb("kb1", "Manuals"))
    assert created.created_at is not None and created.created_at.tzinfo is not None
    assert repo.get_kb("kb1") == created
    assert repo.get_kb_by_name("Manuals") == created
    assert created.analyzer == {"tokenizer": "jieba", "lowercase": True}


def test_unknown_kb_reads_as_none(repo: SqlRepository) -> None:
    assert repo.get_kb("nope") is None
    assert repo.get_kb_by_name("nope") is None


def test_list_kbs_returns_every_kb_by_name(repo: SqlRepository) -> None:
    repo.create_kb(make_kb("k2", "beta"))
    repo.create_kb(make_kb("k1", "alpha"))
    assert [kb.name for kb in repo.list_kbs()] == ["alpha", "beta"]


def test_creating_a_kb_with_a_taken_name_is_invalid_input(repo: SqlRepository) -> None:
    repo.create_kb(make_kb("k1", "Manuals"))
    with pytest.raises(InvalidInput, match="named 'Manuals' already exists"):
        repo.create_kb(make_kb("k2", "Manuals"))
    assert [kb.id for kb in repo.list_kbs()] == ["k1"]


def test_creating_a_kb_with_a_taken_id_is_invalid_input(repo: SqlRepository) -> None:
    repo.create_kb(make_kb("k1", "one"))
    with pytest.raises(InvalidInput, match="id 'k1' already exists"):
        repo.create_kb(make_kb("k1", "two"))


def test_added_document_reads_back_by_id_and_by_sha(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    added = repo.add_document(make_document("d1", sha256="abc"))
    assert added.created_at is not None and added.updated_at is not None
    assert repo.get_document("d1") == added
    assert repo.find_document_by_sha256("kb1", "abc") == added
    assert added.scope == DocumentScope(
        source="upload", tenant_id="t1", dataset_id="ds1", visibility="public"
    )
    assert added.metadata == {"author": "张三", "tags": ["a", "b"]}


def test_timestamps_given_in_another_zone_are_stored_as_utc(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    shanghai = timezone(timedelta(hours=8))
    given = datetime(2024, 5, 1, 12, 0, tzinfo=shanghai)
    doc = make_document("d1").model_copy(update={"created_at": given})
    added = repo.add_document(doc)
    stored = repo.get_document("d1")
    assert stored is not None and stored.created_at == given
    assert stored.created_at.utcoffset() == timedelta(0)
    assert added.created_at == stored.created_at


def test_unknown_document_and_sha_read_as_none(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", sha256="abc"))
    assert repo.get_document("nope") is None
    assert repo.find_document_by_sha256("kb1", "other") is None
    assert repo.find_document_by_sha256("kb2", "abc") is None


def test_the_same_sha_may_be_two_documents_of_a_kb_but_a_key_only_one(
    repo: SqlRepository,
) -> None:
    # one copy per access scope (0013): the ingestion, not the schema, keeps one per scope
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", sha256="abc").model_copy(update={"key": "a.md"}))
    repo.add_document(make_document("d2", sha256="abc").model_copy(update={"key": "t2/a.md"}))
    _, hashed = repo.find_document_by_key_or_sha256("kb1", "none", "abc")
    assert [d.id for d in hashed] == ["d1", "d2"]
    with pytest.raises(InvalidInput, match=r"already holds the key 'a\.md' as document 'd1'"):
        repo.add_document(make_document("d3", sha256="def").model_copy(update={"key": "a.md"}))
    assert repo.get_document("d3") is None


def test_same_sha_in_another_kb_is_accepted(repo: SqlRepository) -> None:
    repo.create_kb(make_kb("kb1"))
    repo.create_kb(make_kb("kb2"))
    repo.add_document(make_document("d1", "kb1", sha256="abc"))
    repo.add_document(make_document("d2", "kb2", sha256="abc"))
    assert repo.find_document_by_sha256("kb2", "abc") == repo.get_document("d2")


def test_documents_without_sha_never_collide(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    for doc_id in ("d1", "d2"):
        doc = make_document(doc_id).model_copy(update={"sha256": None})
        repo.add_document(doc)
    assert len(repo.list_documents("kb1")) == 2


def test_adding_a_document_to_an_unknown_kb_is_not_found(repo: SqlRepository) -> None:
    with pytest.raises(NotFound, match="knowledge base 'ghost'"):
        repo.add_document(make_document("d1", "ghost"))


def test_adding_a_document_with_a_taken_id_is_invalid_input(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1", sha256="a"))
    with pytest.raises(InvalidInput, match="id 'd1' already exists"):
        repo.add_document(make_document("d1", sha256="b"))


def test_list_documents_is_ordered_by_creation_and_filters_by_status(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.create_kb(make_kb("kb2"))
    when = datetime(2024, 1, 1, tzinfo=UTC)
    for doc_id, status in [
        ("d3", DocumentStatus.READY),
        ("d1", DocumentStatus.PENDING),
        ("d2", DocumentStatus.READY),
    ]:
        doc = make_document(doc_id, status=status).model_copy(update={"created_at": when})
        repo.add_document(doc)
    repo.add_document(make_document("other", "kb2", status=DocumentStatus.READY))
    assert [d.id for d in repo.list_documents("kb1")] == ["d1", "d2", "d3"]
    ready = repo.list_documents("kb1", DocumentStatus.READY)
    assert [d.id for d in ready] == ["d2", "d3"]
    assert repo.list_documents("kb1", DocumentStatus.FAILED) == []


def test_status_moves_through_the_ingestion_lifecycle(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    added = repo.add_document(make_document("d1"))
    assert added.updated_at is not None
    previous = added.updated_at
    for status in (DocumentStatus.PARSING, DocumentStatus.INDEXING, DocumentStatus.READY):
        repo.set_status("d1", status)
        current = repo.get_document("d1")
        assert current is not None and current.status is status and current.error is None
        assert current.updated_at is not None and current.updated_at >= previous
        previous = current.updated_at
    assert previous > added.updated_at


def test_failed_status_keeps_the_error_and_a_later_status_clears_it(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    repo.set_status("d1", DocumentStatus.FAILED, "pdf is encrypted")
    failed = repo.get_document("d1")
    assert failed is not None
    assert (failed.status, failed.error) == (DocumentStatus.FAILED, "pdf is encrypted")
    repo.set_status("d1", DocumentStatus.PENDING)
    retried = repo.get_document("d1")
    assert retried is not None and retried.error is None


def test_an_error_message_with_nul_characters_still_fails_the_document(
    repo: SqlRepository,
) -> None:
    # PostgreSQL text cannot hold NUL; the document must reach FAILED all the same.
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    repo.set_status("d1", DocumentStatus.FAILED, "bad byte \x00 at 12")
    failed = repo.get_document("d1")
    assert failed is not None and failed.status is DocumentStatus.FAILED
    assert failed.error == "bad byte \ufffd at 12"


@pytest.mark.parametrize(
    "change",
    [{"media_type": "x" * 300}, {"size": 3 * 2**30}, {"filename": "a\x00b.pdf"}],
    ids=["varchar-length", "int32-range", "nul-in-text"],
)
def test_values_postgresql_refuses_are_invalid_input_there(
    repo: SqlRepository, backend: str, change: dict[str, object]
) -> None:
    repo.create_kb(make_kb())
    document = make_document("d1").model_copy(update=change)
    if backend == "postgresql":
        with pytest.raises(InvalidInput, match="document 'd1' cannot be stored"):
            repo.add_document(document)
        assert repo.get_document("d1") is None
    else:  # SQLite stores them as given
        assert repo.add_document(document) == repo.get_document("d1")


def test_setting_the_status_of_an_unknown_document_is_not_found(repo: SqlRepository) -> None:
    with pytest.raises(NotFound):
        repo.set_status("ghost", DocumentStatus.READY)


def test_ready_document_ids_returns_only_ready_documents_of_that_kb(
    repo: SqlRepository,
) -> None:
    repo.create_kb(make_kb("kb1"))
    repo.create_kb(make_kb("kb2"))
    repo.add_document(make_document("ready", status=DocumentStatus.READY))
    repo.add_document(make_document("indexing", status=DocumentStatus.INDEXING))
    repo.add_document(make_document("failed", status=DocumentStatus.FAILED))
    repo.add_document(make_document("elsewhere", "kb2", status=DocumentStatus.READY))
    asked = ["ready", "indexing", "failed", "elsewhere", "missing"]
    assert repo.ready_document_ids("kb1", asked) == {"ready"}
    assert repo.ready_document_ids("kb2", iter(asked)) == {"elsewhere"}
    assert repo.ready_document_ids("kb1", []) == set()


def test_ready_document_ids_handles_more_ids_than_one_in_list(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("ready", status=DocumentStatus.READY))
    asked = [f"missing-{i}" for i in range(1200)] + ["ready"]
    assert repo.ready_document_ids("kb1", asked) == {"ready"}


def test_delete_document_removes_it_with_its_chunks(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    repo.add_document(make_document("d2"))
    repo.replace_chunks("d1", make_chunks("d1"))
    repo.replace_chunks("d2", make_chunks("d2"))
    repo.delete_document("d1")
    assert repo.get_document("d1") is None
    assert repo.list_chunks("d1") == []
    assert repo.get_chunks(["d1-p0", "d1-c0"]) == []
    assert len(repo.list_chunks("d2")) == 4
    repo.delete_document("d1")  # deleting again is a no-op


def test_delete_kb_removes_its_documents_and_chunks_only(repo: SqlRepository) -> None:
    repo.create_kb(make_kb("kb1"))
    repo.create_kb(make_kb("kb2"))
    repo.add_document(make_document("d1", "kb1"))
    repo.add_document(make_document("d2", "kb2"))
    repo.replace_chunks("d1", make_chunks("d1", "kb1"))
    repo.replace_chunks("d2", make_chunks("d2", "kb2"))
    repo.delete_kb("kb1")
    assert repo.get_kb("kb1") is None
    assert repo.list_documents("kb1") == []
    assert repo.get_document("d1") is None
    assert repo.list_chunks("d1") == []
    assert repo.get_document("d2") is not None
    assert len(repo.list_chunks("d2")) == 4


def test_ping_succeeds_on_a_live_database(repo: SqlRepository) -> None:
    repo.ping()


def test_concurrent_writers_from_threads_all_succeed(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    errors: list[BaseException] = []

    def add(worker: int) -> None:
        try:
            for i in range(10):
                doc_id = f"w{worker}-{i}"
                repo.add_document(make_document(doc_id))
                repo.set_status(doc_id, DocumentStatus.READY)
        except BaseException as exc:  # collected so the main thread can fail the test
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(repo.list_documents("kb1", DocumentStatus.READY)) == 80
