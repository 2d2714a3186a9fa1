"""Small2Big planning: window, budget, ties, the parentless rule and overlap removal."""

from __future__ import annotations

from itertools import pairwise

import pytest

from ragsift.domain.models import Chunk, Locator
from ragsift.ingestion.chunking import Chunker, estimate_tokens
from ragsift.ingestion.parsers.base import ParsedDocument, Section
from ragsift.retrieval.expansion import (
    SEPARATOR,
    Expansion,
    join_texts,
    overlap_length,
    plan_expansion,
)


def child(
    ordinal: int,
    tokens: int = 10,
    parent: str | None = "p0",
    doc: str = "d1",
    text: str | None = None,
    heading: tuple[str, ...] = ("Guide",),
    page: int | None = 1,
    level: int = 1,
    **locator: object,
) -> Chunk:
    return Chunk(
        id=f"{doc}-{level}-{ordinal}",
        document_id=doc,
        kb_id="kb1",
        parent_id=parent,
        level=level,
        ordinal=ordinal,
        heading_path=heading,
        locator=Locator(page=page, **locator),  # type: ignore[arg-type]
        text=text if text is not None else f"T{ordinal}.",
        token_count=tokens,
    )


def ids(*ordinals: int, doc: str = "d1") -> tuple[str, ...]:
    return tuple(f"{doc}-1-{o}" for o in ordinals)


ROW = [child(o) for o in range(10)]


def test_window_one_adds_previous_and_next_and_keeps_the_hit_as_citation() -> None:
    [plan] = plan_expansion([ROW[5]], ROW, window=1, budget_tokens=1536)
    assert plan.chunk_id == ROW[5].id
    assert plan.context_chunk_ids == ids(4, 5, 6)
    assert plan.text == SEPARATOR.join(["T4.", "T5.", "T6."])
    assert plan.token_count == 30


