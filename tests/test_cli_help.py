"""Every command's `--help` renders, the command list is the commands' own help, and the help of
the app and of a group imports none of the command modules nor the heavy stacks (issue 39)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer import _click as click
from typer.main import get_command
from typer.testing import CliRunner

from ragsift.cli import COMMANDS, app
from ragsift.cli.lazy import first_paragraph
from support.imports import modules_after


def _paths(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The command path of `command` and of every command below it."""
    yield path
    if hasattr(command, "list_commands"):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from _paths(sub, (*path, name))


ROOT = get_command(app)
PATHS = list(_paths(ROOT))


def test_every_command_of_the_registry_and_its_subcommands_are_walked() -> None:
    assert {path[0] for path in PATHS if path} == set(COMMANDS)
    assert ("kb", "version", "activate") in PATHS and ("docs", "meta") in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "ragsift")
def test_every_command_renders_its_help(path: tuple[str, ...]) -> None:
    done = CliRunner().invoke(app, [*path, "--help"], prog_name="ragsift")
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"Usage: {' '.join(('ragsift', *path))} [OPTIONS]")
    assert "--help" in done.output


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listed_help_of_a_command_is_the_first_paragraph_of_its_own(name: str) -> None:
    command = ROOT.get_command(click.Context(ROOT), name)  # type: ignore[attr-defined]
    assert command.help, name
    assert COMMANDS[name].help == first_paragraph(command.help)


def test_option_help_keeps_its_bracketed_defaults() -> None:
    """Rich markup read '[hybrid]' as a style tag and dropped it: plain help keeps it."""
    done = CliRunner().invoke(app, ["search", "--help"], prog_name="ragsift")
    assert "dense | sparse | hybrid [hybrid]" in done.output
    assert "[on when a reranker is configured]" in " ".join(done.output.split())


def _loaded_by_help(args: list[str]) -> set[str]:
    """The modules a fresh `ragsift ARGS --help` holds when it exits."""
    return modules_after(
        "import sys\nfrom ragsift.cli import main\n"
        f"sys.argv = ['ragsift', *{args!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n")


HEAVY = {"pydantic", "pydantic_settings", "sqlalchemy", "numpy", "tantivy", "fastapi",
         "httpx", "uvicorn", "ragsift.config", "ragsift.bootstrap", "typer.rich_utils",
         "rich.markdown", "rich.traceback"}


def test_the_apps_help_imports_no_command_module_and_no_heavy_stack() -> None:
    loaded = _loaded_by_help([])
    commands = {entry.module for entry in COMMANDS.values()} | {"ragsift.cli.common"}
    assert loaded & (HEAVY | commands) == set()


def test_a_groups_help_imports_only_that_group_and_no_heavy_stack() -> None:
    loaded = _loaded_by_help(["kb", "version"])
    assert "ragsift.cli.versions" in loaded
    others = {"ragsift.cli.search", "ragsift.cli.serve", "ragsift.cli.faq"}
    assert loaded & (HEAVY | others) == set()


def test_a_mistyped_command_is_answered_with_the_close_names_of_all_commands() -> None:
    done = CliRunner().invoke(app, ["serch"], prog_name="ragsift")
    assert done.exit_code == 2
    assert "No such command 'serch'. Did you mean 'search', 'serve'?" in done.output
