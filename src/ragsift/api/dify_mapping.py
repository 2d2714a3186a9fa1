"""Dify's request and records in ragsift's terms: metadata conditions as search filters, hits as
records with a normalised 0-1 score. Pure functions; the route (api/routes_dify.py) runs them.

Metadata conditions: `is` / `=` (one value) and `in` (a list) on tenant_id, dataset_id,
visibility, source, document_id and filename (alias document_name, Dify's name for it) are
scope filters (within one field the values are a set: `and` the intersection, `or` the union),
checked against the key's scope; every other operator and field, and `or` across fields,
become one metadata filter (api/dify_conditions.py). A condition is never silently dropped.

Normalised score (docs/how-to/dify.md): each hit is calibrated as its
rerank score when rerank ran (squashed with the logistic function if the reranker answers
outside 0-1), else its dense cosine similarity clipped to 0-1, else (a hit only BM25 found)
`bm25 / (bm25 + BM25_HALF)`. A record then scores the highest calibrated score of itself and
every record ragsift ranked below it: the scores never increase down ragsift's ranking, so
Dify (which sorts by score) keeps ragsift's order, and a threshold cuts a tail of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.api.dify_conditions import (
    FilenameIds,
    UnsupportedCondition,
    conditions_filter,
    field_name,
)
from ragsift.api.schemas_dify import Condition, DifyRecord, MetadataCondition
from ragsift.chat.faq import direct_answer_hit, supporting_hits
from ragsift.domain.results import FaqHit, RetrievalHit, RetrievalResult

# BM25 score at which a BM25-only hit scores 0.5 (typical matches score 1-10 here)
BM25_HALF = 5.0
_FIELDS = {
    "tenant_id": "tenant_ids", "dataset_id": "dataset_ids", "visibility": "visibilities",
    "source": "sources", "document_id": "document_ids", "filename": "filenames",
    "document_name": "filenames",
}


@dataclass(frozen=True, slots=True)
class DifyFilters:
    """Accepted values per field (None: not filtered; an empty tuple accepts nothing), and
    the conditions they cannot say as one metadata filter (None: none)."""

    tenant_ids: tuple[str, ...] | None = None
    dataset_ids: tuple[str, ...] | None = None
    visibilities: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    document_ids: tuple[str, ...] | None = None
    filenames: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = None


def _scope_values(field: str, condition: Condition) -> tuple[str, ...] | None:
    """The values of an `is` / `=` / `in` condition on a scope field or the file name (kept
    as scope filters: the key's scope checks them, 1002 outside it), else None."""
    operator, value = condition.comparison_operator, condition.value
    if field not in _FIELDS or value is None:
        return None
    if operator in ("is", "=") and not isinstance(value, list):
        return (str(value),)
    if operator == "in":
        return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)
    return None


def _scope_filters(grouped: dict[str, list[tuple[str, ...]]], union: bool) -> dict[str, Any]:
    combined: dict[str, tuple[str, ...]] = {}
    for field, sets in grouped.items():
        if union:
            combined[field] = tuple(dict.fromkeys(v for values in sets for v in values))
            continue
        kept = dict.fromkeys(sets[0])
        for values in sets[1:]:
            kept = {v: None for v in kept if v in values}
        combined[field] = tuple(kept)
    return combined


def conditions_to_filters(
    condition: MetadataCondition | None, filename_ids: FilenameIds | None = None,
) -> DifyFilters:
    """Dify's metadata_condition as ragsift filters: `is` / `in` on the scope fields and the
    file name as scope filters (as before metadata), every other condition (and an `or`
    across fields) as one metadata filter; UnsupportedCondition for an unknown operator.
    `filename_ids` resolves file-name conditions inside the metadata filter."""
    if condition is None or not condition.conditions:
        return DifyFilters()
    union = condition.logical_operator == "or"
    items = [(field, c, _scope_values(field, c))
             for c in condition.conditions for field in (field_name(c.name),)]
    resolve = filename_ids or _no_filenames
    if union and (any(values is None for _, _, values in items)
                  or len({_FIELDS[field] for field, _, _ in items}) > 1):
        return DifyFilters(metadata=conditions_filter(
            [(field, c.comparison_operator, c.value) for field, c, _ in items], "or", resolve))
    grouped: dict[str, list[tuple[str, ...]]] = {}
    rest: list[tuple[str, str, Any]] = []
    for field, c, values in items:
        if values is None:
            rest.append((field, c.comparison_operator, c.value))
        else:
            grouped.setdefault(_FIELDS[field], []).append(values)
    metadata = conditions_filter(rest, "and", resolve) if rest else None
    return DifyFilters(**_scope_filters(grouped, union), metadata=metadata)


