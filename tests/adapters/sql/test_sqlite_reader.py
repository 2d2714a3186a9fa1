"""The read-only SQLite reader of a CLI search answers as SqlRepository does over the same
database, opens only a database at the newest schema, and hands other calls to SqlRepository."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sql_factories import make_chunks, make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.adapters.sqlite_reader import SqliteSearchReader, open_reader, sqlite_path
from ragsift.domain.errors import NotFound
from ragsift.domain.faq import FaqEntry
from ragsift.domain.models import Chunk, DocumentStatus, Locator
from ragsift.domain.versions import DraftCommit


def _window(chunks: list[Chunk], seq: int) -> tuple[Chunk, ...]:
    return tuple(c.model_copy(update={"valid_from_seq": seq}) for c in chunks)


def _commit(repo: SqlRepository, doc_id: str, seq: int, add: tuple[Chunk, ...] = (),
            retire: tuple[str, ...] = (), basis: frozenset[str] = frozenset(),
            status: DocumentStatus = DocumentStatus.READY) -> None:
    repo.commit_draft([DraftCommit(kb_id="kb1", document_id=doc_id, draft_seq=seq, basis=basis,
                                   add=add, retire=retire, status=status)])


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SqlRepository]]:
    """kb1 with two published versions (d1 retired in the second), live chunks of d3 with
    boxes and assets, FAQ entries and KB settings; kb2 empty. Read through SqlRepository."""
    url = f"sqlite:///{tmp_path_factory.mktemp('reader') / 'ragsift.sqlite'}"
    repo = SqlRepository(url)
    repo.create_kb(make_kb())
    repo.create_kb(make_kb("kb2"))
    for doc_id in ("d1", "d2"):
        repo.add_document(make_document(doc_id, status=DocumentStatus.INDEXING))
    repo.ensure_version_state("kb1", "staged", 3)
    _commit(repo, "d1", 1, _window(make_chunks("d1", children=3), 1))
    _commit(repo, "d2", 1, _window(make_chunks("d2", children=2), 1))
    repo.seal_draft("kb1")
    live = frozenset(c.id for c in make_chunks("d1", children=3))
    _commit(repo, "d1", 2, retire=tuple(live), basis=live, status=DocumentStatus.RETIRED)
    repo.seal_draft("kb1")
    repo.activate_version("kb1", 1, "activate")
    repo.add_document(make_document("d3", status=DocumentStatus.READY))
    boxed = [c.model_copy(update={"locator": Locator(page=2, boxes=((1.0, 2.0, 3.0, 4.0),)),
                                  "asset_ids": ("a1",)}) for c in make_chunks("d3", children=4)]
    repo.replace_chunks("d3", boxed)
    repo.add_faq_entries([FaqEntry(id=f"f{i}", kb_id="kb1", question=f"q{i}", answer="a")
                          for i in range(3)])
    repo.save_kb_settings("kb1", {"chunk_tokens": 300}, {"chunk_tokens": 256})
    yield url, repo
    repo.close()


@pytest.fixture(scope="module")
def reader(database: tuple[str, SqlRepository]) -> Iterator[SqliteSearchReader]:
    url, _ = database
    opened = open_reader(url, lambda: SqlRepository(url))
    assert opened is not None
    yield opened
    opened.close()


CHUNK_IDS = ["d3-c2", "d1-c1", "missing", "d2-p0", "d3-c0", "d1-p0", "d3-c2"]


def test_the_reader_returns_what_sql_repository_returns_for_every_search_read(
    database: tuple[str, SqlRepository], reader: SqliteSearchReader,
) -> None:
    _, repo = database
    for kb_id in ("kb1", "kb2", "nope"):
        assert reader.get_kb(kb_id) == repo.get_kb(kb_id)
        assert reader.get_kb_settings(kb_id) == repo.get_kb_settings(kb_id)
        assert reader.searchable_version(kb_id) == repo.searchable_version(kb_id)
        assert reader.count_faq_entries(kb_id) == repo.count_faq_entries(kb_id)
        for status in (None, DocumentStatus.READY, DocumentStatus.RETIRED):
            assert reader.list_documents(kb_id, status) == repo.list_documents(kb_id, status)
    for name in ("name-kb1", "name-kb2", "nope"):
        assert reader.get_kb_by_name(name) == repo.get_kb_by_name(name)
    assert reader.list_kbs() == repo.list_kbs()
    for seq in (0, 1, 2, 3):
        assert reader.count_faq_entries("kb1", seq) == repo.count_faq_entries("kb1", seq)
        assert reader.get_chunks_at("kb1", CHUNK_IDS, seq) == repo.get_chunks_at(
            "kb1", CHUNK_IDS, seq)
    assert reader.get_chunks(CHUNK_IDS) == repo.get_chunks(CHUNK_IDS)
    for doc_id in ("d1", "d2", "d3", "nope"):
        assert reader.list_chunks(doc_id) == repo.list_chunks(doc_id)
    documents = ["d3", "d1", "nope", "d3"]
    assert reader.document_metadata(documents) == repo.document_metadata(documents)
    anchors = repo.get_chunks(["d3-c1", "d3-c3", "d2-p0", "d1-c0"])
    for window in (0, 1, 2, 5):
        assert reader.get_neighbours(anchors, window) == repo.get_neighbours(anchors, window)
    assert not reader.opened_full  # none of these needed SQLAlchemy
    # the data exercise every branch: not a comparison of empty answers
    assert reader.searchable_version("kb1") == 1 and reader.count_faq_entries("kb1") == 3
    assert len(reader.get_chunks_at("kb1", CHUNK_IDS, 1)) == 6  # d3-c2 asked twice
    assert reader.get_chunks(["d3-c0"])[0].locator.boxes == ((1.0, 2.0, 3.0, 4.0),)
    assert reader.get_kb_settings("kb1").overrides == {"chunk_tokens": 300}
    assert len(reader.get_neighbours(anchors, 1)) >= 3


def test_a_pinned_version_and_other_reads_go_to_sql_repository(
    database: tuple[str, SqlRepository], reader: SqliteSearchReader,
) -> None:
    _, repo = database
    assert reader.searchable_version("kb1", pinned=2) == 2
    with pytest.raises(NotFound, match="not retained"):
        reader.searchable_version("kb1", pinned=9)
    assert reader.opened_full
    assert reader.get_faq_entries(["f1"]) == repo.get_faq_entries(["f1"])


def test_the_reader_writes_out_every_method_of_the_search_ports_and_forwards_nothing_else(
    reader: SqliteSearchReader,
) -> None:
    from ragsift.bootstrap.search import SearchRepository

    port_methods = {name for name in dir(SearchRepository) if not name.startswith("_")}
    written = {name for cls in type(reader).__mro__[:-1] for name in vars(cls)}
    assert port_methods - written == set()
    assert "__getattr__" not in written
    # SqlRepository's own methods outside the ports are not reachable through the reader
    assert not hasattr(reader, "close_change_probe")


def test_only_a_sqlite_file_at_the_newest_schema_is_opened(tmp_path: Path) -> None:
    def never() -> SqlRepository:
        raise AssertionError("not opened")

    assert open_reader(f"sqlite:///{tmp_path / 'absent.sqlite'}", never) is None
    old = tmp_path / "old.sqlite"
    import sqlite3

    with sqlite3.connect(old) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
        connection.execute("INSERT INTO alembic_version VALUES ('0001')")
    connection.close()
    assert open_reader(f"sqlite:///{old}", never) is None
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert open_reader(f"sqlite:///{empty}", never) is None
    assert sqlite_path("postgresql://u@h/db") is None
    assert sqlite_path("sqlite://") is None and sqlite_path("sqlite:///:memory:") is None
    assert sqlite_path("sqlite:////abs/x.sqlite") == Path("/abs/x.sqlite")
