"""What the client tests share: the served keys, the handbook KB, the server's limits."""

from __future__ import annotations

from dataclasses import dataclass

from ragsift.client import Document, KbOut
from support.live_server import LiveServer

# small enough that a test can go over it quickly (413 while the body streams)
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Served:
    """The server and a key of each role."""

    server: LiveServer
    admin_key: str
    editor_key: str
    reader_key: str

    @property
    def url(self) -> str:
        return self.server.url


@dataclass(frozen=True)
class Handbook:
    """A knowledge base with two READY documents."""

    kb: KbOut
    hotels: Document
    leave: Document
