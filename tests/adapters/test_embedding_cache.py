"""CachedEmbedder: passages cached on disk per model, queries in a bounded LRU."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.embedding_cache import CachedEmbedder
from ragsift.ports import Vectors

DIM = 8


def fake_vector(model_id: str, text: str) -> Vectors:
    seed = int.from_bytes(hashlib.sha256(f"{model_id}\0{text}".encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


class CountingEmbedder:
    """A deterministic fake embedder that records every call it receives."""

    def __init__(self, model_id: str = "fake-model") -> None:
        self._model_id = model_id
        self.passage_calls: list[list[str]] = []
        self.query_calls: list[str] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return DIM

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passage_calls.append(list(texts))
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([fake_vector(self._model_id, text) for text in texts])

    def embed_query(self, text: str) -> Vectors:
        self.query_calls.append(text)
        return fake_vector(self._model_id, "query: " + text)

    @property
    def embedded_passages(self) -> list[str]:
        return [text for call in self.passage_calls for text in call]


def expected(texts: Sequence[str], model_id: str = "fake-model") -> Vectors:
    return np.stack([fake_vector(model_id, text) for text in texts])


MakeCache = Callable[..., CachedEmbedder]


@pytest.fixture
def make_cache(tmp_path: Path) -> Iterator[MakeCache]:
    opened: list[CachedEmbedder] = []

    def make(
        inner: CountingEmbedder, path: Path | None = None, query_cache_size: int = 1024
    ) -> CachedEmbedder:
        cache = CachedEmbedder(
            inner, path or tmp_path / "cache" / "embeddings.sqlite", query_cache_size
        )
        opened.append(cache)
        return cache

    yield make
    for cache in opened:
        cache.close()


def test_embedding_the_same_passages_again_never_calls_the_inner_embedder(
    make_cache: MakeCache,
) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner)
    texts = ["alpha", "beta", "年假"]
    first = cache.embed_passages(texts)
    assert inner.passage_calls == [texts]

    second = cache.embed_passages(texts)
    assert len(inner.passage_calls) == 1
    assert second.dtype == np.float32
    assert np.array_equal(first, second)
    assert np.array_equal(second, expected(texts))


def test_only_misses_are_embedded_and_rows_follow_the_input_order(
    make_cache: MakeCache,
) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner)
    cache.embed_passages(["a", "b"])

    texts = ["c", "a", "d", "b"]
    vectors = cache.embed_passages(texts)
    assert inner.passage_calls[1] == ["c", "d"]
    assert np.array_equal(vectors, expected(texts))


def test_a_text_repeated_within_one_call_is_embedded_once_and_returned_at_every_position(
    make_cache: MakeCache,
) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner)
    cache.embed_passages(["a"])

    texts = ["x", "a", "x", "a", "y", "x"]
    vectors = cache.embed_passages(texts)
    assert inner.passage_calls[1] == ["x", "y"]
    assert np.array_equal(vectors, expected(texts))


def test_the_cache_persists_across_instances_on_the_same_file(
    make_cache: MakeCache, tmp_path: Path
) -> None:
    path = tmp_path / "persist.sqlite"
    texts = ["one", "two", "three"]
    first_run = make_cache(CountingEmbedder(), path)
    first = first_run.embed_passages(texts)
    first_run.close()

    inner = CountingEmbedder()
    second = make_cache(inner, path).embed_passages(texts)
    assert inner.passage_calls == []
    assert np.array_equal(first, second)


def test_a_resumed_run_only_embeds_what_the_interrupted_run_had_not_reached(
    make_cache: MakeCache, tmp_path: Path
) -> None:
    path = tmp_path / "resume.sqlite"
    texts = [f"chunk {i}" for i in range(6)]
    interrupted = make_cache(CountingEmbedder(), path)
    interrupted.embed_passages(texts[:4])  # then the process "dies" without closing

    inner = CountingEmbedder()
    vectors = make_cache(inner, path).embed_passages(texts)
    assert inner.passage_calls == [texts[4:]]
    assert np.array_equal(vectors, expected(texts))


def test_entries_of_a_different_model_id_are_not_shared(
    make_cache: MakeCache, tmp_path: Path
) -> None:
    path = tmp_path / "models.sqlite"
    make_cache(CountingEmbedder("model-one"), path).embed_passages(["shared text"])

    other = CountingEmbedder("model-two")
    vectors = make_cache(other, path).embed_passages(["shared text"])
    assert other.passage_calls == [["shared text"]]
    assert np.array_equal(vectors, expected(["shared text"], "model-two"))

    again = CountingEmbedder("model-one")
    make_cache(again, path).embed_passages(["shared text"])
    assert again.passage_calls == []


def test_the_query_cache_evicts_the_least_recently_used_query(make_cache: MakeCache) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner, query_cache_size=2)
    cache.embed_query("q1")
    cache.embed_query("q2")
    cache.embed_query("q3")  # evicts q1, the oldest
    assert inner.query_calls == ["q1", "q2", "q3"]

    cache.embed_query("q2")
    cache.embed_query("q3")
    assert inner.query_calls == ["q1", "q2", "q3"]

    vector = cache.embed_query("q1")
    assert inner.query_calls == ["q1", "q2", "q3", "q1"]
    assert np.array_equal(vector, fake_vector("fake-model", "query: q1"))


def test_a_query_hit_refreshes_its_place_in_the_lru(make_cache: MakeCache) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner, query_cache_size=2)
    cache.embed_query("q1")
    cache.embed_query("q2")
    cache.embed_query("q1")  # hit: q1 is now the most recent
    cache.embed_query("q3")  # evicts q2, not q1
    cache.embed_query("q1")
    assert inner.query_calls == ["q1", "q2", "q3"]
    cache.embed_query("q2")
    assert inner.query_calls == ["q1", "q2", "q3", "q2"]


def test_a_query_cache_size_of_zero_disables_query_caching(make_cache: MakeCache) -> None:
    inner = CountingEmbedder()
    cache = make_cache(inner, query_cache_size=0)
    cache.embed_query("q1")
    cache.embed_query("q1")
    assert inner.query_calls == ["q1", "q1"]


def test_a_negative_query_cache_size_is_rejected(make_cache: MakeCache) -> None:
    with pytest.raises(ValueError):
        make_cache(CountingEmbedder(), query_cache_size=-1)


def test_hit_and_miss_counters_count_passages(make_cache: MakeCache) -> None:
    cache = make_cache(CountingEmbedder())
    assert (cache.hits, cache.misses) == (0, 0)
    cache.embed_passages(["a", "b"])
    assert (cache.hits, cache.misses) == (0, 2)
    cache.embed_passages(["a", "b", "c"])
    assert (cache.hits, cache.misses) == (2, 3)


def test_no_passages_give_an_empty_matrix_without_calling_the_inner_embedder(
    make_cache: MakeCache,
) -> None:
    inner = CountingEmbedder()
    vectors = make_cache(inner).embed_passages([])
    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32
    assert inner.passage_calls == []


def test_model_id_dimension_and_token_counts_are_the_inner_embedders(
    make_cache: MakeCache,
) -> None:
    cache = make_cache(CountingEmbedder("m"))
    assert cache.model_id == "m"
    assert cache.dimension == DIM
    assert cache.count_tokens("three short words") == 3


class RefusingEmbedder(CountingEmbedder):
    """Refuses any call holding the text "bad"."""

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if "bad" in texts:
            self.passage_calls.append(list(texts))
            raise ValueError("refused")
        return super().embed_passages(texts)


def test_batches_send_only_their_misses_and_a_failed_batch_fails_itself_and_its_repeats(
    make_cache: MakeCache,
) -> None:
    inner = RefusingEmbedder()
    cache = make_cache(inner)
    cache.embed_passages(["a"])
    batches = [["a", "b"], ["bad", "c"], ["b", "d"], ["c", "e"]]
    results = list(cache.embed_passage_batches(batches))
    # "a" was cached, "b" is embedded once; "c" went down with the refused batch
    assert inner.passage_calls[1:] == [["b"], ["bad", "c"], ["d"], ["e"]]
    assert [isinstance(r, ValueError) for r in results] == [False, True, False, True]
    for batch, result in zip(batches, results, strict=True):
        if not isinstance(result, Exception):
            assert np.array_equal(result, expected(batch))
    assert np.array_equal(cache.embed_passages(["d", "b"]), expected(["d", "b"]))
    assert len(inner.passage_calls) == 5  # the good batches' rows were stored


class SlowEmbedder(CountingEmbedder):
    """Embeds a query only once released, so that calls overlap as a several-KB search's
    dense channels do; fails when asked to."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()
        self._fail = fail

    def embed_query(self, text: str) -> Vectors:
        self.query_calls.append(text)
        self.started.set()
        assert self.release.wait(10)
        if self._fail:
            raise RuntimeError("embedder down")
        return fake_vector(self.model_id, "query: " + text)


