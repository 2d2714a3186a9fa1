"""Citation links in an answer, checked against the evidence snapshot of its turn.

An answer cites evidence as `[来源 N](citation://N)` (the specification's form; `[Source N]`
in English, a bare `[N]` is accepted too). The label is free text: the target decides which
evidence is cited, and the label is rewritten to name that number. A combined target
(`[1,2](citation://1,2)`, `[来源 1](citation://1,2)`) becomes one link per number. A number
that is not in the snapshot is dropped (its link disappears from the text, with the spaces
before it), never mapped to other evidence: a wrong source is worse than none. Any other use
of the `citation:` scheme (no number, a malformed target) is dropped as well.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Citation, Evidence

# any Markdown link whose target uses the citation scheme; the target is checked afterwards
CITATION = re.compile(
    r"\[(?P<label>[^\[\]\n]{0,60})\]\(\s*<?citation:(?://)?(?P<target>[^()<>\n]{0,200}?)>?\s*\)",
    re.IGNORECASE,
)
_TARGET = re.compile(r"^\d{1,6}(?:\s*[,，、;；]\s*\d{1,6})*$")
_NUMBERS = re.compile(r"\d{1,6}")
# "来源 1", "Source 1,2", "1": a short word (or none) before the number(s)
_LABEL = re.compile(
    r"^\s*(?P<word>[^\d\s,，、;；()\[\]]{0,16}?)\s*\d{1,6}(?:\s*[,，、;；]\s*\d{1,6})*\s*$"
)
_SPACE = " \t"
LABEL_ZH = "来源"
LABEL_EN = "Source"


@dataclass(frozen=True, slots=True)
class CitedAnswer:
    """The answer with only valid citation (and image) links, the evidence they cite, the
    images it shows, and what was removed."""

    answer: str
    citations: tuple[Citation, ...]
    removed: tuple[str, ...] = ()
    assets: tuple[AssetRef, ...] = ()


def has_han(text: str) -> bool:
    """Whether `text` contains CJK ideographs."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


def label_word(chinese: bool) -> str:
    """The word of a citation label in the answer's language: 来源 or Source."""
    return LABEL_ZH if chinese else LABEL_EN


def citation_link(n: int, word: str = "") -> str:
    """The link that cites evidence `n`: `[来源 n](citation://n)` with word "来源", `[n](...)`
    without a word."""
    label = f"{word} {n}" if word else str(n)
    return f"[{label}](citation://{n})"


def _word_of(label: str) -> str:
    """The word a label names its number with ("来源 1" -> "来源", "1" -> ""); a free-text
    label ("the policy") gets the word of its language."""
    match = _LABEL.match(label)
    if not label.strip():
        return ""
    if match is not None:
        return match.group("word")
    return label_word(has_han(label))


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
    """Keep the links to evidence of this turn, drop the others; pure.

    Kept links are written in normal form, one per number: `[01](citation://1)` becomes
    `[1](citation://1)`, `[来源 1,2](citation://1,2)` becomes
    `[来源 1](citation://1)[来源 2](citation://2)`, `[Source 2](citation://3)` becomes
    `[Source 3](citation://3)`. A link left with no number of the snapshot is removed with
    the spaces before it, unless a word or link follows it (`"limit [9](citation://9)."` ->
    `"limit."`, `"a [9](citation://9) b"` -> `"a b"`). `removed` lists each link that lost
    a number. Citations are the cited evidence, each once, in first-cited order.
    """
    by_n = {item.n: item for item in evidence}
    parts: list[str] = []
    removed: list[str] = []
    cited: dict[int, Citation] = {}
    position = 0
    for match in CITATION.finditer(text):
        before = text[position : match.start()]
        target = match.group("target").strip()
        numbers = [int(n) for n in _NUMBERS.findall(target)] if _TARGET.match(target) else []
        kept = [n for n in dict.fromkeys(numbers) if n in by_n]
        if len(kept) < len(numbers) or not numbers:
            removed.append(match.group(0))
        if not kept:
            parts.append(text_before_removed(before, text, match.end()))
        else:
            word = _word_of(match.group("label"))
            parts.append(before + "".join(citation_link(n, word) for n in kept))
            for n in kept:
                if n not in cited:  # built once: a pydantic round trip per link is slow
                    cited[n] = _citation(by_n[n])
        position = match.end()
    parts.append(text[position:])
    return CitedAnswer("".join(parts), tuple(cited.values()), tuple(removed))


# a link the stream stopped inside: "[来源 1](citati", "[Source", "![chart](asset:"
_UNFINISHED_LINK = re.compile(r"!?\[[^\[\]\n]{0,60}(?:\]\([^()\n]{0,200})?$")


def trim_unfinished_link(text: str) -> str:
    """`text` without a Markdown link cut off at its end (an answer that stopped mid-link
    kept a dangling "["), and without the spaces before it."""
    cut = _UNFINISHED_LINK.search(text) if "[" in text else None
    return text if cut is None else text[: cut.start()].rstrip(_SPACE)


def strip_citations(text: str) -> str:
    """`text` without any citation link (for earlier answers replayed in a later prompt)."""
    return CITATION.sub("", text)


def _citation(item: Evidence) -> Citation:
    """The citation part of a piece of evidence (without its context and scores)."""
    return Citation.model_validate(item.model_dump(include=set(Citation.model_fields)))
