"""Follow-up questions: whether a message needs its conversation, and its contextual variant.

"可以提前转正吗？" after "试用期多长？" or "And for managers?" after a question on hotel limits
find nothing searched alone. Without a model to write a standalone question, the message is
searched twice: as it stands, and joined with the salient terms of the earlier user question it
continues (the contextual variant); the lists of both are fused. Only a message that looks
dependent gets the variant - short, or with a pronoun, an ellipsis particle ("呢", "what
about") or a connective ("还有", "and for") - so a new topic is not pulled back to the old.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.requests import HistoryMessage
from ragsift.retrieval.route import classify

# at most this many CJK characters, or Latin words, of content (asking words left out) make a
# message short: "可以提前转正吗？" has 4 ("提前转正"), "出差住宿标准是多少" 6
SHORT_CJK_CHARS = 5
SHORT_LATIN_WORDS = 2
# earlier user questions whose terms a chain of follow-ups may reach back to
MAX_CHAIN = 3

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\w.-]*")
# pronouns, demonstratives, ellipsis particles and connectives that lean on earlier turns
_ZH_MARKERS = re.compile(
    r"它|它们|他们|她们|这个|那个|这些|那些|这种|那种|这样|那样|该|此|上述|上面|前面|刚才|"
    r"还有|另外|其他|其它|同样|也是|那么|那|呢[？?。!！]*$"
)
_EN_MARKERS = re.compile(
    r"\b(it|its|they|them|their|this|that|these|those|there|also|too|else|same|other|"
    r"another|above|then|what about|how about|and for|and what|and how|and if|and the|"
    r"instead|as well)\b", re.IGNORECASE,
)
# words that ask rather than name: left out of the salient terms of a question
_ZH_FUNCTION = re.compile(
    r"请问|什么|多少|多久|多长|多大|怎么样|怎么|怎样|如何|为什么|是否|哪些|哪个|哪里|哪儿|几天|几个|几|"
    r"吗|呢|吧|啊|"
    r"的|了|是|有|可以|能否|能不能|能|需要|要|我们|我|你们|你|一下|一般|都|在|和|与|及|或|那么|那|"
    r"这|还有|另外|其他|其它|同样|也"
)
_EN_FUNCTION = frozenset(re.findall(r"\S+", """
a an the is are was were be been being do does did done can could should would will shall may
might must i me my we our us you your he she his her it its they them their what which who whom
whose when where why how many much there here this that these those of to in on at for from by
with about as into over under and or but if then than so not no yes any some per please tell
know need get got have has had also too else again just only ok okay
"""))


@dataclass(frozen=True, slots=True)
class FollowUp:
    """Why a message is taken as a follow-up, and the terms of the question it continues."""

    reason: str
    salient: tuple[str, ...]

    @property
    def terms(self) -> str:
        return " ".join(self.salient)


def refers_back(message: str) -> bool:
    """Whether a message has a pronoun, an ellipsis particle or a connective."""
    return bool(_ZH_MARKERS.search(message) or _EN_MARKERS.search(message))


def dependence(message: str) -> str | None:
    """Why `message` looks like it needs earlier turns; None when it stands alone."""
    marker = _ZH_MARKERS.search(message) or _EN_MARKERS.search(message)
    if marker is not None:
        return f"refers back ({marker.group(0).strip()!r})"
    content = salient_terms(message)
    cjk = sum(len(_CJK_CHAR.findall(term)) for term in content)
    latin = sum(1 for term in content if not _CJK_CHAR.search(term))
    if cjk and cjk <= SHORT_CJK_CHARS and latin <= 1:
        return f"short ({cjk} CJK characters of content)"
    if not cjk and latin <= SHORT_LATIN_WORDS:
        return f"short ({latin} content words)"
    return None


def salient_terms(question: str) -> list[str]:
    """The content words of a question: CJK runs without the asking words, Latin words
    without function words; in order, each once."""
    terms: list[str] = []
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", question):
        terms += [part for part in _ZH_FUNCTION.split(run) if part]
    terms += [word for word in _LATIN_WORD.findall(question)
              if word.lower() not in _EN_FUNCTION]
    return list(dict.fromkeys(terms))


def follow_up(message: str, history: Sequence[HistoryMessage]) -> FollowUp | None:
    """The follow-up reading of `message` in `history` (oldest first); None when the message
    stands alone or there is no earlier user question to continue."""
    # a greeting or a request for a person asked nothing to continue
    questions = [turn.content for turn in history
                 if turn.role == "user" and classify(turn.content).route == "search"]
    if not questions:
        return None
    reason = dependence(message)
    if reason is None:
        return None
    own = set(salient_terms(message))
    salient: list[str] = []
    # a chain of follow-ups ("年假几天？" "那病假呢？" "需要证明吗？") reaches back to the
    # first earlier question that refers to nothing before it
    for question in reversed(questions[-MAX_CHAIN:]):
        salient += [term for term in salient_terms(question) if term not in own]
        if not refers_back(question):
            break
    salient = list(dict.fromkeys(salient))
    if not salient:
        return None
    return FollowUp(reason, tuple(salient))


def contextual_query(message: str, found: FollowUp) -> str:
    """The message followed by the salient terms of the question it continues."""
    return f"{message.strip()} {found.terms}"
