"""PDF via pypdf: one section per page, located by page number (from 1), no heading path.

pypdf's plain extraction keeps the content-stream reading order (right for multi-column pages,
unlike its layout mode) but writes no blank lines and keeps every visual line break. So paragraph
breaks are restored from the vertical position of each line (a drop clearly larger than the usual
line step, or a jump back up as at a new column, starts a paragraph), and lines wrapped at the
right margin are joined again (without a space between CJK characters). Tables come out a cell
per line. A PDF that needs a password is rejected; one encrypted with an empty user password
(print/copy restrictions only) is read.

Limits: pypdf stops any one stream at its own output limits (75 MB) or at what is left of
max_uncompressed_bytes, whichever is lower; the content streams and form XObjects of every page
are decoded (and counted) before its text is extracted, so all pages together decode at most
max_uncompressed_bytes. pypdf keeps what it decoded until the reader goes, which is why the bound
is over the whole document. Pages count against max_document_blocks, text against
max_document_chars; a breach of pypdf's own limits rejects the document with pypdf's reason."""

from __future__ import annotations

import io
import itertools
import logging
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from pypdf import PdfReader, apply_configuration, get_configuration
from pypdf.errors import LimitReachedError
from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

from ragsift.domain.errors import DocumentRejected
from ragsift.domain.models import Locator
from ragsift.ingestion.parsers.base import CJK_CHARS, ParsedDocument, Section, normalize_text
from ragsift.ingestion.parsers.limits import DEFAULT_LIMITS, ParseLimits, TextBudget, reject

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/pdf"

_PARAGRAPH_GAP = 1.25  # a line drop this many times the usual step starts a paragraph
_LINE_SPACING = 1.4  # ... and this many times the font size
_MIN_STEPS = 3  # fewer lines than this on a page: no paragraph detection or unwrapping
_WRAPPED_WIDTH = 0.85  # a line this wide relative to the page's long lines was wrapped
_CJK = re.compile(f"[{CJK_CHARS}]")
_LIST_MARKER = re.compile(r"^(?:[•·●○◦▪■*–-]|\d{1,2}[.)]?|[a-z][.)]|\(\w{1,3}\))$")
_MAX_REASON = 160
# pypdf's per-stream output limits (pypdf.Configuration, 6.18+); brotli only from 7.0
_OUTPUT_LIMITS = (
    "zlib_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "jbig2_maximum_output_length",
    "brotli_maximum_output_length",
    "array_based_stream_maximum_output_length",
)


