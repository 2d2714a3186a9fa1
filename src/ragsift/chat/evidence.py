"""The evidence snapshot of a turn: retrieval hits numbered in the order the model sees them."""

from __future__ import annotations

from collections.abc import Sequence

from ragsift.domain.chat import Evidence
from ragsift.domain.models import Locator
from ragsift.domain.results import RetrievalHit


def evidence_from_hits(hits: Sequence[RetrievalHit], start: int = 1) -> tuple[Evidence, ...]:
    """Hits as evidence numbered from `start` in rank order; pure.

    The score is the rerank score when rerank ran, else the fusion score; each stage's score
    is kept too (dense, sparse, fusion, rerank); an empty locator
    (nothing set) becomes None. Each item keeps the images of its chunk.
    """
    return tuple(
        Evidence(
            n=n, chunk_id=hit.chunk_id, document_id=hit.document_id, filename=hit.filename,
            heading_path=hit.heading_path, locator=_locator(hit.locator), text=hit.text,
            context_text=hit.context_text,
            score=hit.fusion_score if hit.rerank_score is None else hit.rerank_score,
            dense_score=hit.dense_score, sparse_score=hit.sparse_score,
            fusion_score=hit.fusion_score, rerank_score=hit.rerank_score,
            relevance=hit.relevance, assets=hit.assets, kb_id=hit.kb_id,
        )
        for n, hit in enumerate(hits, start=start)
    )


def _locator(locator: Locator) -> Locator | None:
    return None if locator == Locator() else locator


def describe_locator(locator: Locator | None) -> str:
    """`page 3`, `sheet Q1 A1:C9`, `slide 2`, `record 4 /items/4` or an empty string."""
    if locator is None:
        return ""
    parts: list[str] = []
    if locator.page is not None:
        parts.append(f"page {locator.page}")
    if locator.sheet is not None:
        parts.append(f"sheet {locator.sheet}")
    if locator.cell_range is not None:
        parts.append(locator.cell_range)
    if locator.slide is not None:
        parts.append(f"slide {locator.slide}")
    if locator.record is not None:
        parts.append(f"record {locator.record}")
    if locator.pointer is not None:
        parts.append(locator.pointer)
    return " ".join(parts)
