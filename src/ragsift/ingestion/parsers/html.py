"""HTML via BeautifulSoup with the stdlib "html.parser" backend.

h1-h6 become the heading path. script, style, nav, noscript, template and the whole <head>
(including <title>) are dropped. Block elements end a paragraph; list items become "- item" lines
of one block; tables are rendered a row per line with cells joined by " | "; <pre> keeps its line
breaks. Source whitespace collapses as a browser would, except that a source line break between two
CJK characters disappears instead of becoming a space.

BeautifulSoup holds about 1 KB per element, so the elements are counted (HtmlElementBudget,
max_html_elements) before the tree is built. Nesting depth needs no limit of its own: the walk
below keeps its own stack, and html.parser nests every unclosed <p> or <li>, so sloppy but
ordinary pages are deep.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from bs4 import BeautifulSoup
from bs4.element import (
    CData,
    Comment,
    Declaration,
    Doctype,
    NavigableString,
    PageElement,
    ProcessingInstruction,
    Tag,
)

from ragsift.ingestion.parsers.base import (
    CJK_CHARS,
    ParsedDocument,
    Section,
    SectionBuilder,
    normalize_inline,
)
from ragsift.ingestion.parsers.decoding import decode_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject

MEDIA_TYPE = "text/html"

_DROPPED = ("head", "script", "style", "nav", "noscript", "template", "svg", "iframe", "canvas")
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hr", "li", "main", "ol", "p", "section", "summary", "ul",
    }
)
_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction, CData)
_CJK_BREAK = re.compile(rf"(?<=[{CJK_CHARS}])[ \t\r\f]*\n[ \t\n\r\f]*(?=[{CJK_CHARS}])")
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")


def parse_html(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse an HTML file into sections under its h1-h6 headings."""
    markup = decode_text(data)
    HtmlElementBudget(limits).check(markup)
    soup = BeautifulSoup(markup, "html.parser")
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    renderer = _Renderer(TextBudget(limits))
    return ParsedDocument(media_type=MEDIA_TYPE, sections=renderer.render(soup))


class HtmlElementBudget:
    """Counts the elements BeautifulSoup would build from markup, over one or more pieces."""

    def __init__(self, limits: ParseLimits) -> None:
        self._limit = limits.max_html_elements
        self.elements = 0

    def check(self, markup: str) -> None:
        """Count markup's start tags; reject once the total passes max_html_elements."""
        # Every element needs a "<": a free upper bound, counted as is while it cannot pass the
        # limit; only markup that might pass it is tokenized to count exactly.
        bound = markup.count("<")
        if self.elements + bound <= self._limit:
            self.elements += bound
            return
        counter = _StartTags(self)
        counter.feed(markup)
        counter.close()

    def add(self) -> None:
        self.elements += 1
        if self.elements > self._limit:
            raise reject(
                f"HTML has more than {self._limit:,} elements (RAGSIFT_MAX_HTML_ELEMENTS)"
            )


class _StartTags(HTMLParser):
    """The tokenizer BeautifulSoup's "html.parser" builder uses, without building anything."""

    def __init__(self, budget: HtmlElementBudget) -> None:
        super().__init__(convert_charrefs=False)
        self._budget = budget

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._budget.add()


class _Renderer:
    """Depth-first walk with an explicit stack (deep documents must not hit the recursion limit).

    Breaks are requested, not written: the strongest pending request (1 = line, 2 = paragraph) is
    written before the next text, so nested blocks never stack up blank lines.
    """

    def __init__(self, budget: TextBudget) -> None:
        self._builder = SectionBuilder(budget=budget)
        self._parts: list[str] = []
        self._pending_break = 0
        self._counters: list[int | None] = []  # one per open list: next number, None for <ul>
        self._marker = ""

    def render(self, root: Tag) -> tuple[Section, ...]:
        stack: list[tuple[PageElement, bool]] = [(root, True)]
        while stack:
            node, entering = stack.pop()
            if isinstance(node, Tag) and not entering:
                self._leave(node)
            elif isinstance(node, NavigableString):
                if not isinstance(node, _NOT_TEXT):
                    self._text(str(node))
            elif isinstance(node, Tag) and self._enter(node):
                stack.append((node, False))
                stack.extend((child, True) for child in reversed(node.contents))
        self._flush()
        return self._builder.sections()

    def _enter(self, tag: Tag) -> bool:
        """Handle an opening tag; True when its children still need walking."""
        name = tag.name
        if name in _HEADINGS:
            self._flush()
            # Inline markup inside a heading joins without a separator, as a browser shows it.
            self._builder.heading(_HEADINGS[name], _collapse(tag.get_text()))
            return False
        if name in ("table", "pre"):
            self._block(_table_text(tag) if name == "table" else tag.get_text())
            return False
        if name == "br":
            self._pending_break = min(2, self._pending_break + 1)
            return False
        if name == "li":
            self._request(1)
            number = self._counters[-1] if self._counters else None
            self._marker = "- " if number is None else f"{number}. "
            if number is not None:
                self._counters[-1] = number + 1
        elif name in _BLOCKS:
            self._request(2)
        if name in ("ul", "ol"):
            start = tag.get("start")
            first = int(start) if isinstance(start, str) and start.isdigit() else 1
            self._counters.append(first if name == "ol" else None)
        return True

    def _leave(self, tag: Tag) -> None:
        if tag.name in ("ul", "ol") and self._counters:
            self._counters.pop()
        if tag.name in _BLOCKS:
            self._request(2)

    def _request(self, strength: int) -> None:
        if self._counters:
            strength = 1
        self._pending_break = max(self._pending_break, strength)

    def _text(self, raw: str) -> None:
        text = _collapse(raw)
        if not text.strip():
            if self._parts and not self._pending_break:
                self._parts.append(" ")
            return
        self._write(text)

    def _block(self, text: str) -> None:
        if text.strip():
            self._request(2)
            self._write(text)
            self._request(2)

    def _write(self, text: str) -> None:
        if self._parts and self._pending_break:
            self._parts.append("\n" * self._pending_break)
        self._pending_break = 0
        if self._marker:
            text = self._marker + text.lstrip()
            self._marker = ""
        self._parts.append(text)

    def _flush(self) -> None:
        self._builder.add_block("".join(self._parts))
        self._parts = []
        self._pending_break = 0
        self._marker = ""


def _collapse(raw: str) -> str:
    """Collapse source whitespace as a browser does; a line break between CJK characters goes."""
    return _HTML_SPACE.sub(" ", _CJK_BREAK.sub("", raw))


def _table_text(table: Tag) -> str:
    """A row per line, cells joined by " | "; empty rows dropped."""
    rows: list[str] = []
    for row in table.find_all("tr"):
        cells = [normalize_inline(cell.get_text(" ")) for cell in row.find_all(("th", "td"))]
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows) if rows else table.get_text(" ")
