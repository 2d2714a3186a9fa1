"""`ragsift rebuild-sparse` (also the upgrade from the old BM25 layout) and `ragsift reindex`."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import tantivy

from api.api_helpers import HOTELS, LEAVE
from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
from ragsift.adapters.embedded_index.bm25_schema import schema
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.models import CHILD_LEVEL
from ragsift.domain.requests import SearchRequest
from support.cli import ragsift
from support.damage import bm25_directory, damage_bm25

QUERIES = ("hotel limit per night", "年假 结转")


def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir)


def setup_kb(data_dir: Path) -> tuple[str, int]:
    container = build(settings(data_dir))
    try:
        kb = container.ingestion.ensure_kb("docs")
        for name, data in (("hotels.md", HOTELS), ("leave.md", LEAVE)):
            container.ingestion.ingest_bytes(kb, name, data)
        children = sum(
            1 for d in container.repository.list_documents(kb.id)
            for c in container.repository.list_chunks(d.id) if c.level == CHILD_LEVEL
        )
        return kb.id, children
    finally:
        container.close()


def sparse_answers(data_dir: Path, kb_id: str) -> list[list[tuple[str, float | None]]]:
    container = build(settings(data_dir))
    try:
        answers = []
        for query in QUERIES:
            request = SearchRequest(query=query, kb_id=kb_id, mode="sparse", small2big=False)
            hits = asyncio.run(container.retrieval.search(request)).hits
            answers.append([(hit.chunk_id, hit.sparse_score) for hit in hits])
        return answers
    finally:
        container.close()


def old_schema() -> tantivy.Schema:
    """The kb index schema before chunks carried KB versions and roles."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document_id", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("kb_id", "source", "tenant_id", "dataset_id", "visibility"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    return builder.build()


def write_index(directory: Path, index_schema: tantivy.Schema) -> None:
    legacy = tantivy.Index(index_schema, path=str(directory))
    writer = legacy.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c", document_id="d", kb_id="k", text="x"))
    writer.commit()
    writer.wait_merging_threads()


def make_old_layout(sparse_dir: Path, layout: str) -> None:
    """Replace the kb indexes with what older versions wrote: one index at the root for every
    kb ("single-index"), or per-kb indexes of the earlier schema ("old-schema")."""
    for entry in sparse_dir.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
            if layout == "old-schema":
                entry.mkdir()
                write_index(entry, old_schema())
    if layout == "single-index":
        write_index(sparse_dir, schema())


@pytest.mark.parametrize("layout", ["single-index", "old-schema"])
def test_rebuild_sparse_upgrades_an_old_layout_and_keeps_the_answers(
    tmp_path: Path, layout: str
) -> None:
    data_dir = tmp_path / "data"
    kb_id, children = setup_kb(data_dir)
    expected = sparse_answers(data_dir, kb_id)
    assert all(expected)
    sparse_dir = data_dir / "index" / "sparse"
    make_old_layout(sparse_dir, layout)

    refused = ragsift(data_dir, "search", QUERIES[0], "--kb", "docs", "--mode", "sparse")
    assert refused.returncode == 1
    assert "sparse_layout_outdated" in refused.stderr
    assert "ragsift rebuild-sparse" in refused.stderr

    rebuilt = ragsift(data_dir, "rebuild-sparse", "--kb", "docs", "--json")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout) == [
        {"kb_id": kb_id, "kb": "docs", "chunks": children, "faq_entries": 0}
    ]
    assert "rebuilding every knowledge base" in rebuilt.stderr
    assert sparse_answers(data_dir, kb_id) == expected
    assert sorted(e.name for e in sparse_dir.iterdir()) == [".lock", kb_directory_name(kb_id)]
    aside = [e for e in sparse_dir.parent.iterdir() if e.name.startswith("sparse.single")]
    assert [(e / "meta.json").is_file() for e in aside] == ([True] if layout == "single-index"
                                                             else [])


