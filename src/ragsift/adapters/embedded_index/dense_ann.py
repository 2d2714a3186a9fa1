"""Approximate (HNSW) dense search for big stores, kept beside the exact matrix.

The matrix and its log stay the source of truth. The graph indexes rows `[0, covered)` of one
matrix generation by their row numbers; rows appended since (the tail) are scanned exactly at
search time, so the graph is never stale and writes never wait for it. A background worker
builds the graph once the store reaches `min_rows`, adds the tail in small steps, saves it
(temp + rename) every `save_rows` rows and on close, and rebuilds it after a compaction.
Tombstoned and filtered-out rows are excluded inside the graph search by a row bitmap.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index.dense_ann_files import (
    GraphParams,
    ann_path,
    load_faiss,
    new_graph,
    open_graph,
    remove_other_graphs,
    save_graph,
)
from ragsift.adapters.thread_budget import default_budget

if TYPE_CHECKING:
    from ragsift.adapters.embedded_index.dense_snapshot import Candidates, Snapshot

logger = logging.getLogger(__name__)

IntpArray = NDArray[np.intp]
Float32Array = NDArray[np.float32]

# Rows added to the graph under one exclusive hold: searches wait at most this long (~20 ms).
_ADD_STEP_ROWS = 256
_BUILD_STEP_ROWS = 32_768
_RETRIES = 3
_FILTER_EF_EXPONENT = 1.3


@dataclass(frozen=True, slots=True)
class AnnSettings:
    """When the graph is used and how it is built and searched (RAGSIFT_DENSE_ANN_*)."""

    enabled: bool = True
    min_rows: int = 200_000
    exact_max_rows: int = 20_000
    ef_search: int = 96
    filter_ef_boost: float = 40.0
    oversample: float = 2.0
    connectivity: int = 32
    # 80 left rows inserted as a block after the others (a kb ingested after a bigger one)
    # poorly linked: recall@30 of a filter on them 0.83 at 1M rows; 160: 0.9994
    ef_construction: int = 160
    tail_rows: int = 4_096
    save_rows: int = 100_000
    # False: maintenance runs inside the write that needs it (tests), no thread
    background: bool = True


class ReadWriteLock:
    """Many searches at once, or one graph mutation (faiss's add is not safe beside search)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@dataclass(slots=True)
class _Graph:
    index: Any
    generation: int
    covered: int  # grows only, under the write lock
    saved: int
    mapped: bool


class AnnIndex:
    """The graph of one dense store directory and the worker that keeps it current.

    `follow`: the writer is another process; this one maps the graph file the writer saved
    (a newer one as it appears) and never builds, extends, saves or removes one. Rows past
    the file's are scanned exactly, as a writer's unindexed tail is.
    """

    def __init__(self, directory: Path, dimension: int, settings: AnnSettings,
                 current: Callable[[], Snapshot], follow: bool = False) -> None:
        self._directory = directory
        self._follow = follow
        self._file: tuple[int, int, int] | None = None  # (generation, inode, mtime) mapped
        self._dimension = dimension
        self.settings = settings
        self._current = current
        # imported on first need (a graph file or min_rows), so small stores never load it
        self._faiss: Any | None = None
        self._usable = settings.enabled
        self._graph: _Graph | None = None
        self._lock = ReadWriteLock()
        self._maintenance = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._local = threading.local()

    @property
    def available(self) -> bool:
        """Whether a graph may be used (enabled, and faiss not found missing)."""
        return self._usable

    def covered_rows(self, generation: int) -> int:
        """Rows of this generation the graph holds (0: no usable graph)."""
        graph = self._graph
        return graph.covered if graph is not None and graph.generation == generation else 0

    # ---- lifecycle ----------------------------------------------------------------------

    def opened(self, snap: Snapshot) -> None:
        """Map the saved graph of this generation if it is sound; schedule what is missing."""
        if not self._usable:
            return
        if self._follow:
            self._graph, self._file = None, None
            self.refresh(snap)
            return
        remove_other_graphs(self._directory, snap.generation)
        path = ann_path(self._directory, snap.generation)
        faiss = self._lib() if path.exists() else None
        index = open_graph(faiss, path, snap.matrix, self._dimension, mapped=True) \
            if faiss is not None else None
        if index is None:
            if faiss is not None:
                path.unlink(missing_ok=True)
        else:
            covered = int(index.ntotal)
            self._graph = _Graph(index, snap.generation, covered, covered, mapped=True)
            logger.info("mapped approximate dense index %s: %d of %d rows", path, covered,
                        snap.size)
        self.changed(snap)

    def refresh(self, snap: Snapshot) -> None:
        """Follower: map the writer's graph file of this generation when it is new or newer
        (a stat when not); one that is not sound for `snap` yet is tried again next time."""
        if not self._follow or not self._usable:
            return
        path = ann_path(self._directory, snap.generation)
        try:
            status = path.stat()
        except FileNotFoundError:
            return
        signature = (snap.generation, status.st_ino, status.st_mtime_ns)
        if signature == self._file:
            return
        with self._maintenance:
            faiss = self._lib()
            if signature == self._file or faiss is None:
                return
            # a graph saved after this snapshot was read may cover rows it lacks: not yet
            index = open_graph(faiss, path, snap.matrix, self._dimension, mapped=True,
                               follow=True)
            if index is not None:
                covered = int(index.ntotal)
                self._graph = _Graph(index, snap.generation, covered, covered, mapped=True)
                self._file = signature

    def changed(self, snap: Snapshot) -> None:
        """After a write: wake the worker if the graph should be built, extended or saved."""
        if self._follow or not self._usable or self._stop.is_set() or \
                not self._work(snap, idle=False):
            return
        if not self.settings.background:
            self._guarded(self._catch_up)  # by tail_rows and save_rows, as the worker would
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="dense-ann", daemon=True)
            self._thread.start()
        self._wake.set()

    def sync(self) -> None:
        """Bring the graph up to date with the current snapshot now, in this thread."""
        if not self._usable or self._follow:
            return
        with self._maintenance:
            while self._step(self._current(), idle=True):
                pass

    def close(self) -> None:
        """Stop the worker and save what the graph holds beyond its file."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        with self._maintenance:
            graph = self._graph
            if graph is not None and graph.covered > graph.saved:
                self._save(graph)

    def _lib(self) -> Any | None:
        if self._faiss is None and self._usable:
            self._faiss = load_faiss()
            self._usable = self._faiss is not None
        return self._faiss

    # ---- search -------------------------------------------------------------------------

    def candidates(self, snap: Snapshot, query: Float32Array, allowed: Candidates,
                   limit: int) -> IntpArray | None:
        """Rows to re-score exactly: graph hits among the allowed rows plus the allowed tail.

        None when the graph cannot answer (absent, another generation, or still short of
        `limit` after raising ef): the caller scans exactly.
        """
        graph = self._graph
        if graph is None or graph.generation != snap.generation:
            return None
        covered = min(graph.covered, snap.size)
        rows = allowed.rows
        split = int(np.searchsorted(rows, covered))
        tail = rows[split:]
        if split == 0:
            return tail
        want = min(limit, split)
        share = split / covered
        # A filter passing a share s of the rows needs ef to grow faster than 1/s: at 1M rows
        # with s = 0.1, ef 960 gave recall@30 0.956 and ef 1,920 (= 96 / 0.1^1.3) 0.996.
        boost = min(self.settings.filter_ef_boost, share ** -_FILTER_EF_EXPONENT)
        ef = math.ceil(self.settings.ef_search * boost)
        labels_wanted = min(split, max(want, math.ceil(want * self.settings.oversample)))
        bits = allowed.bitmap(snap.size)
        for _ in range(_RETRIES):
            found = self._search(graph, query, bits, labels_wanted, max(ef, labels_wanted))
            if found.size >= want:
                merged: IntpArray = np.unique(np.concatenate([found, tail]))
                return merged
            ef *= 4
        logger.debug("graph found fewer than %d allowed rows; scanning exactly", want)
        return None

    def _search(self, graph: _Graph, query: Float32Array, bits: NDArray[np.uint8],
                count: int, ef: int) -> IntpArray:
        faiss = self._faiss
        assert faiss is not None
        if not getattr(self._local, "single", False):
            # one query per call: OpenMP's team would only spin beside other searches
            faiss.omp_set_num_threads(1)
            self._local.single = True
        params = faiss.SearchParametersHNSW(efSearch=ef)
        params.sel = faiss.IDSelectorBitmap(bits.size, faiss.swig_ptr(bits))
        with default_budget().cpu_call(), self._lock.read():
            _, labels = graph.index.search(query.reshape(1, -1), count, params=params)
        found = labels[0]
        out: IntpArray = found[found >= 0].astype(np.intp)
        return out

    # ---- maintenance --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            self._guarded(self._catch_up)

    def _catch_up(self) -> None:
        with self._maintenance:
            while not self._stop.is_set() and self._step(self._current(), idle=False):
                pass

    def _guarded(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # a graph failure must never fail a write: search stays exact
            logger.exception("approximate dense index maintenance failed; search is exact")
            self._graph = None

    def _work(self, snap: Snapshot, idle: bool) -> bool:
        graph = self._graph
        if graph is None or graph.generation != snap.generation:
            return snap.size >= self.settings.min_rows or graph is not None
        behind = snap.size - graph.covered
        return behind >= (1 if idle else self.settings.tail_rows) or \
            graph.covered - graph.saved >= self.settings.save_rows

    def _step(self, snap: Snapshot, idle: bool) -> bool:
        """One unit of maintenance; False when nothing is left to do."""
        if not self._work(snap, idle) or self._lib() is None:
            return False
        graph = self._graph
        if graph is None or graph.generation != snap.generation:
            self._graph = None
            if snap.size >= self.settings.min_rows:
                self._build(snap)
            remove_other_graphs(self._directory, snap.generation)
            return self._graph is not None
        if graph.mapped:
            graph = self._own(graph, snap)
        if graph.covered < snap.size:
            self._extend(graph, snap)
        if graph.covered - graph.saved >= self.settings.save_rows or idle:
            self._save(graph)
        return not self._stop.is_set()

    def _build(self, snap: Snapshot) -> None:
        faiss = self._faiss
        assert faiss is not None
        faiss.omp_set_num_threads(_cores())
        params = GraphParams(self.settings.connectivity, self.settings.ef_construction)
        index = new_graph(faiss, self._dimension, params, np.asarray(snap.matrix[:65_536]))
        for start in range(0, snap.size, _BUILD_STEP_ROWS):
            if self._stop.is_set():
                return
            block = snap.matrix[start:min(snap.size, start + _BUILD_STEP_ROWS)]
            index.add(np.ascontiguousarray(block, dtype=np.float32))
        graph = _Graph(index, snap.generation, snap.size, 0, mapped=False)
        self._save(graph)
        self._graph = graph
        logger.info("built approximate dense index over %d rows", snap.size)

    def _own(self, graph: _Graph, snap: Snapshot) -> _Graph:
        """A mapped graph is read-only (faiss aborts on adding to it): load a private copy."""
        faiss = self._faiss
        path = ann_path(self._directory, graph.generation)
        index = open_graph(faiss, path, snap.matrix, self._dimension, mapped=False)
        if index is None or int(index.ntotal) != graph.covered:
            raise RuntimeError(f"{path} changed while mapped")
        # a file keeps the effort it was built with; new rows get the configured one
        index.hnsw.efConstruction = self.settings.ef_construction
        owned = _Graph(index, graph.generation, graph.covered, graph.saved, mapped=False)
        self._graph = owned
        return owned

    def _extend(self, graph: _Graph, snap: Snapshot) -> None:
        faiss = self._faiss
        assert faiss is not None
        faiss.omp_set_num_threads(_cores())
        while graph.covered < snap.size and not self._stop.is_set():
            stop = min(snap.size, graph.covered + _ADD_STEP_ROWS)
            block = np.ascontiguousarray(snap.matrix[graph.covered:stop], dtype=np.float32)
            with self._lock.write():
                graph.index.add(block)
                graph.covered = stop

    def _save(self, graph: _Graph) -> None:
        faiss = self._faiss
        assert faiss is not None and not graph.mapped
        covered = graph.covered
        save_graph(faiss, graph.index, ann_path(self._directory, graph.generation))
        graph.saved = covered


def _cores() -> int:
    return os.cpu_count() or 1
