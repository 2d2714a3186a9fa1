"""The debug page's evaluation view over HTTP (retrieval testing, issue 38).

`POST /api/kbs/{kb_id}/evaluation` scores the KB per mode (hybrid, dense, sparse) on its
feedback export and/or an uploaded labels JSONL and/or a labelled set stored with the KB
(routes_labelled_sets.py), as `ragsift eval --kb` does, with the
paired-bootstrap interval of each mode against hybrid. It runs inside the request only up to
RAGSIFT_WEB_EVAL_MAX_QUERIES labelled queries; a larger set answers `ran: false` and the CLI
command to run instead.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ragsift.api.auth import CurrentPrincipal
from ragsift.api.deps import State, require_kb
from ragsift.api.errors import ERROR_RESPONSES
from ragsift.evaluation.web_eval import evaluate_for_page

router = APIRouter(prefix="/api/kbs", tags=["knowledge bases"], responses=ERROR_RESPONSES)


class EvaluationBody(BaseModel):
    model_config = {"extra": "forbid"}

    feedback: bool = Field(default=True, description="score the KB's rated answers (the "
                           "calling key's conversations; every one when auth is off)")
    labels: str | None = Field(default=None, max_length=5_000_000, description="a labels "
                               "JSONL as `ragsift eval --kb --queries` reads it")
    set_id: str | None = Field(default=None, max_length=64, description="a labelled set "
                               "stored with the KB (GET /api/kbs/{kb_id}/labelled-sets)")
    k: int = Field(default=10, ge=1, le=100, description="the metrics' cut-off")


class ModeOut(BaseModel):
    mode: str
    config: str
    metrics: dict[str, float] = Field(description="ndcg, mrr, recall, precision at k")
    chunk_metrics: dict[str, float] = Field(description="the same on chunk labels")
    queries_scored: int
    latency_p50_ms: float | None
    intervals: dict[str, dict[str, Any]] | None = Field(
        description="per metric: mean difference against hybrid and its 95 % paired-"
                    "bootstrap interval (low, high), queries, significant; null for hybrid")


class EvaluationOut(BaseModel):
    ran: bool = Field(description="false: more queries than the server scores in a request")
    queries: int
    max_queries: int
    feedback_queries: int
    uploaded_queries: int
    skipped_feedback: int
    k: int
    baseline: str
    modes: list[ModeOut]
    command: str = Field(description="the CLI command for a larger set")
    labelled_set: str | None = Field(default=None, description="the stored set scored "
                                     "(its queries count as uploaded)")


@router.post("/{kb_id}/evaluation")
async def evaluate(
    kb_id: str, body: EvaluationBody, state: State, principal: CurrentPrincipal
) -> EvaluationOut:
    """Recall, MRR, nDCG and precision at k per mode, with intervals against hybrid."""
    container = state.container
    kb = await run_in_threadpool(require_kb, container, kb_id)
    labels = body.labels
    stored = None
    if body.set_id is not None:  # a stored set: scored with any uploaded labels
        stored = await run_in_threadpool(container.repository.get_labelled_set, kb.id,
                                         body.set_id)
        labels = "\n".join(text for text in (stored.labels, labels) if text)
    found = await run_in_threadpool(
        lambda: evaluate_for_page(container, kb, use_feedback=body.feedback,
                                  labels=labels, k=body.k, owner=principal.name))
    return EvaluationOut(
        ran=found.ran, queries=found.queries, max_queries=found.max_queries,
        feedback_queries=found.feedback_queries, uploaded_queries=found.uploaded_queries,
        skipped_feedback=found.skipped_feedback, k=found.k, baseline=found.baseline,
        modes=[ModeOut(**m.__dict__) for m in found.modes], command=found.command,
        labelled_set=None if stored is None else stored.name)
