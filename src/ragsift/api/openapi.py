"""The OpenAPI document declares the bearer scheme and the role each route needs."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ragsift.api.access import required_role

SCHEME = "bearerAuth"


def install_openapi_security(app: FastAPI) -> None:
    """Add `bearerAuth`, and per operation `security` and `x-required-role` (from access.py)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version,
                             description=app.description, routes=app.routes)
        schema.setdefault("components", {})["securitySchemes"] = {
            SCHEME: {"type": "http", "scheme": "bearer", "bearerFormat": "rs_... API key"}}
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                role = required_role(method.upper(), path)
                operation["x-required-role"] = role.value if role is not None else "none"
                operation["security"] = [{SCHEME: []}] if role is not None else []
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
