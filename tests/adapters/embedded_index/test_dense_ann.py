"""The HNSW path of the dense store: when it is taken, what it returns, how it persists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann import AnnIndex, AnnSettings
from ragsift.adapters.embedded_index.dense_ann_files import graph_files, graph_key, hnsw_of
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

pytest.importorskip("faiss")

DIM = 32
ROWS = 6_000
SMALL_ROWS = 1_200  # of kb `small`; kb `big` holds the rest
K = 30


def clustered(rows: int, seed: int = 3) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Unit vectors in clusters of ~30 around low-rank centres, and queries near centres."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((8, DIM))
    centres = rng.standard_normal((rows // 30 + 1, 8)) @ basis + rng.standard_normal(
        (rows // 30 + 1, DIM)) * 0.3
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = centres[np.arange(rows) % centres.shape[0]] + rng.standard_normal(
        (rows, DIM)) * 0.08
    queries = centres[rng.integers(0, centres.shape[0], 40)] + rng.standard_normal(
        (40, DIM)) * 0.1
    return vectors.astype(np.float32), queries.astype(np.float32)


def records(rows: int, start: int = 0) -> list[IndexRecord]:
    """Documents of 10 chunks; kb `big` holds 4 of 5 documents, kb `small` the rest."""
    out = []
    for i in range(start, start + rows):
        doc = i // 10
        out.append(IndexRecord(chunk_id=f"c{i:06d}", document_id=f"d{doc:05d}",
                               kb_id="small" if doc % 5 == 0 else "big", text=""))
    return out


def settings(**overrides: int | float | bool) -> AnnSettings:
    base: dict[str, int | float | bool] = dict(min_rows=1_000, exact_max_rows=500,
                                               tail_rows=10_000_000, save_rows=10_000_000)
    base.update(overrides)
    return AnnSettings(**base)  # type: ignore[arg-type]


def exact_ids(store: DenseMatrixStore, query: NDArray[np.float32], flt: SearchFilter,
              limit: int = K) -> list[str]:
    return [hit.chunk_id for hit in store.search(query, flt, limit)]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]:
    """The same rows in an ANN store and an exact one, and queries."""
    vectors, queries = clustered(ROWS)
    ann = DenseMatrixStore(tmp_path / "ann", DIM, settings())
    exact = DenseMatrixStore(tmp_path / "exact", DIM, AnnSettings(enabled=False))
    for store in (ann, exact):
        store.upsert(records(ROWS), vectors)
    ann.sync_ann()
    return ann, exact, queries


def mean_recall(ann: DenseMatrixStore, exact: DenseMatrixStore, queries: NDArray[np.float32],
                flt: SearchFilter) -> float:
    hits = [len(set(exact_ids(ann, q, flt)) & set(exact_ids(exact, q, flt))) / K
            for q in queries]
    return float(np.mean(hits))


def graph_path(directory: Path, kb_id: str = "big", generation: int = 0) -> Path:
    return graph_files(directory, generation)[graph_key(kb_id)][1]


@pytest.mark.parametrize(("min_rows", "graphs"), [
    (ROWS - SMALL_ROWS + 1, set()), (ROWS - SMALL_ROWS, {"big"}),
    (SMALL_ROWS, {"big", "small"}),
])
def test_a_kb_gets_its_own_graph_from_min_rows_rows(
        tmp_path: Path, min_rows: int, graphs: set[str]) -> None:
    vectors, _ = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings(min_rows=min_rows))
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    held = {"big": ROWS - SMALL_ROWS, "small": SMALL_ROWS}
    assert store.ann_rows() == sum(held[kb] for kb in graphs)
    assert set(store._ann._graphs) == graphs
    assert {graph_key(kb) for kb in graphs} == set(graph_files(tmp_path / "d", 0))


def test_a_graph_holds_the_rows_of_its_kb_only(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]) -> None:
    import faiss

    ann, _, _ = pair
    kb_of = [record.kb_id for record in records(ROWS)]
    for kb_id, graph in ann._ann._graphs.items():
        ids = faiss.vector_to_array(graph.index.id_map)
        assert {kb_of[int(i)] for i in ids} == {kb_id}


def test_recall_at_30_against_exact_on_clustered_vectors(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ann, exact, queries = pair
    answered: list[bool] = []
    original = AnnIndex.candidates

    def spy(self: AnnIndex, *args: Any) -> Any:
        found = original(self, *args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(AnnIndex, "candidates", spy)
    assert mean_recall(ann, exact, queries, SearchFilter(kb_id="big")) >= 0.97
    # the graph answered every query of the ANN store (none fell back to the exact scan)
    assert answered == [True] * len(queries)


def test_a_kb_holding_a_small_share_of_the_store_is_searched_with_more_effort(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ann, _, queries = pair
    efforts: dict[str, int] = {}
    original = AnnIndex._search

    def spy(self: AnnIndex, graph: Any, query: Any, bits: Any, count: int, ef: int) -> Any:
        efforts[graph.kb_id] = ef
        return original(self, graph, query, bits, count, ef)

    monkeypatch.setattr(AnnIndex, "_search", spy)
    for kb_id in ("big", "small"):
        ann.search(queries[0], SearchFilter(kb_id=kb_id), K)
    ef_search = ann._ann.settings.ef_search
    # a 20% kb: ef x 0.2^-0.6 (2.6x); the 80% kb: x 1.14
    assert efforts["small"] == pytest.approx(ef_search * 0.2 ** -0.6, abs=1)
    assert efforts["big"] == pytest.approx(ef_search * 0.8 ** -0.6, abs=1)


@pytest.mark.parametrize("exponent", [1.0, 1.3])
def test_a_filter_raises_the_walks_effort_by_its_share_to_the_set_exponent(
        tmp_path: Path, exponent: float, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors, queries = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings(
        min_rows=ROWS - SMALL_ROWS, filter_ef_exponent=exponent))
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    efforts: list[int] = []
    original = AnnIndex._search

    def spy(self: AnnIndex, graph: Any, query: Any, bits: Any, count: int, ef: int) -> Any:
        efforts.append(ef)
        return original(self, graph, query, bits, count, ef)

    monkeypatch.setattr(AnnIndex, "_search", spy)
    half = frozenset(f"d{d:05d}" for d in range(ROWS // 10) if d % 5 and d % 2)  # 2,400 rows
    store.search(queries[0], SearchFilter(kb_id="big", document_ids=half), K)
    ef_search = store._ann.settings.ef_search
    # the big kb holds 80% of the store's rows (x 0.8^-0.6); the filter passes half of them
    assert efforts == [pytest.approx(ef_search * 0.5 ** -exponent * 0.8 ** -0.6, abs=1)]


def test_scores_are_exact_cosines(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]) -> None:
    ann, exact, queries = pair
    flt = SearchFilter(kb_id="big")
    truth = {hit.chunk_id: hit.score for hit in exact.search(queries[0], flt, 200)}
    for hit in ann.search(queries[0], flt, K):
        assert hit.score == pytest.approx(truth[hit.chunk_id], abs=1e-6)


def test_selective_filters_equal_exact_search(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]) -> None:
    ann, exact, queries = pair
    docs = frozenset(f"d{d:05d}" for d in range(1, 400, 8))  # 50 documents, 500 rows
    small_docs = frozenset(f"d{d:05d}" for d in range(0, 400, 5))  # 80 documents, 800 rows
    for flt in (SearchFilter(kb_id="big", document_ids=docs),
                SearchFilter(kb_id="small", document_ids=small_docs)):
        for query in queries[:10]:
            assert ann.search(query, flt, K) == exact.search(query, flt, K)


def test_broad_filter_inside_the_graph_fills_top_k(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]) -> None:
    ann, exact, queries = pair
    # 1,200 rows of 6,000: above exact_max_rows, so the graph searches with the bitmap
    flt = SearchFilter(kb_id="small")
    for query in queries[:10]:
        hits = ann.search(query, flt, K)
        assert len(hits) == K and all(h.chunk_id in set(exact_ids(exact, query, flt, 2000))
                                      for h in hits)
    assert mean_recall(ann, exact, queries, flt) >= 0.97


def test_adds_and_deletes_show_without_a_rebuild(pair: tuple[
        DenseMatrixStore, DenseMatrixStore, NDArray[np.float32]]) -> None:
    ann, exact, queries = pair
    flt = SearchFilter(kb_id="big")
    top = exact_ids(ann, queries[0], flt)
    ann.delete_chunks(top[:5])
    exact.delete_chunks(top[:5])
    assert not set(top[:5]) & set(exact_ids(ann, queries[0], flt))
    new = records(20, start=ROWS)
    for record in new:
        object.__setattr__(record, "kb_id", "big")
    near = np.repeat(queries[:1], 20, axis=0)
    for store in (ann, exact):
        store.upsert(new, near)
    # the new rows are the graph's tail (scanned exactly) until the worker adds them
    assert ann.ann_rows() == ROWS
    assert set(r.chunk_id for r in new) <= set(exact_ids(ann, queries[0], flt))
    ann.sync_ann()
    assert ann.ann_rows() == ROWS + 20
    assert exact_ids(ann, queries[0], flt) == exact_ids(exact, queries[0], flt)


def test_graph_persists_and_is_mapped_on_reopen(tmp_path: Path) -> None:
    vectors, queries = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings())
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    before = [exact_ids(store, q, SearchFilter(kb_id="big")) for q in queries[:5]]
    store.close()
    reopened = DenseMatrixStore(tmp_path / "d", DIM, settings())
    assert reopened.ann_rows() == ROWS
    assert [exact_ids(reopened, q, SearchFilter(kb_id="big")) for q in queries[:5]] == before
    # a mapped graph is read-only: an add loads a private copy and extends it
    reopened.upsert(records(10, start=ROWS), vectors[:10])
    reopened.sync_ann()
    assert reopened.ann_rows() == ROWS + 10
    reopened.close()


def test_rows_added_to_a_reopened_graph_get_the_configured_build_effort(
    tmp_path: Path,
) -> None:
    vectors, _ = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings(ef_construction=40))
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    store.close()
    reopened = DenseMatrixStore(tmp_path / "d", DIM, settings(ef_construction=120))
    reopened.upsert(records(10, start=ROWS), vectors[:10])
    reopened.sync_ann()
    import faiss

    graph = reopened._ann._graphs["small"]  # the new rows are kb `small`'s
    assert not graph.mapped
    assert hnsw_of(faiss, graph.index).efConstruction == 120  # the file was built with 40
    reopened.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "foreign"])
def test_a_damaged_graph_file_is_rebuilt_from_the_matrix(tmp_path: Path, damage: str) -> None:
    vectors, queries = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings())
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    store.close()
    path = graph_path(tmp_path / "d")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"\0" * 4096)
    else:  # a sound graph of other vectors, e.g. restored from another backup
        other = DenseMatrixStore(tmp_path / "o", DIM, settings())
        other.upsert(records(ROWS), clustered(ROWS, seed=9)[0])
        other.sync_ann()
        other.close()
        path.write_bytes(graph_path(tmp_path / "o").read_bytes())
    reopened = DenseMatrixStore(tmp_path / "d", DIM, settings())
    # not used, the other kb's graph is: its searches are exact meanwhile
    assert reopened.ann_rows() == SMALL_ROWS and not path.exists()
    exact = DenseMatrixStore(tmp_path / "e", DIM, AnnSettings(enabled=False))
    exact.upsert(records(ROWS), vectors)
    flt = SearchFilter(kb_id="big")
    assert exact_ids(reopened, queries[0], flt) == exact_ids(exact, queries[0], flt)
    reopened.sync_ann()
    assert reopened.ann_rows() == ROWS
    assert mean_recall(reopened, exact, queries, flt) >= 0.97


def test_a_graph_behind_the_matrix_catches_up(tmp_path: Path) -> None:
    vectors, queries = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings())
    store.upsert(records(ROWS - 100), vectors[:-100])
    store.sync_ann()
    store.close()
    # rows written by a process killed before it saved its graph
    plain = DenseMatrixStore(tmp_path / "d", DIM, AnnSettings(enabled=False))
    plain.upsert(records(100, start=ROWS - 100), vectors[-100:])
    reopened = DenseMatrixStore(tmp_path / "d", DIM, settings())
    assert reopened.ann_rows() == ROWS - 100
    exact = DenseMatrixStore(tmp_path / "e", DIM, AnnSettings(enabled=False))
    exact.upsert(records(ROWS), vectors)
    flt = SearchFilter(kb_id="big")
    assert mean_recall(reopened, exact, queries, flt) >= 0.97
    reopened.sync_ann()
    assert reopened.ann_rows() == ROWS


def test_an_unfinished_save_is_ignored(tmp_path: Path) -> None:
    vectors, _ = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings())
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    store.close()
    tmp = graph_path(tmp_path / "d").with_suffix(".faiss.tmp")
    tmp.write_bytes(b"half a graph")
    reopened = DenseMatrixStore(tmp_path / "d", DIM, settings())
    assert reopened.ann_rows() == ROWS and not tmp.exists()


def test_compaction_rebuilds_the_graph_for_the_new_generation(tmp_path: Path) -> None:
    vectors, queries = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings())
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    store.delete_chunks([f"c{i:06d}" for i in range(0, ROWS, 3)] +
                        [f"c{i:06d}" for i in range(1, ROWS, 3)])  # 2/3 dead: compacts
    live = ROWS - len(range(0, ROWS, 3)) - len(range(1, ROWS, 3))
    assert store.count() == live and store.ann_rows() == 0
    store.sync_ann()
    # kb `small` is left with 400 live rows, under min_rows: searched exactly
    assert store.ann_rows() == live - SMALL_ROWS // 3 and set(store._ann._graphs) == {"big"}
    assert not graph_files(tmp_path / "d", 0) and set(graph_files(tmp_path / "d", 1)) == {
        graph_key("big")}
    hits = store.search(queries[0], SearchFilter(kb_id="big"), K)
    assert all(int(h.chunk_id[1:]) % 3 == 2 for h in hits)


def test_disabled_setting_keeps_search_exact(tmp_path: Path) -> None:
    vectors, _ = clustered(ROWS)
    store = DenseMatrixStore(tmp_path / "d", DIM, settings(enabled=False))
    store.upsert(records(ROWS), vectors)
    store.sync_ann()
    assert store.ann_rows() == 0 and not list((tmp_path / "d").glob("ann-*"))


def test_without_faiss_the_store_stays_exact_and_says_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import sys

    from ragsift.adapters.embedded_index import dense_ann_files

    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    monkeypatch.setattr(dense_ann_files, "_warned_missing", False)
    vectors, queries = clustered(ROWS)
    stores = [DenseMatrixStore(tmp_path / name, DIM, settings()) for name in ("a", "b")]
    for store in stores:
        store.upsert(records(ROWS), vectors)
        store.sync_ann()
        assert store.ann_rows() == 0
    exact = DenseMatrixStore(tmp_path / "e", DIM, AnnSettings(enabled=False))
    exact.upsert(records(ROWS), vectors)
    flt = SearchFilter(kb_id="big")
    assert exact_ids(stores[0], queries[0], flt) == exact_ids(exact, queries[0], flt)
    warnings = [r for r in caplog.records if "approximate dense index unavailable" in r.message]
    assert len(warnings) == 1
