"""Passage embedding in batches with progress: shared by documents, FAQ and evaluation corpora.

The batches go to the embedder together (passage_batches): a hosted one sends them
concurrently, and hands back each batch's rows or failure, so that a caller can fail only
the texts of a failed batch.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np

from ragsift.ports import Embedder, Vectors, passage_batches

Progress = Callable[[int], None]
"""Called with the number of texts just embedded."""


def embed_batches(
    embedder: Embedder, texts: Sequence[str], batch_size: int, progress: Progress | None = None
) -> Generator[tuple[int, Vectors | Exception], None, None]:
    """(start, rows or failure) of each batch of `batch_size` texts from `start`, in order;
    `progress` hears after every batch embedded."""
    starts = range(0, len(texts), batch_size)
    batches = [texts[start : start + batch_size] for start in starts]
    for start, batch, result in zip(starts, batches, passage_batches(embedder, batches),
                                    strict=True):
        if progress is not None and not isinstance(result, Exception):
            progress(len(batch))
        yield start, result


def embed_in_batches(
    embedder: Embedder, texts: Sequence[str], batch_size: int, progress: Progress | None = None
) -> Vectors:
    """One unit float32 row per text; the first failed batch's error raises."""
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    parts: list[Vectors] = []
    results = embed_batches(embedder, texts, batch_size, progress)
    try:
        for _, result in results:
            if isinstance(result, Exception):
                raise result
            parts.append(result)
    finally:
        results.close()  # after a failure, batches not yet sent are not sent
    return np.concatenate(parts).astype(np.float32, copy=False)
