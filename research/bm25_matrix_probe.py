"""Would a vectorised BM25 scorer over a sparse term-document matrix take BM25 off the hybrid's
critical path (issue 39, item 3)? Measured before building it.

One kb of N synthetic bilingual chunks (benchmarks/search_latency's vocabulary, 60-120 words,
documents of 10 chunks) is written to ragsift's tantivy store as ingestion does; the same
analyzer tokens go into a CSC matrix (terms x chunks) holding tantivy's own BM25 term weights:
idf = ln(1 + (N - df + 0.5) / (df + 0.5)), the field length quantized to one byte as tantivy
(and Lucene's SmallFloat) do, k1 1.2, b 0.75. A query sums its terms' columns with
np.bincount; a whitelist keeps only the postings of allowed chunks before the sum; the top-k
is an argpartition over the touched chunks. Per query: tantivy's top-k (the product's
search), the matrix's top-k, their top-30 agreement and score differences.

Usage: python research/bm25_matrix_probe.py [--chunks 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import sparse  # type: ignore[import-untyped]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from search_latency import build_vocabulary, make_text

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyzer_for
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

K1, B, TOP = 1.2, 0.75, 30


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def _norm_table() -> NDArray[np.float64]:
    """Lucene SmallFloat.byte4ToInt for the 256 one-byte codes (24 exact values first)."""
    free = 24
    return np.array([i if i < free else free + _int4_to_long(i - free) for i in range(256)],
                    dtype=np.float64)


NORMS = _norm_table()


def quantized(lengths: NDArray[np.int64]) -> NDArray[np.float64]:
    """The largest table value <= each length (the code tantivy stores, decoded)."""
    codes = np.searchsorted(NORMS, lengths, side="right") - 1
    return NORMS[codes]


class MatrixBm25:
    """terms x chunks CSC of BM25 weights; the chunk order is the build order."""

    def __init__(self, docs: list[list[str]], chunk_ids: list[str], doc_of: list[str]) -> None:
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for col, tokens in enumerate(docs):
            for token in tokens:
                rows.append(vocab.setdefault(token, len(vocab)))
                cols.append(col)
        n = len(docs)
        tf = sparse.csc_matrix((np.ones(len(rows), np.float32), (cols, rows)),
                               shape=(n, len(vocab))).tocsc()  # chunks x terms, summed
        tf.sum_duplicates()
        lengths = np.array([len(d) for d in docs], dtype=np.int64)
        avgdl = lengths.sum() / n
        norm = K1 * (1 - B + B * quantized(lengths) / avgdl)
        df = np.diff(tf.indptr)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        data = tf.data.astype(np.float64)
        chunk_of_posting = tf.indices
        term_of_posting = np.repeat(np.arange(len(vocab)), df)
        weights = idf[term_of_posting] * (K1 + 1) * data / (data + norm[chunk_of_posting])
        self.indptr, self.indices = tf.indptr, tf.indices.astype(np.int32)
        self.weights = weights.astype(np.float32)
        self.vocab, self.n = vocab, n
        self.max_weight = np.maximum.reduceat(self.weights, self.indptr[:-1]) \
            if len(self.weights) else np.zeros(0, np.float32)
        self.max_weight[df == 0] = 0
        self.chunk_ids = chunk_ids
        self.doc_codes = np.unique(np.array(doc_of), return_inverse=True)[1].astype(np.int32)
        self.doc_names = {name: i for i, name in enumerate(sorted(set(doc_of)))}
        order = np.argsort(self.doc_codes, kind="stable")
        bounds = np.searchsorted(self.doc_codes[order], np.arange(len(self.doc_names) + 1))
        self.doc_rows = [order[bounds[i]:bounds[i + 1]] for i in range(len(self.doc_names))]

    def search_pruned(self, tokens: list[str], limit: int,
                      budget: int = 2_000) -> tuple[list[tuple[str, float]], bool]:
        """MaxScore: candidates from the highest-impact terms' postings (at least `budget`
        postings' worth), every candidate scored exactly on all terms (binary search in the
        other columns), and the result is exact when the other terms' summed maximum
        impact cannot reach the k-th score; else the full scan. (found, pruned)"""
        cols = [self.vocab[t] for t in dict.fromkeys(tokens) if t in self.vocab]
        if not cols:
            return [], True
        cols.sort(key=lambda c: -float(self.max_weight[c]))
        sizes = [int(self.indptr[c + 1] - self.indptr[c]) for c in cols]
        taken, total = 0, 0
        while taken < len(cols) and (total < budget or taken == 0):
            # stop before the first common column once some rare ones give candidates
            if taken and sizes[taken] > budget:
                break
            total += sizes[taken]
            taken += 1
        essential, rest = cols[:taken], cols[taken:]
        cand = np.unique(np.concatenate(
            [self.indices[self.indptr[c]:self.indptr[c + 1]] for c in essential]))
        scores = np.zeros(len(cand), dtype=np.float32)
        for c in cols:
            lo, hi = int(self.indptr[c]), int(self.indptr[c + 1])
            seg = self.indices[lo:hi]
            pos = np.searchsorted(seg, cand)
            inside = pos < len(seg)
            hit = np.zeros(len(cand), dtype=bool)
            hit[inside] = seg[pos[inside]] == cand[inside]
            scores[hit] += self.weights[lo + pos[hit]]
        k = min(limit, len(cand))
        bound = float(sum(self.max_weight[c] for c in rest))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(cand) else np.arange(k)
        kth = float(scores[top].min()) if k else 0.0
        if k < limit or bound >= kth:
            return self.search(tokens, limit), False
        found = [(self.chunk_ids[cand[i]], float(scores[i])) for i in top]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found, True

    def _search_allowed(self, cols: list[int], limit: int,
                        allowed_docs: frozenset[str]) -> list[tuple[str, float]]:
        """Only the allowed chunks are looked up in each query column (binary search in its
        sorted postings): O(allowed x terms x log postings), whatever the KB's size."""
        rows = [self.doc_rows[self.doc_names[d]] for d in allowed_docs if d in self.doc_names]
        if not rows:
            return []
        allowed = np.sort(np.concatenate(rows)).astype(np.int32)
        scores = np.zeros(len(allowed), dtype=np.float32)
        for c in cols:
            lo, hi = int(self.indptr[c]), int(self.indptr[c + 1])
            seg = self.indices[lo:hi]
            pos = np.searchsorted(seg, allowed)
            inside = pos < len(seg)
            hit = np.zeros(len(allowed), dtype=bool)
            hit[inside] = seg[pos[inside]] == allowed[inside]
            scores[hit] += self.weights[lo + pos[hit]]
        nonzero = np.flatnonzero(scores)
        k = min(limit, len(nonzero))
        if k == 0:
            return []
        top = nonzero[np.argpartition(-scores[nonzero], k - 1)[:k]]
        found = [(self.chunk_ids[allowed[i]], float(scores[i])) for i in top]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found

    def search(self, tokens: list[str], limit: int,
               allowed_docs: frozenset[str] | None = None) -> list[tuple[str, float]]:
        cols = [self.vocab[t] for t in dict.fromkeys(tokens) if t in self.vocab]
        if not cols:
            return []
        idx = np.concatenate([self.indices[self.indptr[c]:self.indptr[c + 1]] for c in cols])
        w = np.concatenate([self.weights[self.indptr[c]:self.indptr[c + 1]] for c in cols])
        if allowed_docs is not None:
            return self._search_allowed(cols, limit, allowed_docs)
        if True:  # a dense accumulator: O(postings + chunks), no sort
            scores = np.bincount(idx, weights=w, minlength=self.n).astype(np.float32)
            k = min(limit, int(np.count_nonzero(scores)))
            if k == 0:
                return []
            top = np.argpartition(-scores, k - 1)[:k]
            found = [(self.chunk_ids[i], float(scores[i])) for i in top]
            found.sort(key=lambda hit: (-hit[1], hit[0]))
            return found
        touched, inverse = np.unique(idx, return_inverse=True)
        scores = np.bincount(inverse, weights=w).astype(np.float32)
        k = min(limit, len(touched))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(touched) else np.arange(k)
        found = [(self.chunk_ids[touched[i]], float(scores[i])) for i in top]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    words, probs = build_vocabulary(rng)
    analyze = analyzer_for(CURRENT_VERSION)
    with tempfile.TemporaryDirectory() as tmp:
        store = TantivyBm25Store(Path(tmp) / "bm25")
        docs: list[list[str]] = []
        ids, doc_of = [], []
        started = time.perf_counter()
        for lo in range(0, args.chunks, 5000):
            records = []
            for i in range(lo, min(args.chunks, lo + 5000)):
                text = make_text(rng, words, probs, int(rng.integers(60, 121)))
                tokens = analyze(text)
                docs.append(tokens)
                ids.append(str(i))
                doc_of.append(f"d{i // 10}")
                records.append(IndexRecord(chunk_id=str(i), document_id=f"d{i // 10}",
                                           kb_id="big", text=text))
            store.upsert(records)
        print(f"tantivy build {time.perf_counter() - started:.1f} s")
        started, cpu = time.perf_counter(), time.process_time()
        matrix = MatrixBm25(docs, ids, doc_of)
        print(f"matrix build {time.perf_counter() - started:.1f} s wall, "
              f"{time.process_time() - cpu:.1f} CPU-s, {matrix.weights.nbytes / 1e6:.0f} MB "
              f"weights + {matrix.indices.nbytes / 1e6:.0f} MB ids, {len(matrix.vocab):,} terms")
        queries = [make_text(rng, words, probs, int(rng.integers(3, 9)))
                   for _ in range(args.queries)]
        whitelists = [frozenset(f"d{d}" for d in rng.choice(args.chunks // 10, 50,
                                                             replace=False))
                      for _ in range(args.queries)]
        for label, lists in (("unfiltered", [None] * args.queries), ("50 docs", whitelists)):
            t_times, m_times, overlap, diffs = [], [], [], []
            p_times, p_overlap, pruned = [], [], 0
            for q, allowed in zip(queries, lists, strict=True):
                flt = SearchFilter(kb_id="big", document_ids=allowed)
                t0 = time.perf_counter()
                got = store.search(q, flt, 100)
                t1 = time.perf_counter()
                mine = matrix.search(analyze(q), 100, allowed)
                t2 = time.perf_counter()
                if allowed is None:
                    t3 = time.perf_counter()
                    fast, was_pruned = matrix.search_pruned(analyze(q), 100)
                    p_times.append(time.perf_counter() - t3)
                    pruned += was_pruned
                    p_overlap.append(len({c for c, _ in fast[:TOP]}
                                         & {h.chunk_id for h in got[:TOP]})
                                     / max(1, min(TOP, len(got))))
                t_times.append(t1 - t0)
                m_times.append(t2 - t1)
                a = [h.chunk_id for h in got[:TOP]]
                b = [c for c, _ in mine[:TOP]]
                overlap.append(len(set(a) & set(b)) / max(1, len(a)))
                theirs = {h.chunk_id: h.score for h in got}
                diffs += [abs(s - theirs[c]) / max(1e-9, theirs[c]) for c, s in mine
                          if c in theirs]
            print(f"| {label} | tantivy p50 {statistics.median(t_times) * 1e3:.2f} ms | "
                  f"matrix p50 {statistics.median(m_times) * 1e3:.2f} ms | top-30 overlap "
                  f"{np.mean(overlap):.4f} | max rel. score diff "
                  f"{max(diffs) if diffs else math.nan:.2e} |")
            if p_times:
                print(f"| pruned | p50 {statistics.median(p_times) * 1e3:.2f} ms | exact by the "
                      f"bound {pruned}/{len(p_times)} | top-30 overlap {np.mean(p_overlap):.4f} |")
        store.close()


if __name__ == "__main__":
    main()
