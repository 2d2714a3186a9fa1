"""`ragsift kb settings NAME [--set key=value ...] [--unset key ...]`: a KB's own settings."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ragsift.cli.common import echo_json, load_settings, open_repository, out
from ragsift.cli.options import DataDir, JsonFlag
from ragsift.domain.errors import InvalidInput

SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a setting, key=value (repeatable): chunk_tokens=128, ocr=off, "
    "mode=dense, rerank=false, min_score=null ...")]
UnsetOpt = Annotated[list[str] | None, typer.Option(
    "--unset", help="Drop an override: the process setting applies again (repeatable).")]


def kb_settings_command(
    name: Annotated[str, typer.Argument(help="Knowledge base name.")],
    set_: SetOpt = None, unset: UnsetOpt = None, data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a knowledge base's settings; --set / --unset change its overrides.

    The process settings (RAGSIFT_*) are the defaults. A key out of range or unknown exits
    with code 2 and changes nothing. After a chunking, OCR or asset change the command to
    reindex the KB's documents is printed.
    """
    from ragsift.kb_settings import parse_assignment
    from ragsift.kb_settings_service import KbSettingsService, settings_out

    values = dict(parse_assignment(text) for text in set_ or [])
    settings = load_settings(data_dir)
    # the database alone: no embedder or index is opened (it runs beside `ragsift serve`)
    with open_repository(data_dir, settings) as repository:
        kb = repository.get_kb_by_name(name)
        if kb is None:
            known = ", ".join(k.name for k in repository.list_kbs()) or "none"
            raise InvalidInput(f"unknown knowledge base {name!r} (known: {known})")
        service = KbSettingsService(repository, settings)
        view = (service.update(kb.id, values, unset or []) if set_ or unset
                else service.view(kb.id))
    body = settings_out(view, kb.name)
    if as_json:
        echo_json(body.model_dump(mode="json"))
        return
    _print(body.effective, body.overridden, body.changed_since_build)
    if body.reindex is not None:
        out.print(f"changed since the documents were built: "
                  f"{', '.join(body.changed_since_build)}; reindex them with:")
        out.print(f"  {body.reindex.command}", markup=False)


def _print(effective: dict[str, Any], overridden: list[str], changed: list[str]) -> None:
    for key, value in effective.items():
        marks = [m for m, on in (("overridden", key in overridden),
                                 ("changed since build", key in changed)) if on]
        note = f"\t({', '.join(marks)})" if marks else ""
        out.print(f"{key}\t{_text(value)}{note}", markup=False)


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
