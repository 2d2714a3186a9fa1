"""Dense scans under the thread budget: same hits, the right BLAS count, restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import threadpoolctl  # type: ignore[import-untyped]

from ragsift.adapters import thread_budget
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.adapters.thread_budget import BudgetMode, ThreadBudget
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit

DIM = 64
ROWS = 6000
KB0_ROWS = ROWS * 4 // 5


def blas_threads() -> int:
    counts = {info["num_threads"] for info in threadpoolctl.threadpool_info()
              if info["user_api"] == "blas"}
    assert len(counts) == 1
    return counts.pop()


class RecordingBudget(ThreadBudget):
    """The real budget on the real OpenBLAS, recording what each scan asked and got."""

    def __init__(self, setting: str, min_parallel_work: int) -> None:
        self.seen: list[tuple[int, int, int]] = []  # (work, threads chosen, BLAS count seen)
        # the default setter: numpy's own OpenBLAS
        super().__init__(BudgetMode.parse(setting), cores=2, min_parallel_work=min_parallel_work)

    def scans(self) -> list[tuple[int, int, int]]:
        return self.seen

    @contextmanager
    def blas_call(self, work: int) -> Iterator[int]:
        with super().blas_call(work) as threads:
            self.seen.append((work, threads, blas_threads()))
            yield threads


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DenseMatrixStore:
    rng = np.random.default_rng(7)
    # kb0: one contiguous run of 80 % of the rows; kb1 and kb2: every other row of the rest
    records = [IndexRecord(f"c{i:05d}", f"d{i // 20}", "kb0" if i < KB0_ROWS else f"kb{1 + i % 2}",
                           "", tenant_id=("t1", "t2")[i % 2]) for i in range(ROWS)]
    dense = DenseMatrixStore(tmp_path_factory.mktemp("dense") / "dense", DIM)
    dense.upsert(records, rng.standard_normal((ROWS, DIM)).astype(np.float32))
    return dense


FILTERS = {
    "runs": SearchFilter(kb_id="kb0"),
    "gathered": SearchFilter(kb_id="kb1"),  # 10 % of the matrix, scattered
    "whole matrix": SearchFilter(kb_id="kb0", tenant_ids=frozenset({"t1"})),  # 40 %, scattered
}


def search_all(store: DenseMatrixStore, query: np.ndarray) -> dict[str, list[ChannelHit]]:
    return {name: store.search(query, f, 40) for name, f in FILTERS.items()}


def test_hits_are_identical_with_one_thread_and_with_every_core(
    store: DenseMatrixStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = np.random.default_rng(1).standard_normal((5, DIM)).astype(np.float32)
    results = {}
    for setting, min_work in (("1", 0), ("auto", 1)):  # auto: every scan is "big" and alone
        recording = RecordingBudget(setting, min_work)
        monkeypatch.setattr(thread_budget, "_default", recording)
        results[setting] = [search_all(store, q) for q in queries]
        chosen = {threads for _, threads, _ in recording.scans()}
        assert chosen == ({1} if setting == "1" else {2})
        # what OpenBLAS ran with is what the budget chose
        assert all(seen == threads for _, threads, seen in recording.scans())
    assert results["1"] == results["auto"]
    assert all(len(hits) == 40 for per_query in results["1"] for hits in per_query.values())


def test_the_blas_count_is_one_again_after_a_lone_big_scan(
    store: DenseMatrixStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(thread_budget, "_default", RecordingBudget("auto", 1))
    store.search(np.ones(DIM, np.float32), FILTERS["whole matrix"], 10)
    assert blas_threads() == 1


def test_a_scan_asks_for_threads_by_its_largest_single_product(
    store: DenseMatrixStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = RecordingBudget("auto", 1 << 40)  # nothing is big: only the work is looked at
    monkeypatch.setattr(thread_budget, "_default", recording)
    search_all(store, np.ones(DIM, np.float32))
    works = [work for work, _, _ in recording.scans()]
    # kb0's rows are one run; kb1's scattered rows are scored in 256-row gathered blocks; a
    # scattered filter keeping much of the matrix multiplies all of it
    assert works == [KB0_ROWS * DIM, 256 * DIM, ROWS * DIM]
