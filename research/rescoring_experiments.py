"""The lever grids of research/rescoring_levers.py (run that script; this one only holds them)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

import numpy as np
from rescoring_levers import Bm25, Clock, Ranked, SetData, fused, ndcg, report, top

from ragsift.adapters.embedded_index.analyzer import analyze_v2
from ragsift.retrieval.consistency import Candidate, ConsistencyConfig, ConsistencyRescorer
from ragsift.retrieval.feedback import (
    Rm3Config,
    RocchioConfig,
    feedback_weights,
    rm3_query,
    rocchio,
)

Lists = dict[str, tuple[Ranked, Ranked, Ranked]]  # query id -> (dense, sparse, fused)
Rows = list[dict[str, object]]


def _lists(s: SetData) -> Lists:
    lists: Lists = {}
    for qid, text in s.queries:
        dense = s.dense(s.qvecs[qid]) if s.vectors is not None else []
        sparse = s.sparse(text)
        lists[qid] = (dense, sparse, fused(dense, sparse))
    return lists


def _scores(s: SetData, runs: Mapping[str, Sequence[int]]) -> dict[str, float]:
    return {qid: ndcg(s, qid, ranked) for qid, ranked in runs.items()}


def consistency(s: SetData, lists: Lists, base: dict[str, float], rows: Rows) -> None:
    grid: list[tuple[str, ConsistencyConfig]] = []
    for pen in (0.5, 1.0, 2.0):
        grid.append((f"numbers pen={pen:g}", ConsistencyConfig(
            number_penalty=pen, substitution_penalty=0)))
    for pen, extra, idf in itertools.product((0.5, 1.0, 2.0), (0, 2), (0.0, 3.0, 5.0)):
        grid.append((f"swap pen={pen:g} extra<={extra} idf>={idf:g}", ConsistencyConfig(
            number_penalty=0, substitution_penalty=pen, max_extra=extra, min_idf=idf)))
    for pen, idf in itertools.product((0.25, 0.5, 1.0), (4.0, 6.0)):
        grid.append((f"missing rare word pen={pen:g} idf>={idf:g}", ConsistencyConfig(
            number_penalty=0, substitution_penalty=0, missing_penalty=pen,
            missing_min_idf=idf)))
    for pen in (0.5, 1.0):
        grid.append((f"numbers+swap pen={pen:g} extra<=2 idf>=5", ConsistencyConfig(
            number_penalty=pen, substitution_penalty=pen, min_idf=5.0)))
    examples: list[str] = []
    for label, config in grid:
        rescorer, clock = ConsistencyRescorer(config, s.bm25.idf), Clock()
        run: dict[str, list[int]] = {}
        for qid, text in s.queries:
            ranked = lists[qid][2][:100]
            with clock.timed():
                result = rescorer.run(text, [Candidate(str(i), s.texts[i], sc)
                                             for i, sc in ranked])
            run[qid] = [int(i) for i in result.order]
            if (label.startswith(("numbers+swap pen=1", "missing rare word pen=0.5 idf>=4"))
                    and result.penalised):
                notes = [f"{s.texts[int(c.id)][:30]}: {n.kind} {n.query_span}->"
                         f"{n.candidate_span}" for c in result.candidates[:30] for n in c.notes]
                examples.append(f"{qid} {text} | " + "; ".join(notes[:3]))
        report(s, f"consistency {label}", base, _scores(s, run), clock, rows)
    with open(f"/tmp/levers/{s.name}/consistency_examples.txt", "w", encoding="utf-8") as out:
        out.write("\n".join(examples))


def rm3(s: SetData, lists: Lists, base: dict[str, float], rows: Rows,
        grid: Sequence[Rm3Config]) -> None:
    for config in grid:
        clock, run = Clock(), {}
        for qid, text in s.queries:
            dense, _, ranked = lists[qid]
            with clock.timed():
                head = ranked[: config.feedback_docs]
                shares = feedback_weights([sc for _, sc in head])
                # re-analysed here, as the stage would from the hits' text
                feedback = [(analyze_v2(s.texts[i]), w) for (i, _), w in zip(head, shares,
                                                                              strict=True)]
                terms = rm3_query(analyze_v2(text), feedback, s.bm25.idf, config)
                sparse = s.bm25.search(terms)
            run[qid] = [i for i, _ in fused(dense, sparse)]
        label = f"rm3 m={config.feedback_docs} terms={config.terms} w={config.weight:g}"
        report(s, label, base, _scores(s, run), clock, rows)


def rocchio_grid(s: SetData, lists: Lists, base: dict[str, float], rows: Rows,
                 grid: Sequence[RocchioConfig]) -> None:
    for config in grid:
        clock, run = Clock(), {}
        for qid, _ in s.queries:
            _, sparse, ranked = lists[qid]
            with clock.timed():
                rows_ = [i for i, _ in ranked[: config.feedback_docs]]
                vector = rocchio(s.qvecs[qid], s.vectors[rows_], config)
                dense = s.dense(vector)
            run[qid] = [i for i, _ in fused(dense, sparse)]
        label = f"rocchio m={config.feedback_docs} beta={config.beta:g}"
        report(s, label, base, _scores(s, run), clock, rows)


def both(s: SetData, lists: Lists, base: dict[str, float], rows: Rows,
         rm: Rm3Config, ro: RocchioConfig) -> None:
    clock, run = Clock(), {}
    for qid, text in s.queries:
        _, _, ranked = lists[qid]
        with clock.timed():
            head = ranked[: rm.feedback_docs]
            shares = feedback_weights([sc for _, sc in head])
            feedback = [(analyze_v2(s.texts[i]), w) for (i, _), w in zip(head, shares,
                                                                          strict=True)]
            sparse = s.bm25.search(rm3_query(analyze_v2(text), feedback, s.bm25.idf, rm))
            dense = s.dense(rocchio(s.qvecs[qid], s.vectors[[i for i, _ in
                                                             ranked[: ro.feedback_docs]]], ro))
        run[qid] = [i for i, _ in fused(dense, sparse)]
    label = (f"rm3 m={rm.feedback_docs} terms={rm.terms} w={rm.weight:g} + rocchio "
             f"m={ro.feedback_docs} beta={ro.beta:g}")
    report(s, label, base, _scores(s, run), clock, rows)


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def chunks(text: str, words: int) -> list[str]:
    """Sentence-aligned windows of about `words` words (the first chunk is the passage head)."""
    out: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(text):
        if current and len(" ".join(current).split()) + len(sentence.split()) > words:
            out.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        out.append(" ".join(current))
    return out


def maxp(s: SetData, lists: Lists, base: dict[str, float], rows: Rows) -> None:
    """BM25 over chunks, a document scored by its best chunk (MaxP) or its best two."""
    dense_only = {qid: [i for i, _ in lists[qid][0]] for qid, _ in s.queries}
    if s.vectors is not None:
        report(s, "dense alone (ref)", base, _scores(s, dense_only), None, rows)
    sparse_whole = {qid: [i for i, _ in lists[qid][1]] for qid, _ in s.queries}
    sparse_base = _scores(s, sparse_whole)
    report(s, "BM25 alone, whole passage (ref)", base, sparse_base, None, rows)
    for words in (128, 256):
        owner: list[int] = []
        pieces: list[list[str]] = []
        for i, passage in enumerate(s.data.corpus):
            for piece in chunks(passage.text, words):
                owner.append(i)
                pieces.append(analyze_v2(f"{passage.title}\n{piece}"))
        index = Bm25(pieces)
        owners = np.asarray(owner)
        for mode in ("max", "top2"):
            sparse_runs: dict[str, Ranked] = {}
            for qid, text in s.queries:
                scores = index.scores([(t, 1.0) for t in dict.fromkeys(analyze_v2(text))])
                best = np.zeros(len(s.texts), dtype=np.float32)
                np.maximum.at(best, owners, scores)
                if mode == "top2":
                    second = np.zeros_like(best)
                    masked = np.where(scores >= best[owners], 0, scores)
                    np.maximum.at(second, owners, masked)
                    best = best + 0.5 * second
                sparse_runs[qid] = top(best, 100, positive=True)
            label = f"BM25 MaxP {mode} over {words}-word chunks ({len(pieces)} chunks)"
            alone = _scores(s, {q: [i for i, _ in r] for q, r in sparse_runs.items()})
            report(s, label + " alone vs BM25 whole", sparse_base, alone, None, rows)
            if s.vectors is not None:
                hybrid = {qid: [i for i, _ in fused(lists[qid][0], sparse_runs[qid])]
                          for qid, _ in s.queries}
                report(s, label + " in hybrid", base, _scores(s, hybrid), None, rows)
    if s.vectors is not None:
        dense_maxp(s, lists, base, rows)


def dense_maxp(s: SetData, lists: Lists, base: dict[str, float], rows: Rows) -> None:
    """Dense MaxP: a passage scores its best of the whole-passage vector (e5 reads its first
    507 tokens) and the vectors of its tail chunks (scripts' cache, see docs/quality.md)."""
    import json
    from pathlib import Path

    folder = Path(f"/tmp/levers/{s.name}")
    if not (folder / "tail_e5.npy").exists() or s.vectors is None:
        print(f"| {s.name} | dense MaxP: no tail vectors cached | - | - | - | - | - |")
        return
    tails = np.load(folder / "tail_e5.npy")
    tails = tails / np.linalg.norm(tails, axis=1, keepdims=True)
    owners = np.asarray(json.loads((folder / "tail_owner.json").read_text())["owners"])
    dense_runs: dict[str, Ranked] = {}
    for qid, _ in s.queries:
        best = s.vectors @ s.qvecs[qid]
        np.maximum.at(best, owners, tails @ s.qvecs[qid])
        dense_runs[qid] = top(best, 100)
    alone = _scores(s, {q: [i for i, _ in r] for q, r in dense_runs.items()})
    whole = _scores(s, {q: [i for i, _ in lists[q][0]] for q, _ in s.queries})
    report(s, f"dense MaxP (whole + {len(owners)} tail chunks) alone vs dense whole", whole,
           alone, None, rows)
    hybrid = {q: [i for i, _ in fused(dense_runs[q], lists[q][1])] for q, _ in s.queries}
    report(s, "dense MaxP in hybrid", base, _scores(s, hybrid), None, rows)


RM3_GRID = [Rm3Config(feedback_docs=m, terms=t, weight=w)
            for m, t, w in itertools.product((5, 10), (10, 20), (0.3, 0.6, 1.0))]
ROCCHIO_GRID = [RocchioConfig(feedback_docs=m, beta=b)
                for m, b in itertools.product((3, 5, 10), (0.25, 0.5, 1.0))]


def run_levers(s: SetData, levers: set[str], rows: Rows, load_s: float) -> None:
    lists = _lists(s)
    base = _scores(s, {qid: [i for i, _ in lists[qid][2]] for qid, _ in s.queries})
    mean = sum(base.values()) / len(base)
    print(f"| {s.name} | default (z-score 1/0.7, 100/100), load {load_s:.0f}s | {mean:.4f} "
          f"| - | - | - | - |", flush=True)
    if "maxp" in levers and s.name == "scifact":
        maxp(s, lists, base, rows)
    if "consistency" in levers:
        consistency(s, lists, base, rows)
    if "rm3" in levers:
        rm3(s, lists, base, rows, RM3_GRID)
    if "rocchio" in levers and s.vectors is not None:
        rocchio_grid(s, lists, base, rows, ROCCHIO_GRID)
    if "tantivy" in levers:
        tantivy_cost(s, lists, f"/tmp/levers/{s.name}/tantivy/kb", Rm3Config(10, 20, 0.3))
    if "both" in levers:
        both(s, lists, base, rows, Rm3Config(10, 10, 0.3), RocchioConfig(5, beta=0.5))


def tantivy_cost(s: SetData, lists: Lists, directory: str, config: Rm3Config) -> None:
    """Real costs of RM3 on a copy of the set's tantivy index (read only; no store lock):
    the first BM25 search, the idf look-ups of the feedback terms, the weighted search."""
    from pathlib import Path

    from ragsift.adapters.embedded_index.bm25_kb import KbIndex, schema
    from ragsift.retrieval.feedback import idf_from_stats

    kb = KbIndex(Path(directory), schema())
    first, stats, second = Clock(), Clock(), Clock()
    overlap: list[int] = []
    for qid, text in s.queries:
        with first.timed():
            kb.search(text, [], WIDTH_)
        head = lists[qid][2][: config.feedback_docs]
        feedback = [(kb.analyze(s.texts[i]), w)
                    for (i, _), w in zip(head, feedback_weights([x for _, x in head]),
                                         strict=True)]
        with stats.timed():
            terms = sorted({t for tokens, _ in feedback for t in tokens})
            n, df = kb.term_stats(terms)
            expanded = rm3_query(kb.analyze(text), feedback, idf_from_stats(n, df), config)
        with second.timed():
            hits = kb.search_weighted(expanded, [], WIDTH_)
        overlap.append(len(hits))
    print(f"| {s.name} | tantivy cost (ms/query wall / CPU): first BM25 {first.per_call_ms()}"
          f", RM3 idf look-ups {stats.per_call_ms()}, weighted BM25 {second.per_call_ms()}, "
          f"{sum(overlap) / len(overlap):.0f} hits |", flush=True)


WIDTH_ = 100
