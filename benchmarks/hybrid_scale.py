"""Hybrid search (dense + BM25, fused) of the embedded index at up to 1M chunks.

Chunks are synthetic bilingual texts (search_latency's vocabulary, 60-120 tokens) with vectors
of the structure of real embeddings (dense_ann_data: ~30 noisy neighbours per centre), in
documents of 10 chunks; kb `big` holds 90% of the rows (the unfiltered case: every search
names a kb), kb `mid` 10% (a broad filter), and `mid + 50 docs` is a fresh 50-document
whitelist per query (a selective filter). The build (embedding excluded: BM25 analysis and
indexing, dense rows, the HNSW graph the store builds above RAGSIFT_DENSE_ANN_MIN_ROWS) runs
in one process; the searches in a fresh one, after a timed reopen. Per query: dense (graph or
exact, as the store chooses), BM25, and hybrid = both in parallel on two threads and z-score
fusion (the default), and the hybrid's top-30 overlap with the same hybrid on exact dense.

With --corpus (JSONL files with "text" and an optional "title", e.g. the labelled sets'
corpus.jsonl) the chunk texts are real passages instead, drawn at random with replacement
(so a passage recurs ~N / passages times, which keeps every term's share of chunks as in the
corpus), cut to 600 characters, and the queries are drawn from --query-file (JSONL, "text");
the vectors stay synthetic (the dense side does not read the text). The synthetic texts put
35 % of query terms in more than half of the chunks; the labelled sets' dev queries 0-12 %.

Usage: python benchmarks/hybrid_scale.py [--chunks 1000000] [--queries 100] [--keep DIR]
       python benchmarks/hybrid_scale.py --reuse DIR   # search an index a run left
       python benchmarks/hybrid_scale.py --corpus A/corpus.jsonl --query-file A/queries.jsonl
       [--ids short|uuid]  # document ids d7 (default), or 32-hex as ragsift gives them
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from dense_ann import load, rss_parts
from dense_ann_data import expand, queries_near, synthetic_centres
from document_ids import ID_SHAPES, document_id
from numpy.typing import NDArray
from search_latency import build_vocabulary, make_text

from ragsift.adapters.embedded_index import EmbeddedIndex
from ragsift.domain.filters import SearchFilter
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.evaluation.datasets import load_corpus, load_queries
from ragsift.retrieval.fusion import zscore_fusion

K = 30
BATCH = 512
DIMENSION = 384
SPARSE_WEIGHT = 0.7  # the default BM25 weight of the z-score fusion
Float32Array = NDArray[np.float32]


def rss() -> str:
    anon, file = rss_parts()
    return f"{anon + file:.2f} GiB (private {anon:.2f} + file-backed {file:.2f})"


def kb_of(doc: int) -> str:
    return "mid" if doc % 10 == 0 else "big"


def passage_texts(files: list[Path], limit_chars: int) -> list[str]:
    """"title text" of every passage of `files` (corpus.jsonl, read as `ragsift eval` reads
    it), cut to `limit_chars`."""
    return [f"{p.title} {p.text}".strip()[:limit_chars]
            for file in files for p in load_corpus(file)]


def query_texts(files: list[Path]) -> list[str]:
    """The text of every query of `files` (queries JSONL, read as `ragsift eval` reads it)."""
    return [query.text for file in files for query in load_queries(file)]


def build(directory: Path, chunks: int, seed: int, corpus: list[Path] | None = None,
          query_files: list[Path] | None = None, ids: str = "short") -> None:
    """Write the index in batches of one kb, as ingestion does; print rates."""
    rng = np.random.default_rng(seed)
    words, probs = build_vocabulary(rng)
    passages = passage_texts(corpus, 600) if corpus else []
    centres = synthetic_centres(32_000, rng)
    matrix = expand(centres, chunks, rng)
    np.save(directory / "centres.npy", centres)
    order = sorted(range(chunks), key=lambda i: kb_of(i // 10))
    wall, cpu = time.perf_counter(), time.process_time()
    index = EmbeddedIndex(directory / "index", DIMENSION)
    text_s = text_cpu = 0.0
    for lo in range(0, chunks, BATCH):
        rows = order[lo: lo + BATCH]
        started, started_cpu = time.perf_counter(), time.process_time()
        texts = ([passages[int(i)] for i in rng.integers(0, len(passages), len(rows))]
                 if passages else
                 [make_text(rng, words, probs, int(rng.integers(60, 121))) for _ in rows])
        text_s += time.perf_counter() - started
        text_cpu += time.process_time() - started_cpu
        index.upsert([IndexRecord(chunk_id=str(i), document_id=document_id(i // 10, ids),
                                  kb_id=kb_of(i // 10), text=text)
                      for i, text in zip(rows, texts, strict=True)], matrix[rows])
        if lo % 100_000 < BATCH:
            print(f"  {lo:,} rows, {time.perf_counter() - wall:.0f} s, load {load()}",
                  flush=True)
    index._dense.sync_ann()
    index.close()
    wall, cpu = time.perf_counter() - wall - text_s, time.process_time() - cpu - text_cpu
    print(f"build (BM25 + dense + HNSW, embedding and text generation excluded): "
          f"{chunks / wall:,.0f} chunks/s wall ({wall:.1f} s), {chunks / cpu:,.0f} chunks per "
          f"CPU-s ({cpu:.1f} CPU-s), load {load()}", flush=True)
    (directory / "words.json").write_text(json.dumps([words, probs.tolist()]), "utf-8")
    (directory / "ids.json").write_text(json.dumps(ids), "utf-8")
    if query_files:
        (directory / "queries.json").write_text(
            json.dumps(query_texts(query_files), ensure_ascii=False), "utf-8")


def search_probe(directory: Path, n_queries: int, seed: int) -> None:
    """In a fresh process: reopen, then time dense, BM25 and hybrid per filter."""
    wall, cpu = time.perf_counter(), time.process_time()
    index = EmbeddedIndex(directory / "index", DIMENSION)
    opened, opened_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"reopen {opened:.2f} s wall, {opened_cpu:.2f} CPU-s, RSS {rss()}, "
          f"{index.count():,} chunks, graph rows {index._dense.ann_rows():,}, load {load()}")
    rng = np.random.default_rng(seed + 1)
    words_list, probs_list = json.loads((directory / "words.json").read_text("utf-8"))
    words, probs = list(words_list), np.asarray(probs_list)
    queries = queries_near(np.load(directory / "centres.npy"), n_queries, rng)
    texts = [make_text(rng, words, probs, int(rng.integers(3, 9))) for _ in range(n_queries)]
    if (directory / "queries.json").exists():  # real queries for a --corpus build
        real = json.loads((directory / "queries.json").read_text("utf-8"))
        texts = [real[int(i)] for i in rng.choice(len(real), n_queries, replace=False)]
    mid_docs = np.arange(0, index.count() // 10, 10)
    shape_file = directory / "ids.json"  # absent in builds made before the option: short
    shape = json.loads(shape_file.read_text("utf-8")) if shape_file.exists() else "short"
    whitelists = [frozenset(document_id(int(d), shape)
                            for d in rng.choice(mid_docs, 50, replace=False))
                  for _ in range(n_queries)]
    cases = {
        "kb (90% rows)": [SearchFilter(kb_id="big")] * n_queries,
        "kb (10% rows)": [SearchFilter(kb_id="mid")] * n_queries,
        "kb + 50 docs": [SearchFilter(kb_id="mid", document_ids=w) for w in whitelists],
    }
    pool = ThreadPoolExecutor(max_workers=2)
    exact_snapshot: list[object] = []

    def dense(query: Float32Array, flt: SearchFilter, exact: bool) -> list[ChannelHit]:
        if not exact:
            return index.search_dense(query, flt, K)
        snap = index._dense._snapshot  # the same rows, searched without the graph
        if not exact_snapshot or exact_snapshot[0] is not snap:
            exact_snapshot[:] = [snap, dataclasses.replace(snap, ann=None, cache={})]
        return exact_snapshot[1].search(query, flt, K)  # type: ignore[attr-defined,no-any-return]

    def hybrid(text: str, query: Float32Array, flt: SearchFilter, exact: bool) -> list[str]:
        found = pool.submit(dense, query, flt, exact)
        sparse = index.search_sparse(text, flt, K)
        lists = [RankedList(name="dense:original", hits=tuple(found.result())),
                 RankedList(name="sparse:original", hits=tuple(sparse))]
        fused = zscore_fusion(lists, {"dense:original": 1.0, "sparse:original": SPARSE_WEIGHT})
        return [hit.chunk_id for hit in fused[:K]]

    rows: list[str] = []
    answers: dict[str, list[list[str]]] = {}
    for name, filters in cases.items():
        for i in range(min(10, n_queries)):  # warm-up: page cache, filter caches
            hybrid(texts[i], queries[i], filters[i], False)
        times: dict[str, list[float]] = {"dense": [], "sparse": [], "hybrid": []}
        cpu_hybrid = 0.0
        answers[name] = []
        for i in range(n_queries):
            started = time.perf_counter()
            dense(queries[i], filters[i], False)
            times["dense"].append(time.perf_counter() - started)
            started = time.perf_counter()
            index.search_sparse(texts[i], filters[i], K)
            times["sparse"].append(time.perf_counter() - started)
            started, cpu = time.perf_counter(), time.process_time()
            answers[name].append(hybrid(texts[i], queries[i], filters[i], False))
            times["hybrid"].append(time.perf_counter() - started)
            cpu_hybrid += time.process_time() - cpu
        p50 = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        p95 = float(np.quantile(times["hybrid"], 0.95)) * 1e3
        rows.append(f"| {name} | {p50['dense']:.2f} | {p50['sparse']:.2f} | "
                    f"{p50['hybrid']:.2f} | {p95:.2f} | {cpu_hybrid / n_queries * 1e3:.2f} | "
                    f"{{overlap}} | {load()} |")
    # before the exact searches below, which page in the whole matrix as no search of the
    # product does (its exact scans are of filters allowing few rows)
    print(f"\nRSS after the searches {rss()}, load {load()}")
    print("\n| filter | dense p50 | BM25 p50 | hybrid p50 | hybrid p95 | hybrid CPU ms/query "
          "| hybrid top-30 overlap with exact dense | load 1/5/15 |\n"
          "|---|---|---|---|---|---|---|---|")
    for row, (name, filters) in zip(rows, cases.items(), strict=True):
        overlap = []
        for i, got in enumerate(answers[name]):
            truth = hybrid(texts[i], queries[i], filters[i], True)
            overlap.append(len(set(got) & set(truth)) / max(1, len(truth)))
        print(row.replace("{overlap}", f"{np.mean(overlap):.4f}"), flush=True)
    pool.shutdown()
    print(f"\nRSS after the exact searches too {rss()}, load {load()}")
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", type=Path, default=None, help="build here and leave it")
    parser.add_argument("--reuse", type=Path, default=None, help="search an earlier build")
    parser.add_argument("--corpus", type=Path, action="append", default=None,
                        help="JSONL passages to use as chunk texts (repeatable)")
    parser.add_argument("--query-file", type=Path, action="append", default=None,
                        help="JSONL queries for a --corpus build (repeatable)")
    parser.add_argument("--ids", choices=ID_SHAPES, default="short",
                        help="document ids: d7, or 32-hex as ragsift gives them")
    parser.add_argument("--probe", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keep and (args.keep / "index").exists():
        # writing again would replace every chunk (twice the rows, half of them dead)
        parser.error(f"{args.keep} already holds an index: search it with --reuse, "
                     "or build into an empty directory")
    if args.probe:
        search_probe(args.probe, args.queries, args.seed)
        return
    print(f"{os.cpu_count()} cores, load {load()}, {time.strftime('%Y-%m-%d %H:%M')}",
          flush=True)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        directory = args.reuse or args.keep or Path(tmp)
        if not args.reuse:
            directory.mkdir(parents=True, exist_ok=True)
            build(directory, args.chunks, args.seed, args.corpus, args.query_file, args.ids)
        # a fresh process: the reopen as a restarted server pays it
        subprocess.run([sys.executable, __file__, "--probe", str(directory), "--queries",
                        str(args.queries), "--seed", str(args.seed)], check=True)


if __name__ == "__main__":
    main()
