"""The channel stage of a document search: the original query's channels, the one rewrite
(a translation for a cross-lingual query, a standalone question for a follow-up), a follow-up's
contextual variant, and the second dense channel when it is wanted."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ragsift.domain.errors import RetrievalUnavailable
from ragsift.domain.filters import SearchFilter
from ragsift.domain.requests import HistoryMessage
from ragsift.domain.results import RankedList
from ragsift.domain.trace import ChannelRun, Degradation, QueryVariant, StageTrace
from ragsift.ports import QueryRewriter
from ragsift.retrieval.channels import ChannelOutcome, ChannelRunner, HitFilter
from ragsift.retrieval.chunk_languages import ChunkLanguages
from ragsift.retrieval.cross_lingual import CrossLingual, Language
from ragsift.retrieval.follow_up import FollowUp, contextual_query, follow_up
from ragsift.retrieval.options import Options
from ragsift.retrieval.stages import RewriteOutcome, StandaloneWriter, rewrite_stage


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


# (kb_id, query, KB version) -> the cross-lingual decision (None: not consulted)
CrossLingualDecider = Callable[[str, str, int | None], Awaitable[CrossLingual | None]]


@dataclass(frozen=True, slots=True)
class SecondDensePolicy:
    """Which queries search the second dense channel, and its fusion weight for them.

    `mixed_weight`: its weight for a query over a mixed KB, whose list then holds the
    other language's chunks only (None: a mixed KB is searched as any other)."""

    queries: Literal["cross-lingual", "all"]
    cross_lingual_weight: float
    other_weight: float
    mixed_weight: float | None = None

    def weight(self, cross: CrossLingual | None, requested: bool | None = None) -> float | None:
        """The channel's weight for a query with this decision; None: not searched.

        `requested`: the request's own choice (True: searched, False: not), else the policy."""
        if requested is False:
            return None
        if cross is not None and cross.target is not None:
            return self.cross_lingual_weight
        if self.language(cross) is not None:
            return self.mixed_weight
        return self.other_weight if requested or self.queries == "all" else None

    def language(self, cross: CrossLingual | None) -> Language | None:
        """The one language the channel's list keeps for this query (None: every chunk)."""
        if self.mixed_weight is None or cross is None or cross.target is not None:
            return None
        return cross.mixed


@dataclass(frozen=True, slots=True)
class Retrieved:
    """Every (variant x channel) list, its runs and the rewrite that added variants."""

    variants: tuple[QueryVariant, ...]
    lists: tuple[RankedList, ...]
    runs: tuple[ChannelRun, ...]
    degradations: tuple[Degradation, ...]
    rewrite: RewriteOutcome
    timings: tuple[tuple[str, float], ...]  # "rewrite" (when it was on), "channels"
    # the second dense channel's fusion weight for this query (None: it was not searched)
    second_dense_weight: float | None = None
    history: StageTrace = field(default_factory=StageTrace)

    @property
    def search_query(self) -> str:
        """What later stages (rerank) should read as the question: the standalone question
        or the contextual variant of a follow-up, else the query."""
        for method in ("standalone", "contextual"):  # the model's question first
            for variant in self.variants:
                if variant.method == method:
                    return variant.text
        return self.variants[0].text


