"""`import ragsift.cli` (all `--help` needs) stays light: the heavy stacks load with commands."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from ragsift.auth.keys import Role
from ragsift.cli.keys import RoleName
from ragsift.cli.tune import METRICS
from ragsift.evaluation.kb_tuning import TUNING_METRICS
from support.imports import modules_after

HEAVY = ("fastapi", "sqlalchemy", "numpy", "tantivy", "PIL", "pypdfium2", "pydantic_settings",
         "alembic", "httpx", "bs4", "pypdf", "rjieba", "uvicorn", "ragsift.bootstrap",
         "ragsift.config", "ragsift.ingestion.parsers")


def _imported_after(code: str, heavy: Iterable[str] = HEAVY) -> set[str]:
    """The `heavy` modules a fresh interpreter holds after running `code`."""
    modules = modules_after(code)
    return {name for name in heavy if name in modules}


def test_importing_the_cli_imports_none_of_the_heavy_stacks() -> None:
    assert _imported_after("import ragsift.cli") == set()


def test_the_help_of_every_command_group_imports_none_of_them() -> None:
    code = ("import sys\nfrom ragsift.cli import app\n"
            "for args in (['--help'], ['kb', 'version', '--help'], ['faq', '--help'], "
            "['keys', 'create', '--help'], ['serve', '--help'], ['search', '--help']):\n"
            "    try:\n        app(args)\n    except SystemExit as exc:\n"
            "        assert exc.code == 0, (args, exc.code)\n")
    assert _imported_after(code) == set()


def test_the_cli_role_names_are_the_roles_of_the_keys() -> None:
    assert [r.value for r in RoleName] == [r.value for r in Role]


def test_the_tune_help_names_the_metrics_the_tuner_accepts() -> None:
    assert METRICS == TUNING_METRICS


def test_python_dash_m_ragsift_runs_the_same_command_line_without_the_heavy_stacks() -> None:
    done = subprocess.run([sys.executable, "-m", "ragsift", "--help"], capture_output=True,
                          text=True, timeout=120, check=True)
    assert "Usage: python -m ragsift" in done.stdout
    for command in ("ingest", "search", "serve", "kb", "faq"):
        assert f" {command} " in done.stdout, command
    assert _imported_after("import runpy, sys\nsys.argv = ['ragsift', '--help']\n"
                           "try:\n    runpy.run_module('ragsift', run_name='__main__')\n"
                           "except SystemExit as exc:\n    assert exc.code == 0\n") == set()


def test_listing_kbs_and_documents_imports_no_index_embedder_or_services(tmp_path: Path) -> None:
    code = ("import sys\nfrom ragsift.cli import app\n"
            f"for args in (['kb', 'list', '--data-dir', {str(tmp_path)!r}], "
            f"['docs', 'list', '--kb', 'none', '--data-dir', {str(tmp_path)!r}]):\n"
            "    try:\n        app(args)\n    except SystemExit as exc:\n"
            "        assert exc.code == 0, (args, exc.code)\n"
            "    except Exception as exc:  # docs list: the KB does not exist\n"
            "        assert 'unknown knowledge base' in str(exc), exc\n")
    heavy = {"tantivy", "rjieba", "numpy", "onnxruntime", "ragsift.bootstrap"}
    assert _imported_after(code, heavy) == set()
