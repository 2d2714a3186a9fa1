"""`ragsift keys` (create, list, revoke, rotate) and `ragsift audit`: access control.

These open only the facts (no index), so they work while `ragsift serve` runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ragsift.cli.common import echo_json, err, load_settings, out
from ragsift.cli.options import DataDir, JsonFlag
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from ragsift.adapters.sql import SqlRepository
    from ragsift.auth.keys import ApiKey
    from ragsift.auth.service import KeyService

keys_app = typer.Typer(help="API keys of the REST API (admin).", no_args_is_help=True)

Many = Annotated[list[str] | None, typer.Option()]


class RoleName(StrEnum):
    """The values of ragsift.auth.keys.Role, so that --help need not import the key models
    (pydantic); a test keeps the two equal."""

    READER = "reader"
    EDITOR = "editor"
    ADMIN = "admin"


@contextmanager
def _keys(data_dir: Path | None) -> Iterator[tuple[KeyService, SqlRepository]]:
    # imported here: SQLAlchemy is not needed for --help
    from ragsift.adapters.sql import SqlRepository
    from ragsift.auth.service import KeyService

    settings = load_settings(data_dir)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    repository = SqlRepository(settings.resolved_database_url)
    try:
        yield KeyService(repository), repository
    finally:
        repository.close()


def _kb_ids(repository: SqlRepository, names: list[str]) -> tuple[str, ...]:
    ids = []
    for name in names:
        kb = repository.get_kb_by_name(name) or repository.get_kb(name)
        if kb is None:
            raise InvalidInput(f"no knowledge base named {name!r}")
        ids.append(kb.id)
    return tuple(ids)


def _show(key: ApiKey) -> str:
    scope = ", ".join(f"{k}={','.join(v)}" for k, v in key.scope.model_dump().items() if v)
    state = ("revoked" if key.revoked_at else
             "expired" if key.expires_at and key.expires_at <= datetime.now(UTC) else "active")
    expires = key.expires_at.strftime("%Y-%m-%d %H:%M") if key.expires_at else "never"
    used = key.last_used_at.strftime("%Y-%m-%d %H:%M") if key.last_used_at else "never"
    return (f"{escape(key.name)}  {key.role.value}  {state}  {key.hint}…  expires {expires}  "
            f"last used {used}  {escape(scope) or 'all data'}")


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", help="A name for the key (unique).")],
    role: Annotated[RoleName, typer.Option("--role", help="reader | editor | admin")],
    kb: Many = None, tenant_id: Many = None, dataset_id: Many = None,
    visibility: Many = None, data_role: Many = None,
    expires_in: Annotated[str | None, typer.Option(help="e.g. 90d, 12h, 2w [never]")] = None,
    data_dir: DataDir = None, json_output: JsonFlag = False,
) -> None:
    """Create a key; its secret is printed once and stored only as a hash."""
    from ragsift.auth.keys import KeyScope, Role, parse_duration

    with _keys(data_dir) as (keys, repository):
        try:
            expires = parse_duration(expires_in) if expires_in else None
        except ValueError as exc:
            raise InvalidInput(str(exc)) from exc
        scope = KeyScope(kb_ids=_kb_ids(repository, kb or []),
                         tenant_ids=tuple(tenant_id or ()), dataset_ids=tuple(dataset_id or ()),
                         visibilities=tuple(visibility or ()),
                         data_roles=tuple(data_role or ()))
        key, secret = keys.create(name, Role(role.value), scope, expires)
    if json_output:
        echo_json({"key": key.model_dump(mode="json"), "secret": secret})
        return
    out.print(secret, markup=False, highlight=False)
    err.print(f"created {_show(key)}\nthe secret above is shown once: store it now")


@keys_app.command("list")
def list_keys(data_dir: DataDir = None, json_output: JsonFlag = False) -> None:
    """Every key with its role, scope, state and last use (never a secret)."""
    with _keys(data_dir) as (keys, _):
        found = keys.keys()
    if json_output:
        echo_json([key.model_dump(mode="json") for key in found])
        return
    for key in found:
        out.print(_show(key))
    if not found:
        err.print("no API keys yet: `ragsift keys create --name NAME --role admin`")


@keys_app.command("revoke")
def revoke(name: Annotated[str, typer.Argument()], data_dir: DataDir = None) -> None:
    """Revoke a key at once (requests with it get 401)."""
    with _keys(data_dir) as (keys, _):
        out.print(f"revoked {_show(keys.revoke(name))}")


@keys_app.command("rotate")
def rotate(name: Annotated[str, typer.Argument()], data_dir: DataDir = None) -> None:
    """A new secret for a key; the old one stops working at once."""
    with _keys(data_dir) as (keys, _):
        key, secret = keys.rotate(name)
    out.print(secret, markup=False, highlight=False)
    err.print(f"rotated {_show(key)}\nthe secret above is shown once: store it now")


def audit(
    since: Annotated[str, typer.Option(help="How far back, e.g. 1d, 12h, 2w.")] = "1d",
    data_dir: DataDir = None, json_output: JsonFlag = False,
) -> None:
    """State-changing API requests: time, key, route, target and result."""
    from ragsift.auth.keys import parse_duration

    try:
        start = datetime.now(UTC) - parse_duration(since)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    with _keys(data_dir) as (keys, _):
        entries = keys.audit_since(start)
    if json_output:
        echo_json([entry.model_dump(mode="json") for entry in entries])
        return
    for e in entries:
        out.print(f"{e.at:%Y-%m-%d %H:%M:%S}  {escape(e.key_name or '-')}  {e.method} "
                  f"{escape(e.route)}  {escape(e.target or '')}  {e.status}")
