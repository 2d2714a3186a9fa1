"""Index build cost with vectors given: ragsift's embedded index against LanceDB (issue 39,
item 4), the same rows, each build alone in a fresh process, one after the other.

Rows: hybrid_scale's synthetic bilingual chunks (60-120 tokens, Chinese words run together,
English words between spaces) with vectors of the structure of real embeddings, in documents
of 10 chunks, 90 % in kb `big` and 10 % in kb `mid`. Texts and vectors are made once, before
any build, and read by every build (not timed).

Builds (wall, CPU-s of every thread of the process, peak RSS):
- `ragsift`: `EmbeddedIndex.upsert` in batches of 512 rows of one kb, as ingestion writes,
  then the HNSW graph (`sync_ann`, as the store builds it above the graph threshold) and
  close: BM25 with the jieba analysis, dense rows, graph.
- `lancedb`: one table of the rows (id, kb, doc, text, vector) written at once, its vector
  index (IVF_HNSW_SQ, dot, the configuration of dense_ann.py), a BITMAP index on kb and its
  native full-text index (the `simple` tokenizer: whitespace and punctuation, so Chinese runs
  are single tokens; LanceDB has no jieba here).
- `lancedb-dense`: the table and its vector and kb indexes, no full-text index: the dense
  side alone (what dense_ann.py builds), to compare with an earlier reading that set LanceDB's
  dense build against ragsift's whole build.
- `lancedb-ivfpq`: as `lancedb` with LanceDB's default vector index, IVF_PQ (cheaper to
  build, lower recall: the search table says how much).
- `lancedb+jieba`: the same as `lancedb`, but the text column holds ragsift's analysis of
  each chunk (the terms its BM25 indexes) joined by spaces, the analysis timed in the build:
  what LanceDB costs when it is given the same terms to index.

Then, with `--search N`, each build is searched in a fresh process: N queries (hybrid_scale's
short mixed texts, vectors near the centres) restricted to kb `big` (90 % of the rows; LanceDB
prefilters `kb = 'big'`), after 10 warm-up queries. Per query: wall and CPU of the hybrid (ragsift:
dense and BM25 on two threads, z-score fusion; LanceDB: its hybrid query, RRF), the dense
top-30's recall against an exact scan, and the full-text top-30's overlap with ragsift's BM25.

Usage: pip install lancedb  # the peer; not a dependency of ragsift
       python benchmarks/build_cost.py [--chunks 100000] [--builds ragsift,lancedb,...]
                                       [--rounds 1] [--search N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from dense_ann import load
from dense_ann_data import expand, queries_near, synthetic_centres
from hybrid_scale import SPARSE_WEIGHT, kb_of
from search_latency import build_vocabulary, cpu_model, make_text

BATCH = 512
DIMENSION = 384
K = 30
WARM_UP = 10
Found = tuple[list[int], list[int]]  # one query's dense and BM25 top-K (empty: not kept)
Found2 = tuple[list[list[int]], list[list[int]]]


def prepare(directory: Path, chunks: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    words, probs = build_vocabulary(rng)
    matrix = expand(synthetic_centres(32_000, rng), chunks, rng)
    texts = [make_text(rng, words, probs, int(rng.integers(60, 121))) for _ in range(chunks)]
    np.save(directory / "vectors.npy", matrix)
    (directory / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), "utf-8")


def read_rows(directory: Path) -> tuple[list[str], np.ndarray]:
    texts = json.loads((directory / "texts.json").read_text("utf-8"))
    return texts, np.load(directory / "vectors.npy")


def build_ragsift(directory: Path, texts: list[str], matrix: np.ndarray) -> None:
    from ragsift.adapters.embedded_index import EmbeddedIndex
    from ragsift.domain.index_records import IndexRecord

    order = sorted(range(len(texts)), key=lambda i: kb_of(i // 10))
    index = EmbeddedIndex(directory / "ragsift", DIMENSION)
    for lo in range(0, len(order), BATCH):
        rows = order[lo: lo + BATCH]
        index.upsert([IndexRecord(chunk_id=str(i), document_id=f"d{i // 10}",
                                  kb_id=kb_of(i // 10), text=texts[i]) for i in rows],
                     matrix[rows])
    index._dense.sync_ann()
    index.close()


def build_lancedb(directory: Path, texts: list[str], matrix: np.ndarray, jieba: bool,
                  text: bool = True, index_type: str = "IVF_HNSW_SQ") -> None:
    import lancedb
    import pyarrow as pa  # type: ignore[import-untyped]

    if jieba:
        analyze = ragsift_terms()
        texts = [" ".join(analyze(text)) for text in texts]
    rows = matrix.shape[0]

    def batches() -> object:
        for start in range(0, rows, 65_536):
            stop = min(rows, start + 65_536)
            ids = np.arange(start, stop)
            yield pa.record_batch([
                pa.array(ids), pa.array([kb_of(i // 10) for i in ids]),
                pa.array([f"d{i // 10}" for i in ids]), pa.array(texts[start:stop]),
                pa.FixedSizeListArray.from_arrays(pa.array(matrix[start:stop].reshape(-1)),
                                                  DIMENSION)],
                names=["id", "kb", "doc", "text", "vector"])

    schema = pa.schema([("id", pa.int64()), ("kb", pa.string()), ("doc", pa.string()),
                        ("text", pa.string()), ("vector", pa.list_(pa.float32(), DIMENSION))])
    db = lancedb.connect(str(directory / "lancedb"))
    table = db.create_table("chunks", data=batches(), schema=schema)
    table.create_index(metric="dot", index_type=index_type)
    table.create_scalar_index("kb", index_type="BITMAP")
    if not text:
        return
    # the analysis is ragsift's when given: no stemming, stop words or folding on top
    table.create_fts_index("text", stem=not jieba, remove_stop_words=not jieba,
                           ascii_folding=not jieba)


def ragsift_terms() -> Callable[[str], list[str]]:
    """ragsift's BM25 analysis (the terms its index holds), for LanceDB's text column."""
    from ragsift.adapters.embedded_index.analyzer import CURRENT_VERSION, analyzer_for

    return analyzer_for(CURRENT_VERSION)


def one_build(data: Path, out: Path, name: str) -> None:
    """In a fresh process: read the rows (not timed), build, print one JSON line."""
    texts, matrix = read_rows(data)
    wall, cpu = time.perf_counter(), time.process_time()
    if name == "ragsift":
        build_ragsift(out, texts, matrix)
    else:
        build_lancedb(out, texts, matrix, jieba=name == "lancedb+jieba",
                      text=name != "lancedb-dense",
                      index_type="IVF_PQ" if name == "lancedb-ivfpq" else "IVF_HNSW_SQ")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
    print(json.dumps({"build": name, "chunks": len(texts), "wall": wall, "cpu": cpu,
                      "peak_gib": peak, "disk_mib": size, "load": load()}))


def queries(data: Path, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """The query texts and vectors: hybrid_scale's, from the build's vocabulary and centres."""
    rng = np.random.default_rng(seed)
    words, probs = build_vocabulary(rng)
    centres = synthetic_centres(32_000, rng)
    rng = np.random.default_rng(seed + 1)
    vectors = queries_near(centres, n + WARM_UP, rng)
    texts = [make_text(rng, words, probs, int(rng.integers(3, 9))) for _ in range(n + WARM_UP)]
    return texts, vectors


def ragsift_searcher(out: Path) -> Callable[[str, np.ndarray], Found]:
    from ragsift.adapters.embedded_index import EmbeddedIndex
    from ragsift.domain.filters import SearchFilter
    from ragsift.domain.results import RankedList
    from ragsift.retrieval.fusion import zscore_fusion

    index = EmbeddedIndex(out / "ragsift", DIMENSION)
    pool = ThreadPoolExecutor(max_workers=2)
    flt = SearchFilter(kb_id="big")

    def search(text: str, vector: np.ndarray) -> Found:
        dense = pool.submit(index.search_dense, vector, flt, K)
        sparse = index.search_sparse(text, flt, K)
        lists = [RankedList(name="dense:original", hits=tuple(dense.result())),
                 RankedList(name="sparse:original", hits=tuple(sparse))]
        # fused as the product fuses, so its cost is timed; the lists are what is compared
        zscore_fusion(lists, {"dense:original": 1.0, "sparse:original": SPARSE_WEIGHT})
        return ([int(h.chunk_id) for h in lists[0].hits],
                [int(h.chunk_id) for h in lists[1].hits])
    return search


BIG = "kb = 'big'"  # LanceDB's prefilter for the searched KB


def lance_table_and_query(out: Path, jieba: bool) -> tuple[Any, Callable[[str], str]]:
    """The build's LanceDB table and how a query text reaches its full-text index (as
    ragsift's distinct terms when the build indexed those)."""
    import lancedb

    table = lancedb.connect(str(out / "lancedb")).open_table("chunks")
    if not jieba:
        return table, lambda text: text
    analyze = ragsift_terms()
    return table, lambda text: " ".join(dict.fromkeys(analyze(text)))


