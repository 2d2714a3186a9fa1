"""OCR with RapidOCR (PP-OCRv4 zh+en ONNX models), and OCR lines grouped into paragraph blocks.

The engine is optional (the `ocr` extra: pip install 'ragsift[ocr]') and imported only when an
image is read. One engine is created per process, lazily, with one intra-op and one inter-op
ONNX thread: documents are prepared one per worker process on two cores, so the parallelism is
across processes, and ONNX's own thread pool would only oversubscribe the cores
(benchmarks/ocr_pages.py measures both).

Time: OCR of one document is bounded by an OcrBudget (limits.ocr_timeout_s, wall clock). A single
image's recognition cannot be interrupted, so the budget bounds when work may start: read_lines
raises OcrTimeout instead of starting once the budget is spent, and the caller skips what is left
with a warning (OcrBudget.skipped_warning). The worker's per-document time limit bounds the rest.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import re
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import CJK_CHARS, Block, normalize_inline, normalize_text
from ragsift.ingestion.parsers.limits import ParseLimits

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

MIN_SCORE = 0.5  # recognised lines scored below this (0..1) are noise: dropped
ENGINE_THREADS = 1  # ONNX intra-op and inter-op threads of the per-process engine
# Paragraph grouping, in units of the text line's height (OCR boxes are padded, so the gap
# between two lines of one paragraph is small next to a blank line's).
PARAGRAPH_GAP = 0.8  # a vertical gap larger than this starts a new paragraph
INDENT = 1.0  # a line starting this much right of the previous one starts a paragraph
HEIGHT_CHANGE = 0.4  # a line this much taller or shorter (relative) starts one (headings)
PARAGRAPH_STEP = 1.3  # ... as does a line step this many times the page's usual step
HANGING_INDENT = 3.0  # how far a list item's wrapped lines may sit right of its marker
# A list item's marker: a bullet, "3." / "3)" / "(3)" / "（3）", or "一、" as in Chinese lists.
_LIST_ITEM = re.compile(
    r"^(?:[•·●○◦▪■*–]|\d{1,2}[.)、](?!\d)|[(（]\d{1,2}[)）]|[一二三四五六七八九十]{1,3}、)"
)
SHORT_LINE = 2.0  # a line ending this far left of its paragraph's right edge keeps its break
_MIN_STEPS = 3

_CJK = re.compile(f"[{CJK_CHARS}]")
_INSTALL_HINT = "pip install 'ragsift[ocr]'"
_engine: Any = None
_engine_lock = threading.Lock()


class OcrTimeout(Exception):
    """The document's OCR time budget was spent before this image could start (not a
    DocumentRejected: the caller skips the rest with a warning and keeps what was read)."""


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in the image's pixels
    score: float


def ocr_unavailable_reason(limits: ParseLimits) -> str | None:
    """None when OCR can run; else why not, naming the setting (RAGSIFT_OCR=off) or the extra
    (pip install 'ragsift[ocr]')."""
    if limits.ocr == "off":
        return "OCR is turned off (RAGSIFT_OCR=off)"
    # Found, not imported: importing loads onnxruntime and OpenCV (~100 MB) into a process
    # that may never OCR anything. A package that is found but broken fails in read_lines.
    try:
        found = importlib.util.find_spec("rapidocr_onnxruntime") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return f"OCR needs the optional rapidocr engine ({_INSTALL_HINT})"
    return None


class OcrBudget:
    """The per-document OCR time budget (limits.ocr_timeout_s), wall clock from creation."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limit_s = limits.ocr_timeout_s
        self._deadline = time.monotonic() + limits.ocr_timeout_s

    def exhausted(self) -> bool:
        return time.monotonic() >= self._deadline

    def skipped_warning(self, skipped: int, unit: str = "pages") -> str:
        """The warning a caller records for what it skipped once the budget was spent."""
        return (
            f"OCR stopped after its time limit of {self.limit_s:g} s (RAGSIFT_OCR_TIMEOUT_S): "
            f"{skipped} {unit} not read"
        )


def create_engine(threads: int = ENGINE_THREADS) -> Any:
    """A new RapidOCR engine with `threads` ONNX threads (-1: onnxruntime's default)."""
    from rapidocr_onnxruntime import RapidOCR  # type: ignore[import-untyped]

    # No angle classifier: it turned upright lines of rendered pages over (they then read as
    # nothing), and scans and renders are upright; it also costs time on every line.
    return RapidOCR(
        intra_op_num_threads=threads, inter_op_num_threads=threads, text_score=MIN_SCORE,
        use_cls=False, print_verbose=False,
    )


def _shared_engine() -> Any:
    global _engine
    with _engine_lock:
        if _engine is None:
            started = time.perf_counter()
            try:
                _engine = create_engine()
            except Exception as exc:  # ImportError, a missing model file, onnxruntime errors
                logger.exception("the OCR engine could not be loaded")
                raise DocumentRejected(
                    f"the OCR engine could not be loaded ({type(exc).__name__}: {exc}); "
                    f"reinstall it with {_INSTALL_HINT} or turn OCR off (RAGSIFT_OCR=off)"
                ) from exc
            logger.info("OCR engine loaded in %.2f s", time.perf_counter() - started)
        return _engine


