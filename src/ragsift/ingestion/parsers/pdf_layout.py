"""Text lines of a PDF page with their boxes (PDFium's text page), grouped into paragraphs.

PDFium keeps the content stream's reading order (right for multi-column pages) and marks each
visual line break. A line is located by the union of the text rectangles PDFium reports for its
characters, in PDF points with the origin at the top left of the page as displayed (the crop box
shifted to the origin, y flipped, /Rotate applied). Its font size is the size of its middle
character times the vertical scale of that character's matrix (a 10 pt font drawn at 2x is 20 pt).

Paragraph breaks are restored from the baselines (a drop clearly larger than the usual line step,
or a jump back up as at a new column, starts a paragraph), and lines wrapped at the right margin
are joined again (without a space between CJK characters). A line whose text rectangles are far
apart (a table row) is a row of cells joined by " | " and keeps its line break.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.domain.models import Box, Locator
from ragsift.ingestion.parsers.base import CJK_CHARS, Block, normalize_inline, normalize_text

PARAGRAPH_GAP = 1.25  # a line drop this many times the usual step starts a paragraph
LINE_SPACING = 1.4  # ... and this many times the font size
MIN_STEPS = 3  # fewer lines than this on a page: no unwrapping, only clear gaps break
FEW_LINES_GAP = 2.0  # ... a drop of this many font sizes (a blank line at single spacing)
WRAPPED_WIDTH = 0.85  # a line this wide relative to the page's long lines was wrapped
CELL_GAP = 2.0  # text rectangles of one line further apart than this many font sizes: cells
HEADING_RATIO = 1.15  # a heading's font is this much larger than the body's ...
HEADING_MIN_STEP = 1.0  # ... and at least this many points larger
HEADING_MAX_CHARS = 80
MAX_HEADING_LEVELS = 6

_LINE_BREAK = re.compile(r"\r\n|[\r\n]")
_CJK = re.compile(f"[{CJK_CHARS}]")
_LIST_MARKER = re.compile(r"^(?:[•·●○◦▪■*–-]|\d{1,2}[.)]?|[a-z][.)]|\(\w{1,3}\))$")
_ITEM_START = re.compile(r"^(?:[•·●○◦▪■]|\d{1,2}[.)]|[a-z][.)]|\(\w{1,3}\))\s")
_SENTENCE_END = re.compile(r"[.!?;,。！？；，、…]$")
_WORDY = re.compile(r"[^\W\d_]")  # a letter or ideograph: not a bare number


@dataclass(frozen=True, slots=True)
class Line:
    """One visual line: its text, box (top-left origin), font size and baseline."""

    text: str
    box: Box
    size: float  # rendered font size in points
    baseline: float  # y of the baseline, from the top of the page as displayed
    cells: bool = False  # a table row: cells joined by " | ", never unwrapped

    @property
    def width(self) -> float:
        return self.box[2] - self.box[0]


class PageFrame:
    """Maps PDF user space of one page to the page as displayed, origin top left."""

    def __init__(self, cropbox: Sequence[float], rotation: int) -> None:
        self._left, self._bottom, self._right, self._top = (float(v) for v in cropbox)
        self._rotation = rotation % 360
        self.width = self._right - self._left
        self.height = self._top - self._bottom
        if self._rotation in (90, 270):
            self.width, self.height = self.height, self.width

    def point(self, x: float, y: float) -> tuple[float, float]:
        u, v = x - self._left, self._top - y
        w, h = self._right - self._left, self._top - self._bottom
        if self._rotation == 90:  # /Rotate turns the page clockwise for display
            return h - v, u
        if self._rotation == 180:
            return w - u, h - v
        if self._rotation == 270:
            return v, w - u
        return u, v

    def box(self, left: float, bottom: float, right: float, top: float) -> Box:
        x0, y0 = self.point(left, top)
        x1, y1 = self.point(right, bottom)
        return (
            round(min(x0, x1), 2), round(min(y0, y1), 2),
            round(max(x0, x1), 2), round(max(y0, y1), 2),
        )


def read_lines(textpage: Any, frame: PageFrame) -> list[Line]:
    """The page's non-blank lines in PDFium's reading order."""
    count = int(textpage.count_chars())
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    if len(text) != count:  # PDFium left chars out or put some in: read them one by one
        text = _char_by_char(textpage, count)
    text = text.replace("\x02", "-")  # PDFium's mark of a hyphen that ends a line
    lines: list[Line] = []
    start = 0
    for match in itertools.chain(_LINE_BREAK.finditer(text), [None]):
        end = len(text) if match is None else match.start()
        for first, part in _visual_lines(textpage, start, text[start:end]):
            line = _line(textpage, frame, first, part)
            if line is not None:
                lines.append(line)
        if match is not None:
            start = match.end()
    return lines


def _char_by_char(textpage: Any, count: int) -> str:
    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    return "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, i) or 32) for i in range(count))


def _visual_lines(textpage: Any, start: int, segment: str) -> list[tuple[int, str]]:
    """(first char index, text) of each visual line of a segment between PDFium's breaks.

    PDFium joins text objects on different baselines with a space when the next one starts far
    to the left (a table's next row): where the segment's text rectangles do not overlap
    vertically, it is cut by the baselines of its characters instead.
    """
    import pypdfium2.raw as pdfium_c

    stripped = segment.strip()
    if not stripped:
        return []
    first = start + len(segment) - len(segment.lstrip())
    rects = [textpage.get_rect(k) for k in range(textpage.count_rects(first, len(stripped)))]
    if all(
        min(a[3], b[3]) >= max(a[1], b[1]) for a, b in itertools.pairwise(rects)
    ):  # (left, bottom, right, top): each run overlaps the next vertically
        return [(first, stripped)]
    x, y = ctypes.c_double(), ctypes.c_double()
    cuts: list[int] = [0]
    previous: float | None = None
    for offset, char in enumerate(stripped):
        if char.isspace():
            continue
        pdfium_c.FPDFText_GetCharOrigin(textpage, first + offset, ctypes.byref(x), ctypes.byref(y))
        size = float(pdfium_c.FPDFText_GetFontSize(textpage, first + offset))
        if previous is not None and abs(y.value - previous) > max(size, 1.0) * 0.5:
            cuts.append(offset)
        previous = y.value
    cuts.append(len(stripped))
    parts = []
    for begin, end in itertools.pairwise(cuts):
        part = stripped[begin:end]
        if part.strip():
            parts.append((first + begin + len(part) - len(part.lstrip()), part.strip()))
    return parts


def _line(textpage: Any, frame: PageFrame, first: int, text: str) -> Line | None:
    import pypdfium2.raw as pdfium_c

    middle = first + len(text) // 2
    while middle > first and text[middle - first].isspace():
        middle -= 1
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFText_GetMatrix(textpage, middle, ctypes.byref(matrix)):
        matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f = 1, 0, 0, 1, 0, 0
    size = float(pdfium_c.FPDFText_GetFontSize(textpage, middle)) * math.hypot(matrix.c, matrix.d)
    rects = [textpage.get_rect(k) for k in range(textpage.count_rects(first, len(text)))]
    if not rects:
        return None
    boxes = sorted((frame.box(*rect), rect) for rect in rects)
    box = (
        min(b[0] for b, _ in boxes), min(b[1] for b, _ in boxes),
        max(b[2] for b, _ in boxes), max(b[3] for b, _ in boxes),
    )
    cells = any(
        after[0] - before[2] > CELL_GAP * max(size, 1.0)
        for (before, _), (after, _) in itertools.pairwise(boxes)
    )
    if cells:
        parts = (normalize_inline(textpage.get_text_bounded(*rect)) for _, rect in boxes)
        text = " | ".join(part for part in parts if part) or text
    baseline = frame.point(matrix.e, matrix.f)[1]
    return Line(normalize_inline(text), box, round(size, 2), baseline, cells)


def paragraphs(lines: Sequence[Line]) -> list[list[Line]]:
    """Cut a page's lines into paragraphs, from the vertical step between their baselines.

    A drop counts as a break when it exceeds both the usual line step of text in that font size
    (the lower quartile of its steps, so pages of short paragraphs still measure the
    in-paragraph step, and per size, so a table in small print does not set the step for body
    text) and the font size times a minimal line spacing. A jump back up the page (new column or
    block) also counts. A drop under half the font size (a bullet or superscript beside the
    text) is not a line step. With fewer than MIN_STEPS steps only a drop over FEW_LINES_GAP
    font sizes or a jump up counts.
    """
    if not lines:
        return []
    starts = [
        (index, line.baseline - above.baseline, round(min(above.size, line.size), 1))
        for index, (above, line) in enumerate(itertools.pairwise(lines), start=1)
    ]
    by_size: dict[float, list[float]] = {}
    for _, drop, size in starts:
        if drop > size * 0.5:
            by_size.setdefault(size, []).append(drop)
    steps = [drop for group in by_size.values() for drop in group]
    if len(steps) < MIN_STEPS:  # too few lines to learn the line step: only a clear gap counts
        few: list[list[Line]] = [[lines[0]]]
        for index, drop, size in starts:
            if drop > size * FEW_LINES_GAP or drop < -size:
                few.append([])
            few[-1].append(lines[index])
        return few
    usual = {
        size: _lower_quartile(group if len(group) >= MIN_STEPS else steps)
        for size, group in by_size.items()
    }
    groups: list[list[Line]] = [[lines[0]]]
    for index, drop, size in starts:
        step = usual.get(size, _lower_quartile(steps))
        if (drop > step * PARAGRAPH_GAP and drop > size * LINE_SPACING) or drop < -step * 2:
            groups.append([])
        groups[-1].append(lines[index])
    return groups


def _lower_quartile(values: list[float]) -> float:
    return sorted(values)[len(values) // 4]


def wrap_width(lines: Sequence[Line]) -> float | None:
    """The width from which a line of this page counts as wrapped; None: too few lines."""
    widths = sorted(line.width for line in lines if not line.cells)
    if len(widths) < MIN_STEPS:
        return None
    return widths[int((len(widths) - 1) * 0.9)] * WRAPPED_WIDTH


def paragraph_text(lines: Sequence[Line], full: float | None) -> str:
    """The lines of one paragraph, lines wrapped at the right margin joined again.

    A line counts as wrapped when it is nearly as wide as the page's long lines (`full`).
    Between two CJK characters the break disappears, after a hyphen too; elsewhere it becomes
    a space. Short lines (last lines), table rows and list items keep their break, except that
    a line holding only a list marker ("•", "3") is joined to the item text after it.
    """
    out = lines[0].text
    for previous, line in itertools.pairwise(lines):
        text = line.text
        if _LIST_MARKER.match(previous.text) and not line.cells:
            out = f"{out} {text}"
        elif (
            full is None or previous.cells or line.cells or previous.width < full
            or _LIST_MARKER.match(text) or _ITEM_START.match(text)
        ):
            out = f"{out}\n{text}"
        elif out.endswith("-") or (_is_cjk(out[-1]) and _is_cjk(text[0])):
            out += text
        else:
            out = f"{out} {text}"
    return normalize_text(out)


def body_size(lines: Sequence[Line]) -> float:
    """The most common font size of the document's text, weighted by characters."""
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[_size_class(line.size)] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def heading_levels(lines: Sequence[Line], body: float) -> dict[float, int]:
    """Heading level (1 = largest) of every font size that headings of this document use."""
    sizes = sorted({_size_class(line.size) for line in lines if is_heading(line, body)})
    return {
        size: min(rank, MAX_HEADING_LEVELS)
        for rank, size in enumerate(reversed(sizes), start=1)
    }


def heading_level(line: Line, levels: dict[float, int], body: float) -> int | None:
    return levels.get(_size_class(line.size)) if is_heading(line, body) else None


def is_heading(line: Line, body: float) -> bool:
    """Clearly larger than the body text, short, not a sentence, not a bare number."""
    return (
        body > 0
        and line.size >= body * HEADING_RATIO
        and line.size - body >= HEADING_MIN_STEP
        and not line.cells
        and len(line.text) < HEADING_MAX_CHARS
        and _SENTENCE_END.search(line.text) is None
        and _WORDY.search(line.text) is not None
    )


def _size_class(size: float) -> float:
    return round(size * 2) / 2  # half points: sizes that differ by rounding are one size


def join_wrapped(first: str, second: str) -> str:
    """Two lines of one heading or caption as one line."""
    if first.endswith("-") or (_is_cjk(first[-1]) and _is_cjk(second[0])):
        return first + second
    return f"{first} {second}"


def _is_cjk(char: str) -> bool:
    return _CJK.match(char) is not None


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    title: str


def page_entries(
    lines: Sequence[Line], number: int, level_of: Callable[[Line], int | None]
) -> list[Heading | Block]:
    """A page's headings and paragraph blocks (page=number, boxes of their lines) in order.

    `level_of` says which lines are headings; consecutive heading lines of one level in one
    paragraph (a wrapped heading) make one heading.
    """
    full = wrap_width(lines)
    entries: list[Heading | Block] = []
    for group in paragraphs(lines):
        run: list[Line] = []
        heading_open = False  # the last line of this paragraph was a heading line
        for line in group:
            level = level_of(line)
            if level is None:
                run.append(line)
                heading_open = False
                continue
            if run:
                entries.append(_block(run, full, number))
                run = []
            last = entries[-1] if entries else None
            if heading_open and isinstance(last, Heading) and last.level == level:
                entries[-1] = Heading(level, join_wrapped(last.title, line.text))
            else:
                entries.append(Heading(level, line.text))
            heading_open = True
        if run:
            entries.append(_block(run, full, number))
    return entries


def _block(lines: Sequence[Line], full: float | None, number: int) -> Block:
    boxes = tuple(line.box for line in lines)
    return Block(paragraph_text(lines, full), Locator(page=number, boxes=boxes))
