"""An app with access control on, and keys of each role made through the KeyService."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from api.api_helpers import Api
from ragsift.auth.keys import KeyScope, Role
from ragsift.auth.service import KeyService


@dataclass
class Keys:
    reader: str
    editor: str
    admin: str


def make_keys(api: Api) -> Keys:
    keys = KeyService(api.container.repository)
    return Keys(*(keys.create(role.value, role)[1] for role in Role))


def new_key(api: Api, name: str, role: Role = Role.READER, **scope: Any) -> str:
    return KeyService(api.container.repository).create(name, role, KeyScope(**scope))[1]


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def as_key(api: Api, secret: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {**bearer(secret), **kwargs.pop("headers", {})}
    return api.client.request(method, path, headers=headers, **kwargs)
