"""The channel stage of a document search: the original query's channels, the one rewrite
(a translation for a cross-lingual query), and the second dense channel when it is wanted."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Literal

from ragsift.domain.errors import RetrievalUnavailable
from ragsift.domain.filters import SearchFilter
from ragsift.domain.results import RankedList
from ragsift.domain.trace import ChannelRun, Degradation, QueryVariant
from ragsift.ports import QueryRewriter
from ragsift.retrieval.channels import ChannelOutcome, ChannelRunner, HitFilter
from ragsift.retrieval.chunk_languages import ChunkLanguages
from ragsift.retrieval.cross_lingual import CrossLingual, Language
from ragsift.retrieval.options import Options
from ragsift.retrieval.stages import RewriteOutcome, rewrite_stage


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


class ChannelStage:
    """The original query's channels while the rewriter thinks, then the rewrite's channels."""

    def __init__(
        self, channels: ChannelRunner, rewriter: QueryRewriter | None, max_rewrite_chars: int,
        cross_lingual: CrossLingualDecider | None = None, translate: bool = True,
        second_dense: SecondDensePolicy | None = None,
        chunk_languages: ChunkLanguages | None = None,
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

    async def run(self, query: str, search_filter: SearchFilter, options: Options) -> Retrieved:
        """RetrievalUnavailable when every channel failed."""
        stage = time.perf_counter()
        timings: list[tuple[str, float]] = []
        original = asyncio.create_task(self._channels.run(
            [("original", query)], search_filter, options.mode, options.channel_k
        ))
        second: asyncio.Task[ChannelOutcome] | None = None
        weight: float | None = None
        try:
            cross = None if self._cross_lingual is None else await self._cross_lingual(
                search_filter.kb_id, query, search_filter.version_seq
            )
            keep: HitFilter | None = None
            if self._second_dense is not None and options.mode != "sparse":
                weight = self._second_dense.weight(cross, options.second_dense)
                language = self._second_dense.language(cross)
                if language is not None and self._chunk_languages is not None:
                    keep = functools.partial(self._chunk_languages.keep, language=language)
            if weight is not None:
                second = asyncio.create_task(self._channels.run_second_dense(
                    "original", query, search_filter, options.channel_k, keep))
            rewrite = await rewrite_stage(
                self._rewriter, options.switches.rewrite, query, self._max_rewrite_chars,
                cross if self._translate else None,
            )
        except BaseException:
            original.cancel()
            if second is not None:
                second.cancel()
            raise
        if rewrite.trace.status != "off":
            timings.append(("rewrite", _ms(stage)))
        outcome = await original
        lists, runs, degradations = outcome.lists, outcome.runs, outcome.degradations
        if second is not None:
            extra = await second
            lists += extra.lists
            runs += extra.runs
            degradations += extra.degradations
        variants = [QueryVariant(text=query, method="original")]
        if rewrite.degradation is not None:
            degradations.append(rewrite.degradation)
        if rewrite.variant is not None:
            variants.append(rewrite.variant)
            extra = await self._channels.run(
                [("rewrite", rewrite.variant.text)], search_filter, options.mode,
                options.channel_k,
            )
            lists += extra.lists
            runs += extra.runs
            degradations += extra.degradations
        timings.append(("channels", _ms(stage)))
        if not lists:
            reasons = "; ".join(
                d.reason for d in degradations if d.code.endswith("_retrieval_failed")
            )
            raise RetrievalUnavailable(f"every retrieval channel failed: {reasons}")
        return Retrieved(tuple(variants), tuple(lists), tuple(runs), tuple(degradations),
                         rewrite, tuple(timings), weight)
