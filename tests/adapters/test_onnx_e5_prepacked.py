"""The packed e5 graph (prepacked.py) on a small real graph and ONNX Runtime: saved once per
machine key, opened without optimizing, checked by its probe at every open, never half-written."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.adapters import atomic_files
from ragsift.adapters.onnx_e5 import prepacked
from ragsift.adapters.onnx_e5.prepacked import (
    build_packed,
    machine_key,
    needs_packing,
    open_packed,
    packed_path,
    probe_inputs,
    probe_path,
    refused_path,
)

HIDDEN = 64
KEY = "0123456789abcdef"


def _graph(path: Path) -> Path:
    """mean = mean over tokens of (embeddings @ W) * mask, W 64x64 (a MatMul ORT pre-packs)."""
    from onnx import TensorProto, helper, numpy_helper, save_model

    weight = (np.arange(HIDDEN * HIDDEN, dtype=np.float32).reshape(HIDDEN, HIDDEN) % 7 - 3) / 8
    nodes = [
        helper.make_node("MatMul", ["embeddings", "w"], ["h"]),
        helper.make_node("Unsqueeze", ["mask", "last"], ["m"]),
        helper.make_node("Mul", ["h", "m"], ["hm"]),
        helper.make_node("ReduceMean", ["hm"], ["mean"], axes=[1], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, None, HIDDEN]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, None])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, HIDDEN])],
        [numpy_helper.from_array(weight, "w"),
         numpy_helper.from_array(np.array([-1], dtype=np.int64), "last")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_model(model, str(path))
    return path


def _open(source: str, optimize: bool, optimized_to: str | None) -> Any:
    from ragsift.adapters.onnx_e5.embedder import _open_session

    return _open_session(source, 1, optimize, optimized_to)


def _plain_output(graph: Path) -> np.ndarray:
    (means,) = _open(str(graph), True, None).run(["mean"], probe_inputs(HIDDEN))
    return np.asarray(means)


def test_a_packed_graph_is_saved_beside_the_plain_one_and_opens_with_its_outputs(
    tmp_path: Path,
) -> None:
    graph = _graph(tmp_path / "g.onnx")
    assert needs_packing(graph, KEY)
    assert build_packed(graph, KEY, HIDDEN, _open)
    packed = packed_path(graph, KEY)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [graph.name, packed.name, packed.name + ".data", probe_path(packed).name])
    assert not needs_packing(graph, KEY)
    session = open_packed(graph, KEY, HIDDEN, _open)
    assert session is not None
    x = {"embeddings": np.linspace(-2, 2, 5 * HIDDEN, dtype=np.float32).reshape(1, 5, HIDDEN),
         "mask": np.array([[1, 1, 1, 0, 1]], dtype=np.float32)}
    plain = _open(str(graph), True, None).run(["mean"], x)[0]
    assert np.array_equal(session.run(["mean"], x)[0], plain)


def test_the_packed_graph_of_another_machine_key_is_not_opened(tmp_path: Path) -> None:
    graph = _graph(tmp_path / "g.onnx")
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert open_packed(graph, "fedcba9876543210", HIDDEN, _open) is None
    assert needs_packing(graph, "fedcba9876543210")


def test_a_probe_that_differs_sends_the_process_to_the_plain_graph(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    graph = _graph(tmp_path / "g.onnx")
    assert build_packed(graph, KEY, HIDDEN, _open)
    other = _plain_output(graph).astype(np.float32) + np.float32(1e-6)
    import base64

    probe_path(packed_path(graph, KEY)).write_bytes(base64.b64encode(other.tobytes()))
    with caplog.at_level(logging.WARNING):
        assert open_packed(graph, KEY, HIDDEN, _open) is None
    assert "gives other outputs" in caplog.text
    assert needs_packing(graph, KEY)  # the next load packs it again
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert open_packed(graph, KEY, HIDDEN, _open) is not None


def test_a_damaged_packed_weights_file_is_not_opened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    graph = _graph(tmp_path / "g.onnx")
    assert build_packed(graph, KEY, HIDDEN, _open)
    data = packed_path(graph, KEY).with_name(packed_path(graph, KEY).name + ".data")
    with open(data, "r+b") as handle:
        handle.truncate(data.stat().st_size // 2)
    with caplog.at_level(logging.WARNING):
        assert open_packed(graph, KEY, HIDDEN, _open) is None
    assert "does not load" in caplog.text
    assert needs_packing(graph, KEY)
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert open_packed(graph, KEY, HIDDEN, _open) is not None


def test_a_build_whose_packed_outputs_differ_saves_nothing_and_is_not_tried_again(
    tmp_path: Path,
) -> None:
    graph = _graph(tmp_path / "g.onnx")

    class Shifted:
        def __init__(self, session: Any) -> None:
            self._session = session

        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            return [out + np.float32(1e-3) for out in self._session.run(names, feeds)]

    def opener(source: str, optimize: bool, optimized_to: str | None) -> Any:
        session = _open(source, optimize, optimized_to)
        return session if optimize else Shifted(session)  # the packed graph as if other

    assert not build_packed(graph, KEY, HIDDEN, opener)
    packed = packed_path(graph, KEY)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [graph.name, refused_path(packed).name])
    assert not needs_packing(graph, KEY)
    assert open_packed(graph, KEY, HIDDEN, _open) is None


def test_a_build_interrupted_before_its_probe_is_not_opened_and_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _graph(tmp_path / "g.onnx")

    def killed(*args: object, **kwargs: object) -> None:
        raise OSError("killed")

    monkeypatch.setattr(atomic_files, "write_atomically", killed)
    assert not build_packed(graph, KEY, HIDDEN, _open)  # logged, not raised
    assert open_packed(graph, KEY, HIDDEN, _open) is None
    assert needs_packing(graph, KEY)
    monkeypatch.undo()
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert open_packed(graph, KEY, HIDDEN, _open) is not None


def test_a_build_killed_at_any_step_leaves_nothing_that_opens(tmp_path: Path) -> None:
    """kill -9 of a process building the packed graph, at each of its renames."""
    graph = _graph(tmp_path / "g.onnx")
    for stop_at in range(3):  # before the weights, the graph, the probe are in place
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import os, sys, time
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from pathlib import Path
            from test_onnx_e5_prepacked import _open, HIDDEN, KEY
            from ragsift.adapters.onnx_e5 import prepacked
            real, done = os.replace, []
            def replace(source, target):
                if len(done) == {stop_at}:
                    print("waiting", flush=True)
                    time.sleep(600)
                done.append(target)
                real(source, target)
            os.replace = replace  # every rename of the build, atomic_files' too
            prepacked.build_packed(Path({str(graph)!r}), KEY, HIDDEN, _open)
        """)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None  # the probe's rename is os.replace too (atomic_files)
        assert child.stdout.readline().strip() == "waiting"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert not probe_path(packed_path(graph, KEY)).exists()
        assert open_packed(graph, KEY, HIDDEN, _open) is None
        assert needs_packing(graph, KEY)
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert open_packed(graph, KEY, HIDDEN, _open) is not None


