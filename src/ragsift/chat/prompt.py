"""The messages sent to the chat model: rules, earlier turns, numbered evidence, the question."""

from __future__ import annotations

from collections.abc import Sequence

from ragsift.chat.assets import image_link, strip_assets
from ragsift.chat.citations import citation_link, has_han, label_word, strip_citations
from ragsift.chat.evidence import describe_locator
from ragsift.domain.chat import ChatMessage, Evidence

_RULES = """\
You answer questions about a knowledge base of Chinese and English documents, using ONLY the
numbered evidence given with the question.
Rules:
- Every statement of fact must be supported by the evidence. Cite the evidence right after the
  sentence it supports, as a Markdown link of exactly this form: [{word} N](citation://N), where
  N is the number of the evidence, for example: "{example}"
  Cite several pieces as separate links, one number each: {several}.
  Never put two numbers in one link. Use only numbers from the list.
- If the evidence does not answer the question, say so plainly; do not guess and do not use
  outside knowledge.
- Keep numbers, dates, codes and names exactly as the evidence writes them.
- Evidence may list images as "Image: ![caption](asset://ID)". When an image helps the answer,
  show it by copying that Markdown exactly, on a line of its own; never write any other
  asset:// link.
- {language}
{reminder}"""
_EXAMPLE_EN = "The limit is 150 dollars [Source 2](citation://2)."
_EXAMPLE_ZH = "住宿上限为每晚 150 美元[来源 2](citation://2)。"
_LANGUAGE_EN = "The question is in English: answer in English, concisely."
_LANGUAGE_ZH = "The question is in Chinese: answer in Simplified Chinese, concisely."
_REMINDER_EN = "Cite as [Source N](citation://N); when the evidence is not enough, say so."
_REMINDER_ZH = ("你只能依据所给的编号证据回答；每个事实后用 [来源 N](citation://N) 标注证据编号，"
                "多个来源分别标注；证据不足时直接说明。")


def system_prompt(chinese: bool) -> str:
    """The rules for the model, asking for citations as `[来源 N](citation://N)` for a Chinese
    conversation and `[Source N](citation://N)` for an English one."""
    word = label_word(chinese)
    return _RULES.format(
        word=word, example=_EXAMPLE_ZH if chinese else _EXAMPLE_EN,
        several=f"{citation_link(1, word)}{citation_link(3, word)}",
        language=_LANGUAGE_ZH if chinese else _LANGUAGE_EN,
        reminder=_REMINDER_ZH if chinese else _REMINDER_EN,
    )


SYSTEM_PROMPT = system_prompt(False)
SYSTEM_PROMPT_ZH = system_prompt(True)

NO_EVIDENCE_EN = "No evidence in the knowledge base matches this question, so I cannot answer it."
NO_EVIDENCE_ZH = "知识库中没有与该问题相关的证据，因此无法回答。"


def is_chinese(text: str) -> bool:
    """Whether `text` contains CJK ideographs (the answer's language follows the question)."""
    return has_han(text)


def conversation_is_chinese(question: str, history: Sequence[tuple[str, str]] = ()) -> bool:
    """The conversation's language: the question's (Chinese when it has Chinese characters,
    English when it has Latin letters), else that of the latest earlier question that shows
    one ("E-104?" after a Chinese question stays Chinese only when it has no letters)."""
    for text in (question, *(asked for asked, _ in reversed(history))):
        if is_chinese(text):
            return True
        if any("a" <= ch.lower() <= "z" for ch in text):
            return False
    return False


def no_evidence_answer(question: str) -> str:
    """The answer when retrieval found nothing: said plainly, in the question's language."""
    return NO_EVIDENCE_ZH if is_chinese(question) else NO_EVIDENCE_EN


def render_evidence(item: Evidence) -> str:
    """`[n] file › heading › heading (page 3)`, the text the model reads (with context), then
    one `Image: ![caption](asset://ID)` line per image of the item."""
    source = " › ".join((item.filename, *item.heading_path))
    where = describe_locator(item.locator)
    header = f"[{item.n}] {source}" + (f" ({where})" if where else "")
    images = "".join(f"\nImage: {image_link(ref)}" for ref in item.assets)
    return f"{header}\n{item.context_text or item.text}{images}"


def build_messages(
    question: str, evidence: Sequence[Evidence], history: Sequence[tuple[str, str]] = ()
) -> tuple[ChatMessage, ...]:
    """System rules, earlier (question, answer) pairs, then the evidence and the question.

    The rules ask for citations in the question's language: `[来源 N](citation://N)` for a
    Chinese question, `[Source N](citation://N)` for an English one.

    Earlier answers go in without their citation and image links: those referred to the
    evidence of their own turn and would point at the wrong evidence here.
    """
    chinese = conversation_is_chinese(question, history)
    messages = [ChatMessage(role="system", content=system_prompt(chinese))]
    for asked, answered in history:
        messages.append(ChatMessage(role="user", content=asked))
        earlier = strip_assets(strip_citations(answered)).strip()
        messages.append(ChatMessage(role="assistant", content=earlier))
    blocks = "\n\n".join(render_evidence(item) for item in evidence)
    messages.append(ChatMessage(
        role="user", content=f"Evidence:\n\n{blocks}\n\nQuestion: {question}"
    ))
    return tuple(messages)
