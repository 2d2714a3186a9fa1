"""The structured units an extractive answer quotes: a table's matching rows under its header,
a list's matching items with their markers, and the length bound that cuts only between units.

Sentences alone broke both: a spreadsheet chunk's rows became "sentences" of raw pipes without
their header, and a list item lost its marker or was merged into its neighbour.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

MAX_TABLE_ROWS = 3
MAX_LIST_ITEMS = 3
# the answer's quoted part; a unit (sentence, table, list item) is never cut, so one unit
# always stays even when it alone is longer
MAX_ANSWER_CHARS = 1500
MAX_LINE_CHARS = 300

_TABLE_ROW = re.compile(r"^\|.*\|$")
_TABLE_RULE = re.compile(r"^\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?\s*)?$")
# a document's table as the Markdown/DOCX parsers write it: "a | b" lines, no outer pipes
_BARE_ROW = re.compile(r"^[^|\n]+(?:\s\|\s[^|\n]*)+$")
LIST_ITEM = re.compile(r"^(?P<marker>[-*+•]|\d{1,3}[.)、])\s+(?P<body>\S.*)$")

Terms = Callable[[str], set[str]]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """What one evidence item contributes: a sentence, list items (marker kept) or a table."""

    kind: Literal["sentence", "list", "table"]
    text: str
    score: float  # share of the question's terms the excerpt holds


def shorten(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """`line` cut to `limit` characters with an ellipsis (a unit too long to quote whole)."""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split(" | ")]


def _tables(lines: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(header, rows) of each table in `lines`: pipe tables with a rule line, and bare
    "a | b" tables of at least a header and one row with the same number of cells."""
    found: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines) - 1:
        line = lines[i]
        if _TABLE_ROW.match(line) and _TABLE_RULE.match(lines[i + 1]):
            rows = []
            for row in lines[i + 2:]:
                if not _TABLE_ROW.match(row):
                    break
                rows.append(row)
            found.append((line, rows))
            i += 2 + len(rows)
        elif _BARE_ROW.match(line) and not _TABLE_ROW.match(line):
            width = len(_cells(line))
            rows = []
            for row in lines[i + 1:]:
                if not _BARE_ROW.match(row) or len(_cells(row)) != width:
                    break
                rows.append(row)
            if rows:
                found.append((line, rows))
            i += 1 + len(rows)
        else:
            i += 1
    return found


def _markdown_row(row: str) -> str:
    return "| " + " | ".join(_cells(row)) + " |"


def table_excerpt(wanted: set[str], text: str, terms: Terms) -> Excerpt | None:
    """The rows of the table in `text` sharing the most question terms (at most
    MAX_TABLE_ROWS, in table order; the first row when none shares one) under the table's
    header and rule, as a small Markdown table; None without a table or without a row.
    Of several tables, the one whose excerpt holds the most question terms."""
    best: Excerpt | None = None
    for header, rows in _tables([line.strip() for line in text.splitlines()]):
        scored = [(len(wanted & terms(row)), n, row) for n, row in enumerate(rows)]
        hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        picked = [s[2] for s in sorted(hits[:MAX_TABLE_ROWS], key=lambda s: s[1])]
        picked = picked or rows[:1]
        if not picked:
            continue
        width = len(_cells(header))
        lines = [_markdown_row(header), "| " + " | ".join(["---"] * width) + " |"]
        lines += [_markdown_row(row) for row in picked]
        held = len(wanted & terms(" ".join([header, *picked]))) / len(wanted)
        if best is None or held > best.score:
            best = Excerpt("table", "\n".join(lines), held)
    return best


def list_excerpt(wanted: set[str], text: str, terms: Terms) -> Excerpt | None:
    """The list items of `text` sharing the most question terms (at most MAX_LIST_ITEMS, in
    text order), each a whole line with its own marker; None when no item shares a term."""
    items = [line.strip() for line in text.splitlines() if LIST_ITEM.match(line.strip())]
    scored = [(len(wanted & terms(item)), n, item) for n, item in enumerate(items)]
    hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    picked = [s[2] for s in sorted(hits[:MAX_LIST_ITEMS], key=lambda s: s[1])]
    if not picked:
        return None
    held = len(wanted & terms(" ".join(picked))) / len(wanted)
    return Excerpt("list", "\n".join(picked), held)


def without_list_items(text: str) -> str:
    """`text` less its list items (they are quoted whole by list_excerpt, never as sentences)."""
    return "\n".join(line for line in text.splitlines() if not LIST_ITEM.match(line.strip()))


def quote(excerpt: Excerpt, link: str) -> str:
    """One quoted unit with its citation: a table with the link on the line after it (blank
    lines around so Markdown renders it), each list item on its own line with its marker and
    the link, a sentence as one bullet (a stray list marker of its own dropped)."""
    if excerpt.kind == "table":
        return f"\n{excerpt.text}\n\n{link}\n"
    if excerpt.kind == "list":
        return "\n".join(f"{shorten(item)} {link}" for item in excerpt.text.split("\n"))
    match = LIST_ITEM.match(excerpt.text)
    body = match.group("body") if match else excerpt.text
    return f"- {shorten(body)} {link}"


def within_bound(blocks: Sequence[str], limit: int = MAX_ANSWER_CHARS) -> list[str]:
    """The leading `blocks` whose joined length stays within `limit` (the first always): the
    answer is cut only between units, so a quote never loses its citation link."""
    kept: list[str] = []
    used = 0
    for block in blocks:
        cost = len(block) + (1 if kept else 0)
        if kept and used + cost > limit:
            break
        kept.append(block)
        used += cost
    return kept
