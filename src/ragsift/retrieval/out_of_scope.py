"""The `out_of_scope` route: a message about nothing the KB covers, when the KB declares its domain.

A KB declares its domain in RAGSIFT_KB_DOMAINS (its name or id -> a short description, its
topics and terms, in the languages of its users). A message the rules would search is then
checked against the domain's words, the KB's own vocabulary (its BM25 terms) and a lexicon of
the everyday topics people ask assistants about (weather, jokes, recipes, films, stocks):

- a content word in the domain -> `in_scope`, searched;
- a word of the everyday lexicon that neither the domain nor the KB's documents have, and no
  word of the domain -> `out_of_scope` ("今天天气怎么样？" to an HR handbook);
- anything else -> `unsure`: searched, or classified by the model when one is configured.

Why a lexicon and not "no word the KB knows": measured on the labelled set (tests/retrieval/
data/routes.jsonl with out_of_scope.jsonl, the samples' vocabulary), "no domain word and no KB
word" routed 33 of 211 real questions away ("年假" when the handbook says "年休假", "payday",
"lab safety goggles": workplace questions the KB happens not to answer), a precision of 0.48.
Precise rather than complete, as the other routes: the cost of an out-of-scope message that is
searched is a search that finds little, the cost of a question taken for out of scope is a user
left without an answer. A CJK word is "known" by its multi-character terms (bigrams or words):
every Chinese KB knows single characters, which say nothing of the topic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ragsift.retrieval.follow_up import salient_terms

Verdict = Literal["in_scope", "out_of_scope", "unsure"]
# content words -> those the KB's documents hold; None: the index cannot tell (no BM25 stats)
KnownWords = Callable[[Sequence[str]], set[str] | None]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_SUFFIXES = ("ing", "es", "ed", "s")
# everyday topics outside any document collection about work, products or services
_ZH_OFF_TOPIC = (
    "天气", "下雨", "下雪", "气温", "写诗", "一首诗", "诗人", "笑话", "电影", "电视剧", "新歌",
    "歌词", "菜谱", "做法", "红烧", "炒鸡蛋", "股票", "比特币", "星座", "运势", "算命", "减肥",
    "恐龙", "火星", "世界杯", "足球", "篮球", "明星", "火锅", "好吃", "朝代", "宠物", "猫",
    "最高的山", "外星人",
)
_EN_OFF_TOPIC = frozenset((
    "weather", "forecast", "rain", "snow", "poem", "joke", "movie", "film", "song", "lyric",
    "recipe", "bake", "cook", "stock", "bitcoin", "crypto", "horoscope", "zodiac", "football",
    "soccer", "basketball", "celebrity", "dinosaur", "mars", "everest", "pizza", "hiking",
    "trail", "president", "capital", "painted", "cat", "dog", "pet", "purr", "diet",
))


@dataclass(frozen=True, slots=True)
class ScopeCheck:
    verdict: Verdict
    reason: str


def _stem(word: str) -> str:
    """A crude English stem, enough to match "hotels" with "hotel" in a description."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _bigrams(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


@dataclass(frozen=True, slots=True)
class Domain:
    """A KB's declared domain, as the words and CJK bigrams it is matched by."""

    description: str
    latin: frozenset[str]
    cjk: frozenset[str]

    @classmethod
    def of(cls, description: str) -> Domain:
        text = description.lower()
        latin = frozenset(_stem(word) for word in _LATIN_WORD.findall(text))
        cjk: set[str] = set()
        for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", text):
            cjk |= _bigrams(run)
        return cls(description, latin, frozenset(cjk))

    def covers(self, word: str) -> bool:
        """Whether a content word of a message is one of the domain's."""
        lowered = word.lower()
        if _CJK.search(lowered):
            grams = _bigrams(lowered) or {lowered}
            return bool(grams & self.cjk) or any(lowered in gram for gram in self.cjk)
        return _stem(lowered) in self.latin


def check_scope(message: str, domain: Domain, known: KnownWords) -> ScopeCheck:
    """Whether `message` is about the domain (see the module's rules)."""
    words = salient_terms(message)
    if not words:
        return ScopeCheck("unsure", "no content word to judge the scope by")
    covered = [word for word in words if domain.covers(word)]
    if covered:
        return ScopeCheck("in_scope", f"{covered[0]!r} is in the KB's domain")
    topics = off_topic_words(message)
    if not topics:
        return ScopeCheck("unsure", "no word of the KB's domain, and no everyday topic")
    found = known(topics)
    if found is None:
        return ScopeCheck("unsure", f"{topics[0]!r} is an everyday topic, but the index cannot "
                          "tell whether its documents have it")
    unknown = [topic for topic in topics if topic not in found]
    if not unknown:
        return ScopeCheck("unsure", f"{topics[0]!r} is an everyday topic the KB's documents have")
    return ScopeCheck("out_of_scope", f"{unknown[0]!r} is an everyday topic that neither the "
                      "KB's domain nor its documents have, and no word is in the domain")


def off_topic_words(message: str) -> list[str]:
    """The words of `message` in the everyday-topic lexicons."""
    lowered = message.lower()
    found = [word for word in _ZH_OFF_TOPIC if word in lowered]
    found += [word for word in _LATIN_WORD.findall(lowered) if _stem(word) in _EN_OFF_TOPIC]
    return found


def known_words(
    words: Sequence[str], analyze: Callable[[str], list[str]],
    doc_freq: Callable[[Sequence[str]], dict[str, int]],
) -> set[str]:
    """The words with a term of the KB's analyzer that its documents hold (multi-character
    terms only for CJK)."""
    terms = {word: [t for t in analyze(word) if not _CJK.search(t) or len(t) >= 2]
             for word in words}
    wanted = sorted({term for found in terms.values() for term in found})
    frequencies = doc_freq(wanted) if wanted else {}
    return {word for word, found in terms.items()
            if any(frequencies.get(term, 0) > 0 for term in found)}
