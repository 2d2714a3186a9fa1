"""BM25 analyzer and fusion levers on the dev queries, measured offline over the eval KBs.

Usage: python research/analyzer_levers.py --data-dir DIR [--sets ../shared/evaldata] SET ...
The dense lists come from the eval KBs that `ragsift eval` built in DIR (searched once per
query); BM25 is computed here for each analyzer variant with an exact BM25 (k1, b as given;
tantivy's are 1.2 / 0.75 and this reproduces its nDCG@10 to 1e-3), so a variant costs one
analysis of the corpus instead of a re-index. Prints BM25 alone and convex (min-max) fusion
with the dense list at several sparse weights and channel widths, nDCG@10.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ragsift.adapters.embedded_index.analyzer import analyze_v1, analyze_v2
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import evaluate_run, mean_metrics
from ragsift.evaluation.session import kb_name

Ranked = list[tuple[str, float]]
ZH_STOP = frozenset([
    "的", "了", "吗", "呢", "吧", "啊", "是", "在", "有", "和", "与", "或",
    "怎么", "怎么办", "怎样", "如何", "什么", "为什么", "哪", "哪里", "多少", "几", "能", "可以",
    "会", "要", "就", "都", "也", "还", "我", "你", "他", "这", "那", "请问",
])
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def _cjk_runs(text: str) -> list[str]:
    return _CJK.findall(unicodedata.normalize("NFKC", text).lower())


def v1_bigrams(text: str) -> list[str]:
    return analyze_v1(text) + [r[i:i + 2] for r in _cjk_runs(text) for i in range(len(r) - 1)]


def v1_unigrams(text: str) -> list[str]:
    return analyze_v1(text) + [c for r in _cjk_runs(text) for c in r]


def v1_zh_stop(text: str) -> list[str]:
    return [t for t in analyze_v1(text) if t not in ZH_STOP]


VARIANTS: dict[str, Callable[[str], list[str]]] = {
    "v1 (jieba search)": analyze_v1, "v1 - zh stop words": v1_zh_stop,
    "v1 + CJK bigrams": v1_bigrams, "v1 + CJK unigrams": v1_unigrams,
    "v2 (+ unigrams + bigrams, en stem/stop)": analyze_v2,
}


class Bm25:
    """Exact BM25 (Lucene idf) over a term-frequency matrix."""

    def __init__(self, texts: Sequence[str], analyze: Callable[[str], list[str]]) -> None:
        self.analyze = analyze
        vocab: dict[str, int] = {}
        rows, cols, vals, lengths = [], [], [], []
        for i, text in enumerate(texts):
            tf: dict[str, int] = {}
            for token in analyze(text):
                tf[token] = tf.get(token, 0) + 1
            lengths.append(sum(tf.values()))
            for token, count in tf.items():
                rows.append(i)
                cols.append(vocab.setdefault(token, len(vocab)))
                vals.append(count)
        self.vocab = vocab
        self.tf = sp.csc_matrix((vals, (rows, cols)), shape=(len(texts), len(vocab)),
                                dtype=np.float32)
        self.lengths = np.asarray(lengths, dtype=np.float32)
        df = np.diff(self.tf.indptr)
        self.idf = np.log(1 + (len(texts) - df + 0.5) / (df + 0.5))

    def search(self, query: str, k1: float, b: float, n: int = 100) -> list[tuple[int, float]]:
        scores = np.zeros(len(self.lengths), dtype=np.float32)
        norm = k1 * (1 - b + b * self.lengths / self.lengths.mean())
        for token in set(self.analyze(query)):
            j = self.vocab.get(token)
            if j is None:
                continue
            start, end = self.tf.indptr[j], self.tf.indptr[j + 1]
            idx, f = self.tf.indices[start:end], self.tf.data[start:end]
            scores[idx] += self.idf[j] * f * (k1 + 1) / (f + norm[idx])
        top = np.argsort(-scores, kind="stable")[:n]
        return [(int(i), float(scores[i])) for i in top if scores[i] > 0]


def convex(dense: Ranked, sparse: Ranked, weight: float) -> list[str]:
    """Min-max normalised dense (weight 1) + sparse (weight `weight`); a missing list value
    counts as that list's minimum, as in ragsift's weighted fusion."""
    def norm(ranked: Ranked) -> dict[str, float]:
        if not ranked:
            return {}
        lo, hi = min(s for _, s in ranked), max(s for _, s in ranked)
        return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in ranked}
    nd, ns = norm(dense), norm(sparse)
    md, ms = min(nd.values(), default=0.0), min(ns.values(), default=0.0)
    fused = {d: (nd.get(d, md) + weight * ns.get(d, ms)) / (1 + weight) for d in {*nd, *ns}}
    return [d for d, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))][:100]


def ndcg10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return mean_metrics(evaluate_run(run, {q: qrels[q] for q in run}, (10,)))["ndcg@10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--root", type=Path, default=Path("../shared/evaldata"))
    parser.add_argument("--weights", default="0.3,0.4,0.5,0.6")
    parser.add_argument("--widths", default="30,100")
    parser.add_argument("--k1-b", default="1.2:0.75,0.9:0.4")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    widths = [int(w) for w in args.widths.split(",")]
    params = [tuple(float(x) for x in p.split(":")) for p in args.k1_b.split(",")]
    container = build(Settings(data_dir=args.data_dir))
    for name in args.sets:
        data = load_beir_folder(args.root / name)
        kb = container.repository.get_kb_by_name(kb_name(name, False))
        assert kb is not None, f"no eval KB for {name} in {args.data_dir}"
        corpus_of = {d.id: d.filename for d in container.repository.list_documents(kb.id)}
        queries = [q for q in data.queries if data.qrels.get(q.id)]
        scope = SearchFilter(kb_id=kb.id)
        dense = {
            q.id: [(corpus_of[h.document_id], h.score) for h in container.index.search_dense(
                container.embedder.embed_query(q.text), scope, max(widths))]
            for q in queries
        }
        ids = [p.id for p in data.corpus]
        texts = [f"{p.title} {p.text}".strip() for p in data.corpus]
        dense_alone = ndcg10({q: [d for d, _ in r] for q, r in dense.items()}, data.qrels)
        print(f"\n### {name}: dense {dense_alone:.4f}\n")
        heads = [f"w={w:g} @{n}" for n in widths for w in weights]
        print("| analyzer | k1/b | BM25 | " + " | ".join(heads) + " |")
        print("|---|---|---|" + "---|" * len(heads))
        for label, analyze in VARIANTS.items():
            index = Bm25(texts, analyze)
            for k1, b in params:
                sparse = {q.id: [(ids[i], s) for i, s in index.search(q.text, k1, b)]
                          for q in queries}
                cells = [ndcg10({q: [d for d, _ in r] for q, r in sparse.items()}, data.qrels)]
                cells += [ndcg10({q: convex(dense[q][:n], sparse[q][:n], w) for q in dense},
                                 data.qrels) for n in widths for w in weights]
                print(f"| {label} | {k1:g}/{b:g} | " + " | ".join(f"{c:.4f}" for c in cells)
                      + " |", flush=True)
    container.close()


if __name__ == "__main__":
    main()
