"""The consistency re-scoring as a post-fusion stage of RetrievalService (`rescorers`).

Off unless requested (the request's `consistency`, by default
RAGSIFT_CONSISTENCY_RESCORING). It changes the fusion scores of the
candidates it penalises and re-orders them; rerank, when it runs after it, orders by its own
scores, so the stage matters where no reranker is configured. The trace's detail lists the
penalised chunks with the spans that clashed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from ragsift.config import Settings
from ragsift.domain.trace import StageTrace
from ragsift.retrieval.candidates import Candidate, CandidateOutcome, StageContext, off
from ragsift.retrieval.consistency import Candidate as Scored
from ragsift.retrieval.consistency import ConsistencyRescorer, config_from_settings
from ragsift.retrieval.feedback import idf_from_stats

logger = logging.getLogger(__name__)

# (kb_id, terms) -> (documents, document frequency per term): the BM25 store's term_stats
TermStats = Callable[[str, Sequence[str]], tuple[int, dict[str, int]]]
_MAX_NOTES = 5  # penalised chunks named in the trace


class ConsistencyStage:
    """Penalises candidates whose numbers or one swapped word contradict the query."""

    name = "consistency"

    def __init__(self, settings: Settings, term_stats: TermStats | None = None) -> None:
        """`term_stats` gives the swap check the KB's idf; without it min_idf is not applied."""
        self._config = config_from_settings(settings)
        self._term_stats = term_stats

    async def run(
        self, query: str, candidates: Sequence[Candidate], context: StageContext
    ) -> CandidateOutcome:
        if not context.options.switches.consistency:
            return off(candidates, "not requested")
        rescorer = ConsistencyRescorer(self._config, self._idf(context.kb_id))
        result = rescorer.run(query, [Scored(str(i), c.chunk.text, c.fused.fusion_score)
                                      for i, c in enumerate(candidates)])
        ordered: list[Candidate] = []
        notes: list[str] = []
        for hit in result.candidates:
            candidate = candidates[int(hit.id)]
            if hit.notes:
                fused = candidate.fused.model_copy(update={"fusion_score": hit.score})
                candidate = replace(candidate, fused=fused)
                notes.append(candidate.chunk.id + ": " + ", ".join(
                    f"{n.kind} {n.query_span}->{n.candidate_span} -{n.penalty:g}"
                    for n in hit.notes))
            ordered.append(candidate)
        detail: dict[str, float | int | str] = {"penalised": result.penalised}
        if notes:
            detail["notes"] = "; ".join(notes[:_MAX_NOTES])
        return CandidateOutcome(tuple(ordered), StageTrace(status="applied", detail=detail))

    def _idf(self, kb_id: str) -> Callable[[str], float] | None:
        stats = self._term_stats
        if stats is None:
            return None

        def idf(word: str) -> float:
            try:
                documents, doc_freq = stats(kb_id, [word])
            except Exception:  # the idf only guards the swap check: without it, no swap
                logger.warning("BM25 term statistics unavailable for kb %s", kb_id,
                               exc_info=True)
                return 0.0
            return idf_from_stats(documents, doc_freq)(word)
        return idf
