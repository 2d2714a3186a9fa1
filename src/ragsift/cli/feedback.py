"""`ragsift feedback export`: users' feedback on answers as an evaluation labels file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ragsift.cli.common import err, kb_named, open_container
from ragsift.cli.options import DataDir, KbName

feedback_app = typer.Typer(help="Users' feedback on chat answers.", no_args_is_help=True)


@feedback_app.command("export")
def feedback_export(
    kb: KbName,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write the JSONL here [stdout].")] = None,
    data_dir: DataDir = None,
) -> None:
    """Write the KB's rated answers as labels JSONL for `ragsift eval --kb NAME --queries FILE`.

    Up: the cited chunks are relevant (grade 1), those marked wrong not (grade 0). Down: the
    sources marked wrong are not relevant; the line keeps the comment and what was missing,
    to be completed with the right document. FAQ citations and chunks no longer READY are
    left out; a turn with no label left is skipped (counted on stderr).
    """
    from ragsift.domain.models import DocumentStatus
    from ragsift.evaluation.feedback_export import feedback_labels

    with open_container(data_dir, follow=True) as container:
        kb_id = kb_named(container, kb).id
        records, _ = container.conversations.list_feedback(kb_id=kb_id)
        ready = {d.id for d in container.repository.list_documents(kb_id, DocumentStatus.READY)}
        named = {c for r in records for c in (*r.cited, *r.feedback.wrong_sources)}
        live = {c.id for c in container.repository.get_chunks(sorted(named))
                if c.kb_id == kb_id and c.document_id in ready}
    export = feedback_labels(records, live)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in export.lines)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    err.print(f"feedback export: {len(export.lines)} labelled queries "
              f"({sum(1 for x in export.lines if x['rating'] == 'up')} up, "
              f"{sum(1 for x in export.lines if x['rating'] == 'down')} down); "
              f"{export.skipped} rated answers gave no label"
              + ("" if output is None else f"; written to {output}"), markup=False)
