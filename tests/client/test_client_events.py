"""The chat stream decoder reads what the server's own SSE encoder (api/sse.py) writes."""

from __future__ import annotations

from ragsift.api.error_body import ErrorBody
from ragsift.api.schemas_chat import DeltaEvent, DoneEvent
from ragsift.api.sse import sse_event
from ragsift.client.events import ChatEvent, ChatEventReader, SseDecoder


def _read(text: str) -> tuple[list[ChatEvent], bool]:
    reader = ChatEventReader()
    events = [e for line in text.splitlines() if (e := reader.feed(line)) is not None]
    return events, reader.ended


def test_the_servers_events_decode_into_the_same_models() -> None:
    sent = [DeltaEvent(text="line one\nline two: 年假"),
            DoneEvent(conversation_id="c", turn_id="t", extractive=True)]
    wire = sse_event("delta", sent[0]) + sse_event("done", sent[1])

    events, ended = _read(wire)

    assert events == sent
    assert ended


def test_an_error_event_ends_the_stream() -> None:
    events, ended = _read(sse_event("error", ErrorBody(code="chat_model_failed", message="x")))

    assert events == [ErrorBody(code="chat_model_failed", message="x")]
    assert ended


def test_comments_and_unknown_events_are_skipped_and_data_lines_join() -> None:
    wire = (": keep-alive\n\n"
            "event: progress\ndata: {\"percent\": 50}\n\n"
            "event: delta\ndata: {\"text\":\ndata: \"joined\"}\n\n")

    events, ended = _read(wire)

    assert events == [DeltaEvent(text="joined")]
    assert not ended  # no done yet: the client reports a stream cut short


def test_an_event_without_a_blank_line_after_it_is_not_dispatched() -> None:
    decoder = SseDecoder()

    assert decoder.feed("event: delta") is None
    assert decoder.feed('data: {"text": "x"}') is None
    assert decoder.feed("") == ("delta", '{"text": "x"}')
