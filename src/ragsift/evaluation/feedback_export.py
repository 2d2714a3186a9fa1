"""Feedback as evaluation labels: each rated turn becomes a line `ragsift eval --kb --queries`
reads (evaluation/kb_labels.py).

The mapping, per rated turn of the KB:
- up: every chunk the answer cited is relevant (grade 1), except those the user marked wrong
  (grade 0);
- down: the sources marked wrong are judged not relevant (grade 0); the other cited chunks are
  left unjudged (a down vote does not say they were right). Such a line is loaded but not
  scored until someone adds the right document to `relevant`; its `missing` and `comment`
  say what to look for.
FAQ citations are not chunks and are left out; a chunk that is no longer in a READY document
of the KB is left out too (the eval run would fail on it). A turn left with no label is
skipped and counted. Each line keeps the user's words (`rating`, `comment`, `missing`) and
where they came from (`conversation_id`, `turn_id`); the eval loader ignores those fields.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from ragsift.domain.feedback import FeedbackRecord


@dataclass(frozen=True, slots=True)
class FeedbackExport:
    """The label lines, and how many rated turns gave no label."""

    lines: tuple[dict[str, Any], ...]
    skipped: int


def feedback_line(record: FeedbackRecord, live_chunks: Collection[str]
                  ) -> dict[str, Any] | None:
    """The label line of one rated turn, or None when it gives no label."""
    feedback = record.feedback
    wrong = [c for c in feedback.wrong_sources if c in live_chunks]
    relevant: list[dict[str, Any]] = [{"chunk": c, "grade": 0} for c in wrong]
    if feedback.rating == "up":
        relevant += [{"chunk": c, "grade": 1} for c in dict.fromkeys(record.cited)
                     if c in live_chunks and c not in feedback.wrong_sources]
    if not relevant:
        return None
    line: dict[str, Any] = {
        "id": f"feedback-{record.turn_id}", "query": record.question, "relevant": relevant,
        "rating": feedback.rating, "conversation_id": record.conversation_id,
        "turn_id": record.turn_id,
    }
    if feedback.comment:
        line["comment"] = feedback.comment
    if feedback.missing:
        line["missing"] = feedback.missing
    return line


def feedback_labels(records: Iterable[FeedbackRecord], live_chunks: Collection[str]
                    ) -> FeedbackExport:
    """Every rated turn's label line, oldest feedback first."""
    ordered = sorted(records, key=lambda r: (r.feedback.created_at, r.turn_id))
    lines = [feedback_line(record, live_chunks) for record in ordered]
    kept = tuple(line for line in lines if line is not None)
    return FeedbackExport(kept, len(lines) - len(kept))
