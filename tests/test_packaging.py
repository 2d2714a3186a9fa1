"""Packaging metadata: what `pip install` reads from pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _project() -> dict[str, object]:
    data = tomllib.loads(PYPROJECT.read_text("utf-8"))
    return dict(data["project"])


def test_license_is_an_spdx_expression_so_setuptools_does_not_warn() -> None:
    # setuptools >= 77 deprecates the {text = ...} table (three warnings on every install)
    assert _project()["license"] == "MIT"


def test_build_requires_a_setuptools_that_reads_spdx_licenses() -> None:
    requires = tomllib.loads(PYPROJECT.read_text("utf-8"))["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    match = re.fullmatch(r"setuptools>=(\d+)", setuptools)
    assert match is not None and int(match.group(1)) >= 77