@pytest.mark.parametrize("how", ["emptied", "no_meta"])
def test_rebuild_sparse_repairs_a_damaged_kb_index_that_failed_only_that_kb(
    tmp_path: Path, how: str
) -> None:
    data_dir = tmp_path / "data"
    kb_id, children = setup_kb(data_dir)
    expected = sparse_answers(data_dir, kb_id)
    damage_bm25(bm25_directory(data_dir / "index", kb_id), how)
    note = tmp_path / "parking.md"
    note.write_text("# Parking\n\nThe parking fee is 5 dollars per day.\n", encoding="utf-8")

    refused = ragsift(data_dir, "search", QUERIES[0], "--kb", "docs", "--mode", "sparse")
    hybrid = ragsift(data_dir, "search", QUERIES[0], "--kb", "docs", "--json")
    failed = ragsift(data_dir, "ingest", str(note), "--kb", "docs")
    other = ragsift(data_dir, "ingest", str(note), "--kb", "other")

    assert refused.returncode == 1
    assert f"`ragsift rebuild-sparse --kb {kb_id}`" in " ".join(refused.stderr.split())
    assert hybrid.returncode == 0, hybrid.stderr
    assert json.loads(hybrid.stdout)  # the dense channel alone
    assert failed.returncode == 2
    assert "FAILED" in failed.stderr and "rebuild-sparse" in " ".join(failed.stderr.split())
    assert other.returncode == 0, other.stderr

    rebuilt = ragsift(data_dir, "rebuild-sparse", "--kb", kb_id, "--json")  # the id named

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout) == [
        {"kb_id": kb_id, "kb": "docs", "chunks": children, "faq_entries": 0}
    ]
    assert sparse_answers(data_dir, kb_id) == expected


def test_reindex_reparses_the_kb_and_names_an_unknown_document(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    kb_id, children = setup_kb(data_dir)
    expected = sparse_answers(data_dir, kb_id)

    result = ragsift(data_dir, "reindex", "--kb", "docs", "--json")

    assert result.returncode == 0, result.stderr
    outcomes = json.loads(result.stdout)
    assert [(o["filename"], o["status"], o["skipped"]) for o in outcomes] == [
        ("hotels.md", "READY", None), ("leave.md", "READY", None)
    ]
    assert sum(o["chunks"] for o in outcomes) == children
    assert sparse_answers(data_dir, kb_id) == expected
    unknown = ragsift(data_dir, "reindex", "--kb", "docs", "--doc-id", "nope")
    assert unknown.returncode == 2
    assert "'nope' is not in knowledge base 'docs'" in unknown.stderr


def test_fill_second_dense_encodes_the_chunks_indexed_before_the_channel_was_on(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    container = build(Settings(data_dir=data_dir, second_dense="off"))
    try:
        kb = container.ingestion.ensure_kb("docs")
        for name, data in (("hotels.md", HOTELS), ("leave.md", LEAVE)):
            container.ingestion.ingest_bytes(kb, name, data)
    finally:
        container.close()
    english = SearchRequest(query="How many days of paid annual leave per year?", kb_id=kb.id,
                            second_dense=True, small2big=False, run_faq=False)

    def second_channel_hits() -> int:
        after = build(Settings(data_dir=data_dir, second_dense="use"))
        try:
            trace = asyncio.run(after.retrieval.search(english)).trace
            return sum(run.candidates for run in trace.channels if run.channel == "second_dense")
        finally:
            after.close()

    assert second_channel_hits() == 0  # nothing of the KB is in the channel yet
    env_use = {"RAGSIFT_SECOND_DENSE": "use"}
    first = ragsift(data_dir, "fill-second-dense", "--kb", "docs", "--json", env=env_use)
    assert first.returncode == 0, first.stderr
    filled = json.loads(first.stdout)[0]["filled"]
    assert filled > 0
    assert second_channel_hits() == filled  # every child chunk, found by the channel
    again = ragsift(data_dir, "fill-second-dense", "--json", env=env_use)
    assert json.loads(again.stdout) == [{"kb": "docs", "filled": 0}]  # nothing twice
    off = ragsift(data_dir, "fill-second-dense", env={"RAGSIFT_SECOND_DENSE": "off"})
    assert off.returncode != 0 and "no second dense channel" in off.stderr
