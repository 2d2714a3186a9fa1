"""`ragsift eval --kb NAME --conversations FILE`: turns searched in order, alone and with their
history, scored per turn group with paired intervals; the set in tests/evaluation/data parses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.results import RetrievalHit
from ragsift.evaluation.conversations import load_conversations, recall_at
from retrieval.real_stack import DOCUMENTS
from support.cli import ragsift

SET = Path(__file__).with_name("data") / "conversations.jsonl"
CONVERSATIONS = [
    {"id": "leave", "turns": [{"query": "年假可以结转几天？", "relevant": ["expenses.md"]},
                              {"query": "需要提前多久申请？", "relevant": ["expenses.md"]}]},
    {"id": "hotel", "turns": [{"query": "What is the hotel limit per night?",
                               "relevant": ["handbook.md"]},
                              {"query": "And in Tokyo?", "relevant": ["handbook.md"]}]},
]


def test_the_bundled_multi_turn_set_has_60_follow_ups_in_each_language_group() -> None:
    conversations = load_conversations(SET)
    follow_ups = [(c.lang, t) for c in conversations for t in c.turns[1:]]
    assert len(follow_ups) >= 60
    assert sum(1 for lang, _ in follow_ups if lang == "zh") >= 30
    assert sum(1 for lang, _ in follow_ups if lang == "en") >= 30


def test_recall_counts_relevant_documents_among_the_first_k_distinct_documents() -> None:
    def hit(name: str) -> RetrievalHit:
        return RetrievalHit.model_construct(filename=name)

    hits = [hit("a"), hit("a"), hit("b"), hit("c"), hit("d")]
    assert recall_at(hits, frozenset({"c", "d"}), 3) == (0.5, ("a", "b", "c"))


def test_a_malformed_conversation_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x", "turns": [{"query": "q", "relevant": ["a"]}]}\n'
                    '{"id": "y", "turns": [{"query": "q"}]}\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad\.jsonl:2 turn 1: 'relevant'"):
        load_conversations(path)


def test_eval_conversations_reports_first_turns_and_follow_ups_with_intervals(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    container = build(Settings(data_dir=data, chunk_tokens=32, chunk_overlap_tokens=0))
    try:
        kb = container.ingestion.ensure_kb("policies")
        for name, text in DOCUMENTS.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
            container.ingestion.ingest_path(kb, tmp_path / name)
    finally:
        container.close()
    labels = tmp_path / "conversations.jsonl"
    labels.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CONVERSATIONS),
                      encoding="utf-8")
    env = {"RAGSIFT_CHUNK_TOKENS": "32", "RAGSIFT_CHUNK_OVERLAP_TOKENS": "0"}

    done = ragsift(data, "eval", "--kb", "policies", "--conversations", str(labels), "--json",
                   env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    groups = {group["group"]: group for group in report["groups"]}
    assert report["k"] == 3 and groups["follow-ups"]["turns"] == 2
    assert set(groups["first turns"]["recall"]) == {"plain", "history"}
    assert groups["follow-ups"]["recall"]["history"] == 1.0
    assert set(groups["follow-ups"]["versus_plain"]["history"]) == {"mean", "low", "high"}

    table = ragsift(data, "eval", "--kb", "policies", "--conversations", str(labels), env=env)
    assert table.returncode == 0 and "| follow-ups | 2 |" in table.stdout

    wrong = ragsift(data, "eval", "--conversations", str(labels), env=env)
    assert wrong.returncode == 2 and "--kb" in wrong.stderr
