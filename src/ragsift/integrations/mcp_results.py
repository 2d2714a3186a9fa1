"""What the MCP tools return: evidence with its citation, a trace summary, chunks in context.

Plain pydantic models (their JSON schemas become the tools' output schemas) and the
conversions from the domain results; nothing here imports the `mcp` SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from ragsift.domain.models import (
    PARENT_LEVEL,
    Chunk,
    Document,
    DocumentStatus,
    KnowledgeBase,
    Locator,
)
from ragsift.domain.results import FaqHit, RetrievalHit, RetrievalResult
from ragsift.domain.trace import RetrievalTrace, StageStatus

KB_URI = "ragsift://kb/{name}"


def kb_uri(name: str) -> str:
    """The resource that describes a knowledge base and its documents."""
    return KB_URI.format(name=quote(name, safe=""))


class Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Citation(Out):
    """Where a piece of evidence comes from: enough to cite it and to fetch it again."""

    file: str = Field(description="the original file's name")
    document_id: str
    chunk_id: str = Field(description="pass it to get_chunk for its parent and neighbours")
    section: list[str] = Field(description="the heading path of the chunk in its file")
    locator: Locator = Field(description="page (and line boxes), sheet and cell range, slide, "
                             "or JSON record and pointer, when known")
    label: str = Field(description="a short human-readable reference, e.g. 'a.md › Intro, p. 3'")


def citation_label(file: str, section: Sequence[str], locator: Locator) -> str:
    """`file › heading › heading, p. 3` (the parts that are known)."""
    label = " › ".join([file, *section])
    where = []
    if locator.page is not None:
        where.append(f"p. {locator.page}")
    if locator.sheet is not None:
        where.append(f"sheet {locator.sheet}" + (f"!{locator.cell_range}"
                                                  if locator.cell_range else ""))
    if locator.slide is not None:
        where.append(f"slide {locator.slide}")
    if locator.record is not None:
        where.append(f"record {locator.record}")
    return ", ".join([label, *where])


def cite(filename: str, document_id: str, chunk_id: str, section: Sequence[str],
         locator: Locator) -> Citation:
    return Citation(file=filename, document_id=document_id, chunk_id=chunk_id,
                    section=list(section), locator=locator,
                    label=citation_label(filename, section, locator))


class Evidence(Out):
    """One piece of evidence, best first."""

    rank: int
    text: str = Field(description="the chunk's text")
    context: str | None = Field(
        description="the chunk with its neighbours (Small2Big), when that stage ran")
    score: float = Field(description="the rerank score when reranked, else the fusion score")
    relevance: float | None = Field(
        default=None, description="calibrated relevance in 0..1 (monotone in the fusion score "
                                  "within a search)")
    retrieval_sources: list[str] = Field(description="the channels that found it")
    citation: Citation
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="the document's metadata (dates as {\"$date\": ...})")
    kb: str | None = Field(default=None, description="the knowledge base of the passage, "
                           "when several were searched (`kbs`)")


class ScoredEvidence(Evidence):
    """Evidence with every score and rank that placed it (explain)."""

    dense_rank: int | None
    dense_score: float | None
    sparse_rank: int | None
    sparse_score: float | None
    second_dense_rank: int | None = Field(
        default=None, description="rank in the second dense channel (USE), when it was searched")
    second_dense_score: float | None = None
    fusion_score: float
    rerank_score: float | None
    merged_from: list[str] = Field(description="children an auto-merged parent replaced")
    context_chunk_ids: list[str]


class FaqAnswer(Out):
    """A FAQ entry found for the query; `direct_answer` marks a high-confidence match."""

    rank: int
    faq_id: str
    question: str
    answer: str
    source: str | None
    direct_answer: bool
    score: float


class SearchResult(Out):
    """The evidence for a query in one knowledge base, with a citation per piece."""

    kb: str
    query: str
    request_id: str
    results: list[Evidence]
    faq: list[FaqAnswer]


class StageSummary(Out):
    status: StageStatus
    reason: str | None


class ChannelSummary(Out):
    list_name: str
    candidates: int
    latency_ms: float
    error: str | None


class TraceSummary(Out):
    """How the evidence was chosen: query variants, channels, counts and each stage."""

    request_id: str
    kb_version: int | None
    query: str
    mode: str
    fusion: str
    variants: list[str] = Field(description="'method: text' per query variant searched")
    channels: list[ChannelSummary]
    fused_count: int
    ready_filtered_count: int = Field(description="candidates dropped as not READY")
    returned_count: int
    stages: dict[str, StageSummary] = Field(
        description="rewrite, tuned_fusion, auto_merge, rerank, threshold, small2big, faq")
    degradations: list[str] = Field(description="'code: reason' per stage that failed")
    timings_ms: dict[str, float]


class ExplainResult(Out):
    """The evidence, every score behind its rank, and a summary of the retrieval trace."""

    kb: str
    query: str
    results: list[ScoredEvidence]
    faq: list[FaqAnswer]
    trace: TraceSummary


class KnowledgeBaseInfo(Out):
    name: str
    id: str
    embedding_model: str
    documents: int
    ready: int = Field(description="documents that are searchable")
    faq: int = Field(description="FAQ entries")
    uri: str = Field(description="the resource describing it and its documents")


class KnowledgeBaseList(Out):
    knowledge_bases: list[KnowledgeBaseInfo]


class ChunkView(Out):
    chunk_id: str
    level: str = Field(description="'section' (a parent) or 'passage' (an indexed child)")
    ordinal: int
    token_count: int
    text: str
    citation: Citation


class ChunkInContext(Out):
    """A chunk, the section it belongs to, and the passages before and after it."""

    kb: str
    chunk: ChunkView
    parent: ChunkView | None = Field(description="the section the chunk belongs to")
    previous: list[ChunkView] = Field(description="neighbouring passages before it, in order")
    next: list[ChunkView] = Field(description="neighbouring passages after it, in order")


class DocumentInfo(Out):
    id: str
    filename: str
    status: str
    media_type: str
    size: int
    error: str | None
    created_at: datetime | None
    updated_at: datetime | None


class KnowledgeBaseResource(Out):
    """The body of ragsift://kb/{name}."""

    name: str
    id: str
    embedding_model: str
    embedding_dim: int
    created_at: datetime | None
    faq: int
    documents: list[DocumentInfo]


