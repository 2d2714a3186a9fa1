"""Approximate (HNSW) dense search for big kbs, kept beside the exact matrix.

The matrix and its log stay the source of truth. Every search is within one kb, so each kb
big enough gets its own graph (dense_ann_graph): a filter on a kb then walks a graph of that
kb's rows only, which keeps recall at a lower build effort than one graph of every kb, where
a kb ingested after a bigger one was poorly linked. Rows appended since a graph's watermark
(its tail) are scanned exactly at search time, so a graph is never stale and writes never
wait for it. A background worker builds a kb's graph once the kb reaches `min_rows` live
rows, adds tails in small steps, saves (temp + rename) every `save_rows` rows and on close,
and rebuilds after a compaction. Tombstoned and filtered-out rows are excluded inside the
graph search by a row bitmap.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ragsift.adapters.embedded_index import dense_ann_graph
from ragsift.adapters.embedded_index.dense_ann_files import (
    GraphParams,
    graph_files,
    graph_key,
    load_faiss,
    remove_other_graphs,
)
from ragsift.adapters.embedded_index.dense_ann_graph import Graph
from ragsift.adapters.embedded_index.faiss_simd import AUTO, apply_simd_level
from ragsift.adapters.embedded_index.read_write_lock import ReadWriteLock
from ragsift.adapters.embedded_index.sorted_unique import sorted_unique
from ragsift.adapters.thread_budget import default_budget

if TYPE_CHECKING:
    from ragsift.adapters.embedded_index.dense_snapshot import Candidates, Snapshot

logger = logging.getLogger(__name__)

IntpArray = NDArray[np.intp]
Float32Array = NDArray[np.float32]

_RETRIES = 3
_KB_EF_EXPONENT = 0.6


@dataclass(frozen=True, slots=True)
class AnnSettings:
    """When graphs are used and how they are built and searched (RAGSIFT_DENSE_ANN_*)."""

    enabled: bool = True
    # live rows of one kb from which its graph is built: a kb filter allowing fewer is
    # scanned exactly anyway (exact_max_rows); above, the graph is faster (1.6x at 22.5k
    # rows, 3x at 50k: docs/benchmarks.md)
    min_rows: int = 20_000
    exact_max_rows: int = 20_000
    # A kb's graph holds no rows near a query whose neighbours are in other kbs, and the walk
    # to its best rows needs more effort: at 1M rows (90% kb) recall@30 was 0.961 at 96 and
    # 0.990 at 192 (docs/benchmarks.md, 2026-12-04)
    ef_search: int = 192
    filter_ef_boost: float = 20.0  # the largest ef: 3,840, as before per-kb graphs
    # A filter passing a share s of a graph's rows raises ef by s^-exponent (1M rows, s = 0.1,
    # ef_search 96: ef 960 gave recall@30 0.956, 1,920 0.996). With ef_search 192, 1.0 keeps
    # every share's recall above the unfiltered search's at 100k and 1M rows (0.7 too, with
    # less margin; 0.5 falls under it at 1M, s = 0.05), and a 50 % filter's walk costs 3.5
    # against 4.1 ms at 1.3 for queries the graph has not just walked (research/
    # filter_ef_probe.py; docs/benchmarks.md, 2026-12-07: repeating a query across cases hid
    # the saving in an earlier comparison)
    filter_ef_exponent: float = 1.0
    oversample: float = 2.0
    connectivity: int = 32
    # per-kb graphs: the same recall in any ingestion order at 80 as at 160, 2x cheaper
    ef_construction: int = 80
    tail_rows: int = 4_096
    save_rows: int = 100_000
    simd_level: str = AUTO  # faiss_simd: auto steps down from AVX512_SPR to AVX512
    # False: maintenance runs inside the write that needs it (tests), no thread
    background: bool = True


class AnnIndex:
    """The graphs of one dense store directory, one per big kb, and their worker.

    `follow`: the writer is another process; this one maps the graph files the writer saved
    (newer ones as they appear) and never builds, extends, saves or removes one. Rows past a
    file's watermark are scanned exactly, as a writer's unindexed tail is.
    """

    def __init__(self, directory: Path, dimension: int, settings: AnnSettings,
                 current: Callable[[], Snapshot], follow: bool = False) -> None:
        self._directory = directory
        self._follow = follow
        self._mapped_files: dict[str, Path] = {}  # follower: kb key -> file mapped
        self._unsound: set[Path] = set()  # follower: files found unsound, not read again
        self._dimension = dimension
        self.settings = settings
        self._current = current
        # imported on first need (a graph file or min_rows), so small stores never load it
        self._faiss: Any | None = None
        self._usable = settings.enabled
        # kb id -> its graph; replaced, never mutated, so searches may read it unlocked
        self._graphs: dict[str, Graph] = {}
        self._due: tuple[tuple[int, int], list[str]] | None = None
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
        """Rows of this generation the graphs hold, all kbs together (0: exact search only)."""
        return sum(g.size for g in self._graphs.values() if g.generation == generation)

    # ---- lifecycle ----------------------------------------------------------------------

    def opened(self, snap: Snapshot) -> None:
        """Map the saved graphs of this generation that are sound; schedule what is missing."""
        if not self._usable:
            return
        if self._follow:
            self._graphs, self._mapped_files, self._unsound = {}, {}, set()
            self.refresh(snap)
            return
        remove_other_graphs(self._directory, snap.generation)
        files = graph_files(self._directory, snap.generation)
        graphs: dict[str, Graph] = {}
        faiss = self._lib() if files else None
        known = _kbs_of(snap, files)
        for key in set(files) - {graph_key(kb) for kb in known}:
            files[key][1].unlink(missing_ok=True)  # a kb this generation never held
        for kb_id in known:
            covered, path = files[graph_key(kb_id)]
            graph = dense_ann_graph.load(faiss, snap, kb_id, covered, path, self._dimension,
                                         follow=False) if faiss is not None else None
            if graph is None:
                path.unlink(missing_ok=True)
                continue
            graphs[kb_id] = graph
            logger.info("mapped approximate dense index %s: %d rows of kb %r", path,
                        graph.size, kb_id)
        self._graphs = graphs
        self.changed(snap)

    def refresh(self, snap: Snapshot) -> None:
        """Follower: map the writer's newer graph files of this generation (a directory
        listing when there are none); a file not sound for `snap` is skipped from then on."""
        if not self._follow or not self._usable:
            return
        try:
            files = graph_files(self._directory, snap.generation)
        except FileNotFoundError:
            return
        if not any(self._mapped_files.get(key) != path and path not in self._unsound
                   for key, (_, path) in files.items()):
            return
        with self._maintenance:
            faiss = self._lib()
            if faiss is not None:
                self._map_newer(faiss, snap, files)

    def _map_newer(self, faiss: Any, snap: Snapshot,
                   files: dict[str, tuple[int, Path]]) -> None:
        """Follower: map each kb's newest file not mapped yet."""
        graphs = {kb: g for kb, g in self._graphs.items() if g.generation == snap.generation}
        for kb_id in _kbs_of(snap, files):
            key = graph_key(kb_id)
            covered, path = files[key]
            if self._mapped_files.get(key) == path or path in self._unsound:
                continue
            graph = dense_ann_graph.load(faiss, snap, kb_id, covered, path, self._dimension,
                                         follow=True)
            if graph is None:
                if covered <= snap.size:  # one past this view's rows may be sound later
                    self._unsound.add(path)
                continue
            graphs[kb_id] = graph
            self._mapped_files[key] = path
        self._graphs = graphs

    def changed(self, snap: Snapshot) -> None:
        """After a write: wake the worker if a graph should be built, extended or saved."""
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
        """Bring the graphs up to date with the current snapshot now, in this thread."""
        if not self._usable or self._follow:
            return
        with self._maintenance:
            while self._step(self._current(), idle=True):
                pass

    def close(self) -> None:
        """Stop the worker and save what each graph holds beyond its file."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        if self._follow:
            return
        with self._maintenance:
            for graph in self._graphs.values():
                if graph.covered > graph.saved and self._lib() is not None:
                    dense_ann_graph.save(self._faiss, graph, self._directory)

    def _lib(self) -> Any | None:
        if self._faiss is None and self._usable:
            self._faiss = load_faiss()
            self._usable = self._faiss is not None
            if self._faiss is not None:
                apply_simd_level(self._faiss, self.settings.simd_level)
        return self._faiss

    # ---- search -------------------------------------------------------------------------

    def candidates(self, snap: Snapshot, kb_id: str, query: Float32Array, allowed: Candidates,
                   limit: int) -> IntpArray | None:
        """Rows to re-score exactly: graph hits among the allowed rows plus the allowed tail.

        None when the graph cannot answer (the kb has none of this generation, or it is
        still short of `limit` after raising ef): the caller scans exactly.
        """
        graph = self._graphs.get(kb_id)
        if graph is None or graph.generation != snap.generation:
            return None
        covered, held = min(graph.covered, snap.size), graph.size
        rows = allowed.rows
        split = int(np.searchsorted(rows, covered))
        tail = rows[split:]
        if split == 0:
            return tail
        want = min(limit, split)
        share = min(1.0, split / max(held, 1))
        kb_share = min(1.0, held / max(snap.size, 1))
        # A filter passing a share s of a graph's rows needs ef to grow as 1/s or faster
        # (AnnSettings.filter_ef_exponent). A kb holding a small share of the store is
        # searched often for queries whose neighbours lie in other kbs, where a graph's
        # greedy walk is least sure: at 300k rows, a 10% kb's own graph gave 0.88 at ef 96
        # and 0.99 at ef 384 (~96 / 0.1^0.6).
        boost = min(self.settings.filter_ef_boost,
                    share ** -self.settings.filter_ef_exponent
                    * kb_share ** -_KB_EF_EXPONENT)
        ef = math.ceil(self.settings.ef_search * boost)
        labels_wanted = min(split, max(want, math.ceil(want * self.settings.oversample)))
        bits = allowed.bitmap(snap.size)
        for _ in range(_RETRIES):
            found = self._search(graph, query, bits, labels_wanted, max(ef, labels_wanted))
            if found.size >= want:
                return sorted_unique(np.concatenate([found, tail]))
            ef *= 4
        logger.debug("graph found fewer than %d allowed rows; scanning exactly", want)
        return None

    def _search(self, graph: Graph, query: Float32Array, bits: NDArray[np.uint8],
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
            self._graphs = {}

    def _work(self, snap: Snapshot, idle: bool) -> bool:
        behind = 1 if idle else self.settings.tail_rows
        for graph in self._graphs.values():
            if graph.generation != snap.generation or snap.size - graph.covered >= behind \
                    or graph.size - graph.saved_size >= self.settings.save_rows \
                    or (idle and graph.covered > graph.saved):
                return True
        return bool(self._due_kbs(snap, idle))

    def _due_kbs(self, snap: Snapshot, idle: bool) -> list[str]:
        """Kbs with `min_rows` live rows and no graph, counted again as the store grows."""
        if snap.size < self.settings.min_rows:
            return []
        due = self._due
        stale = due is None or due[0][0] != snap.generation or \
            snap.size - due[0][1] >= (1 if idle else self.settings.tail_rows)
        if stale:
            codes = snap.codes["kb_id"][:snap.size][snap.alive[:snap.size]]
            counts = np.bincount(codes, minlength=len(snap.vocab.values["kb_id"]) + 1)
            names = snap.vocab.values["kb_id"]
            found = [names[code - 1] for code in
                     np.flatnonzero(counts >= self.settings.min_rows).tolist() if code > 0]
            self._due = due = ((snap.generation, snap.size), found)
        assert due is not None
        graphs = self._graphs
        return [kb for kb in due[1] if kb not in graphs
                or graphs[kb].generation != snap.generation]

    def _step(self, snap: Snapshot, idle: bool) -> bool:
        """One unit of maintenance; False when nothing is left to do."""
        faiss = self._lib() if self._work(snap, idle) else None
        if faiss is None:
            return False
        if any(g.generation != snap.generation for g in self._graphs.values()):
            self._graphs = {}
            remove_other_graphs(self._directory, snap.generation)
        due = self._due_kbs(snap, idle)
        if due:
            faiss.omp_set_num_threads(_cores())
            params = GraphParams(self.settings.connectivity, self.settings.ef_construction)
            graph = dense_ann_graph.build(faiss, snap, due[0], params, self._dimension,
                                          self._stop)
            if graph is not None:
                dense_ann_graph.save(faiss, graph, self._directory)
                self._graphs = {**self._graphs, due[0]: graph}
            return not self._stop.is_set()
        for kb_id, graph in list(self._graphs.items()):
            if snap.size > graph.covered:
                self._extend(kb_id, graph, snap)
        for graph in self._graphs.values():
            if graph.size - graph.saved_size >= self.settings.save_rows or \
                    (idle and graph.covered > graph.saved):
                dense_ann_graph.save(faiss, graph, self._directory)
        return not self._stop.is_set()

    def _extend(self, kb_id: str, graph: Graph, snap: Snapshot) -> None:
        faiss = self._faiss
        assert faiss is not None
        if graph.mapped and dense_ann_graph.kb_rows(snap, kb_id, graph.covered,
                                                    snap.size).size:
            graph = dense_ann_graph.own(faiss, graph, snap, self._dimension,
                                        self.settings.ef_construction)
            self._graphs = {**self._graphs, kb_id: graph}
        faiss.omp_set_num_threads(_cores())
        dense_ann_graph.extend(graph, snap, self._lock, self._stop)


def _kbs_of(snap: Snapshot, files: dict[str, tuple[int, Path]]) -> list[str]:
    """The kb ids of `snap` that have a graph file among `files` (by key)."""
    return [kb for kb in snap.vocab.values["kb_id"] if graph_key(kb) in files]


def _cores() -> int:
    return os.cpu_count() or 1
