"""ThreadBudget: BLAS threads per call from the CPU-heavy calls in flight beside it."""

from __future__ import annotations

import pytest

from ragsift.adapters import thread_budget
from ragsift.adapters.thread_budget import (
    MIN_PARALLEL_WORK,
    BudgetMode,
    ThreadBudget,
    blas_threads_for,
    configure,
    default_budget,
    openmp_threads_for,
)

BIG = MIN_PARALLEL_WORK
SMALL = MIN_PARALLEL_WORK - 1


class SpySetter:
    """Records every BLAS count the budget sets, instead of touching OpenBLAS."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.made = 0

    def make(self) -> SpySetter:
        self.made += 1
        return self

    def __call__(self, threads: int) -> None:
        self.calls.append(threads)


def budget(setting: str, cores: int = 2) -> tuple[ThreadBudget, SpySetter]:
    spy = SpySetter()
    return ThreadBudget(BudgetMode.parse(setting), cores=cores, blas_setter=spy.make), spy


def test_a_lone_big_scan_gets_every_core() -> None:
    assert blas_threads_for(BIG, in_flight=1, cores=2) == 2
    assert blas_threads_for(BIG, in_flight=1, cores=16) == 16


def test_two_concurrent_scans_get_one_thread_each() -> None:
    assert blas_threads_for(BIG, in_flight=2, cores=2) == 1
    assert blas_threads_for(BIG, in_flight=32, cores=16) == 1


def test_a_lone_small_scan_stays_on_one_thread() -> None:
    assert blas_threads_for(SMALL, in_flight=1, cores=16) == 1


def test_an_embedding_gets_its_threads_only_when_alone() -> None:
    assert openmp_threads_for(4, in_flight=1) == 4
    assert openmp_threads_for(4, in_flight=2) == 1
    assert openmp_threads_for(0, in_flight=1) == 1


@pytest.mark.parametrize(("setting", "expected"), [
    ("auto", BudgetMode("auto")), ("off", BudgetMode("off")), ("3", BudgetMode("fixed", 3)),
    (" AUTO ", BudgetMode("auto")),
])
def test_the_setting_parses_auto_off_or_a_count(setting: str, expected: BudgetMode) -> None:
    assert BudgetMode.parse(setting) == expected


@pytest.mark.parametrize("setting", ["0", "-1", "two", "", "1000"])
def test_a_bad_setting_is_refused(setting: str) -> None:
    with pytest.raises(ValueError, match="blas threads"):
        BudgetMode.parse(setting)


def test_a_lone_big_scan_raises_the_blas_count_and_restores_one_after() -> None:
    threads_budget, spy = budget("auto")
    with threads_budget.blas_call(BIG) as threads:
        assert threads == 2
        assert spy.calls == [2]
    assert spy.calls == [2, 1]
    assert threads_budget.in_flight == 0


def test_a_scan_starting_beside_a_big_one_sets_one_thread_for_itself() -> None:
    threads_budget, spy = budget("auto")
    with threads_budget.blas_call(BIG) as first:
        with threads_budget.blas_call(BIG) as second:
            assert (first, second) == (2, 1)
            assert threads_budget.in_flight == 2
        # the count stays one: the first scan was already split over its threads
        assert spy.calls == [2, 1]
    assert spy.calls == [2, 1]


def test_small_scans_set_the_count_once_and_then_cost_no_library_call() -> None:
    threads_budget, spy = budget("auto")
    for _ in range(5):
        with threads_budget.blas_call(SMALL) as threads:
            assert threads == 1
    assert spy.calls == [1]
    assert spy.made == 1  # the libraries are looked up once, not per call


def test_a_big_scan_beside_an_embedding_gets_one_thread() -> None:
    threads_budget, spy = budget("auto")
    with threads_budget.cpu_call() as embedding_threads:
        assert embedding_threads == 1
        with threads_budget.blas_call(BIG) as threads:
            assert threads == 1
    assert spy.calls == [1]
    assert threads_budget.in_flight == 0


def test_an_embedding_beside_a_scan_gets_one_openmp_thread() -> None:
    threads_budget, _ = budget("auto")
    with threads_budget.cpu_call(4) as alone:
        assert alone == 4
    with threads_budget.blas_call(SMALL), threads_budget.cpu_call(4) as beside:
        assert beside == 1


def test_off_never_touches_the_blas_library() -> None:
    threads_budget, spy = budget("off")
    with threads_budget.blas_call(BIG) as threads, threads_budget.cpu_call(3) as omp:
        assert (threads, omp) == (0, 3)
    assert spy.calls == []
    assert spy.made == 0


def test_a_fixed_count_is_set_once_whatever_runs_beside() -> None:
    threads_budget, spy = budget("3", cores=8)
    with threads_budget.blas_call(SMALL) as small, threads_budget.blas_call(BIG) as big:
        assert (small, big) == (3, 3)
    assert spy.calls == [3]


def test_the_counter_drops_when_a_scan_raises() -> None:
    threads_budget, spy = budget("auto")
    with pytest.raises(RuntimeError), threads_budget.blas_call(BIG):
        raise RuntimeError("scan failed")
    assert threads_budget.in_flight == 0
    assert spy.calls == [2, 1]


def test_configure_replaces_the_process_budget_only_when_the_setting_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(thread_budget, "_default", default_budget())  # restored afterwards
    fixed = configure("2")
    assert default_budget() is fixed
    assert fixed.mode == BudgetMode("fixed", 2)
    assert configure("2") is fixed
    assert configure("auto") is not fixed
