"""`ragsift keys` and `ragsift audit`: secrets shown once, stored as hashes, audit read back."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from fastapi.testclient import TestClient

from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings
from support.cli import ragsift


def test_a_key_is_printed_once_stored_as_a_hash_and_listed_without_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    created = ragsift(data, "keys", "create", "--name", "ci", "--role", "editor",
                      "--tenant-id", "acme", "--expires-in", "30d")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("rs_") and len(secret) == 46
    assert "shown once" in created.stderr
    listed = ragsift(data, "keys", "list", "--json")
    [key] = json.loads(listed.stdout)
    assert (key["name"], key["role"], key["scope"]["tenant_ids"]) == ("ci", "editor", ["acme"])
    assert secret not in listed.stdout and key["expires_at"]
    with sqlite3.connect(data / "ragsift.sqlite") as db:
        [(stored,)] = db.execute("SELECT secret_hash FROM api_keys").fetchall()
    assert stored == hashlib.sha256(secret.encode()).hexdigest()
    again = ragsift(data, "keys", "create", "--name", "ci", "--role", "reader")
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = ragsift(data, "keys", "create", "--name", "x", "--role", "reader", "--kb", "nope")
    assert bad.returncode == 2 and "no knowledge base named 'nope'" in bad.stderr


def test_rotate_and_revoke_change_what_the_api_accepts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = ragsift(data, "keys", "create", "--name", "bot", "--role", "admin").stdout.strip()
    new = ragsift(data, "keys", "rotate", "bot").stdout.strip()
    assert new != old and new.startswith("rs_")
    container = build(Settings(data_dir=data, auth=True))
    try:
        with TestClient(create_app(container)) as client:
            def status(secret: str) -> int:
                return client.get("/api/kbs", headers={"Authorization": f"Bearer {secret}"}
                                  ).status_code

            assert (status(old), status(new)) == (401, 200)
            created = client.post("/api/kbs", json={"name": "docs"},
                                  headers={"Authorization": f"Bearer {new}"})
            assert created.status_code == 201
            assert ragsift(data, "keys", "revoke", "bot").returncode == 0
            assert status(new) == 401
    finally:
        container.close()
    audit = ragsift(data, "audit", "--since", "1h", "--json")
    assert audit.returncode == 0, audit.stderr
    [entry] = json.loads(audit.stdout)
    assert (entry["key_name"], entry["method"], entry["route"], entry["status"]) == (
        "bot", "POST", "/api/kbs", 201)
    assert ragsift(data, "audit", "--since", "soon").returncode == 2
