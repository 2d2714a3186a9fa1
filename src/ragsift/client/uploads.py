"""Multipart bodies of uploads, read from disk in chunks, with a progress callback.

httpx builds the multipart stream (and its Content-Length); the client wraps it to count the
bytes handed to the connection. Files are opened per attempt, so a retried upload sends the
whole body again and its progress starts again from 0.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypedDict

import httpx

# (bytes sent so far, bytes of the whole body); the last call has sent == total
ProgressCallback = Callable[[int, int], None]
# a path, or (filename, content) for bytes or a binary file object that is not on disk
FileInput = str | os.PathLike[str] | tuple[str, bytes | IO[bytes]]


class UploadScope(TypedDict, total=False):
    """Who may see the uploaded documents (every file of one upload gets the same)."""

    source: str
    tenant_id: str
    dataset_id: str
    visibility: str
    allowed_roles: Sequence[str]  # none: every role may
    # the documents' metadata (docs/how-to/metadata-filters.md): JSON types, dates tagged
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Upload:
    """The files of one multipart field, text fields beside them, and who hears the progress."""

    form_field: str
    files: Sequence[FileInput]
    data: Mapping[str, str] = field(default_factory=dict)
    progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        if isinstance(self.files, (str, os.PathLike)):  # a str is a sequence of paths too
            raise TypeError("files is a list of files; use upload_document for one")
        if not self.files:
            raise ValueError("an upload needs at least one file")

    def request(self, client: httpx.Client | httpx.AsyncClient, url: str,
                stack: ExitStack) -> httpx.Request:
        """The POST request, its files opened on `stack` (closed when the attempt ends)."""
        parts: list[tuple[str, tuple[str, IO[bytes]]]] = []
        for item in self.files:
            if isinstance(item, tuple):
                name, content = item
                handle = io.BytesIO(content) if isinstance(content, bytes) else content
            else:
                path = Path(item)
                name, handle = path.name, stack.enter_context(path.open("rb"))
            parts.append((self.form_field, (name, handle)))
        request = client.build_request("POST", url, files=parts, data=dict(self.data))
        if self.progress is not None:
            total = int(request.headers.get("content-length", 0))
            request.stream = _Counting(request.stream, total, self.progress)
        return request


class _Counting(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A request body that reports how much of it has been handed to the connection."""

    def __init__(self, inner: httpx.SyncByteStream | httpx.AsyncByteStream, total: int,
                 progress: ProgressCallback) -> None:
        self._inner = inner
        self._total = total
        self._progress = progress

    def __iter__(self) -> Iterator[bytes]:
        assert isinstance(self._inner, httpx.SyncByteStream)
        sent = 0
        self._progress(0, self._total)
        for chunk in self._inner:
            yield chunk
            sent += len(chunk)
            self._progress(sent, max(self._total, sent))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._inner, httpx.AsyncByteStream)
        sent = 0
        self._progress(0, self._total)
        async for chunk in self._inner:
            yield chunk
            sent += len(chunk)
            self._progress(sent, max(self._total, sent))
