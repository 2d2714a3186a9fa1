"""Pseudo-relevance feedback: expand a query from its own top hits (issue 18, item 4).

* RM3 for BM25: the relevance model of the top-m fused hits (each hit's term distribution
  weighted by its normalised fused score), its top terms by weight x idf, interpolated with
  the query's own terms as (term, weight) pairs for a weighted BM25 query.
* Rocchio for dense: q' = alpha q + beta mean(top-m vectors), renormalised. Measured and
  dropped (it lost on kuake-qtr at every setting, docs/quality.md), so it has no setting;
  kept for the experiment script.

Pure functions over tokens, weights and vectors; fetching the hits' text and vectors and
running the second search are the caller's (one stage), so the cost is one extra search per
channel plus the analysis of m hits.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragsift.config import Settings

WeightedTerms = tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Rm3Config:
    feedback_docs: int = 10
    terms: int = 10
    weight: float = 0.5  # total weight of the expansion terms, relative to the query's
    min_term_chars: int = 1

    def __post_init__(self) -> None:
        if self.feedback_docs < 1 or self.terms < 1 or self.min_term_chars < 1:
            raise ValueError("feedback_docs, terms and min_term_chars must be at least 1")
        if not 0 <= self.weight <= 10:
            raise ValueError(f"weight must be in [0, 10], got {self.weight}")


@dataclass(frozen=True, slots=True)
class RocchioConfig:
    feedback_docs: int = 5
    alpha: float = 1.0
    beta: float = 0.5

    def __post_init__(self) -> None:
        if self.feedback_docs < 1:
            raise ValueError("feedback_docs must be at least 1")
        if self.alpha <= 0 or self.beta < 0:
            raise ValueError("alpha must be positive and beta non-negative")


def rm3_config_from(settings: Settings) -> Rm3Config:
    return Rm3Config(feedback_docs=settings.prf_rm3_docs, terms=settings.prf_rm3_terms,
                     weight=settings.prf_rm3_weight)


def feedback_weights(scores: Sequence[float]) -> list[float]:
    """Fused scores of the feedback hits as weights summing to 1 (min-max, floored).

    The last hit keeps a small share (not 0): it was retrieved, and with two hits a plain
    min-max would drop one entirely.
    """
    if not scores:
        return []
    low, high = min(scores), max(scores)
    span = high - low
    raw = [0.1 + 0.9 * ((s - low) / span if span > 0 else 1.0) for s in scores]
    total = sum(raw)
    return [r / total for r in raw]


def rm3_query(
    query_tokens: Sequence[str], feedback: Sequence[tuple[Sequence[str], float]],
    idf: Callable[[str], float], config: Rm3Config,
) -> WeightedTerms:
    """The expanded query: each distinct query token at weight 1, plus the expansion terms.

    `feedback` holds (analyzed tokens, weight) of each feedback hit, weights summing to 1;
    `idf` is the index's idf of a term (0 for an unknown one). Expansion terms share
    `config.weight` x (number of query terms), in proportion to P(w|R); a query term that is
    also an expansion term gets both weights.
    """
    original = list(dict.fromkeys(query_tokens))
    weights: dict[str, float] = {token: 1.0 for token in original}
    if not original or not feedback or config.weight == 0:
        return tuple(weights.items())
    model: dict[str, float] = {}
    for tokens, share in feedback:
        if not tokens or share <= 0:
            continue
        counts = Counter(tokens)
        length = len(tokens)
        for term, count in counts.items():
            model[term] = model.get(term, 0.0) + share * count / length
    scored = [
        (term, p, p * idf(term)) for term, p in model.items()
        if len(term) >= config.min_term_chars
    ]
    # Ranked by P(w|R) x idf: P(w|R) alone picks the corpus's common characters and words.
    scored.sort(key=lambda item: (-item[2], item[0]))
    chosen = [(term, p) for term, p, rank in scored[: config.terms] if rank > 0]
    mass = sum(p for _, p in chosen)
    if mass <= 0:
        return tuple(weights.items())
    budget = config.weight * len(original)
    for term, p in chosen:
        weights[term] = weights.get(term, 0.0) + budget * p / mass
    return tuple(weights.items())


def lucene_idf(doc_freq: int, documents: int) -> float:
    """BM25's idf as tantivy and Lucene compute it."""
    return math.log(1 + (documents - doc_freq + 0.5) / (doc_freq + 0.5))


def idf_from_stats(documents: int, doc_freq: Mapping[str, int]) -> Callable[[str], float]:
    """The idf function of (documents, term -> document frequency), e.g. the BM25 store's
    `term_stats`; a term it does not list has idf 0 (it adds nothing to a query)."""
    def idf(term: str) -> float:
        df = doc_freq.get(term)
        return 0.0 if df is None or df <= 0 or documents <= 0 else lucene_idf(df, documents)
    return idf


def rocchio(
    query: NDArray[np.float32], feedback: NDArray[np.float32], config: RocchioConfig
) -> NDArray[np.float32]:
    """alpha q + beta mean(feedback rows), unit length (cosine search ignores the scale)."""
    vector = config.alpha * np.asarray(query, dtype=np.float32).reshape(-1)
    rows = np.asarray(feedback, dtype=np.float32)
    if rows.size and config.beta > 0:
        rows = rows.reshape(-1, vector.shape[0])
        vector = vector + config.beta * rows[: config.feedback_docs].mean(axis=0)
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32)


def expand_bm25_query(
    query: str, analyze: Callable[[str], list[str]], hits: Sequence[tuple[str, float]],
    term_stats: Callable[[Sequence[str]], tuple[int, dict[str, int]]], config: Rm3Config,
) -> WeightedTerms:
    """RM3 end to end for a stage: the expanded BM25 query of `query` from `hits`.

    `hits` are (text, fused score) of the fused top hits, best first (only the first
    feedback_docs are read); `analyze` is the kb's BM25 analyzer and `term_stats` the BM25
    store's (documents, document frequencies), so every term is an index term with its idf.
    """
    head = list(hits[: config.feedback_docs])
    shares = feedback_weights([score for _, score in head])
    feedback = [(analyze(text), share) for (text, _), share in zip(head, shares, strict=True)]
    documents, doc_freq = term_stats(sorted({t for tokens, _ in feedback for t in tokens}))
    return rm3_query(analyze(query), feedback, idf_from_stats(documents, doc_freq), config)
