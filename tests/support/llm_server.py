"""A scriptable fake model server (chat completions + three rerank shapes), run as a process.

Run `python llm_server.py`: it binds 127.0.0.1 on a free port and writes `PORT <n>` on stdout.
Behaviour is set per test with `POST /_control`; `GET /_last` returns the last request bodies.
Control body: {"chat": {"mode": ..., "content": str, "stall_s": float, "scopes": {message:
in_scope bool, for scope classifications}, "answers": {follow-up
question: its standalone question} (answers the standalone-question prompt per question)},
"rerank": {"mode": ..., "stall_s": float, "raw": <JSON answer>, "raw_body": <answer text sent
verbatim, e.g. with the JSON literals Infinity / NaN that json.dumps of a control body refuses>},
"embeddings": {"dimension": int, "latency_s": float, "refuse": str, "count_tokens": bool},
"faults": {<group>: <fault>}, "reset": bool}.

`POST /v1/embeddings` answers OpenAI embeddings: hashed bags of words (similar texts, similar
vectors), `dimension` 384 by default, after `latency_s` (a hosted embedder's round trip);
HTTP 400 for a request holding a text that contains `refuse`; with `count_tokens`, e5's
token count of the inputs as usage.total_tokens (ragsift's E5Tokenizer, as the client counts).
`GET /_embedding_log` returns {"max_in_flight": most requests answered at once, "requests":
[{"t": arrival, "done": answer sent, "inputs": n, "tokens": n or null, "answer": status}]},
every embeddings request since the last reset, faulted ones included.

Faults make a group of routes ("embeddings", "chat", "rerank": all three shapes) fail before
its normal answer: {"status": 429 | 502 | ... | "reset" (close the connection without an
answer), "retry_after": str (the Retry-After header, sent as given), "times": int (the first K
requests fail) or "for_s": float (requests within T seconds of the group's first request fail;
neither: every request fails), "body": JSON}. `GET /_attempts` returns every request per group
since the fault was set (or the last reset): [{"t": server monotonic seconds, "answer": status
or "reset"}].

Streamed chat (`stream: true`) answers OpenAI SSE chunks. Chat options for streams only:
"answer": str (the streamed text; else as without streaming), "deltas": [str] (exact pieces;
else pieces of "chunk_chars", default 8), "delay_s": float (sleep before each piece: a slow
stream), "fail_after": int (pieces sent before modes "stream_cut" drop the connection or
"stream_error" send an OpenAI error event). `GET /_last` then holds "stream": {"pieces",
"sent", "outcome"}, where outcome is "streaming", "complete", "cut", "error" or
"client_closed" (the client closed the connection before the end).
"""

from __future__ import annotations

import json
import re
import socket
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_MODES = {
    "ok", "error500", "stall", "garbage", "invalid_json", "schema", "no_choices",
    "stream_cut", "stream_error",
}
RERANK_MODES = {
    "ok", "error500", "stall", "garbage", "out_of_range", "duplicates", "empty", "short",
    "missing_fields",
}
RERANK_PATHS = {"/v1/rerank": "cohere", "/tei/rerank": "tei", "/dashscope/text-rerank": "dashscope"}
FAULT_GROUPS = {"embeddings", "chat", "rerank"}
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _reset() -> None:
    with _lock:
        _state.clear()
        _state.update(
            chat={"mode": "ok"}, rerank={"mode": "ok"}, embeddings={}, last={}, faults={},
            attempts={group: [] for group in FAULT_GROUPS}, first_request={},
            embedding_log={"max_in_flight": 0, "requests": []}, in_flight=0,
        )


_tokenizer: Any = None


