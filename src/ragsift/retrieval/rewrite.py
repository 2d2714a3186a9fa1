"""Acceptance rules for a proposed query rewrite: it supplements the query, never damages it."""

from __future__ import annotations

import re
import unicodedata

from ragsift.domain.stages import RewriteProposal
from ragsift.domain.trace import QueryVariant

# Terms a rewrite must keep verbatim: quoted names, dates, and anything carrying a digit
# (model numbers, versions, codes, amounts). Quotes: ASCII, curly, CJK corner and title marks.
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|『([^』]+)』|《([^》]+)》|'([^']{2,})'")
_WITH_DIGIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/:]*\d[A-Za-z0-9_.\-/:]*|\d+")


def protected_terms(query: str) -> list[str]:
    """Quoted names and digit-bearing tokens of `query`, in order, without duplicates."""
    terms = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(query)]
    terms += [m.group(0).rstrip(".:/-") for m in _WITH_DIGIT.finditer(query)]
    return list(dict.fromkeys(term.strip() for term in terms if term.strip()))


def _canonical(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


def accept_rewrite(
    query: str, proposal: RewriteProposal, max_chars: int
) -> tuple[QueryVariant | None, str | None]:
    """(variant, None) when the rewrite may be searched, else (None, why it was dropped)."""
    text = proposal.text.strip()
    if proposal.method == "none":
        return None, "the model proposed no rewrite"
    if not text:
        return None, "the rewrite is empty"
    if len(text) > max_chars:
        return None, f"the rewrite is {len(text)} characters long, over {max_chars}"
    if _canonical(text) == _canonical(query):
        return None, "the rewrite is identical to the query"
    folded = unicodedata.normalize("NFKC", text).casefold()
    missing = [
        term for term in protected_terms(query)
        if unicodedata.normalize("NFKC", term).casefold() not in folded
    ]
    if missing:
        return None, "the rewrite dropped " + ", ".join(repr(term) for term in missing)
    return QueryVariant(text=text, method=proposal.method), None
