"""Why BM25 at 1M chunks costs what it does, and what cutting the commonest query terms buys.

Reads an index built by `benchmarks/hybrid_scale.py --keep DIR` (its KB `big`, its words.json)
and, for queries made as hybrid_scale makes them (3-8 words of the same Zipf vocabulary,
analysed by the KB's own analyzer, repeated tokens dropped), measures with tantivy directly:

1. the unfiltered disjunction at top 1, 30 and 1000: equal costs mean tantivy's block-max
   pruning skips nothing on these queries;
2. the share of chunks each query term is in (df / N);
3. the disjunction without the terms in more than tau of the chunks: its cost, and how much of
   the full query's top 30 it keeps (the same chunk ids, any order);
4. an exact form (Lucene's "common terms" idea with a safety check): the rare terms must match,
   the common ones only add their score, and the answer is kept only when its 30th score beats
   the most the common terms alone could score (sum of (k1 + 1) x idf); otherwise the full
   query runs. Its cost, how often the check held, and whether the top 30 equals the full
   query's.

Not part of the product or CI. Usage:
    python research/bm25_common_terms_probe.py --index DIR [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tantivy import Occur, Query

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from search_latency import make_text

from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
from ragsift.adapters.embedded_index.index import EmbeddedIndex

K, K1 = 30, 1.2
Hits = list[tuple[float, Any]]


def disjunction(kb: Any, tokens: Sequence[str]) -> Any:
    return Query.boolean_query([(Occur.Should, Query.term_query(kb._schema, "text", t))
                                for t in tokens])


def addresses(hits: Hits) -> set[tuple[int, int]]:
    return {(address.segment_ord, address.doc) for _, address in hits}


def p50_ms(run: Callable[[list[str]], object], queries: list[list[str]]) -> float:
    times = []
    for tokens in queries:
        started = time.perf_counter()
        run(tokens)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="hybrid_scale's --keep DIR")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    index = EmbeddedIndex(args.index / "index", 384)
    words, probs = json.loads((args.index / "words.json").read_text("utf-8"))
    rng = np.random.default_rng(7)
    kb = index._sparse._kb(kb_directory_name("big"), create=False, kb_id="big")
    searcher = kb.searcher
    n = int(searcher.num_docs)
    queries = [list(dict.fromkeys(kb.analyze(make_text(rng, words, np.asarray(probs),
                                                       int(rng.integers(3, 9))))))
               for _ in range(args.queries)]
    df = {t: int(searcher.doc_freq("text", t)) for q in queries for t in q}
    print(f"KB big: {n:,} chunks, {len(queries)} queries, {statistics.mean(map(len, queries)):.1f}"
          f" distinct terms per query, load {os.getloadavg()[0]:.2f}")

    def full(tokens: Sequence[str], limit: int = K) -> Hits:
        return list(searcher.search(disjunction(kb, tokens), limit, count=False).hits)

    for _ in range(5):
        full(queries[0])
    for limit in (1, K, 1000):
        cost = p50_ms(lambda q, lim=limit: full(q, lim), queries)
        print(f"full disjunction, top {limit}: p50 {cost:.2f} ms")
    shares = [df[t] / n for q in queries for t in q]
    for cut in (0.9, 0.5, 0.3, 0.1):
        print(f"query terms in more than {cut:.0%} of chunks: "
              f"{sum(s > cut for s in shares) / len(shares):.0%}")
    truth = {tuple(q): addresses(full(q)) for q in queries}

    def kept(tau: float) -> Callable[[list[str]], list[str]]:
        return lambda q: [t for t in q if df[t] / n <= tau] or q[:1]

    for tau in (0.5, 0.3, 0.1):
        cut = kept(tau)
        overlap = statistics.mean(
            len(addresses(full(cut(q))) & truth[tuple(q)]) / max(1, len(truth[tuple(q)]))
            for q in queries)
        cost = p50_ms(lambda q, c=cut: full(c(q)), queries)
        print(f"drop terms in more than {tau:.0%}: p50 {cost:.2f} ms, "
              f"top-30 overlap with the full query {overlap:.3f}")

    def idf(freq: int) -> float:
        return math.log(1 + (n - freq + 0.5) / (freq + 0.5))

    def common_terms(tokens: list[str], tau: float) -> tuple[Hits, str]:
        rare = [t for t in tokens if df[t] / n <= tau]
        common = [t for t in tokens if df[t] / n > tau]
        if not rare or not common:
            return full(tokens), "plain"
        bound = sum((K1 + 1) * idf(df[t]) for t in common)
        query = Query.boolean_query([(Occur.Must, disjunction(kb, rare)),
                                     (Occur.Should, disjunction(kb, common))])
        hits = list(searcher.search(query, K, count=False).hits)
        if len(hits) == K and hits[-1][0] > bound:
            return hits, "checked"
        return full(tokens), "fell back"

    for tau in (0.5, 0.3, 0.1):
        kinds: dict[str, int] = {}
        same = 0
        for q in queries:
            hits, kind = common_terms(q, tau)
            kinds[kind] = kinds.get(kind, 0) + 1
            same += addresses(hits) == truth[tuple(q)]
        print(f"exact common-terms form, tau {tau:.0%}: p50 "
              f"{p50_ms(lambda q, t=tau: common_terms(q, t), queries):.2f} ms, {kinds}, "
              f"same top-30 set {same}/{len(queries)}")
    print(f"load {os.getloadavg()[0]:.2f}")
    index.close()


if __name__ == "__main__":
    main()
