"""The messages sent to the chat model: rules, earlier turns, numbered evidence, the question."""

from __future__ import annotations

from collections.abc import Sequence

from ragsift.chat.assets import image_link, strip_assets
from ragsift.chat.citations import strip_citations
from ragsift.chat.evidence import describe_locator
from ragsift.domain.chat import ChatMessage, Evidence

SYSTEM_PROMPT = """\
You answer questions about a knowledge base of Chinese and English documents, using ONLY the
numbered evidence given with the question.
Rules:
- Every statement of fact must be supported by the evidence. Cite the evidence right after the
  sentence it supports, as a Markdown link of exactly this form: [N](citation://N), where N is
  the number of the evidence, for example: "The limit is 150 dollars [2](citation://2)."
  Cite several pieces as [1](citation://1)[3](citation://3). Use only numbers from the list.
- If the evidence does not answer the question, say so plainly; do not guess and do not use
  outside knowledge.
- Keep numbers, dates, codes and names exactly as the evidence writes them.
- Evidence may list images as "Image: ![caption](asset://ID)". When an image helps the answer,
  show it by copying that Markdown exactly, on a line of its own; never write any other
  asset:// link.
- Answer in the language of the question (Chinese for a Chinese question), concisely.
你只能依据所给的编号证据回答；每个事实后用 [N](citation://N) 标注证据编号；证据不足时直接说明。"""

NO_EVIDENCE_EN = "No evidence in the knowledge base matches this question, so I cannot answer it."
NO_EVIDENCE_ZH = "知识库中没有与该问题相关的证据，因此无法回答。"


def is_chinese(text: str) -> bool:
    """Whether `text` contains CJK ideographs (the answer's language follows the question)."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


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

    Earlier answers go in without their citation and image links: those referred to the
    evidence of their own turn and would point at the wrong evidence here.
    """
    messages = [ChatMessage(role="system", content=SYSTEM_PROMPT)]
    for asked, answered in history:
        messages.append(ChatMessage(role="user", content=asked))
        earlier = strip_assets(strip_citations(answered)).strip()
        messages.append(ChatMessage(role="assistant", content=earlier))
    blocks = "\n\n".join(render_evidence(item) for item in evidence)
    messages.append(ChatMessage(
        role="user", content=f"Evidence:\n\n{blocks}\n\nQuestion: {question}"
    ))
    return tuple(messages)
