"""SqlRepository: storing, replacing and fetching chunks."""

from __future__ import annotations

import random

import pytest
from sql_factories import make_chunks, make_document, make_kb
from sqlalchemy import create_engine, text

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sql.chunk_queries import chunks_with_filenames
from ragsift.adapters.sql.orm import CHUNK_TABLE, CHUNK_VALUE_COLUMNS, make_engine
from ragsift.domain.errors import InvalidInput, NotFound
from ragsift.domain.models import Chunk, DocumentStatus, Locator


@pytest.fixture
def doc_repo(repo: SqlRepository) -> SqlRepository:
    repo.create_kb(make_kb())
    repo.add_document(make_document("d1"))
    return repo


def _many_chunks(count: int, doc_id: str = "d1") -> list[Chunk]:
    return [
        Chunk(
            id=f"{doc_id}-{i:06d}",
            document_id=doc_id,
            kb_id="kb1",
            parent_id=None if i % 10 == 0 else f"{doc_id}-{i // 10 * 10:06d}",
            level=0 if i % 10 == 0 else 1,
            ordinal=i,
            heading_path=("Chapter", f"Section {i // 100}"),
            locator=Locator(page=i // 40 + 1),
            text=f"chunk number {i} " * 20,
            token_count=60,
        )
        for i in range(count)
    ]


def test_replace_chunks_round_trips_heading_path_and_locator(doc_repo: SqlRepository) -> None:
    chunks = make_chunks("d1")
    chunks.append(
        chunks[-1].model_copy(
            update={"id": "d1-slide", "ordinal": 9, "heading_path": (), "locator": Locator(slide=7)}
        )
    )
    doc_repo.replace_chunks("d1", chunks)
    stored = doc_repo.list_chunks("d1")
    assert stored == chunks
    assert stored[0].heading_path == ("第一章", "Intro")
    assert isinstance(stored[0].heading_path, tuple)
    assert stored[1].locator == Locator(page=1, sheet="Sheet1", cell_range="A0:B0")
    assert stored[-1].locator == Locator(slide=7)


def test_list_chunks_orders_by_level_then_ordinal(doc_repo: SqlRepository) -> None:
    chunks = make_chunks("d1", children=5)
    doc_repo.replace_chunks("d1", list(reversed(chunks)))
    assert [(c.level, c.ordinal) for c in doc_repo.list_chunks("d1")] == [
        (0, 0),
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
    ]


def test_replace_chunks_drops_the_previous_chunks(doc_repo: SqlRepository) -> None:
    doc_repo.replace_chunks("d1", make_chunks("d1", children=5))
    fresh = _many_chunks(3)
    doc_repo.replace_chunks("d1", fresh)
    assert doc_repo.list_chunks("d1") == fresh
    assert doc_repo.get_chunks(["d1-c4"]) == []
    doc_repo.replace_chunks("d1", [])
    assert doc_repo.list_chunks("d1") == []


def test_replace_chunks_rejects_chunks_of_another_document(doc_repo: SqlRepository) -> None:
    with pytest.raises(InvalidInput, match="other documents"):
        doc_repo.replace_chunks("d1", make_chunks("d2"))


def test_replace_chunks_of_an_unknown_document_is_not_found(doc_repo: SqlRepository) -> None:
    with pytest.raises(NotFound):
        doc_repo.replace_chunks("ghost", make_chunks("ghost"))


def test_failed_replace_keeps_the_previous_chunks(doc_repo: SqlRepository) -> None:
    original = make_chunks("d1")
    doc_repo.replace_chunks("d1", original)
    duplicated = [*_many_chunks(2), _many_chunks(2)[0]]
    with pytest.raises(InvalidInput, match="duplicate chunk ids"):
        doc_repo.replace_chunks("d1", duplicated)
    assert doc_repo.list_chunks("d1") == original


def test_get_chunks_preserves_the_requested_order_beyond_1000_ids(
    doc_repo: SqlRepository,
) -> None:
    chunks = _many_chunks(1500)
    doc_repo.replace_chunks("d1", chunks)
    wanted = [c.id for c in chunks]
    random.Random(7).shuffle(wanted)
    got = doc_repo.get_chunks(wanted)
    assert [c.id for c in got] == wanted
    by_id = {c.id: c for c in chunks}
    assert all(c == by_id[c.id] for c in got)


def test_get_chunks_skips_unknown_ids(doc_repo: SqlRepository) -> None:
    doc_repo.replace_chunks("d1", make_chunks("d1"))
    got = doc_repo.get_chunks(["d1-c2", "missing", "d1-p0"])
    assert [c.id for c in got] == ["d1-c2", "d1-p0"]
    assert doc_repo.get_chunks([]) == []


def test_deleting_a_document_row_cascades_to_chunks_in_the_database(
    doc_repo: SqlRepository, db_url: str
) -> None:
    # Proves the FK cascade itself (on SQLite, with the pragma the repository's engine sets).
    doc_repo.replace_chunks("d1", make_chunks("d1"))
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM documents WHERE id = 'd1'"))
    finally:
        engine.dispose()
    assert doc_repo.list_chunks("d1") == []


@pytest.mark.sqlite_only
def test_sqlite_foreign_keys_are_off_without_the_engines_pragma(db_url: str) -> None:
    # A plain engine would have left orphans above: the pragma is what matters on SQLite.
    SqlRepository(db_url).close()
    plain = create_engine(db_url)
    try:
        with plain.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 0
    finally:
        plain.dispose()


def test_replace_chunks_stores_a_large_batch_completely(
    doc_repo: SqlRepository,
) -> None:
    # speed is measured by benchmarks/, not here; this proves the bulk path loses nothing
    chunks = _many_chunks(20_000)
    doc_repo.replace_chunks("d1", chunks)
    assert len(doc_repo.list_chunks("d1")) == 20_000
    assert doc_repo.get_chunks([chunks[-1].id, chunks[0].id]) == [chunks[-1], chunks[0]]


def test_get_ready_chunks_keeps_only_ready_documents_of_the_kb_in_order(
    doc_repo: SqlRepository,
) -> None:
    doc_repo.create_kb(make_kb("kb2"))
    doc_repo.add_document(make_document("d2", status=DocumentStatus.READY))
    doc_repo.add_document(make_document("d3", kb_id="kb2", status=DocumentStatus.READY))
    for doc_id, kb_id in (("d1", "kb1"), ("d2", "kb1"), ("d3", "kb2")):
        doc_repo.replace_chunks(doc_id, make_chunks(doc_id, kb_id))
    doc_repo.set_status("d1", DocumentStatus.INDEXING)  # d1 is not READY
    wanted = [c.id for c in make_chunks("d2")][::-1] + [c.id for c in make_chunks("d1")]
    wanted += [c.id for c in make_chunks("d3", "kb2")] + ["unknown"]
    found = doc_repo.get_ready_chunks("kb1", wanted)
    assert [chunk.id for chunk, _ in found] == [c.id for c in make_chunks("d2")][::-1]
    assert {filename for _, filename in found} == {"d2.pdf"}


def test_get_ready_chunks_returns_the_stored_chunks_whole_across_in_list_batches(
    doc_repo: SqlRepository,
) -> None:
    """The READY re-check reads on the driver: every field must come back as stored
    (JSON columns decoded, boxes as tuples), in the order asked, whatever the batch size,
    with ids that SQL or a driver's placeholders could misread kept as bound values."""
    doc_repo.add_document(make_document("d'2%s", status=DocumentStatus.READY))
    odd = [
        Chunk(id=f"d'2%s-{i}?", document_id="d'2%s", kb_id="kb1", parent_id=None,
              level=1, ordinal=i,
              heading_path=("第一章", f"% {i}"),
              locator=Locator(page=i + 1, boxes=((0.1, 0.2, 0.3, 0.4),)),
              asset_ids=(f"asset-{i}",), text=f"text {i} '%s' ?", token_count=4)
        for i in range(7)
    ]
    doc_repo.replace_chunks("d'2%s", odd)
    wanted = [*[c.id for c in odd][::-1], "unknown", odd[0].id]
    with doc_repo._engine.connect() as connection:
        for batch in (1, 2, 500):
            found = chunks_with_filenames(
                connection, "kb1", wanted, (DocumentStatus.READY.value,), batch=batch)
            assert [chunk for chunk, _ in found] == [*odd[::-1], odd[0]]
            assert {filename for _, filename in found} == {"d'2%s.pdf"}
    assert doc_repo.get_ready_chunks("kb1", wanted) == found


def test_the_driver_level_reads_name_every_column_of_the_chunks_table() -> None:
    """A column added to the table must be added to the driver-level reads' list too, or
    search would build chunks without it."""
    assert sorted(CHUNK_VALUE_COLUMNS) == sorted(column.name for column in CHUNK_TABLE.c)
    assert sorted(CHUNK_VALUE_COLUMNS) == sorted(Chunk.model_fields)