class ChannelStage:
    """The original query's channels while the rewriter thinks, then the rewrite's channels."""

    def __init__(
        self, channels: ChannelRunner, rewriter: QueryRewriter | None, max_rewrite_chars: int,
        cross_lingual: CrossLingualDecider | None = None, translate: bool = True,
        second_dense: SecondDensePolicy | None = None,
        chunk_languages: ChunkLanguages | None = None, history_aware: bool = True,
    ) -> None:
        """`cross_lingual`: asked per search whether the query is in the KB's minority script;
        `translate`: then the one rewrite is a translation; `second_dense`: when the second
        dense channel runs (the runner's index must have one); `chunk_languages`: to keep
        the other language's chunks of its list in a mixed KB (without: the policy's mixed
        weight is not used)."""
        if max_rewrite_chars <= 0:
            raise ValueError(f"max_rewrite_chars must be positive, got {max_rewrite_chars}")
        self._channels = channels
        self._rewriter = rewriter
        self._max_rewrite_chars = max_rewrite_chars
        self._cross_lingual = cross_lingual
        self._translate = translate
        if second_dense is not None and chunk_languages is None:
            second_dense = replace(second_dense, mixed_weight=None)
        self._second_dense = second_dense if channels.has_second_dense else None
        self._chunk_languages = chunk_languages
        self._history_aware = history_aware

    def _start_second_dense(
        self, variants: list[tuple[str, str]], search_filter: SearchFilter, options: Options,
        cross: CrossLingual | None, pending: list[asyncio.Task[ChannelOutcome]],
    ) -> float | None:
        """Start the second dense channel for each (name, text) variant when the policy wants
        it (its lists kept to the other language's chunks in a mixed KB); its fusion weight,
        None when not searched."""
        if self._second_dense is None or options.mode == "sparse":
            return None
        weight = self._second_dense.weight(cross, options.second_dense)
        if weight is None:
            return None
        keep: HitFilter | None = None
        language = self._second_dense.language(cross)
        if language is not None and self._chunk_languages is not None:
            keep = functools.partial(self._chunk_languages.keep, language=language)
        for name, text in variants:
            pending.append(asyncio.create_task(self._channels.run_second_dense(
                name, text, search_filter, options.channel_k, keep)))
        return weight

    async def run(
        self, query: str, search_filter: SearchFilter, options: Options,
        history: Sequence[HistoryMessage] = (),
    ) -> Retrieved:
        """RetrievalUnavailable when every channel failed. With `history`, a follow-up is
        also searched as a standalone question (a rewriter that writes one) or with the terms
        of the question it continues (the contextual variant)."""
        stage = time.perf_counter()
        timings: list[tuple[str, float]] = []
        original = asyncio.create_task(self._channels.run(
            [("original", query)], search_filter, options.mode, options.channel_k
        ))
        found = follow_up(query, history) if history and self._history_aware else None
        # the rewrite switch decides whether the model is asked, as for any rewrite
        standalone = (found is not None and options.switches.rewrite
                      and isinstance(self._rewriter, StandaloneWriter))
        pending: list[asyncio.Task[ChannelOutcome]] = [original]
        try:
            cross = None if self._cross_lingual is None else await self._cross_lingual(
                search_filter.kb_id, query, search_filter.version_seq
            )
            # the contextual variant runs beside a standalone question too: together they
            # found more than the standalone question alone; and through the second dense
            # channel as the query does, or a follow-up in one language about a document in
            # the other loses what the query alone found (docs/quality.md, multi-turn)
            searched = [("original", query)]
            if found is not None:
                searched.append(("context", contextual_query(query, found)))
                pending.append(asyncio.create_task(self._channels.run(
                    searched[1:], search_filter, options.mode, options.channel_k)))
            weight = self._start_second_dense(searched, search_filter, options, cross, pending)
            rewrite = await rewrite_stage(
                self._rewriter, options.switches.rewrite, query, self._max_rewrite_chars,
                cross if self._translate else None, history if standalone else None,
            )
        except BaseException:
            for task in pending:
                task.cancel()
            raise
        if rewrite.trace.status != "off":
            timings.append(("rewrite", _ms(stage)))
        lists: list[RankedList] = []
        runs: list[ChannelRun] = []
        degradations: list[Degradation] = []
        for task in pending:
            _gather(await task, lists, runs, degradations)
        variants = [QueryVariant(text=query, method="original")]
        if found is not None:
            variants.append(QueryVariant(text=contextual_query(query, found),
                                         method="contextual"))
        if rewrite.degradation is not None:
            degradations.append(rewrite.degradation)
        if rewrite.variant is not None:
            variants.append(rewrite.variant)
            rewritten: list[Awaitable[ChannelOutcome]] = [self._channels.run(
                [("rewrite", rewrite.variant.text)], search_filter, options.mode,
                options.channel_k)]
            if rewrite.variant.method == "standalone" and weight is not None:
                # a standalone question reaches the other language's chunks as its follow-up did
                extra: list[asyncio.Task[ChannelOutcome]] = []
                self._start_second_dense([("rewrite", rewrite.variant.text)], search_filter,
                                         options, cross, extra)
                rewritten += extra
            for outcome in await asyncio.gather(*rewritten):
                _gather(outcome, lists, runs, degradations)
        timings.append(("channels", _ms(stage)))
        if not lists:
            reasons = "; ".join(
                d.reason for d in degradations if d.code.endswith("_retrieval_failed")
            )
            raise RetrievalUnavailable(f"every retrieval channel failed: {reasons}")
        return Retrieved(tuple(variants), tuple(lists), tuple(runs), tuple(degradations),
                         rewrite, tuple(timings), weight,
                         history_trace(history, found, standalone, rewrite))


def _gather(outcome: ChannelOutcome, lists: list[RankedList], runs: list[ChannelRun],
            degradations: list[Degradation]) -> None:
    lists += outcome.lists
    runs += outcome.runs
    degradations += outcome.degradations


def history_trace(
    history: Sequence[HistoryMessage], found: FollowUp | None, standalone: bool,
    rewrite: RewriteOutcome,
) -> StageTrace:
    """The history stage's record: off without a conversation, skipped for a message that
    stands alone, applied with the variants that carried the conversation: the contextual
    one, and the standalone question when the rewriter wrote one."""
    if not history:
        return StageTrace(status="off", reason="no conversation history")
    if found is None:
        return StageTrace(status="skipped", reason="the message stands alone (or no earlier "
                          "question to continue)")
    detail: dict[str, float | int | str] = {"follow_up": found.reason,
                                            "earlier_terms": found.terms}
    if not standalone:
        return StageTrace(status="applied", detail={**detail, "variant": "contextual"})
    if rewrite.variant is None:
        why = ("the standalone rewrite failed" if rewrite.degradation is not None
               else f"no standalone question: {rewrite.trace.reason}")
        return StageTrace(status="applied", reason=why,
                          detail={**detail, "variant": "contextual"})
    return StageTrace(status="applied",
                      detail={**detail, "variant": "standalone+contextual"})
