"""Server-sent events: the wire format, and a response that stops when the client goes away.

Starlette's StreamingResponse is kept (no sse-starlette dependency) with one change: it always
races the stream against the client's disconnect and then closes the event generator at once
(shielded from the cancellation), so the generator's cleanup - closing the model's HTTP stream,
storing the turn as cancelled - runs before the request ends, whatever ASGI spec version the
server speaks. Errors before the first event stay ordinary HTTP error responses, because the
route does everything that can fail that way before it returns this response.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping

import anyio
from pydantic import BaseModel
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_event(name: str, payload: BaseModel) -> str:
    """One event: `event: NAME`, `data: <one-line JSON>`, a blank line."""
    # JSON escapes every control character, so the data is always one line.
    return f"event: {name}\ndata: {payload.model_dump_json()}\n\n"


class EventStreamResponse(StreamingResponse):
    """`text/event-stream` from an async generator of ready-made events."""

    media_type = "text/event-stream"

    def __init__(
        self, events: AsyncGenerator[str, None], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(events, headers={**SSE_HEADERS, **(headers or {})})
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def stream() -> None:
                    # a connection that broke while sending is as good as a disconnect
                    with contextlib.suppress(OSError):
                        await self.stream_response(send)
                    group.cancel_scope.cancel()

                group.start_soon(stream)
                await self.listen_for_disconnect(receive)
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._events.aclose()
