"""Citation links in an answer, checked against the evidence snapshot of its turn.

An answer cites evidence as `[N](citation://N)`. A link whose number is not in the snapshot
(or whose label and target disagree) is removed from the text, never mapped to other
evidence: a wrong source is worse than none.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Citation, Evidence

CITATION = re.compile(r"\[(\d{1,6})\]\(citation://(\d{1,6})\)")
_SPACE = " \t"


@dataclass(frozen=True, slots=True)
class CitedAnswer:
    """The answer with only valid citation (and image) links, the evidence they cite, the
    images it shows, and what was removed."""

    answer: str
    citations: tuple[Citation, ...]
    removed: tuple[str, ...] = ()
    assets: tuple[AssetRef, ...] = ()


def citation_link(n: int) -> str:
    """The link that cites evidence `n`."""
    return f"[{n}](citation://{n})"


def _keeps_space_after(text: str, end: int) -> bool:
    """Whether a removed link was followed by a word or an opening bracket (another link),
    so one space must stay; not before spaces, closing or ending punctuation, or the end."""
    if end >= len(text):
        return False
    following = text[end]
    category = unicodedata.category(following)
    return not (following.isspace() or (category.startswith("P") and category not in ("Ps", "Pi")))


def text_before_removed(before: str, text: str, end: int) -> str:
    """`before` (the text up to a removed link) without the spaces it ends with, unless a
    word or link follows the link at `end` of `text` (then one space stays)."""
    stripped = before.rstrip(_SPACE)
    spaced = stripped != before and _keeps_space_after(text, end)
    return stripped + (" " if spaced else "")


def validate_citations(text: str, evidence: Sequence[Evidence]) -> CitedAnswer:
    """Keep the links to evidence of this turn, remove the others; pure.

    Kept links are written in normal form (`[01](citation://1)` becomes `[1](citation://1)`).
    A removed link takes the spaces before it along, unless a word or link follows it
    (`"limit [9](citation://9)."` -> `"limit."`, `"a [9](citation://9) b"` -> `"a b"`).
    Citations are the cited evidence, each once, in first-cited order.
    """
    by_n = {item.n: item for item in evidence}
    parts: list[str] = []
    removed: list[str] = []
    cited: dict[int, Citation] = {}
    position = 0
    for match in CITATION.finditer(text):
        label, target = int(match.group(1)), int(match.group(2))
        before = text[position : match.start()]
        item = by_n.get(label) if label == target else None
        if item is None:
            removed.append(match.group(0))
            parts.append(text_before_removed(before, text, match.end()))
        else:
            parts.append(before + citation_link(label))
            cited.setdefault(label, _citation(item))
        position = match.end()
    parts.append(text[position:])
    return CitedAnswer("".join(parts), tuple(cited.values()), tuple(removed))


def strip_citations(text: str) -> str:
    """`text` without any citation link (for earlier answers replayed in a later prompt)."""
    return CITATION.sub("", text)


def _citation(item: Evidence) -> Citation:
    """The citation part of a piece of evidence (without its context and score)."""
    return Citation.model_validate(item.model_dump(include=set(Citation.model_fields)))
