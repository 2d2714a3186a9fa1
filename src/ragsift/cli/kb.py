"""`ragsift kb`: list the knowledge bases, their settings (`kb settings`) and versions
(`kb version`)."""

from __future__ import annotations

import typer

from ragsift.cli.common import echo_json, open_facts, out
from ragsift.cli.kb_settings import kb_settings_command
from ragsift.cli.options import DataDir, JsonFlag
from ragsift.cli.versions import version_app

kb_app = typer.Typer(help="Knowledge bases.", no_args_is_help=True)
kb_app.add_typer(version_app, name="version")
kb_app.command("settings")(kb_settings_command)


@kb_app.command("list")
def kb_list(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List knowledge bases with their document counts."""
    from ragsift.domain.models import DocumentStatus

    with open_facts(data_dir) as repository:
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
