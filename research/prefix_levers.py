"""Offline check of e5's symmetric prefix for short passages (issue 18).

multilingual-e5 is trained with "query: " on both sides for symmetric tasks (paraphrase,
question-question matching); ragsift embeds every chunk as "passage: ". This script embeds a
set's passages both ways with the ONNX e5 route, searches exactly, fuses each with exact BM25
(z-score 1/0.7, 100 per channel, as the default) and prints nDCG@10 with paired-bootstrap 95%
CIs against the default.

    python research/prefix_levers.py [--root ../shared/evaldata] [--cache /tmp/prefix] SET [...]

Vectors are cached as .npy under --cache/SET (passages "passage: ", passages "query: ",
queries "query: "), so reruns only score.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rescoring_levers import SetData, fused, load, ndcg, top  # beside this script

from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import passage_text

BATCH = 64


def _encoder(embedder: OnnxE5Embedder) -> Callable[[str, Sequence[str]], np.ndarray]:
    runtime = embedder._loaded()  # the route's own batching, with a prefix of our choice
    if runtime is None:
        raise SystemExit("the ONNX e5 route is not available (install the `fast` extra)")

    def encode(prefix: str, texts: Sequence[str]) -> np.ndarray:
        rows = [embedder._embed(runtime, [prefix + t for t in texts[i:i + BATCH]], 1)
                for i in range(0, len(texts), BATCH)]
        return np.concatenate(rows)
    return encode


def vectors(root: Path, cache: Path, name: str) -> dict[str, np.ndarray]:
    from ragsift.evaluation.datasets import load_beir_folder

    folder = cache / name
    folder.mkdir(parents=True, exist_ok=True)
    data = load_beir_folder(root / name)
    texts = [passage_text(p) for p in data.corpus]
    queries = [q.text for q in data.queries if data.qrels.get(q.id)]
    wanted = {"p": ("passage: ", texts), "sym": ("query: ", texts), "q": ("query: ", queries)}
    encode: Callable[[str, Sequence[str]], np.ndarray] | None = None
    out: dict[str, np.ndarray] = {}
    for key, (prefix, items) in wanted.items():
        path = folder / f"{key}.npy"
        if not path.is_file():
            encode = encode or _encoder(OnnxE5Embedder(threads=1))
            start = time.process_time()
            np.save(path, encode(prefix, items))
            print(f"{name}: {key} {len(items)} texts, "
                  f"{(time.process_time() - start) / len(items) * 1000:.1f} CPU ms each",
                  file=sys.stderr)
        out[key] = np.load(path)
    return out


def score(s: SetData, vecs: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    runs: dict[str, dict[str, list[int]]] = {k: {} for k in (
        "dense passage:", "dense query:", "dense mean of both",
        "hybrid passage: (default)", "hybrid query:", "hybrid mean of both", "BM25")}
    for row, (qid, text) in enumerate(s.queries):
        q = vecs["q"][row]
        as_passage, as_query = vecs["p"] @ q, vecs["sym"] @ q
        lists = {"passage:": top(as_passage, 100), "query:": top(as_query, 100),
                 "mean of both": top((as_passage + as_query) / 2, 100)}
        sparse = s.sparse(text)
        runs["BM25"][qid] = [i for i, _ in sparse]
        for label, dense in lists.items():
            runs[f"dense {label}"][qid] = [i for i, _ in dense]
            hybrid = "hybrid passage: (default)" if label == "passage:" else f"hybrid {label}"
            runs[hybrid][qid] = [i for i, _ in fused(dense, sparse)]
    return {k: {qid: ndcg(s, qid, r) for qid, r in v.items()} for k, v in runs.items()}


def report(name: str, scores: dict[str, dict[str, float]]) -> None:
    print(f"\n{name} (load {os.getloadavg()[0]:.2f})\n")
    print("| config | nDCG@10 | vs | delta [95% CI] | helped/hurt |\n|---|---|---|---|---|")
    pairs = [("dense query:", "dense passage:"), ("dense mean of both", "dense passage:"),
             ("hybrid query:", "hybrid passage: (default)"),
             ("hybrid mean of both", "hybrid passage: (default)"),
             ("hybrid passage: (default)", "dense passage:"),
             ("hybrid query:", "dense query:")]
    for config, base in pairs:
        ci = paired_by_query(scores[base], scores[config])
        print(f"| {config} | {statistics.fmean(scores[config].values()):.4f} | {base} "
              f"| {ci.label()} | {ci.better}/{ci.worse} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--root", type=Path, default=Path("../shared/evaldata"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/prefix"))
    parser.add_argument("--levers-cache", type=Path, default=Path("/tmp/levers"))
    args = parser.parse_args()
    for name in args.sets:
        vecs = vectors(args.root, args.cache, name)
        # BM25 only from the shared loader: the e5 vectors here are the ones just encoded
        s = load(args.root, args.levers_cache, Path("/nonexistent"), name, bm25_only=True)
        report(name, score(s, vecs))


if __name__ == "__main__":
    main()