def _count_tokens(texts: list[str]) -> int:
    global _tokenizer
    if _tokenizer is None:
        from ragsift.adapters.e5_tokenizer import E5Tokenizer

        _tokenizer = E5Tokenizer()
    return sum(_tokenizer.count_tokens(text) for text in texts)


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def overlap_scores(query: str, documents: list[str]) -> list[tuple[int, float]]:
    """(index, share of query tokens found in the document), best first, ties by index."""
    wanted = _tokens(query)
    scored = [
        (i, round(len(wanted & _tokens(doc)) / len(wanted), 6) if wanted else 0.0)
        for i, doc in enumerate(documents)
    ]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def hashed_embedding(text: str, dimension: int) -> list[float]:
    """A bag of words hashed into `dimension` counts; slot 0 is always set, so never zero."""
    vector = [0.0] * dimension
    vector[0] = 1.0
    for token in _TOKEN.findall(text.lower()):
        vector[zlib.crc32(token.encode()) % dimension] += 1.0
    return vector


def _fault_now(group: str) -> dict[str, Any] | None:
    """Record a request of `group`; the fault it must answer with, if one applies."""
    with _lock:
        now = time.monotonic()
        first = _state["first_request"].setdefault(group, now)
        fault: dict[str, Any] | None = _state["faults"].get(group)
        seen = len(_state["attempts"][group])
        applies = fault is not None and (
            seen < int(fault["times"]) if "times" in fault
            else now - first < float(fault["for_s"]) if "for_s" in fault
            else True
        )
        answer = (fault or {}).get("status") if applies else 200
        _state["attempts"][group].append({"t": now, "answer": answer})
        return fault if applies else None


FOLLOW_UP_LABEL = "Follow-up question: "
SCOPE_LABEL = "Message: "  # a scope classification (OpenAIRewriter.in_scope)


def _chat_content(config: dict[str, Any], body: dict[str, Any]) -> str:
    if "content" in config:
        return str(config["content"])
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    last = str(users[-1].get("content", "")) if users else ""
    answers: dict[str, str] = config.get("answers") or {}
    if FOLLOW_UP_LABEL in last and answers:  # a standalone-question request, scripted per question
        question = last.rsplit(FOLLOW_UP_LABEL, 1)[1].strip()
        text = answers.get(question, question)
        return json.dumps({"method": "standalone", "text": text}, ensure_ascii=False)
    scopes: dict[str, bool] = config.get("scopes") or {}
    if SCOPE_LABEL in last and "Knowledge base domain: " in last and config["mode"] == "ok":
        # scripted per message; unscripted messages are in scope (the prompt's default)
        message = last.rsplit(SCOPE_LABEL, 1)[1].strip()
        return json.dumps({"in_scope": scopes.get(message, True)})
    mode = config["mode"]
    if mode == "invalid_json":
        return "Sure! Here is a rewrite: {method: expand"
    if mode == "schema":
        return json.dumps({"method": "translate", "rewrite": 42})
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    query = str(users[-1].get("content", "")) if users else ""
    return json.dumps({"method": "expand", "text": f"{query} overview"}, ensure_ascii=False)


def _ranked(config: dict[str, Any], query: str, docs: list[str]) -> list[tuple[int, float]]:
    ranked = overlap_scores(query, docs)
    mode = config["mode"]
    if mode == "out_of_range":
        ranked = [*ranked, (len(docs), 0.5)]
    elif mode == "duplicates" and ranked:
        ranked = [ranked[0], *ranked]
    elif mode == "empty":
        ranked = []
    elif mode == "short":
        ranked = ranked[:1]
    return ranked


