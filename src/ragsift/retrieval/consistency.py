"""Light re-scoring of the fused top-k: candidates that contradict the query are pushed down.

Two cheap, corpus-independent signals (issue 18, item 5):

* numbers: a quantity of the query (3天, 两岁半 = 2.5 岁, 10mg, 20%) against the candidate's
  quantities of the same dimension; the candidate contradicts the query when it states that
  dimension only with other values (30天, 一岁半).
* minimal pairs: the candidate is the query with one short span substituted (胃炎 -> 肠炎,
  借呗 -> 花呗) and the query's span appears nowhere in the candidate.

Both only look at short candidates (questions, titles, FAQ entries): a long passage states
many numbers and differs from the query everywhere, so neither signal means anything there.
A third signal, a rare query word missing from the candidate, is off (penalty 0): it hurt on
both Chinese dev sets. On the dev sets (docs/quality.md, "Quality levers") numbers were
neutral and swaps helped afqmc-faq but hurt kuake-qtr, so the stage is an option.

The penalty is subtracted from the fused score; every penalty is recorded on its candidate so
a trace can show why it moved. Pure: no I/O, no state beyond the validated configuration; the
KB's idf (for `min_idf`) is a callable the caller passes, e.g. from the BM25 store's
`term_stats` through `ragsift.retrieval.feedback.idf_from_stats`.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragsift.config import Settings
from ragsift.retrieval.quantities import Quantity, contradicts, quantities

__all__ = [
    "Candidate", "ConsistencyConfig", "ConsistencyRescorer", "Note", "Quantity", "Rescored",
    "Rescoring", "config_from_settings", "quantities", "substitution",
]

_NOT_TEXT = re.compile(r"[\W_]+", re.UNICODE)
_NUMERAL = re.compile(r"[\d零〇一二两三四五六七八九十百千万半]")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One fused candidate: its id (a chunk id), the text it was matched on, its score."""

    id: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Note:
    """Why a candidate was penalised: the signal, the two spans and the penalty."""

    kind: str  # "number" | "substitution" | "missing"
    query_span: str
    candidate_span: str
    penalty: float


@dataclass(frozen=True, slots=True)
class Rescored:
    id: str
    score: float
    original_score: float
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True, slots=True)
class Rescoring:
    """Every candidate in the new order, and how many were penalised."""

    candidates: tuple[Rescored, ...]

    @property
    def penalised(self) -> int:
        return sum(1 for c in self.candidates if c.notes)

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.candidates)


@dataclass(frozen=True, slots=True)
class ConsistencyConfig:
    """Penalties in fused-score units (z-score fusion: about one standard deviation is 1)."""

    top_k: int = 30
    number_penalty: float = 1.0
    substitution_penalty: float = 1.0
    max_span: int = 2  # longest substituted span, in characters, on either side
    max_extra: int = 2  # characters inserted or deleted besides the substitution
    min_shared: float = 0.5  # share of the query's characters the candidate must keep
    max_candidate_chars: int = 200  # longer candidates are passages: left alone
    min_word_chars: int = 2  # the words around a swap: shorter ones are function words
    min_idf: float = 0.0  # the query's swapped word must be at least this rare in the KB
    missing_penalty: float = 0.0  # a rare query word absent from the candidate (needs idf)
    missing_min_idf: float = 5.0

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if self.number_penalty < 0 or self.substitution_penalty < 0:
            raise ValueError("penalties cannot be negative")
        if self.max_span < 1 or self.max_extra < 0 or self.max_candidate_chars < 1:
            raise ValueError("max_span and max_candidate_chars must be >= 1, max_extra >= 0")
        if self.min_word_chars < 1 or self.min_idf < 0 or self.missing_min_idf < 0:
            raise ValueError("min_word_chars must be >= 1, min_idf and missing_min_idf >= 0")
        if self.missing_penalty < 0:
            raise ValueError("penalties cannot be negative")
        if not 0 < self.min_shared <= 1:
            raise ValueError(f"min_shared must be in (0, 1], got {self.min_shared}")


def config_from_settings(settings: Settings) -> ConsistencyConfig:
    """The configuration the RAGSIFT_CONSISTENCY_* settings describe."""
    return ConsistencyConfig(
        top_k=settings.consistency_top_k,
        number_penalty=settings.consistency_number_penalty,
        substitution_penalty=settings.consistency_swap_penalty,
        min_idf=settings.consistency_swap_min_idf,
        max_candidate_chars=settings.consistency_max_candidate_chars,
    )


def _plain(text: str) -> str:
    """NFKC, lowercased, without punctuation or spaces: what the character diff compares."""
    return _NOT_TEXT.sub("", unicodedata.normalize("NFKC", text).lower())


