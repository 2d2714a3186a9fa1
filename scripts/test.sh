#!/usr/bin/env bash
# Installs ragsift with its dev tools into .venv and runs lint, types and the test suite.
#   ./scripts/test.sh            the full suite (the README's test command and CI's)
#   ./scripts/test.sh --quick    unit and contract tests only, for the edit loop (no test
#                                marked slow: real models, servers, subprocesses, browsers)
# Other arguments go to pytest. Tests run on RAGSIFT_TEST_WORKERS processes (pytest-xdist,
# default 2; 0 runs them in this process), a test module per worker.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
args=()
for arg in "$@"; do
    if [ "$arg" = "--quick" ]; then quick=1; else args+=("$arg"); fi
done
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[dev]"
ruff check src tests benchmarks
mypy
lint-imports --no-cache  # the layer contracts of pyproject.toml [tool.importlinter]
selection=()
[ "$quick" -eq 1 ] && selection=(-m "not slow")
python -m pytest -q -n "${RAGSIFT_TEST_WORKERS:-2}" --dist loadfile \
    ${selection[@]+"${selection[@]}"} ${args[@]+"${args[@]}"}
