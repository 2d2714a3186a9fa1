"""What every `ragsift` command shares: consoles, common options, the container, KB lookup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from ragsift.bootstrap import Container, build
from ragsift.config import Settings
from ragsift.domain.errors import InvalidInput
from ragsift.domain.models import KnowledgeBase
from ragsift.observability.logs import configure_logging

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="RAGSIFT_DATA_DIR", help="Data directory [./.ragsift]."),
]
KbName = Annotated[str, typer.Option("--kb", help="Knowledge base name.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


class CliFailure(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@contextmanager
def open_container(data_dir: Path | None, **overrides: Any) -> Iterator[Container]:
    """The container built from settings (and overrides), closed afterwards."""
    try:
        settings = Settings(data_dir=data_dir, **overrides) if data_dir else Settings(**overrides)
    except ValidationError as exc:
        raise CliFailure(f"invalid settings: {exc}", 2) from exc
    configure_logging(settings.log_format)
    container = build(settings)
    try:
        yield container
    finally:
        container.close()


def kb_named(container: Container, name: str) -> KnowledgeBase:
    """The knowledge base called `name`, or InvalidInput listing the known ones."""
    kb = container.repository.get_kb_by_name(name)
    if kb is None:
        known = ", ".join(k.name for k in container.repository.list_kbs()) or "none"
        raise InvalidInput(f"unknown knowledge base {name!r} (known: {known})")
    return kb


def echo_json(value: Any) -> None:
    """Machine output: readable JSON, non-ASCII text kept as is (Chinese stays legible)."""
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))
