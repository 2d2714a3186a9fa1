"""Multipart uploads read as a stream: each file's type and size are checked as it arrives.

A file over the limit is rejected (413) as soon as its bytes pass the limit, without reading the
rest of the body; an unsupported extension (415) as soon as its part headers arrive. Files are
spooled (memory first, then a temporary file), so many uploads never sit in memory at once.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePath
from tempfile import SpooledTemporaryFile

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from ragsift.api.errors import ApiError

SPOOL_BYTES = 1024 * 1024
MAX_FILENAME_CHARS = 255


def invalid(message: str) -> ApiError:
    """A 422 for a malformed upload."""
    return ApiError(422, "invalid_request", message)


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """What one upload request may carry."""

    file_field: str
    extensions: frozenset[str]
    max_file_bytes: int
    max_files: int
    text_fields: frozenset[str] = frozenset()
    max_field_bytes: int = 4096


@dataclass
class UploadedFile:
    """One received file: its cleaned name and its spooled bytes."""

    filename: str
    spool: SpooledTemporaryFile[bytes]
    size: int = 0

    def read(self) -> bytes:
        """Every byte of the file."""
        self.spool.seek(0)
        return self.spool.read()


@dataclass
class UploadForm:
    """The files and text fields of one multipart body."""

    files: list[UploadedFile] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        """Release the spooled files."""
        for uploaded in self.files:
            uploaded.spool.close()


def clean_filename(raw: str) -> str:
    """The base name of an uploaded file, or a 422 when it is unusable."""
    name = PurePath(raw.replace("\\", "/")).name.strip()
    if not name or name in (".", ".."):
        raise invalid("every uploaded file needs a filename")
    if len(name) > MAX_FILENAME_CHARS:
        raise invalid(f"filename longer than {MAX_FILENAME_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
        raise invalid("filename contains control characters")
    return name


def browser_filename(raw: str) -> str:
    """A multipart filename as the user named it: browsers send `"` as `%22` (the HTML
    standard's form encoding; CR and LF become %0D and %0A, which no filename may hold)."""
    return raw.replace("%22", '"')


def _decode(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


class _Collector:
    """python-multipart callbacks that build an UploadForm and enforce UploadLimits."""

    def __init__(self, limits: UploadLimits) -> None:
        self.limits = limits
        self.form = UploadForm()
        self.finished = False
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._field: str | None = None
        self._file: UploadedFile | None = None
        self._text = bytearray()

    def on_part_begin(self) -> None:
        self._disposition, self._field, self._file = b"", None, None
        self._text = bytearray()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name, self._header_value = b"", b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise invalid("a multipart part has no Content-Disposition name")
        name = _decode(options[b"name"])
        limits = self.limits
        if b"filename" not in options:
            if name not in limits.text_fields:
                raise invalid(f"unexpected form field {name!r}; allowed: "
                              f"{', '.join(sorted(limits.text_fields)) or 'none'}")
            self._field = name
            return
        if name != limits.file_field:
            raise invalid(f"files go in the {limits.file_field!r} field, not {name!r}")
        if len(self.form.files) >= limits.max_files:
            raise ApiError(413, "too_many_files", f"at most {limits.max_files} files per request")
        filename = clean_filename(browser_filename(_decode(options[b"filename"])))
        suffix = PurePath(filename).suffix.lower()
        if suffix not in limits.extensions:
            raise ApiError(415, "unsupported_media_type",
                           f"{filename}: unsupported file type {suffix or '(no extension)'}; "
                           f"supported: {', '.join(sorted(limits.extensions))}")
        self._file = UploadedFile(filename, SpooledTemporaryFile(max_size=SPOOL_BYTES))  # noqa: SIM115
        self.form.files.append(self._file)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._file is not None:
            self._file.size += len(chunk)
            if self._file.size > self.limits.max_file_bytes:
                raise ApiError(413, "file_too_large",
                               f"{self._file.filename}: over the limit of "
                               f"{self.limits.max_file_bytes} bytes")
            self._file.spool.write(chunk)
            return
        self._text += chunk
        if len(self._text) > self.limits.max_field_bytes:
            raise invalid(f"form field {self._field!r} is over {self.limits.max_field_bytes} bytes")

    def on_part_end(self) -> None:
        if self._field is not None:
            try:
                self.form.fields[self._field] = self._text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise invalid(f"form field {self._field!r} is not UTF-8") from exc

    def on_end(self) -> None:
        self.finished = True


async def read_upload(request: Request, limits: UploadLimits) -> UploadForm:
    """Parse a multipart/form-data body under `limits`; raises ApiError (413, 415, 422)."""
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data":
        raise ApiError(415, "unsupported_media_type", "the body must be multipart/form-data")
    boundary = params.get(b"boundary")
    if not boundary:
        raise invalid("multipart body without a boundary")
    collector = _Collector(limits)
    callbacks = {name: getattr(collector, name) for name in (
        "on_part_begin", "on_header_field", "on_header_value", "on_header_end",
        "on_headers_finished", "on_part_data", "on_part_end", "on_end",
    )}
    try:
        parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
        if not collector.finished:
            raise invalid("the multipart body ended before its closing boundary")
        if not collector.form.files:
            raise invalid(f"no file in the {limits.file_field!r} field")
    except (FormParserError, ValueError) as exc:  # ValueError: e.g. an unusable boundary
        collector.form.close()
        raise invalid(f"malformed multipart body: {exc}") from exc
    except BaseException:
        collector.form.close()
        raise
    return collector.form
