"""Batched chunk queries for retrieval: neighbour ranges (Small2Big) and ancestors (auto-merge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, or_, select

from ragsift.adapters.sql.orm import CHUNK_TABLE
from ragsift.domain.models import Chunk

# Ordinal ranges per neighbour statement, at most 4 bound values each: 900 values stay under
# old SQLite's 999, and 225 is above the largest top_k (200), so an answer is one statement.
RANGES_PER_STATEMENT = 225

# (document id, level, parent id, first ordinal, last ordinal)
OrdinalRange = tuple[str, int, str | None, int, int]


def neighbour_ranges(anchors: Sequence[Chunk], window: int) -> list[OrdinalRange]:
    """The ordinal ranges around the anchors, one per run of overlapping windows."""
    if window <= 0:
        return []
    by_owner: dict[tuple[str, int, str | None], set[int]] = {}
    for anchor in anchors:
        owner = (anchor.document_id, anchor.level, anchor.parent_id)
        by_owner.setdefault(owner, set()).add(anchor.ordinal)
    ranges: list[OrdinalRange] = []
    for (document_id, level, parent_id), ordinals in by_owner.items():
        runs: list[list[int]] = []
        for ordinal in sorted(ordinals):
            low, high = ordinal - window, ordinal + window
            if runs and low <= runs[-1][1] + 1:
                runs[-1][1] = high  # touching windows fetch as one range: fewer bound values
            else:
                runs.append([low, high])
        ranges.extend((document_id, level, parent_id, low, high) for low, high in runs)
    return ranges


def _range_clause(ordinal_range: OrdinalRange) -> ColumnElement[bool]:
    document_id, level, parent_id, low, high = ordinal_range
    table = CHUNK_TABLE.c
    # A parent's children share one level, so the parent id alone selects them; parentless
    # chunks are matched by level. Either way the (document_id, parent_id, ordinal) index
    # serves the range.
    owner = (
        table.parent_id == parent_id
        if parent_id is not None
        else and_(table.parent_id.is_(None), table.level == level)
    )
    return and_(table.document_id == document_id, owner, table.ordinal.between(low, high))


def neighbour_query(ranges: Sequence[OrdinalRange]) -> Select[Any]:
    """One SELECT of every chunk inside any of `ranges` (an OR of index range scans)."""
    return select(CHUNK_TABLE).where(or_(*(_range_clause(r) for r in ranges)))


def ancestors_query(chunk_ids: Sequence[str]) -> Select[Any]:
    """One SELECT of every ancestor of `chunk_ids`, any depth, by a recursive CTE."""
    table = CHUNK_TABLE.c
    seed = select(table.parent_id.label("id")).where(
        table.id.in_(chunk_ids), table.parent_id.is_not(None)
    )
    lineage = seed.cte("lineage", recursive=True)
    step = (
        select(table.parent_id.label("id"))
        .join(lineage, table.id == lineage.c.id)
        .where(table.parent_id.is_not(None))
    )
    # UNION, not UNION ALL: repeats are dropped, so even a corrupt parent cycle terminates.
    lineage = lineage.union(step)
    return select(CHUNK_TABLE).where(table.id.in_(select(lineage.c.id)))
