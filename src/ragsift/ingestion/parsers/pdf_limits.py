"""The check a PDF passes (with pypdf) before PDFium reads it: structure, encryption, sizes.

pypdf reads the cross-reference table and the page tree, rejects a file that needs a password
(one encrypted with an empty user password, print/copy restrictions only, is read), counts the
pages against max_document_blocks, and decodes the content streams and form XObjects of every
page against max_uncompressed_bytes: PDFium decodes the same streams, in C, with no limit of its
own. pypdf stops any one stream at its own output limits (75 MB) or at what is left of
max_uncompressed_bytes, whichever is lower, so all pages together decode at most
max_uncompressed_bytes; a breach of pypdf's own limits rejects the document with pypdf's reason.
What pypdf decoded is dropped with the reader before PDFium starts. Images are not decoded here
(pdf_images.py checks their declared pixels before PDFium decodes one).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pypdf import PdfReader, apply_configuration, get_configuration
from pypdf.errors import LimitReachedError
from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.limits import ParseLimits, reject

logger = logging.getLogger(__name__)

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


def check_structure(data: bytes, limits: ParseLimits) -> int:
    """The number of pages, once the PDF has passed every check; DocumentRejected if not."""
    own_limit = get_configuration().zlib_maximum_output_length  # pypdf's, before ours
    try:
        with _stream_output_limit(limits.max_uncompressed_bytes):
            return _check(data, limits, own_limit)
    except LimitReachedError as exc:
        raise reject(f"PDF exceeds a parsing limit of pypdf ({reason_of(exc)})") from exc


def _check(data: bytes, limits: ParseLimits, pypdf_limit: int) -> int:
    try:
        reader = PdfReader(io.BytesIO(data))
    except LimitReachedError:
        raise
    except Exception as exc:  # pypdf raises many types for broken files
        raise DocumentRejected(f"PDF is corrupt or truncated ({reason_of(exc)})") from exc
    if reader.is_encrypted:
        _decrypt_without_password(reader)
    try:
        pages = list(reader.pages)
    except LimitReachedError:
        raise
    except Exception as exc:
        raise DocumentRejected(f"PDF is corrupt or truncated ({reason_of(exc)})") from exc
    if len(pages) > limits.max_document_blocks:
        raise reject(
            f"PDF has {len(pages):,} pages, over the limit of {limits.max_document_blocks:,} "
            "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
        )
    decoded = _DecodedBytes(limits.max_uncompressed_bytes, pypdf_limit)
    for number, page in enumerate(pages, start=1):
        try:
            decoded.decode_page(page)
        except DocumentRejected:
            raise
        except LimitReachedError as exc:  # a limit, not a broken page: the document goes
            reason = f"PDF page {number} exceeds a parsing limit of pypdf ({reason_of(exc)})"
            raise reject(reason) from exc
        except Exception as exc:  # a stream pypdf cannot decode: PDFium may still read it
            logger.info("PDF page %d: content not decoded by pypdf (%s)", number, exc)
    logger.debug("PDF: %d pages, %d content bytes decoded", len(pages), decoded.total)
    return len(pages)


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


def reason_of(exc: Exception) -> str:
    """An exception's message on one line, cut to a length fit for a rejection reason."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:_MAX_REASON]
