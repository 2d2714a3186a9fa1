"""The answer without a chat model: the evidence sentences closest to the question, cited."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragsift.chat.assets import image_link
from ragsift.chat.citations import citation_link, label_word
from ragsift.chat.extractive_structure import (
    MAX_ANSWER_CHARS,
    Excerpt,
    list_excerpt,
    quote,
    table_excerpt,
    within_bound,
    without_list_items,
)
from ragsift.chat.prompt import is_chinese, no_evidence_answer
from ragsift.domain.chat import Evidence

EXTRACTIVE_NOTE_EN = "No chat model is configured, so this answer quotes the evidence directly:"
EXTRACTIVE_NOTE_ZH = "未配置对话模型，以下为直接引用的证据原文："

# Chinese sentence ends split anywhere; "." only before whitespace, so "v2.4.1" stays whole.
_SENTENCE_END = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "of", "on", "or", "the", "to", "what", "when", "where", "which",
    "who", "why", "with",
})


def sentences(text: str) -> list[str]:
    """The non-empty sentences of `text`, in order."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def terms(text: str) -> set[str]:
    """Lowercased words (no stopwords) and Chinese character bigrams (single characters alone)."""
    lowered = text.lower()
    found = {word for word in _WORD.findall(lowered) if word not in _STOPWORDS}
    for run in _HAN.findall(lowered):
        if len(run) == 1:
            found.add(run)
        else:
            found.update(run[i : i + 2] for i in range(len(run) - 1))
    return found


def best_sentence(question_terms: set[str], text: str) -> tuple[float, str]:
    """The sentence of `text` outside its list items sharing the largest share of the
    question's terms (first on ties)."""
    best_score, best = -1.0, ""
    for sentence in sentences(without_list_items(text)):
        score = len(question_terms & terms(sentence)) / len(question_terms)
        if score > best_score:
            best_score, best = score, sentence
    return max(best_score, 0.0), best


def best_excerpt(wanted: set[str], item: Evidence) -> Excerpt:
    """What `item` contributes: its table's matching rows when it holds a table, else its
    matching list items or its best sentence, whichever holds more question terms."""
    table = table_excerpt(wanted, item.text, terms)
    if table is not None:
        return table
    listed = list_excerpt(wanted, item.text, terms)
    score, sentence = best_sentence(wanted, item.text)
    if listed is not None and listed.score >= score:
        return listed
    return Excerpt("sentence", sentence, score)


def extractive_answer(question: str, evidence: Sequence[Evidence], max_sentences: int = 3,
                      max_chars: int = MAX_ANSWER_CHARS) -> str:
    """A note saying no model answered, then the best sentences with their citation links
    (`[来源 N](citation://N)` for a Chinese question, `[Source N](...)` else); pure.

    One excerpt per evidence item (best_excerpt: table rows, list items or a sentence), in
    evidence order, from the items that share any term with the question (at most
    `max_sentences`); when none does, the first sentence of the top item. The quotes are cut
    to `max_chars` (RAGSIFT_CHAT_EXTRACTIVE_MAX_CHARS) only between whole excerpts, each
    with its citation.
    The top item's first image follows, when it has one. Without evidence, the plain
    no-evidence answer.
    """
    if not evidence:
        return no_evidence_answer(question)
    wanted = terms(question) or {question.strip().lower()}
    picked: list[tuple[Evidence, Excerpt]] = []
    for item in evidence:
        excerpt = best_excerpt(wanted, item)
        if excerpt.score > 0 and excerpt.text:
            picked.append((item, excerpt))
        if len(picked) == max_sentences:
            break
    if not picked:
        first = sentences(evidence[0].text)
        text = first[0] if first else evidence[0].text.strip()
        picked = [(evidence[0], Excerpt("sentence", text, 0.0))]
    chinese = is_chinese(question)
    note = EXTRACTIVE_NOTE_ZH if chinese else EXTRACTIVE_NOTE_EN
    word = label_word(chinese)
    blocks = within_bound([quote(excerpt, citation_link(item.n, word))
                           for item, excerpt in picked], max_chars)
    answer = note + "\n\n" + "\n".join(blocks).strip("\n")
    if evidence[0].assets:
        answer += "\n\n" + image_link(evidence[0].assets[0])
    return answer