def _no_filenames(raw: dict[str, Any]) -> list[str]:
    raise UnsupportedCondition("a condition on the file name needs the knowledge base's "
                               "documents")


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def calibrated_score(hit: RetrievalHit) -> float:
    """One hit's 0-1 score on its own: rerank, else dense cosine, else saturated BM25."""
    if hit.rerank_score is not None:
        score = hit.rerank_score
        return score if 0.0 <= score <= 1.0 else _logistic(score)
    if hit.dense_score is not None:
        return min(1.0, max(0.0, hit.dense_score))
    if hit.sparse_score is not None and hit.sparse_score > 0:
        return hit.sparse_score / (hit.sparse_score + BM25_HALF)
    return 0.0


def normalised_scores(hits: Sequence[RetrievalHit]) -> list[float]:
    """Per hit (in rank order) the highest calibrated score of it and every hit below it."""
    scores: list[float] = []
    best_below = 0.0
    for hit in reversed(hits):
        best_below = max(best_below, calibrated_score(hit))
        scores.append(round(best_below, 6))
    return scores[::-1]


def _metadata(hit: RetrievalHit) -> dict[str, Any]:
    return {
        "chunk_id": hit.chunk_id, "document_id": hit.document_id, "filename": hit.filename,
        "heading_path": list(hit.heading_path),
        "locator": hit.locator.model_dump(exclude_none=True),
        "rank": hit.rank, "retrieval_sources": list(hit.retrieval_sources),
        "fusion_score": hit.fusion_score, "dense_score": hit.dense_score,
        "sparse_score": hit.sparse_score, "rerank_score": hit.rerank_score,
        "document_metadata": hit.metadata or {},
    }


def to_records(hits: Sequence[RetrievalHit], score_threshold: float) -> list[DifyRecord]:
    """The hits at or over the threshold as Dify records (content: what a model should read,
    the Small2Big context when there is one)."""
    return [
        DifyRecord(content=hit.context_text or hit.text, score=score, title=hit.filename,
                   metadata=_metadata(hit))
        for hit, score in zip(hits, normalised_scores(hits), strict=True)
        if score >= score_threshold
    ]


def _faq_record(hit: FaqHit) -> DifyRecord:
    score = 0.0 if hit.dense_score is None else min(1.0, max(0.0, hit.dense_score))
    return DifyRecord(content=hit.answer, score=round(score, 6), title=hit.question, metadata={
        "kind": "faq", "faq_id": hit.faq_id, "question": hit.question, "source": hit.source,
        "direct_answer": hit.direct_answer, "dense_score": hit.dense_score,
        "sparse_score": hit.sparse_score, "fusion_score": hit.fusion_score,
    })


def plan_records(
    result: RetrievalResult, top_k: int, score_threshold: float, faq_min_score: float
) -> list[DifyRecord]:
    """The records of the plan chat follows (chat/faq.py): a direct FAQ answer alone; else
    the FAQ entries close to the query (dense cosine >= faq_min_score) before the chunks, at
    most top_k in all, at or over the threshold. A FAQ record scores its dense cosine and
    says `"kind": "faq"` in its metadata."""
    direct = direct_answer_hit(result)
    faq = [direct] if direct is not None else supporting_hits(result.faq_hits, faq_min_score)
    records = [_faq_record(hit) for hit in faq]
    if direct is None:
        records += to_records(result.hits, score_threshold)
    return [r for r in records if r.score >= score_threshold][:top_k]
