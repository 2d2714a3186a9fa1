"""One conformance suite for every SearchIndex backend: the embedded index and Milvus.

`backend` is parametrized over ["embedded", "embedded-ann", "milvus-lite"], so each test that
uses it (or `shared_index` / `fresh_index`) runs against each (embedded-ann: the embedded
index with its HNSW graph forced on). milvus-lite starts slowly, so the
read-only tests share one loaded index per module and backend; tests that write get a
fresh one. Where milvus-lite cannot be imported its cases are skipped with the reason;
with RAGSIFT_TEST_MILVUS=require (set by .ci/run) they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from index_backends import BACKENDS, Backend, milvus_missing
from index_corpus import bilingual, grid, hostile, scoped

from ragsift.ports import SearchIndex


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "embedded-ann":
        pytest.importorskip("faiss", reason="the embedded index's graph needs ragsift[ann]")
    if request.param == "milvus-lite":
        missing = milvus_missing()
        if missing is not None:
            if os.environ.get("RAGSIFT_TEST_MILVUS") == "require":
                pytest.fail(f"RAGSIFT_TEST_MILVUS=require, but {missing}")
            pytest.skip(f"milvus-lite unavailable: {missing}")
    return Backend(str(request.param))


@pytest.fixture(scope="module")
def shared_index(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SearchIndex]:
    """One index per module and backend holding every corpus of index_corpus.

    Only for tests that do not write.
    """
    index = backend.open(tmp_path_factory.mktemp(f"shared-{backend.name}"))
    for records, vectors in (bilingual(), grid(), hostile(), scoped()):
        index.upsert(records, vectors)
    yield index
    index.close()


@pytest.fixture
def fresh_index(backend: Backend, tmp_path: Path) -> Iterator[SearchIndex]:
    """An empty index of this test's backend, closed after the test."""
    index = backend.open(tmp_path / "index")
    yield index
    index.close()
