"""Helpers of RetrievalService's trace: which stages applied, the fusion padding's record,
and the post-fusion stages' names checked."""

from __future__ import annotations

from collections.abc import Sequence

from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RankedList
from ragsift.domain.trace import Degradation, QueryVariant, RetrievalTrace, StageTrace, Switches
from ragsift.observability.context import current_request_id
from ragsift.retrieval.candidates import CandidateStage
from ragsift.retrieval.channel_stage import Retrieved
from ragsift.retrieval.document_stages import ExpandOutcome
from ragsift.retrieval.fusion import Padding, padded_lists
from ragsift.retrieval.options import Options

# the trace fields a candidate stage's StageTrace may fill (its name); others are not kept
TRACE_FIELDS = frozenset(
    name for name, field in RetrievalTrace.model_fields.items() if field.annotation is StageTrace
)
# names the service itself records (timings, trace fields): no post-fusion stage may take one
_RESERVED = frozenset({"scope", "rewrite", "channels", "feedback", "fusion", "ready_check",
                       "threshold", "small2big", "faq", "total", "tuned_fusion"})


_NOT_RUN = StageTrace()


def first_trace(request: SearchRequest, query: str, options: Options) -> RetrievalTrace:
    """The trace a document search starts from: the query and the options it resolved to."""
    return RetrievalTrace(
        request_id=current_request_id(), kb_id=request.kb_id, query=query, mode=options.mode,
        fusion=options.fusion, switches_requested=options.switches,
        tuned_fusion=options.tuned_fusion,
        variants=(QueryVariant(text=query, method="original"),),
    )


def padding_trace(
    padding: Padding | None, options: Options, lists: Sequence[RankedList]
) -> StageTrace:
    """Whether fusion normalised a short BM25 list as if channel_k long, and which."""
    if padding is None:
        return StageTrace(status="off", reason="RAGSIFT_FUSION_PAD_SHORT_LISTS=false")
    if options.fusion == "rrf" or sum(1 for ranked in lists if ranked.hits) < 2:
        return StageTrace(status="skipped", reason="nothing is score-fused")
    padded = padded_lists(lists, padding)
    if not padded:
        return StageTrace(status="skipped", reason="no BM25 list shorter than channel_k")
    return StageTrace(status="applied", detail={
        "depth": padding.depth, **{name: hits for name, hits in padded.items()}})


def some(degradation: Degradation | None) -> tuple[Degradation, ...]:
    return () if degradation is None else (degradation,)


def applied(
    retrieved: Retrieved, traces: dict[str, StageTrace], expanded: ExpandOutcome,
    feedback: StageTrace,
) -> Switches:
    """The optional stages that changed this search's answer."""
    return Switches(
        rewrite=retrieved.rewrite.variant is not None,
        rerank=traces["rerank"].status == "applied",
        small2big=expanded.trace.status == "applied",
        auto_merge=traces["auto_merge"].status == "applied",
        consistency=traces.get("consistency", _NOT_RUN).status == "applied",
        feedback=feedback.status == "applied",
    )


def candidate_stages(
    merge: CandidateStage, rescorers: Sequence[CandidateStage], rerank: CandidateStage
) -> tuple[CandidateStage, ...]:
    """The post-fusion stages in order; names must be unique and not reserved."""
    stages = (merge, *rescorers, rerank)
    names = [stage.name for stage in stages]
    clashes = sorted({n for n in names if names.count(n) > 1} | (set(names) & _RESERVED))
    if clashes:
        raise ValueError(f"post-fusion stage names must be unique and new: {clashes}")
    return stages
