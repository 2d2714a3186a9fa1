"""Offline measurement of a learned linear re-scoring of the fused candidates (issue 18).

Each query's candidates are the union of the eval KB's e5 and BM25 top-100 lists and USE's
exact top 100 (the lists `research/channel_levers.py score` cached under /tmp/levers/<set>/).
A candidate gets a few features (each channel's z-score as fusion computes it, presence in
each list, the exact e5 / USE cosine z-scored by the list's statistics, query-token
coverage and idf-weighted coverage over the v2 analyzer, candidate coverage, a quantity
clash); a linear score is fitted with a listwise softmax loss (scipy L-BFGS, L2), pooled
over the sets with each set weighted equally. Held-out figures come from 5-fold
cross-validation by query (every fold's model trained on the other folds of every set) and
from leave-one-set-out; deltas are against the default (z-score, dense 1, BM25 0.7) on the
same queries with the paired-bootstrap 95% CI.

    python research/learned_fusion_levers.py --data-dir /tmp/levers/channels_data SET_DIR ...
    python research/learned_fusion_levers.py --trees SET_DIR ...   # lambdarank (lightgbm)

`--trees` fits LightGBM lambdarank trees instead (`pip install lightgbm`, not a dependency).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize  # type: ignore[import-untyped]

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import document_id, passage_text
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.session import kb_name
from ragsift.retrieval.quantities import contradicts, quantities

CACHE = Path("/tmp/levers")
_CJK = re.compile(r"[\u4e00-\u9fff]")
DEPTH = 100
Floats = npt.NDArray[np.float64]

FEATURES = ("z_dense", "z_sparse", "z_use", "in_dense", "in_sparse", "in_use",
            "x_dense", "x_use", "qcov", "qcov_idf", "dcov", "clash", "q_cjk", "log_qlen",
            "log_dlen")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "default-weights-refit": ("z_dense", "z_sparse"),
    "+use": ("z_dense", "z_sparse", "z_use"),
    "+presence": ("z_dense", "z_sparse", "z_use", "in_dense", "in_sparse", "in_use"),
    "+exact": ("z_dense", "z_sparse", "z_use", "in_sparse", "x_dense", "x_use"),
    "+coverage": ("z_dense", "z_sparse", "z_use", "in_sparse", "x_dense", "x_use",
                  "qcov", "qcov_idf", "dcov"),
    "all": FEATURES[:12],
    "no-use:coverage": ("z_dense", "z_sparse", "in_sparse", "x_dense", "qcov", "qcov_idf",
                        "dcov"),
}


@dataclass
class QueryData:
    qid: str
    set_name: str
    docs: list[str]  # corpus passage ids of the candidates
    x: Floats  # candidates x FEATURES
    gain: Floats  # graded relevance of each candidate


def _z(scores: dict[int, float]) -> tuple[dict[int, float], float, float, float]:
    values = list(scores.values())
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    z = {k: (v - mean) / spread for k, v in scores.items()}
    return z, min(z.values()), mean, spread


def _tokens(text: str) -> set[str]:
    return set(analyze_v2(text))


def load_set(container: Any, folder: Path) -> list[QueryData]:
    dataset = load_beir_folder(folder)
    kb = container.repository.get_kb_by_name(kb_name(dataset.name, False))
    if kb is None:
        raise SystemExit(f"{dataset.name}: no eval KB in the data dir")
    base = CACHE / folder.name
    lists = pickle.loads((base / "channels_kb_lists.pkl").read_bytes())
    e5p, e5q = np.load(base / "e5_passages.npy"), np.load(base / "e5_queries.npy")
    usep, useq = np.load(base / "use_p.npy"), np.load(base / "use_q.npy")
    row_of = {document_id(kb.id, p.id): i for i, p in enumerate(dataset.corpus)}
    texts = [passage_text(p) for p in dataset.corpus]
    token_sets = [_tokens(t) for t in texts]
    df = Counter(t for s in token_sets for t in s)
    idf = {t: math.log(1 + len(texts) / n) for t, n in df.items()}
    out: list[QueryData] = []
    for qrow, query in enumerate(dataset.queries):
        channel = lists[query.id]
        dense = {row_of[h.document_id]: h.score for h in channel["dense"].hits}
        sparse = {row_of[h.document_id]: h.score for h in channel["sparse"].hits}
        use_scores = usep @ useq[qrow]
        top = np.argpartition(-use_scores, DEPTH)[:DEPTH]
        use = {int(i): float(use_scores[i]) for i in top}
        rows = sorted(set(dense) | set(sparse) | set(use))
        zd, md, mean_d, sd_d = _z(dense)
        zs, ms, _, _ = _z(sparse) if sparse else ({}, 0.0, 0.0, 1.0)
        zu, mu, mean_u, sd_u = _z(use)
        cos_d = e5p[rows] @ e5q[qrow]
        qtok = _tokens(query.text)
        qidf = sum(idf.get(t, 0.0) for t in qtok) or 1.0
        asked = quantities(query.text)
        q_cjk = len(_CJK.findall(query.text)) / max(len(query.text.strip()), 1)
        x = np.zeros((len(rows), len(FEATURES)))
        for i, r in enumerate(rows):
            shared = qtok & token_sets[r]
            x[i] = (
                zd.get(r, md), zs.get(r, ms), zu.get(r, mu),
                r in dense, r in sparse, r in use,
                (cos_d[i] - mean_d) / sd_d, (use_scores[r] - mean_u) / sd_u,
                len(shared) / max(len(qtok), 1),
                sum(idf.get(t, 0.0) for t in shared) / qidf,
                len(shared) / max(len(token_sets[r]), 1),
                1.0 if asked and contradicts(asked, quantities(texts[r])) else 0.0,
                q_cjk, math.log1p(len(qtok)), math.log1p(len(token_sets[r])),
            )
        rel = dataset.qrels.get(query.id, {})
        docs = [dataset.corpus[r].id for r in rows]
        gain = np.array([float(max(rel.get(d, 0), 0)) for d in docs])
        out.append(QueryData(query.id, folder.name, docs, x, gain))
    return out


def _columns(names: tuple[str, ...]) -> list[int]:
    return [FEATURES.index(n) for n in names]


def fit(queries: list[QueryData], cols: list[int], l2: float = 1e-3) -> Floats:
    """Weights minimising the listwise softmax loss, each set's queries weighted equally."""
    train = [q for q in queries if q.gain.sum() > 0]
    per_set = Counter(q.set_name for q in train)
    weight = [1.0 / per_set[q.set_name] / len(per_set) for q in train]
    xs = [q.x[:, cols] for q in train]
    targets = [q.gain / q.gain.sum() for q in train]

    def loss(w: Floats) -> tuple[float, Floats]:
        total, grad = l2 * float(w @ w), 2 * l2 * w
        for x, t, c in zip(xs, targets, weight, strict=True):
            s = x @ w
            s = s - s.max()
            p = np.exp(s)
            p /= p.sum()
            total -= c * float(t @ np.log(p + 1e-300))
            grad = grad + c * (x.T @ (p - t))
        return total, grad

    start = np.zeros(len(cols))
    start[0] = 1.0
    result = minimize(loss, start, jac=True, method="L-BFGS-B")
    return np.asarray(result.x)


