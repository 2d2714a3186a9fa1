"""The documentation site builds with `mkdocs build --strict`, its generated reference pages
match the code, and the README stays a front door (its two commands unchanged)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


def test_the_site_builds_strictly_with_every_page_in_the_nav(tmp_path: Path) -> None:
    # strict: a broken link, a page missing from the nav or a nav entry without a page fails
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("tutorials/first-kb", "how-to/rest", "reference/settings", "reference/cli",
                 "explanation/fusion", "quality", "benchmarks"):
        assert (tmp_path / "site" / page / "index.html").exists(), page


def test_the_generated_reference_pages_match_the_code() -> None:
    sys.path.insert(0, str(SCRIPTS))
    try:
        import docs_reference
    finally:
        sys.path.remove(str(SCRIPTS))
    assert docs_reference.stale_pages() == [], "run: python scripts/docs_reference.py"


def test_a_hand_edited_row_of_the_configure_pages_settings_table_is_stale() -> None:
    sys.path.insert(0, str(SCRIPTS))
    try:
        import docs_reference
    finally:
        sys.path.remove(str(SCRIPTS))
    text = (ROOT / "docs" / "how-to" / "configure.md").read_text(encoding="utf-8")
    assert docs_reference.SETTINGS_TABLE.search(text), "configure.md lost its settings table"
    edited = text.replace("| `RAGSIFT_TOP_K` | `5` |", "| `RAGSIFT_TOP_K` | `7` |")
    assert edited != text
    assert docs_reference.with_settings_tables(edited) == text


@pytest.mark.parametrize("page", ["settings.md", "cli.md", "errors.md"])
def test_a_generated_page_names_what_the_code_has(page: str) -> None:
    text = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
    expected = {"settings.md": ["`RAGSIFT_DATA_DIR`", "`RAGSIFT_FUSION`", "`RAGSIFT_AUTH`"],
                "cli.md": ["## `ragsift ingest`", "#### `ragsift kb version activate`",
                           "`--top-k`"],
                "errors.md": ["`embedding_model_mismatch` | 409 | 2", "`storage_full` | 507 | 2"]}
    for needle in expected[page]:
        assert needle in text, needle


def test_the_readme_is_a_short_front_door_with_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(readme) <= 200, len(readme)
    assert "./scripts/demo.sh" in readme and "./scripts/test.sh" in readme
    # every relative link of the README points at a file that exists
    for target in re.findall(r"\]\(((?:docs|scripts)/[^)#]+)\)", "\n".join(readme)):
        assert (ROOT / target).exists(), target


def test_example_blocks_are_found_with_their_markers(tmp_path: Path) -> None:
    from support.doc_examples import examples_of

    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```bash\nragsift kb list\n```\n\n```json\n{}\n```\n\n"
        "<!-- example: server -->\n```python\nprint(1)\n```\n\n"
        "<!-- example: skip needs Docker -->\n```sh\ndocker ps\n```\n", encoding="utf-8")
    found = examples_of(page, tmp_path)
    assert [(e.line, e.language, e.context, e.reason) for e in found] == [
        (3, "bash", "cli", ""), (12, "python", "server", ""), (17, "bash", "skip", "needs Docker")]
    assert found[0].code == "ragsift kb list\n"


@pytest.mark.parametrize("marker", ["<!-- example: skip -->", "<!-- example: sever -->"])
def test_a_skip_without_a_reason_or_an_unknown_marker_is_refused(tmp_path: Path,
                                                                  marker: str) -> None:
    from support.doc_examples import examples_of

    page = tmp_path / "page.md"
    page.write_text(f"{marker}\n```bash\ntrue\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"page\.md:"):
        examples_of(page, tmp_path)
