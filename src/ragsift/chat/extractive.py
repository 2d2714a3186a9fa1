"""The answer without a chat model: the evidence sentences closest to the question, cited."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragsift.chat.assets import image_link
from ragsift.chat.citations import citation_link, label_word
from ragsift.chat.prompt import is_chinese, no_evidence_answer
from ragsift.domain.chat import Evidence

EXTRACTIVE_NOTE_EN = "No chat model is configured, so this answer quotes the evidence directly:"
EXTRACTIVE_NOTE_ZH = "未配置对话模型，以下为直接引用的证据原文："
MAX_SENTENCE_CHARS = 300

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


# a list item's marker: the answer's own bullet replaces it ("- - text" rendered an empty bullet)
_LIST_MARK = re.compile(r"^(?:[-*+•·]|\d{1,3}[.)、])\s+")
_TABLE_ROW = re.compile(r"^\|.*\|$")
_TABLE_RULE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")
MAX_TABLE_ROWS = 3


def table_excerpt(question_terms: set[str], text: str) -> tuple[float, str] | None:
    """The rows of the Markdown table in `text` (a spreadsheet or document table) that share
    the most question terms, at most MAX_TABLE_ROWS in table order, under the table's header:
    (share of the question's terms they hold, a small Markdown table); None without a table."""
    lines = [line.strip() for line in text.splitlines()]
    for i in range(len(lines) - 1):
        if _TABLE_ROW.match(lines[i]) and _TABLE_RULE.match(lines[i + 1]):
            header, rule = lines[i], lines[i + 1]
            rows = []
            for line in lines[i + 2:]:
                if not _TABLE_ROW.match(line):
                    break
                rows.append(line)
            scored = [(len(question_terms & terms(row)), n, row) for n, row in enumerate(rows)]
            best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
            picked = sorted(best[:MAX_TABLE_ROWS], key=lambda s: s[1]) or scored[:1]
            if not picked:
                return None
            held = len(question_terms & terms(" ".join([header, *(p[2] for p in picked)])))
            return held / len(question_terms), "\n".join([header, rule, *(p[2] for p in picked)])
    return None


def _shorten(sentence: str) -> str:
    if len(sentence) <= MAX_SENTENCE_CHARS:
        return sentence
    return sentence[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


def best_sentence(question_terms: set[str], item: Evidence) -> tuple[float, str]:
    """The sentence of `item` sharing the largest share of the question's terms (first on ties)."""
    best_score, best = -1.0, ""
    for sentence in sentences(item.text):
        score = len(question_terms & terms(sentence)) / len(question_terms)
        if score > best_score:
            best_score, best = score, sentence
    return max(best_score, 0.0), best


def _quote(excerpt: str, link: str) -> str:
    """A table stays a table (its citation on the line after it, blank lines around it so
    Markdown renders it); a sentence becomes one bullet without its own list marker."""
    if _TABLE_ROW.match(excerpt.split("\n", 1)[0]):
        return f"\n{excerpt}\n\n{link}\n"
    return f"- {_shorten(_LIST_MARK.sub('', excerpt))} {link}"


def extractive_answer(question: str, evidence: Sequence[Evidence], max_sentences: int = 3) -> str:
    """A note saying no model answered, then the best sentences with their citation links
    (`[来源 N](citation://N)` for a Chinese question, `[Source N](...)` else); pure.

    One sentence per evidence item, in evidence order, from the items that share any term
    with the question (at most `max_sentences`); when none does, the first sentence of the
    top item. The top item's first image follows, when it has one. Without evidence, the
    plain no-evidence answer.
    """
    if not evidence:
        return no_evidence_answer(question)
    wanted = terms(question) or {question.strip().lower()}
    picked: list[tuple[Evidence, str]] = []
    for item in evidence:
        table = table_excerpt(wanted, item.text)
        score, sentence = table if table is not None else best_sentence(wanted, item)
        if score > 0 and sentence:
            picked.append((item, sentence))
        if len(picked) == max_sentences:
            break
    if not picked:
        first = sentences(evidence[0].text)
        picked = [(evidence[0], first[0] if first else evidence[0].text.strip())]
    chinese = is_chinese(question)
    note = EXTRACTIVE_NOTE_ZH if chinese else EXTRACTIVE_NOTE_EN
    word = label_word(chinese)
    blocks = [_quote(excerpt, citation_link(item.n, word)) for item, excerpt in picked]
    answer = note + "\n\n" + "\n".join(blocks).strip("\n")
    if evidence[0].assets:
        answer += "\n\n" + image_link(evidence[0].assets[0])
    return answer
