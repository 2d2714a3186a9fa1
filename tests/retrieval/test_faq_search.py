"""The FAQ collection in a retrieval plan: separate results, direct answers, switches, failures.

A real stack (e5, tantivy, SQLite) with bilingual documents and FAQ entries in two knowledge
bases, and a third knowledge base that has documents but no FAQ.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput, NotFound, UpstreamError
from ragsift.domain.faq import FaqEntry
from ragsift.domain.index_records import IndexRecord
from ragsift.domain.models import KnowledgeBase
from ragsift.domain.requests import SearchRequest
from ragsift.domain.results import RetrievalResult
from ragsift.domain.stages import RerankScore
from ragsift.domain.trace import QueryVariant, RetrievalTrace, StageTrace
from ragsift.ingestion.faq_import import FaqRow
from ragsift.retrieval.faq import FaqOutcome, FaqSearcher, faq_records
from ragsift.retrieval.faq_probe import main_faq_search
from ragsift.retrieval.options import resolve_options
from ragsift.retrieval.scope import compile_filter
from ragsift.retrieval.service import RetrievalService

HANDBOOK = """# Employee handbook

## Annual leave

Employees accrue fifteen days of paid annual leave per year. Up to five unused days carry over.

## 报销

差旅费用须在出差结束后 30 天内提交报销申请，住宿标准为每晚 500 元。
"""
ROUTER = "# Router manual\n\nError E-104 means Wi-Fi authentication failed.\n"

LEAVE_QUESTION = "How many days of annual leave do I get?"
HR_FAQ = [
    FaqRow(LEAVE_QUESTION, "Fifteen days of paid annual leave per year.", "HR handbook", 1),
    FaqRow("差旅费用多久内报销？", "出差结束后 30 天内提交报销申请。", None, 2),
    FaqRow("Can unused leave be carried over?", "Up to five days carry over.", None, 3),
    FaqRow("How do I book a hotel?", "Through the travel desk.", "travel policy", 4),
]
IT_FAQ = [FaqRow("What does error E-104 mean?", "Wi-Fi authentication failed.", None, 1)]


@pytest.fixture(scope="module")
def faq_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
    root = tmp_path_factory.mktemp("faq_stack")
    container = build(Settings(data_dir=root / "data"))
    for kb_name, text, rows in (("hr", HANDBOOK, HR_FAQ), ("it", ROUTER, IT_FAQ),
                                ("docs-only", HANDBOOK, [])):
        kb = container.ingestion.ensure_kb(kb_name)
        path = root / f"{kb_name}.md"
        path.write_text(text, encoding="utf-8")
        assert container.ingestion.ingest_path(kb, path).document.error is None
        if rows:
            assert container.faq.import_rows(kb, rows).added == len(rows)
    yield container
    container.close()


def kb_of(app: Container, name: str) -> KnowledgeBase:
    found = app.repository.get_kb_by_name(name)
    assert found is not None
    return found


def service(app: Container, with_faq: bool = True, **overrides: Any) -> RetrievalService:
    settings = Settings(data_dir=app.settings.data_dir, **overrides)
    return RetrievalService(app.repository, app.index, app.embedder, settings,
                            faq_index=app.faq_index if with_faq else None)


def search(svc: RetrievalService, kb: KnowledgeBase, query: str, **fields: Any) -> RetrievalResult:
    request = SearchRequest.model_validate({"query": query, "kb_id": kb.id, **fields})
    return asyncio.run(svc.search(request))


def faq_ids(app: Container, kb: KnowledgeBase) -> set[str]:
    return {entry.id for entry in app.repository.list_faq_entries(kb.id)}


def test_faq_entries_and_document_chunks_come_back_separately(faq_stack: Container) -> None:
    hr = kb_of(faq_stack, "hr")
    result = search(faq_stack.retrieval, hr, LEAVE_QUESTION)
    chunk_ids = {c.id for d in faq_stack.repository.list_documents(hr.id)
                 for c in faq_stack.repository.list_chunks(d.id)}
    assert result.hits and {h.chunk_id for h in result.hits} <= chunk_ids
    assert result.faq_hits and {h.faq_id for h in result.faq_hits} <= faq_ids(faq_stack, hr)
    assert not {h.chunk_id for h in result.hits} & {h.faq_id for h in result.faq_hits}
    assert [h.rank for h in result.faq_hits] == list(range(1, len(result.faq_hits) + 1))
    first = result.faq_hits[0]
    assert (first.question, first.source) == (LEAVE_QUESTION, "HR handbook")
    assert first.retrieval_sources == ("dense:original", "sparse:original")
    # FAQ channels stay out of the document trace; the FAQ has its own stage (the second
    # dense channel is the documents' own: this KB is mostly in the query's other script)
    assert {c.list_name for c in result.trace.channels} <= {
        "dense:original", "sparse:original", "second_dense:original"}
    assert [c.list_name for c in result.trace.channels][:2] == ["dense:original",
                                                                "sparse:original"]
    assert result.trace.faq.status == "applied"
    assert result.trace.faq.detail["returned"] == len(result.faq_hits)
    assert "faq" in result.trace.timings_ms


def test_the_asked_question_is_a_direct_answer_and_an_unrelated_one_is_not(
    faq_stack: Container,
) -> None:
    hr = kb_of(faq_stack, "hr")
    exact = search(faq_stack.retrieval, hr, LEAVE_QUESTION)
    assert exact.faq_hits[0].direct_answer
    assert exact.faq_hits[0].dense_score is not None and exact.faq_hits[0].dense_score >= 0.92
    assert exact.trace.faq.detail["direct_answer"] == 1
    unrelated = search(faq_stack.retrieval, hr, "what is the weather in Paris tomorrow")
    assert not any(hit.direct_answer for hit in unrelated.faq_hits)
    assert unrelated.trace.faq.detail["direct_answer"] == 0


def test_the_direct_answer_threshold_is_compared_with_the_top_dense_cosine(
    faq_stack: Container,
) -> None:
    hr = kb_of(faq_stack, "hr")
    query = "年假能结转几天"
    top = search(faq_stack.retrieval, hr, query).faq_hits[0]
    assert top.dense_score is not None
    below = search(service(faq_stack, faq_direct_answer_threshold=top.dense_score - 1e-4),
                   hr, query)
    above = search(service(faq_stack, faq_direct_answer_threshold=top.dense_score + 1e-4),
                   hr, query)
    assert below.faq_hits[0].direct_answer and not above.faq_hits[0].direct_answer
    assert above.trace.faq.detail["top_dense_score"] == round(top.dense_score, 4)


def test_only_the_top_faq_hit_can_be_a_direct_answer(faq_stack: Container) -> None:
    result = search(service(faq_stack, faq_direct_answer_threshold=-1.0),
                    kb_of(faq_stack, "hr"), "annual leave")
    assert [hit.direct_answer for hit in result.faq_hits] == [True, False, False]


def test_sparse_mode_has_no_cosine_so_no_direct_answer(faq_stack: Container) -> None:
    result = search(service(faq_stack, faq_direct_answer_threshold=-1.0),
                    kb_of(faq_stack, "hr"), LEAVE_QUESTION, mode="sparse")
    assert result.faq_hits and all(h.dense_score is None for h in result.faq_hits)
    assert not any(hit.direct_answer for hit in result.faq_hits)


def test_faq_top_k_and_top_k_limit_each_side_on_its_own(faq_stack: Container) -> None:
    hr = kb_of(faq_stack, "hr")
    result = search(faq_stack.retrieval, hr, "annual leave", faq_top_k=1, top_k=1)
    assert len(result.faq_hits) == 1 and len(result.hits) == 1
    default = search(faq_stack.retrieval, hr, "annual leave")
    assert len(default.faq_hits) == 3  # Settings.faq_top_k


def test_turning_the_faq_off_leaves_the_documents_unchanged(faq_stack: Container) -> None:
    hr = kb_of(faq_stack, "hr")
    with_faq = search(faq_stack.retrieval, hr, LEAVE_QUESTION)
    without = search(faq_stack.retrieval, hr, LEAVE_QUESTION, run_faq=False)
    assert without.faq_hits == ()
    assert (without.trace.faq.status, without.trace.faq.reason) == ("off", "not requested")
    assert [(h.chunk_id, h.fusion_score) for h in without.hits] == [
        (h.chunk_id, h.fusion_score) for h in with_faq.hits
    ]


def test_a_faq_only_plan_runs_no_document_channel(faq_stack: Container) -> None:
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), LEAVE_QUESTION, run_doc=False)
    assert result.hits == () and result.trace.channels == ()
    assert result.trace.returned_count == 0
    assert result.trace.rerank.reason == "documents not searched (run_doc=false)"
    assert result.faq_hits[0].direct_answer


def test_turning_both_searches_off_is_invalid(faq_stack: Container) -> None:
    with pytest.raises(InvalidInput, match="nothing to search"):
        search(faq_stack.retrieval, kb_of(faq_stack, "hr"), "leave", run_doc=False,
               run_faq=False)
    with pytest.raises(ValidationError, match="cannot both be false"):
        Settings(run_doc=False, run_faq=False)


def test_an_unknown_knowledge_base_is_not_found_in_a_faq_only_plan(
    faq_stack: Container,
) -> None:
    request = SearchRequest(query="leave", kb_id="nope", run_doc=False)
    with pytest.raises(NotFound):
        asyncio.run(faq_stack.retrieval.search(request))


def test_a_failing_faq_index_degrades_and_documents_still_come_back(
    faq_stack: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*_: object) -> None:
        raise OSError("faq index offline")

    monkeypatch.setattr(faq_stack.faq_index, "search_dense", down)
    monkeypatch.setattr(faq_stack.faq_index, "search_sparse", down)
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), LEAVE_QUESTION)
    assert result.hits and result.faq_hits == ()
    assert result.trace.faq.status == "failed"
    assert "faq index offline" in (result.trace.faq.reason or "")
    codes = [d.code for d in result.trace.degradations]
    assert codes == ["faq_retrieval_failed", "faq_retrieval_failed"]


def test_one_failing_faq_channel_leaves_the_other(
    faq_stack: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*_: object) -> None:
        raise OSError("dense store offline")

    monkeypatch.setattr(faq_stack.faq_index, "search_dense", down)
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), LEAVE_QUESTION)
    assert result.faq_hits[0].question == LEAVE_QUESTION
    assert result.faq_hits[0].retrieval_sources == ("sparse:original",)
    assert not result.faq_hits[0].direct_answer  # no cosine to compare
    assert result.trace.faq.status == "applied"
    (degradation,) = result.trace.degradations
    assert degradation.code == "faq_retrieval_failed"
    assert "dense store offline" in degradation.reason


def test_a_failing_fact_check_degrades_the_faq_only(
    faq_stack: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(_: object) -> list[FaqEntry]:
        raise RuntimeError("database gone")

    monkeypatch.setattr(faq_stack.repository, "get_faq_entries", down)
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), LEAVE_QUESTION)
    assert result.hits and result.faq_hits == ()
    assert result.trace.faq.status == "failed"
    assert [d.code for d in result.trace.degradations] == ["faq_retrieval_failed"]


def test_entries_of_other_knowledge_bases_never_appear(faq_stack: Container) -> None:
    it = kb_of(faq_stack, "it")
    result = search(faq_stack.retrieval, it, LEAVE_QUESTION)
    assert [h.faq_id for h in result.faq_hits] == list(faq_ids(faq_stack, it))
    assert not result.faq_hits[0].direct_answer
    empty = search(faq_stack.retrieval, kb_of(faq_stack, "docs-only"), LEAVE_QUESTION)
    assert empty.hits and empty.faq_hits == ()
    assert (empty.trace.faq.status, empty.trace.faq.reason) == (
        "skipped", "no FAQ entries in the KB"
    )


def test_an_index_entry_missing_from_the_facts_is_never_returned(
    faq_stack: Container,
) -> None:
    hr = kb_of(faq_stack, "hr")
    ghost = IndexRecord(chunk_id="ghost", document_id="ghost", kb_id=hr.id,
                        text=LEAVE_QUESTION)
    faq_stack.faq_index.upsert([ghost], faq_stack.embedder.embed_passages([LEAVE_QUESTION]))
    try:
        result = search(faq_stack.retrieval, hr, LEAVE_QUESTION)
    finally:
        faq_stack.faq_index.delete_chunks(["ghost"])
    assert "ghost" not in {h.faq_id for h in result.faq_hits}
    assert result.faq_hits[0].question == LEAVE_QUESTION
    assert result.trace.faq.detail["not_in_facts"] == 1


def test_the_document_whitelist_does_not_restrict_the_faq(faq_stack: Container) -> None:
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), LEAVE_QUESTION,
                    document_ids=["not-a-document"])
    assert result.hits == () and result.trace.scope.empty_reason
    assert result.faq_hits[0].direct_answer


def test_a_service_without_a_faq_index_reports_the_faq_off(faq_stack: Container) -> None:
    result = search(service(faq_stack, with_faq=False), kb_of(faq_stack, "hr"), LEAVE_QUESTION)
    assert result.hits and result.faq_hits == ()
    assert result.trace.faq.reason == "no FAQ index configured"


def test_settings_can_turn_the_faq_off_by_default(faq_stack: Container) -> None:
    hr = kb_of(faq_stack, "hr")
    quiet = service(faq_stack, run_faq=False)
    assert search(quiet, hr, LEAVE_QUESTION).faq_hits == ()
    assert search(quiet, hr, LEAVE_QUESTION, run_faq=True).faq_hits


def test_the_requests_scope_restricts_the_faq_too(faq_stack: Container) -> None:
    kb = faq_stack.ingestion.ensure_kb("scoped-faq")
    rows = [FaqRow(LEAVE_QUESTION, "Fifteen days.", None, 1, tenant_id="acme",
                   allowed_roles=("hr",)),
            FaqRow(LEAVE_QUESTION, "Twenty days.", None, 2, tenant_id="globex"),
            FaqRow(LEAVE_QUESTION, "Ask HR.", None, 3, dataset_id="handbook")]
    assert faq_stack.faq.import_rows(kb, rows).added == 3

    def answers(**scope: Any) -> set[str]:
        return {hit.answer for hit in search(faq_stack.retrieval, kb, LEAVE_QUESTION,
                                             **scope).faq_hits}

    # naming no role is having none: the hr-only entry is left out (roles fail closed)
    assert answers() == {"Twenty days.", "Ask HR."}
    assert answers(tenant_ids=["t2"], roles=[]) == set()
    assert answers(tenant_ids=["acme"]) == set()
    assert answers(tenant_ids=["acme"], roles=[]) == set()
    assert answers(tenant_ids=["acme"], roles=["hr"]) == {"Fifteen days."}
    assert answers(roles=["eng"]) == {"Twenty days.", "Ask HR."}
    assert answers(dataset_ids=["handbook"]) == {"Ask HR."}
    # the document whitelist still does not apply to FAQ entries
    assert answers(document_ids=["not-a-document"], tenant_ids=["globex"]) == {"Twenty days."}


def test_an_index_row_whose_scope_disagrees_with_the_facts_is_never_returned(
    faq_stack: Container,
) -> None:
    kb = faq_stack.ingestion.ensure_kb("stale-scope")
    faq_stack.faq.import_rows(kb, [FaqRow(LEAVE_QUESTION, "Fifteen days.", None, 1,
                                          tenant_id="acme")])
    (entry,) = faq_stack.repository.list_faq_entries(kb.id)
    stale = entry.model_copy(update={"tenant_id": "globex"})  # as if the index lagged behind
    faq_stack.faq_index.upsert(faq_records([stale]),
                               faq_stack.embedder.embed_passages([LEAVE_QUESTION]))
    result = search(faq_stack.retrieval, kb, LEAVE_QUESTION, tenant_ids=["globex"])
    assert result.faq_hits == ()
    assert result.trace.faq.detail["not_in_facts"] == 1
    found = search(faq_stack.retrieval, kb, LEAVE_QUESTION, tenant_ids=["acme"])
    assert found.faq_hits == ()  # the index row says globex: filtered in the index


# --- FAQ search over the variants, and the fast probe's reuse (retrieval/faq_probe.py) ---

CARRY_OVER = QueryVariant(text="leave days carried into next year", method="expand")


def _searcher(app: Container) -> FaqSearcher:
    return FaqSearcher(app.repository, app.faq_index, app.embedder, 0.92)


def _main(
    app: Container, query: str, variants: tuple[QueryVariant, ...], faq_top_k: int = 3,
    history: StageTrace | None = None, main_scope: dict[str, Any] | None = None,
) -> FaqOutcome:
    """The probe of `query`, then the main search over `variants` as the plan runs them."""
    kb = kb_of(app, "hr")
    settings = Settings(data_dir=app.settings.data_dir)
    request = SearchRequest(query=query, kb_id=kb.id)
    options = resolve_options(request, settings)
    probe_filter = compile_filter(request, None, None)
    main_filter = compile_filter(request.model_copy(update=main_scope or {}), None, None)
    documents = RetrievalTrace(request_id="r", kb_id=kb.id, query=query, mode="hybrid",
                               fusion=options.fusion, variants=variants,
                               history=history or StageTrace())
    searcher = _searcher(app)

    async def run() -> FaqOutcome:
        probe = await searcher.search(probe_filter, query, options, faq_top_k)
        return await main_faq_search(searcher, probe, probe_filter, main_filter, documents,
                                     options, faq_top_k)

    return asyncio.run(run())


def _original(query: str) -> QueryVariant:
    return QueryVariant(text=query, method="original")


def test_the_main_search_reuses_the_probe_and_finds_what_a_full_search_finds(
    faq_stack: Container,
) -> None:
    query = "leave"
    reused = _main(faq_stack, query, (_original(query), CARRY_OVER))
    full = _main(faq_stack, query, (_original(query), CARRY_OVER), history=StageTrace(
        status="applied"))

    assert (reused.trace.detail["probe"], reused.trace.detail["searched_variants"]) == (
        "reused", 1)
    assert (full.trace.detail["probe"], full.trace.detail["searched_variants"]) == ("full", 2)
    assert [h.faq_id for h in reused.hits] == [h.faq_id for h in full.hits]
    assert reused.hits[0].question == "Can unused leave be carried over?"
    # the entry was found by both variants: merged once, with both variants' lists
    assert len({h.faq_id for h in reused.hits}) == len(reused.hits)
    assert {"dense:original", "dense:expand1"} <= set(reused.hits[0].retrieval_sources)


@pytest.mark.parametrize(("case", "reason"), [
    ("follow_up", "a follow-up rewrite happened"),
    ("first_not_original", "the first variant is not the original question"),
    ("filter_changed", "the effective filter changed"),
    ("probe_too_short", "the probe kept 4 candidates < faq_top_k 5"),
])
def test_each_broken_reuse_condition_falls_back_to_the_full_search(
    faq_stack: Container, case: str, reason: str,
) -> None:
    query = "leave"
    variants: tuple[QueryVariant, ...] = (_original(query), CARRY_OVER)
    options: dict[str, Any] = {}
    if case == "follow_up":
        variants += (QueryVariant(text="leave annual", method="contextual"),)
    elif case == "first_not_original":
        variants = (CARRY_OVER, _original(query))
    elif case == "filter_changed":
        options["main_scope"] = {"sources": ("HR handbook",)}
    else:
        options["faq_top_k"] = 5

    outcome = _main(faq_stack, query, variants, **options)

    assert outcome.trace.detail["probe"] == "full"
    assert outcome.trace.detail["probe_reason"] == reason
    assert outcome.trace.detail["searched_variants"] == len(variants)


def test_a_probe_that_hits_ends_the_faq_search_and_one_without_variants_is_final(
    faq_stack: Container,
) -> None:
    hit = _main(faq_stack, LEAVE_QUESTION, (_original(LEAVE_QUESTION), CARRY_OVER))
    only = _main(faq_stack, "leave", (_original("leave"),))

    assert (hit.trace.detail["probe"], hit.hits[0].direct_answer) == ("hit", True)
    assert hit.trace.detail["searched_variants"] == 1
    assert only.trace.detail["probe"] == "only"


def test_the_plan_searches_a_follow_ups_variants_in_the_faq_and_says_so(
    faq_stack: Container,
) -> None:
    result = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), "and how fast?", history=[
        {"role": "user", "content": "差旅费用多久内报销？"}])

    assert result.trace.faq.detail["probe"] == "full"
    assert result.trace.faq.detail["variants"] == len(result.trace.variants) >= 2


class _Reversing:
    """A reranker that scores the passages in reverse order (to see its order win), or fails;
    it records each call."""

    model_id = "reversing"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, int]] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[RerankScore]:
        self.calls.append((query, len(passages)))
        if self.fail:
            raise UpstreamError("rerank server down")
        return [RerankScore(index=i, score=float(i)) for i in range(len(passages))]


def _reranked(app: Container, reranker: _Reversing) -> RetrievalResult:
    svc = RetrievalService(app.repository, app.index, app.embedder,
                           Settings(data_dir=app.settings.data_dir, rewrite=False),
                           reranker=reranker, faq_index=app.faq_index)
    return search(svc, kb_of(app, "hr"), "leave", rerank=True, faq_top_k=3)


def test_the_faq_is_reranked_once_in_the_main_search_when_rerank_is_on(
    faq_stack: Container,
) -> None:
    plain = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), "leave", faq_top_k=4)
    reranker = _Reversing()
    result = _reranked(faq_stack, reranker)

    assert result.trace.faq.detail["rerank"] == "applied"
    # reversed: the last fused candidate comes first
    assert result.faq_hits[0].faq_id == plain.faq_hits[-1].faq_id
    assert [q for q, _ in reranker.calls].count("leave") == 2  # documents once, FAQ once


def test_a_failing_faq_rerank_keeps_the_fused_order_and_degrades(faq_stack: Container) -> None:
    plain = search(faq_stack.retrieval, kb_of(faq_stack, "hr"), "leave", faq_top_k=3)
    result = _reranked(faq_stack, _Reversing(fail=True))

    assert result.trace.faq.detail["rerank"] == "failed"
    assert [h.faq_id for h in result.faq_hits] == [h.faq_id for h in plain.faq_hits]
    assert any(d.reason.startswith("faq rerank:") for d in result.trace.degradations)