@pytest.mark.parametrize("size", [1024, 0])
@pytest.mark.parametrize("fail", [False, True])
def test_concurrent_calls_for_one_query_embed_it_once(
    make_cache: MakeCache, size: int, fail: bool,
) -> None:
    """Two KBs searched at once each embed the query in their own thread: the second call
    waits for the first one's vector (or its error) instead of embedding it again."""
    inner = SlowEmbedder(fail)
    cache = make_cache(inner, query_cache_size=size)
    results: list[object] = []

    def call() -> None:
        try:
            results.append(cache.embed_query("q"))
        except RuntimeError as exc:
            results.append(exc)

    first = threading.Thread(target=call)
    first.start()
    assert inner.started.wait(10)
    second = threading.Thread(target=call)
    second.start()
    time.sleep(0.05)  # the second call is waiting on the first (or, before the fix, embedding)
    inner.release.set()
    first.join(10)
    second.join(10)
    assert inner.query_calls == ["q"]
    if fail:
        assert all(isinstance(r, RuntimeError) for r in results) and len(results) == 2
        with pytest.raises(RuntimeError):  # a failure is not cached: the next call tries
            cache.embed_query("q")
        assert inner.query_calls == ["q", "q"]
    else:
        assert len(results) == 2
        for vector in results:
            np.testing.assert_array_equal(vector, fake_vector("fake-model", "query: q"))
