"""Passage embedding in batches with progress: shared by documents, FAQ and evaluation corpora."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ragsift.ports import Embedder, Vectors

Progress = Callable[[int], None]
"""Called with the number of texts just embedded."""


def embed_in_batches(
    embedder: Embedder, texts: Sequence[str], batch_size: int, progress: Progress | None = None
) -> Vectors:
    """One unit float32 row per text; `progress` hears after every batch."""
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    parts: list[Vectors] = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        parts.append(embedder.embed_passages(batch))
        if progress is not None:
            progress(len(batch))
    return np.concatenate(parts).astype(np.float32, copy=False)
