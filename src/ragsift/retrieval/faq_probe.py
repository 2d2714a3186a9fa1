"""The FAQ's main search after its fast probe (DESIGN: the fast-probe reuse).

The plan probes the FAQ with the original question while the documents are searched. When the
probe found a direct answer, that is the FAQ's answer. Otherwise the main search runs over the
document search's variants (its rewrite, translation, a follow-up's standalone or contextual
question): it reuses the probe's lists and searches only the new variants, merging and
reranking once, when all four conditions hold - no follow-up rewrite happened, the first
variant is still the original question, the effective filter is unchanged, and the probe kept
at least faq_top_k candidates - and searches every variant again otherwise. The trace's `faq`
stage says which (`probe`: hit, only, reused or full) and why (`probe_reason`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ragsift.domain.filters import SearchFilter
from ragsift.domain.trace import QueryVariant, RetrievalTrace, StageTrace
from ragsift.retrieval.faq import FaqOutcome, FaqSearcher
from ragsift.retrieval.options import Options

FOLLOW_UP_METHODS = frozenset({"standalone", "contextual"})


@dataclass(frozen=True, slots=True)
class ProbeReuse:
    """Whether the main search may reuse the probe's candidates, and why (not)."""

    reuse: bool
    reason: str


def reuse_decision(
    query: str, variants: Sequence[QueryVariant], history: StageTrace,
    probe_filter: SearchFilter, main_filter: SearchFilter, probe: FaqOutcome, faq_top_k: int,
) -> ProbeReuse:
    """The four conditions of the reuse, checked in order; pure."""
    if history.status == "applied" or any(v.method in FOLLOW_UP_METHODS for v in variants):
        return ProbeReuse(False, "a follow-up rewrite happened")
    if not variants or variants[0] != QueryVariant(text=query, method="original"):
        return ProbeReuse(False, "the first variant is not the original question")
    if probe_filter != main_filter:
        return ProbeReuse(False, "the effective filter changed")
    if probe.kept < faq_top_k:
        return ProbeReuse(False, f"the probe kept {probe.kept} candidates < faq_top_k "
                                 f"{faq_top_k}")
    return ProbeReuse(True, "no follow-up rewrite, the original question first, the same "
                            f"filter, {probe.kept} candidates kept")


def _distinct(variants: Sequence[QueryVariant]) -> tuple[QueryVariant, ...]:
    seen: dict[str, QueryVariant] = {}
    for variant in variants:
        seen.setdefault(variant.text, variant)
    return tuple(seen.values())


def _noted(outcome: FaqOutcome, probe: str, reason: str) -> FaqOutcome:
    detail = {**outcome.trace.detail, "probe": probe, "probe_reason": reason}
    return replace(outcome, trace=outcome.trace.model_copy(update={"detail": detail}))


async def main_faq_search(
    faq: FaqSearcher, probe: FaqOutcome, probe_filter: SearchFilter, main_filter: SearchFilter,
    documents: RetrievalTrace, options: Options, faq_top_k: int,
) -> FaqOutcome:
    """The FAQ outcome of the plan, from the probe and the document search's trace."""
    if probe.trace.status != "applied":  # off, skipped (no entries) or failed: nothing to add
        return probe
    if probe.hits and probe.hits[0].direct_answer:
        return _noted(probe, "hit", "the probe of the original question found a direct answer")
    query = documents.query
    variants = _distinct(documents.variants) or (QueryVariant(text=query, method="original"),)
    if len(variants) == 1 and variants[0].text == query:
        if faq.reranks(options):  # the probe's candidates, reranked once
            probe = await faq.search_variants(main_filter, variants, options, faq_top_k,
                                              reuse=probe)
        return _noted(probe, "only", "no variant beside the original question")
    decision = reuse_decision(query, variants, documents.history, probe_filter, main_filter,
                              probe, faq_top_k)
    main = await faq.search_variants(main_filter, variants, options, faq_top_k,
                                     reuse=probe if decision.reuse else None)
    latency = None if main.latency_ms is None else round(
        main.latency_ms + (probe.latency_ms or 0.0), 3)
    main = replace(main, latency_ms=latency,
                   degradations=probe.degradations + main.degradations)
    return _noted(main, "reused" if decision.reuse else "full", decision.reason)
