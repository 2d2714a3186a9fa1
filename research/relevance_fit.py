"""Fits and measures the calibrated `relevance` of a hit (ragsift.retrieval.relevance) on the
labelled evaluation sets.

Usage: python research/relevance_fit.py --data-dir DIR [--sets ../shared/evaldata]
       [--only afqmc-faq cmrc2018] [--dump hits.jsonl] [--load hits.jsonl]
DIR holds the evaluation KBs `ragsift eval` / scripts/quality_report.py built (it is searched,
not rebuilt). Each dev query is searched with the server's defaults per fusion method, top 10;
a hit is relevant when its corpus id is judged relevant. Half the queries (by id hash) fit a
logistic map of (fused score, the request's top dense cosine), the other half measure it: AUC
and precision/recall at 0.5. Prints the constants and a Markdown table for docs/quality.md.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

FUSIONS = ("zscore", "weighted", "rrf")
TOP = 10


def collect(data_dir: Path, sets: Path, names: list[str]) -> list[dict[str, Any]]:
    from ragsift.bootstrap import build
    from ragsift.config import Settings
    from ragsift.domain.requests import SearchRequest
    from ragsift.evaluation.datasets import load_beir_folder
    from ragsift.evaluation.session import kb_name

    container = build(Settings(data_dir=data_dir, query_cache_size=0))
    rows: list[dict[str, Any]] = []
    for name in names:
        dataset = load_beir_folder(sets / name)
        kb = container.repository.get_kb_by_name(kb_name(name, False))
        assert kb is not None, f"no eval KB for {name} in {data_dir}"
        corpus = {d.id: str(d.metadata.get("corpus_id", d.filename))
                  for d in container.repository.list_documents(kb.id)}
        for fusion in FUSIONS:
            for query in dataset.queries:
                judged = dataset.qrels.get(query.id, {})
                if not any(g > 0 for g in judged.values()):
                    continue
                result = asyncio.run(container.retrieval.search(SearchRequest(
                    query=query.text, kb_id=kb.id, top_k=TOP, fusion=fusion,
                    rerank=False, run_faq=False)))
                for hit in result.hits:
                    rows.append({
                        "set": name, "fusion": fusion, "query": query.id, "rank": hit.rank,
                        "fused": hit.fusion_score, "dense": hit.dense_score,
                        "top_dense": max((h.dense_score for h in result.hits
                                          if h.dense_score is not None), default=None),
                        "relevant": judged.get(corpus.get(hit.document_id, ""), 0) > 0,
                    })
            print(f"collected {name} {fusion}: {len(rows)} rows so far", flush=True)
    return rows


def held_out(query_id: str) -> bool:
    return hashlib.sha1(query_id.encode()).digest()[0] % 2 == 1


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Weights (last = intercept) of a logistic regression by Newton steps."""
    design = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(design.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-design @ w))
        grad = design.T @ (p - y) + l2 * w
        hess = design.T @ (design * (p * (1 - p))[:, None]) + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def features(rows: list[dict[str, Any]], with_top: bool) -> np.ndarray:
    cols = [[r["fused"]] + ([r["top_dense"] or 0.0] if with_top else []) for r in rows]
    return np.asarray(cols, dtype=float)


def report(rows: list[dict[str, Any]]) -> None:
    names = sorted({r["set"] for r in rows})
    for fusion in FUSIONS:
        mine = [r for r in rows if r["fusion"] == fusion]
        fit_rows = [r for r in mine if not held_out(r["query"])]
        for with_top in (False, True):
            w = fit_logistic(features(fit_rows, with_top),
                             np.asarray([r["relevant"] for r in fit_rows], dtype=float))
            print(f"\n{fusion} {'fused+top_dense' if with_top else 'fused'}: weights {w.tolist()}")
            print("| set | hits | relevant | AUC fused | AUC relevance | P@0.5 | R@0.5 | "
                  "mean relevance | relevant share |")
            print("|---|---|---|---|---|---|---|---|---|")
            for name in names:
                test = [r for r in mine if r["set"] == name and held_out(r["query"])]
                x = features(test, with_top)
                y = np.asarray([r["relevant"] for r in test])
                p = 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))
                chosen = p >= 0.5
                precision = float(y[chosen].mean()) if chosen.any() else float("nan")
                recall = float(chosen[y].mean()) if y.any() else float("nan")
                print(f"| {name} | {len(test)} | {int(y.sum())} | {auc(x[:, 0], y):.3f} | "
                      f"{auc(p, y):.3f} | {precision:.3f} | {recall:.3f} | {p.mean():.3f} | "
                      f"{y.mean():.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--sets", type=Path, default=Path("../shared/evaldata"))
    parser.add_argument("--only", nargs="*", default=["afqmc-faq", "cmrc2018"])
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--load", type=Path)
    args = parser.parse_args()
    if args.load:
        rows = [json.loads(line) for line in args.load.read_text().splitlines()]
    else:
        rows = collect(args.data_dir, args.sets, args.only)
        if args.dump:
            args.dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report(rows)


if __name__ == "__main__":
    main()
