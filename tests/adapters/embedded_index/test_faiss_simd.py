"""faiss's SIMD level: `auto` steps down from AVX512_SPR only; a wish faiss refuses is kept out."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ragsift.adapters.embedded_index.dense_ann import AnnSettings
from ragsift.adapters.embedded_index.dense_store import DenseMatrixStore
from ragsift.adapters.embedded_index.faiss_simd import apply_simd_level
from ragsift.bootstrap import ann_settings
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord


class FakeConfig:
    """faiss.SIMDConfig's two calls, over a CPU that supports `supported`."""

    def __init__(self, level: str, supported: set[str]) -> None:
        self.level = level
        self.supported = supported
        self.sets: list[str] = []

    def get_level_name(self) -> str:
        return self.level

    def set_level(self, level: str) -> None:
        if level not in self.supported:
            raise RuntimeError(f"level {level} is not supported")
        self.sets.append(level)
        self.level = level


def fake_faiss(level: str, supported: set[str] | None = None) -> Any:
    names = {"AVX2", "AVX512", "AVX512_VPOPCNT", "AVX512_SPR"}
    return SimpleNamespace(SIMDConfig=FakeConfig(level, supported or names),
                           **{f"SIMDLevel_{name}": name for name in names})


@pytest.mark.parametrize(("picked", "wanted", "effect", "sets"), [
    ("AVX512_SPR", "auto", "AVX512", ["AVX512"]),
    ("AVX512", "auto", "AVX512", []),
    ("AVX2", "auto", "AVX2", []),
    ("AVX512_VPOPCNT", "auto", "AVX512_VPOPCNT", []),  # as fast as AVX512 at 1M here
    ("AVX512_SPR", "library", "AVX512_SPR", []),
    ("AVX512_SPR", "AVX2", "AVX2", ["AVX2"]),
    ("AVX2", "AVX2", "AVX2", []),
])
def test_auto_steps_down_from_avx512_spr_and_a_named_level_is_set(
        picked: str, wanted: str, effect: str, sets: list[str]) -> None:
    faiss = fake_faiss(picked)
    assert apply_simd_level(faiss, wanted) == effect
    assert faiss.SIMDConfig.sets == sets
    assert faiss.SIMDConfig.level == effect


def test_a_level_the_cpu_or_build_lacks_keeps_faiss_choice_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    faiss = fake_faiss("AVX2", supported={"AVX2"})
    with caplog.at_level(logging.WARNING):
        assert apply_simd_level(faiss, "AVX512") == "AVX2"
        assert apply_simd_level(faiss, "NEON_X") == "AVX2"  # no such attribute in the build
    assert faiss.SIMDConfig.level == "AVX2"
    assert sum("not available" in r.getMessage() for r in caplog.records) == 2


def test_a_faiss_without_dynamic_dispatch_is_left_alone() -> None:
    assert apply_simd_level(SimpleNamespace(), "auto") is None


@pytest.mark.parametrize("value", ["avx2", "AVX2; rm -rf /", "", "2AVX"])
def test_the_setting_refuses_what_is_not_a_level_name(value: str) -> None:
    with pytest.raises(ValidationError, match="dense_ann_simd_level"):
        Settings(dense_ann_simd_level=value)


def test_the_setting_reaches_the_stores_settings() -> None:
    assert ann_settings(Settings(dense_ann_simd_level="AVX2")).simd_level == "AVX2"
    assert ann_settings(Settings()).simd_level == "auto"


@pytest.fixture
def real_faiss() -> Iterator[Any]:
    faiss = pytest.importorskip("faiss")
    if not hasattr(faiss, "SIMDConfig"):
        pytest.skip("this faiss build has no runtime SIMD dispatch")
    before = getattr(faiss, f"SIMDLevel_{faiss.SIMDConfig.get_level_name()}")
    yield faiss
    faiss.SIMDConfig.set_level(before)  # the level is process-wide


def test_a_store_building_a_graph_sets_the_configured_level_in_faiss(
        tmp_path: Path, real_faiss: Any) -> None:
    if not _supports(real_faiss, "AVX2"):
        pytest.skip("this CPU or faiss build has no AVX2 level")
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = DenseMatrixStore(tmp_path / "d", 16, AnnSettings(
        min_rows=100, exact_max_rows=10, background=False, simd_level="AVX2"))
    try:
        store.upsert([IndexRecord(chunk_id=f"c{i}", document_id=f"d{i}", kb_id="kb", text="")
                      for i in range(300)], vectors)
        store.sync_ann()
        assert store.ann_rows() == 300
        assert real_faiss.SIMDConfig.get_level_name() == "AVX2"
        assert store.search(vectors[7], SearchFilter(kb_id="kb"), 5)[0].chunk_id == "c7"
    finally:
        store.close()


def _supports(faiss: Any, name: str) -> bool:
    level = getattr(faiss, f"SIMDLevel_{name}", None)
    if level is None:
        return False
    before = getattr(faiss, f"SIMDLevel_{faiss.SIMDConfig.get_level_name()}")
    try:
        faiss.SIMDConfig.set_level(level)
    except Exception:  # faiss's own exception type for a level the CPU lacks
        return False
    faiss.SIMDConfig.set_level(before)
    return True


def _openmp_environment(env: dict[str, str]) -> str:
    """What faiss's libgomp reports at load (OMP_DISPLAY_ENV) when the store imports faiss."""
    pytest.importorskip("faiss")
    code = ("from ragsift.adapters.embedded_index.faiss_simd import import_faiss\n"
            "import_faiss()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**env, "OMP_DISPLAY_ENV": "VERBOSE"})
    return done.stderr


def test_import_faiss_makes_openmp_idle_threads_sleep_instead_of_spinning() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}}
    shown = _openmp_environment(env)
    assert "GOMP_SPINCOUNT = '0'" in shown  # libgomp's default, unset, spins 300,000 times


def test_import_faiss_keeps_a_wait_policy_the_user_set() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    shown = _openmp_environment({**env, "OMP_WAIT_POLICY": "ACTIVE"})
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in shown
    assert "GOMP_SPINCOUNT = '0'" not in shown