def fit_trees(queries: list[QueryData], cols: list[int], seed: int = 0) -> Any:
    """LightGBM lambdarank (nDCG@10) over the same features, each set weighted equally."""
    import lightgbm  # type: ignore[import-not-found]

    train = [q for q in queries if q.gain.sum() > 0]
    per_set = Counter(q.set_name for q in train)
    x = np.vstack([q.x[:, cols] for q in train])
    y = np.concatenate([q.gain for q in train]).astype(int)
    w = np.concatenate([np.full(len(q.docs), 1000.0 / per_set[q.set_name]) for q in train])
    params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15,
              "min_data_in_leaf": 50, "bagging_fraction": 0.8, "bagging_freq": 1,
              "feature_fraction": 0.8, "seed": seed, "verbose": -1, "num_threads": 2,
              "lambdarank_truncation_level": 20, "eval_at": [10]}
    dataset = lightgbm.Dataset(x, y, group=[len(q.docs) for q in train], weight=w)
    return lightgbm.train(params, dataset, num_boost_round=TREES)


TREES = 200


def ranked_trees(q: QueryData, cols: list[int], model: Any) -> list[str]:
    s = model.predict(q.x[:, cols])
    order = np.lexsort((np.arange(len(s)), -s))
    return [q.docs[i] for i in order[:10]]


