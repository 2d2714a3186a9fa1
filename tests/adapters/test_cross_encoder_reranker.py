"""CrossEncoderReranker: path validation at construction and the lazy optional import."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragsift.adapters.cross_encoder_reranker import CrossEncoderReranker
from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RerankScore


def test_missing_path_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        CrossEncoderReranker(str(tmp_path / "no-such-model"))


def test_hub_model_name_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="hub names are not accepted"):
        CrossEncoderReranker("BAAI/bge-reranker-v2-m3")


def test_a_file_instead_of_a_model_folder_is_refused(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    with pytest.raises(ValueError, match="not a folder"):
        CrossEncoderReranker(str(weights))


@pytest.mark.parametrize(("max_length", "batch_size"), [(4, 16), (512, 0)])
def test_bad_limits_are_refused_at_construction(
    tmp_path: Path, max_length: int, batch_size: int
) -> None:
    with pytest.raises(ValueError):
        CrossEncoderReranker(str(tmp_path), max_length=max_length, batch_size=batch_size)


def test_construction_does_not_import_sentence_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "sentence_transformers", raising=False)
    reranker = CrossEncoderReranker(str(tmp_path))
    assert "sentence_transformers" not in sys.modules
    assert reranker.model_id == f"cross-encoder:{tmp_path.name}"


def test_missing_extra_raises_runtime_error_naming_it_and_sets_hub_offline_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    reranker = CrossEncoderReranker(str(tmp_path))
    with pytest.raises(RuntimeError, match=r"ragsift\[cross-encoder\]"):
        reranker.rerank("q", ["passage"])
    assert sys.modules.get("sentence_transformers") is None
    assert os.environ["HF_HUB_OFFLINE"] == "1"


class _FakeCrossEncoder:
    """Stands in for sentence_transformers.CrossEncoder; records how it was built and used."""

    built: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, path: str, **kwargs: Any) -> None:
        self.built.append({"path": path, **kwargs})

    def predict(self, pairs: Sequence[tuple[str, str]], **kwargs: Any) -> list[float]:
        if any(passage == "boom" for _, passage in pairs):
            raise RuntimeError("CUDA out of memory")
        assert kwargs["batch_size"] == 2
        return [float(len(passage)) for _, passage in pairs]


def test_loads_once_from_the_path_offline_and_scores_every_passage_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("sentence_transformers")
    fake.CrossEncoder = _FakeCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    monkeypatch.setattr(_FakeCrossEncoder, "built", [])
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # restored after the test
        monkeypatch.delenv(name, raising=False)
    reranker = CrossEncoderReranker(str(tmp_path), max_length=256, batch_size=2)

    assert reranker.rerank("q", ["a", "abc", "ab"]) == [
        RerankScore(index=0, score=1.0),
        RerankScore(index=1, score=3.0),
        RerankScore(index=2, score=2.0),
    ]
    reranker.rerank("q", ["x"])
    assert _FakeCrossEncoder.built == [
        {"path": str(tmp_path.resolve()), "max_length": 256, "local_files_only": True}
    ]
    assert reranker.rerank("q", []) == []
    with pytest.raises(UpstreamError, match="out of memory"):
        reranker.rerank("q", ["boom"])
