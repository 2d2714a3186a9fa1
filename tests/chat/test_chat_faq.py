"""FAQ entries in a chat turn (chat/faq.py, ChatService): a `faq_direct` plan is answered with
the entry's own answer and cites it, without the model; below the threshold only the entries
close to the message (by dense cosine) join the evidence, before the documents.

The retriever and model are scripted fakes (the service is the unit); the conversation store
is the real SQLite one. The real stack runs in tests/api/test_api_chat_faq.py."""

from __future__ import annotations

import asyncio

from chat.chat_factories import HOTEL, result
from chat.test_chat_service import Model
from ragsift.adapters.sql.conversation_repository import SqlConversationStore
from ragsift.chat.service import ChatOptions, ChatRequest, ChatService, PreparedTurn
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import FaqHit, RetrievalResult
from ragsift.domain.trace import RouteTrace


def faq_hit(rank: int, question: str, answer: str, dense: float | None,
            direct: bool = False) -> FaqHit:
    return FaqHit(
        rank=rank, faq_id=f"faq{rank}", question=question, answer=answer, source="HR",
        dense_rank=None if dense is None else rank, dense_score=dense, sparse_rank=rank,
        sparse_score=3.0, fusion_score=round(1 / (60 + rank), 6),
        retrieval_sources=("sparse:original",), direct_answer=direct,
    )


class FaqRetriever:
    """Answers with one hotel chunk and the given FAQ hits under the given route."""

    def __init__(self, faq: tuple[FaqHit, ...], route: str = "search") -> None:
        self.faq = faq
        self.route = route
        self.requests: list[SearchRequest] = []

    async def search(self, request: SearchRequest) -> RetrievalResult:
        self.requests.append(request)
        found = result(HOTEL, query=request.query)
        trace = found.trace.model_copy(update={"route": RouteTrace(route=self.route)})
        return found.model_copy(update={"faq_hits": self.faq, "trace": trace})


def _turn(service: ChatService, message: str) -> PreparedTurn:
    return asyncio.run(service.prepare(ChatRequest(kb_id="kb1", message=message)))


def test_a_faq_direct_plan_answers_with_the_entry_and_cites_it_without_the_model(
    store: SqlConversationStore,
) -> None:
    model = Model(["never used"])
    retriever = FaqRetriever((faq_hit(1, "年假有几天？", "每年十五天带薪年假。", 0.97, True),),
                             route="faq_direct")
    service = ChatService(retriever, store, model)

    turn = _turn(service, "年假有几天")
    answer = asyncio.run(service.answer(turn))

    assert retriever.requests[0].run_faq is None  # the settings decide, as for search
    assert [(e.n, e.kind, e.question, e.text) for e in turn.evidence] == [
        (1, "faq", "年假有几天？", "每年十五天带薪年假。")]
    assert answer.finished.answer == "每年十五天带薪年假。 [来源 1](citation://1)"
    assert [(c.kind, c.source) for c in answer.finished.citations] == [("faq", "HR")]
    assert (answer.finished.extractive, answer.finished.model) == (False, None)
    assert model.prompts == [] and turn.messages == () and turn.faq_direct
    conversation = store.get_conversation(turn.conversation_id)
    assert conversation is not None
    assert [c.kind for c in conversation.turns[0].citations] == ["faq"]


def test_below_the_threshold_only_close_entries_join_the_evidence_before_the_documents(
    store: SqlConversationStore,
) -> None:
    model = Model(["The limit is 150 [2](citation://2)."])
    faq = (faq_hit(1, "Hotel limit per night?", "150 dollars.", 0.90),
           faq_hit(2, "Where is the office?", "Berlin.", 0.80),  # unrelated: below the floor
           faq_hit(3, "Hotel invoices?", "Keep them.", None))  # BM25 alone: no cosine
    service = ChatService(FaqRetriever(faq), store, model,
                          ChatOptions(faq_evidence_min_score=0.86))

    turn = _turn(service, "hotel limit?")
    answer = asyncio.run(service.answer(turn))

    assert [(e.n, e.kind) for e in turn.evidence] == [(1, "faq"), (2, "chunk")]
    assert "[1] FAQ › Hotel limit per night?\n150 dollars." in model.prompts[0][-1].content
    assert answer.finished.model == "fake-chat" and not turn.faq_direct
    assert [c.kind for c in answer.finished.citations] == ["chunk"]


def test_without_a_model_a_close_entry_is_quoted_like_other_evidence(
    store: SqlConversationStore,
) -> None:
    faq = (faq_hit(1, "Hotel limit per night?", "The hotel limit is 150 dollars.", 0.90),)
    service = ChatService(FaqRetriever(faq), store, None)

    answer = asyncio.run(service.answer(_turn(service, "hotel limit per night?")))

    assert answer.finished.extractive and "citation://1" in answer.finished.answer
    assert answer.finished.citations[0].kind == "faq"
