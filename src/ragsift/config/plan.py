"""The retrieval plan: the document search and the FAQ search, each with its own top-k; routing of
chitchat and out-of-scope turns."""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, model_validator

from ragsift.config.concern import Concern

_REPLY_KEY = re.compile(
    r"(greeting|thanks|farewell|acknowledgement|handoff|out_of_scope)\.(zh|en)")


class PlanSettings(Concern):
    """Retrieval plan, routing and FAQ."""

    run_doc: bool = Field(default=True, description="search document chunks")
    run_faq: bool = Field(
        default=True, description="search the FAQ collection (a KB without entries skips it)"
    )
    history_aware: bool = Field(
        default=True, description="search a follow-up with its conversation (a request's "
        "`history`, chat's own turns): a standalone question from the rewriter when one is "
        "configured, else the follow-up joined with the earlier question's terms",
    )
    route_rules: bool = Field(
        default=True, description="route greetings, thanks, farewells and requests for a "
        "person away from the search (retrieval/route.py); a request's route overrides",
    )
    chat_route_replies: dict[str, str] = Field(
        default_factory=dict, description="replies to chitchat and hand-off turns, a JSON "
        "object keyed <kind>.<zh|en> (kinds: greeting, thanks, farewell, acknowledgement, "
        "handoff, out_of_scope); a key left out keeps its built-in reply",
    )
    kb_domains: dict[str, str] = Field(
        default_factory=dict, description="the domains KBs declare, a JSON object keyed by KB "
        "name or id: a short description with its topics and terms. A message with no word "
        "of the domain and none of the KB's documents is routed out_of_scope (not searched); "
        "where the rules are unsure, the chat model decides when one is configured",
    )
    faq_top_k: int = Field(default=3, ge=1, le=50, description="FAQ entries to return")
    chat_faq_evidence_min_score: float = Field(
        default=0.86, ge=-1.0, le=1.0, description="in chat, a FAQ entry below the "
        "direct-answer threshold joins the evidence the model sees when the dense cosine "
        "between the message and its question reaches this (multilingual-e5-small: unrelated "
        "questions 0.70-0.86, loose paraphrases 0.85-0.90)",
    )
    faq_direct_answer_threshold: float = Field(
        default=0.92,
        ge=-1.0,
        le=1.0,
        description=(
            "the top FAQ hit is marked as a direct answer when the DENSE cosine between the "
            "query and its question reaches this (RRF scores are rank transforms, cosine is a "
            "calibrated scale). Needs the dense channel; depends on the embedder: with "
            "multilingual-e5-small unrelated questions score 0.70-0.86, loose paraphrases "
            "0.85-0.90, close paraphrases 0.93-0.95 and the same question 0.97"
        ),
    )

    @model_validator(mode="after")
    def _plan_checks(self) -> Self:
        if not self.run_doc and not self.run_faq:
            raise ValueError("run_doc and run_faq cannot both be false")
        return self

    @model_validator(mode="after")
    def _route_replies(self) -> Self:
        unknown = sorted(k for k in self.chat_route_replies if not _REPLY_KEY.fullmatch(k))
        if unknown:
            raise ValueError(
                f"RAGSIFT_CHAT_ROUTE_REPLIES has unknown keys {unknown}: use <kind>.<zh|en>, "
                "kind one of greeting, thanks, farewell, acknowledgement, handoff, out_of_scope"
            )
        return self
