"""The debug page's evaluation view (issue 38): `ragsift eval --kb` on a KB's feedback export
and/or an uploaded labels JSONL, inside one request, per mode (hybrid, dense, sparse), with
paired-bootstrap intervals of each mode against hybrid.

The work is bounded: more labelled queries than RAGSIFT_WEB_EVAL_MAX_QUERIES are not run here
(the answer says so and names the CLI command); the query rewrite is off (no chat-model call
per query), the rest of the stages run as the settings say.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import DocumentStatus, KnowledgeBase
from ragsift.evaluation.bootstrap_ci import paired_by_query
from ragsift.evaluation.feedback_export import FeedbackExport, feedback_labels
from ragsift.evaluation.live_kb import evaluate_kb
from ragsift.evaluation.session import EvalOptions

MODES: tuple[Literal["hybrid", "dense", "sparse"], ...] = ("hybrid", "dense", "sparse")
METRICS = ("ndcg", "mrr", "recall", "precision")
BASELINE = "hybrid"
RESAMPLES = 2_000  # enough for a 95 % interval at this size, and quick inside a request
MAX_LABEL_LINES = 100_000  # an uploaded file longer than this is refused before parsing


@dataclass(frozen=True)
class ModeResult:
    mode: str
    config: str
    metrics: dict[str, float]
    chunk_metrics: dict[str, float]
    queries_scored: int
    latency_p50_ms: float | None
    # each metric's mean difference against hybrid, with its interval (None for hybrid)
    intervals: dict[str, dict[str, float | int | bool]] | None


@dataclass(frozen=True)
class WebEvaluation:
    ran: bool
    queries: int
    max_queries: int
    feedback_queries: int
    uploaded_queries: int
    skipped_feedback: int
    k: int
    baseline: str = BASELINE
    modes: list[ModeResult] = field(default_factory=list)
    command: str = ""


def feedback_export(container: Container, kb_id: str, owner: str | None) -> FeedbackExport:
    """The KB's rated answers as label lines (as `ragsift feedback export`), of `owner`'s
    conversations when a key asks (None: every conversation)."""
    records, _ = container.conversations.list_feedback(owner, kb_id)
    ready = {d.id for d in container.repository.list_documents(kb_id, DocumentStatus.READY)}
    named = {c for r in records for c in (*r.cited, *r.feedback.wrong_sources)}
    live = {c.id for c in container.repository.get_chunks(sorted(named))
            if c.kb_id == kb_id and c.document_id in ready}
    return feedback_labels(records, live)


def uploaded_lines(text: str) -> list[dict[str, Any]]:
    """The objects of an uploaded labels JSONL; InvalidInput names the bad line."""
    lines: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(lines) >= MAX_LABEL_LINES:
            raise InvalidInput(f"labels: more than {MAX_LABEL_LINES} lines")
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"labels line {number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(value, dict):
            raise InvalidInput(f"labels line {number}: expected a JSON object")
        lines.append(value)
    return lines


def _intervals(baseline: dict[str, dict[str, float]], candidate: dict[str, dict[str, float]],
               k: int) -> dict[str, dict[str, float | int | bool]]:
    out: dict[str, dict[str, float | int | bool]] = {}
    for metric in METRICS:
        key = f"{metric}@{k}"
        a = {q: v[key] for q, v in baseline.items() if key in v}
        b = {q: v[key] for q, v in candidate.items() if key in v}
        if not set(a) & set(b):
            continue
        found = paired_by_query(a, b, resamples=RESAMPLES)
        out[metric] = {"mean": round(found.mean, 6), "low": round(found.low, 6),
                       "high": round(found.high, 6), "queries": found.queries,
                       "significant": found.significant}
    return out


def _run(container: Container, kb: KnowledgeBase, lines: list[dict[str, Any]], k: int
         ) -> list[ModeResult]:
    with tempfile.TemporaryDirectory(prefix="ragsift-web-eval-") as folder:
        path = Path(folder) / "labels.jsonl"
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                        encoding="utf-8")
        try:
            reports = {mode: evaluate_kb(container, kb.name, path, EvalOptions(
                mode=mode, k=k, disable_rewrite=True)) for mode in MODES}
        except InvalidInput as exc:  # the temporary path means nothing to the caller
            raise InvalidInput(str(exc).replace(str(path), "labels")) from exc
    per_query: dict[str, dict[str, dict[str, float]]] = {
        mode: report.results[0].per_query for mode, report in reports.items()}
    results = []
    for mode, report in reports.items():
        result = report.results[0]
        results.append(ModeResult(
            mode=mode, config=result.config.name,
            metrics={m: round(result.means.get(f"{m}@{k}", 0.0), 6) for m in METRICS},
            chunk_metrics={m: round(result.chunk_means[f"{m}@{k}"], 6) for m in METRICS
                           if f"{m}@{k}" in result.chunk_means},
            queries_scored=len(result.per_query),
            latency_p50_ms=result.latency_ms(50),
            intervals=None if mode == BASELINE
            else _intervals(per_query[BASELINE], per_query[mode], k)))
    return results


def evaluate_for_page(
    container: Container, kb: KnowledgeBase, *, use_feedback: bool, labels: str | None,
    k: int, owner: str | None,
) -> WebEvaluation:
    """Score the KB per mode on its feedback export and/or `labels`, if small enough."""
    if not use_feedback and not (labels or "").strip():
        raise InvalidInput("nothing to evaluate: use the feedback, or upload labels")
    export = feedback_export(container, kb.id, owner) if use_feedback else FeedbackExport((), 0)
    uploaded = uploaded_lines(labels) if labels else []
    lines = [*export.lines, *uploaded]
    limit = container.settings.web_eval_max_queries
    evaluation = WebEvaluation(
        ran=False, queries=len(lines), max_queries=limit, feedback_queries=len(export.lines),
        uploaded_queries=len(uploaded), skipped_feedback=export.skipped, k=k,
        command=f"ragsift eval --kb {kb.name} --queries LABELS.jsonl --ablation")
    if not lines:
        raise InvalidInput("no labelled query: the feedback gave no label and no labels were "
                           f"uploaded ({export.skipped} rated answers gave no label)")
    if len(lines) > limit:
        return evaluation  # too big for a request: the page names the CLI command instead
    return WebEvaluation(**{**evaluation.__dict__, "ran": True,
                            "modes": _run(container, kb, lines, k)})
