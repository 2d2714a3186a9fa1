"""Every retrieval stage on the real stack: e5, tantivy, SQLite, and the fake model server
speaking the OpenAI chat and Cohere rerank protocols (rewrite, rerank, threshold, Small2Big,
auto-merge, trace)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from typing import Any

import pytest

from ragsift.bootstrap import Container
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import PARENT_LEVEL, KnowledgeBase
from ragsift.domain.results import RetrievalHit, RetrievalResult
from ragsift.domain.trace import RetrievalTrace
from retrieval.real_stack import QUIET, ServiceFactory, ids, ranking, search
from support.fixtures import LLMServer
from support.llm_server import overlap_scores

# --- 1. rewrite ----------------------------------------------------------------------------


def test_the_rewrite_is_searched_as_its_own_lists_next_to_the_original(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    result = search(stack.retrieval, kb, "hotel limit per night", rerank=False,
                    second_dense=False)
    trace = result.trace
    assert [(v.text, v.method) for v in trace.variants] == [
        ("hotel limit per night", "original"), ("hotel limit per night overview", "expand"),
    ]
    assert trace.rewrite.status == "applied" and trace.rewrite.detail == {"method": "expand"}
    assert trace.switches_requested.rewrite and trace.switches_applied.rewrite
    assert [(c.list_name, c.variant) for c in trace.channels] == [
        ("dense:original", "original"), ("sparse:original", "original"),
        ("dense:rewrite", "rewrite"), ("sparse:rewrite", "rewrite"),
    ]
    assert all(c.candidates > 0 and c.error is None for c in trace.channels)
    sources = {source for hit in result.hits for source in hit.retrieval_sources}
    assert {"dense:rewrite", "sparse:rewrite"} <= sources
    assert trace.degradations == ()
    asked = llm_server.last("chat")["body"]["messages"]
    assert asked[-1] == {"role": "user", "content": "hotel limit per night"}


@pytest.mark.parametrize(
    ("query", "rewrite", "dropped"),
    [
        ("hotel limit per night 220 dollars", "hotel price per night in big cities", "'220'"),
        ("what does error E-104 mean", "meaning of the Wi-Fi authentication error", "'E-104'"),
    ],
    ids=["number", "code"],
)
def test_a_rewrite_that_drops_a_number_or_code_is_discarded_with_the_reason(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, query: str, rewrite: str,
    dropped: str,
) -> None:
    llm_server.control(chat={"content": json.dumps({"method": "expand", "text": rewrite})})
    result = search(stack.retrieval, kb, query, rerank=False, second_dense=False)
    trace = result.trace
    assert trace.rewrite.status == "skipped"
    assert trace.rewrite.reason == f"the rewrite dropped {dropped}"
    assert [v.method for v in trace.variants] == ["original"]
    assert [c.list_name for c in trace.channels] == ["dense:original", "sparse:original"]
    assert not trace.switches_applied.rewrite
    assert trace.degradations == ()  # a rejected rewrite is a decision, not a failure
    assert result.hits


def test_rewrite_false_per_request_turns_the_rewrite_off_and_calls_no_model(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    result = search(stack.retrieval, kb, "hotel limit per night", rewrite=False, rerank=False)
    trace = result.trace
    assert trace.rewrite.status == "off" and trace.rewrite.reason == "not requested"
    assert not trace.switches_requested.rewrite and not trace.switches_applied.rewrite
    assert [v.method for v in trace.variants] == ["original"]
    assert "chat" not in llm_server.last_kinds()


# --- 2. rerank -----------------------------------------------------------------------------

RERANK_QUERY = "年假 申请"  # word overlap reorders this one: the 2nd fused candidate wins


def expected_rerank(query: str, fused: list[RetrievalHit], sent: int) -> list[tuple[str, float]]:
    """(chunk id, score) as the server scores the first `sent` passages; ties keep fusion order."""
    scores = dict(overlap_scores(query, [hit.text for hit in fused[:sent]]))
    order = sorted(range(sent), key=lambda i: (-scores[i], i))
    return [(fused[i].chunk_id, scores[i]) for i in order]


def test_rerank_orders_the_candidates_by_rerank_score_from_one_batch_in_fusion_order(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    window: dict[str, Any] = {"candidate_k": 6, "top_k": 6, "rewrite": False, "small2big": False}
    fused = search(stack.retrieval, kb, RERANK_QUERY, rerank=False, **window)
    assert "cohere" not in llm_server.last_kinds()
    result = search(stack.retrieval, kb, RERANK_QUERY, **window)

    body = llm_server.last("cohere")["body"]
    assert body["query"] == RERANK_QUERY
    assert result.trace.fused_count > 6  # so the batch was cut to candidate_k ...
    assert body["documents"] == [hit.text for hit in fused.hits]  # ... in fusion order
    expected = expected_rerank(RERANK_QUERY, list(fused.hits), 6)
    assert [(h.chunk_id, h.rerank_score) for h in result.hits] == expected
    scores = [h.rerank_score for h in result.hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    fusion = dict(ranking(fused))
    assert all(h.fusion_score == fusion[h.chunk_id] for h in result.hits)
    trace = result.trace
    assert trace.rerank.status == "applied"
    assert trace.rerank.detail == {"sent": 6, "scored": 6, "model": "cohere:bge-reranker-v2-m3"}
    assert trace.switches_applied.rerank


def test_rerank_scores_not_fusion_scores_decide_the_order(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    window: dict[str, Any] = {"candidate_k": 4, "top_k": 4, "rewrite": False, "small2big": False}
    fused = search(stack.retrieval, kb, "hotel limit per night", rerank=False, **window)
    # the server scores the fusion order backwards: the last candidate best
    rows = [{"index": i, "relevance_score": 0.1 * (i + 1)} for i in range(4)]
    llm_server.control(rerank={"raw": {"results": rows}})
    result = search(stack.retrieval, kb, "hotel limit per night", **window)
    assert ids(result) == ids(fused)[::-1]
    assert [h.rerank_score for h in result.hits] == pytest.approx([0.4, 0.3, 0.2, 0.1])
    assert [h.rank for h in result.hits] == [1, 2, 3, 4]


def test_a_small_rerank_budget_sends_only_the_fused_prefix_that_fits(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    budget, margin = 100, 8
    service = service_with(rerank_budget_tokens=budget, rerank_margin_tokens=margin)
    window: dict[str, Any] = {"candidate_k": 6, "top_k": 6, "rewrite": False, "small2big": False}
    fused = list(search(service, kb, RERANK_QUERY, rerank=False, **window).hits)
    query_tokens = stack.embedder.count_tokens(RERANK_QUERY)
    fits, used = 0, 0
    for hit in fused:
        used += query_tokens + stack.embedder.count_tokens(hit.text) + margin
        if used > budget:
            break
        fits += 1
    assert 1 < fits < len(fused)  # the budget really cuts inside the candidates

    result = search(service, kb, RERANK_QUERY, **window)
    assert llm_server.last("cohere")["body"]["documents"] == [h.text for h in fused[:fits]]
    assert result.trace.rerank.status == "applied"
    assert result.trace.rerank.detail["sent"] == fits
    head, tail = result.hits[:fits], result.hits[fits:]
    assert [(h.chunk_id, h.rerank_score) for h in head] == expected_rerank(
        RERANK_QUERY, fused, fits
    )
    # the candidates not sent follow in fusion order, without a rerank score
    assert [(h.chunk_id, h.rerank_score) for h in tail] == [
        (h.chunk_id, None) for h in fused[fits:]
    ]


def test_a_query_over_the_rerank_query_limit_is_rejected_not_truncated(
    kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    service = service_with(rerank_max_query_tokens=8)
    query = "what is the hotel limit per night in London, Tokyo and New York"
    with pytest.raises(InvalidInput, match=r"accepts 8 \(it is rejected rather than truncated\)"):
        search(service, kb, query)
    assert llm_server.last_kinds() == []  # nothing was sent, in full or cut
    assert search(service, kb, query, rerank=False, rewrite=False).hits  # the limit is rerank's


# --- 3. threshold --------------------------------------------------------------------------


def test_min_score_with_rerank_compares_rerank_scores_and_never_pads_to_top_k(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    # second_dense off as in QUIET: the KB is mixed (two English documents of three), and in
    # RRF the English chunks the second channel lists would fill this 8-candidate window
    window: dict[str, Any] = {"candidate_k": 8, "top_k": 8, "rewrite": False, "small2big": False,
                              "fusion": "rrf", "second_dense": False}
    everything = search(stack.retrieval, kb, RERANK_QUERY, **window)
    kept = [h.chunk_id for h in everything.hits if (h.rerank_score or 0.0) >= 0.5]
    assert 0 < len(kept) < 8
    result = search(stack.retrieval, kb, RERANK_QUERY, min_score=0.5, **window)
    # fusion scores are below 0.04: only rerank scores can have kept these
    assert ids(result) == kept and all(h.fusion_score < 0.5 for h in result.hits)
    assert result.trace.threshold.status == "applied"
    assert result.trace.threshold.detail == {
        "min_score": 0.5, "compared_with": "rerank_score", "dropped": 8 - len(kept),
    }
    assert result.trace.returned_count == len(kept) < 8


def test_min_score_without_rerank_compares_fusion_scores(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    window: dict[str, Any] = {"candidate_k": 8, "top_k": 8, **QUIET}
    everything = search(stack.retrieval, kb, "hotel limit per night", **window)
    kept = [h.chunk_id for h in everything.hits if h.fusion_score >= 0.02]
    assert 0 < len(kept) < 8
    result = search(stack.retrieval, kb, "hotel limit per night", min_score=0.02, **window)
    assert ids(result) == kept
    assert result.trace.threshold.detail["compared_with"] == "fusion_score"
    assert result.trace.threshold.detail["dropped"] == 8 - len(kept)


def test_min_score_falls_back_to_fusion_scores_when_the_rerank_failed(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    llm_server.control(rerank={"mode": "error500"})
    window: dict[str, Any] = {"candidate_k": 8, "top_k": 8, "rewrite": False, "small2big": False}
    result = search(stack.retrieval, kb, "hotel limit per night", min_score=0.02, **window)
    assert result.trace.rerank.status == "failed"
    assert result.trace.threshold.detail["compared_with"] == "fusion_score"
    assert result.hits and all(h.fusion_score >= 0.02 for h in result.hits)


# --- 4. Small2Big --------------------------------------------------------------------------


def test_small2big_adds_same_parent_neighbours_without_changing_the_ranking(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    query = "London Tokyo New York hotel limit"
    plain = search(stack.retrieval, kb, query, top_k=1, **QUIET)
    result = search(stack.retrieval, kb, query, top_k=1, **{**QUIET, "small2big": True})
    assert ranking(result) == ranking(plain)
    (hit,) = result.hits
    assert hit.chunk_id == plain.hits[0].chunk_id and hit.parent_id is not None
    context = stack.repository.get_chunks(list(hit.context_chunk_ids))
    by_id = {c.id: c for c in context}
    ordered = [by_id[i] for i in hit.context_chunk_ids]
    assert hit.chunk_id in by_id and len(ordered) == 3  # the previous and the next child
    assert {c.parent_id for c in ordered} == {hit.parent_id}
    ordinals = [c.ordinal for c in ordered]
    assert ordinals == list(range(ordinals[0], ordinals[0] + 3))
    assert hit.context_text is not None and hit.text in hit.context_text
    trace = result.trace
    assert trace.small2big.status == "applied" and trace.switches_applied.small2big
    assert trace.small2big.detail["neighbours_added"] == 2


def test_small2big_keeps_every_hit_and_stays_within_its_token_budget(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer, service_with: ServiceFactory
) -> None:
    query, budget = "Meals alcohol reimbursed", 70
    fields: dict[str, Any] = {"top_k": 2, **QUIET, "small2big": True, "fusion": "rrf"}
    roomy = search(stack.retrieval, kb, query, **fields)
    tight = search(service_with(small2big_budget_tokens=budget), kb, query, **fields)
    assert ranking(tight) == ranking(roomy)

    def context_tokens(result: RetrievalResult) -> int:
        chunk_ids = [i for hit in result.hits for i in hit.context_chunk_ids]
        assert len(chunk_ids) == len(set(chunk_ids))  # no chunk text twice
        return sum(c.token_count for c in stack.repository.get_chunks(chunk_ids))

    assert context_tokens(roomy) > budget  # the default budget would have taken more
    assert context_tokens(tight) <= budget
    assert context_tokens(tight) == tight.trace.small2big.detail["context_tokens"]
    assert all(h.chunk_id in h.context_chunk_ids for h in tight.hits)
    assert int(tight.trace.small2big.detail["neighbours_added"]) >= 1


# --- 5. auto-merge -------------------------------------------------------------------------


def test_auto_merge_replaces_sibling_candidates_with_their_parent(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    window: dict[str, Any] = {"candidate_k": 4, "top_k": 4, **QUIET}
    children = search(stack.retrieval, kb, "hotel limit per night", **window)
    siblings: dict[str | None, list[str]] = {}
    for hit in children.hits:
        siblings.setdefault(hit.parent_id, []).append(hit.chunk_id)
    merging = {parent: kids for parent, kids in siblings.items() if len(kids) >= 2}
    assert merging  # the hotel section's children lead this query
    # each merging parent takes its best child's place; the other children leave
    expected: list[str] = []
    for hit in children.hits:
        entry = hit.parent_id if hit.parent_id in merging else hit.chunk_id
        if entry not in expected:
            expected.append(entry)  # type: ignore[arg-type]

    result = search(stack.retrieval, kb, "hotel limit per night", auto_merge=True, **window)
    assert ids(result) == expected
    parents = {c.id: c for c in stack.repository.get_chunks(list(merging))}  # type: ignore[arg-type]
    for hit in result.hits:
        if hit.chunk_id in parents:
            parent = parents[hit.chunk_id]
            assert parent.level == PARENT_LEVEL and hit.parent_id is None
            assert hit.text == parent.text
            assert hit.merged_from == tuple(merging[hit.chunk_id])  # children in rank order
        else:
            assert hit.merged_from == ()
    assert result.trace.auto_merge.status == "applied"
    assert result.trace.auto_merge.detail == {"merged_parents": len(merging)}
    assert result.trace.switches_applied.auto_merge


def test_auto_merge_is_off_by_default(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    result = search(stack.retrieval, kb, "hotel limit per night", **QUIET)
    assert stack.settings.auto_merge is False
    assert result.trace.auto_merge.status == "off"
    assert not result.trace.switches_requested.auto_merge
    assert all(h.merged_from == () and h.parent_id is not None for h in result.hits)


# --- 7. trace ------------------------------------------------------------------------------

STAGE_FIELDS = {
    "request_id", "mode", "switches_requested", "switches_applied", "variants", "channels",
    "scope", "fused_count", "ready_filtered_count", "rewrite", "auto_merge", "rerank",
    "threshold", "small2big", "returned_count", "degradations", "timings_ms",
}


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_the_trace_json_schema_is_valid_and_names_every_stage(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    schema = json.loads(json.dumps(RetrievalTrace.model_json_schema()))
    assert schema["type"] == "object" and set(schema["properties"]) >= STAGE_FIELDS
    definitions = schema["$defs"]
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in definitions
    status = definitions["StageTrace"]["properties"]["status"]
    assert set(status["enum"]) == {"off", "applied", "skipped", "failed"}
    codes = set(definitions["Degradation"]["properties"]["code"]["enum"])
    assert codes >= {"dense_retrieval_failed", "sparse_retrieval_failed", "rewrite_failed",
                     "rerank_failed", "expansion_failed"}  # one per row of DESIGN section 2
    trace = search(stack.retrieval, kb, "hotel limit per night").trace
    if importlib.util.find_spec("jsonschema") is not None:  # stricter when it is installed
        jsonschema = importlib.import_module("jsonschema")
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(trace.model_dump(mode="json"), schema)
    assert RetrievalTrace.model_validate_json(trace.model_dump_json()) == trace


def test_the_trace_times_every_stage_that_ran_and_only_those(
    stack: Container, kb: KnowledgeBase, llm_server: LLMServer
) -> None:
    full = search(stack.retrieval, kb, "Meals alcohol reimbursed", auto_merge=True, top_k=2,
                  candidate_k=4)
    applied = full.trace.switches_applied
    assert applied.rewrite and applied.rerank and applied.auto_merge and applied.small2big
    timings = full.trace.timings_ms
    always = {"scope", "channels", "fusion", "ready_check", "total"}
    optional = {"rewrite", "auto_merge", "rerank", "small2big"}
    assert always | optional <= set(timings)
    assert all(0 <= value <= timings["total"] for value in timings.values())

    bare = search(stack.retrieval, kb, "Meals alcohol reimbursed", **QUIET).trace.timings_ms
    assert always <= set(bare) and not optional & set(bare)