def lancedb_searcher(out: Path, jieba: bool) -> Callable[[str, np.ndarray], Found]:
    table, query_text = lance_table_and_query(out, jieba)

    def search(text: str, vector: np.ndarray) -> Found:
        (table.search(query_type="hybrid").vector(vector).text(query_text(text))
         .where(BIG, prefilter=True).limit(K).select(["id"]).to_arrow())
        return [], []  # the lists come from lancedb_lists, untimed
    return search


def lancedb_lists(out: Path, jieba: bool, texts: list[str], vectors: np.ndarray) -> Found2:
    """LanceDB's dense and full-text top-K of every query (not timed)."""
    table, query_text = lance_table_and_query(out, jieba)
    dense, text_hits = [], []
    for text, vector in zip(texts, vectors, strict=True):
        found = (table.search(vector).distance_type("dot").where(BIG, prefilter=True)
                 .limit(K).select(["id"]).to_arrow())
        dense.append([int(i) for i in found["id"].to_pylist()])
        found = (table.search(query_text(text), query_type="fts").where(BIG, prefilter=True)
                 .limit(K).select(["id"]).to_arrow())
        text_hits.append([int(i) for i in found["id"].to_pylist()])
    return dense, text_hits


def search_one(data: Path, out: Path, name: str, n: int, seed: int) -> None:
    """In a fresh process: open the build, time N hybrid queries, print one JSON line."""
    texts, vectors = queries(data, n, seed)
    # imports are not the open: ragsift's are done (dense_ann), LanceDB's are done here
    importlib.import_module("ragsift.adapters.embedded_index" if name == "ragsift" else "lancedb")
    wall, cpu = time.perf_counter(), time.process_time()
    search = (ragsift_searcher(out) if name == "ragsift"
              else lancedb_searcher(out, jieba=name == "lancedb+jieba"))
    opened, opened_cpu = time.perf_counter() - wall, time.process_time() - cpu
    for i in range(WARM_UP):
        search(texts[i], vectors[i])
    times, lists = [], []
    cpu = time.process_time()
    for text, vector in zip(texts[WARM_UP:], vectors[WARM_UP:], strict=True):
        started = time.perf_counter()
        lists.append(search(text, vector))
        times.append(time.perf_counter() - started)
    cpu = time.process_time() - cpu
    if name == "ragsift":
        dense, sparse = [d for d, _ in lists], [s for _, s in lists]
    else:
        dense, sparse = lancedb_lists(out, name == "lancedb+jieba", texts[WARM_UP:],
                                      vectors[WARM_UP:])
    print(json.dumps({"open": opened, "open_cpu": opened_cpu,
                      "p50": statistics.median(times) * 1e3,
                      "p95": float(np.quantile(times, 0.95)) * 1e3, "cpu": cpu / n * 1e3,
                      "dense": dense, "sparse": sparse, "load": load()}))


