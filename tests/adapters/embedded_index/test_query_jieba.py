"""jieba's cut of a short text from the dictionary words it holds (query_jieba.py): the words
are rjieba's own, the cut is rjieba's on the samples' sentences and on random mixed texts, the
cache is built once and again when damaged, and the analyzer takes that route only for short
texts of a process that has not loaded rjieba's dictionary."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import rjieba

from ragsift.adapters import word_list_cache
from ragsift.adapters.embedded_index import analyzer, query_jieba
from ragsift.adapters.embedded_index.query_jieba import FILLER, QueryJieba, dictionary_path

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
ASCII_WORDS = ("the", "hotel", "limit", "per", "night", "E-104", "API", "v2.3", "GPU", "OCR",
               "cafe", "naive", "iPhone", "C++", "c#", "AT&T", "3.5", "2024", "x86_64")
MARKS = " ，。！？、；：“”（）()[]%/-_.,!?'\"\t"


@pytest.fixture(scope="module")
def source() -> str:
    path = dictionary_path()
    assert path is not None, "the jieba package (a dependency) ships dict.txt"
    return path


@pytest.fixture(scope="module")
def cutter(source: str, tmp_path_factory: pytest.TempPathFactory) -> QueryJieba:
    return QueryJieba(tmp_path_factory.mktemp("jieba-cache"), source)


def _sample_sentences() -> list[str]:
    text = "\n".join((SAMPLES / name).read_text(encoding="utf-8")
                     for name in ("hr-handbook-zh.md", "release-notes-en.txt"))
    return [s.strip() for s in re.split(r"[\n。！？]", text) if s.strip()]


def _random_texts(count: int) -> list[str]:
    """Mixed texts up to analyzer.QUERY_CHARS: CJK runs cut from the handbook (so dictionary
    words and unknown names meet), ASCII words, digits and punctuation."""
    rng = random.Random(20261207)
    chinese = (SAMPLES / "hr-handbook-zh.md").read_text(encoding="utf-8")
    han = "".join(re.findall(r"[\u4e00-\u9fff]", chinese))
    texts = []
    for _ in range(count):
        parts: list[str] = []
        while sum(map(len, parts)) < rng.randint(1, analyzer.QUERY_CHARS):
            kind = rng.random()
            if kind < 0.45:
                start = rng.randrange(len(han) - 12)
                parts.append(han[start:start + rng.randint(1, 12)])
            elif kind < 0.6:  # characters the handbook never puts side by side
                parts.append("".join(rng.choice(han) for _ in range(rng.randint(1, 6))))
            elif kind < 0.8:
                parts.append(rng.choice(ASCII_WORDS))
            elif kind < 0.9:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 6))))
            else:
                parts.append(rng.choice(MARKS))
        texts.append("".join(parts)[: analyzer.QUERY_CHARS])
    return texts


def test_every_word_of_jiebas_dict_txt_is_a_word_of_rjiebas_dictionary(source: str) -> None:
    with open(source, encoding="utf-8") as handle:
        words = [line.split()[0] for line in handle if line.strip()]
    assert len(words) > 300_000
    assert [word for word in words if not rjieba.has_word(word)] == []


def test_the_samples_sentences_are_cut_as_rjieba_cuts_them(cutter: QueryJieba) -> None:
    sentences = _sample_sentences()
    assert len(sentences) > 50
    for sentence in sentences:
        for text in (sentence, unicodedata.normalize("NFKC", sentence).lower()):
            assert cutter.cut_for_search(text) == rjieba.cut_for_search(text), text


def test_random_mixed_texts_are_cut_as_rjieba_cuts_them(cutter: QueryJieba) -> None:
    differing = [text for text in _random_texts(1500)
                 if cutter.cut_for_search(text) != rjieba.cut_for_search(text)]
    assert differing == []


def test_a_text_holding_the_filler_word_is_refused(cutter: QueryJieba) -> None:
    with pytest.raises(ValueError, match="filler"):
        cutter.cut_for_search(f"年假{FILLER}有几天")


def test_the_cache_is_built_once_aside_and_again_when_damaged(source: str, tmp_path: Path) -> None:
    first = QueryJieba(tmp_path, source)
    assert first.cut_for_search("年假有几天") == rjieba.cut_for_search("年假有几天")
    (cache,) = tmp_path.iterdir()
    assert cache.name.startswith("jieba-words-") and cache.suffix == ".sqlite"
    built = cache.stat().st_mtime_ns
    assert QueryJieba(tmp_path, source).cut_for_search("病假") == ["病假"]
    assert cache.stat().st_mtime_ns == built  # read, not built again

    cache.write_bytes(b"not a database")
    assert QueryJieba(tmp_path, source).cut_for_search("病假怎么请") == \
        rjieba.cut_for_search("病假怎么请")
    assert [p.name for p in tmp_path.iterdir()] == [cache.name]  # no temporary file left
    assert cache.stat().st_size > 1_000_000


def test_without_the_jieba_package_the_route_stays_off(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setattr(query_jieba.importlib.util, "find_spec", lambda name: None)
    assert query_jieba.dictionary_path() is None
    monkeypatch.setattr(analyzer, "dictionary_path", query_jieba.dictionary_path)
    try:
        assert analyzer.cut_short_texts_from_cache(tmp_path) is False
        assert analyzer.analyze_v2("年假有几天")  # rjieba cuts it
    finally:
        analyzer.cut_short_texts_from_cache(None)


PROBE = """
import json, sys
from pathlib import Path
from ragsift.adapters.embedded_index import analyzer
assert analyzer.cut_short_texts_from_cache(Path(sys.argv[1]))
queries = json.loads(sys.argv[2])
out = {"short": [analyzer.analyze_v2(q) for q in queries],
       "rjieba_after_short": "rjieba" in sys.modules}
out["long"] = analyzer.analyze_v1("年假" * analyzer.QUERY_CHARS)
out["rjieba_after_long"] = "rjieba" in sys.modules
out["after_load"] = [analyzer.analyze_v2(q) for q in queries]
print(json.dumps(out))
"""


def test_the_analyzer_cuts_short_texts_from_the_cache_until_rjieba_is_loaded(
        tmp_path: Path) -> None:
    queries = ["年假有几天", "那病假呢？", "How many days of annual leave?", "E-104 错误码",
               "员工累计工作已满 1 年的，享受带薪年休假"]
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), json.dumps(queries)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["rjieba_after_short"] is False  # short texts: rjieba's dictionary not loaded
    assert out["rjieba_after_long"] is True  # a long text loads it
    expected = [analyzer.analyze_v2(q) for q in queries]  # this process: rjieba's route
    assert out["short"] == expected
    assert out["after_load"] == expected


def test_first_use_removes_what_a_killed_build_left_and_spares_a_running_ones(
        source: str, tmp_path: Path) -> None:
    killed = tmp_path / "jieba-words-abc123.tmp"
    running = tmp_path / "jieba-words-def456.tmp"
    for temp in (killed, running):
        temp.write_bytes(b"half a build")
    old = killed.stat().st_mtime - 2 * word_list_cache.STALE_TEMPORARY_S
    os.utime(killed, (old, old))
    QueryJieba(tmp_path, source).cut_for_search("年假")  # builds the cache
    assert not killed.exists() and running.exists()
    running.replace(killed)
    os.utime(killed, (old, old))
    QueryJieba(tmp_path, source).cut_for_search("年假")  # reads it, and sweeps too
    assert not killed.exists()
