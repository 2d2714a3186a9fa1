"""The embedded index compiles the version window and the caller's roles in both stores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tantivy

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
from ragsift.adapters.embedded_index.bm25_store import SparseLayoutOutdated
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

DIM = 4
RECORDS = [
    IndexRecord("always", "d1", "kb", "alpha one"),  # 0/0: in every version, every role
    IndexRecord("from2", "d1", "kb", "alpha two", allowed_roles=("hr",), valid_from_seq=2),
    IndexRecord("one-two", "d2", "kb", "alpha three", allowed_roles=("eng", "hr"),
                valid_from_seq=1, valid_to_seq=3),
    IndexRecord("other-kb", "d3", "kb2", "alpha four", valid_from_seq=1),
]
QUERY = np.ones(DIM, dtype=np.float32)


def vectors(count: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.random((count, DIM), dtype=np.float32) + 0.1


def found(index: EmbeddedIndex, **fields: object) -> tuple[list[str], list[str]]:
    search_filter = SearchFilter.model_validate({"kb_id": "kb", **fields})
    dense = sorted(h.chunk_id for h in index.search_dense(QUERY, search_filter, 10))
    sparse = sorted(h.chunk_id for h in index.search_sparse("alpha", search_filter, 10))
    return dense, sparse


@pytest.fixture
def index(tmp_path: Path) -> EmbeddedIndex:
    opened = EmbeddedIndex(tmp_path / "index", DIM)
    opened.upsert(RECORDS, vectors(len(RECORDS)))
    yield opened
    opened.close()


@pytest.mark.parametrize(("version", "expected"), [
    (0, ["always"]),
    (1, ["always", "one-two"]),
    (2, ["always", "from2", "one-two"]),
    (3, ["always", "from2"]),
    (None, ["always", "from2", "one-two"]),
])
def test_the_version_window_is_a_filter_in_both_stores(
    index: EmbeddedIndex, version: int | None, expected: list[str]
) -> None:
    assert found(index, version_seq=version, roles=None) == (expected, expected)


@pytest.mark.parametrize(("roles", "expected"), [
    (None, ["always", "from2", "one-two"]),  # every role: asked for explicitly only
    (frozenset(), ["always"]),  # a caller without roles sees unrestricted chunks only
    (frozenset({"eng"}), ["always", "one-two"]),
    (frozenset({"hr", "ops"}), ["always", "from2", "one-two"]),
    (frozenset({"ops"}), ["always"]),
])
def test_roles_restrict_chunks_with_allowed_roles_in_both_stores(
    index: EmbeddedIndex, roles: frozenset[str] | None, expected: list[str]
) -> None:
    assert found(index, roles=roles) == (expected, expected)


def test_a_filter_naming_no_role_keeps_unrestricted_chunks_only(index: EmbeddedIndex) -> None:
    assert found(index) == (["always"], ["always"])
    assert found(index, version_seq=2) == (["always"], ["always"])


def test_roles_and_versions_combine_with_the_other_filters(index: EmbeddedIndex) -> None:
    assert found(index, roles=frozenset({"eng"}), version_seq=3) == (["always"], ["always"])
    assert found(index, roles=frozenset({"hr"}), version_seq=2,
                 document_ids=frozenset({"d2"})) == (["one-two"], ["one-two"])


def test_update_records_rewrites_the_window_and_keeps_the_vector(
    index: EmbeddedIndex, tmp_path: Path
) -> None:
    before = {h.chunk_id: h.score for h in index.search_dense(QUERY, SearchFilter(kb_id="kb"), 10)}
    index.update_records([IndexRecord("always", "d1", "kb", "alpha one", valid_to_seq=2),
                          IndexRecord("unknown", "d9", "kb", "ignored", valid_to_seq=2)])
    assert found(index, version_seq=1, roles=None) == (["always", "one-two"],
                                                       ["always", "one-two"])
    assert found(index, version_seq=2, roles=None) == (["from2", "one-two"],
                                                       ["from2", "one-two"])
    after = {h.chunk_id: h.score for h in index.search_dense(QUERY, SearchFilter(kb_id="kb"), 10)}
    assert after["always"] == pytest.approx(before["always"])
    assert index.count() == len(RECORDS)
    index.close()
    reopened = EmbeddedIndex(tmp_path / "index", DIM)
    try:
        assert found(reopened, version_seq=2, roles=None) == (["from2", "one-two"],
                                                              ["from2", "one-two"])
    finally:
        reopened.close()


def test_dense_rows_logged_before_versions_are_in_every_version(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path / "index", DIM)
    index.upsert([IndexRecord("old", "d1", "kb", "alpha", tenant_id="t1")], vectors(1))
    index.close()
    log = tmp_path / "index" / "dense" / "log-0.jsonl"
    entry = json.loads(log.read_text(encoding="utf-8"))
    entry["add"] = [row[:7] for row in entry["add"]]  # the 7-field rows of older releases
    log.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    reopened = EmbeddedIndex(tmp_path / "index", DIM)
    try:
        search_filter = SearchFilter(kb_id="kb", version_seq=9, roles=frozenset(),
                                     tenant_ids=frozenset({"t1"}))
        assert [h.chunk_id for h in reopened.search_dense(QUERY, search_filter, 5)] == ["old"]
    finally:
        reopened.close()


def test_a_bm25_index_written_before_versions_is_a_clear_error(tmp_path: Path) -> None:
    # a kb index with the schema of older releases: no roles, no version window
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document_id", stored=True, tokenizer_name="raw",
                           index_option="basic")
    for name in ("kb_id", "source", "tenant_id", "dataset_id", "visibility"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    directory = tmp_path / "index" / "sparse" / kb_directory_name("kb")
    directory.mkdir(parents=True)
    old = tantivy.Index(builder.build(), path=str(directory))
    writer = old.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c", document_id="d", kb_id="kb", text="x"))
    writer.commit()
    writer.wait_merging_threads()
    # refused before anything is read or written; `ragsift rebuild-sparse` rebuilds it
    with pytest.raises(SparseLayoutOutdated, match="ragsift rebuild-sparse"):
        EmbeddedIndex(tmp_path / "index", DIM)
