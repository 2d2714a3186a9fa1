"""The `ragsift` command: ingest, search, explain, and manage knowledge bases and documents.

This package is the command line, one module per command group; this module assembles the
app. Start-up cost: `ragsift --help` and `ragsift GROUP --help` import typer and the one
group's module only (the commands are registered by name in COMMANDS and imported on use,
cli/lazy.py); pydantic, the settings, SQLAlchemy, numpy, tantivy and the parsers are imported
by the commands that use them (tests/test_cli_imports.py keeps it so). The help is click's
plain text, not typer's rich panels: rendering those imports rich's markdown, tracebacks and
tables (~0.3 CPU-s of the ~0.5 `--help` cost), and rich markup ate the `[default]` notes of
the option help.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from typing import NoReturn

import typer

from ragsift.cli.lazy import LazyCommand, LazyGroup


def _command(module: str, attr: str, text: str) -> LazyCommand:
    return LazyCommand(f"ragsift.cli.{module}", attr, text)


# Listed in the order of a first session: load, search, manage, evaluate, serve, maintain.
# `text` is the first sentence of the command's help (tests/test_cli_help.py checks it is).
COMMANDS: dict[str, LazyCommand] = {
    "ingest": _command("files", "ingest", "Ingest files into a knowledge base (created if "
                       "needed); a file whose key exists with other bytes replaces that "
                       "document. Exit 2 if any document failed."),
    "sync": _command("files", "sync", "Make a KB match a folder: new files added, changed "
                     "ones replaced (size + mtime, then sha256), with --prune deleted ones "
                     "removed. Idempotent; a re-run resumes a killed one."),
    "search": _command("search", "search", "Search a knowledge base and print the evidence "
                       "(FAQ entries in their own block)."),
    "explain": _command("search", "explain",
                        "Search and show how every stage chose the evidence (the trace)."),
    "kb": _command("kb", "kb_app", "Knowledge bases."),
    "docs": _command("docs", "docs_app", "Documents of a knowledge base."),
    "faq": _command("faq", "faq_app",
                    "FAQ entries (question, answer, source, scope) of a knowledge base."),
    "feedback": _command("feedback", "feedback_app", "Users' feedback on chat answers."),
    "eval": _command("eval", "eval_command", "Measure retrieval quality and latency: a "
                     "labelled corpus folder, or a live KB (--kb)."),
    "tune": _command("tune", "tune_command", "Fit this KB's fusion (method, weights, channel "
                     "width, RRF k) to its labels."),
    "serve": _command("serve", "serve", "Serve the REST API (OpenAPI at /openapi.json); "
                      "uploads are ingested in the background."),
    "worker": _command("worker", "worker", "Process ingestion jobs from the database queue "
                       "(uploads with RAGSIFT_INGEST_QUEUE=database)."),
    "mcp": _command("mcp", "mcp",
                    "Serve the knowledge bases to MCP clients (Model Context Protocol)."),
    "keys": _command("keys", "keys_app", "API keys of the REST API (admin)."),
    "audit": _command("keys", "audit",
                      "State-changing API requests: time, key, route, target and result."),
    "reindex": _command("maintenance", "reindex", "Re-parse documents from their stored "
                        "originals (after a parser or chunking change)."),
    "rebuild-sparse": _command("maintenance", "rebuild_sparse", "Rebuild the BM25 index from "
                               "the stored chunks and FAQ entries; nothing is re-embedded."),
    "fill-second-dense": _command("maintenance", "fill_second_dense", "Encode the chunks the "
                                  "second dense channel (USE) lacks: those indexed before it "
                                  "was on."),
}


class RagsiftGroup(LazyGroup):
    lazy = COMMANDS


app = typer.Typer(help="ragsift: hybrid retrieval for RAG over Chinese and English documents.",
                  cls=RagsiftGroup, rich_markup_mode=None, no_args_is_help=True,
                  add_completion=False,
                  # wider help on a wide terminal (click's default stops at 80 columns)
                  context_settings={"max_content_width": 100})


@app.callback()
def _root() -> None:
    # a callback makes typer build a group even though every command is registered lazily
    pass


def run() -> None:
    """The `ragsift` console script: `main`, then the process's objects frozen for its exit.

    At exit the interpreter collects every object the command made (a CLI search: ~0.1 of
    its ~1.4 CPU-s, docs/benchmarks.md); frozen, they are freed with the process. Nothing is
    lost: commands close what they opened before returning, and a process's end must be
    safe anyway (kill -9). `main` stays the in-process entry (tests), which freezes nothing.
    OpenBLAS starts with one thread here, in our own process (blas_start.py).
    """
    from ragsift.blas_start import start_blas_with_one_thread

    start_blas_with_one_thread(os.environ)
    try:
        main()
    finally:
        gc.freeze()


def main() -> None:
    """Entry point: exit 0 ok, 2 bad usage or input or a full disk, 1 internal error."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app()  # standalone: typer itself reports usage errors with exit code 2
    except Exception as exc:
        _fail(exc)


def _fail(exc: Exception) -> NoReturn:
    """Print `exc` as the user should read it and exit with its code (imports deferred: a
    command that succeeds never needs them)."""
    from rich.markup import escape

    from ragsift.cli.common import CliFailure, err, opened_data_dir
    from ragsift.domain.errors import InvalidInput, RagsiftError, StorageFull
    from ragsift.storage_full import StorageSpace, describe, is_storage_full

    if isinstance(exc, CliFailure):
        err.print(f"[red]error:[/] {exc}")
        sys.exit(exc.exit_code)
    if isinstance(exc, InvalidInput):
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    if isinstance(exc, StorageFull):
        err.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    if isinstance(exc, RagsiftError):
        err.print(f"[red]error ({exc.code}):[/] {exc}")
        sys.exit(1)
    if is_storage_full(exc):  # a full disk is the user's to fix, not a defect
        # the data directory the command opened, to name it (and its free space)
        err.print(f"[red]error:[/] {escape(str(StorageSpace(opened_data_dir()).error(exc)))}")
        sys.exit(2)
    logging.getLogger("ragsift").debug("internal error", exc_info=True)
    err.print(f"[red]internal error:[/] {escape(describe(exc))}")
    sys.exit(1)
