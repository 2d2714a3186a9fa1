"""Offline measurement of BM25 query-token weights by kind (issue 18, entity swaps).

The v2 analyzer queries with three kinds of token for Chinese text: jieba's words, single
CJK characters and CJK character bigrams. A swapped entity (胃炎 / 肠炎) still shares
characters with the wrong title, so a lower weight on single characters (or a higher one on
words and bigrams) might rank the right entity first. This script searches an existing eval
KB's BM25 index with each weighting (`search_sparse_weighted`: tantivy's own BM25 times the
weight of each term, never parsed), fuses the list with the KB's e5 list as the default does
(z-score, dense 1, BM25 0.7, 100 per channel) and prints nDCG@10 with a paired-bootstrap 95%
CI of the difference to the default (all weights 1).

    python research/token_class_levers.py --data-dir /tmp/evalkb SET_DIR [SET_DIR ...]

The KB eval-SET must exist in the data dir (`ragsift eval SET_DIR` builds it); nothing is
written. A token that is both a word and a bigram (or a character) takes the larger weight.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.adapters.embedded_index.analyzer import _CJK_RUN, _segment, analyze_v2
from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import RankedList
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import document_id
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.session import kb_name
from ragsift.retrieval.fusion import zscore_fusion

# (word, character, bigram) weights; the first is the default
GRID: tuple[tuple[float, float, float], ...] = (
    (1, 1, 1), (1, 0.7, 1), (1, 0.5, 1), (1, 0.3, 1), (1, 0.5, 1.5), (1.5, 1, 1),
    (1, 1, 1.5), (1, 1, 0.5), (1.5, 0.5, 1),
)
DEPTH = 100


def weighted_terms(query: str, weights: tuple[float, float, float]) -> list[tuple[str, float]]:
    """The query's v2 tokens (deduplicated, as `search` does) with the weight of their kind."""
    normalized = unicodedata.normalize("NFKC", query).lower()
    word, char, bigram = weights
    kind: dict[str, float] = {}
    cjk = _CJK_RUN.findall(normalized)
    chars = {c for run in cjk for c in run}
    bigrams = {a + b for run in cjk for a, b in itertools.pairwise(run)}
    words = set(_segment(normalized))
    for token in dict.fromkeys(analyze_v2(query)):
        # ASCII tokens come from words only (stemmed, so maybe not spelled as segmented)
        options = [w for w, found in ((word, token in words or token.isascii()),
                                      (char, token in chars),
                                      (bigram, token in bigrams)) if found]
        kind[token] = max(options) if options else 1.0
    return list(kind.items())


def score_set(container: Container, folder: Path) -> None:
    dataset = load_beir_folder(folder)
    kb = container.repository.get_kb_by_name(kb_name(dataset.name, False))
    if kb is None:
        raise SystemExit(f"no KB {kb_name(dataset.name, False)} in the data dir")
    corpus_of = {document_id(kb.id, p.id): p.id for p in dataset.corpus}
    scope = SearchFilter(kb_id=kb.id)
    index = container.index
    if not isinstance(index, EmbeddedIndex):
        raise SystemExit("the data dir's index is not the embedded one")
    dense = {q.id: RankedList(name="dense:original", hits=tuple(index.search_dense(
        container.embedder.embed_query(q.text), scope, DEPTH))) for q in dataset.queries}
    per_config: dict[tuple[float, float, float], dict[str, float]] = {}
    for weights in GRID:
        run: dict[str, list[str]] = {}
        for q in dataset.queries:
            terms = weighted_terms(q.text, weights)
            sparse = RankedList(name="sparse:original", hits=tuple(
                index.search_sparse_weighted(terms, scope, DEPTH)))
            fused = zscore_fusion([dense[q.id], sparse],
                                  {"dense:original": 1.0, "sparse:original": 0.7}, limit=10)
            run[q.id] = [corpus_of[h.document_id] for h in fused]
        per_config[weights] = {q: m["ndcg@10"]
                               for q, m in evaluate_run(run, dataset.qrels, (10,)).items()}
    base = per_config[GRID[0]]
    print(f"## {dataset.name} ({len(base)} queries)")
    print("| word / char / bigram | nDCG@10 | difference [95% CI] | better / worse |")
    print("|---|---|---|---|")
    for weights, scores in per_config.items():
        ci = paired_by_query(base, scores)
        print(f"| {' / '.join(f'{w:g}' for w in weights)} | {statistics.fmean(scores.values()):.4f}"
              f" | {ci.mean:+.4f} [{ci.low:+.4f}, {ci.high:+.4f}] | {ci.better} / {ci.worse} |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("sets", type=Path, nargs="+")
    args = parser.parse_args(argv)
    container = build(Settings(data_dir=args.data_dir, second_dense="off"))
    try:
        for folder in args.sets:
            score_set(container, folder)
    finally:
        container.close()


if __name__ == "__main__":
    main()
