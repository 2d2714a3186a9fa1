"""The candidates between fusion and the final hits, and the one interface of the stages that
re-order or re-score them (auto-merge, re-scorers, rerank): `run(query, candidates, context)`.

A new post-fusion stage is an object with a `name` and that `run`; RetrievalService runs its
`rescorers` after auto-merge and before rerank, records the stage's time under its name, its
degradation among the trace's degradations, and its StageTrace in the RetrievalTrace field of
the same name when the trace has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragsift.domain.models import Chunk
from ragsift.domain.results import FusedHit
from ragsift.domain.trace import Degradation, StageTrace
from ragsift.retrieval.options import Options


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fused candidate with its chunk (a parent after auto-merge) and rerank score."""

    fused: FusedHit
    chunk: Chunk
    filename: str
    merged_from: tuple[str, ...] = ()
    rerank_score: float | None = None

    @property
    def score(self) -> float:
        return self.fused.fusion_score if self.rerank_score is None else self.rerank_score


@dataclass(frozen=True, slots=True)
class StageContext:
    """What a candidate stage may read of the search; the same for every stage of it."""

    kb_id: str
    options: Options
    version: int | None  # the KB version searched (None: no versions)
    query_tokens: int  # the query's token count when rerank is wanted, else 0


@dataclass(frozen=True, slots=True)
class CandidateOutcome:
    """The candidates after a stage, in their new order, and what the stage did.

    `ran` False: the stage was off for this search (its time is not recorded).
    """

    candidates: tuple[Candidate, ...]
    trace: StageTrace
    degradation: Degradation | None = None
    ran: bool = True


class CandidateStage(Protocol):
    """A post-fusion stage: one typed entry point, configuration checked when it is built."""

    @property
    def name(self) -> str:
        """Its key in the trace's timings (and its trace field, where the trace has one)."""
        ...

    async def run(
        self, query: str, candidates: Sequence[Candidate], context: StageContext
    ) -> CandidateOutcome:
        """The candidates re-ordered or re-scored; a failure is a degradation, not a raise."""
        ...


def off(candidates: Sequence[Candidate], reason: str) -> CandidateOutcome:
    """The outcome of a stage that did not run: candidates unchanged."""
    return CandidateOutcome(tuple(candidates), StageTrace(status="off", reason=reason), ran=False)
