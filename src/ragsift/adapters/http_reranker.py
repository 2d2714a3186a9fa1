"""Reranker over HTTP: Cohere-style `/rerank` (Jina, vLLM, Xinference), HF TEI, DashScope."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ragsift.adapters.http_post import RetryPolicy, post_json
from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RerankScore

logger = logging.getLogger(__name__)

RerankStyle = Literal["cohere", "tei", "dashscope"]


class _Wire(BaseModel):
    # Strict: a string score or a float index is a server bug, not something to coerce.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _RelevanceResult(_Wire):
    index: int
    relevance_score: float


class _CohereResponse(_Wire):
    results: list[_RelevanceResult]


class _DashScopeOutput(_Wire):
    results: list[_RelevanceResult]


class _DashScopeResponse(_Wire):
    output: _DashScopeOutput


class _TeiResult(_Wire):
    index: int
    score: float


_TEI_RESPONSE = TypeAdapter(list[_TeiResult])


class HttpReranker:
    """Scores passages with a rerank server; returns the scores as the server gave them.

    `base_url` is the server root for "cohere" (`.../v1`, POST `{base}/rerank`) and "tei"
    (POST `{base}/rerank`), and the full service URL for "dashscope"
    (`https://dashscope.aliyuncs.com/api/v1/services/rerank/text-rerank/text-rerank`).
    Range, duplicate, finiteness and emptiness checks belong to the caller. `retry` defaults
    to retrying within `timeout_s`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        style: RerankStyle = "cohere",
        timeout_s: float = 20.0,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"reranker base_url must be http(s), got {base_url!r}")
        if not model:
            raise ValueError("reranker model name is required")
        if style not in ("cohere", "tei", "dashscope"):
            raise ValueError(f"unknown reranker style {style!r}")
        if timeout_s <= 0:
            raise ValueError("reranker timeout_s must be positive")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # DashScope's URL is the endpoint itself; httpx's base_url would add a trailing slash.
        self._url = base_url if style == "dashscope" else base_url.rstrip("/") + "/rerank"
        self._client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)
        self._model = model
        self._style: RerankStyle = style
        self._retry = RetryPolicy(budget_s=timeout_s) if retry is None else retry

    @property
    def model_id(self) -> str:
        return f"{self._style}:{self._model}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        """Scores for the passages by batch index; raises UpstreamError on any failure."""
        if not passages:
            return []  # nothing to score; servers answer 4xx to an empty list
        started = time.perf_counter()
        response = self._post(self._body(query, list(passages)))
        scores = self._parse(response)
        logger.debug(
            "rerank of %d passages by %s: %d scores in %.0f ms",
            len(passages),
            self.model_id,
            len(scores),
            (time.perf_counter() - started) * 1000,
        )
        return scores

    def _body(self, query: str, passages: list[str]) -> dict[str, Any]:
        if self._style == "tei":
            # raw_scores false: TEI applies the model's activation, so scores stay in [0, 1].
            return {"query": query, "texts": passages, "raw_scores": False}
        if self._style == "dashscope":
            return {
                "model": self._model,
                "input": {"query": query, "documents": passages},
                "parameters": {"top_n": len(passages), "return_documents": False},
            }
        # top_n = all: the caller decides the cut, and a missing score must be visible.
        return {
            "model": self._model,
            "query": query,
            "documents": passages,
            "top_n": len(passages),
        }

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        return post_json(self._client, self._url, body, "reranker", self._retry)

    def _parse(self, response: httpx.Response) -> list[RerankScore]:
        try:
            if self._style == "tei":
                tei = _TEI_RESPONSE.validate_json(response.content)
                return [RerankScore(index=row.index, score=row.score) for row in tei]
            if self._style == "dashscope":
                rows = _DashScopeResponse.model_validate_json(response.content).output.results
            else:
                rows = _CohereResponse.model_validate_json(response.content).results
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise UpstreamError(
                f"reranker ({self._style}) answered an unexpected shape at {where}: "
                f"{first['msg']}; body {response.text[:200]!r}"
            ) from exc
        return [RerankScore(index=row.index, score=row.relevance_score) for row in rows]

    def close(self) -> None:
        self._client.close()