def test_the_machine_key_names_the_onnx_runtime_version_and_this_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import onnxruntime

    key = machine_key()
    assert len(key) == 16 and int(key, 16) >= 0
    assert machine_key() == key
    monkeypatch.setattr(onnxruntime, "__version__", onnxruntime.__version__ + ".post1")
    assert machine_key() != key
    monkeypatch.undo()
    monkeypatch.setattr(prepacked, "_cpu_signature", lambda: "model name=another cpu")
    assert machine_key() != key


def test_a_build_that_onnx_runtime_fails_is_logged_and_leaves_only_the_plain_graph(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    graph = _graph(tmp_path / "g.onnx")

    def failing(source: str, optimize: bool, optimized_to: str | None) -> Any:
        raise RuntimeError("ONNXRuntimeError: cannot save")

    with caplog.at_level(logging.WARNING):
        assert not build_packed(graph, KEY, HIDDEN, failing)
    assert "cannot save the packed e5 graph" in caplog.text
    assert [p.name for p in tmp_path.iterdir()] == [graph.name]
    assert needs_packing(graph, KEY)


def test_a_build_removes_the_temporaries_of_builds_killed_long_ago(tmp_path: Path) -> None:
    graph = _graph(tmp_path / "g.onnx")
    packed = packed_path(graph, KEY)
    old_folder = tmp_path / f"{packed.name}.abc.tmp"
    old_folder.mkdir()
    (old_folder / packed.name).write_bytes(b"half")
    old_probe = tmp_path / f"{probe_path(packed).name}.xyz.tmp"
    old_probe.write_bytes(b"half")
    young_probe = tmp_path / f"{probe_path(packed).name}.new.tmp"  # a build running now
    young_probe.write_bytes(b"half")
    hour_ago = time.time() - 7200
    for path in (old_folder, old_probe):
        os.utime(path, (hour_ago, hour_ago))
    assert build_packed(graph, KEY, HIDDEN, _open)
    assert not old_folder.exists() and not old_probe.exists() and young_probe.exists()
