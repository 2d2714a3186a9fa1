"""Small2Big: widen each final hit with its neighbours in the same parent, within a token budget.

Pure planning over chunks already fetched (`Repository.get_neighbours`); it never reorders or
rescores hits. Rules:
- A neighbour shares the hit's document, level and parent; a chunk without a parent also needs
  the same heading path and locator boundary (page, sheet, slide).
- Every hit's own tokens are charged first and never dropped; the rest of the budget goes to
  hits in rank order, nearer neighbours first, the previous one before the next on ties.
- Context stays contiguous: a direction stops at the first chunk that is missing, does not
  match, does not fit the remaining budget, or already belongs to the answer (a hit or an
  earlier hit's neighbour), so no chunk text appears twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ragsift.domain.models import Chunk

# Joins neighbours whose texts do not overlap; the boundary between them is unknown.
SEPARATOR = "\n"
# Where a sentence ends (the chunker's sentence terminators) or a line breaks.
_SENTENCE_END = frozenset("。！？!?；;….\n")
_CLOSERS = frozenset("”’\"'）)")


@dataclass(frozen=True, slots=True)
class Expansion:
    """A hit with its context: chunk ids in ordinal order (the hit included) and joined text."""

    chunk_id: str
    context_chunk_ids: tuple[str, ...]
    text: str
    token_count: int  # stored token counts of the context chunks, overlap included


_Position = tuple[str, int, int]  # (document id, level, ordinal)


def _boundary(chunk: Chunk) -> tuple[int | None, str | None, int | None]:
    locator = chunk.locator
    return locator.page, locator.sheet, locator.slide


def is_neighbour(hit: Chunk, other: Chunk) -> bool:
    """Whether `other` may join `hit`'s context (ordinal distance aside)."""
    if (other.document_id, other.level, other.parent_id) != (
        hit.document_id,
        hit.level,
        hit.parent_id,
    ):
        return False
    if hit.parent_id is not None:
        return True
    return other.heading_path == hit.heading_path and _boundary(other) == _boundary(hit)


def plan_expansion(
    hits: Sequence[Chunk],
    neighbours: Sequence[Chunk],
    window: int,
    budget_tokens: int,
) -> list[Expansion]:
    """One Expansion per hit, in the hits' (rank) order; `neighbours` may hold extra chunks."""
    if window < 0:
        raise ValueError("window must be >= 0")
    if budget_tokens < 0:
        raise ValueError("budget_tokens must be >= 0")
    at: dict[_Position, Chunk] = {}
    for chunk in (*neighbours, *hits):
        at[(chunk.document_id, chunk.level, chunk.ordinal)] = chunk
    claimed = {hit.id for hit in hits}
    own = {hit.id: hit.token_count for hit in hits}
    remaining = budget_tokens - sum(own.values())
    planned: list[Expansion] = []
    for hit in hits:
        taken, remaining = _grow(hit, at, claimed, window, remaining)
        context = sorted([hit, *taken], key=lambda chunk: chunk.ordinal)
        planned.append(
            Expansion(
                chunk_id=hit.id,
                context_chunk_ids=tuple(chunk.id for chunk in context),
                text=join_texts([chunk.text for chunk in context]),
                token_count=sum(chunk.token_count for chunk in context),
            )
        )
    return planned


def _grow(
    hit: Chunk,
    at: dict[_Position, Chunk],
    claimed: set[str],
    window: int,
    remaining: int,
) -> tuple[list[Chunk], int]:
    """Neighbours taken for `hit` (claimed on the way) and the budget left after them."""
    taken: list[Chunk] = []
    open_directions = {-1: True, 1: True}
    for distance in range(1, window + 1):
        for direction in (-1, 1):  # previous before next at equal distance
            if not open_directions[direction]:
                continue
            other = at.get((hit.document_id, hit.level, hit.ordinal + direction * distance))
            if (
                other is None
                or other.id in claimed
                or not is_neighbour(hit, other)
                or other.token_count > remaining
            ):
                open_directions[direction] = False  # a gap would break contiguity
                continue
            claimed.add(other.id)
            taken.append(other)
            remaining -= other.token_count
    return taken, remaining


def join_texts(texts: Sequence[str]) -> str:
    """Texts in order, each overlap with the previous one removed (see `overlap_length`)."""
    if not texts:
        return ""
    parts = [texts[0]]
    for previous, text in pairwise(texts):
        # the joined text so far always ends with `previous`, so comparing with it suffices
        cut = overlap_length(previous, text)
        parts.append(text[cut:] if cut else SEPARATOR + text)
    return "".join(parts)


def overlap_length(previous: str, following: str) -> int:
    """Length of the longest suffix of `previous` that is a prefix of `following`.

    Only overlaps on sentence boundaries count, as the chunker repeats whole sentences:
    a chance match such as "dat[a]" + "[a]pple" must not eat a letter.
    """
    for length in _borders(previous, following):
        if not previous.endswith(following[:length]):
            continue  # a NUL inside the texts can fake a border
        start = len(previous) - length
        starts_clean = start == 0 or _ends_sentence(previous[:start])
        rest = following[length:]
        ends_clean = not rest or rest[0].isspace() or _ends_sentence(following[:length])
        if starts_clean and ends_clean:
            return length
    return 0


def _ends_sentence(text: str) -> bool:
    stripped = text.rstrip()
    if len(stripped) < len(text):
        return True  # whitespace before the overlap: a sentence or paragraph break
    stripped = stripped.rstrip("".join(_CLOSERS))
    return bool(stripped) and stripped[-1] in _SENTENCE_END


def _borders(previous: str, following: str) -> list[int]:
    """Every length n > 0 with previous[-n:] == following[:n], longest first.

    The KMP prefix function over following + NUL + previous finds them in linear time;
    chunk texts reach a few thousand characters, so the quadratic scan would be wasteful.
    """
    text = following + "\0" + previous
    prefix = [0] * len(text)
    for index in range(1, len(text)):
        length = prefix[index - 1]
        while length and text[index] != text[length]:
            length = prefix[length - 1]
        if text[index] == text[length]:
            length += 1
        prefix[index] = length
    found: list[int] = []
    length = prefix[-1] if text else 0
    while length:
        found.append(length)
        length = prefix[length - 1]
    return found
