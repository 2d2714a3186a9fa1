"""RAGSIFT_INDEX_URI selects the index backend; bad values fail at start-up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.bootstrap import build_search_index
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord


@pytest.mark.parametrize(
    "uri", ["milvus", "mysql://host/db", "/data/milvus.sqlite", "host:19530", "file.DB "]
)
def test_an_index_uri_that_is_neither_a_file_nor_a_server_is_refused(uri: str) -> None:
    with pytest.raises(ValidationError, match="RAGSIFT_INDEX_URI"):
        Settings(index_uri=uri)


@pytest.mark.parametrize(
    "uri", ["milvus.db", "/srv/ragsift/milvus.db", "http://milvus:19530", "https://h/db1"]
)
def test_milvus_lite_files_and_server_urls_are_accepted(uri: str) -> None:
    assert Settings(index_uri=uri).index_uri == uri


@pytest.mark.parametrize("prefix", ["", "1abc", "a-b", "a b", "x" * 202])
def test_a_collection_prefix_milvus_would_refuse_is_refused(prefix: str) -> None:
    with pytest.raises(ValidationError):
        Settings(index_collection_prefix=prefix)


def test_the_environment_sets_the_milvus_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIFT_INDEX_URI", "http://milvus:19530")
    monkeypatch.setenv("RAGSIFT_INDEX_TOKEN", "root:Milvus")
    monkeypatch.setenv("RAGSIFT_INDEX_COLLECTION_PREFIX", "team_a")
    monkeypatch.setenv("RAGSIFT_INDEX_CONSISTENCY", "Bounded")
    settings = Settings()
    assert (settings.index_uri, settings.index_token) == ("http://milvus:19530", "root:Milvus")
    assert (settings.index_collection_prefix, settings.index_consistency) == ("team_a", "Bounded")


@pytest.mark.parametrize("uri", [None, ""])
def test_without_an_index_uri_both_indexes_are_embedded(tmp_path: Path, uri: str | None) -> None:
    settings = Settings(data_dir=tmp_path, index_uri=uri)
    for kind, directory in (("chunks", "index"), ("faq", "faq_index")):
        index = build_search_index(settings, kind, 8)
        assert isinstance(index, EmbeddedIndex)
        index.close()
        assert (tmp_path / directory / "dense").is_dir()


def test_a_db_uri_gives_two_collections_in_one_milvus_lite_file(
    milvus_lite: None, tmp_path: Path
) -> None:
    from ragsift.adapters.milvus import MilvusIndex

    settings = Settings(
        data_dir=tmp_path, index_uri=str(tmp_path / "milvus.db"), index_collection_prefix="kb_x"
    )
    chunks = build_search_index(settings, "chunks", 8)
    faq = build_search_index(settings, "faq", 8)
    try:
        assert isinstance(chunks, MilvusIndex) and isinstance(faq, MilvusIndex)
        assert (chunks.collection, faq.collection) == ("kb_x_chunks", "kb_x_faq")
        chunks.upsert([IndexRecord("c", "d", "kb", "alpha")], np.ones((1, 8), np.float32))
        assert faq.search_sparse("alpha", SearchFilter(kb_id="kb"), 5) == []
        assert [h.chunk_id for h in chunks.search_sparse("alpha", SearchFilter(kb_id="kb"), 5)] \
            == ["c"]
    finally:
        chunks.close()
        faq.close()
    assert not (tmp_path / "index").exists()
