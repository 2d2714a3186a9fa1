"""The third level: sections (L1) over the parents (L2) that share a top-level structure.

A document's parents are grouped, in reading order, by the structure they belong to: a sheet, a
slide, the first heading below the headings every part of the document shares (a Markdown
document's "## 差旅" under its one "# 员工手册"), or, without headings, a page. A group of two
or more parents becomes a section chunk (level -1): its text is its parents' texts, and each
parent's `parent_id` names it, so auto-merge can climb child -> parent -> section. A parent
alone in its group stays a top-level parent (a section would repeat it), and so does a
document without such structure: two levels remain valid.

Chunk ids do not depend on `parent_id`, so a reindex that adds sections keeps every parent's
and child's id.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ragsift.domain.models import SECTION_LEVEL, Chunk, Locator, chunk_id

# a group this many times the parent budget or larger gets no section: it would be context no
# answer can carry (the Small2Big budget is a few parents), and would store the text again
MAX_PARENTS_TOKENS_FACTOR = 8
_JOIN = "\n\n"


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> int:
    """How many leading headings every path shares."""
    if not paths:
        return 0
    shortest = min(len(path) for path in paths)
    for depth in range(shortest):
        if len({path[depth] for path in paths}) > 1:
            return depth
    return shortest


def _key(parent: Chunk, depth: int) -> tuple[object, ...] | None:
    """The structure `parent` belongs to; None: none (the parent stays top-level)."""
    locator = parent.locator
    if locator.sheet is not None:
        return ("sheet", locator.sheet)
    if locator.slide is not None:
        return ("slide", locator.slide)
    if len(parent.heading_path) > depth:
        return ("heading", *parent.heading_path[: depth + 1])
    if locator.page is not None:
        return ("page", locator.page)
    return None


def add_sections(
    document_id: str, kb_id: str, parents: list[Chunk], parent_budget: int
) -> list[Chunk]:
    """The section chunks of `parents` (in reading order); the grouped parents in `parents`
    are replaced by copies whose parent_id names their section."""
    depth = _common_prefix([parent.heading_path for parent in parents])
    sections: list[Chunk] = []
    position = 0
    for key, run in itertools.groupby(parents, key=lambda p: _key(p, depth)):
        group = list(run)
        start, position = position, position + len(group)
        tokens = sum(parent.token_count for parent in group)
        if key is None or len(group) < 2 or tokens >= parent_budget * MAX_PARENTS_TOKENS_FACTOR:
            continue
        section = _section(document_id, kb_id, group, len(sections), tokens, depth)
        sections.append(section)
        for offset, parent in enumerate(group):
            parents[start + offset] = parent.model_copy(update={"parent_id": section.id})
    return sections


def _section(
    document_id: str, kb_id: str, group: Sequence[Chunk], ordinal: int, tokens: int, depth: int
) -> Chunk:
    text = _JOIN.join(parent.text for parent in group)
    first = group[0]
    heading = first.heading_path[: _common_prefix([p.heading_path for p in group]) or depth]
    pages = [p.locator.page for p in group if p.locator.page is not None]
    locator = Locator(page=min(pages) if pages else None, sheet=first.locator.sheet,
                      slide=first.locator.slide)
    return Chunk(
        id=chunk_id(document_id, SECTION_LEVEL, ordinal, text), document_id=document_id,
        kb_id=kb_id, parent_id=None, level=SECTION_LEVEL, ordinal=ordinal,
        heading_path=heading, locator=locator, text=text, token_count=tokens,
    )
