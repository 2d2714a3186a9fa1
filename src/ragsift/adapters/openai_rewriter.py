"""Query rewriter over any OpenAI-compatible `/v1/chat/completions` server (JSON mode)."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError

from ragsift.adapters.http_post import RetryPolicy, post_json
from ragsift.domain.errors import UpstreamError
from ragsift.domain.requests import HistoryMessage
from ragsift.domain.stages import RewriteProposal

logger = logging.getLogger(__name__)

# The word "JSON" must appear in the messages: OpenAI (and DashScope compatible mode) reject
# response_format=json_object otherwise, and some models stream whitespace without it.
SYSTEM_PROMPT = """\
You rewrite search queries for a retrieval system over Chinese and English documents.
Choose at most one method:
- "step_back": a more general question whose answer contains the answer to the query;
- "hyde": a short passage (2-4 sentences) that would plausibly answer the query;
- "expand": the query plus synonyms, abbreviations spelled out and key related terms;
- "none": the query is already precise; return it unchanged.
Rules:
- Keep every number, date, version, code, model number, identifier and quoted name of the query
  exactly as written (same characters, same spelling, same case).
- Answer in the language of the query: Chinese for a Chinese query, English for an English one,
  both for a mixed query. Never translate names or codes.
- Do not answer the question, do not add facts that are not implied by the query.
Reply with ONE JSON object and nothing else, of the form:
{"method": "step_back" | "hyde" | "expand" | "none", "text": "<the rewritten query>"}
你是检索查询改写器。保留查询中的所有数字、日期、编号、型号和引号内的名称，原样不变；用查询的语言回答；
只输出一个 JSON 对象。"""

TRANSLATE_PROMPT = """\
You translate search queries for a retrieval system whose documents are mostly in {language}.
Translate the query into {language} as a searcher would phrase it there; do not answer it.
Keep every number, date, version, code, model number, identifier and quoted name exactly as
written. Reply with ONE JSON object and nothing else:
{{"method": "translation", "text": "<the query in {language}>"}}"""
_LANGUAGES = {"zh": "Chinese (简体中文)", "en": "English"}

STANDALONE_PROMPT = """\
You rewrite the last question of a conversation so that it can be searched without the
conversation: replace pronouns and fill in what the question leaves out from the earlier turns.
Keep the language of the question and every number, date, version, code and quoted name exactly
as written. Do not answer it. If it already stands alone, return it unchanged.
Reply with ONE JSON object and nothing else:
{"method": "standalone", "text": "<the standalone question>"}
把对话的最后一个问题改写成不依赖上下文的独立问题；保持原语言和所有数字、编号；
只输出一个 JSON 对象。"""
SCOPE_PROMPT = """\
You decide whether a user's message to a question-answering assistant is about the domain of
its knowledge base, described below. Greetings aside, a message is in scope when the knowledge
base could plausibly hold its answer; when unsure, say it is in scope. Do not answer it.
Reply with ONE JSON object and nothing else:
{"in_scope": true | false}
判断用户消息是否属于知识库的领域；拿不准时判为属于。只输出一个 JSON 对象。"""
SCOPE_LABEL = "Message: "
# each earlier message is cut to this many characters in the prompt (answers can be long)
HISTORY_CHARS = 400
FOLLOW_UP_LABEL = "Follow-up question: "

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
# Reasoning models served without a reasoning parser put their thoughts before the answer.
_THINK = re.compile(r"^<think>.*?</think>", re.DOTALL)


class OpenAIRewriter:
    """Asks a chat model for one rewrite of a query and returns it as a validated proposal.

    `base_url` ends in `/v1` as with the OpenAI SDK (OpenAI, DashScope compatible mode, vLLM,
    Ollama). Only the shape of the answer is checked here; whether the rewrite is useful
    (identical, numbers dropped) is decided by the caller. `retry` defaults to retrying
    within `timeout_s`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 20.0,
        transport: httpx.BaseTransport | None = None,
        max_tokens: int = 512,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"rewriter base_url must be http(s), got {base_url!r}")
        if not model:
            raise ValueError("rewriter model name is required")
        if timeout_s <= 0:
            raise ValueError("rewriter timeout_s must be positive")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)
        self._model = model
        self._max_tokens = max_tokens
        self._retry = RetryPolicy(budget_s=timeout_s) if retry is None else retry

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    def rewrite(self, query: str) -> RewriteProposal:
        """One proposal for `query`; raises UpstreamError when the answer is unusable."""
        body = self._json_body(SYSTEM_PROMPT, query)
        started = time.perf_counter()
        content = self._complete(body)
        proposal = parse_proposal(content)
        logger.debug(
            "rewrite by %s: method=%s in %.0f ms",
            self._model,
            proposal.method,
            (time.perf_counter() - started) * 1000,
        )
        return proposal

    def translate(self, query: str, language: str) -> RewriteProposal:
        """`query` translated into `language` ("zh" or "en"), as a proposal of method
        "translation"; raises UpstreamError when the answer is unusable."""
        if language not in _LANGUAGES:
            raise ValueError(f"cannot translate into {language!r}; use one of {sorted(_LANGUAGES)}")
        prompt = TRANSLATE_PROMPT.format(language=_LANGUAGES[language])
        proposal = parse_proposal(self._complete(self._json_body(prompt, query)))
        if proposal.method not in ("translation", "none"):  # asked to translate, not to rewrite
            proposal = proposal.model_copy(update={"method": "translation"})
        return proposal

    def standalone(self, query: str, history: Sequence[HistoryMessage]) -> RewriteProposal:
        """`query` written as a question that needs none of `history` (oldest first), as a
        proposal of method "standalone"; raises UpstreamError when the answer is unusable."""
        lines = [f"{turn.role}: {' '.join(turn.content.split())[:HISTORY_CHARS]}"
                 for turn in history]
        prompt = "Conversation:\n" + "\n".join(lines) + f"\n{FOLLOW_UP_LABEL}{query}"
        proposal = parse_proposal(self._complete(self._json_body(STANDALONE_PROMPT, prompt)))
        if proposal.method != "standalone":  # asked for a standalone question, not a rewrite
            proposal = proposal.model_copy(update={"method": "standalone"})
        return proposal

    def in_scope(self, message: str, domain: str) -> bool:
        """Whether `message` is about the KB's `domain` (a validated JSON answer); raises
        UpstreamError when the answer is unusable."""
        prompt = f"Knowledge base domain: {domain}\n{SCOPE_LABEL}{message}"
        content = self._complete(self._json_body(SCOPE_PROMPT, prompt))
        data = _json_object(content)
        try:
            return ScopeAnswer.model_validate(data).in_scope
        except ValidationError as exc:
            raise UpstreamError(f"scope answer does not match the schema: {content[:200]!r}"
                                ) from exc

    def _json_body(self, system: str, user: str) -> dict[str, Any]:
        """A non-streamed, deterministic chat request that must answer one JSON object."""
        return {
            "model": self._model,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            "temperature": 0, "max_tokens": self._max_tokens,
            "response_format": {"type": "json_object"}, "stream": False,
        }

    def _complete(self, body: dict[str, Any]) -> str:
        response = post_json(self._client, self._url, body, "rewriter", self._retry)
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise UpstreamError(
                f"rewriter answered an unexpected envelope: {response.text[:200]!r}"
            ) from exc
        if not isinstance(content, str) or not content.strip():
            raise UpstreamError("rewriter answered no message content")
        return content

    def close(self) -> None:
        self._client.close()


class ScopeAnswer(BaseModel):
    """The model's answer to SCOPE_PROMPT: a strict boolean, nothing else."""

    model_config = ConfigDict(extra="forbid")

    in_scope: StrictBool


def _json_object(content: str) -> dict[str, Any]:
    """The JSON object in a model's message, tolerating code fences and a think block."""
    text = _THINK.sub("", content.strip()).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UpstreamError(f"rewriter answer is not JSON: {content[:200]!r}") from exc
    if not isinstance(data, dict):
        raise UpstreamError(f"rewriter answer is not a JSON object: {content[:200]!r}")
    return data


def parse_proposal(content: str) -> RewriteProposal:
    """The RewriteProposal in a model's message, tolerating code fences and a think block."""
    data = _json_object(content)
    try:
        return RewriteProposal.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'answer'}: {error['msg']}"
            for error in exc.errors()
        )
        raise UpstreamError(f"rewriter answer does not match the schema: {problems}") from exc
