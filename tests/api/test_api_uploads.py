"""The streaming multipart reader: limits are enforced while the body arrives."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.requests import Request

from ragsift.api.errors import ApiError
from ragsift.api.uploads import UploadForm, UploadLimits, clean_filename, read_upload

BOUNDARY = "XyZ"
LIMITS = UploadLimits(file_field="files", extensions=frozenset({".txt"}), max_file_bytes=1000,
                      max_files=2, text_fields=frozenset({"source"}))


def _part(name: str, data: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    return (f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n").encode() + data + b"\r\n"


def _body(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def _request(chunks: list[bytes], consumed: list[int]) -> Request:
    """A request whose body arrives in `chunks`; `consumed` counts the chunks read."""
    messages = iter(chunks)

    async def receive() -> dict[str, Any]:
        chunk = next(messages, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        consumed.append(len(chunk))
        return {"type": "http.request", "body": chunk, "more_body": True}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [
        (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode())]}
    return Request(scope, receive)


def _read(chunks: list[bytes], consumed: list[int] | None = None) -> UploadForm:
    read: Callable[[], Awaitable[UploadForm]] = lambda: read_upload(  # noqa: E731
        _request(chunks, [] if consumed is None else consumed), LIMITS)
    return asyncio.run(read())


def test_files_and_fields_are_read_from_a_streamed_body() -> None:
    body = _body(_part("source", "手册".encode()), _part("files", b"alpha", "a.txt"),
                 _part("files", b"beta", "dir/b.TXT"))
    form = _read([body[i : i + 7] for i in range(0, len(body), 7)])
    try:
        assert form.fields == {"source": "手册"}
        assert [(f.filename, f.read(), f.size) for f in form.files] == [
            ("a.txt", b"alpha", 5), ("b.TXT", b"beta", 4)]
    finally:
        form.close()


def test_an_oversized_file_is_rejected_before_the_rest_of_the_body_is_read() -> None:
    chunks = [_part("files", b"", "big.txt")[:-2]] + [b"x" * 100] * 1000
    consumed: list[int] = []

    with pytest.raises(ApiError) as caught:
        _read(chunks, consumed)

    assert (caught.value.status, caught.value.code) == (413, "file_too_large")
    assert len(consumed) <= 12  # ~1 kB of a 100 kB body


def test_an_unsupported_type_is_rejected_at_its_part_headers() -> None:
    consumed: list[int] = []
    chunks = [_part("files", b"", "tool.exe")[:-2]] + [b"x" * 100] * 100
    with pytest.raises(ApiError) as caught:
        _read(chunks, consumed)
    assert (caught.value.status, caught.value.code) == (415, "unsupported_media_type")
    assert len(consumed) == 1


def test_too_many_files_are_rejected() -> None:
    body = _body(*(_part("files", b"x", f"{i}.txt") for i in range(3)))
    with pytest.raises(ApiError) as caught:
        _read([body])
    assert (caught.value.status, caught.value.code) == (413, "too_many_files")


@pytest.mark.parametrize("raw", ["", "/", "..", "a\x01b.txt", "x" * 300 + ".txt"])
def test_unusable_filenames_are_invalid(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        clean_filename(raw)
    assert (caught.value.status, caught.value.code) == (422, "invalid_request")


def test_a_filename_keeps_only_its_base_name() -> None:
    assert clean_filename("C:\\Users\\me\\报告.pdf") == "报告.pdf"
    assert clean_filename("../../etc/passwd.txt") == "passwd.txt"


def test_a_double_quote_a_browser_sent_as_percent_22_is_stored_as_typed() -> None:
    """Chromium and Firefox escape `"` in a multipart filename as %22 (the HTML standard)."""
    form = _read([_body(_part("files", b"alpha", 'the %22quoted%22 name.txt'))])
    try:
        assert [f.filename for f in form.files] == ['the "quoted" name.txt']
    finally:
        form.close()
