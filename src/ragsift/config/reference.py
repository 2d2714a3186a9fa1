"""The settings reference page (docs/reference/settings.md), generated from the models.

Each concern of `Settings` (one base class per module of this package) is a section; each field a
row: its environment variable, type, default, bounds and description. Regenerate with
    python -m ragsift.config.reference > docs/reference/settings.md
tests/config/test_settings_reference.py fails while the committed page differs.
"""

from __future__ import annotations

import html
import inspect
import sys
import types
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ragsift.config import Settings

REGENERATE = "python -m ragsift.config.reference > docs/reference/settings.md"
_BOUNDS = ((annotated_types.Ge, "ge", ">="), (annotated_types.Gt, "gt", ">"),
           (annotated_types.Le, "le", "<="), (annotated_types.Lt, "lt", "<"))


def concerns() -> list[type[BaseModel]]:
    """The concern models `Settings` is composed of, in their reference order."""
    return [base for base in Settings.__bases__
            if issubclass(base, BaseModel) and base.__module__.startswith("ragsift.config.")]


def type_name(annotation: Any) -> str:
    """A reader's spelling of a field's type: `int`, `str | None`, `"a" | "b"`."""
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(f'"{value}"' for value in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in get_args(annotation))
    if origin is dict:
        return "JSON object"
    if annotation is type(None):
        return "None"
    return str(getattr(annotation, "__name__", annotation))


def default_text(info: FieldInfo) -> str:
    """The default as it would be written in the environment; computed ones say so."""
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
        return code("{}") if value == {} else "computed (see description)"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, str) and not value:
        return "empty"
    return code(str(value))


def bounds_text(info: FieldInfo) -> str:
    """The field's constraints: `>= 1, <= 64`, a pattern."""
    parts: list[str] = []
    for item in info.metadata:
        for kind, attribute, symbol in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{symbol} {getattr(item, attribute)}")
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            parts.append(f"matches {code(pattern)}")
    return ", ".join(parts)


def code(text: str) -> str:
    """`text` as inline code that survives a table cell in GitHub's and MkDocs' Markdown: a
    pipe or an angle bracket inside backticks is taken literally by one and not the other."""
    if not any(c in text for c in "|<>&`"):
        return f"`{text}`"
    return f"<code>{html.escape(text, quote=False).replace('|', '&#124;')}</code>"


def _cell(text: str) -> str:
    """Prose for a table cell: `<kind>` stays visible text, a pipe does not split the cell."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def _section(model: type[BaseModel]) -> list[str]:
    title = (model.__doc__ or model.__name__).strip().rstrip(".")
    intro = inspect.getdoc(sys.modules[model.__module__]) or ""
    lines = [f"## {title}", "", " ".join(intro.split()), "",
             "| Variable | Type | Default | Bounds | Description |",
             "| --- | --- | --- | --- | --- |"]
    prefix = str(Settings.model_config.get("env_prefix", ""))
    for name, info in model.model_fields.items():
        env = f"{prefix}{name}".upper()
        lines.append(f"| {code(env)} | {_cell(type_name(info.annotation))} | "
                     f"{default_text(info)} | {bounds_text(info)} | "
                     f"{_cell(info.description or '')} |")
    return [*lines, ""]


def digest(names: Sequence[str]) -> str:
    """A table of the named settings (field names, in that order) for a page that picks some
    (docs/how-to/configure.md): variable, default and description from the same models as the
    reference page, so it cannot drift from them. A name that is no setting is an error."""
    fields = Settings.model_fields
    unknown = [name for name in names if name not in fields]
    if unknown:
        raise ValueError(f"not settings of ragsift.config.Settings: {', '.join(unknown)}")
    prefix = str(Settings.model_config.get("env_prefix", ""))
    lines = ["| Variable | Default | Description |", "| --- | --- | --- |"]
    for name in names:
        info = fields[name]
        lines.append(f"| {code(f'{prefix}{name}'.upper())} | {default_text(info)} | "
                     f"{_cell(info.description or '')} |")
    return "\n".join(lines) + "\n"


def render() -> str:
    """The whole page, Markdown."""
    lines = [
        f"<!-- Generated from src/ragsift/config by `{REGENERATE}`; do not edit. -->",
        "",
        "# Settings reference",
        "",
        "ragsift reads its settings from environment variables (prefix `RAGSIFT_`, any case), "
        "validated at start-up: a bad value or an inconsistent pair stops the process with a "
        "message naming it. A JSON object setting takes JSON text. A search "
        "request may override the retrieval defaults, and a knowledge base may override a few "
        "(`ragsift kb settings`).",
        "",
    ]
    for model in concerns():
        lines.extend(_section(model))
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()

