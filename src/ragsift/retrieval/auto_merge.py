"""Auto-merge: when enough children of one parent are candidates, the parent replaces them.

Pure, over the fused candidate list (before top_k), in rank order. Levels merge bottom-up:
the deepest level first, then the parents it produced may merge into theirs, and so on, for
whatever level numbers the chunker wrote. A merged parent takes the rank position of its
best-ranked child and the best child score; its other children leave the list and the hits
after them move up. Nothing else changes order.

Each level has its own threshold (child -> parent, parent -> section), keyed by the parent's
level; 0 keeps that level from merging. A parent larger than the token budget of the answer's
context (Small2Big's) is never merged into: its children stay, and the climb stops there.

A candidate that is its parent's whole text (the parent's only child, `whole`) counts as that
parent on the level above: two sole children of two parents of one section are two parents
found. Where nothing merges above it, it stays the child it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ragsift.domain.models import Chunk


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fused candidate: its chunk, that chunk's parent and level, and its score."""

    chunk_id: str
    parent_id: str | None
    level: int
    score: float
    whole: bool = False  # the chunk's text is its parent's whole text (its only child)


@dataclass(frozen=True, slots=True)
class Merged:
    """A candidate after auto-merge; `merged_from` lists the replaced candidates (rank order)."""

    chunk_id: str
    parent_id: str | None
    level: int
    score: float
    merged_from: tuple[str, ...] = ()
    whole: bool = False

    @property
    def is_merged(self) -> bool:
        """Whether this entry is a parent that replaced candidates."""
        return bool(self.merged_from)


def candidate(chunk: Chunk, score: float) -> Candidate:
    """The Candidate for `chunk` with the score it was ranked by."""
    return Candidate(chunk_id=chunk.id, parent_id=chunk.parent_id, level=chunk.level, score=score)


def auto_merge(
    candidates: Sequence[Candidate],
    parents: Mapping[str, Chunk],
    threshold: int,
    level_thresholds: Mapping[int, int] | None = None,
    max_tokens: int | None = None,
) -> list[Merged]:
    """The candidates with every parent that has >= `threshold` children among them merged.

    `parents` maps chunk id -> chunk for the ancestors known (`Repository.get_ancestors`); a
    parent missing from it never merges. Children are counted per level: at an upper level a
    child counts when it is itself a candidate or a parent merged from the level below.
    `level_thresholds` maps a parent level to its own threshold (0: never merged into);
    a parent with more than `max_tokens` tokens is never merged into.
    """
    if threshold < 1:
        raise ValueError("auto-merge threshold must be >= 1")
    if any(value < 0 for value in (level_thresholds or {}).values()):
        raise ValueError("auto-merge level thresholds must be >= 0")
    thresholds = dict(level_thresholds or {})
    eligible = {
        key: chunk for key, chunk in parents.items()
        if thresholds.get(chunk.level, threshold) > 0
        and (max_tokens is None or chunk.token_count <= max_tokens)
    }
    entries = _deduplicated(candidates)
    done: set[int] = set()
    while True:
        pending = {entry.level for entry in entries} - done
        if not pending:
            return _in_rank_order(_unwrapped(entries, candidates), candidates)
        level = max(pending)  # bottom-up: the deepest level not yet merged
        done.add(level)
        entries = _merge_level(entries, level, eligible, lambda lv: thresholds.get(lv, threshold))


def _deduplicated(candidates: Sequence[Candidate]) -> list[Merged]:
    """Candidates as Merged entries; a repeated chunk keeps its first position."""
    seen: set[str] = set()
    entries: list[Merged] = []
    for item in candidates:
        if item.chunk_id in seen:
            continue
        seen.add(item.chunk_id)
        entries.append(Merged(item.chunk_id, item.parent_id, item.level, item.score,
                              whole=item.whole))
    return entries


def _merge_level(
    entries: list[Merged], level: int, parents: Mapping[str, Chunk],
    threshold_of: Callable[[int], int],
) -> list[Merged]:
    """One bottom-up step: groups of entries at `level` with one known parent merge into it."""
    groups: dict[str, list[int]] = {}
    for position, entry in enumerate(entries):
        if entry.level == level and entry.parent_id is not None and entry.parent_id in parents:
            groups.setdefault(entry.parent_id, []).append(position)
    position_of = {entry.chunk_id: position for position, entry in enumerate(entries)}
    merged_at: dict[int, Merged] = {}
    absorbed: set[int] = set()
    for parent_id, positions in groups.items():
        sole = len(positions) == 1 and entries[positions[0]].whole
        if len(positions) < threshold_of(parents[parent_id].level) and not sole:
            continue
        members = [entries[position] for position in positions]
        # The parent may itself be a candidate already: it joins the merge, not a duplicate.
        existing = position_of.get(parent_id)
        if existing is not None:
            positions = sorted([*positions, existing])
            members = [entries[position] for position in positions]
        parent = parents[parent_id]
        merged_at[positions[0]] = Merged(
            chunk_id=parent.id,
            parent_id=parent.parent_id,
            level=parent.level,
            score=max(member.score for member in members),
            merged_from=_sources(member for member in members if member.chunk_id != parent_id),
        )
        absorbed.update(positions[1:])
    return [
        merged_at.get(position, entry)
        for position, entry in enumerate(entries)
        if position not in absorbed
    ]


def _unwrapped(entries: list[Merged], candidates: Sequence[Candidate]) -> list[Merged]:
    """A parent that only stands for its sole child (nothing merged above it) is the child
    again: the same text, as the candidate it was."""
    original = {item.chunk_id: item for item in candidates}
    restored: list[Merged] = []
    for entry in entries:
        child = original.get(entry.merged_from[0]) if len(entry.merged_from) == 1 else None
        if child is not None and child.whole and child.parent_id == entry.chunk_id:
            entry = Merged(child.chunk_id, child.parent_id, child.level, child.score,
                           whole=True)
        restored.append(entry)
    return restored


def _sources(members: Iterable[Merged]) -> tuple[str, ...]:
    """The original candidates behind `members`: merged ones stand for what they replaced."""
    return tuple(
        source
        for member in members
        for source in (member.merged_from or (member.chunk_id,))
    )


def _in_rank_order(entries: Sequence[Merged], candidates: Sequence[Candidate]) -> list[Merged]:
    """`entries` with each `merged_from` sorted by the original candidates' ranks."""
    rank: dict[str, int] = {}
    for position, item in enumerate(candidates):
        rank.setdefault(item.chunk_id, position)
    return [
        replace(entry, merged_from=tuple(sorted(entry.merged_from, key=rank.__getitem__)))
        if len(entry.merged_from) > 1
        else entry
        for entry in entries
    ]