def _evidence(hit: RetrievalHit, names: dict[str, str | None]) -> dict[str, object]:
    return {
        "kb": names.get(hit.kb_id or "") or hit.kb_id if names else None,
        "rank": hit.rank, "text": hit.text, "context": hit.context_text,
        "score": hit.rerank_score if hit.rerank_score is not None else hit.fusion_score,
        "relevance": hit.relevance,
        "retrieval_sources": list(hit.retrieval_sources),
        "metadata": dict(hit.metadata or {}),
        "citation": cite(hit.filename, hit.document_id, hit.chunk_id, hit.heading_path,
                         hit.locator),
    }


def _faq(hit: FaqHit) -> FaqAnswer:
    return FaqAnswer(rank=hit.rank, faq_id=hit.faq_id, question=hit.question, answer=hit.answer,
                     source=hit.source, direct_answer=hit.direct_answer, score=hit.fusion_score)


def search_result(kb: str, result: RetrievalResult) -> SearchResult:
    return SearchResult(kb=kb, query=result.trace.query, request_id=result.trace.request_id,
                        results=[Evidence.model_validate(_evidence(h, _kb_names(result)))
                                 for h in result.hits],
                        faq=[_faq(h) for h in result.faq_hits])


def _kb_names(result: RetrievalResult) -> dict[str, str | None]:
    """KB id -> name of a search over several KBs (empty for one)."""
    return {part.kb_id: part.kb_name for part in result.trace.kbs}


def _scored(hit: RetrievalHit, names: dict[str, str | None]) -> ScoredEvidence:
    return ScoredEvidence.model_validate({
        **_evidence(hit, names), "dense_rank": hit.dense_rank, "dense_score": hit.dense_score,
        "sparse_rank": hit.sparse_rank, "sparse_score": hit.sparse_score,
        "second_dense_rank": hit.second_dense_rank,
        "second_dense_score": hit.second_dense_score,
        "fusion_score": hit.fusion_score, "rerank_score": hit.rerank_score,
        "merged_from": list(hit.merged_from), "context_chunk_ids": list(hit.context_chunk_ids),
    })


def trace_summary(trace: RetrievalTrace) -> TraceSummary:
    stages = {name: getattr(trace, name) for name in (
        "rewrite", "tuned_fusion", "auto_merge", "rerank", "threshold", "small2big", "faq")}
    return TraceSummary(
        request_id=trace.request_id, kb_version=trace.kb_version, query=trace.query,
        mode=trace.mode, fusion=trace.fusion,
        variants=[f"{v.method}: {v.text}" for v in trace.variants],
        channels=[ChannelSummary(list_name=c.list_name, candidates=c.candidates,
                                 latency_ms=round(c.latency_ms, 2), error=c.error)
                  for c in trace.channels],
        fused_count=trace.fused_count, ready_filtered_count=trace.ready_filtered_count,
        returned_count=trace.returned_count,
        stages={name: StageSummary(status=s.status, reason=s.reason) for name, s in stages.items()},
        degradations=[f"{d.code}: {d.reason}" for d in trace.degradations],
        timings_ms={name: round(ms, 2) for name, ms in trace.timings_ms.items()},
    )


def explain_result(kb: str, result: RetrievalResult) -> ExplainResult:
    return ExplainResult(kb=kb, query=result.trace.query,
                         results=[_scored(h, _kb_names(result)) for h in result.hits],
                         faq=[_faq(h) for h in result.faq_hits],
                         trace=trace_summary(result.trace))


def chunk_view(chunk: Chunk, filename: str) -> ChunkView:
    return ChunkView(
        chunk_id=chunk.id, level="section" if chunk.level <= PARENT_LEVEL else "passage",
        ordinal=chunk.ordinal, token_count=chunk.token_count, text=chunk.text,
        citation=cite(filename, chunk.document_id, chunk.id, chunk.heading_path, chunk.locator),
    )


def kb_info(kb: KnowledgeBase, documents: Sequence[Document], faq: int) -> KnowledgeBaseInfo:
    ready = sum(1 for d in documents if d.status == DocumentStatus.READY)
    return KnowledgeBaseInfo(name=kb.name, id=kb.id, embedding_model=kb.embedding_model,
                             documents=len(documents), ready=ready, faq=faq, uri=kb_uri(kb.name))


def kb_resource(kb: KnowledgeBase, documents: Sequence[Document], faq: int
                ) -> KnowledgeBaseResource:
    return KnowledgeBaseResource(
        name=kb.name, id=kb.id, embedding_model=kb.embedding_model,
        embedding_dim=kb.embedding_dim, created_at=kb.created_at, faq=faq,
        documents=[DocumentInfo(id=d.id, filename=d.filename, status=d.status.value,
                                media_type=d.media_type, size=d.size, error=d.error,
                                created_at=d.created_at, updated_at=d.updated_at)
                   for d in documents],
    )