def _covering_word(text: str, start: int, end: int) -> str:
    """The jieba words of `text` that overlap [start, end), joined.

    A run of single-character words counts as one word: that is how jieba cuts a name it
    does not know (借呗 -> 借 / 呗), and such names are what a swap usually replaces.
    """
    words: list[tuple[int, str]] = []
    offset = 0
    import rjieba  # its import builds jieba's dictionary: only when a stage runs

    for word in rjieba.cut(text):
        words.append((offset, word))
        offset += len(word)
    covered = [i for i, (at, word) in enumerate(words) if at < end and at + len(word) > start]
    if not covered:
        return ""
    first, last = covered[0], covered[-1]
    while first > 0 and len(words[first][1]) == 1 and len(words[first - 1][1]) == 1:
        first -= 1
    while (last + 1 < len(words) and len(words[last][1]) == 1
           and len(words[last + 1][1]) == 1):
        last += 1
    return "".join(word for _, word in words[first:last + 1])


def substitution(
    query: str, candidate: str, max_span: int = 2, max_extra: int = 2, min_shared: float = 0.5,
    min_word_chars: int = 2,
) -> tuple[str, str] | None:
    """(query word, candidate word) when `candidate` is `query` with one short span swapped.

    The swap counts only when the words around it (jieba's) have at least `min_word_chars`
    characters on both sides (单字 swaps are mostly particles and synonyms: 吗/嘛, 低/少),
    the query's word is absent from the candidate and the candidate's from the query (a
    reordering is not a swap), neither span is a number (the number check owns those), and
    the rest is shared.
    """
    q, c = _plain(query), _plain(candidate)
    if not q or not c or q == c:
        return None
    matcher = difflib.SequenceMatcher(None, q, c, autojunk=False)
    swaps: list[tuple[int, int, int, int]] = []
    extra = 0
    shared = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            shared += i2 - i1
        elif tag == "replace":
            swaps.append((i1, i2, j1, j2))
        else:
            extra += (i2 - i1) + (j2 - j1)
    if len(swaps) != 1 or extra > max_extra or shared < max(2, min_shared * len(q)):
        return None
    i1, i2, j1, j2 = swaps[0]
    if i2 - i1 > max_span or j2 - j1 > max_span:
        return None
    if _NUMERAL.search(q[i1:i2]) and _NUMERAL.search(c[j1:j2]):
        return None
    q_word, c_word = _covering_word(q, i1, i2), _covering_word(c, j1, j2)
    if min(len(q_word), len(c_word)) < min_word_chars or q_word in c or c_word in q:
        return None
    return q_word, c_word


class ConsistencyRescorer:
    """Re-scores the top-k of a fused list; see the module docstring for the signals."""

    def __init__(
        self, config: ConsistencyConfig | None = None,
        idf: Callable[[str], float] | None = None,
    ) -> None:
        """`idf`: the KB's idf of a word (for `min_idf`); without it min_idf is not applied."""
        self._config = config or ConsistencyConfig()
        self._idf = idf

    @property
    def config(self) -> ConsistencyConfig:
        return self._config

    def run(self, query: str, candidates: Sequence[Candidate]) -> Rescoring:
        """`candidates` (best first) re-scored and re-sorted; those past top_k are untouched.

        The sort is stable, so candidates without a penalty keep their relative order.
        """
        config = self._config
        asked = quantities(query)
        rare = self._rare_words(query)
        rescored: list[Rescored] = []
        for rank, candidate in enumerate(candidates):
            notes: tuple[Note, ...] = ()
            if rank < config.top_k and len(candidate.text) <= config.max_candidate_chars:
                notes = self._notes(query, asked, rare, candidate.text)
            penalty = sum(note.penalty for note in notes)
            rescored.append(Rescored(candidate.id, candidate.score - penalty, candidate.score,
                                     notes))
        order = sorted(range(len(rescored)), key=lambda i: (-rescored[i].score, i))
        return Rescoring(tuple(rescored[i] for i in order))

    def _rare_words(self, query: str) -> tuple[str, ...]:
        """The query's words (2+ characters) at least missing_min_idf rare in the KB."""
        if self._idf is None or self._config.missing_penalty <= 0:
            return ()
        import rjieba

        words = dict.fromkeys(w for w in rjieba.cut(_plain(query)) if len(w) >= 2)
        return tuple(w for w in words if self._idf(w) >= self._config.missing_min_idf)

    def _notes(
        self, query: str, asked: tuple[Quantity, ...], rare: tuple[str, ...], text: str
    ) -> tuple[Note, ...]:
        config = self._config
        notes: list[Note] = []
        plain = _plain(text)
        absent = [w for w in rare if w not in plain]
        if absent:
            notes.append(Note("missing", absent[0], "", config.missing_penalty))
        if asked and config.number_penalty > 0:
            clash = contradicts(asked, quantities(text))
            if clash is not None:
                notes.append(Note("number", clash[0].span, clash[1].span,
                                  config.number_penalty))
        if config.substitution_penalty > 0:
            swap = substitution(query, text, config.max_span, config.max_extra,
                                config.min_shared, config.min_word_chars)
            if swap is not None and (self._idf is None or config.min_idf <= 0
                                     or self._idf(swap[0]) >= config.min_idf):
                notes.append(Note("substitution", swap[0], swap[1],
                                  config.substitution_penalty))
        return tuple(notes)
