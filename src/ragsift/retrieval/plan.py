"""The retrieval plan: the document search and the FAQ search run side by side, kept apart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.filters import SearchFilter
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.domain.trace import (
    Degradation,
    QueryVariant,
    RetrievalTrace,
    RouteTrace,
    StageTrace,
)
from ragsift.observability.context import current_request_id
from ragsift.retrieval.faq import FaqOutcome, FaqSearcher
from ragsift.retrieval.faq_probe import main_faq_search
from ragsift.retrieval.options import Options, resolve_options
from ragsift.retrieval.query import validate_query
from ragsift.retrieval.route import decide
from ragsift.retrieval.scope import compile_filter

DocumentSearch = Callable[[SearchRequest, int | None], Awaitable[RetrievalResult]]
"""The document search of a request at a KB version (None: no versions)."""
VersionOf = Callable[[SearchRequest], Awaitable[int | None]]
"""The KB version a request searches (NotFound for an unknown KB or version)."""
RouteJudge = Callable[[RouteTrace, str], Awaitable[tuple[RouteTrace, tuple[Degradation, ...]]]]
"""The rules' route checked against the KB's declared domain (scope_judge.py)."""


@dataclass(frozen=True, slots=True)
class RetrievalPlan:
    """Which searches run, and the FAQ's own top-k (the documents' is the request's top_k)."""

    run_doc: bool
    run_faq: bool
    faq_top_k: int


def resolve_plan(request: SearchRequest, settings: Settings) -> RetrievalPlan:
    """Request values where given, settings otherwise; at least one search must run."""
    plan = RetrievalPlan(
        run_doc=settings.run_doc if request.run_doc is None else request.run_doc,
        run_faq=settings.run_faq if request.run_faq is None else request.run_faq,
        faq_top_k=settings.faq_top_k if request.faq_top_k is None else request.faq_top_k,
    )
    if not plan.run_doc and not plan.run_faq:
        raise InvalidInput("run_doc and run_faq are both off: there is nothing to search")
    return plan


async def run_plan(
    request: SearchRequest, settings: Settings, search_documents: DocumentSearch,
    faq: FaqSearcher | None, version_of: VersionOf, judge: RouteJudge | None = None,
    faq_threshold: float | None = None,
) -> RetrievalResult:
    """Documents (when run_doc) and FAQ (when run_faq) concurrently, merged into one result.

    The KB version is read once, before both start, so documents and FAQ entries come from
    the same version; both searches apply the request's scope. `faq_threshold`: the KB's
    own FAQ direct-answer threshold (None: the process setting). A FAQ failure is a
    degradation; a document failure fails the request as before. A message routed away from
    the search (a greeting, a request for a person) searches neither, and says so.
    """
    started = time.perf_counter()
    query = validate_query(request.query, settings.max_query_chars)
    plan = resolve_plan(request, settings)
    options = resolve_options(request, settings)
    if faq_threshold is not None:
        options = replace(options, faq_direct_threshold=faq_threshold)
    version = await version_of(request)
    route = decide(request.route, query, settings.route_rules)
    judged: tuple[Degradation, ...] = ()
    if judge is not None:
        route, judged = await judge(route, query)
    if route.route != "search":
        result = _not_searched(request.kb_id, query, options, version, route)
        return result.model_copy(update={"trace": result.trace.model_copy(
            update={"degradations": judged})}) if judged else result
    faq_filter = compile_filter(request, None, version)
    faq_task = asyncio.create_task(_search_faq(faq, plan, faq_filter, query, options))
    try:
        if plan.run_doc:
            result = await search_documents(request, version)
        else:
            result = _no_documents(request.kb_id, query, options, version)
    except BaseException:
        faq_task.cancel()
        raise
    outcome = await faq_task
    if faq is not None and plan.run_faq:
        outcome = await main_faq_search(faq, outcome, faq_filter, faq_filter, result.trace,
                                        options, plan.faq_top_k)
    trace = result.trace
    timings = dict(trace.timings_ms)
    if outcome.latency_ms is not None:
        timings["faq"] = outcome.latency_ms
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    trace = trace.model_copy(update={
        "faq": outcome.trace,
        "degradations": judged + trace.degradations + outcome.degradations,
        "timings_ms": timings, "route": faq_route(route, outcome),
    })
    return result.model_copy(update={"faq_hits": outcome.hits, "trace": trace})


def faq_route(route: RouteTrace, outcome: FaqOutcome) -> RouteTrace:
    """`faq_direct` when the top FAQ entry is a direct answer, unless the caller forced the
    search (a forced `search` asks for the evidence, not the standard answer)."""
    top = outcome.hits[0] if outcome.hits else None
    if top is None or not top.direct_answer or route.decided_by == "request":
        return route
    score = "-" if top.dense_score is None else f"{top.dense_score:.4f}"
    reason = (f"FAQ entry {top.faq_id} matches the question (dense cosine {score} >= "
              f"{outcome.trace.detail.get('threshold', '-')})")
    return route.model_copy(update={"route": "faq_direct", "decided_by": "faq",
                                    "reason": reason})


async def _search_faq(
    faq: FaqSearcher | None, plan: RetrievalPlan, search_filter: SearchFilter, query: str,
    options: Options,
) -> FaqOutcome:
    if not plan.run_faq:
        return FaqOutcome((), StageTrace(status="off", reason="not requested"))
    if faq is None:
        return FaqOutcome((), StageTrace(status="off", reason="no FAQ index configured"))
    return await faq.search(search_filter, query, options, plan.faq_top_k)


def _no_documents(
    kb_id: str, query: str, options: Options, version: int | None
) -> RetrievalResult:
    """The empty document side of a FAQ-only plan (the KB is known: version_of checked it),
    with a trace that says so."""
    off = StageTrace(status="off", reason="documents not searched (run_doc=false)")
    return RetrievalResult(hits=(), trace=_empty_trace(kb_id, query, options, version, off))


def _not_searched(
    kb_id: str, query: str, options: Options, version: int | None, route: RouteTrace
) -> RetrievalResult:
    """No documents and no FAQ for a message the plan routed away, with the route's why."""
    off = StageTrace(status="off", reason=f"not searched: the route is {route.route}")
    trace = _empty_trace(kb_id, query, options, version, off).model_copy(
        update={"route": route, "faq": off})
    return RetrievalResult(hits=(), trace=trace)


def _empty_trace(
    kb_id: str, query: str, options: Options, version: int | None, off: StageTrace
) -> RetrievalTrace:
    return RetrievalTrace(
        request_id=current_request_id(), kb_id=kb_id, query=query, mode=options.mode,
        fusion=options.fusion, switches_requested=options.switches,
        variants=(QueryVariant(text=query, method="original"),),
        rewrite=off, auto_merge=off, rerank=off, threshold=off, small2big=off,
        kb_version=version,
    )