def read_lines(
    image: Image.Image, budget: OcrBudget, engine: Any = None
) -> list[OcrLine]:
    """OCR one image (RGB). Raises OcrTimeout when the budget is exhausted before it starts.

    The engine (RapidOCR) is created once per process, lazily, with one intra-op ONNX thread;
    `engine` overrides it (benchmarks). Lines scored below MIN_SCORE are dropped. An engine
    that cannot be loaded is a DocumentRejected naming the extra.
    """
    if budget.exhausted():
        raise OcrTimeout(f"OCR time limit of {budget.limit_s:g} s spent")
    if image.mode != "RGB":
        image = image.convert("RGB")
    result, _elapsed = (_shared_engine() if engine is None else engine)(image)
    lines: list[OcrLine] = []
    for points, raw_text, raw_score in result or ():
        text, score = normalize_inline(str(raw_text)), float(raw_score)
        if not text or score < MIN_SCORE:
            continue
        xs = [float(point[0]) for point in points]
        ys = [float(point[1]) for point in points]
        lines.append(OcrLine(text, (min(xs), min(ys), max(xs), max(ys)), score))
    logger.debug("OCR: %d lines in a %dx%d image", len(lines), image.width, image.height)
    return lines


def lines_to_blocks(
    lines: Sequence[OcrLine], scale: float = 1.0, page: int | None = None
) -> list[Block]:
    """Group lines in reading order into paragraph Blocks (vertical gap / indentation), each
    with locator page=page and boxes = its lines' boxes divided by `scale` (pixels -> PDF
    points when the image was rendered at scale = dpi/72).

    Lines side by side (vertical centres within one another's box) form a row, read left to
    right and joined by a space. A row starts a new paragraph after a gap over PARAGRAPH_GAP
    line heights (the page's median), when indented INDENT heights right of the row above, when
    its height differs by HEIGHT_CHANGE, or (4+ rows) when its step down from the row above
    exceeds PARAGRAPH_STEP times the usual step. Rows of a paragraph are joined as wrapped
    text (no space between CJK characters); a row that ends early keeps its line break.
    Multi-column pages are read row by row across the columns.
    """
    rows = _rows(lines)
    if not rows:
        return []
    unit = _height([line for row in rows for line in row])
    steps = [_centre(row) - _centre(above) for above, row in itertools.pairwise(rows)]
    # The usual line step, as in pdf.py: the lower quartile, so short paragraphs still measure
    # the step inside a paragraph; too few steps to tell and only the gap rule applies.
    usual = sorted(steps)[len(steps) // 4] if len(steps) >= _MIN_STEPS else None
    paragraphs: list[list[list[OcrLine]]] = [[rows[0]]]
    for (above, row), step in zip(itertools.pairwise(rows), steps, strict=True):
        wide_step = usual is not None and step > PARAGRAPH_STEP * usual
        if wide_step or _starts_paragraph(paragraphs[-1][0], above, row, unit):
            paragraphs.append([])
        paragraphs[-1].append(row)
    blocks: list[Block] = []
    for paragraph in paragraphs:
        text = normalize_text(_paragraph_text(paragraph))
        boxes = tuple(
            (line.box[0] / scale, line.box[1] / scale, line.box[2] / scale, line.box[3] / scale)
            for row in paragraph for line in row
        )
        if text:
            blocks.append(Block(text, Locator(page=page, boxes=boxes)))
    return blocks


def _rows(lines: Sequence[OcrLine]) -> list[list[OcrLine]]:
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda item: (item.box[1] + item.box[3]) / 2):
        centre = (line.box[1] + line.box[3]) / 2
        if rows:
            first = rows[-1][0]
            if first.box[1] <= centre <= first.box[3] and (
                first.box[1] + first.box[3]
            ) / 2 >= line.box[1]:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda item: item.box[0]) for row in rows]


def _extent(row: Sequence[OcrLine]) -> tuple[float, float, float, float]:
    return (
        min(line.box[0] for line in row), min(line.box[1] for line in row),
        max(line.box[2] for line in row), max(line.box[3] for line in row),
    )


def _height(row: Sequence[OcrLine]) -> float:
    return max(1e-6, statistics.median(line.box[3] - line.box[1] for line in row))


def _centre(row: Sequence[OcrLine]) -> float:
    top, bottom = _extent(row)[1::2]
    return (top + bottom) / 2


def _starts_paragraph(
    first: Sequence[OcrLine], above: Sequence[OcrLine], row: Sequence[OcrLine], unit: float
) -> bool:
    """Whether `row` starts a paragraph after `above` (the current one starting at `first`).

    Gap and indentation are in units of the page's median line height. A list item (a row
    starting with a bullet or number) starts one; its wrapped lines under the item's text
    (a hanging indent, up to HANGING_INDENT right of the marker) continue it.
    """
    top, bottom = _extent(above), _extent(row)
    height_above, height = _height(above), _height(row)
    if bottom[1] - top[3] > PARAGRAPH_GAP * unit or _LIST_ITEM.match(row[0].text):
        return True
    indent = bottom[0] - top[0]
    if indent > INDENT * unit:
        hanging = _LIST_ITEM.match(first[0].text) is not None
        if not hanging or bottom[0] - _extent(first)[0] > HANGING_INDENT * unit:
            return True
    return abs(height - height_above) > HEIGHT_CHANGE * max(height, height_above)


def _paragraph_text(rows: Sequence[Sequence[OcrLine]]) -> str:
    right = max(_extent(row)[2] for row in rows)
    text = " ".join(item.text for item in rows[0])
    for previous, row in itertools.pairwise(rows):
        line = " ".join(item.text for item in row)
        if _extent(previous)[2] < right - SHORT_LINE * _height(previous):
            text += "\n" + line
        else:
            text += _wrap_separator(text, line) + line
    return text


def _wrap_separator(before: str, after: str) -> str:
    if before.endswith("-") or (_is_cjk(before[-1]) and _is_cjk(after[0])):
        return ""
    return " "


def _is_cjk(char: str) -> bool:
    return _CJK.match(char) is not None
