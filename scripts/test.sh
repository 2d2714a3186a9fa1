#!/usr/bin/env bash
# Installs ragsift with its dev tools into .venv and runs lint, types and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[dev]"
ruff check src tests benchmarks
mypy
python -m pytest -q "$@"
