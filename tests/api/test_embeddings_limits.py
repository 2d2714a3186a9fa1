"""The limits of POST /v1/embeddings, as settings: inputs per request, tokens per input."""

from __future__ import annotations

import pytest

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.api.errors import ApiError
from ragsift.api.routes_embeddings import texts_of, token_counts
from ragsift.api.schemas_embeddings import EmbeddingsBody
from ragsift.config import Settings


def test_more_inputs_than_the_setting_allows_are_refused_naming_it() -> None:
    body = EmbeddingsBody(model="m", input=["a", "b", "c"])

    assert texts_of(body, Settings(embeddings_max_inputs=3)) == ["a", "b", "c"]
    with pytest.raises(ApiError) as refused:
        texts_of(body, Settings(embeddings_max_inputs=2))
    assert refused.value.status == 400
    assert "RAGSIFT_EMBEDDINGS_MAX_INPUTS" in str(refused.value)


def test_an_input_over_the_token_limit_is_refused_and_others_are_counted() -> None:
    texts = ["short one", "a much longer text " * 20]
    tokenizer = E5Tokenizer()
    long_tokens = tokenizer.count_tokens(texts[1])

    counts = token_counts(texts, tokenizer, max_tokens=long_tokens)
    with pytest.raises(ApiError) as refused:
        token_counts(texts, tokenizer, max_tokens=long_tokens - 1)

    assert counts == [tokenizer.count_tokens(texts[0]), long_tokens]
    assert refused.value.code == "input_too_long" and "input 1" in str(refused.value)
