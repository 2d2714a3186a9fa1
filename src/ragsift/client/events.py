"""The server-sent events of `/api/chat/stream`, decoded into the API's own models.

The server sends `trace`, zero or more `delta`, `citations`, `done`; or `error` instead of the
rest (routes_chat.py). Each event is one `event:` line, one `data:` line of JSON and a blank
line; the decoder follows the SSE rules a little further (several data lines, comments), and
skips event names it does not know, so a newer server's extra events do not break it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ragsift.api.error_body import ErrorBody
from ragsift.api.schemas_chat import CitationsEvent, DeltaEvent, DoneEvent, TraceEvent
from ragsift.client.errors import RagsiftConnectionError

logger = logging.getLogger("ragsift.client")

ChatEvent = TraceEvent | DeltaEvent | CitationsEvent | DoneEvent | ErrorBody
"""One event of a streamed chat turn; an `error` event is an ErrorBody (code, message)."""

_PARSERS: dict[str, Callable[[str], ChatEvent]] = {
    "trace": TraceEvent.model_validate_json,
    "delta": DeltaEvent.model_validate_json,
    "citations": CitationsEvent.model_validate_json,
    "done": DoneEvent.model_validate_json,
    "error": ErrorBody.model_validate_json,
}


def is_last(event: ChatEvent) -> bool:
    """Whether the stream ends with this event."""
    return isinstance(event, (DoneEvent, ErrorBody))


class SseDecoder:
    """Lines in, `(name, data)` out at each blank line that ends an event."""

    def __init__(self) -> None:
        self._name = ""
        self._data: list[str] = []

    def feed(self, line: str) -> tuple[str, str] | None:
        if not line:
            name, data = self._name or "message", self._data
            self._name, self._data = "", []
            return (name, "\n".join(data)) if data else None
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            self._name = value
        elif key == "data":
            self._data.append(value)
        return None


def chat_event(name: str, data: str) -> ChatEvent | None:
    """The typed event, or None for an event name this client does not know."""
    parse = _PARSERS.get(name)
    if parse is None:
        logger.debug("skipping unknown chat stream event %r", name)
        return None
    return parse(data)


class ChatEventReader:
    """The lines of a chat stream in, its typed events out; `ended` after done or error."""

    def __init__(self) -> None:
        self._decoder = SseDecoder()
        self.ended = False

    def feed(self, line: str) -> ChatEvent | None:
        frame = self._decoder.feed(line)
        event = None if frame is None else chat_event(*frame)
        if event is not None and is_last(event):
            self.ended = True
        return event

    @staticmethod
    def cut_short() -> RagsiftConnectionError:
        """The error for a stream that closed before its done or error event."""
        return RagsiftConnectionError("the chat stream ended before its done or error event "
                                      "(the server stopped or the connection was cut)")
