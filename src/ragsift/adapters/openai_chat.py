"""Streaming chat over any OpenAI-compatible `/v1/chat/completions` server (`stream: true`)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ragsift.adapters.http_post import (
    RetryPolicy,
    call_with_retries_async,
    capped_timeout,
    status_error,
    transport_error,
)
from ragsift.domain.chat import ChatMessage, TokenUsage
from ragsift.domain.errors import UpstreamError
from ragsift.observability.tracing import client_span

logger = logging.getLogger(__name__)

DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class ChunkDelta:
    """What one streamed chunk adds: text, and the finish reason on the last one."""

    content: str
    finish_reason: str | None = None
    usage: TokenUsage | None = None


class SseParser:
    """Server-sent events, line by line: `feed` returns the data of an event when it ends.

    Only `data:` fields matter here; comments (`:`), `event:`, `id:` and `retry:` are skipped.
    Several `data:` lines of one event are joined with newlines, as the SSE standard says.
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """The data of the event this (blank) line ends, else None."""
        if not line:
            return self.flush()
        if line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def flush(self) -> str | None:
        """The data of an event the stream ended without a blank line after."""
        if not self._data:
            return None
        data, self._data = "\n".join(self._data), []
        return data


def parse_chunk(data: str) -> ChunkDelta:
    """The delta of one `chat.completion.chunk`; UpstreamError for errors and bad chunks."""
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise UpstreamError(f"chat model sent a chunk that is not JSON: {data[:200]!r}") from exc
    if not isinstance(chunk, dict):
        raise UpstreamError(f"chat model sent a chunk that is not an object: {data[:200]!r}")
    if "error" in chunk:  # vLLM, OpenAI and others report mid-stream failures this way
        error = chunk["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise UpstreamError(f"chat model failed mid-answer: {str(message)[:200]}")
    usage = token_usage(chunk.get("usage"))
    choices = chunk.get("choices")
    if not choices:  # e.g. the usage chunk of stream_options.include_usage
        return ChunkDelta("", usage=usage)
    try:
        choice = choices[0]
        delta = choice.get("delta") or {}
        content = delta.get("content") or ""
        finish_reason = choice.get("finish_reason")
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise UpstreamError(f"chat model sent an unexpected chunk: {data[:200]!r}") from exc
    if not isinstance(content, str):
        raise UpstreamError(f"chat model sent non-text content: {data[:200]!r}")
    return ChunkDelta(content, finish_reason if isinstance(finish_reason, str) else None, usage)


def token_usage(value: object) -> TokenUsage | None:
    """OpenAI's `usage` object, when it has both counts as non-negative integers."""
    if not isinstance(value, dict):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    counts = (prompt, completion)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    assert isinstance(prompt, int) and isinstance(completion, int)
    return TokenUsage(prompt, completion)


def completion_content(payload: bytes) -> tuple[str, TokenUsage | None]:
    """The message of a whole (non-streamed) completion, for servers that ignore `stream`,
    and its usage when reported."""
    try:
        body = json.loads(payload)
        content = body["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise UpstreamError(
            f"chat model answered an unexpected envelope: {payload[:200]!r}"
        ) from exc
    if not isinstance(content, str):
        raise UpstreamError("chat model answered no message content")
    return content, token_usage(body.get("usage"))


class OpenAIChatModel:
    """Streams answers from a chat model; `base_url` ends in `/v1` as with the OpenAI SDK.

    `timeout_s` bounds connecting and each wait for the next piece of the stream, not the
    whole answer. Every call opens its own HTTP connection, so the model can be used from any
    event loop, and closing the stream early closes that connection: the server sees the
    client go away and can stop generating. Opening the stream is retried (`retry`, default:
    within `timeout_s`) until the response's status arrives; once text may have been
    received, a failure is final, since an answer cannot be taken back.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_tokens: int = 1024,
        temperature: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"chat base_url must be http(s), got {base_url!r}")
        if not model:
            raise ValueError("chat model name is required")
        if timeout_s <= 0:
            raise ValueError("chat timeout_s must be positive")
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_s
        self._model = model
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._transport = transport
        self._retry = RetryPolicy(budget_s=timeout_s) if retry is None else retry

    @property
    def model_name(self) -> str:
        return self._model

    def request_body(self, messages: Sequence[ChatMessage]) -> dict[str, Any]:
        """The JSON body of one streamed completion."""
        return {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self._temperature,
            "max_tokens": self._max_tokens,
            "stream": True,
            # the token counts come in a last chunk (OpenAI, vLLM, Ollama, llama.cpp)
            "stream_options": {"include_usage": True},
        }

    async def stream(
        self, messages: Sequence[ChatMessage]
    ) -> AsyncGenerator[str | TokenUsage, None]:
        """The answer's text deltas, then its TokenUsage when the server reported it;
        UpstreamError on HTTP errors, timeouts, broken streams."""
        finished = False
        usage: TokenUsage | None = None
        try:
            async with httpx.AsyncClient(
                headers=self._headers, timeout=self._timeout, transport=self._transport
            ) as client:
                response = await self._open(client, self.request_body(messages))
                try:
                    if "text/event-stream" not in response.headers.get("content-type", ""):
                        finished = True
                        content, whole_usage = completion_content(await response.aread())
                        yield content
                        if whole_usage is not None:
                            yield whole_usage
                        return
                    parser = SseParser()
                    async for line in response.aiter_lines():
                        data = parser.feed(line)
                        if data is None:
                            continue
                        if data == DONE:
                            finished = True
                            break
                        delta = parse_chunk(data)
                        usage = delta.usage or usage
                        if delta.content:
                            yield delta.content
                        if delta.finish_reason is not None:
                            finished = True
                            if delta.finish_reason == "length":
                                logger.warning(
                                    "chat answer cut at max_tokens=%d", self._max_tokens
                                )
                    tail = parser.flush()  # a last event without the blank line after it
                    if tail == DONE:
                        finished = True
                    elif tail is not None:
                        delta = parse_chunk(tail)
                        usage = delta.usage or usage
                        if delta.content:
                            yield delta.content
                        finished = finished or delta.finish_reason is not None
                finally:
                    await response.aclose()  # early close included: the server sees it at once
        except httpx.TimeoutException as exc:
            if finished:  # the answer is whole; only the closing [DONE] never came
                return
            raise UpstreamError(f"chat model timed out: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(f"chat model stream failed: {type(exc).__name__}: {exc}") from exc
        if not finished:
            raise UpstreamError("chat model stream ended before the answer was complete")
        if usage is not None:
            yield usage

    async def _open(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        """The streaming response once its status is below 400, retried as `retry` allows.

        Only this opening is retried: no text has arrived yet, so nothing can be duplicated.
        """

        async def send(time_left: float | None) -> httpx.Response:
            request = client.build_request(
                "POST", self._url, json=body, timeout=capped_timeout(client.timeout, time_left)
            )
            # the client span covers opening the stream (to its status), not its reading
            with client_span("chat model", request) as answered:
                try:
                    response = await client.send(request, stream=True)
                except httpx.TimeoutException as exc:
                    raise UpstreamError(f"chat model timed out: {type(exc).__name__}") from exc
                except httpx.HTTPError as exc:
                    raise transport_error(
                        exc, f"chat model stream failed: {type(exc).__name__}: {exc}"
                    ) from exc
                answered(response.status_code)
            if response.status_code >= 400:
                try:
                    text = (await response.aread()).decode("utf-8", "replace")
                finally:
                    await response.aclose()
                raise status_error("chat model", response.status_code, response.headers, text)
            return response

        return await call_with_retries_async(send, self._retry, "chat model")
