"""Metadata sidecars: `NAME.meta.json` beside a file holds that file's document metadata
(a JSON object, JSON types kept) for `ingest` and `sync`. A sidecar is never a document."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import MetadataLimits, validate_metadata

SIDECAR_SUFFIX = ".meta.json"


def sidecar_of(path: Path) -> Path:
    """Where the sidecar of `path` would be."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def is_sidecar(path: Path) -> bool:
    """Whether `path` is the sidecar of a file beside it."""
    name = path.name
    return name.endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX) and (
        path.with_name(name[:-len(SIDECAR_SUFFIX)]).is_file())


def read_sidecars(paths: Iterable[Path], limits: MetadataLimits) -> dict[Path, dict[str, Any]]:
    """The validated metadata of each path that has a sidecar; InvalidInput naming the
    sidecar when one cannot be read or is not valid metadata."""
    found: dict[Path, dict[str, Any]] = {}
    for path in paths:
        sidecar = sidecar_of(path)
        if not sidecar.is_file():
            continue
        try:
            raw = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInput(f"metadata sidecar {sidecar}: {exc}") from exc
        try:
            found[path] = validate_metadata(raw, limits)
        except InvalidInput as exc:
            raise InvalidInput(f"metadata sidecar {sidecar}: {exc}") from exc
    return found
