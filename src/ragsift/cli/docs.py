"""`ragsift docs`: list, delete and set the metadata of a knowledge base's documents."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ragsift.cli.common import (
    echo_json,
    kb_named,
    kb_named_in,
    open_container,
    open_facts,
    out,
)
from ragsift.cli.metadata import docs_meta
from ragsift.cli.options import DataDir, JsonFlag, KbName
from ragsift.domain.errors import InvalidInput

docs_app = typer.Typer(help="Documents of a knowledge base.", no_args_is_help=True)


@docs_app.command("list")
def docs_list(kb: KbName, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List the documents of a knowledge base with status, error and parse warnings."""
    with open_facts(data_dir) as repository:
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


docs_app.command("meta")(docs_meta)
