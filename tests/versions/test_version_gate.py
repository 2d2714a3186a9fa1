"""The quality gate: labelled queries against the candidate and the active version."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.domain.errors import InvalidInput
from ragsift.domain.versions import GateConfig, GateRefused, LabelledQuery
from ragsift.versions.gate import read_gate_queries
from versions.version_stack import Stack

LEAVE = "Employees get fifteen days of annual leave every year."
HOTEL = "The hotel limit per night is one hundred fifty dollars."
MEALS = "Meals on business trips are paid up to sixty dollars per day."

GATE = (
    LabelledQuery(query="annual leave days", relevant={"leave.txt": 1}),
    LabelledQuery(query="hotel limit per night", relevant={"hotel.txt": 1}),
)


def staged_with_gate(stack: Stack, max_drop: float = 0.0) -> tuple[Stack, str]:
    """A staged KB with leave and hotel active as version 1 and a gate; the leave doc id."""
    kb = stack.kb(mode="staged", retention=5,
                  gate=GateConfig(queries=GATE, k=3, max_drop=max_drop))
    leave = stack.add(kb, "leave.txt", LEAVE)
    stack.add(kb, "hotel.txt", HOTEL)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    return stack, leave


def test_the_gate_refuses_a_version_that_loses_recall_and_names_the_query(
    stack: Stack,
) -> None:
    staged_with_gate(stack)
    kb = stack.kb()
    leave = next(d.id for d in stack.repository.list_documents(kb.id)
                 if d.filename == "leave.txt")
    stack.ingestion.delete_document(leave)
    stack.versions.seal(kb)
    with pytest.raises(GateRefused, match=r"Recall@3 drops from 1\.0000 to 0\.5000") as refused:
        stack.versions.activate(kb, 2)
    report = refused.value.report
    assert (report.candidate_seq, report.active_seq, report.queries) == (2, 1, 2)
    assert (report.recall_active, report.recall_candidate) == (1.0, 0.5)
    assert [(d.query, d.recall_active, d.recall_candidate) for d in report.changed] == [
        ("annual leave days", 1.0, 0.0)]
    assert stack.versions.state(kb).active_seq == 1  # nothing switched
    forced = stack.versions.activate(kb, 2, force=True)
    assert forced.activated and forced.forced and forced.gate == report
    latest = stack.versions.activations(kb)[0]
    assert (latest.to_seq, latest.forced) == (2, True)
    assert latest.gate is not None and not latest.gate.passed


def test_a_drop_within_the_margin_passes_and_an_improvement_always_does(stack: Stack) -> None:
    staged_with_gate(stack, max_drop=0.5)
    kb = stack.kb()
    leave = next(d.id for d in stack.repository.list_documents(kb.id)
                 if d.filename == "leave.txt")
    stack.ingestion.delete_document(leave)
    stack.versions.seal(kb)
    outcome = stack.versions.activate(kb, 2)  # recall 1.0 -> 0.5: a drop of 0.5 is allowed
    assert outcome.gate is not None and outcome.gate.passed and not outcome.forced
    stack.add(kb, "leave-again.txt", LEAVE)
    stack.versions.seal(kb)
    report = stack.versions.check(kb, 3)
    assert report is not None and report.passed and report.recall_candidate >= 0.5


def test_in_auto_mode_a_refused_version_stays_sealed_but_inactive(stack: Stack) -> None:
    staged_with_gate(stack)
    kb = stack.kb(mode="auto")
    leave = next(d.id for d in stack.repository.list_documents(kb.id)
                 if d.filename == "leave.txt")
    stack.ingestion.delete_document(leave)  # publishing it would lose the leave query
    state = stack.versions.state(kb)
    assert state.active_seq == 1 and [v.seq for v in stack.versions.versions(kb)] == [1, 2]
    assert stack.search(kb, "annual leave days").hits[0].document_id == leave
    stack.add(kb, "meals.txt", MEALS)  # a harmless change on top: still without leave
    assert stack.versions.state(kb).active_seq == 1


def test_gate_queries_are_read_from_evaluation_jsonl_with_line_numbers(tmp_path: Path) -> None:
    good = tmp_path / "gate.jsonl"
    good.write_text('{"query": "annual leave", "relevant": {"leave.txt": 2}}\n\n'
                    '{"query": "hotel", "relevant": {"hotel.txt": 1, "old.txt": 0}}\n',
                    encoding="utf-8")
    assert read_gate_queries(good) == (
        LabelledQuery(query="annual leave", relevant={"leave.txt": 2}),
        LabelledQuery(query="hotel", relevant={"hotel.txt": 1, "old.txt": 0}),
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "a", "relevant": {"x": 1}}\n{"query": 3, "relevant": {}}\n',
                   encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad\.jsonl:2: field 'query' must be a string"):
        read_gate_queries(bad)
    unjudged = tmp_path / "unjudged.jsonl"
    unjudged.write_text('{"query": "a", "relevant": {"x": 0}}\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="no query has a relevant document"):
        read_gate_queries(unjudged)
