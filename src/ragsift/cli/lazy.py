"""A command group whose commands are imported when they run or show their own help.

click's documented LazyGroup pattern, on typer's group class: the registry holds, for every
command, the module and attribute that define it and its one-line help, so the group's own
`--help` lists the commands without importing their modules (their option types, rich tables
and helpers cost more CPU than the help itself: issue 39 asks `ragsift --help` <= 0.3 CPU-s).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import typer
from typer import _click as click
from typer.core import TyperGroup, TyperOption


@dataclass(frozen=True)
class LazyCommand:
    """Where a command is defined: `module`.`attr`, a function or a typer.Typer (a group)."""

    module: str
    attr: str
    help: str  # the first sentence of its help, shown in the group's command list


class LazyGroup(TyperGroup):
    """A typer group whose `lazy` commands are imported by name, on first use."""

    lazy: ClassVar[Mapping[str, LazyCommand]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(dict.fromkeys([*self.lazy, *self.commands]))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.commands[cmd_name] = self._load(cmd_name, self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as exc:
            # typer suggests among the commands loaded so far: suggest among all of them
            if self.suggest_commands and args and "Did you mean" not in exc.message:
                matches = difflib.get_close_matches(args[0], self.list_commands(ctx))
                if matches:
                    names = ", ".join(repr(match) for match in matches)
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {names}?"
            raise

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        return _bool_default(super().get_help_option(ctx))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the registry: no command module is imported for it."""
        rows = [(name, entry.help) for name, entry in self.lazy.items()]
        rows += [(name, command.get_short_help_str(formatter.width))
                 for name, command in self.commands.items()
                 if name not in self.lazy and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _load(self, name: str, entry: LazyCommand) -> click.Command:
        # typer.main builds click commands from typer's records, as add_typer/command would
        from typer.main import get_command_from_info, get_group_from_info
        from typer.models import CommandInfo, TyperInfo

        target = getattr(importlib.import_module(entry.module), entry.attr)
        command: click.Command
        if isinstance(target, typer.Typer):
            command = get_group_from_info(
                TyperInfo(target, name=name), pretty_exceptions_short=True,
                rich_markup_mode=self.rich_markup_mode, suggest_commands=self.suggest_commands)
        else:
            command = get_command_from_info(
                CommandInfo(name=name, callback=target), pretty_exceptions_short=True,
                rich_markup_mode=self.rich_markup_mode)
        _prepare(command)
        return command


def _bool_default(option: TyperOption | None) -> TyperOption | None:
    """typer coerces a `--help` flag that was not given (the group's, when a subcommand's help
    is asked) through a pydantic TypeAdapter: importing pydantic costs ~0.3 CPU-s. With a bool
    default it skips the coercion; the flag still reads False when absent."""
    if option is not None:
        option.default = False
    return option


def _prepare(command: click.Command) -> None:
    """_bool_default for `command` and every subcommand (once, when first loaded); and each
    subcommand listed with the first paragraph of its help, as typer's rich panels showed it
    (click alone cuts it at ~45 characters)."""
    _bool_default(command.get_help_option(click.Context(command)))
    for subcommand in getattr(command, "commands", {}).values():
        if not subcommand.short_help and subcommand.help:
            subcommand.short_help = first_paragraph(subcommand.help)
        _prepare(subcommand)


def first_paragraph(text: str) -> str:
    """The first paragraph of a help text, on one line."""
    return " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
