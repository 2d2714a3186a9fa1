"""docs/reference/settings.md is generated from the settings models and cannot drift (issue 40)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragsift.config import Settings
from ragsift.config.reference import REGENERATE, concerns, digest, render

_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"


def test_every_setting_has_a_description() -> None:
    missing = [name for name, info in Settings.model_fields.items() if not info.description]
    assert missing == []


def test_every_setting_belongs_to_exactly_one_concern() -> None:
    owners: dict[str, list[str]] = {}
    for model in concerns():
        for name in model.model_fields:
            owners.setdefault(name, []).append(model.__name__)
    assert {n: o for n, o in owners.items() if len(o) != 1} == {}
    # a field declared on Settings itself would be missing from the page
    assert set(owners) == set(Settings.model_fields)


def test_committed_settings_page_is_the_generated_one() -> None:
    assert _PAGE.read_text(encoding="utf-8") == render(), f"stale page; run: {REGENERATE}"


def test_page_lists_every_env_variable_in_a_five_column_row() -> None:
    page = render()
    rows = [line for line in page.splitlines() if line.startswith("| `RAGSIFT_")]
    names = [re.match(r"\| `(RAGSIFT_\w+)`", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert sorted(names) == sorted(f"RAGSIFT_{name.upper()}" for name in Settings.model_fields)
    # an unescaped pipe inside a cell (a Literal type, a regex) would split it in two
    assert {len(re.split(r"(?<!\\)\|", row)) for row in rows} == {7}
    assert "&lt;kind&gt;.&lt;zh\\|en&gt;" in page  # chat_route_replies' keys stay visible text


def test_a_digest_shows_the_named_settings_in_order_as_the_reference_page_does() -> None:
    table = digest(["top_k", "data_dir"])
    rows = table.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| `RAGSIFT_TOP_K`", "| `RAGSIFT_DATA_DIR`"]
    reference = render()
    for row, name in zip(rows, ("top_k", "data_dir"), strict=True):
        info = Settings.model_fields[name]
        assert str(info.description) in row
        # the same default cell as the reference page's row of that variable
        full = next(line for line in reference.splitlines()
                    if line.startswith(f"| `RAGSIFT_{name.upper()}`"))
        assert row.split(" | ")[1] == full.split(" | ")[2]


def test_a_digest_refuses_a_name_that_is_no_setting() -> None:
    with pytest.raises(ValueError, match="top_kk"):
        digest(["top_kk"])
