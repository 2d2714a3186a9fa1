"""OpenAIRewriter against a real fake-model server process (tests/support/llm_server.py)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from ragsift.adapters.openai_rewriter import SYSTEM_PROMPT, OpenAIRewriter, parse_proposal
from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RewriteProposal
from support.fixtures import LLMServer


def _rewriter(
    server: LLMServer, api_key: str | None = "sk-test", timeout_s: float = 5.0
) -> OpenAIRewriter:
    return OpenAIRewriter(f"{server.url}/v1", "qwen-plus", api_key=api_key, timeout_s=timeout_s)


def test_rewrite_sends_json_mode_request_and_returns_the_proposal(llm_server: LLMServer) -> None:
    proposal = _rewriter(llm_server).rewrite("vector database")

    assert proposal == RewriteProposal(method="expand", text="vector database overview")
    request = llm_server.last("chat")
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == "Bearer sk-test"
    assert request["body"] == {
        "model": "qwen-plus",
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "vector database"},
        ],
        "temperature": 0,
        "max_tokens": 512,
        "response_format": {"type": "json_object"},
        "stream": False,
    }


def test_system_prompt_asks_for_json_verbatim_numbers_and_the_query_language() -> None:
    # OpenAI rejects json_object mode unless the messages mention JSON.
    assert "JSON" in SYSTEM_PROMPT
    for needle in ("number", "date", "model number", "quoted name", "language", "原样"):
        assert needle in SYSTEM_PROMPT
    for method in ("step_back", "hyde", "expand", "none"):
        assert f'"{method}"' in SYSTEM_PROMPT


def test_chinese_query_round_trips_without_escaping_damage(llm_server: LLMServer) -> None:
    query = "华为 Mate 60 Pro 的发布日期是 2023-08-29 吗"
    proposal = _rewriter(llm_server).rewrite(query)
    assert proposal.text == f"{query} overview"
    assert llm_server.last("chat")["body"]["messages"][1]["content"] == query


def test_no_api_key_sends_no_authorization_header(llm_server: LLMServer) -> None:
    _rewriter(llm_server, api_key=None).rewrite("q")
    assert llm_server.last("chat")["authorization"] is None


def test_trailing_slash_in_base_url_is_tolerated(llm_server: LLMServer) -> None:
    OpenAIRewriter(f"{llm_server.url}/v1/", "m").rewrite("q")
    assert llm_server.last("chat")["path"] == "/v1/chat/completions"


def test_code_fenced_json_answer_is_accepted(llm_server: LLMServer) -> None:
    fenced = '```json\n{"method": "step_back", "text": "什么是 RAG"}\n```'
    llm_server.control(chat={"content": fenced})
    assert _rewriter(llm_server).rewrite("RAG 的检索阶段") == RewriteProposal(
        method="step_back", text="什么是 RAG"
    )


def test_think_block_before_the_json_is_ignored(llm_server: LLMServer) -> None:
    llm_server.control(chat={"content": '<think>hmm</think>\n{"method": "none", "text": "q"}'})
    assert _rewriter(llm_server).rewrite("q").method == "none"


def test_extra_fields_in_the_answer_are_ignored(llm_server: LLMServer) -> None:
    answer = json.dumps({"method": "hyde", "text": "A passage.", "confidence": 0.9})
    llm_server.control(chat={"content": answer})
    assert _rewriter(llm_server).rewrite("q") == RewriteProposal(method="hyde", text="A passage.")


def test_http_500_raises_upstream_error_with_the_status(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "error500"})
    with pytest.raises(UpstreamError, match="HTTP 500"):
        _rewriter(llm_server).rewrite("q")


def test_stall_past_the_timeout_raises_upstream_error_promptly(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "stall", "stall_s": 3})
    started = time.monotonic()
    with pytest.raises(UpstreamError, match="timed out"):
        _rewriter(llm_server, timeout_s=1.0).rewrite("q")
    assert time.monotonic() - started < 2.5


def test_non_json_http_body_raises_upstream_error(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "garbage"})
    with pytest.raises(UpstreamError, match="unexpected envelope"):
        _rewriter(llm_server).rewrite("q")


def test_envelope_without_choices_raises_upstream_error(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "no_choices"})
    with pytest.raises(UpstreamError, match="unexpected envelope"):
        _rewriter(llm_server).rewrite("q")


def test_message_content_that_is_not_json_raises_upstream_error(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "invalid_json"})
    with pytest.raises(UpstreamError, match="not JSON"):
        _rewriter(llm_server).rewrite("q")


def test_schema_invalid_answer_raises_upstream_error_naming_the_fields(
    llm_server: LLMServer,
) -> None:
    llm_server.control(chat={"mode": "schema"})  # {"method": "translate", "rewrite": 42}
    with pytest.raises(UpstreamError, match="schema") as caught:
        _rewriter(llm_server).rewrite("q")
    assert "method" in str(caught.value)
    assert "text" in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [
        '{"method": "expand"}',
        '{"text": "q overview"}',
        '{"method": "expand", "text": 42}',
        '["expand", "q overview"]',
        '"q overview"',
        "",
    ],
)
def test_missing_or_mistyped_fields_raise_upstream_error(
    llm_server: LLMServer, content: str
) -> None:
    llm_server.control(chat={"content": content})
    with pytest.raises(UpstreamError):
        _rewriter(llm_server).rewrite("q")


def test_text_over_the_proposal_limit_raises_upstream_error() -> None:
    with pytest.raises(UpstreamError, match="text"):
        parse_proposal(json.dumps({"method": "hyde", "text": "x" * 4001}))


def test_unreachable_server_raises_upstream_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on `port` once the socket is closed.
    with pytest.raises(UpstreamError, match="unreachable"):
        OpenAIRewriter(f"http://127.0.0.1:{port}/v1", "m", timeout_s=2.0).rewrite("q")


@pytest.mark.parametrize(
    ("base_url", "model", "timeout_s"),
    [("localhost:8000/v1", "m", 1.0), ("http://h/v1", "", 1.0), ("http://h/v1", "m", 0.0)],
)
def test_bad_configuration_is_refused_at_construction(
    base_url: str, model: str, timeout_s: float
) -> None:
    with pytest.raises(ValueError):
        OpenAIRewriter(base_url, model, timeout_s=timeout_s)


def test_fake_server_streams_sse_chunks_that_join_to_the_scripted_content(
    llm_server: LLMServer,
) -> None:
    # The chat adapter relies on this server's streaming shape; pin it here.
    llm_server.control(chat={"content": "你好, world: 2024-01-01"})
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    pieces: list[str] = []
    events: list[str] = []
    with httpx.stream("POST", f"{llm_server.url}/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            events.append(line[len("data: ") :])
            if events[-1] == "[DONE]":
                break
            chunk = json.loads(events[-1])
            assert chunk["object"] == "chat.completion.chunk"
            pieces.append(chunk["choices"][0]["delta"].get("content", ""))
    assert events[-1] == "[DONE]"
    assert len(events) > 3
    assert "".join(pieces) == "你好, world: 2024-01-01"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("status", [429, 502, 503, 504, "reset"])
def test_an_overloaded_or_lost_rewrite_request_is_retried(
    llm_server: LLMServer, status: int | str
) -> None:
    llm_server.control(faults={"chat": {"status": status, "retry_after": "0", "times": 1}})
    assert _rewriter(llm_server).rewrite("q") == RewriteProposal(method="expand",
                                                                 text="q overview")
    assert [a["answer"] for a in llm_server.attempts("chat")] == [status, 200]


def test_a_rejected_rewrite_request_is_not_retried(llm_server: LLMServer) -> None:
    llm_server.control(faults={"chat": {"status": 401, "times": 2}})
    with pytest.raises(UpstreamError, match="HTTP 401"):
        _rewriter(llm_server).rewrite("q")
    assert len(llm_server.attempts("chat")) == 1