def parse_pdf(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Extract the text of every page; pages without text are skipped."""
    if b"%PDF-" not in data[:1024]:
        raise DocumentRejected("file is not a PDF (no %PDF header)")
    own_limit = get_configuration().zlib_maximum_output_length  # pypdf's, before ours
    try:
        with _stream_output_limit(limits.max_uncompressed_bytes):
            return _parse(data, limits, own_limit)
    except LimitReachedError as exc:
        raise reject(f"PDF exceeds a parsing limit of pypdf ({_reason(exc)})") from exc


def _parse(data: bytes, limits: ParseLimits, pypdf_limit: int) -> ParsedDocument:
    try:
        reader = PdfReader(io.BytesIO(data))
    except LimitReachedError:
        raise
    except Exception as exc:  # pypdf raises many types for broken files
        raise DocumentRejected(f"PDF is corrupt or truncated ({_reason(exc)})") from exc
    if reader.is_encrypted:
        _decrypt_without_password(reader)
    try:
        pages = list(reader.pages)
    except LimitReachedError:
        raise
    except Exception as exc:
        raise DocumentRejected(f"PDF is corrupt or truncated ({_reason(exc)})") from exc
    if len(pages) > limits.max_document_blocks:
        raise reject(
            f"PDF has {len(pages):,} pages, over the limit of {limits.max_document_blocks:,} "
            "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
        )
    budget = TextBudget(limits)
    decoded = _DecodedBytes(limits.max_uncompressed_bytes, pypdf_limit)
    sections: list[Section] = []
    failed = 0
    for number, page in enumerate(pages, start=1):
        text = _page_text(page, number, decoded)
        if text is None:
            failed += 1
        elif text:
            budget.add_chars(len(text))
            sections.append(Section(heading_path=(), text=text, locator=Locator(page=number)))
    if not sections and failed:
        raise DocumentRejected(f"PDF is corrupt: text extraction failed on {failed} page(s)")
    if not sections:
        raise DocumentRejected("no extractable text (scanned PDF?)")
    logger.debug(
        "PDF: %d of %d pages with text, %d content bytes decoded",
        len(sections), len(pages), decoded.total,
    )
    return ParsedDocument(media_type=MEDIA_TYPE, sections=tuple(sections))


@contextmanager
def _stream_output_limit(limit: int) -> Iterator[None]:
    """Lower pypdf's per-stream output limits to `limit` (for this thread or task only)."""
    current = get_configuration()
    overwrites: dict[str, int] = {}
    for name in _OUTPUT_LIMITS:
        value = getattr(current, name, None)
        if isinstance(value, int):
            overwrites[name] = limit if value == 0 else min(value, limit)  # 0: unlimited
    with apply_configuration(current.with_overwrites(**overwrites)):
        yield


class _DecodedBytes:
    """Decodes the streams a page's text extraction reads, against one budget per document."""

    def __init__(self, limit: int, pypdf_limit: int) -> None:
        self._limit = limit
        self._pypdf_limit = pypdf_limit  # pypdf's own per-stream limit; 0: none
        self.total = 0
        self._seen: set[int] = set()  # ids of objects walked (pypdf keeps them alive)

    def remaining(self) -> int:
        return self._limit - self.total

    def decode_page(self, page: Any) -> None:
        """Decode the page's content streams and form XObjects; pypdf caches the results."""
        for stream in self._streams(page):
            # Which limit stops an over-long stream: what is left of ours, or pypdf's own.
            ours = self._pypdf_limit == 0 or self.remaining() < self._pypdf_limit
            try:
                with _stream_output_limit(max(1, self.remaining())):
                    self.total += len(stream.get_data())
            except LimitReachedError as exc:
                if ours:
                    raise self._over() from exc
                raise
            if self.total > self._limit:
                raise self._over()

    def _over(self) -> DocumentRejected:
        return reject(
            f"PDF content streams decode to more than {self._limit:,} bytes "
            "(RAGSIFT_MAX_UNCOMPRESSED_BYTES)"
        )

    def _streams(self, page: Any) -> Iterator[Any]:
        contents = _resolved(page.get("/Contents"))
        for item in contents if isinstance(contents, ArrayObject) else [contents]:
            stream = _resolved(item)
            if isinstance(stream, StreamObject) and self._first_time(stream):
                yield stream
        pending = [_resolved(page.get("/Resources"))]
        while pending:
            resources = pending.pop()
            # Pages often share one resource dictionary: walk it once, not once per page.
            if not isinstance(resources, DictionaryObject) or not self._first_time(resources):
                continue
            xobjects = _resolved(resources.get("/XObject"))
            if not isinstance(xobjects, DictionaryObject):
                continue
            for reference in xobjects.values():
                form = _resolved(reference)
                if (
                    isinstance(form, StreamObject)
                    and form.get("/Subtype") == "/Form"
                    and self._first_time(form)
                ):
                    yield form
                    pending.append(_resolved(form.get("/Resources")))

    def _first_time(self, pdf_object: Any) -> bool:
        if id(pdf_object) in self._seen:
            return False
        self._seen.add(id(pdf_object))
        return True


def _resolved(value: Any) -> Any:
    return value.get_object() if hasattr(value, "get_object") else value


def _decrypt_without_password(reader: PdfReader) -> None:
    try:
        opened = reader.decrypt("")
    except Exception as exc:  # e.g. AES without the optional cryptography package
        raise DocumentRejected("PDF is encrypted and cannot be opened") from exc
    if not opened:
        raise DocumentRejected("PDF is encrypted (password required)")


def _page_text(page: Any, number: int, decoded: _DecodedBytes) -> str | None:
    """Normalised text of one page with paragraphs restored; None if the page cannot be read."""
    fragments: list[_Fragment] = []

    def visit(text: str, cm: list[float], tm: list[float], _font: object, size: float) -> None:
        if text:
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            scale = math.hypot(tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3])
            fragments.append(_Fragment(text, y, abs(size * scale)))

    try:
        decoded.decode_page(page)
        with _stream_output_limit(max(1, decoded.remaining())):
            plain: str = page.extract_text(visitor_text=visit)
    except DocumentRejected:
        raise
    except LimitReachedError as exc:  # a limit, not a broken page: the document goes
        reason = f"PDF page {number} exceeds a parsing limit of pypdf ({_reason(exc)})"
        raise reject(reason) from exc
    except Exception as exc:  # one unreadable page must not lose the others
        logger.warning("PDF page %d: text extraction failed (%s); page skipped", number, exc)
        return None
    if "".join(fragment.text for fragment in fragments) != plain:
        return normalize_text(plain)  # the visitor saw different text: keep pypdf's own result
    return _unwrap_lines(normalize_text(_with_paragraph_breaks(fragments)))


