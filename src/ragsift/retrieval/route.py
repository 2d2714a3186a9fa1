"""The route of a message, decided by rules before anything is searched (DESIGN section 8).

A greeting, a thank-you, a farewell or an acknowledgement (`chitchat`) and a request for a
person (`handoff`) need no evidence: searching for them costs a search and makes a chat cite
five passages for "你好". Everything else is a `search`.

The rules are lexicons of whole messages: a message is routed away from the search only when
every part of it is a known phrase of that route or a filler ("请", "please", "呀"), so any
content word ("你好，年假几天？", "thanks, and the hotel limit?") keeps it a search. That
makes the rules precise rather than complete - the cost of a missed greeting is one needless
search, the cost of a question taken for a greeting is a user left without an answer - and
the labelled set in tests/retrieval/data/routes.jsonl measures both sides.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ragsift.domain.requests import RouteChoice
from ragsift.domain.trace import RouteTrace

Route = Literal["chitchat", "handoff", "search"]
ChitchatKind = Literal["greeting", "thanks", "farewell", "acknowledgement"]

# Longer than this, a message is a search whatever it starts with (no greeting is this long).
MAX_ROUTED_CHARS = 48

_GREETINGS = (
    "你好", "您好", "你们好", "大家好", "嗨", "哈喽", "哈啰", "嗨喽", "早上好", "上午好", "中午好",
    "下午好", "晚上好", "早安", "午安", "在吗", "在不在", "有人吗", "有人在吗", "喂",
    "hi", "hello", "hey", "hiya", "howdy", "greetings", "good morning", "good afternoon",
    "good evening", "hi there", "hello there", "hey there", "anyone there", "are you there",
    "yo",
)
_THANKS = (
    "谢谢", "谢啦", "谢了", "多谢", "感谢", "感谢你", "感谢您", "谢谢你", "谢谢您", "辛苦了",
    "麻烦了", "太感谢了", "非常感谢", "十分感谢", "万分感谢", "谢谢啦", "thx", "thanks",
    "thank you", "thank u", "ty", "many thanks", "cheers", "much appreciated", "appreciate it",
    "thanks a lot", "thanks so much", "thank you so much", "thank you very much",
)
_FAREWELLS = (
    "再见", "拜拜", "拜", "回头见", "下次见", "晚安", "先这样", "bye", "goodbye", "good bye",
    "bye bye", "see you", "see ya", "see you later", "good night", "take care",
    "have a nice day", "have a good day",
)
_ACKNOWLEDGEMENTS = (
    "好的", "好", "嗯", "嗯嗯", "哦", "噢", "知道了", "明白了", "明白", "收到", "了解", "懂了",
    "没问题", "ok", "okay", "okey", "got it", "great", "cool", "nice", "alright", "all right",
    "perfect", "awesome", "understood", "noted", "sure",
)
# words that add nothing to a greeting or a request for a person
_FILLERS = (
    "啊", "呀", "哈", "呢", "吧", "啦", "嘛", "哈哈", "呵呵", "哈哈哈", "了", "的", "你", "您",
    "很", "非常", "真", "真的", "一下", "小助手", "助手", "机器人", "so", "very", "much",
    "a lot", "again", "there", "you", "all", "guys", "everyone", "folks", "bot", "assistant",
    "oh", "ah", "um", "well", "lol", "haha", "and", "for", "the", "help", "your", "ragsift",
)
# a request for a person: one of these ...
_HANDOFF_CORES = (
    "转人工", "转接人工", "人工客服", "人工服务", "人工坐席", "真人客服", "人工", "真人",
    "客服", "human", "a human", "human agent", "real person", "a real person", "live agent",
    "live person", "live chat", "a person", "someone", "representative", "a representative",
    "operator", "an operator", "agent", "an agent", "support agent", "customer service",
)
# ... with one of these (Chinese cores other than 客服 stand alone), and fillers
_HANDOFF_CUES = (
    "转", "转接", "找", "接", "要", "联系", "呼叫", "talk to", "speak to", "speak with",
    "talk with", "chat with", "connect me to", "connect me with", "transfer me to",
    "put me through to", "get me", "let me talk to", "let me speak to", "i want",
    "i need", "i'd like", "i would like", "can i talk to", "can i speak to",
)
_HANDOFF_FILLERS = (
    "请", "帮我", "给我", "麻烦", "我要", "我想", "我需要", "能不能", "可以", "可不可以", "吗",
    "一下", "帮忙", "直接", "马上", "个", "please", "to", "a", "an", "now", "me", "just",
    "i", "want", "would", "like", "need", "can", "could", "you",
)
# Chinese cores that name a person by themselves ("人工" alone asks for one in a chat box);
# English cores and 客服 need a cue ("agent" alone may be a search for agents)
_STANDALONE_CORES = frozenset({"转人工", "转接人工", "人工客服", "人工服务", "人工坐席",
                               "真人客服", "人工", "真人"})

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_NOT_WORD = re.compile(r"[^\w']+")


def _alternation(phrases: tuple[str, ...]) -> str:
    """Longest first; Latin phrases end at a word boundary ("hi" never matches "his")."""
    ordered = sorted(set(phrases), key=len, reverse=True)
    return "|".join(
        re.escape(p) if _CJK.search(p) else re.escape(p) + r"(?![a-z0-9'])" for p in ordered
    )


def _parts(*groups: tuple[str, ...]) -> re.Pattern[str]:
    """One phrase of `groups`, with one capture group per group."""
    return re.compile("|".join(f"({_alternation(group)})" for group in groups))


def _whole(parts: re.Pattern[str]) -> re.Pattern[str]:
    """A whole message made of `parts` and spaces."""
    return re.compile(rf"(?:\s*(?:{parts.pattern}))+\s*")


_CHITCHAT_PART = _parts(_THANKS, _FAREWELLS, _GREETINGS, _ACKNOWLEDGEMENTS, _FILLERS)
_CHITCHAT = _whole(_CHITCHAT_PART)
_CHITCHAT_KINDS: tuple[ChitchatKind, ...] = ("thanks", "farewell", "greeting", "acknowledgement")
_HANDOFF = _whole(_parts(_HANDOFF_CORES, _HANDOFF_CUES, _HANDOFF_FILLERS, _GREETINGS))
_CORES = re.compile(_alternation(_HANDOFF_CORES))
_CUES = re.compile(_alternation(_HANDOFF_CUES))
# "human please", "agent, please": a request without a verb
_PLEASE = re.compile(r"(?:human|agent)\s+please|please\s+(?:human|agent)")


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """A route and why: the rule that matched (`chitchat:thanks`), or why it is a search."""

    route: Route
    reason: str
    kind: ChitchatKind | None = None
    language: Literal["zh", "en"] = "en"


def normalise(message: str) -> str:
    """Lower case, full-width folded, punctuation and emoji as spaces, spaces collapsed."""
    text = unicodedata.normalize("NFKC", message).lower().replace("’", "'")
    return " ".join(_NOT_WORD.sub(" ", text).split())


def classify(message: str) -> RouteDecision:
    """The route of one message by the rules (zh and en lexicons of whole messages)."""
    language: Literal["zh", "en"] = "zh" if _CJK.search(message) else "en"
    text = normalise(message)
    if not text:
        return RouteDecision("search", "no words to route by", language=language)
    if len(text) > MAX_ROUTED_CHARS:
        return RouteDecision("search", "longer than any greeting or hand-off request",
                             language=language)
    if _HANDOFF.fullmatch(text) is not None and _is_handoff(text):
        return RouteDecision("handoff", "asks for a person", language=language)
    if _CHITCHAT.fullmatch(text) is not None:
        kind = _chitchat_kind(text)
        if kind is not None:
            return RouteDecision("chitchat", f"the whole message is a {kind}", kind=kind,
                                 language=language)
    return RouteDecision("search", "a question or request for the knowledge base",
                         language=language)


def _is_handoff(text: str) -> bool:
    """A person is named (a core) and asked for (a cue, or a core that asks by itself)."""
    cores = [m.group(0) for m in _CORES.finditer(text)]
    if not cores:
        return False
    if any(core in _STANDALONE_CORES for core in cores) or _PLEASE.fullmatch(text):
        return True
    return _CUES.search(text) is not None


def _chitchat_kind(text: str) -> ChitchatKind | None:
    """The first kind, by precedence, of the phrases in the message; None: fillers only."""
    present: set[ChitchatKind] = set()
    for found in _CHITCHAT_PART.finditer(text):
        for kind, group in zip(_CHITCHAT_KINDS, found.groups(), strict=False):
            if group is not None:
                present.add(kind)
    return next((kind for kind in _CHITCHAT_KINDS if kind in present), None)


def decide(choice: RouteChoice | None, message: str, rules: bool) -> RouteTrace:
    """The route of a request: forced by it, else the rules' (when on), else `search`."""
    if choice is not None and choice != "auto":
        return RouteTrace(route=choice, decided_by="request", reason="forced by the request")
    if not rules:
        return RouteTrace(decided_by="default", reason="route rules are off")
    decision = classify(message)
    return RouteTrace(route=decision.route, decided_by="rules", reason=decision.reason,
                      kind=decision.kind, language=decision.language)