def ranked(q: QueryData, cols: list[int], w: Floats) -> list[str]:
    s = q.x[:, cols] @ w
    order = np.lexsort((np.arange(len(s)), -s))
    return [q.docs[i] for i in order[:10]]


def ndcg(
    queries: list[QueryData], runs: dict[str, list[str]], qrels: dict[str, Any]
) -> dict[str, float]:
    per = evaluate_run({q.qid: runs[q.qid] for q in queries}, qrels, (10,))
    return {q: m["ndcg@10"] for q, m in per.items()}


def fold_of(qid: str, folds: int) -> int:
    return int(hashlib.sha256(qid.encode()).hexdigest(), 16) % folds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--data-dir", type=Path, default=CACHE / "channels_data")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--trees", action="store_true", help="lambdarank trees (lightgbm)")
    parser.add_argument("--cache", type=Path, default=CACHE / "learned_fusion_data.pkl")
    parser.add_argument("--out", type=Path, default=CACHE / "learned_fusion.json")
    args = parser.parse_args()
    if args.cache.is_file():
        data = pickle.loads(args.cache.read_bytes())
    else:
        container = build(Settings(data_dir=args.data_dir, query_cache_size=0))
        try:
            data = {f.name: load_set(container, f) for f in args.sets}
        finally:
            container.close()
        args.cache.write_bytes(pickle.dumps(data))
    data = {f.name: data[f.name] for f in args.sets}  # the cache may hold more sets
    qrels = {f.name: load_beir_folder(f).qrels for f in args.sets}
    every = [q for qs in data.values() for q in qs]
    default_cols = _columns(("z_dense", "z_sparse"))
    default_w = np.array([1.0, 0.7])
    base = {name: ndcg(qs, {q.qid: ranked(q, default_cols, default_w) for q in qs}, qrels[name])
            for name, qs in data.items()}
    report: dict[str, Any] = {"default": {n: statistics.fmean(v.values()) for n, v in base.items()}}
    print("default:", {n: round(v, 4) for n, v in report["default"].items()})
    sets = dict(FEATURE_SETS)
    if args.trees:
        sets = {"trees:" + k: v for k, v in FEATURE_SETS.items()}
        sets["trees:all+shape"] = FEATURES
    for label, names in sets.items():
        cols = _columns(names)
        trainer, scorer = ((fit_trees, ranked_trees) if args.trees
                           else (lambda qs, c: fit(qs, c, args.l2), ranked))
        runs: dict[str, list[str]] = {}
        for k in range(args.folds):
            w = trainer([q for q in every if fold_of(q.qid, args.folds) != k], cols)
            runs.update({q.qid: scorer(q, cols, w) for q in every
                         if fold_of(q.qid, args.folds) == k})
        loso: dict[str, list[str]] = {}
        for name, qs in data.items():
            w = trainer([q for q in every if q.set_name != name], cols)
            loso.update({q.qid: scorer(q, cols, w) for q in qs})
        row: dict[str, Any] = {"weights": {}}
        if not args.trees:
            full = fit(every, cols, args.l2)
            row["weights"] = dict(zip(names, map(float, full), strict=True))
        for how, run in (("cv", runs), ("leave-one-set-out", loso)):
            cells = {}
            for name, qs in data.items():
                per = ndcg(qs, run, qrels[name])
                ci = paired_by_query(base[name], per)
                cells[name] = {"ndcg@10": statistics.fmean(per.values()), "delta": ci.mean,
                               "low": ci.low, "high": ci.high}
            row[how] = cells
            print(f"{label:<24} {how:<18} " + "  ".join(
                f"{n}={c['ndcg@10']:.4f} {c['delta']:+.4f} [{c['low']:+.4f},{c['high']:+.4f}]"
                for n, c in cells.items()))
        print(f"{'':<24} weights " + " ".join(f"{n}={v:+.3f}" for n, v in row["weights"].items()))
        report[label] = row
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