class _Fragment(NamedTuple):
    text: str
    y: float  # baseline of the fragment's first line, in page space
    size: float  # rendered font size


def _with_paragraph_breaks(fragments: list[_Fragment]) -> str:
    """Join fragments, adding a blank line before a line that starts after a large gap.

    A gap counts when it exceeds both the usual line step of text in that font size (the lower
    quartile of its steps, so pages of short paragraphs still measure the in-paragraph step, and
    per size, so a table in small print does not set the step for body text) and the font size
    times a minimal line spacing. A jump back up the page (new column or block) also counts. A
    drop under half the font size (a bullet or superscript beside the text) is not a line step.
    """
    starts: list[tuple[int, float, float]] = []  # index, drop per line, smaller font size
    previous: _Fragment | None = None
    for index, fragment in enumerate(fragments):
        if index and not fragments[index - 1].text.endswith("\n"):
            continue
        if previous is not None:
            drop = (previous.y - fragment.y) / max(1, previous.text.count("\n"))
            starts.append((index, drop, round(min(previous.size, fragment.size), 1)))
        previous = fragment
    by_size: dict[float, list[float]] = {}
    for _, drop, size in starts:
        if drop > size * 0.5:
            by_size.setdefault(size, []).append(drop)
    steps = [drop for group in by_size.values() for drop in group]
    if len(steps) < _MIN_STEPS:
        return "".join(fragment.text for fragment in fragments)
    usual = {
        size: _lower_quartile(group if len(group) >= _MIN_STEPS else steps)
        for size, group in by_size.items()
    }
    breaks = set()
    for index, drop, size in starts:
        step = usual.get(size, _lower_quartile(steps))
        if (drop > step * _PARAGRAPH_GAP and drop > size * _LINE_SPACING) or drop < -step * 2:
            breaks.add(index)
    return "".join(
        ("\n" + fragment.text) if index in breaks else fragment.text
        for index, fragment in enumerate(fragments)
    )


def _lower_quartile(values: list[float]) -> float:
    return sorted(values)[len(values) // 4]


def _unwrap_lines(text: str) -> str:
    """Join lines that were wrapped at the right margin back into their paragraph.

    A line counts as wrapped when it is nearly as wide as the page's long lines (display width,
    a CJK character counting two). Between two CJK characters the break disappears, after a hyphen
    too; elsewhere it becomes a space. Short lines (headings, table cells, last lines) stay, except
    that a line holding only a list marker ("•", "3") is joined to the item text after it.
    """
    lines = text.split("\n")
    widths = sorted(_width(line) for line in lines if line)
    if len(widths) < _MIN_STEPS:
        return text
    full = widths[int((len(widths) - 1) * 0.9)] * _WRAPPED_WIDTH
    out: list[str] = [lines[0]]
    for previous, line in itertools.pairwise(lines):
        if not line or not previous or _LIST_MARKER.match(line):
            out.append(line)
        elif _LIST_MARKER.match(previous):
            out[-1] = f"{out[-1]} {line}"
        elif _width(previous) < full:
            out.append(line)
        elif previous.endswith("-") or (_is_cjk(previous[-1]) and _is_cjk(line[0])):
            out[-1] += line
        else:
            out[-1] = f"{out[-1]} {line}"
    return "\n".join(out)


def _width(line: str) -> int:
    return sum(2 if _is_cjk(char) else 1 for char in line)


def _is_cjk(char: str) -> bool:
    return _CJK.match(char) is not None


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:_MAX_REASON]
