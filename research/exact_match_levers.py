"""Measures the candidate fixes of issue 34, item 1 (rare exact matches buried by fusion) offline.

Usage: python research/exact_match_levers.py --data-dir DIR SET [SET ...]
       SET: a BEIR folder whose KB eval-NAME is built in DIR (`ragsift eval FOLDER`), or
       `identifiers` (the KB benchmarks/identifier_recall.py builds in DIR)
Each query's dense and BM25 lists (100 each, as served) and its terms' document frequencies
are read once from the real index; every candidate then re-fuses the same lists, so the
differences are the fusion's alone. Prints nDCG@10 (recall@1 for identifiers) per candidate
with the paired-bootstrap 95% interval of its difference to today's fusion (same method).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import FusedHit, RankedList
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.metrics import ndcg_at_k
from ragsift.retrieval.exact_match import promote, specific
from ragsift.retrieval.fusion import Padding, fuse
from support.identifier_set import generate

DEPTH = 100
WEIGHTS = {"dense": 1.0, "sparse": 0.7}
MAX_DF = 10


@dataclass
class Captured:
    lists: list[RankedList]
    doc_freq: dict[str, int]  # the query's distinct tokens
    holders: dict[str, list[str]]  # token with df <= MAX_DF -> chunk ids holding it


def capture(container: Container, kb_id: str, text: str) -> Captured:
    index = container.index
    scope = SearchFilter(kb_id=kb_id)
    dense = index.search_dense(container.embedder.embed_query(text), scope, DEPTH)
    sparse = index.search_sparse(text, scope, DEPTH)
    _, analyze = index.sparse_analyzer(kb_id)  # type: ignore[attr-defined]
    tokens = sorted(set(analyze(text)))
    _, doc_freq = index.sparse_term_stats(kb_id, tokens)  # type: ignore[attr-defined]
    holders = {t: [h.chunk_id for h in index.search_sparse_weighted(  # type: ignore[attr-defined]
        [(t, 1.0)], scope, MAX_DF)] for t in tokens if 1 <= doc_freq[t] <= MAX_DF}
    return Captured([RankedList(name="dense:original", hits=tuple(dense)),
                     RankedList(name="sparse:original", hits=tuple(sparse))], doc_freq, holders)


Candidate = Callable[[str, Captured], list[FusedHit]]


def _with_cjk(term: str) -> bool:
    """The rule measured first: Chinese words of 3+ characters counted too."""
    cjk = all("\u4e00" <= c <= "\u9fff" for c in term)
    return len(term) >= 3 if cjk else specific(term)


def candidate(pad: bool, max_df: int, any_term: bool = False, cjk: bool = False) -> Candidate:
    def run(method: str, captured: Captured) -> list[FusedHit]:
        padding = Padding(DEPTH, {"sparse": 0.0}) if pad else None
        fused = fuse(method, captured.lists, weights=WEIGHTS, padding=padding)
        if not max_df:
            return fused
        held: dict[str, int] = {}
        for term, chunks in captured.holders.items():
            eligible = any_term or (_with_cjk(term) if cjk else specific(term))
            if captured.doc_freq[term] <= max_df and eligible:
                for chunk in chunks:
                    held[chunk] = held.get(chunk, 0) + 1
        return promote(fused, held)
    return run


CANDIDATES: dict[str, Candidate] = {
    "today": candidate(False, 0),
    "pad": candidate(True, 0),
    "lane df<=3": candidate(False, 3),
    "lane df<=10": candidate(False, 10),
    "lane df<=3 any term": candidate(False, 3, any_term=True),
    "pad+lane df<=3": candidate(True, 3),
    "pad+lane df<=10": candidate(True, 10),
    "pad+lane df<=3 +CJK": candidate(True, 3, cjk=True),
}


def corpus_ids(container: Container, kb_id: str) -> dict[str, str]:
    """chunk id -> corpus id (document metadata) or document filename."""
    repo = container.repository
    out: dict[str, str] = {}
    for doc in repo.list_documents(kb_id):
        name = str(doc.metadata.get("corpus_id", doc.filename))
        for chunk in repo.list_chunks(doc.id):
            out[chunk.id] = name
    return out


def ranked_docs(fused: Sequence[FusedHit], names: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(names[h.chunk_id] for h in fused if h.chunk_id in names))


def run_set(container: Container, name: str, sets: Path) -> None:
    if name == "identifiers":
        docs, queries = generate()
        kb = container.repository.get_kb_by_name(f"identifiers-v3-{len(docs)}-34")
        texts = {q.id: q.text for q in queries}
        qrels = {q.id: {q.relevant: 1} for q in queries}
    else:
        data = load_beir_folder(sets / name)
        kb = container.repository.get_kb_by_name(f"eval-{name}")
        texts = {q.id: q.text for q in data.queries if q.id in data.qrels}
        qrels = {qid: dict(rel) for qid, rel in data.qrels.items() if qid in texts}
    if kb is None:
        raise SystemExit(f"no KB for {name} in the data dir")
    names = corpus_ids(container, kb.id)
    captured = {qid: capture(container, kb.id, text) for qid, text in texts.items()}
    fired = {label: 0 for label in CANDIDATES}
    for method in ("zscore", "rrf", "weighted"):
        scores: dict[str, dict[str, float]] = {}
        for label, run in CANDIDATES.items():
            per_query: dict[str, float] = {}
            for qid, cap in captured.items():
                fused = run(method, cap)
                ranking = ranked_docs(fused, names)
                if method == "zscore" and label != "today":
                    before = ranked_docs(CANDIDATES["today"](method, cap), names)
                    fired[label] += ranking[:10] != before[:10]
                if name == "identifiers":
                    per_query[qid] = float(ranking[:1] == list(qrels[qid]))
                else:
                    per_query[qid] = ndcg_at_k(ranking, qrels[qid], 10)
            scores[label] = per_query
            mean = sum(per_query.values()) / len(per_query)
            line = f"{name} {method:8s} {label:22s} {mean:.4f}"
            if label != "today":
                interval = paired_by_query(scores["today"], per_query)
                line += f"  {interval.label()}  better/worse {interval.better}/{interval.worse}"
            if method == "zscore" and label != "today":
                line += f"  top-10 changed for {fired[label]} queries"
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--sets", type=Path, default=Path("../shared/evaldata"))
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    container = build(Settings(data_dir=args.data_dir, query_cache_size=0))
    try:
        for name in args.names:
            run_set(container, name, args.sets)
    finally:
        container.close()


if __name__ == "__main__":
    main()
