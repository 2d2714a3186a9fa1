"""Auto-merge: threshold, rank position and score of the parent, multi-level merging."""

from __future__ import annotations

import asyncio

import pytest

from ragsift.domain.models import Chunk
from ragsift.retrieval.auto_merge import Candidate, Merged, auto_merge, candidate


def node(chunk_id: str, parent: str | None, level: int) -> Chunk:
    return Chunk(
        id=chunk_id,
        document_id="d1",
        kb_id="kb1",
        parent_id=parent,
        level=level,
        ordinal=0,
        text=chunk_id,
        token_count=1,
    )


# Two levels, as the chunker writes them today: parents P and Q (level 0).
TWO_LEVELS = {"P": node("P", None, 0), "Q": node("Q", None, 0)}


def cand(chunk_id: str, parent: str | None, score: float, level: int = 1) -> Candidate:
    return Candidate(chunk_id=chunk_id, parent_id=parent, level=level, score=score)


def order(merged: list[Merged]) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(m.chunk_id, m.score, m.merged_from) for m in merged]


def test_parent_replaces_two_children_at_the_best_childs_position() -> None:
    candidates = [cand("p1", "P", 0.9), cand("x", "Q", 0.8), cand("p2", "P", 0.7)]
    assert order(auto_merge(candidates, TWO_LEVELS, threshold=2)) == [
        ("P", 0.9, ("p1", "p2")),
        ("x", 0.8, ()),
    ]


def test_later_hits_move_up_when_children_leave_the_list() -> None:
    candidates = [
        cand("a", "Q", 0.95), cand("p1", "P", 0.9), cand("p2", "P", 0.8), cand("b", None, 0.5),
    ]
    merged = auto_merge(candidates, TWO_LEVELS, threshold=2)
    assert [m.chunk_id for m in merged] == ["a", "P", "b"]


def test_merged_parent_keeps_the_best_child_score() -> None:
    # a reranked list may hold a lower score first; the best score still goes to the parent
    candidates = [cand("p1", "P", 0.4), cand("p2", "P", 0.6)]
    [merged] = auto_merge(candidates, TWO_LEVELS, threshold=2)
    assert (merged.chunk_id, merged.score, merged.level) == ("P", 0.6, 0)
    assert merged.is_merged


def test_below_threshold_nothing_merges_and_ranking_is_unchanged() -> None:
    candidates = [cand("p1", "P", 0.9), cand("q1", "Q", 0.8), cand("p2", "P", 0.7)]
    merged = auto_merge(candidates, TWO_LEVELS, threshold=3)
    assert order(merged) == [("p1", 0.9, ()), ("q1", 0.8, ()), ("p2", 0.7, ())]
    assert not any(m.is_merged for m in merged)


def test_exactly_threshold_children_merge() -> None:
    candidates = [cand(f"p{i}", "P", 1 - i / 10) for i in range(3)]
    assert [m.chunk_id for m in auto_merge(candidates, TWO_LEVELS, threshold=3)] == ["P"]
    assert [m.chunk_id for m in auto_merge(candidates[:2], TWO_LEVELS, threshold=3)] == [
        "p0", "p1",
    ]


def test_threshold_one_replaces_every_child_with_its_parent() -> None:
    candidates = [cand("p1", "P", 0.9), cand("q1", "Q", 0.8), cand("p2", "P", 0.7)]
    assert order(auto_merge(candidates, TWO_LEVELS, threshold=1)) == [
        ("P", 0.9, ("p1", "p2")),
        ("Q", 0.8, ("q1",)),
    ]


def test_threshold_below_one_is_rejected() -> None:
    with pytest.raises(ValueError):
        auto_merge([], TWO_LEVELS, threshold=0)


def test_parent_missing_from_the_mapping_never_merges() -> None:
    candidates = [cand("r1", "R", 0.9), cand("r2", "R", 0.8)]
    assert [m.chunk_id for m in auto_merge(candidates, TWO_LEVELS, threshold=2)] == ["r1", "r2"]


