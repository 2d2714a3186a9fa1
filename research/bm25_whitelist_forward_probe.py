"""Would scoring a whitelist's chunks outside tantivy meet issue 39's 100k whitelist ratio?
Measured on real passages before building it.

One kb of N chunks drawn with replacement from labelled-set passages (--corpus, cut to 600
characters, as hybrid_scale.py --corpus does) with ragsift's 32-hex document ids (10 chunks a
document), written to ragsift's tantivy store as ingestion does; the same analyzer tokens go
into research/bm25_matrix_probe.py's matrix of tantivy's own BM25 weights. Per query (the
corpus's dev queries), a fresh 50-document whitelist: the store's search (the product's path:
the text disjunction and the whitelist's document keys) against the matrix scoring only the
whitelisted chunks (each query column searched for them), thread CPU, top-30 agreement and
score differences; and the unfiltered search for the ratio.

Usage: PYTHONPATH=src python research/bm25_whitelist_forward_probe.py \
    --corpus ../shared/evaldata/kuake-qtr/corpus.jsonl \
    --query-file ../shared/evaldata/kuake-qtr/queries.dev.jsonl [--chunks 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bm25_matrix_probe import TOP, MatrixBm25
from document_ids import document_id

from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyzer_for
from ragsift.adapters.embedded_index.bm25_store import TantivyBm25Store
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord

LIMIT = 30


def _texts(path: Path, key: str, cut: int | None) -> list[str]:
    lines = path.read_text("utf-8").splitlines()
    texts = [str(json.loads(line)[key]) for line in lines if line.strip()]
    return [t[:cut] for t in texts] if cut else texts


def _cpu_ms(started: int) -> float:
    return (time.thread_time_ns() - started) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--query-file", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    analyze = analyzer_for(CURRENT_VERSION)
    passages = _texts(args.corpus, "text", 600)
    queries = _texts(args.query_file, "text", None)
    queries = [queries[int(i)] for i in rng.choice(len(queries), args.queries, replace=False)]
    tokens_of: dict[int, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = TantivyBm25Store(Path(tmp) / "bm25")
        docs: list[list[str]] = []
        ids: list[str] = []
        doc_of: list[str] = []
        started = time.perf_counter()
        for lo in range(0, args.chunks, 5000):
            records = []
            for i in range(lo, min(args.chunks, lo + 5000)):
                pick = int(rng.integers(len(passages)))
                tokens = tokens_of.setdefault(pick, analyze(passages[pick]))
                docs.append(tokens)
                ids.append(f"{i:032x}")
                doc_of.append(document_id(i // 10, "uuid"))
                records.append(IndexRecord(chunk_id=ids[-1], document_id=doc_of[-1],
                                           kb_id="big", text=passages[pick]))
            store.upsert(records)
        print(f"tantivy build {time.perf_counter() - started:.1f} s, {len(tokens_of):,} "
              "distinct passages", flush=True)
        matrix = MatrixBm25(docs, ids, doc_of)
        documents = sorted(set(doc_of))
        times: dict[str, list[float]] = {"unfiltered": [], "tantivy 50 docs": [],
                                         "matrix 50 docs": []}
        overlap: list[float] = []
        diffs: list[float] = []
        for _ in range(2):  # the first pass warms the page cache and the searcher
            for name in times:
                times[name].clear()
            overlap.clear()
            diffs.clear()
            for query in queries:
                allowed = frozenset(documents[int(i)] for i in
                                    rng.choice(len(documents), 50, replace=False))
                started = time.thread_time_ns()
                store.search(query, SearchFilter(kb_id="big"), LIMIT)
                times["unfiltered"].append(_cpu_ms(started))
                started = time.thread_time_ns()
                got = store.search(query, SearchFilter(kb_id="big", document_ids=allowed), LIMIT)
                times["tantivy 50 docs"].append(_cpu_ms(started))
                started = time.thread_time_ns()
                cols = [matrix.vocab[t] for t in dict.fromkeys(analyze(query))
                        if t in matrix.vocab]
                mine = matrix._search_allowed(cols, LIMIT, allowed) if cols else []
                times["matrix 50 docs"].append(_cpu_ms(started))
                theirs = {h.chunk_id: h.score for h in got}
                a = [h.chunk_id for h in got[:TOP]]
                b = [c for c, _ in mine[:TOP]]
                overlap.append(len(set(a) & set(b)) / max(1, len(a)) if a or b else 1.0)
                diffs += [abs(s - theirs[c]) / max(1e-9, theirs[c]) for c, s in mine
                          if c in theirs]
        store.close()
    print(f"{args.chunks:,} chunks, {args.queries} queries, thread CPU ms p50 (p95):")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.3f} "
              f"({float(np.quantile(values, 0.95)):.3f}) |")
    print(f"top-{TOP} overlap {np.mean(overlap):.4f}, max relative score difference "
          f"{max(diffs) if diffs else float('nan'):.2e}")


if __name__ == "__main__":
    main()
