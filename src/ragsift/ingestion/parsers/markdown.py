"""Markdown (CommonMark plus tables) via markdown-it-py.

ATX and setext headings become the heading path. Paragraphs, code blocks and tables are blocks;
a whole list is one block with an item per line ("- item" or "1. item"). Table rows are rendered as
cells joined by " | ". Inline markup is dropped, link and image text kept. A soft line break
becomes a space, or nothing between two CJK characters. A leading YAML front-matter block is
skipped.

markdown-it holds about 2 KB of tokens per line, so the non-blank lines (each can open a block) are
counted against max_document_blocks before it runs; HTML blocks count against max_html_elements
before BeautifulSoup reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ragsift.ingestion.parsers.base import CJK_CHARS, ParsedDocument, Section, SectionBuilder
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ingestion.parsers.html import HtmlElementBudget
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject

MEDIA_TYPE = "text/markdown"

_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\n[A-Za-z_][\w-]*[ \t]*:.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S
)
FRONT_MATTER = _FRONT_MATTER  # ingestion/front_matter.py reads the same block as metadata
_SOFT_BREAK = "\ue000"  # private-use placeholder, resolved before the text leaves this module
_CJK_SOFT_BREAK = re.compile(rf"(?<=[{CJK_CHARS}]){_SOFT_BREAK}(?=[{CJK_CHARS}])")
_NON_BLANK_LINE = re.compile(r"^[ \t]*\S", re.MULTILINE)


def parse_markdown(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse a Markdown file into sections under its headings."""
    text = _FRONT_MATTER.sub("", decode_text(data), count=1)
    _check_lines(text, limits.max_document_blocks)
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    walker = _Walker(parser.parse(text), TextBudget(limits), HtmlElementBudget(limits))
    return ParsedDocument(media_type=MEDIA_TYPE, sections=walker.run())


def _check_lines(text: str, limit: int) -> None:
    if text.count("\n") < limit:  # the cheap bound settles nearly every file
        return
    lines = sum(1 for _ in _NON_BLANK_LINE.finditer(text))
    if lines > limit:
        raise reject(
            f"Markdown has {lines:,} non-blank lines, over the limit of {limit:,} "
            "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
        )


class _Walker:
    """One pass over markdown-it's flat token stream, tracking open lists and tables."""

    def __init__(
        self, tokens: Sequence[Token], budget: TextBudget, html_budget: HtmlElementBudget
    ) -> None:
        self._tokens = tokens
        self._builder = SectionBuilder(budget=budget)
        self._html_budget = html_budget
        self._lists: list[int | None] = []  # next number of each open ordered list; None: bullets
        self._list_lines: list[str] = []
        self._marker = ""
        self._rows: list[str] = []
        self._cells: list[str] = []

    def run(self) -> tuple[Section, ...]:
        tokens = self._tokens
        for index, token in enumerate(tokens):
            self._visit(token, tokens[index + 1] if index + 1 < len(tokens) else None)
        return self._builder.sections()

    def _visit(self, token: Token, following: Token | None) -> None:
        kind = token.type
        inline = following if following is not None and following.type == "inline" else None
        if kind == "heading_open" and inline is not None:
            self._builder.heading(int(token.tag[1:]), _inline_text(inline))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            start = token.attrGet("start")
            self._lists.append(None if kind == "bullet_list_open" else int(start or 1))
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self._lists.pop()
            if not self._lists and self._list_lines:
                self._builder.add_block("\n".join(self._list_lines))
                self._list_lines = []
        elif kind == "list_item_open":
            number = self._lists[-1]
            self._marker = "- " if number is None else f"{number}. "
            if number is not None:
                self._lists[-1] = number + 1
        elif kind == "paragraph_open" and inline is not None:
            self._emit(_inline_text(inline))
        elif kind in ("fence", "code_block"):
            self._emit(token.content.rstrip("\n"))
        elif kind == "html_block":
            self._html_budget.check(token.content)
            soup = BeautifulSoup(token.content, "html.parser")
            for tag in soup.find_all(("script", "style")):
                tag.decompose()
            self._emit(soup.get_text("\n"))
        elif kind == "tr_open":
            self._cells = []
        elif kind in ("th_open", "td_open") and inline is not None:
            self._cells.append(_inline_text(inline))
        elif kind == "tr_close" and any(self._cells):
            self._rows.append(" | ".join(self._cells))
        elif kind == "table_close":
            self._emit("\n".join(self._rows))
            self._rows = []

    def _emit(self, text: str) -> None:
        if self._lists:
            self._list_lines.append(self._marker + text)
            self._marker = ""
        else:
            self._builder.add_block(text)


def _inline_text(token: Token) -> str:
    """Plain text of an inline token: markup dropped, line breaks resolved."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(_SOFT_BREAK)
        elif child.type == "hardbreak":
            parts.append("\n")
    text = _CJK_SOFT_BREAK.sub("", "".join(parts))
    return text.replace(_SOFT_BREAK, " ")