class Handler(BaseHTTPRequestHandler):
    """Routes one request; behaviour comes from the shared state set through /_control."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: stderr is a file nobody reads unless start-up fails

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        elif self.path == "/_last":
            with _lock:
                self._json(200, _state["last"])
        elif self.path == "/_attempts":
            with _lock:
                self._json(200, _state["attempts"])
        elif self.path == "/_embedding_log":
            with _lock:
                self._json(200, _state["embedding_log"])
        else:
            self._json(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": "request body is not JSON"})
            return
        if self.path == "/_control":
            self._control(body)
            return
        kind: str | None = {
            "/v1/embeddings": "embeddings", "/v1/chat/completions": "chat", **RERANK_PATHS,
        }.get(self.path)
        if kind is None:
            self._json(404, {"error": f"no route {self.path}"})
            return
        if kind == "embeddings":
            self._logged_embeddings(body)
            return
        group = kind if kind == "chat" else "rerank"
        fault = _fault_now(group)
        if fault is not None:
            self._fault(fault)
            return
        with _lock:
            # what this request records later (its stream) goes to the records of the test it
            # arrived in: a request stalled past a reset must not overwrite the next test's
            self._last: dict[str, Any] = _state["last"]
            self._last[kind] = {
                "path": self.path,
                "authorization": self.headers.get("Authorization"),
                # W3C trace context, which a traced ragsift passes on
                "traceparent": self.headers.get("traceparent"),
                "baggage": self.headers.get("baggage"),
                "body": body,
            }
            config = dict(_state["chat" if kind == "chat" else "rerank"])
        if self._failed(config):
            return
        if kind == "chat":
            self._chat(config, body)
        else:
            self._rerank(kind, config, body)

    def _control(self, body: dict[str, Any]) -> None:
        if body.get("reset"):
            _reset()
        with _lock:
            if "embeddings" in body:
                _state["embeddings"] = dict(body["embeddings"])
            for group, fault in body.get("faults", {}).items():
                if group not in FAULT_GROUPS:
                    self._json(400, {"error": f"unknown fault group {group}"})
                    return
                # a new script: count its requests and its time window afresh
                _state["faults"][group] = fault
                _state["attempts"][group] = []
                _state["first_request"].pop(group, None)
            for section, modes in (("chat", CHAT_MODES), ("rerank", RERANK_MODES)):
                if section in body:
                    config = {"mode": "ok", **body[section]}
                    if config["mode"] not in modes:
                        self._json(400, {"error": f"unknown {section} mode {config['mode']}"})
                        return
                    _state[section] = config
        self._json(200, {"chat": _state["chat"], "rerank": _state["rerank"]})

    def _fault(self, fault: dict[str, Any]) -> None:
        status = fault.get("status", 429)
        if status == "reset":
            # linger 0: close() sends a RST, as a crashing proxy or a load balancer would
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            self.close_connection = True
            return
        body = fault.get("body", {"error": {"message": "scripted fault", "code": status}})
        headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
        self._json(int(status), body, headers)

    def _logged_embeddings(self, body: dict[str, Any]) -> None:
        """An embeddings request, logged with its arrival, answer time and tokens."""
        texts = body.get("input", [])
        texts = [str(t) for t in ([texts] if isinstance(texts, str) else texts)]
        with _lock:
            config = dict(_state["embeddings"])
            record: dict[str, Any] = {"t": time.monotonic(), "inputs": len(texts)}
            log = _state["embedding_log"]
            log["requests"].append(record)
            _state["in_flight"] += 1
            log["max_in_flight"] = max(log["max_in_flight"], _state["in_flight"])
        try:
            tokens = _count_tokens(texts) if config.get("count_tokens") else None
            record["tokens"] = tokens
            record["answer"] = self._embeddings(body, texts, config, tokens)
        finally:
            with _lock:
                _state["in_flight"] -= 1
                record["done"] = time.monotonic()

    def _embeddings(
        self, body: dict[str, Any], texts: list[str], config: dict[str, Any], tokens: int | None
    ) -> Any:
        """Answers the request; returns the status (or "reset") it answered with."""
        fault = _fault_now("embeddings")
        if fault is not None:
            self._fault(fault)
            return fault.get("status", 429)
        with _lock:
            _state["last"]["embeddings"] = {"path": self.path, "body": body}
        time.sleep(float(config.get("latency_s", 0.0)))
        refuse = config.get("refuse")
        if refuse and any(refuse in text for text in texts):
            self._json(400, {"error": {"message": "input refused", "code": 400}})
            return 400
        dimension = int(config.get("dimension", 384))
        rows = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, dimension)}
            for i, t in enumerate(texts)
        ]
        answer: dict[str, Any] = {"object": "list", "data": rows,
                                  "model": body.get("model", "fake")}
        if tokens is not None:
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._json(200, answer)
        return 200

    def _failed(self, config: dict[str, Any]) -> bool:
        mode = config["mode"]
        if mode == "stall":
            time.sleep(float(config.get("stall_s", 5)))
            return False
        if mode == "error500":
            self._json(500, {"error": {"message": "scripted failure", "type": "server_error"}})
            return True
        if mode == "garbage":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            return True
        return False

    def _chat(self, config: dict[str, Any], body: dict[str, Any]) -> None:
        model = str(body.get("model", "fake"))
        if config["mode"] == "no_choices":
            self._json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": model})
            return
        content = _chat_content(config, body)
        if not body.get("stream"):
            message = {"role": "assistant", "content": content}
            self._json(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
            return
        # a scripted `usage` is reported as OpenAI does: when the request asks for it
        options = body.get("stream_options") or {}
        usage = config.get("usage") if options.get("include_usage") else None
        self._stream(config, str(config.get("answer", content)), model, usage)

    def _stream(self, config: dict[str, Any], content: str, model: str,
                usage: dict[str, Any] | None = None) -> None:
        """OpenAI chat.completion.chunk events, recording how far the stream got; `usage`
        goes in a last chunk without choices."""
        size = int(config.get("chunk_chars", 8))
        pieces = [str(p) for p in config["deltas"]] if "deltas" in config else [
            content[i : i + size] for i in range(0, len(content), size)
        ]
        record: dict[str, Any] = {"pieces": len(pieces), "sent": 0, "outcome": "streaming"}
        with _lock:
            self._last["stream"] = record
        fail_after = int(config.get("fail_after", len(pieces)))
        failing = config["mode"] in ("stream_cut", "stream_error")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        outcome = "complete"
        try:
            self._event(model, {"index": 0, "delta": {"role": "assistant", "content": ""},
                                "finish_reason": None})
            for sent, piece in enumerate(pieces):
                if failing and sent == fail_after:
                    break
                time.sleep(float(config.get("delay_s", 0)))
                self._event(model, {"index": 0, "delta": {"content": piece},
                                    "finish_reason": None})
                with _lock:
                    record["sent"] = sent + 1
            if failing and config["mode"] == "stream_cut":
                outcome = "cut"  # the connection closes without a finish or [DONE]
            elif failing:
                outcome = "error"
                error = {"error": {"message": "scripted mid-stream failure",
                                   "type": "server_error", "code": 500}}
                self.wfile.write(f"data: {json.dumps(error)}\n\n".encode())
            else:
                self._event(model, {"index": 0, "delta": {}, "finish_reason": "stop"})
                if usage is not None:
                    self._event(model, None, usage)
                self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            outcome = "client_closed"
        with _lock:
            record["outcome"] = outcome

    def _event(self, model: str, choice: dict[str, Any] | None,
               usage: dict[str, Any] | None = None) -> None:
        chunk: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                                 "created": 0, "model": model,
                                 "choices": [] if choice is None else [choice]}
        if usage is not None:
            chunk["usage"] = usage
        self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        self.wfile.flush()

    def _rerank(self, kind: str, config: dict[str, Any], body: dict[str, Any]) -> None:
        if "raw_body" in config:  # answer text as given: JSON literals json.dumps refuses
            self._send(200, str(config["raw_body"]).encode(), "application/json")
            return
        if "raw" in config:  # a verbatim answer, to test shapes the modes do not cover
            self._json(200, config["raw"])
            return
        if kind == "dashscope":
            query, docs = body["input"]["query"], body["input"]["documents"]
            top_n = body.get("parameters", {}).get("top_n")
        else:
            query, docs = body["query"], body["texts" if kind == "tei" else "documents"]
            top_n = body.get("top_n")
        ranked = _ranked(config, query, docs)
        if top_n is not None and config["mode"] == "ok":
            ranked = ranked[: int(top_n)]
        field = "score" if kind == "tei" else "relevance_score"
        if config["mode"] == "missing_fields":
            field = "relevance"
        rows = [{"index": index, field: score} for index, score in ranked]
        if kind == "tei":
            self._json(200, rows)
        elif kind == "dashscope":
            self._json(200, {"output": {"results": rows}, "usage": {"total_tokens": 1},
                             "request_id": "fake"})
        else:
            self._json(200, {"id": "rerank-fake", "results": rows})

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self._send(status, data, "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing left to tell it


def main() -> None:
    """Serve until terminated."""
    _reset()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"PORT {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
