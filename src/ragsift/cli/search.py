"""`ragsift search` and `ragsift explain`: one retrieval, printed as evidence or with its trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragsift.cli.common import echo_json, kb_named_in, open_search_container, out
from ragsift.cli.metadata import given_filter
from ragsift.cli.options import (
    ApiKeyOpt,
    AutoMergeOpt,
    DataDir,
    DatasetOpt,
    DocIds,
    FaqOpt,
    FaqTopK,
    FilterOpt,
    FusionOpt,
    JsonFlag,
    KbNames,
    KbVersionOpt,
    MinScore,
    ModeOpt,
    PreviousOpt,
    RerankOpt,
    RewriteOpt,
    RoleOpt,
    RouteOpt,
    ServerOpt,
    Small2BigOpt,
    TenantOpt,
    TopK,
    TunedOpt,
    VisibilityOpt,
    WhereOpt,
)
from ragsift.cli.render import render_faq, render_hits, render_scores, render_trace
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ragsift.domain.results import RetrievalResult


def _search(data_dir: Path | None, kb: list[str], query: str, fields: dict[str, Any],
            server: str | None = None, api_key: str | None = None) -> RetrievalResult:
    """One retrieval of the KBs named `kb` (several: one ranking over all); `fields` are
    SearchRequest overrides (None = the settings' default)."""
    import asyncio

    from pydantic import ValidationError

    from ragsift.domain.requests import SearchRequest

    if server:  # an empty RAGSIFT_SERVER names none, as an empty RAGSIFT_API_KEY does
        from ragsift.cli.remote import remote_search

        return remote_search(server, api_key, kb, query, fields)
    with open_search_container(data_dir) as container:
        kb_ids = [kb_named_in(container.repository, name).id for name in kb]
        values = {name: value for name, value in fields.items() if value is not None}
        if values.get("document_ids") is not None:
            values["document_ids"] = tuple(values["document_ids"]) or None
        for name in ("roles", "tenant_ids", "dataset_ids", "visibilities"):
            if name in values:
                values[name] = tuple(values[name])
        try:
            request = SearchRequest.model_validate({
                "query": query, "kb_id": kb_ids[0],
                "kb_ids": tuple(kb_ids) if len(kb_ids) > 1 else None, **values})
        except ValidationError as exc:
            raise InvalidInput(_validation_message(exc)) from exc
        return asyncio.run(container.retrieval.search(request))


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())




def _history(previous: list[str] | None) -> list[dict[str, str]] | None:
    return None if not previous else [{"role": "user", "content": q} for q in previous]


def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    kb: KbNames,
    mode: ModeOpt = None,
    top_k: TopK = None,
    doc_id: DocIds = None,
    fusion: FusionOpt = None,
    tuned: TunedOpt = None,
    rewrite: RewriteOpt = None,
    rerank: RerankOpt = None,
    small2big: Small2BigOpt = None,
    auto_merge: AutoMergeOpt = None,
    min_score: MinScore = None,
    faq: FaqOpt = None,
    faq_top_k: FaqTopK = None,
    kb_version: KbVersionOpt = None,
    role: RoleOpt = None,
    tenant_id: TenantOpt = None,
    dataset_id: DatasetOpt = None,
    visibility: VisibilityOpt = None,
    route: RouteOpt = None,
    previous: PreviousOpt = None,
    filter_json: FilterOpt = None,
    where: WhereOpt = None,
    as_json: JsonFlag = False,
    data_dir: DataDir = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Search a knowledge base and print the evidence (FAQ entries in their own block).

    --json prints the plain array of document hits; with an explicit --faq it prints
    {"results": [...], "faq": [...]} instead.
    """
    result = _search(data_dir, kb, query, {
        "mode": mode, "top_k": top_k, "document_ids": doc_id, "fusion": fusion,
        "tuned_fusion": tuned,
        "rewrite": rewrite, "rerank": rerank, "small2big": small2big, "auto_merge": auto_merge,
        "min_score": min_score, "faq_top_k": faq_top_k, "kb_version": kb_version,
        "roles": role, "tenant_ids": tenant_id, "dataset_ids": dataset_id,
        "visibilities": visibility, "route": route, "history": _history(previous),
        "filter": given_filter(filter_json, where),
        # the plain JSON array has no place for FAQ entries: skip the search unless asked
        "run_faq": False if as_json and faq is None else faq,
    }, server, api_key)
    if as_json:
        hits = [hit.model_dump(mode="json") for hit in result.hits]
        faq_hits = [hit.model_dump(mode="json") for hit in result.faq_hits]
        echo_json(hits if not faq else {"results": hits, "faq": faq_hits})
        return
    render_faq(out, result)
    render_hits(out, result)


def explain(
    query: Annotated[str, typer.Argument(help="The question.")],
    kb: KbNames,
    mode: ModeOpt = None,
    top_k: TopK = None,
    doc_id: DocIds = None,
    fusion: FusionOpt = None,
    tuned: TunedOpt = None,
    rewrite: RewriteOpt = None,
    rerank: RerankOpt = None,
    small2big: Small2BigOpt = None,
    auto_merge: AutoMergeOpt = None,
    min_score: MinScore = None,
    faq: FaqOpt = None,
    faq_top_k: FaqTopK = None,
    kb_version: KbVersionOpt = None,
    role: RoleOpt = None,
    tenant_id: TenantOpt = None,
    dataset_id: DatasetOpt = None,
    visibility: VisibilityOpt = None,
    route: RouteOpt = None,
    previous: PreviousOpt = None,
    filter_json: FilterOpt = None,
    where: WhereOpt = None,
    as_json: JsonFlag = False,
    data_dir: DataDir = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Search and show how every stage chose the evidence (the trace)."""
    result = _search(data_dir, kb, query, {
        "mode": mode, "top_k": top_k, "document_ids": doc_id, "fusion": fusion,
        "tuned_fusion": tuned,
        "rewrite": rewrite, "rerank": rerank, "small2big": small2big, "auto_merge": auto_merge,
        "min_score": min_score, "run_faq": faq, "faq_top_k": faq_top_k,
        "kb_version": kb_version, "roles": role, "tenant_ids": tenant_id,
        "dataset_ids": dataset_id, "visibilities": visibility, "route": route,
        "history": _history(previous), "filter": given_filter(filter_json, where),
    }, server, api_key)
    if as_json:
        payload: dict[str, Any] = {
            "results": [hit.model_dump(mode="json") for hit in result.hits],
            "faq": [hit.model_dump(mode="json") for hit in result.faq_hits],
            "trace": result.trace.model_dump(mode="json"),
        }
        echo_json(payload)
        return
    render_faq(out, result)
    render_hits(out, result)
    render_scores(out, result)
    render_trace(out, result.trace, asked={"rewrite": rewrite, "rerank": rerank,
                                           "small2big": small2big, "auto_merge": auto_merge})
