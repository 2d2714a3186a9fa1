"""The ONNX e5 graph cache: atomic writes (kill -9 midway), reuse, and rebuilds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from ragsift.adapters.onnx_e5 import cache
from ragsift.adapters.onnx_e5.cache import (
    graph_path,
    load_or_build,
    save_external,
    single_file_graph_path,
    weights_path,
    write_atomically,
)

DIGEST = "ab" * 32


def _save(path: Path, data: bytes) -> None:
    """Stands in for save_external with the fake graphs below: the graph and its weights."""
    write_atomically(path, data)
    weights_path(path).write_bytes(b"weights")


def _saved(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    weights_path(path).write_bytes(b"weights")


class _Session:
    """Stands in for an onnxruntime session: what it was opened from and its metadata."""

    def __init__(self, source: str | bytes, meta: dict[str, str]) -> None:
        self.source = source
        self._meta = meta

    def get_modelmeta(self) -> Any:
        return type("Meta", (), {"custom_metadata_map": self._meta})()


def _loader(opened: list[str | bytes], meta: dict[str, str] | None = None) -> Any:
    def load(source: str | bytes) -> _Session:
        data = Path(source).read_bytes() if isinstance(source, str) else source
        if not data.startswith(b"graph"):
            raise RuntimeError("not a graph")
        opened.append(source)
        return _Session(source, cache.metadata(DIGEST) if meta is None else meta)

    return load


def test_a_build_killed_midway_leaves_nothing_under_the_final_name(tmp_path: Path) -> None:
    target = tmp_path / "graph.onnx"
    script = textwrap.dedent(f"""
        import os, time
        from pathlib import Path
        from ragsift.adapters.onnx_e5 import cache
        os.fsync = lambda fd: time.sleep(60)  # hold the write open until killed
        cache.write_atomically(Path({str(target)!r}), b"graph" * 1_000_000)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp_path.glob("*.tmp")), "the writer never started"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert not target.exists()


def test_a_failed_write_removes_its_temporary_file(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(cache.os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(tmp_path / "graph.onnx", b"graph")
    assert list(tmp_path.iterdir()) == []


def test_a_saved_graph_is_opened_without_building(tmp_path: Path) -> None:
    path = graph_path(tmp_path, DIGEST)
    _saved(path, b"graph v1")
    opened: list[str | bytes] = []
    loaded = load_or_build(tmp_path, DIGEST, lambda: pytest.fail("built"), _loader(opened),
                           save=_save)
    assert (loaded.built, loaded.source, opened) == (False, str(path), [str(path)])


def test_a_graph_of_other_weights_under_the_name_is_rebuilt(tmp_path: Path) -> None:
    path = graph_path(tmp_path, DIGEST)
    _saved(path, b"graph old")
    opened: list[str | bytes] = []
    stale = {cache.SOURCE_KEY: "cd" * 32, cache.BUILDER_KEY: cache.BUILDER_VERSION}
    loaded = load_or_build(tmp_path, DIGEST, lambda: b"graph new", _loader(opened, stale),
                           save=_save)
    assert loaded.built and path.read_bytes() == b"graph new"


def test_an_unwritable_cache_folder_serves_the_graph_from_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    opened: list[str | bytes] = []
    loaded = load_or_build(blocker / "models", DIGEST, lambda: b"graph", _loader(opened),
                           save=_save)
    assert (loaded.built, loaded.source) == (True, b"graph")


def test_a_killed_builds_old_temporary_file_is_removed_by_the_next_build(tmp_path: Path) -> None:
    path = graph_path(tmp_path, DIGEST)
    old, young, old_dir = (tmp_path / f"{path.name}.{tag}.tmp"
                           for tag in ("old", "young", "folder"))
    for temp in (old, young):
        temp.write_bytes(b"graph half")
    old_dir.mkdir()  # save_external's temporary folder
    (old_dir / "weights").write_bytes(b"half")
    hours_ago = time.time() - 2 * cache.STALE_TEMPORARY_S
    for temp in (old, old_dir):
        os.utime(temp, (hours_ago, hours_ago))
    load_or_build(tmp_path, DIGEST, lambda: b"graph", _loader([]), save=_save)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [path.name, weights_path(path).name, young.name])


def test_the_weights_digest_is_hashed_once_then_read_from_the_cache(tmp_path: Path) -> None:
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"w" * 1000)
    hashed: list[str] = []

    def digest(path: str) -> str:
        hashed.append(path)
        return DIGEST

    first = cache.remembered_digest(str(weights), tmp_path / "cache", digest)
    second = cache.remembered_digest(str(weights), tmp_path / "cache", digest)
    assert (first, second, len(hashed)) == (DIGEST, DIGEST, 1)
    weights.write_bytes(b"v" * 1001)  # other weights: hashed again
    cache.remembered_digest(str(weights), tmp_path / "cache", digest)
    assert len(hashed) == 2


def test_a_graph_saved_in_one_file_by_an_earlier_version_is_converted_not_rebuilt(
    tmp_path: Path,
) -> None:
    single_file_graph_path(tmp_path, DIGEST).write_bytes(b"graph in one file")
    saved: list[bytes] = []

    def save(path: Path, data: bytes) -> None:
        saved.append(data)
        _save(path, data)

    loaded = load_or_build(tmp_path, DIGEST, lambda: pytest.fail("built"), _loader([]),
                           save=save)
    path = graph_path(tmp_path, DIGEST)
    assert saved == [b"graph in one file"] and loaded.source == str(path)
    assert weights_path(path).is_file()


def test_a_graph_whose_weights_file_is_missing_is_rebuilt(tmp_path: Path) -> None:
    path = graph_path(tmp_path, DIGEST)
    path.write_bytes(b"graph without weights")
    loaded = load_or_build(tmp_path, DIGEST, lambda: b"graph new", _loader([]), save=_save)
    assert loaded.built and path.read_bytes() == b"graph new"


def _tiny_model() -> bytes:
    """y = x @ W with a 64x64 float32 W (16 KB): big enough to be saved as external data."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weight = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def test_save_external_keeps_the_weights_beside_a_small_graph_with_equal_outputs(
    tmp_path: Path,
) -> None:
    import numpy as np
    import onnxruntime as ort

    data = _tiny_model()
    path = tmp_path / "tiny.onnx"
    save_external(path, data)
    assert path.stat().st_size < 1000 and weights_path(path).stat().st_size == 64 * 64 * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx", "tiny.onnx.data"]
    x = {"x": np.linspace(-1, 1, 64, dtype=np.float32)[None, :]}
    (mapped,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)
    (inline,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, x)
    assert np.array_equal(mapped, inline)


def test_save_external_interrupted_before_the_graph_leaves_no_graph_nor_temporaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renames: list[str] = []
    real_replace = os.replace

    def replace(source: str | Path, target: str | Path) -> None:
        if renames:  # the second rename, the graph's: as if killed here
            raise OSError("killed")
        renames.append(str(target))
        real_replace(source, target)

    monkeypatch.setattr(cache.os, "replace", replace)
    path = tmp_path / "tiny.onnx"
    with pytest.raises(OSError, match="killed"):
        save_external(path, _tiny_model())
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.onnx.data"]
