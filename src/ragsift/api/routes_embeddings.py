"""OpenAI-compatible embeddings: `POST /v1/embeddings` with the configured embedder (in-process
e5, or the hosted embedder ragsift is set up with), so OpenAI clients (LangChain's
`OpenAIEmbeddings`, ...) get the vectors ragsift's own KBs hold.

The prefix rule: e5 embeds questions as `query: ...` and documents as `passage: ...`, but an
OpenAI client sends both to this one endpoint. The body's `input_type` says which ("query" or
"passage"); without it the texts are passages (what embed_documents sends; for embed_query set
`input_type: "query"`, e.g. `model_kwargs={"extra_body": {"input_type": "query"}}`).
"""

from __future__ import annotations

import base64

import numpy as np
from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ragsift.api.deps import State
from ragsift.api.errors import ApiError
from ragsift.api.routes_openai import _ERRORS
from ragsift.api.schemas_embeddings import (
    EmbeddingOut,
    EmbeddingsBody,
    EmbeddingsOut,
    EmbeddingUsage,
    InputType,
)
from ragsift.config import Settings
from ragsift.ports import Embedder, Tokenizer, Vectors

router = APIRouter(prefix="/v1", tags=["openai"], responses=_ERRORS)


def texts_of(body: EmbeddingsBody, settings: Settings) -> list[str]:
    """The texts to embed; token ids, empty texts and too many inputs are refused."""
    raw = body.input
    items = [raw] if isinstance(raw, str) else list(raw)
    if not items:
        raise ApiError(400, "invalid_request", "input must hold at least one text")
    if not all(isinstance(item, str) for item in items):
        raise ApiError(400, "unsupported_input", "token-id arrays are not supported: send "
                       "the texts (the embedder tokenizes them itself)")
    texts = [item for item in items if isinstance(item, str)]
    if len(texts) > settings.embeddings_max_inputs:
        raise ApiError(400, "too_many_inputs", f"{len(texts)} inputs; at most "
                       f"{settings.embeddings_max_inputs} per request "
                       "(RAGSIFT_EMBEDDINGS_MAX_INPUTS)")
    for i, text in enumerate(texts):
        if not text.strip():
            raise ApiError(400, "invalid_request", f"input {i} is empty")
    return texts


def check_model(body: EmbeddingsBody, embedder: Embedder) -> None:
    """The model must be the embedder's; `dimensions` only its own."""
    if body.model != embedder.model_id:
        raise ApiError(404, "model_not_found", f"the model {body.model!r} does not exist: "
                       f"the embeddings model is {embedder.model_id!r}")
    if body.dimensions is not None and body.dimensions != embedder.dimension:
        raise ApiError(400, "unsupported_dimensions", f"{embedder.model_id} gives "
                       f"{embedder.dimension} dimensions; it cannot give {body.dimensions}")


def token_counts(texts: list[str], tokenizer: Tokenizer, max_tokens: int) -> list[int]:
    """Each text's tokens; one over `max_tokens` is refused (RAGSIFT_EMBEDDINGS_MAX_TOKENS)."""
    counts = [tokenizer.count_tokens(text) for text in texts]
    for i, count in enumerate(counts):
        if count > max_tokens:
            raise ApiError(400, "input_too_long", f"input {i} has {count} tokens; at most "
                           f"{max_tokens} (RAGSIFT_EMBEDDINGS_MAX_TOKENS)")
    return counts


def embed(texts: list[str], input_type: InputType, embedder: Embedder) -> Vectors:
    if input_type == "query":
        return np.stack([embedder.embed_query(text).reshape(-1) for text in texts])
    return embedder.embed_passages(texts)


def encoded(row: Vectors, encoding_format: str | None) -> list[float] | str:
    """A row as floats, or as base64 of its little-endian float32 bytes (what OpenAI sends)."""
    if encoding_format == "base64":
        return base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
    return [float(value) for value in row]


def _embeddings(body: EmbeddingsBody, settings: Settings, embedder: Embedder) -> EmbeddingsOut:
    check_model(body, embedder)
    texts = texts_of(body, settings)
    counts = token_counts(texts, embedder, settings.embeddings_max_tokens)
    vectors = embed(texts, body.input_type, embedder)
    data = [EmbeddingOut(index=i, embedding=encoded(row, body.encoding_format))
            for i, row in enumerate(vectors)]
    tokens = sum(counts)
    return EmbeddingsOut(data=data, model=embedder.model_id,
                         usage=EmbeddingUsage(prompt_tokens=tokens, total_tokens=tokens))


@router.post("/embeddings")
async def create_embeddings(body: EmbeddingsBody, state: State) -> EmbeddingsOut:
    """Vectors of the texts from the configured embedder (`model`: its id), as OpenAI's
    embeddings list; `input_type` "query" or "passage" (default) picks e5's prefix."""
    container = state.container
    return await run_in_threadpool(_embeddings, body, container.settings, container.embedder)
