"""Metadata on the command line: `--meta key=value` / `--meta-file` when ingesting, `ragsift
docs meta` to change it, and `--filter JSON` / `--where key=value` when searching."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragsift.cli.common import echo_json, kb_named, open_container, out
from ragsift.cli.options import DataDir, JsonFlag, KbName, MetaFileOpt, MetaOpt
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from ragsift.config import Settings



def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{what} is not valid JSON: {exc}") from exc


def given_metadata(meta: list[str] | None, meta_file: Path | None) -> dict[str, Any] | None:
    """The metadata of --meta-file then --meta (JSON form, unvalidated); None when neither."""
    from ragsift.domain.metadata import cli_pairs

    if not meta and meta_file is None:
        return None
    merged: dict[str, Any] = {}
    if meta_file is not None:
        try:
            text = meta_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read --meta-file {meta_file}: {exc}") from exc
        loaded = _load_json(text, f"--meta-file {meta_file}")
        if not isinstance(loaded, dict):
            raise InvalidInput(f"--meta-file {meta_file} must hold a JSON object")
        merged.update(loaded)
    merged.update(cli_pairs(meta or []))
    return merged


def checked_metadata(raw: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """`raw` validated against the settings' limits (InvalidInput, exit 2, when not)."""
    from ragsift.config import metadata_limits
    from ragsift.domain.metadata import validate_metadata

    return validate_metadata(raw, metadata_limits(settings))


def given_filter(filter_json: str | None, where: list[str] | None) -> dict[str, Any] | None:
    """The search's filter: --filter and the --where equalities, all of which must hold."""
    from ragsift.domain.metadata_filter import where_filter

    parts: list[Any] = []
    if filter_json is not None:
        parts.append(_load_json(filter_json, "--filter"))
    if where:
        parts.append(where_filter(where))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def docs_meta(
    doc_id: Annotated[str, typer.Argument(help="The document id.")],
    kb: KbName,
    meta: MetaOpt = None,
    meta_file: MetaFileOpt = None,
    unset: Annotated[list[str] | None, typer.Option(
        "--unset", help="A metadata key to remove (repeatable).")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Replace the whole metadata instead of merging into it.")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a document's metadata, or change it (no re-embedding: filters read it from the
    facts). Without --meta, --meta-file or --unset it only prints it."""
    from ragsift.config import metadata_limits
    from ragsift.domain.metadata import merge_metadata

    patch = given_metadata(meta, meta_file) or {}
    patch.update({key: None for key in unset or ()})
    # the facts only: no index is written, so it runs beside a serve; filters treat the
    # document as changed (by key) until a writer rewrites its chunks' metadata terms
    # (a PATCH through a serve, `sync`, `rebuild-sparse`)
    with open_container(data_dir, follow=True) as container:
        knowledge_base = kb_named(container, kb)
        document = container.repository.get_document(doc_id)
        if document is None or document.kb_id != knowledge_base.id:
            raise InvalidInput(f"document {doc_id!r} is not in knowledge base {kb!r}")
        metadata = dict(document.metadata)
        if patch or replace:
            limits = metadata_limits(container.settings)
            # merged with the metadata as it is when written (a serve may change it meanwhile)
            updated = container.repository.update_metadata(doc_id, lambda current: (
                merge_metadata({} if replace else current, patch, limits)))
            metadata = updated.metadata
            if updated.changed:  # against what the write replaced; auto mode publishes it
                container.versions.metadata_changed(knowledge_base)
    if as_json:
        echo_json(metadata)
        return
    for key, value in metadata.items():
        out.print(f"{key}\t{json.dumps(value, ensure_ascii=False)}", markup=False)
