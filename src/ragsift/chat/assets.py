"""Image links in an answer, `![caption](asset://ID)`, kept only for images of the turn's evidence.

The prompt lists each evidence item's images as ready-made Markdown image links; the model may
copy one into its answer. As with citation links, a link naming any other asset (unknown, of
another knowledge base, made up) is removed from the text, and so is anything else that names
the `asset:` scheme (a malformed or cut link, a plain link, a bare URL): the answer never
points the page at an image this turn's evidence does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.chat.citations import CitedAnswer, text_before_removed, validate_citations
from ragsift.domain.assets import AssetRef
from ragsift.domain.chat import Evidence

MAX_CAPTION_CHARS = 120
_MAX_ALT_CHARS = 300
_ID = r"[A-Za-z0-9_-]{1,64}"
# One pass, first alternative first: a well-formed image link (kept when its id is allowed),
# any other link whose target uses the scheme, then a bare `asset://...` URL.
_ASSET_LINKS = re.compile(
    rf"(?P<image>!\[(?P<alt>[^\[\]\n]{{0,{_MAX_ALT_CHARS}}})\]\(asset://(?P<id>{_ID})\))"
    r"|(?P<link>!?\[[^\[\]\n]{0,500}\]\(\s*<?asset:[^)\n]*\)?)"
    r"|(?P<bare>(?<![\w/])<?asset://[^\s)\]>]*>?)",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class LinkedAssets:
    """The answer with only allowed image links, the images they show, and what was removed."""

    answer: str
    assets: tuple[AssetRef, ...]
    removed: tuple[str, ...] = ()


def caption_text(ref: AssetRef) -> str:
    """The caption of an image as Markdown alt text: one line, no brackets, at most 120
    characters; `image, page 3` (or slide, or just `image`) when it has none."""
    text = _SPACES.sub(" ", ref.caption.replace("[", "(").replace("]", ")")).strip()
    if len(text) > MAX_CAPTION_CHARS:
        text = text[: MAX_CAPTION_CHARS - 1].rstrip() + "…"
    if text:
        return text
    if ref.page is not None:
        return f"image, page {ref.page}"
    if ref.slide is not None:
        return f"image, slide {ref.slide}"
    return "image"


def image_link(ref: AssetRef) -> str:
    """The Markdown that shows an image: `![caption](asset://ID)`."""
    return f"![{caption_text(ref)}](asset://{ref.id})"


def evidence_assets(evidence: Sequence[Evidence]) -> dict[str, AssetRef]:
    """Every image of the evidence by id (an image of several items once)."""
    return {ref.id: ref for item in evidence for ref in item.assets}


def validate_assets(text: str, evidence: Sequence[Evidence]) -> LinkedAssets:
    """Keep the image links to images of this turn's evidence, remove every other use of
    the `asset:` scheme; pure.

    A kept link is written in normal form (`ASSET://` becomes `asset://`, an empty caption
    becomes the image's own). Removal takes the spaces before a link along, as for citations,
    and the blank lines before a removed last link.
    The assets are the images shown, each once, in first-linked order.
    """
    allowed = evidence_assets(evidence)
    parts: list[str] = []
    removed: list[str] = []
    shown: dict[str, AssetRef] = {}
    position = 0
    for match in _ASSET_LINKS.finditer(text):
        before = text[position : match.start()]
        ref = allowed.get(match.group("id")) if match.group("image") else None
        if ref is None:
            removed.append(match.group(0))
            parts.append(text_before_removed(before, text, match.end()))
        else:
            alt = _SPACES.sub(" ", match.group("alt")).strip() or caption_text(ref)
            parts.append(f"{before}![{alt}](asset://{ref.id})")
            shown.setdefault(ref.id, ref)
        position = match.end()
    parts.append(text[position:])
    answer = "".join(parts)
    if removed and not text[-1:].isspace():
        answer = answer.rstrip()  # a removed last image leaves no blank lines behind
    return LinkedAssets(answer, tuple(shown.values()), tuple(removed))


def validate_answer(text: str, evidence: Sequence[Evidence]) -> CitedAnswer:
    """The answer with only the citation and image links this turn's evidence backs; pure."""
    linked = validate_assets(text, evidence)
    cited = validate_citations(linked.answer, evidence)
    return CitedAnswer(cited.answer, cited.citations, linked.removed + cited.removed,
                       linked.assets)


def strip_assets(text: str) -> str:
    """`text` without any image link or other use of the `asset:` scheme (for earlier
    answers replayed in a later prompt: their images belonged to their own evidence)."""
    return _ASSET_LINKS.sub("", text)