def exact_dense(data: Path, vectors: np.ndarray) -> list[set[int]]:
    matrix = np.load(data / "vectors.npy")
    big = np.flatnonzero((np.arange(matrix.shape[0]) // 10) % 10 != 0)
    scores = vectors @ matrix[big].T
    return [set(big[np.argsort(-row)[:K]].tolist()) for row in scores]


def shared(found: list[list[int]], reference: list[list[int]]) -> float:
    return float(np.mean([len(set(a) & set(b)) / max(1, len(b))
                          for a, b in zip(found, reference, strict=True)]))


def search_all(args: argparse.Namespace, tmp: Path, data: Path) -> None:
    _, vectors = queries(data, args.search, args.seed)
    truth = exact_dense(data, vectors[WARM_UP:])
    print(f"\nsearches, kb `big` (90 % of the rows), {args.search} queries after {WARM_UP} "
          f"warm-up, top {K}; load {load()}\n\n| build | open s (CPU-s) | hybrid p50 ms "
          "| hybrid p95 ms | CPU ms / query | dense recall@30 | full-text top-30 overlap with "
          "ragsift's BM25 | load after |\n|---|---:|---:|---:|---:|---:|---:|---|", flush=True)
    reference: list[list[int]] | None = None
    for name in args.builds.split(","):
        if name == "lancedb-dense":
            continue
        done = subprocess.run([sys.executable, __file__, "--search-one", name, "--data",
                               str(data), "--out", str(tmp / f"{name}-1"), "--search",
                               str(args.search), "--seed", str(args.seed)],
                              capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        recall = np.mean([len(set(d) & t) / K for d, t in zip(r["dense"], truth, strict=True)])
        if name == "ragsift":
            reference = r["sparse"]
        overlap = "-" if reference is None else f"{shared(r['sparse'], reference):.3f}"
        print(f"| {name} | {r['open']:.2f} ({r['open_cpu']:.2f}) | {r['p50']:.2f} "
              f"| {r['p95']:.2f} | {r['cpu']:.2f} | {recall:.3f} | {overlap} | {r['load']} |",
              flush=True)


def run(args: argparse.Namespace, tmp: Path) -> None:
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    if not (data / "texts.json").exists():
        prepare(data, args.chunks, args.seed)
    print(f"build cost, {args.chunks:,} chunks, vectors given; {cpu_model()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load {load()}", flush=True)
    print("| round | build | chunks / CPU-s | CPU-s | wall s | chunks / s | peak RSS GiB "
          "| on disk MiB | load after |\n|---|---|---:|---:|---:|---:|---:|---:|---|",
          flush=True)
    for round_ in range(1, args.rounds + 1):
        for name in args.builds.split(","):
            out = tmp / f"{name}-{round_}"
            out.mkdir()
            done = subprocess.run([sys.executable, __file__, "--one", name, "--data", str(data),
                                   "--out", str(out)], capture_output=True, text=True,
                                  check=True, cwd=Path(__file__).parent)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"| {round_} | {name} | {r['chunks'] / r['cpu']:,.0f} | {r['cpu']:.1f} "
                  f"| {r['wall']:.1f} | {r['chunks'] / r['wall']:,.0f} | {r['peak_gib']:.2f} "
                  f"| {r['disk_mib']:,.0f} | {r['load']} |", flush=True)
    if args.search:
        search_all(args, tmp, data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--builds", default="ragsift,lancedb,lancedb+jieba")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="keep the rows and the builds here")
    parser.add_argument("--search", type=int, default=0, help="queries per build (0: none)")
    parser.add_argument("--searches-only", action="store_true",
                        help="search the builds a --keep DIR holds, build nothing")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--search-one", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_build(args.data, args.out, args.one)
    elif args.search_one:
        search_one(args.data, args.out, args.search_one, args.search, args.seed)
    elif args.searches_only:
        search_all(args, args.keep, args.keep / "data")
    elif args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(args, Path(tmp))


if __name__ == "__main__":
    main()