def test_window_two_reaches_two_ordinals_each_side() -> None:
    [plan] = plan_expansion([ROW[5]], ROW, window=2, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(3, 4, 5, 6, 7)


def test_window_zero_returns_the_hit_alone_with_its_own_text() -> None:
    [plan] = plan_expansion([ROW[5]], ROW, window=0, budget_tokens=1536)
    assert plan == Expansion(ROW[5].id, ids(5), "T5.", 10)


def test_budget_prefers_the_previous_neighbour_on_a_distance_tie() -> None:
    # 10 own + 10 left: exactly one neighbour fits, the previous one wins the tie
    [plan] = plan_expansion([ROW[5]], ROW, window=1, budget_tokens=20)
    assert plan.context_chunk_ids == ids(4, 5)


def test_budget_takes_nearer_neighbours_before_farther_ones() -> None:
    # 10 own + 20 left: both distance-1 neighbours, none at distance 2
    [plan] = plan_expansion([ROW[5]], ROW, window=2, budget_tokens=30)
    assert plan.context_chunk_ids == ids(4, 5, 6)


def test_hit_text_is_never_dropped_even_over_budget() -> None:
    big = child(5, tokens=2000)
    [plan] = plan_expansion([big], [*ROW[:5], *ROW[6:]], window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == (big.id,)
    assert plan.token_count == 2000


def test_every_hit_is_charged_first_then_neighbours_go_in_rank_order() -> None:
    hits = [ROW[2], ROW[7]]
    # own text 20, 20 left: hit 1 (rank 1) takes both of its neighbours, hit 2 gets none
    plans = plan_expansion(hits, ROW, window=1, budget_tokens=40)
    assert [p.context_chunk_ids for p in plans] == [ids(1, 2, 3), ids(7)]
    reversed_plans = plan_expansion(hits[::-1], ROW, window=1, budget_tokens=40)
    assert [p.context_chunk_ids for p in reversed_plans] == [ids(6, 7, 8), ids(2)]


def test_a_neighbour_that_does_not_fit_is_skipped_and_a_smaller_later_one_is_taken() -> None:
    chunks = [child(0, tokens=10), child(1, tokens=10), child(2, tokens=50), child(9, tokens=5)]
    hits = [chunks[1], child(10, tokens=10)]
    # own 20, 15 left: hit 1's previous (10) fits, its next (50) does not; hit 2's previous fits
    plans = plan_expansion(hits, chunks, window=1, budget_tokens=35)
    assert [p.context_chunk_ids for p in plans] == [ids(0, 1), ids(9, 10)]


def test_a_direction_stops_at_the_first_neighbour_that_does_not_fit() -> None:
    chunks = [child(3, tokens=1), child(4, tokens=100), child(6, tokens=1)]
    [plan] = plan_expansion([ROW[5]], chunks, window=2, budget_tokens=20)
    # 4 is too big, so 3 would leave a gap: context stays contiguous
    assert plan.context_chunk_ids == ids(5, 6)


def test_hits_and_neighbours_are_counted_once_across_the_answer() -> None:
    # 4 and 5 are both hits: neither takes the other as a neighbour, and 6 goes to hit 5 only once
    plans = plan_expansion([ROW[5], ROW[4], ROW[7]], ROW, window=1, budget_tokens=1536)
    assert [p.context_chunk_ids for p in plans] == [ids(5, 6), ids(3, 4), ids(7, 8)]
    chunk_ids = [c for p in plans for c in p.context_chunk_ids]
    assert len(chunk_ids) == len(set(chunk_ids))


def test_expansion_keeps_rank_order_and_never_changes_the_cited_chunk() -> None:
    hits = [ROW[8], ROW[1], ROW[5]]
    plans = plan_expansion(hits, ROW, window=1, budget_tokens=1536)
    assert [p.chunk_id for p in plans] == [h.id for h in hits]
    assert all(p.chunk_id in p.context_chunk_ids for p in plans)


def test_neighbours_stay_inside_the_same_parent() -> None:
    chunks = [child(4, parent="p0"), child(5, parent="p0"), child(6, parent="p1")]
    [plan] = plan_expansion([chunks[1]], chunks, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(4, 5)


def test_neighbours_stay_inside_the_same_document() -> None:
    other = child(6, doc="d2")
    [plan] = plan_expansion([ROW[5]], [ROW[4], other], window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(4, 5)


def test_parentless_chunk_expands_when_heading_and_page_match() -> None:
    row = [child(o, parent=None, page=3) for o in range(3)]
    [plan] = plan_expansion([row[1]], row, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(0, 1, 2)


def test_parentless_chunk_does_not_cross_a_heading_change() -> None:
    row = [child(0, parent=None, heading=("A",)), child(1, parent=None), child(2, parent=None)]
    [plan] = plan_expansion([row[1]], row, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(1, 2)


@pytest.mark.parametrize(
    ("hit_locator", "other_locator"),
    [
        ({"page": 1}, {"page": 2}),
        ({"page": None, "sheet": "Q1"}, {"page": None, "sheet": "Q2"}),
        ({"page": None, "slide": 4}, {"page": None, "slide": 5}),
    ],
    ids=["page", "sheet", "slide"],
)
def test_parentless_chunk_does_not_cross_a_locator_boundary(
    hit_locator: dict[str, object], other_locator: dict[str, object]
) -> None:
    hit = child(1, parent=None, **hit_locator)  # type: ignore[arg-type]
    other = child(2, parent=None, **other_locator)  # type: ignore[arg-type]
    [plan] = plan_expansion([hit], [other], window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(1)


def test_parentless_chunk_ignores_cell_range_within_one_sheet() -> None:
    hit = child(1, parent=None, page=None, sheet="Q1", cell_range="A1:B9")
    other = child(2, parent=None, page=None, sheet="Q1", cell_range="A10:B19")
    [plan] = plan_expansion([hit], [other], window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(1, 2)


def test_parentless_rule_does_not_apply_to_children_of_a_parent() -> None:
    # same parent: a page break inside a section does not stop expansion
    chunks = [child(4, page=1), child(5, page=2)]
    [plan] = plan_expansion([chunks[1]], chunks, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ids(4, 5)


def test_a_parentless_chunk_never_takes_a_child_as_neighbour() -> None:
    hit = child(5, parent=None, level=0)
    [plan] = plan_expansion([hit], ROW, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == (hit.id,)


def test_overlapping_sentences_between_consecutive_children_are_joined_once() -> None:
    chunks = [
        child(4, text="First one. Second one."),
        child(5, text="Second one. Third one."),
        child(6, text="Third one. Fourth one."),
    ]
    [plan] = plan_expansion([chunks[1]], chunks, window=1, budget_tokens=1536)
    assert plan.text == "First one. Second one. Third one. Fourth one."


def test_chinese_overlap_is_removed_without_a_separator() -> None:
    assert join_texts(["甲句。乙句。", "乙句。丙句。"]) == "甲句。乙句。丙句。"


def test_overlap_ending_a_paragraph_keeps_the_paragraph_break() -> None:
    assert join_texts(["A one. B two.", "B two.\n\nC three."]) == "A one. B two.\n\nC three."


def test_longest_overlap_wins() -> None:
    assert overlap_length("X. A. A.", "A. A. B.") == len("A. A.")


def test_a_chance_match_inside_a_word_is_not_an_overlap() -> None:
    assert overlap_length("big data", "apple pie") == 0
    assert join_texts(["big data", "apple pie"]) == "big data" + SEPARATOR + "apple pie"


def test_texts_without_overlap_are_joined_with_the_separator() -> None:
    assert join_texts(["One.", "Two."]) == "One." + SEPARATOR + "Two."
    assert join_texts([]) == ""


def test_invalid_window_or_budget_is_rejected() -> None:
    with pytest.raises(ValueError):
        plan_expansion([ROW[1]], ROW, window=-1, budget_tokens=10)
    with pytest.raises(ValueError):
        plan_expansion([ROW[1]], ROW, window=1, budget_tokens=-1)


def test_no_hits_plan_nothing() -> None:
    assert plan_expansion([], ROW, window=1, budget_tokens=1536) == []


class _EstimatingTokenizer:
    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)


def test_joining_a_parents_children_from_the_chunker_rebuilds_the_parent_text() -> None:
    sentences = [
        f"Step {n} checks the valve. " if n % 2 else f"第{n}步检查阀门。" for n in range(40)
    ]
    text = "".join(sentences[:20]) + "\n\n" + "".join(sentences[20:])
    section = Section(heading_path=("Guide",), text=text, locator=Locator(page=1))
    chunker = Chunker(_EstimatingTokenizer(), chunk_tokens=40, overlap_tokens=12)
    parsed = ParsedDocument(media_type="text/plain", sections=(section,))
    chunks = chunker.chunk("d1", "kb1", parsed)
    [parent] = [c for c in chunks if c.level == 0]
    children = [c for c in chunks if c.level == 1]
    assert len(children) > 2
    assert all(overlap_length(a.text, b.text) > 0 for a, b in pairwise(children))
    [plan] = plan_expansion([children[1]], children, window=len(children), budget_tokens=10**6)
    assert plan.context_chunk_ids == tuple(c.id for c in children)
    assert plan.text == parent.text
