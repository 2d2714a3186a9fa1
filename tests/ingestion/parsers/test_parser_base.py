"""Shared normalisation and the section builder used by every parser."""

from __future__ import annotations

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import SectionBuilder, normalize_inline, normalize_text


def test_normalize_text_collapses_horizontal_space_and_strips_lines() -> None:
    assert normalize_text("  a \t\u3000 b  \n\xa0c\u00a0 ") == "a b\nc"


def test_normalize_text_keeps_at_most_one_blank_line_and_unifies_line_endings() -> None:
    assert normalize_text("one\r\n\r\n\r\n \t \r\ntwo\rthree") == "one\n\ntwo\nthree"


def test_normalize_text_keeps_full_width_characters_unlike_nfkc() -> None:
    text = "年假：１５天（含周末）！ＡＢＣ"
    assert normalize_text(text) == text


def test_normalize_text_removes_zero_width_and_control_characters() -> None:
    assert normalize_text("pass\u200bword\x7f \x07ok\ufeff") == "password ok"


def test_normalize_inline_puts_text_on_one_line() -> None:
    assert normalize_inline(" Heading\n  two ") == "Heading two"
    assert normalize_inline("第一\n章") == "第一章"


def test_builder_drops_empty_blocks_and_joins_blocks_with_blank_lines() -> None:
    builder = SectionBuilder()
    builder.heading(1, "A")
    builder.add_block("one")
    builder.add_block("  \n ")
    builder.add_block("two")
    sections = builder.sections()
    assert [(s.heading_path, s.text) for s in sections] == [(("A",), "one\n\ntwo")]


def test_builder_pops_headings_of_the_same_or_deeper_level() -> None:
    builder = SectionBuilder()
    for level, title, body in [(1, "A", "a"), (2, "B", "b"), (3, "C", "c"), (2, "D", "d")]:
        builder.heading(level, title)
        builder.add_block(body)
    paths = [s.heading_path for s in builder.sections()]
    assert paths == [("A",), ("A", "B"), ("A", "B", "C"), ("A", "D")]


def test_builder_ignores_empty_headings_and_applies_its_locator() -> None:
    builder = SectionBuilder(Locator(page=4))
    builder.heading(1, "Top")
    builder.heading(2, "   ")
    builder.add_block("body")
    (section,) = builder.sections()
    assert section.heading_path == ("Top",)
    assert section.locator == Locator(page=4)
