"""A BM25-only proxy of the exact-match lane (issue 34) on an English labelled set (scifact).

The hybrid KB (e5 embeddings of 5,183 abstracts) takes hours to build on 2 CPUs, so this
measures the lane over a BM25 baseline instead: every passage is one chunk (title + text),
tokenized with ragsift's analyzer v2 (the default for new indexes), ranked by plain BM25
(numpy, k1 0.9, b 0.4; not tantivy's k1 1.2 / b 0.75) to the top `--depth` candidates. The
lane is `retrieval/exact_match.py` itself: `rare_terms` over the query's analyzer tokens with
document frequencies counted from the same tokenized corpus (what tantivy's doc_freq reports),
`effective_max_df`, the holders of each rare term over the whole KB (its term search returns
at most max_df chunks), and `promote` over the candidates only (holders outside the list are
not added). The hybrid's candidates would differ (dense hits, fused order): this is a proxy.

    PYTHONPATH=src python research/exact_match_scifact_proxy.py [--data DIR] [--depth 100]
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytrec_eval  # type: ignore[import-untyped]
from scipy import sparse  # type: ignore[import-untyped]

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.domain.results import FusedHit
from ragsift.evaluation.bootstrap_ci import paired_bootstrap
from ragsift.evaluation.datasets import load_corpus, load_queries, read_qrels
from ragsift.retrieval.exact_match import effective_max_df, promote, rare_terms

K1, B = 0.9, 0.4


def bm25_matrix(docs: list[list[str]]) -> tuple[sparse.csc_matrix, dict[str, int], list[int]]:
    """(docs x terms BM25 weights, term -> column, document frequency per column)."""
    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    tfs: list[int] = []
    for row, tokens in enumerate(docs):
        for term, tf in Counter(tokens).items():
            rows.append(row)
            cols.append(vocab.setdefault(term, len(vocab)))
            tfs.append(tf)
    n = len(docs)
    lengths = np.array([len(tokens) for tokens in docs], dtype=np.float64)
    norm = K1 * (1 - B + B * lengths / lengths.mean())
    tf = np.array(tfs, dtype=np.float64)
    row_index = np.array(rows)
    df = np.bincount(np.array(cols), minlength=len(vocab))
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    weights = idf[np.array(cols)] * tf * (K1 + 1) / (tf + norm[row_index])
    matrix = sparse.csc_matrix((weights, (row_index, np.array(cols))), shape=(n, len(vocab)))
    return matrix, vocab, df.tolist()


def hit(chunk_id: str, score: float, rank: int) -> FusedHit:
    return FusedHit(chunk_id=chunk_id, document_id=chunk_id, fusion_score=score, best_rank=rank,
                    ranks={"sparse": rank}, scores={"sparse": score},
                    retrieval_sources=("sparse",))


def ndcg10(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    return {qid: m["ndcg_cut_10"] for qid, m in evaluator.evaluate(run).items()}


def as_run(ranked: list[FusedHit]) -> dict[str, float]:
    """Scores that pytrec_eval sorts back into this order (it sorts by score, not rank)."""
    return {h.chunk_id: float(len(ranked) - i) for i, h in enumerate(ranked)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/evaldata/scifact"))
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--max-df", type=int, default=3)
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--digits-only", action="store_true",
                        help="a variant, not the code's rule: count only rare terms with a digit")
    args = parser.parse_args()

    passages = load_corpus(args.data / "corpus.jsonl")
    queries = load_queries(args.data / "queries.dev.jsonl")
    loaded = {q.id for q in queries}
    qrels = {qid: rel for qid, rel in read_qrels(args.data / "qrels.tsv").items()
             if qid in loaded}
    ids = [p.id for p in passages]
    docs = [analyze_v2(f"{p.title}\n{p.text}" if p.title else p.text) for p in passages]
    matrix, vocab, df_list = bm25_matrix(docs)
    doc_freq = {term: df_list[col] for term, col in vocab.items()}
    max_df = effective_max_df(args.max_df, len(docs))

    def rare(tokens: list[str]) -> list[str]:
        terms = rare_terms(tokens, doc_freq, max_df)
        return [t for t in terms if any(c.isdigit() for c in t)] if args.digits_only else terms

    column = matrix.tocsc()
    print(f"{len(docs)} chunks, {len(queries)} queries ({len(qrels)} judged), "
          f"effective max_df {max_df}, depth {args.depth}"
          f"{', digits only (variant)' if args.digits_only else ''}")

    base_run: dict[str, dict[str, float]] = {}
    lane_run: dict[str, dict[str, float]] = {}
    fired: dict[str, tuple[list[str], dict[str, int], int, list[str]]] = {}
    for query in queries:
        tokens = analyze_v2(query.text)
        scores = np.zeros(len(docs))
        for term in tokens:  # a repeated query term counts again, as in a tantivy query
            col = vocab.get(term)
            if col is not None:
                start, end = column.indptr[col], column.indptr[col + 1]
                scores[column.indices[start:end]] += column.data[start:end]
        matched = np.flatnonzero(scores > 0)
        order = sorted(matched, key=lambda i: (-scores[i], ids[i]))[:args.depth]
        fused = [hit(ids[i], float(scores[i]), rank) for rank, i in enumerate(order, start=1)]
        terms = rare(tokens)
        held: dict[str, int] = {}
        for term in terms:
            col = vocab[term]
            for row in column.indices[column.indptr[col]:column.indptr[col + 1]][:args.max_df]:
                held[ids[row]] = held.get(ids[row], 0) + 1
        candidates = {h.chunk_id for h in fused}
        promoted = sum(1 for chunk in held if chunk in candidates)
        moved = promote(fused, held) if promoted else fused
        base_run[query.id] = as_run(fused)
        lane_run[query.id] = as_run(moved)
        if promoted:
            fired[query.id] = (terms, held, promoted, [h.chunk_id for h in moved[:10]])

    for run in (base_run, lane_run):  # a query with no hit still counts (nDCG 0)
        for qid in qrels:
            run.setdefault(qid, {})
    base, lane = ndcg10(qrels, base_run), ndcg10(qrels, lane_run)
    judged = sorted(qrels)
    interval = paired_bootstrap([base[q] for q in judged], [lane[q] for q in judged])
    mean_base = sum(base[q] for q in judged) / len(judged)
    mean_lane = sum(lane[q] for q in judged) / len(judged)
    print(f"nDCG@10 BM25 {mean_base:.4f} -> lane {mean_lane:.4f}: {interval.mean:+.4f} "
          f"[{interval.low:+.4f}, {interval.high:+.4f}] (95% paired bootstrap), "
          f"better {interval.better} / worse {interval.worse} of {interval.queries}")
    with_terms = sum(1 for q in queries if rare(analyze_v2(q.text)))
    top10_changed = [q for q, (_, _, _, top) in fired.items()
                     if list(base_run[q])[:10] != top]
    print(f"queries with a rare term: {with_terms}; lane applied (a candidate holds one): "
          f"{len(fired)}; top 10 reordered: {len(top10_changed)}")
    fired_judged = [q for q in fired if q in qrels]
    up = sum(1 for q in fired_judged if lane[q] > base[q] + 1e-12)
    down = sum(1 for q in fired_judged if lane[q] < base[q] - 1e-12)
    if fired_judged:
        sub = paired_bootstrap([base[q] for q in fired_judged], [lane[q] for q in fired_judged])
        print(f"on the {len(fired_judged)} judged queries it fired on: better {up}, worse {down},"
              f" same {len(fired_judged) - up - down}; mean {sub.mean:+.4f} "
              f"[{sub.low:+.4f}, {sub.high:+.4f}]")
    text = {q.id: q.text for q in queries}
    shown = sorted(fired, key=lambda q: lane.get(q, 0) - base.get(q, 0))[:args.examples]
    for qid in shown:
        terms, held, promoted, _ = fired[qid]
        relevant = qrels.get(qid, {})
        holders = ", ".join(f"{c}{'*' if relevant.get(c, 0) > 0 else ''}"
                            f"@{list(base_run[qid]).index(c) + 1 if c in base_run[qid] else '-'}"
                            for c in held)
        print(f"- q{qid} {base.get(qid, math.nan):.3f} -> {lane.get(qid, math.nan):.3f} "
              f"rare {terms} (df {[doc_freq[t] for t in terms]}) holders {holders} "
              f"(* relevant, @ BM25 rank); promoted {promoted}: {text[qid]}")


if __name__ == "__main__":
    main()
