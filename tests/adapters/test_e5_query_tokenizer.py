"""Parity: E5QueryTokenizer (the query path's cached vocabulary) gives E5Tokenizer's ids."""

from __future__ import annotations

import contextlib
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from ragsift.adapters.e5_query_tokenizer import E5QueryTokenizer, cache_path
from ragsift.adapters.e5_tokenizer import E5Tokenizer
from ragsift.adapters.e5_vocabulary import model_path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 ,.;:!?-_/()[]\"'\n\t"
    "的一是在不了有和人这中大为上个国年假员工报销密码，。！？；：“”（）"
    "ＡＢＣ１２３　ａｂｃ½ﬁ①™é ü ñ 😀 \u00a0\u2028𠮷☃\u200b"
)


def corpus() -> list[str]:
    """~450 strings: lines of the zh and en text samples, random mixed strings, edge cases."""
    texts: list[str] = []
    for name in ("hr-handbook-zh.md", "release-notes-en.txt"):
        lines = (SAMPLES / name).read_text(encoding="utf-8").splitlines()
        texts.extend(line[:300] for line in lines if line.strip())
    rng = random.Random(11)
    texts.extend("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 80)))
                 for _ in range(300))
    texts += ["", " ", "  double  spaces ", "<s> </s> <unk> <pad>", "<unk><unk>a",
              "E-104 v2.4.1 2024-03-18", "年假有几天", "x" * 400, "query: 报销流程 reimbursement"]
    return texts


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e5-query-cache")


def test_ids_equal_the_hf_tokenizers_on_bilingual_random_and_edge_texts(cache_dir: Path) -> None:
    reference, fast = E5Tokenizer(), E5QueryTokenizer(cache_dir)
    texts = corpus()
    assert len(texts) > 300
    mismatches = [text[:40] for text in texts if fast.token_ids(text) != reference.token_ids(text)]
    assert mismatches == []


def test_a_second_tokenizer_reads_the_cache_written_by_the_first(
    cache_dir: Path, tmp_path: Path
) -> None:
    E5QueryTokenizer(cache_dir).token_ids("年假")
    written = cache_path(cache_dir, model_path())
    assert written.is_file() and not list(cache_dir.glob("*.tmp"))
    copy = cache_path(tmp_path, model_path())
    shutil.copyfile(written, copy)
    with contextlib.closing(sqlite3.connect(copy)) as db, db:
        db.execute("UPDATE piece SET id = 7")  # a marker only a read of this file sees
    assert set(E5QueryTokenizer(tmp_path).token_ids("年假 leave")) == {7}


def test_a_damaged_cache_is_built_again(tmp_path: Path) -> None:
    path = cache_path(tmp_path, model_path())
    path.write_bytes(b"not sqlite" * 100)
    assert E5QueryTokenizer(tmp_path).token_ids("年假") == E5Tokenizer().token_ids("年假")


def test_counts_equal_the_hf_tokenizers_which_count_a_run_of_unknowns_once(
    cache_dir: Path
) -> None:
    reference, fast = E5Tokenizer(), E5QueryTokenizer(cache_dir)
    texts = [*corpus(), "𠮷𠮷𠮷 a", "a \u200b𠮷\u200b b 𠮷", " trailing ", "\u200b"]
    mismatches = [text[:40] for text in texts
                  if fast.token_count(text) != reference.count_tokens(text) and text.strip()]
    assert mismatches == []
    # the rule is exercised: some texts hold runs of unknown characters
    assert any(fast.token_count(text) < len(fast.token_ids(text)) for text in texts)


def test_first_use_removes_what_a_killed_build_left_and_spares_a_running_ones(
    tmp_path: Path,
) -> None:
    import os

    from ragsift.adapters import word_list_cache

    killed, running = tmp_path / "e5-vocab-abc.tmp", tmp_path / "e5-vocab-def.tmp"
    for temp in (killed, running):
        temp.write_bytes(b"half a build")
    old = killed.stat().st_mtime - 2 * word_list_cache.STALE_TEMPORARY_S
    os.utime(killed, (old, old))
    E5QueryTokenizer(tmp_path).token_ids("年假")
    assert not killed.exists() and running.exists()
