"""The `ragsift` command: ingest, search, explain, and manage knowledge bases and documents."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragsift.cli.common import (
    CliFailure,
    DataDir,
    JsonFlag,
    KbName,
    echo_json,
    err,
    kb_named,
    kb_named_in,
    open_container,
    open_repository,
    opened_data_dir,
    out,
)
from ragsift.cli.eval import eval_command
from ragsift.cli.faq import faq_app
from ragsift.cli.feedback import feedback_app
from ragsift.cli.files import ingest, sync
from ragsift.cli.kb_settings import kb_settings_command
from ragsift.cli.keys import audit, keys_app
from ragsift.cli.maintenance import fill_second_dense, rebuild_sparse, reindex
from ragsift.cli.mcp import mcp as mcp_command
from ragsift.cli.metadata import FilterOpt, WhereOpt, docs_meta, given_filter
from ragsift.cli.remote import ApiKeyOpt, ServerOpt
from ragsift.cli.render import render_faq, render_hits, render_scores, render_trace
from ragsift.cli.serve import serve
from ragsift.cli.tune import tune_command
from ragsift.cli.versions import (
    DatasetOpt,
    KbVersionOpt,
    RoleOpt,
    TenantOpt,
    VisibilityOpt,
    version_app,
)
from ragsift.cli.worker import worker
from ragsift.domain.errors import InvalidInput, RagsiftError, StorageFull
from ragsift.storage_full import StorageSpace, describe, is_storage_full

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ragsift.domain.results import RetrievalResult

# Start-up cost: `ragsift --help` imports typer, rich and the cli_* modules only; pydantic
# models, the settings, SQLAlchemy, numpy, tantivy and the parsers are imported by the
# commands that use them (tests/test_cli_imports.py keeps it so).

app = typer.Typer(help="ragsift: hybrid retrieval for RAG over Chinese and English documents.",
                  no_args_is_help=True, add_completion=False)
kb_app = typer.Typer(help="Knowledge bases.", no_args_is_help=True)
docs_app = typer.Typer(help="Documents of a knowledge base.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")
kb_app.add_typer(version_app, name="version")
kb_app.command("settings")(kb_settings_command)
app.add_typer(docs_app, name="docs")
app.add_typer(faq_app, name="faq")
app.add_typer(feedback_app, name="feedback")
app.add_typer(keys_app, name="keys")
app.command("audit")(audit)
app.command("tune")(tune_command)
app.command("eval")(eval_command)
app.command()(serve)
app.command("rebuild-sparse")(rebuild_sparse)
app.command("fill-second-dense")(fill_second_dense)
app.command()(reindex)
app.command()(worker)
app.command("mcp")(mcp_command)
app.command()(ingest)
app.command()(sync)
docs_app.command("meta")(docs_meta)

def _search(data_dir: Path | None, kb: list[str], query: str, fields: dict[str, Any],
            server: str | None = None, api_key: str | None = None) -> RetrievalResult:
    """One retrieval of the KBs named `kb` (several: one ranking over all); `fields` are
    SearchRequest overrides (None = the settings' default)."""
    import asyncio

    from pydantic import ValidationError

    from ragsift.domain.requests import SearchRequest

    if server is not None:
        from ragsift.cli.remote import remote_search

        return remote_search(server, api_key, kb, query, fields)
    with open_container(data_dir, follow=True) as container:
        kb_ids = [kb_named(container, name).id for name in kb]
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


KbNames = Annotated[list[str], typer.Option(
    "--kb", help="Knowledge base name; repeat it to search several with one ranking "
                 "(at most RAGSIFT_SEARCH_MAX_KBS, built with one embedding model unless "
                 "--mode sparse; every hit names its KB).")]
ModeOpt = Annotated[str | None, typer.Option("--mode", help="dense | sparse | hybrid [hybrid]")]
TopK = Annotated[int | None, typer.Option("--top-k", help="Results to return [5].")]
DocIds = Annotated[list[str] | None, typer.Option("--doc-id", help="Restrict to a document.")]
FusionOpt = Annotated[str | None, typer.Option(
    "--fusion", help="zscore | weighted | rrf [zscore]")]
TunedOpt = Annotated[bool | None, typer.Option(
    "--tuned/--no-tuned", help="Use the fusion `ragsift tune` fitted to this KB [off].")]
RewriteOpt = Annotated[bool | None, typer.Option(
    "--rewrite/--no-rewrite", help="LLM query rewrite [on when a chat server is configured].")]
RerankOpt = Annotated[bool | None, typer.Option(
    "--rerank/--no-rerank", help="Rerank [on when a reranker is configured].")]
Small2BigOpt = Annotated[bool | None, typer.Option(
    "--small2big/--no-small2big", help="Add neighbouring chunks as context [on].")]
AutoMergeOpt = Annotated[bool | None, typer.Option(
    "--auto-merge/--no-auto-merge", help="Parents replace enough sibling hits [off].")]
MinScore = Annotated[float | None, typer.Option(
    "--min-score", help="Drop hits below this (rerank score if reranked, else fusion).")]
RouteOpt = Annotated[str | None, typer.Option(
    "--route", help="auto | search | chitchat | handoff | out_of_scope [auto: the plan's "
                    "rules keep greetings, thanks, requests for a person and, for a KB with a "
                    "declared domain, messages outside it from the search]")]
PreviousOpt = Annotated[list[str] | None, typer.Option(
    "--previous", help="An earlier question of the conversation (repeat, oldest first): a "
                       "follow-up is searched with them.")]
FaqOpt = Annotated[bool | None, typer.Option(
    "--faq/--no-faq", help="Search the FAQ entries too [on; off for search --json unless given].")]
FaqTopK = Annotated[int | None, typer.Option("--faq-top-k", help="FAQ entries to return [3].")]


def _history(previous: list[str] | None) -> list[dict[str, str]] | None:
    return None if not previous else [{"role": "user", "content": q} for q in previous]


@app.command()
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


@app.command()
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


@kb_app.command("list")
def kb_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List knowledge bases with their document counts."""
    from ragsift.domain.models import DocumentStatus

    with open_repository(data_dir) as repository:
        rows = []
        for kb in repository.list_kbs():
            documents = repository.list_documents(kb.id)
            ready = sum(1 for d in documents if d.status == DocumentStatus.READY)
            rows.append({"id": kb.id, "name": kb.name, "embedding_model": kb.embedding_model,
                         "documents": len(documents), "ready": ready,
                         "faq": repository.count_faq_entries(kb.id)})
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        out.print(f"{row['name']}\t{row['id']}\t{row['ready']}/{row['documents']} READY"
                  f"\t{row['faq']} FAQ\t{row['embedding_model']}")


@docs_app.command("list")
def docs_list(kb: KbName, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the documents of a knowledge base with status, error and parse warnings."""
    with open_repository(data_dir) as repository:
        documents = repository.list_documents(kb_named_in(repository, kb).id)
    if as_json:
        echo_json([d.model_dump(mode="json") for d in documents])
        return
    for d in documents:
        error = f"\t{d.error}" if d.error else ""
        warnings = f"\twarnings: {'; '.join(d.warnings)}" if d.warnings else ""
        meta = f"\t{json.dumps(d.metadata, ensure_ascii=False)}" if d.metadata else ""
        out.print(f"{d.id}\t{d.status.value}\t{d.filename}{meta}{error}{warnings}",
                  markup=False)


@docs_app.command("delete")
def docs_delete(
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids.")],
    kb: KbName,
    data_dir: DataDir = None,
) -> None:
    """Delete documents from the facts and from both indexes."""
    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        for doc_id in doc_ids:
            document = container.repository.get_document(doc_id)
            if document is None or document.kb_id != knowledge_base.id:
                raise InvalidInput(f"document {doc_id!r} is not in knowledge base {kb!r}")
            container.ingestion.delete_document(doc_id)
            out.print(f"deleted {doc_id} ({document.filename})")


def main() -> None:
    """Entry point: exit 0 ok, 2 bad usage or input or a full disk, 1 internal error."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app()  # standalone: typer itself reports usage errors with exit code 2
    except CliFailure as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(exc.exit_code)
    except InvalidInput as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    except StorageFull as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    except RagsiftError as exc:
        err.print(f"[red]error ({exc.code}):[/] {exc}")
        sys.exit(1)
    except Exception as exc:
        if is_storage_full(exc):  # a full disk is the user's to fix, not a defect
            err.print(f"[red]error:[/] {escape(str(_storage().error(exc)))}")
            sys.exit(2)
        logging.getLogger("ragsift").debug("internal error", exc_info=True)
        err.print(f"[red]internal error:[/] {escape(describe(exc))}")
        sys.exit(1)


def _storage() -> StorageSpace:
    """The data directory the command opened, to name it (and its free space) when full."""
    return StorageSpace(opened_data_dir())


if __name__ == "__main__":
    main()
