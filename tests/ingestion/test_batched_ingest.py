"""Many small files: registered, claimed, staged and committed a batch at a time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import event

from ingestion.test_shared_embedding_batches import DIMENSION, CountingEmbedder
from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.adapters.sql import SqlRepository
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import DocumentStatus
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.files import find_files, ingest_files
from ragsift.ingestion.pipeline import IngestionService, NewFile

DOCUMENTS = 48
# Measured: 57 statements for 48 one-line files (batches of 16), none of them per document;
# before the batching each document took about 13 queries and 11 commits. One statement
# per document coming back would exceed this.
MAX_STATEMENTS_PER_DOCUMENT = 2


def _one_liners(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"t{i:03d}.txt").write_text(f"第{i}条简短的标题文本\n", "utf-8")
    return folder


def test_a_folder_of_one_line_files_costs_few_statements_per_document(tmp_path: Path) -> None:
    folder = _one_liners(tmp_path / "docs", DOCUMENTS)
    container = build(Settings(data_dir=tmp_path / "data"))
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        statements.append(sql)

    try:
        service = container.ingestion
        kb = service.ensure_kb("kb")
        service.recover(kb.id)  # start-up work, the same for any number of files
        engine = container.repository._engine
        event.listen(engine, "before_cursor_execute", seen)
        results, _ = ingest_files(service, kb, find_files([folder]).files)
        event.remove(engine, "before_cursor_execute", seen)
    finally:
        container.close()
    assert [r.outcome and r.outcome.document.status for r in results] == (
        [DocumentStatus.READY] * DOCUMENTS)
    assert len(statements) <= MAX_STATEMENTS_PER_DOCUMENT * DOCUMENTS, len(statements)


def test_only_plainly_new_files_are_registered_together(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data", max_file_bytes=1000))
    try:
        service = container.ingestion
        kb = service.ensure_kb("kb")
        stored = service.accept(kb, "old.md", b"# old\n\nstored before\n")
        outcomes = service.register_new(kb, [
            NewFile("a.md", b"# a\n\nsame bytes\n", "a.md"),
            NewFile("b.md", b"# a\n\nsame bytes\n", "b.md"),  # a's bytes: a duplicate
            NewFile("old.md", b"# old\n\nnew bytes\n", "old.md"),  # a replacement
            NewFile("copy.md", b"# old\n\nstored before\n", "copy.md"),  # old's bytes
            NewFile("c.bin", b"\0\1", "c.bin"),  # unsupported
            NewFile("big.md", b"x" * 1001, "big.md"),  # over the limit
            NewFile("d.md", b"# d\n\nits own\n", "d.md", source_mtime=5.0),
        ])
        registered = [o.document for o in outcomes if o is not None]
        assert [o is not None for o in outcomes] == [True, False, False, False, False, False,
                                                     True]
        assert [(d.key, d.status, d.source_mtime) for d in registered] == [
            ("a.md", DocumentStatus.PENDING, None), ("d.md", DocumentStatus.PENDING, 5.0)]
        for document in registered:  # each with its original, named in the facts
            assert service.read_original(document).startswith(b"# ")
        keys = {d.key for d in container.repository.list_documents(kb.id)}
        assert keys == {"old.md", "a.md", "d.md"} and stored.document.key == "old.md"
    finally:
        container.close()


def test_a_duplicate_in_the_same_batch_is_reported_as_its_twin(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.md", "b.md"):
        (folder / name).write_text("# twin\n\nthe same text\n", "utf-8")
    container = build(Settings(data_dir=tmp_path / "data"))
    try:
        kb = container.ingestion.ensure_kb("kb")
        results, _ = ingest_files(container.ingestion, kb, find_files([folder]).files)
        outcomes = [r.outcome for r in results]
        assert all(o is not None and o.document.status == DocumentStatus.READY
                   for o in outcomes)
        assert len({o.document.id for o in outcomes if o is not None}) == 1
        assert len(container.repository.list_documents(kb.id)) == 1
    finally:
        container.close()


class _NoBatchedMoves(SqlRepository):
    """A repository whose batched status move fails (as a database error would)."""

    def set_statuses(self, document_ids: Sequence[str], status: DocumentStatus) -> None:
        raise RuntimeError("batched move refused")


def test_documents_whose_batched_move_fails_are_staged_one_by_one(tmp_path: Path) -> None:
    repository = _NoBatchedMoves(f"sqlite:///{tmp_path / 'facts.sqlite'}")
    embedder = CountingEmbedder()
    service = IngestionService(
        repository, EmbeddedIndex(tmp_path / "index", DIMENSION), embedder,
        LocalObjectStore(tmp_path / "objects"), Chunker(E5Tokenizer()),
        max_file_bytes=10**6, batch_size=4, workers=2,
    )
    try:
        kb = service.ensure_kb("kb")
        ids = [service.accept(kb, f"d{i}.txt", f"第{i}行\n".encode()).document.id
               for i in range(6)]
        outcomes = service.process_many(ids)
    finally:
        service.close()
    assert [o.document.status for o in outcomes] == [DocumentStatus.READY] * 6
    assert [len(call) for call in embedder.calls] == [4, 2]  # still embedded together
