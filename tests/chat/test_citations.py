"""Citation links checked against the evidence snapshot: kept, normalised or removed, never
remapped; exact expected texts."""

from __future__ import annotations

import pytest

from chat.chat_factories import evidence
from ragsift.chat.citations import CitedAnswer, strip_citations, validate_citations

EVIDENCE = [evidence(1), evidence(2), evidence(3)]


def _cited(text: str) -> tuple[str, list[int]]:
    checked = validate_citations(text, EVIDENCE)
    return checked.answer, [c.n for c in checked.citations]


def test_valid_links_stay_and_cite_each_evidence_once_in_first_cited_order() -> None:
    text = ("Limit is 150 [2](citation://2). London 220 [3](citation://3)[2](citation://2). "
            "Keep invoices [2](citation://2).")
    assert _cited(text) == (text, [2, 3])


def test_citations_carry_the_evidence_they_name() -> None:
    [citation] = validate_citations("x [3](citation://3)", EVIDENCE).citations
    item = EVIDENCE[2]
    assert (citation.n, citation.chunk_id, citation.document_id, citation.filename) == (
        3, "chunk3", "doc3", "hotels.md")
    assert citation.locator == item.locator and citation.heading_path == item.heading_path
    assert citation.text == item.text


@pytest.mark.parametrize(("text", "expected"), [
    # out of range: removed with the space before it, never mapped to other evidence
    ("The limit is 150 dollars [7](citation://7).", "The limit is 150 dollars."),
    ("a [0](citation://0) b", "a b"),
    ("a [9](citation://9)[1](citation://1) b", "a [1](citation://1) b"),
    ("结转五天[4](citation://4)。", "结转五天。"),
    ("no space[9](citation://9)after", "no spaceafter"),
    ("end [9](citation://9)", "end"),
    ("tab\t[9](citation://9)\nnext", "tab\nnext"),
    # a target that is no number list: removed
    ("malformed [1](citation://two).", "malformed."),
    ("empty [来源 1](citation://).", "empty."),
])
def test_out_of_range_or_malformed_links_are_removed(text: str, expected: str) -> None:
    answer, numbers = _cited(text)
    assert answer == expected
    assert numbers == ([1] if "[1](citation://1)" in expected else [])


def test_removed_links_are_reported_and_leading_zeros_are_normalised() -> None:
    checked = validate_citations("a [01](citation://1) b [12](citation://12)", EVIDENCE)
    assert checked == CitedAnswer(
        answer="a [1](citation://1) b", citations=checked.citations,
        removed=("[12](citation://12)",),
    )
    assert [c.n for c in checked.citations] == [1]


def test_text_without_links_and_other_brackets_is_untouched() -> None:
    text = "See [the policy](https://example.com) and item [2] or array[3]."
    assert _cited(text) == (text, [])


def test_no_evidence_removes_every_link() -> None:
    assert validate_citations("x [1](citation://1).", []).answer == "x."


def test_a_marker_split_across_streamed_deltas_is_validated_on_the_joined_text() -> None:
    deltas = ["年假最多结转五天[", "1](citation", "://1)，超出部分[", "7](cit", "ation://7)作废。",
              "详见[3](citation:", "//3)"]
    checked = validate_citations("".join(deltas), EVIDENCE)
    assert checked.answer == "年假最多结转五天[1](citation://1)，超出部分作废。详见[3](citation://3)"
    assert [c.n for c in checked.citations] == [1, 3]
    assert checked.removed == ("[7](citation://7)",)


def test_strip_citations_removes_every_link() -> None:
    assert strip_citations("A [1](citation://1)[2](citation://2). B [9](citation://9)") == "A . B "


def test_an_answer_cut_inside_a_link_keeps_none_of_it() -> None:
    from ragsift.chat.citations import trim_unfinished_link

    assert trim_unfinished_link("The limit is 150 [来源 1](citati") == "The limit is 150"
    assert trim_unfinished_link("The limit is 150 [") == "The limit is 150"
    assert trim_unfinished_link("See ![chart](asset:") == "See"
    whole = "The limit is 150 [1](citation://1)."
    assert trim_unfinished_link(whole) == whole
    assert trim_unfinished_link("a [note] and more") == "a [note] and more"