def test_several_parents_merge_independently() -> None:
    candidates = [
        cand("q1", "Q", 0.9), cand("p1", "P", 0.8), cand("q2", "Q", 0.7), cand("p2", "P", 0.6),
    ]
    assert order(auto_merge(candidates, TWO_LEVELS, threshold=2)) == [
        ("Q", 0.9, ("q1", "q2")),
        ("P", 0.8, ("p1", "p2")),
    ]


def test_parent_already_among_candidates_is_not_duplicated() -> None:
    candidates = [cand("p1", "P", 0.9), cand("P", None, 0.95, level=0), cand("p2", "P", 0.7)]
    assert order(auto_merge(candidates, TWO_LEVELS, threshold=2)) == [("P", 0.95, ("p1", "p2"))]


def test_repeated_candidate_keeps_its_first_position() -> None:
    candidates = [cand("p1", "P", 0.9), cand("p1", "P", 0.9), cand("x", "Q", 0.5)]
    merged = auto_merge(candidates, TWO_LEVELS, threshold=2)
    assert [m.chunk_id for m in merged] == ["p1", "x"]


# Three levels: A (0) > B1, B2 (1) > c1..c4 (2).
THREE_LEVELS = {
    "A": node("A", None, 0),
    "B1": node("B1", "A", 1),
    "B2": node("B2", "A", 1),
}


def test_levels_merge_bottom_up_into_the_grandparent() -> None:
    candidates = [
        cand("c1", "B1", 0.9, level=2),
        cand("x", None, 0.85, level=0),
        cand("c3", "B2", 0.8, level=2),
        cand("c2", "B1", 0.7, level=2),
        cand("c4", "B2", 0.6, level=2),
    ]
    merged = auto_merge(candidates, THREE_LEVELS, threshold=2)
    assert order(merged) == [("A", 0.9, ("c1", "c3", "c2", "c4")), ("x", 0.85, ())]
    assert merged[0].level == 0
    assert merged[0].parent_id is None


def test_upper_level_counts_merged_parents_and_direct_candidates_as_children() -> None:
    candidates = [
        cand("c1", "B1", 0.9, level=2),
        cand("B2", "A", 0.8, level=1),
        cand("c2", "B1", 0.7, level=2),
    ]
    assert order(auto_merge(candidates, THREE_LEVELS, threshold=2)) == [
        ("A", 0.9, ("c1", "B2", "c2")),
    ]


def test_upper_level_stays_when_only_one_child_merged() -> None:
    candidates = [
        cand("c1", "B1", 0.9, level=2),
        cand("c3", "B2", 0.8, level=2),
        cand("c2", "B1", 0.7, level=2),
    ]
    merged = auto_merge(candidates, THREE_LEVELS, threshold=2)
    # B1 forms; c3 is a level-2 chunk, not a child of A, so A does not
    assert order(merged) == [("B1", 0.9, ("c1", "c2")), ("c3", 0.8, ())]
    assert (merged[0].level, merged[0].parent_id) == (1, "A")


def test_candidate_is_built_from_a_chunk_and_its_score() -> None:
    chunk = node("c1", "B1", 2)
    assert candidate(chunk, 0.5) == Candidate(chunk_id="c1", parent_id="B1", level=2, score=0.5)


def test_no_candidates_merge_to_nothing() -> None:
    assert auto_merge([], TWO_LEVELS, threshold=2) == []


# The chunker's three levels: section S (-1) > parents P1, P2 (0) > children (1).
SECTIONED = {
    "S": Chunk(id="S", document_id="d1", kb_id="kb1", parent_id=None, level=-1, ordinal=0,
               text="S", token_count=300),
    "P1": node("P1", "S", 0),
    "P2": node("P2", "S", 0),
}
SECTIONED_CANDIDATES = [
    cand("a", "P1", 0.9), cand("b", "P2", 0.8), cand("c", "P1", 0.7), cand("d", "P2", 0.6),
]


def test_a_section_threshold_of_zero_stops_the_climb_at_the_parents() -> None:
    merged = auto_merge(SECTIONED_CANDIDATES, SECTIONED, threshold=2,
                        level_thresholds={0: 2, -1: 0})
    assert order(merged) == [("P1", 0.9, ("a", "c")), ("P2", 0.8, ("b", "d"))]


