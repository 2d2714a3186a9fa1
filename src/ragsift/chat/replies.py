"""The short replies of a turn the plan routed away from the search: no evidence, no citations.

Defaults in Chinese and English (the message's script picks one); each can be replaced by the
setting RAGSIFT_CHAT_ROUTE_REPLIES, a JSON object keyed `<kind>.<language>` (kinds: greeting,
thanks, farewell, acknowledgement, handoff, out_of_scope; languages: zh, en).
"""

from __future__ import annotations

from collections.abc import Mapping

from ragsift.domain.trace import RouteTrace

DEFAULT_REPLIES: Mapping[str, str] = {
    "greeting.zh": "您好！请直接提出您的问题，我会从知识库中查找答案。",
    "greeting.en": "Hello! Ask me a question and I will look for the answer in the knowledge base.",
    "thanks.zh": "不客气！还有其他问题随时问我。",
    "thanks.en": "You're welcome! Ask me anything else at any time.",
    "farewell.zh": "再见，祝您一切顺利！",
    "farewell.en": "Goodbye, all the best!",
    "acknowledgement.zh": "好的。还有其他问题吗？",
    "acknowledgement.en": "All right. Anything else I can look up for you?",
    "handoff.zh": "我无法为您转接人工服务。请通过贵单位的人工客服渠道联系工作人员；"
                  "如有关于知识库内容的问题，我可以继续为您查找。",
    "handoff.en": "I cannot transfer you to a person. Please reach a member of staff through "
                  "your organisation's support channel; I can keep answering questions about "
                  "the knowledge base.",
    # out_of_scope: the KB declares its domain (RAGSIFT_KB_DOMAINS) and the message is not in it
    "out_of_scope.zh": "这个问题不在本知识库的范围内，我无法回答。请提出与知识库内容相关的问题。",
    "out_of_scope.en": "That question is outside what this knowledge base covers, so I cannot "
                       "answer it. Ask me about the topics of the knowledge base.",
}
REPLY_KEYS = frozenset(DEFAULT_REPLIES)


def route_reply(route: RouteTrace, overrides: Mapping[str, str]) -> str:
    """The reply to a chitchat, handoff or out_of_scope turn, in the message's language."""
    kind = route.route if route.route in ("handoff", "out_of_scope") else (
        route.kind or "greeting")
    key = f"{kind}.{route.language or 'en'}"
    return overrides.get(key) or DEFAULT_REPLIES[key]
