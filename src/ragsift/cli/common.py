"""What every `ragsift` command shares: consoles, the container, KB lookup (the shared
options are in cli/options.py).

Every command module imports this one, so it stays light: the settings, the container and
pydantic are imported only when a command opens them (a command's `--help` needs none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from ragsift.adapters.sql.repository import SqlRepository
    from ragsift.bootstrap import Container
    from ragsift.bootstrap.search import SearchContainer
    from ragsift.config import Settings
    from ragsift.domain.models import KnowledgeBase
    from ragsift.ports import Repository

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)



class CliFailure(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def load_settings(data_dir: Path | None, **overrides: Any) -> Settings:
    """The settings (environment, --data-dir and overrides); invalid ones exit with code 2."""
    from pydantic import ValidationError

    from ragsift.config import Settings

    try:
        return Settings(data_dir=data_dir, **overrides) if data_dir else Settings(**overrides)
    except ValidationError as exc:
        raise CliFailure(f"invalid settings: {exc}", 2) from exc


_opened: list[Path] = []  # the data directories this command opened, newest last


def opened_data_dir() -> Path | None:
    """The data directory this command last opened (named when its disk is full)."""
    return _opened[-1] if _opened else None


def _open_settings(data_dir: Path | None, settings: Settings | None = None,
                   **overrides: Any) -> Settings:
    """The settings of the data directory this command opens (recorded, logs configured);
    `settings`: those the caller loaded already (else read here)."""
    from ragsift.observability.logs import configure_logging

    if settings is None:
        settings = load_settings(data_dir, **overrides)
    _opened.append(settings.data_dir)
    configure_logging(settings.log_format)
    return settings


@contextmanager
def open_container(
    data_dir: Path | None, follow: bool = False, **overrides: Any
) -> Iterator[Container]:
    """The container built from settings (and overrides), closed afterwards.

    `follow` for commands that only read: the index opens read-only, so they run beside a
    `ragsift serve` or an ingest that holds the data directory.
    """
    from ragsift.bootstrap import build

    container = build(_open_settings(data_dir, **overrides), follow=follow)
    try:
        yield container
    finally:
        container.close()


@contextmanager
def open_search_container(data_dir: Path | None) -> Iterator[SearchContainer]:
    """The lighter container of a one-shot search (ragsift.bootstrap.search), read-only
    beside a writer like open_container(follow=True), closed afterwards."""
    from ragsift.bootstrap.search import build_search

    container = build_search(_open_settings(data_dir))
    try:
        yield container
    finally:
        container.close()


@contextmanager
def open_repository(
    data_dir: Path | None, settings: Settings | None = None
) -> Iterator[SqlRepository]:
    """The SQL repository alone, closed afterwards: for listings, which need neither the
    index, the embedder nor the services (~1 CPU-s of imports fewer than open_container).
    `settings`: those the caller loaded already (else read here)."""
    from ragsift.adapters.sql.repository import SqlRepository

    repository = SqlRepository(_database_url(data_dir, settings))
    try:
        yield repository
    finally:
        repository.close()


@contextmanager
def open_facts(data_dir: Path | None) -> Iterator[Repository]:
    """The database for a listing that only reads it: on a SQLite file at the newest schema
    through sqlite3 (ragsift.adapters.sqlite_reader: no SQLAlchemy import), else as
    open_repository; closed afterwards."""
    from ragsift.adapters.sqlite_reader import open_database

    repository = open_database(_database_url(data_dir, None))
    try:
        yield repository
    finally:
        repository.close()


def _database_url(data_dir: Path | None, settings: Settings | None) -> str:
    """The database URL of the data directory, opened for this command (logs configured)."""
    settings = _open_settings(data_dir, settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings.resolved_database_url


def kb_named(container: Container, name: str) -> KnowledgeBase:
    """The knowledge base called `name`, or InvalidInput listing the known ones."""
    return kb_named_in(container.repository, name)


def kb_named_in(repository: Repository, name: str) -> KnowledgeBase:
    """kb_named with the repository alone (open_repository)."""
    kb = repository.get_kb_by_name(name)
    if kb is None:
        known = ", ".join(k.name for k in repository.list_kbs()) or "none"
        raise InvalidInput(f"unknown knowledge base {name!r} (known: {known})")
    return kb


def echo_json(value: Any) -> None:
    """Machine output: readable JSON, non-ASCII text kept as is (Chinese stays legible)."""
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))