def test_parents_merge_into_their_section_at_the_section_threshold() -> None:
    merged = auto_merge(SECTIONED_CANDIDATES, SECTIONED, threshold=2,
                        level_thresholds={0: 2, -1: 2})
    assert order(merged) == [("S", 0.9, ("a", "b", "c", "d"))]
    assert merged[0].level == -1
    # the section's threshold is its own: three parents are needed, two are there
    merged = auto_merge(SECTIONED_CANDIDATES, SECTIONED, threshold=2,
                        level_thresholds={0: 2, -1: 3})
    assert [m.chunk_id for m in merged] == ["P1", "P2"]


def test_a_parent_over_the_context_budget_is_never_merged_into() -> None:
    merged = auto_merge(SECTIONED_CANDIDATES, SECTIONED, threshold=2,
                        level_thresholds={0: 2, -1: 2}, max_tokens=200)
    assert [m.chunk_id for m in merged] == ["P1", "P2"]
    merged = auto_merge(SECTIONED_CANDIDATES, SECTIONED, threshold=2, max_tokens=0)
    assert [m.chunk_id for m in merged] == ["a", "b", "c", "d"]


def test_sole_children_of_two_parents_count_as_their_parents_for_the_section() -> None:
    sole = [Candidate("a", "P1", 1, 0.9, whole=True), cand("x", "Q", 0.85),
            Candidate("b", "P2", 1, 0.8, whole=True)]
    parents = {**SECTIONED, "Q": node("Q", None, 0)}
    merged = auto_merge(sole, parents, threshold=2, level_thresholds={0: 2, -1: 2})
    assert order(merged) == [("S", 0.9, ("a", "b")), ("x", 0.85, ())]
    # without the section merge, each sole child stays itself (not its same-text parent)
    merged = auto_merge(sole, parents, threshold=2, level_thresholds={0: 2, -1: 0})
    assert order(merged) == [("a", 0.9, ()), ("x", 0.85, ()), ("b", 0.8, ())]


class _Neighbours:
    """Only what Small2Big reads of a repository: a hit's neighbours."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self._chunks = chunks

    def get_neighbours(self, hits: object, window: int) -> list[Chunk]:
        return self._chunks


def test_small2big_spends_its_budget_on_merged_parents_first() -> None:
    from ragsift.config import Settings
    from ragsift.domain.requests import SearchRequest
    from ragsift.domain.results import FusedHit
    from ragsift.retrieval.candidates import Candidate as Found
    from ragsift.retrieval.document_stages import Small2BigStage
    from ragsift.retrieval.options import resolve_options

    def chunk(chunk_id: str, parent: str | None, level: int, ordinal: int, tokens: int) -> Chunk:
        return Chunk(id=chunk_id, document_id="d1", kb_id="kb1", parent_id=parent, level=level,
                     ordinal=ordinal, text=chunk_id, token_count=tokens)

    def found(item: Chunk, merged_from: tuple[str, ...] = ()) -> Found:
        fused = FusedHit(chunk_id=item.id, document_id="d1", fusion_score=0.5, best_rank=1,
                         ranks={}, scores={}, retrieval_sources=())
        return Found(fused, item, "f.md", merged_from)

    merged = found(chunk("P", None, 0, 0, 90), ("p1", "p2"))
    hit = chunk("q1", "Q", 1, 5, 5)
    neighbour = chunk("q2", "Q", 1, 6, 10)
    options = resolve_options(SearchRequest(query="q", kb_id="kb1", small2big=True),
                              Settings(small2big_budget_tokens=100))
    stage = Small2BigStage(_Neighbours([neighbour]))  # type: ignore[arg-type]
    alone = asyncio.run(stage.run([found(hit)], options, None))
    assert alone.expansions["q1"].context_chunk_ids == ("q1", "q2")
    # the merged parent's 90 tokens leave 5 after the hit: the 10-token neighbour stays out
    beside = asyncio.run(stage.run([merged, found(hit)], options, None))
    assert beside.expansions["q1"].context_chunk_ids == ("q1",)
