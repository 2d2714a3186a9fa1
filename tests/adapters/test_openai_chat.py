"""OpenAIChatModel against the real fake-model server process: streamed deltas, failures as
UpstreamError, and an early close that the server sees as the client going away."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence

import httpx
import pytest

from ragsift.adapters.openai_chat import (
    ChunkDelta,
    OpenAIChatModel,
    SseParser,
    parse_chunk,
)
from ragsift.domain.chat import ChatMessage, TokenUsage
from ragsift.domain.errors import UpstreamError
from support.fixtures import LLMServer

MESSAGES = (ChatMessage(role="system", content="rules"), ChatMessage(role="user", content="年假?"))


def _model(server: LLMServer, timeout_s: float = 5.0, api_key: str | None = None,
           max_tokens: int = 1024, temperature: float = 0.2) -> OpenAIChatModel:
    return OpenAIChatModel(f"{server.url}/v1", "qwen-plus", api_key=api_key, timeout_s=timeout_s,
                           max_tokens=max_tokens, temperature=temperature)


def _collect(model: OpenAIChatModel, messages: Sequence[ChatMessage] = MESSAGES) -> list[str]:
    async def run() -> list[str]:
        return [delta async for delta in model.stream(messages)]

    return asyncio.run(run())


def _wait_outcome(server: LLMServer, timeout_s: float = 10.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while True:
        record: dict[str, object] = server.last("stream")
        if record["outcome"] != "streaming" or time.monotonic() > deadline:
            return record
        time.sleep(0.02)


def test_streams_the_deltas_as_sent_with_the_request_body_and_key(llm_server: LLMServer) -> None:
    llm_server.control(chat={"deltas": ["年假最多结转五天[", "1](citation", "://1)。"]})
    model = _model(llm_server, api_key="sk-test", max_tokens=300, temperature=0.1)

    assert _collect(model) == ["年假最多结转五天[", "1](citation", "://1)。"]
    request = llm_server.last("chat")
    assert request["authorization"] == "Bearer sk-test"
    assert request["body"] == {
        "model": "qwen-plus",
        "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "年假?"}],
        "temperature": 0.1, "max_tokens": 300, "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert llm_server.last("stream") == {"pieces": 3, "sent": 3, "outcome": "complete"}
    assert model.model_name == "qwen-plus"


@pytest.mark.parametrize(("chat", "message"), [
    ({"mode": "error500"}, "HTTP 500"),
    ({"mode": "stream_cut", "answer": "a long answer cut short", "fail_after": 2},
     "ended before the answer was complete"),
    ({"mode": "stream_error", "answer": "a long answer", "fail_after": 1},
     "failed mid-answer: scripted mid-stream failure"),
    ({"mode": "stall", "stall_s": 2}, "timed out"),
    ({"mode": "garbage"}, "unexpected envelope"),
])
def test_failures_are_upstream_errors(
    llm_server: LLMServer, chat: dict[str, object], message: str
) -> None:
    llm_server.control(chat=chat)
    with pytest.raises(UpstreamError, match=message):
        _collect(_model(llm_server, timeout_s=0.5))


def test_deltas_before_a_mid_stream_failure_are_still_delivered(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "stream_cut", "deltas": ["one ", "two ", "three"],
                             "fail_after": 2})
    received: list[str] = []

    async def run() -> None:
        async for delta in _model(llm_server).stream(MESSAGES):
            received.append(delta)

    with pytest.raises(UpstreamError):
        asyncio.run(run())
    assert received == ["one ", "two "]


def test_closing_the_stream_early_closes_the_connection_the_server_streams_on(
    llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"answer": "x" * 400, "chunk_chars": 4, "delay_s": 0.02})

    async def first_two() -> list[str]:
        stream = _model(llm_server).stream(MESSAGES)
        received = [await anext(stream), await anext(stream)]
        await stream.aclose()
        return received

    assert asyncio.run(first_two()) == ["xxxx", "xxxx"]
    record = _wait_outcome(llm_server)
    assert record["outcome"] == "client_closed"
    assert isinstance(record["sent"], int) and record["sent"] < 100


def test_unreachable_server_is_an_upstream_error() -> None:
    model = OpenAIChatModel("http://127.0.0.1:9/v1", "m", timeout_s=1.0)
    with pytest.raises(UpstreamError, match="chat model stream failed"):
        _collect(model)


def test_a_server_ignoring_stream_true_is_read_as_one_completion() -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"},
                               "finish_reason": "stop"}]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=completion))
    model = OpenAIChatModel("http://model/v1", "m", transport=transport)
    assert _collect(model) == ["whole"]


def test_sse_parser_joins_data_lines_and_skips_other_fields() -> None:
    parser = SseParser()
    lines = [": keep-alive", "event: message", "id: 7", "data: {\"a\":", "data:1}", "",
             "", "data: [DONE]"]
    assert [parser.feed(line) for line in lines] == [None] * 5 + ['{"a":\n1}', None, None]
    assert parser.flush() == "[DONE]" and parser.flush() is None


def test_chunks_are_parsed_into_text_and_finish_reason() -> None:
    def chunk(**choice: object) -> str:
        return json.dumps({"choices": [{"index": 0, **choice}]})

    assert parse_chunk(chunk(delta={"content": "hi"}, finish_reason=None)) == ChunkDelta("hi")
    assert parse_chunk(chunk(delta={}, finish_reason="stop")) == ChunkDelta("", "stop")
    assert parse_chunk(chunk(delta={"role": "assistant", "content": None})) == ChunkDelta("")
    assert parse_chunk(json.dumps({"choices": [], "usage": {"total_tokens": 3}})) == ChunkDelta("")
    reported = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert parse_chunk(json.dumps({"choices": [], "usage": reported})) == ChunkDelta(
        "", usage=TokenUsage(3, 2))
    for bad in ("not json", "[1]", chunk(delta={"content": 5}), json.dumps({"choices": [1]})):
        with pytest.raises(UpstreamError):
            parse_chunk(bad)
    with pytest.raises(UpstreamError, match="overloaded"):
        parse_chunk(json.dumps({"error": {"message": "overloaded"}}))


def test_bad_configuration_is_refused_at_construction() -> None:
    for base_url, model, timeout in (("ftp://x/v1", "m", 1.0), ("http://x/v1", "", 1.0),
                                     ("http://x/v1", "m", 0.0)):
        with pytest.raises(ValueError):
            OpenAIChatModel(base_url, model, timeout_s=timeout)


@pytest.mark.parametrize("status", [429, 503, "reset"])
def test_opening_the_stream_is_retried_until_the_server_answers(
    llm_server: LLMServer, status: int | str
) -> None:
    llm_server.control(chat={"deltas": ["one ", "two"]},
                       faults={"chat": {"status": status, "retry_after": "0", "times": 2}})
    assert _collect(_model(llm_server)) == ["one ", "two"]
    assert [a["answer"] for a in llm_server.attempts("chat")] == [status, status, 200]
    # every piece went out; the client may close after the finish event, before [DONE]
    record = _wait_outcome(llm_server)
    assert record["sent"] == 2 and record["outcome"] in ("complete", "client_closed")


def test_retry_after_is_waited_before_the_stream_is_opened_again(llm_server: LLMServer) -> None:
    llm_server.control(chat={"deltas": ["ok"]},
                       faults={"chat": {"status": 429, "retry_after": "1", "times": 1}})
    assert _collect(_model(llm_server)) == ["ok"]
    first, second = llm_server.attempts("chat")
    assert second["t"] - first["t"] >= 1.0


def test_a_stream_that_breaks_after_its_first_piece_is_not_retried(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "stream_cut", "deltas": ["one ", "two"], "fail_after": 1})
    with pytest.raises(UpstreamError, match="ended before the answer was complete"):
        _collect(_model(llm_server))
    assert len(llm_server.attempts("chat")) == 1


def test_a_rejected_chat_request_is_not_retried(llm_server: LLMServer) -> None:
    llm_server.control(faults={"chat": {"status": 400, "times": 2}})
    with pytest.raises(UpstreamError, match="chat model answered HTTP 400") as caught:
        _collect(_model(llm_server))
    assert "gave up" not in str(caught.value)
    assert len(llm_server.attempts("chat")) == 1


def test_chat_retries_stop_at_the_timeout_budget(llm_server: LLMServer) -> None:
    llm_server.control(faults={"chat": {"status": 503, "retry_after": "1"}})
    with pytest.raises(UpstreamError, match=r"HTTP 503.*gave up after 2 attempts"):
        _collect(_model(llm_server, timeout_s=1.5))
    assert len(llm_server.attempts("chat")) == 2


def test_a_request_stalled_past_a_reset_does_not_overwrite_the_next_streams_record(
    llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"mode": "stall", "stall_s": 0.6})
    with pytest.raises(UpstreamError, match="timed out"):
        _collect(_model(llm_server, timeout_s=0.2))
    llm_server.reset()  # the next test; the stalled request wakes up during its stream
    llm_server.control(chat={"deltas": ["one ", "two"], "delay_s": 0.4})
    assert _collect(_model(llm_server)) == ["one ", "two"]
    time.sleep(0.3)  # the stalled request has streamed to its gone client by now
    assert _wait_outcome(llm_server)["sent"] == 2
