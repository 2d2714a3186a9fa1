"""The options several `ragsift` commands share, as typer `Annotated` aliases: one spelling,
one help text (a command's own options stay in its module)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Every command
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="RAGSIFT_DATA_DIR", help="Data directory [./.ragsift]."),
]
KbName = Annotated[str, typer.Option("--kb", help="Knowledge base name.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]

# search and explain
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

# The scope of a search (search, explain, eval)
# search, explain and eval pin a version with this option (None: the active version)
KbVersionOpt = Annotated[int | None, typer.Option(
    "--kb-version", min=0, help="Search this retained KB version instead of the active one.")]
RoleOpt = Annotated[list[str] | None, typer.Option(
    "--role", help="A role of the caller (repeatable); chunks restricted to other roles are "
                   "not searched, and without --role only unrestricted chunks are.")]
TenantOpt = Annotated[list[str] | None, typer.Option(
    "--tenant-id", help="Only chunks of this tenant (repeatable).")]
DatasetOpt = Annotated[list[str] | None, typer.Option(
    "--dataset-id", help="Only chunks of this dataset (repeatable).")]
VisibilityOpt = Annotated[list[str] | None, typer.Option(
    "--visibility", help="Only chunks of this visibility level (repeatable).")]

# Metadata: ingest and sync set it, search and explain filter on it
MetaOpt = Annotated[list[str] | None, typer.Option(
    "--meta", help="Metadata key=value (repeatable): a number, true/false or an ISO date when "
    "the value reads as one, else a string; 'k=\"007\"' stays a string.")]
MetaFileOpt = Annotated[Path | None, typer.Option(
    "--meta-file", help="A JSON object of metadata (JSON types kept; dates as "
    "{\"$date\": \"YYYY-MM-DD\"}); --meta values override its keys.")]
FilterOpt = Annotated[str | None, typer.Option(
    "--filter", help="A metadata filter as JSON, e.g. '{\"year\": {\"$gte\": 2024}}'.")]
WhereOpt = Annotated[list[str] | None, typer.Option(
    "--where", help="Short form of an equality filter, key=value (repeatable, all must "
    "hold; values typed as --meta reads them).")]

# search and explain through a running server
ServerOpt = Annotated[str | None, typer.Option(
    "--server", envvar="RAGSIFT_SERVER", show_default=False,
    help="Search through this ragsift server (http://HOST:PORT; or set RAGSIFT_SERVER) "
         "instead of the data directory: a warm process, so a search costs the client's "
         "start-up only.")]
ApiKeyOpt = Annotated[str | None, typer.Option(
    "--api-key", envvar="RAGSIFT_API_KEY", help="API key for --server.", show_default=False)]
