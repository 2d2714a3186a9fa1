"""Feedback as eval labels: up -> cited chunks relevant (minus those marked wrong), down -> the
wrong sources judged not relevant with the user's words kept; FAQ citations, gone chunks and
turns with no label left are dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragsift.chat.feedback import resolve_sources, turn_feedback
from ragsift.domain.chat import Evidence, Turn
from ragsift.domain.errors import InvalidInput
from ragsift.domain.feedback import FeedbackRecord, TurnFeedback
from ragsift.domain.trace import RetrievalTrace
from ragsift.evaluation.feedback_export import feedback_labels

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(turn_id: str, rating: str, cited: tuple[str, ...], wrong: tuple[str, ...] = (),
            minutes: int = 0, **words: str) -> FeedbackRecord:
    return FeedbackRecord(
        conversation_id="c", turn_id=turn_id, kb_id="kb", question=f"q {turn_id}", answer="a",
        cited=cited, cited_faq=("faq1",), feedback=TurnFeedback(
            rating=rating, wrong_sources=wrong,  # type: ignore[arg-type]
            created_at=T0 + timedelta(minutes=minutes), **words))


def test_up_and_down_votes_map_to_graded_chunk_labels_in_feedback_order() -> None:
    export = feedback_labels([
        _record("t2", "down", ("a", "b"), ("b",), minutes=2, missing="the 2024 policy"),
        _record("t1", "up", ("a", "b", "gone"), ("b",), minutes=1, comment="ok"),
        _record("t3", "down", ("a",), minutes=3),  # no source marked: nothing to label
        _record("t4", "up", ("gone",), minutes=4),  # its only chunk is no longer READY
    ], live_chunks={"a", "b"})
    assert export.skipped == 2
    up, down = export.lines
    assert up["id"] == "feedback-t1" and up["query"] == "q t1" and up["comment"] == "ok"
    assert up["relevant"] == [{"chunk": "b", "grade": 0}, {"chunk": "a", "grade": 1}]
    assert down["relevant"] == [{"chunk": "b", "grade": 0}]
    assert (down["rating"], down["missing"], down["turn_id"]) == ("down", "the 2024 policy", "t2")


def _turn() -> Turn:
    evidence = tuple(Evidence(n=n, chunk_id=f"c{n}", document_id="d", filename="f.md",
                              text="x", score=0.5) for n in (1, 2))
    return Turn(id="t", conversation_id="c", question="q", evidence=evidence,
                trace=RetrievalTrace(request_id="r", kb_id="kb", query="q", mode="hybrid",
                                       fusion="rrf"),
                created_at=T0)


def test_wrong_sources_are_named_by_citation_number_or_chunk_id_and_must_be_the_turns() -> None:
    assert resolve_sources(_turn(), [2, "c1", "c2"]) == ("c2", "c1")
    with pytest.raises(InvalidInput, match=r"3, 'elsewhere' is not a source of turn 't' "
                       r"\(its sources: citation numbers 1\.\.2"):
        resolve_sources(_turn(), [3, "elsewhere"])
    feedback = turn_feedback(_turn(), "down", comment="  \x00  ", missing=" the table ")
    assert (feedback.comment, feedback.missing) == (None, "the table")
