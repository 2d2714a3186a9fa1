"""Whether a message the rules would search is out of its KB's declared domain (the plan's step
after the route rules): the rules of out_of_scope.py, then the model where they are unsure.

The model is asked only when one is configured (the rewrite model, a validated-JSON answer);
a failed or invalid answer is a degradation in the trace, and the rules' decision (search)
stands. A forced route, rules switched off or a KB without a declared domain skip all this.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ragsift.domain.trace import Degradation, RouteTrace
from ragsift.retrieval.out_of_scope import Domain, check_scope, known_words

logger = logging.getLogger(__name__)


@runtime_checkable
class ScopeClassifier(Protocol):
    """A model that says whether a message is about a domain (OpenAIRewriter.in_scope)."""

    def in_scope(self, message: str, domain: str) -> bool:
        """Raises UpstreamError when the server fails or answers something unusable."""
        ...


@runtime_checkable
class VocabularyIndex(Protocol):
    """An index that tells which terms a KB's documents hold (the embedded BM25 store)."""

    def sparse_analyzer(self, kb_id: str) -> tuple[int, object]: ...

    def sparse_term_stats(
        self, kb_id: str, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]: ...


class ScopeJudge:
    """Routes out_of_scope the messages of a KB with a declared domain that are not about it."""

    def __init__(
        self, domains: Mapping[str, str], index: object, classifier: object | None,
        timeout_s: float,
    ) -> None:
        self._domains = {key: Domain.of(text) for key, text in domains.items() if text.strip()}
        self._index = index if isinstance(index, VocabularyIndex) else None
        self._classifier = classifier if isinstance(classifier, ScopeClassifier) else None
        self._timeout_s = timeout_s

    def domain(self, kb_id: str, kb_name: str) -> Domain | None:
        return self._domains.get(kb_id) or self._domains.get(kb_name)

    async def judge(
        self, kb_id: str, kb_name: str, route: RouteTrace, message: str
    ) -> tuple[RouteTrace, tuple[Degradation, ...]]:
        """`route` unchanged unless the rules decided `search` and the KB declares a domain."""
        domain = self.domain(kb_id, kb_name)
        if domain is None or route.route != "search" or route.decided_by != "rules":
            return route, ()
        check = await asyncio.to_thread(check_scope, message, domain,
                                        lambda words: self._known(kb_id, words))
        if check.verdict == "out_of_scope":
            return route.model_copy(update={"route": "out_of_scope", "reason": check.reason}), ()
        if check.verdict == "in_scope" or self._classifier is None:
            return route.model_copy(update={"reason": f"{route.reason}; {check.reason}"}), ()
        return await self._ask(domain, message, route, check.reason)

    async def _ask(
        self, domain: Domain, message: str, route: RouteTrace, unsure: str
    ) -> tuple[RouteTrace, tuple[Degradation, ...]]:
        assert self._classifier is not None
        try:
            inside = await asyncio.wait_for(
                asyncio.to_thread(self._classifier.in_scope, message, domain.description),
                self._timeout_s)
        except Exception as exc:  # the rules' decision stands; the trace says why
            reason = (f"the model could not classify the scope ({type(exc).__name__}: "
                      f"{exc}); the rules' route (search) stands")
            logger.warning("route classification failed: %s", exc)
            return (route.model_copy(update={"reason": f"{route.reason}; {unsure}"}),
                    (Degradation(code="route_classification_failed", reason=reason),))
        verdict = "in the KB's domain" if inside else "outside the KB's domain"
        return route.model_copy(update={
            "route": "search" if inside else "out_of_scope", "decided_by": "llm",
            "reason": f"{unsure}; the model judged it {verdict}"}), ()

    def _known(self, kb_id: str, words: Sequence[str]) -> set[str] | None:
        index = self._index
        if index is None:
            return None
        try:
            _, analyze = index.sparse_analyzer(kb_id)
            return known_words(words, analyze,  # type: ignore[arg-type]
                               lambda terms: index.sparse_term_stats(kb_id, terms)[1])
        except Exception:  # unknown vocabulary: the rules are unsure, never out of scope
            logger.warning("BM25 term statistics unavailable for kb %s", kb_id, exc_info=True)
            return None
