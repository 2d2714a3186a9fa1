"""Local sentence-transformers CrossEncoder reranker (optional extra `ragsift[cross-encoder]`)."""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RerankScore

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "the cross-encoder reranker needs sentence-transformers: "
    "pip install 'ragsift[cross-encoder]'"
)


class CrossEncoderReranker:
    """Scores (query, passage) pairs with a CrossEncoder loaded lazily from a local folder.

    Only a path on disk is accepted, never a hub name: this environment cannot download
    weights, and a silent download at query time would stall a request for minutes.
    """

    def __init__(self, model_path: str, max_length: int = 512, batch_size: int = 16) -> None:
        if not model_path:
            raise ValueError("cross-encoder model_path is required")
        path = Path(model_path).expanduser()
        if not path.exists():
            raise ValueError(
                f"cross-encoder model path {model_path!r} does not exist; give the folder of a "
                "downloaded model (hub names are not accepted: weights are never downloaded)"
            )
        if not path.is_dir():
            raise ValueError(f"cross-encoder model path {model_path!r} is not a folder")
        if max_length < 8:
            raise ValueError("cross-encoder max_length must be at least 8")
        if batch_size < 1:
            raise ValueError("cross-encoder batch_size must be at least 1")
        self._path = path.resolve()
        self._max_length = max_length
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"cross-encoder:{self._path.name}"

    def load(self) -> None:
        """Load the model now (start-up check); rerank() loads it on first use otherwise."""
        self._loaded()

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        """One score per passage, in batch order; UpstreamError when the model fails."""
        if not passages:
            return []
        model = self._loaded()
        started = time.perf_counter()
        try:
            scores = model.predict(
                [(query, passage) for passage in passages],
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
            result = [RerankScore(index=i, score=float(s)) for i, s in enumerate(scores)]
        except Exception as exc:  # any model failure degrades to fusion order upstream
            raise UpstreamError(f"cross-encoder failed: {exc}") from exc
        logger.debug(
            "cross-encoder scored %d passages in %.0f ms",
            len(passages),
            (time.perf_counter() - started) * 1000,
        )
        return result

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def _load_model(self) -> Any:
        # Set before the import: huggingface_hub reads these once, at import time.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            # import_module rather than `import`: mypy stays clean with or without the extra.
            module = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise RuntimeError(INSTALL_HINT) from exc
        try:
            model = module.CrossEncoder(
                str(self._path), max_length=self._max_length, local_files_only=True
            )
        except Exception as exc:  # a broken model folder is an upstream failure, not a crash
            raise UpstreamError(f"cross-encoder could not load {self._path}: {exc}") from exc
        logger.info("loaded cross-encoder from %s", self._path)
        return model
