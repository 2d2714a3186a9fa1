"""Vectors with the structure of real embeddings for the ANN benchmarks, and exact ground truth.

Real e5 vectors (a ragsift dense store's `vectors-N.f32`, e.g. the `eval-kuake-qtr` KB that
`ragsift eval` builds) are used as centres when a path is given; otherwise centres come from a
low-rank Gaussian around a common mean (e5 vectors are anisotropic: two unrelated texts score
~0.75). Each centre is expanded into ~30 noisy neighbours, the shape of a KB where documents
repeat their topics; queries are fresh noisy copies of random centres.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

Float32Array = NDArray[np.float32]
DIMENSION = 384
_RANK = 48


def unit(matrix: Float32Array) -> Float32Array:
    """Rows scaled to unit length."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Float32Array = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


def real_centres(dense_dir: Path, kb_id: str | None = None) -> Float32Array:
    """The live vectors of a ragsift dense store directory (only read), of one kb if given.

    A `.npy` file holding such vectors is read as it is.
    """
    if dense_dir.suffix == ".npy":
        return unit(np.load(dense_dir))
    meta = json.loads((dense_dir / "meta.json").read_text(encoding="utf-8"))
    generation = meta["generation"]
    rows: list[str] = []
    dead: set[int] = set()
    with (dense_dir / f"log-{generation}.jsonl").open(encoding="utf-8") as log:
        for line in log:
            try:
                entry = json.loads(line)
            except ValueError:  # a store being written: its last line may be unfinished
                break
            rows.extend(item[2] for item in entry.get("add", []))
            dead.update(entry.get("del", []))
    dim = int(meta["dimension"])
    flat = np.fromfile(dense_dir / f"vectors-{generation}.f32", dtype=np.float32,
                       count=len(rows) * dim)
    keep = [i for i, kb in enumerate(rows) if i not in dead and kb_id in (None, kb)]
    return unit(flat.reshape(-1, dim)[keep])


def synthetic_centres(count: int, rng: np.random.Generator, dim: int = DIMENSION) -> Float32Array:
    """Low-rank Gaussian centres around a shared mean, unit-normalised."""
    mean = rng.standard_normal(dim).astype(np.float32)
    mean /= np.linalg.norm(mean)
    basis = rng.standard_normal((_RANK, dim)).astype(np.float32)
    weights = rng.standard_normal((count, _RANK)).astype(np.float32)
    spread = rng.standard_normal((count, dim)).astype(np.float32) * 0.15
    topical = unit(weights @ basis + spread * np.sqrt(_RANK))
    # ~0.7 of each centre is the shared direction, as between unrelated e5 passages
    return unit(np.sqrt(0.7) * mean + np.sqrt(0.3) * topical)


def expand(centres: Float32Array, total: int, rng: np.random.Generator,
           noise: float = 0.2) -> Float32Array:
    """`total` unit vectors: each a centre (taken in turn) plus isotropic noise."""
    dim = centres.shape[1]
    out = np.empty((total, dim), dtype=np.float32)
    block = 65536
    for start in range(0, total, block):
        stop = min(total, start + block)
        picks = np.arange(start, stop) % centres.shape[0]
        noisy = centres[picks] + rng.standard_normal((stop - start, dim)).astype(
            np.float32) * (noise / np.sqrt(dim))
        out[start:stop] = unit(noisy)
    return out


def queries_near(centres: Float32Array, count: int, rng: np.random.Generator,
                 noise: float = 0.3) -> Float32Array:
    """Queries: fresh noisy copies of random centres (no stored vector equals one)."""
    picks = rng.integers(0, centres.shape[0], count)
    return expand(centres[picks], count, rng, noise)


def exact_top(matrix: Float32Array, queries: Float32Array, k: int,
              allowed: NDArray[np.bool_] | None = None) -> NDArray[np.int64]:
    """Row numbers of the exact top-k by dot product per query (rows outside `allowed` out)."""
    n = queries.shape[0]
    best_scores = np.full((n, 0), -np.inf, dtype=np.float32)
    best_rows = np.zeros((n, 0), dtype=np.int64)
    block = 100_000
    for start in range(0, matrix.shape[0], block):
        scores = np.asarray(queries @ np.asarray(matrix[start:start + block]).T, np.float32)
        if allowed is not None:
            scores[:, ~allowed[start:start + scores.shape[1]]] = -np.inf
        rows = np.broadcast_to(np.arange(start, start + scores.shape[1]), scores.shape)
        best_scores = np.concatenate([best_scores, scores], axis=1)
        best_rows = np.concatenate([best_rows, rows], axis=1)
        if best_scores.shape[1] > k:
            keep = np.argpartition(-best_scores, k, axis=1)[:, :k]
            best_scores = np.take_along_axis(best_scores, keep, axis=1)
            best_rows = np.take_along_axis(best_rows, keep, axis=1)
    order = np.argsort(-best_scores, axis=1)
    out: NDArray[np.int64] = np.take_along_axis(best_rows, order, axis=1)[:, :k]
    return out


def recall(found: list[list[int]], truth: NDArray[np.int64]) -> float:
    """Mean share of the exact top-k found."""
    hits = [len(set(f) & set(t.tolist())) / truth.shape[1] for f, t in zip(found, truth,
                                                                            strict=True)]
    return float(np.mean(hits))
