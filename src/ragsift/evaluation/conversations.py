"""Multi-turn evaluation: conversations whose turns are searched in order, with and without
their history, scored per turn position and for follow-ups (DESIGN section 8).

A conversations file is JSONL, one conversation a line:
`{"id", "lang"?, "turns": [{"query", "relevant": [document filename or key, ...],
"standalone"?, "dependent"?}, ...]}`. Relevance is judged per document: a turn's recall@k is the
share of its relevant documents among the first k distinct documents of its hits.

Each configuration searches every turn: `plain` as it stands, `history` with the earlier user
questions of its conversation (the contextual variant, no model), and `history-rewrite` with a
rewriter that writes the standalone question (when one is configured).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.requests import HistoryMessage, SearchRequest
from ragsift.domain.results import RetrievalHit, RetrievalResult
from ragsift.evaluation.bootstrap_ci import PairedInterval, paired_bootstrap
from ragsift.evaluation.datasets import jsonl_rows

CONFIGS = ("plain", "history", "history-rewrite")
Search = Callable[[SearchRequest], Awaitable[RetrievalResult]]
TOP_K = 20  # hits per turn: enough chunks for k distinct documents


@dataclass(frozen=True, slots=True)
class EvalTurn:
    query: str
    relevant: frozenset[str]
    standalone: str
    dependent: bool


@dataclass(frozen=True, slots=True)
class EvalConversation:
    id: str
    lang: str
    turns: tuple[EvalTurn, ...]


@dataclass(frozen=True, slots=True)
class TurnScore:
    conversation: str
    position: int  # 1 for the first turn
    dependent: bool
    recall: float
    documents: tuple[str, ...]  # the first k distinct documents


def _turn(row: dict[str, Any], where: str) -> EvalTurn:
    query, relevant = row.get("query"), row.get("relevant")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"{where}: a turn needs a non-empty 'query'")
    if (not isinstance(relevant, list) or not relevant
            or not all(isinstance(name, str) and name for name in relevant)):
        raise InvalidInput(f"{where}: 'relevant' must be a non-empty list of document names")
    standalone = row.get("standalone", query)
    return EvalTurn(query, frozenset(relevant), str(standalone), bool(row.get("dependent")))


def load_conversations(path: Path) -> list[EvalConversation]:
    """The conversations of a JSONL file; InvalidInput naming the line of a malformed one."""
    conversations: list[EvalConversation] = []
    for number, row in jsonl_rows(path):
        where = f"{path.name}:{number}"
        turns = row.get("turns")
        if not isinstance(turns, list) or not turns:
            raise InvalidInput(f"{where}: a conversation needs a non-empty 'turns' list")
        parsed = tuple(_turn(turn if isinstance(turn, dict) else {}, f"{where} turn {i}")
                       for i, turn in enumerate(turns, start=1))
        conversations.append(EvalConversation(str(row.get("id", number)),
                                              str(row.get("lang", "")), parsed))
    if not conversations:
        raise InvalidInput(f"{path}: no conversations")
    return conversations


def recall_at(hits: Sequence[RetrievalHit], relevant: frozenset[str], k: int
              ) -> tuple[float, tuple[str, ...]]:
    """Share of `relevant` documents (by filename) among the first k distinct documents."""
    documents = tuple(dict.fromkeys(hit.filename for hit in hits))[:k]
    return len(relevant & set(documents)) / len(relevant), documents


async def score_conversation(
    search: Search, kb_id: str, conversation: EvalConversation, config: str, k: int,
) -> list[TurnScore]:
    """Every turn of one conversation searched in order under `config`."""
    scores: list[TurnScore] = []
    history: list[HistoryMessage] = []
    for position, turn in enumerate(conversation.turns, start=1):
        request = SearchRequest(
            query=turn.query, kb_id=kb_id, top_k=TOP_K, run_faq=False, small2big=False,
            rerank=False, rewrite=config == "history-rewrite",
            history=tuple(history) if config != "plain" else (),
        )
        result = await search(request)
        recall, documents = recall_at(result.hits, turn.relevant, k)
        scores.append(TurnScore(conversation.id, position, turn.dependent, recall, documents))
        history.append(HistoryMessage(role="user", content=turn.query))
    return scores


def score_all(search: Search, kb_id: str, conversations: Sequence[EvalConversation],
              config: str, k: int) -> list[TurnScore]:
    async def run() -> list[TurnScore]:
        scores: list[TurnScore] = []
        for conversation in conversations:
            scores += await score_conversation(search, kb_id, conversation, config, k)
        return scores

    return asyncio.run(run())


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One group of turns (first turns, follow-ups, ...): mean recall per configuration and
    the paired interval of each configuration against `plain`."""

    group: str
    turns: int
    recall: dict[str, float]
    versus_plain: dict[str, PairedInterval]


GROUPS: tuple[tuple[str, Callable[[TurnScore], bool]], ...] = (
    ("first turns", lambda s: s.position == 1),
    ("follow-ups", lambda s: s.position > 1),
    ("dependent follow-ups", lambda s: s.position > 1 and s.dependent),
    ("standalone follow-ups", lambda s: s.position > 1 and not s.dependent),
    ("turn 2", lambda s: s.position == 2),
    ("turn 3+", lambda s: s.position >= 3),
)


def summarize(runs: dict[str, list[TurnScore]]) -> list[GroupRow]:
    """Rows per group of turns; the runs are paired by position (same conversations)."""
    rows: list[GroupRow] = []
    plain = runs["plain"]
    for name, keep in GROUPS:
        picked = [i for i, score in enumerate(plain) if keep(score)]
        if not picked:
            continue
        recall = {config: sum(scores[i].recall for i in picked) / len(picked)
                  for config, scores in runs.items()}
        versus = {
            config: paired_bootstrap([plain[i].recall for i in picked],
                                     [scores[i].recall for i in picked])
            for config, scores in runs.items() if config != "plain"
        }
        rows.append(GroupRow(name, len(picked), recall, versus))
    return rows


def to_markdown(rows: Sequence[GroupRow], k: int) -> str:
    configs = list(rows[0].recall) if rows else []
    head = ["turns", "n", *(f"{c} R@{k}" for c in configs),
            *(f"{c} - plain [95% CI]" for c in configs if c != "plain")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.group, str(row.turns), *(f"{row.recall[c]:.3f}" for c in configs),
                 *(row.versus_plain[c].label() for c in configs if c != "plain")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
