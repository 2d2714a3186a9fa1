"""Parsed-document values and the text normalisation every parser shares.

Parsers turn a file into sections: runs of body text under one heading path. Paragraphs inside a
section are separated by a blank line ("\\n\\n"); the chunker splits on them later. Normalisation
collapses runs of horizontal whitespace, strips each line and squeezes blank lines; it does not
apply NFKC, so full-width punctuation (，。：) stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.limits import TextBudget

_HSPACE = re.compile(r"[ \t\f\v\xa0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
# Zero-width characters, soft hyphens and control characters other than tab and line breaks.
_INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff\u00ad\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BLANK_LINES = re.compile(r"\n{3,}")
# Regex character-class body: CJK radicals, punctuation, kana, ideographs and full-width forms.
CJK_CHARS = (
    r"\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
)
_CJK_LINE_BREAK = re.compile(rf"(?<=[{CJK_CHARS}])[ \t\r\f]*\n[ \t\r\f]*(?=[{CJK_CHARS}])")


@dataclass(frozen=True, slots=True)
class Block:
    """A piece of a section with its own place in the original: a sheet row, a record, a PDF
    paragraph (with its lines' boxes). The chunker never cuts a block that fits a child and
    gives each child the locator of the blocks it holds (locators.merge_locators)."""

    text: str
    locator: Locator = field(default_factory=Locator)


@dataclass(frozen=True, slots=True)
class Section:
    """A run of body text under one heading path (for PDF: one page).

    With `blocks`, the chunker packs the blocks (not the text's sentences) into children and
    `text` is their text joined by `separator`, for readers of the whole section. A `header`
    (a table's header row and its rule) starts every parent and child of the section, so each
    chunk of a table stands alone; such sections get no overlap between children.
    """

    heading_path: tuple[str, ...]
    text: str
    locator: Locator
    blocks: tuple[Block, ...] = ()
    header: str = ""
    separator: str = "\n\n"  # between blocks in a chunk's text

    @classmethod
    def of_blocks(
        cls, heading_path: tuple[str, ...], locator: Locator, blocks: Sequence[Block],
        header: str = "", separator: str = "\n\n",
    ) -> Section:
        """A section made of blocks (empty blocks dropped); `text` is their joined text."""
        kept = tuple(block for block in blocks if block.text.strip())
        text = separator.join(block.text for block in kept)
        return cls(heading_path, text, locator, kept, header, separator)


@dataclass(frozen=True, slots=True)
class ParsedAsset:
    """An image found in a document (or the document itself, for an image file).

    `section` / `block` name where it sits (an index into ParsedDocument.sections and into
    that section's blocks): the chunks holding that block are linked to it. Without a block,
    the section's child nearest to the image's box on its page is (or the section's first).
    `ocr_text` is what OCR read in the image; a parser that runs OCR also adds that text to
    the section as a block of its own (so it is searchable) and names that block here.
    """

    data: bytes
    media_type: str  # image/png, image/jpeg, ...
    width: int
    height: int
    locator: Locator  # page or slide, and the image's box on the page when known
    caption: str = ""  # caption, alt text or the nearest heading
    ocr_text: str = ""
    section: int | None = None
    block: int | None = None


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """The sections of one document, in reading order; never empty once returned.

    `warnings` are what was skipped or cut without failing the document (a corrupt image, a
    sheet cut at its row limit, OCR over its time budget); they are kept with the document.
    """

    media_type: str
    sections: tuple[Section, ...]
    assets: tuple[ParsedAsset, ...] = ()
    warnings: tuple[str, ...] = ()


def normalize_text(text: str) -> str:
    """Collapse horizontal whitespace, strip lines and keep at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
    text = _INVISIBLE.sub("", text)
    lines = (_HSPACE.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def normalize_inline(text: str) -> str:
    """Normalise text that must fit on one line (headings, table cells)."""
    text = _INVISIBLE.sub("", join_cjk_lines(text))
    return _HSPACE.sub(" ", text.replace("\r", " ").replace("\n", " ")).strip()


def join_cjk_lines(text: str) -> str:
    """Drop a source line break between two CJK characters (hard-wrapped Chinese prose)."""
    return _CJK_LINE_BREAK.sub("", text)


class SectionBuilder:
    """Collects headings and body blocks in reading order and cuts them into sections.

    Heading levels may skip (h1 then h3); a heading closes every open heading of the same or a
    deeper level. A heading with no body of its own yields no section but stays in the path of the
    headings below it. Level 0 is above level 1 (used for a DOCX "Title"). With a budget, every
    heading and block counts against the document's character limit as it is added.
    """

    def __init__(self, locator: Locator | None = None, budget: TextBudget | None = None) -> None:
        self._locator = locator or Locator()
        self._budget = budget
        self._stack: list[tuple[int, str]] = []
        self._blocks: list[str] = []
        self._sections: list[Section] = []

    def heading(self, level: int, title: str) -> None:
        """Start a new heading; an empty title is ignored."""
        title = normalize_inline(title)
        if not title:
            return
        if self._budget is not None:
            self._budget.add_chars(len(title))
        self._flush()
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title))

    def add_block(self, text: str) -> None:
        """Append body text; blank lines inside it become paragraph breaks."""
        text = normalize_text(text)
        if text:
            if self._budget is not None:
                self._budget.add_chars(len(text))
            self._blocks.append(text)

    def position(self) -> tuple[int, int]:
        """(index the section being built will have, index its next block will have)."""
        return len(self._sections), len(self._blocks)

    def sections(self) -> tuple[Section, ...]:
        """Close the current section and return every non-empty section."""
        self._flush()
        return tuple(self._sections)

    def _flush(self) -> None:
        if self._blocks:
            path = tuple(title for _, title in self._stack)
            text = "\n\n".join(self._blocks)
            self._sections.append(Section(heading_path=path, text=text, locator=self._locator))
            self._blocks = []
